// A small fixed pool for data-parallel loops over batch rows.
#pragma once
#include <cstdint>
#include <functional>

namespace xgr2 {

// Runs fn(i) for i in [0, n) on up to `max_threads` threads (0: all hardware threads),
// the calling thread included. Returns when every call has finished; rethrows the
// first exception thrown by fn.
void ParallelFor(int64_t n, int max_threads, const std::function<void(int64_t)>& fn);

}  // namespace xgr2

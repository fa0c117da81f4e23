// One process-wide pool of worker threads, shared by every caller: data-parallel loops
// over batch rows (foreground) and long jobs split into small pieces (background).
//
// Scheduling: a foreground loop's caller takes part in its own loop and only waits for
// the workers that took some of its indices, so loops from several threads run side by
// side, no lock is held while a loop runs, and a loop started from inside a pool job
// (nested parallelism) cannot deadlock. Idle workers help foreground loops first; a
// background job gets a worker only when no foreground loop wants one, one piece at a
// time, so a foreground call waits at most for the pieces already running.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>

namespace xgr2 {

// Runs fn(i) for i in [0, n) on up to `max_threads` threads (0: all hardware threads),
// the calling thread included. Returns when every call has finished; rethrows the
// first exception thrown by fn.
void ParallelFor(int64_t n, int max_threads, const std::function<void(int64_t)>& fn);

// A background job's handle. Thread-safe.
class BackgroundJob {
 public:
  virtual ~BackgroundJob() = default;
  // Starts no further piece; the pieces running finish.
  virtual void Cancel() = 0;
  // True once no piece runs or will run (finished, cancelled or stopped).
  virtual bool Done() const = 0;
  // Waits until Done() or for `timeout_s` seconds (negative: no limit); returns Done().
  // Rethrows the first exception a piece threw.
  virtual bool Wait(double timeout_s = -1) const = 0;
  // Pieces that have run to the end.
  virtual int64_t PiecesDone() const = 0;
  virtual int64_t NumPieces() const = 0;
};

// Runs piece(i) for i in [0, n), in order of i, on up to `max_threads` workers (0: all)
// whenever no foreground loop wants them. A piece returns false to stop the job (its
// data is gone). Returns at once.
std::shared_ptr<BackgroundJob> RunInBackground(int64_t n, int max_threads, std::function<bool(int64_t)> piece);

}  // namespace xgr2

// Word-wise operations on token bitsets (masks are ceil(vocab / 32) words: 16 KB for
// Llama 3), the inner loop of every mask fill.
#pragma once
#include <cstddef>
#include <cstdint>

#include "xgr2/pop_count.h"  // PopCount64

namespace xgr2 {

// out[w] |= in[w] for w < n. On x86-64 it picks AVX2 at load time where the CPU has it
// (the build targets baseline x86-64, whose SSE2 loop takes twice the instructions).
void OrWords(uint32_t* out, const uint32_t* in, size_t n);

}  // namespace xgr2

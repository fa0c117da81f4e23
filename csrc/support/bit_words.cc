#include "support/bit_words.h"

namespace xgr2 {

#if defined(__x86_64__) && defined(__linux__) && (defined(__GNUC__) || defined(__clang__))
__attribute__((target_clones("avx2", "default")))
#endif
void OrWords(uint32_t* __restrict out, const uint32_t* __restrict in, size_t n) {
  for (size_t w = 0; w < n; ++w) out[w] |= in[w];
}

}  // namespace xgr2

// A 64-bit population count, inline (used by TokenTrie's child lookup in the hot walk).
#pragma once
#include <cstdint>

namespace xgr2 {

// The set bits of x, inline: baseline x86-64 has no popcnt instruction, so there
// __builtin_popcountll is a call into libgcc (a tenth of a cold mask's instructions
// went to ranking trie children that way).
inline int PopCount64(uint64_t x) {
#if defined(__x86_64__) && !defined(__POPCNT__)
  x -= (x >> 1) & 0x5555555555555555ULL;
  x = (x & 0x3333333333333333ULL) + ((x >> 2) & 0x3333333333333333ULL);
  x = (x + (x >> 4)) & 0x0f0f0f0f0f0f0f0fULL;
  return static_cast<int>((x * 0x0101010101010101ULL) >> 56);
#else
  return __builtin_popcountll(x);
#endif
}

}  // namespace xgr2

// Walks tokens of the sorted vocabulary from a parser set, sharing the work of common
// prefixes (a trie walk over the sorted list) and skipping every token that extends a
// rejected prefix.
#pragma once
#include <cstddef>
#include <cstdint>
#include <algorithm>
#include <string>

#include "engine/earley.h"
#include "xgr2/tokenizer.h"

namespace xgr2 {

// How many of the first `depth` bytes of `prev` (the bytes the parser stack spells)
// token `s` shares: the stack depth a trie walk can keep when moving on to `s`.
inline size_t SharedDepth(const std::string* prev, const std::string& s, size_t depth) {
  if (!prev) return depth;
  size_t lcp = 0, limit = std::min(depth, s.size());
  while (lcp < limit && (*prev)[lcp] == s[lcp]) ++lcp;
  return lcp;
}

// Sets the bit of every token, among the sorted-vocabulary positions `positions[0..count)`
// (ascending; all positions when null), that the parser accepts from `start`.
void WalkAcceptedTokens(const GrammarFsm& fsm, const TokenizerInfo& tok, const EarleySet& start,
                        const int32_t* positions, size_t count, uint32_t* words);

}  // namespace xgr2

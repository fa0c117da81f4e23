// Walks tokens of the sorted vocabulary from a parser set, sharing the work of common
// prefixes (a trie walk over the sorted list) and skipping every token that extends a
// rejected prefix.
#pragma once
#include <cstddef>
#include <cstdint>

#include "engine/earley.h"
#include "xgr2/tokenizer.h"

namespace xgr2 {

// Sets the bit of every token, among the sorted-vocabulary positions `positions[0..count)`
// (ascending; all positions when null), that the parser accepts from `start`.
void WalkAcceptedTokens(const GrammarFsm& fsm, const TokenizerInfo& tok, const EarleySet& start,
                        const int32_t* positions, size_t count, uint32_t* words);

}  // namespace xgr2

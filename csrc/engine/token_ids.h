// Tokens matched by id (ExprKind::kToken, spelled as in grammar/token_spelling.h): which
// ones a parser set allows, and the set after a token that both its text and its id
// continue.
#pragma once
#include <cstdint>
#include <memory>

#include "engine/earley.h"
#include "grammar/fsm.h"
#include "xgr2/tokenizer.h"

namespace xgr2 {

// ORs into `words` (a token bitmask) the tokens that `set` allows by id: real tokens
// of the tokenizer, never stop tokens (those end the grammar) or padding. Reads the
// automata only: a spelling the set can scan always completes (every node reaches a
// final one).
void AddTokensById(const GrammarFsm& fsm, const TokenizerInfo& tok, const EarleySet& set, uint32_t* words);

// One persistent set holding the items of two persistent sets after the same token
// (read as text and as an id): the parses of both. Items predicted in either now point
// at the union.
std::shared_ptr<const EarleySet> UnionOfSets(const EarleySet& a, const EarleySet& b);

}  // namespace xgr2

// Finding the slice (token_slice.h) that a parser state loops on: a class of characters
// every string of which parses from the state. Every token of that slice is then
// accepted from the state, and a walk need only look at the others.
#pragma once
#include <memory>

#include "engine/earley.h"
#include "engine/node_mask_pool.h"
#include "engine/token_slice.h"

namespace xgr2 {

// The largest slice worth using that `start` loops on, or null. The class is the
// ASCII bytes that lead back to a state parsing like `start` (ParseSignature), with
// every non-ASCII character when they loop too; it is then checked by exploring the
// states its strings reach (the slice automaton times the parser's states, which must
// never die). The slice itself is kept in the vocabulary's pool. `parser` must have
// made `start`; its distance tracking (if any) sees every state the check visits.
std::shared_ptr<const TokenSlice> LoopingSlice(EarleyParser& parser, const TokenizerInfo& tok,
                                               const EarleySet& start, NodeMaskPool& pool);

// Builds, into a new vocabulary's pool, the slice of JSON string content (every
// character but '"', '\\' and controls), which the builtin JSON grammar and every JSON
// Schema string loop on: at tokenizer load, not in the middle of a generation.
void PrebuildSlices(const TokenizerInfo& tok, NodeMaskPool& pool);

}  // namespace xgr2

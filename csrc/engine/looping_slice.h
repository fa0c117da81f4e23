// Finding the slice (token_slice.h) that a parser state loops on: a class of characters
// every string of which parses from the state. Every token of that slice is then
// accepted from the state, and a walk need only look at the others.
#pragma once
#include <array>
#include <cstdint>
#include <memory>

#include "engine/earley.h"
#include "engine/node_mask_pool.h"
#include "engine/token_slice.h"

namespace xgr2 {

// A slice whose tokens a state accepts, except those whose first byte is in
// `excluded_first` (ASCII bytes, which lead elsewhere from the state).
struct SliceUse {
  std::shared_ptr<const TokenSlice> slice;  // null: none
  std::array<uint64_t, 2> excluded_first{};

  bool Excludes(uint8_t b) const { return b < 0x80 && ((excluded_first[b >> 6] >> (b & 63)) & 1); }
};

// A slice worth using that `start` loops on, or none. The class is the ASCII bytes
// that lead back to a state parsing like `start` (ParseSignature), or else those the
// state most bytes lead to loops on (less the first bytes that lead elsewhere), with
// every non-ASCII character when they loop too. It is then checked by exploring the
// states its strings reach (the slice automaton times the parser's states, which must
// never die). The slice itself is kept in the vocabulary's pool. `parser` must have
// made `start`; its distance tracking (if any) sees every state the check visits.
SliceUse LoopingSlice(EarleyParser& parser, const TokenizerInfo& tok, const EarleySet& start, NodeMaskPool& pool);

// Builds, into a new vocabulary's pool, the slices most grammars loop on, at tokenizer
// load rather than in the middle of a generation: JSON string content (every character
// but '"', '\\' and controls: the builtin JSON grammar and every JSON Schema string),
// free text up to a tag (every character but '<', where tool-call tags start), the
// characters of identifiers in code grammars ([A-Za-z0-9_], ASCII) and the contents of
// code grammars' strings and comments (every character but the closing quote or '*',
// a backslash, a newline).
void PrebuildSlices(const TokenizerInfo& tok, NodeMaskPool& pool);

}  // namespace xgr2

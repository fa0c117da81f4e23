// Dense token classes ("slices", after LLGuidance's slicer): the tokens spelled by a
// class of characters that a parser state can loop on, such as JSON string content,
// free text or identifiers. A classification walk from such a state accepts the whole
// slice at once (a bitset) and walks only the other tokens, from a trie of their own:
// inside a JSON string that is about 6,000 of Llama-3's 128,256 tokens.
#pragma once
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "xgr2/tokenizer.h"

namespace xgr2 {

// A slice's characters: some ASCII bytes, plus (utf8) every non-ASCII character in
// strict UTF-8 (RFC 3629: no overlong forms, surrogates or code points past U+10FFFF).
// A token belongs to the slice when its bytes are such characters, the last possibly
// cut short (a byte-level token may end inside a character).
struct SliceClass {
  std::array<uint64_t, 2> ascii{};
  bool utf8 = false;

  void AddAscii(uint8_t b) { ascii[b >> 6] |= uint64_t{1} << (b & 63); }
  bool HasAscii(uint8_t b) const { return b < 0x80 && ((ascii[b >> 6] >> (b & 63)) & 1); }
  int NumAscii() const { return __builtin_popcountll(ascii[0]) + __builtin_popcountll(ascii[1]); }
  std::string Key() const;
};

// The slice's byte automaton: Utf8Step's states (0 between characters, 1-7 inside a
// multi-byte one), the class deciding ASCII bytes; -1 when the byte leaves the slice.
int SliceStep(const SliceClass& c, int state, uint8_t b);

struct TokenSlice {
  SliceClass cls;
  std::vector<uint32_t> words;  // bitset over token ids: the slice's tokens
  int64_t count = 0;            // how many
  // The other text tokens: their trie (first_pos indexes rest_ids), and for each of
  // its nodes the node of the tokenizer's trie with the same bytes.
  TokenTrie rest;
  std::vector<int32_t> rest_ids;
  std::vector<int32_t> rest_to_full;
};

// One pass over the tokenizer's trie for all the classes, then one over the tokens
// and the rest trie per class.
std::vector<TokenSlice> BuildTokenSlices(const TokenizerInfo& tok, const std::vector<SliceClass>& classes);
TokenSlice BuildTokenSlice(const TokenizerInfo& tok, const SliceClass& cls);

}  // namespace xgr2

// UTF-8 helpers: decoding grammar text and turning code point ranges into
// byte-range sequences (so the engine works on bytes only).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace xgr2 {

constexpr uint32_t kMaxCodepoint = 0x10FFFF;

// Appends the UTF-8 encoding of cp (cp <= kMaxCodepoint).
void AppendUtf8(uint32_t cp, std::string* out);

// Decodes one code point at text[*pos], advancing *pos. Returns -1 on invalid UTF-8.
int32_t DecodeUtf8(const std::string& text, size_t* pos);

// Strict UTF-8 (RFC 3629: no overlong forms, surrogates or code points past U+10FFFF)
// as a byte automaton: state 0 at a character boundary, 1-3 that many continuation
// bytes to go, 4-7 the restricted second byte after E0, ED, F0, F4. Returns the state
// after `b`, or -1 when `b` cannot come here.
constexpr int kUtf8States = 8;
int Utf8Step(int state, uint8_t b);

// Length of the longest prefix of `bytes` that does not end inside a character.
size_t CompleteUtf8Prefix(const std::string& bytes);

// One byte range per position of an encoded sequence: [lo[i], hi[i]] for byte i.
struct ByteRangeSeq {
  int len = 0;
  uint8_t lo[4];
  uint8_t hi[4];
};

// Splits the code point range [lo, hi] (surrogates excluded) into byte-range
// sequences whose concatenated languages are exactly the UTF-8 encodings.
std::vector<ByteRangeSeq> Utf8RangeSequences(uint32_t lo, uint32_t hi);
// The same, memoized on this thread (grammars repeat the same classes: a JSON string's
// content in every schema). Valid until this thread's next call.
const std::vector<ByteRangeSeq>& CachedUtf8RangeSequences(uint32_t lo, uint32_t hi);

}  // namespace xgr2

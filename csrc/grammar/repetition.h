// Repetition compression (XGrammar-2 §3.6): `X{l,r}` with large bounds becomes O(log r)
// rules instead of r copies of X's automaton, so `maxLength: 10000` or `"a"{0,100000}`
// compiles in milliseconds with the same language.
#pragma once

#include "xgr2/grammar.h"

namespace xgr2 {

// Bounds up to this are expanded as copies (cheap, and masks stay per position)...
constexpr int32_t kRepetitionCopyLimit = 32;
// ...unless the repeated expression calls a rule (a JSON string's character) and may
// repeat more than this: then every copy is a call, and each position a parse state of
// its own whose mask walks most of the vocabulary.
constexpr int32_t kMaxCopiedCalls = 4;

// Rewrites, in place, every repetition whose bounds exceed kRepetitionCopyLimit (or
// kMaxCopiedCalls, for one of calls) into:
//  - a counted rule (Rule::counted) where the repeated expression is regular and
//    prefix-free (IsCountableBody: a character, an escape, a fixed-length code): the
//    parser counts repetitions in its items, so the parse states inside stay the same
//    automaton node and share their masks (XGrammar-2's repetition state compression);
//  - else rules that double: E_k = E_{k-1} E_{k-1} (exactly 2^k), U_k = U_{k-1} |
//    E_{k-1} U_{k-1} (0 to 2^k - 1), appended to `g`.
void CompressRepetitions(GrammarIR* g);

}  // namespace xgr2

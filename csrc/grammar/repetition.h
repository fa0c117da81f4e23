// Repetition compression (XGrammar-2 §3.6): `X{l,r}` with large bounds becomes O(log r)
// rules instead of r copies of X's automaton, so `maxLength: 10000` or `"a"{0,100000}`
// compiles in milliseconds with the same language.
#pragma once

#include "xgr2/grammar.h"

namespace xgr2 {

// Bounds up to this are expanded as copies (cheap, and masks stay per position).
constexpr int32_t kRepetitionCopyLimit = 32;

// Rewrites, in place, every repetition whose bounds exceed kRepetitionCopyLimit into
// rules that double: E_k = E_{k-1} E_{k-1} (exactly 2^k), U_k = U_{k-1} | E_{k-1} U_{k-1}
// (0 to 2^k - 1). Appends those rules to `g`.
void CompressRepetitions(GrammarIR* g);

}  // namespace xgr2

// One decoding step for many states at once, on the engine's thread pool.
#pragma once
#include <cstdint>
#include <optional>
#include <vector>

#include "xgr2/matcher.h"

namespace xgr2 {

// Writes states[i]'s allowed tokens into rows[i] (each ceil(vocab_size / 32) words).
void FillBitmasks(const std::vector<MatcherState>& states, const std::vector<uint32_t*>& rows, int num_threads);

// The state after each row's token, nullopt where the grammar rejects it. Throws
// InvalidTokenError, before advancing any, for a token outside its state's vocabulary.
std::vector<std::optional<MatcherState>> AdvanceAll(const std::vector<MatcherState>& states,
                                                    const std::vector<int64_t>& tokens, int num_threads);

}  // namespace xgr2

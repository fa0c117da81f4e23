#include "engine/batch.h"

#include <string>

#include "support/thread_pool.h"
#include "xgr2/errors.h"

namespace xgr2 {

void FillBitmasks(const std::vector<MatcherState>& states, const std::vector<uint32_t*>& rows, int num_threads) {
  ParallelFor(static_cast<int64_t>(states.size()), num_threads, [&](int64_t i) { states[i].FillBitmask(rows[i]); });
}

std::vector<std::optional<MatcherState>> AdvanceAll(const std::vector<MatcherState>& states,
                                                    const std::vector<int64_t>& tokens, int num_threads) {
  std::vector<int32_t> ids(tokens.size());
  for (size_t i = 0; i < tokens.size(); ++i) {
    CheckTokenId(tokens[i], states[i].VocabSize(), "row " + std::to_string(i) + ": ");
    ids[i] = static_cast<int32_t>(tokens[i]);
  }
  std::vector<std::optional<MatcherState>> out(states.size());
  ParallelFor(static_cast<int64_t>(states.size()), num_threads,
              [&](int64_t i) { out[i] = states[i].TryAdvance(ids[i]); });
  return out;
}

}  // namespace xgr2

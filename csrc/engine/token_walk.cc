#include "engine/token_walk.h"

#include <algorithm>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "engine/state_memo.h"

namespace xgr2 {

bool WalkAcceptedTokens(const GrammarFsm& fsm, const TokenizerInfo& tok, const EarleySet& start,
                        const int32_t* positions, size_t count, uint32_t* words, int64_t max_steps) {
  const std::vector<int32_t>& sorted = tok.sorted_ids();
  EarleyParser parser(fsm, ThreadScratch());
  size_t max_depth = static_cast<size_t>(tok.max_token_bytes()) + 1;
  thread_local ScratchSets sets;
  // The start's items have persistent origins, so the walk's states can be interned.
  MemoPath path(parser, sets.Get(max_depth), max_depth, start, nullptr, !positions || count >= StateMemo::kMinTokens);
  // Over budget, every step fails, so the walk unwinds without entering any subtree.
  int64_t steps_left = max_steps < 0 ? INT64_MAX : max_steps;
  auto step = [&](size_t d, uint8_t byte) { return --steps_left >= 0 && path.Step(d, byte); };
  auto accept = [&](int32_t id) { words[id >> 5] |= uint32_t{1} << (id & 31); };
  if (!positions) {  // the whole vocabulary: walk the trie
    const TokenTrie& t = tok.trie();
    WalkTrie(
        t, 0, t.size(), step,
        [&](int32_t i) {
          for (int32_t k = 0; k < t.num_tokens[i]; ++k) accept(sorted[t.first_pos[i] + k]);
        },
        [](int32_t) {},
        [&](size_t d, const ByteBits& children, ByteBits* visit) {
          *visit = steps_left > 0 ? path.Scannable(d, children) : ByteBits{};
          return true;
        },
        [&](int32_t i) {
          if (!TakesWholeSubtree(t, i, path)) return false;
          --steps_left;
          for (int32_t p = t.first_pos[i]; p < t.first_pos[t.nodes[i].next]; ++p) accept(sorted[p]);
          return true;
        });
  } else {
    WalkPositions(tok, positions, count, step, [&](size_t k) { accept(sorted[positions[k]]); });
  }
  return steps_left >= 0;
}

}  // namespace xgr2

#include "engine/token_walk.h"

#include <algorithm>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

namespace xgr2 {
namespace {

// Scratch sets, one per depth, reused across calls on a thread.
std::vector<std::unique_ptr<EarleySet>>& DepthSets(size_t depth) {
  thread_local std::vector<std::unique_ptr<EarleySet>> sets;
  while (sets.size() < depth) sets.push_back(std::make_unique<EarleySet>());
  return sets;
}

}  // namespace

void WalkAcceptedTokens(const GrammarFsm& fsm, const TokenizerInfo& tok, const EarleySet& start,
                        const int32_t* positions, size_t count, uint32_t* words) {
  const std::vector<int32_t>& sorted = tok.sorted_ids();
  EarleyParser parser(fsm, ThreadScratch());
  size_t max_depth = static_cast<size_t>(tok.max_token_bytes()) + 1;
  auto& sets = DepthSets(max_depth);
  thread_local std::vector<const EarleySet*> path;
  path.resize(max_depth);
  path[0] = &start;
  auto step = [&](size_t d, uint8_t byte) {
    EarleySet* next = sets[d + 1].get();
    if (!parser.Advance(*path[d], byte, next)) return false;
    path[d + 1] = next;
    return true;
  };
  auto accept = [&](int32_t id) { words[id >> 5] |= uint32_t{1} << (id & 31); };
  if (!positions) {  // the whole vocabulary: walk the trie
    const TokenTrie& t = tok.trie();
    WalkTrie(
        t, 0, t.size(), step,
        [&](int32_t i) {
          for (int32_t k = 0; k < t.num_tokens[i]; ++k) accept(sorted[t.first_pos[i] + k]);
        },
        [](int32_t) {});
    return;
  }
  WalkPositions(tok, positions, count, step, [&](size_t k) { accept(sorted[positions[k]]); });
}

}  // namespace xgr2

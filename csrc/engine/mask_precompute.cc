// Computing a grammar's node masks ahead of use: all of them, or the costliest first
// (the pieces a background PrecomputeJob runs on the engine's thread pool).
#include <algorithm>
#include <array>
#include <utility>

#include "engine/token_mask_cache.h"
#include "support/thread_pool.h"

namespace xgr2 {

std::vector<int32_t> TokenMaskCache::MissingNodes() const {
  std::vector<int32_t> nodes;
  for (int32_t i = 0; i < fsm_.NumNodes(); ++i) {
    if (fsm_.HasEdges(i) && !masks_[i].load(std::memory_order_acquire)) nodes.push_back(i);
  }
  return nodes;
}

std::vector<int32_t> TokenMaskCache::CostliestNodes(int64_t count) const {
  const TokenTrie& t = tok_.trie();
  std::vector<std::pair<int64_t, int32_t>> cost;  // (-estimate, node)
  EarleyParser parser(fsm_, ThreadScratch());
  EarleySet parent, seeded;
  for (int32_t i : MissingNodes()) {
    parser.Seed(i, &parent, &seeded);
    int64_t estimate = 0;
    for (int b = 0; b < 256; ++b) {
      if (seeded.CanScan(static_cast<uint8_t>(b))) estimate += t.tokens_by_first_byte[b];
    }
    cost.emplace_back(-estimate, i);
  }
  size_t n = static_cast<size_t>(std::clamp<int64_t>(count, 0, static_cast<int64_t>(cost.size())));
  std::partial_sort(cost.begin(), cost.begin() + n, cost.end());
  std::vector<int32_t> nodes(n);
  for (size_t k = 0; k < n; ++k) nodes[k] = cost[k].second;
  return nodes;
}

void TokenMaskCache::PrecomputeAll(int num_threads) const {
  std::vector<int32_t> nodes = MissingNodes();
  ParallelFor(static_cast<int64_t>(nodes.size()), num_threads, [&](int64_t k) { Get(nodes[k], true); });
}

void TokenMaskCache::PrecomputeCostliest(int64_t count, int num_threads) const {
  std::vector<int32_t> nodes = CostliestNodes(count);
  ParallelFor(static_cast<int64_t>(nodes.size()), num_threads, [&](int64_t k) { Get(nodes[k], true); });
}

}  // namespace xgr2

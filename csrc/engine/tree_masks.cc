#include "engine/tree_masks.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <string>
#include <utility>

#include "support/thread_pool.h"
#include "xgr2/errors.h"

namespace xgr2 {
namespace {

std::string At(int64_t row, int64_t node) {
  return "row " + std::to_string(row) + ", node " + std::to_string(node);
}

// Checks every valid node up front, so that a bad tree fails before any parsing.
void CheckTree(const DraftTreeView& tree, int32_t vocab) {
  for (int64_t b = 0; b < tree.batch; ++b) {
    for (int64_t i = 1; i < tree.nodes; ++i) {
      int64_t k = b * tree.nodes + i;
      if (!tree.valid[k]) continue;
      int32_t p = tree.parents[k];
      if (p < -1 || p >= i) {
        throw std::invalid_argument(At(b, i) + ": parent " + std::to_string(p) +
                                    " must precede the node (parents[i] < i, -1 for none)");
      }
      int32_t t = tree.tokens[k];
      if (p >= 0) CheckTokenId(t, vocab, At(b, i) + ": ");
    }
  }
}

}  // namespace

void ComputeTreeMasks(const std::vector<std::optional<MatcherState>>& roots, const DraftTreeView& tree,
                      int64_t max_nodes, int num_threads, TreeMasksOut* out) {
  if (static_cast<int64_t>(roots.size()) != tree.batch) {
    throw std::invalid_argument("got " + std::to_string(roots.size()) + " states for " + std::to_string(tree.batch) +
                                " tree rows");
  }
  int32_t vocab = -1;
  for (const auto& root : roots) {
    if (!root) continue;
    if (vocab >= 0 && root->VocabSize() != vocab) throw std::invalid_argument("all states must share one vocabulary size");
    vocab = root->VocabSize();
  }
  const int64_t n = tree.nodes, total = tree.batch * tree.nodes;
  const int64_t words = out->words;
  if (vocab >= 0 && words != (static_cast<int64_t>(vocab) + 31) / 32) {
    throw std::invalid_argument("bitmask rows must have ceil(vocab_size / 32) words");
  }
  out->states.assign(static_cast<size_t>(total), std::nullopt);
  out->truncated.assign(static_cast<size_t>(tree.batch), 0);
  std::fill(out->admissible, out->admissible + total, false);
  std::fill(out->visited, out->visited + total, false);
  if (vocab < 0 || n == 0) {
    std::memset(out->bitmask, 0, static_cast<size_t>(total * words) * sizeof(uint32_t));
    return;
  }
  CheckTree(tree, vocab);

  // Phase 1, one task per row: the states, in node order (cheap next to the masks).
  ParallelFor(tree.batch, num_threads, [&](int64_t b) {
    const int64_t base = b * n;
    if (!roots[b] || !tree.valid[base]) return;
    out->states[base] = roots[b];
    out->admissible[base] = out->visited[base] = true;
    int64_t visited = 1;
    for (int64_t i = 1; i < n; ++i) {
      const int64_t k = base + i;
      const int32_t p = tree.parents[k];
      if (!tree.valid[k] || p < 0 || !out->states[base + p]) continue;
      if (max_nodes >= 0 && visited >= max_nodes) {
        out->truncated[b] = 1;
        break;
      }
      ++visited;
      out->visited[k] = true;
      out->states[k] = out->states[base + p]->TryAdvance(tree.tokens[k]);
      out->admissible[k] = out->states[k].has_value();
    }
  });

  // Phase 2, one task per node: the masks (zero rows where there is no state), so one
  // large tree spreads over every thread as well as a batch of small ones does.
  ParallelFor(total, num_threads, [&](int64_t k) {
    uint32_t* row = out->bitmask + k * words;
    if (out->states[k]) {
      out->states[k]->FillBitmask(row);
    } else {
      std::memset(row, 0, static_cast<size_t>(words) * sizeof(uint32_t));
    }
  });
}

}  // namespace xgr2

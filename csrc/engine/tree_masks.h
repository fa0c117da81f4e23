// Grammar masks for every node of a batch of speculative-decoding draft trees.
#pragma once
#include <cstdint>
#include <optional>
#include <vector>

#include "xgr2/matcher.h"

namespace xgr2 {

// A batch of draft trees, row-major [batch, nodes] arrays (borrowed, not owned). Node 0 is
// the root: the state itself, its token unused. parents[i] < i for every valid node i > 0.
struct DraftTreeView {
  const int32_t* parents;
  const int32_t* tokens;
  const bool* valid;
  int64_t batch;
  int64_t nodes;
};

// Where the results go. `bitmask` is [batch, nodes, words], `admissible` and `visited`
// [batch, nodes]; all are fully overwritten (zero for every node without a state).
struct TreeMasksOut {
  uint32_t* bitmask;
  int64_t words;  // ceil(vocab_size / 32)
  bool* admissible;
  bool* visited;  // [batch, nodes]: the node's token was tried (within the node budget)
  std::vector<std::optional<MatcherState>> states;  // [batch * nodes], filled here
  std::vector<uint8_t> truncated;                   // [batch]: the node budget ran out (0/1)
};

// For row b, advances roots[b] along every root -> node path (in node order, so a parent's
// state is always ready before its children: a loop, no recursion) and writes the mask of
// each reached state. A node is visited when it is valid and its parent has a state; at
// most `max_nodes` nodes per row are visited (root included; < 0: no limit), so the work is
// bounded deterministically. A missing root (nullopt) makes the row all padding.
// Throws std::invalid_argument for a malformed tree and InvalidTokenError for a token id
// outside the vocabulary (before any work). Runs on `num_threads` threads (0: all).
void ComputeTreeMasks(const std::vector<std::optional<MatcherState>>& roots, const DraftTreeView& tree,
                      int64_t max_nodes, int num_threads, TreeMasksOut* out);

}  // namespace xgr2

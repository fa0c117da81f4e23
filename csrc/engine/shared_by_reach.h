// Sharing classification results across grammars (XGrammar-2 §3.3): a walk's result
// is stored in the vocabulary's NodeMaskPool under the structure the walk reached
// (ReachKey), so every grammar with that structure there reuses it.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engine/node_classify.h"
#include "engine/node_mask_pool.h"
#include "grammar/fsm.h"
#include "grammar/fsm_key.h"

namespace xgr2 {

// Walks that reach more automaton nodes than this are not shared: writing a key costs
// about 350 instructions a node, and walks that large (a request's tool-name trie) are
// rarely met again by structure (docs/design.md, cross-grammar sharing: 512 -> 64).
inline constexpr int32_t kMaxKeyNodes = 64;

inline size_t PoolBytes(const InnerMask& mask) { return mask.MemoryBytes(); }
inline size_t PoolBytes(const TokenList& list) { return sizeof(TokenList) + 4 * list.capacity(); }
inline size_t PoolBytes(const ContextTokens& c) {
  return sizeof(ContextTokens) + 4 * (c.certain.capacity() + c.uncertain.capacity());
}

// A walk's result shared through the vocabulary's pool, keyed by the structure of the
// nodes the walk reached from `roots` (ReachKey): usually a few bytes around a node,
// so a schema's `": " value` node is shared whatever properties follow it, and a node
// before a bounded whitespace run whatever comes after the value. `kind` is the kind
// of result in the pool; compute(&reached, &keep) walks, recording the nodes it has
// items at, and sets keep = false for a result that must not be stored by structure.
// `also` is appended to every key: whatever else the result depends on. Lookups go
// through an index keyed by the ball of radius 1 (BallKey), which tells most
// structures apart (the bytes out of the node), and try the reach keys stored there.
// A `probe` only looks (compute is not called; a miss is not counted: the caller may
// look again to compute).
template <class T, class Compute>
std::shared_ptr<const T> SharedByReach(const GrammarFsm& fsm, const std::vector<int32_t>& roots,
                                       const std::vector<std::vector<int32_t>>* call_targets,
                                       const std::string& also, NodeMaskPool& pool, NodeMaskPool::Kind kind,
                                       Compute&& compute, bool probe = false) {
  const std::string_view prefix = NodeMaskPool::KeyPrefix(kind);
  std::string core;
  {
    // Where the first root's rule ends, a context walk goes on at its other roots,
    // never at the rule's call targets (every place that calls it: they would tie the
    // index to the whole grammar).
    const int32_t watched = call_targets ? fsm.node_rule[roots[0]] : -1;
    ByteDistances dist(fsm, roots, call_targets, 1, kMaxKeyNodes, watched);
    core = BallKey(fsm, roots, call_targets, dist, 1, kMaxKeyNodes, prefix, also, watched);
  }
  if (!core.empty()) {
    auto matches = [&](const std::string& key) {
      return MatchesReachKey(fsm, roots, call_targets, key, prefix.size(), also.size(), kMaxKeyNodes);
    };
    if (auto found = pool.FindByReach<T>(kind, core, matches, !probe)) return found;
  }
  if (probe) return nullptr;
  NodeSet reached(fsm.NumNodes());
  bool keep = true;
  std::shared_ptr<const T> value = compute(&reached, &keep);
  if (core.empty() || !keep) return value;
  std::string key = ReachKey(fsm, roots, call_targets, reached, kMaxKeyNodes, prefix, also);
  if (key.empty()) return value;
  int64_t bytes = static_cast<int64_t>(PoolBytes(*value));
  return pool.InsertByReach<T>(kind, core, std::move(key), std::move(value), bytes);
}

// Makes the keys a pool lookup of each node's classification makes, `repeats` times:
// the radius-1 index key (with the byte distances it needs) and the match of a stored
// reach key, for a walk that reached every node within `radius`. Returns the number
// of nodes keyed per repeat. For benchmarks: the cost per key should not grow with
// the automata.
int64_t MakeLookupKeys(const GrammarFsm& fsm, int32_t radius, int repeats);

}  // namespace xgr2

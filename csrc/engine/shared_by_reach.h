// Sharing classification results across grammars (XGrammar-2 §3.3): a walk's result
// is stored in the vocabulary's NodeMaskPool under the structure the walk reached
// (BallKey), so every grammar with that structure there reuses it.
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

// Keys of nodes reaching more automaton nodes than this are not computed (no sharing).
inline constexpr int32_t kMaxKeyNodes = 512;
// Classifications that reach further from their node are not shared.
inline constexpr int32_t kMaxKeyRadius = 256;

inline size_t PoolBytes(const InnerMask& mask) { return mask.MemoryBytes(); }
inline size_t PoolBytes(const TokenList& list) { return sizeof(TokenList) + 4 * list.capacity(); }

// A walk's result shared through the vocabulary's pool, keyed by the structure the
// walk reached from `roots` (BallKey): usually a few bytes around a node, so a schema's
// `": " value` node is shared whatever properties follow it. `kind` is the kind of
// result in the pool; compute(&dist, &radius) walks, making the roots' distances
// (ByteDistances) only as far as it looks. *radius: how far the result's walk
// reached, -1 when unknown. `also` is appended to every key: whatever
// else the result depends on. `reach`: the most bytes a walk scans (the longest token);
// an item after d bytes is at a node at most d away, so no farther distance matters.
template <class T, class Compute>
std::shared_ptr<const T> SharedByReach(const GrammarFsm& fsm, int32_t reach, const std::vector<int32_t>& roots,
                                       const std::vector<std::vector<int32_t>>* call_targets,
                                       const std::string& also, NodeMaskPool& pool, NodeMaskPool::Kind kind,
                                       Compute&& compute, int32_t* radius) {
  // Bounded by `reach`, not kMaxKeyRadius: the walk tracks its exact reach, and one
  // past kMaxKeyRadius just gets no key.
  ByteDistances dist(fsm, roots, call_targets, reach, kMaxKeyNodes);
  const std::string_view prefix = NodeMaskPool::KeyPrefix(kind);
  auto key_at = [&](int32_t r) { return BallKey(fsm, roots, call_targets, dist, r, kMaxKeyNodes, prefix, also); };
  // The index of the stored radii: the ball of radius 1 tells most structures apart
  // (the bytes out of the node), so few radii are tried per lookup.
  std::string core = key_at(1);
  if (!core.empty()) {
    if (auto found = pool.FindByReach<T>(kind, core, key_at, radius)) return found;
  }
  std::shared_ptr<const T> value = compute(&dist, radius);
  std::string key;
  if (!core.empty() && *radius >= 0 && *radius <= kMaxKeyRadius) key = key_at(*radius);
  if (key.empty()) {
    *radius = -1;
    return value;
  }
  int64_t bytes = static_cast<int64_t>(PoolBytes(*value));
  return pool.InsertByReach<T>(kind, core, *radius, std::move(key), std::move(value), bytes);
}

// Makes the keys a pool lookup of each node's classification makes (the radius-1
// index key and the key at `radius`, with the byte distances they need; `reach`, the
// longest token, bounds them), `repeats` times; returns the number of nodes keyed per
// repeat. For benchmarks: the cost per key should not grow with the automata.
int64_t MakeLookupKeys(const GrammarFsm& fsm, int32_t reach, int32_t radius, int repeats);

}  // namespace xgr2

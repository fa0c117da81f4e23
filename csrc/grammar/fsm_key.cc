#include "grammar/fsm_key.h"

#include <vector>

namespace xgr2 {

namespace {

// Numbers the nodes reachable from `roots` breadth-first and serializes them (see
// fsm_key.h); with `call_targets`, a final node also reaches where its rule's calls go on.
std::string SerializeFrom(const GrammarFsm& fsm, const std::vector<int32_t>& roots,
                          const std::vector<std::vector<int32_t>>* call_targets, int32_t max_nodes) {
  // Canonical ids by discovery order; a per-thread map reset by stamping.
  thread_local std::vector<int32_t> id_of, stamp_of;
  thread_local int32_t stamp = 0;
  if (static_cast<int32_t>(id_of.size()) < fsm.NumNodes()) {
    id_of.assign(fsm.NumNodes(), 0);
    stamp_of.assign(fsm.NumNodes(), 0);
  }
  if (++stamp == 0) {
    std::fill(stamp_of.begin(), stamp_of.end(), 0);
    stamp = 1;
  }
  std::vector<int32_t> order;
  auto visit = [&](int32_t n) {
    if (stamp_of[n] == stamp) return true;
    if (static_cast<int32_t>(order.size()) >= max_nodes) return false;
    stamp_of[n] = stamp;
    id_of[n] = static_cast<int32_t>(order.size());
    order.push_back(n);
    return true;
  };
  for (int32_t root : roots) {
    if (!visit(root)) return "";
  }
  for (size_t k = 0; k < order.size(); ++k) {
    int32_t n = order[k];
    for (int32_t e = fsm.edge_begin[n]; e < fsm.edge_begin[n + 1]; ++e) {
      const FsmEdge& edge = fsm.edges[e];
      if (!visit(edge.target)) return "";
      if (edge.rule >= 0 && !visit(fsm.rule_start[edge.rule])) return "";
    }
    if (call_targets && fsm.node_final[n]) {
      for (int32_t t : (*call_targets)[fsm.node_rule[n]]) {
        if (!visit(t)) return "";
      }
    }
  }
  // A rule is named by its start node's id; -1 names a rule whose start is out of
  // reach (only the roots' rules: their callers entered them).
  auto rule_id = [&](int32_t rule) {
    int32_t start = fsm.rule_start[rule];
    return stamp_of[start] == stamp ? id_of[start] : -1;
  };
  std::vector<int32_t> words;
  words.reserve(order.size() * 8);
  words.push_back(static_cast<int32_t>(roots.size()));
  for (int32_t root : roots) words.push_back(id_of[root]);
  for (int32_t n : order) {
    words.push_back(fsm.node_final[n] ? rule_id(fsm.node_rule[n]) + 2 : 0);
    words.push_back(fsm.edge_begin[n + 1] - fsm.edge_begin[n]);
    for (int32_t e = fsm.edge_begin[n]; e < fsm.edge_begin[n + 1]; ++e) {
      const FsmEdge& edge = fsm.edges[e];
      words.push_back(edge.rule >= 0 ? -1 - rule_id(edge.rule) : (edge.lo << 8 | edge.hi));
      words.push_back(id_of[edge.target]);
    }
    if (call_targets && fsm.node_final[n]) {
      const std::vector<int32_t>& targets = (*call_targets)[fsm.node_rule[n]];
      words.push_back(static_cast<int32_t>(targets.size()));
      for (int32_t t : targets) words.push_back(id_of[t]);
    }
  }
  return std::string(reinterpret_cast<const char*>(words.data()), words.size() * sizeof(int32_t));
}

}  // namespace

std::string StructuralKey(const GrammarFsm& fsm, int32_t node, int32_t max_nodes) {
  return SerializeFrom(fsm, {node}, nullptr, max_nodes);
}

std::string ContextKey(const GrammarFsm& fsm, int32_t node, const std::vector<int32_t>& follow,
                       const std::vector<std::vector<int32_t>>& call_targets, int32_t max_nodes) {
  std::vector<int32_t> roots = {node};
  roots.insert(roots.end(), follow.begin(), follow.end());
  return SerializeFrom(fsm, roots, &call_targets, max_nodes);
}

}  // namespace xgr2

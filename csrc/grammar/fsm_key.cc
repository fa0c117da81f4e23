#include "grammar/fsm_key.h"

#include <climits>
#include <cstring>
#include <memory>
#include <vector>

namespace xgr2 {

namespace {

// See BallKey.
std::string SerializeFrom(const GrammarFsm& fsm, const std::vector<int32_t>& roots,
                          const std::vector<std::vector<int32_t>>* call_targets, int32_t max_nodes,
                          const int32_t* dist, int32_t radius) {
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
  thread_local std::vector<int32_t> order, words;  // reused: keys are made often
  order.clear();
  words.clear();
  auto visit = [&](int32_t n) {
    if (stamp_of[n] == stamp || dist[n] > radius) return true;
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
  auto node_id = [&](int32_t n) { return stamp_of[n] == stamp ? id_of[n] : -1; };
  words.push_back(radius);
  words.push_back(static_cast<int32_t>(roots.size()));
  for (int32_t root : roots) words.push_back(id_of[root]);
  for (int32_t n : order) {
    words.push_back(fsm.node_final[n] ? rule_id(fsm.node_rule[n]) + 2 : 0);
    words.push_back(fsm.edge_begin[n + 1] - fsm.edge_begin[n]);
    for (int32_t e = fsm.edge_begin[n]; e < fsm.edge_begin[n + 1]; ++e) {
      const FsmEdge& edge = fsm.edges[e];
      words.push_back(edge.rule >= 0 ? -1 - rule_id(edge.rule) : (edge.lo << 8 | edge.hi));
      words.push_back(node_id(edge.target));
      if (edge.rule >= 0) words.push_back(fsm.rule_nullable[edge.rule]);
    }
    if (call_targets && fsm.node_final[n]) {
      const std::vector<int32_t>& targets = (*call_targets)[fsm.node_rule[n]];
      words.push_back(static_cast<int32_t>(targets.size()));
      for (int32_t t : targets) words.push_back(node_id(t));
    }
  }
  return std::string(reinterpret_cast<const char*>(words.data()), words.size() * sizeof(int32_t));
}

}  // namespace

// A dense distance array, INT32_MAX everywhere between uses; `written` lists the
// entries to reset.
struct ByteDistances::Scratch {
  std::vector<int32_t> dist;
  std::vector<int32_t> written;
};

namespace {

// Free scratch arrays of this thread: several distance arrays may be alive at once.
std::vector<std::unique_ptr<ByteDistances::Scratch>>& FreeScratch() {
  thread_local std::vector<std::unique_ptr<ByteDistances::Scratch>> free;
  return free;
}

}  // namespace

ByteDistances::ByteDistances(const GrammarFsm& fsm, const std::vector<int32_t>& roots,
                             const std::vector<std::vector<int32_t>>* call_targets, int32_t max_radius,
                             int32_t max_nodes) {
  auto& free = FreeScratch();
  if (free.empty()) free.push_back(std::make_unique<Scratch>());
  scratch_ = free.back().release();
  free.pop_back();
  std::vector<int32_t>& dist = scratch_->dist;
  std::vector<int32_t>& written = scratch_->written;
  // Grows once per thread to the largest automata seen (amortized, not per call).
  if (static_cast<int32_t>(dist.size()) < fsm.NumNodes()) dist.resize(fsm.NumNodes(), INT32_MAX);
  dist_ = dist.data();
  // Dial's algorithm with two buckets: nodes at distance d (a stack: free moves push onto
  // it) and at d + 1.
  thread_local std::vector<int32_t> now, later;
  now.clear();
  later.clear();
  auto relax = [&](int32_t n, int32_t d, std::vector<int32_t>& bucket) {
    if (d >= dist[n]) return;
    if (dist[n] == INT32_MAX) written.push_back(n);
    dist[n] = d;
    bucket.push_back(n);
  };
  for (int32_t root : roots) relax(root, 0, now);
  int32_t settled = 0;
  for (int32_t d = 0; !now.empty(); ++d) {
    while (!now.empty()) {
      int32_t n = now.back();
      now.pop_back();
      if (dist[n] != d) continue;  // reached again at a smaller distance
      ++settled;
      for (int32_t e = fsm.edge_begin[n]; e < fsm.edge_begin[n + 1]; ++e) {
        const FsmEdge& edge = fsm.edges[e];
        if (edge.rule < 0) {
          relax(edge.target, d + 1, later);
          continue;
        }
        relax(fsm.rule_start[edge.rule], d, now);
        bool nullable = fsm.rule_nullable[edge.rule];
        relax(edge.target, nullable ? d : d + 1, nullable ? now : later);
      }
      if (call_targets && fsm.node_final[n]) {
        for (int32_t t : (*call_targets)[fsm.node_rule[n]]) relax(t, d, now);
      }
    }
    // Every distance up to d is final here. Past the bounds no ball gets a key: what
    // is only tentatively at d + 1 goes back to "far".
    if (d >= max_radius || settled > max_nodes) {
      for (int32_t n : later) dist[n] = INT32_MAX;
      break;
    }
    now.swap(later);
  }
}

ByteDistances::~ByteDistances() {
  for (int32_t n : scratch_->written) scratch_->dist[n] = INT32_MAX;
  scratch_->written.clear();
  FreeScratch().emplace_back(scratch_);
}

std::string BallKey(const GrammarFsm& fsm, const std::vector<int32_t>& roots,
                    const std::vector<std::vector<int32_t>>* call_targets, const ByteDistances& dist,
                    int32_t radius, int32_t max_nodes) {
  return SerializeFrom(fsm, roots, call_targets, max_nodes, dist.data(), radius);
}

std::string Fingerprint(const GrammarFsm& fsm) {
  // Written in place (it is made for every grammar's first mask, and large grammars,
  // such as a tool set's, have large automata).
  size_t rules = fsm.rule_start.size(), nodes = static_cast<size_t>(fsm.NumNodes());
  std::string out((3 + 2 * rules + 2 * nodes + 2 * fsm.edges.size()) * sizeof(int32_t), '\0');
  char* p = out.data();
  auto put = [&p](int32_t w) {
    std::memcpy(p, &w, sizeof(w));
    p += sizeof(w);
  };
  put(fsm.root);
  put(static_cast<int32_t>(rules));
  put(fsm.NumNodes());
  for (size_t r = 0; r < rules; ++r) {
    put(fsm.rule_start[r]);
    put(fsm.rule_nullable[r]);
  }
  for (int32_t n = 0; n < fsm.NumNodes(); ++n) {
    put(fsm.node_rule[n] << 1 | fsm.node_final[n]);
    put(fsm.edge_begin[n + 1] - fsm.edge_begin[n]);
    for (int32_t e = fsm.edge_begin[n]; e < fsm.edge_begin[n + 1]; ++e) {
      const FsmEdge& edge = fsm.edges[e];
      put(edge.rule >= 0 ? -1 - edge.rule : (edge.lo << 8 | edge.hi));
      put(edge.target);
    }
  }
  return out;
}

}  // namespace xgr2

#include "grammar/fsm_key.h"

#include <climits>
#include <cstring>
#include <memory>
#include <vector>

namespace xgr2 {

namespace {

// Per-thread scratch of the key makers, fetched once per call: every use of a
// thread_local in a shared library costs a __tls_get_addr call (7% of a BFCL run's
// mask instructions when the loops below touched them directly).
struct KeyScratch {
  std::vector<int32_t> id_of, stamp_of;  // canonical ids by discovery order, reset by stamping
  int32_t stamp = 0;
  std::vector<int32_t> order;
};

KeyScratch& ThreadKeyScratch() {
  thread_local KeyScratch scratch;
  return scratch;
}

// See BallKey.
std::string SerializeFrom(const GrammarFsm& fsm, const std::vector<int32_t>& roots,
                          const std::vector<std::vector<int32_t>>* call_targets, int32_t max_nodes,
                          const int32_t* dist, int32_t radius, std::string_view prefix,
                          std::string_view suffix) {
  KeyScratch& scratch = ThreadKeyScratch();
  if (static_cast<int32_t>(scratch.id_of.size()) < fsm.NumNodes()) {
    scratch.id_of.assign(fsm.NumNodes(), 0);
    scratch.stamp_of.assign(fsm.NumNodes(), 0);
  }
  if (++scratch.stamp == 0) {
    std::fill(scratch.stamp_of.begin(), scratch.stamp_of.end(), 0);
    scratch.stamp = 1;
  }
  const int32_t stamp = scratch.stamp;
  int32_t* id_of = scratch.id_of.data();
  int32_t* stamp_of = scratch.stamp_of.data();
  std::vector<int32_t>& order = scratch.order;
  order.clear();
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
  size_t words = 2 + roots.size();  // counted on the way: the key is written in place
  for (size_t k = 0; k < order.size(); ++k) {
    int32_t n = order[k];
    words += 2;
    for (int32_t e = fsm.edge_begin[n]; e < fsm.edge_begin[n + 1]; ++e) {
      const FsmEdge& edge = fsm.edges[e];
      words += edge.rule >= 0 ? 3 : 2;
      if (!visit(edge.target)) return "";
      if (edge.rule >= 0 && !visit(fsm.rule_start[edge.rule])) return "";
    }
    if (call_targets && fsm.node_final[n]) {
      const std::vector<int32_t>& targets = (*call_targets)[fsm.node_rule[n]];
      words += 1 + targets.size();
      for (int32_t t : targets) {
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
  std::string out(prefix.size() + words * sizeof(int32_t) + suffix.size(), '\0');
  std::memcpy(out.data(), prefix.data(), prefix.size());
  std::memcpy(out.data() + out.size() - suffix.size(), suffix.data(), suffix.size());
  char* p = out.data() + prefix.size();
  auto put = [&p](int32_t w) {
    std::memcpy(p, &w, sizeof(w));
    p += sizeof(w);
  };
  put(radius);
  put(static_cast<int32_t>(roots.size()));
  for (int32_t root : roots) put(id_of[root]);
  for (int32_t n : order) {
    put(fsm.node_final[n] ? rule_id(fsm.node_rule[n]) + 2 : 0);
    put(fsm.edge_begin[n + 1] - fsm.edge_begin[n]);
    for (int32_t e = fsm.edge_begin[n]; e < fsm.edge_begin[n + 1]; ++e) {
      const FsmEdge& edge = fsm.edges[e];
      put(edge.rule >= 0 ? -1 - rule_id(edge.rule) : (edge.lo << 8 | edge.hi));
      put(node_id(edge.target));
      if (edge.rule >= 0) put(fsm.rule_nullable[edge.rule]);
    }
    if (call_targets && fsm.node_final[n]) {
      const std::vector<int32_t>& targets = (*call_targets)[fsm.node_rule[n]];
      put(static_cast<int32_t>(targets.size()));
      for (int32_t t : targets) put(node_id(t));
    }
  }
  return out;
}

}  // namespace

// A dense distance array, INT32_MAX everywhere between uses; `written` lists the
// entries to reset. `now` and `later` are the buckets of Dial's algorithm (below).
struct ByteDistances::Scratch {
  std::vector<int32_t> dist;
  std::vector<int32_t> written;
  std::vector<int32_t> now, later;
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
                             int32_t max_nodes)
    : fsm_(fsm), call_targets_(call_targets), max_radius_(max_radius), max_nodes_(max_nodes) {
  auto& free = FreeScratch();
  if (free.empty()) free.push_back(std::make_unique<Scratch>());
  scratch_ = free.back().release();
  free.pop_back();
  std::vector<int32_t>& dist = scratch_->dist;
  // Grows once per thread to the largest automata seen (amortized, not per call).
  if (static_cast<int32_t>(dist.size()) < fsm.NumNodes()) dist.resize(fsm.NumNodes(), INT32_MAX);
  scratch_->now.clear();
  scratch_->later.clear();
  for (int32_t root : roots) {
    if (dist[root] == 0) continue;
    dist[root] = 0;
    scratch_->written.push_back(root);
    scratch_->now.push_back(root);
  }
  done_ = scratch_->now.empty();
}

const int32_t* ByteDistances::UpTo(int32_t radius) {
  Scratch& s = *scratch_;
  int32_t* dist = s.dist.data();
  std::vector<int32_t>& now = s.now;
  std::vector<int32_t>& later = s.later;
  std::vector<int32_t>& written = s.written;
  auto relax = [&](int32_t n, int32_t d, std::vector<int32_t>& bucket) {
    if (d >= dist[n]) return;
    if (dist[n] == INT32_MAX) written.push_back(n);
    dist[n] = d;
    bucket.push_back(n);
  };
  // Dial's algorithm with two buckets: nodes at distance d (a stack: free moves push
  // onto it) and at d + 1. Distances above the last settled level read as farther than
  // any radius asked so far, as they are.
  while (!done_ && level_ <= radius) {
    const int32_t d = level_;
    while (!now.empty()) {
      int32_t n = now.back();
      now.pop_back();
      if (dist[n] != d) continue;  // reached again at a smaller distance
      ++settled_;
      for (int32_t e = fsm_.edge_begin[n]; e < fsm_.edge_begin[n + 1]; ++e) {
        const FsmEdge& edge = fsm_.edges[e];
        if (edge.rule < 0) {
          relax(edge.target, d + 1, later);
          continue;
        }
        relax(fsm_.rule_start[edge.rule], d, now);
        bool nullable = fsm_.rule_nullable[edge.rule];
        relax(edge.target, nullable ? d : d + 1, nullable ? now : later);
      }
      if (call_targets_ && fsm_.node_final[n]) {
        for (int32_t t : (*call_targets_)[fsm_.node_rule[n]]) relax(t, d, now);
      }
    }
    // Every distance up to d is final here. Past the bounds no ball gets a key: what
    // is only tentatively at d + 1 goes back to "far".
    if (settled_ > max_nodes_) too_large_from_ = d;
    if (d >= max_radius_ || settled_ > max_nodes_) {
      for (int32_t n : later) dist[n] = INT32_MAX;
      later.clear();
      done_ = true;
      break;
    }
    now.swap(later);
    ++level_;
    done_ = now.empty();
  }
  return dist;
}

const int32_t* ByteDistances::Made() const { return scratch_->dist.data(); }

ByteDistances::~ByteDistances() {
  for (int32_t n : scratch_->written) scratch_->dist[n] = INT32_MAX;
  scratch_->written.clear();
  FreeScratch().emplace_back(scratch_);
}

std::string BallKey(const GrammarFsm& fsm, const std::vector<int32_t>& roots,
                    const std::vector<std::vector<int32_t>>* call_targets, ByteDistances& dist,
                    int32_t radius, int32_t max_nodes, std::string_view prefix, std::string_view suffix) {
  // A ball past dist's node limit is past any limit no larger: "" without a walk.
  if (max_nodes <= dist.max_nodes() && dist.TooLarge(radius)) return "";
  return SerializeFrom(fsm, roots, call_targets, max_nodes, dist.UpTo(radius), radius, prefix, suffix);
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

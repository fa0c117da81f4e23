#include "grammar/fsm_key.h"

#include <algorithm>
#include <climits>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <type_traits>
#include <utility>
#include <vector>

namespace xgr2 {

namespace {

// The first word of a ReachKey (a BallKey's is its radius, never negative).
constexpr int32_t kReachHeader = -2;

// Per-thread scratch of the key makers, fetched once per call: every use of a
// thread_local in a shared library costs a __tls_get_addr call (7% of a BFCL run's
// mask instructions when the loops below touched them directly).
struct KeyScratch {
  std::vector<int32_t> id_of, stamp_of;  // canonical ids by discovery order, reset by stamping
  int32_t stamp = 0;
  std::vector<int32_t> order;
  std::vector<std::pair<int32_t, int32_t>> later;  // MatchesReachKey's checks left for the end

  // Starts a numbering of an automata of `num_nodes` nodes: no node stamped yet.
  void Begin(int32_t num_nodes) {
    if (static_cast<int32_t>(id_of.size()) < num_nodes) {
      id_of.assign(num_nodes, 0);
      stamp_of.assign(num_nodes, 0);
    }
    if (++stamp == 0) {
      std::fill(stamp_of.begin(), stamp_of.end(), 0);
      stamp = 1;
    }
    order.clear();
    later.clear();
  }
  // Gives `n` the next id.
  void Number(int32_t n) {
    stamp_of[n] = stamp;
    id_of[n] = static_cast<int32_t>(order.size());
    order.push_back(n);
  }
};

// The first byte >= from that `set` holds (with `in`) or lacks; kNoByte if none.
constexpr int kNoByte = 256;
inline int NextByte(const ByteSet& set, int from, bool in) {
  const uint64_t flip = in ? 0 : ~uint64_t{0};
  for (int w = from >> 6; w < 4; ++w) {
    uint64_t bits = (set[w] ^ flip) & (w == from >> 6 ? ~uint64_t{0} << (from & 63) : ~uint64_t{0});
    if (bits) return 64 * w + __builtin_ctzll(bits);
  }
  return kNoByte;
}

// Calls f(first, last, edge) for each run of asked bytes inside a byte edge of node n,
// in edge order: what a walk that asked n for `asked` read of its byte edges. Edges
// are sorted and disjoint: one merge of the edges with the runs of asked bytes finds
// them, a step per run or skipped edge rather than per asked byte (a string content
// node is asked for most bytes: keys are written and matched by the hundred per mask).
template <class F>
void ForAskedRuns(const GrammarFsm& fsm, int32_t n, const ByteSet& asked, F&& f) {
  int32_t e = fsm.edge_begin[n];
  const int32_t end = fsm.rule_edge_begin[n];
  if ((asked[0] & asked[1] & asked[2] & asked[3]) == ~uint64_t{0}) {  // every byte
    for (; e < end; ++e) f(fsm.edges[e].lo, fsm.edges[e].hi, fsm.edges[e]);
    return;
  }
  for (int b = NextByte(asked, 0, true); b != kNoByte && e < end;) {
    while (e < end && fsm.edges[e].hi < b) ++e;
    if (e == end) break;
    const FsmEdge& edge = fsm.edges[e];
    if (edge.lo > b) {  // no edge on b: the next asked byte from this edge on
      b = NextByte(asked, edge.lo, true);
      continue;
    }
    int last = std::min<int>(NextByte(asked, b, false) - 1, edge.hi);
    f(b, last, edge);
    if (last == 255) break;
    b = NextByte(asked, last + 1, true);
  }
}

constexpr ByteSet kAllBytes = {~uint64_t{0}, ~uint64_t{0}, ~uint64_t{0}, ~uint64_t{0}};

KeyScratch& ThreadKeyScratch() {
  thread_local KeyScratch scratch;
  return scratch;
}

// See BallKey and ReachKey: the nodes `include` admits (the roots always), numbered
// breadth-first; `header` is the key's first word (a ball's radius, or kReachHeader).
// With `read` (a walk's record), only the byte edges on the bytes it asked and the
// call targets it read are written (a ball holds all of them).
template <class Include>
std::string SerializeFrom(const GrammarFsm& fsm, const std::vector<int32_t>& roots,
                          const std::vector<std::vector<int32_t>>* call_targets, int32_t max_nodes,
                          const Include& include, const NodeSet* read, int32_t header, std::string_view prefix,
                          std::string_view suffix, int32_t watched_rule = -1) {
  KeyScratch& scratch = ThreadKeyScratch();
  scratch.Begin(fsm.NumNodes());
  const int32_t stamp = scratch.stamp;
  int32_t* id_of = scratch.id_of.data();
  int32_t* stamp_of = scratch.stamp_of.data();
  std::vector<int32_t>& order = scratch.order;
  auto visit = [&](int32_t n, bool always) {
    if (stamp_of[n] == stamp || !(always || include(n))) return true;
    if (static_cast<int32_t>(order.size()) >= max_nodes) return false;
    scratch.Number(n);
    return true;
  };
  auto asked = [&](int32_t n) -> const ByteSet& { return read ? read->Asked(n) : kAllBytes; };
  auto targets_read = [&](int32_t n) {
    return call_targets && fsm.node_final[n] && fsm.node_rule[n] != watched_rule &&
           (!read || read->CallTargetsRead(n));
  };
  for (int32_t root : roots) {
    if (!visit(root, true)) return "";
  }
  size_t words = 2 + roots.size();  // counted on the way: the key is written in place
  for (size_t k = 0; k < order.size(); ++k) {
    int32_t n = order[k];
    const bool byte_edges = fsm.rule_edge_begin[n] != fsm.edge_begin[n];
    words += 2 + (byte_edges ? 9 : 0) + (call_targets && fsm.node_final[n] ? 1 : 0) + (fsm.node_counts[n] ? 2 : 0);
    bool ok = true;
    if (byte_edges) {
      ForAskedRuns(fsm, n, asked(n), [&](int, int, const FsmEdge& edge) {
        words += 2;
        ok = ok && visit(edge.target, false);
      });
    }
    if (!ok) return "";
    for (int32_t e = fsm.rule_edge_begin[n]; e < fsm.edge_begin[n + 1]; ++e) {
      const FsmEdge& edge = fsm.edges[e];
      words += 3;
      if (!visit(edge.target, false) || !visit(fsm.rule_start[edge.rule], false)) return "";
    }
    if (targets_read(n)) {
      const std::vector<int32_t>& targets = (*call_targets)[fsm.node_rule[n]];
      words += targets.size();
      for (int32_t t : targets) {
        if (!visit(t, false)) return "";
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
  put(header);
  put(static_cast<int32_t>(roots.size()));
  for (int32_t root : roots) put(id_of[root]);
  for (int32_t n : order) {
    put(fsm.node_final[n] ? rule_id(fsm.node_rule[n]) + 2 : 0);
    const bool byte_edges = fsm.rule_edge_begin[n] != fsm.edge_begin[n];
    // callees, a counted rule's start (its bounds follow), byte edges
    put((fsm.edge_begin[n + 1] - fsm.rule_edge_begin[n]) << 2 | fsm.node_counts[n] << 1 | byte_edges);
    if (fsm.node_counts[n]) {
      put(fsm.rule_count_min[fsm.node_rule[n]]);
      put(fsm.rule_count_max[fsm.node_rule[n]]);
    }
    if (byte_edges) {
      const ByteSet& a = asked(n);
      for (uint64_t w : a) put(static_cast<int32_t>(w)), put(static_cast<int32_t>(w >> 32));
      char* runs_at = p;  // the count of runs, written once they are
      put(0);
      int32_t runs = 0;
      ForAskedRuns(fsm, n, a, [&](int lo, int hi, const FsmEdge& edge) {
        put(lo << 8 | hi);
        put(node_id(edge.target));
        ++runs;
      });
      std::memcpy(runs_at, &runs, sizeof(runs));
    }
    for (int32_t e = fsm.rule_edge_begin[n]; e < fsm.edge_begin[n + 1]; ++e) {
      const FsmEdge& edge = fsm.edges[e];
      put(rule_id(edge.rule));
      put(node_id(edge.target));
      put(fsm.rule_nullable[edge.rule]);
    }
    if (call_targets && fsm.node_final[n]) {
      if (!targets_read(n)) {
        put(-1);
        continue;
      }
      const std::vector<int32_t>& targets = (*call_targets)[fsm.node_rule[n]];
      put(static_cast<int32_t>(targets.size()));
      for (int32_t t : targets) put(node_id(t));
    }
  }
  if (p != out.data() + out.size() - suffix.size()) throw std::logic_error("SerializeFrom: miscounted key words");
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
                             int32_t max_nodes, int32_t watched_rule)
    : fsm_(fsm),
      call_targets_(call_targets),
      max_radius_(max_radius),
      max_nodes_(max_nodes),
      watched_rule_(watched_rule) {
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
      if (call_targets_ && fsm_.node_final[n] && fsm_.node_rule[n] != watched_rule_) {
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

ByteDistances::~ByteDistances() {
  for (int32_t n : scratch_->written) scratch_->dist[n] = INT32_MAX;
  scratch_->written.clear();
  FreeScratch().emplace_back(scratch_);
}

std::string BallKey(const GrammarFsm& fsm, const std::vector<int32_t>& roots,
                    const std::vector<std::vector<int32_t>>* call_targets, ByteDistances& dist,
                    int32_t radius, int32_t max_nodes, std::string_view prefix, std::string_view suffix,
                    int32_t watched_rule) {
  // A ball past dist's node limit is past any limit no larger: "" without a walk.
  if (max_nodes <= dist.max_nodes() && dist.TooLarge(radius)) return "";
  const int32_t* d = dist.UpTo(radius);
  return SerializeFrom(
      fsm, roots, call_targets, max_nodes, [d, radius](int32_t n) { return d[n] <= radius; }, nullptr, radius,
      prefix, suffix, watched_rule);
}

struct NodeSet::Scratch {
  std::vector<uint8_t> mark;  // all zero between uses
  std::vector<int32_t> slot;  // meaningful where marked
  std::vector<int32_t> nodes;
  std::vector<ByteSet> asked;
};

namespace {

std::vector<std::unique_ptr<NodeSet::Scratch>>& FreeNodeSets() {
  thread_local std::vector<std::unique_ptr<NodeSet::Scratch>> free;
  return free;
}

}  // namespace

NodeSet::NodeSet(int32_t num_nodes) {
  auto& free = FreeNodeSets();
  if (free.empty()) free.push_back(std::make_unique<Scratch>());
  scratch_ = free.back().release();
  free.pop_back();
  if (static_cast<int32_t>(scratch_->mark.size()) < num_nodes) {
    scratch_->mark.resize(num_nodes, 0);
    scratch_->slot.resize(num_nodes, 0);
  }
  mark_ = scratch_->mark.data();
  slot_ = scratch_->slot.data();
  nodes_ = &scratch_->nodes;
  nodes_->clear();
  asked_ = &scratch_->asked;
  asked_->clear();
  asked_data_ = asked_->data();
}

void NodeSet::InsertNew(int32_t n) {
  mark_[n] = kIn;
  slot_[n] = static_cast<int32_t>(nodes_->size());
  nodes_->push_back(n);
  asked_->emplace_back();
  asked_data_ = asked_->data();
}

NodeSet::~NodeSet() {
  for (int32_t n : *nodes_) mark_[n] = 0;
  nodes_->clear();
  asked_->clear();
  FreeNodeSets().emplace_back(scratch_);
}

std::string ReachKey(const GrammarFsm& fsm, const std::vector<int32_t>& roots,
                     const std::vector<std::vector<int32_t>>* call_targets, const NodeSet& reached,
                     int32_t max_nodes, std::string_view prefix, std::string_view suffix) {
  if (static_cast<int32_t>(reached.size()) > max_nodes) return "";
  return SerializeFrom(
      fsm, roots, call_targets, max_nodes, [&reached](int32_t n) { return reached.Contains(n); }, &reached,
      kReachHeader, prefix, suffix);
}

bool MatchesReachKey(const GrammarFsm& fsm, const std::vector<int32_t>& roots,
                     const std::vector<std::vector<int32_t>>* call_targets, std::string_view key,
                     size_t prefix_size, size_t suffix_size, int32_t max_nodes) {
  if (key.size() < prefix_size + suffix_size) return false;
  // One pass over the key's words in the order ReachKey wrote them (SerializeFrom):
  // this automata's nodes are numbered as the key numbers them, breadth-first from the
  // roots along the edges whose target the key numbers, and each word is compared as
  // it is made, so a key of another structure fails at its first difference. Ids that
  // the key gives before they are assigned (a rule named by a start node found later)
  // or withholds (-1: outside the set) are checked at the end.
  const char* p = key.data() + prefix_size;
  const char* end = key.data() + key.size() - suffix_size;
  auto get = [&p, end](int32_t* w) {
    if (end - p < static_cast<std::ptrdiff_t>(sizeof(int32_t))) return false;
    std::memcpy(w, p, sizeof(int32_t));
    p += sizeof(int32_t);
    return true;
  };
  KeyScratch& scratch = ThreadKeyScratch();
  scratch.Begin(fsm.NumNodes());
  const int32_t stamp = scratch.stamp;
  int32_t* id_of = scratch.id_of.data();
  int32_t* stamp_of = scratch.stamp_of.data();
  std::vector<int32_t>& order = scratch.order;
  std::vector<std::pair<int32_t, int32_t>>& later = scratch.later;  // (node, its id in the key, or -1)
  // The key's id for node n: -1 leaves n for the end; otherwise n gets it now (the
  // next id when new, in the order the key's numbering made them).
  auto number = [&](int32_t n, int32_t id) {
    if (id < 0) {
      later.emplace_back(n, -1);
      return true;
    }
    if (stamp_of[n] == stamp) return id_of[n] == id;
    if (id != static_cast<int32_t>(order.size()) || id >= max_nodes) return false;
    scratch.Number(n);
    return true;
  };
  int32_t w = 0, count = 0;
  if (!get(&w) || w != kReachHeader || !get(&count) || count != static_cast<int32_t>(roots.size())) return false;
  for (int32_t root : roots) {  // SerializeFrom numbers every root first
    if (stamp_of[root] != stamp) scratch.Number(root);
  }
  for (int32_t root : roots) {
    if (!get(&w) || w != id_of[root]) return false;
  }
  // A rule named by id `w` (-1: its start outside the set) in a word written as
  // `w + offset`.
  auto rule_named = [&](int32_t rule, int32_t id) {
    int32_t start = fsm.rule_start[rule];
    if (id < 0 || stamp_of[start] != stamp) {
      later.emplace_back(start, id);
      return true;
    }
    return id_of[start] == id;
  };
  for (size_t k = 0; k < order.size(); ++k) {
    int32_t n = order[k];
    int32_t final_word = 0, edge_word = 0;
    if (!get(&final_word) || (final_word != 0) != (fsm.node_final[n] != 0)) return false;
    if (final_word != 0 && !rule_named(fsm.node_rule[n], final_word - 2)) return false;
    const bool byte_edges = fsm.rule_edge_begin[n] != fsm.edge_begin[n];
    if (!get(&edge_word) ||
        edge_word != ((fsm.edge_begin[n + 1] - fsm.rule_edge_begin[n]) << 2 | fsm.node_counts[n] << 1 | byte_edges)) {
      return false;
    }
    if (fsm.node_counts[n]) {
      int32_t min = 0, max = 0;
      const int32_t rule = fsm.node_rule[n];
      if (!get(&min) || !get(&max) || min != fsm.rule_count_min[rule] || max != fsm.rule_count_max[rule]) return false;
    }
    if (byte_edges) {
      ByteSet asked{};
      for (uint64_t& w : asked) {
        int32_t low = 0, high = 0;
        if (!get(&low) || !get(&high)) return false;
        w = static_cast<uint32_t>(low) | static_cast<uint64_t>(static_cast<uint32_t>(high)) << 32;
      }
      int32_t runs = 0, seen = 0;
      if (!get(&runs)) return false;
      bool ok = true;
      ForAskedRuns(fsm, n, asked, [&](int lo, int hi, const FsmEdge& edge) {
        int32_t what = 0, target = 0;
        ok = ok && ++seen <= runs && get(&what) && what == (lo << 8 | hi) && get(&target) &&
             number(edge.target, target);
      });
      if (!ok || seen != runs) return false;
    }
    for (int32_t e = fsm.rule_edge_begin[n]; e < fsm.edge_begin[n + 1]; ++e) {
      const FsmEdge& edge = fsm.edges[e];
      int32_t callee = 0, target = 0, nullable = 0;
      // SerializeFrom numbers the target before the callee's start.
      if (!get(&callee) || !get(&target) || !number(edge.target, target)) return false;
      if (callee >= 0 ? !number(fsm.rule_start[edge.rule], callee) : !rule_named(edge.rule, -1)) return false;
      if (!get(&nullable) || nullable != fsm.rule_nullable[edge.rule]) return false;
    }
    if (call_targets && fsm.node_final[n]) {
      if (!get(&count)) return false;
      if (count < 0) continue;  // the walk never read them
      const std::vector<int32_t>& targets = (*call_targets)[fsm.node_rule[n]];
      if (count != static_cast<int32_t>(targets.size())) return false;
      for (int32_t t : targets) {
        if (!get(&w) || !number(t, w)) return false;
      }
    }
  }
  if (p != end) return false;  // the key has more nodes
  for (auto [n, id] : later) {
    if (id < 0 ? stamp_of[n] == stamp : (stamp_of[n] != stamp || id_of[n] != id)) return false;
  }
  return true;
}

namespace {

// Four independent multiply-xor lanes over 64-bit words (one dependency chain per lane,
// so the multiplies overlap), folded at the end. Not for adversaries: a match is always
// confirmed by SameAutomata.
class WordHasher {
 public:
  void Add(uint64_t w) {
    uint64_t& lane = lanes_[count_++ & 3];
    lane = (lane ^ w) * 0x9E3779B97F4A7C15ull;
  }
  template <class T>
  void AddArray(const std::vector<T>& v) {
    static_assert(std::is_integral_v<T>, "plain integers only (no padding bytes)");
    Add(v.size());
    const size_t bytes = v.size() * sizeof(T);
    const char* p = reinterpret_cast<const char*>(v.data());
    size_t i = 0;
    for (; i + 8 <= bytes; i += 8) {
      uint64_t w;
      std::memcpy(&w, p + i, 8);
      Add(w);
    }
    if (i < bytes) {
      uint64_t w = 0;
      std::memcpy(&w, p + i, bytes - i);
      Add(w);
    }
  }
  uint64_t Finish() const {
    uint64_t h = count_;
    for (uint64_t lane : lanes_) {
      h = (h ^ lane ^ (lane >> 29)) * 0xBF58476D1CE4E5B9ull;
      h ^= h >> 32;
    }
    return h;
  }

 private:
  uint64_t lanes_[4] = {1, 2, 3, 4};
  uint64_t count_ = 0;
};

}  // namespace

uint64_t AutomataHash(const GrammarFsm& fsm) {
  // rule_edge_begin and first_bytes follow from the edges: left out.
  WordHasher h;
  h.Add(static_cast<uint32_t>(fsm.root));
  h.AddArray(fsm.rule_start);
  h.AddArray(fsm.rule_nullable);
  h.AddArray(fsm.node_rule);
  h.AddArray(fsm.node_final);
  h.AddArray(fsm.rule_count_min);
  h.AddArray(fsm.rule_count_max);
  h.AddArray(fsm.edge_begin);
  h.Add(fsm.edges.size());
  for (const FsmEdge& e : fsm.edges) {  // field by field: FsmEdge has padding bytes
    h.Add((static_cast<uint64_t>(e.lo) << 40) | (static_cast<uint64_t>(e.hi) << 32) | static_cast<uint32_t>(e.rule));
    h.Add(static_cast<uint32_t>(e.target));
  }
  return h.Finish();
}

bool SameAutomata(const GrammarFsm& a, const GrammarFsm& b) {
  auto same_edge = [](const FsmEdge& x, const FsmEdge& y) {
    return x.lo == y.lo && x.hi == y.hi && x.rule == y.rule && x.target == y.target;
  };
  return a.root == b.root && a.rule_start == b.rule_start && a.rule_nullable == b.rule_nullable &&
         a.node_rule == b.node_rule && a.node_final == b.node_final && a.rule_count_min == b.rule_count_min &&
         a.rule_count_max == b.rule_count_max && a.edge_begin == b.edge_begin &&
         std::equal(a.edges.begin(), a.edges.end(), b.edges.begin(), b.edges.end(), same_edge);
}

int64_t AutomataBytes(const GrammarFsm& fsm) {
  return static_cast<int64_t>(fsm.edges.size() * sizeof(FsmEdge)) +
         static_cast<int64_t>(fsm.NumNodes()) * (3 * 4 + 1 + sizeof(ByteSet)) +
         static_cast<int64_t>(fsm.rule_start.size()) * 5;
}

}  // namespace xgr2

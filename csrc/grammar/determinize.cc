#include "grammar/determinize.h"

#include <algorithm>
#include <memory>
#include <mutex>
#include <unordered_map>

#include "xgr2/errors.h"
#include "xgr2/grammar.h"

namespace xgr2 {
namespace {

// Distinct sorted sets of NFA nodes, numbered in order of arrival, in one flat pool
// with an open-addressing index.
class SetTable {
 public:
  int32_t size() const { return static_cast<int32_t>(hashes_.size()); }

  // The number of `set`; a new one when not seen before.
  int32_t Intern(const std::vector<int32_t>& set, const std::string& rule_name) {
    if ((hashes_.size() + 1) * 2 > slots_.size()) Grow();
    uint64_t h = Hash(set);
    size_t mask = slots_.size() - 1;
    for (size_t i = h & mask;; i = (i + 1) & mask) {
      int32_t id = slots_[i];
      if (id < 0) {
        id = size();
        if (id >= GrammarLimits::kMaxDfaNodesPerRule) {
          throw GrammarError("grammar too large: rule `" + rule_name + "` needs more than " +
                             std::to_string(GrammarLimits::kMaxDfaNodesPerRule) + " automaton states");
        }
        slots_[i] = id;
        hashes_.push_back(h);
        pool_.insert(pool_.end(), set.begin(), set.end());
        offsets_.push_back(static_cast<int32_t>(pool_.size()));
        return id;
      }
      if (hashes_[id] == h && std::equal(set.begin(), set.end(), pool_.begin() + offsets_[id],
                                         pool_.begin() + offsets_[id + 1])) {
        return id;
      }
    }
  }

  void Get(int32_t id, std::vector<int32_t>* out) const {
    out->assign(pool_.begin() + offsets_[id], pool_.begin() + offsets_[id + 1]);
  }

 private:
  static uint64_t Hash(const std::vector<int32_t>& set) {
    uint64_t h = 0x9E3779B97F4A7C15ull ^ set.size();
    for (int32_t x : set) h = (h ^ static_cast<uint32_t>(x)) * 0xFF51AFD7ED558CCDull;
    return h ^ (h >> 32);
  }

  void Grow() {
    slots_.assign(std::max<size_t>(16, slots_.size() * 2), -1);
    size_t mask = slots_.size() - 1;
    for (int32_t id = 0; id < size(); ++id) {
      size_t i = hashes_[id] & mask;
      while (slots_[i] >= 0) i = (i + 1) & mask;
      slots_[i] = id;
    }
  }

  std::vector<int32_t> slots_;     // set number, or -1
  std::vector<uint64_t> hashes_;   // per set
  std::vector<int32_t> pool_;      // members of every set, back to back
  std::vector<int32_t> offsets_ = {0};
};

// Replaces `set` by its epsilon closure, sorted, keeping only the nodes that matter for
// what follows (`kept`: a byte or rule edge out, or the final node). Sets differing only
// in pass-through nodes would otherwise become distinct DFA nodes with the same future
// (the node after ':' and the one after ': ' in `":" ws value`). `stamp`/`epoch` give
// an O(1) visited check without clearing.
void Closure(const Nfa& nfa, const std::vector<uint8_t>& kept_nodes, std::vector<int32_t>* set,
             std::vector<uint32_t>* stamp, uint32_t* epoch, int64_t* work, const std::string& rule_name) {
  uint32_t mark = ++*epoch;
  size_t kept = 0;
  for (int32_t n : *set) {
    if ((*stamp)[n] != mark) (*stamp)[n] = mark, (*set)[kept++] = n;
  }
  set->resize(kept);
  for (size_t i = 0; i < set->size(); ++i) {
    int32_t n = (*set)[i];
    for (int32_t e = nfa.begin[n]; e < nfa.begin[n + 1]; ++e) {
      const NfaEdge& edge = nfa.edges[e];
      if (edge.rule == kNfaEpsilon && (*stamp)[edge.target] != mark) {
        (*stamp)[edge.target] = mark;
        set->push_back(edge.target);
      }
    }
  }
  *work += static_cast<int64_t>(set->size());
  if (*work > GrammarLimits::kMaxDeterminizeWorkPerRule) {
    throw GrammarError("grammar too large: rule `" + rule_name + "` is too ambiguous to determinize (more than " +
                       std::to_string(GrammarLimits::kMaxDeterminizeWorkPerRule) +
                       " NFA states visited; nested repetitions of overlapping alternatives?)");
  }
  set->erase(std::remove_if(set->begin(), set->end(), [&](int32_t n) { return !kept_nodes[n]; }), set->end());
  std::sort(set->begin(), set->end());
}

}  // namespace

RuleDfa Determinize(const Nfa& nfa, int32_t start, int32_t nfa_final, const std::string& rule_name) {
  RuleDfa dfa;
  SetTable table;
  std::vector<uint32_t> stamp(nfa.NumNodes(), 0);
  uint32_t epoch = 0;
  int64_t work = 0;  // NFA states visited by closures
  std::vector<uint8_t> kept(nfa.NumNodes(), 0);
  kept[nfa_final] = 1;
  for (int32_t n = 0; n < nfa.NumNodes(); ++n) {
    for (int32_t e = nfa.begin[n]; e < nfa.begin[n + 1]; ++e) kept[n] |= nfa.edges[e].rule != kNfaEpsilon;
  }
  std::vector<int32_t> set;
  // The DFA node of one NFA node's closure, by NFA node: most byte intervals and rule
  // edges lead to a single NFA node, and most of those were reached before.
  std::vector<int32_t> node_state(nfa.NumNodes(), -1);
  auto state_of_node = [&](int32_t n) {
    if (node_state[n] < 0) {
      set.assign(1, n);
      Closure(nfa, kept, &set, &stamp, &epoch, &work, rule_name);
      node_state[n] = table.Intern(set, rule_name);
    }
    return node_state[n];
  };
  state_of_node(start);
  dfa.begin.push_back(0);

  std::vector<int32_t> members;
  std::vector<const NfaEdge*> byte_edges, active;
  std::vector<std::pair<int32_t, int32_t>> rule_edges;  // (rule, NFA target)
  for (int32_t d = 0; d < table.size(); ++d) {
    table.Get(d, &members);
    byte_edges.clear(), rule_edges.clear();
    // Where elementary byte intervals start: bit b of `cuts` for byte b (256: past the end).
    uint64_t cuts[5] = {0, 0, 0, 0, 0};
    for (int32_t n : members) {
      for (int32_t e = nfa.begin[n]; e < nfa.begin[n + 1]; ++e) {
        const NfaEdge& edge = nfa.edges[e];
        if (edge.rule == -1) {
          byte_edges.push_back(&edge);
          cuts[edge.lo >> 6] |= uint64_t{1} << (edge.lo & 63);
          cuts[(edge.hi + 1) >> 6] |= uint64_t{1} << ((edge.hi + 1) & 63);
        } else if (edge.rule >= 0) {
          rule_edges.emplace_back(edge.rule, edge.target);
        }
      }
    }
    int points[257], num_points = 0;  // the cut points, ascending
    for (int w = 0; w < 5; ++w) {
      for (uint64_t bits = cuts[w]; bits; bits &= bits - 1) points[num_points++] = w * 64 + __builtin_ctzll(bits);
    }
    // Sweep the elementary byte intervals between cut points in ascending order,
    // keeping the edges that cover the current one.
    std::sort(byte_edges.begin(), byte_edges.end(), [](const NfaEdge* a, const NfaEdge* b) { return a->lo < b->lo; });
    active.clear();
    size_t next = 0;
    size_t first_edge = dfa.edges.size();
    for (int c = 0; c + 1 < num_points; ++c) {
      int lo = points[c], hi = points[c + 1] - 1;
      while (next < byte_edges.size() && byte_edges[next]->lo <= lo) active.push_back(byte_edges[next++]);
      active.erase(std::remove_if(active.begin(), active.end(), [&](const NfaEdge* e) { return e->hi < lo; }),
                   active.end());
      if (active.empty()) continue;
      int32_t t;
      if (active.size() == 1) {
        t = state_of_node(active[0]->target);
      } else {
        set.clear();
        for (const NfaEdge* e : active) set.push_back(e->target);
        Closure(nfa, kept, &set, &stamp, &epoch, &work, rule_name);
        t = table.Intern(set, rule_name);
      }
      FsmEdge* last = dfa.edges.size() > first_edge ? &dfa.edges.back() : nullptr;
      if (last && last->target == t && last->hi + 1 == lo) {
        last->hi = static_cast<uint8_t>(hi);
      } else {
        dfa.edges.push_back({static_cast<uint8_t>(lo), static_cast<uint8_t>(hi), -1, t});
      }
    }
    std::sort(rule_edges.begin(), rule_edges.end());
    for (size_t i = 0; i < rule_edges.size();) {
      int32_t rule = rule_edges[i].first;
      size_t from = i;
      while (i < rule_edges.size() && rule_edges[i].first == rule) ++i;
      if (i - from == 1) {
        dfa.edges.push_back({0, 0, rule, state_of_node(rule_edges[from].second)});
        continue;
      }
      set.clear();
      for (size_t k = from; k < i; ++k) set.push_back(rule_edges[k].second);
      Closure(nfa, kept, &set, &stamp, &epoch, &work, rule_name);
      dfa.edges.push_back({0, 0, rule, table.Intern(set, rule_name)});
    }
    dfa.final.push_back(std::binary_search(members.begin(), members.end(), nfa_final));
    dfa.begin.push_back(static_cast<int32_t>(dfa.edges.size()));
  }
  return dfa;
}

namespace {

// Rule automata by a key of the rule's IR, rule edges by rank (FindSharedDfa).
struct SharedDfas {
  struct Entry {
    std::shared_ptr<const RuleDfa> dfa;
    int64_t id;
  };
  std::mutex mu;
  using Map = std::unordered_map<std::string, Entry>;
  Map by_ir;
  Map pinned;  // automata of fixed building blocks (PinnedDfaScope): never cleared nor evicted
  size_t edges = 0;
  int64_t next_id = 0;

  // Keeps `dfa` under `key`; starts over past kMaxSharedDfaEdges. Locked. Returns the
  // id of the automaton stored under `key` (another thread's, if it was first).
  int64_t Insert(std::string key, std::shared_ptr<const RuleDfa> dfa) {
    Entry entry{std::move(dfa), next_id++};
    if (PinnedDfaScope::Active()) return pinned.emplace(std::move(key), std::move(entry)).first->second.id;
    if (edges + entry.dfa->edges.size() > kMaxSharedDfaEdges) {
      by_ir.clear();
      edges = 0;
    }
    size_t added = entry.dfa->edges.size();
    auto [it, fresh] = by_ir.emplace(std::move(key), std::move(entry));
    if (fresh) edges += added;
    return it->second.id;
  }
};

SharedDfas& TheSharedDfas() {
  static SharedDfas* shared = new SharedDfas;  // never destroyed: used until exit
  return *shared;
}

thread_local bool pinning = false;

}  // namespace

bool FindSharedDfa(const std::string& ir_key, RuleDfa* out, int64_t* id) {
  SharedDfas& shared = TheSharedDfas();
  std::shared_ptr<const RuleDfa> found;
  {
    std::lock_guard<std::mutex> lock(shared.mu);
    for (const SharedDfas::Map* map : {&shared.pinned, &shared.by_ir}) {
      if (auto it = map->find(ir_key); it != map->end()) {
        found = it->second.dfa;
        *id = it->second.id;
        break;
      }
    }
    if (!found) return false;
  }
  *out = *found;
  return true;
}

int64_t StoreSharedDfa(const std::string& ir_key, const RuleDfa& dfa) {
  auto copy = std::make_shared<RuleDfa>(dfa);
  SharedDfas& shared = TheSharedDfas();
  std::lock_guard<std::mutex> lock(shared.mu);
  return shared.Insert(ir_key, std::move(copy));
}

PinnedDfaScope::PinnedDfaScope() { pinning = true; }
PinnedDfaScope::~PinnedDfaScope() { pinning = false; }
bool PinnedDfaScope::Active() { return pinning; }

void ClearSharedDfas() {
  SharedDfas& shared = TheSharedDfas();
  std::lock_guard<std::mutex> lock(shared.mu);
  shared.by_ir.clear();
  shared.edges = 0;
}

}  // namespace xgr2

// Subset construction of one rule's automaton: a Thompson NFA over bytes, rule
// references and epsilon edges becomes a DFA over bytes and rule references.
// Everything is kept in flat arrays (edges of node n at [begin[n], begin[n+1])), so a
// small rule costs a few allocations, not a few per node: compile time matters for
// grammars built per request (JSON Schemas).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "grammar/fsm.h"

namespace xgr2 {

constexpr int32_t kNfaEpsilon = -2;  // NfaEdge::rule of an epsilon edge

struct NfaEdge {
  uint8_t lo = 0, hi = 0;  // byte edge: bytes [lo, hi]
  int32_t rule = -1;       // -1: byte edge, kNfaEpsilon, >= 0: rule edge
  int32_t target = 0;
};

struct Nfa {
  std::vector<int32_t> begin;  // edges of node n: [begin[n], begin[n + 1])
  std::vector<NfaEdge> edges;
  int32_t NumNodes() const { return static_cast<int32_t>(begin.size()) - 1; }
};

struct RuleDfa {
  std::vector<uint8_t> final;
  std::vector<int32_t> begin;  // edges of node n: [begin[n], begin[n + 1]); targets local
  std::vector<FsmEdge> edges;  // byte edges (ascending, disjoint) first, then rule edges
  int32_t NumNodes() const { return static_cast<int32_t>(final.size()); }
};

// The DFA of the NFA from node `start`, final where `nfa_final` is reached. Throws
// GrammarError naming `rule_name` past GrammarLimits::kMaxDfaNodesPerRule nodes.
RuleDfa Determinize(const Nfa& nfa, int32_t start, int32_t nfa_final, const std::string& rule_name);

// Rule automata kept process-wide by a key of the rule's grammar IR (fsm_builder.cc
// writes it: the body with inlined rules expanded, other rules by rank): grammars built
// per request (a tool set, a JSON Schema) repeat most of their rules, and a rule seen
// before needs no NFA at all. Rule edges are labelled by rank among the referenced
// rules in order of first reference (NfaBuilder builds them so), which makes the
// automaton a function of the key. At most kMaxSharedDfaEdges edges are kept; past that
// the store starts over. (A second store keyed by the NFA caught too few rules to pay
// for its key: BFCL, 600 schemas in one process, 534M -> 514M instructions without it.)
// Each stored automaton has an id, unique in the process and never reused (a key stored
// again after the store started over gets a new one): equal ids, equal automata.
constexpr size_t kMaxSharedDfaEdges = size_t{1} << 20;
bool FindSharedDfa(const std::string& ir_key, RuleDfa* out, int64_t* id);
int64_t StoreSharedDfa(const std::string& ir_key, const RuleDfa& dfa);  // the id

// Empties the store (xgr2.clear_shared_automata: cold-compile benchmarks, memory),
// except for pinned automata.
void ClearSharedDfas();

// While one lives, on this thread, automata stored go to a pinned part of the store
// that is never cleared nor evicted: for the fixed building blocks of JSON text, built
// once per process (frontends/json_schema.cc), so a schema never pays for them.
class PinnedDfaScope {
 public:
  PinnedDfaScope();
  ~PinnedDfaScope();
  PinnedDfaScope(const PinnedDfaScope&) = delete;
  PinnedDfaScope& operator=(const PinnedDfaScope&) = delete;
  static bool Active();
};

}  // namespace xgr2

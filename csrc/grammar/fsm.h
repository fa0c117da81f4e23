// Per-rule deterministic automata over bytes and rule references, in one node space.
// This is what the Earley parser walks: an item is (node, origin set).
#pragma once
#include <array>
#include <cstdint>
#include <vector>

#include "xgr2/grammar.h"

namespace xgr2 {

struct FsmEdge {
  uint8_t lo = 0;      // byte edge: bytes [lo, hi]
  uint8_t hi = 0;
  int32_t rule = -1;   // rule edge when >= 0
  int32_t target = 0;
};

using ByteSet = std::array<uint64_t, 4>;

inline bool ByteSetHas(const ByteSet& s, uint8_t b) { return (s[b >> 6] >> (b & 63)) & 1; }

// Adds the bytes [lo, hi], a word at a time.
inline void ByteSetAddRange(ByteSet& s, uint8_t lo, uint8_t hi) {
  for (int w = lo >> 6; w <= hi >> 6; ++w) {
    int a = w == lo >> 6 ? lo & 63 : 0, b = w == hi >> 6 ? hi & 63 : 63;
    uint64_t upto_b = b == 63 ? ~uint64_t{0} : (uint64_t{1} << (b + 1)) - 1;
    s[w] |= upto_b & ~((uint64_t{1} << a) - 1);
  }
}

// EarleyItem::count of an item whose completed repetitions are unknown (a node
// classified without its context): it may begin another repetition and end its rule
// anywhere, as the unbounded rule would.
constexpr int32_t kFreeCount = -1;
constexpr int32_t kUnboundedCount = 0x7FFFFFFF;

struct GrammarFsm {
  int32_t root = 0;
  std::vector<int32_t> rule_start;      // start node of each rule
  std::vector<uint8_t> rule_nullable;   // rule derives ""
  std::vector<int32_t> node_rule;       // owning rule of each node
  std::vector<uint8_t> node_final;      // node ends its rule
  std::vector<int32_t> edge_begin;      // edges of node n: [edge_begin[n], edge_begin[n+1])
  std::vector<int32_t> rule_edge_begin; // byte edges first (sorted by lo), then rule edges
  std::vector<FsmEdge> edges;
  std::vector<ByteSet> first_bytes;     // bytes with an edge out of each node
  // Per rule: an id of its automaton together with every rule it reaches by calls,
  // equal for equal structures in any grammar of the process; -1 for a rule on a call
  // cycle or one that calls such a rule (the shared node masks of TokenMaskCache).
  std::vector<int64_t> rule_structure;
  // Counted rules (Rule::counted, grammar/repetition.h): per rule its bounds (-1 for an
  // ordinary rule; count_max kUnboundedCount when unbounded), and per node whether it is
  // a counted rule's start, where each repetition begins and ends. An item of a counted
  // rule carries how many repetitions it has completed (EarleyItem::count).
  std::vector<int32_t> rule_count_min, rule_count_max;
  std::vector<uint8_t> node_counts;
  // Per counted rule, an id of its automaton whatever its bounds (-1 for other rules),
  // equal in every grammar of the process: what a count-free walk inside it depends on.
  std::vector<int64_t> rule_loop_id;
  bool any_counted = false;  // some rule is counted (else the parser skips every count check)

  int32_t NumNodes() const { return static_cast<int32_t>(node_rule.size()); }
  bool IsCounted(int32_t node) const { return rule_count_min[node_rule[node]] >= 0; }
  bool HasEdges(int32_t n) const { return edge_begin[n] != edge_begin[n + 1]; }

  // Target of the byte edge out of node n on b, or -1.
  int32_t ByteTarget(int32_t n, uint8_t b) const {
    for (int32_t e = edge_begin[n]; e < rule_edge_begin[n]; ++e) {
      if (b < edges[e].lo) return -1;
      if (b <= edges[e].hi) return edges[e].target;
    }
    return -1;
  }
};

// Whether the expression can be a counted rule's body (Rule::counted): a finite
// language (rule references only to ordinary rules without lookahead, no recursion, no
// loop, no token or dispatch expression; a small automaton) that is prefix-free (no
// string of it is a proper prefix of another: where one repetition ends is then known
// byte by byte) and lacks "".
bool IsCountableBody(const GrammarIR& g, int32_t expr);

// Builds the automata; prunes rules that derive no finite string and nodes that
// cannot reach a final node. Throws GrammarError when the root derives nothing or a
// documented size limit is exceeded.
GrammarFsm BuildGrammarFsm(const GrammarIR& g);

}  // namespace xgr2

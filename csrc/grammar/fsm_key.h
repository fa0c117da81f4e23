// Structural keys of automaton nodes, for sharing node masks across grammars
// (XGrammar-2 §3.3, the cross-grammar cache).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "grammar/fsm.h"

namespace xgr2 {

// The structure that parsing from `node` alone (its rule's callers unknown) can see:
// the nodes reachable from it by byte edges and rule-edge targets, plus the automata
// of the rules it can call, numbered in breadth-first order, with final flags, byte
// ranges, callees and, for final nodes, the rule they end. Nodes of any grammars with
// equal keys accept the same tokens inside their rule. Returns "" (no key) when more
// than `max_nodes` nodes are reachable.
std::string StructuralKey(const GrammarFsm& fsm, int32_t node, int32_t max_nodes);

// The structure that the mask cache's context walk for `node` with its callers going
// on at `follow` can see: StructuralKey's, from `node` and the `follow` nodes, plus for
// each final node the nodes where calls of its rule go on anywhere (`call_targets`,
// the generic context beyond the callers). Equal keys give equal uncertain tokens in
// that context. "" past `max_nodes` nodes.
std::string ContextKey(const GrammarFsm& fsm, int32_t node, const std::vector<int32_t>& follow,
                       const std::vector<std::vector<int32_t>>& call_targets, int32_t max_nodes);

}  // namespace xgr2

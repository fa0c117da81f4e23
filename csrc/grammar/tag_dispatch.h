// The free-text automaton of a TagDispatch: an Aho-Corasick DFA over its tags, stop
// strings and excluded strings (failure links resolved into a full transition table),
// crossed with a UTF-8 validator so free text is always valid UTF-8. The first completed
// occurrence of any of these strings leaves free text: a tag dispatches, a stop string
// ends the construct, an excluded string is a dead end. So no parse can read a
// completed tag as free text, while a partial tag stays free text.
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "xgr2/grammar.h"

namespace xgr2 {

struct DispatchEdge {
  uint8_t lo = 0;  // bytes [lo, hi]
  uint8_t hi = 0;
  int32_t target = 0;  // a state (>= 0), kDispatchStop, or DispatchTag(i)
};

constexpr int32_t kDispatchStop = -1;                         // a stop string completed
constexpr int32_t DispatchTag(int32_t tag) { return -2 - tag; }  // tag `tag` completed
constexpr int32_t DispatchTagIndex(int32_t target) { return -2 - target; }

struct DispatchAutomaton {
  std::vector<int32_t> begin;      // edges of state s: [begin[s], begin[s + 1]), sorted by lo
  std::vector<DispatchEdge> edges;
  std::vector<uint8_t> boundary;   // state is at a character boundary (free text may end)

  int32_t NumStates() const { return static_cast<int32_t>(boundary.size()); }
};

// Builds the automaton (state 0 is the start). Throws GrammarError for an empty or
// non-UTF-8 string, a string listed twice, more than GrammarLimits::kMaxDispatchBytes
// bytes in all, a tag or stop string that can never complete (another string always
// completes first), or options under which the construct can never end.
DispatchAutomaton BuildDispatchAutomaton(const TagDispatchSpec& spec);

// Adds a kTagDispatch expression to `g` (tag i dispatches to `targets[i]`, rule
// references) after checking its strings: throws GrammarError as BuildDispatchAutomaton.
int32_t AddTagDispatch(GrammarIR* g, TagDispatchSpec spec, std::vector<int32_t> targets);

}  // namespace xgr2

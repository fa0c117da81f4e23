// Deterministic automata over code points, for the set operations on regular languages
// that the JSON Schema front end needs and the grammar IR cannot say: `not pattern`
// (complement), `pattern` with minLength / maxLength (intersection with a length range),
// and patternProperties beside declared names (intersections and differences of key
// languages). The result goes back into the IR as one right-linear rule per state.
#pragma once
#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "grammar/ir_builder.h"
#include "xgr2/grammar.h"

namespace xgr2 {

// An automaton would exceed CharDfa's limits (docs/limits.md); callers report it as an
// unsupported construct.
class DfaLimitError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A DFA over the code points U+0000-U+10FFFF less the surrogates (the characters of
// UTF-8 and of decoded JSON strings). Every operation returns it trimmed (each state is
// reachable and can reach acceptance; a missing transition rejects) and, when small,
// minimized; state 0 is the start. Immutable.
class CharDfa {
 public:
  struct Edge {
    uint32_t lo, hi;  // code points, inclusive
    int32_t target;
  };
  struct State {
    std::vector<Edge> edges;  // sorted, disjoint, adjacent ranges to one target merged
    bool accepting = false;
  };

  static constexpr int32_t kMaxStates = 10000;         // states of any automaton built
  static constexpr int32_t kMaxNfaNodes = 200000;      // Thompson nodes of one expression
  static constexpr int64_t kMaxWork = 20000000;        // NFA nodes visited / pairs explored per operation
  static constexpr int32_t kMaxMinimizeStates = 400;   // larger ones with cycles are only trimmed

  // The language of a rule-free expression of `g` (kBytes, kCharClass, kSequence,
  // kChoice, kRepeat, kEmpty: what AppendRegex builds).
  static CharDfa FromExpr(const GrammarIR& g, int32_t expr);
  // The strings a regex matches: fullmatch, or with `search` JSON Schema's `pattern`
  // semantics (contains a match). Throws RegexError like AppendRegex.
  // Also takes leading negative lookaheads, `^(?!X)...`, which the regex parser refuses.
  static CharDfa FromPattern(const std::string& pattern, bool search);
  // Exactly these UTF-8 strings.
  static CharDfa Words(const std::vector<std::string>& words);
  // Strings of min..max code points (max < 0: no upper bound).
  static CharDfa LengthBetween(int64_t min, int64_t max);

  CharDfa Complement() const;
  CharDfa Intersect(const CharDfa& other) const;
  CharDfa Minus(const CharDfa& other) const { return Intersect(other.Complement()); }

  bool Accepts(const std::string& utf8) const;
  bool IsEmpty() const { return !states_[0].accepting && states_[0].edges.empty(); }
  int32_t NumStates() const { return static_cast<int32_t>(states_.size()); }
  const std::vector<State>& states() const { return states_; }

 private:
  explicit CharDfa(std::vector<State> states);  // trims and minimizes
  std::vector<State> states_;
};

// Appends the DFA's language to the builder's IR, one rule per state named `name`
// (made unique): state ::= self-loop* (chars(ranges to t) t)* | "" when accepting.
// `chars` writes one character of the given sorted code-point ranges (e.g. as JSON
// string content with every escape). An empty language gives Nothing().
int32_t EmitDfa(IrBuilder* b, const CharDfa& dfa,
                const std::function<int32_t(const std::vector<CodepointRange>&)>& chars, const std::string& name);

// The length of a pattern's leading `^(?!X)` groups (0 when it has none): such a pattern
// compiles only through CharDfa::FromPattern.
size_t LeadingLookaheads(const std::string& pattern);

}  // namespace xgr2

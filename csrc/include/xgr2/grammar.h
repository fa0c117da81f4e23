// Grammar IR: rules whose bodies are expression trees. Front ends (EBNF today;
// regex, JSON Schema, structural tags next) produce it; the FSM builder consumes it.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace xgr2 {

enum class ExprKind : uint8_t {
  kEmpty,      // matches ""
  kBytes,      // a literal byte string (UTF-8 of the literal)
  kCharClass,  // one code point from `ranges` (or outside them when negated)
  kRuleRef,    // another rule
  kSequence,   // children in order
  kChoice,     // any one child
  kRepeat,     // child repeated [min, max] times; max == -1 means unbounded
  kTagDispatch,  // free text watched for tags; tag i dispatches to children[i] (`dispatch`)
  kToken,        // one whole token whose id is in `ranges` (or outside them when negated)
};

struct CodepointRange {
  uint32_t lo;
  uint32_t hi;
};

// Sorted by start, overlapping and adjacent ranges merged (the form kCharClass keeps).
std::vector<CodepointRange> NormalizeRanges(std::vector<CodepointRange> ranges);
// The ranges less the surrogates U+D800-U+DFFF, which are no characters.
std::vector<CodepointRange> WithoutSurrogates(const std::vector<CodepointRange>& ranges);
// The values 0..`max` outside sorted `ranges`: by default the code points up to
// U+10FFFF (a negated class's members); kToken sets pass GrammarLimits::kMaxTokenId.
std::vector<CodepointRange> ComplementRanges(const std::vector<CodepointRange>& ranges, uint32_t max = 0x10FFFF);

// Options of a kTagDispatch expression (semantics in docs/tag_dispatch.md). Free text
// (valid UTF-8) runs until the first completed occurrence of any tag, stop string or
// excluded string; among occurrences ending at the same byte the longest counts.
struct TagDispatchSpec {
  std::vector<std::string> tags;       // tags[i] dispatches to the expression children[i]
  std::vector<std::string> stop_strs;  // a completed stop string ends the construct
  std::vector<std::string> excludes;   // never allowed in free text
  bool stop_eos = true;                // the construct may end anywhere in free text
  bool loop_after_dispatch = true;     // back to free text after a dispatch (else it ends)
  bool at_least_one = false;           // no end (eos or stop string) before a dispatch
};

struct Expr {
  ExprKind kind = ExprKind::kEmpty;
  std::string bytes;                   // kBytes
  std::vector<CodepointRange> ranges;  // kCharClass code points, kToken ids; sorted and merged
  bool negated = false;                // kCharClass, kToken
  int32_t rule = -1;                   // kRuleRef
  std::vector<int32_t> children;       // kSequence, kChoice, kRepeat (one child)
  int32_t min = 0;                     // kRepeat
  int32_t max = -1;                    // kRepeat
  std::shared_ptr<const TagDispatchSpec> dispatch;  // kTagDispatch
};

struct Rule {
  std::string name;
  int32_t body = -1;       // expression id
  int32_t lookahead = -1;  // expression id of a lookahead assertion, or -1
  // Never inlined into its callers, however small: a separator used at hundreds of
  // places (JSON Schema's `ws ":" ws`) would otherwise be copied into each of them,
  // and each copy adds a run of automaton states to its caller. Not part of the
  // language, and not written by the EBNF printer.
  bool shared = false;
  // A counted rule (grammar/repetition.h): the rule matches its body repeated
  // [count_min, count_max] times (count_max -1: unbounded), and the parser counts the
  // repetitions in its items instead of expanding them. The body is then regular and
  // prefix-free. count_min -1: an ordinary rule.
  int32_t count_min = -1;
  int32_t count_max = -1;
  bool counted() const { return count_min >= 0; }
};

// Immutable once built. Expressions live in one arena and refer to each other by id.
struct GrammarIR {
  std::vector<Expr> exprs;
  std::vector<Rule> rules;
  int32_t root = 0;

  int32_t AddExpr(Expr e) {
    exprs.push_back(std::move(e));
    return static_cast<int32_t>(exprs.size()) - 1;
  }
  int32_t FindRule(const std::string& name) const;
};

using GrammarPtr = std::shared_ptr<const GrammarIR>;

// Limits that bound pathological grammars (documented in docs/limits.md).
struct GrammarLimits {
  static constexpr int32_t kMaxRepeat = 1000000000;    // largest finite bound in {m,n} (compressed, grammar/repetition.h)
  static constexpr int64_t kMaxNfaNodes = 2000000;     // total NFA nodes while building FSMs
  static constexpr int64_t kMaxDfaNodesPerRule = 200000;
  // NFA states visited by the epsilon closures of one rule's subset construction: bounds
  // its work when states are few but their sets large (nested ambiguous repetitions).
  static constexpr int64_t kMaxDeterminizeWorkPerRule = 10000000;
  static constexpr int32_t kMaxNesting = 1000;         // parenthesis depth in EBNF text
  static constexpr int32_t kMaxDispatchBytes = 16384;  // bytes of one TagDispatch's tags, stops, excludes
  static constexpr int32_t kMaxTokenId = (1 << 24) - 1;  // token ids a kToken expression can name
};

// Parses XGrammar/GBNF-style EBNF. Throws GrammarError with line and column.
GrammarPtr ParseEbnf(const std::string& text, const std::string& root_rule);

// Prints a normalized EBNF text that parses back to the same grammar.
std::string PrintGrammar(const GrammarIR& g);

// Prints one expression (used in error messages and the printer).
std::string PrintExpr(const GrammarIR& g, int32_t expr);

// The builtin JSON grammar (RFC 8259 values, any whitespace between tokens).
const std::string& BuiltinJsonEbnf();

}  // namespace xgr2

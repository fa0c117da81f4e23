// Small helpers for front ends that build grammar IR directly (regex, JSON Schema,
// structural tags): one call per expression kind, so front-end code reads like the
// grammar it emits.
#pragma once
#include <functional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "xgr2/grammar.h"

namespace xgr2 {

class IrBuilder {
 public:
  // One builder per IR at a time: it tracks the rule names in use.
  explicit IrBuilder(GrammarIR* g);
  GrammarIR* ir() const { return g_; }

  int32_t Empty() { return g_->AddExpr(Expr{}); }
  // A literal: UTF-8 bytes matched exactly ("" gives Empty()).
  int32_t Bytes(std::string bytes);
  // One code point in the (unsorted, possibly overlapping) ranges, or outside them.
  int32_t Class(std::vector<CodepointRange> ranges, bool negated = false) {
    return Ranges(ExprKind::kCharClass, std::move(ranges), negated);
  }
  // One whole token whose id is in the ranges (or outside them): see ExprKind::kToken.
  int32_t Token(std::vector<CodepointRange> ids, bool negated = false) {
    return Ranges(ExprKind::kToken, std::move(ids), negated);
  }
  int32_t Seq(const std::vector<int32_t>& items) { return Join(ExprKind::kSequence, items); }
  int32_t Choice(const std::vector<int32_t>& alts) { return Join(ExprKind::kChoice, alts); }
  int32_t Repeat(int32_t child, int32_t min, int32_t max);  // max -1: unbounded
  int32_t Optional(int32_t child) { return Repeat(child, 0, 1); }
  int32_t Star(int32_t child) { return Repeat(child, 0, -1); }
  int32_t Plus(int32_t child) { return Repeat(child, 1, -1); }
  int32_t Ref(int32_t rule);

  // A new rule named `name` (made unique with a numeric suffix); its body is set later.
  int32_t NewRule(const std::string& name);
  void SetBody(int32_t rule, int32_t body) { g_->rules[rule].body = body; }
  // A rule that is called, never inlined (Rule::shared).
  void SetShared(int32_t rule) { g_->rules[rule].shared = true; }
  // A new rule with this body; returns a reference to it.
  int32_t RuleRef(const std::string& name, int32_t body);

 private:
  int32_t Join(ExprKind kind, const std::vector<int32_t>& items);
  int32_t Ranges(ExprKind kind, std::vector<CodepointRange> ranges, bool negated);

  GrammarIR* g_;
  std::unordered_set<std::string> names_;
  std::unordered_map<std::string, int> next_suffix_;  // NewRule: last suffix tried per name
};

// Rewrites a rule-free expression character by character: every kBytes literal and
// kCharClass becomes rewrite(ranges), where `ranges` are the sorted, merged code points
// one character of it may be (negated classes are complemented, surrogates excluded).
// Used for JSON string escapes, `json_string` regexes and case-insensitive matching.
int32_t RewriteChars(IrBuilder* b, int32_t expr,
                     const std::function<int32_t(const std::vector<CodepointRange>&)>& rewrite);

// Keeps only the characters inside `allowed` (a literal with another character, or a
// class left empty, matches nothing).
int32_t RestrictChars(IrBuilder* b, int32_t expr, const std::vector<CodepointRange>& allowed);

// An expression that matches no string at all (an empty character class).
int32_t Nothing(IrBuilder* b);

// Copies the rules of `src` into the builder's IR (names prefixed by `prefix`, made
// unique); returns the id of src's root rule there.
int32_t ImportGrammar(IrBuilder* dst, const GrammarIR& src, const std::string& prefix);

}  // namespace xgr2

#include "grammar/ir_builder.h"

#include <algorithm>

#include "support/utf8.h"
#include "xgr2/errors.h"

namespace xgr2 {

IrBuilder::IrBuilder(GrammarIR* g) : g_(g) {
  for (const Rule& r : g->rules) names_.insert(r.name);
}

int32_t IrBuilder::Bytes(std::string bytes) {
  Expr e;
  e.kind = bytes.empty() ? ExprKind::kEmpty : ExprKind::kBytes;
  e.bytes = std::move(bytes);
  return g_->AddExpr(std::move(e));
}

int32_t IrBuilder::Ranges(ExprKind kind, std::vector<CodepointRange> ranges, bool negated) {
  Expr e;
  e.kind = kind;
  e.negated = negated;
  e.ranges = NormalizeRanges(std::move(ranges));
  return g_->AddExpr(std::move(e));
}

// A sequence or choice of `items`, nested ones of the same kind flattened; one item is
// itself. Empty items add nothing to a sequence.
int32_t IrBuilder::Join(ExprKind kind, const std::vector<int32_t>& items) {
  Expr e;
  e.kind = kind;
  size_t size = 0;  // reserved once: joins are most of a schema's expressions
  for (int32_t it : items) size += g_->exprs[it].kind == kind ? g_->exprs[it].children.size() : 1;
  e.children.reserve(size);
  for (int32_t it : items) {
    const Expr& c = g_->exprs[it];
    if (c.kind == kind) {
      e.children.insert(e.children.end(), c.children.begin(), c.children.end());
    } else if (!(kind == ExprKind::kSequence && c.kind == ExprKind::kEmpty)) {
      e.children.push_back(it);
    }
  }
  if (e.children.empty() && kind == ExprKind::kSequence) return Empty();
  if (e.children.size() == 1) return e.children[0];
  return g_->AddExpr(std::move(e));
}

int32_t IrBuilder::Repeat(int32_t child, int32_t min, int32_t max) {
  Expr e;
  e.kind = ExprKind::kRepeat;
  e.children = {child};
  e.min = min;
  e.max = max;
  return g_->AddExpr(std::move(e));
}

int32_t IrBuilder::Ref(int32_t rule) {
  Expr e;
  e.kind = ExprKind::kRuleRef;
  e.rule = rule;
  return g_->AddExpr(std::move(e));
}

int32_t IrBuilder::NewRule(const std::string& name) {
  std::string unique = name;
  // Resume at the last suffix given for `name`: many rules of one name (an automaton's
  // states, a schema's many `key` rules) then cost O(1) each, not O(rules so far).
  int& suffix = next_suffix_[name];
  while (names_.count(unique)) unique = name + "_" + std::to_string(++suffix);
  names_.insert(unique);
  g_->rules.push_back(Rule{unique, -1, -1});
  return static_cast<int32_t>(g_->rules.size()) - 1;
}

int32_t IrBuilder::RuleRef(const std::string& name, int32_t body) {
  int32_t r = NewRule(name);
  SetBody(r, body);
  return Ref(r);
}

namespace {

// The code points one character of a class may be, as sorted positive ranges.
std::vector<CodepointRange> ClassRanges(const Expr& e) {
  return e.negated ? WithoutSurrogates(ComplementRanges(e.ranges)) : e.ranges;
}

}  // namespace

int32_t RewriteChars(IrBuilder* b, int32_t expr,
                     const std::function<int32_t(const std::vector<CodepointRange>&)>& rewrite) {
  // Copy: rewriting appends to the arena and may move it.
  Expr e = b->ir()->exprs[expr];
  switch (e.kind) {
    case ExprKind::kEmpty:
      return expr;
    case ExprKind::kBytes: {
      std::vector<int32_t> chars;
      size_t p = 0;
      while (p < e.bytes.size()) {
        int32_t cp = DecodeUtf8(e.bytes, &p);
        if (cp < 0) throw GrammarError("literal is not valid UTF-8");
        uint32_t c = static_cast<uint32_t>(cp);
        chars.push_back(rewrite({{c, c}}));
      }
      return b->Seq(chars);
    }
    case ExprKind::kCharClass:
      return rewrite(ClassRanges(e));
    case ExprKind::kRuleRef:
    case ExprKind::kTagDispatch:
    case ExprKind::kToken:
      throw GrammarError("internal: RewriteChars met a rule reference or a token");
    case ExprKind::kSequence:
    case ExprKind::kChoice: {
      std::vector<int32_t> kids;
      for (int32_t c : e.children) kids.push_back(RewriteChars(b, c, rewrite));
      return e.kind == ExprKind::kSequence ? b->Seq(kids) : b->Choice(kids);
    }
    case ExprKind::kRepeat:
      return b->Repeat(RewriteChars(b, e.children[0], rewrite), e.min, e.max);
  }
  return expr;
}

int32_t Nothing(IrBuilder* b) { return b->Class({}, false); }

int32_t RestrictChars(IrBuilder* b, int32_t expr, const std::vector<CodepointRange>& allowed) {
  return RewriteChars(b, expr, [&](const std::vector<CodepointRange>& ranges) {
    std::vector<CodepointRange> kept;
    for (CodepointRange r : ranges) {
      for (CodepointRange a : allowed) {
        uint32_t lo = std::max(r.lo, a.lo), hi = std::min(r.hi, a.hi);
        if (lo <= hi) kept.push_back({lo, hi});
      }
    }
    return b->Class(kept, false);
  });
}

int32_t ImportGrammar(IrBuilder* dst_builder, const GrammarIR& src, const std::string& prefix) {
  IrBuilder& b = *dst_builder;
  GrammarIR* dst = b.ir();
  int32_t expr_base = static_cast<int32_t>(dst->exprs.size());
  std::vector<int32_t> rule_id(src.rules.size());
  for (size_t r = 0; r < src.rules.size(); ++r) rule_id[r] = b.NewRule(prefix + src.rules[r].name);
  for (Expr e : src.exprs) {
    for (int32_t& c : e.children) c += expr_base;
    if (e.kind == ExprKind::kRuleRef) e.rule = rule_id[e.rule];
    dst->AddExpr(std::move(e));
  }
  for (size_t r = 0; r < src.rules.size(); ++r) {
    Rule& out = dst->rules[rule_id[r]];
    out.body = src.rules[r].body < 0 ? -1 : src.rules[r].body + expr_base;
    out.lookahead = src.rules[r].lookahead < 0 ? -1 : src.rules[r].lookahead + expr_base;
    out.shared = src.rules[r].shared;
    out.count_min = src.rules[r].count_min;
    out.count_max = src.rules[r].count_max;
  }
  return rule_id[src.root];
}

}  // namespace xgr2

#include "frontends/ir_builder.h"

#include <algorithm>

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

int32_t IrBuilder::Class(std::vector<CodepointRange> ranges, bool negated) {
  std::sort(ranges.begin(), ranges.end(), [](auto a, auto b) { return a.lo < b.lo; });
  Expr e;
  e.kind = ExprKind::kCharClass;
  e.negated = negated;
  for (auto r : ranges) {
    if (!e.ranges.empty() && r.lo <= e.ranges.back().hi + 1) {
      e.ranges.back().hi = std::max(e.ranges.back().hi, r.hi);
    } else {
      e.ranges.push_back(r);
    }
  }
  return g_->AddExpr(std::move(e));
}

int32_t IrBuilder::Seq(std::vector<int32_t> items) {
  Expr e;
  e.kind = ExprKind::kSequence;
  for (int32_t it : items) {
    const Expr& c = g_->exprs[it];
    if (c.kind == ExprKind::kSequence) {
      e.children.insert(e.children.end(), c.children.begin(), c.children.end());
    } else if (c.kind != ExprKind::kEmpty) {
      e.children.push_back(it);
    }
  }
  if (e.children.empty()) return Empty();
  if (e.children.size() == 1) return e.children[0];
  return g_->AddExpr(std::move(e));
}

int32_t IrBuilder::Choice(std::vector<int32_t> alts) {
  Expr e;
  e.kind = ExprKind::kChoice;
  for (int32_t a : alts) {
    const Expr& c = g_->exprs[a];
    if (c.kind == ExprKind::kChoice) {
      e.children.insert(e.children.end(), c.children.begin(), c.children.end());
    } else {
      e.children.push_back(a);
    }
  }
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
  for (int i = 1; names_.count(unique); ++i) unique = name + "_" + std::to_string(i);
  names_.insert(unique);
  g_->rules.push_back(Rule{unique, -1, -1});
  return static_cast<int32_t>(g_->rules.size()) - 1;
}

int32_t IrBuilder::RuleRef(const std::string& name, int32_t body) {
  int32_t r = NewRule(name);
  SetBody(r, body);
  return Ref(r);
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
  }
  return rule_id[src.root];
}

}  // namespace xgr2

#include "grammar/repetition.h"

#include <functional>
#include <map>
#include <optional>
#include <vector>

#include "grammar/fsm.h"
#include "grammar/ir_builder.h"
#include "xgr2/errors.h"

namespace xgr2 {
namespace {

// The doubling rules of one repeated expression X.
class Doubling {
 public:
  Doubling(IrBuilder* b, int32_t child) : b_(b) { x_ = b_->RuleRef("rep", child); }

  int32_t Range(int64_t min, int64_t max) {
    int32_t exact = Exact(min);
    if (max < 0) return b_->Seq({exact, b_->Star(x_)});
    return b_->Seq({exact, UpTo(max - min)});
  }

 private:
  // X repeated exactly 2^k times.
  int32_t Pow(int k) {
    if (k == 0) return x_;
    auto it = pow_.find(k);
    if (it != pow_.end()) return b_->Ref(it->second);
    int32_t half = Pow(k - 1);
    int32_t rule = b_->NewRule("rep_x" + std::to_string(int64_t{1} << k));
    b_->SetBody(rule, b_->Seq({half, Pow(k - 1)}));
    pow_[k] = rule;
    return b_->Ref(rule);
  }

  // X repeated exactly n times: the powers of two of n's bits.
  int32_t Exact(int64_t n) {
    if (n == 0) return b_->Empty();
    if (n <= kRepetitionCopyLimit) return b_->Repeat(x_, static_cast<int32_t>(n), static_cast<int32_t>(n));
    std::vector<int32_t> parts;
    for (int k = 62; k >= 0; --k) {
      if ((n >> k) & 1) parts.push_back(Pow(k));
    }
    return b_->Seq(parts);
  }

  // X repeated 0 to 2^k - 1 times.
  int32_t Below(int k) {
    int64_t top = (int64_t{1} << k) - 1;
    if (top <= kRepetitionCopyLimit) return b_->Repeat(x_, 0, static_cast<int32_t>(top));
    auto it = below_.find(k);
    if (it != below_.end()) return b_->Ref(it->second);
    int32_t rule = b_->NewRule("rep_upto" + std::to_string(top));
    below_[k] = rule;
    int32_t smaller = Below(k - 1);
    b_->SetBody(rule, b_->Choice({smaller, b_->Seq({Pow(k - 1), Below(k - 1)})}));
    return b_->Ref(rule);
  }

  // X repeated 0 to m times: [0, 2^k - 1] or 2^k more then [0, m - 2^k].
  int32_t UpTo(int64_t m) {
    if (m <= kRepetitionCopyLimit) return b_->Repeat(x_, 0, static_cast<int32_t>(m));
    int k = 0;
    while ((int64_t{2} << k) - 1 <= m) ++k;  // largest k with 2^k - 1 <= m
    if ((int64_t{1} << k) - 1 == m) return Below(k);
    return b_->Choice({Below(k), b_->Seq({Pow(k), UpTo(m - (int64_t{1} << k))})});
  }

  IrBuilder* b_;
  int32_t x_;
  std::map<int, int32_t> pow_, below_;
};

// Which expressions derive "" (a fixpoint over the rules).
class Nullable {
 public:
  explicit Nullable(const GrammarIR& g) : g_(g), rule_(g.rules.size(), 0) {
    for (bool changed = true; changed;) {
      changed = false;
      for (size_t r = 0; r < g.rules.size(); ++r) {
        if (!rule_[r] && g.rules[r].body >= 0 && OfRule(static_cast<int32_t>(r))) rule_[r] = 1, changed = true;
      }
    }
  }

  bool Of(int32_t id) const {
    const Expr& e = g_.exprs[id];
    switch (e.kind) {
      case ExprKind::kEmpty: return true;
      case ExprKind::kBytes: return e.bytes.empty();
      case ExprKind::kCharClass: return false;
      case ExprKind::kToken: return false;
      // A rule added after the fixpoint (Doubling's, a DAG; a counted one): read from
      // its body.
      case ExprKind::kRuleRef:
        return static_cast<size_t>(e.rule) < rule_.size() ? rule_[e.rule] : OfRule(e.rule);
      case ExprKind::kSequence:
        for (int32_t c : e.children) {
          if (!Of(c)) return false;
        }
        return true;
      case ExprKind::kChoice:
        for (int32_t c : e.children) {
          if (Of(c)) return true;
        }
        return false;
      case ExprKind::kRepeat: return e.min == 0 || Of(e.children[0]);
      case ExprKind::kTagDispatch: return e.dispatch->stop_eos && !e.dispatch->at_least_one;
    }
    return false;
  }

  // A counted rule's body never derives "": the rule does when it may repeat it 0 times.
  bool OfRule(int32_t r) const { return g_.rules[r].counted() ? g_.rules[r].count_min == 0 : Of(g_.rules[r].body); }

 private:
  const GrammarIR& g_;
  std::vector<uint8_t> rule_;
};

// Whether the expression references a rule, not looking into rules (a JSON string's
// characters: copies of such a repetition are copies of calls, each position its own
// parse state that the mask cache cannot share).
bool ReferencesRule(const GrammarIR& g, int32_t id, int depth = 0) {
  const Expr& e = g.exprs[id];
  if (e.kind == ExprKind::kRuleRef) return true;
  if (depth > 64) return true;  // deep: assume so (only chooses counting over copies)
  for (int32_t c : e.children) {
    if (ReferencesRule(g, c, depth + 1)) return true;
  }
  return false;
}

// What a sequence of one item between empty strings stands for (`("a"{2,4} "")`): the
// item, looked through again while it is such a sequence.
int32_t LookThroughEmpties(const GrammarIR& g, int32_t id) {
  for (int hops = 0; hops < 64 && g.exprs[id].kind == ExprKind::kSequence; ++hops) {
    int32_t only = -1;
    for (int32_t c : g.exprs[id].children) {
      const Expr& item = g.exprs[c];
      if (item.kind == ExprKind::kEmpty || (item.kind == ExprKind::kBytes && item.bytes.empty())) continue;
      if (only >= 0) return id;
      only = c;
    }
    if (only < 0) return id;
    id = only;
  }
  return id;
}

// (Y{a,b}){m,n} is Y{ma,nb} when the counts it allows leave no gap: j rounds give
// [ja, jb], and consecutive j overlap or touch from j = m on iff m(b - a) >= a - 1 (b
// unbounded: iff m >= 1 or a <= 1); m = n has one j. Merging removes the ambiguity of
// where a round ends (`(\d+){200,1000}`: any digit may start a round), which made every
// parser step cost more the longer the input. Children come before their parents, so
// nests merge fully. Y{a,b} may stand between empty strings (LookThroughEmpties).
void MergeNestedRepeats(GrammarIR* g, const std::function<const Nullable&()>& nullable) {
  // Merges e with the repeat right inside it; false when there is none to merge.
  auto merge_once = [&](Expr& e) {
    const Expr& c = g->exprs[LookThroughEmpties(*g, e.children[0])];
    if (c.kind != ExprKind::kRepeat || nullable().Of(c.children[0])) return false;
    int64_t m = e.min, n = e.max, a = c.min, b = c.max;  // -1: unbounded
    bool contiguous = m == n || (b < 0 ? (m >= 1 || a <= 1) : m * (b - a) >= a - 1);
    int64_t lo = m * a, hi = n == 0 || b == 0 ? 0 : n < 0 || b < 0 ? -1 : n * b;
    if (!contiguous) return false;
    if (lo > GrammarLimits::kMaxRepeat || hi > GrammarLimits::kMaxRepeat) {
      // Unmerged, the rounds' split stays ambiguous at every byte: each parser step would
      // cost more the longer the input (a jump-forward over 64 KiB ran for minutes).
      const int64_t times = lo > GrammarLimits::kMaxRepeat ? lo : hi;
      throw GrammarError("a nested repetition repeats its item " + std::to_string(times) +
                         " times, more than the limit of " + std::to_string(GrammarLimits::kMaxRepeat) +
                         " (the product of the nested bounds)");
    }
    int32_t y = c.children[0];
    e.children = {y};
    e.min = static_cast<int32_t>(lo);
    e.max = static_cast<int32_t>(hi);
    return true;
  };
  for (Expr& e : g->exprs) {
    // Level by level down the nest, as far as a second pass would merge the result
    // (`("a"{2,})*{0}` is "a"{0}, whose print reads back the same).
    if (e.kind == ExprKind::kRepeat) {
      while (merge_once(e)) {
      }
    }
  }
}

}  // namespace

void CompressRepetitions(GrammarIR* g) {
  // Most grammars have no repetition to merge or compress: the nullable rules (a
  // fixpoint over the whole grammar) and a builder only when one is found.
  std::optional<Nullable> nullable_rules;
  auto nullable = [&]() -> const Nullable& {
    if (!nullable_rules) nullable_rules.emplace(*g);
    return *nullable_rules;
  };
  MergeNestedRepeats(g, nullable);
  std::optional<IrBuilder> b;
  std::vector<int32_t> rule_of_body;  // the rule whose whole body each expression is
  // IsCountableBody builds the body's automaton: once per body (JSON Schema's strings
  // repeat one character rule, each in an expression of its own).
  std::map<std::pair<int32_t, int32_t>, bool> countable;  // by (referenced rule or -1, expression)
  auto is_countable = [&](int32_t child) {
    const Expr& c = g->exprs[child];
    std::pair<int32_t, int32_t> key = c.kind == ExprKind::kRuleRef ? std::make_pair(c.rule, -1) : std::make_pair(-1, child);
    auto it = countable.find(key);
    if (it == countable.end()) it = countable.emplace(key, IsCountableBody(*g, child)).first;
    return it->second;
  };
  size_t n = g->exprs.size();  // rewrite only what was there: new repeats are small
  for (size_t id = 0; id < n; ++id) {
    const Expr& e = g->exprs[id];
    if (e.kind != ExprKind::kRepeat) continue;
    int32_t child = e.children[0], min = e.min, max = e.max;
    if (max < 0 && min <= kRepetitionCopyLimit) continue;  // X{m,}: no large count
    const bool large = min > kRepetitionCopyLimit || max > kRepetitionCopyLimit;
    if (!large && (max <= kMaxCopiedCalls || !ReferencesRule(*g, child))) continue;  // copies
    if (is_countable(child)) {
      // A counted rule: the rule itself when the repetition is its whole body (so a
      // printed grammar reads back the same), else a new one called here.
      if (rule_of_body.empty()) {
        // Only the expressions that were there: rules made by an earlier Doubling have
        // bodies past them (a schema that doubled first wrote past this table).
        rule_of_body.assign(n, -1);
        for (size_t r = 0; r < g->rules.size(); ++r) {
          const Rule& rule = g->rules[r];
          if (rule.body >= 0 && static_cast<size_t>(rule.body) < n && !rule.counted() && rule.lookahead < 0) {
            rule_of_body[rule.body] = static_cast<int32_t>(r);
          }
        }
      }
      if (!b) b.emplace(g);
      int32_t rule = rule_of_body[id];
      if (rule < 0) rule = b->NewRule("repeat");
      Rule& counted = g->rules[rule];
      counted.body = child;
      counted.count_min = min;
      counted.count_max = max;
      Expr ref = g->exprs[b->Ref(rule)];  // other references of this expression call it too
      g->exprs[id] = std::move(ref);
      continue;
    }
    if (!large) continue;
    if (nullable().Of(child)) {
      // Doubling a nullable X would make the parse ambiguous at every position: keep copies.
      continue;
    }
    if (!b) b.emplace(g);
    Doubling d(&*b, child);
    int32_t replacement = d.Range(min, max);
    Expr copy = g->exprs[replacement];
    g->exprs[id] = std::move(copy);
  }
}

}  // namespace xgr2

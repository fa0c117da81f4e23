// IR -> Thompson NFA per rule -> subset construction -> pruning.
#include <algorithm>
#include <functional>
#include <mutex>
#include <string>
#include <unordered_map>

#include "grammar/determinize.h"
#include "grammar/fsm.h"
#include "grammar/tag_dispatch.h"
#include "grammar/token_spelling.h"
#include "support/grouped.h"
#include "support/utf8.h"
#include "xgr2/errors.h"

namespace xgr2 {
namespace {

class NfaBuilder {
 public:
  // Rule edges carry `rank[rule]`, the rule's place among the rules the body calls in
  // order of first reference (IrKeyWriter): the automaton then depends on the body's
  // shape alone, not on how the grammar numbers its rules.
  NfaBuilder(const GrammarIR& g, const std::vector<uint8_t>& inlined, const std::vector<int32_t>& rank,
             int64_t* budget)
      : g_(g), inlined_(inlined), rank_(rank), budget_(budget) {}

  int32_t NewNode() {
    if (--*budget_ < 0) {
      throw GrammarError("grammar too large: automata exceed " +
                         std::to_string(GrammarLimits::kMaxNfaNodes) + " nodes (large repetition bounds?)");
    }
    return num_nodes_++;
  }
  void Add(int32_t from, NfaEdge e) { edges_.emplace_back(from, e); }
  void Eps(int32_t from, int32_t to) { Add(from, {0, 0, kNfaEpsilon, to}); }

  // Adds the language of `expr` from `from`; returns the end node.
  int32_t Build(int32_t expr, int32_t from) {
    const Expr& e = g_.exprs[expr];
    switch (e.kind) {
      case ExprKind::kEmpty:
        return from;
      case ExprKind::kBytes: {
        int32_t cur = from;
        for (char c : e.bytes) {
          int32_t next = NewNode();
          uint8_t b = static_cast<uint8_t>(c);
          Add(cur, {b, b, -1, next});
          cur = next;
        }
        return cur;
      }
      case ExprKind::kCharClass:
        return BuildClass(e, from);
      case ExprKind::kRuleRef: {
        if (inlined_[e.rule]) {
          // (A counted rule is copied in only into a counted rule's automaton, which has
          // every rule expanded: as the repetition it stands for.)
          const Rule& rule = g_.rules[e.rule];
          return rule.counted() ? BuildRepeat(rule.body, rule.count_min, rule.count_max, from) : Build(rule.body, from);
        }
        int32_t next = NewNode();
        Add(from, {0, 0, rank_[e.rule], next});
        return next;
      }
      case ExprKind::kSequence: {
        int32_t cur = from;
        for (int32_t c : e.children) cur = Build(c, cur);
        return cur;
      }
      case ExprKind::kChoice: {
        int32_t end = NewNode();
        for (int32_t c : e.children) {
          int32_t start = NewNode();
          Eps(from, start);
          Eps(Build(c, start), end);
        }
        return end;
      }
      case ExprKind::kRepeat:
        return BuildRepeat(e.children[0], e.min, e.max, from);
      case ExprKind::kTagDispatch:
        return BuildDispatch(e, from);
      case ExprKind::kToken:
        return BuildToken(e, from);
    }
    return from;
  }

  // The automaton built so far, edges grouped by source node (in order of addition).
  Nfa Take() const {
    Nfa nfa;
    nfa.begin.assign(num_nodes_ + 1, 0);
    for (const auto& [from, e] : edges_) ++nfa.begin[from + 1];
    for (int32_t n = 0; n < num_nodes_; ++n) nfa.begin[n + 1] += nfa.begin[n];
    nfa.edges.resize(edges_.size());
    std::vector<int32_t> fill(nfa.begin.begin(), nfa.begin.end() - 1);
    for (const auto& [from, e] : edges_) nfa.edges[fill[from]++] = e;
    return nfa;
  }

 private:
  // `child` repeated [min, max] times (max -1: unbounded), as copies.
  int32_t BuildRepeat(int32_t child, int32_t min, int32_t max, int32_t from) {
    int32_t cur = from;
    for (int32_t i = 0; i < min; ++i) {
      int32_t start = NewNode();
      Eps(cur, start);
      cur = Build(child, start);
    }
    if (max < 0) {  // star: loop through a fresh node
      int32_t loop = NewNode();
      Eps(cur, loop);
      Eps(Build(child, loop), loop);
      return loop;
    }
    int32_t end = NewNode();
    Eps(cur, end);
    for (int32_t i = min; i < max; ++i) {
      int32_t start = NewNode();
      Eps(cur, start);
      cur = Build(child, start);
      Eps(cur, end);
    }
    return end;
  }

  int32_t BuildClass(const Expr& e, int32_t from) {
    const std::vector<CodepointRange> ranges = e.negated ? ComplementRanges(e.ranges) : e.ranges;
    int32_t end = NewNode();
    for (auto r : ranges) {
      for (const ByteRangeSeq& seq : CachedUtf8RangeSequences(r.lo, r.hi)) {
        int32_t cur = from;
        for (int i = 0; i < seq.len; ++i) {
          int32_t next = i + 1 == seq.len ? end : NewNode();
          Add(cur, {seq.lo[i], seq.hi[i], -1, next});
          cur = next;
        }
      }
    }
    return end;
  }

  // The spelling of the ids in the set (grammar/token_spelling.h): the marker byte, then
  // one path of id byte ranges per piece of each range.
  int32_t BuildToken(const Expr& e, int32_t from) {
    const std::vector<CodepointRange> ids = e.negated ? ComplementRanges(e.ranges, GrammarLimits::kMaxTokenId) : e.ranges;
    int32_t spelled = NewNode(), end = NewNode();
    Add(from, {kTokenMarker, kTokenMarker, -1, spelled});
    for (CodepointRange r : ids) {
      for (const IdByteRanges& seq : TokenIdRangeSequences(r.lo, r.hi)) {
        int32_t cur = spelled;
        for (int i = 0; i < kTokenIdBytes; ++i) {
          int32_t next = i + 1 == kTokenIdBytes ? end : NewNode();
          Add(cur, {seq.lo[i], seq.hi[i], -1, next});
          cur = next;
        }
      }
    }
    return end;
  }

  // The free-text automaton copied in as NFA nodes (it is deterministic already): one
  // copy before the first dispatch when at_least_one (no way to end there), one after.
  // Each tag's expression is built once; its end goes back to free text or ends.
  int32_t BuildDispatch(const Expr& e, int32_t from) {
    const TagDispatchSpec& spec = *e.dispatch;
    DispatchAutomaton a = BuildDispatchAutomaton(spec);
    int32_t end = NewNode();
    std::vector<int32_t> tag_entry;
    for (size_t i = 0; i < spec.tags.size(); ++i) tag_entry.push_back(NewNode());
    auto copy = [&](bool may_end) {
      std::vector<int32_t> node(a.NumStates());
      for (int32_t& n : node) n = NewNode();
      for (int32_t s = 0; s < a.NumStates(); ++s) {
        for (int32_t k = a.begin[s]; k < a.begin[s + 1]; ++k) {
          const DispatchEdge& d = a.edges[k];
          int32_t to = d.target >= 0 ? node[d.target]
                       : d.target == kDispatchStop ? (may_end ? end : -1)
                                                   : tag_entry[DispatchTagIndex(d.target)];
          if (to >= 0) Add(node[s], {d.lo, d.hi, -1, to});
        }
        if (may_end && spec.stop_eos && a.boundary[s]) Eps(node[s], end);
      }
      return node[0];
    };
    bool need_after = !spec.at_least_one || spec.loop_after_dispatch;
    int32_t after = need_after ? copy(true) : -1;
    int32_t start = spec.at_least_one ? copy(false) : after;
    Eps(from, start);
    for (size_t i = 0; i < spec.tags.size(); ++i) {
      Eps(Build(e.children[i], tag_entry[i]), spec.loop_after_dispatch ? after : end);
    }
    return end;
  }

  const GrammarIR& g_;
  const std::vector<uint8_t>& inlined_;
  const std::vector<int32_t>& rank_;
  int64_t* budget_;
  int32_t num_nodes_ = 0;
  std::vector<std::pair<int32_t, NfaEdge>> edges_;  // (source, edge)
};

// Rules small enough to copy into their callers' automata: not the root, no rule
// references except to other inlined rules (so never recursive), and at most
// kMaxInlineExprs expressions once their own inlined callees are counted. Inlining
// terminal-like rules (strings, numbers, whitespace) keeps Earley sets small and lets
// the mask cache see longer stretches of text inside one rule. A rule that loops over
// a wide character class (a string's content, free text) stays a rule of its own: its
// nodes then look the same in every grammar that uses it, so their costly masks (most
// of the vocabulary is accepted there) are shared across grammars (see fsm_key.h).
std::vector<uint8_t> InlinableRules(const GrammarIR& g) {
  constexpr int64_t kMaxInlineExprs = 64;
  // A rule whose expansion still calls rules (that keep automata of their own) is
  // inlined only when small: a wrapper such as a property's `"\"" string_content "\""`,
  // whose end would otherwise be a rule end right after the value (every token that
  // closes the string then goes on in an assumed context, left to the full parser per
  // state). Larger ones copied into several callers cost more automaton states to build
  // than they save, and even with one call site they would leave an automaton shared
  // across grammars for one that is not (a tool's arguments inside a request's tag
  // rule: tool-set compiles +32%).
  constexpr int64_t kMaxInlineCallingExprs = 8;
  constexpr int64_t kMaxInlineOnceCallingExprs = 24;  // with a single call site
  constexpr uint32_t kWideClass = 64;  // code points
  const int32_t num_rules = static_cast<int32_t>(g.rules.size());
  std::vector<int64_t> size(num_rules, -1);  // expanded size once known to be inlinable
  std::vector<uint8_t> inlined(num_rules, 0);
  // Rules are decided callees first (below), so an expression is looked at only once
  // every rule it references is decided, and its answers can be kept: a rule still
  // being decided then is in a cycle with the asking rule and is never inlined. (Many
  // rules share expressions, e.g. an automaton's character sets.)
  enum : uint8_t { kNew, kOpen, kDecided };
  std::vector<uint8_t> state(num_rules, kNew);
  std::vector<int8_t> wide_memo(g.exprs.size(), -1);
  std::vector<int64_t> size_memo(g.exprs.size(), -2);
  // Whether an expression can match one character of a wide class.
  // (Recursive lambdas take themselves as `self`: no std::function call per expression.)
  auto wide = [&](auto& self, int32_t id) -> bool {
    if (wide_memo[id] >= 0) return wide_memo[id];
    const Expr& e = g.exprs[id];
    bool result = false;
    if (e.kind == ExprKind::kCharClass || e.kind == ExprKind::kToken) {
      uint64_t count = 0;
      for (const CodepointRange& r : e.ranges) count += r.hi - r.lo + 1;
      result = e.negated || count >= kWideClass;
    } else if (e.kind == ExprKind::kRuleRef) {
      result = inlined[e.rule] && self(self, g.rules[e.rule].body);
    } else {
      for (int32_t c : e.children) result = result || self(self, c);
    }
    wide_memo[id] = result;
    return result;
  };
  // Expanded size of an expression (a repeat counts its body once per copy, a call of a
  // rule that keeps its automaton is one edge), capped just past the limit; -1 if it
  // references a rule still being decided. Recursion is bounded by the parser's
  // nesting limit.
  auto expr_size = [&](auto& self, int32_t id) -> int64_t {
    if (size_memo[id] != -2) return size_memo[id];
    const Expr& e = g.exprs[id];
    int64_t total = 1;
    if (e.kind == ExprKind::kTagDispatch) {
      total = -1;  // free text: a wide loop
    } else if (e.kind == ExprKind::kRepeat && e.max < 0 && wide(wide, e.children[0])) {
      total = -1;
    } else if (e.kind == ExprKind::kRuleRef) {
      // A call of a rule that keeps its own automaton is one edge; a rule still being
      // decided is in a cycle with the asking one, which then is never inlined.
      total = inlined[e.rule] ? 1 + size[e.rule] : state[e.rule] == kDecided ? 1 : -1;
    } else {
      int64_t copies = e.kind == ExprKind::kRepeat ? std::max<int64_t>(1, e.max < 0 ? e.min + 1 : e.max) : 1;
      for (int32_t c : e.children) {
        int64_t child = self(self, c);
        if (child < 0) {
          total = -1;
          break;
        }
        total = std::min(total + copies * child, kMaxInlineExprs + 1);
      }
    }
    size_memo[id] = total;
    return total;
  };
  // Whether an expression, inlined rules expanded, still calls a rule.
  std::vector<int8_t> calls_memo(g.exprs.size(), -1);
  auto calls = [&](auto& self, int32_t id) -> bool {
    if (calls_memo[id] >= 0) return calls_memo[id];
    const Expr& e = g.exprs[id];
    bool result = false;
    if (e.kind == ExprKind::kRuleRef) {
      result = !inlined[e.rule] || self(self, g.rules[e.rule].body);
    } else {
      for (int32_t c : e.children) result = result || self(self, c);
    }
    calls_memo[id] = result;
    return result;
  };
  // The rules each rule's body references directly (not through other rules), all in
  // one array: rule r's are callees[callees_begin[r] .. callees_begin[r + 1]).
  std::vector<int32_t> todo, callees, callees_begin(num_rules + 1, 0);
  std::vector<int32_t> call_sites(num_rules, 0);  // references from rule bodies
  for (int32_t r = 0; r < num_rules; ++r) {
    todo.assign(1, g.rules[r].body);
    while (!todo.empty()) {
      const Expr& e = g.exprs[todo.back()];
      todo.pop_back();
      if (e.kind == ExprKind::kRuleRef) callees.push_back(e.rule), ++call_sites[e.rule];
      todo.insert(todo.end(), e.children.begin(), e.children.end());
    }
    callees_begin[r + 1] = static_cast<int32_t>(callees.size());
  }
  // Callees first, by an explicit depth-first walk of the call graph (automata emitted
  // as rules make long call chains).
  struct Frame {
    int32_t rule;
    int32_t next;  // index into `callees`
  };
  std::vector<Frame> stack;
  for (int32_t r0 = 0; r0 < num_rules; ++r0) {
    if (state[r0] != kNew) continue;
    state[r0] = kOpen;
    stack.push_back({r0, callees_begin[r0]});
    while (!stack.empty()) {
      Frame& f = stack.back();
      if (f.next < callees_begin[f.rule + 1]) {
        int32_t c = callees[f.next++];
        if (state[c] == kNew) {
          state[c] = kOpen;
          stack.push_back({c, callees_begin[c]});  // invalidates f
        }
        continue;
      }
      int32_t r = f.rule;
      stack.pop_back();
      // Sized while still open: a rule that calls itself is never inlined.
      if (r != g.root && !g.rules[r].shared && !g.rules[r].counted()) {
        int64_t s = expr_size(expr_size, g.rules[r].body);
        int64_t limit = !calls(calls, g.rules[r].body) ? kMaxInlineExprs
                        : call_sites[r] == 1    ? kMaxInlineOnceCallingExprs
                                                : kMaxInlineCallingExprs;
        if (s >= 0 && s <= limit) inlined[r] = 1, size[r] = s;
      }
      state[r] = kDecided;
    }
  }
  return inlined;
}

// Whether a final node is reachable from the start through edges that pass `edge_ok`.
// `seen` and `stack` are scratch space, reused across calls.
template <typename EdgeOk>
bool ReachesFinal(const RuleDfa& d, EdgeOk edge_ok, std::vector<uint8_t>* seen_scratch,
                  std::vector<int32_t>* stack_scratch) {
  std::vector<uint8_t>& seen = *seen_scratch;
  std::vector<int32_t>& stack = *stack_scratch;
  seen.assign(d.final.size(), 0);
  stack.assign(1, 0);
  seen[0] = 1;
  while (!stack.empty()) {
    int32_t n = stack.back();
    stack.pop_back();
    if (d.final[n]) return true;
    for (int32_t i = d.begin[n]; i < d.begin[n + 1]; ++i) {
      const FsmEdge& e = d.edges[i];
      if (edge_ok(e) && !seen[e.target]) seen[e.target] = 1, stack.push_back(e.target);
    }
  }
  return false;
}

}  // namespace

namespace {

// A key of the automaton a rule's body builds (FindSharedDfa): the expression tree with
// inlined rules expanded in place (as NfaBuilder copies them) and every other rule
// named by the order of its first reference, its rank. NfaBuilder labels rule edges by
// rank, so equal keys build equal automata, whatever the rules are called or numbered.
// `rules` gets the referenced rules in that order.
class IrKeyWriter {
 public:
  IrKeyWriter(const GrammarIR& g, const std::vector<uint8_t>& inlined) : g_(g), inlined_(inlined) {}

  // `self`: the rule whose body this is when its tail calls to itself become loops
  // (LoopTailCalls), else -1; its references are marked, so the key tells them apart.
  std::string Key(int32_t body, std::vector<int32_t>* rules, int32_t self) {
    words_.clear();
    refs_.clear();
    self_ = self;
    Write(body);
    *rules = refs_;
    return std::string(reinterpret_cast<const char*>(words_.data()), words_.size() * sizeof(int32_t));
  }

 private:
  void Put(int32_t v) { words_.push_back(v); }
  void PutString(const std::string& s) {  // the length, then the bytes packed four a word
    Put(static_cast<int32_t>(s.size()));
    for (size_t i = 0; i < s.size(); i += 4) {
      uint32_t word = 0;
      for (size_t k = i; k < std::min(i + 4, s.size()); ++k) word = word << 8 | static_cast<uint8_t>(s[k]);
      Put(static_cast<int32_t>(word));
    }
  }
  void PutRanges(const Expr& e) {
    Put(e.negated);
    Put(static_cast<int32_t>(e.ranges.size()));
    for (CodepointRange r : e.ranges) Put(static_cast<int32_t>(r.lo)), Put(static_cast<int32_t>(r.hi));
  }

  void Write(int32_t id) {
    const Expr& e = g_.exprs[id];
    // An inlined rule is its body, written in place as NfaBuilder copies it, with no
    // mark of its own: every kind's words are self-delimiting, so the key stays
    // unambiguous. (Writing the reference's kind first made an inlined `""` (kind 0)
    // read like a reference to the first rule (index 0): `[a] X | [b] ""` and
    // `[a] "" | [b] X` shared one automaton.)
    if (e.kind == ExprKind::kRuleRef && inlined_[e.rule]) {
      const Rule& rule = g_.rules[e.rule];
      if (!rule.counted()) return Write(rule.body);
      Put(static_cast<int32_t>(ExprKind::kRepeat)), Put(rule.count_min), Put(rule.count_max), Put(1);  // as NfaBuilder
      return Write(rule.body);
    }
    Put(static_cast<int32_t>(e.kind));
    switch (e.kind) {
      case ExprKind::kEmpty:
        return;
      case ExprKind::kBytes:
        return PutString(e.bytes);
      case ExprKind::kCharClass:
      case ExprKind::kToken:
        return PutRanges(e);
      case ExprKind::kRuleRef: {
        auto it = std::find(refs_.begin(), refs_.end(), e.rule);
        Put(static_cast<int32_t>(it - refs_.begin()));
        Put(e.rule == self_);
        if (it == refs_.end()) refs_.push_back(e.rule);
        return;
      }
      case ExprKind::kRepeat:
        Put(e.min), Put(e.max);
        break;
      case ExprKind::kTagDispatch: {
        const TagDispatchSpec& d = *e.dispatch;
        for (const auto* list : {&d.tags, &d.stop_strs, &d.excludes}) {
          Put(static_cast<int32_t>(list->size()));
          for (const std::string& s : *list) PutString(s);
        }
        Put(d.stop_eos << 2 | d.loop_after_dispatch << 1 | d.at_least_one);
        break;
      }
      case ExprKind::kSequence:
      case ExprKind::kChoice:
        break;
    }
    Put(static_cast<int32_t>(e.children.size()));
    for (int32_t c : e.children) Write(c);
  }

  const GrammarIR& g_;
  const std::vector<uint8_t>& inlined_;
  std::vector<int32_t> words_;  // the key being written
  std::vector<int32_t> refs_;   // referenced rules, in order of first reference
  int32_t self_ = -1;
};

// Whether everything epsilon-reachable from `node` (itself included) has epsilon edges
// only, and `end` is among it: after a call ending at `node`, the rule can only end.
// `seen` (one entry per node) marks the nodes visited with `mark`, so that calls with
// distinct marks share it without clearing it.
bool OnlyEndsAfter(const Nfa& nfa, int32_t node, int32_t end, std::vector<int32_t>& seen, int32_t mark) {
  std::vector<int32_t> stack = {node};
  seen[node] = mark;
  bool found_end = false;
  while (!stack.empty()) {
    int32_t n = stack.back();
    stack.pop_back();
    found_end |= n == end;
    for (int32_t k = nfa.begin[n]; k < nfa.begin[n + 1]; ++k) {
      const NfaEdge& e = nfa.edges[k];
      if (e.rule != kNfaEpsilon) return false;
      if (seen[e.target] != mark) seen[e.target] = mark, stack.push_back(e.target);
    }
  }
  return found_end;
}

// A rule's calls of itself in tail position (`s ::= "" | [a-z] s`) become loops back to
// its start: the same language, but the parser no longer opens one call per repetition
// (right recursion made each byte complete every open call: quadratic in the length,
// and parser state that grew with it; XGrammar's documented JSON string is written so).
void LoopTailCalls(Nfa* nfa, int32_t self_rank, int32_t start, int32_t end) {
  std::vector<int32_t> seen(nfa->NumNodes(), -1);
  int32_t mark = 0;
  for (NfaEdge& e : nfa->edges) {
    if (e.rule == self_rank && OnlyEndsAfter(*nfa, e.target, end, seen, mark++)) {
      e.rule = kNfaEpsilon;
      e.target = start;
    }
  }
}

// Rule edges labelled by rank (NfaBuilder) get the rules' ids, each node's rule edges
// sorted by id again.
void RankedToRuleIds(const std::vector<int32_t>& rules, RuleDfa* dfa) {
  for (FsmEdge& e : dfa->edges) {
    if (e.rule >= 0) e.rule = rules[e.rule];
  }
  for (int32_t n = 0; n < dfa->NumNodes(); ++n) {
    auto first = dfa->edges.begin() + dfa->begin[n], last = dfa->edges.begin() + dfa->begin[n + 1];
    auto rule_edges = std::find_if(first, last, [](const FsmEdge& e) { return e.rule >= 0; });
    if (last - rule_edges > 1) {
      std::sort(rule_edges, last, [](const FsmEdge& a, const FsmEdge& b) { return a.rule < b.rule; });
    }
  }
}

// Ids of (automaton id, whether the rule is the root, the callees' structure ids in
// rank order): equal ids mean equal automata for the rule and every rule it reaches by
// calls, so a node's classification, which never looks past them, is the same in any
// grammar where its rule has that id. Process-wide and never reused; bounded (past
// kMaxStructures the table starts over, and structures met again get new ids).
int64_t InternStructure(const std::vector<int64_t>& words) {
  constexpr size_t kMaxStructures = size_t{1} << 16;  // about 6 MB
  static std::mutex mu;
  static auto* ids = new std::unordered_map<std::string, int64_t>;  // never destroyed: used until exit
  static int64_t next_id = 0;
  std::string key(reinterpret_cast<const char*>(words.data()), words.size() * sizeof(int64_t));
  std::lock_guard<std::mutex> lock(mu);
  if (ids->size() >= kMaxStructures) ids->clear();
  auto [it, fresh] = ids->emplace(std::move(key), next_id);
  if (fresh) ++next_id;
  return it->second;
}

// Structure ids of every rule (GrammarFsm::rule_structure), callees first; -1 for
// inlined rules (no automaton), rules on a call cycle and rules that call one.
std::vector<int64_t> RuleStructureIds(int32_t root, const std::vector<uint8_t>& inlined,
                                      const std::vector<std::vector<int32_t>>& ranked_callees,
                                      const std::vector<int64_t>& automaton_id) {
  const int32_t num_rules = static_cast<int32_t>(inlined.size());
  std::vector<int64_t> id(num_rules, -1);
  std::vector<int32_t> waiting(num_rules, 0);  // callees without an id yet
  const Grouped callers(num_rules, [&](auto add) {
    for (int32_t r = 0; r < num_rules; ++r) {
      if (!inlined[r]) {
        for (int32_t c : ranked_callees[r]) add(c, r);  // callees are distinct
      }
    }
  });
  std::vector<int32_t> ready;
  for (int32_t r = 0; r < num_rules; ++r) {
    if (inlined[r]) continue;
    waiting[r] = static_cast<int32_t>(ranked_callees[r].size());
    if (waiting[r] == 0) ready.push_back(r);
  }
  std::vector<int64_t> words;
  while (!ready.empty()) {
    int32_t r = ready.back();
    ready.pop_back();
    words.assign({automaton_id[r], r == root});
    for (int32_t c : ranked_callees[r]) words.push_back(id[c]);
    id[r] = InternStructure(words);
    for (int32_t p : callers[r]) {
      if (--waiting[p] == 0) ready.push_back(p);
    }
  }
  return id;
}

// Whether `expr`, with the rules it references expanded in place, is finite and small
// enough to copy into one automaton: no recursion, no unbounded repetition, no counted
// rule (its body copied once would lose the count), no lookahead, no token or dispatch
// expression, and at most *budget expressions once expanded.
bool ExpandsRegular(const GrammarIR& g, int32_t expr, std::vector<uint8_t>& open, int64_t* budget) {
  if (--*budget < 0) return false;
  const Expr& e = g.exprs[expr];
  if (e.kind == ExprKind::kToken || e.kind == ExprKind::kTagDispatch) return false;
  if (e.kind == ExprKind::kRepeat && e.max < 0) return false;  // a loop: not finite (PrefixFreeNonEmpty)
  if (e.kind == ExprKind::kRuleRef) {
    const Rule& r = g.rules[e.rule];
    if (open[e.rule] || r.counted() || r.lookahead >= 0 || r.body < 0) return false;
    open[e.rule] = 1;
    bool ok = ExpandsRegular(g, r.body, open, budget);
    open[e.rule] = 0;
    return ok;
  }
  for (int32_t c : e.children) {
    if (!ExpandsRegular(g, c, open, budget)) return false;
  }
  return true;
}

// The automaton of `body` with every referenced rule expanded in place (ExpandsRegular
// must hold).
RuleDfa ExpandedDfa(const GrammarIR& g, int32_t body, int64_t* budget) {
  const size_t num_rules = g.rules.size();
  const std::vector<uint8_t> all_inlined(num_rules, 1);
  const std::vector<int32_t> no_rank(num_rules, -1);
  NfaBuilder nb(g, all_inlined, no_rank, budget);
  int32_t start = nb.NewNode();
  int32_t end = nb.Build(body, start);
  return Determinize(nb.Take(), start, end, "repetition");
}

// Whether the automaton (no rule edges) is small, finite, prefix-free and lacks "": at
// most kMaxCountedBodyNodes nodes, no cycle through nodes from which a final one is
// reachable, no final node with an edge on to such a node, the start not final, and
// some string reaches a final node. (A finite body is a character, an escape, a code:
// a body with a loop, such as an array item holding a string, keeps its own rules,
// shared with other grammars, instead of being copied into one automaton here.)
bool PrefixFreeNonEmpty(const RuleDfa& d) {
  constexpr int32_t kMaxCountedBodyNodes = 512;
  const int32_t n = d.NumNodes();
  if (n == 0 || n > kMaxCountedBodyNodes || d.final[0]) return false;
  std::vector<uint8_t> live(d.final.begin(), d.final.end());
  for (bool changed = true; changed;) {  // small automata: a plain fixpoint
    changed = false;
    for (int32_t i = 0; i < n; ++i) {
      for (int32_t k = d.begin[i]; k < d.begin[i + 1] && !live[i]; ++k) {
        if (live[d.edges[k].target]) live[i] = 1, changed = true;
      }
    }
  }
  if (!live[0]) return false;
  for (int32_t i = 0; i < n; ++i) {
    if (!d.final[i]) continue;
    for (int32_t k = d.begin[i]; k < d.begin[i + 1]; ++k) {
      if (live[d.edges[k].target]) return false;
    }
  }
  // No cycle among live nodes: a depth-first search that meets a node on its stack.
  enum : uint8_t { kUnseen, kOnStack, kDone };
  std::vector<uint8_t> state(n, kUnseen);
  std::vector<std::pair<int32_t, int32_t>> stack{{0, d.begin[0]}};  // (node, next edge)
  state[0] = kOnStack;
  while (!stack.empty()) {
    auto& [node, edge] = stack.back();
    if (edge == d.begin[node + 1]) {
      state[node] = kDone;
      stack.pop_back();
      continue;
    }
    const int32_t to = d.edges[edge++].target;
    if (!live[to] || state[to] == kDone) continue;
    if (state[to] == kOnStack) return false;
    state[to] = kOnStack;
    stack.emplace_back(to, d.begin[to]);
  }
  return true;
}

// A counted rule's automaton from its body's (`x`, PrefixFreeNonEmpty): a new start,
// node 0, with the edges of the body's start; every edge into a final node of the body
// led back to it; only it final. Leaving node 0 begins a repetition and entering it
// completes one: the parser counts them there (EarleyParser, GrammarFsm::node_counts).
RuleDfa CountedLoop(const RuleDfa& x) {
  const int32_t n = x.NumNodes();
  std::vector<int32_t> id(n, 0);  // final nodes become node 0
  int32_t next = 1;
  for (int32_t i = 0; i < n; ++i) {
    if (!x.final[i]) id[i] = next++;
  }
  RuleDfa d;
  d.final.assign(next, 0);
  d.final[0] = 1;
  d.begin.push_back(0);
  auto copy_edges = [&](int32_t from) {
    for (int32_t k = x.begin[from]; k < x.begin[from + 1]; ++k) {
      FsmEdge e = x.edges[k];
      e.target = id[e.target];
      d.edges.push_back(e);
    }
    d.begin.push_back(static_cast<int32_t>(d.edges.size()));
  };
  copy_edges(0);
  for (int32_t i = 0; i < n; ++i) {
    if (!x.final[i]) copy_edges(i);
  }
  return d;
}

}  // namespace

bool IsCountableBody(const GrammarIR& g, int32_t expr) {
  constexpr int64_t kMaxExpandedExprs = 4096;
  constexpr int64_t kMaxNfaNodes = 1 << 16;
  int64_t exprs = kMaxExpandedExprs;
  std::vector<uint8_t> open(g.rules.size(), 0);
  if (!ExpandsRegular(g, expr, open, &exprs)) return false;
  int64_t nodes = kMaxNfaNodes;
  try {
    return PrefixFreeNonEmpty(ExpandedDfa(g, expr, &nodes));
  } catch (const GrammarError&) {  // too large to copy into one automaton
    return false;
  }
}

GrammarFsm BuildGrammarFsm(const GrammarIR& g) {
  int32_t num_rules = static_cast<int32_t>(g.rules.size());
  int64_t budget = GrammarLimits::kMaxNfaNodes;
  std::vector<RuleDfa> dfas;
  std::vector<uint8_t> inlined = InlinableRules(g);
  IrKeyWriter ir_keys(g, inlined);
  std::vector<int32_t> rank(num_rules, -1);  // of the rules the current body calls
  std::vector<std::vector<int32_t>> ranked_callees(num_rules);  // each rule's, in rank order
  std::vector<int64_t> automaton_id(num_rules, -1);             // of the shared store
  std::vector<int64_t> loop_id(num_rules, -1);                  // counted rules' (GrammarFsm::rule_loop_id)
  for (int32_t r = 0; r < num_rules; ++r) {
    if (inlined[r]) {  // copied into every caller: its own automaton is never entered
      dfas.push_back(RuleDfa{{0}, {0, 0}, {}});
      continue;
    }
    if (g.rules[r].counted()) {  // the body's automaton with every rule expanded, looping
      // Keyed by the bounds too: walks into the rule count against them, so its
      // structure id (and its callers') must tell them apart. (Ordinary keys begin
      // with an expression kind, never negative.)
      const std::vector<uint8_t> all_inlined(num_rules, 1);
      std::vector<int32_t> none;
      const int32_t header[3] = {-1, g.rules[r].count_min, g.rules[r].count_max};
      const std::string body_key = IrKeyWriter(g, all_inlined).Key(g.rules[r].body, &none, -1);
      std::string key(reinterpret_cast<const char*>(header), sizeof(header));
      key += body_key;
      const std::string loop_key = std::string(reinterpret_cast<const char*>(header), sizeof(int32_t)) + body_key;
      // The automaton once per body (other bounds find it), an id per bounds.
      RuleDfa dfa;
      if (!FindSharedDfa(loop_key, &dfa, &loop_id[r])) {
        dfa = CountedLoop(ExpandedDfa(g, g.rules[r].body, &budget));
        loop_id[r] = StoreSharedDfa(loop_key, dfa);
      }
      RuleDfa same;
      if (!FindSharedDfa(key, &same, &automaton_id[r])) automaton_id[r] = StoreSharedDfa(key, dfa);
      dfas.push_back(std::move(dfa));
      continue;
    }
    std::vector<int32_t>& rules = ranked_callees[r];
    // A lookahead is checked where each call ends: such a rule keeps its calls.
    const int32_t self = g.rules[r].lookahead < 0 ? r : -1;
    std::string key = ir_keys.Key(g.rules[r].body, &rules, self);
    RuleDfa dfa;
    if (!FindSharedDfa(key, &dfa, &automaton_id[r])) {  // seen before: no NFA needed
      for (size_t i = 0; i < rules.size(); ++i) rank[rules[i]] = static_cast<int32_t>(i);
      NfaBuilder nb(g, inlined, rank, &budget);
      int32_t start = nb.NewNode();
      int32_t end = nb.Build(g.rules[r].body, start);
      Nfa nfa = nb.Take();
      auto self_ref = std::find(rules.begin(), rules.end(), r);
      if (self >= 0 && self_ref != rules.end()) {
        LoopTailCalls(&nfa, static_cast<int32_t>(self_ref - rules.begin()), start, end);
      }
      dfa = Determinize(std::move(nfa), start, end, g.rules[r].name);
      automaton_id[r] = StoreSharedDfa(key, dfa);
    }
    RankedToRuleIds(rules, &dfa);
    dfas.push_back(std::move(dfa));
  }

  // Rules that reference each rule, for worklist fixpoints (a caller may repeat).
  const Grouped callers(num_rules, [&](auto add) {
    for (int32_t r = 0; r < num_rules; ++r) {
      for (const FsmEdge& e : dfas[r].edges) {
        if (e.rule >= 0) add(e.rule, r);
      }
    }
  });
  // Marks every rule whose automaton reaches a final node through allowed edges;
  // a rule is rechecked only when a rule it calls becomes marked.
  // `unless` rules are never marked.
  auto fixpoint = [&](auto edge_ok, auto unless) {
    std::vector<uint8_t> marked(num_rules, 0);
    std::vector<int32_t> work;
    for (int32_t r = 0; r < num_rules; ++r) work.push_back(r);
    std::vector<uint8_t> seen;
    std::vector<int32_t> stack;
    while (!work.empty()) {
      int32_t r = work.back();
      work.pop_back();
      if (marked[r] || unless(r) ||
          !ReachesFinal(dfas[r], [&](const FsmEdge& e) { return edge_ok(e, marked); }, &seen, &stack)) {
        continue;
      }
      marked[r] = 1;
      for (int32_t c : callers[r]) {
        if (!marked[c]) work.push_back(c);
      }
    }
    return marked;
  };

  // Productive rules derive at least one finite string.
  // (A counted rule's body derives some string, so any count of it does.)
  std::vector<uint8_t> productive = fixpoint(
      [](const FsmEdge& e, const std::vector<uint8_t>& m) { return e.rule < 0 || m[e.rule]; },
      [](int32_t) { return false; });
  if (!productive[g.root]) {
    throw EmptyLanguageError("the root rule `" + g.rules[g.root].name + "` derives no finite string");
  }

  // Drop edges into unproductive rules and into nodes that cannot reach a final node.
  // The scratch vectors serve every rule (a schema has hundreds of small ones).
  std::vector<int32_t> preds_begin, preds, fill, stack;
  std::vector<uint8_t> live;
  for (auto& d : dfas) {
    int32_t n = d.NumNodes();
    preds_begin.assign(n + 1, 0);
    for (const FsmEdge& e : d.edges) ++preds_begin[e.target + 1];
    for (int32_t i = 0; i < n; ++i) preds_begin[i + 1] += preds_begin[i];
    preds.resize(d.edges.size());
    fill.assign(preds_begin.begin(), preds_begin.end() - 1);
    stack.clear();
    live.assign(n, 0);
    for (int32_t i = 0; i < n; ++i) {
      for (int32_t k = d.begin[i]; k < d.begin[i + 1]; ++k) {
        if (d.edges[k].rule < 0 || productive[d.edges[k].rule]) preds[fill[d.edges[k].target]++] = i;
      }
      if (d.final[i]) live[i] = 1, stack.push_back(i);
    }
    while (!stack.empty()) {
      int32_t i = stack.back();
      stack.pop_back();
      for (int32_t k = preds_begin[i]; k < fill[i]; ++k) {
        if (!live[preds[k]]) live[preds[k]] = 1, stack.push_back(preds[k]);
      }
    }
    size_t kept = 0;
    for (int32_t i = 0; i < n; ++i) {
      int32_t from = d.begin[i];
      d.begin[i] = static_cast<int32_t>(kept);
      for (int32_t k = from; k < d.begin[i + 1]; ++k) {
        const FsmEdge& e = d.edges[k];
        if (live[e.target] && (e.rule < 0 || productive[e.rule])) d.edges[kept++] = e;
      }
    }
    d.begin[n] = static_cast<int32_t>(kept);
    d.edges.resize(kept);
  }

  // Nullable rules reach a final node from the start through nullable rule edges only.
  // A counted rule's start is final, but derives "" only without a minimum.
  std::vector<uint8_t> nullable =
      fixpoint([](const FsmEdge& e, const std::vector<uint8_t>& m) { return e.rule >= 0 && m[e.rule]; },
               [&](int32_t r) { return g.rules[r].count_min > 0; });

  GrammarFsm fsm;
  fsm.root = g.root;
  fsm.rule_nullable = nullable;
  fsm.rule_structure = RuleStructureIds(g.root, inlined, ranked_callees, automaton_id);
  int32_t offset = 0;
  for (int32_t r = 0; r < num_rules; ++r) {
    fsm.rule_start.push_back(offset);
    offset += dfas[r].NumNodes();
    const Rule& rule = g.rules[r];
    fsm.rule_count_min.push_back(rule.counted() ? rule.count_min : -1);
    fsm.rule_count_max.push_back(!rule.counted() ? -1 : rule.count_max < 0 ? kUnboundedCount : rule.count_max);
  }
  fsm.rule_loop_id = std::move(loop_id);
  fsm.node_counts.assign(offset, 0);
  for (int32_t r = 0; r < num_rules; ++r) {
    if (g.rules[r].counted()) fsm.node_counts[fsm.rule_start[r]] = 1, fsm.any_counted = true;
  }
  size_t num_edges = 0;
  for (const RuleDfa& d : dfas) num_edges += d.edges.size();
  fsm.edges.reserve(num_edges);
  fsm.node_rule.reserve(offset);
  fsm.node_final.reserve(offset);
  fsm.first_bytes.reserve(offset);
  fsm.rule_edge_begin.reserve(offset);
  fsm.edge_begin.reserve(offset + 1);
  fsm.edge_begin.push_back(0);
  for (int32_t r = 0; r < num_rules; ++r) {
    const RuleDfa& d = dfas[r];
    for (int32_t i = 0; i < d.NumNodes(); ++i) {
      fsm.node_rule.push_back(r);
      fsm.node_final.push_back(d.final[i]);
      ByteSet first{};
      int32_t byte_edges = 0;
      for (int32_t k = d.begin[i]; k < d.begin[i + 1]; ++k) {  // byte edges come first
        FsmEdge e = d.edges[k];
        if (e.rule < 0) {
          ++byte_edges;
          ByteSetAddRange(first, e.lo, e.hi);
        }
        e.target += fsm.rule_start[r];
        fsm.edges.push_back(e);
      }
      fsm.rule_edge_begin.push_back(fsm.edge_begin.back() + byte_edges);
      fsm.first_bytes.push_back(first);
      fsm.edge_begin.push_back(static_cast<int32_t>(fsm.edges.size()));
    }
  }
  return fsm;
}

}  // namespace xgr2

// CharDfa: Thompson NFA over code-point ranges -> subset construction (a sweep over the
// range boundaries of each state set) -> trim -> Moore minimization; products and
// complements on the result; emission as right-linear grammar rules.
#include "frontends/regex_dfa.h"

#include <algorithm>
#include <map>
#include <queue>
#include <unordered_map>

#include "frontends/regex.h"
#include "support/grouped.h"
#include "support/utf8.h"

namespace xgr2 {
namespace {

using Edge = CharDfa::Edge;
using State = CharDfa::State;

// The alphabet: every code point but the surrogates.
constexpr CodepointRange kAlphabet[] = {{0, 0xD7FF}, {0xE000, kMaxCodepoint}};

[[noreturn]] void TooLarge(const std::string& what) {
  throw DfaLimitError("regular-language automaton too large: " + what);
}

void Spend(int64_t* work, int64_t amount) {
  *work += amount;
  if (*work > CharDfa::kMaxWork) {
    TooLarge("more than " + std::to_string(CharDfa::kMaxWork) + " steps");
  }
}

// Appends [lo, hi] -> target, merged into the last edge when adjacent with the same target.
void PushEdge(std::vector<Edge>* edges, uint32_t lo, uint32_t hi, int32_t target) {
  if (!edges->empty() && edges->back().target == target && edges->back().hi + 1 == lo) {
    edges->back().hi = hi;
  } else {
    edges->push_back({lo, hi, target});
  }
}

std::vector<uint32_t> DecodeAll(const std::string& utf8) {
  std::vector<uint32_t> out;
  for (size_t p = 0; p < utf8.size();) {
    int32_t cp = DecodeUtf8(utf8, &p);
    out.push_back(cp < 0 ? 0xFFFD : static_cast<uint32_t>(cp));
  }
  return out;
}

// ---- Expression -> NFA ---------------------------------------------------------

class RangeNfa {
 public:
  explicit RangeNfa(const GrammarIR& g) : g_(g) {}

  int32_t NewNode() {
    if (static_cast<int32_t>(edges_.size()) >= CharDfa::kMaxNfaNodes) {
      TooLarge("more than " + std::to_string(CharDfa::kMaxNfaNodes) + " NFA nodes (large repetition bounds?)");
    }
    edges_.emplace_back();
    eps_.emplace_back();
    return static_cast<int32_t>(edges_.size()) - 1;
  }

  // Adds the language of `expr` from node `from`; returns the end node.
  int32_t Build(int32_t expr, int32_t from) {
    const Expr& e = g_.exprs[expr];
    switch (e.kind) {
      case ExprKind::kEmpty:
        return from;
      case ExprKind::kBytes: {
        int32_t cur = from;
        for (uint32_t cp : DecodeAll(e.bytes)) {
          int32_t next = NewNode();
          edges_[cur].push_back({cp, cp, next});
          cur = next;
        }
        return cur;
      }
      case ExprKind::kCharClass: {
        int32_t end = NewNode();
        for (auto r : WithoutSurrogates(e.negated ? ComplementRanges(e.ranges) : e.ranges)) {
          edges_[from].push_back({r.lo, r.hi, end});
        }
        return end;
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
          eps_[from].push_back(start);
          eps_[Build(c, start)].push_back(end);
        }
        return end;
      }
      case ExprKind::kRepeat: {
        int32_t cur = from;
        for (int32_t i = 0; i < e.min; ++i) {
          int32_t start = NewNode();
          eps_[cur].push_back(start);
          cur = Build(e.children[0], start);
        }
        if (e.max < 0) {
          int32_t loop = NewNode();
          eps_[cur].push_back(loop);
          int32_t start = NewNode();  // the body starts apart from `loop`: its own loops stay inside
          eps_[loop].push_back(start);
          eps_[Build(e.children[0], start)].push_back(loop);
          return loop;
        }
        int32_t end = NewNode();
        eps_[cur].push_back(end);
        for (int32_t i = e.min; i < e.max; ++i) {
          int32_t start = NewNode();
          eps_[cur].push_back(start);
          cur = Build(e.children[0], start);
          eps_[cur].push_back(end);
        }
        return end;
      }
      case ExprKind::kRuleRef:
      case ExprKind::kTagDispatch:
      case ExprKind::kToken:
        break;
    }
    TooLarge("the expression refers to rules (not a regular expression)");
  }

  // Subset construction from `start` to final node `final_node`.
  std::vector<State> Determinize(int32_t start, int32_t final_node) {
    int64_t work = 0;
    final_ = final_node;
    std::map<std::vector<int32_t>, int32_t> ids;
    std::vector<std::vector<int32_t>> sets;
    std::vector<State> out;
    auto intern = [&](std::vector<int32_t> set) {
      auto it = ids.find(set);
      if (it != ids.end()) return it->second;
      if (static_cast<int32_t>(out.size()) >= CharDfa::kMaxStates) {
        TooLarge("more than " + std::to_string(CharDfa::kMaxStates) + " states");
      }
      int32_t id = static_cast<int32_t>(out.size());
      State s;
      s.accepting = std::binary_search(set.begin(), set.end(), final_node);
      out.push_back(s);
      ids.emplace(set, id);
      sets.push_back(std::move(set));
      return id;
    };
    intern(Closure({start}, &work));
    for (size_t i = 0; i < sets.size(); ++i) {
      // Sweep the range boundaries: between two consecutive ones the set of targets is fixed.
      std::vector<std::pair<uint32_t, int32_t>> events;  // (code point, +target+1 / -(target+1))
      for (int32_t n : sets[i]) {
        for (const Edge& e : edges_[n]) {
          events.push_back({e.lo, e.target + 1});
          events.push_back({e.hi + 1, -(e.target + 1)});
        }
      }
      Spend(&work, static_cast<int64_t>(events.size()) + 1);
      std::sort(events.begin(), events.end());
      std::map<int32_t, int32_t> active;  // target -> edges covering the current point
      std::vector<Edge> edges;
      for (size_t k = 0; k < events.size();) {
        uint32_t at = events[k].first;
        for (; k < events.size() && events[k].first == at; ++k) {
          int32_t t = events[k].second > 0 ? events[k].second - 1 : -events[k].second - 1;
          if (events[k].second > 0) {
            ++active[t];
          } else if (--active[t] == 0) {
            active.erase(t);
          }
        }
        if (active.empty() || k == events.size()) continue;
        std::vector<int32_t> targets;
        for (const auto& [t, count] : active) targets.push_back(t);
        Spend(&work, static_cast<int64_t>(targets.size()));
        int32_t target = intern(Closure(targets, &work));
        PushEdge(&edges, at, events[k].first - 1, target);
      }
      out[i].edges = std::move(edges);
    }
    return out;
  }

 private:
  std::vector<int32_t> Closure(std::vector<int32_t> stack, int64_t* work) {
    // mark_ and seen_ are scratch: all clear between calls (only the nodes seen are reset).
    std::vector<uint8_t>& mark = mark_;
    std::vector<int32_t>& seen = seen_;
    mark.resize(edges_.size(), 0);
    seen.clear();
    for (int32_t n : stack) {
      if (!mark[n]) mark[n] = 1, seen.push_back(n);
    }
    for (size_t i = 0; i < seen.size(); ++i) {
      for (int32_t m : eps_[seen[i]]) {
        if (!mark[m]) mark[m] = 1, seen.push_back(m);
      }
    }
    // Only nodes that read a character and the final node tell sets apart;
    // pass-through nodes would only make twin states.
    std::vector<int32_t> key;
    key.reserve(seen.size());
    for (int32_t n : seen) {
      mark[n] = 0;
      if (!edges_[n].empty() || n == final_) key.push_back(n);
    }
    Spend(work, static_cast<int64_t>(seen.size()));  // may throw: the marks are clear
    std::sort(key.begin(), key.end());
    return key;
  }

  const GrammarIR& g_;
  std::vector<std::vector<Edge>> edges_;
  std::vector<std::vector<int32_t>> eps_;
  std::vector<uint8_t> mark_;
  std::vector<int32_t> seen_;
  int32_t final_ = -1;
};

// ---- Trimming and minimization ---------------------------------------------------

// The states reachable from 0 that can reach acceptance, renumbered in breadth-first
// order from 0; a single rejecting state when none accepts.
std::vector<State> Trim(const std::vector<State>& in) {
  size_t n = in.size();
  const Grouped preds(static_cast<int32_t>(n), [&](auto add) {
    for (size_t s = 0; s < n; ++s) {
      for (const Edge& e : in[s].edges) add(e.target, static_cast<int32_t>(s));
    }
  });
  std::vector<uint8_t> live(n, 0);
  std::vector<int32_t> stack;
  for (size_t s = 0; s < n; ++s) {
    if (in[s].accepting) live[s] = 1, stack.push_back(static_cast<int32_t>(s));
  }
  while (!stack.empty()) {
    int32_t s = stack.back();
    stack.pop_back();
    for (int32_t p : preds[s]) {
      if (!live[p]) live[p] = 1, stack.push_back(p);
    }
  }
  if (n == 0 || !live[0]) return {State{}};
  std::vector<int32_t> id(n, -1);
  std::vector<int32_t> order = {0};
  id[0] = 0;
  for (size_t i = 0; i < order.size(); ++i) {
    for (const Edge& e : in[order[i]].edges) {
      if (live[e.target] && id[e.target] < 0) {
        id[e.target] = static_cast<int32_t>(order.size());
        order.push_back(e.target);
      }
    }
  }
  std::vector<State> out(order.size());
  for (size_t i = 0; i < order.size(); ++i) {
    out[i].accepting = in[order[i]].accepting;
    out[i].edges.reserve(in[order[i]].edges.size());
    for (const Edge& e : in[order[i]].edges) {
      if (id[e.target] >= 0) PushEdge(&out[i].edges, e.lo, e.hi, id[e.target]);
    }
  }
  return out;
}

// A state's signature under a class assignment: acceptance, then per range the target's
// class (adjacent ranges into one class read as one).
std::vector<uint32_t> Signature(const State& st, const std::vector<int32_t>& cls, uint32_t own) {
  std::vector<uint32_t> sig;
  sig.reserve(1 + 3 * st.edges.size());
  sig.push_back(own);
  for (const Edge& e : st.edges) {
    uint32_t c = static_cast<uint32_t>(cls[e.target]);
    if (sig.size() > 1 && sig.back() == c && sig[sig.size() - 2] + 1 == e.lo) {
      sig[sig.size() - 2] = e.hi;
    } else {
      sig.insert(sig.end(), {e.lo, e.hi, c});
    }
  }
  return sig;
}

// The automaton of the classes `cls` (ids by first appearance, so state 0 is in class 0).
std::vector<State> Quotient(const std::vector<State>& in, const std::vector<int32_t>& cls, size_t num_classes) {
  std::vector<State> out(num_classes);
  std::vector<uint8_t> done(num_classes, 0);
  for (size_t s = 0; s < in.size(); ++s) {
    int32_t c = cls[s];
    if (done[c]) continue;
    done[c] = 1;
    out[c].accepting = in[s].accepting;
    out[c].edges.reserve(in[s].edges.size());
    for (const Edge& e : in[s].edges) PushEdge(&out[c].edges, e.lo, e.hi, cls[e.target]);
  }
  return Trim(out);
}

// Moore's partition refinement: states with the same acceptance and, range by range,
// transitions into the same classes are merged. Input and output are trimmed. Takes
// as many rounds as the longest path that tells two states apart, so it is kept for
// small automata with cycles; acyclic ones go through MinimizeAcyclic.
std::vector<State> Minimize(const std::vector<State>& in) {
  size_t n = in.size();
  std::vector<int32_t> cls(n);
  for (size_t s = 0; s < n; ++s) cls[s] = in[s].accepting ? 1 : 0;
  size_t num_classes = 0;
  while (true) {
    std::map<std::vector<uint32_t>, int32_t> sigs;
    std::vector<int32_t> next(n);
    for (size_t s = 0; s < n; ++s) {
      next[s] = sigs.emplace(Signature(in[s], cls, static_cast<uint32_t>(cls[s])), static_cast<int32_t>(sigs.size()))
                    .first->second;
    }
    bool stable = sigs.size() == num_classes;
    num_classes = sigs.size();
    cls = std::move(next);
    if (stable) break;
  }
  return Quotient(in, cls, num_classes);
}

// The states in an order where every edge goes to a later state, or empty when the
// automaton has a cycle (a self-loop counts).
std::vector<int32_t> TopologicalOrder(const std::vector<State>& in) {
  size_t n = in.size();
  std::vector<int32_t> in_degree(n, 0), order;
  for (const State& st : in) {
    for (const Edge& e : st.edges) ++in_degree[e.target];
  }
  for (size_t s = 0; s < n; ++s) {
    if (in_degree[s] == 0) order.push_back(static_cast<int32_t>(s));
  }
  for (size_t i = 0; i < order.size(); ++i) {
    for (const Edge& e : in[order[i]].edges) {
      if (--in_degree[e.target] == 0) order.push_back(e.target);
    }
  }
  if (order.size() != n) order.clear();
  return order;
}

// Minimization of an acyclic automaton in one pass (Revuz): from the last state in
// topological order back, two states are equivalent exactly when they agree on
// acceptance and, range by range, go to equivalent states, which are already known.
// Linear in the edges, so length bounds (a chain of maxLength states, and its products
// with patterns) minimize at any size.
std::vector<State> MinimizeAcyclic(const std::vector<State>& in, const std::vector<int32_t>& order) {
  size_t n = in.size();
  std::vector<int32_t> cls(n, -1);
  std::map<std::vector<uint32_t>, int32_t> sigs;
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    cls[*it] = sigs.emplace(Signature(in[*it], cls, in[*it].accepting ? 1 : 0), static_cast<int32_t>(sigs.size()))
                   .first->second;
  }
  // Renumber by first appearance so that state 0 is in class 0.
  std::vector<int32_t> renumber(sigs.size(), -1);
  int32_t num_classes = 0;
  for (size_t s = 0; s < n; ++s) {
    if (renumber[cls[s]] < 0) renumber[cls[s]] = num_classes++;
    cls[s] = renumber[cls[s]];
  }
  return Quotient(in, cls, static_cast<size_t>(num_classes));
}

}  // namespace

CharDfa::CharDfa(std::vector<State> states) {
  states_ = Trim(states);
  std::vector<int32_t> order = TopologicalOrder(states_);
  if (!order.empty()) {
    states_ = MinimizeAcyclic(states_, order);
  } else if (static_cast<int32_t>(states_.size()) <= kMaxMinimizeStates) {
    states_ = Minimize(states_);
  }
}

CharDfa CharDfa::FromExpr(const GrammarIR& g, int32_t expr) {
  RangeNfa nfa(g);
  int32_t start = nfa.NewNode();
  int32_t end = nfa.Build(expr, start);
  return CharDfa(nfa.Determinize(start, end));
}

// The first position from `from` on, outside escapes and character classes, whose
// character `stop` takes at the group depth there (counted from `from`, a parenthesis
// included), or npos.
static size_t ScanGroups(const std::string& p, size_t from, bool (*stop)(char c, int depth)) {
  int depth = 0;
  bool in_class = false;
  for (size_t i = from; i < p.size(); ++i) {
    char c = p[i];
    if (c == '\\') {
      ++i;
      continue;
    }
    if (in_class) {
      in_class = c != ']';
      continue;
    }
    if (c == '[') in_class = true;
    if (c == '(') ++depth;
    if (c == ')') --depth;
    if (stop(c, depth)) return i;
  }
  return std::string::npos;
}

// The end of the group that opens at `open` (a '('), or npos.
static size_t GroupEnd(const std::string& p, size_t open) {
  return ScanGroups(p, open, [](char c, int depth) { return c == ')' && depth == 0; });
}

// Whether p[from..] has a `|` outside groups and classes: an alternative of its own.
static bool HasTopLevelBar(const std::string& p, size_t from) {
  return ScanGroups(p, from, [](char c, int depth) { return c == '|' && depth <= 0; }) != std::string::npos;
}

size_t LeadingLookaheads(const std::string& pattern) {
  size_t i = 1;
  while (pattern.compare(0, 1, "^") == 0 && pattern.compare(i, 3, "(?!") == 0) {
    size_t end = GroupEnd(pattern, i);
    if (end == std::string::npos) break;
    i = end + 1;
  }
  // `^(?!X)Y|Z`: the lookahead binds only the first alternative, which the rewrite below
  // does not express; such a pattern stays refused (by the regex parser).
  if (i > 1 && HasTopLevelBar(pattern, i)) return 0;
  return i > 1 ? i : 0;
}

CharDfa CharDfa::FromPattern(const std::string& pattern, bool search) {
  // `^(?!X)Y`: the strings of `^Y` that do not start with a match of X (the form schemas
  // use to exclude a prefix); other lookaround stays refused by the regex parser.
  if (size_t body = LeadingLookaheads(pattern)) {
    CharDfa dfa = FromPattern("^" + pattern.substr(body), search);
    for (size_t i = 1; i < body;) {
      size_t end = GroupEnd(pattern, i);
      std::string ahead = pattern.substr(i + 3, end - i - 3);
      if (ahead.compare(0, 1, "^") == 0) ahead.erase(0, 1);  // position 0 already
      dfa = dfa.Minus(FromPattern("^(?:" + ahead + ")", /*search=*/true));
      i = end + 1;
    }
    return dfa;
  }
  GrammarIR scratch;
  IrBuilder b(&scratch);
  int32_t expr = AppendRegex(&b, pattern, search);
  return FromExpr(scratch, expr);
}

CharDfa CharDfa::Words(const std::vector<std::string>& words) {
  std::vector<State> trie(1);
  std::vector<std::map<uint32_t, int32_t>> child(1);
  for (const std::string& w : words) {
    int32_t s = 0;
    for (uint32_t cp : DecodeAll(w)) {
      auto it = child[s].find(cp);
      if (it == child[s].end()) {
        if (static_cast<int32_t>(trie.size()) >= kMaxStates) TooLarge("more than " + std::to_string(kMaxStates) + " states");
        it = child[s].emplace(cp, static_cast<int32_t>(trie.size())).first;
        trie.emplace_back();
        child.emplace_back();
      }
      s = it->second;
    }
    trie[s].accepting = true;
  }
  for (size_t s = 0; s < trie.size(); ++s) {
    for (const auto& [cp, t] : child[s]) trie[s].edges.push_back({cp, cp, t});
  }
  return CharDfa(std::move(trie));
}

CharDfa CharDfa::LengthBetween(int64_t min, int64_t max) {
  int64_t n = (max < 0 ? min : max) + 1;
  if (n > kMaxStates) TooLarge("a length bound above " + std::to_string(kMaxStates - 1));
  std::vector<State> states(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    states[i].accepting = i >= min;
    int64_t to = i + 1 < n ? i + 1 : (max < 0 ? i : -1);
    if (to < 0) continue;
    for (auto r : kAlphabet) states[i].edges.push_back({r.lo, r.hi, static_cast<int32_t>(to)});
  }
  return CharDfa(std::move(states));
}

CharDfa CharDfa::Complement() const {
  std::vector<State> out = states_;
  int32_t sink = static_cast<int32_t>(out.size());
  if (sink >= kMaxStates) TooLarge("more than " + std::to_string(kMaxStates) + " states");
  out.emplace_back();
  for (State& s : out) {
    std::vector<Edge> full;
    size_t k = 0;
    for (auto r : kAlphabet) {  // existing edges, gaps within the alphabet to the sink
      uint32_t next = r.lo;
      for (; k < s.edges.size() && s.edges[k].lo <= r.hi; ++k) {
        const Edge& e = s.edges[k];
        if (e.lo > next) PushEdge(&full, next, e.lo - 1, sink);
        PushEdge(&full, e.lo, e.hi, e.target);
        next = e.hi + 1;
      }
      if (next <= r.hi) PushEdge(&full, next, r.hi, sink);
    }
    s.edges = std::move(full);
    s.accepting = !s.accepting;
  }
  return CharDfa(std::move(out));
}

CharDfa CharDfa::Intersect(const CharDfa& other) const {
  int64_t work = 0;
  std::unordered_map<uint64_t, int32_t> ids;
  std::vector<std::pair<int32_t, int32_t>> pairs;
  std::vector<State> out;
  auto intern = [&](int32_t a, int32_t b) {
    uint64_t key = (static_cast<uint64_t>(a) << 32) | static_cast<uint32_t>(b);
    auto it = ids.find(key);
    if (it != ids.end()) return it->second;
    if (static_cast<int32_t>(out.size()) >= kMaxStates) TooLarge("more than " + std::to_string(kMaxStates) + " states");
    int32_t id = static_cast<int32_t>(out.size());
    ids.emplace(key, id);
    pairs.push_back({a, b});
    State s;
    s.accepting = states_[a].accepting && other.states_[b].accepting;
    out.push_back(s);
    return id;
  };
  intern(0, 0);
  for (size_t i = 0; i < pairs.size(); ++i) {
    const auto& ea = states_[pairs[i].first].edges;
    const auto& eb = other.states_[pairs[i].second].edges;
    Spend(&work, static_cast<int64_t>(ea.size() + eb.size()) + 1);
    std::vector<Edge> edges;
    for (size_t x = 0, y = 0; x < ea.size() && y < eb.size();) {
      uint32_t lo = std::max(ea[x].lo, eb[y].lo), hi = std::min(ea[x].hi, eb[y].hi);
      if (lo <= hi) PushEdge(&edges, lo, hi, intern(ea[x].target, eb[y].target));
      if (ea[x].hi < eb[y].hi) ++x;
      else ++y;
    }
    out[i].edges = std::move(edges);
  }
  return CharDfa(std::move(out));
}

bool CharDfa::Accepts(const std::string& utf8) const {
  int32_t s = 0;
  for (size_t p = 0; p < utf8.size();) {
    int32_t cp = DecodeUtf8(utf8, &p);
    if (cp < 0) return false;
    const auto& edges = states_[s].edges;
    auto it = std::upper_bound(edges.begin(), edges.end(), static_cast<uint32_t>(cp),
                               [](uint32_t c, const Edge& e) { return c < e.lo; });
    if (it == edges.begin() || (--it)->hi < static_cast<uint32_t>(cp)) return false;
    s = it->target;
  }
  return states_[s].accepting;
}

int32_t EmitDfa(IrBuilder* b, const CharDfa& dfa,
                const std::function<int32_t(const std::vector<CodepointRange>&)>& chars, const std::string& name) {
  if (dfa.IsEmpty()) return Nothing(b);
  const auto& states = dfa.states();
  const int32_t n = dfa.NumStates();
  std::vector<std::map<int32_t, std::vector<CodepointRange>>> by_target(n);
  std::vector<int32_t> in_degree(n, 0), pred(n, -1), next(n, -1);
  for (int32_t s = 0; s < n; ++s) {
    for (const Edge& e : states[s].edges) by_target[s][e.target].push_back({e.lo, e.hi});
    for (const auto& [t, ranges] : by_target[s]) {
      if (t != s) ++in_degree[t], pred[t] = s;
    }
    if (by_target[s].size() == 1 && by_target[s].begin()->first != s) next[s] = by_target[s].begin()->first;
  }
  auto same_ranges = [](const std::vector<CodepointRange>& x, const std::vector<CodepointRange>& y) {
    return x.size() == y.size() && std::equal(x.begin(), x.end(), y.begin(), [](CodepointRange a, CodepointRange c) {
             return a.lo == c.lo && a.hi == c.hi;
           });
  };
  // A run: states that each go on by the same characters to the next, with the same
  // acceptance, each entered only from the one before (what a length bound beside a
  // pattern makes: maxLength 1024 is a chain of 1,025 states). Its interior states get
  // no rule; the run's first state writes it as a repetition, which stays small
  // (repetition.h) where one rule per state would not.
  std::vector<bool> interior(n, false);
  for (int32_t s = 1; s < n; ++s) {
    int32_t p = pred[s];
    interior[s] = in_degree[s] == 1 && next[s] >= 0 && next[p] == s && states[p].accepting == states[s].accepting &&
                  same_ranges(by_target[p].begin()->second, by_target[s].begin()->second);
  }
  std::vector<int32_t> rules(n, -1);
  for (int32_t s = 0; s < n; ++s) {
    if (!interior[s]) rules[s] = b->NewRule(name + "_s" + std::to_string(s));
  }
  for (int32_t s = 0; s < n; ++s) {
    if (interior[s]) continue;
    int32_t run = 1, end = next[s];
    while (end >= 0 && interior[end]) end = next[end], ++run;
    int32_t body;
    if (run > 1) {
      int32_t c = chars(by_target[s].begin()->second);
      bool end_is_empty = states[end].accepting && states[end].edges.empty();
      if (states[s].accepting && end_is_empty) {
        body = b->Repeat(c, 0, run);
      } else {
        body = b->Seq({b->Repeat(c, run, run), b->Ref(rules[end])});
        if (states[s].accepting) body = b->Choice({b->Repeat(c, 0, run - 1), body});
      }
    } else {
      std::vector<int32_t> alts;
      for (const auto& [t, ranges] : by_target[s]) {
        if (t != s) alts.push_back(b->Seq({chars(ranges), b->Ref(rules[t])}));
      }
      if (states[s].accepting) alts.push_back(b->Empty());
      body = b->Choice(alts);
      // A self-loop is a repetition inside the rule, not a call: a long run of such
      // characters then keeps no open rule calls.
      auto self = by_target[s].find(s);
      if (self != by_target[s].end()) body = b->Seq({b->Star(chars(self->second)), body});
    }
    b->SetBody(rules[s], body);
  }
  return b->Ref(rules[0]);
}

}  // namespace xgr2

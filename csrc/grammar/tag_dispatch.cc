#include "grammar/tag_dispatch.h"

#include <climits>
#include <deque>
#include <string>
#include <unordered_map>

#include "support/utf8.h"
#include "xgr2/errors.h"

namespace xgr2 {
namespace {

enum PatternKind : uint8_t { kTag, kStop, kExclude };

struct Pattern {
  const std::string* text;
  PatternKind kind;
  int32_t index;  // position in its list
};

const char* KindName(PatternKind kind) {
  static const char* kNames[] = {"tag", "stop string", "excluded string"};
  return kNames[kind];
}

std::string Describe(const Pattern& p) { return std::string(KindName(p.kind)) + " \"" + *p.text + "\""; }

std::vector<Pattern> CollectPatterns(const TagDispatchSpec& spec) {
  std::vector<Pattern> out;
  auto add = [&](const std::vector<std::string>& list, PatternKind kind) {
    for (size_t i = 0; i < list.size(); ++i) out.push_back({&list[i], kind, static_cast<int32_t>(i)});
  };
  add(spec.tags, kTag);
  add(spec.stop_strs, kStop);
  add(spec.excludes, kExclude);
  int64_t total = 0;
  for (const Pattern& p : out) {
    if (p.text->empty()) throw GrammarError(std::string("TagDispatch: a ") + KindName(p.kind) + " is empty");
    for (size_t pos = 0; pos < p.text->size();) {
      if (DecodeUtf8(*p.text, &pos) < 0) throw GrammarError("TagDispatch: " + Describe(p) + " is not valid UTF-8");
    }
    total += static_cast<int64_t>(p.text->size());
  }
  if (total > GrammarLimits::kMaxDispatchBytes) {
    throw GrammarError("TagDispatch: its tags, stop strings and excluded strings have " + std::to_string(total) +
                       " bytes, over the limit of " + std::to_string(GrammarLimits::kMaxDispatchBytes));
  }
  return out;
}

}  // namespace

DispatchAutomaton BuildDispatchAutomaton(const TagDispatchSpec& spec) {
  if (!spec.stop_eos && spec.stop_strs.empty() && spec.loop_after_dispatch) {
    throw GrammarError(
        "TagDispatch never ends: give stop_eos=true, a stop string, or loop_after_dispatch=false");
  }
  if (spec.at_least_one && spec.tags.empty()) throw GrammarError("TagDispatch: at_least_one needs a tag");
  std::vector<Pattern> patterns = CollectPatterns(spec);

  // Trie of all strings; owner[q] is the string that ends exactly at q.
  std::vector<int32_t> delta(256, -1), owner(1, -1);
  for (size_t p = 0; p < patterns.size(); ++p) {
    int32_t q = 0;
    for (char c : *patterns[p].text) {
      int32_t& next = delta[q * 256 + static_cast<uint8_t>(c)];
      if (next < 0) {
        next = static_cast<int32_t>(owner.size());
        owner.push_back(-1);
        delta.resize(delta.size() + 256, -1);
      }
      q = delta[q * 256 + static_cast<uint8_t>(c)];  // `next` may dangle after the resize
    }
    if (owner[q] >= 0) {
      throw GrammarError("TagDispatch: " + Describe(patterns[p]) + " is listed twice (also as " +
                         Describe(patterns[owner[q]]) + ")");
    }
    owner[q] = static_cast<int32_t>(p);
  }

  // Breadth-first: failure links resolved into full transitions, and the string each
  // state completes: its own, else its failure state's (the longest one ending here).
  int32_t n = static_cast<int32_t>(owner.size());
  std::vector<int32_t> fail(n, 0), match(n, -1);
  std::deque<int32_t> queue;
  for (int b = 0; b < 256; ++b) {
    if (delta[b] < 0) {
      delta[b] = 0;
    } else {
      queue.push_back(delta[b]);
    }
  }
  while (!queue.empty()) {
    int32_t q = queue.front();
    queue.pop_front();
    match[q] = owner[q] >= 0 ? owner[q] : match[fail[q]];
    for (int b = 0; b < 256; ++b) {
      int32_t& next = delta[q * 256 + b];
      int32_t via_fail = delta[fail[q] * 256 + b];
      if (next < 0) {
        next = via_fail;
      } else {
        fail[next] = via_fail;
        queue.push_back(next);
      }
    }
  }

  // The product with the UTF-8 validator, explored from (0, boundary). Completing a
  // string leaves free text, so states past a completion are never created.
  DispatchAutomaton a;
  std::unordered_map<int64_t, int32_t> ids;
  std::vector<std::pair<int32_t, int>> states;
  auto state_id = [&](int32_t q, int u) {
    auto [it, fresh] = ids.emplace(int64_t{q} * 8 + u, static_cast<int32_t>(states.size()));
    if (fresh) states.push_back({q, u});
    return it->second;
  };
  state_id(0, 0);
  std::vector<uint8_t> completes(patterns.size(), 0);
  constexpr int32_t kDead = INT32_MIN;
  a.begin.push_back(0);
  for (size_t s = 0; s < states.size(); ++s) {
    auto [q, u] = states[s];
    int32_t target[256];
    for (int b = 0; b < 256; ++b) {
      int next_u = Utf8Step(u, static_cast<uint8_t>(b));
      target[b] = kDead;
      if (next_u < 0) continue;
      int32_t next_q = delta[q * 256 + b];
      int32_t m = match[next_q];
      if (m < 0) {
        target[b] = state_id(next_q, next_u);
        continue;
      }
      completes[m] = 1;  // strings are valid UTF-8, so next_u is a boundary here
      if (patterns[m].kind == kTag) target[b] = DispatchTag(patterns[m].index);
      if (patterns[m].kind == kStop) target[b] = kDispatchStop;
    }
    for (int b = 0; b < 256;) {
      int e = b;
      while (e + 1 < 256 && target[e + 1] == target[b]) ++e;
      if (target[b] != kDead) {
        a.edges.push_back({static_cast<uint8_t>(b), static_cast<uint8_t>(e), target[b]});
      }
      b = e + 1;
    }
    a.begin.push_back(static_cast<int32_t>(a.edges.size()));
    a.boundary.push_back(u == 0);
  }
  for (size_t p = 0; p < patterns.size(); ++p) {
    if (!completes[p] && patterns[p].kind != kExclude) {
      throw GrammarError("TagDispatch: " + Describe(patterns[p]) +
                         " can never complete: it contains another tag, stop string or excluded string, "
                         "which always completes first");
    }
  }
  return a;
}

int32_t AddTagDispatch(GrammarIR* g, TagDispatchSpec spec, std::vector<int32_t> targets) {
  BuildDispatchAutomaton(spec);  // the checks; the FSM builder builds it again for the rule
  Expr e;
  e.kind = ExprKind::kTagDispatch;
  e.children = std::move(targets);
  e.dispatch = std::make_shared<const TagDispatchSpec>(std::move(spec));
  return g->AddExpr(std::move(e));
}

}  // namespace xgr2

#include "engine/earley.h"

#include <algorithm>
#include <unordered_set>

#include "grammar/fsm_key.h"

namespace xgr2 {

EarleySet::~EarleySet() {
  // Release owned origins iteratively: a recursive chain of destructors would overflow
  // the stack on deep nesting (or long right recursion, which nests too). A chain of
  // single owners (the usual case) needs no allocation.
  std::vector<std::shared_ptr<const EarleySet>> pending = std::move(more_origin_owners);
  std::shared_ptr<const EarleySet> p = std::move(origin_owner);
  while (p || !pending.empty()) {
    if (!p) {
      p = std::move(pending.back());
      pending.pop_back();
    }
    if (p.use_count() != 1) {
      p.reset();
      continue;
    }
    // The last owner: take its origins before it dies.
    auto* raw = const_cast<EarleySet*>(p.get());
    for (auto& o : raw->more_origin_owners) pending.push_back(std::move(o));
    raw->more_origin_owners.clear();
    std::shared_ptr<const EarleySet> next = std::move(raw->origin_owner);
    p = std::move(next);
  }
}

void KeepOrigins(EarleySet* set) {
  set->origin_owner.reset();
  set->more_origin_owners.clear();
  for (const EarleyItem& it : set->items) {
    const EarleySet* o = it.origin;
    if (o == set || o == set->origin_owner.get()) continue;  // predicted here, or kept
    bool seen = false;
    for (const auto& have : set->more_origin_owners) seen |= have.get() == o;
    if (seen) continue;
    // Every persistent set is a shared_ptr's (make_shared), so its owner is at hand.
    std::shared_ptr<const EarleySet> owner = o->shared_from_this();
    if (!set->origin_owner) {
      set->origin_owner = std::move(owner);
    } else {
      set->more_origin_owners.push_back(std::move(owner));
    }
  }
}

int64_t ReachableSetBytes(const EarleySet& set) {
  constexpr int64_t kControlBlock = 16;  // make_shared: use and weak counts, vtable
  std::unordered_set<const EarleySet*> seen{&set};
  std::vector<const EarleySet*> todo{&set};
  int64_t bytes = 0;
  while (!todo.empty()) {
    const EarleySet* s = todo.back();
    todo.pop_back();
    bytes += static_cast<int64_t>(sizeof(EarleySet)) + kControlBlock +
             static_cast<int64_t>(s->items.heap_bytes() +
                                  s->more_origin_owners.capacity() * sizeof(std::shared_ptr<const EarleySet>));
    auto visit = [&](const EarleySet* o) {
      if (o && seen.insert(o).second) todo.push_back(o);
    };
    visit(s->origin_owner.get());
    for (const auto& o : s->more_origin_owners) visit(o.get());
  }
  return bytes;
}

namespace {

// The count is left out: items differing only in it (two parses of a counted rule from
// one origin) are rare, and a probe goes past them.
size_t HashItem(int32_t node, const EarleySet* origin) {
  size_t h = (static_cast<size_t>(node) * 0x9E3779B97F4A7C15ull) ^ (reinterpret_cast<uintptr_t>(origin) >> 4);
  return h ^ (h >> 29);
}

}  // namespace

void EarleyParser::Add(int32_t node, int32_t count, const EarleySet* origin) {
  if ((s_.work.size() + 1) * 2 > s_.table.size()) {  // keep the table at most half full
    size_t grown = s_.table.size() * 2;
    s_.table.assign(grown, {});
    s_.table_stamp.assign(grown, 0);
    s_.stamp = 1;
    for (const EarleyItem& it : s_.work) {
      size_t i = HashItem(it.node, it.origin) & (grown - 1);
      while (s_.table_stamp[i] == s_.stamp) i = (i + 1) & (grown - 1);
      s_.table_stamp[i] = s_.stamp;
      s_.table[i] = it;
    }
  }
  size_t mask = s_.table.size() - 1;
  for (size_t i = HashItem(node, origin) & mask;; i = (i + 1) & mask) {
    if (s_.table_stamp[i] != s_.stamp) {
      s_.table_stamp[i] = s_.stamp;
      s_.table[i] = {node, count, origin};
      s_.work.push_back({node, count, origin});
      Track(node);
      return;
    }
    if (s_.table[i].node == node && s_.table[i].origin == origin && s_.table[i].count == count) return;
  }
}

void EarleyParser::Complete(const EarleySet& origin, int32_t rule) {
  // Completions against one origin come in chains within a closure (a C expression
  // ends every level of its precedence chain at once, all predicted at one set), each
  // scanning the origin's items for callers of its rule: 22% of the cold masks' work
  // on the code grammars (callgrind). The second completion against an origin indexes
  // its callers by rule, in scan order (a stable sort), so items are added in the
  // same order as by scanning.
  constexpr size_t kMaxOrigins = 16;  // per closure; past that, plain scans
  constexpr size_t kMinItems = 8;     // smaller origins (JSON's) scan faster than they index
  EarleyScratch::OriginCallers* entry = nullptr;
  for (size_t k = 0; origin.items.size() >= kMinItems && k < s_.num_origins; ++k) {
    if (s_.origins[k].set == &origin) {
      entry = &s_.origins[k];
      break;
    }
  }
  if (entry && !entry->indexed) {
    entry->indexed = true;
    entry->callers.clear();
    for (const EarleyItem& waiting : origin.items) {
      int32_t n = waiting.node;
      for (int32_t e = fsm_.rule_edge_begin[n]; e < fsm_.edge_begin[n + 1]; ++e) {
        entry->callers.push_back({fsm_.edges[e].rule, fsm_.edges[e].target, waiting.origin});
      }
    }
    // Insertion sort: stable without std::stable_sort's buffer allocation (a few
    // dozen callers, mostly in runs of one rule).
    std::vector<EarleyCaller>& c = entry->callers;
    for (size_t i = 1; i < c.size(); ++i) {
      EarleyCaller x = c[i];
      size_t j = i;
      for (; j > 0 && c[j - 1].rule > x.rule; --j) c[j] = c[j - 1];
      c[j] = x;
    }
  }
  if (entry) {
    auto it = std::lower_bound(entry->callers.begin(), entry->callers.end(), rule,
                               [](const EarleyCaller& c, int32_t r) { return c.rule < r; });
    // (A caller has rule edges, so it is in an ordinary rule: count 0.)
    for (; it != entry->callers.end() && it->rule == rule; ++it) Add(it->target, 0, it->origin);
    return;
  }
  if (origin.items.size() >= kMinItems && s_.num_origins < kMaxOrigins) {
    if (s_.origins.size() == s_.num_origins) s_.origins.emplace_back();
    s_.origins[s_.num_origins].set = &origin;
    s_.origins[s_.num_origins].indexed = false;
    ++s_.num_origins;
  }
  for (const EarleyItem& waiting : origin.items) {
    int32_t n = waiting.node;
    for (int32_t e = fsm_.rule_edge_begin[n]; e < fsm_.edge_begin[n + 1]; ++e) {
      if (fsm_.edges[e].rule == rule) Add(fsm_.edges[e].target, 0, waiting.origin);
    }
  }
}

void EarleyParser::Close(EarleySet* out) {
  // s_.work holds the seed items; process it as a queue, adding predictions and completions.
  s_.num_origins = 0;
  for (size_t i = 0; i < s_.work.size(); ++i) {
    const EarleyItem item = s_.work[i];
    int32_t node = item.node;
    if (fsm_.node_final[node] && (!counts_ || MayEnd(fsm_, node, item.count))) {
      int32_t rule = fsm_.node_rule[node];
      if (rule == fsm_.root && item.origin->initial) out->accepting = true;
      if (item.origin == watched_) *watch_hit_ = true;
      if (item.origin == generic_) {
        // The root has no callers: ending it assumes nothing (free text after a tag).
        if (generic_hit_ && !(*call_targets_)[rule].empty()) *generic_hit_ = true;
        if (reached_) reached_->ReadCallTargets(node);
        for (int32_t t : (*call_targets_)[rule]) Add(t, 0, generic_);
      } else if (item.origin != out) {
        // (Completions with origin == out are nullable rules, skipped at prediction.)
        Complete(*item.origin, rule);
      }
    }
    for (int32_t e = fsm_.rule_edge_begin[node]; e < fsm_.edge_begin[node + 1]; ++e) {
      int32_t callee = fsm_.edges[e].rule;
      Add(fsm_.rule_start[callee], 0, out);
      if (fsm_.rule_nullable[callee]) Add(fsm_.edges[e].target, item.count, item.origin);
    }
  }
  out->items.clear();
  out->next_bytes = ByteSet{};
  for (const EarleyItem& it : s_.work) {
    if (!fsm_.HasEdges(it.node) || (counts_ && !HasLiveEdges(fsm_, it.node, it.count))) continue;
    out->items.push_back(it);
    const ByteSet& fb = fsm_.first_bytes[it.node];
    for (int k = 0; k < 4; ++k) out->next_bytes[k] |= fb[k];
  }
}

ByteSet SameStepBytes(const GrammarFsm& fsm, const EarleySet& set, uint8_t byte) {
  // States of a few items (strings, whitespace, numbers): every byte that each node
  // sends where it sends `byte`, adjacent or not (the four bytes of a whitespace run).
  // Larger ones (a C expression's): the interval around `byte` without an edge bound
  // inside, found at a cost that stops early.
  constexpr size_t kMaxItemsSwept = 4;
  if (set.items.size() > kMaxItemsSwept) {
    int lo = 0, hi = 255;
    for (const EarleyItem& it : set.items) {
      for (int32_t e = fsm.edge_begin[it.node]; e < fsm.rule_edge_begin[it.node]; ++e) {
        const FsmEdge& edge = fsm.edges[e];
        if (byte < edge.lo) {
          hi = std::min(hi, edge.lo - 1);
          break;
        }
        if (byte <= edge.hi) {
          lo = std::max<int>(lo, edge.lo), hi = std::min<int>(hi, edge.hi);
          break;
        }
        lo = std::max(lo, edge.hi + 1);
      }
      if (lo == hi) break;  // just `byte` (a keyword's letter): nothing can widen it
    }
    ByteSet run{};
    ByteSetAddRange(run, static_cast<uint8_t>(lo), static_cast<uint8_t>(hi));
    return run;
  }
  ByteSet alike{~uint64_t{0}, ~uint64_t{0}, ~uint64_t{0}, ~uint64_t{0}};
  for (const EarleyItem& it : set.items) {
    // The node's bytes that go where `byte` goes: its edges to that target, or (where
    // `byte` goes nowhere) the bytes outside all its edges.
    const int32_t target = fsm.ByteTarget(it.node, byte);
    ByteSet own{};
    for (int32_t e = fsm.edge_begin[it.node]; e < fsm.rule_edge_begin[it.node]; ++e) {
      if (fsm.edges[e].target == target || target < 0) ByteSetAddRange(own, fsm.edges[e].lo, fsm.edges[e].hi);
    }
    for (int w = 0; w < 4; ++w) alike[w] &= target < 0 ? ~own[w] : own[w];
  }
  return alike;
}

bool ParseSignature(const EarleySet& set, size_t max_items, std::string* out) {
  // The sets reachable through item origins, numbered in discovery order, each with its
  // items (node, origin number) and whether it is the initial set: all that a parse
  // from `set` can look at. Equal signatures mean equal parses of any continuation.
  thread_local std::vector<const EarleySet*> sets;
  thread_local std::vector<int32_t> words;
  sets.assign(1, &set);
  words.clear();
  size_t items = 0;
  for (size_t k = 0; k < sets.size(); ++k) {
    const EarleySet* s = sets[k];
    items += s->items.size();
    if (items > max_items) return false;
    words.push_back(s->initial ? -1 : static_cast<int32_t>(s->items.size()));
    for (const EarleyItem& it : s->items) {
      size_t id = std::find(sets.begin(), sets.end(), it.origin) - sets.begin();
      if (id == sets.size()) sets.push_back(it.origin);
      // A count (counted rules only) follows a node word flagged in its top bit.
      words.push_back(it.count == 0 ? it.node : static_cast<int32_t>(static_cast<uint32_t>(it.node) | 0x80000000u));
      words.push_back(static_cast<int32_t>(id));
      if (it.count != 0) words.push_back(it.count);
    }
  }
  out->assign(reinterpret_cast<const char*>(words.data()), words.size() * sizeof(int32_t));
  return true;
}

EarleyScratch& ThreadScratch() {
  thread_local EarleyScratch scratch;
  return scratch;
}

EarleySet* const* ScratchSets::Get(size_t count) {
  if (sets_.size() < count) {  // one allocation for the missing sets (hundreds at first use)
    size_t missing = count - sets_.size();
    owned_.push_back(std::make_unique<EarleySet[]>(missing));
    for (size_t i = 0; i < missing; ++i) sets_.push_back(&owned_.back()[i]);
  }
  return sets_.data();
}

void EarleyParser::BeginSet() {
  if (s_.table.empty()) s_.table.resize(64), s_.table_stamp.assign(64, 0);
  if (++s_.stamp == 0) {  // wrapped: clear stamps
    std::fill(s_.table_stamp.begin(), s_.table_stamp.end(), 0);
    s_.stamp = 1;
  }
  s_.work.clear();
}

void EarleyParser::Initial(EarleySet* out) {
  BeginSet();
  out->accepting = false;
  out->initial = true;
  Add(fsm_.rule_start[fsm_.root], 0, out);
  Close(out);
}

void EarleyParser::Seed(int32_t node, const EarleySet* origin, EarleySet* out) {
  BeginSet();
  out->accepting = false;
  out->initial = false;
  Add(node, fsm_.IsCounted(node) ? kFreeCount : 0, origin);
  Close(out);
}

void EarleyParser::Extend(const EarleySet* base, const std::vector<int32_t>& nodes, const EarleySet* origin,
                          EarleySet* out) {
  BeginSet();
  out->accepting = base && base->accepting;
  out->initial = false;
  if (base) {
    for (const EarleyItem& it : base->items) Add(it.node, it.count, it.origin);
  }
  for (int32_t n : nodes) Add(n, 0, origin);
  Close(out);
}

bool EarleyParser::AdvanceScannable(const EarleySet& prev, uint8_t byte, EarleySet* out) {
  out->initial = false;
  if (prev.items.size() == 1) {
    // Fast path (inside a string, a number, a literal): one item moving to a node that
    // calls no rule needs no closure, unless it ends its rule where callers wait.
    const EarleyItem& it = prev.items[0];
    int32_t t = fsm_.ByteTarget(it.node, byte);
    int32_t count = it.count;
    if (t < 0 || (counts_ && !StepCount(fsm_, it, t, &count))) return false;
    Track(t);
    bool calls = fsm_.rule_edge_begin[t] != fsm_.edge_begin[t + 1];
    bool ends = fsm_.node_final[t] && (!counts_ || MayEnd(fsm_, t, count));
    if (!calls && (!ends || (it.origin != generic_ && it.origin->items.empty()))) {
      out->accepting = ends && fsm_.node_rule[t] == fsm_.root && it.origin->initial;
      if (ends && it.origin == watched_) *watch_hit_ = true;
      if (fsm_.HasEdges(t) && (!counts_ || HasLiveEdges(fsm_, t, count))) {
        out->items.resize(1);  // not assign(): no allocation once the set has held an item
        out->items[0] = EarleyItem{t, count, it.origin};
        out->next_bytes = fsm_.first_bytes[t];
      } else {
        out->items.clear();
        out->next_bytes = ByteSet{};
      }
      return true;
    }
  }
  BeginSet();
  out->accepting = false;
  for (const EarleyItem& it : prev.items) {
    int32_t t = fsm_.ByteTarget(it.node, byte);
    int32_t count = it.count;
    if (t >= 0 && (!counts_ || StepCount(fsm_, it, t, &count))) Add(t, count, it.origin);
  }
  if (s_.work.empty()) return false;
  Close(out);
  return true;
}

}  // namespace xgr2

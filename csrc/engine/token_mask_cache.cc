#include "engine/token_mask_cache.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <string>

#include "engine/token_walk.h"
#include "support/thread_pool.h"
#include "grammar/fsm.h"
#include "grammar/fsm_key.h"

namespace xgr2 {

namespace {

// Keys of nodes reaching more automaton nodes than this are not computed (no sharing).
constexpr int32_t kMaxKeyNodes = 512;
// Classifications that reach further from their node are not shared.
constexpr int32_t kMaxKeyRadius = 256;

// Scratch sets for the classification walks, one per depth, reused on a thread.
std::vector<EarleySet*>& ClassifySets(size_t count) {
  thread_local std::vector<std::unique_ptr<EarleySet>> owned;
  thread_local std::vector<EarleySet*> sets;
  while (owned.size() < count) {
    owned.push_back(std::make_unique<EarleySet>());
    sets.push_back(owned.back().get());
  }
  return sets;
}

// Two parses side by side over the bytes of a trie path, one state per depth:
//  inner: the item (node, parent) where `parent` stands for the rule's unknown callers;
//  outer: what may follow wherever the rule ended on the way, in any context
//         (items with origin `generic`, see EarleyParser::SetGeneric).
class ContextWalk {
 public:
  // `follow`: where the parse goes on when the node's rule ends (then, when those rules
  // end, at every call site: call_targets).
  // With `dist`, *reached follows how far the walk goes (EarleyParser::TrackDistance).
  ContextWalk(const GrammarFsm& fsm, const TokenizerInfo& tok, int32_t node, const std::vector<int32_t>& follow,
              const std::vector<std::vector<int32_t>>& call_targets, const int32_t* dist = nullptr,
              int32_t* reached = nullptr)
      : parser_(fsm, ThreadScratch()), calls_(follow) {
    if (dist) parser_.TrackDistance(dist, reached);
    size_t max_depth = static_cast<size_t>(tok.max_token_bytes()) + 1;
    auto& sets = ClassifySets(3 * max_depth);
    inner_sets_ = &sets[0];
    outer_sets_ = &sets[max_depth];
    merged_sets_ = &sets[2 * max_depth];
    inner_.assign(max_depth, nullptr);
    outer_.assign(max_depth, nullptr);
    parent_.parent = &parent_;  // non-null: not the initial set
    generic_.parent = &generic_;
    parser_.Watch(&parent_, &ended_);
    parser_.SetGeneric(&generic_, &call_targets);
    ended_ = false;
    parser_.Seed(node, &parent_, inner_sets_[0]);
    inner_sets_[0]->parent = &parent_;
    inner_[0] = inner_sets_[0];
    outer_[0] = ended_ ? JoinContext(nullptr, 0) : nullptr;
  }

  // Extends the path at depth d by `byte`; false when both parses die.
  bool Step(size_t d, uint8_t byte) {
    const EarleySet* in = nullptr;
    const EarleySet* out = nullptr;
    ended_ = false;
    if (inner_[d]) {
      EarleySet* next = inner_sets_[d + 1];
      next->parent = inner_[d];
      if (parser_.Advance(*inner_[d], byte, next)) in = next;
    }
    bool ended_here = ended_;
    if (outer_[d]) {
      EarleySet* next = outer_sets_[d + 1];
      next->parent = outer_[d];
      if (parser_.Advance(*outer_[d], byte, next)) out = next;
    }
    if (ended_here) out = JoinContext(out, d + 1);
    if (!in && !out) return false;
    inner_[d + 1] = in;
    outer_[d + 1] = out;
    return true;
  }

 private:
  // The outer parse at depth d joined by a fresh context, where the rule just ended.
  const EarleySet* JoinContext(const EarleySet* base, size_t d) {
    if (calls_.empty()) return base;  // the root: nothing can follow it
    EarleySet* out = merged_sets_[d];
    out->parent = &generic_;
    parser_.Extend(base, calls_, &generic_, out);
    return out;
  }

  EarleyParser parser_;
  const std::vector<int32_t>& calls_;
  EarleySet parent_, generic_;
  bool ended_ = false;
  EarleySet* const* inner_sets_ = nullptr;
  EarleySet* const* outer_sets_ = nullptr;
  EarleySet* const* merged_sets_ = nullptr;
  std::vector<const EarleySet*> inner_, outer_;
};

}  // namespace

std::shared_ptr<InnerMask> ClassifyInner(const GrammarFsm& fsm, const TokenizerInfo& tok, int32_t node,
                                         const int32_t* dist, int32_t* radius) {
  EarleySet parent;
  parent.parent = &parent;  // non-null: not the initial set
  EarleyParser parser(fsm, ThreadScratch());
  bool ended = false;
  parser.Watch(&parent, &ended);
  int32_t reached = 0;
  if (dist) parser.TrackDistance(dist, &reached);
  size_t max_depth = static_cast<size_t>(tok.max_token_bytes()) + 1;
  EarleySet* const* sets = ClassifySets(max_depth).data();
  std::vector<const EarleySet*> path(max_depth);
  std::vector<uint8_t> ended_by(max_depth);  // the rule could end at or before depth d
  parser.Seed(node, &parent, sets[0]);
  sets[0]->parent = &parent;
  path[0] = sets[0];
  ended_by[0] = ended;

  const TokenTrie& t = tok.trie();
  const std::vector<int32_t>& sorted = tok.sorted_ids();
  auto mask = std::make_shared<InnerMask>();
  std::vector<int32_t> accepted;
  WalkTrie(
      t, 0, t.size(),
      [&](size_t d, uint8_t byte) {
        EarleySet* next = sets[d + 1];
        next->parent = path[d];
        ended = false;
        if (!parser.Advance(*path[d], byte, next)) return false;
        path[d + 1] = next;
        ended_by[d + 1] = ended_by[d] || ended;
        return true;
      },
      [&](int32_t i) {
        for (int32_t k = 0; k < t.num_tokens[i]; ++k) accepted.push_back(sorted[t.first_pos[i] + k]);
      },
      [&](int32_t i) {
        if (ended_by[t.depth[i] - 1]) mask->crossing.push_back(i);
      });
  mask->accepted = AcceptedSet::FromIds(std::move(accepted), tok.vocab_size());
  mask->crossing.shrink_to_fit();
  mask->radius = dist ? reached : INT32_MAX;
  if (radius) *radius = reached;
  return mask;
}

std::vector<int32_t> UncertainTokens(const GrammarFsm& fsm, const TokenizerInfo& tok, int32_t node,
                                     const std::vector<int32_t>& follow,
                                     const std::vector<std::vector<int32_t>>& call_targets,
                                     const InnerMask& inner, const int32_t* dist, int32_t* radius) {
  std::vector<int32_t> uncertain;
  int32_t reached = 0;
  if (radius) *radius = 0;
  if (inner.crossing.empty()) return uncertain;
  ContextWalk walk(fsm, tok, node, follow, call_targets, dist, &reached);
  const TokenTrie& t = tok.trie();
  const std::vector<int32_t>& sorted = tok.sorted_ids();
  // Each crossing subtree is walked below its path from the root, which the inner parse
  // survived; consecutive subtrees share the part of that path they have in common.
  const std::string* path = nullptr;  // spells the walk's current path
  size_t valid = 0;                   // depths whose states match `path`
  for (int32_t root : inner.crossing) {
    size_t depth = t.depth[root];
    const std::string& s = tok.decoded(sorted[t.first_pos[root]]);
    size_t d = path ? std::min(SharedDepth(path, s, valid), depth - 1) : 0;
    bool alive = true;
    for (; d + 1 < depth && alive; ++d) alive = walk.Step(d, static_cast<uint8_t>(s[d]));
    path = &s;
    valid = alive ? depth - 1 : 0;
    if (!alive) continue;  // not reached: the inner parse lives on every proper prefix
    // The inner parse died at `root`, so whatever lives below lives after the rule.
    WalkTrie(
        t, root, t.next[root], [&](size_t d, uint8_t byte) { return walk.Step(d, byte); },
        [&](int32_t i) {
          for (int32_t k = 0; k < t.num_tokens[i]; ++k) uncertain.push_back(t.first_pos[i] + k);
        },
        [](int32_t) {});
  }
  uncertain.shrink_to_fit();
  if (radius) *radius = reached;
  return uncertain;
}

TokenMaskCache::TokenMaskCache(const GrammarFsm& fsm, const TokenizerInfo& tok, std::shared_ptr<NodeMaskPool> pool)
    : fsm_(fsm), tok_(tok), pool_(std::move(pool)), masks_(new std::atomic<const NodeMask*>[fsm.NumNodes()]) {
  for (int32_t i = 0; i < fsm.NumNodes(); ++i) masks_[i].store(nullptr, std::memory_order_relaxed);
  call_targets_.resize(fsm.rule_start.size());
  for (const FsmEdge& e : fsm.edges) {
    if (e.rule >= 0) call_targets_[e.rule].push_back(e.target);
  }
  for (auto& t : call_targets_) {
    std::sort(t.begin(), t.end());
    t.erase(std::unique(t.begin(), t.end()), t.end());
  }
}

TokenMaskCache::~TokenMaskCache() {
  for (int32_t i = 0; i < fsm_.NumNodes(); ++i) delete masks_[i].load();
}

namespace {

size_t PoolBytes(const InnerMask& mask) { return mask.MemoryBytes(); }
size_t PoolBytes(const TokenList& list) { return sizeof(TokenList) + 4 * list.capacity(); }

// A walk's result shared through the vocabulary's pool, keyed by the structure the
// walk reached from `roots` (BallKey): usually a few bytes around a node, so a schema's
// `": " value` node is shared whatever properties follow it. `find` and `insert` are the
// pool's methods for the kind of result; compute(dist, &radius) walks. *radius: how far
// the result's walk reached, -1 when unknown. `also` is appended to every key: whatever
// else the result depends on. `reach`: the most bytes a walk scans (the longest token);
// an item after d bytes is at a node at most d away, so no farther distance matters.
template <class T, class Compute>
std::shared_ptr<const T> SharedByReach(const GrammarFsm& fsm, int32_t reach, const std::vector<int32_t>& roots,
                                       const std::vector<std::vector<int32_t>>* call_targets,
                                       const std::string& also, NodeMaskPool& pool, NodeMaskPool::Kind kind,
                                       Compute&& compute, int32_t* radius) {
  // Not bounded by kMaxKeyRadius: a classification that reaches further gets no key
  // of its own, but its exact radius still keys the context walks that depend on it
  // (UncertainIn).
  ByteDistances dist(fsm, roots, call_targets, reach, kMaxKeyNodes);
  auto key_at = [&](int32_t r) {
    std::string key = BallKey(fsm, roots, call_targets, dist, r, kMaxKeyNodes);
    return key.empty() ? key : key + also;
  };
  // The index of the stored radii: the ball of radius 1 tells most structures apart
  // (the bytes out of the node), so few radii are tried per lookup.
  std::string core = key_at(1);
  if (!core.empty()) {
    if (auto found = pool.FindByReach<T>(kind, core, key_at, radius)) return found;
  }
  std::shared_ptr<const T> value = compute(dist.data(), radius);
  std::string key;
  if (!core.empty() && *radius >= 0 && *radius <= kMaxKeyRadius) key = key_at(*radius);
  if (key.empty()) {
    *radius = -1;
    return value;
  }
  int64_t bytes = static_cast<int64_t>(PoolBytes(*value));
  return pool.InsertByReach<T>(kind, core, *radius, key, std::move(value), bytes);
}

}  // namespace

int64_t MakeLookupKeys(const GrammarFsm& fsm, int32_t reach, int32_t radius, int repeats) {
  int64_t nodes = 0;
  size_t sink = 0;
  for (int k = 0; k < repeats; ++k) {
    nodes = 0;
    for (int32_t n = 0; n < fsm.NumNodes(); ++n) {
      if (!fsm.HasEdges(n)) continue;
      ++nodes;
      ByteDistances dist(fsm, {n}, nullptr, reach, kMaxKeyNodes);
      sink += BallKey(fsm, {n}, nullptr, dist, 1, kMaxKeyNodes).size();
      sink += BallKey(fsm, {n}, nullptr, dist, radius, kMaxKeyNodes).size();
    }
  }
  return sink ? nodes : nodes;  // the keys are used: not optimized away
}

const NodeMask& TokenMaskCache::Get(int32_t node, bool all_contexts) const {
  const NodeMask* m = masks_[node].load(std::memory_order_acquire);
  if (m) return *m;
  NodeMaskPool& pool = *pool_;
  std::string same = SameKey('n', &node, sizeof(node));
  std::shared_ptr<const InnerMask> inner = pool.Find<InnerMask>(NodeMaskPool::Kind::kSameInner, same);
  if (!inner) {
    int32_t radius = -1;
    auto classify = [&](const int32_t* dist, int32_t* r) { return ClassifyInner(fsm_, tok_, node, dist, r); };
    inner = SharedByReach<InnerMask>(fsm_, tok_.max_token_bytes(), {node}, nullptr, "", pool,
                                     NodeMaskPool::Kind::kInner, classify, &radius);
    int64_t bytes = static_cast<int64_t>(PoolBytes(*inner));
    inner = pool.Insert(NodeMaskPool::Kind::kSameInner, same, std::move(inner), bytes);
  }
  auto* fresh = new NodeMask{inner, {}, all_contexts};
  if (all_contexts) {
    const std::vector<int32_t>& follow = call_targets_[fsm_.node_rule[node]];
    fresh->uncertain = UncertainTokens(fsm_, tok_, node, follow, call_targets_, *inner);
  }
  const NodeMask* expected = nullptr;
  if (!masks_[node].compare_exchange_strong(expected, fresh, std::memory_order_acq_rel)) {
    delete fresh;  // another thread finished first
    return *expected;
  }
  return *fresh;
}

std::vector<int32_t> TokenMaskCache::MissingNodes() const {
  std::vector<int32_t> nodes;
  for (int32_t i = 0; i < fsm_.NumNodes(); ++i) {
    if (fsm_.HasEdges(i) && !masks_[i].load(std::memory_order_acquire)) nodes.push_back(i);
  }
  return nodes;
}

std::vector<int32_t> TokenMaskCache::CostliestNodes(int64_t count) const {
  // Tokens per first byte: the sizes of the trie's top-level subtrees.
  const TokenTrie& t = tok_.trie();
  std::array<int64_t, 256> tokens_by_byte{};
  for (int32_t i = 0; i < t.size(); i = t.next[i]) {
    tokens_by_byte[t.byte[i]] = t.first_pos[t.next[i]] - t.first_pos[i];
  }
  std::vector<std::pair<int64_t, int32_t>> cost;  // (-estimate, node)
  EarleyParser parser(fsm_, ThreadScratch());
  EarleySet parent, seeded;
  parent.parent = &parent;
  for (int32_t i : MissingNodes()) {
    parser.Seed(i, &parent, &seeded);
    int64_t estimate = 0;
    for (int b = 0; b < 256; ++b) {
      if (seeded.CanScan(static_cast<uint8_t>(b))) estimate += tokens_by_byte[b];
    }
    cost.emplace_back(-estimate, i);
  }
  size_t n = static_cast<size_t>(std::clamp<int64_t>(count, 0, static_cast<int64_t>(cost.size())));
  std::partial_sort(cost.begin(), cost.begin() + n, cost.end());
  std::vector<int32_t> nodes(n);
  for (size_t k = 0; k < n; ++k) nodes[k] = cost[k].second;
  return nodes;
}

void TokenMaskCache::PrecomputeAll(int num_threads) const {
  std::vector<int32_t> nodes = MissingNodes();
  ParallelFor(static_cast<int64_t>(nodes.size()), num_threads, [&](int64_t k) { Get(nodes[k], true); });
}

void TokenMaskCache::PrecomputeCostliest(int64_t count, int num_threads) const {
  std::vector<int32_t> nodes = CostliestNodes(count);
  ParallelFor(static_cast<int64_t>(nodes.size()), num_threads, [&](int64_t k) { Get(nodes[k], true); });
}

const std::vector<int32_t>& TokenMaskCache::UncertainIn(const NodeMask& mask, int32_t node,
                                                        const EarleySet& origin) const {
  constexpr size_t kFewUncertain = 16;  // not worth a context of their own
  if (mask.inner->crossing.empty()) return mask.uncertain;  // empty
  if (mask.has_uncertain && mask.uncertain.size() <= kFewUncertain) return mask.uncertain;
  // The nodes where this item's callers go on after its rule: the key of the context.
  thread_local std::vector<int32_t> follow;
  follow.clear();
  int32_t rule = fsm_.node_rule[node];
  for (const EarleyItem& waiting : origin.items) {
    for (int32_t e = fsm_.rule_edge_begin[waiting.node]; e < fsm_.edge_begin[waiting.node + 1]; ++e) {
      if (fsm_.edges[e].rule == rule) follow.push_back(fsm_.edges[e].target);
    }
  }
  std::sort(follow.begin(), follow.end());
  follow.erase(std::unique(follow.begin(), follow.end()), follow.end());
  std::string key(reinterpret_cast<const char*>(&node), sizeof(node));
  key.append(reinterpret_cast<const char*>(follow.data()), follow.size() * sizeof(int32_t));
  {
    std::shared_lock<std::shared_mutex> lock(context_mu_);
    auto it = context_uncertain_.find(key);
    if (it != context_uncertain_.end()) return *it->second;
  }
  // The node's uncertain tokens that can go on in this context (still a superset of
  // those the full parser accepts: past the callers' rules any context is assumed).
  // Shared through the pool when walked from the crossing tokens: that walk covers every
  // token the context could accept, so what it reached plus what decided the crossing
  // tokens (the classification's reach, its key appended) decide all of them. Narrowed
  // from the node's uncertain tokens of every context (when precomputed), it is exact
  // here but has not looked at the tokens left out, so it is only looked up.
  std::vector<int32_t> roots = {node};
  roots.insert(roots.end(), follow.begin(), follow.end());
  NodeMaskPool& pool = *pool_;
  std::string same = SameKey('c', key.data(), key.size());
  using List = std::shared_ptr<const std::vector<int32_t>>;
  List found = pool.Find<TokenList>(NodeMaskPool::Kind::kSameList, same);
  if (found) {
    std::unique_lock<std::shared_mutex> lock(context_mu_);
    return *context_uncertain_.emplace(std::move(key), std::move(found)).first->second;
  }
  int32_t inner_radius = mask.inner->radius;
  std::string inner_key;
  if (inner_radius != INT32_MAX) {
    inner_key = BallKey(fsm_, {node}, nullptr, ByteDistances(fsm_, {node}, nullptr, inner_radius, kMaxKeyNodes),
                        inner_radius, kMaxKeyNodes);
  }
  int32_t radius = -1;
  auto compute = [&](const int32_t* dist, int32_t* r) -> List {
        auto narrowed = std::make_shared<std::vector<int32_t>>();
        if (mask.has_uncertain) {
          ContextWalk walk(fsm_, tok_, node, follow, call_targets_);
          const std::vector<int32_t>& all = mask.uncertain;
          WalkPositions(
              tok_, all.data(), all.size(), [&](size_t d, uint8_t byte) { return walk.Step(d, byte); },
              [&](size_t k) { narrowed->push_back(all[k]); });
          narrowed->shrink_to_fit();
          *r = -1;
        } else {
          *narrowed = UncertainTokens(fsm_, tok_, node, follow, call_targets_, *mask.inner, dist, r);
          if (inner_key.empty()) *r = -1;
        }
        return narrowed;
      };
  // Without the classification's key, what decided the crossing tokens is unknown:
  // nothing to share by reach (and no lookup, which would leave that part out).
  found = inner_key.empty() ? compute(nullptr, &radius)
                            : SharedByReach<TokenList>(fsm_, tok_.max_token_bytes(), roots, &call_targets_, inner_key, pool,
                                                       NodeMaskPool::Kind::kContext, compute, &radius);
  int64_t bytes = static_cast<int64_t>(PoolBytes(*found));
  found = pool.Insert(NodeMaskPool::Kind::kSameList, same, std::move(found), bytes);
  std::unique_lock<std::shared_mutex> lock(context_mu_);
  auto inserted = context_uncertain_.emplace(std::move(key), std::move(found));
  return *inserted.first->second;  // another thread's, if it was first
}

void TokenMaskCache::FillBitmask(const EarleySet& set, uint32_t* words) const {
  // Only kernel items matter: an item predicted in this set (origin == this set) is
  // part of the closure of the kernel item that predicted it, and a node's mask is
  // computed from its whole closure. In the initial set the kernel is the root's start.
  // Items differing only in origin share a node mask but not their context.
  thread_local std::vector<EarleyItem> kernel;
  thread_local std::vector<int32_t> uncertain;
  kernel.clear();
  int32_t root_start = fsm_.rule_start[fsm_.root];
  for (const EarleyItem& it : set.items) {
    if (it.origin != &set || (set.parent == nullptr && it.node == root_start)) kernel.push_back(it);
  }
  for (const EarleyItem& it : kernel) Get(it.node).OrInto(words);
  // Only uncertain tokens that no node accepted need the full parser; filter each
  // item's (sorted) list, narrowed to its callers' context, before merging.
  const std::vector<int32_t>& sorted = tok_.sorted_ids();
  uncertain.clear();
  for (const EarleyItem& it : kernel) {
    for (int32_t pos : UncertainIn(Get(it.node), it.node, *it.origin)) {
      int32_t id = sorted[pos];
      if (!((words[id >> 5] >> (id & 31)) & 1)) uncertain.push_back(pos);
    }
  }
  if (uncertain.empty()) return;
  if (kernel.size() > 1) {
    std::sort(uncertain.begin(), uncertain.end());
    uncertain.erase(std::unique(uncertain.begin(), uncertain.end()), uncertain.end());
  }
  // States with the same parse structure accept the same uncertain tokens (inside a
  // string, every character leads to such a state): reuse the walk's result.
  thread_local std::string signature;
  bool memo = StackSignature(set, &signature);
  auto apply = [&](const std::vector<int32_t>& ids) {
    for (int32_t id : ids) words[id >> 5] |= uint32_t{1} << (id & 31);
  };
  if (memo) {
    std::shared_lock<std::shared_mutex> lock(context_mu_);
    auto it = walk_results_.find(signature);
    if (it != walk_results_.end()) return apply(*it->second);
  }
  // Then the pool's, for this grammar compiled before.
  std::string same = memo ? SameKey('w', signature.data(), signature.size()) : "";
  std::shared_ptr<const TokenList> ids =
      memo ? pool_->Find<TokenList>(NodeMaskPool::Kind::kSameList, same) : nullptr;
  if (ids) {
    apply(*ids);
  } else {
    WalkAcceptedTokens(fsm_, tok_, set, uncertain.data(), uncertain.size(), words);
    if (!memo) return;
    auto accepted = std::make_shared<std::vector<int32_t>>();
    for (int32_t pos : uncertain) {
      int32_t id = sorted[pos];
      if ((words[id >> 5] >> (id & 31)) & 1) accepted->push_back(id);
    }
    int64_t bytes = static_cast<int64_t>(PoolBytes(*accepted));
    ids = pool_->Insert<TokenList>(NodeMaskPool::Kind::kSameList, same, std::move(accepted), bytes);
  }
  std::unique_lock<std::shared_mutex> lock(context_mu_);
  if (walk_results_.size() >= kMaxWalkResults) walk_results_.clear();  // bounded; start over
  walk_results_.emplace(signature, std::move(ids));
}

std::string TokenMaskCache::SameKey(char tag, const void* what, size_t size) const {
  std::call_once(grammar_id_once_, [&] { grammar_id_ = pool_->GrammarId(Fingerprint(fsm_)); });
  std::string key(reinterpret_cast<const char*>(&grammar_id_), sizeof(grammar_id_));
  key.push_back(tag);
  key.append(static_cast<const char*>(what), size);
  return key;
}

bool TokenMaskCache::StackSignature(const EarleySet& set, std::string* out) const {
  // The sets reachable through item origins, numbered in discovery order, each with its
  // items (node, origin number) and whether it is the initial set: all that a parse
  // from `set` can look at. Equal signatures mean equal parses of any continuation.
  constexpr size_t kMaxItems = 1024;
  thread_local std::vector<const EarleySet*> sets;
  thread_local std::vector<int32_t> words;
  sets.assign(1, &set);
  words.clear();
  size_t items = 0;
  for (size_t k = 0; k < sets.size(); ++k) {
    const EarleySet* s = sets[k];
    items += s->items.size();
    if (items > kMaxItems) return false;
    words.push_back(s->parent == nullptr ? -1 : static_cast<int32_t>(s->items.size()));
    for (const EarleyItem& it : s->items) {
      size_t id = std::find(sets.begin(), sets.end(), it.origin) - sets.begin();
      if (id == sets.size()) sets.push_back(it.origin);
      words.push_back(it.node);
      words.push_back(static_cast<int32_t>(id));
    }
  }
  out->assign(reinterpret_cast<const char*>(words.data()), words.size() * sizeof(int32_t));
  return true;
}

int32_t TokenMaskCache::NumComputed() const {
  int32_t count = 0;
  for (int32_t i = 0; i < fsm_.NumNodes(); ++i) count += masks_[i].load() != nullptr;
  return count;
}

int64_t TokenMaskCache::MemoryBytes() const {
  int64_t bytes = 0;
  for (int32_t i = 0; i < fsm_.NumNodes(); ++i) {
    if (const NodeMask* m = masks_[i].load()) bytes += static_cast<int64_t>(m->MemoryBytes());
  }
  std::shared_lock<std::shared_mutex> lock(context_mu_);
  for (const auto& [key, list] : context_uncertain_) {
    bytes += static_cast<int64_t>(key.size() + 4 * list->capacity() + 64);
  }
  for (const auto& [key, ids] : walk_results_) {
    bytes += static_cast<int64_t>(key.size() + 4 * ids->capacity() + 64);
  }
  return bytes;
}

}  // namespace xgr2

#include "engine/token_mask_cache.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "engine/shared_by_reach.h"
#include "engine/token_walk.h"
#include "grammar/fsm.h"
#include "grammar/fsm_key.h"
#include "support/bit_words.h"

namespace xgr2 {

TokenMaskCache::TokenMaskCache(std::shared_ptr<const GrammarFsm> fsm, const TokenizerInfo& tok,
                               std::shared_ptr<NodeMaskPool> pool, bool direct_cold_walks)
    : fsm_(*fsm),
      tok_(tok),
      pool_(std::move(pool)),
      grammar_id_(pool_->GrammarId(fsm)),
      masks_(new std::atomic<const NodeMask*>[fsm->NumNodes()]),
      direct_cold_walks_(direct_cold_walks),
      direct_visits_(new std::atomic<uint8_t>[fsm->NumNodes()]) {
  for (int32_t i = 0; i < fsm_.NumNodes(); ++i) {
    masks_[i].store(nullptr, std::memory_order_relaxed);
    direct_visits_[i].store(0, std::memory_order_relaxed);
  }
  call_targets_.resize(fsm_.rule_start.size());
  for (const FsmEdge& e : fsm_.edges) {
    if (e.rule >= 0) call_targets_[e.rule].push_back(e.target);
  }
  for (auto& t : call_targets_) {
    std::sort(t.begin(), t.end());
    t.erase(std::unique(t.begin(), t.end()), t.end());
  }
  wide_loop_.resize(fsm_.rule_start.size());
  for (size_t r = 0; r < wide_loop_.size(); ++r) {
    int32_t start = fsm_.rule_start[r], looping = 0;
    for (int32_t e = fsm_.edge_begin[start]; e < fsm_.rule_edge_begin[start]; ++e) {
      if (fsm_.edges[e].target == start) looping += fsm_.edges[e].hi - fsm_.edges[e].lo + 1;
    }
    wide_loop_[r] = looping >= kWideLoopBytes;
  }
}

TokenMaskCache::~TokenMaskCache() {
  for (int32_t i = 0; i < fsm_.NumNodes(); ++i) delete masks_[i].load();
}

const NodeMask& TokenMaskCache::Get(int32_t node, bool all_contexts) const {
  return *Lookup(node, Missing::kCompute, all_contexts);
}

const NodeMask* TokenMaskCache::Lookup(int32_t node, Missing missing, bool all_contexts) const {
  const NodeMask* m = masks_[node].load(std::memory_order_acquire);
  if (m) return m;
  const bool compute = missing == Missing::kCompute;
  NodeMaskPool& pool = *pool_;
  std::string same = SameKey('n', &node, sizeof(node));
  std::shared_ptr<const InnerMask> inner = pool.Find<InnerMask>(NodeMaskPool::Kind::kSameInner, same);
  if (!inner) {
    // A node's classification looks no further than its rule and the rules it calls:
    // any grammar whose rule has the same structure id has it, at the same offset. One
    // lookup of a short key, where the structural one (Classify) makes and matches
    // keys of the automata the walk reached.
    const int32_t rule = fsm_.node_rule[node];
    const int64_t structure = fsm_.rule_structure[rule];
    std::string by_structure;
    if (structure >= 0) {
      const int32_t offset = node - fsm_.rule_start[rule];
      by_structure.append(reinterpret_cast<const char*>(&structure), sizeof(structure));
      by_structure.append(reinterpret_cast<const char*>(&offset), sizeof(offset));
      inner = pool.Find<InnerMask>(NodeMaskPool::Kind::kStructInner, by_structure);
    }
    if (!inner && missing == Missing::kFindCheaply && direct_visits_[node].load(std::memory_order_relaxed) == 0) {
      return nullptr;
    }
    if (!inner) {
      inner = Classify(node, compute);
      if (!inner) return nullptr;  // not computed anywhere yet, and not to be computed now
      if (structure >= 0) {
        int64_t bytes = static_cast<int64_t>(PoolBytes(*inner));
        inner = pool.Insert(NodeMaskPool::Kind::kStructInner, by_structure, std::move(inner), bytes);
      }
    }
    int64_t bytes = static_cast<int64_t>(PoolBytes(*inner));
    inner = pool.Insert(NodeMaskPool::Kind::kSameInner, same, std::move(inner), bytes);
  }
  auto* fresh = new NodeMask{inner, {}, all_contexts};
  if (all_contexts) {
    const std::vector<int32_t>& follow = call_targets_[fsm_.node_rule[node]];
    ContextTokens all = ContextTokensOf(fsm_, tok_, node, follow, call_targets_, *inner);
    TokenList& merged = fresh->any_context.uncertain;
    merged.resize(all.certain.size() + all.uncertain.size());
    std::merge(all.certain.begin(), all.certain.end(), all.uncertain.begin(), all.uncertain.end(), merged.begin());
  }
  const NodeMask* expected = nullptr;
  if (!masks_[node].compare_exchange_strong(expected, fresh, std::memory_order_acq_rel)) {
    delete fresh;  // another thread finished first
    return expected;
  }
  return fresh;
}

std::shared_ptr<const InnerMask> TokenMaskCache::Classify(int32_t node, bool compute) const {
  auto classify = [&](NodeSet* reached, bool* keep) -> std::shared_ptr<InnerMask> {
    // A node most of whose first bytes step like a sibling's (free text after a partial
    // tag) takes those tokens from the sibling's mask, when this grammar has it, and
    // walks only the rest. Not stored by structure: the walk did not see the sibling's.
    SameSteps steps = SiblingSteps(fsm_, tok_, node);
    const NodeMask* theirs = steps.node >= 0 ? masks_[steps.node].load(std::memory_order_acquire) : nullptr;
    if (!theirs) return ClassifyInner(fsm_, tok_, node, pool_.get(), reached);
    *keep = false;
    return ClassifyInner(fsm_, tok_, node, pool_.get(), nullptr, theirs->inner.get(), &steps);
  };
  return SharedByReach<InnerMask>(fsm_, {node}, nullptr, "", *pool_, NodeMaskPool::Kind::kInner, classify, !compute);
}

const ContextTokens* TokenMaskCache::FindContext(const NodeMask& mask, int32_t node, const EarleySet& origin,
                                                 bool compute) const {
  constexpr size_t kFewUncertain = 16;  // not worth a context of their own
  if (mask.inner->crossing.empty()) return &mask.any_context;  // empty
  if (mask.has_uncertain && mask.any_context.uncertain.size() <= kFewUncertain) return &mask.any_context;
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
    auto it = contexts_.find(key);
    if (it != contexts_.end()) return it->second.get();
  }
  // The node's crossing tokens that can go on in this context: certain where they live
  // on inside the callers' rules, uncertain where they end one (past it any context is
  // assumed, a superset of what the full parser accepts).
  // Shared through the pool when walked from the crossing tokens: that walk covers every
  // token the context could accept, so what it reached plus the crossing tokens (named
  // by the classification's id, appended to the key) decide all of them. Narrowed
  // from the node's uncertain tokens of every context (when precomputed), it is exact
  // here but has not looked at the tokens left out, so it is only looked up.
  std::vector<int32_t> roots = {node};
  roots.insert(roots.end(), follow.begin(), follow.end());
  NodeMaskPool& pool = *pool_;
  std::string same = SameKey('c', key.data(), key.size());
  using Lists = std::shared_ptr<const ContextTokens>;
  Lists found = pool.Find<ContextTokens>(NodeMaskPool::Kind::kSameContext, same);
  if (found) {
    std::unique_lock<std::shared_mutex> lock(context_mu_);
    return contexts_.emplace(std::move(key), std::move(found)).first->second.get();
  }
  std::string inner_id(reinterpret_cast<const char*>(&mask.inner->id), sizeof(mask.inner->id));
  auto context_walk = [&](NodeSet* reached, bool* keep) -> Lists {
    auto narrowed = std::make_shared<ContextTokens>();
    if (mask.has_uncertain) {
      const TokenList& all = mask.any_context.uncertain;
      ContextWalk walk(fsm_, tok_, node, follow, call_targets_, all.size() >= StateMemo::kMinTokens);
      WalkPositions(
          tok_, all.data(), all.size(), [&](size_t d, uint8_t byte) { return walk.Step(d, byte); },
          [&](size_t k) {
            bool assumed = walk.Assumed(tok_.sorted_text(all[k]).size());
            (assumed ? narrowed->uncertain : narrowed->certain).push_back(all[k]);
          });
      narrowed->certain.shrink_to_fit();
      narrowed->uncertain.shrink_to_fit();
      *keep = false;
    } else {
      *narrowed = ContextTokensOf(fsm_, tok_, node, follow, call_targets_, *mask.inner, reached);
    }
    return narrowed;
  };
  found = SharedByReach<ContextTokens>(fsm_, roots, &call_targets_, inner_id, pool, NodeMaskPool::Kind::kContext,
                                       context_walk, !compute);
  if (!found) return nullptr;  // not walked anywhere yet, and not to be walked now
  int64_t bytes = static_cast<int64_t>(PoolBytes(*found));
  found = pool.Insert(NodeMaskPool::Kind::kSameContext, same, std::move(found), bytes);
  std::unique_lock<std::shared_mutex> lock(context_mu_);
  auto inserted = contexts_.emplace(std::move(key), std::move(found));
  return inserted.first->second.get();  // another thread's, if it was first
}

void TokenMaskCache::FillBitmask(const EarleySet& set, uint32_t* words) const {
  if (!direct_cold_walks_) {
    FillFromCache(set, words, Missing::kCompute, false);
    return;
  }
  int scannable = 0;
  for (uint64_t w : set.next_bytes) scannable += PopCount64(w);
  // At a state that scans few first bytes (a key's name, the separator before the next
  // key), a node first met here is not looked up by reach key: its key holds the
  // schema's own names and nearly always misses (BFCL schemas: at 1,139 of 1,187 such
  // first fills), and the direct walk after the miss costs less than the probe. Value starts
  // (`"key": ` then 20+ bytes) are probed, where structures do recur across schemas.
  if (FillFromCache(set, words, scannable < kCheapLookupBytes ? Missing::kFindCheaply : Missing::kFind, false)) return;
  // Something is computed for the first time here. A state that scans few first bytes
  // (a value after `"key":`, a number, a tool name) takes its mask by a direct walk of
  // the vocabulary instead: a few thousand trie steps, where classifying its nodes and
  // walking their crossing tokens in this context costs several times that. Its nodes
  // are classified at their kVisitsBeforeClassifying-th such visit in this grammar, so
  // a node met once (most of a tool call's) never pays the classification, and one met
  // often pays it once. Dense states (string content, free text) classify at once.
  const size_t num_words = (static_cast<size_t>(tok_.vocab_size()) + 31) / 32;
  auto clear = [&] { std::memset(words, 0, num_words * sizeof(uint32_t)); };
  clear();  // not written yet, or partly
  if (scannable <= kSparseBytes && CountDirectVisit(set, false)) {
    if (WalkAcceptedTokens(fsm_, tok_, set, nullptr, 0, words, kDirectWalkSteps)) return;
    CountDirectVisit(set, true);  // over budget: these nodes classify at once from now on
    clear();
  }
  FillFromCache(set, words, Missing::kCompute, true);
}

bool TokenMaskCache::CountDirectVisit(const EarleySet& set, bool dense) const {
  thread_local std::vector<EarleyItem> kernel;
  KernelOf(set, &kernel);
  bool direct = true;
  for (const EarleyItem& it : kernel) {
    uint8_t seen = direct_visits_[it.node].load(std::memory_order_relaxed);
    if (seen + 1 >= kVisitsBeforeClassifying) direct = false;
    uint8_t now = dense ? uint8_t{255} : static_cast<uint8_t>(std::min(seen + 1, 255));
    direct_visits_[it.node].store(now, std::memory_order_relaxed);
  }
  return direct;
}

bool TokenMaskCache::FillFromCache(const EarleySet& set, uint32_t* words, Missing missing, bool zeroed) const {
  // Only kernel items matter: an item predicted in this set (origin == this set) is
  // part of the closure of the kernel item that predicted it, and a node's mask is
  // computed from its whole closure. In the initial set the kernel is the root's start.
  // Items differing only in origin share a node mask but not their context.
  //
  // Except an item whose node only calls rules that loop over a wide class at their
  // start (a JSON string value after its opening quote calls the string's content):
  // every token goes on from it through the callees' starts, predicted here, or (for a
  // nullable callee) from the node after the call, a kernel item itself. Those starts
  // stand for it: their classifications are the callees' own, the same in every
  // grammar, and what crosses their end is decided in this context (FindContext with
  // this set as origin, whose waiting items are the call's). The node's own
  // classification would walk the callee again for every call site, and share it with
  // no other. One level: a start is taken whatever it calls.
  thread_local std::vector<EarleyItem> kernel;
  thread_local std::vector<int32_t> uncertain, run, merged;
  const bool lookup_only = missing != Missing::kCompute;
  KernelOf(set, &kernel);
  // Everything cached first (a lookup-only fill stops at the first miss, before writing).
  thread_local std::vector<const NodeMask*> masks;
  thread_local std::vector<const ContextTokens*> contexts;
  masks.clear();
  contexts.clear();
  for (const EarleyItem& it : kernel) {
    masks.push_back(Lookup(it.node, missing, false));
    if (!masks.back()) return false;
  }
  for (size_t k = 0; k < kernel.size(); ++k) {
    contexts.push_back(FindContext(*masks[k], kernel[k].node, *kernel[k].origin, !lookup_only));
    if (!contexts.back()) return false;
  }
  size_t copied = masks.size();
  if (!zeroed) {
    const size_t num_words = (static_cast<size_t>(tok_.vocab_size()) + 31) / 32;
    for (size_t k = 0; k < masks.size() && copied == masks.size(); ++k) {
      if (!masks[k]->inner->accepted.words.empty()) copied = k;
    }
    size_t head = 0;
    if (copied < masks.size()) {
      const std::vector<uint32_t>& dense = masks[copied]->inner->accepted.words;
      head = std::min(dense.size(), num_words);
      std::memcpy(words, dense.data(), head * sizeof(uint32_t));
    }
    std::memset(words + head, 0, (num_words - head) * sizeof(uint32_t));
  }
  for (size_t k = 0; k < masks.size(); ++k) {
    if (k != copied) masks[k]->OrInto(words);
  }
  // The tokens each item's callers' context accepts for certain; only the uncertain ones
  // that nothing accepted need the full parser: filter each item's (sorted) list,
  // narrowed to its callers' context, before merging.
  const std::vector<int32_t>& sorted = tok_.sorted_ids();
  for (const ContextTokens* context : contexts) {
    for (int32_t pos : context->certain) words[sorted[pos] >> 5] |= uint32_t{1} << (sorted[pos] & 31);
  }
  uncertain.clear();
  for (const ContextTokens* context : contexts) {
    run.clear();
    for (int32_t pos : context->uncertain) {
      int32_t id = sorted[pos];
      if (!((words[id >> 5] >> (id & 31)) & 1)) run.push_back(pos);
    }
    // Each list is ascending and distinct: a union is one linear pass, where sorting the
    // concatenation of two long, nearly equal lists (the two `ws` before a C identifier:
    // ~78,000 positions each) took 40% of that state's first mask.
    if (run.empty()) continue;
    merged.resize(uncertain.size() + run.size());
    auto end = std::set_union(uncertain.begin(), uncertain.end(), run.begin(), run.end(), merged.begin());
    merged.erase(end, merged.end());
    uncertain.swap(merged);
  }
  if (uncertain.empty()) return true;
  // States with the same parse structure accept the same tokens (inside a string, every
  // character leads to such a state): reuse the walk's result. It holds the certain
  // tokens too: another grammar with these automata (compiled with precompute) may
  // take some of them as uncertain (a node's few tokens of every context), and must
  // find them in the result.
  thread_local std::string signature;
  bool memo = ParseSignature(set, kMaxSignatureItems, &signature);
  auto apply = [&](const std::vector<int32_t>& ids) {
    for (int32_t id : ids) words[id >> 5] |= uint32_t{1} << (id & 31);
  };
  if (memo) {
    std::shared_lock<std::shared_mutex> lock(context_mu_);
    auto it = walk_results_.find(signature);
    if (it != walk_results_.end()) {
      apply(*it->second);
      return true;
    }
  }
  // Then the pool's, for this grammar compiled before.
  std::string same = memo ? SameKey('w', signature.data(), signature.size()) : "";
  std::shared_ptr<const TokenList> ids =
      memo ? pool_->Find<TokenList>(NodeMaskPool::Kind::kSameList, same) : nullptr;
  if (ids) {
    apply(*ids);
  } else {
    // A few uncertain tokens are walked even by a lookup-only fill: cheaper than the
    // direct walk of every token it would fall back to (a state whose nodes and contexts
    // are all known, met along a new path: deeper nesting, another member).
    if (lookup_only && uncertain.size() > kLookupOnlyWalk) return false;
    WalkAcceptedTokens(fsm_, tok_, set, uncertain.data(), uncertain.size(), words);
    if (!memo) return true;
    auto accepted = std::make_shared<std::vector<int32_t>>();
    for (int32_t pos : uncertain) {
      int32_t id = sorted[pos];
      if ((words[id >> 5] >> (id & 31)) & 1) accepted->push_back(id);
    }
    for (const ContextTokens* context : contexts) {
      for (int32_t pos : context->certain) accepted->push_back(sorted[pos]);
    }
    int64_t bytes = static_cast<int64_t>(PoolBytes(*accepted));
    ids = pool_->Insert<TokenList>(NodeMaskPool::Kind::kSameList, same, std::move(accepted), bytes);
  }
  std::unique_lock<std::shared_mutex> lock(context_mu_);
  if (walk_results_.size() >= kMaxWalkResults) walk_results_.clear();  // bounded; start over
  walk_results_.emplace(signature, std::move(ids));
  return true;
}

void TokenMaskCache::KernelOf(const EarleySet& set, std::vector<EarleyItem>* kernel) const {
  thread_local std::vector<int32_t> promoted;
  kernel->clear();
  promoted.clear();
  int32_t root_start = fsm_.rule_start[fsm_.root];
  for (const EarleyItem& it : set.items) {
    bool initial_root = set.initial && it.node == root_start;
    if (it.origin == &set && !initial_root) continue;  // predicted here
    if (it.origin != &set && CallsOnlyWideLoops(it.node)) {
      for (int32_t e = fsm_.rule_edge_begin[it.node]; e < fsm_.edge_begin[it.node + 1]; ++e) {
        promoted.push_back(fsm_.edges[e].rule);
      }
    } else {
      kernel->push_back(it);
    }
  }
  if (promoted.empty()) return;
  for (const EarleyItem& it : set.items) {
    int32_t rule = fsm_.node_rule[it.node];
    if (it.origin == &set && it.node == fsm_.rule_start[rule] &&
        std::find(promoted.begin(), promoted.end(), rule) != promoted.end()) {
      kernel->push_back(it);
    }
  }
}

bool TokenMaskCache::CallsOnlyWideLoops(int32_t node) const {
  const int32_t calls = fsm_.rule_edge_begin[node], end = fsm_.edge_begin[node + 1];
  if (fsm_.edge_begin[node] != calls || calls == end) return false;  // byte edges, or no call
  for (int32_t e = calls; e < end; ++e) {
    if (!wide_loop_[fsm_.edges[e].rule]) return false;
  }
  return true;
}

std::string TokenMaskCache::SameKey(char tag, const void* what, size_t size) const {
  std::string key(reinterpret_cast<const char*>(&grammar_id_), sizeof(grammar_id_));
  key.push_back(tag);
  key.append(static_cast<const char*>(what), size);
  return key;
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
  for (const auto& [key, lists] : contexts_) {
    bytes += static_cast<int64_t>(key.size() + 4 * (lists->certain.capacity() + lists->uncertain.capacity()) + 64);
  }
  for (const auto& [key, ids] : walk_results_) {
    bytes += static_cast<int64_t>(key.size() + 4 * ids->capacity() + 64);
  }
  return bytes;
}

}  // namespace xgr2

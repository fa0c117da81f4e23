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
      grammar_id_(pool_->GrammarId(fsm, &grammar_known_)),
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
  // A node's classification looks no further than its rule and the rules it calls:
  // any grammar whose rule has the same structure id has it, at the same offset. One
  // lookup of a short key, where the structural one (Classify) makes and matches keys
  // of the automata the walk reached. That entry also serves this grammar compiled
  // again, so only a node without a structure id is kept under the grammar's own id
  // (a copy per node of every new grammar: 50 tool-calling requests left 860 pool
  // entries with them, 524 without).
  const int32_t rule = fsm_.node_rule[node];
  const int64_t structure = fsm_.rule_structure[rule];
  std::string key;
  NodeMaskPool::Kind kind;
  if (structure >= 0) {
    const int32_t offset = node - fsm_.rule_start[rule];
    key.append(reinterpret_cast<const char*>(&structure), sizeof(structure));
    key.append(reinterpret_cast<const char*>(&offset), sizeof(offset));
    kind = NodeMaskPool::Kind::kStructInner;
  } else {
    key = SameKey('n', &node, sizeof(node));
    kind = NodeMaskPool::Kind::kSameInner;
  }
  std::shared_ptr<const InnerMask> inner =
      structure >= 0 || grammar_known_ ? pool.Find<InnerMask>(kind, key) : nullptr;
  if (!inner) {
    if (missing == Missing::kFindCheaply && direct_visits_[node].load(std::memory_order_relaxed) == 0) return nullptr;
    inner = Classify(node, compute);
    if (!inner) return nullptr;  // not computed anywhere yet, and not to be computed now
    int64_t bytes = static_cast<int64_t>(PoolBytes(*inner));
    inner = pool.Insert(kind, key, std::move(inner), bytes);
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
  // A node most of whose first bytes step like a sibling's (free text after a partial
  // tag) takes those tokens from the sibling's mask, when this grammar has it, and
  // walks only the rest. Not stored by structure (the walk did not see the sibling's),
  // nor looked up: its walk reaches what follows the tag (a request's tool names after
  // "<function="), which later grammars rarely share, and the lookup's keys cost a
  // fifth of the mask. Except where no token gets through the rest of the tag
  // (TokensStopInsideTag): its own walk is stored by structure, and found by every
  // later grammar with that tag (the "<" of "<function=" in each request of the
  // dynamic tool-calling benchmark: 29-45 us every time, 8 us after a first 70).
  SameSteps steps = SiblingSteps(fsm_, tok_, node);
  const NodeMask* theirs = steps.node >= 0 ? masks_[steps.node].load(std::memory_order_acquire) : nullptr;
  if (theirs && !TokensStopInsideTag(fsm_, tok_, node, steps)) {
    if (!compute) return nullptr;
    return ClassifyInner(fsm_, tok_, node, pool_.get(), nullptr, theirs->inner.get(), &steps);
  }
  auto classify = [&](NodeSet* reached, bool*) -> std::shared_ptr<InnerMask> {
    return ClassifyInner(fsm_, tok_, node, pool_.get(), reached);
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
  Lists found = grammar_known_ ? pool.Find<ContextTokens>(NodeMaskPool::Kind::kSameContext, same) : nullptr;
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
  // So is a state whose items all stand at literals (the tool names after `<function=`,
  // 14-20 first letters): its direct walk (LiteralWalk) costs about what the probe does.
  const bool cheap = scannable < kCheapLookupBytes || ScansOnlyLiterals(fsm_, set);
  if (FillFromCache(set, words, cheap ? Missing::kFindCheaply : Missing::kFind, false)) return;
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
  // A node's classification and contexts are made with a free count (kFreeCount), which
  // an item of a counted rule matches unless it is near a bound: short of the minimum
  // (a token may end the rule too early) or with fewer repetitions left than a token has
  // bytes (a long token may repeat too often). Such an item's crossing tokens, and the
  // tokens longer than its repetitions left, are left to the full parser.
  struct Near {
    bool near = false;
    int64_t left = 0;   // repetitions it may still begin
    int64_t short_ = 0;  // repetitions it must still complete before its rule may end
  };
  thread_local std::vector<Near> near;
  near.assign(kernel.size(), Near{});
  int64_t long_over = INT64_MAX;  // accepted tokens of more bytes than this are decided again
  for (size_t k = 0; k < kernel.size() && fsm_.any_counted; ++k) {
    const EarleyItem& it = kernel[k];
    if (it.count < 0 || !fsm_.IsCounted(it.node)) continue;
    const int32_t rule = fsm_.node_rule[it.node];
    const int64_t left = int64_t{fsm_.rule_count_max[rule]} - it.count;
    const int64_t short_ = std::max<int64_t>(0, fsm_.rule_count_min[rule] - it.count);
    if (short_ == 0 && left >= tok_.max_token_bytes()) continue;
    near[k] = {true, left, short_};
    if (left < tok_.max_token_bytes()) long_over = std::min(long_over, left);
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
  const std::vector<int32_t>& sorted = tok_.sorted_ids();
  uncertain.clear();
  if (long_over != INT64_MAX) {
    // Tokens that only items near their maximum accept may begin too many repetitions.
    // With one such item, they are decided by the repetitions each begins in its rule
    // (RepetitionsFrom); with several, by the full parser.
    const size_t num_words = (static_cast<size_t>(tok_.vocab_size()) + 31) / 32;
    thread_local std::vector<uint32_t> others;  // what the other items accept
    others.assign(num_words, 0);
    int32_t only_near = -1, num_near = 0;
    for (size_t k = 0; k < kernel.size(); ++k) {
      if (!near[k].near) {
        masks[k]->OrInto(others.data());
      } else if (near[k].left < tok_.max_token_bytes()) {
        only_near = static_cast<int32_t>(k), ++num_near;
      }
    }
    if (num_near == 1) {
      DecideLongTokens(kernel[only_near], near[only_near].left, others.data(), words, &uncertain);
    } else {
      const int32_t num_text = static_cast<int32_t>(sorted.size());
      for (int32_t pos = 0; pos < num_text; ++pos) {
        if (static_cast<int64_t>(tok_.sorted_text(pos).size()) <= long_over) continue;
        const int32_t id = sorted[pos];
        const uint32_t bit = uint32_t{1} << (id & 31);
        if (!(words[id >> 5] & bit) || (others[id >> 5] & bit)) continue;
        words[id >> 5] &= ~bit;
        uncertain.push_back(pos);  // ascending
      }
    }
  }
  // The tokens each item's callers' context accepts for certain; only the uncertain ones
  // that nothing accepted need the full parser: filter each item's (sorted) list,
  // narrowed to its callers' context, before merging. For an item near its bounds, a
  // token too short to complete its minimum cannot end the rule; a certain one stays
  // certain when the minimum is met and it is no longer than the repetitions left (its
  // part in the rule fits); the others need the full parser.
  auto set_bit = [&](int32_t pos) { words[sorted[pos] >> 5] |= uint32_t{1} << (sorted[pos] & 31); };
  auto is_set = [&](int32_t pos) { return (words[sorted[pos] >> 5] >> (sorted[pos] & 31)) & 1; };
  for (size_t k = 0; k < contexts.size(); ++k) {
    const Near& n = near[k];
    for (int32_t pos : contexts[k]->certain) {
      const int64_t len = static_cast<int64_t>(tok_.sorted_text(pos).size());
      if (!n.near || (n.short_ == 0 && len <= n.left)) set_bit(pos);
    }
  }
  for (size_t k = 0; k < contexts.size(); ++k) {
    const ContextTokens* context = contexts[k];
    const Near& n = near[k];
    auto undecided = [&](int32_t pos) {
      if (is_set(pos)) return false;
      return !n.near || static_cast<int64_t>(tok_.sorted_text(pos).size()) >= n.short_;
    };
    run.clear();
    if (!n.near) {
      for (int32_t pos : context->uncertain) {
        if (undecided(pos)) run.push_back(pos);
      }
    } else {  // both lists, merged in order
      const TokenList &a = context->uncertain, &b = context->certain;
      for (size_t i = 0, j = 0; i < a.size() || j < b.size();) {
        int32_t pos = j == b.size() || (i < a.size() && a[i] < b[j]) ? a[i++] : b[j++];
        if (undecided(pos)) run.push_back(pos);
      }
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
      memo && grammar_known_ ? pool_->Find<TokenList>(NodeMaskPool::Kind::kSameList, same) : nullptr;
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
    for (size_t k = 0; k < contexts.size(); ++k) {
      for (int32_t pos : contexts[k]->certain) {
        if (is_set(pos)) accepted->push_back(sorted[pos]);  // (near its bounds: maybe not)
      }
    }
    int64_t bytes = static_cast<int64_t>(PoolBytes(*accepted));
    ids = pool_->Insert<TokenList>(NodeMaskPool::Kind::kSameList, same, std::move(accepted), bytes);
  }
  std::unique_lock<std::shared_mutex> lock(context_mu_);
  if (walk_results_.size() >= kMaxWalkResults) walk_results_.clear();  // bounded; start over
  walk_results_.emplace(signature, std::move(ids));
  return true;
}

std::shared_ptr<const TokenList> TokenMaskCache::RepetitionsFrom(int32_t node) const {
  {
    std::shared_lock<std::shared_mutex> lock(context_mu_);
    auto it = repetitions_.find(node);
    if (it != repetitions_.end()) return it->second;
  }
  // The same in every grammar with this rule's automaton, whatever its bounds.
  const int32_t rule = fsm_.node_rule[node], offset = node - fsm_.rule_start[rule];
  std::string key(reinterpret_cast<const char*>(&fsm_.rule_loop_id[rule]), sizeof(int64_t));
  key.append(reinterpret_cast<const char*>(&offset), sizeof(offset));
  std::shared_ptr<const TokenList> found = pool_->Find<TokenList>(NodeMaskPool::Kind::kRepeats, key);
  if (!found) {
    // Every text token walked by the rule's automaton alone (a step table per node of the
    // rule, the trie in preorder), counting the repetitions it begins (leaving the rule's
    // start): pairs (count, position), most first.
    const int32_t start = fsm_.rule_start[rule];
    const int32_t size = (rule + 1 < static_cast<int32_t>(fsm_.rule_start.size()) ? fsm_.rule_start[rule + 1]
                                                                                : fsm_.NumNodes()) - start;
    std::vector<int32_t> step(static_cast<size_t>(size) * 256);
    for (int32_t n = 0; n < size; ++n) {
      for (int b = 0; b < 256; ++b) {
        const int32_t to = fsm_.ByteTarget(start + n, static_cast<uint8_t>(b));
        step[static_cast<size_t>(n) * 256 + b] = to < 0 ? -1 : to - start;
      }
    }
    const TokenTrie& trie = tok_.trie();
    std::vector<std::pair<int32_t, int32_t>> at(static_cast<size_t>(tok_.max_token_bytes()) + 1);  // (node, begun)
    at[0] = {node - start, 0};
    std::vector<std::vector<int32_t>> by_count(static_cast<size_t>(tok_.max_token_bytes()) + 1);
    for (int32_t i = 0; i < trie.size();) {
      const TokenTrie::Node& t = trie.nodes[i];
      const auto [from, begun] = at[t.depth - 1];
      const int32_t to = step[static_cast<size_t>(from) * 256 + t.byte];
      if (to < 0) {
        i = t.next;  // the subtree dies
        continue;
      }
      const int32_t now = begun + (from == 0);  // leaving the start begins one
      at[t.depth] = {to, now};
      if (now >= 1) {
        for (int32_t k = 0; k < trie.num_tokens[i]; ++k) by_count[now].push_back(trie.first_pos[i] + k);
      }
      ++i;
    }
    auto list = std::make_shared<TokenList>();
    for (size_t c = by_count.size(); c-- > 1;) {
      for (int32_t pos : by_count[c]) list->push_back(static_cast<int32_t>(c)), list->push_back(pos);
    }
    list->shrink_to_fit();
    int64_t bytes = static_cast<int64_t>(PoolBytes(*list));
    found = pool_->Insert<TokenList>(NodeMaskPool::Kind::kRepeats, key, std::move(list), bytes);
  }
  std::unique_lock<std::shared_mutex> lock(context_mu_);
  return repetitions_.emplace(node, std::move(found)).first->second;
}

void TokenMaskCache::DecideLongTokens(const EarleyItem& item, int64_t left, const uint32_t* others, uint32_t* words,
                                      std::vector<int32_t>* undecided) const {
  // A token that stays in the rule begins the same repetitions as its free-count walk
  // (the one its node's classification took): accepted with the item's count while they
  // fit in `left`. Those that begin more die in the rule, unless the rule ends on the
  // way and the callers go on: only with a byte that may follow the rule (a JSON
  // string's closing quote) somewhere in the token. Those go to the full parser.
  ByteSet follow{};
  for (int32_t t : call_targets_[fsm_.node_rule[item.node]]) {
    if (fsm_.node_final[t] || fsm_.rule_edge_begin[t] != fsm_.edge_begin[t + 1]) {
      follow.fill(~uint64_t{0});  // anything may follow
      break;
    }
    for (int w = 0; w < 4; ++w) follow[w] |= fsm_.first_bytes[t][w];
  }
  // The tokens below live through the rule: a follow byte in one is a byte of the rule.
  const int32_t rule = fsm_.node_rule[item.node];
  const int32_t end = rule + 1 < static_cast<int32_t>(fsm_.rule_start.size()) ? fsm_.rule_start[rule + 1] : fsm_.NumNodes();
  ByteSet in_rule{};
  for (int32_t n = fsm_.rule_start[rule]; n < end; ++n) {
    for (int w = 0; w < 4; ++w) in_rule[w] |= fsm_.first_bytes[n][w];
  }
  bool may_follow = false;
  for (int w = 0; w < 4; ++w) may_follow |= (follow[w] &= in_rule[w]) != 0;
  const std::vector<int32_t>& sorted = tok_.sorted_ids();
  const size_t first = undecided->size();
  // From the start, the j-th repetition begins with j - 1 more completed; elsewhere the
  // one under way completes first.
  const int64_t may_begin = fsm_.node_counts[item.node] ? left : left - 1;
  const TokenList& begun = *RepetitionsFrom(item.node);
  for (size_t k = 0; k < begun.size(); k += 2) {
    if (begun[k] <= may_begin) break;  // most first
    const int32_t pos = begun[k + 1], id = sorted[pos];
    const uint32_t bit = uint32_t{1} << (id & 31);
    if (!(words[id >> 5] & bit) || (others[id >> 5] & bit)) continue;
    words[id >> 5] &= ~bit;
    if (!may_follow) continue;
    for (char c : tok_.sorted_text(pos)) {
      if (ByteSetHas(follow, static_cast<uint8_t>(c))) {
        undecided->push_back(pos);
        break;
      }
    }
  }
  std::sort(undecided->begin() + static_cast<std::ptrdiff_t>(first), undecided->end());
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

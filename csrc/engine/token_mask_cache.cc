#include "engine/token_mask_cache.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "engine/token_walk.h"
#include "support/thread_pool.h"
#include "grammar/fsm.h"

namespace xgr2 {

void NodeMask::OrInto(uint32_t* words) const {
  if (!accepted_words.empty()) {
    for (size_t w = 0; w < accepted_words.size(); ++w) words[w] |= accepted_words[w];
  } else {
    for (int32_t id : accepted_ids) words[id >> 5] |= uint32_t{1} << (id & 31);
  }
}

bool NodeMask::Accepts(int32_t id) const {
  if (!accepted_words.empty()) return (accepted_words[id >> 5] >> (id & 31)) & 1;
  return std::binary_search(accepted_ids.begin(), accepted_ids.end(), id);
}

size_t NodeMask::MemoryBytes() const {
  return sizeof(NodeMask) + 4 * (accepted_ids.capacity() + accepted_words.capacity() + uncertain.capacity());
}

namespace {

// Scratch sets for the classification walk, one per depth, reused on a thread.
std::vector<EarleySet*>& ClassifySets(size_t count) {
  thread_local std::vector<std::unique_ptr<EarleySet>> owned;
  thread_local std::vector<EarleySet*> sets;
  while (owned.size() < count) {
    owned.push_back(std::make_unique<EarleySet>());
    sets.push_back(owned.back().get());
  }
  return sets;
}

}  // namespace

NodeMask ComputeNodeMask(const GrammarFsm& fsm, const TokenizerInfo& tok, int32_t node,
                         const std::vector<std::vector<int32_t>>& call_targets) {
  const std::vector<int32_t>& calls = call_targets[fsm.node_rule[node]];
  const std::vector<int32_t>& sorted = tok.sorted_ids();
  size_t n = sorted.size();
  size_t max_depth = static_cast<size_t>(tok.max_token_bytes()) + 1;
  auto& sets = ClassifySets(3 * max_depth);
  EarleySet* const* inner_sets = &sets[0];
  EarleySet* const* outer_sets = &sets[max_depth];
  EarleySet* const* merged_sets = &sets[2 * max_depth];
  // Two parses run side by side over each token's bytes:
  //  inner: the item (node, parent) where `parent` stands for the unknown callers;
  //  outer: what may follow wherever the rule ended inside the token, in any context
  //         (items with origin `generic`, see EarleyParser::SetGeneric).
  // accepted = inner survives the token; uncertain = only outer does; rejected = neither.
  EarleySet parent, generic;
  parent.parent = &parent;  // non-null: not the initial set
  generic.parent = &generic;
  EarleyParser parser(fsm, ThreadScratch());
  bool ended = false;
  parser.Watch(&parent, &ended);
  parser.SetGeneric(&generic, &call_targets);
  std::vector<const EarleySet*> inner(max_depth), outer(max_depth);
  // The outer parse at depth d, joined by a fresh context when the rule ended there.
  auto join_context = [&](const EarleySet* base, size_t d) -> const EarleySet* {
    if (calls.empty()) return base;  // the root: nothing can follow it
    EarleySet* out = merged_sets[d];
    out->parent = &generic;
    parser.Extend(base, calls, &generic, out);
    return out;
  };
  parser.Seed(node, &parent, inner_sets[0]);
  inner_sets[0]->parent = &parent;
  inner[0] = inner_sets[0];
  outer[0] = ended ? join_context(nullptr, 0) : nullptr;

  std::vector<int32_t> accepted;
  NodeMask mask;
  const std::string* prev = nullptr;
  size_t depth = 0;
  for (size_t k = 0; k < n;) {
    const std::string& s = tok.decoded(sorted[k]);
    depth = SharedDepth(prev, s, depth);
    prev = &s;
    bool alive = true;
    while (depth < s.size()) {
      uint8_t b = static_cast<uint8_t>(s[depth]);
      const EarleySet* in = nullptr;
      const EarleySet* out = nullptr;
      ended = false;
      if (inner[depth]) {
        EarleySet* next = inner_sets[depth + 1];
        next->parent = inner[depth];
        if (parser.Advance(*inner[depth], b, next)) in = next;
      }
      bool ended_here = ended;
      if (outer[depth]) {
        EarleySet* next = outer_sets[depth + 1];
        next->parent = outer[depth];
        if (parser.Advance(*outer[depth], b, next)) out = next;
      }
      if (ended_here) out = join_context(out, depth + 1);
      if (!in && !out) {
        alive = false;
        break;
      }
      ++depth;
      inner[depth] = in;
      outer[depth] = out;
    }
    if (alive) {
      if (inner[depth]) {
        accepted.push_back(sorted[k]);
      } else {
        mask.uncertain.push_back(static_cast<int32_t>(k));
      }
      ++k;
      continue;
    }
    // Every token extending s[0..depth] fails at the same byte: skip them.
    size_t plen = depth + 1;
    ++k;
    while (k < n) {
      const std::string& t = tok.decoded(sorted[k]);
      if (t.size() < plen || std::memcmp(t.data(), s.data(), plen) != 0) break;
      ++k;
    }
  }
  mask.num_accepted = static_cast<int64_t>(accepted.size());
  size_t num_words = (static_cast<size_t>(tok.vocab_size()) + 31) / 32;
  if (accepted.size() > num_words) {  // a bitset is smaller than the id list
    mask.accepted_words.assign(num_words, 0);
    for (int32_t id : accepted) mask.accepted_words[id >> 5] |= uint32_t{1} << (id & 31);
  } else {
    std::sort(accepted.begin(), accepted.end());
    mask.accepted_ids = std::move(accepted);
  }
  mask.uncertain.shrink_to_fit();
  return mask;
}

TokenMaskCache::TokenMaskCache(const GrammarFsm& fsm, const TokenizerInfo& tok)
    : fsm_(fsm), tok_(tok), masks_(new std::atomic<const NodeMask*>[fsm.NumNodes()]) {
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

const NodeMask& TokenMaskCache::Get(int32_t node) const {
  const NodeMask* m = masks_[node].load(std::memory_order_acquire);
  if (m) return *m;
  auto* fresh = new NodeMask(ComputeNodeMask(fsm_, tok_, node, call_targets_));
  const NodeMask* expected = nullptr;
  if (!masks_[node].compare_exchange_strong(expected, fresh, std::memory_order_acq_rel)) {
    delete fresh;  // another thread finished first
    return *expected;
  }
  return *fresh;
}

void TokenMaskCache::PrecomputeAll(int num_threads) const {
  std::vector<int32_t> nodes;
  for (int32_t i = 0; i < fsm_.NumNodes(); ++i) {
    if (fsm_.HasEdges(i) && !masks_[i].load(std::memory_order_acquire)) nodes.push_back(i);
  }
  ParallelFor(static_cast<int64_t>(nodes.size()), num_threads, [&](int64_t k) { Get(nodes[k]); });
}

void TokenMaskCache::FillBitmask(const EarleySet& set, uint32_t* words) const {
  // Only kernel items matter: an item predicted in this set (origin == this set) is
  // part of the closure of the kernel item that predicted it, and a node's mask is
  // computed from its whole closure. In the initial set the kernel is the root's start.
  // Items differing only in origin share a node mask.
  thread_local std::vector<int32_t> nodes;
  thread_local std::vector<int32_t> uncertain;
  nodes.clear();
  int32_t root_start = fsm_.rule_start[fsm_.root];
  for (const EarleyItem& it : set.items) {
    bool kernel = it.origin != &set || (set.parent == nullptr && it.node == root_start);
    if (kernel) nodes.push_back(it.node);
  }
  std::sort(nodes.begin(), nodes.end());
  nodes.erase(std::unique(nodes.begin(), nodes.end()), nodes.end());
  for (int32_t node : nodes) Get(node).OrInto(words);
  // Only uncertain tokens that no node accepted need the full parser; filter each
  // node's (sorted) list before merging, since the survivors are few.
  const std::vector<int32_t>& sorted = tok_.sorted_ids();
  uncertain.clear();
  for (int32_t node : nodes) {
    for (int32_t pos : Get(node).uncertain) {
      int32_t id = sorted[pos];
      if (!((words[id >> 5] >> (id & 31)) & 1)) uncertain.push_back(pos);
    }
  }
  if (uncertain.empty()) return;
  if (nodes.size() > 1) {
    std::sort(uncertain.begin(), uncertain.end());
    uncertain.erase(std::unique(uncertain.begin(), uncertain.end()), uncertain.end());
  }
  WalkAcceptedTokens(fsm_, tok_, set, uncertain.data(), uncertain.size(), words);
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
  return bytes;
}

}  // namespace xgr2

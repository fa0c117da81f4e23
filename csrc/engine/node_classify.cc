#include "engine/node_classify.h"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <string>

#include "engine/looping_slice.h"
#include "engine/state_memo.h"
#include "engine/token_walk.h"
#include "support/bit_words.h"

namespace xgr2 {

AcceptedSet AcceptedSet::FromIds(std::vector<int32_t> ids, int32_t vocab_size) {
  AcceptedSet set;
  set.count = static_cast<int64_t>(ids.size());
  size_t num_words = (static_cast<size_t>(vocab_size) + 31) / 32;
  if (ids.size() <= num_words) {  // no larger than the bitset; OrInto needs no order
    ids.shrink_to_fit();
    set.ids = std::move(ids);
    return set;
  }
  set.words.assign(num_words, 0);
  for (int32_t id : ids) set.words[id >> 5] |= uint32_t{1} << (id & 31);
  return set;
}

void AcceptedSet::OrInto(uint32_t* out) const {
  if (!words.empty()) {
    OrWords(out, words.data(), words.size());
  } else {
    for (int32_t id : ids) out[id >> 5] |= uint32_t{1} << (id & 31);
  }
}

bool InnerMask::MayGroup(size_t min_crossing) const {
  return crossing.size() >= min_crossing &&
         crossing_tokens <= static_cast<int64_t>(kMaxTokensPerGrouped * crossing.size());
}

const CrossingGroups* InnerMask::GroupsForWalk(const GrammarFsm& fsm, const TokenizerInfo& tok,
                                               int32_t node) const {
  int32_t state = groups_state_.load(std::memory_order_acquire);
  if (state == kGroupsReady) return groups_.get();  // may be null: nothing worth merging
  if (!MayGroup() || context_walks_.fetch_add(1, std::memory_order_relaxed) < kWalksBeforeGrouping) return nullptr;
  if (state == kGroupsNone && groups_state_.compare_exchange_strong(state, kGroupsBuilding, std::memory_order_acq_rel)) {
    groups_ = GroupCrossing(fsm, tok, node, crossing, crossing_shared);
    groups_state_.store(kGroupsReady, std::memory_order_release);
    return groups_.get();
  }
  return nullptr;  // another thread is building them: walk as before rather than wait
}

void InnerMask::BuildGroupsNow(const GrammarFsm& fsm, const TokenizerInfo& tok, int32_t node,
                               size_t min_crossing) const {
  if (!MayGroup(min_crossing)) return;
  int32_t state = kGroupsNone;
  if (groups_state_.compare_exchange_strong(state, kGroupsBuilding, std::memory_order_acq_rel)) {
    groups_ = GroupCrossing(fsm, tok, node, crossing, crossing_shared, min_crossing);
    groups_state_.store(kGroupsReady, std::memory_order_release);
  }
}

EarleySet* const* ClassifySets(size_t count) {
  thread_local ScratchSets sets;
  return sets.Get(count);
}

ContextWalk::ContextWalk(const GrammarFsm& fsm, const TokenizerInfo& tok, int32_t node,
                         const std::vector<int32_t>& follow, const std::vector<std::vector<int32_t>>& call_targets,
                         bool memo, NodeSet* reached)
    : parser_(fsm, ThreadScratch()), calls_(follow), memo_allowed_(memo) {
  parser_.TrackReach(reached);
  size_t max_depth = static_cast<size_t>(tok.max_token_bytes()) + 1;
  EarleySet* const* sets = ClassifySets(3 * max_depth);
  inner_sets_ = &sets[0];
  outer_sets_ = &sets[max_depth];
  merged_sets_ = &sets[2 * max_depth];
  inner_.assign(max_depth, nullptr);
  outer_.assign(max_depth, nullptr);
  pair_id_.assign(max_depth, -1);
  assumed_.assign(max_depth, 0);
  parser_.Watch(&parent_, &ended_);
  parser_.SetGeneric(&generic_, &call_targets);
  parser_.WatchGeneric(&generic_hit_);
  ended_ = false;
  parser_.Seed(node, &parent_, inner_sets_[0]);
  inner_[0] = inner_sets_[0];
  // No context at depth 0: where the rule ends before any byte, the callers' items go on
  // in the state itself and classify those tokens (see ClassifyInner).
  outer_[0] = nullptr;
}

void ContextWalk::StartMemo() {
  // The sets at depth 0 point to nothing of the walk's but themselves; deeper ones are
  // interned as the walk comes back up to the pairs that are.
  memo_started_ = true;
  pair_id_[0] = InternPair(inner_[0], outer_[0], nullptr);
  if (pair_id_[0] >= 0) inner_[0] = pairs_[pair_id_[0]]->inner, outer_[0] = pairs_[pair_id_[0]]->outer;
}

bool ContextWalk::JoinIgnores(const ByteSet& bytes) {
  if (calls_.empty()) return true;  // nothing follows the root
  EarleySet* joined = merged_sets_[0];  // free: joins at depth d use merged_sets_[d], d >= 1
  parser_.Extend(nullptr, calls_, &generic_, joined);
  generic_hit_ = false;
  bool ignores = true;
  for (int b = 0; b < 256; ++b) {
    if (!ByteSetHas(bytes, static_cast<uint8_t>(b))) continue;
    parser_.AskItems(*joined, static_cast<uint8_t>(b));
    ignores = ignores && !joined->CanScan(static_cast<uint8_t>(b));
  }
  return ignores;
}

const EarleySet* ContextWalk::JoinContext(const EarleySet* base, size_t d) {
  if (calls_.empty()) return base;  // the root: nothing can follow it
  EarleySet* out = merged_sets_[d];
  parser_.Extend(base, calls_, &generic_, out);
  return out;
}

int32_t ContextWalk::InternPair(const EarleySet* in, const EarleySet* out, const EarleySet* joined_base) {
  constexpr int32_t kAbsent = -3;
  int32_t i = in ? inner_memo_.Intern(*in) : kAbsent;
  if (i == -1) return -1;
  int32_t o = kAbsent;
  if (out) {
    // A joined set's items may point to the set it extended: intern that first.
    int32_t base = joined_base ? outer_memo_.Intern(*joined_base) : kAbsent;
    if (base == -1) return -1;
    o = base >= 0 ? outer_memo_.Intern(*out, {{joined_base, &outer_memo_.Set(base)}}) : outer_memo_.Intern(*out);
    if (o == -1) return -1;
  }
  uint64_t key = (static_cast<uint64_t>(static_cast<uint32_t>(i)) << 32) | static_cast<uint32_t>(o);
  auto [it, fresh] = pair_by_ids_.emplace(key, static_cast<int32_t>(pairs_.size()));
  if (!fresh) return it->second;
  if (pairs_.size() >= StateMemo::kMaxStates) {
    pair_by_ids_.erase(it);
    return -1;
  }
  constexpr size_t kBlock = 16;  // pairs are allocated in blocks, like StateMemo's states
  if (pairs_.size() % kBlock == 0) pair_blocks_.push_back(std::unique_ptr<Pair[]>(new Pair[kBlock]));
  Pair* pair = &pair_blocks_.back()[pairs_.size() % kBlock];
  pair->inner = in ? &inner_memo_.Set(i) : nullptr;
  pair->outer = out ? &outer_memo_.Set(o) : nullptr;
  pair->next.fill(StateMemo::kUnknown);
  pairs_.push_back(pair);
  return it->second;
}

bool ContextWalk::LoopsOn(size_t d, uint64_t classes) {
  const int32_t j = pair_id_[d];
  if (j < 0) return false;
  Pair& pair = *pairs_[j];
  // A step going on in an assumed context changes Assumed() below: not a loop, unless
  // the path is assumed already (it stays so).
  const ByteBits disqualified = assumed_[d] ? ByteBits{} : pair.assumed;
  return StepsBackOn(pair.next, j, classes, disqualified, pair.loop_classes, pair.other_classes, [&](uint8_t byte) {
    if (inner_[d]) parser_.AskItems(*inner_[d], byte);  // relied on, as a step records
    if (outer_[d]) parser_.AskItems(*outer_[d], byte);
  });
}

bool ContextWalk::StepParsing(size_t d, uint8_t byte) {
  if (memo_allowed_ && !memo_started_) StartMemo();
  if (pair_id_[d] >= 0 && StateMemo::IsUnasked(pairs_[pair_id_[d]]->next[byte])) {  // filled in from a run
    if (inner_[d]) parser_.AskItems(*inner_[d], byte);
    if (outer_[d]) parser_.AskItems(*outer_[d], byte);
    Pair& from = *pairs_[pair_id_[d]];
    int32_t to = StateMemo::Unasked(from.next[byte]);
    from.next[byte] = static_cast<int16_t>(to);
    inner_[d + 1] = pairs_[to]->inner;
    outer_[d + 1] = pairs_[to]->outer;
    pair_id_[d + 1] = to;
    assumed_[d + 1] = assumed_[d] || ((from.assumed[byte >> 6] >> (byte & 63)) & 1);
    return true;
  }
  const EarleySet* in = nullptr;
  const EarleySet* out = nullptr;
  const EarleySet* advanced = nullptr;  // the outer parse's own step, before a join
  ended_ = false;
  generic_hit_ = false;
  if (inner_[d]) {
    EarleySet* next = inner_sets_[d + 1];
    if (parser_.Advance(*inner_[d], byte, next)) in = next;
  }
  bool ended_here = ended_;
  if (outer_[d]) {
    EarleySet* next = outer_sets_[d + 1];
    if (parser_.Advance(*outer_[d], byte, next)) out = advanced = next;
  }
  if (ended_here) out = JoinContext(out, d + 1);
  int32_t j = pair_id_[d];
  if (!in && !out) {
    if (j >= 0) pairs_[j]->next[byte] = StateMemo::kDead;
    return false;
  }
  // The inner parse never has generic items: a hit is the outer parse's (its own step
  // or the join's closure).
  assumed_[d + 1] = assumed_[d] || generic_hit_;
  int32_t to = j >= 0 ? InternPair(in, out, out != advanced ? advanced : nullptr) : -1;
  if (to >= 0) {
    Pair& from = *pairs_[j];
    if (generic_hit_) from.assumed[byte >> 6] |= uint64_t{1} << (byte & 63);
    from.next[byte] = static_cast<int16_t>(to);
    if (to == j) from.self_step = true;
    // The other bytes that step both parses alike go where this one went.
    ByteSet alike{~uint64_t{0}, ~uint64_t{0}, ~uint64_t{0}, ~uint64_t{0}};
    for (const EarleySet* s : {inner_[d], outer_[d]}) {
      if (!s) continue;
      ByteSet own = SameStepBytes(parser_.fsm(), *s, byte);
      for (int w = 0; w < 4; ++w) alike[w] &= own[w];
    }
    FillAlikeSteps(from.next, from.assumed, alike, to, generic_hit_, parser_.TracksReach());
    in = pairs_[to]->inner;
    out = pairs_[to]->outer;
  }
  inner_[d + 1] = in;
  outer_[d + 1] = out;
  pair_id_[d + 1] = to;
  return true;
}

bool TokensStopInsideTag(const GrammarFsm& fsm, const TokenizerInfo& tok, int32_t node, const SameSteps& steps) {
  std::string rest;  // the bytes where the tag goes on
  SameSteps at = steps;
  for (int32_t cur = node; at.node >= 0 && static_cast<int32_t>(rest.size()) <= tok.max_token_bytes();) {
    int32_t next = -1, parting = 0, byte = 0;
    for (int32_t e = fsm.edge_begin[cur]; e < fsm.rule_edge_begin[cur] && parting < 2; ++e) {
      for (int b = fsm.edges[e].lo; b <= fsm.edges[e].hi && parting < 2; ++b) {
        if (!at.Has(static_cast<uint8_t>(b))) ++parting, next = fsm.edges[e].target, byte = b;
      }
    }
    if (parting != 1) break;  // the tag ends here, or parts several ways
    rest.push_back(static_cast<char>(byte));
    cur = next;
    at = SiblingSteps(fsm, tok, cur);
  }
  if (static_cast<int32_t>(rest.size()) > tok.max_token_bytes()) return true;
  // Whether some token starts with `rest`: down the trie, child by child.
  int32_t at_node = -1;  // the root
  for (char c : rest) {
    at_node = tok.trie().Child(at_node, static_cast<uint8_t>(c));
    if (at_node < 0) return true;
  }
  return false;
}

SameSteps SiblingSteps(const GrammarFsm& fsm, const TokenizerInfo& tok, int32_t node) {
  auto bytes_only = [&](int32_t n) { return fsm.rule_edge_begin[n] == fsm.edge_begin[n + 1]; };
  SameSteps same;
  if (!bytes_only(node)) return same;
  // Classify asks this of every node it classifies, so most answers come from the
  // edges alone, before the byte sets below. The bytes per distinct target (a
  // partial tag's node has a few: the free text, the tag's next byte, UTF-8 leads;
  // more than kMaxTargets is no such node).
  constexpr int kMaxTargets = 16;
  std::array<int32_t, kMaxTargets> targets, bytes;
  int num_targets = 0;
  for (int32_t e = fsm.edge_begin[node]; e < fsm.rule_edge_begin[node]; ++e) {
    int k = 0;
    while (k < num_targets && targets[k] != fsm.edges[e].target) ++k;
    if (k == num_targets) {
      if (num_targets == kMaxTargets) return same;
      targets[num_targets] = fsm.edges[e].target, bytes[num_targets++] = 0;
    }
    bytes[k] += fsm.edges[e].hi - fsm.edges[e].lo + 1;
  }
  int32_t best = -1;  // the target most bytes lead to
  for (int k = 0, most = 0; k < num_targets; ++k) {
    if (bytes[k] > most) most = bytes[k], best = targets[k];
  }
  if (best < 0 || best == node || fsm.node_rule[best] != fsm.node_rule[node] || !bytes_only(best)) return same;
  // The bytes on which both lead to one node, from the edges a word at a time (per-byte
  // target tables cost 1.7k instructions a call, all of SiblingSteps now 0.6k):
  // none along a literal (most nodes).
  std::array<ByteSet, kMaxTargets> own_by{};  // per distinct target
  ByteSet own_any{}, best_any{}, live{};      // live: agreeing bytes that lead somewhere
  for (int32_t e = fsm.edge_begin[node]; e < fsm.rule_edge_begin[node]; ++e) {
    int k = 0;
    while (targets[k] != fsm.edges[e].target) ++k;
    ByteSetAddRange(own_by[k], fsm.edges[e].lo, fsm.edges[e].hi);
    ByteSetAddRange(own_any, fsm.edges[e].lo, fsm.edges[e].hi);
  }
  for (int32_t f = fsm.edge_begin[best]; f < fsm.rule_edge_begin[best]; ++f) {
    ByteSetAddRange(best_any, fsm.edges[f].lo, fsm.edges[f].hi);
    for (int k = 0; k < num_targets; ++k) {
      if (targets[k] != fsm.edges[f].target) continue;
      ByteSet range{};
      ByteSetAddRange(range, fsm.edges[f].lo, fsm.edges[f].hi);
      for (int w = 0; w < 4; ++w) live[w] |= range[w] & own_by[k][w];
    }
  }
  if (live == ByteSet{}) return same;
  for (int w = 0; w < 4; ++w) same.first[w] = live[w] | ~(own_any[w] | best_any[w]);  // or dead in both
  // Only tokens whose first byte leads somewhere count: a walk rejects the others at
  // that byte anyway (JSON Schema's whitespace nodes agree with the next one on every
  // byte but '"', yet their only costly tokens start with whitespace, which they walk).
  const TokenTrie& t = tok.trie();
  int64_t covered = 0;
  for (int w = 0; w < 4; ++w) {
    for (uint64_t bits = live[w]; bits; bits &= bits - 1) {
      covered += t.tokens_by_first_byte[64 * w + __builtin_ctzll(bits)];
    }
  }
  if (2 * covered >= t.first_pos.back()) same.node = best;
  return same;
}

std::shared_ptr<InnerMask> ClassifyInner(const GrammarFsm& fsm, const TokenizerInfo& tok, int32_t node,
                                         NodeMaskPool* pool, NodeSet* reached, const InnerMask* sibling,
                                         const SameSteps* same) {
  EarleySet parent;
  EarleyParser parser(fsm, ThreadScratch());
  bool ended = false;
  parser.Watch(&parent, &ended);
  parser.TrackReach(reached);
  size_t max_depth = static_cast<size_t>(tok.max_token_bytes()) + 1;
  EarleySet* const* sets = ClassifySets(max_depth);
  // Whether the rule could end after 1 to d bytes. Ending before any byte does not make
  // a token crossing: an item of this node in a state S has origin X != S, so the rule
  // ending at S puts its callers' continuations in S with origins before X, kernel items
  // of S whose own classification covers every token parsed past that end. Counting it
  // made a node that may end at once (an expression level, whitespace) cross on nearly
  // every token, each to be walked in its context at the first visit.
  std::vector<uint8_t> ended_by(max_depth);
  parser.Seed(node, &parent, sets[0]);
  // Where the parse loops on a dense class (string content, free text), its slice is
  // accepted whole and only the other tokens are walked, from their own trie (and the
  // slice's tokens whose first byte leads elsewhere, from the whole trie). The walk
  // meets the same states on the same bytes, so the rejected subtrees (all outside
  // the accepted part) and the crossing ones come out as from the whole trie.
  SliceUse use = pool && !sibling ? LoopingSlice(parser, tok, *sets[0], *pool) : SliceUse{};
  auto mask = std::make_shared<InnerMask>();
  static std::atomic<uint64_t> next_id{1};
  mask->id = next_id.fetch_add(1, std::memory_order_relaxed);
  std::vector<int32_t> accepted;
  MemoPath memo_path(parser, sets, max_depth, *sets[0], &ended);
  if (sibling) memo_path.SkipOneWayStates();
  auto step = [&](size_t d, uint8_t byte) {
    bool ended_now = false;
    if (!memo_path.Step(d, byte, &ended_now)) return false;
    ended_by[d + 1] = ended_by[d] || ended_now;
    return true;
  };
  auto walk = [&](const TokenTrie& t, const std::vector<int32_t>& ids, const int32_t* to_full, int32_t begin,
                  int32_t end) {
    WalkTrie(
        t, begin, end, step,
        [&](int32_t i) {
          for (int32_t k = 0; k < t.num_tokens[i]; ++k) accepted.push_back(ids[t.first_pos[i] + k]);
        },
        [&](int32_t i) {
          if (ended_by[t.nodes[i].depth - 1]) mask->crossing.push_back(to_full ? to_full[i] : i);
        },
        [&](size_t d, const ByteBits& children, ByteBits* visit) {
          if (ended_by[d]) return false;  // a dead child may be a crossing one: on_dead lists it
          *visit = memo_path.Scannable(d, children);
          return true;
        },
        [&](int32_t i) {  // nothing below dies, so nothing below crosses
          if (!TakesWholeSubtree(t, i, memo_path)) return false;
          accepted.insert(accepted.end(), ids.begin() + t.first_pos[i], ids.begin() + t.first_pos[t.nodes[i].next]);
          return true;
        });
  };
  const TokenTrie& full = tok.trie();
  const std::vector<int32_t>& sorted = tok.sorted_ids();
  // Results kept as a bitset (a slice's, a sibling's): `words` less the tokens under the
  // first-byte subtree i of the whole trie, which a walk then decides.
  auto clear_subtree = [&](std::vector<uint32_t>& words, int64_t& count, const TokenTrie::Root& r) {
    for (int32_t p = r.first_pos; p < r.end_pos; ++p) {
      uint32_t bit = uint32_t{1} << (sorted[p] & 31);
      uint32_t& word = words[sorted[p] >> 5];
      count -= (word & bit) != 0;
      word &= ~bit;
    }
  };
  // The walks' tokens are outside what is left of the bitset (cleared, or never in it).
  auto accept_with = [&](std::vector<uint32_t> words, int64_t count) {
    for (int32_t id : accepted) words[id >> 5] |= uint32_t{1} << (id & 31);
    mask->accepted.count = count + static_cast<int64_t>(accepted.size());
    mask->accepted.words = std::move(words);
  };
  if (sibling) {
    // The sibling's tokens under the first bytes that step alike; the rest walked.
    auto shares_first_byte = [&](int32_t id) { return same->Has(static_cast<uint8_t>(tok.decoded(id)[0])); };
    for (int32_t c : sibling->crossing) {
      if (shares_first_byte(sorted[full.first_pos[c]])) mask->crossing.push_back(c);
    }
    const AcceptedSet& theirs = sibling->accepted;
    std::vector<uint32_t> words = theirs.words;
    int64_t count = theirs.count;
    for (const TokenTrie::Root& r : full.roots) {
      if (same->Has(r.byte)) continue;
      if (!words.empty()) clear_subtree(words, count, r);
      walk(full, sorted, nullptr, r.node, r.next);
    }
    if (words.empty()) {
      for (int32_t id : theirs.ids) {
        if (shares_first_byte(id)) accepted.push_back(id);
      }
      mask->accepted = AcceptedSet::FromIds(std::move(accepted), tok.vocab_size());
    } else {
      accept_with(std::move(words), count);
    }
  } else if (!use.slice) {
    walk(full, sorted, nullptr, 0, full.size());
    mask->accepted = AcceptedSet::FromIds(std::move(accepted), tok.vocab_size());
  } else {
    const TokenSlice& slice = *use.slice;
    for (const TokenTrie::Root& r : slice.rest.roots) {
      if (!use.Excludes(r.byte)) walk(slice.rest, slice.rest_ids, slice.rest_to_full.data(), r.node, r.next);
    }
    std::vector<uint32_t> words = slice.words;
    int64_t count = slice.count;
    for (const TokenTrie::Root& r : full.roots) {
      if (!use.Excludes(r.byte)) continue;
      clear_subtree(words, count, r);
      walk(full, sorted, nullptr, r.node, r.next);
    }
    accept_with(std::move(words), count);  // the rest trie holds no slice token
  }
  std::sort(mask->crossing.begin(), mask->crossing.end());  // walks in several orders
  mask->crossing.shrink_to_fit();
  mask->crossing_shared.resize(mask->crossing.size());
  const std::string* prev = nullptr;  // the previous crossing node's first token
  for (size_t k = 0; k < mask->crossing.size(); ++k) {
    int32_t root = mask->crossing[k];
    const std::string& s = tok.decoded(sorted[full.first_pos[root]]);
    mask->crossing_shared[k] =
        prev ? static_cast<uint16_t>(SharedDepth(*prev, s, full.nodes[mask->crossing[k - 1]].depth)) : uint16_t{0};
    prev = &s;
    mask->crossing_tokens += full.first_pos[full.nodes[root].next] - full.first_pos[root];
  }
  return mask;
}

ContextTokens ContextTokensOf(const GrammarFsm& fsm, const TokenizerInfo& tok, int32_t node,
                              const std::vector<int32_t>& follow, const std::vector<std::vector<int32_t>>& call_targets,
                              const InnerMask& inner, NodeSet* reached) {
  ContextTokens out;
  if (inner.crossing.empty()) return out;
  const TokenTrie& t = tok.trie();
  // Before the walk: a first build parses the crossing paths with this thread's parser
  // scratch (ThreadScratch), which the walk's parser shares.
  const CrossingGroups* groups = inner.GroupsForWalk(fsm, tok, node);
  ContextWalk walk(fsm, tok, node, follow, call_targets,
                   inner.crossing_tokens >= static_cast<int64_t>(StateMemo::kMinTokens), reached);
  const std::vector<int32_t>& sorted = tok.sorted_ids();
  // Grouped subtrees go through their groups' merged tries when the outer parse at a
  // group's parent state is the same on every member's path (JoinIgnores).
  const bool by_group = groups && walk.JoinIgnores(groups->after_end_bytes);
  // Each other crossing subtree is walked below its path from the root, which the inner
  // parse survived; consecutive subtrees share the part of that path they have in common
  // (`shared`: at least the least of the shared depths since the last one walked).
  size_t valid = 0;  // depths whose states match the last walked crossing node's path
  auto walk_crossing = [&](int32_t root, size_t shared) {
    size_t depth = t.nodes[root].depth;
    const std::string& s = tok.decoded(sorted[t.first_pos[root]]);
    size_t d = std::min({shared, valid, depth - 1});
    bool alive = true;
    for (; d + 1 < depth && alive; ++d) alive = walk.Step(d, static_cast<uint8_t>(s[d]));
    valid = alive ? depth - 1 : 0;
    if (!alive) return;  // not reached: the inner parse lives on every proper prefix
    // The inner parse died at `root`, so whatever lives below lives after the rule.
    WalkTrie(
        t, root, t.nodes[root].next, [&](size_t d, uint8_t byte) { return walk.Step(d, byte); },
        [&](int32_t i) {
          TokenList& list = walk.Assumed(t.nodes[i].depth) ? out.uncertain : out.certain;
          for (int32_t k = 0; k < t.num_tokens[i]; ++k) list.push_back(t.first_pos[i] + k);
        },
        [](int32_t) {}, [](size_t, const ByteSet&, ByteSet*) { return false; },
        [&](int32_t i) {
          if (!TakesWholeSubtree(t, i, walk)) return false;
          TokenList& list = walk.Assumed(t.nodes[i].depth) ? out.uncertain : out.certain;
          for (int32_t p = t.first_pos[i]; p < t.first_pos[t.nodes[i].next]; ++p) list.push_back(p);
          return true;
        });
  };
  if (!by_group) {
    for (size_t k = 0; k < inner.crossing.size(); ++k) walk_crossing(inner.crossing[k], inner.crossing_shared[k]);
    out.certain.shrink_to_fit();
    out.uncertain.shrink_to_fit();
    return out;
  }
  size_t shared = SIZE_MAX;
  for (size_t k = 0; k < inner.crossing.size(); ++k) {
    shared = std::min<size_t>(shared, inner.crossing_shared[k]);
    if (groups->grouped[k]) continue;
    walk_crossing(inner.crossing[k], shared);
    shared = SIZE_MAX;
  }
  for (const CrossingGroups::Group& group : groups->groups) {
    // The representative's path to its parent, then the merged trie below it.
    int32_t root = inner.crossing[group.rep];
    size_t base = static_cast<size_t>(t.nodes[root].depth) - 1;
    const std::string& s = tok.decoded(sorted[t.first_pos[root]]);
    bool alive = true;
    for (size_t d = 0; d < base && alive; ++d) alive = walk.Step(d, static_cast<uint8_t>(s[d]));
    if (!alive) continue;
    for (int32_t i = group.begin; i < group.end;) {
      size_t d = base + groups->depth[i];
      if (!walk.Step(d - 1, groups->byte[i])) {
        i = groups->next[i];
        continue;
      }
      TokenList& list = walk.Assumed(d) ? out.uncertain : out.certain;
      list.insert(list.end(), groups->positions.begin() + groups->token_begin[i],
                  groups->positions.begin() + groups->token_begin[i + 1]);
      ++i;
    }
  }
  // Lists are ascending (FillBitmask merges them): the groups' tokens came by suffix.
  std::sort(out.certain.begin(), out.certain.end());
  std::sort(out.uncertain.begin(), out.uncertain.end());
  out.certain.shrink_to_fit();
  out.uncertain.shrink_to_fit();
  return out;
}

}  // namespace xgr2

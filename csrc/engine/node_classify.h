// Classifying the vocabulary from one automaton node (XGrammar §3.1-3.2): which
// tokens its rule accepts whatever the callers, and which may go on past the rule.
// Pure functions of the automata and the vocabulary; the caches live elsewhere
// (token_mask_cache.h: per grammar; shared_by_reach.h: across grammars).
#pragma once
#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <unordered_map>
#include <vector>

#include "engine/crossing_groups.h"
#include "engine/earley.h"
#include "engine/node_mask_pool.h"
#include "engine/state_memo.h"
#include "grammar/fsm.h"
#include "xgr2/tokenizer.h"

namespace xgr2 {

// The tokens a node accepts whatever its rule's callers are, stored adaptively.
struct AcceptedSet {
  std::vector<int32_t> ids;     // token ids (any order), when few are accepted
  std::vector<uint32_t> words;  // a bitset over token ids, when many are
  int64_t count = 0;

  // Keeps whichever of the two forms is smaller; `ids` must be distinct.
  static AcceptedSet FromIds(std::vector<int32_t> ids, int32_t vocab_size);
  void OrInto(uint32_t* out) const;
  size_t MemoryBytes() const { return 4 * (ids.capacity() + words.capacity()); }
};

// The context-free part of a node's classification.
struct InnerMask {
  AcceptedSet accepted;
  // Unique to this object (never reused in the process): a context walk from its crossing
  // tokens is keyed by it, which names the crossing tokens exactly without writing out
  // the structure that decided them.
  uint64_t id = 0;
  // Trie nodes (preorder, ascending) whose subtree the inner parse rejects after its
  // rule could have ended on the way: the tokens there may go on in the callers'
  // context, so each grammar decides them against its own (see TokenMaskCache).
  std::vector<int32_t> crossing;
  // Per crossing node, how many bytes its path shares with the previous one's (0 for the
  // first), and the tokens under them all: what each context walk of them needs, worked
  // out once here rather than in every context.
  std::vector<uint16_t> crossing_shared;
  int64_t crossing_tokens = 0;
  // The crossing subtrees merged by their parents' parses (CrossingGroups), for a
  // context walk of `node` (whose classification this is): null for the first
  // kWalksBeforeGrouping walks (the merge costs about two walks of the crossing tokens,
  // so a node met in one or two contexts is not worth it: a Python name's, in the
  // compile benchmark), built at the next, shared after; null meanwhile in other
  // threads (a walk never waits for the build). Only for classifications with many
  // crossing nodes and few tokens under each (MayGroup).
  static constexpr int32_t kWalksBeforeGrouping = 2;
  const CrossingGroups* GroupsForWalk(const GrammarFsm& fsm, const TokenizerInfo& tok, int32_t node) const;
  bool MayGroup(size_t min_crossing = kMinGroupedCrossing) const;
  // Builds the groups now, for every context walk from the first, where at least
  // `min_crossing` nodes cross: for a classification made with the vocabulary
  // (prebuilt_masks.h), which pays the build there, so smaller ones pay back too.
  void BuildGroupsNow(const GrammarFsm& fsm, const TokenizerInfo& tok, int32_t node, size_t min_crossing) const;

  // With an estimate of the merged tries' size (built after the pool counted this).
  size_t MemoryBytes() const {
    return sizeof(InnerMask) + accepted.MemoryBytes() + 4 * crossing.capacity() + 2 * crossing_shared.capacity() +
           (MayGroup() ? 16 * static_cast<size_t>(crossing_tokens) : 0);
  }

 private:
  static constexpr int32_t kGroupsNone = 0, kGroupsBuilding = 1, kGroupsReady = 2;
  mutable std::atomic<int32_t> context_walks_{0};
  mutable std::atomic<int32_t> groups_state_{kGroupsNone};
  mutable std::unique_ptr<const CrossingGroups> groups_;  // written once, before kGroupsReady
};

// Another node of the same rule whose byte edges lead where most of `node`'s lead, and
// the first bytes on which the two agree: free text after a partial tag such as
// "<functio" goes on every byte but 'n' where the free text's own node goes. After such
// a byte both parses are the same item, so the tokens starting with it classify alike
// from either node, and `node` need only walk the others.
struct SameSteps {
  int32_t node = -1;                // none
  std::array<uint64_t, 4> first{};  // the first bytes that step alike

  bool Has(uint8_t b) const { return (first[b >> 6] >> (b & 63)) & 1; }
};

// The sibling of `node`, when both scan bytes only (a rule call's items would start at
// the node's own set, which differs) and the agreeing first bytes that lead somewhere
// begin at least half of the vocabulary's text tokens (else the walk they spare is not
// worth the detour).
SameSteps SiblingSteps(const GrammarFsm& fsm, const TokenizerInfo& tok, int32_t node);

// Whether no token parsed from `node` gets through the bytes where it parts from its
// sibling `steps` (the rest of a tag: from "<", "function="), followed while one byte a
// node leads on at a time: no token starts with them. Then the node's own walk reaches
// the tag's bytes and the free text alone, the same in every grammar with that tag, and
// its classification is worth storing by structure; otherwise ("=" before the tool
// names) the sibling's mask spares most of a walk whose key would hold the names.
bool TokensStopInsideTag(const GrammarFsm& fsm, const TokenizerInfo& tok, int32_t node, const SameSteps& steps);

// Classifies every token by parsing it from `node` alone: accepted if the parse lives
// through the token inside the node's rule and its callees; else "crossing" if the
// rule could end on the way (see InnerMask). With `pool`, a dense class the node loops
// on is accepted as a slice (looping_slice.h) and kept there. With `reached`, records
// every node the walk had an item at. With `sibling` (the classification of
// `same.node`), the tokens of the first bytes in `same` are taken from it and only the
// others are walked (nothing is recorded in `reached` for the former).
std::shared_ptr<InnerMask> ClassifyInner(const GrammarFsm& fsm, const TokenizerInfo& tok, int32_t node,
                                         NodeMaskPool* pool, NodeSet* reached = nullptr,
                                         const InnerMask* sibling = nullptr, const SameSteps* same = nullptr);

// The crossing tokens of `inner` that could go on after the rule: at the nodes `follow`
// (where its callers continue), then, as those rules end, wherever any call of them
// continues (call_targets[r] lists the nodes that follow a call of rule r anywhere).
// Certain: those that live on without any of the follow nodes' rules ending (the
// callers' own continuation, whatever called the callers); uncertain: the others.
// With follow = call_targets[rule of node], every context of the grammar (context
// expansion), where no token is certain for a given state: use both lists.
// With `reached`, records every node the walk had an item at.
ContextTokens ContextTokensOf(const GrammarFsm& fsm, const TokenizerInfo& tok, int32_t node,
                              const std::vector<int32_t>& follow, const std::vector<std::vector<int32_t>>& call_targets,
                              const InnerMask& inner, NodeSet* reached = nullptr);

// Scratch sets for the classification walks, one per depth, reused on a thread.
EarleySet* const* ClassifySets(size_t count);

// Two parses side by side over the bytes of a trie path, one state per depth:
//  inner: the item (node, parent) where `parent` stands for the rule's unknown callers;
//  outer: what may follow wherever the rule ended on the way, in any context
//         (items with origin `generic`, see EarleyParser::SetGeneric).
class ContextWalk {
 public:
  // `follow`: where the parse goes on when the node's rule ends (then, when those rules
  // end, at every call site: call_targets).
  // With `reached`, records the nodes the walk has items at (EarleyParser::TrackReach).
  // With `memo`, pairs of states met before step without parsing (for long walks; it
  // starts at the first step).
  ContextWalk(const GrammarFsm& fsm, const TokenizerInfo& tok, int32_t node, const std::vector<int32_t>& follow,
              const std::vector<std::vector<int32_t>>& call_targets, bool memo, NodeSet* reached = nullptr);

  // Extends the path at depth d by `byte`; false when both parses die. A pair of
  // states met before steps by its memo (StateMemo) without parsing.
  bool Step(size_t d, uint8_t byte) {
    int32_t j = pair_id_[d];
    int32_t to = j >= 0 ? pairs_[j]->next[byte] : StateMemo::kUnknown;
    if (to == StateMemo::kDead) return false;
    if (to >= 0) {
      inner_[d + 1] = pairs_[to]->inner;
      outer_[d + 1] = pairs_[to]->outer;
      pair_id_[d + 1] = to;
      assumed_[d + 1] = assumed_[d] || ((pairs_[j]->assumed[byte >> 6] >> (byte & 63)) & 1);
      return true;
    }
    // Neither parse scans the byte: both die (the inner parse ends no rule on a byte it
    // cannot scan, so no context joins). Rejected without a call, as the parser would.
    if (to == StateMemo::kUnknown && !CanScan(inner_[d], byte) && !CanScan(outer_[d], byte)) {
      if (inner_[d]) parser_.AskItems(*inner_[d], byte);
      if (outer_[d]) parser_.AskItems(*outer_[d], byte);
      if (j >= 0) pairs_[j]->next[byte] = StateMemo::kDead;
      return false;
    }
    return StepParsing(d, byte);
  }

  // Whether the context joined where the rule ends scans none of `bytes`: then, on a
  // path where only such bytes follow the rule's ends, the outer parse is that join
  // where the rule just ended and dead elsewhere (each join dies at the next byte),
  // which CrossingGroups rely on.
  // Records the reads when tracking reach.
  bool JoinIgnores(const ByteSet& bytes);

  // Whether the outer parse, on the path to depth d, ended a rule it had entered at a
  // follow node (going on in the assumed context of any caller).
  bool Assumed(size_t d) const { return assumed_[d]; }

  // As MemoPath::LoopsOn, for the pair of parses at depth d: every byte of `classes`
  // steps it back to itself without going on in an assumed context (unless the path
  // already has), so the tokens below a node whose subtree holds only those bytes live
  // with the node's Assumed(). MayLoop: the cheap test first.
  bool LoopsOn(size_t d, uint64_t classes);
  bool MayLoop(size_t d) const { return pair_id_[d] >= 0 && pairs_[pair_id_[d]]->self_step; }

 private:
  // A pair of interned states (null: that parse is dead) and its known steps.
  struct Pair {
    const EarleySet* inner;
    const EarleySet* outer;
    StepTable next;
    ByteBits assumed{};  // per byte: that step went on in an assumed context
    uint64_t loop_classes = 0, other_classes = 0;  // StepsBackOn's cache
    bool self_step = false;                         // some byte steps back here
  };
  static bool CanScan(const EarleySet* set, uint8_t byte) { return set && set->CanScan(byte); }
  bool StepParsing(size_t d, uint8_t byte);
  // Starts the memo (at the first step, so a walk that never parses interns nothing).
  void StartMemo();
  // The outer parse at depth d joined by a fresh context, where the rule just ended.
  const EarleySet* JoinContext(const EarleySet* base, size_t d);
  // The pair id of (in, out), interning them (`joined_base`: the set a joined `out`
  // was extended from), or -1 when they cannot be interned.
  int32_t InternPair(const EarleySet* in, const EarleySet* out, const EarleySet* joined_base);

  EarleyParser parser_;
  const std::vector<int32_t>& calls_;
  EarleySet parent_, generic_;
  bool ended_ = false;
  EarleySet* const* inner_sets_ = nullptr;
  EarleySet* const* outer_sets_ = nullptr;
  EarleySet* const* merged_sets_ = nullptr;
  std::vector<const EarleySet*> inner_, outer_;
  bool memo_allowed_, memo_started_ = false;
  StateMemo inner_memo_, outer_memo_;
  std::vector<std::unique_ptr<Pair[]>> pair_blocks_;
  std::vector<Pair*> pairs_;  // by id, in pair_blocks_
  std::unordered_map<uint64_t, int32_t> pair_by_ids_;
  std::vector<int32_t> pair_id_;  // per depth: the pair the path is at, or -1
  std::vector<uint8_t> assumed_;  // per depth: see Assumed()
  bool generic_hit_ = false;
};

}  // namespace xgr2

// Earley parser over per-rule byte automata. One EarleySet per byte position. A
// persistent set (a matcher state's) owns the sets its items' origins point at, which
// own theirs: a state keeps alive only the sets a parse from it can still look at (one
// per open rule call, so memory follows nesting depth, not length), shared between the
// states that need them. Keeping, forking or dropping a state is O(1).
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "grammar/fsm.h"
#include "grammar/fsm_key.h"
#include "support/small_vector.h"

namespace xgr2 {

class EarleySet;

struct EarleyItem {
  int32_t node;              // automaton node (its rule is fsm.node_rule[node])
  // In a counted rule (GrammarFsm::node_counts), the repetitions completed, or
  // kFreeCount; 0 in any other rule. (Fits the padding before `origin`.)
  int32_t count;
  const EarleySet* origin;   // set where the rule was predicted (an ancestor, or this set)
};

// The count after a byte step of `it` to node `to`, in *count; false when the bounds
// forbid the step (a repetition begun past the maximum). Leaving a counted rule's start
// begins a repetition, entering it completes one.
inline bool StepCount(const GrammarFsm& fsm, const EarleyItem& it, int32_t to, int32_t* count) {
  *count = it.count;
  if (!fsm.any_counted || it.count < 0) return true;  // nothing to count, or free
  // (Byte edges stay in their rule: only a counted rule's start counts, leaving or entering.)
  if (fsm.node_counts[it.node] && it.count >= fsm.rule_count_max[fsm.node_rule[it.node]]) return false;
  if (fsm.node_counts[to]) ++*count;
  return true;
}

// Whether an item has edges it may take (a counted rule's start: none at its maximum).
inline bool HasLiveEdges(const GrammarFsm& fsm, int32_t node, int32_t count) {
  return fsm.HasEdges(node) && (!fsm.any_counted || !fsm.node_counts[node] || count < 0 ||
                                count < fsm.rule_count_max[fsm.node_rule[node]]);
}

// Whether an item at a final node may end its rule (a counted rule: past its minimum).
inline bool MayEnd(const GrammarFsm& fsm, int32_t node, int32_t count) {
  return !fsm.any_counted || !fsm.node_counts[node] || count < 0 || count >= fsm.rule_count_min[fsm.node_rule[node]];
}

class EarleySet : public std::enable_shared_from_this<EarleySet> {
 public:
  EarleySet() = default;
  EarleySet(const EarleySet&) = delete;
  EarleySet& operator=(const EarleySet&) = delete;
  ~EarleySet();

  SmallVector<EarleyItem, 4> items;  // items that still have edges to take (HasLiveEdges)
  ByteSet next_bytes{};           // bytes some item can scan
  bool accepting = false;         // the root rule is complete here
  bool initial = false;           // the set before any byte (set by EarleyParser::Initial)
  // Persistent sets: the distinct origins of `items` other than this set (see
  // KeepOrigins), the first one inline (most sets have one: no allocation). Empty for
  // scratch sets, whose origins their walk keeps alive.
  std::shared_ptr<const EarleySet> origin_owner;
  std::vector<std::shared_ptr<const EarleySet>> more_origin_owners;

  bool CanScan(uint8_t b) const { return ByteSetHas(next_bytes, b); }
};

// Makes the persistent set `set` (owned by a shared_ptr, as are all its items' origins)
// own its items' origins.
void KeepOrigins(EarleySet* set);

// Bytes of the persistent sets reachable from `set` through its origin owners, `set`
// included (items, owner lists, the set objects and their shared_ptr control blocks;
// not malloc's own overhead).
int64_t ReachableSetBytes(const EarleySet& set);

// Serializes what a parse from `set` depends on (the sets reachable through item
// origins, their items and initial flags): equal signatures mean equal parses of any
// continuation. False, leaving *out unspecified, past `max_items` items.
bool ParseSignature(const EarleySet& set, size_t max_items, std::string* out);

// The bytes on which every item's node of `set` goes where it goes on `byte` (or
// nowhere alike): a step on any of them gives the same set. Inside a string or free
// text that is every plain character, which a walk would otherwise parse once per byte.
ByteSet SameStepBytes(const GrammarFsm& fsm, const EarleySet& set, uint8_t byte);

// An item of an origin set waiting for `rule`: completing the rule there goes on at
// `target` with `origin`.
struct EarleyCaller {
  int32_t rule;
  int32_t target;
  const EarleySet* origin;
};

// Reusable buffers for building sets; one per thread (see ThreadScratch()).
struct EarleyScratch {
  std::vector<EarleyItem> work;
  std::vector<EarleyItem> table;  // open-addressing dedup of the set under construction
  std::vector<uint32_t> table_stamp;
  uint32_t stamp = 0;
  // Origin sets completed against during one closure, each with its callers sorted by
  // rule once it is completed against twice (see EarleyParser::Complete). Valid only
  // within one Close: origins do not change during it, scratch sets do between calls.
  struct OriginCallers {
    const EarleySet* set;
    bool indexed;
    std::vector<EarleyCaller> callers;
  };
  std::vector<OriginCallers> origins;
  size_t num_origins = 0;
};

// This thread's scratch buffers.
EarleyScratch& ThreadScratch();

// Scratch sets for a walk, one per depth, kept for reuse. Each kind of walk keeps its
// own (thread_local) pool, so walks of different kinds never write each other's sets.
class ScratchSets {
 public:
  // At least `count` sets.
  EarleySet* const* Get(size_t count);

 private:
  std::vector<std::unique_ptr<EarleySet[]>> owned_;  // blocks of sets
  std::vector<EarleySet*> sets_;
};

// Builds Earley sets for one grammar; cheap to construct per call.
class EarleyParser {
 public:
  EarleyParser(const GrammarFsm& fsm, EarleyScratch& scratch) : fsm_(fsm), s_(scratch), counts_(fsm.any_counted) {}

  const GrammarFsm& fsm() const { return fsm_; }

  // The set before any byte: the root rule predicted.
  void Initial(EarleySet* out);
  // The set holding one item (node, origin) and its closure; in a counted rule, the
  // item's count is free (kFreeCount): the node as seen without its context.
  void Seed(int32_t node, const EarleySet* origin, EarleySet* out);
  // From now on, a completion of an item whose origin is `watched` sets *hit. The
  // mask cache uses it to see where a rule, parsed without its parents, could end.
  void Watch(const EarleySet* watched, bool* hit) { watched_ = watched, watch_hit_ = hit; }
  // Items whose origin is `generic` stand for "any caller": when their rule p ends,
  // the parse goes on at every node that follows a call of p (call_targets[p]),
  // again with origin `generic`. This over-approximates every possible context.
  void SetGeneric(const EarleySet* generic, const std::vector<std::vector<int32_t>>* call_targets) {
    generic_ = generic, call_targets_ = call_targets;
  }
  // From now on, an item with origin `generic` ending a rule that has callers (the
  // parse going on in an assumed context) sets *hit.
  void WatchGeneric(bool* hit) { generic_hit_ = hit; }
  // From now on, records in `reached` what the parse reads of the automata (what a
  // cross-grammar key must describe): every node a set gets an item at, the bytes each
  // item's node is asked for, and the nodes whose rule goes on in the generic context.
  // Code that reads the automata itself during a tracked walk must record the read
  // too (ReadAllByteEdges): a key that leaves out a read shares walks unsoundly.
  void TrackReach(NodeSet* reached) { reached_ = reached; }
  bool TracksReach() const { return reached_ != nullptr; }
  // Records that the walk read every byte edge of `set`'s items' nodes (a caller that
  // looks at the edges itself, such as a slice's byte runs).
  void ReadAllByteEdges(const EarleySet& set) {
    if (!reached_) return;
    for (const EarleyItem& it : set.items) reached_->AskAll(it.node);
  }
  // Records that the walk stepped `set` on `byte` without scanning it: a memo reused
  // the step of another byte that steps alike (SameStepBytes), as a scan would ask.
  void AskItems(const EarleySet& set, uint8_t byte) {
    if (!reached_) return;
    for (const EarleyItem& it : set.items) reached_->Ask(it.node, byte);
  }
  // As AskItems, for each of `bytes` at once.
  void AskItemsBytes(const EarleySet& set, const ByteSet& bytes) {
    if (!reached_) return;
    for (const EarleyItem& it : set.items) reached_->AskBytes(it.node, bytes);
  }
  // The closure of `base`'s items (if any) plus (node, origin) for each of `nodes`.
  void Extend(const EarleySet* base, const std::vector<int32_t>& nodes, const EarleySet* origin, EarleySet* out);
  // Scans `byte` from `prev` into `out` (a persistent `out` then needs KeepOrigins).
  // Returns false, leaving `out` unspecified, when no item can scan the byte. Inline
  // rejection: most steps of the token walks end at the first-byte filter.
  bool Advance(const EarleySet& prev, uint8_t byte, EarleySet* out) {
    if (reached_) {  // the first-byte filter asks every item's node, as a scan would
      for (const EarleyItem& it : prev.items) reached_->Ask(it.node, byte);
    }
    return prev.CanScan(byte) && AdvanceScannable(prev, byte, out);
  }

 private:
  bool AdvanceScannable(const EarleySet& prev, uint8_t byte, EarleySet* out);
  void Add(int32_t node, int32_t count, const EarleySet* origin);
  void Close(EarleySet* out);
  // The items of `origin` waiting for `rule` go on (the completer step).
  void Complete(const EarleySet& origin, int32_t rule);
  void Track(int32_t node) {
    if (reached_) reached_->Insert(node);
  }

  void BeginSet();

  const GrammarFsm& fsm_;
  EarleyScratch& s_;
  const EarleySet* watched_ = nullptr;
  bool* watch_hit_ = nullptr;
  const EarleySet* generic_ = nullptr;
  const std::vector<std::vector<int32_t>>* call_targets_ = nullptr;
  bool* generic_hit_ = nullptr;
  NodeSet* reached_ = nullptr;
  const bool counts_;  // the grammar has counted rules: items' counts matter
};

}  // namespace xgr2

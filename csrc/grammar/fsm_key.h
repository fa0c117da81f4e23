// Structural keys of automaton nodes, for sharing node masks across grammars
// (XGrammar-2 §3.3, the cross-grammar cache), bounded by how far a walk looked.
#pragma once
#include <climits>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "grammar/fsm.h"

namespace xgr2 {

// The fewest bytes a parse from the `roots` must scan to have an item at each node:
// byte edges cost 1, entering a callee 0, stepping over a call 1 (0 for a nullable
// callee). With `call_targets` (the mask cache's generic context), a final node also
// goes on, for free, at the nodes after every call of its rule.
//
// `watched_rule`: a rule whose ends do not go on at its call targets (the rule a
// context walk starts in, whose callers it names explicitly by its other roots).
//
// Only the balls a key can be made of are explored: distances are exact up to the
// first radius past `max_radius` or whose ball has more than `max_nodes` nodes, and
// INT32_MAX beyond. They are made lazily, radius by radius, only as far as asked (the
// mask cache asks for radius 1: its index keys). The array is a per-thread scratch, reset
// on destruction only where it was written, so the cost follows the nodes inside those
// bounds, not the size of the automata.
class ByteDistances {
 public:
  ByteDistances(const GrammarFsm& fsm, const std::vector<int32_t>& roots,
                const std::vector<std::vector<int32_t>>* call_targets, int32_t max_radius, int32_t max_nodes,
                int32_t watched_rule = -1);
  ~ByteDistances();
  ByteDistances(const ByteDistances&) = delete;
  ByteDistances& operator=(const ByteDistances&) = delete;

  // Indexed by node, fsm.NumNodes() entries: exact for every node within `radius`
  // (within the bounds), and more than `radius` for every other node.
  const int32_t* UpTo(int32_t radius);
  // Whether the ball of `radius` has more than max_nodes nodes (so it has no key).
  bool TooLarge(int32_t radius) {
    UpTo(radius);
    return too_large_from_ <= radius;
  }
  int32_t max_nodes() const { return max_nodes_; }
  struct Scratch;

 private:
  const GrammarFsm& fsm_;
  const std::vector<std::vector<int32_t>>* call_targets_;
  int32_t max_radius_, max_nodes_, watched_rule_;
  int32_t level_ = 0;    // the next distance to settle
  int32_t settled_ = 0;  // nodes settled so far
  bool done_ = false;
  int32_t too_large_from_ = INT32_MAX;  // the first radius whose ball has too many nodes
  Scratch* scratch_;
};

// The structure within `radius` of the roots (dist from ByteDistances with the same
// roots and call_targets): those nodes numbered breadth-first from the roots, each with
// its final flag and the rule it ends, its byte ranges, callees (and whether they are
// nullable), edge targets (-1 past the radius) and, with `call_targets`, where a final
// node goes on. A parse that only ever has items at nodes within the radius looks at
// nothing else, so it runs the same in every grammar with the same key, however the
// rules go on beyond (the mask cache indexes its ReachKeys by the ball of radius 1).
// "" past `max_nodes` nodes; otherwise `prefix`, the key, `suffix` (a cache's full key
// in one allocation). `watched_rule` as in ByteDistances.
std::string BallKey(const GrammarFsm& fsm, const std::vector<int32_t>& roots,
                    const std::vector<std::vector<int32_t>>* call_targets, ByteDistances& dist,
                    int32_t radius, int32_t max_nodes, std::string_view prefix = {},
                    std::string_view suffix = {}, int32_t watched_rule = -1);

// A set of automaton nodes with O(1) insert and lookup, on per-thread scratch reset
// on destruction only where written (so its cost follows the nodes put in, not the
// size of the automata). A classification walk records in one what its result
// depends on (EarleyParser::TrackReach): the nodes it has items at, the bytes it asked
// each of them for (a scan, or the first-byte filter that stands for one), and where
// it read a rule's call targets (a completion in the generic context).
class NodeSet {
 public:
  explicit NodeSet(int32_t num_nodes);
  ~NodeSet();
  NodeSet(const NodeSet&) = delete;
  NodeSet& operator=(const NodeSet&) = delete;

  void Insert(int32_t n) {
    if (!mark_[n]) InsertNew(n);
  }
  bool Contains(int32_t n) const { return mark_[n] != 0; }
  size_t size() const { return nodes_->size(); }

  // The walk asked n for its byte edge on b (inline: every scan of a walk asks).
  void Ask(int32_t n, uint8_t b) {
    if (!mark_[n]) InsertNew(n);
    asked_data_[slot_[n]][b >> 6] |= uint64_t{1} << (b & 63);
  }
  // The walk asked n for its byte edges on each of `bytes`.
  void AskBytes(int32_t n, const ByteSet& bytes) {
    if (!mark_[n]) InsertNew(n);
    ByteSet& asked = asked_data_[slot_[n]];
    for (int w = 0; w < 4; ++w) asked[w] |= bytes[w];
  }
  // The walk read every byte edge of n.
  void AskAll(int32_t n) {
    Insert(n);
    asked_data_[slot_[n]] = {~uint64_t{0}, ~uint64_t{0}, ~uint64_t{0}, ~uint64_t{0}};
  }
  // The bytes asked of n (none for a node outside the set, such as a root the walk
  // never got to).
  const ByteSet& Asked(int32_t n) const {
    static constexpr ByteSet kNone{};
    return mark_[n] ? asked_data_[slot_[n]] : kNone;
  }
  // The walk went on at the nodes after every call of n's rule (n final).
  void ReadCallTargets(int32_t n) {
    Insert(n);
    mark_[n] |= kCallTargets;
  }
  bool CallTargetsRead(int32_t n) const { return (mark_[n] & kCallTargets) != 0; }
  struct Scratch;

 private:
  static constexpr uint8_t kIn = 1, kCallTargets = 2;
  void InsertNew(int32_t n);
  Scratch* scratch_;
  uint8_t* mark_;
  int32_t* slot_;                 // a member's index in nodes_ and asked_
  std::vector<int32_t>* nodes_;
  std::vector<ByteSet>* asked_;   // per member: only what a walk touched costs memory
  ByteSet* asked_data_ = nullptr;  // asked_->data()
};

// The structure that a walk read (`reached`, recorded by the walk; the roots always),
// in BallKey's form: the nodes numbered breadth-first from the roots along the edges
// the key holds, each with its final flag and the rule it ends, its callees (and their
// nullability), whether it has byte edges and which bytes the walk asked it for, with
// the edges those bytes follow (targets -1 outside the set), and, where the walk read
// them, where its rule goes on after every call. A parse that reads nothing else runs
// the same in every grammar whose structure there has the same key, whatever lies
// outside or behind the bytes it never asked: unlike a ball, the key leaves out what
// the walk never looked at (past a bounded whitespace run, the next property of a
// schema; after a string's closing quote, the first letters of the next key, which
// the few tokens that reach it do not spell), so more grammars share it. "" past
// `max_nodes` nodes; otherwise `prefix`, the key, `suffix`.
std::string ReachKey(const GrammarFsm& fsm, const std::vector<int32_t>& roots,
                     const std::vector<std::vector<int32_t>>* call_targets, const NodeSet& reached,
                     int32_t max_nodes, std::string_view prefix = {}, std::string_view suffix = {});

// Whether this automata has, from `roots`, the structure of `key` (a ReachKey made
// with the same prefix and suffix, possibly in another grammar): the nodes it names are
// found by following the edges the key follows, and their ReachKey must be `key`
// exactly. A lookup cannot know beforehand which nodes a stored walk reached; the key
// itself says.
bool MatchesReachKey(const GrammarFsm& fsm, const std::vector<int32_t>& roots,
                     const std::vector<std::vector<int32_t>>* call_targets, std::string_view key,
                     size_t prefix_size, size_t suffix_size, int32_t max_nodes);

// A 64-bit hash of the whole automata (what SameAutomata compares), read straight from
// its arrays: made once per compiled grammar, so it must cost little next to building
// the automata (a k = 50 tool set's automata are ~1 MB).
uint64_t AutomataHash(const GrammarFsm& fsm);

// Whether two automata parse alike in every respect the mask cache can see: the same
// rules, nodes and edges, numbered alike (the same grammar compiled again, or rules
// that were written differently but built the same automata).
bool SameAutomata(const GrammarFsm& a, const GrammarFsm& b);

// Bytes an automata holds (its arrays), for memory accounting.
int64_t AutomataBytes(const GrammarFsm& fsm);

}  // namespace xgr2

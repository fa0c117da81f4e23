// Earley states of one walk, interned (equal items with equal origins are one state),
// with the transitions met so far. A trie walk comes back to equal states over and
// over (inside an identifier or a string, after each element of a list, whatever the
// characters), so once a state's step on a byte is known, it costs a table lookup
// instead of an Earley step over the state's items: on a C grammar, whose states carry
// the whole expression chain, that is the difference between microseconds and
// nanoseconds per trie node.
#pragma once
#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "engine/earley.h"
#include "xgr2/tokenizer.h"

namespace xgr2 {

// Per-byte bits of a memoized state's steps.
using ByteBits = std::array<uint64_t, 4>;
// A memoized state's step per byte: a state id, or one of StateMemo's codes. 16 bits
// (ids are below kMaxStates): a fresh state's table is half a KiB to fill, and a cold
// walk's fills were the most of its cache-missing writes.
using StepTable = std::array<int16_t, 256>;

// Sets the steps of the bytes of `alike` not yet known (StateMemo::kUnknown in `next`)
// to `to`, the step just parsed on one of them (they step the state alike:
// SameStepBytes), and marks them in `flagged` when `flag`. With `unasked`, they are
// stored as StateMemo::Unasked(to): the walk must record the read at their first use.
void FillAlikeSteps(StepTable& next, ByteBits& flagged, const ByteSet& alike, int32_t to, bool flag,
                    bool unasked);

// Whether the memoized state `self` (steps `next`) steps back to itself on every byte of
// the byte classes `classes` (TrieByteClass bits), none of them in `disqualified`, by the
// steps known so far: an unknown step is not known to loop. `loops` and `other` cache
// the classes found to loop or not. A step filled in alike and not used yet
// (StateMemo::Unasked) counts once use_unasked(byte) has recorded its read; it is then
// made plain. Shared by MemoPath::LoopsOn and ContextWalk::LoopsOn.
template <class UseUnasked>
bool StepsBackOn(StepTable& next, int32_t self, uint64_t classes, const ByteBits& disqualified, uint64_t& loops,
                 uint64_t& other, UseUnasked&& use_unasked);

class StateMemo {
 public:
  static constexpr int32_t kDead = -1;
  static constexpr int32_t kUnknown = -2;
  // A step to `to` filled in for an alike byte (FillAlikeSteps) and not used since: the walk
  // has not read the items' edges on that byte yet (a scan would have, and a
  // cross-grammar key must hold what the walk relied on).
  static constexpr int32_t Unasked(int32_t to) { return -3 - to; }
  static constexpr bool IsUnasked(int32_t step) { return step <= -3; }

  // A walk interns at most this many states (about 1 KiB each), of at most this many
  // items; past that it steps by parsing.
  static constexpr size_t kMaxStates = 4096;
  static constexpr size_t kMaxItems = 2048;
  static_assert(-3 - static_cast<int32_t>(kMaxStates) >= INT16_MIN, "steps must fit a StepTable");
  // Walks over fewer tokens step by parsing: interning costs about one step, and a short
  // walk meets few states twice. Longer walks memoize whatever the states' size: inside
  // an identifier or a number even a state of a few items comes back at every byte (a C
  // declaration's first mask: 6.4x fewer instructions than with a 12-item threshold,
  // callgrind, issue 13 note). Since a state's step covers its whole run of alike bytes
  // (SameStepBytes), a walk of a hundred tokens through a string's content already pays:
  // 96 instead of 512 took builtin JSON's first 50 masks from 3.80M to 3.35M
  // instructions, Python's from 130.4M to 123.8M, tool calling's -1.2%.
  static constexpr size_t kMinTokens = 96;

  StateMemo() = default;
  // Gives the state blocks back to this thread's spares (TakeBlock).
  ~StateMemo();
  StateMemo(const StateMemo&) = delete;
  StateMemo& operator=(const StateMemo&) = delete;

  // Sets standing for sets of the memo equal to them: (scratch set, interned set).
  using Aliases = std::vector<std::pair<const EarleySet*, const EarleySet*>>;

  // The id of the state equal to `set`, interning a copy when new; -1 when it cannot
  // (too large, or the memo is full). The items' origins must outlive the memo: sets
  // of the memo, sets outside the walk, or `set` itself (a copy points to itself), or
  // sets in `aliases` (a copy points to the interned set instead).
  int32_t Intern(const EarleySet& set, const Aliases& aliases = {});

  const EarleySet& Set(int32_t id) const { return states_[id]->set; }
  // The state after `byte` (kDead, or kUnknown before SetNext), and whether that step
  // completed an item of the parser's watched set (EarleyParser::Watch).
  int32_t Next(int32_t id, uint8_t byte) const { return states_[id]->next[byte]; }
  bool Ended(int32_t id, uint8_t byte) const { return (states_[id]->ended[byte >> 6] >> (byte & 63)) & 1; }
  void SetNext(int32_t id, uint8_t byte, int32_t to, bool ended);
  // The step on every other byte of `alike` not yet known is the step just made on one
  // of them (SameStepBytes): parsed once, not once per character.
  void SetAlike(int32_t id, const ByteSet& alike, int32_t to, bool ended, bool unasked) {
    State& s = *states_[id];
    FillAlikeSteps(s.next, s.ended, alike, to, ended, unasked);
  }
  // A dead step on a byte no item scans, whose read the walk has yet to record: the
  // first-byte filter rejects most trie children, and recording each at once cost an
  // item loop per byte (a third of a classification's steps). MemoPath records them
  // all, a byte set per state, when its walk ends.
  void MarkUnrecorded(int32_t id, uint8_t byte) {
    states_[id]->unrecorded[byte >> 6] |= uint64_t{1} << (byte & 63);
  }
  void MarkUnrecorded(int32_t id, const ByteBits& bytes) {
    for (int w = 0; w < 4; ++w) states_[id]->unrecorded[w] |= bytes[w];
  }
  // StepsBackOn for state `id`.
  template <class UseUnasked>
  bool StepsBackOn(int32_t id, uint64_t classes, UseUnasked&& use_unasked) {
    State& s = *states_[id];
    return xgr2::StepsBackOn(s.next, id, classes, ByteBits{}, s.loop_classes, s.other_classes, use_unasked);
  }
  // Whether some byte is known to step the state back to itself (SetNext).
  bool HasSelfStep(int32_t id) const { return states_[id]->self_step; }
  size_t size() const { return states_.size(); }
  const ByteBits& Unrecorded(int32_t id) const { return states_[id]->unrecorded; }
  // An Unasked step of `byte`, now used: the plain step from now on.
  int32_t TakeUnasked(int32_t id, uint8_t byte) {
    int16_t& step = states_[id]->next[byte];
    step = static_cast<int16_t>(Unasked(step));  // Unasked is its own inverse
    return step;
  }

 private:
  struct State {
    EarleySet set;
    StepTable next;
    ByteBits ended{};
    ByteBits unrecorded{};  // MarkUnrecorded
    uint64_t loop_classes = 0, other_classes = 0;  // StepsBackOn's cache
    bool self_step = false;                         // HasSelfStep
    uint64_t hash = 0;  // of the items, as Intern finds them
  };
  static constexpr size_t kBlock = 16;  // states per block
  // A block of states: one of the thread's spares, or new. Walks follow each other on
  // a thread, and a spare block's memory is still in cache where a new one's is not
  // (writing fresh step tables was a cold walk's main cache-missing write).
  static std::unique_ptr<State[]> TakeBlock();
  static std::vector<std::unique_ptr<State[]>>& Spares();  // this thread's
  std::vector<std::unique_ptr<State[]>> blocks_;  // the states, allocated in blocks
  std::vector<State*> states_;                     // by id
  std::vector<int32_t> slots_;                     // open addressing by State::hash; -1: empty
};

// One parse along a trie path, a state per depth, stepping by a StateMemo where the
// path is at interned states and by the parser (into `scratch[d + 1]`) elsewhere. The
// memo starts at the walk's first step, or after `memo_after` parsing steps.
class MemoPath {
 public:
  // `parser` made `start`; `ended` is its watch flag (EarleyParser::Watch), if any.
  // Without `memo`, every step parses.
  MemoPath(EarleyParser& parser, EarleySet* const* scratch, size_t max_depth, const EarleySet& start,
           bool* ended = nullptr, bool memo = true, int64_t memo_after = 0);
  // Records the reads of the memoized rejections (StateMemo::MarkUnrecorded): the
  // parser's reach record is complete once the path is gone.
  ~MemoPath();
  MemoPath(const MemoPath&) = delete;
  MemoPath& operator=(const MemoPath&) = delete;

  // Extends the path at depth d by `byte`; false when the parse dies. *ended_now:
  // whether the step completed an item of the watched set.
  bool Step(size_t d, uint8_t byte, bool* ended_now = nullptr) {
    int32_t id = id_[d];
    if (id >= 0) {
      int32_t to = memo_.Next(id, byte);
      if (to == StateMemo::kDead) return false;
      if (to >= 0) {
        if (ended_now) *ended_now = memo_.Ended(id, byte);
        path_[d + 1] = &memo_.Set(to);
        id_[d + 1] = to;
        return true;
      }
      // Most first steps are on a byte no item scans (a trie node's other children):
      // rejected as the parser would, at less cost than a parsing step.
      if (to == StateMemo::kUnknown && !path_[d]->CanScan(byte)) return RejectUnscannable(d, byte);
    } else if (!path_[d]->CanScan(byte) && !parser_.TracksReach()) {
      // Not interned (a one-way state on a literal name): a trie node's other children
      // are rejected without the parsing step that would find no item scanning them.
      ++parse_work_;
      return false;
    }
    return StepParsing(d, byte, ended_now);
  }

  // Of `bytes`, those that might step the path at depth d (the others it rejects, and
  // records as asked as Step would): a trie walk then visits only those children.
  ByteBits Scannable(size_t d, const ByteBits& bytes);

  // Whether the interned state at depth d steps back to itself on every byte of the
  // `classes` (TrieByteClass bits): then every token below a trie node at depth d whose
  // subtree holds only such bytes lives, with the same state at each of its bytes.
  // Knows only the steps made so far (and the bytes they fill in alike); records the
  // reads it relies on as the steps would. False when not interned.
  bool LoopsOn(size_t d, uint64_t classes);
  // Whether LoopsOn at depth d could hold for any classes: the state is interned and
  // has a step back to itself. A cheap test before reading a node's classes.
  bool MayLoop(size_t d) const { return id_[d] >= 0 && memo_.HasSelfStep(id_[d]); }

  // The interned state of the path at depth d, or -1 (not interned).
  int32_t StateId(size_t d) const { return id_[d]; }
  // The path's parser state at depth d.
  const EarleySet& State(size_t d) const { return *path_[d]; }
  // Step by parsing, the state reached not interned: for a walk that never comes back
  // to it (a whitespace run's states differ by the run's length).
  bool StepUninterned(size_t d, uint8_t byte);
  // From now on, states on a one-way path (OneWay) are not interned, nor anything below
  // them: for a walk down literal names, which meets each of their states once.
  void SkipOneWayStates() { skip_one_way_ = true; }

  // The parsing work of the steps so far that the memo did not answer: one per step plus
  // the items of each state it made. A budget in this unit bounds a walk's time where a
  // budget in steps does not (a step after a number deep in a C expression closes ~100
  // items; one inside a JSON string, a few).
  int64_t ParseWork() const { return parse_work_; }

 private:
  bool StepParsing(size_t d, uint8_t byte, bool* ended_now);
  bool OneWay(const EarleySet& set) const;
  // A first step on a byte that no item of the path's state at depth d scans.
  bool RejectUnscannable(size_t d, uint8_t byte);
  // Interns the path's states up to depth d: from now on steps are memoized.
  void Start(size_t d);

  EarleyParser& parser_;
  EarleySet* const* scratch_;
  bool* ended_;
  bool no_watch_ = false;
  bool memo_allowed_, memo_started_ = false, skip_one_way_ = false;
  int64_t memo_after_, steps_parsed_ = 0;
  int64_t parse_work_ = 0;
  StateMemo memo_;
  // Per depth: the state, and its interned id or -1. In buffers this thread keeps for
  // its walks (TakeBuffers): a walk's own 2-3 KiB arrays went through malloc's
  // large-chunk path (malloc_consolidate), a tenth of a short direct walk.
  struct Buffers {
    std::vector<const EarleySet*> path;
    std::vector<int32_t> id;
  };
  static std::unique_ptr<Buffers> TakeBuffers();
  static std::vector<std::unique_ptr<Buffers>>& SpareBuffers();  // this thread's
  std::unique_ptr<Buffers> buffers_;
  const EarleySet** path_;
  int32_t* id_;
};

template <class UseUnasked>
bool StepsBackOn(StepTable& next, int32_t self, uint64_t classes, const ByteBits& disqualified, uint64_t& loops,
                 uint64_t& other, UseUnasked&& use_unasked) {
  uint64_t open = classes & ~loops;
  if (!open) return true;
  if (open & other) return false;
  for (; open; open &= open - 1) {
    const int c = __builtin_ctzll(open);
    const ByteBits& bytes = TrieClassBytes(c);
    bool back = true;
    for (int w = 0; w < 4 && back; ++w) {
      back = (bytes[w] & disqualified[w]) == 0;
      for (uint64_t bits = bytes[w]; bits && back; bits &= bits - 1) {
        const auto byte = static_cast<uint8_t>(64 * w + __builtin_ctzll(bits));
        int32_t to = next[byte];
        // Not stepped yet: not known here (no parse the walk would not make; the first
        // step into a subtree fills in the bytes that step alike, so its children's
        // subtrees are known).
        if (to == StateMemo::kUnknown) return false;
        if (StateMemo::IsUnasked(to) && StateMemo::Unasked(to) == self) {
          use_unasked(byte);
          next[byte] = static_cast<int16_t>(to = self);
        }
        back = to == self;
      }
    }
    (back ? loops : other) |= uint64_t{1} << c;
    if (!back) return false;
  }
  return true;
}

}  // namespace xgr2

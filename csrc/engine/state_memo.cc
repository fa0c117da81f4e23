#include "engine/state_memo.h"

#include <algorithm>
#include <cstring>

namespace xgr2 {

std::vector<std::unique_ptr<StateMemo::State[]>>& StateMemo::Spares() {
  thread_local std::vector<std::unique_ptr<State[]>> spares;
  return spares;
}

std::unique_ptr<StateMemo::State[]> StateMemo::TakeBlock() {
  std::vector<std::unique_ptr<State[]>>& spares = Spares();
  if (spares.empty()) return std::unique_ptr<State[]>(new State[kBlock]);
  std::unique_ptr<State[]> block = std::move(spares.back());
  spares.pop_back();
  return block;
}

StateMemo::~StateMemo() {
  constexpr size_t kMaxSpares = 16;  // 256 states, enough for most walks
  std::vector<std::unique_ptr<State[]>>& spares = Spares();
  // The next walk takes the last one given back first.
  for (size_t k = 0; k < blocks_.size() && spares.size() < kMaxSpares; ++k) spares.push_back(std::move(blocks_[k]));
}

int32_t StateMemo::Intern(const EarleySet& set, const Aliases& aliases) {
  if (states_.size() >= kMaxStates || set.items.size() > kMaxItems) return -1;
  // A state is its items with their origins as the interned sets they are (or stand
  // for), null for `set` itself. Origins are canonical (interned, or outside the walk),
  // so equal items mean equal parses without looking further (ParseSignature would, at
  // a cost that grows with the nesting).
  auto origin_of = [&](const EarleySet* o) -> const EarleySet* {
    if (o == &set) return nullptr;
    for (const auto& [scratch, interned] : aliases) {
      if (o == scratch) return interned;
    }
    return o;
  };
  uint64_t hash = set.initial ? 0x243F6A8885A308D3ull : 0x13198A2E03707344ull;
  for (const EarleyItem& item : set.items) {
    hash = (hash ^ static_cast<uint32_t>(item.node)) * 0x9E3779B97F4A7C15ull;  // (counts: compared below)
    hash = (hash ^ reinterpret_cast<uintptr_t>(origin_of(item.origin))) * 0xBF58476D1CE4E5B9ull;
    hash ^= hash >> 31;
  }
  auto same = [&](const State& s) {
    if (s.hash != hash || s.set.initial != set.initial || s.set.items.size() != set.items.size()) return false;
    for (size_t k = 0; k < set.items.size(); ++k) {
      const EarleyItem& have = s.set.items[k];
      const EarleySet* origin = origin_of(set.items[k].origin);
      if (have.node != set.items[k].node || have.count != set.items[k].count ||
          have.origin != (origin ? origin : &s.set)) {
        return false;
      }
    }
    return true;
  };
  if (2 * (states_.size() + 1) > slots_.size()) {  // at most half full: grow and rehash
    slots_.assign(std::max<size_t>(64, 2 * slots_.size()), -1);
    for (size_t id = 0; id < states_.size(); ++id) {
      size_t i = states_[id]->hash & (slots_.size() - 1);
      while (slots_[i] >= 0) i = (i + 1) & (slots_.size() - 1);
      slots_[i] = static_cast<int32_t>(id);
    }
  }
  size_t i = hash & (slots_.size() - 1);
  for (; slots_[i] >= 0; i = (i + 1) & (slots_.size() - 1)) {
    if (same(*states_[slots_[i]])) return slots_[i];
  }
  // New: taken from a block of states (one allocation per kBlock, not per state; a
  // state is initialized when taken).
  if (states_.size() % kBlock == 0) blocks_.push_back(TakeBlock());
  State* state = &blocks_.back()[states_.size() % kBlock];
  state->hash = hash;
  state->next.fill(kUnknown);
  state->ended = {};  // a spare block's states hold an earlier walk's
  state->unrecorded = {};
  state->loop_classes = state->other_classes = 0;
  state->self_step = false;
  EarleySet& copy = state->set;
  copy.items = set.items;
  for (EarleyItem& item : copy.items) {
    const EarleySet* origin = origin_of(item.origin);
    item.origin = origin ? origin : &copy;
  }
  copy.next_bytes = set.next_bytes;
  copy.accepting = set.accepting;
  copy.initial = set.initial;
  slots_[i] = static_cast<int32_t>(states_.size());
  states_.push_back(state);
  return slots_[i];
}

void StateMemo::SetNext(int32_t id, uint8_t byte, int32_t to, bool ended) {
  State& s = *states_[id];
  s.next[byte] = static_cast<int16_t>(to);
  if (to == id) s.self_step = true;
  if (ended) s.ended[byte >> 6] |= uint64_t{1} << (byte & 63);
}

void FillAlikeSteps(StepTable& next, ByteBits& flagged, const ByteSet& alike, int32_t to, bool flag,
                    bool unasked) {
  const auto step = static_cast<int16_t>(unasked ? StateMemo::Unasked(to) : to);
  for (int w = 0; w < 4; ++w) {
    for (uint64_t bits = alike[w]; bits; bits &= bits - 1) {
      int b = 64 * w + __builtin_ctzll(bits);
      if (next[b] != StateMemo::kUnknown) continue;
      next[b] = step;
      if (flag) flagged[w] |= uint64_t{1} << (b & 63);
    }
  }
}

MemoPath::MemoPath(EarleyParser& parser, EarleySet* const* scratch, size_t max_depth, const EarleySet& start,
                   bool* ended, bool memo, int64_t memo_after)
    : parser_(parser),
      scratch_(scratch),
      ended_(ended ? ended : &no_watch_),
      memo_allowed_(memo),
      memo_after_(memo_after),
      buffers_(TakeBuffers()) {
  buffers_->path.assign(max_depth, nullptr);
  buffers_->id.assign(max_depth, -1);
  path_ = buffers_->path.data();
  id_ = buffers_->id.data();
  path_[0] = &start;
}

std::vector<std::unique_ptr<MemoPath::Buffers>>& MemoPath::SpareBuffers() {
  thread_local std::vector<std::unique_ptr<Buffers>> spares;  // several when walks nest
  return spares;
}

std::unique_ptr<MemoPath::Buffers> MemoPath::TakeBuffers() {
  std::vector<std::unique_ptr<Buffers>>& spares = SpareBuffers();
  if (spares.empty()) return std::make_unique<Buffers>();
  std::unique_ptr<Buffers> b = std::move(spares.back());
  spares.pop_back();
  return b;
}

void MemoPath::Start(size_t d) {
  memo_started_ = true;
  StateMemo::Aliases aliases;
  for (size_t k = 0; k <= d; ++k) {
    int32_t id = memo_.Intern(*path_[k], aliases);
    if (id < 0) return;  // the deeper states stay unmemoized
    aliases.emplace_back(path_[k], &memo_.Set(id));
    path_[k] = &memo_.Set(id);
    id_[k] = id;
  }
}

MemoPath::~MemoPath() {
  SpareBuffers().push_back(std::move(buffers_));
  if (!parser_.TracksReach()) return;
  for (size_t id = 0; id < memo_.size(); ++id) {
    const ByteBits& bytes = memo_.Unrecorded(static_cast<int32_t>(id));
    if (bytes[0] | bytes[1] | bytes[2] | bytes[3]) parser_.AskItemsBytes(memo_.Set(static_cast<int32_t>(id)), bytes);
  }
}

ByteBits MemoPath::Scannable(size_t d, const ByteBits& bytes) {
  const EarleySet& set = *path_[d];
  ByteBits scannable, dead;
  for (int w = 0; w < 4; ++w) {
    scannable[w] = bytes[w] & set.next_bytes[w];
    dead[w] = bytes[w] & ~set.next_bytes[w];
  }
  if (parser_.TracksReach()) {  // as a step on each dead byte would (RejectUnscannable, Advance)
    if (id_[d] >= 0) {
      memo_.MarkUnrecorded(id_[d], dead);
    } else {
      parser_.AskItemsBytes(set, dead);
    }
  }
  return scannable;
}

bool MemoPath::LoopsOn(size_t d, uint64_t classes) {
  const int32_t id = id_[d];
  if (id < 0) return false;
  // A filled-in step relied on is read, as the step would record.
  return memo_.StepsBackOn(id, classes, [&](uint8_t byte) { parser_.AskItems(*path_[d], byte); });
}

bool MemoPath::RejectUnscannable(size_t d, uint8_t byte) {
  // Asked as a parsing step would, recorded when the walk ends.
  if (parser_.TracksReach()) memo_.MarkUnrecorded(id_[d], byte);
  memo_.SetNext(id_[d], byte, StateMemo::kDead, false);
  return false;
}

bool MemoPath::StepUninterned(size_t d, uint8_t byte) {
  EarleySet* next = scratch_[d + 1];
  *ended_ = false;
  ++parse_work_;
  if (!parser_.Advance(*path_[d], byte, next)) return false;
  parse_work_ += static_cast<int64_t>(next->items.size());
  path_[d + 1] = next;
  id_[d + 1] = -1;
  return true;
}

// A state on a one-way path: one item, at a node that steps back to itself on no byte,
// is no counted repetition, and whose every edge is a single byte (a literal's next
// letter, not a class). A walk down literal names (the tool-name dispatch after
// `<function=`) meets each such state once, and interning it, step table and all, cost
// more than the parse (callgrind: that walk 58% fewer instructions without). A class
// edge (hex digits, a string's characters) is stepped by many bytes alike, which the
// memo's steps share: such states stay interned.
bool MemoPath::OneWay(const EarleySet& set) const {
  if (set.items.size() != 1) return false;
  const GrammarFsm& fsm = parser_.fsm();
  const int32_t n = set.items[0].node;
  if (fsm.IsCounted(n)) return false;
  for (int32_t e = fsm.edge_begin[n]; e < fsm.rule_edge_begin[n]; ++e) {
    if (fsm.edges[e].target == n || fsm.edges[e].lo != fsm.edges[e].hi) return false;
  }
  return true;
}

bool MemoPath::StepParsing(size_t d, uint8_t byte, bool* ended_now) {
  if (memo_allowed_ && !memo_started_ && steps_parsed_++ >= memo_after_) Start(d);
  int32_t id = id_[d];
  if (id >= 0 && StateMemo::IsUnasked(memo_.Next(id, byte))) {  // filled in from a run
    parser_.AskItems(*path_[d], byte);
    int32_t to = memo_.TakeUnasked(id, byte);
    if (ended_now) *ended_now = memo_.Ended(id, byte);
    path_[d + 1] = &memo_.Set(to);
    id_[d + 1] = to;
    return true;
  }
  EarleySet* next = scratch_[d + 1];
  *ended_ = false;
  ++parse_work_;
  if (!parser_.Advance(*path_[d], byte, next)) {
    if (id >= 0) memo_.SetNext(id, byte, StateMemo::kDead, false);
    return false;
  }
  parse_work_ += static_cast<int64_t>(next->items.size());
  if (ended_now) *ended_now = *ended_;
  // Only a step from an interned state is interned: its origins are then interned too.
  // Below a one-way state left out, the walk parses.
  int32_t to = id >= 0 && !(skip_one_way_ && OneWay(*next)) ? memo_.Intern(*next) : -1;
  if (to >= 0) {
    memo_.SetNext(id, byte, to, *ended_);
    memo_.SetAlike(id, SameStepBytes(parser_.fsm(), *path_[d], byte), to, *ended_, parser_.TracksReach());
  }
  path_[d + 1] = to >= 0 ? &memo_.Set(to) : next;
  id_[d + 1] = to;
  return true;
}

}  // namespace xgr2

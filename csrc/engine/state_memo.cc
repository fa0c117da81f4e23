#include "engine/state_memo.h"

#include <cstring>

namespace xgr2 {

int32_t StateMemo::Intern(const EarleySet& set, const Aliases& aliases) {
  if (states_.size() >= kMaxStates || set.items.size() > kMaxItems) return -1;
  // The key: the items with their origins as the interned sets they are (or stand for),
  // 0 for `set` itself. Origins are canonical (interned, or outside the walk), so equal
  // keys mean equal parses without looking further (ParseSignature would, at a cost
  // that grows with the nesting).
  auto origin_of = [&](const EarleySet* o) -> const EarleySet* {
    if (o == &set) return nullptr;
    for (const auto& [scratch, interned] : aliases) {
      if (o == scratch) return interned;
    }
    return o;
  };
  constexpr size_t kItemBytes = sizeof(int32_t) + sizeof(const EarleySet*);
  key_.resize(1 + kItemBytes * set.items.size());
  key_[0] = set.initial ? 'i' : 'n';
  char* out = key_.data() + 1;
  for (const EarleyItem& item : set.items) {
    const EarleySet* origin = origin_of(item.origin);
    std::memcpy(out, &item.node, sizeof(int32_t));
    std::memcpy(out + sizeof(int32_t), &origin, sizeof(origin));
    out += kItemBytes;
  }
  auto [it, fresh] = by_key_.emplace(key_, static_cast<int32_t>(states_.size()));
  if (!fresh) return it->second;
  auto state = std::make_unique<State>();
  state->next.fill(kUnknown);
  EarleySet& copy = state->set;
  copy.items = set.items;
  for (EarleyItem& item : copy.items) {
    const EarleySet* origin = origin_of(item.origin);
    item.origin = origin ? origin : &copy;
  }
  copy.next_bytes = set.next_bytes;
  copy.accepting = set.accepting;
  copy.initial = set.initial;
  states_.push_back(std::move(state));
  return it->second;
}

void StateMemo::SetNext(int32_t id, uint8_t byte, int32_t to, bool ended) {
  State& s = *states_[id];
  s.next[byte] = to;
  if (ended) s.ended[byte >> 6] |= uint64_t{1} << (byte & 63);
}

void FillRunSteps(std::array<int32_t, 256>& next, ByteBits& flagged, int lo, int hi, int32_t to, bool flag,
                  bool unasked) {
  const int32_t step = unasked ? StateMemo::Unasked(to) : to;
  for (int b = lo; b <= hi; ++b) {
    if (next[b] != StateMemo::kUnknown) continue;
    next[b] = step;
    if (flag) flagged[b >> 6] |= uint64_t{1} << (b & 63);
  }
}

MemoPath::MemoPath(EarleyParser& parser, EarleySet* const* scratch, size_t max_depth, const EarleySet& start,
                   bool* ended, bool memo)
    : parser_(parser),
      scratch_(scratch),
      ended_(ended ? ended : &no_watch_),
      memo_allowed_(memo),
      path_(max_depth),
      id_(max_depth, -1) {
  path_[0] = &start;
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

bool MemoPath::StepParsing(size_t d, uint8_t byte, bool* ended_now) {
  if (memo_allowed_ && !memo_started_) Start(d);
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
  if (!parser_.Advance(*path_[d], byte, next)) {
    if (id >= 0) memo_.SetNext(id, byte, StateMemo::kDead, false);
    return false;
  }
  if (ended_now) *ended_now = *ended_;
  // Only a step from an interned state is interned: its origins are then interned too.
  int32_t to = id >= 0 ? memo_.Intern(*next) : -1;
  if (to >= 0) {
    memo_.SetNext(id, byte, to, *ended_);
    int lo, hi;
    SameStepRun(parser_.fsm(), *path_[d], byte, &lo, &hi);
    if (lo < hi) memo_.SetRun(id, lo, hi, to, *ended_, parser_.TracksReach());
  }
  path_[d + 1] = to >= 0 ? &memo_.Set(to) : next;
  id_[d + 1] = to;
  return true;
}

}  // namespace xgr2

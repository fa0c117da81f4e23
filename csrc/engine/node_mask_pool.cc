#include "engine/node_mask_pool.h"

#include <algorithm>
#include <cstring>

#include "grammar/fsm.h"
#include "grammar/fsm_key.h"

namespace xgr2 {

namespace {

uint64_t Mix(uint64_t a, uint64_t b) {
  __uint128_t product = static_cast<__uint128_t>(a) * b;
  return static_cast<uint64_t>(product) ^ static_cast<uint64_t>(product >> 64);
}

}  // namespace

size_t PoolKeyHash::operator()(std::string_view key) const {
  constexpr uint64_t k0 = 0xa0761d6478bd642full, k1 = 0xe7037ed1a0b428dbull, k2 = 0x8ebc6af09c88c6e3ull;
  const char* p = key.data();
  size_t n = key.size();
  uint64_t h = Mix(n ^ k0, k1);
  for (; n >= 16; p += 16, n -= 16) {
    uint64_t a, b;
    std::memcpy(&a, p, 8);
    std::memcpy(&b, p + 8, 8);
    h = Mix(a ^ k1 ^ h, b ^ k2);
  }
  uint64_t tail[2] = {0, 0};
  std::memcpy(tail, p, n);
  h = Mix(tail[0] ^ k1 ^ h, tail[1] ^ k2 ^ n);
  return static_cast<size_t>(Mix(h, k0));
}

namespace {

constexpr int64_t kEntryOverhead = 96;  // list and index nodes, shared_ptr control block

std::string FullKey(NodeMaskPool::Kind kind, std::string_view key) {
  std::string full(1, static_cast<char>(kind));
  full.append(key);
  return full;
}

}  // namespace

NodeMaskPool::Value NodeMaskPool::FindLocked(const std::string& full_key) {
  auto it = index_.find(full_key);
  if (it == index_.end()) {
    auto pre = prebuilt_values_.find(full_key);
    return pre == prebuilt_values_.end() ? nullptr : pre->second;
  }
  lru_.splice(lru_.begin(), lru_, it->second);  // now the most recently used
  return it->second->value;
}

void NodeMaskPool::EraseLocked(const std::string& full_key) {
  auto it = index_.find(full_key);
  if (it == index_.end()) return;
  bytes_ -= it->second->bytes;
  lru_.erase(it->second);
  index_.erase(it);
}

void NodeMaskPool::EvictTo(int64_t limit) {
  while (bytes_ > limit && !lru_.empty()) {
    Entry& last = lru_.back();
    index_.erase(last.key);
    bytes_ -= last.bytes;
    lru_.pop_back();
    ++evictions_;
  }
}

void NodeMaskPool::InsertLocked(std::string full_key, Value value, int64_t bytes) {
  if (recording_prebuilt_) {  // a prebuilt grammar's own entries (its id, its masks by id)
    prebuilt_values_.emplace(std::move(full_key), std::move(value));
    return;
  }
  bytes += static_cast<int64_t>(full_key.size()) + kEntryOverhead;
  if (bytes > limit_bytes_) return;  // too large to keep at all
  EvictTo(limit_bytes_ - bytes);
  lru_.push_front(Entry{std::move(full_key), std::move(value), bytes});
  index_.emplace(lru_.front().key, lru_.begin());
  bytes_ += bytes;
}

NodeMaskPool::Value NodeMaskPool::FindAny(Kind kind, std::string_view key) {
  std::string full = FullKey(kind, key);
  std::lock_guard<std::mutex> lock(mu_);
  Value found = FindLocked(full);
  if (found) ++hits_;
  return found;
}

NodeMaskPool::Value NodeMaskPool::InsertAny(Kind kind, std::string_view key, Value value, int64_t bytes) {
  std::string full = FullKey(kind, key);
  std::lock_guard<std::mutex> lock(mu_);
  if (Value found = FindLocked(full)) return found;
  InsertLocked(std::move(full), value, bytes);
  return value;
}

NodeMaskPool::Value NodeMaskPool::FindByReachAny(const std::string& core, const Matches& matches, bool count_miss) {
  std::shared_ptr<const KeyList> keys;  // immutable: matched outside the lock
  const KeyList* prebuilt = nullptr;    // written only before the pool is shared
  {
    std::lock_guard<std::mutex> lock(mu_);
    keys = std::static_pointer_cast<const KeyList>(FindLocked(FullKey(Kind::kReachIndex, core)));
    auto it = prebuilt_keys_.find(core);
    if (it != prebuilt_keys_.end()) prebuilt = &it->second;
  }
  if (prebuilt) {
    for (const auto& key : *prebuilt) {
      if (!matches(*key)) continue;
      std::lock_guard<std::mutex> lock(mu_);
      ++hits_;
      return prebuilt_values_.at(*key);
    }
  }
  if (keys) {
    for (const auto& key : *keys) {
      if (!matches(*key)) continue;
      std::lock_guard<std::mutex> lock(mu_);
      if (Value found = FindLocked(*key)) {
        ++hits_;
        return found;
      }
    }
  }
  if (count_miss) {
    std::lock_guard<std::mutex> lock(mu_);
    ++misses_;
  }
  return nullptr;
}

NodeMaskPool::Value NodeMaskPool::InsertByReachAny(const std::string& core, std::string full, Value value,
                                                   int64_t bytes) {
  std::string index_key = FullKey(Kind::kReachIndex, core);
  std::lock_guard<std::mutex> lock(mu_);
  if (recording_prebuilt_) {
    Value stored = prebuilt_values_.emplace(full, value).first->second;
    KeyList& keys = prebuilt_keys_[core];
    auto is_full = [&](const std::shared_ptr<const std::string>& key) { return *key == full; };
    if (std::none_of(keys.begin(), keys.end(), is_full)) keys.push_back(std::make_shared<const std::string>(full));
    return stored;
  }
  // The walk may have been stored already under another core: the ball around a node
  // holds edges no walk from it reads, so two structures that differ only there (a
  // dead end next to the node) reach the same key. Index it under this core too, or
  // every lookup here misses it and walks again.
  Value found = FindLocked(full);
  auto keys = std::static_pointer_cast<const KeyList>(FindLocked(index_key));
  auto is_full = [&](const std::shared_ptr<const std::string>& key) { return *key == full; };
  if (found && keys && std::any_of(keys->begin(), keys->end(), is_full)) return found;
  // Newest first: a workload going through many structures of one core (schemas whose
  // keys differ past the first bytes) most likely meets the recent ones again.
  auto grown = std::make_shared<KeyList>();
  grown->push_back(std::make_shared<const std::string>(full));
  int64_t index_bytes = static_cast<int64_t>(full.size() + sizeof(std::string));
  for (size_t i = 0; keys && i < keys->size() && grown->size() < kMaxKeysPerCore; ++i) {
    if (is_full((*keys)[i])) continue;
    grown->push_back((*keys)[i]);
    index_bytes += static_cast<int64_t>((*keys)[i]->size() + sizeof(std::string));
  }
  EraseLocked(index_key);  // replaced: the index entries are immutable like the rest
  InsertLocked(index_key, std::move(grown), index_bytes);
  if (found) return found;
  InsertLocked(std::move(full), value, bytes);
  return value;
}

namespace {

struct GrammarIdentity {
  std::shared_ptr<const GrammarFsm> fsm;
  int64_t id;
};

}  // namespace

int64_t NodeMaskPool::GrammarId(const std::shared_ptr<const GrammarFsm>& fsm, bool* known) {
  uint64_t hash = AutomataHash(*fsm);
  std::string full = FullKey(Kind::kGrammarId, {reinterpret_cast<const char*>(&hash), sizeof(hash)});
  std::shared_ptr<const GrammarIdentity> found;
  {
    std::lock_guard<std::mutex> lock(mu_);
    found = std::static_pointer_cast<const GrammarIdentity>(FindLocked(full));
  }
  // Confirmed outside the lock: a full comparison, only when the hashes agree.
  const bool same = found && (found->fsm == fsm || SameAutomata(*found->fsm, *fsm));
  if (known) *known = same;
  if (same) return found->id;
  std::lock_guard<std::mutex> lock(mu_);
  auto identity = std::make_shared<const GrammarIdentity>(GrammarIdentity{fsm, next_grammar_id_++});
  EraseLocked(full);  // other automata with this hash: replaced
  InsertLocked(std::move(full), identity, AutomataBytes(*fsm));
  return identity->id;
}

std::shared_ptr<const TokenSlice> NodeMaskPool::FindSlice(const std::string& key) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = slices_.find(key);
  return it == slices_.end() ? nullptr : it->second;
}

std::shared_ptr<const TokenSlice> NodeMaskPool::InsertSlice(const std::string& key,
                                                            std::shared_ptr<const TokenSlice> slice) {
  std::lock_guard<std::mutex> lock(mu_);
  if (slices_.size() >= kMaxSlices) return slice;
  return slices_.emplace(key, std::move(slice)).first->second;  // another thread's, if it was first
}

NodeMaskPool::PrebuiltScope::PrebuiltScope(NodeMaskPool& pool) : pool_(pool) {
  std::lock_guard<std::mutex> lock(pool_.mu_);
  pool_.recording_prebuilt_ = true;
}

NodeMaskPool::PrebuiltScope::~PrebuiltScope() {
  std::lock_guard<std::mutex> lock(pool_.mu_);
  pool_.recording_prebuilt_ = false;
  pool_.hits_ = pool_.misses_ = 0;  // the prebuilding's own lookups: a new pool counts from zero
}

void NodeMaskPool::Clear() {
  std::lock_guard<std::mutex> lock(mu_);
  index_.clear();
  lru_.clear();
  bytes_ = 0;
  hits_ = misses_ = evictions_ = 0;
}

void NodeMaskPool::SetLimitBytes(int64_t limit) {
  std::lock_guard<std::mutex> lock(mu_);
  limit_bytes_ = std::max<int64_t>(0, limit);
  EvictTo(limit_bytes_);
}

NodeMaskPool::Stats NodeMaskPool::GetStats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return Stats{hits_, misses_, static_cast<int64_t>(lru_.size()), bytes_, limit_bytes_, evictions_};
}

}  // namespace xgr2

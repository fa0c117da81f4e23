#include "engine/node_mask_pool.h"

#include <algorithm>

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
    for (size_t w = 0; w < words.size(); ++w) out[w] |= words[w];
  } else {
    for (int32_t id : ids) out[id >> 5] |= uint32_t{1} << (id & 31);
  }
}

template <class Map>
typename Map::mapped_type NodeMaskPool::FindIn(Map& map, Radii& radii, const std::string& core,
                                               const KeyAt& key_at, int32_t* radius) {
  std::vector<int32_t> candidates;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = radii.find(core);
    if (it != radii.end()) candidates = it->second;
  }
  for (int32_t r : candidates) {
    std::string key = key_at(r);  // outside the lock
    if (key.empty()) continue;
    std::lock_guard<std::mutex> lock(mu_);
    auto it = map.find(key);
    if (it != map.end()) {
      ++hits_;
      *radius = r;
      return it->second;
    }
  }
  std::lock_guard<std::mutex> lock(mu_);
  ++misses_;
  return nullptr;
}

template <class Map>
typename Map::mapped_type NodeMaskPool::InsertIn(Map& map, Radii& radii, const std::string& core, int32_t radius,
                                                 const std::string& key, typename Map::mapped_type value,
                                                 int64_t size) {
  constexpr size_t kMaxRadii = 8;  // bounds the keys a lookup computes
  std::lock_guard<std::mutex> lock(mu_);
  auto found = map.find(key);
  if (found != map.end()) return found->second;
  auto known = radii.find(core);
  if (known == radii.end()) {
    size += static_cast<int64_t>(core.size() + 64);
  } else if (known->second.size() >= kMaxRadii &&
             std::find(known->second.begin(), known->second.end(), radius) == known->second.end()) {
    return value;  // could not be found: not worth keeping
  }
  if (!Reserve(size)) return value;
  std::vector<int32_t>& stored = radii[core];  // (Reserve may have started over)
  if (std::find(stored.begin(), stored.end(), radius) == stored.end()) stored.push_back(radius);
  map.emplace(key, value);
  return value;
}

void NodeMaskPool::StartOver() {
  entries_.clear();
  contexts_.clear();
  radii_.clear();
  context_radii_.clear();
  grammar_ids_.clear();
  same_masks_.clear();
  same_lists_.clear();
  bytes_ = 0;
}

bool NodeMaskPool::Reserve(int64_t size) {
  if (bytes_ + size > limit_bytes_) {  // start over: simple, and bounded
    StartOver();
    if (size > limit_bytes_) return false;  // too large to keep at all
  }
  bytes_ += size;
  return true;
}

std::shared_ptr<const InnerMask> NodeMaskPool::Find(const std::string& core, const KeyAt& key_at,
                                                    int32_t* radius) {
  return FindIn(entries_, radii_, core, key_at, radius);
}

std::shared_ptr<const InnerMask> NodeMaskPool::Insert(const std::string& core, int32_t radius,
                                                      const std::string& key, std::shared_ptr<const InnerMask> mask) {
  int64_t size = static_cast<int64_t>(key.size() + mask->MemoryBytes() + 64);
  return InsertIn(entries_, radii_, core, radius, key, std::move(mask), size);
}

std::shared_ptr<const NodeMaskPool::TokenList> NodeMaskPool::FindContext(const std::string& core,
                                                                      const KeyAt& key_at, int32_t* radius) {
  return FindIn(contexts_, context_radii_, core, key_at, radius);
}

std::shared_ptr<const NodeMaskPool::TokenList> NodeMaskPool::InsertContext(const std::string& core, int32_t radius,
                                                                        const std::string& key,
                                                                        std::shared_ptr<const TokenList> tokens) {
  int64_t size = static_cast<int64_t>(key.size() + 4 * tokens->capacity() + 64);
  return InsertIn(contexts_, context_radii_, core, radius, key, std::move(tokens), size);
}

template <class Map>
typename Map::mapped_type NodeMaskPool::FindSameIn(Map& map, const std::string& key) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = map.find(key);
  if (it == map.end()) return nullptr;  // a miss: counted by the structural lookup, if one follows
  ++hits_;
  return it->second;
}

template <class Map>
typename Map::mapped_type NodeMaskPool::InsertSameIn(Map& map, const std::string& key,
                                                     typename Map::mapped_type value, int64_t size) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = map.find(key);
  if (it != map.end()) return it->second;
  if (Reserve(size)) map.emplace(key, value);
  return value;
}

int64_t NodeMaskPool::GrammarId(const std::string& fingerprint) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = grammar_ids_.find(fingerprint);
  if (it != grammar_ids_.end()) return it->second;
  int64_t id = next_grammar_id_++;
  if (Reserve(static_cast<int64_t>(fingerprint.size() + 64))) grammar_ids_.emplace(fingerprint, id);
  return id;
}

std::shared_ptr<const InnerMask> NodeMaskPool::FindSame(const std::string& key) {
  return FindSameIn(same_masks_, key);
}

std::shared_ptr<const InnerMask> NodeMaskPool::InsertSame(const std::string& key,
                                                          std::shared_ptr<const InnerMask> mask) {
  // (Counted in full even when a structural entry holds the same mask: bounded.)
  int64_t size = static_cast<int64_t>(key.size() + mask->MemoryBytes() + 64);
  return InsertSameIn(same_masks_, key, std::move(mask), size);
}

std::shared_ptr<const NodeMaskPool::TokenList> NodeMaskPool::FindSameList(const std::string& key) {
  return FindSameIn(same_lists_, key);
}

std::shared_ptr<const NodeMaskPool::TokenList> NodeMaskPool::InsertSameList(const std::string& key,
                                                                         std::shared_ptr<const TokenList> list) {
  int64_t size = static_cast<int64_t>(key.size() + 4 * list->capacity() + 64);
  return InsertSameIn(same_lists_, key, std::move(list), size);
}

void NodeMaskPool::Clear() {
  std::lock_guard<std::mutex> lock(mu_);
  StartOver();
  hits_ = misses_ = 0;
}

void NodeMaskPool::SetLimitBytes(int64_t limit) {
  std::lock_guard<std::mutex> lock(mu_);
  limit_bytes_ = std::max<int64_t>(0, limit);
  if (bytes_ > limit_bytes_) StartOver();
}

NodeMaskPool::Stats NodeMaskPool::GetStats() const {
  std::lock_guard<std::mutex> lock(mu_);
  int64_t entries = static_cast<int64_t>(entries_.size() + contexts_.size() + same_masks_.size() + same_lists_.size());
  return Stats{hits_, misses_, entries, bytes_, limit_bytes_};
}

}  // namespace xgr2

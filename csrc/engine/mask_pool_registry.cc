#include "engine/mask_pool_registry.h"

#include <iterator>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

namespace xgr2 {
namespace {

struct Slot {
  // The first holder's vocabulary_key(): a fingerprint match is confirmed on it (at
  // once when it is the same string, as for grammars compiled for one TokenizerInfo).
  std::shared_ptr<const std::string> vocabulary;
  std::weak_ptr<NodeMaskPool> pool;
};

struct Registry {
  std::mutex mu;
  std::unordered_map<uint64_t, std::vector<Slot>> by_fingerprint;
};

Registry& TheRegistry() {
  static Registry* registry = new Registry;  // never destroyed: pools may outlive exit
  return *registry;
}

}  // namespace

std::shared_ptr<NodeMaskPool> MaskPoolFor(const TokenizerInfo& tok) {
  Registry& reg = TheRegistry();
  const std::shared_ptr<const std::string>& vocabulary = tok.vocabulary_key();
  std::lock_guard<std::mutex> lock(reg.mu);
  std::shared_ptr<NodeMaskPool> found;
  for (auto it = reg.by_fingerprint.begin(); it != reg.by_fingerprint.end();) {
    std::vector<Slot>& slots = it->second;
    for (size_t i = 0; i < slots.size();) {
      std::shared_ptr<NodeMaskPool> pool = slots[i].pool.lock();
      if (!pool) {  // its last holder is gone: forget the vocabulary too (few: one per model)
        slots[i] = std::move(slots.back());
        slots.pop_back();
        continue;
      }
      if (!found && it->first == tok.fingerprint() &&
          (slots[i].vocabulary == vocabulary || *slots[i].vocabulary == *vocabulary)) {
        found = std::move(pool);
      }
      ++i;
    }
    it = slots.empty() ? reg.by_fingerprint.erase(it) : std::next(it);
  }
  if (!found) {
    found = std::make_shared<NodeMaskPool>();
    reg.by_fingerprint[tok.fingerprint()].push_back(Slot{vocabulary, found});
  }
  return found;
}

}  // namespace xgr2

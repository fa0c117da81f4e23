#include "engine/mask_pool_registry.h"

#include <mutex>
#include <string>
#include <vector>

#include "engine/looping_slice.h"
#include "engine/prebuilt_masks.h"

namespace xgr2 {
namespace {

struct Slot {
  uint64_t fingerprint;
  // The first holder's vocabulary_key(): a fingerprint match is confirmed on it (at
  // once when it is the same string, as for grammars compiled for one TokenizerInfo).
  std::shared_ptr<const std::string> vocabulary;
  std::weak_ptr<NodeMaskPool> pool;
};

struct Registry {
  std::mutex mu;
  std::vector<Slot> slots;  // few: one per live vocabulary, pruned on every lookup
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
  std::vector<Slot>& slots = reg.slots;
  for (size_t i = 0; i < slots.size();) {
    std::shared_ptr<NodeMaskPool> pool = slots[i].pool.lock();
    if (!pool) {  // its last holder is gone: forget the vocabulary too
      slots[i] = std::move(slots.back());
      slots.pop_back();
      continue;
    }
    if (!found && slots[i].fingerprint == tok.fingerprint() &&
        (slots[i].vocabulary == vocabulary || *slots[i].vocabulary == *vocabulary)) {
      found = std::move(pool);
    }
    ++i;
  }
  if (!found) {
    found = std::make_shared<NodeMaskPool>();
    PrebuildSlices(tok, *found);
    PrebuildJsonStringMasks(tok, *found);
    PrebuildBuiltinJsonMasks(tok, found);
    slots.push_back(Slot{tok.fingerprint(), vocabulary, found});
  }
  return found;
}

}  // namespace xgr2

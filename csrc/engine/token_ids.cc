#include "engine/token_ids.h"

#include <algorithm>
#include <unordered_set>
#include <vector>

#include "grammar/token_spelling.h"

namespace xgr2 {
namespace {

void SetIds(uint32_t lo, uint32_t hi, std::vector<uint32_t>* bits) {
  for (uint32_t id = lo; id <= hi; ++id) {
    if ((id & 31) == 0 && id + 31 <= hi) {  // a whole word
      (*bits)[id >> 5] = ~uint32_t{0};
      id += 31;
    } else {
      (*bits)[id >> 5] |= uint32_t{1} << (id & 31);
    }
  }
}

}  // namespace

void AddTokensById(const GrammarFsm& fsm, const TokenizerInfo& tok, const EarleySet& set, uint32_t* words) {
  if (!set.CanScan(kTokenMarker)) return;
  const uint32_t last = static_cast<uint32_t>(tok.tokenizer_size()) - 1;  // ids past it are padding
  size_t num_words = (static_cast<size_t>(tok.vocab_size()) + 31) / 32;
  thread_local std::vector<uint32_t> bits;
  bits.assign(num_words, 0);
  std::vector<int32_t> done;
  // Walks the id bytes after the marker from `node`: `prefix` holds the bytes so far.
  auto walk = [&](auto&& self, int32_t node, int depth, uint32_t prefix) -> void {
    for (int32_t e = fsm.edge_begin[node]; e < fsm.rule_edge_begin[node]; ++e) {
      const FsmEdge& edge = fsm.edges[e];
      if (depth + 1 == kTokenIdBytes) {
        uint32_t lo = prefix << 8 | edge.lo, hi = prefix << 8 | edge.hi;
        if (lo <= last) SetIds(lo, std::min(hi, last), &bits);
        continue;
      }
      int shift = 8 * (kTokenIdBytes - depth - 1);  // bits below this byte
      for (uint32_t b = edge.lo; b <= edge.hi && ((prefix << 8 | b) << shift) <= last; ++b) {
        self(self, edge.target, depth + 1, prefix << 8 | b);
      }
    }
  };
  for (const EarleyItem& item : set.items) {
    int32_t spelled = fsm.ByteTarget(item.node, kTokenMarker);
    if (spelled < 0 || std::find(done.begin(), done.end(), spelled) != done.end()) continue;
    done.push_back(spelled);
    walk(walk, spelled, 0, 0);
  }
  for (int32_t id : tok.stop_ids()) bits[id >> 5] &= ~(uint32_t{1} << (id & 31));
  for (size_t w = 0; w < num_words; ++w) words[w] |= bits[w];
}

std::shared_ptr<const EarleySet> UnionOfSets(const EarleySet& a, const EarleySet& b) {
  auto out = std::make_shared<EarleySet>();
  struct Hash {
    size_t operator()(const EarleyItem& i) const {
      return (std::hash<const void*>()(i.origin) * 31 + static_cast<size_t>(i.node)) * 31 +
             static_cast<size_t>(static_cast<uint32_t>(i.count));
    }
  };
  struct Eq {
    bool operator()(const EarleyItem& x, const EarleyItem& y) const {
      return x.node == y.node && x.count == y.count && x.origin == y.origin;
    }
  };
  std::unordered_set<EarleyItem, Hash, Eq> seen;
  for (const EarleySet* s : {&a, &b}) {
    for (EarleyItem item : s->items) {
      if (item.origin == s) item.origin = out.get();  // predicted at this position
      if (seen.insert(item).second) out->items.push_back(item);
    }
  }
  for (int w = 0; w < 4; ++w) out->next_bytes[w] = a.next_bytes[w] | b.next_bytes[w];
  out->accepting = a.accepting || b.accepting;
  KeepOrigins(out.get());
  return out;
}

}  // namespace xgr2

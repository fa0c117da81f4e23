#include "engine/token_walk.h"

#include <algorithm>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

namespace xgr2 {
namespace {

// Scratch sets, one per depth, reused across calls on a thread.
std::vector<std::unique_ptr<EarleySet>>& DepthSets(size_t depth) {
  thread_local std::vector<std::unique_ptr<EarleySet>> sets;
  while (sets.size() < depth) sets.push_back(std::make_unique<EarleySet>());
  return sets;
}

}  // namespace

void WalkAcceptedTokens(const GrammarFsm& fsm, const TokenizerInfo& tok, const EarleySet& start,
                        const int32_t* positions, size_t count, uint32_t* words) {
  const std::vector<int32_t>& sorted = tok.sorted_ids();
  EarleyParser parser(fsm, ThreadScratch());
  size_t max_depth = static_cast<size_t>(tok.max_token_bytes()) + 1;
  auto& sets = DepthSets(max_depth);
  std::vector<const EarleySet*> path(max_depth);
  path[0] = &start;
  if (!positions) {  // the whole vocabulary: walk the trie
    const TokenTrie& t = tok.trie();
    for (int32_t i = 0, n = t.size(); i < n;) {
      size_t d = t.depth[i];
      EarleySet* next = sets[d].get();
      next->parent = path[d - 1];
      if (!parser.Advance(*path[d - 1], t.byte[i], next)) {
        i = t.next[i];
        continue;
      }
      path[d] = next;
      for (int32_t k = 0; k < t.num_tokens[i]; ++k) {
        int32_t id = sorted[t.first_pos[i] + k];
        words[id >> 5] |= uint32_t{1} << (id & 31);
      }
      ++i;
    }
    return;
  }
  auto id_at = [&](size_t k) { return sorted[positions[k]]; };
  const std::string* prev = nullptr;  // the token whose bytes path[1..depth] spells
  size_t depth = 0;
  for (size_t k = 0; k < count;) {
    const std::string& s = tok.decoded(id_at(k));
    depth = SharedDepth(prev, s, depth);
    prev = &s;
    bool ok = true;
    while (depth < s.size()) {
      EarleySet* next = sets[depth + 1].get();
      next->parent = path[depth];
      if (!parser.Advance(*path[depth], static_cast<uint8_t>(s[depth]), next)) {
        ok = false;
        break;
      }
      path[++depth] = next;
    }
    if (ok) {
      int32_t id = id_at(k);
      words[id >> 5] |= uint32_t{1} << (id & 31);
      ++k;
      continue;
    }
    // Every later token starting with s[0..depth] is rejected too; they are contiguous.
    size_t plen = depth + 1;
    size_t lo = k + 1, hi = count;
    while (lo < hi) {
      size_t mid = lo + (hi - lo) / 2;
      const std::string& t = tok.decoded(id_at(mid));
      if (t.size() >= plen && std::memcmp(t.data(), s.data(), plen) == 0) {
        lo = mid + 1;
      } else {
        hi = mid;
      }
    }
    k = lo;
  }
}

}  // namespace xgr2

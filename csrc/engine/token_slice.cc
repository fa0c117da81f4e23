#include "engine/token_slice.h"

#include "support/utf8.h"

namespace xgr2 {

std::string SliceClass::Key() const {
  std::string key(reinterpret_cast<const char*>(ascii.data()), sizeof(ascii));
  key.push_back(utf8 ? 'u' : 'a');
  return key;
}

int SliceStep(const SliceClass& c, int state, uint8_t b) {
  if (state == 0 && b < 0x80) return c.HasAscii(b) ? 0 : -1;
  if (state == 0 && !c.utf8) return -1;
  return Utf8Step(state, b);
}

TokenSlice BuildTokenSlice(const TokenizerInfo& tok, const SliceClass& cls) {
  const TokenTrie& t = tok.trie();
  const std::vector<int32_t>& sorted = tok.sorted_ids();
  int32_t n = t.size();
  int8_t step[kUtf8States][256];
  for (int q = 0; q < kUtf8States; ++q) {
    for (int b = 0; b < 256; ++b) step[q][b] = static_cast<int8_t>(SliceStep(cls, q, static_cast<uint8_t>(b)));
  }
  TokenSlice slice;
  slice.cls = cls;
  slice.words.assign((static_cast<size_t>(tok.vocab_size()) + 31) / 32, 0);
  // outside_before[i]: trie nodes before i whose bytes leave the slice (with all their
  // subtree). A subtree holds a token outside the slice iff it holds such a node.
  std::vector<int32_t> outside_before(static_cast<size_t>(n) + 1);
  std::vector<int8_t> state(static_cast<size_t>(tok.max_token_bytes()) + 1, 0);
  int32_t outside = 0;
  for (int32_t i = 0; i < n;) {
    int d = t.depth[i];
    int8_t q = step[state[d - 1]][t.byte[i]];
    if (q < 0) {
      for (int32_t end = t.next[i]; i < end; ++i) outside_before[i] = outside++;
      continue;
    }
    state[d] = q;
    outside_before[i] = outside;
    for (int32_t k = 0; k < t.num_tokens[i]; ++k) {
      int32_t id = sorted[t.first_pos[i] + k];
      slice.words[id >> 5] |= uint32_t{1} << (id & 31);
    }
    slice.count += t.num_tokens[i];
    ++i;
  }
  outside_before[n] = outside;
  // The rest trie: the nodes whose subtree holds a token outside the slice, in preorder;
  // open[d] is the rest node at depth d + 1 on the current path, whose `next` is set
  // when the path leaves it.
  TokenTrie& r = slice.rest;
  std::vector<int32_t> open;
  for (int32_t i = 0; i < n; ++i) {
    if (outside_before[t.next[i]] == outside_before[i]) {
      i = t.next[i] - 1;  // the subtree is all in the slice
      continue;
    }
    int32_t here = static_cast<int32_t>(r.byte.size());
    size_t d = t.depth[i];
    while (open.size() >= d) {
      r.next[open.back()] = here;
      open.pop_back();
    }
    open.push_back(here);
    bool leaves = outside_before[i + 1] > outside_before[i];
    r.byte.push_back(t.byte[i]);
    r.depth.push_back(t.depth[i]);
    r.next.push_back(0);
    r.first_pos.push_back(static_cast<int32_t>(slice.rest_ids.size()));
    r.num_tokens.push_back(leaves ? t.num_tokens[i] : 0);
    slice.rest_to_full.push_back(i);
    if (leaves) {
      for (int32_t k = 0; k < t.num_tokens[i]; ++k) slice.rest_ids.push_back(sorted[t.first_pos[i] + k]);
    }
  }
  for (int32_t o : open) r.next[o] = static_cast<int32_t>(r.byte.size());
  r.first_pos.push_back(static_cast<int32_t>(slice.rest_ids.size()));
  return slice;
}

}  // namespace xgr2

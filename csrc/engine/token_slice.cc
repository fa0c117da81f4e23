#include "engine/token_slice.h"

#include <algorithm>
#include <array>
#include <utility>

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

namespace {

// The tokens' memberships, one bit per class (at most 64), by position in the trie's
// token order (sorted_ids): one pass over the trie for every class at once. All classes
// share the UTF-8 automaton (a class with no non-ASCII characters dies at any of them),
// so a trie node's state is its UTF-8 state and the classes still alive on its path;
// a subtree where none is alive is skipped.
std::vector<uint64_t> Memberships(const TokenizerInfo& tok, const std::vector<SliceClass>& classes) {
  const TokenTrie& t = tok.trie();
  int32_t n = t.size();
  uint64_t utf8_classes = 0;
  std::array<uint64_t, 128> with_ascii{};  // per ASCII byte: the classes holding it
  for (size_t k = 0; k < classes.size(); ++k) {
    if (classes[k].utf8) utf8_classes |= uint64_t{1} << k;
    for (int b = 0; b < 0x80; ++b) {
      if (classes[k].HasAscii(static_cast<uint8_t>(b))) with_ascii[b] |= uint64_t{1} << k;
    }
  }
  int8_t utf8_step[kUtf8States][256];
  for (int q = 0; q < kUtf8States; ++q) {
    for (int b = 0; b < 256; ++b) utf8_step[q][b] = static_cast<int8_t>(Utf8Step(q, static_cast<uint8_t>(b)));
  }
  std::vector<uint64_t> alive_at(t.first_pos.back(), 0);
  size_t max_depth = static_cast<size_t>(tok.max_token_bytes()) + 1;
  std::vector<int8_t> utf8(max_depth, 0);
  std::vector<uint64_t> alive(max_depth, 0);
  alive[0] = classes.size() == 64 ? ~uint64_t{0} : (uint64_t{1} << classes.size()) - 1;
  for (int32_t i = 0; i < n;) {
    int d = t.nodes[i].depth;
    uint8_t b = t.nodes[i].byte;
    int8_t u = utf8_step[utf8[d - 1]][b];
    uint64_t a = u < 0 ? 0 : alive[d - 1] & (b < 0x80 ? with_ascii[b] : utf8_classes);
    if (a == 0) {
      i = t.nodes[i].next;  // nothing below is in any class
      continue;
    }
    utf8[d] = u;
    alive[d] = a;
    for (int32_t p = t.first_pos[i], end = p + t.num_tokens[i]; p < end; ++p) alive_at[p] = a;
    ++i;
  }
  return alive_at;
}

// Class `k`'s slice from the memberships.
TokenSlice SliceOf(const TokenizerInfo& tok, const SliceClass& cls, const std::vector<uint64_t>& alive_at, size_t k) {
  const TokenTrie& t = tok.trie();
  const std::vector<int32_t>& sorted = tok.sorted_ids();
  int32_t n = t.size(), m = t.first_pos.back();
  TokenSlice slice;
  slice.cls = cls;
  slice.words.assign((static_cast<size_t>(tok.vocab_size()) + 31) / 32, 0);
  // outside_before[p]: tokens before position p outside the slice. A subtree's tokens
  // are the positions [first_pos[i], first_pos[next[i]]) (first_pos[n] = m).
  std::vector<int32_t> outside_before(static_cast<size_t>(m) + 1);
  int32_t outside = 0;
  for (int32_t p = 0; p < m; ++p) {
    outside_before[p] = outside;
    if ((alive_at[p] >> k) & 1) {
      int32_t id = sorted[p];
      slice.words[id >> 5] |= uint32_t{1} << (id & 31);
    } else {
      ++outside;
    }
  }
  outside_before[m] = outside;
  slice.count = m - outside;
  // The rest trie: the nodes whose subtree holds a token outside the slice, in preorder;
  // open[d] is the rest node at depth d + 1 on the current path, whose `next` is set
  // when the path leaves it. The tokens ending at a node are all in the slice or none.
  TokenTrie& r = slice.rest;
  auto all_in = [&](int32_t i) {
    return outside_before[t.first_pos[t.nodes[i].next]] == outside_before[t.first_pos[i]];
  };
  int32_t rest_nodes = 0;  // sized first: a sparse class's rest trie is most of the trie
  for (int32_t i = 0; i < n; ++i) {
    if (all_in(i)) {
      i = t.nodes[i].next - 1;
    } else {
      ++rest_nodes;
    }
  }
  r.nodes.resize(rest_nodes);
  r.first_pos.resize(rest_nodes + 1);
  r.num_tokens.resize(rest_nodes);
  slice.rest_to_full.resize(rest_nodes);
  slice.rest_ids.reserve(outside);
  std::vector<int32_t> open;
  for (int32_t i = 0, here = 0; i < n; ++i) {
    if (all_in(i)) {
      i = t.nodes[i].next - 1;  // the subtree is all in the slice
      continue;
    }
    size_t d = t.nodes[i].depth;
    while (open.size() >= d) {
      r.nodes[open.back()].next = here;
      open.pop_back();
    }
    open.push_back(here);
    int32_t p = t.first_pos[i];
    bool leaves = t.num_tokens[i] > 0 && !((alive_at[p] >> k) & 1);
    r.nodes[here].byte = t.nodes[i].byte;
    r.nodes[here].depth = t.nodes[i].depth;
    r.first_pos[here] = static_cast<int32_t>(slice.rest_ids.size());
    r.num_tokens[here] = leaves ? t.num_tokens[i] : 0;
    slice.rest_to_full[here] = i;
    if (leaves) slice.rest_ids.insert(slice.rest_ids.end(), sorted.begin() + p, sorted.begin() + p + t.num_tokens[i]);
    ++here;
  }
  for (int32_t o : open) r.nodes[o].next = rest_nodes;
  r.first_pos[rest_nodes] = static_cast<int32_t>(slice.rest_ids.size());
  IndexWideNodes(r);
  IndexSubtreeClasses(r);
  return slice;
}

}  // namespace

std::vector<TokenSlice> BuildTokenSlices(const TokenizerInfo& tok, const std::vector<SliceClass>& classes) {
  std::vector<TokenSlice> slices;
  for (size_t begin = 0; begin < classes.size(); begin += 64) {
    std::vector<SliceClass> group(classes.begin() + begin, classes.begin() + std::min(classes.size(), begin + 64));
    std::vector<uint64_t> alive_at = Memberships(tok, group);
    for (size_t k = 0; k < group.size(); ++k) slices.push_back(SliceOf(tok, group[k], alive_at, k));
  }
  return slices;
}

TokenSlice BuildTokenSlice(const TokenizerInfo& tok, const SliceClass& cls) {
  return std::move(BuildTokenSlices(tok, {cls})[0]);
}

}  // namespace xgr2

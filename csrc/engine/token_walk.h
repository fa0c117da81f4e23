// Walks tokens of the sorted vocabulary from a parser set, sharing the work of common
// prefixes (a trie walk over the sorted list) and skipping every token that extends a
// rejected prefix.
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

#include "engine/earley.h"
#include "xgr2/tokenizer.h"

namespace xgr2 {

// How many of the first `depth` bytes of `prev` (the bytes the parser stack spells)
// token `s` shares: the stack depth a trie walk can keep when moving on to `s`.
inline size_t SharedDepth(std::string_view prev, std::string_view s, size_t depth) {
  size_t lcp = 0, limit = std::min(depth, s.size());
  while (lcp < limit && prev[lcp] == s[lcp]) ++lcp;
  return lcp;
}

// Visits the trie nodes [begin, end) (whole subtrees) in preorder, one parser state per
// depth: step(d, byte) extends the path at depth d (0: before the token) by the node's
// byte and returns whether it lives; then on_alive(i) is called, else on_dead(i), and the
// node's subtree is skipped (every token below fails at the same byte).
//
// At a wide node (TokenTrie::Wide; the root too when [begin, end) is the whole trie),
// pick(d, children, &visit) may choose the children to step into: it returns true and
// sets `visit`, a subset of the children's bytes, taking on itself what stepping into
// the others would do (they are neither stepped nor reported dead); false: all.
//
// whole(i), asked at a live node before on_alive, may take the node's whole subtree
// at once when every token in it lives (MemoPath::LoopsOn; see TakesWholeSubtree): it
// returns true having done what on_alive would for each of its nodes, and the walk
// goes on after the subtree.
template <class Step, class OnAlive, class OnDead, class Pick, class Whole>
void WalkTrie(const TokenTrie& t, int32_t begin, int32_t end, Step&& step, OnAlive&& on_alive, OnDead&& on_dead,
              Pick&& pick, Whole&& whole);

// Whether every token below the live node i lives with the walk's state there: the
// state (a MemoPath or ContextWalk path) loops on every byte class below i (LoopsOn).
// Asked only where cheap to know and worth it: the state has a step back to itself
// (MayLoop) and the subtree 4+ nodes (else the check costs what their steps would).
template <class Path>
bool TakesWholeSubtree(const TokenTrie& t, int32_t i, Path& path) {
  constexpr int32_t kMinNodes = 4;
  const size_t d = t.nodes[i].depth;
  return path.MayLoop(d) && !t.below.empty() && t.nodes[i].next - i >= kMinNodes && path.LoopsOn(d, t.below[i]);
}

template <class Step, class OnAlive, class OnDead, class Pick, class Whole>
bool WalkWideChildren(const TokenTrie& t, const TokenTrie::Wide& w, size_t d, Step&& step, OnAlive&& on_alive,
                      OnDead&& on_dead, Pick&& pick, Whole&& whole) {
  std::array<uint64_t, 4> visit;
  if (!pick(d, w.bytes, &visit)) return false;
  for (int word = 0; word < 4; ++word) {
    for (uint64_t bits = visit[word]; bits; bits &= bits - 1) {
      int32_t c = t.ChildOn(w, static_cast<uint8_t>(64 * word + __builtin_ctzll(bits)));
      WalkTrie(t, c, t.nodes[c].next, step, on_alive, on_dead, pick, whole);  // depth < kWideMaxDepth
    }
  }
  return true;
}

template <class Step, class OnAlive, class OnDead, class Pick, class Whole>
void WalkTrie(const TokenTrie& t, int32_t begin, int32_t end, Step&& step, OnAlive&& on_alive, OnDead&& on_dead,
              Pick&& pick, Whole&& whole) {
  if (begin == 0 && end == t.size() && !t.wide_nodes.empty() && t.wide_nodes[0] == -1 &&
      WalkWideChildren(t, t.wide[0], 0, step, on_alive, on_dead, pick, whole)) {
    return;
  }
  for (int32_t i = begin; i < end;) {
    const TokenTrie::Node& n = t.nodes[i];
    if (!step(static_cast<size_t>(n.depth) - 1, n.byte)) {
      on_dead(i);
      i = n.next;
      continue;
    }
    if (whole(i)) {
      i = n.next;
      continue;
    }
    on_alive(i);
    if (n.wide && WalkWideChildren(t, *t.WideOf(i), n.depth, step, on_alive, on_dead, pick, whole)) {
      i = n.next;
    } else {
      ++i;
    }
  }
}

// Walks the tokens at sorted-vocabulary positions[0..count) (ascending) byte by byte,
// sharing the work of common prefixes: step(d, byte) extends the path at depth d (0:
// before the token) by one byte and returns whether it lives; on_token(k) is called for
// each token the path lives through. Tokens extending a dead prefix are skipped.
template <class Step, class OnToken>
void WalkPositions(const TokenizerInfo& tok, const int32_t* positions, size_t count, Step&& step,
                   OnToken&& on_token) {
  std::string_view prev;  // the token whose first `depth` bytes the path spells
  size_t depth = 0;
  for (size_t k = 0; k < count;) {
    const std::string_view s = tok.sorted_text(positions[k]);
    depth = SharedDepth(prev, s, depth);
    prev = s;
    bool ok = true;
    for (; depth < s.size(); ++depth) {
      if (!step(depth, static_cast<uint8_t>(s[depth]))) {
        ok = false;
        break;
      }
    }
    if (ok) {
      on_token(k++);
      continue;
    }
    // Every later token starting with s[0..depth] is rejected too; they are contiguous.
    size_t plen = depth + 1;
    size_t lo = k + 1, hi = count;
    while (lo < hi) {
      size_t mid = lo + (hi - lo) / 2;
      const std::string_view t = tok.sorted_text(positions[mid]);
      if (t.size() >= plen && t.substr(0, plen) == s.substr(0, plen)) {
        lo = mid + 1;
      } else {
        hi = mid;
      }
    }
    k = lo;
  }
}

// A node from which every way on is one byte to another node of its rule (a literal's
// next letter), and whether every item of `set` that scans a byte stands at such a node
// (some does): the direct walk then follows the literals by the automaton alone.
bool IsLiteralNode(const GrammarFsm& fsm, int32_t n);
bool ScansOnlyLiterals(const GrammarFsm& fsm, const EarleySet& set);

// Sets the bit of every token, among the sorted-vocabulary positions `positions[0..count)`
// (ascending; all positions when null), that the parser accepts from `start`. With
// `max_steps` >= 0, gives up after that many trie steps or that many units of parsing
// work (MemoPath::ParseWork: the walk of a state deep in a C expression made 39,000 in
// 4,096 steps, 5x the time of the classification it then fell back to; a JSON state's
// walk makes at most ~800) and returns false (`words` partly written).
bool WalkAcceptedTokens(const GrammarFsm& fsm, const TokenizerInfo& tok, const EarleySet& start,
                        const int32_t* positions, size_t count, uint32_t* words, int64_t max_steps = -1);

}  // namespace xgr2

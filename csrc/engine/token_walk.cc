#include "engine/token_walk.h"

#include <algorithm>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "engine/state_memo.h"
#include "xgr2/pop_count.h"

namespace xgr2 {

namespace {

// Whether the path at depth d steps alike on the four whitespace bytes: 1 to one live
// interned state (the path's at depth d + 1), 0 all dead, -1 otherwise.
template <class Step>
int StepsAlikeOnSpaces(MemoPath& path, size_t d, Step& step) {
  constexpr int32_t kDeadStep = -2;  // StateId is -1 for a live state not interned
  int32_t first = 0;
  for (uint8_t b : kWhitespaceBytes) {
    const int32_t to = step(d, b) ? path.StateId(d + 1) : kDeadStep;
    if (to == -1 || (b != ' ' && to != first)) return -1;
    first = to;
  }
  return first == kDeadStep ? 0 : 1;
}

// StepsAlikeOnSpaces at a depth below which the trie holds whitespace-only tokens alone
// (Llama-3: below depth 1). A bounded run (`[ \t\n\r]{0,20}`) reaches a new state at
// every byte, which interning and filling in its steps would pay for nothing: one
// parsing step on ' ', when every item's node sends the four bytes to one target.
int StepsAlikeOnSpacesTail(MemoPath& path, const GrammarFsm& fsm, size_t d) {
  constexpr uint64_t kSpaces = (uint64_t{1} << ' ') | (1 << '\t') | (1 << '\n') | (1 << '\r');  // all in word 0
  for (const EarleyItem& it : path.State(d).items) {
    const uint64_t edges = fsm.first_bytes[it.node][0] & kSpaces;
    if (edges == 0) continue;              // none goes anywhere
    if (edges != kSpaces) return -1;       // some do, some do not
    const int32_t target = fsm.ByteTarget(it.node, ' ');
    for (uint8_t b : {'\t', '\n', '\r'}) {
      if (fsm.ByteTarget(it.node, b) != target) return -1;
    }
  }
  return path.StepUninterned(d, ' ') ? 1 : 0;
}

// Walks the tokens that start with whitespace (TokenTrie::WhitespaceRuns) when the start
// steps alike on its four bytes, and every state reached on them too: the path is then at
// the same state at every whitespace node of a depth, so each depth costs four memoized
// steps, its tokens are taken from a list, and only the other children of those nodes
// are walked, by walk(child) (the wide ones' through pick(depth, bytes) first). Where the
// bytes part at a depth, the whitespace children below are walked as usual. False, with
// nothing done, when the start's own steps differ. With `tail_fsm` (a parser that does not
// record its reads), the depths below the last exit or wide node step by
// StepsAlikeOnSpacesTail once the run's states are seen to differ from depth to depth.
template <class Step, class Accept, class Pick, class Walk>
bool WalkWhitespaceRuns(const TokenTrie& t, MemoPath& path, Step& step, const GrammarFsm* tail_fsm,
                        Accept&& accept, Pick&& pick, Walk&& walk) {
  const TokenTrie::WhitespaceRuns& w = t.whitespace;
  if (w.max_depth == 0) return false;
  int alike = StepsAlikeOnSpaces(path, 0, step);
  if (alike < 0) return false;
  ByteBits spaces{};
  for (uint8_t b : kWhitespaceBytes) spaces[b >> 6] |= uint64_t{1} << (b & 63);
  bool in_tail = false;
  for (size_t d = 1; alike > 0; ++d) {  // the path at depth d: the state after d whitespace bytes
    for (int32_t k = w.token_begin[d]; k < w.token_begin[d + 1]; ++k) accept(w.tokens[k]);
    const ByteBits scannable = path.Scannable(d, w.exit_bytes[d]);
    for (int32_t k = w.exit_begin[d]; k < w.exit_begin[d + 1]; ++k) {
      const uint8_t b = t.nodes[w.exits[k]].byte;
      if ((scannable[b >> 6] >> (b & 63)) & 1) walk(w.exits[k]);
    }
    for (int32_t k = w.wide_begin[d]; k < w.wide_begin[d + 1]; ++k) {
      const TokenTrie::Wide& wide = *t.WideOf(w.wides[k]);
      ByteBits visit;
      pick(d, wide.bytes, &visit);
      for (int word = 0; word < 4; ++word) {
        for (uint64_t bits = visit[word] & ~spaces[word]; bits; bits &= bits - 1) {
          walk(t.ChildOn(wide, static_cast<uint8_t>(64 * word + __builtin_ctzll(bits))));
        }
      }
    }
    if (static_cast<int32_t>(d) == w.max_depth) break;
    // Past the exits, a run whose interned states differ at each depth (bounded) steps
    // uninterned; one that loops (`[ \t\n\r]*`) takes its memoized steps.
    if (tail_fsm && static_cast<int32_t>(d) >= w.tail_depth && path.StateId(d) >= 0 &&
        path.StateId(d) != path.StateId(d - 1)) {
      in_tail = true;
    }
    alike = in_tail ? StepsAlikeOnSpacesTail(path, *tail_fsm, d) : StepsAlikeOnSpaces(path, d, step);
    if (alike < 0) {  // the next depth's nodes are at different states: walk them as usual
      for (int32_t k = w.node_begin[d + 1]; k < w.node_begin[d + 2]; ++k) walk(w.nodes[k]);
    }
  }
  return true;
}

// The walk from a state whose scanning items all stand at literal nodes: the token trie
// and the literals' automaton side by side, one child lookup per byte and no parsing
// step (the parser's items would only move along the same edges). Where a literal ends
// in something else (a call, a class, its rule's end) and the trie goes on below, the
// parser takes over: `walk_below(node, bytes)` steps the path along the literal's bytes
// and walks the subtree below as usual. The tool-name dispatch after `<function=` (k =
// 50 names) made ~130 parsing steps and ~120 rejections per request before: 80.6k ->
// 54.9k instructions per mask (callgrind; 85.9k -> 49.3k with MemoPath's cheap
// rejection and the skipped probe), 25% less time (paired runs, 20-47 us).
template <class Accept, class WalkBelow>
class LiteralWalk {
 public:
  LiteralWalk(const GrammarFsm& fsm, const TokenTrie& t, Accept& accept, WalkBelow& walk_below,
              int64_t* steps_left)
      : fsm_(fsm), t_(t), accept_(accept), walk_below_(walk_below), steps_left_(steps_left) {}

  // From trie node i (-1: the root), whose bytes are `spelled_`, with the automaton at
  // `nodes` (all literal nodes).
  void Walk(int32_t i, const int32_t* nodes, size_t count) {
    if (count == 1) {  // one literal (a name past where it parts from the others): its edges in order
      const int32_t n = nodes[0];
      for (int32_t e = fsm_.edge_begin[n]; e < fsm_.rule_edge_begin[n]; ++e) {
        Visit(i, fsm_.edges[e].lo, &fsm_.edges[e].target, 1);
      }
      return;
    }
    ByteBits bytes{};
    for (size_t k = 0; k < count; ++k) {
      for (int32_t e = fsm_.edge_begin[nodes[k]]; e < fsm_.rule_edge_begin[nodes[k]]; ++e) {
        const uint8_t b = fsm_.edges[e].lo;
        bytes[b >> 6] |= uint64_t{1} << (b & 63);
      }
    }
    std::vector<int32_t> next;
    for (int word = 0; word < 4; ++word) {
      for (uint64_t bits = bytes[word]; bits; bits &= bits - 1) {
        const uint8_t b = static_cast<uint8_t>(64 * word + __builtin_ctzll(bits));
        next.clear();
        for (size_t k = 0; k < count; ++k) {
          const int32_t to = fsm_.ByteTarget(nodes[k], b);
          if (to >= 0 && std::find(next.begin(), next.end(), to) == next.end()) next.push_back(to);
        }
        Visit(i, b, next.data(), next.size());
      }
    }
  }

 private:
  // The step from trie node i on byte b, to the automaton's `to` (count nodes).
  void Visit(int32_t i, uint8_t b, const int32_t* to, size_t count) {
    if (--*steps_left_ < 0) return;  // over budget: the caller falls back
    const int32_t c = t_.Child(i, b);
    if (c < 0) return;
    for (int32_t k = 0; k < t_.num_tokens[c]; ++k) accept_(t_.first_pos[c] + k);
    if (t_.nodes[c].next == c + 1) return;  // no token goes on
    bool literal = true;
    for (size_t k = 0; k < count && literal; ++k) literal = IsLiteralNode(fsm_, to[k]);
    spelled_.push_back(static_cast<char>(b));
    if (literal) {
      Walk(c, to, count);
    } else {
      walk_below_(c, spelled_);
    }
    spelled_.pop_back();
  }

  const GrammarFsm& fsm_;
  const TokenTrie& t_;
  Accept& accept_;
  WalkBelow& walk_below_;
  int64_t* steps_left_;
  std::string spelled_;
};

}  // namespace

// A node from which every way on is one byte to another node: no end of its rule, no
// call, no byte class, no count. A literal's next letter (a tool name after
// `<function=`, a JSON key, an enum value): from a state whose items all stand at such
// nodes, the bytes ahead are a set of literals, walked by the automaton alone
// (LiteralWalk) down to where one ends in anything else.
bool IsLiteralNode(const GrammarFsm& fsm, int32_t n) {
  const int32_t begin = fsm.edge_begin[n], rules = fsm.rule_edge_begin[n];
  if (fsm.node_final[n] || begin == rules || rules != fsm.edge_begin[n + 1] || fsm.IsCounted(n)) return false;
  for (int32_t e = begin; e < rules; ++e) {
    if (fsm.edges[e].lo != fsm.edges[e].hi) return false;
  }
  return true;
}

// Whether every item of `set` that scans a byte stands at a literal node (some does).
// The others wait for a call to end (the caller of a tool name's rule), which only a
// step out of the literals can do: their closure is already in the set.
bool ScansOnlyLiterals(const GrammarFsm& fsm, const EarleySet& set) {
  bool any = false;
  for (const EarleyItem& it : set.items) {
    if (fsm.edge_begin[it.node] == fsm.rule_edge_begin[it.node]) continue;  // scans nothing
    if (!IsLiteralNode(fsm, it.node)) return false;
    any = true;
  }
  return any;
}

bool WalkAcceptedTokens(const GrammarFsm& fsm, const TokenizerInfo& tok, const EarleySet& start,
                        const int32_t* positions, size_t count, uint32_t* words, int64_t max_steps) {
  const std::vector<int32_t>& sorted = tok.sorted_ids();
  EarleyParser parser(fsm, ThreadScratch());
  size_t max_depth = static_cast<size_t>(tok.max_token_bytes()) + 1;
  thread_local ScratchSets sets;
  // The start's items have persistent origins, so the walk's states can be interned.
  // From a state that scans a few first bytes but no whitespace (a key's next letter),
  // only after kLazyMemoSteps parsing steps: such a walk mostly follows a few trie paths
  // and meets no state twice, and interning each cost as much as the walk (BFCL
  // schemas' direct walks: 4.5% fewer instructions, a key's mask 4.9 -> 4.0 us); one that
  // goes on into a string's content starts interning there. Whitespace runs
  // (WalkWhitespaceRuns) need the start interned.
  constexpr int kMaxNarrowBytes = 8;
  constexpr int64_t kLazyMemoSteps = 16;
  int scannable = 0;
  for (uint64_t w : start.next_bytes) scannable += PopCount64(w);
  const bool no_space_start = !positions && !ByteSetHas(start.next_bytes, ' ');
  const bool narrow = no_space_start && scannable <= kMaxNarrowBytes;
  const bool memo = !positions || count >= StateMemo::kMinTokens;
  MemoPath path(parser, sets.Get(max_depth), max_depth, start, nullptr, memo, narrow ? kLazyMemoSteps : 0);
  // A walk from a state that scans a few first bytes, none whitespace (a tool name's
  // first letters, a key's), follows literals down the trie: their states are not
  // interned (MemoPath::OneWay). A tool-calling request's name dispatch 58% fewer
  // instructions; JSON Schema and code-grammar masks unchanged (within 0.5%).
  constexpr int kMaxOneWayBytes = 64;
  if (no_space_start && scannable <= kMaxOneWayBytes) path.SkipOneWayStates();
  // Over budget, every step fails, so the walk unwinds without entering any subtree.
  int64_t steps_left = max_steps < 0 ? INT64_MAX : max_steps;
  const int64_t max_work = max_steps < 0 ? INT64_MAX : max_steps;
  auto step = [&](size_t d, uint8_t byte) {
    if (path.ParseWork() > max_work) steps_left = -1;
    return --steps_left >= 0 && path.Step(d, byte);
  };
  auto accept = [&](int32_t id) { words[id >> 5] |= uint32_t{1} << (id & 31); };
  if (!positions) {  // the whole vocabulary: walk the trie
    const TokenTrie& t = tok.trie();
    auto on_alive = [&](int32_t i) {
      for (int32_t k = 0; k < t.num_tokens[i]; ++k) accept(sorted[t.first_pos[i] + k]);
    };
    auto on_dead = [](int32_t) {};
    auto pick = [&](size_t d, const ByteBits& children, ByteBits* visit) {
      if (steps_left <= 0) {  // the children left unvisited would each cost a step: over budget
        steps_left = -1;
        *visit = ByteBits{};
        return true;
      }
      *visit = path.Scannable(d, children);
      return true;
    };
    auto whole = [&](int32_t i) {
      if (!TakesWholeSubtree(t, i, path)) return false;
      --steps_left;
      for (int32_t p = t.first_pos[i]; p < t.first_pos[t.nodes[i].next]; ++p) accept(sorted[p]);
      return true;
    };
    auto walk = [&](int32_t i) { WalkTrie(t, i, t.nodes[i].next, step, on_alive, on_dead, pick, whole); };
    if (ScansOnlyLiterals(fsm, start)) {
      // Below a literal's end the path is stepped along its bytes, from what it spelled
      // for the previous one (their common prefix kept).
      std::string on_path;
      auto walk_below = [&](int32_t c, const std::string& bytes) {
        size_t d = SharedDepth(on_path, bytes, on_path.size());
        for (; d < bytes.size(); ++d) {
          if (!step(d, static_cast<uint8_t>(bytes[d]))) break;
        }
        on_path.assign(bytes, 0, d);
        if (d < bytes.size()) return;  // over budget (the literal's bytes all live)
        const TokenTrie::Node& n = t.nodes[c];
        if (!(n.wide && WalkWideChildren(t, *t.WideOf(c), n.depth, step, on_alive, on_dead, pick, whole))) {
          WalkTrie(t, c + 1, n.next, step, on_alive, on_dead, pick, whole);
        }
      };
      auto accept_pos = [&](int32_t p) { accept(sorted[p]); };
      std::vector<int32_t> nodes;
      for (const EarleyItem& it : start.items) {
        if (fsm.edge_begin[it.node] != fsm.rule_edge_begin[it.node] &&
            std::find(nodes.begin(), nodes.end(), it.node) == nodes.end()) {
          nodes.push_back(it.node);
        }
      }
      LiteralWalk<decltype(accept_pos), decltype(walk_below)> literals(fsm, t, accept_pos, walk_below, &steps_left);
      literals.Walk(-1, nodes.data(), nodes.size());
      return steps_left >= 0;
    }
    // The tokens starting with whitespace first, by their runs when the state allows; the
    // root's whitespace children are then left out of the walk.
    const bool spaces_done = !t.wide_nodes.empty() && t.wide_nodes[0] == -1 &&
                             WalkWhitespaceRuns(t, path, step, parser.TracksReach() ? nullptr : &fsm,
                                                [&](int32_t p) { accept(sorted[p]); }, pick, walk);
    WalkTrie(t, 0, t.size(), step, on_alive, on_dead,
             [&](size_t d, const ByteBits& children, ByteBits* visit) {
               pick(d, children, visit);
               if (d == 0 && spaces_done) {
                 for (uint8_t b : kWhitespaceBytes) (*visit)[b >> 6] &= ~(uint64_t{1} << (b & 63));
               }
               return true;
             },
             whole);
  } else {
    WalkPositions(tok, positions, count, step, [&](size_t k) { accept(sorted[positions[k]]); });
  }
  return steps_left >= 0;
}

}  // namespace xgr2

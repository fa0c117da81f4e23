#include "engine/crossing_groups.h"

#include <algorithm>
#include <string>
#include <utility>

#include "engine/earley.h"
#include "engine/state_memo.h"

namespace xgr2 {
namespace {

// Crossing nodes whose parents' parses are the same state, and whose rule ended (or
// not) on the step into that parent alike, get the same key; kNoParentKey: unknown (a
// state the walk did not intern). Keys are below 2 * StateMemo::kMaxStates.
constexpr int64_t kNoParentKey = -1;
int64_t ParentKey(int32_t state, bool ended_here) {
  return state < 0 ? kNoParentKey : 2 * static_cast<int64_t>(state) + (ended_here ? 1 : 0);
}

// A trie built by insertion, a node's children found through one hash table by (node,
// byte) and listed in no order (a walk needs none). Sorting content's 2,700 suffixes
// instead cost 1.1M instructions; the whole GroupCrossing, re-walk included, is about 0.8M.
class SuffixTrie {
 public:
  explicit SuffixTrie(size_t tokens) {
    for (auto* v : {&first_child_, &next_sibling_, &first_token_, &token_next_, &token_pos_}) v->reserve(2 * tokens);
    byte_.reserve(2 * tokens);
    depth_.reserve(2 * tokens);
    Rehash(1024);
  }

  int32_t NewNode(uint8_t byte, uint16_t depth) {
    byte_.push_back(byte);
    depth_.push_back(depth);
    first_child_.push_back(-1);
    next_sibling_.push_back(-1);
    first_token_.push_back(-1);
    return static_cast<int32_t>(byte_.size()) - 1;
  }

  int32_t Child(int32_t node, uint8_t byte) {
    const int64_t key = static_cast<int64_t>(node) << 8 | byte;
    size_t i = Slot(key);
    for (; slot_key_[i] >= 0; i = (i + 1) & (slot_key_.size() - 1)) {
      if (slot_key_[i] == key) return slot_node_[i];
    }
    int32_t child = NewNode(byte, static_cast<uint16_t>(depth_[node] + 1));
    next_sibling_[child] = first_child_[node];
    first_child_[node] = child;
    slot_key_[i] = key;
    slot_node_[i] = child;
    if (2 * ++used_ > slot_key_.size()) Rehash(2 * slot_key_.size());
    return child;
  }

  void AddToken(int32_t node, int32_t position) {
    token_next_.push_back(first_token_[node]);
    token_pos_.push_back(position);
    first_token_[node] = static_cast<int32_t>(token_pos_.size()) - 1;
  }

  // Appends the nodes below `root` to `out` in preorder.
  void Emit(int32_t root, CrossingGroups* out) const {
    std::vector<std::pair<int32_t, int32_t>> stack;  // (node, its index in `out`, or -1 before)
    for (int32_t c = first_child_[root]; c >= 0; c = next_sibling_[c]) stack.emplace_back(c, -1);
    while (!stack.empty()) {
      auto [node, at] = stack.back();
      if (at >= 0) {  // its subtree is out
        out->next[at] = static_cast<int32_t>(out->byte.size());
        stack.pop_back();
        continue;
      }
      stack.back().second = static_cast<int32_t>(out->byte.size());
      out->byte.push_back(byte_[node]);
      out->depth.push_back(depth_[node]);
      out->next.push_back(-1);
      out->token_begin.push_back(static_cast<int32_t>(out->positions.size()));
      for (int32_t k = first_token_[node]; k >= 0; k = token_next_[k]) out->positions.push_back(token_pos_[k]);
      for (int32_t c = first_child_[node]; c >= 0; c = next_sibling_[c]) stack.emplace_back(c, -1);
    }
  }

 private:
  size_t Slot(int64_t key) const {
    return static_cast<size_t>((static_cast<uint64_t>(key) * 0x9E3779B97F4A7C15ull) >> 32) & (slot_key_.size() - 1);
  }
  void Rehash(size_t slots) {
    std::vector<int64_t> keys(slots, -1);
    std::vector<int32_t> nodes(slots);
    keys.swap(slot_key_);
    nodes.swap(slot_node_);
    for (size_t k = 0; k < keys.size(); ++k) {
      if (keys[k] < 0) continue;
      size_t i = Slot(keys[k]);
      while (slot_key_[i] >= 0) i = (i + 1) & (slots - 1);
      slot_key_[i] = keys[k];
      slot_node_[i] = nodes[k];
    }
  }

  size_t used_ = 0;
  std::vector<uint8_t> byte_;
  std::vector<uint16_t> depth_;
  std::vector<int32_t> first_child_, next_sibling_, first_token_;
  std::vector<int32_t> token_next_, token_pos_;  // per node, a list of its tokens' positions
  std::vector<int64_t> slot_key_;                // (node << 8 | byte), -1 empty
  std::vector<int32_t> slot_node_;
};

}  // namespace

std::unique_ptr<const CrossingGroups> GroupCrossing(const GrammarFsm& fsm, const TokenizerInfo& tok, int32_t node,
                                                    const std::vector<int32_t>& crossing,
                                                    const std::vector<uint16_t>& crossing_shared, size_t min_grouped) {
  // The inner parse again along the crossing paths (sharing prefixes, stepping by a
  // memo): each parent's interned state and whether the rule ended on the step into
  // it, and the bytes that follow an end. Done here, once per classification that gets
  // this far, rather than in every classification's walk.
  const TokenTrie& t = tok.trie();
  const std::vector<int32_t>& sorted = tok.sorted_ids();
  std::vector<int64_t> parent_keys(crossing.size(), kNoParentKey);
  ByteSet after_end_bytes{};
  {
    EarleyParser parser(fsm, ThreadScratch());
    EarleySet parent;
    bool ended = false;
    parser.Watch(&parent, &ended);
    const size_t max_depth = static_cast<size_t>(tok.max_token_bytes()) + 1;
    thread_local ScratchSets scratch;
    EarleySet* const* sets = scratch.Get(max_depth);
    parser.Seed(node, &parent, sets[0]);
    MemoPath path(parser, sets, max_depth, *sets[0], &ended);
    std::vector<uint8_t> ended_at(max_depth);
    size_t valid = 0;  // depths of the last path walked
    size_t added = 0;  // depths of that path whose bytes after an end are in the set
    for (size_t k = 0; k < crossing.size(); ++k) {
      const size_t parent_depth = static_cast<size_t>(t.nodes[crossing[k]].depth) - 1;
      const std::string& s = tok.decoded(sorted[t.first_pos[crossing[k]]]);
      size_t d = std::min<size_t>({crossing_shared[k], valid, parent_depth});
      added = std::min(added, d);
      bool alive = true;
      for (; d < parent_depth && alive; ++d) {
        bool ended_now = false;
        alive = path.Step(d, static_cast<uint8_t>(s[d]), &ended_now);
        ended_at[d + 1] = ended_now;
      }
      valid = alive ? parent_depth : 0;
      if (!alive) continue;  // not expected: the inner parse lives on proper prefixes
      parent_keys[k] = ParentKey(path.StateId(parent_depth), ended_at[parent_depth]);
      if (parent_keys[k] == kNoParentKey) continue;
      for (size_t e = std::max<size_t>(added, 1); e < parent_depth; ++e) {
        auto b = static_cast<uint8_t>(s[e]);
        if (ended_at[e]) after_end_bytes[b >> 6] |= uint64_t{1} << (b & 63);
      }
      added = parent_depth;
    }
  }
  // Members by key (counted in an array); a key met once is no group (its path is
  // walked as before).
  std::vector<int32_t> count(2 * StateMemo::kMaxStates, 0);
  std::vector<int32_t> keys;
  for (int64_t key : parent_keys) {
    if (key != kNoParentKey && count[key]++ == 0) keys.push_back(static_cast<int32_t>(key));
  }
  std::sort(keys.begin(), keys.end());
  std::vector<std::pair<int32_t, int32_t>> spans;  // per group: its members in by_key
  int32_t total = 0;
  for (int32_t key : keys) {
    if (count[key] < 2) {
      count[key] = -1;
      continue;
    }
    spans.emplace_back(total, count[key]);
    count[key] = total;  // from now on, where the key's next member goes
    total += spans.back().second;
  }
  std::vector<int32_t> by_key(total);
  for (size_t k = 0; k < crossing.size(); ++k) {
    if (parent_keys[k] != kNoParentKey && count[parent_keys[k]] >= 0) {
      by_key[count[parent_keys[k]]++] = static_cast<int32_t>(k);
    }
  }
  const auto grouped = static_cast<size_t>(total);
  size_t tokens = 0;
  for (int32_t k : by_key) tokens += t.first_pos[t.nodes[crossing[k]].next] - t.first_pos[crossing[k]];
  if (grouped < min_grouped || tokens > kMaxTokensPerGrouped * grouped) return nullptr;

  auto groups = std::make_unique<CrossingGroups>();
  groups->after_end_bytes = after_end_bytes;
  groups->grouped.assign(crossing.size(), 0);
  // Each group's tokens by their bytes from the crossing byte on, merged in one trie.
  SuffixTrie trie(tokens);
  for (const auto& [first, n] : spans) {
    CrossingGroups::Group group;
    const int32_t root_node = trie.NewNode(0, 0);
    for (int32_t j = first; j < first + n; ++j) {
      const int32_t k = by_key[j];
      int32_t root = crossing[k];
      size_t parent_depth = static_cast<size_t>(t.nodes[root].depth) - 1;
      if (group.rep < 0 || t.nodes[root].depth < t.nodes[crossing[group.rep]].depth) group.rep = k;
      groups->grouped[k] = 1;
      for (int32_t p = t.first_pos[root]; p < t.first_pos[t.nodes[root].next]; ++p) {
        const std::string& s = tok.decoded(sorted[p]);
        int32_t node = root_node;
        for (size_t d = parent_depth; d < s.size(); ++d) node = trie.Child(node, static_cast<uint8_t>(s[d]));
        trie.AddToken(node, p);
      }
    }
    group.begin = static_cast<int32_t>(groups->byte.size());
    trie.Emit(root_node, groups.get());
    group.end = static_cast<int32_t>(groups->byte.size());
    groups->groups.push_back(group);
  }
  groups->token_begin.push_back(static_cast<int32_t>(groups->positions.size()));
  return groups;
}

}  // namespace xgr2

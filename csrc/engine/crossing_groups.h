// A node's crossing subtrees merged by the parse they start from (cold masks, issue 13).
// Where a rule may end after almost any byte (a string's content), nearly every token
// holding a quote crosses: about 1,400 trie nodes of Llama-3's vocabulary, each walked
// in every context below its own path. Yet the inner parse at the parent of most of
// them is one state (the content after a whole character), and where the context
// joined at the rule's end cannot scan the byte after any earlier end on those paths
// (a closing quote after content), each earlier join dies at once and the outer parse
// at the parent is the latest join alone. Then a crossing subtree's fate in a context
// depends only on that state and on its bytes from the crossing byte on, so the
// subtrees of one such state merge into one trie (479 nodes for content), walked once
// below one representative path (ContextTokensOf).
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "grammar/fsm.h"
#include "xgr2/tokenizer.h"

namespace xgr2 {

struct CrossingGroups {
  struct Group {
    int32_t rep = -1;  // the shallowest member (an index into the crossing list)
    int32_t begin = 0, end = 0;  // its merged trie: nodes [begin, end) below
  };
  std::vector<Group> groups;
  std::vector<uint8_t> grouped;  // per crossing index: decided through its group
  // The bytes that, on some member's path before its parent, follow a depth where the
  // rule could end: a join there dies on them if it scans none of them.
  ByteSet after_end_bytes{};
  // The merged tries in preorder: a node's byte, its depth below the parent state (1:
  // the crossing byte), the node after its subtree, and its tokens, sorted-vocabulary
  // positions[token_begin[i] .. token_begin[i + 1]).
  std::vector<uint8_t> byte;
  std::vector<uint16_t> depth;
  std::vector<int32_t> next;
  std::vector<int32_t> token_begin;
  std::vector<int32_t> positions;

  size_t MemoryBytes() const {
    return sizeof(CrossingGroups) + sizeof(Group) * groups.capacity() + grouped.capacity() + byte.capacity() +
           2 * depth.capacity() + 4 * (next.capacity() + token_begin.capacity() + positions.capacity());
  }
};

// Groups the crossing trie nodes of `node`'s classification (preorder, ascending, with
// the depth each shares with the previous: InnerMask) by their parents' keys, parsing
// their paths from `node` again, and merges each group's subtrees below the parent.
// Null when fewer than kMinGroupedCrossing nodes would be grouped (a representative
// path per group, and the build, would cost about what they save) or when their
// subtrees hold over kMaxTokensPerGrouped tokens a node on average (free text that may
// end after any byte: tens of thousands of tokens below a few hundred nodes, which a
// context walk mostly cuts at their first byte, cost more to merge).
// `min_grouped` lowers the first bound for a build paid elsewhere (prebuilt_masks.h).
inline constexpr size_t kMinGroupedCrossing = 512;
inline constexpr size_t kMaxTokensPerGrouped = 16;
std::unique_ptr<const CrossingGroups> GroupCrossing(const GrammarFsm& fsm, const TokenizerInfo& tok, int32_t node,
                                                    const std::vector<int32_t>& crossing,
                                                    const std::vector<uint16_t>& crossing_shared,
                                                    size_t min_grouped = kMinGroupedCrossing);

}  // namespace xgr2

// A tokenizer's vocabulary as byte strings, sorted with prefix-trie ranges, plus
// which ids are special (never grammar text) and which stop generation.
#pragma once
#include <array>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "xgr2/pop_count.h"

namespace xgr2 {

// The tokens' byte trie in preorder, one entry per trie node except the root. A node's
// subtree is [i, nodes[i].next); its parent is the closest earlier node of depth
// nodes[i].depth - 1. The tokens spelled by node i are the sorted positions
// [first_pos[i], first_pos[i] + num_tokens[i]); the positions under its subtree are
// [first_pos[i], first_pos[nodes[i].next]). Walking it in order with one parser state
// per depth, and jumping to nodes[i].next when the byte is rejected, visits each shared
// prefix once and touches memory sequentially.
struct TokenTrie {
  // What a walk reads of every node it visits, in one 8-byte record: a rejected node is
  // one cache line to read, not one per array (walks skip from sibling to sibling
  // across the whole trie, megabytes for a 128k vocabulary).
  struct Node {
    int32_t next = 0;    // one past the node's subtree
    uint16_t depth = 0;  // 1 for the root's children
    uint8_t byte = 0;
    bool wide = false;   // listed in `wide` (IndexWideNodes)
  };
  std::vector<Node> nodes;
  std::vector<int32_t> first_pos;    // size() + 1 entries: first_pos.back() = number of tokens
  std::vector<uint16_t> num_tokens;  // tokens whose bytes end here (duplicates possible)

  // Nodes with many children: their children's bytes and indices, so that a walk whose
  // state scans few bytes steps only into those children and never reads the others'
  // records (a cache miss each: siblings lie a whole subtree apart). The root, when
  // wide, is wide_nodes[0] with node -1.
  static constexpr int kWideChildren = 8;
  static constexpr int kWideMaxDepth = 12;  // no deeper: bounds a walk's recursion
  struct Wide {
    std::array<uint64_t, 4> bytes{};     // the children's bytes
    int32_t first_child = 0;             // the children, in byte order, from children[first_child]
    std::array<uint8_t, 4> rank_before{};  // children on the bytes of the words before each word
  };
  std::vector<int32_t> wide_nodes;  // ascending
  std::vector<Wide> wide;           // by position in wide_nodes
  std::vector<int32_t> children;
  // Per node, the classes (TrieByteClass bits) of the bytes below it in its subtree: a
  // walk whose state steps back to itself on every byte of those classes accepts the
  // whole subtree without stepping into it (a number's digits, an identifier's letters).
  // Empty when not indexed (IndexSubtreeClasses).
  std::vector<uint64_t> below;
  // An open-addressing index of wide_nodes (position + 1; 0 = empty slot): a walk meets
  // a wide node at every few nodes, and a binary search there cost more than the step.
  std::vector<int32_t> wide_slots;
  int wide_shift = 32;  // slot = (node * kWideHash) >> wide_shift
  static constexpr uint32_t kWideHash = 0x9E3779B1u;

  // The nodes whose bytes are all whitespace (space, \t, \n, \r), by depth d (1 ..
  // max_depth; each list from its `begin[d]` to `begin[d + 1]`). A walk whose state steps
  // alike on the four bytes (JSON's bounded whitespace, any `[ \t\n\r]*`) is at the same
  // state at every such node of a depth, so it steps one chain of states instead of the
  // ~760 nodes (Llama-3's runs of spaces, newlines and indentation), and only from there
  // into their other children (WalkWhitespaceRuns in engine/token_walk.cc).
  struct WhitespaceRuns {
    int32_t max_depth = 0;                     // 0: no such node (not indexed)
    std::vector<int32_t> node_begin, nodes;    // the nodes
    std::vector<int32_t> token_begin, tokens;  // sorted positions of the tokens ending at them
    std::vector<int32_t> exit_begin, exits;    // their other children, but those of wide nodes
    std::vector<std::array<uint64_t, 4>> exit_bytes;  // per depth, the bytes of `exits`
    std::vector<int32_t> wide_begin, wides;           // those nodes that are wide
    int32_t tail_depth = 0;  // from this depth on, no exits or wide nodes: whitespace alone
  };
  WhitespaceRuns whitespace;

  // The root's children in byte order, with their subtrees' token ranges. Loops over
  // the first bytes read these: reading them off `nodes` and `first_pos` costs a cache
  // miss per child (each lies a whole subtree from the next): two such loops were 29%
  // of a 64 us mask over Llama-3's trie (perf). Filled by IndexWideNodes.
  struct Root {
    int32_t node = 0, next = 0;          // the subtree [node, next)
    int32_t first_pos = 0, end_pos = 0;  // its tokens' sorted positions
    uint8_t byte = 0;
  };
  std::vector<Root> roots;
  std::array<int32_t, 256> tokens_by_first_byte{};  // the roots' token counts, by byte

  int32_t size() const { return static_cast<int32_t>(nodes.size()); }
  // The child of node i (-1: the root) on `byte`, or -1.
  int32_t Child(int32_t i, uint8_t byte) const;
  // The wide entry of node i (-1: the root); null when it has none.
  const Wide* WideOf(int32_t i) const {
    if (wide_slots.empty()) return nullptr;
    size_t mask = wide_slots.size() - 1;
    for (size_t s = (static_cast<uint32_t>(i) * kWideHash) >> wide_shift;; s = (s + 1) & mask) {
      int32_t k = wide_slots[s];
      if (k == 0) return nullptr;
      if (wide_nodes[k - 1] == i) return &wide[k - 1];
    }
  }
  // The child of wide entry `w` on `byte`, which must be among w.bytes.
  int32_t ChildOn(const Wide& w, uint8_t byte) const {
    int word = byte >> 6;
    uint64_t below = w.bytes[word] & ((uint64_t{1} << (byte & 63)) - 1);
    return children[w.first_child + w.rank_before[word] + PopCount64(below)];
  }
};

// Fills the wide-node index of `t` (TokenTrie::wide) and its roots: its nodes must be
// complete.
void IndexWideNodes(TokenTrie& t);

// The whitespace bytes of TokenTrie::WhitespaceRuns (JSON's: space, \t, \n, \r).
inline constexpr uint8_t kWhitespaceBytes[] = {' ', '\t', '\n', '\r'};
inline bool IsWhitespaceByte(int b) { return b == ' ' || b == '\t' || b == '\n' || b == '\r'; }

// Fills TokenTrie::whitespace: its nodes and wide nodes must be complete.
void IndexWhitespaceRuns(TokenTrie& t);

// Byte classes of TokenTrie::below: digits, lowercase letters, uppercase letters, each
// other printable ASCII byte on its own (the space, quotes, backslash and operators end
// the loops that matter), \t, \n, \r, the other controls, DEL, UTF-8 continuation
// bytes, and the lead bytes of 2-, 3- and 4-byte sequences (with the invalid ones).
inline constexpr int kTrieByteClasses = 45;
int TrieByteClass(uint8_t byte);
// The bytes of class `c` (< kTrieByteClasses), as 4 words of 64 bits.
const std::array<uint64_t, 4>& TrieClassBytes(int c);
// Fills TokenTrie::below: its nodes must be complete.
void IndexSubtreeClasses(TokenTrie& t);

enum class VocabType : uint8_t {
  kRaw,           // tokens are their UTF-8 text
  kByteLevel,     // GPT-2 byte-to-unicode mapping (Llama 3, SmolLM2, Qwen, ...)
  kByteFallback,  // SentencePiece: "<0xAB>" byte tokens and U+2581 for space (Llama 2, Gemma)
};

class TokenizerInfo {
 public:
  // `encoded[i]` is token i as the tokenizer stores it, decoded to bytes as its
  // tokenizer's decoder would (a byte-level token that is not valid byte-level text,
  // such as an added "  ", stays as written). `vocab_size` is the logits width
  // (>= encoded.size()); ids past the tokenizer are padding.
  TokenizerInfo(const std::vector<std::string>& encoded, VocabType type, int32_t vocab_size,
                std::vector<int32_t> stop_ids, std::vector<int32_t> special_ids);

  int32_t vocab_size() const { return vocab_size_; }
  int32_t tokenizer_size() const { return static_cast<int32_t>(decoded_.size()); }
  VocabType vocab_type() const { return type_; }
  const std::string& decoded(int32_t id) const { return decoded_[id]; }
  const std::vector<int32_t>& stop_ids() const { return stop_ids_; }
  const std::vector<int32_t>& special_ids() const { return special_ids_; }
  bool is_stop(int32_t id) const { return kind_[id] == kStop; }
  // A token that can match grammar text: a real, non-special, non-empty token whose
  // bytes may be UTF-8 text (no byte 0xFF, which spells tokens matched by id).
  bool is_text(int32_t id) const { return kind_[id] == kText; }

  // The lowest id whose bytes are `text` (special tokens included), or -1. The index
  // is built on first use (thread-safe) and kept with the vocabulary.
  int32_t IdOfText(std::string_view text) const;

  // Text tokens sorted by bytes (a "position" is an index into this list).
  const std::vector<int32_t>& sorted_ids() const { return sorted_ids_; }
  // The bytes of the token at sorted position `pos`, from one buffer in sorted order:
  // walks over a list of positions read them in sequence, where decoded(id) is a cache
  // miss per token (the strings lie in id order).
  std::string_view sorted_text(int32_t pos) const {
    return {sorted_text_.data() + sorted_offsets_[pos],
            static_cast<size_t>(sorted_offsets_[pos + 1] - sorted_offsets_[pos])};
  }
  int32_t max_token_bytes() const { return max_token_bytes_; }
  // The byte trie of the sorted tokens, flat in preorder (see TokenTrie).
  const TokenTrie& trie() const { return trie_; }

  // Everything a token mask depends on (vocab_size, each id's kind, each token's
  // bytes), serialized once: equal keys mean interchangeable vocabularies.
  const std::shared_ptr<const std::string>& vocabulary_key() const { return vocabulary_key_; }
  // A hash of vocabulary_key(): finds the candidates that the key confirms.
  uint64_t fingerprint() const { return fingerprint_; }

 private:
  void BuildTrie();
  std::string VocabularyKey() const;

  enum Kind : uint8_t { kText, kSpecial, kStop, kPadding, kEmpty, kNotText };
  VocabType type_;
  int32_t vocab_size_;
  std::vector<std::string> decoded_;
  std::vector<uint8_t> kind_;  // per id < vocab_size
  std::vector<int32_t> stop_ids_;
  std::vector<int32_t> special_ids_;
  std::vector<int32_t> sorted_ids_;
  std::string sorted_text_;             // sorted_text(): the tokens' bytes in sorted order
  std::vector<int32_t> sorted_offsets_;  // where each starts, and the end
  TokenTrie trie_;
  int32_t max_token_bytes_ = 0;
  std::shared_ptr<const std::string> vocabulary_key_;
  uint64_t fingerprint_ = 0;
  mutable std::once_flag ids_by_text_once_;
  mutable std::unordered_map<std::string_view, int32_t> ids_by_text_;  // views into decoded_
};

using TokenizerPtr = std::shared_ptr<const TokenizerInfo>;

}  // namespace xgr2

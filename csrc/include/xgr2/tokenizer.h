// A tokenizer's vocabulary as byte strings, sorted with prefix-trie ranges, plus
// which ids are special (never grammar text) and which stop generation.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace xgr2 {

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
  // A token that can match grammar text: a real, non-special, non-empty token.
  bool is_text(int32_t id) const { return kind_[id] == kText; }

  // Text tokens sorted by bytes; subtree_end(i) is one past the last sorted token
  // that has sorted token i as a prefix.
  const std::vector<int32_t>& sorted_ids() const { return sorted_ids_; }
  int32_t subtree_end(int32_t i) const { return subtree_end_[i]; }
  int32_t max_token_bytes() const { return max_token_bytes_; }

 private:
  enum Kind : uint8_t { kText, kSpecial, kStop, kPadding, kEmpty };
  VocabType type_;
  int32_t vocab_size_;
  std::vector<std::string> decoded_;
  std::vector<uint8_t> kind_;  // per id < vocab_size
  std::vector<int32_t> stop_ids_;
  std::vector<int32_t> special_ids_;
  std::vector<int32_t> sorted_ids_;
  std::vector<int32_t> subtree_end_;
  int32_t max_token_bytes_ = 0;
};

using TokenizerPtr = std::shared_ptr<const TokenizerInfo>;

}  // namespace xgr2

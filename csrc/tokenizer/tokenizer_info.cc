#include "xgr2/tokenizer.h"

#include <algorithm>

#include "support/utf8.h"
#include "xgr2/errors.h"

namespace xgr2 {
namespace {

constexpr int32_t kMaxTokenBytes = 4096;  // longer tokens are rejected (docs/limits.md)

// Inverse of GPT-2's bytes_to_unicode: printable bytes map to themselves, the other
// 68 bytes to U+0100.. in byte order.
std::vector<int32_t> ByteLevelInverse() {
  std::vector<int32_t> inv(324, -1);
  int next = 256;
  for (int b = 0; b < 256; ++b) {
    bool printable = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174);
    inv[printable ? b : next++] = b;
  }
  return inv;
}

std::string DecodeByteLevel(const std::string& s, const std::vector<int32_t>& inv) {
  std::string out;
  size_t pos = 0;
  while (pos < s.size()) {
    int32_t cp = DecodeUtf8(s, &pos);
    if (cp < 0 || cp >= static_cast<int32_t>(inv.size()) || inv[cp] < 0) return s;  // not byte-level: keep text
    out.push_back(static_cast<char>(inv[cp]));
  }
  return out;
}

int HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

std::string DecodeByteFallback(const std::string& s) {
  if (s.size() == 6 && s.compare(0, 3, "<0x") == 0 && s[5] == '>' && HexDigit(s[3]) >= 0 && HexDigit(s[4]) >= 0) {
    return std::string(1, static_cast<char>(HexDigit(s[3]) * 16 + HexDigit(s[4])));
  }
  static const std::string kSpace = "\xE2\x96\x81";  // U+2581
  std::string out;
  for (size_t i = 0; i < s.size();) {
    if (s.compare(i, 3, kSpace) == 0) {
      out.push_back(' ');
      i += 3;
    } else {
      out.push_back(s[i++]);
    }
  }
  return out;
}

}  // namespace

TokenizerInfo::TokenizerInfo(const std::vector<std::string>& encoded, VocabType type, int32_t vocab_size,
                             std::vector<int32_t> stop_ids, std::vector<int32_t> special_ids)
    : type_(type), vocab_size_(vocab_size) {
  int32_t n = static_cast<int32_t>(encoded.size());
  if (n == 0) throw TokenizerError("the vocabulary is empty");
  if (vocab_size < n) {
    throw TokenizerError("vocab_size " + std::to_string(vocab_size) + " is smaller than the tokenizer's " +
                         std::to_string(n) + " tokens");
  }
  auto check_id = [&](int32_t id, const char* what) {
    if (id < 0 || id >= n) {
      throw TokenizerError(std::string(what) + " token id " + std::to_string(id) + " is outside the tokenizer's " +
                           std::to_string(n) + " tokens");
    }
  };

  static const std::vector<int32_t> kInv = ByteLevelInverse();
  decoded_.resize(n);
  for (int32_t i = 0; i < n; ++i) {
    if (type == VocabType::kRaw) {
      decoded_[i] = encoded[i];
    } else if (type == VocabType::kByteLevel) {
      decoded_[i] = DecodeByteLevel(encoded[i], kInv);
    } else {
      decoded_[i] = DecodeByteFallback(encoded[i]);
    }
    max_token_bytes_ = std::max<int32_t>(max_token_bytes_, static_cast<int32_t>(decoded_[i].size()));
  }
  if (max_token_bytes_ > kMaxTokenBytes) {
    throw TokenizerError("a token is " + std::to_string(max_token_bytes_) + " bytes long; the limit is " +
                         std::to_string(kMaxTokenBytes));
  }

  kind_.assign(vocab_size, kText);
  std::fill(kind_.begin() + n, kind_.end(), kPadding);
  for (int32_t i = 0; i < n; ++i) {
    if (decoded_[i].empty()) kind_[i] = kEmpty;  // would let generation stall forever
    // No UTF-8 text holds 0xFF; scanning it would enter a token id's spelling.
    if (decoded_[i].find('\xFF') != std::string::npos) kind_[i] = kNotText;
  }
  std::sort(special_ids.begin(), special_ids.end());
  special_ids.erase(std::unique(special_ids.begin(), special_ids.end()), special_ids.end());
  for (int32_t id : special_ids) check_id(id, "special"), kind_[id] = kSpecial;
  std::sort(stop_ids.begin(), stop_ids.end());
  stop_ids.erase(std::unique(stop_ids.begin(), stop_ids.end()), stop_ids.end());
  for (int32_t id : stop_ids) check_id(id, "stop"), kind_[id] = kStop;
  stop_ids_ = std::move(stop_ids);
  special_ids_ = std::move(special_ids);

  for (int32_t i = 0; i < n; ++i) {
    if (kind_[i] == kText) sorted_ids_.push_back(i);
  }
  std::stable_sort(sorted_ids_.begin(), sorted_ids_.end(),
                   [&](int32_t a, int32_t b) { return decoded_[a] < decoded_[b]; });
  BuildTrie();
  vocabulary_key_ = std::make_shared<const std::string>(VocabularyKey());
  fingerprint_ = 1469598103934665603ull;  // FNV-1a
  for (unsigned char c : *vocabulary_key_) fingerprint_ = (fingerprint_ ^ c) * 1099511628211ull;
}

int32_t TokenizerInfo::IdOfText(std::string_view text) const {
  std::call_once(ids_by_text_once_, [&] {
    for (int32_t id = tokenizer_size() - 1; id >= 0; --id) ids_by_text_[decoded_[id]] = id;  // lowest id last
  });
  auto it = ids_by_text_.find(text);
  return it == ids_by_text_.end() ? -1 : it->second;
}

std::string TokenizerInfo::VocabularyKey() const {
  std::string key;
  auto put = [&](int32_t v) { key.append(reinterpret_cast<const char*>(&v), sizeof(v)); };
  put(vocab_size_);
  put(tokenizer_size());
  key.append(reinterpret_cast<const char*>(kind_.data()), kind_.size());
  for (const std::string& s : decoded_) {
    put(static_cast<int32_t>(s.size()));
    key.append(s);
  }
  return key;
}

void TokenizerInfo::BuildTrie() {
  // Each token adds the nodes for the bytes past its common prefix with the previous
  // token; open[d] is the node at depth d + 1 on the current path.
  TokenTrie& t = trie_;
  std::vector<int32_t> open;
  const std::string* prev = nullptr;
  int32_t m = static_cast<int32_t>(sorted_ids_.size());
  sorted_offsets_.reserve(m + 1);
  for (int32_t k = 0; k < m; ++k) {
    const std::string& s = decoded_[sorted_ids_[k]];
    sorted_offsets_.push_back(static_cast<int32_t>(sorted_text_.size()));
    sorted_text_ += s;
    size_t lcp = 0;
    if (prev) {
      size_t limit = std::min(prev->size(), s.size());
      while (lcp < limit && (*prev)[lcp] == s[lcp]) ++lcp;
    }
    while (open.size() > lcp) {  // close the nodes the new token leaves
      t.nodes[open.back()].next = t.size();
      open.pop_back();
    }
    for (size_t d = lcp; d < s.size(); ++d) {
      open.push_back(t.size());
      t.nodes.push_back({0, static_cast<uint16_t>(d + 1), static_cast<uint8_t>(s[d])});
      t.first_pos.push_back(k);
      t.num_tokens.push_back(0);
    }
    ++t.num_tokens[open.back()];  // s is non-empty: empty tokens are not text
    prev = &s;
  }
  for (int32_t i : open) t.nodes[i].next = t.size();
  sorted_offsets_.push_back(static_cast<int32_t>(sorted_text_.size()));
  t.first_pos.push_back(m);
  IndexWideNodes(t);
  IndexSubtreeClasses(t);
  IndexWhitespaceRuns(t);
}

namespace {

struct ByteClasses {
  std::array<uint8_t, 256> of{};
  std::array<std::array<uint64_t, 4>, kTrieByteClasses> bytes{};
  ByteClasses() {
    int next = 3;  // 0-2: digits, lowercase, uppercase
    for (int b = 0; b < 256; ++b) {
      int c;
      if (b >= '0' && b <= '9') {
        c = 0;
      } else if (b >= 'a' && b <= 'z') {
        c = 1;
      } else if (b >= 'A' && b <= 'Z') {
        c = 2;
      } else if (b >= 0x20 && b < 0x7F) {
        c = next++;  // 33 printable others: 3-35
      } else if (b == '\t' || b == '\n' || b == '\r') {
        c = b == '\t' ? 36 : b == '\n' ? 37 : 38;
      } else if (b < 0x20) {
        c = 39;
      } else if (b == 0x7F) {
        c = 40;
      } else if (b < 0xC0) {
        c = 41;
      } else if (b < 0xE0) {
        c = 42;
      } else if (b < 0xF0) {
        c = 43;
      } else {
        c = 44;
      }
      of[b] = static_cast<uint8_t>(c);
      bytes[c][b >> 6] |= uint64_t{1} << (b & 63);
    }
  }
};

const ByteClasses& Classes() {
  static const ByteClasses classes;
  return classes;
}

}  // namespace

int TrieByteClass(uint8_t byte) { return Classes().of[byte]; }

const std::array<uint64_t, 4>& TrieClassBytes(int c) { return Classes().bytes[c]; }

void IndexSubtreeClasses(TokenTrie& t) {
  // Backwards, so every child is done before its parent.
  t.below.assign(t.nodes.size(), 0);
  for (int32_t i = t.size() - 1; i >= 0; --i) {
    uint64_t below = 0;
    for (int32_t c = i + 1; c < t.nodes[i].next; c = t.nodes[c].next) {
      below |= t.below[c] | uint64_t{1} << TrieByteClass(t.nodes[c].byte);
    }
    t.below[i] = below;
  }
}

int32_t TokenTrie::Child(int32_t i, uint8_t byte) const {
  if (i < 0) {
    if (!wide_nodes.empty() && wide_nodes[0] == -1) {
      return (wide[0].bytes[byte >> 6] >> (byte & 63)) & 1 ? ChildOn(wide[0], byte) : -1;
    }
    for (const Root& r : roots) {
      if (r.byte == byte) return r.node;
    }
    return -1;
  }
  if (nodes[i].wide) {
    const Wide& w = *WideOf(i);
    return (w.bytes[byte >> 6] >> (byte & 63)) & 1 ? ChildOn(w, byte) : -1;
  }
  for (int32_t c = i + 1; c < nodes[i].next; c = nodes[c].next) {
    if (nodes[c].byte == byte) return c;
  }
  return -1;
}

void IndexWideNodes(TokenTrie& t) {
  t.roots.clear();
  t.tokens_by_first_byte.fill(0);
  for (int32_t i = 0; i < t.size(); i = t.nodes[i].next) {
    t.roots.push_back({i, t.nodes[i].next, t.first_pos[i], t.first_pos[t.nodes[i].next], t.nodes[i].byte});
    t.tokens_by_first_byte[t.nodes[i].byte] = t.roots.back().end_pos - t.roots.back().first_pos;
  }
  t.wide_nodes.clear();
  t.wide.clear();
  t.children.clear();
  auto index = [&](int32_t node, int32_t begin, int32_t end) {
    int count = 0;
    for (int32_t c = begin; c < end; c = t.nodes[c].next) ++count;
    if (count < TokenTrie::kWideChildren) return;
    TokenTrie::Wide w;
    w.first_child = static_cast<int32_t>(t.children.size());
    for (int32_t c = begin; c < end; c = t.nodes[c].next) {
      uint8_t b = t.nodes[c].byte;
      w.bytes[b >> 6] |= uint64_t{1} << (b & 63);
      t.children.push_back(c);
    }
    for (int k = 1; k < 4; ++k) {
      w.rank_before[k] = static_cast<uint8_t>(w.rank_before[k - 1] + PopCount64(w.bytes[k - 1]));
    }
    if (node >= 0) t.nodes[node].wide = true;
    t.wide_nodes.push_back(node);
    t.wide.push_back(w);
  };
  index(-1, 0, t.size());
  for (int32_t i = 0; i < t.size(); ++i) {
    t.nodes[i].wide = false;
    if (t.nodes[i].depth < TokenTrie::kWideMaxDepth) index(i, i + 1, t.nodes[i].next);
  }
  // Slots: a power of two, at least twice the entries.
  int bits = 1;
  while ((size_t{1} << bits) < 2 * t.wide_nodes.size()) ++bits;
  t.wide_shift = 32 - bits;
  t.wide_slots.assign(t.wide_nodes.empty() ? 0 : size_t{1} << bits, 0);
  size_t mask = t.wide_slots.size() - 1;
  for (size_t k = 0; k < t.wide_nodes.size(); ++k) {
    size_t s = (static_cast<uint32_t>(t.wide_nodes[k]) * TokenTrie::kWideHash) >> t.wide_shift;
    while (t.wide_slots[s] != 0) s = (s + 1) & mask;
    t.wide_slots[s] = static_cast<int32_t>(k + 1);
  }
}

void IndexWhitespaceRuns(TokenTrie& t) {
  std::vector<std::vector<int32_t>> nodes(1), tokens(1), exits(1), wides(1);
  std::vector<int32_t> path;  // the node at each depth of the current one's path
  std::vector<bool> spaces;   // whether that node is a whitespace run
  for (int32_t i = 0; i < t.size(); ++i) {
    const TokenTrie::Node& n = t.nodes[i];
    const size_t d = n.depth;
    path.resize(d + 1);
    spaces.resize(d + 1);
    path[d] = i;
    const bool parent_run = d > 1 && spaces[d - 1];
    spaces[d] = IsWhitespaceByte(n.byte) && (d == 1 || parent_run);
    if (spaces[d]) {
      if (nodes.size() <= d) nodes.resize(d + 1), tokens.resize(d + 1), exits.resize(d + 1), wides.resize(d + 1);
      nodes[d].push_back(i);
      for (int32_t k = 0; k < t.num_tokens[i]; ++k) tokens[d].push_back(t.first_pos[i] + k);
      if (n.wide) wides[d].push_back(i);
    } else if (parent_run && !t.nodes[path[d - 1]].wide) {
      exits[d - 1].push_back(i);
    }
  }
  TokenTrie::WhitespaceRuns& w = t.whitespace;
  w = {};
  w.max_depth = static_cast<int32_t>(nodes.size()) - 1;
  w.exit_bytes.assign(nodes.size(), {});
  auto flatten = [&](const std::vector<std::vector<int32_t>>& lists, std::vector<int32_t>& begin,
                     std::vector<int32_t>& flat) {
    begin.assign(lists.size() + 1, 0);
    for (size_t d = 0; d < lists.size(); ++d) {
      begin[d] = static_cast<int32_t>(flat.size());
      flat.insert(flat.end(), lists[d].begin(), lists[d].end());
    }
    begin[lists.size()] = static_cast<int32_t>(flat.size());
  };
  flatten(nodes, w.node_begin, w.nodes);
  flatten(tokens, w.token_begin, w.tokens);
  flatten(exits, w.exit_begin, w.exits);
  flatten(wides, w.wide_begin, w.wides);
  w.tail_depth = w.max_depth + 1;
  while (w.tail_depth > 1 && exits[w.tail_depth - 1].empty() && wides[w.tail_depth - 1].empty()) --w.tail_depth;
  for (size_t d = 0; d < exits.size(); ++d) {
    for (int32_t c : exits[d]) w.exit_bytes[d][t.nodes[c].byte >> 6] |= uint64_t{1} << (t.nodes[c].byte & 63);
  }
}

}  // namespace xgr2

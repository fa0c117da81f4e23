// What a node accepts inside its rule, shared by equal structures across grammars
// (XGrammar-2 §3.3 cross-grammar cache), one pool per vocabulary.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

namespace xgr2 {

// The tokens a node accepts whatever its rule's callers are, stored adaptively.
struct AcceptedSet {
  std::vector<int32_t> ids;     // token ids (any order), when few are accepted
  std::vector<uint32_t> words;  // a bitset over token ids, when many are
  int64_t count = 0;

  // Keeps whichever of the two forms is smaller; `ids` must be distinct.
  static AcceptedSet FromIds(std::vector<int32_t> ids, int32_t vocab_size);
  void OrInto(uint32_t* out) const;
  size_t MemoryBytes() const { return 4 * (ids.capacity() + words.capacity()); }
};

// The context-free part of a node's classification.
struct InnerMask {
  AcceptedSet accepted;
  int32_t radius = 0;  // how far (ByteDistances) its classification walk reached
  // Trie nodes (preorder, ascending) whose subtree the inner parse rejects after its
  // rule could have ended on the way: the tokens there may go on in the callers'
  // context, so each grammar decides them against its own (see TokenMaskCache).
  std::vector<int32_t> crossing;

  size_t MemoryBytes() const { return sizeof(InnerMask) + accepted.MemoryBytes() + 4 * crossing.capacity(); }
};

class NodeMaskPool {
  using Radii = std::unordered_map<std::string, std::vector<int32_t>>;  // by core key

 public:
  // Default byte budget; when an insertion would exceed it the pool starts over.
  static constexpr int64_t kDefaultLimitBytes = int64_t{256} << 20;

  // Both kinds of entries are keyed by BallKey at the radius that their walk reached.
  // A lookup tries every radius stored with the node's `core` key (a small ball that
  // indexes them); key_at(r) gives its key at radius r. A hit sets *radius to the
  // radius that matched.
  using KeyAt = std::function<std::string(int32_t)>;
  std::shared_ptr<const InnerMask> Find(const std::string& core, const KeyAt& key_at, int32_t* radius);
  // Stores `mask` under `key` (of radius `radius`) unless present; returns the stored one.
  std::shared_ptr<const InnerMask> Insert(const std::string& core, int32_t radius, const std::string& key,
                                          std::shared_ptr<const InnerMask> mask);

  // Uncertain tokens of a node in one caller context (TokenMaskCache::UncertainIn).
  using TokenList = std::vector<int32_t>;
  std::shared_ptr<const TokenList> FindContext(const std::string& core, const KeyAt& key_at, int32_t* radius);
  std::shared_ptr<const TokenList> InsertContext(const std::string& core, int32_t radius, const std::string& key,
                                                 std::shared_ptr<const TokenList> tokens);

  // Results for one grammar's automata, whatever text they came from: keyed by the
  // automata's id (GrammarId of their Fingerprint) plus what they are about. A grammar
  // compiled again reuses every node mask, context list and uncertain-token walk.
  int64_t GrammarId(const std::string& fingerprint);
  std::shared_ptr<const InnerMask> FindSame(const std::string& key);
  std::shared_ptr<const InnerMask> InsertSame(const std::string& key, std::shared_ptr<const InnerMask> mask);
  std::shared_ptr<const TokenList> FindSameList(const std::string& key);
  std::shared_ptr<const TokenList> InsertSameList(const std::string& key, std::shared_ptr<const TokenList> list);

  void Clear();
  void SetLimitBytes(int64_t limit);

  struct Stats {
    int64_t hits = 0, misses = 0, entries = 0, bytes = 0, limit_bytes = 0;
  };
  Stats GetStats() const;

 private:
  mutable std::mutex mu_;
  // Makes room for `size` bytes (starting over when full); false if it cannot fit.
  bool Reserve(int64_t size);
  // Lookup and insertion shared by the two kinds of entries (callers hold no lock).
  template <class Map>
  typename Map::mapped_type FindIn(Map& map, Radii& radii, const std::string& core, const KeyAt& key_at,
                                   int32_t* radius);
  template <class Map>
  typename Map::mapped_type InsertIn(Map& map, Radii& radii, const std::string& core, int32_t radius,
                                     const std::string& key, typename Map::mapped_type value, int64_t size);

  template <class Map>
  typename Map::mapped_type FindSameIn(Map& map, const std::string& key);
  template <class Map>
  typename Map::mapped_type InsertSameIn(Map& map, const std::string& key, typename Map::mapped_type value,
                                         int64_t size);
  void StartOver();

  std::unordered_map<std::string, std::shared_ptr<const InnerMask>> entries_;
  std::unordered_map<std::string, std::shared_ptr<const TokenList>> contexts_;
  Radii radii_, context_radii_;
  std::unordered_map<std::string, int64_t> grammar_ids_;  // by fingerprint
  int64_t next_grammar_id_ = 0;  // never reused, also after starting over
  std::unordered_map<std::string, std::shared_ptr<const InnerMask>> same_masks_;
  std::unordered_map<std::string, std::shared_ptr<const TokenList>> same_lists_;
  int64_t bytes_ = 0;
  int64_t limit_bytes_ = kDefaultLimitBytes;
  int64_t hits_ = 0, misses_ = 0;
};

}  // namespace xgr2

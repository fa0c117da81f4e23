// The cross-grammar cache (XGrammar-2 §3.3), one per vocabulary: a byte-bounded LRU
// store of node masks, context token lists, walk results, reach indexes and grammar
// ids, shared by equal automaton structures across grammars.
#pragma once
#include <cstdint>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <stdexcept>
#include <string_view>
#include <type_traits>
#include <unordered_map>
#include <vector>

namespace xgr2 {

struct InnerMask;   // node_classify.h
struct TokenSlice;  // token_slice.h
struct GrammarFsm;  // grammar/fsm.h
using TokenList = std::vector<int32_t>;
using KeyList = std::vector<std::shared_ptr<const std::string>>;  // shared: a grown list copies pointers

// A node's crossing tokens that go on where its callers continue (sorted-vocabulary
// positions, ascending): `certain` ones live on inside the callers' rules, so every
// state with those callers accepts them; `uncertain` ones also end a caller's rule,
// past which any context was assumed, so the full parser decides them per state.
struct ContextTokens {
  TokenList certain;
  TokenList uncertain;
};

// The index's hash of a key: 16 bytes per step (keys are serialized structures of up
// to a few KB, hashed at every lookup and insertion; std::hash took 4% of a BFCL run's
// mask instructions). Collisions only cost a comparison: keys are compared whole.
struct PoolKeyHash {
  size_t operator()(std::string_view key) const;
};

// One byte-bounded store with least-recently-used eviction for every kind of shared
// result. Entries are immutable and handed out as shared_ptr, so evicting one never
// invalidates a grammar that uses it. Thread-safe.
class NodeMaskPool {
 public:
  static constexpr int64_t kDefaultLimitBytes = int64_t{256} << 20;
  // The index's buckets are made for this many entries up front (128 KiB): growing it
  // rehashes every entry under the lock, once per doubling, each time inside one
  // mask (86k instructions at 2,000 entries; 100 tool-calling requests make 10,000).
  static constexpr size_t kReservedEntries = 16384;

  NodeMaskPool() { index_.reserve(kReservedEntries); }

  // What an entry holds; part of its key, and it fixes the value's type.
  enum class Kind : char {
    kInner = 'i',      // InnerMask by structure (ReachKey)
    kContext = 'c',      // ContextTokens of a node in a context, by structure
    kReachIndex = 'r',   // KeyList: the structural keys stored under an index key (`core`)
    kSameInner = 'n',    // InnerMask of one grammar's node (keys from GrammarId)
    kSameList = 'l',     // TokenList of one grammar (walk results)
    kGrammarId = 'g',    // GrammarId's (automata, id) by AutomataHash
    kSameContext = 'x',  // ContextTokens of one grammar's node in a context
    kStructInner = 's',  // InnerMask of a node by its rule's structure id (GrammarFsm::rule_structure)
    kRepeats = 'p',      // TokenList: repetitions begun per token in a counted rule (TokenMaskCache)
  };

  // A lookup counts a hit when found; misses are counted by FindByReach only (a per-
  // grammar lookup that misses is followed by a structural one, or by none that could hit).
  template <class T>
  std::shared_ptr<const T> Find(Kind kind, std::string_view key) {
    CheckType<T>(kind);
    return std::static_pointer_cast<const T>(FindAny(kind, key));
  }
  // Stores `value` (about `bytes` large) unless the key is present; returns the stored one.
  template <class T>
  std::shared_ptr<const T> Insert(Kind kind, std::string_view key, std::shared_ptr<const T> value, int64_t bytes) {
    CheckType<T>(kind);
    return std::static_pointer_cast<const T>(InsertAny(kind, key, std::move(value), bytes));
  }

  // Structural entries are keyed by the ReachKey of the nodes their walk reached. A
  // lookup cannot make that key before walking, so the keys are indexed under the
  // node's `core` key (the ball of radius 1, which tells most structures apart) and a
  // lookup tries those stored there, newest first (at most kMaxKeysPerCore: the oldest
  // goes): matches(key) says whether the grammar at hand has that structure. These
  // keys are full keys: KeyPrefix(kind) first, so that long keys are made in one
  // allocation, never copied.
  // 16: every lookup that misses tries them all. At stop 28, 32 instead of 8 hit 76%
  // instead of 69% in the tool-calling benchmark for no gain in time; since a walk is
  // also indexed under every core it is met at (stop 39), 16 instead of 8 hits 81%
  // instead of 80% and takes all 100 dynamic k=5 requests' masks from 302.8M to 298.1M
  // instructions (callgrind).
  static constexpr size_t kMaxKeysPerCore = 16;
  static std::string_view KeyPrefix(Kind kind) {
    static constexpr char kKinds[] = "icrnlgxsp";  // every Kind's byte, in static storage
    return {std::char_traits<char>::find(kKinds, sizeof(kKinds) - 1, static_cast<char>(kind)), 1};
  }
  using Matches = std::function<bool(const std::string&)>;
  template <class T>
  std::shared_ptr<const T> FindByReach(Kind kind, const std::string& core, const Matches& matches,
                                       bool count_miss = true) {
    CheckType<T>(kind);
    return std::static_pointer_cast<const T>(FindByReachAny(core, matches, count_miss));
  }
  template <class T>
  std::shared_ptr<const T> InsertByReach(Kind kind, const std::string& core, std::string key,
                                         std::shared_ptr<const T> value, int64_t bytes) {
    CheckType<T>(kind);
    return std::static_pointer_cast<const T>(InsertByReachAny(core, std::move(key), std::move(value), bytes));
  }

  // Results for one grammar's automata, whatever text they came from, are keyed by the
  // automata's id plus what they are about. Equal automata (SameAutomata) get one id, so
  // a grammar compiled again reuses every node mask, context list and uncertain-token
  // walk. The id's entry (under AutomataHash) holds the automata to confirm the next
  // match with, so its bytes count like any entry's. Ids are never reused, also after
  // an eviction or Clear. *known: whether the id existed before this call (else no
  // entry is keyed by it yet).
  int64_t GrammarId(const std::shared_ptr<const GrammarFsm>& fsm, bool* known = nullptr);

  // Token slices (token_slice.h) by SliceClass::Key: tokenizer data (like its trie)
  // rather than masks, so kept apart from the entries, their counters and Clear, at
  // most kMaxSlices of them (past that, InsertSlice returns `slice` without keeping it).
  static constexpr size_t kMaxSlices = 64;
  std::shared_ptr<const TokenSlice> FindSlice(const std::string& key) const;
  std::shared_ptr<const TokenSlice> InsertSlice(const std::string& key, std::shared_ptr<const TokenSlice> slice);

  // While one is alive (on the thread making a new pool, before anyone else sees it),
  // the entries inserted are prebuilt ones (prebuilt_masks.h): made with the vocabulary,
  // so, like the slices, kept apart from the other entries, their byte budget, their
  // counters and Clear; a lookup finds them as it finds the others. The structural ones
  // serve every grammar of that structure; the grammar's own (its id, its masks, contexts
  // and walks by id) serve that grammar compiled again.
  class PrebuiltScope {
   public:
    explicit PrebuiltScope(NodeMaskPool& pool);
    ~PrebuiltScope();
    PrebuiltScope(const PrebuiltScope&) = delete;
    PrebuiltScope& operator=(const PrebuiltScope&) = delete;

   private:
    NodeMaskPool& pool_;
  };

  void Clear();  // forgets every entry (not the slices or prebuilt ones) and zeroes the counters
  void SetLimitBytes(int64_t limit);

  struct Stats {
    int64_t hits = 0, misses = 0, entries = 0, bytes = 0, limit_bytes = 0, evictions = 0;
  };
  Stats GetStats() const;

 private:
  // Values are stored untyped; a kind read as another type would be undefined.
  template <class T>
  static void CheckType(Kind kind) {
    bool inner = kind == Kind::kInner || kind == Kind::kSameInner || kind == Kind::kStructInner;
    bool list = kind == Kind::kSameList || kind == Kind::kRepeats;
    bool context = kind == Kind::kContext || kind == Kind::kSameContext;
    if (std::is_same_v<T, InnerMask>      ? !inner
        : std::is_same_v<T, TokenList>    ? !list
        : std::is_same_v<T, ContextTokens> ? !context
                                          : true) {
      throw std::logic_error("NodeMaskPool: a kind used with the wrong value type");
    }
  }
  using Value = std::shared_ptr<const void>;
  struct Entry {
    std::string key;  // Kind, then the caller's key
    Value value;
    int64_t bytes;
  };
  Value FindAny(Kind kind, std::string_view key);
  Value InsertAny(Kind kind, std::string_view key, Value value, int64_t bytes);
  Value FindByReachAny(const std::string& core, const Matches& matches, bool count_miss);
  Value InsertByReachAny(const std::string& core, std::string full, Value value, int64_t bytes);
  // Callers hold mu_.
  Value FindLocked(const std::string& full_key);
  void InsertLocked(std::string full_key, Value value, int64_t bytes);
  void EraseLocked(const std::string& full_key);  // if present (an entry replaced by a new one)
  void EvictTo(int64_t limit);

  mutable std::mutex mu_;
  std::unordered_map<std::string, std::shared_ptr<const TokenSlice>> slices_;
  // Prebuilt entries: their structural keys by index key (`core`), and the values of
  // every prebuilt key (structural or not).
  std::unordered_map<std::string, KeyList> prebuilt_keys_;
  std::unordered_map<std::string, Value> prebuilt_values_;
  bool recording_prebuilt_ = false;  // a PrebuiltScope is alive
  std::list<Entry> lru_;  // most recently used first
  std::unordered_map<std::string_view, std::list<Entry>::iterator, PoolKeyHash> index_;  // views into lru_'s keys
  int64_t next_grammar_id_ = 0;
  int64_t bytes_ = 0;
  int64_t limit_bytes_ = kDefaultLimitBytes;
  int64_t hits_ = 0, misses_ = 0, evictions_ = 0;
};

}  // namespace xgr2

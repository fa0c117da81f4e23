// The adaptive token-mask cache (XGrammar §3.1-3.2, XGrammar-2 §3.4-3.5).
//
// For an automaton node n of rule r, each token is classified by parsing its bytes
// from the item (n, parent unknown) and its closure:
//   accepted  - the bytes parse inside r (and its callees) whatever r's parents are;
//   rejected  - they fail before r could end;
//   uncertain - r could end inside them and the rest may follow r in some context, so it
//               depends on what the actual parents allow.
// A state's mask is the union of its kernel items' nodes' accepted sets plus those
// uncertain tokens that the full parser accepts. Node masks are computed on first use
// (JIT) or all at once, and shared by every state of the compiled grammar.
#pragma once
#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "engine/earley.h"
#include "xgr2/tokenizer.h"

namespace xgr2 {

struct NodeMask {
  std::vector<int32_t> accepted_ids;     // sorted token ids, when few are accepted
  std::vector<uint32_t> accepted_words;  // a bitset over token ids, when many are
  std::vector<int32_t> uncertain;        // sorted-vocabulary positions, ascending
  int64_t num_accepted = 0;

  void OrInto(uint32_t* words) const;
  bool Accepts(int32_t id) const;
  size_t MemoryBytes() const;
};

// Classifies every token from `node`. call_targets[r] lists the nodes that follow a
// call of rule r anywhere in the grammar: where a token outlives its rule, it is
// uncertain only if it could go on in one of those contexts (context expansion).
NodeMask ComputeNodeMask(const GrammarFsm& fsm, const TokenizerInfo& tok, int32_t node,
                         const std::vector<std::vector<int32_t>>& call_targets);

class TokenMaskCache {
 public:
  TokenMaskCache(const GrammarFsm& fsm, const TokenizerInfo& tok);
  ~TokenMaskCache();
  TokenMaskCache(const TokenMaskCache&) = delete;
  TokenMaskCache& operator=(const TokenMaskCache&) = delete;

  // The node's mask, computed on first use. Thread-safe.
  const NodeMask& Get(int32_t node) const;
  // Computes every node's mask now, on up to num_threads threads (0: all).
  void PrecomputeAll(int num_threads = 0) const;
  // Writes (ORs) the text tokens allowed from `set` into `words`.
  void FillBitmask(const EarleySet& set, uint32_t* words) const;

  int32_t NumComputed() const;
  int64_t MemoryBytes() const;

 private:
  const GrammarFsm& fsm_;
  const TokenizerInfo& tok_;
  std::vector<std::vector<int32_t>> call_targets_;  // per rule: nodes after its calls
  std::unique_ptr<std::atomic<const NodeMask*>[]> masks_;
};

}  // namespace xgr2

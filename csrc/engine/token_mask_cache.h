// The adaptive token-mask cache (XGrammar §3.1-3.2, XGrammar-2 §3.3-3.5).
//
// For an automaton node n of rule r, each token is classified by parsing its bytes
// from the item (n, parent unknown) and its closure:
//   accepted  - the bytes parse inside r (and its callees) whatever r's parents are;
//   rejected  - they fail before r could end, or no context of r lets them go on;
//   uncertain - r could end inside them and the rest may follow r in some context, so it
//               depends on what the actual parents allow.
// A state's mask is the union of its kernel items' nodes' accepted sets plus those
// uncertain tokens that the full parser accepts. Node masks are computed on first use
// (JIT) or all at once, and shared by every state of the compiled grammar. The accepted
// part depends only on the structure reachable from n, so it is also shared across
// grammars through the vocabulary's NodeMaskPool, keyed by the structure the walk
// reached (BallKey).
//
// By job: the classification walks are in node_classify.h, the sharing across
// grammars in shared_by_reach.h (over node_mask_pool.h, one pool per vocabulary from
// mask_pool_registry.h), computing masks ahead of use in mask_precompute.cc; this
// file keeps a grammar's masks and fills bitmasks from them.
#pragma once
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "engine/earley.h"
#include "engine/node_classify.h"
#include "engine/node_mask_pool.h"
#include "xgr2/tokenizer.h"

namespace xgr2 {

// A node's classification in one grammar: the shared context-free part, plus the
// tokens that this grammar's contexts may continue after the rule ends (sorted-vocabulary
// positions, ascending), left for the full parser at run time.
struct NodeMask {
  std::shared_ptr<const InnerMask> inner;
  // The crossing tokens that can go on in some context of this grammar, when computed
  // (precompute), all in `uncertain` (none is certain for every state); on demand,
  // each caller context gets its own narrower lists instead.
  ContextTokens any_context;
  bool has_uncertain = false;

  void OrInto(uint32_t* words) const { inner->accepted.OrInto(words); }
  size_t MemoryBytes() const {
    return sizeof(NodeMask) + inner->MemoryBytes() + 4 * any_context.uncertain.capacity();
  }
};

class TokenMaskCache {
 public:
  // `pool`: the vocabulary's cross-grammar cache (MaskPoolFor), shared with other grammars.
  // Finds the automata's id there (NodeMaskPool::GrammarId) right away: a hash of the
  // automata, part of compiling rather than of the first mask.
  // `direct_cold_walks`: see FillBitmask (false: always classify, as the tests of the
  // classification want).
  TokenMaskCache(std::shared_ptr<const GrammarFsm> fsm, const TokenizerInfo& tok, std::shared_ptr<NodeMaskPool> pool,
                 bool direct_cold_walks);
  ~TokenMaskCache();
  TokenMaskCache(const TokenMaskCache&) = delete;
  TokenMaskCache& operator=(const TokenMaskCache&) = delete;

  // The node's mask, computed on first use (with its uncertain tokens for every context
  // when `all_contexts`). Thread-safe.
  const NodeMask& Get(int32_t node, bool all_contexts = false) const;
  // Computes every node's mask now, on up to num_threads threads (0: all).
  void PrecomputeAll(int num_threads = 0) const;
  // Computes the `count` node masks estimated costliest: by the number of tokens whose
  // first byte the node's closure can scan (what a classification walk must enter).
  void PrecomputeCostliest(int64_t count, int num_threads = 0) const;
  // The nodes PrecomputeAll would compute now, and the `count` of them
  // PrecomputeCostliest would (costliest first): a background job's pieces.
  std::vector<int32_t> MissingNodes() const;
  std::vector<int32_t> CostliestNodes(int64_t count) const;
  // Writes the text tokens allowed from `set` into the whole row `words` (whatever it
  // held): from the node masks, or by a direct walk where they are not cached yet and the
  // walk is small.
  void FillBitmask(const EarleySet& set, uint32_t* words) const;

  int32_t NumComputed() const;
  int64_t MemoryBytes() const;

 private:
  // What a fill does about a classification, context or walk result this grammar lacks.
  enum class Missing {
    kCompute,  // find it in the pool, or compute it
    kFind,     // find it in the pool, else give up
    // As kFind, but a node no direct walk has visited yet in this grammar is not looked
    // up by reach key (SharedByReach's probe, ~1 µs), only by grammar and structure id.
    kFindCheaply,
  };

  // The node's classification: found in the pool by the structure around it, or
  // walked, partly taken from a sibling's (SiblingSteps) where this grammar has it.
  // Without `compute`, only found (null when not).
  std::shared_ptr<const InnerMask> Classify(int32_t node, bool compute) const;
  // Get, or short of Missing::kCompute only what is cached (null when nothing is).
  const NodeMask* Lookup(int32_t node, Missing missing, bool all_contexts) const;

  // The node's crossing tokens that go on where the callers waiting in `origin`
  // continue, certain or uncertain (ContextTokens), computed once per (node,
  // continuation nodes) and shared with grammars of the same structure around there
  // through the pool; without `compute`, only what is cached (null when nothing is).
  const ContextTokens* FindContext(const NodeMask& mask, int32_t node, const EarleySet& origin, bool compute) const;

  // ORs the text tokens allowed from `set` into `words` from the node masks, computing
  // what is missing; short of Missing::kCompute, computes nothing and returns false
  // (`words` maybe partly written) when some classification, context or walk result is
  // neither in this cache nor found in the pool. `zeroed`: the row arrives all zero;
  // else it is written whole (a dense node mask copied in, not ORed into a cleared row:
  // one pass over the row instead of two).
  bool FillFromCache(const EarleySet& set, uint32_t* words, Missing missing, bool zeroed) const;
  // For a kernel item in a counted rule with `left` repetitions to go, fewer than a
  // token may begin: clears in `words` the tokens (unless in `others`, what the other
  // kernel items accept) that begin more in its rule, and appends to `undecided`, in
  // ascending order, those of them that may also end the rule on the way (for the full
  // parser). `undecided` must hold nothing greater before.
  void DecideLongTokens(const EarleyItem& item, int64_t left, const uint32_t* others, uint32_t* words,
                        std::vector<int32_t>* undecided) const;
  // Per text token that lives through the counted rule of `node` from there by its
  // automaton alone, the repetitions it begins: pairs (count, sorted position), most
  // first, tokens that begin none left out. Shared through the pool by the rule's
  // automaton (GrammarFsm::rule_loop_id).
  std::shared_ptr<const TokenList> RepetitionsFrom(int32_t node) const;
  // The items whose node masks make the set's (see FillFromCache).
  void KernelOf(const EarleySet& set, std::vector<EarleyItem>* kernel) const;
  // Counts a cold visit of the set's kernel nodes; false once one of them has had
  // enough direct walks to be classified now. `dense`: marks them all so (their
  // direct walk went over budget).
  bool CountDirectVisit(const EarleySet& set, bool dense) const;

  // Whether the node has no byte edge and only calls rules that are wide_loop_.
  bool CallsOnlyWideLoops(int32_t node) const;

  // This grammar's prefix for the pool's per-grammar entries (NodeMaskPool::GrammarId),
  // then `tag` and `what`.
  std::string SameKey(char tag, const void* what, size_t size) const;

  static constexpr size_t kMaxSignatureItems = 1024;  // larger states are not memoized
  static constexpr size_t kLookupOnlyWalk = 64;  // uncertain tokens a lookup-only fill still walks
  // Direct walks of cold states (FillBitmask): at most this many first bytes scannable,
  // at most this many trie steps (sparse walks take under 2,000 in Llama-3), and the
  // visit of a node at which it is classified instead.
  static constexpr int kSparseBytes = 64;
  // A state that scans fewer first bytes (a key's name, a separator) is looked up
  // cheaply (Missing::kFindCheaply) before its direct walk: see FillBitmask.
  static constexpr int kCheapLookupBytes = 16;
  static constexpr int64_t kDirectWalkSteps = 4096;
  static constexpr int kVisitsBeforeClassifying = 8;
  static constexpr size_t kMaxWalkResults = 4096;

  const GrammarFsm& fsm_;
  const TokenizerInfo& tok_;
  std::shared_ptr<NodeMaskPool> pool_;
  std::vector<std::vector<int32_t>> call_targets_;  // per rule: nodes after its calls
  // Per rule: its start loops back to itself on at least kWideLoopBytes byte values (a
  // string's content, free text). A node that only calls such rules is not classified
  // itself: the callees' starts stand for it (see FillBitmask). Elsewhere (a C
  // expression calling its terms) the caller's own classification is the more precise.
  static constexpr int kWideLoopBytes = 64;
  std::vector<uint8_t> wide_loop_;
  // Whether the pool knew grammar_id_ before this cache: if not, no entry is keyed by it
  // but this cache's own, which it keeps itself, so its kSame* lookups are skipped (at a
  // key name's first fill they were half the instructions of its direct walk). Set by
  // grammar_id_'s initializer, so declared before it.
  bool grammar_known_;
  int64_t grammar_id_;
  std::unique_ptr<std::atomic<const NodeMask*>[]> masks_;
  bool direct_cold_walks_;
  std::unique_ptr<std::atomic<uint8_t>[]> direct_visits_;  // per node: cold direct walks so far
  mutable std::shared_mutex context_mu_;  // guards the three maps below
  mutable std::unordered_map<std::string, std::shared_ptr<const ContextTokens>> contexts_;
  // Uncertain tokens the full parser accepted, by ParseSignature of the state.
  mutable std::unordered_map<std::string, std::shared_ptr<const std::vector<int32_t>>> walk_results_;
  mutable std::unordered_map<int32_t, std::shared_ptr<const TokenList>> repetitions_;  // by node
};

}  // namespace xgr2

// Compiled grammars and immutable matcher states: the public C++ engine API.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "xgr2/grammar.h"
#include "xgr2/tokenizer.h"

namespace xgr2 {

class BackgroundJob;
struct CompiledGrammarImpl;
struct GrammarFsm;
class EarleySet;

struct CompileOptions {
  bool mask_cache = true;        // use the adaptive token-mask cache
  bool precompute_all = false;   // compute every node's mask now instead of on first use
  int64_t precompute_costliest = 0;  // else compute this many of the costliest ones now
  // A state whose node masks are not all cached yet, and that scans few first bytes,
  // takes its mask by a direct walk (TokenMaskCache::FillBitmask); false: always
  // classify (the classification's tests).
  bool direct_cold_walks = true;
};

// A grammar bound to a tokenizer. Immutable (its mask cache fills in lazily, thread-safely)
// and shareable across threads.
class CompiledGrammar {
 public:
  // `fsm`: the grammar's automata, opaque here (engine/grammar_sources.h builds them
  // with the grammar); null builds them now.
  CompiledGrammar(GrammarPtr grammar, std::shared_ptr<const GrammarFsm> fsm, TokenizerPtr tokenizer,
                  CompileOptions options = {});
  int32_t NumCachedNodeMasks() const;
  int32_t NumAutomatonNodes() const;
  // Benchmark probe: makes every node's cross-grammar cache keys `repeats` times (see
  // engine/shared_by_reach.h); returns the nodes keyed per repeat.
  int64_t MakeLookupKeys(int32_t radius, int repeats) const;
  // Computes every node mask not computed yet (no-op without a mask cache).
  void PrecomputeAll(int num_threads = 0) const;
  // Computes the node masks estimated to be the `count` costliest (see TokenMaskCache).
  void PrecomputeCostliest(int64_t count, int num_threads = 0) const;
  // The same (count < 0: all) as a background job on the shared pool, one node mask
  // per piece, on up to num_threads workers while no foreground call needs them. The
  // job does not keep the grammar alive: once the grammar is freed, it stops.
  std::shared_ptr<BackgroundJob> PrecomputeInBackground(int64_t count, int num_threads = 0) const;
  int64_t CacheMemoryBytes() const;
  // Automata plus mask cache (grows as node masks are computed).
  int64_t MemoryBytes() const;
  const GrammarIR& grammar() const;
  const TokenizerInfo& tokenizer() const;

 private:
  friend class MatcherState;  // its states point into the engine's implementation
  std::shared_ptr<const CompiledGrammarImpl> impl() const { return impl_; }
  std::shared_ptr<const CompiledGrammarImpl> impl_;
};

// One point of a decoding: the parse of every token so far. Never changes once
// built; advancing returns a new state that shares this one's history.
class MatcherState {
 public:
  explicit MatcherState(const CompiledGrammar& compiled);

  // The state after `token`, or nullopt when the grammar rejects it.
  // Throws InvalidTokenError for ids outside [0, vocab_size).
  std::optional<MatcherState> TryAdvance(int32_t token) const;
  // The state after forced bytes (grammar text: tokens named by id never match it), or
  // nullopt when they are rejected.
  std::optional<MatcherState> TryAdvanceBytes(const std::string& bytes) const;
  bool Accepts(int32_t token) const;

  // Writes the allowed-token bitmask: ceil(vocab_size / 32) words, token t in word
  // t / 32 bit t % 32, 1 = allowed. Padding ids and special tokens are 0; stop
  // tokens are 1 exactly when the grammar can end here.
  void FillBitmask(uint32_t* words) const;

  // Longest byte string every continuation starts with (empty when there is a choice).
  // With `whitespace_gaps`: the same where the only choice is optional whitespace (space,
  // \t, \n, \r) or one other byte, which it takes; each offset where whitespace could
  // have gone is appended (the text of the layout writing none, e.g. `,"age":` after a
  // JSON value: a drafter puts the model's own whitespace there).
  std::string JumpForwardBytes(int32_t max_bytes = 1 << 16, std::vector<int32_t>* whitespace_gaps = nullptr) const;

  bool IsTerminated() const { return terminated_; }
  bool CanTerminate() const;
  int32_t NumTokens() const { return num_tokens_; }
  int64_t NumBytes() const { return num_bytes_; }  // of text (a token matched by id adds none)
  int32_t VocabSize() const;
  // Bytes of the parser sets this state keeps alive: those a parse from here can still
  // reach (one per open rule call, plus the current one). Sets shared with other states
  // (a fork's common past) are counted in full by each; the compiled grammar's initial
  // set is counted too. Grows with nesting depth, not with the number of tokens.
  int64_t MemoryBytes() const;

 private:
  MatcherState() = default;
  std::shared_ptr<const CompiledGrammarImpl> grammar_;
  std::shared_ptr<const EarleySet> set_;
  int32_t num_tokens_ = 0;
  int64_t num_bytes_ = 0;
  bool terminated_ = false;
};

}  // namespace xgr2

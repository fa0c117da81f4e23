#pragma once
#include <condition_variable>
#include <memory>
#include <mutex>

#include "engine/earley.h"
#include "engine/token_mask_cache.h"
#include "grammar/fsm.h"
#include "xgr2/grammar.h"
#include "xgr2/tokenizer.h"

namespace xgr2 {

// Lets background jobs use a grammar without owning it: its last owner may hold Python
// objects (the tokenizer), whose release needs the GIL, which a pool worker must never
// take (at interpreter exit it would be killed). A piece checks `alive` and counts
// itself in `running`; the grammar's destructor clears `alive` and waits for those
// running (at most one node mask each).
struct Liveness {
  std::mutex mu;
  std::condition_variable idle;
  bool alive = true;
  int running = 0;
};

struct CompiledGrammarImpl {
  CompiledGrammarImpl() = default;
  CompiledGrammarImpl(const CompiledGrammarImpl&) = delete;
  CompiledGrammarImpl& operator=(const CompiledGrammarImpl&) = delete;
  ~CompiledGrammarImpl() {
    std::unique_lock<std::mutex> lock(liveness->mu);
    liveness->alive = false;
    liveness->idle.wait(lock, [&] { return liveness->running == 0; });
  }
  std::shared_ptr<Liveness> liveness = std::make_shared<Liveness>();

  GrammarPtr grammar;
  TokenizerPtr tokenizer;
  std::shared_ptr<const GrammarFsm> fsm_owner;
  const GrammarFsm& fsm() const { return *fsm_owner; }
  std::shared_ptr<const EarleySet> initial;  // shared by every initial state
  std::unique_ptr<TokenMaskCache> mask_cache;  // null: masks by a full vocabulary walk
};

}  // namespace xgr2

#pragma once
#include <memory>

#include "engine/earley.h"
#include "engine/token_mask_cache.h"
#include "grammar/fsm.h"
#include "xgr2/grammar.h"
#include "xgr2/tokenizer.h"

namespace xgr2 {

struct CompiledGrammarImpl {
  GrammarPtr grammar;
  TokenizerPtr tokenizer;
  std::shared_ptr<const GrammarFsm> fsm_owner;
  const GrammarFsm& fsm() const { return *fsm_owner; }
  std::shared_ptr<const EarleySet> initial;  // shared by every initial state
  std::unique_ptr<TokenMaskCache> mask_cache;  // null: masks by a full vocabulary walk
};

}  // namespace xgr2

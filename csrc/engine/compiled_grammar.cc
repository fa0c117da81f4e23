#include "engine/compiled_grammar_impl.h"
#include "xgr2/matcher.h"

namespace xgr2 {

std::shared_ptr<const GrammarFsm> BuildFsm(const GrammarIR& grammar) {
  return std::make_shared<const GrammarFsm>(BuildGrammarFsm(grammar));
}

CompiledGrammar::CompiledGrammar(GrammarPtr grammar, std::shared_ptr<const GrammarFsm> fsm, TokenizerPtr tokenizer) {
  auto impl = std::make_shared<CompiledGrammarImpl>();
  impl->grammar = std::move(grammar);
  impl->tokenizer = std::move(tokenizer);
  impl->fsm_owner = fsm ? std::move(fsm) : BuildFsm(*impl->grammar);
  auto initial = std::make_shared<EarleySet>();
  EarleyParser(impl->fsm(), ThreadScratch()).Initial(initial.get());
  impl->initial = std::move(initial);
  impl_ = std::move(impl);
}

const GrammarIR& CompiledGrammar::grammar() const { return *impl_->grammar; }
const TokenizerInfo& CompiledGrammar::tokenizer() const { return *impl_->tokenizer; }

}  // namespace xgr2

#include "engine/compiled_grammar_impl.h"
#include "engine/grammar_sources.h"
#include "engine/mask_pool_registry.h"
#include "engine/shared_by_reach.h"
#include "support/thread_pool.h"
#include "xgr2/errors.h"
#include "xgr2/matcher.h"

namespace xgr2 {
namespace {

// Tokens a grammar names by id must be real tokens of this tokenizer, and not stop
// tokens: those end generation (the grammar ends where it can, by itself).
void CheckTokenIds(const GrammarIR& g, const TokenizerInfo& tok) {
  for (const Expr& e : g.exprs) {
    if (e.kind != ExprKind::kToken || e.negated) continue;
    for (CodepointRange r : e.ranges) {
      if (r.hi >= static_cast<uint32_t>(tok.tokenizer_size())) {
        throw GrammarError("the grammar names token id " + std::to_string(r.hi) + ", outside the tokenizer's " +
                           std::to_string(tok.tokenizer_size()) + " tokens");
      }
      for (int32_t stop : tok.stop_ids()) {
        if (static_cast<uint32_t>(stop) >= r.lo && static_cast<uint32_t>(stop) <= r.hi) {
          throw GrammarError("the grammar names token id " + std::to_string(stop) +
                             ", a stop token: stop tokens end generation where the grammar can end, and match "
                             "nothing inside it");
        }
      }
    }
  }
}

}  // namespace

CompiledGrammar::CompiledGrammar(GrammarPtr grammar, std::shared_ptr<const GrammarFsm> fsm, TokenizerPtr tokenizer,
                                 CompileOptions options) {
  auto impl = std::make_shared<CompiledGrammarImpl>();
  impl->grammar = std::move(grammar);
  impl->tokenizer = std::move(tokenizer);
  CheckTokenIds(*impl->grammar, *impl->tokenizer);
  impl->fsm_owner = fsm ? std::move(fsm) : BuildFsm(*impl->grammar);
  auto initial = std::make_shared<EarleySet>();
  EarleyParser(impl->fsm(), ThreadScratch()).Initial(initial.get());
  impl->initial = std::move(initial);
  if (options.mask_cache) {
    impl->mask_cache = std::make_unique<TokenMaskCache>(impl->fsm_owner, *impl->tokenizer,
                                                        MaskPoolFor(*impl->tokenizer), options.direct_cold_walks);
    if (options.precompute_all) {
      impl->mask_cache->PrecomputeAll();
    } else if (options.precompute_costliest > 0) {
      impl->mask_cache->PrecomputeCostliest(options.precompute_costliest);
    }
  }
  impl_ = std::move(impl);
}

const GrammarIR& CompiledGrammar::grammar() const { return *impl_->grammar; }
const TokenizerInfo& CompiledGrammar::tokenizer() const { return *impl_->tokenizer; }

}  // namespace xgr2

namespace xgr2 {

int32_t CompiledGrammar::NumCachedNodeMasks() const {
  return impl_->mask_cache ? impl_->mask_cache->NumComputed() : 0;
}

int32_t CompiledGrammar::NumAutomatonNodes() const { return impl_->fsm().NumNodes(); }

int64_t CompiledGrammar::MakeLookupKeys(int32_t radius, int repeats) const {
  return xgr2::MakeLookupKeys(impl_->fsm(), radius, repeats);
}

void CompiledGrammar::PrecomputeAll(int num_threads) const {
  if (impl_->mask_cache) impl_->mask_cache->PrecomputeAll(num_threads);
}

void CompiledGrammar::PrecomputeCostliest(int64_t count, int num_threads) const {
  if (impl_->mask_cache) impl_->mask_cache->PrecomputeCostliest(count, num_threads);
}

std::shared_ptr<BackgroundJob> CompiledGrammar::PrecomputeInBackground(int64_t count, int num_threads) const {
  std::vector<int32_t> nodes;
  if (impl_->mask_cache) {
    nodes = count < 0 ? impl_->mask_cache->MissingNodes() : impl_->mask_cache->CostliestNodes(count);
  }
  auto n = static_cast<int64_t>(nodes.size());
  // Not owned: see Liveness.
  const TokenMaskCache* cache = impl_->mask_cache.get();
  return RunInBackground(n, num_threads, [live = impl_->liveness, cache, nodes = std::move(nodes)](int64_t k) {
    {
      std::lock_guard<std::mutex> lock(live->mu);
      if (!live->alive) return false;  // the grammar is gone: stop
      ++live->running;
    }
    struct Leave {
      Liveness* live;
      ~Leave() {
        std::lock_guard<std::mutex> lock(live->mu);
        if (--live->running == 0) live->idle.notify_all();
      }
    } leave{live.get()};
    cache->Get(nodes[k], true);
    return true;
  });
}

int64_t CompiledGrammar::CacheMemoryBytes() const {
  return impl_->mask_cache ? impl_->mask_cache->MemoryBytes() : 0;
}

int64_t CompiledGrammar::MemoryBytes() const {
  const GrammarFsm& f = impl_->fsm();
  int64_t automata = static_cast<int64_t>(f.edges.size() * sizeof(FsmEdge)) +
                     static_cast<int64_t>(f.NumNodes()) * (3 * 4 + 1 + sizeof(ByteSet) + 8 /*mask slot*/);
  return automata + CacheMemoryBytes();
}

}  // namespace xgr2

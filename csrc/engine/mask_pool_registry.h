// The engine's cross-grammar caches, one per vocabulary: TokenizerInfo objects with
// the same vocabulary (a copy, a pickle round trip, a second load of the same
// tokenizer) share one NodeMaskPool, and the tokenizer layer knows nothing of it.
#pragma once
#include <memory>

#include "engine/node_mask_pool.h"
#include "xgr2/tokenizer.h"

namespace xgr2 {

// The pool for `tok`'s vocabulary (TokenizerInfo::vocabulary_key), made on first use.
// The registry holds it weakly: it lives while a compiled grammar or a Python
// TokenizerInfo holds it, and a vocabulary used again later starts a fresh one.
std::shared_ptr<NodeMaskPool> MaskPoolFor(const TokenizerInfo& tok);

}  // namespace xgr2

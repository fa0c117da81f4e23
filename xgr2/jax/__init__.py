"""Device-side structured generation in JAX.

The masking, sampling and tree modules are pure JAX (numpy + jax only);
:class:`ConstrainedDecoder` ties them to the host engine's matcher states. Bitmask layout: token ``t`` is bit ``t % 32`` (LSB first) of int32 word ``t // 32``;
1 = allowed. See ``docs/jax.md``.
"""

from xgr2.jax._decoder import ConstrainedDecoder, FinishReason
from xgr2.jax._drafting import TreeDrafter, build_draft_tree, prompt_lookup
from xgr2.jax._masking import apply_token_bitmask, unpack_bitmask
from xgr2.jax._sampling import greedy, sample
from xgr2.jax._tree import DraftTree, ancestor_mask, tree_depth
from xgr2.jax._verify import VerifyResult, verify_tree

__all__ = [
    "ConstrainedDecoder",
    "FinishReason",
    "DraftTree",
    "TreeDrafter",
    "VerifyResult",
    "ancestor_mask",
    "apply_token_bitmask",
    "build_draft_tree",
    "greedy",
    "prompt_lookup",
    "sample",
    "tree_depth",
    "unpack_bitmask",
    "verify_tree",
]

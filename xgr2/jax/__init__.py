"""Device-side structured generation in pure JAX (numpy + jax only, no C++ extension).

Bitmask layout: token ``t`` is bit ``t % 32`` (LSB first) of int32 word ``t // 32``;
1 = allowed. See ``docs/jax.md``.
"""

from xgr2.jax._masking import apply_token_bitmask, unpack_bitmask
from xgr2.jax._sampling import greedy, sample
from xgr2.jax._tree import DraftTree, ancestor_mask, tree_depth
from xgr2.jax._verify import VerifyResult, verify_tree

__all__ = [
    "DraftTree",
    "VerifyResult",
    "ancestor_mask",
    "apply_token_bitmask",
    "greedy",
    "sample",
    "tree_depth",
    "unpack_bitmask",
    "verify_tree",
]

"""Device-side structured generation in pure JAX (numpy + jax only, no C++ extension).

Bitmask layout: token ``t`` is bit ``t % 32`` (LSB first) of int32 word ``t // 32``;
1 = allowed.
"""

from xgr2.jax._masking import apply_token_bitmask, unpack_bitmask
from xgr2.jax._sampling import greedy, sample

__all__ = ["apply_token_bitmask", "greedy", "sample", "unpack_bitmask"]

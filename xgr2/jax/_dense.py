"""The GPU path of greedy and of sampling without top-k / top-p: fused passes, no control flow.

Why a path of its own: the generic pure-JAX sampler (:mod:`xgr2.jax._sampling`) saves passes
over the logits with conditionals (``lax.cond`` on "does any row need the slow path?"),
which suits the CPU, where a pass is expensive. An XLA GPU executable reads each such
predicate back to the host, while a pass over ``[B, V]`` float32 costs microseconds there.
So here every row takes every pass: the masked maximum, the greedy token, min-p, then
Gumbel-max over the kept tokens (``argmax(log w + G)``, distributed as ``w / sum(w)`` up to
the resolution of the noise: tokens below ``e^-34`` of the most likely one are never
drawn). Measured on an H200 (benchmarks/RESULTS.md), it beats the generic path
for greedy, plain and min-p sampling; with top-k (``lax.top_k``) or top-p (32 bisection
passes) it lost, so those keep the generic path. Same semantics as
:func:`xgr2.jax.sample`; other random numbers, so a key draws other tokens than on the CPU.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from xgr2.jax._masking import _unpack

__all__ = ["dense_greedy", "dense_sample", "first_max"]

_F32 = jnp.float32
_NEG_INF = float("-inf")


def _masked(logits: jax.Array, bitmask: jax.Array, constrained: jax.Array | None) -> tuple[jax.Array, jax.Array]:
    """``(xm, allowed)``: float32 ``[B, V]`` logits with disallowed and NaN entries at
    ``-inf``, and the bool ``[B, V]`` allowed set (XLA fuses both into their consumers)."""
    batch, vocab = logits.shape
    allowed = jnp.broadcast_to(_unpack(bitmask, vocab), (batch, vocab))
    if constrained is not None:
        allowed = allowed | ~constrained[:, None]
    x = logits.astype(_F32)
    return jnp.where(allowed & ~jnp.isnan(x), x, _F32(_NEG_INF)), allowed


def first_max(xm: jax.Array, allowed: jax.Array, row_max: jax.Array) -> jax.Array:
    """The first allowed token whose masked logit is the row maximum; with every allowed
    logit ``-inf`` (or NaN) the first allowed token; ``-1`` if none is allowed."""
    hit = allowed & (xm == row_max[:, None])
    return jnp.where(jnp.any(hit, axis=1), jnp.argmax(hit, axis=1), -1).astype(jnp.int32)


def dense_greedy(logits: jax.Array, bitmask: jax.Array, constrained: jax.Array | None) -> jax.Array:
    """int32 ``[B]``: the masked argmax (semantics of :func:`xgr2.jax.greedy`)."""
    xm, allowed = _masked(logits, bitmask, constrained)
    return first_max(xm, allowed, jnp.max(xm, axis=1))


def dense_sample(
    key: jax.Array,
    logits: jax.Array,
    bitmask: jax.Array,
    temperature: jax.Array,
    min_p: jax.Array | None,
    constrained: jax.Array | None,
) -> jax.Array:
    """int32 ``[B]``: :func:`xgr2.jax.sample` without top-k / top-p (same semantics)."""
    batch, vocab = logits.shape
    xm, allowed = _masked(logits, bitmask, constrained)
    row_max = jnp.max(xm, axis=1)
    greedy = first_max(xm, allowed, row_max)
    sampling = temperature > 0
    inv_temp = 1 / jnp.where(sampling, temperature, _F32(1))
    m = row_max[:, None]
    # log w = (x - M) / T; a +inf maximum keeps only the +inf tokens (uniformly), a -inf
    # maximum (no finite allowed logit) keeps nothing: the row falls back to greedy.
    z = (xm - m) * inv_temp[:, None]
    z = jnp.where(m == np.inf, jnp.where(xm == np.inf, _F32(0), _F32(_NEG_INF)), z)
    z = jnp.where(m == _NEG_INF, _F32(_NEG_INF), z)
    keep = z > _NEG_INF
    if min_p is not None:
        log_min_p = jnp.where(min_p > 0, jnp.log(jnp.minimum(min_p, _F32(1))), _F32(_NEG_INF))
        keep &= z >= log_min_p[:, None]
    # mode="high": Gumbels from 2 x 32 random bits. The default ("low", 23-bit uniforms)
    # caps the noise near 16, so tokens 12 or more below the maximum (after temperature),
    # which a large vocabulary holds by the thousand, were drawn too rarely and those past
    # ~19 never; now the cap is near 34 (a token that far below has probability < 2e-15).
    noise = jax.random.gumbel(key, (batch, vocab), _F32, mode="high")
    score = jnp.where(keep, z + noise, _F32(_NEG_INF))
    drawn = jnp.argmax(score, axis=1).astype(jnp.int32)
    return jnp.where(sampling & jnp.any(keep, axis=1), drawn, greedy)

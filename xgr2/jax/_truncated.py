"""top-k / min-p sampling from a few candidate blocks, certified exact, without masking the row.

Why: on CPU XLA a pass over ``[B, V]`` that fuses a bit test or ``exp`` costs several times
the read floor, while a plain max reduction runs at it. The kept set of top-k and min-p is
small and made of the largest logits, so:

* One plain pass takes the raw (unmasked) maxima of 32-token blocks (one bitmask word
  each). The ``K`` blocks with the largest maxima are the candidates; ``bound``, the
  ``K``-th largest block maximum, is at least every token outside them.
* The candidates' ``K * 32`` logits and mask words are gathered and masked exactly; the
  allowed maximum ``M``, the k-th largest allowed value ``tau`` and the min-p cut are
  computed among them.
* The row is certified when the kept set provably lies inside the candidates: ``M > bound``
  (so ``M`` is the row's allowed maximum, ties included) and either ``tau > bound`` (then
  every allowed value ``>= tau`` of the row is a candidate, and the candidates hold ``k``
  of them, so ``tau`` is the row's k-th largest) or, without top-k, the min-p cut lies
  above ``bound`` (``(bound - M) / T < log(min_p)``, the exact path's formula).
* A certified row is sampled among the candidates with one uniform (inverse CDF over block
  masses, then inside the block). Other rows (sparse masks, flat rows, NaN / inf logits)
  are flagged; callers redo them on the exact path with an independent key.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from xgr2.jax._candidates import allowed_in, block_words, materialized, raw_blocks, top_values
from xgr2.jax._envelope import cumsum_by_matmul, first_above

_F32 = jnp.float32
_NEG_INF = float("-inf")
# Tokens per candidate block: one bitmask word, so a block's bits are one gathered word.
WIDTH = 32
# Candidate blocks: enough for a min-p cut or a top-k of a half-dense mask to fit inside
# with room to spare (the count of allowed candidates above ``bound`` is about K * density),
# few enough that lax.top_k over the block maxima stays cheap.
MIN_BLOCKS = 128
# Largest static top-k bound the fast path takes (the candidates grow as 3 * k).
MAX_K = 256


def candidate_blocks(vocab: int, k_bound: int | None) -> int:
    """Number of candidate blocks for a row of ``vocab`` tokens and a top-k bound (or None)."""
    nb = -(-vocab // WIDTH)
    return min(nb, max(MIN_BLOCKS, 3 * (k_bound or 0)))


def sample_truncated(
    key: jax.Array,
    logits: jax.Array,
    bitmask: jax.Array,
    constrained: jax.Array | None,
    temperature: jax.Array,
    top_k: jax.Array | None,
    min_p: jax.Array | None,
    *,
    k_bound: int | None,
) -> tuple[jax.Array, jax.Array]:
    """``(tokens int32 [B], exact bool [B])`` for top-k and / or min-p sampling.

    ``top_k`` (with its static ``k_bound``) and ``min_p`` as in :func:`xgr2.jax.sample`
    (``[B]`` arrays or None). Rows with ``temperature <= 0`` get the masked argmax. Where
    ``exact`` is False the token is meaningless and the row must be redone exactly.
    """
    batch, vocab = logits.shape
    xb = raw_blocks(logits, WIDTH)  # [B, nb, 32]
    nb = xb.shape[1]
    k = candidate_blocks(vocab, k_bound)
    # The one full pass: a plain max reduction, materialised so that top_k reads an array.
    # A NaN maximum may hide anything: it ranks first (+inf) and, outside, spoils `bound`.
    block_max = jnp.max(xb, axis=2)
    block_max = jnp.where(jnp.isnan(block_max), jnp.inf, block_max).astype(_F32)
    block_max = materialized(block_max)
    top_max, blocks = jax.lax.top_k(block_max, k)
    # Every block outside the candidates has a maximum <= the k-th largest one. (A min, not
    # top_max[:, -1]: XLA CPU turns a TopK whose last value is sliced into a full sort.)
    bound = jnp.min(top_max, axis=1) if k < nb else jnp.full((batch,), _NEG_INF, _F32)
    values = jnp.take_along_axis(xb, blocks[:, :, None], axis=1).astype(_F32)  # [B, K, 32]
    ids = blocks[:, :, None] * WIDTH + jax.lax.broadcasted_iota(jnp.int32, (1, 1, WIDTH), 2)
    allowed = allowed_in(block_words(bitmask, batch, vocab, WIDTH), blocks, constrained) & (ids < vocab)
    xm = jnp.where(allowed & ~jnp.isnan(values), values, _F32(_NEG_INF))
    best = jnp.max(xm, axis=(1, 2))
    exact = jnp.isfinite(best) & (best > bound)
    greedy = jnp.min(jnp.where(xm == best[:, None, None], ids, jnp.int32(nb * WIDTH)), axis=(1, 2))

    sampling = temperature > 0
    inv_temp = 1 / jnp.where(sampling, temperature, _F32(1))
    z = (xm - best[:, None, None]) * inv_temp[:, None, None]  # the exact path's formula
    keep = xm > _F32(_NEG_INF)
    fits = jnp.zeros((batch,), jnp.bool_)  # the kept set provably inside the candidates
    if top_k is not None:
        flat = xm.reshape(batch, k * WIDTH)
        largest = top_values(flat, min(k_bound or 1, k * WIDTH))
        kth = jnp.clip(top_k, 1, largest.shape[1]) - 1
        tau = jnp.take_along_axis(largest, kth[:, None], axis=1)[:, 0]
        active = top_k >= 1
        # With every block a candidate (small vocabularies) the candidates are the row.
        tau_ok = (tau > bound) | (k == nb)
        exact &= ~active | tau_ok | ~sampling
        fits |= active & tau_ok
        keep &= ~active[:, None, None] | (xm >= tau[:, None, None])
    if min_p is not None:
        active = min_p > 0
        log_min_p = jnp.where(active, jnp.log(jnp.minimum(min_p, _F32(1))), _F32(_NEG_INF))
        fits |= active & ((bound - best) * inv_temp < log_min_p)
        keep &= z >= log_min_p[:, None, None]
    exact &= fits | ~sampling

    weight = jnp.where(keep, jnp.exp(z), _F32(0))  # the maximum has weight 1: total >= 1
    block_mass = jnp.sum(weight, axis=2)  # [B, K]
    cum = cumsum_by_matmul(block_mass)
    target = jax.random.uniform(key, (batch,), _F32) * cum[:, -1]
    block = _pick(cum, block_mass, target)
    before = jnp.take_along_axis(cum - block_mass, block[:, None], axis=1)[:, 0]
    inner_weight = jnp.take_along_axis(weight, block[:, None, None], axis=1)[:, 0]  # [B, 32]
    inner = _pick(cumsum_by_matmul(inner_weight), inner_weight, target - before)
    token = jnp.take_along_axis(blocks, block[:, None], axis=1)[:, 0] * WIDTH + inner
    tokens = jnp.where(sampling, token, greedy)
    return tokens.astype(jnp.int32), exact


def _pick(cum: jax.Array, weight: jax.Array, target: jax.Array) -> jax.Array:
    """First index with ``cum > target`` per row; past the end (rounding), the last positive
    weight: never a zero-weight entry."""
    n = weight.shape[-1]
    found = first_above(cum, target)
    last = n - 1 - jnp.argmax(weight[:, ::-1] > 0, axis=1).astype(jnp.int32)
    past = cum[:, -1] <= target
    return jnp.where(past, last, found).astype(jnp.int32)

"""Fast paths for masked greedy / sampling that never apply the mask to the whole row.

Why: on CPU XLA the only fast full-row passes are plain reductions (YNNPACK); a bit test
fused into a pass over ``[B, V]`` costs 3-10x the read floor (measured on jax 0.10). So the
only full passes here read the *raw* logits, and the mask is applied to a few blocks:

* greedy: the raw block maxima bound every block's masked values. The ``K`` blocks with
  the largest raw maxima are masked exactly; if their best allowed value is strictly above
  the ``(K+1)``-th raw block maximum, no other block can hold a value as large (nor a tie),
  so it is the masked argmax. Otherwise the row is flagged for the exact full path.
* sampling: see ``_envelope`` (rejection from sub-block maxima).

Callers run the exact full path (under ``lax.cond``) only when some row is flagged, with a
key independent of the proposals', so the result stays exactly distributed.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

_F32 = jnp.float32
_NEG_INF = float("-inf")
# Candidate blocks for greedy (of 128 tokens): enough that a dense mask almost never
# needs the full path, few enough that masking them is cheap.
CANDIDATE_BLOCKS = 16
_LANES = np.left_shift(np.uint32(1), np.arange(32, dtype=np.uint32)).view(np.int32)


def materialized(x: jax.Array) -> jax.Array:
    """``x`` behind an optimization barrier: computed on its own, never fused into (or
    recomputed by) the ops that read it. Plain values only: a barrier that keeps a TopK's
    indices live aborts XLA's TopK decomposer under SPMD sharding."""
    out: jax.Array = jax.lax.optimization_barrier(x)  # type: ignore[no-untyped-call]  # unannotated in jax
    return out


def raw_blocks(logits: jax.Array, c: int) -> jax.Array:
    """``logits [B, V]`` as ``[B, nb, C]`` (a free reshape when ``C`` divides ``V``, else
    padded with ``-inf``), in the logits' own dtype."""
    batch, vocab = logits.shape
    nb = -(-vocab // c)
    if nb * c != vocab:
        logits = jnp.pad(logits, ((0, 0), (0, nb * c - vocab)), constant_values=_NEG_INF)
    return logits.reshape(batch, nb, c)


def block_words(bitmask: jax.Array, batch: int, vocab: int, c: int) -> jax.Array:
    """The bitmask as int32 ``[B, nb, C / 32]`` words, bits of ids ``>= V`` cleared."""
    nb = -(-vocab // c)
    words = -(-vocab // 32)
    mask = jnp.broadcast_to(bitmask[..., :words], (batch, words))
    if vocab % 32:
        mask = mask.at[:, -1].set(mask[:, -1] & jnp.int32((1 << (vocab % 32)) - 1))
    mask = jnp.pad(mask, ((0, 0), (0, nb * c // 32 - words)))
    return mask.reshape(batch, nb, c // 32)


def top_values(x: jax.Array, k: int) -> jax.Array:
    """``lax.top_k(x, k)[0]``. (Keeping the indices live through an optimization barrier,
    to stop XLA CPU from rewriting some values-only TopKs into a sort, crashes XLA's TopK
    decomposer under SPMD sharding: do not.)"""
    out: jax.Array = jax.lax.top_k(x, k)[0]
    return out


def _unpack_words(words: jax.Array) -> jax.Array:
    """int32 ``[..., n]`` -> bool ``[..., 32 n]`` (bit ``j`` of word ``i`` is entry ``32 i + j``)."""
    lanes = jnp.asarray(_LANES).reshape((1,) * words.ndim + (32,))
    bits = (words[..., None] & lanes) != 0
    return bits.reshape(words.shape[:-1] + (words.shape[-1] * 32,))


def allowed_in(words: jax.Array, blocks: jax.Array, constrained: jax.Array | None) -> jax.Array:
    """bool ``[B, K, C]``: allowed tokens of the chosen ``blocks [B, K]``."""
    chosen = jnp.take_along_axis(words, blocks[:, :, None], axis=1)
    allowed = _unpack_words(chosen)
    if constrained is not None:
        allowed = allowed | ~constrained[:, None, None]
    return allowed


def greedy_candidates(
    xb: jax.Array, words: jax.Array, constrained: jax.Array | None, vocab: int
) -> tuple[jax.Array, jax.Array, jax.Array]:
    """``(tokens [B], best [B], exact [B])`` from the top raw blocks (see the module doc).

    ``best`` is the masked maximum (float32) where ``exact``; other rows must be redone.
    Padding tokens carry no bit, so they are never allowed.
    """
    batch, nb, c = xb.shape
    block_max = jnp.max(xb, axis=2)  # the one full pass: a plain reduction
    # A NaN block maximum may hide anything: rank the block first (+inf).
    block_max = jnp.where(jnp.isnan(block_max), jnp.inf, block_max).astype(_F32)
    k = min(CANDIDATE_BLOCKS, nb)
    _, blocks = jax.lax.top_k(block_max, k)
    # The largest maximum outside the candidates. (Asking top_k for k + 1 and reading its
    # last value makes XLA CPU replace the TopK call by a full sort, 10x slower.)
    chosen = jnp.any(jax.lax.broadcasted_iota(jnp.int32, (1, nb, 1), 1) == blocks[:, None, :], axis=2)
    outside = jnp.max(jnp.where(chosen, _F32(_NEG_INF), block_max), axis=1)
    values = jnp.take_along_axis(xb, blocks[:, :, None], axis=1).astype(_F32)  # [B, K, C]
    allowed = allowed_in(words, blocks, constrained)
    xm = jnp.where(allowed & ~jnp.isnan(values), values, _F32(_NEG_INF))
    best = jnp.max(xm, axis=(1, 2))
    ids = blocks[:, :, None] * c + jax.lax.broadcasted_iota(jnp.int32, (1, 1, c), 2)
    tokens = jnp.min(jnp.where(xm == best[:, None, None], ids, jnp.int32(nb * c)), axis=(1, 2))
    exact = (best > outside) & (best > _NEG_INF) & (tokens < vocab)
    return tokens.astype(jnp.int32), best, exact


def search_sorted(cum: jax.Array, weight: jax.Array, target: jax.Array) -> jax.Array:
    """Per row of ``cum [..., n]`` (non-decreasing sums of ``weight >= 0``), the first index
    with ``cum > target [..., R]``: never a zero-weight entry (its ``cum`` equals the one
    before). Past the end (rounding), the last positive entry. A binary search: a linear
    scan over ``[B, R, n]`` costs more than the whole row pass on CPU."""
    n = weight.shape[-1]
    flat_cum = cum.reshape(-1, n)
    found = jax.vmap(lambda c, t: jnp.searchsorted(c, t, side="right", method="scan_unrolled"))(
        flat_cum, target.reshape(flat_cum.shape[0], -1)
    ).reshape(target.shape)
    last = n - 1 - jnp.argmax(weight[..., ::-1] > 0, axis=-1)
    return jnp.where(found < n, found, last[..., None]).astype(jnp.int32)

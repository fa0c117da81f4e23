"""Plain masked sampling by rejection from a sub-block-maximum envelope (no exp over ``V``).

Why: on CPU XLA a full-row pass that fuses elementwise work (``exp``, a bit test) into a
reduction costs 3-5x the read floor, while a plain max reduction runs at the floor. So the
only full pass here is a max over strided sub-blocks, and ``exp`` runs on ``V / S`` values:

* Token ``t = i * n + j`` (``n = V / S``, ``0 <= i < S``) belongs to sub-block ``j``, whose
  maximum is ``m_j``. The envelope ``g_t = exp((m_j - M) / T) >= w_t = exp((x_t - M) / T)``.
* A proposal draws sub-block ``j`` with probability ``e_j / sum(e)`` (``e_j = exp((m_j - M) /
  T)``; inverse CDF over 128-wide groups, then inside the group), then a member ``i`` uniformly,
  so ``P(t) = g_t / (S * sum(e))``. It is accepted with probability ``allowed_t * w_t / g_t =
  allowed_t * exp((x_t - m_j) / T)`` (at most 1). So an accepted proposal is distributed as
  ``allowed * w`` normalised: exact rejection sampling of the masked tempered distribution.
* ``PROPOSALS`` independent proposals per row; the first accepted one is the sample. The
  acceptance rate is about ``allowed mass / S`` when few tokens dominate (each sub-block's mass
  is then its maximum), up to the allowed mass for flat rows. Rows where none is accepted (or
  with NaN / infinite logits) are flagged for the exact path, which callers run under
  ``lax.cond`` with an independent key, so the result stays exactly distributed.

Strided sub-blocks (a column max over ``[B, S, n]``) vectorise as well as the floor pass; a
token's bit is read from the bitmask per proposal only.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

from xgr2.jax._candidates import materialized

_F32 = jnp.float32
_NEG_INF = float("-inf")
# Tokens per sub-block: the envelope pass costs one read of V plus exp over V / S values;
# acceptance falls roughly as 1 / S for peaked rows.
SUB_BLOCK = 4
# Width of a group of sub-blocks for the two-level inverse CDF.
GROUP = 128
# Proposals per row: with acceptance q a row falls back with probability (1 - q) ** 64.
PROPOSALS = 64


def _group_size(n: int) -> int:
    """Sub-blocks per group: the largest power of two up to ``GROUP`` dividing ``n`` (no pad)."""
    g = GROUP
    while g > 16 and n % g:
        g //= 2
    return g


def cumsum_by_matmul(values: jax.Array) -> jax.Array:
    """Inclusive cumsum over the last axis as one matmul with a triangular matrix: XLA CPU
    runs ``jnp.cumsum`` as a quadratic reduce_window and an associative scan as dozens of
    small ops, each with a fixed cost that dominates at these sizes."""
    n = values.shape[-1]
    upper = jnp.asarray(np.triu(np.ones((n, n), np.float32)))
    out: jax.Array = jnp.matmul(values, upper, precision=jax.lax.Precision.HIGHEST)
    return out


def first_above(cum: jax.Array, target: jax.Array) -> jax.Array:
    """Index of the first ``cum [..., n] > target [...]`` (``cum`` non-decreasing), clamped to
    ``n - 1``: one compare-and-count op (a binary search is a dozen ops)."""
    count = jnp.sum((cum <= target[..., None]).astype(_F32), axis=-1).astype(jnp.int32)
    return jnp.minimum(count, cum.shape[-1] - 1)


def _uniform(bits: jax.Array) -> jax.Array:
    """float32 in ``[0, 1)`` from the top 23 bits of uint32 ``bits`` (the low bits stay free)."""
    mantissa = (bits >> jnp.uint32(9)) | jnp.uint32(0x3F800000)
    unit: jax.Array = jax.lax.bitcast_convert_type(mantissa, _F32) - _F32(1)
    return unit


def sample_by_envelope(
    key: jax.Array,
    logits: jax.Array,
    bitmask: jax.Array,
    constrained: jax.Array | None,
    inv_temp: jax.Array,
) -> tuple[jax.Array, jax.Array]:
    """``(tokens int32 [B], exact bool [B])`` for ``logits [B, V]`` and ``bitmask [B, W]``.

    Where ``exact`` is False the token is meaningless and the row must be redone exactly.
    """
    batch, vocab = logits.shape
    s = SUB_BLOCK
    n = -(-vocab // s)
    x = logits
    if n * s != vocab:  # rare vocabulary sizes: one padding copy
        x = jnp.pad(x, ((0, 0), (0, n * s - vocab)), constant_values=_NEG_INF)
    # The one full pass: an elementwise max of S slices (a column reduce is 2x slower).
    sub_max = functools.reduce(jnp.maximum, [x[:, i * n : (i + 1) * n] for i in range(s)]).astype(_F32)
    # Materialised (a fast loop): XLA CPU would otherwise fuse it into the next reduction,
    # whose fused codegen runs several times slower than a plain reduce.
    sub_max = materialized(sub_max)
    row_max = jnp.max(sub_max, axis=1)
    ok = jnp.isfinite(row_max)  # NaN, +inf and all -inf rows go to the exact path
    m = jnp.where(ok, row_max, _F32(0))
    width = _group_size(n)
    groups = -(-n // width)
    padded = sub_max
    if groups * width != n:
        padded = jnp.pad(sub_max, ((0, 0), (0, groups * width - n)), constant_values=_NEG_INF)
    padded = padded.reshape(batch, groups, width)

    def envelope(values: jax.Array) -> jax.Array:
        shape = (batch,) + (1,) * (values.ndim - 1)
        return jnp.exp((values - m.reshape(shape)) * inv_temp.reshape(shape))

    group_mass = jnp.sum(envelope(padded), axis=2)  # [B, groups]
    cum = cumsum_by_matmul(group_mass)
    total = cum[:, -1]
    ok &= total > 0
    # Two random words per proposal (threefry's cost on CPU grows with the count): the
    # first gives the inverse-CDF uniform, the second the member (low bits) and the
    # acceptance uniform (high bits).
    bits = jax.random.bits(key, (batch, PROPOSALS, 2), jnp.uint32)
    u_pick = _uniform(bits[:, :, 0])
    lane = (bits[:, :, 1] & jnp.uint32(s - 1)).astype(jnp.int32)
    u_keep = _uniform(bits[:, :, 1])
    target = u_pick * total[:, None]  # [B, R]
    group = first_above(cum[:, None, :], target)  # [B, R]
    before = jnp.take_along_axis(cum - group_mass, group, axis=1)
    members = jnp.take_along_axis(padded, group[:, :, None], axis=1)  # [B, R, width]
    inner = first_above(cumsum_by_matmul(envelope(members)), target - before)
    # Rounding may land on a zero-mass sub-block; its acceptance below is then 0.
    j = jnp.minimum(group * width + inner, n - 1)
    tokens = lane * n + j
    x_t = jnp.take_along_axis(x, tokens, axis=1).astype(_F32)
    m_j = jnp.take_along_axis(sub_max, j, axis=1)
    keep = u_keep < jnp.exp((x_t - m_j) * inv_temp[:, None])
    word = jnp.take_along_axis(bitmask, jnp.minimum(tokens // 32, bitmask.shape[1] - 1), axis=1)
    allowed = ((jax.lax.shift_right_logical(word, tokens % 32) & 1) == 1) & (tokens < vocab)
    if constrained is not None:
        allowed = allowed | (~constrained[:, None] & (tokens < vocab))
    accepted = keep & allowed
    first = jnp.argmax(accepted, axis=1)
    token = jnp.take_along_axis(tokens, first[:, None], axis=1)[:, 0]
    return token.astype(jnp.int32), ok & jnp.any(accepted, axis=1)

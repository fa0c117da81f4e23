"""Fused masked sampling on device (pure JAX): exact, sorting-free, one uniform per row.

How a row is sampled (all in float32, logits read a few times, never sorted):

1. Mask: disallowed tokens and NaN logits become ``-inf``. The row is viewed as ``nb`` blocks
   of ``C`` tokens (``[B, nb, C]``, a free reshape when ``C`` divides ``V``).
2. One pass: the block maxima, hence the row maximum ``M`` (greedy rows stop here: the
   first maximal allowed token is found in the first block whose maximum is ``M``).
3. top-k (if any): the k-th largest value ``tau_k``, found among the tokens of the ``K``
   blocks with the largest maxima (``K >= k``; exact, see :func:`_kth_largest_blocks`), or
   by bisection on the float bit patterns when ``k`` is traced and has no static bound.
4. One pass: per-block masses of ``w = exp((x - M) / T)`` over the kept tokens
   (``x >= tau_k`` and ``w >= min_p``). One uniform ``u`` per row picks a block by the
   inverse CDF of the block masses, then a token inside that block (only ``C`` values
   re-read).
5. top-p (if any): rejection with a rising pivot, exact. The drawn token ``t`` is in the
   top-p set iff the mass strictly above its logit is ``< top_p * Z``; that mass is the
   total of the next pass's block masses restricted to ``x > x_t``, which also serve to
   draw the next candidate if ``t`` is rejected. Conditioned on acceptance, the draw is
   distributed as the truncated distribution, so the result is exact; a typical row needs
   one to a few extra passes.

Truncation order and ties: top-k, then top-p on the top-k-renormalised distribution, then
min-p (relative to the most likely token). Ties at a threshold are all kept (top-k may then
keep more than ``k`` tokens, never fewer).
"""

from __future__ import annotations

import functools
import operator
from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np
from jax.typing import ArrayLike

from xgr2.jax._cpu_kernels import cpu_greedy, cpu_sample, use_kernels
from xgr2.jax._dense import first_max as dense_first_max
from xgr2.jax._dense import dense_greedy, dense_sample
from xgr2.jax._candidates import block_words, greedy_candidates, materialized, raw_blocks, top_values
from xgr2.jax._envelope import sample_by_envelope
from xgr2.jax._masking import _check_logits_and_bitmask, _unpack
from xgr2.jax._truncated import MAX_K, sample_truncated

__all__ = ["greedy", "sample"]

_F32 = jnp.float32
_NEG_INF = float("-inf")
# Bound on top-p rejection rounds. Each round strictly raises the pivot, so a round count
# past a few dozen needs adversarial logits; past the bound the last candidate is returned.
_MAX_TOP_P_ROUNDS = 128
# Smallest static bound for a per-row top-k array, so that decode steps with varying k share
# one compilation.
_MIN_K_BOUND = 64

# ``allowed`` as a thunk: bool ``[B, nb, C]`` recomputed only where needed (see _masked_blocks).
_AllowedFn = Callable[[], jax.Array]
# Per-token weights of the chosen block: ``(values [B, 1, C], block [B]) -> [B, 1, C]``.
_WeightFn = Callable[[jax.Array, jax.Array], jax.Array]
# The top-p rejection loop's carry: (rounds, tokens [B], pivot logits [B], done [B]).
_TopPState = tuple[jax.Array, jax.Array, jax.Array, jax.Array]


# ----------------------------------------------------------------------------- helpers


def _block_size(vocab: int) -> int:
    """Tokens per block: 128 when it divides ``V`` (common vocabularies), else 128 + padding."""
    for c in (128, 256, 64):
        if vocab % c == 0:
            return c
    return 128


_LANE_BITS = np.left_shift(np.uint32(1), np.arange(32, dtype=np.uint32)).view(np.int32)


def _masked_blocks(
    logits: jax.Array, bitmask: jax.Array, constrained: jax.Array | None
) -> tuple[jax.Array, _AllowedFn]:
    """float32 ``[B, nb, C]`` logits with disallowed / NaN / padding entries at ``-inf``.

    Also returns a function giving the bool ``allowed [B, nb, C]`` (padding False), which
    recomputes it where needed (a rare fallback) instead of materialising it.
    When ``V`` is a multiple of 32 the bits are tested word by word against constant lane
    masks (no per-element shifts, no index arithmetic), which XLA fuses into each pass.
    """
    batch, vocab = logits.shape
    c = _block_size(vocab)
    nb = -(-vocab // c)
    pad = ((0, 0), (0, nb * c - vocab))

    def allowed_of() -> jax.Array:
        if vocab % 32 == 0:
            words = vocab // 32
            mask = jnp.broadcast_to(bitmask[..., :words], (batch, words))
            allowed = (mask[:, :, None] & jnp.asarray(_LANE_BITS)[None, None, :]) != 0
            allowed = allowed.reshape(batch, vocab)
        else:
            allowed = jnp.broadcast_to(_unpack(bitmask, vocab), (batch, vocab))
        if constrained is not None:
            allowed = allowed | ~constrained[:, None]
        return allowed

    def blocks(a: jax.Array, fill: float | bool) -> jax.Array:
        return (jnp.pad(a, pad, constant_values=fill) if nb * c != vocab else a).reshape(batch, nb, c)

    x = logits.astype(_F32)
    xm = jnp.where(allowed_of() & ~jnp.isnan(x), x, _F32(_NEG_INF))
    return blocks(xm, _NEG_INF), lambda: blocks(allowed_of(), False)


def _first_max(xb: jax.Array, allowed: _AllowedFn, block_max: jax.Array, row_max: jax.Array) -> jax.Array:
    """Index of the first allowed token whose masked logit equals ``row_max``, else -1.

    No second pass over the row: the first block whose maximum is ``row_max`` is found on
    the block maxima, then searched alone. With every allowed logit ``-inf`` (or NaN) the
    answer is the first allowed token (a full pass, only when some row needs it); with no
    allowed token, -1.
    """
    batch, nb, c = xb.shape
    finite = row_max > _NEG_INF
    block = jnp.argmax(block_max == row_max[:, None], axis=1).astype(jnp.int32)
    values = jnp.take_along_axis(xb, block[:, None, None], axis=1)[:, 0]
    inner = jnp.argmax(values == row_max[:, None], axis=1).astype(jnp.int32)
    found = jnp.where(finite, block * c + inner, -1)

    def first_allowed(_: None) -> jax.Array:
        flat = allowed().reshape(batch, nb * c)
        first = jnp.argmax(flat, axis=1).astype(jnp.int32)
        return jnp.where(finite, found, jnp.where(jnp.any(flat, axis=1), first, -1))

    tokens: jax.Array = jax.lax.cond(jnp.all(finite), lambda _: found, first_allowed, None)
    return tokens


def _order_key(x: jax.Array) -> jax.Array:
    """uint32 key with the order of float32 ``x`` (no NaN): ``a < b`` iff ``key(a) < key(b)``."""
    b = jax.lax.bitcast_convert_type(x, jnp.uint32)
    return jnp.where(b >> 31 == 1, ~b, b | jnp.uint32(0x80000000))


def _from_order_key(k: jax.Array) -> jax.Array:
    """Inverse of :func:`_order_key`."""
    b = jnp.where(k >> 31 == 1, k & jnp.uint32(0x7FFFFFFF), ~k)
    return jax.lax.bitcast_convert_type(b, _F32)


def _threshold_by_bisection(x: jax.Array, weights: ArrayLike, target: jax.Array) -> jax.Array:
    """Largest value ``v`` among ``x`` with ``sum(weights[x >= v]) >= target``, per row.

    Exact: bisection on the 32-bit order key (32 passes of compare-and-add). ``x`` float32
    ``[R, ...]`` without NaN; ``weights`` like ``x`` (or a scalar); ``target`` ``[R]`` with
    ``0 < target <= sum(weights)``. Used for a traced per-row top-k without a static bound
    and for explicit truncated probabilities (:func:`_truncated_probs`).
    """
    keys = _order_key(x)
    axes = tuple(range(1, x.ndim))
    shape = (-1,) + (1,) * (x.ndim - 1)
    w = jnp.broadcast_to(jnp.asarray(weights, _F32), x.shape)

    def body(_: jax.Array, bounds: tuple[jax.Array, jax.Array]) -> tuple[jax.Array, jax.Array]:
        lo, hi = bounds
        mid = hi - (hi - lo) // jnp.uint32(2)
        mass = jnp.sum(jnp.where(keys >= mid.reshape(shape), w, _F32(0)), axis=axes)
        ok = mass >= target
        return jnp.where(ok, mid, lo), jnp.where(ok, hi, mid - jnp.uint32(1))

    rows = x.shape[0]
    lo = jnp.zeros((rows,), jnp.uint32)
    hi = jnp.full((rows,), 0xFFFFFFFF, jnp.uint32)
    lo, _ = jax.lax.fori_loop(0, 32, body, (lo, hi))
    return _from_order_key(lo)


def _kth_largest_blocks(xb: jax.Array, block_max: jax.Array, top_k: jax.Array, bound: int) -> jax.Array:
    """The ``top_k``-th largest value per row (``-inf`` where fewer tokens), for ``top_k <= bound``.

    Exact without a full sort: let ``mu`` be the ``bound``-th largest block maximum. The
    ``bound`` blocks with the largest maxima each hold a value ``>= mu``, so the k-th largest
    value ``tau >= mu`` for every ``k <= bound``; every value ``> tau`` lies in a block whose
    maximum is ``> mu``, hence among those blocks, and they hold at least ``k`` values
    ``>= tau``. So the k-th largest of their tokens is ``tau``.
    """
    batch, nb, c = xb.shape
    if bound >= nb or bound * c >= nb * c // 2:  # few blocks: select on the whole row
        values = top_values(xb.reshape(batch, nb * c), min(bound, nb * c))
    else:
        _, blocks = jax.lax.top_k(block_max, bound)
        cand = jnp.take_along_axis(xb, blocks[:, :, None], axis=1)
        values = top_values(cand.reshape(batch, bound * c), bound)
    k = jnp.clip(top_k, 1, values.shape[1]) - 1
    return jnp.take_along_axis(values, k[:, None], axis=1)[:, 0]


def _scaled(xb: jax.Array, row_max: jax.Array, inv_temp: jax.Array) -> jax.Array:
    """``(x - M) / T`` as float32, with the limits: a ``+inf`` maximum keeps only the ``+inf``
    tokens (at 0), a ``-inf`` maximum (no finite allowed logit) keeps nothing."""
    m = row_max[:, None, None]
    z = (xb - m) * inv_temp[:, None, None]
    z = jnp.where(m == np.inf, jnp.where(xb == np.inf, _F32(0), _F32(_NEG_INF)), z)
    return jnp.where(m == _NEG_INF, _F32(_NEG_INF), z)


def _draw(u: jax.Array, block_mass: jax.Array, xb: jax.Array, weight_of: _WeightFn) -> jax.Array:
    """Inverse-CDF draw: one uniform ``u [B]`` picks a block, then a token inside it.

    ``block_mass [B, nb]`` are the block sums of ``weight_of(xb)``; ``weight_of`` is
    recomputed on the chosen block only. Rounding can never pick a zero-weight token: if
    the target falls past the last positive weight, the last positive one is taken.
    """
    batch, nb, c = xb.shape
    cum = jnp.cumsum(block_mass, axis=1)
    target = u * cum[:, -1]
    block = _pick_index(cum, block_mass, target)
    before = jnp.take_along_axis(cum - block_mass, block[:, None], axis=1)[:, 0]
    values = jnp.take_along_axis(xb, block[:, None, None], axis=1)  # [B, 1, C]
    weight = weight_of(values, block)[:, 0]
    inner = _pick_index(jnp.cumsum(weight, axis=1), weight, target - before)
    return block * c + inner


def _pick_index(cum: jax.Array, weight: jax.Array, target: jax.Array) -> jax.Array:
    """Per row, the first index whose cumulative weight ``cum`` exceeds ``target`` among
    positive weights; past the last positive weight (rounding), that last one."""
    n = weight.shape[1]
    positive = weight > 0
    last = n - 1 - jnp.argmax(positive[:, ::-1], axis=1)
    over = (cum > target[:, None]) & positive
    return jnp.where(jnp.any(over, axis=1), jnp.argmax(over, axis=1), last).astype(jnp.int32)


# ----------------------------------------------------------------------------- kernel


def _sample_blocks(
    key: jax.Array,
    xb: jax.Array,
    allowed: _AllowedFn,
    temperature: jax.Array,
    top_k: jax.Array | None,
    top_p: jax.Array | None,
    min_p: jax.Array | None,
    *,
    k_bound: int | None,
) -> jax.Array:
    """Tokens ``int32 [B]`` for masked blocks ``xb [B, nb, C]``; see the module docstring."""
    batch, nb, c = xb.shape
    block_max = jnp.max(xb, axis=2)
    # The barrier keeps XLA from fusing the reduction with its [B, V] broadcast (which the
    # CPU backend would then materialise).
    row_max = materialized(jnp.max(block_max, axis=1))
    sampling = temperature > 0

    def greedy_tokens(_: None) -> jax.Array:
        return _first_max(xb, allowed, block_max, row_max)

    any_greedy = jnp.any(~sampling)
    greedy = jax.lax.cond(any_greedy, greedy_tokens, lambda _: jnp.full((batch,), -1, jnp.int32), None)

    def sampled_tokens(_: None) -> jax.Array:
        inv_temp = 1 / jnp.where(sampling, temperature, _F32(1))
        tau = jnp.full((batch,), _NEG_INF, _F32)
        if top_k is not None:
            active = top_k >= 1
            if k_bound is None:
                kk = jnp.clip(top_k, 1, nb * c).astype(_F32)
                tau_k = _threshold_by_bisection(xb, _F32(1), kk)
            else:
                tau_k = _kth_largest_blocks(xb, block_max, top_k, k_bound)
            tau = jnp.where(active, tau_k, tau)
        log_min_p = jnp.full((batch,), _NEG_INF, _F32)
        if min_p is not None:
            log_min_p = jnp.where(min_p > 0, jnp.log(jnp.minimum(min_p, _F32(1))), _F32(_NEG_INF))

        def weight_of(values: jax.Array, block: jax.Array | None = None, low: jax.Array | None = None) -> jax.Array:
            z = _scaled(values, row_max, inv_temp)
            keep = (values >= tau[:, None, None]) & (z >= log_min_p[:, None, None])
            if low is not None:
                keep &= values > low[:, None, None]
            return jnp.where(keep, jnp.exp(z), _F32(0))

        weights = weight_of(xb)
        # Barriers on the block masses: XLA would otherwise reduce all of ``weights`` again
        # for their total (one more full pass).
        block_mass = materialized(jnp.sum(weights, axis=2))
        total = jnp.sum(block_mass, axis=1)
        flat = xb.reshape(batch, nb * c)
        tokens = _draw(jax.random.uniform(key, (batch,), _F32), block_mass, xb, weight_of)
        if top_p is not None:
            active = top_p < 1
            top_k_mass = total  # top-p applies before min-p: its mass ignores the min-p cut
            if min_p is not None:
                z = _scaled(xb, row_max, inv_temp)
                top_k_mass = jnp.sum(jnp.where(xb >= tau[:, None, None], jnp.exp(z), _F32(0)), axis=(1, 2))
            goal = jnp.maximum(top_p, _F32(1e-30)) * top_k_mass

            def cond(state: _TopPState) -> jax.Array:
                rounds, _, _, done = state
                return (rounds < _MAX_TOP_P_ROUNDS) & ~jnp.all(done)

            def body(state: _TopPState) -> _TopPState:
                rounds, tok, low, done = state
                above = jnp.where(xb > low[:, None, None], weights, _F32(0))
                above_mass = materialized(jnp.sum(above, axis=2))
                done = done | (jnp.sum(above_mass, axis=1) < goal)
                u = jax.random.uniform(jax.random.fold_in(key, rounds), (batch,), _F32)
                new = _draw(u, above_mass, xb, lambda v, b: weight_of(v, b, low))
                tok = jnp.where(done, tok, new)
                low = jnp.take_along_axis(flat, tok[:, None], axis=1)[:, 0]
                return rounds + 1, tok, low, done

            low = jnp.take_along_axis(flat, tokens[:, None], axis=1)[:, 0]
            done0 = ~active | ~(total > 0)
            state = (jnp.int32(1), tokens, low, done0)
            tokens = jax.lax.while_loop(cond, body, state)[1]
        return jnp.where(total > 0, tokens, -1)

    sampled = jax.lax.cond(
        jnp.any(sampling), sampled_tokens, lambda _: jnp.full((batch,), -1, jnp.int32), None
    )
    # A sampling row with no finite allowed logit falls back to the greedy choice.
    fallback = jax.lax.cond(
        jnp.any(sampling & (sampled < 0)), greedy_tokens, lambda _: greedy, None
    )
    return jnp.where(sampling & (sampled >= 0), sampled, fallback)


def _full_sample(
    key: jax.Array,
    logits: jax.Array,
    bitmask: jax.Array,
    temperature: jax.Array,
    top_k: jax.Array | None,
    top_p: jax.Array | None,
    min_p: jax.Array | None,
    constrained: jax.Array | None,
    k_bound: int | None,
) -> jax.Array:
    """The exact path that masks every block (see the module docstring)."""
    xb, allowed = _masked_blocks(logits, bitmask, constrained)
    return _sample_blocks(key, xb, allowed, temperature, top_k, top_p, min_p, k_bound=k_bound)


@functools.partial(jax.jit, static_argnames=("k_bound", "has_k", "kernels"))
def _sample(
    key: jax.Array,
    logits: jax.Array,
    bitmask: jax.Array,
    temperature: jax.Array,
    top_k: jax.Array | None,
    top_p: jax.Array | None,
    min_p: jax.Array | None,
    constrained: jax.Array | None,
    *,
    k_bound: int | None,
    has_k: bool,
    kernels: bool = False,
) -> jax.Array:
    k = top_k if has_k else None

    def pure() -> jax.Array:
        return _sample_pure(key, logits, bitmask, temperature, k, top_p, min_p, constrained, k_bound=k_bound)

    def dense() -> jax.Array:
        return dense_sample(key, logits, bitmask, temperature, min_p, constrained)

    # The C++ kernel where this lowers for the CPU (see _cpu_kernels), the control-flow-free
    # path on a GPU (see _dense) except for top-k / top-p, whose generic path was faster on
    # an H200 (lax.top_k and 32 bisection passes cost more than the conditionals there;
    # benchmarks/RESULTS.md), the generic pure-JAX path elsewhere.
    cpu = (lambda: cpu_sample(key, logits, bitmask, temperature, k, top_p, min_p, constrained)) if kernels else pure
    gpu = dense if k is None and top_p is None else pure
    tokens: jax.Array = jax.lax.platform_dependent(cpu=cpu, cuda=gpu, rocm=gpu, default=pure)
    return tokens


def _sample_pure(
    key: jax.Array,
    logits: jax.Array,
    bitmask: jax.Array,
    temperature: jax.Array,
    k: jax.Array | None,
    top_p: jax.Array | None,
    min_p: jax.Array | None,
    constrained: jax.Array | None,
    *,
    k_bound: int | None,
) -> jax.Array:
    """The pure-JAX sampler (any platform; XLA partitions it under sharding)."""
    if top_p is None and (k is not None or min_p is not None) and (k is None or (k_bound or MAX_K + 1) <= MAX_K):
        # top-k / min-p: candidate blocks, the full path for the rows they cannot certify.
        tokens, exact = sample_truncated(
            jax.random.fold_in(key, 0x7C), logits, bitmask, constrained, temperature, k, min_p, k_bound=k_bound
        )
        return _settle(tokens, exact, key, logits, bitmask, temperature, k, top_p, min_p, constrained, k_bound)
    if k is not None or top_p is not None or min_p is not None:
        return _full_sample(key, logits, bitmask, temperature, k, top_p, min_p, constrained, k_bound)
    # Plain sampling and greedy rows: the candidate fast paths, the full path for the rows
    # they cannot settle (see _candidates).
    batch = logits.shape[0]
    sampling = temperature > 0
    none = (jnp.full((batch,), -1, jnp.int32), jnp.zeros((batch,), jnp.bool_))

    def greedy_rows(_: None) -> tuple[jax.Array, jax.Array]:
        return _greedy_by_candidates(logits, bitmask, constrained)

    def sampled_rows(_: None) -> tuple[jax.Array, jax.Array]:
        inv_temp = 1 / jnp.where(sampling, temperature, _F32(1))
        mask = jnp.broadcast_to(bitmask, (batch, bitmask.shape[-1]))
        return sample_by_envelope(jax.random.fold_in(key, 0x5EED), logits, mask, constrained, inv_temp)

    g_tokens, g_exact = jax.lax.cond(jnp.any(~sampling), greedy_rows, lambda _: none, None)
    s_tokens, s_exact = jax.lax.cond(jnp.any(sampling), sampled_rows, lambda _: none, None)
    tokens = jnp.where(sampling, s_tokens, g_tokens)
    exact = jnp.where(sampling, s_exact, g_exact)
    return _settle(tokens, exact, key, logits, bitmask, temperature, None, None, None, constrained, None)


def _settle(
    tokens: jax.Array,
    exact: jax.Array,
    key: jax.Array,
    logits: jax.Array,
    bitmask: jax.Array,
    temperature: jax.Array,
    top_k: jax.Array | None,
    top_p: jax.Array | None,
    min_p: jax.Array | None,
    constrained: jax.Array | None,
    k_bound: int | None,
) -> jax.Array:
    """A fast path's ``tokens`` where ``exact``, else the full path's (run only when some row
    needs it; ``key`` must be independent of the fast path's, so the result stays exact).

    When at most ``_fallback_rows(B)`` rows need it, only those rows are gathered and redone:
    a rare uncertified row then costs one row's full path, not the whole batch's.
    """
    batch = logits.shape[0]
    rows = _fallback_rows(batch)

    def full(_: None) -> jax.Array:
        slow = _full_sample(key, logits, bitmask, temperature, top_k, top_p, min_p, constrained, k_bound)
        return jnp.where(exact, tokens, slow)

    def few(_: None) -> jax.Array:
        (idx,) = jnp.nonzero(~exact, size=rows, fill_value=0)
        pick = None if constrained is None else constrained[idx]
        mask = jnp.broadcast_to(bitmask, (batch, bitmask.shape[-1]))[idx]
        k, p, m = (None if a is None else a[idx] for a in (top_k, top_p, min_p))
        slow = _full_sample(key, logits[idx], mask, temperature[idx], k, p, m, pick, k_bound)
        out = tokens
        for r in range(rows):  # unused slots repeat row 0, which the where leaves alone if exact
            out = jnp.where((jnp.arange(batch) == idx[r]) & ~exact, slow[r], out)
        return out

    if rows >= batch:
        result: jax.Array = jax.lax.cond(jnp.all(exact), lambda _: tokens, full, None)
        return result
    bad = jnp.sum((~exact).astype(jnp.int32))
    branch = jnp.where(bad == 0, 0, jnp.where(bad <= rows, 1, 2))
    settled: jax.Array = jax.lax.switch(branch, [lambda _: tokens, few, full], None)
    return settled


def _fallback_rows(batch: int) -> int:
    """Rows the gathered fallback of :func:`_settle` redoes (a static size)."""
    return max(1, batch // 16)


def _greedy_by_candidates(
    logits: jax.Array, bitmask: jax.Array, constrained: jax.Array | None
) -> tuple[jax.Array, jax.Array]:
    """``(tokens, exact)`` of the candidate-block greedy fast path (see _candidates)."""
    batch, vocab = logits.shape
    c = _block_size(vocab)
    words = block_words(bitmask, batch, vocab, c)
    tokens, _, exact = greedy_candidates(raw_blocks(logits, c), words, constrained, vocab)
    return tokens, exact


@functools.partial(jax.jit, static_argnames="kernels")
def _greedy(logits: jax.Array, bitmask: jax.Array, constrained: jax.Array | None, *, kernels: bool = False) -> jax.Array:
    def pure() -> jax.Array:
        return _greedy_pure(logits, bitmask, constrained)

    def dense() -> jax.Array:
        return dense_greedy(logits, bitmask, constrained)

    cpu = (lambda: cpu_greedy(logits, bitmask, constrained)) if kernels else pure
    tokens: jax.Array = jax.lax.platform_dependent(cpu=cpu, cuda=dense, rocm=dense, default=pure)
    return tokens


def _greedy_pure(logits: jax.Array, bitmask: jax.Array, constrained: jax.Array | None) -> jax.Array:
    tokens, exact = _greedy_by_candidates(logits, bitmask, constrained)

    def full(_: None) -> jax.Array:
        xb, allowed = _masked_blocks(logits, bitmask, constrained)
        block_max = jnp.max(xb, axis=2)
        return jnp.where(exact, tokens, _first_max(xb, allowed, block_max, jnp.max(block_max, axis=1)))

    result: jax.Array = jax.lax.cond(jnp.all(exact), lambda _: tokens, full, None)
    return result


# ----------------------------------------------------------------------------- explicit probs


def _truncated_probs(
    x: jax.Array,
    allowed: jax.Array,
    temperature: jax.Array,
    top_k: jax.Array | None,
    top_p: jax.Array | None,
    min_p: jax.Array | None,
) -> jax.Array:
    """Explicit masked/tempered/truncated probabilities ``float32 [R, V]`` (rows sum to 1).

    ``x`` float ``[R, V]``, ``allowed`` bool ``[R, V]``; parameters ``[R]`` arrays or None
    (same conventions as :func:`sample`). Rows with ``temperature <= 0`` or no finite allowed
    logit are one-hot on the greedy token; rows with no allowed token are all zero. Exact
    thresholds by bisection (32 passes each), for draft-tree verification.
    """
    rows, vocab = x.shape
    x = x.astype(_F32)
    xm = jnp.where(allowed & ~jnp.isnan(x), x, _F32(_NEG_INF))
    row_max = jnp.max(xm, axis=1)
    iota = jax.lax.broadcasted_iota(jnp.int32, (rows, vocab), 1)
    greedy = dense_first_max(xm, allowed, row_max)
    one_hot = (iota == greedy[:, None]).astype(_F32)
    sampling = temperature > 0
    inv_temp = 1 / jnp.where(sampling, temperature, _F32(1))
    z = _scaled(xm[:, None, :], row_max, inv_temp)[:, 0]
    w = jnp.exp(z)
    if top_k is not None:
        kk = jnp.clip(top_k, 1, vocab).astype(_F32)
        tau_k = _threshold_by_bisection(xm, _F32(1), kk)
        w = jnp.where((top_k < 1)[:, None] | (xm >= tau_k[:, None]), w, _F32(0))
    if top_p is not None:
        total = jnp.sum(w, axis=1)
        goal = jnp.maximum(top_p, _F32(1e-30)) * total
        tau_p = _threshold_by_bisection(xm, w, jnp.where(total > 0, goal, _F32(1)))
        w = jnp.where((top_p >= 1)[:, None] | (xm >= tau_p[:, None]), w, _F32(0))
    if min_p is not None:
        log_min_p = jnp.where(min_p > 0, jnp.log(jnp.minimum(min_p, _F32(1))), _F32(_NEG_INF))
        w = jnp.where(z >= log_min_p[:, None], w, _F32(0))
    total = jnp.sum(w, axis=1, keepdims=True)
    probs = w / jnp.where(total > 0, total, _F32(1))
    use_probs = sampling[:, None] & (total > 0)
    return jnp.where(use_probs, probs, one_hot)


# ----------------------------------------------------------------------------- public API


@functools.lru_cache(maxsize=256)
def _constant_row(value: float, batch: int, dtype: str) -> jax.Array:
    """``full((batch,), value)`` built once per value: decode loops repeat the same few
    parameters, and an eager ``jnp`` op costs ~0.1 ms of dispatch, as much as the whole
    sampling kernel at B = 1. Built eagerly even inside a trace, so no tracer is cached."""
    with jax.ensure_compile_time_eval():
        return jnp.full((batch,), value, dtype)


def _per_row(value: ArrayLike, batch: int, name: str, dtype: str = "float32") -> jax.Array:
    """A python number or array of shape ``[]``/``[B]`` as ``dtype [B]`` (always a JAX
    array, so that python numbers and arrays share one compilation)."""
    if isinstance(value, (int, float, bool, np.number, np.bool_)):
        return _constant_row(value.item() if isinstance(value, np.generic) else value, batch, dtype)
    array = value if isinstance(value, jax.Array) else jnp.asarray(value)
    if array.dtype != dtype:
        array = array.astype(dtype)
    if array.shape not in ((), (batch,)):
        raise ValueError(f"{name} must be a scalar or have shape ({batch},), got {array.shape}")
    return array if array.shape == (batch,) else jnp.broadcast_to(array, (batch,))


def _top_k_args(top_k: ArrayLike | None, batch: int) -> tuple[jax.Array | None, int | None, bool]:
    """``(top_k int32 [B] or None, static bound or None, has_k)``.

    A python int is its own bound. A concrete array gets its maximum rounded up to a power
    of two, at least ``_MIN_K_BOUND`` (one compilation for usual values); a traced array has
    no bound (bisection).
    """
    if top_k is None:
        return None, None, False
    if isinstance(top_k, (int, np.integer)):
        top_k = operator.index(top_k)
        if top_k < 1:
            raise ValueError(f"top_k must be >= 1 or None, got {top_k}")
        return _constant_row(top_k, batch, "int32"), top_k, True
    array = _per_row(top_k, batch, "top_k", "int32")
    if isinstance(top_k, jax.core.Tracer):
        return array, None, True
    bound = max(int(np.max(np.asarray(top_k))), _MIN_K_BOUND)
    return array, 1 << (bound - 1).bit_length(), True


def _prepare(logits: ArrayLike, bitmask: ArrayLike) -> tuple[jax.Array, jax.Array, bool]:
    """``(logits [B, V], bitmask, single)``: validated, as JAX arrays, a ``[V]`` row lifted
    to ``[1, V]`` (``single`` says so)."""
    lshape, mshape = _check_logits_and_bitmask(logits, bitmask)
    if len(lshape) > 2 or len(mshape) > 2:
        raise ValueError(
            f"expected logits [B, V] or [V] and bitmask [B, W] or [W], "
            f"got logits shape {lshape} and bitmask shape {mshape}"
        )
    # jnp.asarray on a device array still costs a dispatch (~15 us); skip it.
    rows = logits if isinstance(logits, jax.Array) else jnp.asarray(logits)
    mask = bitmask if isinstance(bitmask, jax.Array) else jnp.asarray(bitmask)
    single = rows.ndim == 1
    if single:
        rows = rows[None]
    return rows, mask, single


def _constrained(constrained: ArrayLike | None, batch: int) -> jax.Array | None:
    """The per-row ``constrained`` flags as bool ``[B]``, or None (every row constrained)."""
    if constrained is None:
        return None
    return _per_row(constrained, batch, "constrained", "bool")


def sample(
    key: jax.Array,
    logits: jax.Array,
    bitmask: jax.Array | np.ndarray,
    *,
    temperature: float | jax.Array = 1.0,
    top_k: int | jax.Array | None = None,
    top_p: float | jax.Array | None = None,
    min_p: float | jax.Array | None = None,
    constrained: bool | jax.Array | None = None,
) -> jax.Array:
    """Samples one token per row exactly from the masked, tempered, truncated distribution.

    Fused and sorting-free (see the module docstring and ``docs/jax.md``): one uniform per
    row, a few passes over the logits, no ``[B, V]`` random numbers. Computes in float32.
    ``temperature``, ``top_p``, ``min_p``, ``constrained`` and array ``top_k`` values are
    traced (new values reuse the compilation); a python-int ``top_k`` is static. On the CPU
    (one device, float32 logits) a C++ kernel samples instead (``docs/jax.md``, "The CPU
    kernels"): the same distribution, from a 64-bit seed per row hashed from ``key``, so a
    given key draws other tokens there than on a GPU.

    Args:
      key: a ``jax.random`` key, shared by the batch.
      logits: float ``[B, V]``, or ``[V]`` for a single row.
      bitmask: int32 ``[B, W]`` (or ``[W]``, broadcast to every row), ``W * 32 >= V``;
        token ``t`` is bit ``t % 32`` of word ``t // 32``, 1 = allowed.
      temperature: scalar or ``[B]``. Rows with ``temperature <= 0`` are greedy (the
        masked argmax, the first one on ties); others sample ``softmax(logits / T)``.
      top_k: int or int ``[B]``: keep the ``k`` largest allowed logits (ties at the k-th
        value all kept); array entries ``< 1`` disable top-k for their row.
      top_p: scalar or ``[B]`` in ``(0, 1]``: then keep the smallest set of most likely
        tokens whose mass (after top-k) reaches ``top_p``; ``>= 1`` disables it.
      min_p: scalar or ``[B]``: then keep tokens with probability ``>= min_p`` times the
        largest; ``<= 0`` disables it.
      constrained: bool scalar or ``[B]``; ``False`` rows ignore the bitmask.

    Returns:
      int32 ``[B]`` token ids (a scalar for ``[V]`` logits). Every id is an allowed token;
      rows with no allowed token give ``-1``. NaN logits count as ``-inf``; if some allowed
      logit is ``+inf`` the row samples uniformly among those; if every allowed logit is
      ``-inf`` (or NaN) the row gives its first allowed token.

    Raises:
      TypeError: if ``bitmask`` is not int32 or ``logits`` is not floating point.
      ValueError: on mismatched shapes or an int ``top_k`` below 1.

    Example:
      >>> import jax, jax.numpy as jnp
      >>> from xgr2.jax import sample
      >>> logits = jnp.array([[1.0, 5.0, 2.0, 0.5], [1.0, 5.0, 2.0, 0.5]])
      >>> bitmask = jnp.array([[0b0101], [0b0000]], dtype=jnp.int32)  # {0, 2} and nothing
      >>> sample(jax.random.key(0), logits, bitmask, temperature=0.0)
      Array([ 2, -1], dtype=int32)
      >>> int(sample(jax.random.key(1), logits[0], bitmask[0], top_k=1))
      2
      >>> int(sample(jax.random.key(2), logits[0], bitmask[0], top_p=0.5, min_p=0.1))
      2
    """
    logits, bitmask, single = _prepare(logits, bitmask)
    batch = logits.shape[0]
    temperature = _per_row(temperature, batch, "temperature")
    k, k_bound, has_k = _top_k_args(top_k, batch)
    top_p = None if top_p is None else _per_row(top_p, batch, "top_p")
    min_p = None if min_p is None else _per_row(min_p, batch, "min_p")
    constrained = _constrained(constrained, batch)
    tokens: jax.Array = _sample(
        key, logits, bitmask, temperature, k, top_p, min_p, constrained, k_bound=k_bound, has_k=has_k,
        kernels=use_kernels(logits),
    )
    return tokens[0] if single else tokens


def greedy(
    logits: jax.Array, bitmask: jax.Array | np.ndarray, *, constrained: bool | jax.Array | None = None
) -> jax.Array:
    """The masked argmax per row: two passes over the logits, no sampling work.

    Args:
      logits: float ``[B, V]`` or ``[V]``.
      bitmask: int32 ``[B, W]`` or ``[W]`` with ``W * 32 >= V``.
      constrained: optional bool scalar or ``[B]``; ``False`` rows ignore the bitmask.

    Returns:
      int32 ``[B]`` (or a scalar): the first allowed token with the largest logit (NaN
      counts as ``-inf``); the first allowed token if all are ``-inf``; ``-1`` if none is
      allowed.

    Example:
      >>> import jax.numpy as jnp
      >>> from xgr2.jax import greedy
      >>> greedy(jnp.array([[3.0, 1.0, 2.0]]), jnp.array([[0b110]], dtype=jnp.int32))
      Array([2], dtype=int32)
    """
    logits, bitmask, single = _prepare(logits, bitmask)
    tokens: jax.Array = _greedy(
        logits, bitmask, _constrained(constrained, logits.shape[0]), kernels=use_kernels(logits)
    )
    return tokens[0] if single else tokens

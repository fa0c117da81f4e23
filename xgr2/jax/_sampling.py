"""Constrained token sampling on device (pure JAX)."""

from __future__ import annotations

import functools
import operator

import jax
import jax.numpy as jnp

from xgr2.jax._masking import _check_logits_and_bitmask, _unpack

__all__ = ["sample"]


def _pick(rows: jax.Array, columns: jax.Array) -> jax.Array:
    """``rows[b, columns[b]]`` for each row ``b``."""
    return jnp.take_along_axis(rows, columns[:, None], axis=-1)[:, 0]


@functools.partial(jax.jit, static_argnames="top_k")
def _sample(key, logits, bitmask, temperature, top_p, *, top_k):
    batch, vocab = logits.shape
    allowed = jnp.broadcast_to(_unpack(bitmask, vocab), (batch, vocab))
    x = logits.astype(jnp.float32)
    neg_inf = jnp.float32(-jnp.inf)

    # Greedy; if the best allowed logit is -inf (argmax then falls on index 0), take the
    # first allowed token instead so that a disallowed token can never come out.
    greedy = jnp.argmax(jnp.where(allowed, x, neg_inf), axis=-1).astype(jnp.int32)
    first_allowed = jnp.argmax(allowed, axis=-1).astype(jnp.int32)
    greedy = jnp.where(_pick(allowed, greedy), greedy, first_allowed)

    temp = temperature[:, None]
    # Mask after scaling: -inf / inf would be NaN, which argmax would pick.
    scaled = jnp.where(allowed, x / jnp.where(temp > 0, temp, jnp.float32(1)), neg_inf)
    index = None
    if top_k is not None:  # candidates: the k best, sorted descending; no full sort
        scaled, index = jax.lax.top_k(scaled, min(top_k, vocab))
    elif top_p is not None:  # top-p alone needs the whole vocabulary sorted
        index = jnp.argsort(scaled, axis=-1, descending=True).astype(jnp.int32)
        scaled = jnp.take_along_axis(scaled, index, axis=-1)
    if top_p is not None:
        probs = jax.nn.softmax(scaled, axis=-1)
        mass_before = jnp.cumsum(probs, axis=-1) - probs  # exclusive prefix sum
        first = jax.lax.broadcasted_iota(jnp.int32, scaled.shape, 1) == 0
        scaled = jnp.where((mass_before < top_p[:, None]) | first, scaled, neg_inf)
    choice = jax.random.categorical(key, scaled, axis=-1).astype(jnp.int32)
    sampled = choice if index is None else _pick(index, choice)
    sampled = jnp.where(_pick(allowed, sampled), sampled, greedy)  # guard (NaN/inf logits)

    tokens = jnp.where(temperature > 0, sampled, greedy)
    return jnp.where(jnp.any(allowed, axis=-1), tokens, jnp.int32(-1))


def _per_row(value, batch: int, name: str) -> jax.Array:
    """A python float or array of shape ``[]``/``[B]`` as float32 ``[B]``."""
    value = jnp.asarray(value, dtype=jnp.float32)
    if value.shape not in ((), (batch,)):
        raise ValueError(f"{name} must be a scalar or have shape ({batch},), got {value.shape}")
    return jnp.broadcast_to(value, (batch,))


def sample(
    key: jax.Array,
    logits: jax.Array,
    bitmask: jax.Array,
    *,
    temperature: float | jax.Array = 1.0,
    top_k: int | None = None,
    top_p: float | jax.Array | None = None,
) -> jax.Array:
    """Samples one token per row among the tokens allowed by ``bitmask``.

    Computes in float32. ``temperature`` and ``top_p`` are traced, so new values (python
    floats or per-row arrays) reuse the compiled function; ``top_k`` is static. Without
    ``top_p`` nothing is sorted (``top_k`` uses a partial selection); ``top_p`` sorts the
    candidates (the whole vocabulary when ``top_k`` is ``None``).

    Args:
      key: a ``jax.random`` key, shared by the batch.
      logits: float ``[B, V]``, or ``[V]`` for a single row.
      bitmask: int32 ``[B, W]`` (or ``[W]``, broadcast to every row) with ``W * 32 >= V``.
      temperature: scalar or ``[B]``. Rows with ``temperature <= 0`` are greedy (argmax of
        the allowed logits); others sample from ``softmax(logits / temperature)``.
      top_k: if set, sample only among the ``top_k`` highest allowed logits.
      top_p: scalar or ``[B]`` in ``(0, 1]``; if set, sample only among the smallest set of
        highest-probability allowed tokens whose mass reaches ``top_p`` (at least one).

    Returns:
      int32 ``[B]`` token ids (a scalar for ``[V]`` logits). Every id is an allowed token;
      rows with no allowed token give ``-1``.

    Raises:
      TypeError: if ``bitmask`` is not int32 or ``logits`` is not floating point.
      ValueError: on mismatched shapes or a ``top_k`` below 1.

    Example:
      >>> import jax, jax.numpy as jnp
      >>> from xgr2.jax import sample
      >>> logits = jnp.array([[1.0, 5.0, 2.0, 0.5], [1.0, 5.0, 2.0, 0.5]])
      >>> bitmask = jnp.array([[0b0101], [0b0000]], dtype=jnp.int32)  # {0, 2} and nothing
      >>> sample(jax.random.key(0), logits, bitmask, temperature=0.0)
      Array([ 2, -1], dtype=int32)
      >>> int(sample(jax.random.key(1), logits[0], bitmask[0], top_k=1))
      2
    """
    lshape, mshape = _check_logits_and_bitmask(logits, bitmask)
    if len(lshape) > 2 or len(mshape) > 2:
        raise ValueError(
            f"expected logits [B, V] or [V] and bitmask [B, W] or [W], "
            f"got logits shape {lshape} and bitmask shape {mshape}"
        )
    if top_k is not None:
        top_k = operator.index(top_k)
        if top_k < 1:
            raise ValueError(f"top_k must be >= 1 or None, got {top_k}")
    logits, bitmask = jnp.asarray(logits), jnp.asarray(bitmask)
    single = logits.ndim == 1
    if single:
        logits = logits[None]
    batch = logits.shape[0]
    temperature = _per_row(temperature, batch, "temperature")
    top_p = None if top_p is None else _per_row(top_p, batch, "top_p")
    tokens = _sample(key, logits, bitmask, temperature, top_p, top_k=top_k)
    return tokens[0] if single else tokens

"""Token bitmask unpacking and application on device (pure JAX).

Bit layout (shared with the C++ engine): token ``t`` is bit ``t % 32`` (LSB first) of the
int32 word ``t // 32``; a set bit means the token is allowed. Bits for ids ``>= vocab_size``
(padding of the last word, or whole extra words) are ignored.
"""

from __future__ import annotations

import functools
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax.typing import ArrayLike, DTypeLike

__all__ = ["apply_token_bitmask", "unpack_bitmask"]


def _shape_dtype(x: ArrayLike, name: str) -> tuple[tuple[int, ...], np.dtype[Any]]:
    """Shape and dtype of ``x`` *before* any JAX conversion.

    Checked before ``jnp.asarray`` because, without x64, JAX silently narrows int64 to int32.
    """
    if not hasattr(x, "dtype") or not hasattr(x, "shape"):
        x = np.asarray(x)
    if len(x.shape) < 1:
        raise ValueError(f"{name} must have at least one dimension, got shape {tuple(x.shape)}")
    return tuple(x.shape), np.dtype(x.dtype)


def _check_bitmask(bitmask: ArrayLike, vocab_size: int, what: str = "") -> tuple[int, ...]:
    """Validates a packed bitmask; returns its shape."""
    shape, dtype = _shape_dtype(bitmask, "bitmask")
    if dtype != np.int32:
        raise TypeError(f"bitmask must be int32, got {dtype} (bitmask shape {shape}{what})")
    if shape[-1] * 32 < vocab_size:
        raise ValueError(
            f"bitmask has {shape[-1]} words ({shape[-1] * 32} bits), too few for "
            f"vocab_size {vocab_size} (bitmask shape {shape}{what})"
        )
    return shape


def _check_logits_and_bitmask(logits: ArrayLike, bitmask: ArrayLike) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """Validates ``logits [..., V]`` against ``bitmask int32 [..., W]``; returns both shapes.

    The bitmask's leading dims must broadcast to the logits' leading dims (so one ``[W]`` mask
    may serve a whole ``[B, V]`` batch), and the result always has the logits' shape.
    """
    lshape, ldtype = _shape_dtype(logits, "logits")
    both = f", logits shape {lshape}"
    mshape = _check_bitmask(bitmask, lshape[-1], both)
    if not jnp.issubdtype(ldtype, jnp.floating):
        raise TypeError(
            f"logits must be a float array, got {ldtype} (bitmask shape {mshape}{both})"
        )
    try:
        ok = np.broadcast_shapes(mshape[:-1], lshape[:-1]) == lshape[:-1]
    except ValueError:
        ok = False
    if not ok:
        raise ValueError(
            f"bitmask leading dims {mshape[:-1]} do not broadcast to logits leading dims "
            f"{lshape[:-1]} (bitmask shape {mshape}{both})"
        )
    return lshape, mshape


@functools.partial(jax.jit, static_argnums=1)
def _unpack(bitmask: jax.Array, vocab_size: int) -> jax.Array:
    words = jax.lax.bitcast_convert_type(bitmask, jnp.uint32)[..., None]  # logical shifts
    shifts = jax.lax.broadcasted_iota(jnp.uint32, words.shape[:-1] + (32,), words.ndim - 1)
    bits: jax.Array = (words >> shifts) & jnp.uint32(1)  # [..., W, 32]
    flat = bits.reshape(bitmask.shape[:-1] + (bitmask.shape[-1] * 32,))
    return flat[..., :vocab_size].astype(jnp.bool_)


def unpack_bitmask(bitmask: jax.Array, vocab_size: int) -> jax.Array:
    """Unpacks an int32 token bitmask into booleans.

    Args:
      bitmask: int32 ``[..., W]`` with ``W * 32 >= vocab_size``; any leading dims.
      vocab_size: number of tokens ``V`` to unpack; bits for ids ``>= V`` are dropped.

    Returns:
      bool ``[..., V]``: ``True`` where token ``t`` has bit ``t % 32`` of word ``t // 32`` set.

    Raises:
      TypeError: if ``bitmask`` is not int32.
      ValueError: if ``bitmask`` has too few words for ``vocab_size``.

    Example:
      >>> import jax.numpy as jnp
      >>> from xgr2.jax import unpack_bitmask
      >>> unpack_bitmask(jnp.array([0b1010], dtype=jnp.int32), 5)
      Array([False,  True, False,  True, False], dtype=bool)
    """
    vocab_size = int(vocab_size)
    if vocab_size < 0:
        raise ValueError(f"vocab_size must be >= 0, got {vocab_size}")
    _check_bitmask(bitmask, vocab_size, f", vocab_size {vocab_size}")
    bits: jax.Array = _unpack(jnp.asarray(bitmask), vocab_size)
    return bits


def _fill_value(dtype: DTypeLike) -> jax.Array:
    """-inf in ``dtype``, or its lowest finite value for formats without infinities."""
    inf = np.array(-np.inf, dtype)  # numpy knows bfloat16 / float8 through ml_dtypes
    if np.isinf(inf):
        return jnp.asarray(inf, dtype)
    # jnp.finfo is ml_dtypes.finfo, whose constructor carries no annotations.
    return jnp.asarray(jnp.finfo(dtype).min, dtype)  # type: ignore[no-untyped-call]


@jax.jit
def _apply(logits: jax.Array, bitmask: jax.Array) -> jax.Array:
    allowed = jnp.broadcast_to(_unpack(bitmask, logits.shape[-1]), logits.shape)
    return jnp.where(allowed, logits, _fill_value(logits.dtype))


def apply_token_bitmask(logits: jax.Array, bitmask: jax.Array | np.ndarray) -> jax.Array:
    """Sets the logits of disallowed tokens to ``-inf`` (pure; returns a new array).

    Args:
      logits: float ``[..., V]``, any float dtype (kept). ``V`` may exceed the tokenizer size:
        the padding ids are simply tokens whose bits the engine never sets.
      bitmask: int32 ``[..., W]`` with ``W * 32 >= V``; extra bits are ignored. Its leading
        dims must broadcast to those of ``logits``.

    Returns:
      An array like ``logits`` with disallowed entries set to ``-inf`` (the lowest finite
      value for float formats without infinities, such as ``float8_e4m3fn``).

    Raises:
      TypeError: if ``bitmask`` is not int32 or ``logits`` is not floating point.
      ValueError: if ``W * 32 < V`` or the leading dims do not broadcast.

    Example:
      >>> import jax.numpy as jnp
      >>> from xgr2.jax import apply_token_bitmask
      >>> logits = jnp.array([[1.0, 2.0, 3.0]])
      >>> apply_token_bitmask(logits, jnp.array([[0b101]], dtype=jnp.int32))
      Array([[  1., -inf,   3.]], dtype=float32)
    """
    _check_logits_and_bitmask(logits, bitmask)
    masked: jax.Array = _apply(jnp.asarray(logits), jnp.asarray(bitmask))
    return masked

"""Packed token bitmasks: ceil(vocab_size / 32) int32 words per row.

Token ``t`` is bit ``t % 32`` (least significant first) of word ``t // 32``;
a 1 bit means the token is allowed.
"""

from __future__ import annotations

import numpy as np


def get_bitmask_shape(batch_size: int, vocab_size: int) -> tuple[int, int]:
    """Shape of a bitmask for ``batch_size`` rows over ``vocab_size`` tokens.

    >>> get_bitmask_shape(2, 100)
    (2, 4)
    """
    if batch_size < 0 or vocab_size <= 0:
        raise ValueError(f"need batch_size >= 0 and vocab_size > 0, got {batch_size}, {vocab_size}")
    return (batch_size, (vocab_size + 31) // 32)


def allocate_token_bitmask(batch_size: int, vocab_size: int) -> np.ndarray:
    """A new int32 bitmask filled with -1 (every token allowed).

    >>> allocate_token_bitmask(1, 64)
    array([[-1, -1]], dtype=int32)
    """
    return np.full(get_bitmask_shape(batch_size, vocab_size), -1, dtype=np.int32)


def bitmask_to_bool(bitmask: np.ndarray, vocab_size: int) -> np.ndarray:
    """Unpacks ``[..., W]`` int32 words into a ``[..., vocab_size]`` bool array.

    >>> bitmask_to_bool(np.array([5], dtype=np.int32), 4)
    array([ True, False,  True, False])
    """
    words = np.ascontiguousarray(bitmask, dtype=np.int32)
    if words.shape[-1] * 32 < vocab_size:
        raise ValueError(f"bitmask has {words.shape[-1]} words, too few for vocab_size {vocab_size}")
    bits = np.unpackbits(words.view(np.uint8), axis=-1, bitorder="little")
    return bits[..., :vocab_size].astype(bool)

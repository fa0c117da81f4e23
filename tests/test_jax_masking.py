"""Tests for xgr2.jax bitmask unpacking and masking, against a numpy bit-loop oracle."""

import os

os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")

import doctest

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

jax.config.update("jax_numpy_dtype_promotion", "strict")
jax.config.update("jax_numpy_rank_promotion", "raise")

import xgr2.jax
from xgr2.jax import apply_token_bitmask, unpack_bitmask
from xgr2.jax import _masking

INT32 = st.integers(-(2**31), 2**31 - 1)


def ref_unpack(bitmask: np.ndarray, vocab_size: int) -> np.ndarray:
    """Oracle: token t is bit t % 32 (LSB first) of word t // 32, read one bit at a time."""
    out = np.zeros(bitmask.shape[:-1] + (vocab_size,), dtype=bool)
    for index in np.ndindex(*bitmask.shape[:-1]):
        for t in range(vocab_size):
            word = int(bitmask[index + (t // 32,)]) & 0xFFFFFFFF
            out[index + (t,)] = (word >> (t % 32)) & 1 == 1
    return out


@st.composite
def bitmasks(draw):
    """(bitmask int32 [..., W], vocab_size) with 0 to 2 leading dims and W * 32 >= vocab_size."""
    lead = draw(hnp.array_shapes(min_dims=0, max_dims=2, max_side=3))
    words = draw(st.integers(1, 4))
    vocab_size = draw(st.integers(0, words * 32))  # also leaves whole words beyond V
    elements = st.one_of(INT32, st.sampled_from([0, -1, -(2**31), 2**31 - 1]))
    return draw(hnp.arrays(np.int32, lead + (words,), elements=elements)), vocab_size


def test_public_api():
    assert {"apply_token_bitmask", "greedy", "sample", "unpack_bitmask"} <= set(xgr2.jax.__all__)


@settings(max_examples=40, deadline=None)
@given(bitmasks())
def test_unpack_matches_oracle(case):
    bitmask, vocab_size = case
    got = unpack_bitmask(bitmask, vocab_size)
    assert got.dtype == jnp.bool_ and got.shape == bitmask.shape[:-1] + (vocab_size,)
    np.testing.assert_array_equal(np.asarray(got), ref_unpack(bitmask, vocab_size))


def test_unpack_bit_layout():
    # Bit 31 is the sign bit: a negative word must be shifted logically, not arithmetically.
    got = np.asarray(unpack_bitmask(np.array([-(2**31), 1], np.int32), 64))
    assert np.flatnonzero(got).tolist() == [31, 32]
    got = np.asarray(unpack_bitmask(np.array([-1, -1, -1], np.int32), 40))  # bits >= 40 ignored
    assert got.shape == (40,) and got.all()


@settings(max_examples=25, deadline=None)
@given(bitmasks(), st.sampled_from([jnp.float32, jnp.bfloat16, jnp.float16]), st.randoms())
def test_apply_matches_oracle(case, dtype, rnd):
    bitmask, vocab_size = case
    logits = np.array([rnd.uniform(-5, 5) for _ in range(bitmask[..., 0].size * vocab_size)])
    logits = jnp.asarray(logits.reshape(bitmask.shape[:-1] + (vocab_size,)), dtype)
    got = apply_token_bitmask(logits, bitmask)
    assert got.dtype == dtype and got.shape == logits.shape
    want = np.where(ref_unpack(bitmask, vocab_size), np.asarray(logits), -np.inf)
    np.testing.assert_array_equal(np.asarray(got), want)


def test_apply_broadcasts_single_mask_and_composes():
    logits = jnp.arange(6, dtype=jnp.float32).reshape(2, 3)
    bitmask = jnp.array([0b110], dtype=jnp.int32)
    want = np.array([[-np.inf, 1, 2], [-np.inf, 4, 5]])
    np.testing.assert_array_equal(apply_token_bitmask(logits, bitmask), want)
    np.testing.assert_array_equal(jax.jit(apply_token_bitmask)(logits, bitmask), want)
    rows = jnp.array([[0b110], [0b110]], dtype=jnp.int32)
    np.testing.assert_array_equal(jax.vmap(apply_token_bitmask)(logits, rows), want)


def test_apply_float8_without_inf_uses_lowest_value():
    dtype = jnp.float8_e4m3fn
    got = apply_token_bitmask(jnp.ones((3,), dtype), jnp.array([0b101], dtype=jnp.int32))
    assert got.dtype == dtype and not np.isnan(np.asarray(got, np.float32)).any()
    assert float(got[1]) == float(jnp.finfo(dtype).min)


@pytest.mark.parametrize(
    "logits, bitmask, error, pattern",
    [
        (np.zeros((2, 40), np.float32), np.zeros((2, 2), np.int64), TypeError, "int32"),
        (np.zeros((2, 40), np.float32), np.zeros((2, 2), np.float32), TypeError, "int32"),
        (np.zeros((2, 40), np.float32), np.zeros((2, 2), np.uint32), TypeError, "int32"),
        (np.zeros((2, 40), np.int32), np.zeros((2, 2), np.int32), TypeError, "float"),
        (np.zeros((2, 40), np.float32), np.zeros((2, 1), np.int32), ValueError, "too few"),
        (np.zeros((2, 40), np.float32), np.zeros((3, 2), np.int32), ValueError, "broadcast"),
        (np.zeros((40,), np.float32), np.zeros((2, 2), np.int32), ValueError, "broadcast"),
    ],
)
def test_apply_errors_name_both_shapes(logits, bitmask, error, pattern):
    with pytest.raises(error, match=pattern) as info:
        apply_token_bitmask(logits, bitmask)
    assert str(bitmask.shape) in str(info.value) and str(logits.shape) in str(info.value)


def test_unpack_errors():
    with pytest.raises(TypeError, match="int32"):
        unpack_bitmask(np.zeros(2, np.int64), 40)
    with pytest.raises(ValueError, match="too few"):
        unpack_bitmask(np.zeros(1, np.int32), 40)


def test_doctests():
    assert doctest.testmod(_masking).failed == 0

"""Tests for xgr2.jax.sample: never a disallowed token, greedy/top-k/top-p semantics, no retrace."""

import os

os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")

import doctest
import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

jax.config.update("jax_numpy_dtype_promotion", "strict")
jax.config.update("jax_numpy_rank_promotion", "raise")

from xgr2.jax import sample
from xgr2.jax import _sampling

V, TOKENIZER_SIZE = 1000, 900  # logits padded beyond the tokenizer: ids >= 900 never allowed
N_KEYS = 200


def pack(allowed: np.ndarray) -> np.ndarray:
    """bool [..., V] -> int32 [..., ceil(V / 32)], token t = bit t % 32 of word t // 32."""
    words = -(-allowed.shape[-1] // 32)
    padded = np.zeros(allowed.shape[:-1] + (words * 32,), dtype=bool)
    padded[..., : allowed.shape[-1]] = allowed
    return np.packbits(padded, axis=-1, bitorder="little").view("<u4").view(np.int32)


def random_case(batch: int, seed: int = 0):
    """Logits [B, V] and masks [B, V]: single-allowed, sparse, dense and empty rows.

    Disallowed and padding ids get the largest logits, so a masking bug shows at once.
    """
    rng = np.random.default_rng(seed)
    allowed = np.zeros((batch, V), dtype=bool)
    for row in range(batch):
        kind = ["single", "sparse", "dense", "empty"][row % 4] if batch > 1 else "sparse"
        count = {"single": 1, "sparse": 12, "dense": 450, "empty": 0}[kind]
        allowed[row, rng.choice(TOKENIZER_SIZE, count, replace=False)] = True
    logits = rng.normal(size=(batch, V)).astype(np.float32)
    logits[~allowed] += 20.0
    return logits, allowed


@functools.partial(jax.jit, static_argnames="top_k")
def _sample_many(keys, logits, bitmask, temperature, top_p, top_k):
    # Under an outer jit, temperature and top_p values share one compilation (fast tests).
    return jax.vmap(
        lambda key: sample(key, logits, bitmask, temperature=temperature, top_k=top_k, top_p=top_p)
    )(keys)


def sample_many(logits, allowed, *, temperature=1.0, top_k=None, top_p=None):
    """Samples with N_KEYS different keys at once: int32 [N_KEYS, B]."""
    keys = jax.random.split(jax.random.key(42), N_KEYS)
    top_p = None if top_p is None else jnp.asarray(top_p, jnp.float32)
    temperature = jnp.asarray(temperature, jnp.float32)
    bitmask = jnp.asarray(pack(allowed))
    return np.asarray(_sample_many(keys, jnp.asarray(logits), bitmask, temperature, top_p, top_k))


def np_greedy(logits, allowed):
    return np.where(allowed.any(-1), np.argmax(np.where(allowed, logits, -np.inf), -1), -1)


@pytest.mark.parametrize("batch", [1, 8])
@pytest.mark.parametrize("temperature", [0.0, 0.7, 1.0])
@pytest.mark.parametrize("top_k, top_p", [(None, None), (5, None), (None, 0.9), (50, 0.5)])
def test_never_samples_disallowed(batch, temperature, top_k, top_p):
    logits, allowed = random_case(batch, seed=batch)
    tokens = sample_many(logits, allowed, temperature=temperature, top_k=top_k, top_p=top_p)
    assert tokens.shape == (N_KEYS, batch) and tokens.dtype == np.int32
    empty = ~allowed.any(-1)
    assert (tokens[:, empty] == -1).all()
    ok = np.take_along_axis(allowed, np.maximum(tokens, 0).T, axis=-1).T
    assert (ok | empty).all() and (tokens < TOKENIZER_SIZE).all()
    if temperature == 0.0:
        assert (tokens == np_greedy(logits, allowed)).all()


def test_greedy_and_degenerate_settings_match_argmax():
    logits, allowed = random_case(8, seed=3)
    want = np_greedy(logits, allowed)
    for kw in [dict(temperature=0.0), dict(top_k=1), dict(top_p=1e-6), dict(top_k=1, top_p=0.7)]:
        assert (sample_many(logits, allowed, **kw) == want).all(), kw


def test_per_row_temperature():
    logits, allowed = random_case(8, seed=4)
    temperature = jnp.array([0.0, 1.0] * 4, dtype=jnp.float32)
    tokens = sample_many(logits, allowed, temperature=temperature)
    greedy = np_greedy(logits, allowed)
    assert (tokens[:, ::2] == greedy[::2]).all()
    assert (tokens[:, 1] != greedy[1]).any()  # row 1 is sparse (12 allowed) and samples


def test_top_k_and_top_p_stay_in_candidate_set():
    logits = np.log(np.array([[0.4, 0.3, 0.2, 0.06, 0.04, 5.0]], np.float32))
    allowed = np.array([[True] * 5 + [False]])
    assert set(sample_many(logits, allowed, top_k=2).ravel()) == {0, 1}
    assert set(sample_many(logits, allowed, top_p=0.65).ravel()) == {0, 1}  # 0.4 + 0.3 >= 0.65
    assert set(sample_many(logits, allowed, top_p=0.95).ravel()) == {0, 1, 2, 3}
    assert set(sample_many(logits, allowed, top_k=3, top_p=0.99).ravel()) == {0, 1, 2}


def test_sampling_spreads_over_allowed_tokens():
    logits = np.zeros((1, V), np.float32)
    allowed = np.zeros((1, V), dtype=bool)
    allowed[0, 100:110] = True
    tokens = sample_many(logits, allowed, temperature=1.0).ravel()
    assert set(tokens) <= set(range(100, 110)) and len(set(tokens)) >= 8
    logits[0, 101] = np.log(3.0)  # P(101) = 3/12 among the 10 allowed
    share = (sample_many(logits, allowed, temperature=1.0) == 101).mean()
    assert 0.15 < share < 0.35


def test_neg_inf_logits_still_give_allowed_token():
    logits = np.full((1, 64), -np.inf, np.float32)
    allowed = np.zeros((1, 64), dtype=bool)
    allowed[0, 37] = True
    for kw in [dict(temperature=0.0), dict(), dict(top_k=3), dict(top_p=0.5)]:
        assert (sample_many(logits, allowed, **kw) == 37).all(), kw


@settings(max_examples=25, deadline=None)
@given(
    st.lists(st.lists(st.booleans(), min_size=70, max_size=70), min_size=4, max_size=4),
    st.floats(0.0, 3.0),
    st.sampled_from([None, 1, 4]),
    st.one_of(st.none(), st.floats(0.01, 1.0)),
    st.integers(0, 2**31 - 1),
)
def test_property_allowed_or_minus_one(mask, temperature, top_k, top_p, seed):
    allowed = np.array(mask)
    logits = np.random.default_rng(seed).normal(size=allowed.shape).astype(np.float32) * 4
    kw = dict(temperature=temperature, top_k=top_k, top_p=top_p)
    tokens = np.asarray(sample(jax.random.key(seed), logits, pack(allowed), **kw))
    for row, token in enumerate(tokens):
        assert (token == -1) if not allowed[row].any() else allowed[row, token]


def test_single_row_and_shared_mask():
    logits, allowed = random_case(1, seed=5)
    token = sample(jax.random.key(0), logits[0], pack(allowed[0]), temperature=0.0)
    assert token.shape == () and int(token) == np_greedy(logits, allowed)[0]
    batch = np.concatenate([logits, logits + 1])
    tokens = sample(jax.random.key(0), batch, pack(allowed[0]), temperature=0.0)  # [W] mask, [B, V]
    assert tokens.tolist() == [int(token)] * 2


def test_no_retrace_across_decode_steps():
    logits, allowed = random_case(8, seed=6)
    logits, bitmask = jnp.asarray(logits[:, :77]), jnp.asarray(pack(allowed[:, :77]))  # fresh shape
    for top_p in [None, 0.9]:
        before = _sampling._sample._cache_size()
        for step, temperature in enumerate([0.0, 0.7, 1.0, 1.3, jnp.full((8,), 0.5, jnp.float32)]):
            sample(jax.random.key(step), logits, bitmask, temperature=temperature, top_k=4,
                   top_p=None if top_p is None else top_p + step / 100)
        assert _sampling._sample._cache_size() == before + 1


def test_sharded_batch():
    n = jax.device_count()
    if n < 2:
        pytest.skip("needs several devices (XLA_FLAGS set after jax was imported?)")
    logits, allowed = random_case(8, seed=7)
    mesh = jax.sharding.Mesh(np.array(jax.devices()[: n if 8 % n == 0 else 1]), ("batch",))
    rows = jax.sharding.NamedSharding(mesh, jax.sharding.PartitionSpec("batch"))
    logits_d, bitmask_d = jax.device_put(logits, rows), jax.device_put(pack(allowed), rows)
    tokens = sample(jax.random.key(0), logits_d, bitmask_d, temperature=0.0)
    assert (np.asarray(tokens) == np_greedy(logits, allowed)).all()


@pytest.mark.parametrize(
    "bitmask, kw, error, pattern",
    [
        (np.zeros((2, 2), np.int64), {}, TypeError, "int32"),
        (np.zeros((2, 2), np.float32), {}, TypeError, "int32"),
        (np.zeros((2, 1), np.int32), {}, ValueError, "too few"),
        (np.zeros((3, 2), np.int32), {}, ValueError, "broadcast"),
        (np.zeros((2, 2), np.int32), dict(top_k=0), ValueError, "top_k"),
        (np.zeros((2, 2), np.int32), dict(temperature=np.ones(3)), ValueError, "temperature"),
    ],
)
def test_errors(bitmask, kw, error, pattern):
    with pytest.raises(error, match=pattern):
        sample(jax.random.key(0), np.zeros((2, 40), np.float32), bitmask, **kw)


def test_rejects_3d_logits():
    with pytest.raises(ValueError, match=r"\(2, 2, 40\)"):
        sample(jax.random.key(0), np.zeros((2, 2, 40), np.float32), np.zeros((2, 2, 2), np.int32))


def test_doctests():
    assert doctest.testmod(_sampling).failed == 0

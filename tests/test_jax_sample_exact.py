"""xgr2.jax.sample and greedy against an exact numpy oracle of the truncated distribution.

Distribution tests draw many samples (a fixed seed, so they are deterministic) and compare
the counts with the oracle's probabilities by a chi-square bound; each test also checks that
the same counts *fail* the bound against a deliberately wrong oracle (temperature ignored,
top-p or top-k or min-p forgotten), so the bound has teeth.
"""

import os

os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")

import functools
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

jax.config.update("jax_numpy_dtype_promotion", "strict")
jax.config.update("jax_numpy_rank_promotion", "raise")

from xgr2.jax import greedy, sample
from xgr2.jax import _sampling

N_SAMPLES = 6000


def pack(allowed: np.ndarray) -> np.ndarray:
    """bool [..., V] -> int32 [..., ceil(V / 32)], token t = bit t % 32 of word t // 32."""
    words = -(-allowed.shape[-1] // 32)
    padded = np.zeros(allowed.shape[:-1] + (words * 32,), dtype=bool)
    padded[..., : allowed.shape[-1]] = allowed
    return np.packbits(padded, axis=-1, bitorder="little").view("<u4").view(np.int32)


def oracle(logits, allowed, temperature=1.0, top_k=0, top_p=1.0, min_p=0.0):
    """Exact probabilities of one row (float64): mask, temperature, top-k, top-p, min-p.

    Ties at a threshold are kept; top-p applies to the top-k-renormalised distribution.
    """
    x = np.where(allowed & ~np.isnan(logits), logits.astype(np.float64), -np.inf)
    if not allowed.any():
        return None
    if temperature <= 0 or np.max(x) == -np.inf:
        p = np.zeros(len(x))
        p[np.flatnonzero(allowed & (x == np.max(x)))[0]] = 1
        return p
    m = np.max(x)
    w = (x == np.inf).astype(np.float64) if m == np.inf else np.exp((x - m) / temperature)
    if top_k >= 1:
        w[x < np.sort(x)[::-1][min(top_k, len(x)) - 1]] = 0
    if top_p < 1:
        total = w.sum()
        values = np.unique(x[w > 0])[::-1]  # distinct kept values, descending
        tau = next(v for v in values if w[x >= v].sum() >= top_p * total)
        w[x < tau] = 0
    if min_p > 0:
        w[w < min_p * w.max()] = 0
    return w / w.sum()


def chi2_bound(df: int, z: float = 4.5) -> float:
    """Wilson-Hilferty upper quantile of chi-square(df) at ~z sigma (p ~ 3e-6)."""
    c = 2 / (9 * df)
    return df * (1 - c + z * math.sqrt(c)) ** 3


def chi2(counts: np.ndarray, probs: np.ndarray) -> float:
    """Pearson statistic; a count on a zero-probability token gives inf."""
    n = counts.sum()
    if (counts[probs == 0] > 0).any():
        return math.inf
    keep = probs > 0
    expected = n * probs[keep]
    return float(((counts[keep] - expected) ** 2 / expected).sum())


@functools.partial(jax.jit, static_argnames="top_k")
def _many(keys, logits, bitmask, temperature, top_k, top_p, min_p):
    return jax.vmap(
        lambda k: sample(k, logits, bitmask, temperature=temperature, top_k=top_k, top_p=top_p, min_p=min_p)
    )(keys)


def draw(logits, allowed, *, seed=0, **kw):
    keys = jax.random.split(jax.random.key(seed), N_SAMPLES)
    args = {n: None if kw.get(n) is None else jnp.asarray(kw[n], jnp.float32) for n in ("top_p", "min_p")}
    tokens = _many(
        keys, jnp.asarray(logits), jnp.asarray(pack(allowed)),
        jnp.asarray(kw.get("temperature", 1.0), jnp.float32), kw.get("top_k"), args["top_p"], args["min_p"],
    )
    return np.asarray(tokens)


def make_row(vocab, seed, scale=1.5, n_allowed=40):
    rng = np.random.default_rng(seed)
    allowed = np.zeros(vocab, dtype=bool)
    allowed[rng.choice(vocab, n_allowed, replace=False)] = True
    logits = (rng.normal(size=vocab) * scale).astype(np.float32)
    logits[~allowed] = rng.choice([30.0, np.inf, np.nan, -np.inf], size=(~allowed).sum())
    return logits, allowed


CASES = [
    # (name, kwargs, wrong oracle kwargs that the counts must reject)
    ("plain", dict(temperature=1.0), dict(temperature=1.6)),
    ("temperature", dict(temperature=0.6), dict(temperature=1.0)),
    ("top_k", dict(temperature=1.3, top_k=7), dict(temperature=1.3, top_k=9)),
    ("top_p", dict(temperature=1.0, top_p=0.7), dict(temperature=1.0)),
    ("min_p", dict(temperature=0.9, min_p=0.08), dict(temperature=0.9)),
    ("all", dict(temperature=1.2, top_k=20, top_p=0.9, min_p=0.25), dict(temperature=1.2, top_k=20, top_p=0.9)),
]


def assert_follows_oracle(tokens, logits, allowed, kw, wrong, name):
    """The drawn ``tokens`` of one row pass the chi-square bound against the oracle with
    ``kw`` and fail it against the oracle with ``wrong`` (the bound has teeth)."""
    assert allowed[tokens].all()
    counts = np.bincount(tokens, minlength=len(logits))
    probs = oracle(logits, allowed, **kw)
    df = max(int((probs > 0).sum()) - 1, 1)
    assert chi2(counts, probs) < chi2_bound(df), name
    assert chi2(counts, oracle(logits, allowed, **wrong)) > chi2_bound(df), f"{name}: the bound has no teeth"


@pytest.mark.parametrize("vocab", [300, 1024])  # padded blocks; 8 blocks (top-k by blocks)
@pytest.mark.parametrize("name, kw, wrong", CASES, ids=[c[0] for c in CASES])
def test_matches_exact_distribution(vocab, name, kw, wrong):
    logits, allowed = make_row(vocab, seed=vocab + len(name))
    assert_follows_oracle(draw(logits[None], allowed[None], **kw)[:, 0], logits, allowed, kw, wrong, name)


def test_per_row_parameters_in_one_call():
    vocab = 512
    rows = [make_row(vocab, seed=s) for s in range(4)]
    logits = np.stack([r[0] for r in rows])
    allowed = np.stack([r[1] for r in rows])
    params = dict(
        temperature=np.array([0.7, 1.0, 1.5, 0.0], np.float32),
        top_k=np.array([5, 0, 30, 3], np.int32),
        top_p=np.array([1.0, 0.6, 0.9, 0.5], np.float32),
        min_p=np.array([0.0, 0.0, 0.1, 0.0], np.float32),
    )
    keys = jax.random.split(jax.random.key(7), N_SAMPLES)
    tokens = np.asarray(
        jax.vmap(lambda k: sample(k, logits, pack(allowed), **params))(keys)
    )
    for row in range(4):
        kw = {name: value[row].item() for name, value in params.items()}
        probs = oracle(logits[row], allowed[row], **kw)
        counts = np.bincount(tokens[:, row], minlength=vocab)
        df = max(int((probs > 0).sum()) - 1, 1)
        assert chi2(counts, probs) < chi2_bound(df), (row, kw)


def test_traced_top_k_uses_bisection_and_is_exact():
    vocab = 384
    logits, allowed = make_row(vocab, seed=11)
    fn = jax.jit(jax.vmap(lambda key, k: sample(key, logits, pack(allowed), top_k=k), in_axes=(0, None)))
    tokens = np.asarray(fn(jax.random.split(jax.random.key(3), N_SAMPLES), jnp.int32(6)))
    probs = oracle(logits, allowed, top_k=6)
    assert chi2(np.bincount(tokens, minlength=vocab), probs) < chi2_bound(5)


def test_ties_at_top_k_threshold_are_kept():
    logits = np.array([[3.0, 1.0, 1.0, 1.0, 0.0, 9.0]], np.float32)
    allowed = np.array([[True] * 5 + [False]])
    got = set(draw(logits, allowed, top_k=2).ravel())
    assert got == {0, 1, 2, 3}


@pytest.mark.parametrize("kw", [dict(), dict(top_k=2), dict(top_p=0.5), dict(min_p=0.5), dict(temperature=0.0)])
def test_never_masked_with_nan_and_inf(kw):
    rng = np.random.default_rng(1)
    vocab = 200
    allowed = rng.random((6, vocab)) < 0.1
    allowed[5] = False
    logits = rng.normal(size=(6, vocab)).astype(np.float32)
    logits[~allowed] = np.inf
    logits[0, ~allowed[0]] = np.nan
    logits[1, allowed[1]] = -np.inf  # only -inf allowed: first allowed token
    logits[2, np.flatnonzero(allowed[2])[:2]] = np.nan  # NaN allowed = -inf
    logits[3, np.flatnonzero(allowed[3])[1:3]] = np.inf  # +inf allowed: uniform over them
    tokens = draw(logits, allowed, **kw)
    for row in range(5):
        assert allowed[row, tokens[:, row]].all(), row
    assert (tokens[:, 5] == -1).all()
    assert (tokens[:, 1] == np.flatnonzero(allowed[1])[0]).all()
    assert set(tokens[:, 3]) <= set(np.flatnonzero(allowed[3])[1:3])
    assert not set(tokens[:, 2]) & set(np.flatnonzero(allowed[2])[:2]) or kw.get("temperature") == 0.0


def test_greedy_matches_argmax_and_sample_temperature_zero():
    rng = np.random.default_rng(2)
    logits = rng.normal(size=(16, 1000)).astype(np.float32)
    logits[:, 5] = 100.0
    allowed = rng.random((16, 1000)) < 0.3
    allowed[3] = False
    logits[4, 10:20] = 7.0
    allowed[4, 10:20] = True  # ties: the first one
    want = np.where(allowed.any(1), np.argmax(np.where(allowed, logits, -np.inf), 1), -1)
    assert np.asarray(greedy(logits, pack(allowed))).tolist() == want.tolist()
    got = sample(jax.random.key(0), logits, pack(allowed), temperature=0.0)
    assert np.asarray(got).tolist() == want.tolist()


def test_constrained_rows_ignore_bitmask():
    logits = np.array([[0.0, 5.0, 1.0], [0.0, 5.0, 1.0]], np.float32)
    bitmask = pack(np.array([[True, False, True]] * 2))
    flags = np.array([True, False])
    assert np.asarray(greedy(logits, bitmask, constrained=flags)).tolist() == [2, 1]
    tokens = draw(logits, np.array([[True, False, True]] * 2), temperature=0.0)
    assert (tokens[:, 0] == 2).all()
    got = sample(jax.random.key(0), logits, bitmask, temperature=0.0, constrained=flags)
    assert np.asarray(got).tolist() == [2, 1]


def test_no_retrace_across_decode_steps():
    logits, allowed = make_row(333, seed=4)
    logits, bitmask = jnp.asarray(np.stack([logits] * 4)), jnp.asarray(pack(np.stack([allowed] * 4)))
    before_s, before_g = _sampling._sample._cache_size(), _sampling._greedy._cache_size()
    for step in range(4):
        t = jnp.full((4,), 0.5 + step / 10, jnp.float32)
        sample(jax.random.key(step), logits + step, bitmask, temperature=t, top_k=np.array([3, 4, 2, 0]) + step % 2,
               top_p=0.5 + step / 10, min_p=step / 20, constrained=np.array([True, False, True, step % 2 == 0]))
        greedy(logits - step, bitmask)
    assert _sampling._sample._cache_size() == before_s + 1
    assert _sampling._greedy._cache_size() == before_g + 1

"""The C++ CPU kernels behind xgr2.jax.greedy / sample (XLA FFI; csrc/sampling) against the
exact numpy oracle and the pure-JAX path.

The entry points are called with the kernels forced on and off (their static ``kernels``
argument), so both paths are tested whatever the process's device count. A sample of N
draws is one call on N copies of the row: each row has its own random stream.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from test_jax_sample_exact import CASES, assert_follows_oracle, chi2, chi2_bound, make_row, oracle, pack
from xgr2.jax import _cpu_kernels, _sampling, _verify

pytestmark = pytest.mark.skipif(not _cpu_kernels._register(), reason="built without jaxlib's XLA FFI headers")

N = 6000


def kernel_sample(key, logits, bitmask, *, temperature=1.0, top_k=None, top_p=None, min_p=None, constrained=None,
                  kernels=True):
    batch = logits.shape[0]
    row = lambda v, dtype: None if v is None else jnp.broadcast_to(jnp.asarray(v, dtype), (batch,))  # noqa: E731
    return np.asarray(_sampling._sample(
        key, jnp.asarray(logits), jnp.asarray(bitmask), row(temperature, jnp.float32), row(top_k, jnp.int32),
        row(top_p, jnp.float32), row(min_p, jnp.float32), row(constrained, jnp.bool_),
        k_bound=None, has_k=top_k is not None, kernels=kernels))


def kernel_greedy(logits, bitmask, constrained=None, kernels=True):
    c = None if constrained is None else jnp.asarray(constrained)
    return np.asarray(_sampling._greedy(jnp.asarray(logits), jnp.asarray(bitmask), c, kernels=kernels))


def test_the_kernels_are_what_the_entry_points_lower_to_on_cpu():
    x, m = jnp.zeros((2, 64)), jnp.zeros((2, 2), jnp.int32)
    greedy_hlo = jax.jit(lambda x, m: _sampling._greedy(x, m, None, kernels=True)).lower(x, m).as_text()
    assert "xgr2_masked_greedy" in greedy_hlo
    t = jnp.ones((2,))
    sample_hlo = jax.jit(lambda x, m: _sampling._sample(jax.random.key(0), x, m, t, None, None, None, None,
                                                        k_bound=None, has_k=False, kernels=True)).lower(x, m).as_text()
    assert "xgr2_masked_sample" in sample_hlo
    tree = (jnp.array([[-1, 0]]), jnp.array([[0, 1]]), jnp.array([[True, True]]))
    verify_hlo = jax.jit(lambda x, m: _verify._verify(
        jax.random.key(0), x[None], m[None], *tree, None, jnp.ones((1,)), None, None, method="greedy", depth=2,
        has_k=False, has_p=False, kernels=True)).lower(x, m).as_text()
    assert "xgr2_masked_greedy" in verify_hlo


def np_greedy(logits, allowed):
    """Per row, the oracle's greedy token (one-hot at temperature 0), -1 with nothing allowed."""
    one_hot = [oracle(x, a, temperature=0.0) for x, a in zip(logits, allowed)]
    return np.array([-1 if p is None else int(np.argmax(p)) for p in one_hot])


@pytest.mark.parametrize("vocab", [1, 31, 257, 1000, 4096, 49152 + 17])
def test_greedy_matches_numpy_on_hostile_rows(vocab):
    rng = np.random.default_rng(vocab)
    batch = 24
    logits = rng.choice([-2.0, -1.0, 0.0, 1.0, 3.0], size=(batch, vocab)).astype(np.float32)  # many ties
    special = rng.random((batch, vocab))
    logits[special < 0.05] = np.nan
    logits[(special > 0.05) & (special < 0.08)] = -np.inf
    logits[:3, :] = np.nan  # all NaN rows: the first allowed token
    logits[3, rng.integers(vocab)] = np.inf
    allowed = rng.random((batch, vocab)) < rng.choice([0.0, 0.01, 0.5, 1.0], size=(batch, 1))
    allowed[4] = False  # nothing allowed: -1
    mask = pack(allowed)
    mask[:, -1] |= np.int32(-1) << np.int32(vocab % 32) if vocab % 32 else 0  # bits past V are ignored
    want = np_greedy(logits, allowed)
    for kernels in (True, False):
        assert (kernel_greedy(logits, mask, kernels=kernels) == want).all()
    free = np.zeros(batch, bool)  # constrained=False rows ignore the mask
    assert (kernel_greedy(logits, mask, free) == np_greedy(logits, np.ones_like(allowed))).all()
    # temperature 0 rows of sample are greedy too
    assert (kernel_sample(jax.random.key(0), logits, mask, temperature=0.0) == want).all()


@pytest.mark.parametrize("vocab", [300, 1024])  # a partial chunk (portable path); whole chunks (SIMD)
@pytest.mark.parametrize("name, kw, wrong", CASES + [
    ("top_k_min_p", dict(temperature=0.8, top_k=12, min_p=0.3), dict(temperature=0.8, top_k=12))],
    ids=lambda c: c if isinstance(c, str) else "")
def test_sampling_matches_the_exact_distribution(vocab, name, kw, wrong):
    logits, allowed = make_row(vocab, seed=vocab + len(name))
    tokens = kernel_sample(jax.random.key(vocab), np.repeat(logits[None], N, 0), np.repeat(pack(allowed[None]), N, 0),
                           **kw)
    assert_follows_oracle(tokens, logits, allowed, kw, wrong, name)


def test_sampling_stays_exact_when_the_envelope_rejects_often():
    # Each word holds one large logit and 31 far smaller ones: a proposal is accepted with
    # probability ~1/32, so rows often exhaust the proposals and take the exact fallback.
    vocab = 512
    logits = np.full(vocab, -40.0, np.float32)
    logits[::32] = np.linspace(0, 2, vocab // 32)
    logits[1::32] = -3.0
    allowed = np.ones(vocab, bool)
    tokens = kernel_sample(jax.random.key(7), np.repeat(logits[None], N, 0), np.repeat(pack(allowed[None]), N, 0))
    probs = oracle(logits, allowed)
    df = max(int((probs > 1e-9).sum()) - 1, 1)
    counts = np.bincount(tokens, minlength=vocab)
    assert chi2(counts, probs) < chi2_bound(df)


def test_special_rows():
    vocab = 600
    allowed = np.zeros((5, vocab), bool)
    allowed[:, [3, 40, 300, 599]] = True
    logits = np.zeros((5, vocab), np.float32)
    logits[0, [40, 599]] = np.inf  # +inf: uniform among the +inf tokens
    logits[1, :] = -np.inf  # no finite allowed logit: the first allowed token
    logits[2, :] = np.nan
    logits[3, 300] = 50.0
    logits[3, 3] = np.nan  # NaN never sampled
    allowed[4] = False  # nothing allowed: -1
    rows = np.repeat(logits, 400, 0)
    masks = np.repeat(pack(allowed), 400, 0)
    tokens = kernel_sample(jax.random.key(1), rows, masks).reshape(5, 400)
    assert set(tokens[0]) == {40, 599} and 120 < (tokens[0] == 40).sum() < 280
    assert (tokens[1] == 3).all() and (tokens[2] == 3).all() and (tokens[3] == 300).all() and (tokens[4] == -1).all()


def test_unconstrained_rows_and_per_row_parameters():
    vocab = 256
    logits = np.random.default_rng(3).normal(size=(4, vocab)).astype(np.float32) * 4
    allowed = np.zeros((4, vocab), bool)
    allowed[:, :5] = True
    free = np.array([True, False, True, False])
    tokens = kernel_sample(jax.random.key(2), logits, pack(allowed), temperature=np.array([1.0, 1.0, 0.0, 0.5]),
                           top_k=np.array([0, 3, 0, 1]), constrained=free)
    assert (tokens[[0, 2]] < 5).all()
    assert tokens[1] in np.argsort(-logits[1])[:3]  # top-3 of the whole row
    assert tokens[3] == np.argmax(logits[3])

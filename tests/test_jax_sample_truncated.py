"""The certified candidate path of top-k / min-p sampling (xgr2/jax/_truncated.py).

Rows are built so that the candidate blocks settle them (a half-dense mask, a few high
logits) or cannot (the allowed tokens far below disallowed ones); the path is asserted, and
both are checked against the exact oracle, so a test cannot pass on the fallback alone.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from test_jax_sample_exact import chi2, chi2_bound, oracle, pack
from xgr2.jax import sample
from xgr2.jax import _sampling, _truncated

V = 32 * 400  # 400 blocks: more than the candidate blocks
N = 12000


def _certified(logits, allowed, *, temperature=1.0, top_k=None, min_p=None, k_bound=None):
    """The candidate path's ``exact`` flags for rows ``[R, V]``."""
    rows = logits.shape[0]
    per_row = lambda v, dt: None if v is None else jnp.full((rows,), v, dt)  # noqa: E731
    _, exact = _truncated.sample_truncated(
        jax.random.key(0), jnp.asarray(logits), jnp.asarray(pack(allowed)), None,
        per_row(temperature, jnp.float32), per_row(top_k, jnp.int32), per_row(min_p, jnp.float32),
        k_bound=k_bound if top_k is None else max(k_bound or 0, top_k),
    )
    return np.asarray(exact)


def _counts_ok(tokens, logits, allowed, wrong=None, **kw):
    """Chi-square of the samples against the oracle on its support (and against a wrong one)."""
    assert allowed[tokens].all()
    probs = oracle(logits, allowed, **kw)
    support = np.flatnonzero(probs > 0)
    assert len(support) < 400, "the kept set should be small enough for a chi-square"
    counts = np.bincount(tokens, minlength=len(logits))
    assert counts.sum() == counts[support].sum(), "a token outside the kept set came out"
    df = max(len(support) - 1, 1)
    assert chi2(counts, probs) < chi2_bound(df)
    if wrong is not None:
        assert chi2(counts, oracle(logits, allowed, **wrong)) > chi2_bound(df), "the bound has no teeth"


def _draw(logits, allowed, seed=1, **kw):
    keys = jax.random.split(jax.random.key(seed), N)
    mask = jnp.asarray(pack(allowed))
    x = jnp.asarray(logits)
    return np.asarray(jax.jit(jax.vmap(lambda k: sample(k, x, mask, **kw)))(keys))


def _dense_row(seed, scale=2.0):
    rng = np.random.default_rng(seed)
    return (rng.normal(size=V) * scale).astype(np.float32), rng.random(V) < 0.5


@pytest.mark.parametrize(
    "kw, wrong",
    [
        (dict(top_k=20, temperature=0.8), dict(top_k=25, temperature=0.8)),
        (dict(min_p=0.2, temperature=0.8), dict(min_p=0.1, temperature=0.8)),
        (dict(top_k=30, min_p=0.2), dict(top_k=30)),
    ],
    ids=["top_k", "min_p", "top_k+min_p"],
)
def test_candidate_path_is_taken_and_exact(kw, wrong):
    logits, allowed = _dense_row(3)
    assert _certified(logits[None], allowed[None], **kw).all()
    _counts_ok(_draw(logits, allowed, **kw), logits, allowed, wrong, **kw)


def test_ties_at_the_kth_value_are_all_kept():
    logits = np.full(V, -5.0, np.float32)
    allowed = np.ones(V, bool)
    logits[[7000, 9]] = 4.0
    ties = np.array([11, 3000, 5000, 12000, 12799])
    logits[ties] = 2.0  # top_k=3: the 3rd value is 2.0, shared by five tokens
    assert _certified(logits[None], allowed[None], top_k=3).all()
    tokens = _draw(logits, allowed, top_k=3)
    assert set(tokens.tolist()) == {7000, 9, *ties.tolist()}
    _counts_ok(tokens, logits, allowed, top_k=3)


def test_rows_it_cannot_certify_fall_back_exactly():
    rng = np.random.default_rng(5)
    logits = rng.normal(size=V).astype(np.float32) * 2
    allowed = np.zeros(V, bool)
    allowed[rng.choice(V, 60, replace=False)] = True
    logits[allowed] -= 12  # every allowed token below hundreds of disallowed blocks
    for kw in (dict(top_k=10), dict(min_p=0.1)):
        assert not _certified(logits[None], allowed[None], **kw).any()
        _counts_ok(_draw(logits, allowed, **kw), logits, allowed, **kw)


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_non_finite_logits_are_flagged_or_harmless(bad):
    logits, allowed = _dense_row(6)
    row = logits.copy()
    hot = np.argsort(-np.where(allowed, logits, -np.inf))[:3]
    row[hot[0]] = bad  # an allowed token at the top
    exact = _certified(row[None], allowed[None], top_k=5)
    # -inf is a zero weight; a NaN block ranks first, so the NaN is masked among the
    # candidates (as -inf); +inf changes the distribution: the exact path takes it.
    assert exact.all() == (bad != np.inf)
    tokens = _draw(row, allowed, top_k=5)
    _counts_ok(tokens, row, allowed, top_k=5)


def test_nan_in_every_block_stays_exact():
    """More NaN blocks than candidates: a block maximum that propagates NaN spoils `bound`
    (flagged); one that skips NaN bounds the other tokens, and NaN counts as -inf. Either way
    the samples follow the oracle."""
    logits, allowed = _dense_row(9)
    logits[::32] = np.nan
    _counts_ok(_draw(logits, allowed, top_k=5), logits, allowed, top_k=5)


def test_batch_with_few_uncertified_rows_redoes_only_those():
    """B = 32: one uncertified row takes the gathered fallback (one row, not the batch);
    every row matches its own oracle, greedy rows give the masked argmax."""
    rows = 32
    assert _sampling._fallback_rows(rows) == 2
    rng = np.random.default_rng(7)
    logits = (rng.normal(size=(rows, V)) * 2).astype(np.float32)
    allowed = rng.random((rows, V)) < 0.5
    bad = 5
    allowed[bad] = False
    allowed[bad, rng.choice(V, 40, replace=False)] = True
    logits[bad, allowed[bad]] -= 12
    temperature = np.where(np.arange(rows) % 4 == 3, 0.0, 1.0).astype(np.float32)
    exact = _certified(logits, allowed, top_k=8)
    assert exact.tolist() == [r != bad for r in range(rows)]
    keys = jax.random.split(jax.random.key(2), 4000)
    x, mask, t = jnp.asarray(logits), jnp.asarray(pack(allowed)), jnp.asarray(temperature)
    tokens = np.asarray(jax.jit(jax.vmap(lambda k: sample(k, x, mask, temperature=t, top_k=8)))(keys))
    for r in (bad, 0, 3):
        probs = oracle(logits[r], allowed[r], temperature=float(temperature[r]), top_k=8)
        counts = np.bincount(tokens[:, r], minlength=V)
        assert counts[probs == 0].sum() == 0
        if temperature[r] > 0:
            assert chi2(counts, probs) < chi2_bound(max(int((probs > 0).sum()) - 1, 1))
        else:
            assert (tokens[:, r] == np.argmax(np.where(allowed[r], logits[r], -np.inf))).all()


def test_constrained_flags_and_padding_vocab():
    """A vocabulary not a multiple of 32 (padded last block) and a free row."""
    vocab = V - 5
    logits, allowed = _dense_row(8)
    logits, allowed = logits[:vocab], allowed[:vocab]
    keys = jax.random.split(jax.random.key(3), N)
    x = jnp.asarray(np.stack([logits, logits]))
    mask = jnp.asarray(pack(np.stack([allowed, allowed])))
    flags = jnp.asarray([True, False])
    draw = jax.jit(jax.vmap(lambda k: sample(k, x, mask, top_k=12, constrained=flags)))
    tokens = np.asarray(draw(keys))
    _counts_ok(tokens[:, 0], logits, allowed, top_k=12)
    _counts_ok(tokens[:, 1], logits, np.ones(vocab, bool), top_k=12)

"""The fast paths of xgr2.jax.greedy (_candidates.py) and plain sample (_envelope.py).

Cases are built so that the fast paths settle the rows (many blocks, finite logits, most
mass allowed) or cannot (the allowed tokens far below disallowed ones), and both are checked
against exact oracles; the path taken is asserted, so a test cannot pass on the fallback alone.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from test_jax_sample_exact import chi2, chi2_bound, oracle, pack
from xgr2.jax import greedy, sample
from xgr2.jax import _candidates, _envelope
from xgr2.jax._sampling import _block_size

V = 128 * 40  # 40 blocks: more than the candidate blocks


def _words(allowed):
    return _candidates.block_words(jnp.asarray(pack(allowed)), allowed.shape[0], V, _block_size(V))


def test_greedy_fast_and_fallback_rows_match_argmax():
    rng = np.random.default_rng(0)
    logits = rng.normal(size=(6, V)).astype(np.float32)
    allowed = rng.random((6, V)) < 0.5
    allowed[3:] = False
    allowed[3:, :5] = True  # rows 3-5: few allowed tokens, low logits -> fallback
    logits[3:, :5] -= 10
    logits[4, 7] = np.nan
    xb = _candidates.raw_blocks(jnp.asarray(logits), _block_size(V))
    _, _, exact = _candidates.greedy_candidates(xb, _words(allowed), None, V)
    assert np.asarray(exact).tolist() == [True] * 3 + [False] * 3
    want = np.argmax(np.where(allowed, logits, -np.inf), axis=1)
    assert np.asarray(greedy(logits, pack(allowed))).tolist() == want.tolist()


def _envelope_exact(logits, allowed, inv_temp=1.0, key=3):
    _, exact = _envelope.sample_by_envelope(
        jax.random.key(key), jnp.asarray(logits[None]), jnp.asarray(pack(allowed[None])), None,
        jnp.full((1,), inv_temp, jnp.float32),
    )
    return bool(exact[0])


@pytest.mark.parametrize("vocab", [V, V + 7])  # V + 7: not a multiple of the sub-block
def test_envelope_path_is_exact(vocab):
    rng = np.random.default_rng(1)
    logits = (rng.normal(size=vocab) * 2).astype(np.float32)
    allowed = rng.random(vocab) < 0.6
    assert _envelope_exact(logits, allowed, 1 / 0.8)  # the fast path settles this row
    n = 20000
    keys = jax.random.split(jax.random.key(0), n)
    bitmask = jnp.asarray(pack(allowed))
    draw = jax.jit(jax.vmap(lambda k: sample(k, jnp.asarray(logits), bitmask, temperature=0.8)))
    tokens = np.asarray(draw(keys))
    assert allowed[tokens].all()
    # Compare on the most likely tokens (the rest pooled), where the chi-square has power.
    probs = oracle(logits, allowed, temperature=0.8)
    top = np.argsort(-probs)[:60]
    counts = np.bincount(tokens, minlength=vocab)
    c = np.append(counts[top], n - counts[top].sum())
    p = np.append(probs[top], 1 - probs[top].sum())
    assert chi2(c, p) < chi2_bound(len(p) - 1)
    wrong = oracle(logits, np.ones(vocab, bool), temperature=0.8)  # the mask ignored
    pw = np.append(wrong[top], 1 - wrong[top].sum())
    assert chi2(c, pw) > chi2_bound(len(p) - 1)


def test_envelope_flags_rows_it_cannot_settle():
    rng = np.random.default_rng(2)
    logits = rng.normal(size=V).astype(np.float32)
    few = np.zeros(V, bool)
    few[:3] = True
    logits[:3] -= 20  # the allowed tokens hold ~1e-9 of the mass: no proposal lands there
    assert not _envelope_exact(logits, few)
    for bad in (np.nan, np.inf):
        row = logits.copy()
        row[100] = bad
        assert not _envelope_exact(row, np.ones(V, bool))


def test_envelope_peaked_rows_exact_distribution():
    """A few dominant tokens (each sub-block's mass is its maximum): the low-acceptance regime."""
    rng = np.random.default_rng(4)
    logits = (rng.normal(size=V) * 1).astype(np.float32)
    hot = rng.choice(V, 6, replace=False)
    logits[hot] = 9 + np.arange(6, dtype=np.float32) * 0.3
    allowed = rng.random(V) < 0.5
    allowed[hot[::2]] = True
    allowed[hot[1::2]] = False
    assert _envelope_exact(logits, allowed)
    n = 12000
    keys = jax.random.split(jax.random.key(5), n)
    bitmask = jnp.asarray(pack(allowed))
    tokens = np.asarray(jax.jit(jax.vmap(lambda k: sample(k, jnp.asarray(logits), bitmask)))(keys))
    assert allowed[tokens].all()
    probs = oracle(logits, allowed)
    top = np.argsort(-probs)[:10]
    counts = np.bincount(tokens, minlength=V)
    c = np.append(counts[top], n - counts[top].sum())
    p = np.append(probs[top], 1 - probs[top].sum())
    assert chi2(c, p) < chi2_bound(len(p) - 1)

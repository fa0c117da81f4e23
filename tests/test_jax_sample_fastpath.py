"""The candidate / rejection fast paths of xgr2.jax.greedy and sample (xgr2/jax/_candidates.py).

Cases are built so that the fast path settles the rows (many blocks, finite logits, most
mass allowed) or cannot (the allowed tokens far below disallowed ones), and both are checked
against exact oracles; the path taken is asserted, so a test cannot pass on the fallback alone.
"""

import jax
import jax.numpy as jnp
import numpy as np

from test_jax_sample_exact import chi2, chi2_bound, oracle, pack
from xgr2.jax import greedy, sample
from xgr2.jax import _candidates
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


def test_rejection_path_is_exact():
    rng = np.random.default_rng(1)
    logits = (rng.normal(size=V) * 2).astype(np.float32)
    allowed = rng.random(V) < 0.6
    key = jax.random.key(3)
    xb = _candidates.raw_blocks(jnp.asarray(logits[None]), _block_size(V))
    _, exact = _candidates.sample_by_rejection(key, xb, _words(allowed[None]), None, jnp.ones(1, jnp.float32))
    assert bool(exact[0])
    n = 20000
    keys = jax.random.split(jax.random.key(0), n)
    bitmask = jnp.asarray(pack(allowed))
    draw = jax.jit(jax.vmap(lambda k: sample(k, jnp.asarray(logits), bitmask, temperature=0.8)))
    tokens = np.asarray(draw(keys))
    assert allowed[tokens].all()
    # Compare on the most likely tokens (the rest pooled), where the chi-square has power.
    probs = oracle(logits, allowed, temperature=0.8)
    top = np.argsort(-probs)[:60]
    counts = np.bincount(tokens, minlength=V)
    c = np.append(counts[top], n - counts[top].sum())
    p = np.append(probs[top], 1 - probs[top].sum())
    assert chi2(c, p) < chi2_bound(len(p) - 1)
    wrong = oracle(logits, np.ones(V, bool), temperature=0.8)  # the mask ignored
    pw = np.append(wrong[top], 1 - wrong[top].sum())
    assert chi2(c, pw) > chi2_bound(len(p) - 1)

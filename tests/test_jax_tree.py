"""Draft trees (converters, depth, ancestor mask) and verify_tree against numpy oracles."""

import os

os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")

import doctest
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

jax.config.update("jax_numpy_dtype_promotion", "strict")
jax.config.update("jax_numpy_rank_promotion", "raise")

from xgr2.jax import DraftTree, ancestor_mask, tree_depth, verify_tree
from xgr2.jax import _tree, _verify

from test_jax_sample_exact import chi2, chi2_bound, oracle, pack

PATHS = [(0,), (1,), (2,), (0, 0), (0, 1), (1, 0), (0, 0, 0), (0, 1, 0)]


def np_parents(paths):
    ordered = sorted(paths, key=lambda p: (len(p), p))
    index = {(): 0, **{p: i + 1 for i, p in enumerate(ordered)}}
    return [-1] + [index[p[:-1]] for p in ordered]


def test_converters_round_trip():
    tree = DraftTree.from_paths(PATHS, tokens=np.arange(9))
    assert tree.parents.tolist() == [np_parents(PATHS)]
    assert tree.to_paths(0) == sorted(PATHS, key=lambda p: (len(p), p))
    first, sibling = tree.to_next_token_sibling()
    back = DraftTree.from_next_token_sibling(first, sibling, tokens=np.arange(9))
    for a, b in zip(tree, back):
        assert np.asarray(a).tolist() == np.asarray(b).tolist()
    eagle = DraftTree.from_parents(np.asarray(tree.parents), np.asarray(tree.tokens))
    assert eagle.parents.tolist() == tree.parents.tolist()


def test_padding_and_errors():
    tree = DraftTree.from_parents([[-1, 0, -1, 2]])  # node 2 is padding, so is its child 3
    assert tree.valid.tolist() == [[True, True, False, False]]
    with pytest.raises(ValueError, match="topologically"):
        DraftTree.from_parents([-1, 2, 0])
    with pytest.raises(ValueError, match="parent path"):
        DraftTree.from_paths([(0, 1)])


def test_depth_and_ancestor_mask_match_oracle():
    parents = np_parents(PATHS)
    tree = DraftTree.from_parents(np.stack([parents, parents]))
    n = len(parents)
    anc = np.zeros((n, n), bool)
    depth = np.zeros(n, int)
    for i in range(n):
        j = i
        while j >= 0:
            anc[i, j] = True
            depth[i] += j != i
            j = parents[j]
    assert (np.asarray(ancestor_mask(tree)) == anc).all()
    assert np.asarray(tree_depth(tree)).tolist() == [depth.tolist()] * 2
    assert np.asarray(jax.jit(ancestor_mask)(tree)).shape == (2, n, n)


def random_verify_case(seed, batch=3, vocab=12):
    rng = np.random.default_rng(seed)
    parents = np_parents(PATHS)
    n = len(parents)
    tokens = rng.integers(0, vocab, size=(batch, n))
    logits = rng.normal(size=(batch, n, vocab)).astype(np.float32) * 2
    allowed = rng.random((batch, n, vocab)) < 0.7
    allowed[0, 3] = False  # an inadmissible node
    tree = DraftTree.from_parents(np.stack([parents] * batch), tokens)
    return logits, allowed, tree


def np_greedy_walk(logits, allowed, parents, tokens):
    def best(i):
        x = np.where(allowed[i], logits[i], -np.inf)
        return int(np.argmax(x)) if allowed[i].any() else -1

    cur, path = 0, [0]
    while True:
        kids = [c for c in range(1, len(parents)) if parents[c] == cur and tokens[c] == best(cur)]
        if not kids:
            return path, best(cur)
        cur = kids[0]
        path.append(cur)


@pytest.mark.parametrize("seed", range(4))
def test_greedy_verification_equals_step_by_step(seed):
    logits, allowed, tree = random_verify_case(seed)
    # Make some drafts agree with the target's argmax so that paths get accepted.
    tokens = np.asarray(tree.tokens).copy()
    parents = np.asarray(tree.parents)[0]
    for b in range(tokens.shape[0]):
        for c in range(1, len(parents)):
            if (c + b + seed) % 3:
                x = np.where(allowed[b, parents[c]], logits[b, parents[c]], -np.inf)
                tokens[b, c] = np.argmax(x)
    tree = tree._replace(tokens=jnp.asarray(tokens, jnp.int32))
    res = verify_tree(jax.random.key(0), logits, pack(allowed), tree)
    for b in range(tokens.shape[0]):
        path, bonus = np_greedy_walk(logits[b], allowed[b], parents, tokens[b])
        d = res.accepted_nodes.shape[1]
        assert np.asarray(res.accepted_nodes[b]).tolist() == path + [-1] * (d - len(path))
        assert int(res.accept_len[b]) == len(path) - 1 and int(res.last_node[b]) == path[-1]
        assert int(res.bonus_token[b]) == bonus


def test_speculative_matches_token_by_token_sampling():
    """Joint law of the first two emitted tokens equals masked sampling step by step."""
    vocab = 6
    rng = np.random.default_rng(5)
    parents = [-1, 0, 0, 1, 1, 2]
    tokens = [0, 1, 3, 2, 4, 0]
    logits = rng.normal(size=(1, 6, vocab)).astype(np.float32)
    allowed = np.ones((1, 6, vocab), bool)
    allowed[0, 0, 5] = False
    allowed[0, 1, 0] = False
    tree = DraftTree.from_parents([parents], [tokens])
    kw = dict(temperature=0.8, top_p=0.9)
    keys = jax.random.split(jax.random.key(1), 6000)
    fn = jax.jit(jax.vmap(lambda k: verify_tree(k, logits, pack(allowed), tree, method="speculative", max_depth=2, **kw)))
    res = jax.tree.map(np.asarray, fn(keys))
    # Emitted sequence: accepted tokens then the bonus; keep the first two tokens.
    counts = {}
    for i in range(len(keys)):
        seq = [tokens[n] for n in res.accepted_nodes[i, 0, 1:] if n >= 0] + [int(res.bonus_token[i, 0])]
        counts[tuple(seq[:2])] = counts.get(tuple(seq[:2]), 0) + 1
    p0 = oracle(logits[0, 0], allowed[0, 0], **kw)
    want = {}
    for t1 in range(vocab):
        node = next((c for c in range(1, 6) if parents[c] == 0 and tokens[c] == t1), None)
        if node is None:
            want[(t1,)] = p0[t1]
            continue
        p1 = oracle(logits[0, node], allowed[0, node], **kw)
        for t2 in range(vocab):
            want[(t1, t2)] = p0[t1] * p1[t2]
    keys_ = sorted(set(want) | set(counts))
    probs = np.array([want.get(k, 0.0) for k in keys_])
    obs = np.array([counts.get(k, 0) for k in keys_])
    df = int((probs > 0).sum()) - 1
    assert chi2(obs, probs) < chi2_bound(df)
    # Teeth: ignoring the temperature must fail.
    p0w = oracle(logits[0, 0], allowed[0, 0], temperature=1.0, top_p=0.9)
    wrong = np.array([want.get(k, 0.0) * (p0w[k[0]] / p0[k[0]] if p0[k[0]] else 0) for k in keys_])
    assert chi2(obs, wrong / wrong.sum()) > chi2_bound(df)


def np_speculative(probs, parents, tokens, valid, uniforms, bonus_u):
    """One row of multi-branch rejection sampling with one-hot drafts, the textbook way: the
    residual ``max(p - e_t, 0)`` renormalised over the whole vocabulary after each rejection."""
    n = len(parents)
    cur, path, resid, step = 0, [0], probs[0].copy(), 0
    tried = 0
    while True:
        kids = [c for c in range(tried + 1, n) if parents[c] == cur and valid[c]]
        if not kids:
            break
        child, u = kids[0], uniforms[step]
        step += 1
        tried = child
        if u < resid[tokens[child]]:
            cur, resid = child, probs[child].copy()
            path.append(child)
            continue
        residual = np.maximum(resid - np.eye(len(resid))[tokens[child]], 0)
        if residual.sum() > 0:
            resid = residual / residual.sum()
    cum = np.cumsum(resid)
    bonus = int(np.argmax((cum > bonus_u * cum[-1]) & (resid > 0))) if resid.sum() > 0 else -1
    return path, bonus


@pytest.mark.parametrize("seed", range(4))
def test_speculative_equals_the_textbook_residual_loop(seed):
    """Same uniforms, same tokens: the gathered acceptance tests of verify_tree (no pass over
    the vocabulary per tried child) against the explicit residual loop, on trees whose
    siblings repeat tokens (a rejected token must stay rejected) and have invalid nodes."""
    rng = np.random.default_rng(seed)
    batch, n, vocab = 3, 10, 7
    parents = np.stack([np.concatenate([[-1], [rng.integers(0, i) for i in range(1, n)]]) for _ in range(batch)])
    tokens = rng.integers(0, 3, (batch, n))
    valid = rng.random((batch, n)) < 0.9
    logits = (rng.normal(size=(batch, n, vocab)) * 2).astype(np.float32)
    allowed = rng.random((batch, n, vocab)) < 0.7
    allowed[..., 0] = True
    tree = DraftTree.from_parents(parents, tokens, valid)
    kw = dict(temperature=0.9, top_p=0.95)
    for k in range(8):
        key = jax.random.key(100 * seed + k)
        res = verify_tree(key, logits, pack(allowed), tree, method="speculative", **kw)
        uniforms = np.stack([np.asarray(jax.random.uniform(jax.random.fold_in(key, i), (batch,))) for i in range(n)], 1)
        bonus_u = np.asarray(jax.random.uniform(jax.random.fold_in(key, n), (batch,)))
        for b in range(batch):
            real = np.asarray(tree.valid)[b]
            probs = np.stack([oracle(logits[b, i], allowed[b, i], **kw) for i in range(n)])
            path, bonus = np_speculative(probs, parents[b], tokens[b], real, uniforms[b], bonus_u[b])
            got = [int(x) for x in np.asarray(res.accepted_nodes)[b] if x >= 0]
            assert (got, int(res.bonus_token[b])) == (path, bonus), (seed, k, b)


def test_speculative_with_draft_probs_never_leaves_mask():
    logits, allowed, tree = random_verify_case(9)
    q = jax.nn.softmax(jnp.asarray(np.random.default_rng(0).normal(size=logits.shape), jnp.float32))
    res = verify_tree(jax.random.key(3), logits, pack(allowed), tree, method="speculative", draft_probs=q)
    for b in range(3):
        last = int(res.last_node[b])
        tok = int(res.bonus_token[b])
        assert tok == -1 if not allowed[b, last].any() else allowed[b, last, tok]


def test_no_retrace_across_steps():
    logits, allowed, tree = random_verify_case(1)
    before = _verify._verify._cache_size()
    before_depth, before_mask = tree_depth._cache_size(), ancestor_mask._cache_size()
    for step in range(3):
        for method in ("greedy", "speculative"):
            verify_tree(jax.random.key(step), logits + step, pack(allowed), tree, method=method,
                        temperature=0.5 + step, top_p=0.9)
        ancestor_mask(tree)
    assert _verify._verify._cache_size() == before + 2
    # verify_tree reads the depth of a concrete tree through the jitted tree_depth: compiled
    # once, not re-traced per call (an eager fori_loop re-traced and cost ~100 ms a call).
    assert tree_depth._cache_size() <= before_depth + 1 and ancestor_mask._cache_size() <= before_mask + 1


def test_doctests():
    assert doctest.testmod(_tree).failed == 0
    assert doctest.testmod(_verify).failed == 0


@pytest.mark.parametrize("seed", [68974243, 200419027])
def test_drafts_covering_almost_all_mass_match_the_textbook_loop(seed):
    """Children drafting every token of the root's row but one of mass 2.5e-8, at keys (a
    review's search) whose uniforms reject the first four: the residual's mass must not be
    taken as 1 - E (it cancels to rounding and the last child, certain by then, was
    rejected and a rejected token emitted)."""
    logits = np.zeros((1, 6, 5), np.float32)
    logits[0, 0] = np.log([0.5, 0.25, 0.125, 0.125 - 2.5e-8, 2.5e-8])
    allowed = np.ones((1, 6, 5), bool)
    parents, tokens = [-1, 0, 0, 0, 0, 0], [0, 0, 1, 2, 3, 4]
    key = jax.random.key(seed)
    res = verify_tree(key, logits, pack(allowed), DraftTree.from_parents([parents], [tokens]), method="speculative")
    uniforms = [float(jax.random.uniform(jax.random.fold_in(key, i), (1,))[0]) for i in range(6)]
    bonus_u = float(jax.random.uniform(jax.random.fold_in(key, 6), (1,))[0])
    probs = np.stack([oracle(logits[0, i], allowed[0, i]) for i in range(6)])
    path, bonus = np_speculative(probs, parents, tokens, [True] * 6, uniforms, bonus_u)
    assert ([int(x) for x in np.asarray(res.accepted_nodes)[0] if x >= 0], int(res.bonus_token[0])) == (path, bonus)

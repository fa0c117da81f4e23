"""xgr2.tree_masks against an oracle that advances the root along each path token by token."""

import doctest

import numpy as np
import pytest
import xgr2
from grammars import EBNF

SCHEMA = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "n": {"type": "integer"}, "tags": {"type": "array", "items": {"enum": ["a", "bc"]}}},
    "required": ["name", "n"],
}


def oracle_row(root, parents, tokens, valid, i):
    """The state after root -> i by advancing one token at a time (None if any is rejected)."""
    path = []
    while i > 0:
        if not valid[i] or parents[i] < 0:
            return None
        path.append(int(tokens[i]))
        i = int(parents[i])
    if not valid[0]:
        return None
    state = root
    for t in reversed(path):
        state = state.try_advance(t)
        if state is None:
            return None
    return state


def check_against_oracle(roots, parents, tokens, valid, masks):
    batch, n = parents.shape
    words = masks.bitmask.shape[-1]
    for b in range(batch):
        for i in range(n):
            want = oracle_row(roots[b], parents[b], tokens[b], valid[b], i) if roots[b] is not None else None
            got = masks.states[b][i]
            assert masks.admissible[b, i] == (want is not None), (b, i)
            parent_ok = i == 0 or (valid[b, i] and parents[b, i] >= 0 and masks.states[b][parents[b, i]] is not None)
            assert masks.visited[b, i] == (roots[b] is not None and bool(valid[b, 0]) and bool(valid[b, i]) and parent_ok)
            if want is None:
                assert got is None and not masks.bitmask[b, i].any(), (b, i)
            else:
                assert (masks.bitmask[b, i] == want.bitmask()).all(), (b, i)
                assert got.num_tokens == want.num_tokens and got.num_bytes == want.num_bytes
                assert (got.bitmask() == want.bitmask()).all()
                assert got.is_terminated == want.is_terminated
            assert masks.bitmask[b, i].shape == (words,)


def random_tree(rng, root, vocab, n, *, p_bad=0.15, p_pad=0.1):
    """A random tree whose tokens are mostly allowed ones (so paths go deep), some random."""
    parents = np.full(n, -1, np.int64)
    tokens = np.zeros(n, np.int64)
    valid = np.ones(n, bool)
    states = [root]
    for i in range(1, n):
        live = [j for j in range(i) if states[j] is not None and valid[j]]
        p = int(rng.choice(live)) if live and rng.random() < 0.9 else int(rng.integers(0, i))
        parents[i] = p
        allowed = np.flatnonzero(xgr2.bitmask_to_bool(states[p].bitmask(), vocab)) if states[p] is not None else []
        if len(allowed) and rng.random() > p_bad:
            tokens[i] = rng.choice(allowed)
        else:
            tokens[i] = rng.integers(0, vocab)
        if rng.random() < p_pad:
            valid[i] = False
        states.append(states[p].try_advance(int(tokens[i])) if states[p] is not None else None)
    return parents, tokens, valid


def grammars(tok):
    """(compiled grammar, a prefix that leaves the text open) pairs."""
    yield xgr2.compile(EBNF["json"], tok), '[{"k": '
    yield xgr2.compile(xgr2.Grammar.from_json_schema(SCHEMA), tok), '{"name": "'
    yield xgr2.compile(EBNF["arith"], tok), "1 + ("
    yield xgr2.compile(EBNF["repeat"], tok), "a.b"


@pytest.mark.parametrize("tokenizer", ["llama3_tokenizer_info", "byte_fallback_tokenizer_info", "byte_tokenizer_info"])
def test_random_trees_match_path_oracle(tokenizer, request):
    tok = request.getfixturevalue(tokenizer)
    rng = np.random.default_rng(7)
    for compiled, prefix in grammars(tok):
        root = compiled.initial_state()
        roots = [root, None, root.advance_text(prefix)]  # rows differ; row 1 is padding
        n = 24
        trees = [random_tree(rng, r if r is not None else root, tok.vocab_size, n) for r in roots]
        parents, tokens, valid = (np.stack(a) for a in zip(*trees))
        masks = xgr2.tree_masks(roots, (parents, tokens, valid), num_threads=2)
        assert masks.bitmask.shape == (3, n, (tok.vocab_size + 31) // 32)
        assert (masks.admissible[[0, 2]].sum(axis=1) >= 5).all()  # the trees are not all dead
        check_against_oracle(roots, parents, tokens, valid, masks)
        assert not masks.truncated.any()


def test_chain_equals_per_position_masks(llama3_tokenizer_info, llama3_hf_tokenizer):
    tok = llama3_tokenizer_info
    compiled = xgr2.compile(EBNF["json"], tok)
    ids = llama3_hf_tokenizer.encode('{"key": [1, 2.5, "café"], "b": {"c": null}}', add_special_tokens=False)
    ids += tok.stop_token_ids[:1]
    state, per_position = compiled.initial_state(), []
    for t in ids:
        per_position.append(state.bitmask())
        state = state.advance(t)
    per_position.append(state.bitmask())
    n = len(ids) + 1
    parents = np.arange(-1, n - 1)[None]
    tokens = np.array([[0] + ids])
    masks = xgr2.tree_masks([compiled.initial_state()], (parents, tokens, np.ones((1, n), bool)))
    assert masks.admissible.all()
    assert (masks.bitmask[0] == np.stack(per_position)).all()
    assert masks.states[0][-1].num_tokens == len(ids)


def test_inadmissible_nodes_and_their_subtrees_are_zero(byte_tokenizer_info):
    compiled = xgr2.compile('root ::= "ab" [cd] | "b"', byte_tokenizer_info)
    s = compiled.initial_state()
    a, b, c, x, eos = (ord("a"), ord("b"), ord("c"), ord("x"), 256)
    #           0   1  2  3  4  5  6  7
    parents = [-1, 0, 0, 1, 3, 2, 1, 5]
    tokens = [x, a, x, b, c, a, b, eos]
    masks = xgr2.tree_masks([s], (np.array([parents]), np.array([tokens]), np.ones((1, 8), bool)))
    assert masks.admissible[0].tolist() == [True, True, False, True, True, False, True, False]
    assert not masks.bitmask[0, [2, 5, 7]].any()  # rejected token, and below it
    allowed = lambda i: np.flatnonzero(xgr2.bitmask_to_bool(masks.bitmask[0, i], 257)).tolist()  # noqa: E731
    assert allowed(0) == [a, b]  # the root's row is the state's own mask
    assert allowed(1) == [b] and allowed(3) == [c, ord("d")] and allowed(4) == [eos]
    # A stop token ends the state: its row is zero, children are inadmissible, never "allow all".
    masks = xgr2.tree_masks([s.advance(b)], (np.array([[-1, 0, 1]]), np.array([[0, eos, a]]), np.ones((1, 3), bool)))
    assert masks.admissible[0].tolist() == [True, True, False]
    assert masks.states[0][1].is_terminated and not masks.bitmask[0, 1:].any()


def test_padding_rows_and_nodes(byte_tokenizer_info):
    compiled = xgr2.compile("root ::= [a-z]+", byte_tokenizer_info)
    s = compiled.initial_state()
    parents = np.array([[-1, 0, 1, 0], [-1, 0, 1, -1], [-1, 0, 0, 0]])
    tokens = np.full((3, 4), ord("q"))
    tokens[1, 3] = 10**12  # padding may hold anything
    valid = np.array([[True, False, True, True], [True] * 4, [False] * 4])
    out = np.full((3, 4, 9), 7, np.int32)
    masks = xgr2.tree_masks([s, s, None], (parents, tokens, valid), out=out)
    assert masks.bitmask is out
    assert masks.admissible.tolist() == [[True, False, False, True], [True, True, True, False], [False] * 4]
    assert not out[0, 1:3].any() and not out[1, 3].any() and not out[2].any()
    check_against_oracle([s, s, None], parents, tokens, valid, masks)
    # Every row padding: the width comes from out.
    masks = xgr2.tree_masks([None], (parents[:1], tokens[:1], valid[:1]), out=out[:1])
    assert not masks.admissible.any() and not out[0].any()


def test_chain_of_10000_nodes(byte_tokenizer_info):
    compiled = xgr2.compile('root ::= "[" [a-z]* "]"', byte_tokenizer_info)
    n = 10_000
    text = b"[" + bytes(ord("a") + i % 26 for i in range(n - 3)) + b"]"
    tokens = np.array([[0] + list(text) + [256]])  # then the stop token
    parents = np.arange(-1, n)[None]
    masks = xgr2.tree_masks([compiled.initial_state()], (parents, tokens, np.ones((1, n + 1), bool)))
    assert masks.admissible.all()
    assert masks.states[0][n].is_terminated and masks.states[0][n - 1].can_terminate
    state = compiled.initial_state()
    for i, t in enumerate(tokens[0, 1:], 1):
        state = state.advance(int(t))
        if i in (1, 2, 5000, n - 2, n - 1, n):
            assert (masks.bitmask[0, i] == state.bitmask()).all()


def test_node_budget_is_deterministic(llama3_tokenizer_info):
    tok = llama3_tokenizer_info
    compiled = xgr2.compile(EBNF["json"], tok)
    rng = np.random.default_rng(3)
    root = compiled.initial_state()
    trees = [random_tree(rng, root, tok.vocab_size, 30, p_pad=0) for _ in range(2)]
    parents, tokens, valid = (np.stack(a) for a in zip(*trees))
    valid[1, 5:] = False  # row 1 has only 5 nodes: within the budget
    full = xgr2.tree_masks([root, root], (parents, tokens, valid))
    reachable = [
        [i for i in range(30) if valid[b, i] and (i == 0 or full.states[b][parents[b, i]] is not None)] for b in (0, 1)
    ]
    assert len(reachable[0]) > 12 and len(reachable[1]) <= 5
    for budget in (1, 4, 12):
        for threads in (1, 2):
            masks = xgr2.tree_masks([root, root], (parents, tokens, valid), max_nodes=budget, num_threads=threads)
            assert masks.truncated.tolist() == [len(r) > budget for r in reachable]
            # The first `budget` reachable nodes in node order are visited and keep their
            # results; the others have no state and a zero row.
            for b in (0, 1):
                visited = set(reachable[b][:budget])
                for i in range(30):
                    assert masks.visited[b, i] == (i in visited)
                    if i in visited:
                        assert masks.admissible[b, i] == full.admissible[b, i]
                        assert (masks.bitmask[b, i] == full.bitmask[b, i]).all()
                    else:
                        assert not masks.admissible[b, i] and masks.states[b][i] is None
                        assert not masks.bitmask[b, i].any()
    with pytest.raises(ValueError, match="max_nodes"):
        xgr2.tree_masks([root], (parents[:1], tokens[:1], valid[:1]), max_nodes=0)


def test_bad_input(byte_tokenizer_info):
    s = xgr2.compile("root ::= [a-z]+", byte_tokenizer_info).initial_state()
    parents, tokens, valid = np.array([[-1, 0]]), np.array([[0, 97]]), np.ones((1, 2), bool)
    with pytest.raises(TypeError, match="tree.parents"):
        xgr2.tree_masks([s], (parents.astype(float), tokens, valid))
    with pytest.raises(TypeError, match="tree.valid"):
        xgr2.tree_masks([s], (parents, tokens, valid.astype(int)))
    with pytest.raises(ValueError, match="tree.tokens"):
        xgr2.tree_masks([s], (parents, tokens[:, :1], valid))
    with pytest.raises(ValueError, match="tree.parents"):
        xgr2.tree_masks([s], (parents[0], tokens[0], valid[0]))
    with pytest.raises(TypeError, match="DraftTree"):
        xgr2.tree_masks([s], parents)
    with pytest.raises(TypeError, match="states\\[0\\]"):
        xgr2.tree_masks(["x"], (parents, tokens, valid))
    with pytest.raises(ValueError, match="2 states"):
        xgr2.tree_masks([s, s], (parents, tokens, valid))
    with pytest.raises(ValueError, match="precede"):
        xgr2.tree_masks([s], (np.array([[-1, 1]]), tokens, valid))
    with pytest.raises(ValueError, match="precede"):
        xgr2.tree_masks([s], (np.array([[-1, 2**33]]), tokens, valid))
    for bad in (-1, 257, 2**32 + 97):
        with pytest.raises(xgr2.InvalidTokenError, match=f"tree.tokens\\[0, 1\\] = {bad}"):
            xgr2.tree_masks([s], (parents, np.array([[0, bad]]), valid))
    with pytest.raises(ValueError, match="out="):
        xgr2.tree_masks([None], (parents, tokens, valid))
    with pytest.raises(ValueError, match="out must be"):
        xgr2.tree_masks([s], (parents, tokens, valid), out=np.zeros((1, 2, 8), np.int32))
    with pytest.raises(TypeError, match="out must be"):
        xgr2.tree_masks([s], (parents, tokens, valid), out=np.zeros((1, 2, 9), np.int64))
    other = xgr2.compile("root ::= [a-z]+", xgr2.TokenizerInfo([b"a"])).initial_state()
    with pytest.raises(ValueError, match="vocabulary size"):
        xgr2.tree_masks([s, other], (np.repeat(parents, 2, 0), np.repeat(tokens, 2, 0), np.ones((2, 2), bool)))
    # The engine checks again, so a direct call cannot crash either.
    from xgr2 import _core

    bitmask, adm = np.zeros((1, 2, 9), np.int32), np.zeros((1, 2), bool)
    with pytest.raises(xgr2.InvalidTokenError):
        _core.tree_masks([s], parents.astype(np.int32), np.array([[0, 999]], np.int32), valid, bitmask, adm, adm.copy(), -1, 0)
    with pytest.raises(ValueError, match="precede"):
        _core.tree_masks([s], np.array([[-1, 5]], np.int32), tokens.astype(np.int32), valid, bitmask, adm, adm.copy(), -1, 0)
    with pytest.raises(ValueError, match="words"):
        _core.tree_masks([s], parents.astype(np.int32), tokens.astype(np.int32), valid, bitmask[..., :3].copy(), adm, adm.copy(), -1, 0)
    with pytest.raises(ValueError, match="admissible"):
        _core.tree_masks([s], parents.astype(np.int32), tokens.astype(np.int32), valid, bitmask, adm[:, :1].copy(), adm, -1, 0)


def test_draft_tree_and_verify_tree_commit_by_picking_states(byte_tokenizer_info):
    """tree_masks feeds verify_tree; the accepted path is committed by picking its state."""
    jax = pytest.importorskip("jax")
    from xgr2.jax import DraftTree, verify_tree

    tok = byte_tokenizer_info
    compiled = xgr2.compile(xgr2.Grammar.from_json_schema(SCHEMA), tok)
    rng = np.random.default_rng(0)
    for trial in range(5):
        root = compiled.initial_state()
        for ch in '{"name": "':
            root = root.advance(ord(ch))
        parents, tokens, valid = random_tree(rng, root, tok.vocab_size, 16, p_pad=0)
        tree = DraftTree.from_parents(parents, tokens, valid)  # JAX arrays
        masks = xgr2.tree_masks([root], tree)
        logits = jax.random.normal(jax.random.key(trial), (1, 16, tok.vocab_size))
        result = verify_tree(jax.random.key(1), logits, masks.bitmask, tree)
        last, bonus = int(result.last_node[0]), int(result.bonus_token[0])
        committed = masks.states[0][last]
        # Oracle: greedy token-by-token decoding that follows the tree while it can.
        state, node, logits_np = root, 0, np.asarray(logits[0])
        for _ in range(16):
            allowed = xgr2.bitmask_to_bool(state.bitmask(), tok.vocab_size)
            best = int(np.argmax(np.where(allowed, logits_np[node], -np.inf)))
            children = [c for c in range(1, 16) if parents[c] == node and tokens[c] == best]
            if not children:
                break
            node, state = children[0], state.advance(best)
        assert node == last and len(committed) == len(state) and committed.num_bytes == state.num_bytes
        assert bonus == best and committed.accepts(bonus)


def test_doctest():
    import xgr2._tree_masks as module

    assert doctest.testmod(module).failed == 0

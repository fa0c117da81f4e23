"""ConstrainedDecoder with a fake jitted "model": outputs parse, finished rows stop, the
tree path commits exactly what token-by-token greedy decoding gives, nothing retraces."""

import os

os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")

import json
import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import xgr2
import xgr2.jax
from xgr2.jax import ConstrainedDecoder, DraftTree, verify_tree
from xgr2.jax import _sampling

jax.config.update("jax_numpy_dtype_promotion", "strict")
jax.config.update("jax_numpy_rank_promotion", "raise")

SCHEMA = {
    "type": "object",
    "properties": {"a": {"type": "integer", "minimum": 0, "maximum": 999}, "b": {"enum": ["x", "yz"]}},
    "required": ["a", "b"],
    "additionalProperties": False,
}
REGEX = r"[a-c]{1,4}(-[a-c]{1,4}){0,2}"
TRACES = {"model": 0}


def context_hash(h, tokens):
    """Rolling hash of each row's token sequence: the fake model's whole 'context'."""
    return (np.asarray(h, np.int64) * 1_000_003 + np.asarray(tokens, np.int64) + 1) % (2**31 - 1)


@jax.jit
def fake_model(key, h):
    """Logits [B, V] that depend only on each row's context hash (so on its prefix)."""
    TRACES["model"] += 1
    keys = jax.vmap(lambda x: jax.random.fold_in(key, x))(h.astype(jnp.uint32))
    return jax.vmap(lambda k: 3.0 * jax.random.normal(k, (257,)))(keys)


def decode(compiled, batch, *, max_tokens, temperature, seed=0, constrained=True):
    """Runs ConstrainedDecoder.generate against the fake model; returns the decoder."""
    key = jax.random.key(seed)
    dec = ConstrainedDecoder(compiled, batch, max_tokens=max_tokens, constrained=constrained)
    state = {"h": context_hash(np.arange(batch), 0)}  # rows start from different contexts

    def step(tokens):
        state["h"] = context_hash(state["h"], tokens)
        return fake_model(key, jnp.asarray(state["h"], jnp.int32))

    dec.generate(step, step(np.zeros(batch, np.int32)), jax.random.fold_in(key, 1), temperature=temperature)
    return dec


@pytest.fixture(scope="module")
def schema_grammar(byte_tokenizer_info):
    return xgr2.compile(xgr2.Grammar.from_json_schema(SCHEMA, any_whitespace=False), byte_tokenizer_info)


def text(ids):
    return bytes(ids).decode()


def test_constrained_output_parses(schema_grammar, byte_tokenizer_info):
    jsonschema = pytest.importorskip("jsonschema")
    dec = decode(schema_grammar, 8, max_tokens=200, temperature=1.0)
    assert dec.done and dec.finish_reasons == ["stop"] * 8
    outputs = [json.loads(text(ids)) for ids in dec.token_ids]
    for value in outputs:
        jsonschema.validate(value, SCHEMA)
    assert len({json.dumps(v) for v in outputs}) > 1  # rows differ

    regex = xgr2.compile(xgr2.Grammar.from_regex(REGEX), byte_tokenizer_info)
    dec = decode(regex, 8, max_tokens=100, temperature=2.0, seed=5)
    assert dec.finish_reasons == ["stop"] * 8
    assert all(re.fullmatch(REGEX, text(ids)) for ids in dec.token_ids)


def test_finished_rows_stop(schema_grammar):
    dec = ConstrainedDecoder(schema_grammar, 3, max_tokens=6)
    logits = jnp.zeros((3, 257))
    while not dec.done:
        dec.commit(xgr2.jax.greedy(logits, dec.next_bitmask()))
    assert dec.finish_reasons == ["length"] * 3  # greedy on zeros: '{"a":0,"b":"x"}' is longer than 6
    assert dec.token_ids == [list(b'{"a":-')] * 3 and dec.num_steps == 6  # -0 is 0
    # A finished row is fed the pad id and its ids never grow; a row at max_tokens ends.
    dec = ConstrainedDecoder(schema_grammar, 2, max_tokens=30)
    forced = [ord(c) for c in '{"a":7,"b":"x"}'] + [256]
    other = list(b'{"a":12,"b":"yz"')
    for t, u in zip(forced, other):
        feed = dec.commit(np.array([t, u]))
        if t == 256:
            assert dec.finish_reasons[0] == "stop" and feed[0] == dec.pad_token_id == 256
    assert dec.token_ids[0] == forced[:-1] and dec.states[0].is_terminated
    n = len(dec.token_ids[0])
    dec.commit(np.array([-5, ord("}")]))  # a finished row's token is ignored, even a bad one
    assert len(dec.token_ids[0]) == n and dec.active.tolist() == [False, True]
    assert (dec.next_bitmask()[0] == -1).all()  # its mask row allows everything


def test_unconstrained_rows_end_on_stop_tokens(schema_grammar):
    dec = ConstrainedDecoder(schema_grammar, 2, constrained=False, max_tokens=5)
    assert (dec.next_bitmask() == -1).all()
    dec.commit(np.array([ord("}"), 256]))  # not JSON, but nothing is checked
    assert dec.finish_reasons == [None, "stop"] and dec.token_ids == [[ord("}")], []]
    with pytest.raises(xgr2.InvalidTokenError):
        dec.commit(np.array([999, 0]))


def test_no_tokens_allowed_finishes_the_row():
    tok = xgr2.TokenizerInfo([b"a", b"b"])  # no stop token: after "a" nothing is allowed
    dec = ConstrainedDecoder(xgr2.compile('root ::= "a"', tok), 1)
    while not dec.done:
        dec.commit(xgr2.jax.greedy(jnp.zeros((1, 2)), dec.next_bitmask()))
    assert dec.finish_reasons == ["no_tokens"] and dec.token_ids == [[0]]


def test_bad_input(schema_grammar):
    dec = ConstrainedDecoder(schema_grammar, 2)
    with pytest.raises(ValueError, match="tokens must be"):
        dec.commit(np.array([1, 2, 3]))
    with pytest.raises(ValueError, match="tokens must be"):
        dec.commit(np.array([1.0, 2.0]))
    with pytest.raises(xgr2.TokenRejectedError, match="row 1"):
        dec.commit(np.array([ord("{"), ord("x")]))
    assert dec.token_ids == [[], []] and len(dec.states[0]) == 0  # nothing changed
    with pytest.raises(xgr2.InvalidTokenError):
        dec.commit(np.array([300, ord("{")]))
    with pytest.raises(TypeError, match="CompiledGrammar"):
        ConstrainedDecoder("root ::= 'a'", 1)
    with pytest.raises(ValueError, match="batch"):
        ConstrainedDecoder(schema_grammar, 0)
    with pytest.raises(TypeError, match="states\\[0\\]"):
        ConstrainedDecoder(schema_grammar, states=[None])


def test_double_buffered_bitmask(schema_grammar):
    dec = ConstrainedDecoder(schema_grammar, 1)
    first = dec.next_bitmask()
    saved = first.copy()
    dec.commit(np.array([ord("{")]))
    second = dec.next_bitmask()
    assert second is not first and (first == saved).all()  # the previous step's buffer is intact
    assert not (second == saved).all()


def test_no_retrace_across_steps(schema_grammar):
    decode(schema_grammar, 4, max_tokens=3, temperature=0.7)  # compile everything once
    model_traces, sample_cache = TRACES["model"], _sampling._sample._cache_size()
    dec = decode(schema_grammar, 4, max_tokens=40, temperature=0.7, seed=9)
    assert dec.num_steps > 10
    assert TRACES["model"] == model_traces and _sampling._sample._cache_size() == sample_cache


def greedy_reference(compiled, roots_h, steps, key):
    """Token-by-token masked greedy decoding with the fake model (the oracle)."""
    dec = ConstrainedDecoder(compiled, len(roots_h), max_tokens=steps)
    h = np.array(roots_h)
    while not dec.done:
        feed = dec.commit(xgr2.jax.greedy(fake_model(key, jnp.asarray(h, jnp.int32)), dec.next_bitmask()))
        h = context_hash(h, feed)
    return dec


def test_tree_path_commits_what_greedy_decoding_gives(schema_grammar):
    """Speculative loop: random drafts (often the greedy token), tree_masks, verify_tree,
    commit_tree. The committed tokens equal token-by-token greedy decoding."""
    key = jax.random.key(4)
    rng = np.random.default_rng(0)
    batch, n, max_tokens = 3, 7, 25
    roots_h = list(context_hash(np.arange(batch), 0))
    want = greedy_reference(schema_grammar, roots_h, max_tokens, key)

    dec = ConstrainedDecoder(schema_grammar, batch, max_tokens=max_tokens)
    ctx = [[int(h)] for h in roots_h]  # per row: hash after each committed token
    rounds = 0
    while not dec.done:
        # A random tree shape per round; node tokens: mostly the greedy choice, else any
        # allowed or disallowed byte.
        parents = np.array([-1] + [int(rng.integers(0, i)) for i in range(1, n)])
        tokens = np.zeros((batch, n), np.int64)
        node_h = np.zeros((batch, n), np.int64)
        for b in range(batch):
            node_h[b, 0] = ctx[b][-1]
            node_states = [dec.states[b]]
            for i in range(1, n):
                p = parents[i]
                row = np.asarray(fake_model(key, jnp.asarray([node_h[b, p]], jnp.int32)))[0]
                s = node_states[p]
                allowed = xgr2.bitmask_to_bool(s.bitmask(), 257) if s is not None else np.ones(257, bool)
                best = int(np.argmax(np.where(allowed, row, -np.inf)))
                tokens[b, i] = best if rng.random() < 0.7 else int(rng.integers(0, 257))
                node_h[b, i] = context_hash(node_h[b, p], tokens[b, i])
                node_states.append(s.try_advance(int(tokens[b, i])) if s is not None else None)
        tree = DraftTree.from_parents(np.broadcast_to(parents, (batch, n)), tokens)
        masks = dec.tree_masks(tree)
        logits = fake_model(key, jnp.asarray(node_h.reshape(-1), jnp.int32)).reshape(batch, n, 257)
        result = verify_tree(jax.random.key(rounds), logits, masks.bitmask, tree)
        emitted = dec.commit_tree(tree, masks, result)
        for b in range(batch):
            for t in emitted[b]:
                ctx[b].append(int(context_hash(ctx[b][-1], t)))
        rounds += 1
    assert dec.token_ids == want.token_ids and dec.finish_reasons == want.finish_reasons
    assert rounds < sum(len(ids) for ids in want.token_ids) / batch  # drafts were accepted
    for b in range(batch):
        assert len(dec.states[b]) == len(want.states[b]) and dec.states[b].num_bytes == want.states[b].num_bytes


def test_commit_tree_picks_states_and_respects_max_tokens(byte_tokenizer_info):
    compiled = xgr2.compile('root ::= "abcd"', byte_tokenizer_info)
    a, b, c, d = map(ord, "abcd")
    tree = DraftTree.from_parents(np.array([[-1, 0, 1, 2, 0]]), np.array([[0, a, b, c, b]]))
    logits = jnp.full((1, 5, 257), -9.0).at[0, 3, d].set(9.0)  # any argmax under the masks
    for limit, want in ((2, [a, b]), (3, [a, b, c]), (10, [a, b, c, d])):
        dec = ConstrainedDecoder(compiled, 1, max_tokens=limit)
        masks = dec.tree_masks(tree)
        emitted = dec.commit_tree(tree, masks, verify_tree(jax.random.key(0), logits, masks.bitmask, tree))
        assert emitted == [want] and dec.token_ids == [want]
        if limit < 4:
            assert dec.states[0] is masks.states[0][len(want)]  # picked, not re-advanced
            assert dec.finish_reasons == ["length"]
        else:
            assert dec.finish_reasons == [None] and len(dec.states[0]) == 4
    # A node left out by the budget: without pruning, commit_tree refuses it; pruned, it is never accepted.
    dec = ConstrainedDecoder(compiled, 1)
    masks = dec.tree_masks(tree, max_nodes=2)
    assert masks.truncated.tolist() == [True]
    greedy_all = jnp.zeros((1, 5, 257)).at[0, 0, a].set(9.0).at[0, 1, b].set(9.0)
    with pytest.raises(ValueError, match="no state"):
        dec.commit_tree(tree, masks, verify_tree(jax.random.key(0), greedy_all, masks.bitmask, tree))
    pruned = tree._replace(valid=tree.valid & masks.visited)
    emitted = dec.commit_tree(pruned, masks, verify_tree(jax.random.key(0), greedy_all, masks.bitmask, pruned))
    assert emitted == [[a, b]] and len(dec.states[0]) == 2


def test_doctest():
    import doctest

    import xgr2.jax._decoder as module

    assert doctest.testmod(module).failed == 0

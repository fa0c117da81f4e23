"""Speculative decoding: model-free drafting (xgr2.jax.TreeDrafter and its parts), the demo
model's tree pass and KV compaction, and greedy identity with plain constrained decoding."""

from __future__ import annotations

import random

import numpy as np
import pytest

import xgr2

jax = pytest.importorskip("jax")
jax.config.update("jax_numpy_dtype_promotion", "strict")
jax.config.update("jax_numpy_rank_promotion", "raise")

import xgr2.jax  # noqa: E402
from xgr2.jax import TreeDrafter, build_draft_tree, prompt_lookup  # noqa: E402
from xgr2.jax._drafting import admissible_prefix, text_lookup  # noqa: E402
from xgr2.demo import llama  # noqa: E402
from model_checks import load_smollm2  # noqa: E402

# A byte vocabulary: token i < 128 is chr(i); 128 = "<eos>".
VOCAB = [bytes([i]) for i in range(128)] + [b"<eos>"]
EOS = 128


def _encode(text: str) -> list[int]:
    return list(text.encode())


@pytest.fixture(scope="module")
def byte_info():
    return xgr2.TokenizerInfo(VOCAB, stop_token_ids=[EOS])


# ----------------------------------------------------------------- drafting


def _lookup_reference(context, max_ngram, min_ngram, max_branches, length):
    """Naive prompt lookup: every n, every earlier start, most recent first."""
    out = []
    for n in range(max_ngram, min_ngram - 1, -1):
        if len(context) <= n:
            continue
        suffix = context[-n:]
        for i in range(len(context) - n - 1, -1, -1):
            if context[i:i + n] == suffix:
                cont = context[i + n:i + n + length]
                if not any(p[:len(cont)] == cont for p in out):
                    out.append(cont)
                if len(out) >= max_branches:
                    return out
    return out


def test_prompt_lookup_matches_naive_search():
    rng = random.Random(0)
    for _ in range(300):
        context = [rng.randrange(4) for _ in range(rng.randrange(0, 30))]
        kw = dict(max_ngram=rng.randint(1, 4), min_ngram=1, max_branches=rng.randint(1, 4), length=rng.randint(1, 5))
        kw["min_ngram"] = rng.randint(1, kw["max_ngram"])
        assert prompt_lookup(context, **kw) == _lookup_reference(context, kw["max_ngram"], kw["min_ngram"],
                                                                 kw["max_branches"], kw["length"]), (context, kw)
    assert prompt_lookup([1, 2, 3, 9, 1, 2, 3], length=3) == [[9, 1, 2]]  # the 3-gram wins
    with pytest.raises(ValueError):
        prompt_lookup([1, 2], min_ngram=0)


def test_text_lookup_prefers_long_recent_matches():
    assert text_lookup('"a": 1, "b": 2, "a', length=4) == ['": 1']
    assert text_lookup("xy1 xy2 xy", length=1, max_branches=2) == ["2", "1"]  # most recent first
    assert text_lookup("abc", length=3) == []


def test_build_draft_tree_is_the_trie_of_the_paths():
    rng = random.Random(1)
    for _ in range(100):
        paths = [[rng.randrange(3) for _ in range(rng.randint(1, 4))] for _ in range(rng.randint(0, 5))]
        n = rng.randint(1, 12)
        tree = build_draft_tree([7], [paths], n)
        parents, tokens, valid = (np.asarray(a)[0] for a in tree)
        assert tokens[0] == 7 and valid[0] and parents[0] == -1
        spelled = {}  # node -> token path from the root
        for i in range(1, n):
            if valid[i]:
                assert 0 <= parents[i] < i and valid[parents[i]]
                spelled[i] = spelled.get(int(parents[i]), ()) + (int(tokens[i]),)
            else:
                assert parents[i] == -1
        assert len(set(spelled.values())) == len(spelled)  # a trie: no node twice
        # Every prefix of the paths is a node until the nodes run out, in path order.
        wanted = []
        for p in paths:
            for k in range(1, len(p) + 1):
                if tuple(p[:k]) not in wanted:
                    wanted.append(tuple(p[:k]))
        got = [spelled[i] for i in sorted(spelled)]
        assert set(got) <= set(wanted) and len(got) == min(len(wanted), n - 1)
        if len(got) == len(wanted):
            assert set(got) == set(wanted)


def test_drafter_paths_are_admissible_and_start_with_forced_text(byte_info):
    schema = {"type": "object", "properties": {"alpha_property": {"type": "string"},
                                                "beta": {"enum": ["long_enum_value", "other"]}},
              "required": ["alpha_property", "beta"]}
    compiled = xgr2.compile(xgr2.Grammar.from_json_schema(schema, any_whitespace=False), byte_info)
    prompt = _encode('Say {"alpha_property": "x", "beta": "other"} again: ')
    doc = '{"alpha_property":"hello","beta":"long_enum_value"}'
    drafter = TreeDrafter(_encode, byte_info.decoded_vocab, num_nodes=24, max_length=12)
    state, ids = compiled.initial_state(), []
    for ch in _encode(doc):
        paths = drafter.paths(state, prompt + ids)
        forced = state.jump_forward_text()
        if forced:
            assert paths[0] == _encode(forced)[:12]
        for path in paths:
            assert path == admissible_prefix(state, path) and path
        tree = drafter.draft([state], [prompt + ids], [ids[-1] if ids else 0])
        masks = xgr2.tree_masks([state], tree)
        assert (masks.admissible == np.asarray(tree.valid)).all()  # no node wasted on a forbidden token
        state = state.advance(ch)
        ids.append(ch)
    # After '{"alpha_property":"hello","beta":"l' the enum is forced to its end.
    state = compiled.initial_state().advance_text('{"alpha_property":"hello","beta":"l')
    assert drafter.paths(state, prompt)[0] == _encode('ong_enum_value"}')[:12]
    assert drafter.paths(None, prompt) == [] and drafter.paths(state.advance_text('ong_enum_value"}').advance(EOS),
                                                               prompt) == []
    with pytest.raises(ValueError):
        drafter.draft([state], [prompt, prompt], [0])


def test_text_forced_but_for_whitespace_and_the_models_layout(byte_info):
    """With JSON's free layout nothing is forced between values (whitespace may come), yet
    the next key is: the whitespace-free forced text spells it, with the offsets where
    whitespace could go; the drafter fills those with what the model wrote before."""
    schema = {"type": "object", "properties": {"alpha_property": {"type": "string"},
                                                "beta": {"enum": ["long_enum_value", "other"]},
                                                "n": {"type": "integer"}},
              "required": ["alpha_property", "beta", "n"]}
    compiled = xgr2.compile(xgr2.Grammar.from_json_schema(schema), byte_info)
    doc = '{ "alpha_property" :  "hello",\n "beta": "other", "n": 7 }'
    state, drafted = compiled.initial_state(), 0
    for i in range(len(doc) + 1):
        data, gaps = state._jump_forward_past_whitespace()
        assert gaps == sorted(set(gaps)) and all(0 <= g <= len(data) for g in gaps)
        # Up to the first place whitespace could go, it is the plain forced text.
        assert state.jump_forward_bytes() == (data[: gaps[0]] if gaps else data)
        for layout in (b"", b" ", b"\n\t"):  # the text is accepted with any whitespace at the gaps
            text = b"".join(data[a:b] + layout for a, b in zip([0] + gaps, gaps)) + data[gaps[-1] if gaps else 0:]
            assert state.try_advance_bytes(text) is not None, (doc[:i], data, gaps, layout)
        for g in gaps:  # whitespace may go at each gap
            assert state.advance_bytes(data[:g]).try_advance_bytes(b" ") is not None
        if data:  # and it is maximal: past it, more than one byte may come (or the document may end)
            assert state.advance_bytes(data)._jump_forward_past_whitespace()[0] == b""
            drafted += 1
        if i < len(doc):
            state = state.advance_text(doc[i])
    assert drafted > 10  # keys, colons and the enum's quote along the way
    state = compiled.initial_state().advance_text('{"alpha_property": "hello"')
    assert state.jump_forward_text() == ""
    assert state._jump_forward_past_whitespace() == (b',"beta":"', [0, 1, 7, 8])
    drafter = TreeDrafter(_encode, byte_info.decoded_vocab, num_nodes=24, max_length=16)
    prompt = _encode('Like {"x": "y", "z": 1}: {"alpha_property": "hello"')
    assert drafter.paths(state, prompt)[0] == _encode(', "beta": "')


def test_closings_end_the_free_stretch_and_go_on_with_forced_text(byte_info):
    """Inside free text (a string, a number) nothing is forced, but closing it is a likely
    draft: each closing is a closing character the grammar allows, then the text forced
    after it (laid out) or one more closing; every allowed closer followed by forced text
    has one, and the drafter's paths begin with them."""
    schema = {"type": "object", "properties": {"name": {"type": "string"}, "age": {"type": "integer"},
                                                "tags": {"type": "array", "items": {"type": "string"}}},
              "required": ["name", "age", "tags"]}
    compiled = xgr2.compile(xgr2.Grammar.from_json_schema(schema), byte_info)
    drafter = TreeDrafter(_encode, byte_info.decoded_vocab, num_nodes=24, max_length=24)
    doc = '{"name": "Al", "age": 30, "tags": ["x", "yz"]}'
    closers = b'",}])>;\''
    state, seen = compiled.initial_state(), set()
    for i in range(len(doc)):
        written = doc[:i].encode()
        if not state.jump_forward_text():
            closings = drafter.closings(state, written)
            for text in closings:
                assert text.encode()[0] in closers
                assert state.try_advance_bytes(text.encode()) is not None, (doc[:i], text)
            for c in closers:
                nxt = state.try_advance_bytes(bytes([c]))
                if nxt is not None and nxt._jump_forward_past_whitespace()[0]:
                    assert any(t.encode()[0] == c for t in closings), (doc[:i], chr(c), closings)
            if closings and not state._jump_forward_past_whitespace()[0]:
                assert drafter.paths(state, _encode(doc[:i]))[0] == _encode(closings[0])[:24]
            seen.update(closings)
        state = state.advance_text(doc[i])
    assert {'", "age":', ', "tags": [', '", "', '"]}'} <= seen, seen
    # Pretty-printed: the items of a list and its closing bracket are laid out as its opener.
    pretty = '{\n  "name": "Al",\n  "age": 30,\n  "tags": ["x", "yz'
    closings = drafter.closings(compiled.initial_state().advance_text(pretty), pretty.encode())
    assert closings[:2] == ['", "', '"]\n}'], closings
    pretty = '{\n  "name": "Al'
    assert drafter.closings(compiled.initial_state().advance_text(pretty), pretty.encode())[0] == '",\n  "age":'
    assert drafter.closings(compiled.initial_state().advance_text('{"name": "A,'), b'{"name": "A,') == \
        ['","age":']  # the comma inside the string ends nothing


# A vocabulary where forced text has many spellings: single characters and longer pieces
# (one spelled twice, to check that the lowest id is drafted).
PIECES = [bytes([i]) for i in range(32, 127)] + [
    b'"c', b"cu", b"cust", b"customer", b"_id", b"_n", b"num", b"number", b'":', b'":"', b"er", b"ber",
    b"mber", b"customer_number", b"cu", b"<eos>"]
PIECE_EOS = len(PIECES) - 1


@pytest.fixture(scope="module")
def piece_info():
    return xgr2.TokenizerInfo(PIECES, stop_token_ids=[PIECE_EOS])


def _spellings_by_brute_force(state, data, vocab, max_length):
    """Every token sequence (up to ``max_length``) spelling a prefix of ``data`` that the
    grammar admits token by token: each token of the whole vocabulary is tried."""
    lowest = {}
    for i, b in enumerate(vocab):
        if b:
            lowest.setdefault(b, i)
    out = set()

    def grow(path, st, offset):
        if len(path) >= max_length or st.is_terminated or offset >= len(data):
            return
        for t, b in enumerate(vocab):
            if b and lowest[b] == t and data.startswith(b, offset):
                nxt = st.try_advance(t)
                if nxt is not None:
                    out.add(tuple(path + [t]))
                    grow(path + [t], nxt, offset + len(b))

    grow([], state, 0)
    return out


def test_forced_tokenizations_are_every_spelling_best_first(piece_info):
    schema = {"type": "object", "properties": {"customer_number": {"type": "integer"}},
              "required": ["customer_number"]}
    compiled = xgr2.compile(xgr2.Grammar.from_json_schema(schema, any_whitespace=False), piece_info)
    drafter = TreeDrafter(lambda s: [PIECES.index(bytes([c])) for c in s.encode()], piece_info.decoded_vocab,
                          num_nodes=8, max_length=5)
    state = compiled.initial_state().advance_text("{")
    forced = state.jump_forward_text()
    assert forced == '"customer_number":'
    data = forced.encode()
    everything = _spellings_by_brute_force(state, data, PIECES, 5)
    assert len(everything) > 30
    full = drafter.forced_tokenizations(state, forced, 10_000)
    assert len(full) == len(set(map(tuple, full))) and set(map(tuple, full)) == everything
    drafted = {t for p in full for t in p}
    assert PIECES.index(b"cu") in drafted and PIECE_EOS - 1 not in drafted  # "cu" twice: the lowest id
    for budget in (1, 3, 7, 20):
        got = drafter.forced_tokenizations(state, forced, budget)
        assert len(got) == min(budget, len(everything))
        # Prefix-closed and grown parent first; weights never rise (best first).
        weights = []
        for i, path in enumerate(got):
            assert len(path) == 1 or path[:-1] in got[:i]
            weight, at, offset = 1.0, state, 0
            for token in path:
                siblings = [t for t, _ in drafter._spellings(at, data[offset:])]
                weight *= 0.5 ** (siblings.index(token) + 1)
                at, offset = at.advance(token), offset + len(PIECES[token])
            weights.append(weight)
        assert all(a >= b for a, b in zip(weights, weights[1:]))
        assert got == full[:budget]


def test_drafter_picks_the_smallest_tree_size_that_holds_the_draft(piece_info):
    schema = {"type": "object", "properties": {"customer_number": {"type": "integer"}},
              "required": ["customer_number"]}
    compiled = xgr2.compile(xgr2.Grammar.from_json_schema(schema, any_whitespace=False), piece_info)
    encode = lambda s: [PIECES.index(bytes([c])) for c in s.encode()]  # noqa: E731
    big = TreeDrafter(encode, piece_info.decoded_vocab, num_nodes=12)
    small = TreeDrafter(encode, piece_info.decoded_vocab, num_nodes=12, sizes=(1, 4, 8))
    assert small.sizes == (1, 4, 8, 12) and big.sizes == (12,)
    forced_state = compiled.initial_state().advance_text("{")
    free_state = compiled.initial_state().advance_text('{"customer_number":')  # digits: nothing forced
    for states in ([free_state], [forced_state], [free_state, forced_state]):
        contexts, roots = [[] for _ in states], [0] * len(states)
        full, tree = big.draft(states, contexts, roots), small.draft(states, contexts, roots)
        used = int(np.asarray(full.valid).sum(axis=1).max())
        size = tree.tokens.shape[1]
        assert size == min(n for n in small.sizes if n >= used)
        for a, b in zip(tree, full):  # the same tree, cut after its last node
            assert (np.asarray(a) == np.asarray(b)[:, :size]).all()
        assert not np.asarray(full.valid)[:, size:].any()
    assert small.draft([free_state], [[]], [0]).tokens.shape == (1, 1)  # nothing to draft: the root alone
    for bad in ({"sizes": (0,)}, {"sizes": (13,)}, {"forced_nodes": -1}):
        with pytest.raises(ValueError):
            TreeDrafter(encode, piece_info.decoded_vocab, num_nodes=12, **bad)


# ----------------------------------------------------------------- tree pass and KV compaction


@pytest.fixture(scope="module")
def tiny():
    cfg = llama.LlamaConfig(vocab_size=32, d_model=16, n_layers=2, n_heads=4, n_kv_heads=2, ffn_dim=24,
                            rope_base=10000.0, norm_eps=1e-5)
    return llama.Llama(cfg, llama.init_params(cfg, jax.random.key(0)))


def test_tree_step_logits_equal_full_passes_over_each_path(tiny):
    prompts = np.array([[1, 2, 3, 4], [5, 6, 7, 8]], np.int32)
    # Row 0 starts at position 4; row 1 at 3 (its prompt's last token not yet in the cache).
    pos = np.array([4, 3], np.int32)
    paths = [[[9, 10, 11], [9, 12], [13]], [[14], [15, 16]]]
    roots = [20, 8]
    tree = build_draft_tree(roots, paths, 8)
    _, cache = tiny.prefill(prompts, 16)
    logits, _ = tiny.tree_step(tree, pos, cache)
    parents, tokens, valid = (np.asarray(a) for a in tree)
    for b in range(2):
        for i in range(8):
            if not valid[b, i]:
                continue
            path, j = [], i
            while j >= 0:
                path.insert(0, int(tokens[b, j]))
                j = int(parents[b, j])
            seq = list(prompts[b, :pos[b]]) + path
            full = np.asarray(tiny.forward(np.asarray([seq], np.int32)))[0, -1]
            np.testing.assert_allclose(np.asarray(logits[b, i]), full, atol=1e-4, rtol=1e-4)


def test_compacted_cache_equals_recomputing_without_rejected_nodes(tiny):
    prompt = np.array([[1, 2, 3]], np.int32)
    tree = build_draft_tree([4], [[[5, 6, 7], [5, 8, 9]], ], 7)  # nodes: 4 | 5 | 6 | 7 | 8 | 9
    _, cache = tiny.prefill(prompt, 16)
    _, cache = tiny.tree_step(tree, np.array([3]), cache)
    # Accept root, 5, 8, 9 (nodes 0, 1, 4, 5): the branch 6, 7 is rejected.
    accepted = np.array([[0, 1, 4, 5, -1, -1, -1]], np.int32)
    cache = tiny.compact_cache(cache, np.array([3]), accepted)
    logits, cache = tiny.decode_step(np.array([10]), 7, cache)
    full = np.asarray(tiny.forward(np.array([[1, 2, 3, 4, 5, 8, 9, 10]], np.int32)))[0, -1]
    np.testing.assert_allclose(np.asarray(logits[0]), full, atol=1e-4, rtol=1e-4)
    # The compacted slots hold exactly what a plain pass over the accepted tokens writes.
    _, ref = tiny.prefill(np.array([[1, 2, 3, 4, 5, 8, 9, 10]], np.int32), 16)
    np.testing.assert_allclose(np.asarray(cache.k[:, :, :8]), np.asarray(ref.k[:, :, :8]), atol=1e-5)
    np.testing.assert_allclose(np.asarray(cache.v[:, :, :8]), np.asarray(ref.v[:, :, :8]), atol=1e-5)


# ----------------------------------------------------------------- the demo model


@pytest.fixture(scope="module")
def smollm2():
    return load_smollm2()


@pytest.mark.integration
def test_speculative_greedy_emits_exactly_the_plain_constrained_tokens(smollm2):
    from xgr2.demo.__main__ import DEFAULT_PROMPT, DEFAULT_SCHEMA, chat_prompt
    from xgr2.demo.generate import cache_length, generate
    from xgr2.demo.speculative import draft_sizes

    model, tokenizer, info = smollm2
    nodes, max_tokens = 6, 64
    prompt = chat_prompt(DEFAULT_PROMPT)
    max_len = cache_length(len(tokenizer.encode(prompt).ids), max_tokens + nodes)
    traces = llama.TRACES["tree_step"]  # other tests may have traced it for their own shapes
    for schema, budget in ((DEFAULT_SCHEMA, max_tokens), (DEFAULT_SCHEMA, 9)):
        compiled = xgr2.compile(xgr2.Grammar.from_json_schema(schema), info)
        _, plain = generate(model, tokenizer, compiled, prompt, max_tokens=budget, max_len=max_len)
        texts, spec = generate(model, tokenizer, compiled, prompt, max_tokens=budget, max_len=max_len,
                               speculative=nodes)
        assert spec.token_ids == plain.token_ids and spec.finished == plain.finished
        assert spec.tokens == plain.tokens and texts[0] == tokenizer.decode(plain.token_ids[0])
        assert spec.steps <= plain.steps and spec.row_steps == spec.steps
        # One compilation per tree size, never retraced.
        assert llama.TRACES["tree_step"] <= traces + len(draft_sizes(nodes))
    assert plain.finished == [False]  # the 9-token budget cut both runs at the same token


class _RecordingModel:
    """The model, keeping a copy of every numpy array handed to it, to check afterwards
    that the caller never changed one in place (the device may read it after the call
    returns: on CPU JAX may alias an aligned numpy buffer instead of copying it)."""

    def __init__(self, model):
        self._model, self.handed = model, []

    def __getattr__(self, name):
        attr = getattr(self._model, name)
        if name not in ("prefill", "decode_step", "tree_step", "compact_cache"):
            return attr

        def call(*args):
            for a in args:
                for x in (a if isinstance(a, tuple) else (a,)):
                    if isinstance(x, np.ndarray):
                        self.handed.append((x, x.copy()))
            return attr(*args)

        return call


@pytest.mark.integration
def test_the_speculative_loop_never_changes_an_array_it_handed_to_the_model(smollm2):
    # Seen in CI at stop 46: `positions += ...` right after dispatching compact_cache made
    # it read a torn position and move the wrong cache slot; the output degenerated.
    from xgr2.demo.__main__ import DEFAULT_PROMPT, DEFAULT_SCHEMA, chat_prompt
    from xgr2.demo.generate import generate

    model, tokenizer, info = smollm2
    recording = _RecordingModel(model)
    compiled = xgr2.compile(xgr2.Grammar.from_json_schema(DEFAULT_SCHEMA), info)
    generate(recording, tokenizer, compiled, chat_prompt(DEFAULT_PROMPT), max_tokens=24, speculative=6)
    assert recording.handed, "the loop handed the model no numpy array: the check would not see a change"
    for i, (array, at_call) in enumerate(recording.handed):
        assert np.array_equal(array, at_call), f"numpy input {i} ({array.shape}) was changed after the call"

"""Token masks are exact: the packed bitmask of a state allows token t exactly when
``state.try_advance(t)`` succeeds, checked id by id over whole real vocabularies.

States come from seeded random walks (random allowed tokens, mostly non-stop) and from
walks along real tokenized text, for the Llama-3 byte-level vocabulary and a
SentencePiece-style byte-fallback vocabulary with padding ids.
"""

import json
import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import xgr2
from grammars import ALPHABET, EBNF, JSON

# Exact with direct cold walks (the default) and with every node classified.
pytestmark = pytest.mark.usefixtures("cold_walk_mode")

TOKENIZERS = ["llama3", "byte_fallback"]
# (random walks, steps per walk) per tokenizer: the Llama-3 oracle costs ~0.1 s a state.
WALKS = {"llama3": (3, 15), "byte_fallback": (8, 20)}


@pytest.fixture
def tokenizer(request):
    return request.getfixturevalue(f"{request.param}_tokenizer_info")


def oracle_mask(state, vocab_size):
    """Brute force: token t is allowed iff advancing by t succeeds."""
    return np.fromiter((state.try_advance(t) is not None for t in range(vocab_size)), dtype=bool, count=vocab_size)


def check_state(state, tok, rng, complete_vocab=True):
    """Checks every mask invariant at ``state``; returns the bool mask.

    ``complete_vocab``: every byte is a token, so a live state always allows some token.
    """
    vocab_size = tok.vocab_size
    words = state.bitmask()
    assert words.dtype == np.int32 and words.shape == (xgr2.get_bitmask_shape(1, vocab_size)[1],)
    mask = xgr2.bitmask_to_bool(words, vocab_size)
    expected = oracle_mask(state, vocab_size)
    wrong = np.flatnonzero(mask != expected)
    assert wrong.size == 0, (
        f"mask differs from try_advance at {wrong.size} ids, e.g. "
        + ", ".join(f"{t} {tok.decoded_vocab[t] if t < tok.tokenizer_size else 'pad'!r}: mask={mask[t]}"
                    for t in wrong[:8])
    )
    # accepts() is the same predicate.
    sample = rng.sample(range(vocab_size), min(vocab_size, 2000))
    assert [state.accepts(t) for t in sample] == [bool(mask[t]) for t in sample]
    # Bits past vocab_size in the last word are 0.
    tail = np.unpackbits(words.view(np.uint8), bitorder="little")[vocab_size:]
    assert not tail.any()
    # Padding ids and special (non-stop) tokens are never allowed.
    assert not mask[tok.tokenizer_size:].any()
    stop = set(tok.stop_token_ids)
    special = [t for t in tok.special_token_ids if t not in stop]
    assert not mask[special].any()
    # Stop tokens: allowed exactly when the grammar can end here.
    assert all(mask[t] == state.can_terminate for t in stop)
    if state.is_terminated:
        assert not mask.any() and not state.can_terminate
    elif complete_vocab:
        # No dead ends: every byte is a token in both vocabularies, and the grammars
        # have no unproductive paths, so some token always continues.
        assert mask.any(), "a live state allows no token"
    # fill_bitmask writes exactly one row of a larger array.
    batch = np.array([[rng.randrange(-(2**31), 2**31) for _ in range(words.shape[0])] for _ in range(3)], dtype=np.int32)
    before = batch.copy()
    row = rng.randrange(3)
    state.fill_bitmask(batch, row)
    np.testing.assert_array_equal(batch[row], words)
    others = [r for r in range(3) if r != row]
    np.testing.assert_array_equal(batch[others], before[others])
    return mask


def check_along(state, ids, tok, rng, check_at, complete_vocab=True):
    """Advances ``state`` by ``ids``, running :func:`check_state` before the token at each
    position in ``check_at`` (``len(ids)``: after the last one); returns the final state."""
    for k, t in enumerate([*ids, None]):
        if k in check_at:
            check_state(state, tok, rng, complete_vocab=complete_vocab)
        if t is not None:
            state = state.advance(t)
    return state


def random_walk(compiled, tok, seed, steps):
    """Yields the states of a seeded random walk over allowed tokens.

    Stop tokens are picked rarely (5%), and half the steps prefer tokens of at most two
    bytes, so walks reach the grammar's structure rather than staying in one long string.
    """
    rng = random.Random(seed)
    stop = set(tok.stop_token_ids)
    state = compiled.initial_state()
    for _ in range(steps):
        yield state, rng
        if state.is_terminated:
            return
        allowed = np.flatnonzero(xgr2.bitmask_to_bool(state.bitmask(), tok.vocab_size)).tolist()
        if not allowed:
            return
        text = [t for t in allowed if t not in stop]
        stops = [t for t in allowed if t in stop]
        short = [t for t in text if len(tok.decoded_vocab[t]) <= 2]
        if stops and (not text or rng.random() < 0.05):
            pick = rng.choice(stops)
        else:
            pick = rng.choice(short if short and rng.random() < 0.5 else text)
        nxt = state.advance(pick)
        assert nxt.num_tokens == state.num_tokens + 1
        state = nxt
    yield state, rng


@pytest.mark.parametrize("grammar", sorted(EBNF))
@pytest.mark.parametrize("tokenizer", TOKENIZERS, indirect=True)
def test_mask_matches_try_advance_on_random_walks(tokenizer, grammar, request):
    walks, steps = WALKS[request.node.callspec.params["tokenizer"]]
    compiled = xgr2.compile(xgr2.Grammar.from_ebnf(EBNF[grammar]), tokenizer)
    for walk in range(walks):
        for state, rng in random_walk(compiled, tokenizer, seed=1000 * walk + len(grammar), steps=steps):
            check_state(state, tokenizer, rng)


@st.composite
def raw_vocabularies(draw, alphabet):
    """Small raw vocabularies over a grammar's alphabet: whole characters, partial UTF-8
    sequences, shared prefixes and duplicate spellings, plus special, stop and padding ids."""
    pieces = set()
    for c in alphabet:
        data = c.encode()
        pieces.update(data[:k] for k in range(1, len(data) + 1))
        pieces.update(data[k:] for k in range(len(data)))
    piece = st.sampled_from(sorted(pieces))
    words = st.lists(piece, min_size=1, max_size=4).map(b"".join)
    vocab = draw(st.lists(words, min_size=1, max_size=60))
    vocab += draw(st.permutations([c.encode() for c in alphabet]))  # whole characters, so walks go on
    vocab += [b"<s>", b"</s>"]
    n = len(vocab)
    special = draw(st.lists(st.integers(0, n - 1), max_size=3)) + [n - 2, n - 1]
    return xgr2.TokenizerInfo(vocab, vocab_size=n + draw(st.integers(0, 40)), stop_token_ids=[n - 1],
                              special_token_ids=special)


@pytest.mark.parametrize("grammar", sorted(EBNF))
@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_mask_matches_try_advance_on_random_vocabularies(grammar, data):
    """The mask's sorted-vocabulary trie walk (shared prefixes, skipped subtrees) is exact."""
    tok = data.draw(raw_vocabularies(ALPHABET[grammar]), label="tokenizer")
    compiled = xgr2.compile(EBNF[grammar], tok)
    seed = data.draw(st.integers(0, 2**32 - 1), label="seed")
    for state, rng in random_walk(compiled, tok, seed, steps=12):
        mask = check_state(state, tok, rng, complete_vocab=False)
        if not mask.any():
            break


@pytest.mark.parametrize("tokenizer", TOKENIZERS, indirect=True)
def test_terminated_state_allows_nothing(tokenizer):
    compiled = xgr2.compile('root ::= "1" | "12"', tokenizer)
    state = compiled.initial_state().advance_text("1")
    assert state.can_terminate
    done = state.advance(tokenizer.stop_token_ids[0])
    assert done.is_terminated and not done.can_terminate and len(done) == 1
    assert not xgr2.bitmask_to_bool(done.bitmask(), tokenizer.vocab_size).any()
    assert done.try_advance(tokenizer.stop_token_ids[0]) is None
    assert done.try_advance_bytes(b"2") is None
    with pytest.raises(xgr2.TokenRejectedError):
        done.advance(tokenizer.stop_token_ids[0])


@pytest.mark.parametrize("tokenizer", TOKENIZERS, indirect=True)
def test_out_of_range_token_ids_raise(tokenizer):
    state = xgr2.compile(EBNF["arith"], tokenizer).initial_state()
    for bad in (-1, tokenizer.vocab_size, tokenizer.vocab_size + 1000):
        with pytest.raises(xgr2.InvalidTokenError):
            state.try_advance(bad)
        with pytest.raises(xgr2.InvalidTokenError):
            state.accepts(bad)
        with pytest.raises(xgr2.InvalidTokenError):
            state.advance(bad)
    if tokenizer.vocab_size > tokenizer.tokenizer_size:  # the last padding id is in range: rejected, not invalid
        assert state.try_advance(tokenizer.vocab_size - 1) is None


def test_byte_fallback_fixture(byte_fallback_tokenizer_info, byte_fallback_hf_tokenizer):
    tok, hf = byte_fallback_tokenizer_info, byte_fallback_hf_tokenizer
    assert tok.vocab_type == "byte_fallback"
    assert tok.tokenizer_size == hf.get_vocab_size()
    assert tok.vocab_size == tok.tokenizer_size + 37  # conftest.BYTE_FALLBACK_PADDING
    assert tok.stop_token_ids == [hf.token_to_id("</s>")]
    assert sorted(tok.special_token_ids) == sorted(hf.token_to_id(t) for t in ("<unk>", "<s>", "</s>"))
    dv = tok.decoded_vocab
    assert len(dv) == tok.tokenizer_size
    assert dv[hf.token_to_id("<0x41>")] == b"A"
    assert dv[hf.token_to_id("\u2581the")] == b" the"
    # Every byte has its own piece, so any text is spellable.
    assert all(dv[hf.token_to_id(f"<0x{b:02X}>")] == bytes([b]) for b in range(256))


def test_llama3_fixture(llama3_tokenizer_info, llama3_hf_tokenizer):
    tok = llama3_tokenizer_info
    assert tok.vocab_type == "byte_level"
    assert tok.tokenizer_size == tok.vocab_size == 128256
    assert set(tok.stop_token_ids) >= {llama3_hf_tokenizer.convert_tokens_to_ids("<|end_of_text|>")}
    ids = llama3_hf_tokenizer.encode(" héllo\n\t{}", add_special_tokens=False)
    assert b"".join(tok.decoded_vocab[i] for i in ids) == " héllo\n\t{}".encode()


def test_bit_layout_is_lsb_first():
    """Token t is bit t % 32 of word t // 32; bits past vocab_size stay 0."""
    vocab = [b"x"] * 70
    for t in (0, 5, 31, 32, 33, 63, 64, 69):
        vocab[t] = b"a"
    tok = xgr2.TokenizerInfo(vocab, vocab_size=70)
    words = xgr2.compile('root ::= "a"', tok).initial_state().bitmask().view(np.uint32)
    expected = [0, 0, 0]
    for t in (0, 5, 31, 32, 33, 63, 64, 69):
        expected[t // 32] |= 1 << (t % 32)
    assert words.tolist() == expected


def test_empty_token_is_never_allowed():
    """Regression: a non-special token with no bytes was accepted by try_advance/accepts but
    never set in the bitmask. Now both agree that it is never allowed (it would not move the
    parser, and a sampler could pick it forever)."""
    tok = xgr2.TokenizerInfo([b"a", b"", b"</s>"], stop_token_ids=[2])
    state = xgr2.compile('root ::= "a"+', tok).initial_state()
    for s in (state, state.advance(0)):
        assert xgr2.bitmask_to_bool(s.bitmask(), 3).tolist() == oracle_mask(s, 3).tolist()
        assert s.try_advance(1) is None and not s.accepts(1)


JSON_DOCUMENT = {
    "name": "xgr2 \"test\" document",
    "version": 1.25e-3,
    "tags": ["grammar", "json", "naïve café", "日本語", "emoji 🙂", "tab\tand\nnewline", "slash \\ / back"],
    "nested": {"empty_obj": {}, "empty_arr": [], "deep": [[[-0.5, 0, 12345678901234567890]]]},
    "flags": [True, False, None],
    "unicode_escape": "\u0001\u001f",
}


def json_texts():
    yield json.dumps(JSON_DOCUMENT, indent=2, ensure_ascii=False)
    yield json.dumps(JSON_DOCUMENT, ensure_ascii=True, separators=(",", ":"))
    yield '[\r\n  1 ,\t2E+10 , -0.0e-0 , "\\ud83d\\ude42" ]'


@pytest.mark.parametrize("text", list(json_texts()), ids=["indented", "compact_ascii", "blanks_escapes"])
def test_llama3_walks_real_json_text(llama3_tokenizer_info, llama3_hf_tokenizer, text):
    tok = llama3_tokenizer_info
    ids = llama3_hf_tokenizer.encode(text, add_special_tokens=False)
    assert b"".join(tok.decoded_vocab[i] for i in ids) == text.encode()
    state = xgr2.compile(JSON, tok).initial_state()
    rng = random.Random(len(text))
    for k, t in enumerate(ids):
        mask = check_state(state, tok, rng) if k % 15 == 0 else xgr2.bitmask_to_bool(state.bitmask(), tok.vocab_size)
        assert mask[t], f"token {t} {tok.decoded_vocab[t]!r} at position {k} is masked out"
        state = state.advance(t)
    assert state.can_terminate and len(state) == len(ids)
    check_state(state, tok, rng)
    done = state.advance(tok.stop_token_ids[0])
    assert done.is_terminated


def test_llama3_rejects_invalid_json_continuation(llama3_tokenizer_info, llama3_hf_tokenizer):
    tok = llama3_tokenizer_info
    state = xgr2.compile(JSON, tok).initial_state().advance_text('{"a": [1, 2]')
    bad = llama3_hf_tokenizer.encode("]]", add_special_tokens=False)
    mask = xgr2.bitmask_to_bool(state.bitmask(), tok.vocab_size)
    assert all(not mask[t] and state.try_advance(t) is None for t in bad)
    with pytest.raises(xgr2.TokenRejectedError):
        state.advance(bad[0])
    assert state.advance_text("}").can_terminate


def test_byte_fallback_walks_real_text(byte_fallback_tokenizer_info, byte_fallback_hf_tokenizer):
    """SentencePiece spells the text with a leading space and byte pieces for unseen characters."""
    tok, hf = byte_fallback_tokenizer_info, byte_fallback_hf_tokenizer
    cases = [
        (EBNF["arith"], "1 + 2 * (3 - 4) / 5.25 - (67 * -8.9)"),
        # JSON after the space SentencePiece puts in front; "Ж", "✗" and "😀" are not in the
        # learned vocabulary, so they come out as <0xXX> pieces.
        (JSON.replace("root ::= value", 'root ::= " " value', 1),
         json.dumps({"naïve": "café ☕ Ж ✗ 😀", "n": [1, -2.5e3, True, None]}, ensure_ascii=False)),
    ]
    rng = random.Random(0)
    for grammar, text in cases:
        ids = hf.encode(text).ids
        assert b"".join(tok.decoded_vocab[i] for i in ids) == b" " + text.encode()
        if grammar is not EBNF["arith"]:
            assert any(hf.id_to_token(i).startswith("<0x") for i in ids), "expected byte pieces"
        state = xgr2.compile(grammar, tok).initial_state()
        for t in ids:
            mask = check_state(state, tok, rng)
            assert mask[t], f"token {t} {tok.decoded_vocab[t]!r} is masked out"
            state = state.advance(t)
        assert state.can_terminate
        check_state(state, tok, rng)

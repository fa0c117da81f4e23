"""Masks of random grammars over random multi-byte vocabularies, against a reference.

The oracle is ``reference_recognizer.Recognizer``, an Earley recognizer written for the
tests (not the engine's parser): token t is allowed at a state iff the bytes consumed so
far plus t's bytes are a viable prefix (some extension is in the language); a stop token
iff the bytes so far are a whole string. Vocabularies have tokens of 1 to 8 bytes that
start and end inside UTF-8 characters, or SentencePiece byte-fallback pieces (``<0xAB>``,
U+2581). Also: masks are identical with the cross-grammar cache on and off over 1,000
random grammars sharing one vocabulary, and concurrent batch calls from several Python
threads give the masks of serial calls. All seeded.
"""

from __future__ import annotations

import random
import threading

import numpy as np
import pytest

import xgr2
from reference_recognizer import CHARS, Recognizer, random_grammar, to_ebnf

# Exact with direct cold walks (the default) and with every node classified.
pytestmark = pytest.mark.usefixtures("cold_walk_mode")

STOP, SPECIAL = b"</s>", b"<s>"


def raw_vocabulary(rng: random.Random, size: int = 160) -> list[bytes]:
    """Token byte strings of 1 to 8 bytes cut from random UTF-8 text over CHARS (so many
    start or end inside a character), every single byte of that text, and a few bytes
    that are never valid UTF-8 here."""
    encoded = [c.encode() for c in CHARS]
    vocab = {bytes([b]) for e in encoded for b in e} | {b"\xff", b"\x80", b"\xc0"}
    while len(vocab) < size:
        text = b"".join(rng.choice(encoded) for _ in range(6))
        start = rng.randrange(len(text))
        vocab.add(text[start:start + rng.randint(1, 8)])
    out = sorted(vocab)
    rng.shuffle(out)
    return out


def byte_fallback_vocabulary(rng: random.Random, size: int = 120) -> tuple[list[str], list[bytes]]:
    """SentencePiece-style pieces (``<0xAB>`` for every byte, U+2581 for a space, whole
    characters otherwise) and the bytes each one stands for, decoded here by hand."""
    pieces = {f"<0x{b:02X}>" for b in range(256)}
    text_chars = [c for c in CHARS if c not in "\x00\n"]
    while len(pieces) < 256 + size:
        pieces.add("".join(rng.choice(text_chars) for _ in range(rng.randint(1, 4))).replace(" ", "\u2581"))
    pieces = sorted(pieces)
    rng.shuffle(pieces)

    def decode(piece: str) -> bytes:
        if len(piece) == 6 and piece.startswith("<0x") and piece.endswith(">"):
            return bytes([int(piece[3:5], 16)])
        return piece.replace("\u2581", " ").encode()

    return pieces, [decode(p) for p in pieces]


def tokenizer(rng: random.Random, kind: str) -> tuple[xgr2.TokenizerInfo, list[bytes]]:
    """A TokenizerInfo of ``kind`` ("raw" or "byte_fallback") with a special token, a stop
    token and padding ids, and the bytes of each real token (as the reference reads them)."""
    if kind == "raw":
        spelled = raw_vocabulary(rng)
        decoded = list(spelled)
    else:
        spelled, decoded = byte_fallback_vocabulary(rng)
    n = len(spelled)
    tok = xgr2.TokenizerInfo(spelled + [SPECIAL, STOP], vocab_size=n + 2 + rng.randint(0, 40), stop_token_ids=[n + 1],
                             special_token_ids=[n, n + 1], vocab_type=kind)
    decoded += [SPECIAL, STOP]
    assert tok.decoded_vocab == decoded, "the tokenizer decodes pieces differently from the reference"
    return tok, decoded


def reference_mask(ref: Recognizer, ref_state, tok: xgr2.TokenizerInfo, decoded: list[bytes]) -> np.ndarray:
    mask = np.zeros(tok.vocab_size, bool)
    stop, special = set(tok.stop_token_ids), set(tok.special_token_ids)
    for t, data in enumerate(decoded):
        if t in stop:
            mask[t] = ref.can_end(ref_state)
        elif t not in special and data:
            mask[t] = ref.feed(ref_state, data) is not None
    return mask


def compile_random(rng: random.Random, tok: xgr2.TokenizerInfo):
    """A random grammar's AST and its compiled form (None if the root derives no string)."""
    ast = random_grammar(rng)
    try:
        return ast, xgr2.compile(to_ebnf(ast), tok)
    except xgr2.GrammarError as e:
        assert "derive" in str(e) or "nothing" in str(e), f"valid EBNF rejected: {e}\n{to_ebnf(ast)}"
        assert Recognizer(ast).start() is None, f"the reference finds strings in\n{to_ebnf(ast)}"
        return ast, None


def walk_tokens(rng: random.Random, allowed: np.ndarray, stop: set[int]) -> int | None:
    ids = np.flatnonzero(allowed).tolist()
    text = [t for t in ids if t not in stop]
    if not ids:
        return None
    return rng.choice(text) if text and rng.random() < 0.9 else rng.choice(ids)


@pytest.mark.parametrize("kind", ["raw", "byte_fallback"])
def test_masks_match_reference_recognizer(kind):
    rng = random.Random(f"reference-{kind}")
    checked_grammars = checked_states = 0
    for _ in range(6):  # vocabularies
        tok, decoded = tokenizer(rng, kind)
        stop = set(tok.stop_token_ids)
        for _ in range(25):  # grammars per vocabulary
            ast, compiled = compile_random(rng, tok)
            if compiled is None:
                continue
            ref = Recognizer(ast)
            state, ref_state, consumed = compiled.initial_state(), ref.start(), b""
            checked_grammars += 1
            for _ in range(10):
                mask = xgr2.bitmask_to_bool(state.bitmask(), tok.vocab_size)
                expected = reference_mask(ref, ref_state, tok, decoded)
                wrong = np.flatnonzero(mask != expected)
                assert wrong.size == 0, (
                    f"grammar\n{to_ebnf(ast)}after {consumed!r}: the mask differs from the reference at "
                    + ", ".join(f"{decoded[t] if t < len(decoded) else 'pad'!r} (mask={mask[t]})" for t in wrong[:6]))
                assert state.can_terminate == ref.can_end(ref_state)
                checked_states += 1
                token = walk_tokens(rng, mask, stop)
                if token is None or token in stop:
                    break
                state, ref_state = state.advance(token), ref.feed(ref_state, decoded[token])
                consumed += decoded[token]
    assert checked_grammars >= 110 and checked_states >= 450, (checked_grammars, checked_states)


def test_cross_grammar_cache_on_and_off_give_identical_masks():
    """1,000 random grammars share one vocabulary (and so one cross-grammar cache); the
    same walks over a tokenizer whose cache is disabled (limit 0) see the same masks."""
    rng = random.Random("cross-grammar")
    vocab = raw_vocabulary(rng, size=200) + [SPECIAL, STOP]
    n = len(vocab)
    shared = xgr2.TokenizerInfo(vocab, vocab_size=n + 7, stop_token_ids=[n - 1], special_token_ids=[n - 2])
    # Equal vocabularies share one cache (per vocabulary, not per object): one more padding
    # id (same bitmask width, padding bits are 0) gives `alone` its own.
    alone = xgr2.TokenizerInfo(vocab, vocab_size=n + 8, stop_token_ids=[n - 1], special_token_ids=[n - 2])
    alone.set_cross_grammar_cache_limit(0)
    stop = set(shared.stop_token_ids)
    compiled_count = states = 0
    while compiled_count < 1000:
        ast = random_grammar(rng)
        text = to_ebnf(ast)
        try:
            grammar = xgr2.Grammar.from_ebnf(text)
        except xgr2.GrammarError:
            continue
        compiled_count += 1
        on, off = xgr2.compile(grammar, shared).initial_state(), xgr2.compile(grammar, alone).initial_state()
        for _ in range(6):
            words = on.bitmask()
            assert np.array_equal(words, off.bitmask()), f"cache on/off masks differ after {len(on)} tokens:\n{text}"
            states += 1
            token = walk_tokens(rng, xgr2.bitmask_to_bool(words, shared.vocab_size), stop)
            if token is None or token in stop:
                break
            on, off = on.advance(token), off.advance(token)
    assert states > 3000
    assert shared.cross_grammar_cache_info().hits > 0, "the shared cache was never used"
    assert alone.cross_grammar_cache_info().entries == 0, "the disabled cache kept entries"


def test_concurrent_batch_calls_match_serial_masks():
    """Several Python threads call batch_fill_bitmask at once on states of freshly compiled
    grammars (so node masks are computed concurrently, on first use); every thread gets
    the masks that serial fill_bitmask calls give on another compile of the same grammars."""
    rng = random.Random("threads")
    vocab = raw_vocabulary(rng, size=200) + [SPECIAL, STOP]
    n = len(vocab)

    def make_tok():
        return xgr2.TokenizerInfo(vocab, vocab_size=n, stop_token_ids=[n - 1], special_token_ids=[n - 2])

    serial_tok, fresh_tok = make_tok(), make_tok()
    grammars, paths = [], []
    while len(grammars) < 40:
        ast, compiled = compile_random(rng, serial_tok)
        if compiled is None:
            continue
        state, path = compiled.initial_state(), []
        for _ in range(rng.randint(0, 6)):
            token = walk_tokens(rng, xgr2.bitmask_to_bool(state.bitmask(), n), set(serial_tok.stop_token_ids))
            if token is None or token == n - 1:
                break
            state = state.advance(token)
            path.append(token)
        grammars.append(to_ebnf(ast))
        paths.append(path)

    def states_of(tok):
        out = []
        for text, path in zip(grammars, paths, strict=True):
            state = xgr2.compile(text, tok).initial_state()
            out.append(state)
            for t in path:
                state = state.advance(t)
                out.append(state)
        return out

    expected = np.stack([s.bitmask() for s in states_of(serial_tok)])
    fresh = states_of(fresh_tok)
    n_threads = 4
    outputs = [xgr2.allocate_token_bitmask(len(fresh), n) for _ in range(n_threads)]
    barrier, errors = threading.Barrier(n_threads), []

    def work(i):
        try:
            order = list(range(len(fresh)))
            random.Random(i).shuffle(order)  # threads reach the states in different orders
            barrier.wait()
            xgr2.batch_fill_bitmask([fresh[j] for j in order], outputs[i], order, num_threads=2)
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(n_threads)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    for out in outputs:
        np.testing.assert_array_equal(out, expected)

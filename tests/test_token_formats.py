"""Tokens matched by id: EBNF ``<[...]>`` / ``<[^...]>`` and the structural tags'
token-level formats (``token``, ``exclude_token``, ``any_tokens``, token ``begin`` /
``end`` of a ``tag``, ``token_triggered_tags``, ``token_dispatch``).

Oracles:
- random grammars mixing text and token sets, against ``reference_recognizer`` (an
  Earley recognizer written for the tests) extended with token terminals: a token is
  allowed when its bytes continue the text (text tokens only) or its id is expected
  there; the reference keeps both readings as a set of states;
- each format against the token sequences its definition accepts and rejects, worked
  out by hand here, with the mask checked against ``try_advance`` at every step;
- Llama-3's special tokens, matched by id and never by their text, with brute-force
  masks (``try_advance`` of every id) along the way.
"""

from __future__ import annotations

import random

import numpy as np
import pytest

import xgr2
from reference_recognizer import Recognizer, random_grammar, to_ebnf

CHARS = ["a", "b", "<", ">", "é", "日"]


def small_tokenizer(rng: random.Random) -> tuple[xgr2.TokenizerInfo, list[bytes], set[int]]:
    """Text tokens of 1-3 characters (one spelled twice), a token with a 0xFF byte, two
    special tokens, a stop token and padding; returns the tokenizer, each real token's
    bytes and the ids that are text."""
    vocab = {c.encode() for c in CHARS}
    while len(vocab) < 40:
        vocab.add("".join(rng.choice(CHARS) for _ in range(rng.randint(1, 3))).encode())
    tokens = sorted(vocab)
    rng.shuffle(tokens)
    tokens += [tokens[0], b"\xffa", b"<|x|>", b"<|y|>", b"</s>"]
    n = len(tokens)
    tok = xgr2.TokenizerInfo(tokens, vocab_size=n + 5, stop_token_ids=[n - 1], special_token_ids=[n - 3, n - 2],
                             vocab_type="raw")
    text = {i for i in range(n - 4)} | {n - 5}
    return tok, tokens, text


class Reference:
    """The reference's reading of a token sequence: the set of recognizer states of every
    way to read each token (as text, or by id)."""

    def __init__(self, ast: list, tokens: list[bytes], text: set[int], stop: int):
        self.rec, self.tokens, self.text, self.stop = Recognizer(ast), tokens, text, stop
        start = self.rec.start()
        self.states = frozenset([start]) if start is not None else frozenset()

    def after(self, states, t: int):
        out = set()
        for st in states:
            if t in self.text:
                out.add(self.rec.feed(st, self.tokens[t]))
            out.add(self.rec.step_token(st, t))
        out.discard(None)
        return frozenset(out)

    def can_end(self, states) -> bool:
        return any(self.rec.can_end(st) for st in states)

    def mask(self, states, vocab_size: int) -> np.ndarray:
        m = np.zeros(vocab_size, bool)
        for t in range(len(self.tokens)):
            m[t] = self.can_end(states) if t == self.stop else bool(self.after(states, t))
        return m


def engine_mask(state: xgr2.MatcherState, vocab_size: int) -> np.ndarray:
    return np.asarray(xgr2.bitmask_to_bool(state.bitmask(), vocab_size), bool)


@pytest.mark.parametrize("seed", range(200))
def test_random_token_grammars_match_the_reference(seed):
    rng = random.Random(seed)
    tok, tokens, text = small_tokenizer(rng)
    n = len(tokens)
    # Single characters (which text also spells: both readings), a duplicate, 0xFF, specials.
    chars = [i for i in range(n - 5) if len(tokens[i].decode()) == 1]
    ids = rng.sample(chars, 3) + [n - 5, n - 4, n - 3, n - 2, rng.randrange(n - 5)]
    ast = random_grammar(rng, CHARS, token_ids=ids)
    try:
        grammar = xgr2.Grammar.from_ebnf(to_ebnf(ast))
    except xgr2.GrammarError:  # no string at all: the reference agrees
        assert Recognizer(ast).start() is None
        return
    assert xgr2.Grammar.from_ebnf(str(grammar)) == grammar
    ref = Reference(ast, tokens, text, n - 1)
    state = xgr2.compile(grammar, tok).initial_state()
    states = ref.states
    for _ in range(10):
        expected = ref.mask(states, tok.vocab_size)
        got = engine_mask(state, tok.vocab_size)
        assert np.array_equal(got, expected), (to_ebnf(ast), np.flatnonzero(got ^ expected))
        assert state.can_terminate == ref.can_end(states)
        choices = [t for t in np.flatnonzero(expected) if t != n - 1]
        if not choices:
            break
        t = int(rng.choice(choices))
        state, states = state.advance(t), ref.after(states, t)


VOCAB = {1: "A", 2: "B", 3: "C", 7: "<go>", 8: "<go>", 9: "<end>", 11: "<|x|>", 12: "<|y|>"}
N = 16  # id 15 stops; 11 and 12 are special


def fixed_tokenizer() -> xgr2.TokenizerInfo:
    tokens = [VOCAB.get(i, f"t{i}").encode() for i in range(N)]
    return xgr2.TokenizerInfo(tokens, stop_token_ids=[15], special_token_ids=[11, 12], vocab_type="raw")


def accepts(compiled: xgr2.CompiledGrammar, ids: list[int]) -> bool:
    """Whether the whole sequence is a complete output, checking at every step that the
    mask allows exactly what try_advance accepts."""
    state = compiled.initial_state()
    for t in ids:
        mask = engine_mask(state, N)
        for u in range(N):
            if u != 15:
                assert mask[u] == (state.try_advance(u) is not None), (ids, u)
        state = state.try_advance(t)
        if state is None:
            return False
    return state.can_terminate


def const(text: str) -> dict:
    return {"type": "const_string", "value": text}


def token_tag(begin, text: str, end) -> dict:
    return {"type": "tag", "begin": {"type": "token", "token": begin}, "content": const(text),
            "end": {"type": "token", "token": end}}


def triggered(at_least_one: bool, stop_after_first: bool) -> dict:
    return {"type": "token_triggered_tags", "trigger_tokens": ["<|x|>", 12],
            "tags": [token_tag("<|x|>", "A", 9), token_tag(12, "B", 9)], "exclude_tokens": [3],
            "at_least_one": at_least_one, "stop_after_first": stop_after_first}


FORMATS = [
    ({"type": "token", "token": 7}, [[7]], [[8], [], [7, 7]]),
    # By text: the lowest id with that text (7, not 8); a special token's text finds it.
    ({"type": "token", "token": "<go>"}, [[7]], [[8]]),
    ({"type": "token", "token": "<|y|>"}, [[12]], [[11]]),
    ({"type": "exclude_token", "exclude_tokens": [2, "<end>"]}, [[1], [11], [0]], [[2], [9], [], [1, 1]]),
    ({"type": "any_tokens", "exclude_tokens": [3]}, [[], [1, 2, 11, 12, 8]], [[3], [1, 3]]),
    ({"type": "any_tokens"}, [[], [3, 3, 11]], []),
    ({"type": "any_tokens", "exclude_tokens": [3], "max_tokens": 2}, [[], [1], [1, 2]], [[1, 2, 1], [3]]),
    (token_tag(11, "AB", 12), [[11, 1, 2, 12]], [[11, 1, 2], [1, 2, 12], [12, 1, 2, 12], [11, 3, 12]]),
    # A text begin and a token end (a special token: never free text's).
    ({"type": "tag", "begin": "<go>", "content": {"type": "any_text"}, "end": {"type": "token", "token": 12}},
     [[7, 12], [8, 1, 2, 12]], [[7, 1], [7, 11, 12], [12]]),
    ({"type": "token_dispatch", "rules": [[7, const("A")], ["<|y|>", const("B")]], "loop": False,
      "exclude_tokens": [3]},
     [[], [1], [7, 1], [12, 2], [2, 11, 7, 1]], [[3], [7, 2], [7, 1, 7, 1], [7, 1, 1]]),
    ({"type": "token_dispatch", "rules": [[7, const("A")]], "loop": True},
     [[7, 1, 7, 1], [2, 7, 1, 2, 7, 1, 3]], [[7], [7, 2]]),
    (triggered(False, False), [[], [1], [11, 1, 9], [2, 11, 1, 9, 1, 12, 2, 9]], [[3], [11, 2, 9], [11, 1]]),
    (triggered(False, True), [[], [1, 1, 11, 1, 9]], [[11, 1, 9, 1], [11, 1, 9, 12, 2, 9]]),
    (triggered(True, False), [[11, 1, 9], [12, 2, 9, 1, 11, 1, 9]], [[], [1, 11, 1, 9]]),
    (triggered(True, True), [[11, 1, 9], [12, 2, 9]], [[], [1], [11, 1, 9, 1], [11, 1, 9, 11, 1, 9]]),
    ({"type": "tags_with_separator", "tags": [token_tag(11, "A", 9)], "separator": ",", "at_least_one": True},
     [[11, 1, 9]], [[], [11, 1, 9, 11, 1, 9]]),
    # A tag's end token is no free token inside it (as XGrammar): the first one ends it.
    ({"type": "tag", "begin": {"type": "token", "token": 11}, "content": {"type": "any_tokens"},
      "end": {"type": "token", "token": 12}},
     [[11, 12], [11, 1, 9, 12]], [[11, 1, 12, 2, 12], [11, 12, 12]]),
    ({"type": "tag", "begin": {"type": "token", "token": 11}, "content": {"type": "exclude_token"},
      "end": {"type": "token", "token": 12}},
     [[11, 1, 12]], [[11, 12, 12], [11, 12]]),
    ({"type": "tag", "begin": {"type": "token", "token": 11},
      "content": {"type": "token_triggered_tags", "trigger_tokens": [7], "tags": [token_tag(7, "A", 9)]},
      "end": {"type": "token", "token": 12}},
     [[11, 1, 12], [11, 7, 1, 9, 2, 12]], [[11, 1, 12, 2, 12]]),
    ({"type": "tag", "begin": {"type": "token", "token": 11},
      "content": {"type": "token_dispatch", "rules": [[7, const("A")]]}, "end": {"type": "token", "token": 12}},
     [[11, 2, 7, 1, 12]], [[11, 12, 7, 1, 12]]),
]


@pytest.mark.parametrize("fmt, accepted, rejected", FORMATS)
def test_token_formats_accept_exactly_their_sequences(fmt, accepted, rejected):
    tok = fixed_tokenizer()
    compiled = xgr2.compile(xgr2.Grammar.from_structural_tag({"type": "structural_tag", "format": fmt},
                                                             tokenizer_info=tok), tok)
    for ids in accepted:
        assert accepts(compiled, ids), ids
    for ids in rejected:
        assert not accepts(compiled, ids), ids


def test_a_text_token_named_by_id_continues_both_readings():
    # "<end>" is text the class accepts and the token the grammar ends with: after it
    # the parse may go on (as text) or end (by id).
    tok = fixed_tokenizer()
    compiled = xgr2.compile(xgr2.Grammar.from_ebnf('root ::= [<>a-z]* <[9]>'), tok)
    state = compiled.initial_state().advance(9)
    assert state.can_terminate
    assert state.accepts(9) and state.accepts(7)
    assert state.num_bytes == 5


def test_jump_forward_stops_at_a_token_and_text_never_spells_one():
    tok = fixed_tokenizer()
    compiled = xgr2.compile(xgr2.Grammar.from_ebnf('root ::= "ab" <[11]> "cd"'), tok)
    state = compiled.initial_state()
    assert state.jump_forward_bytes() == b"ab"
    state = state.advance_bytes(b"ab")
    assert state.jump_forward_bytes() == b""
    assert state.try_advance_bytes(b"\xff\x00\x00\x0b") is None
    assert state.try_advance(11).jump_forward_bytes() == b"cd"


def test_tree_masks_follow_tokens_by_id():
    tok = fixed_tokenizer()
    compiled = xgr2.compile(xgr2.Grammar.from_ebnf("root ::= (<[11]> [A-C]+ <[12]>)+"), tok)
    root = compiled.initial_state()
    parents, tokens = [-1, 0, 1, 2, 1, 0], [0, 11, 1, 12, 2, 1]
    tree = (np.array([parents], np.int32), np.array([tokens], np.int32), np.ones((1, 6), bool))
    out = xgr2.tree_masks([root], tree)
    expected_admissible = [True, True, True, True, True, False]
    assert list(out.admissible[0]) == expected_admissible
    state = root
    for node, token in [(1, 11), (2, 1), (3, 12)]:
        state = state.advance(token)
        assert np.array_equal(out.bitmask[0, node], state.bitmask())


def test_ebnf_token_sets_parse_print_and_fail_clearly():
    g = xgr2.Grammar.from_ebnf("root ::= <[ 3 , 1-2 ]> <[^]> <[^7, 9-10]>")
    assert str(g) == "root ::= <[1-3]> <[^]> <[^7, 9-10]>\n"
    # GBNF's negation spelling.
    assert str(xgr2.Grammar.from_ebnf("root ::= !<[7]> !<[^3]>")) == "root ::= <[^7]> <[3]>\n"
    with pytest.raises(xgr2.GrammarError, match="empty token set"):
        xgr2.Grammar.from_ebnf("root ::= !<[^]>")
    assert xgr2.Grammar.from_ebnf(str(g)) == g
    for text, column in [("root ::= <[]>", 10), ("root ::= <[5-3]>", 12), ("root ::= <[1 2]>", 14),
                         ("root ::= <[99999999]>", 12), ("root ::= <[1", 10), ("root ::= <[x]>", 12)]:
        with pytest.raises(xgr2.GrammarError, match=f"line 1, column {column}:"):
            xgr2.Grammar.from_ebnf(text)


def test_xgrammar_token_macros_are_token_sets():
    # XGrammar's Token(id, ...) / ExcludeToken(id, ...) spell <[ids]> / <[^ids]>.
    g = xgr2.Grammar.from_ebnf("root ::= Token(3, 1, 2) ExcludeToken(7, 9, 10)* Token(12)")
    assert g == xgr2.Grammar.from_ebnf("root ::= <[1-3]> <[^7, 9-10]>* <[12]>")
    tok = fixed_tokenizer()
    state = xgr2.compile(g, tok).initial_state()
    assert set(np.flatnonzero(engine_mask(state, N))) == {1, 2, 3}
    after = state.advance(2)
    assert after.accepts(12) and after.accepts(0) and not after.accepts(7) and not after.accepts(9)
    with pytest.raises(xgr2.GrammarError, match="line 1, column 16:"):
        xgr2.Grammar.from_ebnf("root ::= Token(99999999)")


def test_compile_rejects_ids_outside_the_tokenizer_and_stop_tokens():
    tok = fixed_tokenizer()
    with pytest.raises(xgr2.GrammarError, match="outside the tokenizer"):
        xgr2.compile(xgr2.Grammar.from_ebnf("root ::= <[16]>"), tok)
    with pytest.raises(xgr2.GrammarError, match="stop token"):
        xgr2.compile(xgr2.Grammar.from_ebnf("root ::= <[14-15]>"), tok)
    # All but some: stop tokens and padding are never matched by id.
    state = xgr2.compile(xgr2.Grammar.from_ebnf('root ::= <[^1]> "A"'), tok).initial_state()
    allowed = np.flatnonzero(engine_mask(state, N))
    assert 15 not in allowed and 1 not in allowed and {0, 11, 12, 14} <= set(allowed)


def test_llama3_special_tokens_match_by_id_not_by_text(llama3_tokenizer_info, llama3_hf_tokenizer):
    tok, hf = llama3_tokenizer_info, llama3_hf_tokenizer
    begin, end = hf.convert_tokens_to_ids("<|start_header_id|>"), hf.convert_tokens_to_ids("<|end_header_id|>")
    spec = {"type": "structural_tag", "format": {
        "type": "token_triggered_tags", "trigger_tokens": ["<|start_header_id|>"],
        "tags": [{"type": "tag", "begin": {"type": "token", "token": "<|start_header_id|>"},
                  "content": {"type": "json_schema", "json_schema": {"type": "object", "properties": {
                      "n": {"type": "integer"}}, "required": ["n"], "additionalProperties": False}},
                  "end": {"type": "token", "token": "<|end_header_id|>"}}]}}
    compiled = xgr2.compile(xgr2.Grammar.from_structural_tag(spec, tokenizer_info=tok), tok)
    ids = hf.encode("Hi <|start", add_special_tokens=False) + hf.encode("_header_id|> there", add_special_tokens=False)
    assert begin not in ids and "<|start_header_id|>" in hf.decode(ids)  # the text, in ordinary tokens
    free = compiled.initial_state()
    for t in ids:
        free = free.advance(t)
    assert free.can_terminate  # that text was free text: no tag started
    call = [begin] + hf.encode('{"n": 42}', add_special_tokens=False) + [end]
    states = [free]
    for t in call:
        states.append(states[-1].advance(t))
    assert states[-1].can_terminate and not states[-2].can_terminate
    for state in states[:3] + states[-2:]:
        mask = engine_mask(state, tok.vocab_size)
        brute = np.array([state.try_advance(t) is not None for t in range(tok.vocab_size)])
        brute[tok.stop_token_ids] = state.can_terminate
        assert np.array_equal(mask, brute)
    assert engine_mask(states[-2], tok.vocab_size)[end]
    assert engine_mask(states[0], tok.vocab_size)[begin] and not engine_mask(states[1], tok.vocab_size)[end]

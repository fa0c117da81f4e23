"""XGrammar's `TokenTagDispatch((id, rule), ..., loop_after_dispatch=..., excludes=(...))`
EBNF macro: free tokens (any but the triggers and the excluded ones) until a trigger token,
which goes on with its rule; then free tokens again, or (without looping) the end.

Oracle: every token sequence up to length 4 over a small vocabulary is accepted iff
Python's `re` matches its spelling (one letter per token id) against the documented
language, written here as a regular expression. Malformed calls: tests/test_ebnf_dialect.py.
"""

from __future__ import annotations

import itertools
import re

import pytest

import xgr2

# Ids 0-6 are special tokens (never text); 7 is the text "x"; 8 is the stop token.
TOK = xgr2.TokenizerInfo([f"<t{i}>".encode() for i in range(7)] + [b"x", b"<eos>"], stop_token_ids=[8],
                         special_token_ids=list(range(7)))
LETTERS = "abcdefgx"  # the letter of each id 0-7 in the oracle's spelling

CASES = [
    # (grammar, the language over letters)
    ("root ::= TokenTagDispatch((3, body))\nbody ::= Token(4)", r"(?:[abcefgx]|de)*"),
    ("root ::= TokenTagDispatch((3, body), excludes=(5, 6))\nbody ::= Token(4) Token(4)?",
     r"(?:[abcex]|dee?)*"),
    ("root ::= TokenTagDispatch((3, body), (1, other), loop_after_dispatch=false)\n"
     "body ::= Token(4)\nother ::= \"x\"", r"[acefgx]*(?:de|bx)?"),
    ("root ::= Token(2) TokenTagDispatch((3, body), excludes=5) Token(6)\nbody ::= Token(4)",
     r"c(?:[abcegx]|de)*g"),
    ("root ::= TokenTagDispatch(excludes=(0, 1))", r"[c-gx]*"),
]


def accepts(start: xgr2.MatcherState, ids: tuple[int, ...]) -> bool:
    state = start
    for t in ids:
        state = state.try_advance(t)
        if state is None:
            return False
    return state.can_terminate


@pytest.mark.parametrize("grammar,language", CASES)
def test_the_language_of_every_short_sequence(grammar, language):
    start = xgr2.compile(xgr2.Grammar.from_ebnf(grammar), TOK).initial_state()
    for n in range(5):
        for ids in itertools.product(range(8), repeat=n):
            expected = re.fullmatch(language, "".join(LETTERS[i] for i in ids)) is not None
            assert accepts(start, ids) == expected, (grammar, ids)


def test_it_prints_back_to_the_same_grammar():
    g = xgr2.Grammar.from_ebnf(CASES[2][0])
    assert str(xgr2.Grammar.from_ebnf(str(g))) == str(g)


@pytest.mark.parametrize("grammar,language", CASES)
def test_masks_equal_brute_force(grammar, language):
    """The bitmask at states along a few sequences: exactly the ids try_advance takes."""
    start = xgr2.compile(xgr2.Grammar.from_ebnf(grammar), TOK).initial_state()
    for ids in [(), (2,), (3,), (3, 4), (0, 3, 4, 4), (1,), (2, 5)]:
        state = start
        for t in ids:
            state = state.try_advance(t) if state is not None else None
        if state is None:
            continue
        allowed = set(xgr2.bitmask_to_bool(state.bitmask(), TOK.vocab_size).nonzero()[0])
        assert allowed == {t for t in range(TOK.vocab_size) if state.try_advance(t) is not None}, (grammar, ids)

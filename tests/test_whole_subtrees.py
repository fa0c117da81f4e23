"""Walks take a trie subtree whole where the parse loops on every byte below it.

A trie node whose subtree holds only bytes of classes (TrieByteClass: digits, lowercase,
uppercase, each punctuation byte, ...) on which the parse state steps back to itself
has every token below it allowed, so the walks take the subtree's tokens at once. These
grammars loop on a whole class, on part of one (hex digits, `[a-y]`), in bounded runs
(a new state per byte) and through UTF-8 text; each mask must equal the brute-force one
(`try_advance` per token id), in both cold-walk modes and when served from the
cross-grammar cache.
"""

import re

import numpy as np
import pytest

import xgr2

pytestmark = pytest.mark.usefixtures("cold_walk_mode")

CASES = [
    ('root ::= [0-9]+ ("," [0-9]+)*', ["", "1", "12", "123,", "123,45"]),
    ('root ::= "0x" [0-9a-f]+ " "?', ["0x", "0x1", "0xab"]),
    ('root ::= [a-zA-Z_] [a-zA-Z0-9_]* ("(" ")")?', ["", "a", "ab_C", "x9"]),
    ('root ::= [a-y]+ "z" [0-9]?', ["", "a", "abc", "abcz"]),
    ('root ::= [0-9]{1,4} "." [0-9]{0,2}', ["", "1", "12", "123", "1234", "12.", "12.3"]),
    ('root ::= "\\"" [^"\\\\]* "\\""', ["\"", "\"ab", "\"é", "\"日本"]),
    ('root ::= ([a-z] | " ")* "!"', ["", "ab", "ab c"]),
]


def brute_force(state, vocab_size):
    return np.fromiter((state.try_advance(t) is not None for t in range(vocab_size)), dtype=bool, count=vocab_size)


@pytest.mark.parametrize("ebnf,prefixes", CASES, ids=[c[0] for c in CASES])
def test_masks_equal_brute_force_where_the_parse_loops(llama3_tokenizer_info, ebnf, prefixes):
    tok = llama3_tokenizer_info
    grammar = xgr2.Grammar.from_ebnf(ebnf)
    for compile_round in range(2):  # the second compile finds the first one's masks in the pool
        compiled = xgr2.Compiler(tok, cache_limit_bytes=0).compile(grammar)
        for prefix in prefixes:
            state = compiled.initial_state().advance_bytes(prefix.encode())
            mask = xgr2.bitmask_to_bool(state.bitmask(), tok.vocab_size)
            expected = brute_force(state, tok.vocab_size)
            wrong = np.flatnonzero(mask != expected)
            assert wrong.size == 0, (compile_round, prefix, [tok.decoded_vocab[t] for t in wrong[:8]])
            assert expected.any()


def test_a_number_state_allows_every_digit_token(llama3_tokenizer_info):
    """The whole digit subtrees (Llama-3 spells numbers in runs of 1-3 digits)."""
    tok = llama3_tokenizer_info
    compiled = xgr2.compile(xgr2.Grammar.from_ebnf('root ::= [0-9]+ ";"'), tok)
    mask = xgr2.bitmask_to_bool(compiled.initial_state().advance_bytes(b"7").bitmask(), tok.vocab_size)
    vocab = tok.decoded_vocab
    digits = [t for t in range(tok.tokenizer_size) if vocab[t] and vocab[t].isdigit() and vocab[t].isascii()]
    assert len(digits) > 1000
    assert mask[digits].all()
    allowed = np.flatnonzero(mask)
    assert all(re.fullmatch(rb"[0-9]*;?", vocab[t]) for t in allowed)

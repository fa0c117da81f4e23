"""Repetition compression: large `{m,n}` bounds compile to O(log n) rules with the same
language (oracle: the count of repetitions, and Python's `re`) and exact token masks."""

import random
import re

import pytest

import xgr2
from parsing import accepts

BYTES = xgr2.TokenizerInfo([bytes([i]) for i in range(256)])


@pytest.mark.parametrize("lo,hi", [(0, 33), (0, 64), (0, 100), (5, 1000), (1000, 1003), (257, None), (40, 40),
                                   (0, 100000), (33, 5000)])
def test_counts_near_the_bounds(lo, hi):
    bound = "" if hi is None else str(hi)
    g = xgr2.Grammar.from_ebnf(f'root ::= "ab"{{{lo},{bound}}} "c"' if hi != lo else f'root ::= "ab"{{{lo}}} "c"')
    start = xgr2.compile(g, BYTES).initial_state()
    top = lo + 50 if hi is None else hi
    counts = {0, 1, lo - 1, lo, lo + 1, top - 1, top, top + 1} | {random.Random(lo).randint(0, top + 2) for _ in range(5)}
    for n in sorted(c for c in counts if 0 <= c <= 6000):
        expected = n >= lo and (hi is None or n <= hi)
        assert accepts(start, "ab" * n + "c") == expected, n
    assert not accepts(start, "ab" * lo + "a")  # a broken repetition stays rejected


def test_nested_and_optional_repetitions_match_python_re():
    g = xgr2.Grammar.from_ebnf('root ::= ("x" "y"?){40,70}')
    start = xgr2.compile(g, BYTES).initial_state()
    rng = random.Random(0)
    for _ in range(200):
        s = "".join(rng.choice(["x", "xy", "y"]) for _ in range(rng.randint(30, 80)))
        assert accepts(start, s) == (re.fullmatch(r"(?:xy?){40,70}", s) is not None), s


def test_huge_optional_repetition_compiles_quickly_and_stays_exact():
    g = xgr2.Grammar.from_ebnf('root ::= ("a"?){10000} "b"')
    start = xgr2.compile(g, BYTES).initial_state()
    assert accepts(start, "a" * 10000 + "b") and accepts(start, "b")
    assert not accepts(start, "a" * 10001 + "b")
    assert len(str(g).splitlines()) < 40  # O(log n) rules, not 10,000 copies


def test_printed_compressed_grammar_parses_back_to_the_same_text():
    g = xgr2.Grammar.from_ebnf('root ::= [a-z]{3,5000} ("," [0-9]{0,99})*')
    assert str(xgr2.Grammar.from_ebnf(str(g))) == str(g)


def test_masks_inside_a_long_repetition_match_brute_force(llama3_tokenizer_info, llama3_hf_tokenizer):
    from test_mask_oracle import check_along

    g = xgr2.Grammar.from_ebnf('root ::= "[" [a-z ]{100,130} "]"')
    state = xgr2.compile(g, llama3_tokenizer_info).initial_state()
    rng = random.Random(1)
    text = "[" + " ".join("word" for _ in range(24)) + "ab]"  # 100 + 17 characters
    ids = llama3_hf_tokenizer.encode(text, add_special_tokens=False)
    check_at = (0, len(ids) // 2, len(ids) - 3, len(ids) - 1)
    state = check_along(state, ids, llama3_tokenizer_info, rng, check_at, complete_vocab=False)
    assert state.can_terminate

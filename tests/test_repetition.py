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


def test_a_repetition_around_a_compressed_one_matches_python_re():
    # The inner count is compressed first (new rules), then the outer one asks whether its
    # child, which now calls those rules, derives "": read from the new rules' bodies.
    start = xgr2.compile(xgr2.Grammar.from_ebnf('root ::= ("ab"{40} "c"{0,40}){40}'), BYTES).initial_state()
    rng = random.Random(1)
    for _ in range(60):
        s = "".join("ab" * rng.choice([39, 40, 40, 41]) + "c" * rng.choice([0, 3, 40, 41])
                    for _ in range(rng.choice([39, 40, 40, 41])))
        assert accepts(start, s) == (re.fullmatch(r"(?:(?:ab){40}c{0,40}){40}", s) is not None), s[:80]


@pytest.mark.parametrize("inner, outer", [((1, None), (200, 1000)), ((1, None), (2, 40)), ((1, None), (0, 50)),
                                          ((2, 3), (40, 40)), ((2, 3), (0, 40)), ((5, 5), (0, 40)), ((0, 7), (0, 40)),
                                          ((0, None), (33, None)), ((3, None), (0, 35)), ((0, 1), (35, 50)),
                                          ((4, 5), (3, 34)), ((0, 0), (0, None)), ((1, None), (0, 0)),
                                          ((0, 0), (40, 50)), ((3, 3), (0, None)), ((5, 5), (40, 40))])
def test_repetitions_of_repetitions_accept_exactly_their_counts(inner, outer):
    # (a{i,j}){m,n} b accepts a^k b for k in the union of [r*i, r*j] over r in [m, n]; merged
    # into one repetition where those leave no gap (grammar/repetition.cc). Python's re
    # backtracks exponentially on these, so the oracle is the arithmetic.
    (i, j), (m, n) = inner, outer
    bound = lambda lo, hi: f"{{{lo},{'' if hi is None else hi}}}"  # noqa: E731
    start = xgr2.compile(xgr2.Grammar.from_regex(f"(a{bound(i, j)}){bound(m, n)}b"), BYTES).initial_state()
    for k in range(0, 260):
        rounds = range(m, (n if n is not None else max(m, k) + 1) + 1)
        expected = any(r * i <= k and (j is None or k <= r * j) and (r > 0 or k == 0) for r in rounds)
        assert accepts(start, "a" * k + "b") == expected, k


def test_a_run_split_into_rounds_keeps_a_small_parser_state():
    # `(\d+){200,1000}`: every digit may end a round; merged into `\d{200,}`, the state of a
    # long run stays the size of the first (it grew with the run, and each step with it).
    start = xgr2.compile(xgr2.Grammar.from_regex(r"(\d+){200,1000}"), BYTES).initial_state()
    short = start.advance_bytes(b"7" * 300)
    long = short.advance_bytes(b"7" * 2000)
    assert long.can_terminate and not start.advance_bytes(b"7" * 199).can_terminate
    assert long.memory_bytes <= short.memory_bytes


def test_nested_bounds_past_the_repetition_limit_are_an_error_not_a_slow_parse():
    # Merged, (a{2,4}){250000001} would repeat `a` up to 1,000,000,004 times, past the limit
    # of one bound; unmerged its rounds stay ambiguous and a jump-forward over 64 KiB ran
    # for minutes. Just under the limit it merges and stays fast.
    with pytest.raises(xgr2.GrammarError, match="1000000004 times"):
        xgr2.Grammar.from_ebnf('root ::= ("a"{2,4}){250000001}')
    with pytest.raises(xgr2.GrammarError, match="limit"):
        xgr2.Grammar.from_regex("((ab){1000}){1000001}")
    start = xgr2.compile(xgr2.Grammar.from_ebnf('root ::= ("a"{2,4}){250000000}'), BYTES).initial_state()
    assert start.jump_forward_bytes() == b"a" * 65536  # forced, cut at the documented 64 KiB
    # Empty strings around the inner repetition do not hide it (unmerged, a jump-forward
    # over this took 10 s at 2,000 rounds).
    with pytest.raises(xgr2.GrammarError, match="limit"):
        xgr2.Grammar.from_ebnf('root ::= ("a"{2,4} ""){250000001}')
    g = xgr2.Grammar.from_ebnf('root ::= ("" "a"{2,4} ""){2000}')
    assert xgr2.compile(g, BYTES).initial_state().jump_forward_bytes() == b"a" * 4000
    assert accepts(xgr2.compile(g, BYTES).initial_state(), "a" * 8000)


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


@pytest.mark.parametrize("ebnf,pattern", [
    ('root ::= "a"{2,}*{0} "b"', "b"),
    ('root ::= (("a"{2,})*){1} "b"', "(aa+)*b"),
    ('root ::= ("a"{3}){2}{0,1} "b"', "(a{6})?b"),
])
def test_nested_repetitions_print_as_they_read_back(ebnf, pattern, byte_tokenizer_info):
    """Merged as far down the nest as a second reading would merge them (a hypothesis
    case: `"a"{2,}*{0}` printed `("a"{2,}){0}`, which read back as `"a"{0}`)."""
    printed = str(xgr2.Grammar.from_ebnf(ebnf))
    assert str(xgr2.Grammar.from_ebnf(printed)) == printed
    compiled = xgr2.compile(xgr2.Grammar.from_ebnf(printed), byte_tokenizer_info)
    for n in range(9):
        text = "a" * n + "b"
        state = compiled.initial_state().try_advance_bytes(text.encode())
        assert (state is not None and state.can_terminate) == bool(re.fullmatch(pattern, text)), text

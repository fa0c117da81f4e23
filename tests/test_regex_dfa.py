"""The regular-language operations of csrc/frontends/regex_dfa.h (complement, intersection,
difference, length ranges) against Python's `re`.

Languages are JSON Schema `pattern` searches (a string is in A iff ``re.search(A, s)``).
Oracles: membership computed with `re` on random patterns and random strings over a
small alphabet (where the interesting cases are dense), checked both on the automaton
itself and on the grammar it is emitted as (fed byte by byte), so a wrong product, a
wrong complement or a wrong emission each fail.
"""

from __future__ import annotations

import re

import pytest
from hypothesis import HealthCheck, given, reject, settings
from hypothesis import strategies as st

import xgr2
from parsing import accepts
from test_regex import _end_of_string

BYTES = xgr2.TokenizerInfo([bytes([i]) for i in range(256)] + [b"<eos>"], stop_token_ids=[256])
CHARS = "ab\né"
OPS = ["a", "not_a", "a_and_b", "a_minus_b"]


def member(op: str, a: str, b: str, lo: int, hi: int, s: str) -> bool:
    """The oracle: membership of ``s`` in op(A, B) restricted to lengths lo..hi."""
    def search(p: str) -> bool:
        return re.search(_end_of_string(p), s, re.ASCII) is not None

    inside = {"a": lambda: search(a), "not_a": lambda: not search(a),
              "a_and_b": lambda: search(a) and search(b), "a_minus_b": lambda: search(a) and not search(b)}[op]()
    return inside and lo <= len(s) and (hi < 0 or len(s) <= hi)


def atoms():
    return st.sampled_from(["a", "b", "é", ".", "[ab]", "[^a]", "\\n", "\\w", "\\W", "(?:ab|b)", "[a-é]"])


@st.composite
def patterns(draw) -> str:
    """Small regexes over the test alphabet: sequences of quantified atoms, alternation, anchors."""
    def seq() -> str:
        out = ""
        for _ in range(draw(st.integers(1, 4))):
            out += draw(atoms()) + draw(st.sampled_from(["", "", "*", "+", "?", "{2}", "{0,2}", "{1,}"]))
        return out

    body = "|".join(seq() for _ in range(draw(st.integers(1, 2))))
    if "|" in body:
        body = f"(?:{body})"
    return draw(st.sampled_from(["", "^"])) + body + draw(st.sampled_from(["", "$"]))


def grammar(a: str, b: str, op: str, lo: int, hi: int) -> xgr2.MatcherState:
    return xgr2.compile(xgr2.Grammar(xgr2._core.GrammarIR._regex_set(a, b, op, lo, hi)), BYTES).initial_state()


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(a=patterns(), b=patterns(), op=st.sampled_from(OPS), lo=st.integers(0, 3), hi=st.sampled_from([-1, 2, 4, 6]),
       texts=st.lists(st.text(CHARS, max_size=7), min_size=20, max_size=40))
def test_operations_agree_with_python_re(a, b, op, lo, hi, texts):
    texts += ["", "a", "ab", "ba", "é\n", "aab"]
    got = xgr2._core.GrammarIR._regex_set_accepts(a, b, op, lo, hi, texts)
    want = [member(op, a, b, lo, hi, s) for s in texts]
    assert got == want, [(s, g) for s, g, w in zip(texts, got, want) if g != w]
    try:
        start = grammar(a, b, op, lo, hi)
    except xgr2.GrammarError as e:  # an empty language (`not a*`): no text may be in it
        assert "no finite string" in str(e) and not any(want)
        return
    for s, w in zip(texts, want):
        assert accepts(start, s) == w, s


def test_complement_covers_every_character_outside_the_pattern():
    # The complement's alphabet is all of Unicode but the surrogates: 4-byte characters
    # and control characters are in it, and a text containing the pattern never is.
    start = grammar("x", "", "not_a", 0, -1)
    for s in ["", "\U0010FFFF", "\x00\x7f", "日本", "y" * 50]:
        assert accepts(start, s)
    for s in ["x", "ax", "\U0001F600x\U0001F600"]:
        assert not accepts(start, s)


def test_empty_result_matches_nothing():
    # "a" and not "a": empty; the grammar front end reports an empty language.
    assert xgr2._core.GrammarIR._regex_set_accepts("a", "a", "a_minus_b", 0, -1, ["a", "", "ba"]) == [False] * 3
    with pytest.raises(xgr2.GrammarError):
        grammar("a", "a", "a_minus_b", 0, -1)


def test_state_limit_is_an_error_not_a_hang():
    # (a|b)*a(a|b){20}: the DFA needs 2^21 states; the limit stops it quickly.
    with pytest.raises(xgr2.GrammarError, match="too large"):
        xgr2._core.GrammarIR._regex_set_accepts("(a|b)*a(a|b){20}$", "", "not_a", 0, -1, [""])
    with pytest.raises(xgr2.GrammarError, match="too large"):
        xgr2._core.GrammarIR._regex_set_accepts("a", "", "a", 0, 10**6, [""])


@pytest.mark.parametrize("schema,pointer", [
    ({"type": "string", "pattern": "^a+$", "maxLength": 20000}, "/pattern"),
    ({"type": "string", "not": {"pattern": "a[ab]{20}$"}}, "/not/pattern"),
])
def test_schema_automaton_limits_are_schema_errors(schema, pointer):
    with pytest.raises(xgr2.SchemaError, match="too large") as info:
        xgr2.Grammar.from_json_schema(schema)
    assert info.value.pointer == pointer
    with pytest.warns(xgr2.SchemaWarning):
        xgr2.Grammar.from_json_schema(schema, unsupported="warn")


@settings(max_examples=100, deadline=None, suppress_health_check=list(HealthCheck))
@given(ahead=st.lists(patterns(), min_size=1, max_size=2), body=patterns(),
       texts=st.lists(st.text(CHARS, max_size=7), min_size=20, max_size=40))
def test_leading_negative_lookaheads_agree_with_python_re(ahead, body, texts):
    # `^(?!X)Y`, the form schemas use to exclude a prefix: the automaton path takes it
    # (the regex parser refuses lookaround), as a search like any pattern.
    pattern = "^" + "".join(f"(?!{x})" for x in ahead) + body.removeprefix("^")
    texts += ["", "a", "ab", "ba", "é\n", "aab"]
    got = xgr2._core.GrammarIR._regex_set_accepts(pattern, "", "a", 0, -1, texts)
    want = [re.search(_end_of_string(pattern), s, re.ASCII) is not None for s in texts]
    assert got == want, [(s, g) for s, g, w in zip(texts, got, want) if g != w]


@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(a=patterns(), b=patterns(), op=st.sampled_from(OPS), lo=st.integers(0, 40), span=st.integers(30, 300),
       data=st.data())
def test_long_length_ranges_agree_with_python_re(a, b, op, lo, span, data):
    # Length bounds past the copy limit: a chain of hundreds of states (and its product
    # with a pattern), minimized in one pass when acyclic and emitted as repetitions.
    hi = lo + span
    texts = data.draw(st.lists(st.text(CHARS, max_size=8), min_size=5, max_size=10))
    for n in sorted({0, 1, lo - 1, lo, lo + 1, hi - 1, hi, hi + 1}):
        if n >= 0:
            texts += [data.draw(st.text(CHARS, min_size=n, max_size=n)), "a" * n, "ba" * (n // 2) + "b" * (n % 2)]
    try:
        got = xgr2._core.GrammarIR._regex_set_accepts(a, b, op, lo, hi, texts)
    except xgr2.GrammarError as e:
        # The documented state limit (docs/limits.md): a length range times a pattern
        # such as `.*b[^a]{2}[a-é]{2}` can pass 10,000 states; refused, never hung.
        assert "too large" in str(e), e
        reject()
    want = [member(op, a, b, lo, hi, s) for s in texts]
    assert got == want, [(s, g) for s, g, w in zip(texts, got, want) if g != w]
    try:
        start = grammar(a, b, op, lo, hi)
    except xgr2.GrammarError as e:
        assert "no finite string" in str(e) and not any(want)
        return
    for s, w in zip(texts, want):
        assert accepts(start, s) == w, (len(s), s)


def test_length_bound_beside_a_pattern_stays_small():
    # maxLength 1024 beside a pattern is a chain of 1,025 automaton states; as one rule
    # per state it was a 1.8 MB grammar (mergify's schema). The chain is a repetition.
    schema = {"type": "string", "pattern": "^[A-Za-z0-9_-]+$", "minLength": 2, "maxLength": 1024}
    g = xgr2.Grammar.from_json_schema(schema, any_whitespace=False)
    assert len(str(g)) < 5000
    start = xgr2.compile(g, BYTES).initial_state()
    for n, ok in [(1, False), (2, True), (3, True), (1023, True), (1024, True), (1025, False)]:
        assert accepts(start, '"' + "a" * n + '"') == ok, n
    assert not accepts(start, '"a b"')


@pytest.mark.parametrize("pattern", [
    "^(?:a{0,49}|a{50}b)$",     # a run of accepting states that ends in a non-accepting one
    "^(?:a{0,49}|a{50}b+)$",    # ... which loops
    "^(?:a{45}|a{45}b{40})$",   # a non-accepting run, an accepting end, another run
    "^(?:(?:ab){40}|b)$",       # runs broken by alternating characters: no repetition
])
def test_runs_of_states_agree_with_python_re(pattern):
    texts = [p * n + q for n in (0, 1, 44, 45, 46, 49, 50, 51, 80) for p in ("a", "ab") for q in ("", "b", "bb", "b" * 40)]
    want = [re.search(pattern, s) is not None for s in texts]
    start = grammar(pattern, "", "a", 0, -1)
    for s, w in zip(texts, want):
        assert accepts(start, s) == w, (len(s), s)

"""The demo's regex -> EBNF converter (`python -m xgr2.demo --regex`), with Python's `re` as the
oracle: a string is accepted by the compiled grammar iff ``re.fullmatch`` accepts it."""

from __future__ import annotations

import doctest
import random
import re

import numpy as np
import pytest

import xgr2
from xgr2.demo import regex_to_ebnf as module
from xgr2.demo.regex_to_ebnf import regex_to_ebnf

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

PATTERNS = [
    r"[a-z]+",
    r"\d{3}-\d{4}",
    r"(ab|cd)*e?",
    r"a{2,4}b{,2}c{3,}",
    r"[^abc\n]x.",
    r"(?a)\w+@\w+\.(com|org)",
    r"\w+ \W?",
    r"[\d\s]+|[^\W\d_]{1,3}",
    r"^\+?[0-9]{1,3}(-[0-9]{2,4}){1,3}$",
    r"colou?r|colour?s",
    r"a*?b+?c??",
    r"(?:x|y|)z(?P<n>q)?",
    r"\\\"\[\]\-\^\.\*\+\?\(\)\{\}\|\$",
    r"[\]\-^\\]+[-a]",
    r"日本+é?[α-ω]*",
    r"(?s).{0,3}x",
    r".{0,3}x",
    r"\D\S\W",
    r"[\x00-\x1f\x7f]*[^\x00-\x7f]",
    r"\A(a|b(c|d(e|f)))\Z",
    r"((a|)b)*",
    r"",
    r"(?x) a b+ \# [ ] # a comment",
]


@pytest.fixture(scope="module")
def compiled():
    """Compiled grammars of :data:`PATTERNS` over a one-byte-per-token vocabulary."""
    tok = xgr2.TokenizerInfo([bytes([b]) for b in range(256)] + [b"<eos>"], stop_token_ids=[256])
    cache = {}

    def get(pattern: str):
        if pattern not in cache:
            cache[pattern] = xgr2.compile(regex_to_ebnf(pattern), tok)
        return cache[pattern]

    return get


def _accepts(grammar, text: str) -> bool:
    state = grammar.initial_state().try_advance_bytes(text.encode("utf-8"))
    return state is not None and state.can_terminate


def _mutations(text: str, rng: random.Random, alphabet: str) -> list[str]:
    """Near misses: ``text`` with one character deleted, inserted, replaced or duplicated."""
    out = []
    for _ in range(6):
        i = rng.randrange(len(text) + 1)
        c = rng.choice(alphabet)
        out += [text[:i] + c + text[i:], text[:i] + c + text[i + 1:], text[:i] + text[i + 1:],
                text[:i] + text[i:i + 2] + text[i:]]
    return out


# Characters the mutations draw from: ASCII, controls, digits of other scripts, Unicode
# letters and spaces, so that categories and negated classes are probed at their edges.
ALPHABET = "abcdefxyzqnrACZ_019-+.*\\\"[]^$(){}|@ \t\n\x00\x1f\x7f\x85\xa0é日本αω٣\u2028\U0001F642"


@pytest.mark.parametrize("pattern", PATTERNS)
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_accepts_iff_fullmatch(compiled, pattern, data):
    """Strings of the pattern (hypothesis's ``from_regex``) are accepted; their near misses
    and random strings are accepted exactly when ``re.fullmatch`` accepts them."""
    grammar = compiled(pattern)
    text = data.draw(st.from_regex(pattern, fullmatch=True).filter(lambda s: not re.search("[\ud800-\udfff]", s)))
    assert re.fullmatch(pattern, text)
    assert _accepts(grammar, text), (pattern, text)
    rng = random.Random(data.draw(st.integers(0, 2**32)))
    noise = data.draw(st.text(st.sampled_from(ALPHABET), max_size=8))
    for s in _mutations(text, rng, ALPHABET) + [noise]:
        assert _accepts(grammar, s) == (re.fullmatch(pattern, s) is not None), (pattern, s)


def _random_document(grammar, rng: random.Random, stop: int = 256, budget: int = 40) -> str | None:
    """A random string of the grammar: random allowed bytes, stopping when allowed (more
    eagerly past ``budget`` bytes); ``None`` if it ran too long."""
    state, out = grammar.initial_state(), bytearray()
    while not state.is_terminated:
        if len(out) > 10 * budget:
            return None
        allowed = np.flatnonzero(xgr2.bitmask_to_bool(state.bitmask(), grammar.vocab_size)).tolist()
        assert allowed, bytes(out)
        token = stop if stop in allowed and rng.random() < (0.9 if len(out) > budget else 0.2) else \
            rng.choice([t for t in allowed if t != stop] or allowed)
        state = state.advance(token)
        if token != stop:
            out.append(token)
    return out.decode("utf-8")


@pytest.mark.parametrize("pattern", PATTERNS)
def test_grammar_strings_fullmatch(compiled, pattern):
    """Random strings generated from the grammar are matched by the regex."""
    grammar, rng = compiled(pattern), random.Random(0)
    texts = [t for t in (_random_document(grammar, rng) for _ in range(30)) if t is not None]
    assert len(texts) > 20
    for text in texts:
        assert re.fullmatch(pattern, text), (pattern, text)


def test_unicode_and_ascii_categories_follow_re(compiled):
    assert _accepts(compiled(r"\d{3}-\d{4}"), "٣٤٥-12३4") and re.fullmatch(r"\d{3}-\d{4}", "٣٤٥-12३4")
    assert not _accepts(compiled(r"(?a)\w+@\w+\.(com|org)"), "é@x.com")
    assert _accepts(compiled(r"\w+ \W?"), "naïve_日本 ")


def test_flags_argument():
    tok = xgr2.TokenizerInfo([bytes([b]) for b in range(256)] + [b"<eos>"], stop_token_ids=[256])
    dotall = xgr2.compile(regex_to_ebnf("a.b", re.DOTALL), tok)
    assert _accepts(dotall, "a\nb") and not _accepts(xgr2.compile(regex_to_ebnf("a.b"), tok), "a\nb")
    assert regex_to_ebnf("a b  # comment", re.VERBOSE) == 'root ::= "ab"'


def test_output_is_readable():
    assert regex_to_ebnf(r"(ab)*c|d+") == 'root ::= ("ab"* "c" | "d"+)'
    assert regex_to_ebnf(r"(a*b){2}") == 'root ::= ("a"* "b"){2}'
    assert regex_to_ebnf(r"[^a]\.") == 'root ::= [^a] "."'
    assert regex_to_ebnf(r"(?a)[\w-]") == r"root ::= [\-0-9A-Z_a-z]"
    assert regex_to_ebnf("") == 'root ::= ""'


@pytest.mark.parametrize("pattern, construct", [
    (r"(a)\1", "backreferences"),
    (r"(?P<x>a)(?P=x)", "backreferences"),
    (r"(a)?(?(1)b|c)", "conditional"),
    (r"a(?=b)", "lookahead"),
    (r"(?<!a)b", "negative lookahead and lookbehind"),
    (r"\bword", "word boundaries"),
    (r"a\B", "word boundaries"),
    (r"(?i)abc", "case-insensitive"),
    (r"a(?i:b)", "case-insensitive"),
    (r"a^b", "anchor"),
    (r"a$b", "anchor"),
    (r"(^a)*", "anchor"),
    (r"(?>ab)", "atomic groups"),
    (r"a*+", "possessive"),
    (r"[^\s\S]", "matches no character"),
    ("\ud800", "surrogate"),
])
def test_unsupported_constructs_raise(pattern, construct):
    with pytest.raises(xgr2.GrammarError, match=construct):
        regex_to_ebnf(pattern)


def test_invalid_pattern_raises_with_position():
    with pytest.raises(xgr2.GrammarError, match="invalid regex") as e:
        regex_to_ebnf("ab(c")
    assert (e.value.line, e.value.column) == (1, 3)
    with pytest.raises(TypeError):
        regex_to_ebnf(b"a")  # type: ignore[arg-type]


def test_doctest():
    results = doctest.testmod(module)
    assert results.failed == 0 and results.attempted > 0


def test_cli_regex_excludes_schema_and_grammar(capsys):
    from xgr2.demo.__main__ import _parse_args

    assert _parse_args(["--regex", "[a-z]+"]).regex == "[a-z]+"
    for other in (["--schema", "s.json"], ["--grammar", "g.ebnf"]):
        with pytest.raises(SystemExit):
            _parse_args(["--regex", "a", *other])
    assert "not allowed with argument" in capsys.readouterr().err

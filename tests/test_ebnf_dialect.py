"""XGrammar's EBNF dialect, construct by construct (docs: "EBNF Grammar" of XGrammar 0.2.6).

Each construct is checked against an independent oracle over every short string of a
small alphabet: Python's ``re`` for repetitions and groups, Python string literals for
escapes, the set of chunk runs for ``Substring``. The printed grammar must parse back
to the same text and the same language.
"""

import itertools
import random
import re

import pytest

import xgr2
from parsing import accepts as accepts_text

BYTES = xgr2.TokenizerInfo([bytes([i]) for i in range(256)])


def accepts(grammar: "xgr2.Grammar | xgr2.MatcherState", s: str) -> bool:
    start = grammar if isinstance(grammar, xgr2.MatcherState) else xgr2.compile(grammar, BYTES).initial_state()
    return accepts_text(start, s)


def strings(alphabet: str, max_len: int):
    for n in range(max_len + 1):
        for t in itertools.product(alphabet, repeat=n):
            yield "".join(t)


def assert_language(ebnf: str, oracle, alphabet: str, max_len: int = 6):
    g = xgr2.Grammar.from_ebnf(ebnf)
    again = xgr2.Grammar.from_ebnf(str(g))
    assert str(again) == str(g)
    g_start, again_start = (xgr2.compile(x, BYTES).initial_state() for x in (g, again))
    for s in strings(alphabet, max_len):
        expected = oracle(s)
        assert accepts(g_start, s) == expected, (ebnf, s, expected)
        assert accepts(again_start, s) == expected, (str(g), s, expected)


SPACED_REPETITIONS = [
    ('root ::= item {2, 3}\nitem ::= "ab"', r"(ab){2,3}"),
    ('root ::= "c" {0 , 2}', r"c{0,2}"),
    ('root ::= "a" { 2 }', r"a{2}"),
    ('root ::= "a" {2 ,} "b"', r"a{2,}b"),
    ('root ::= "a"{2, -1} "b"', r"a{2,}b"),  # XGrammar's printed form of {2,}
    ('root ::= "a"{0,-1}', r"a*"),
    ('root ::= "a"{ 1,2 }"b"  {0,1}', r"a{1,2}b{0,1}"),
    ('root ::= ("a" | "b") {1, 3} "c"', r"[ab]{1,3}c"),
    ('root ::= "a" *  "b" +', r"a*b+"),
    ('root ::= "a" ?\n    "b"', r"a?b"),
    ('root ::= "a"\n  {2}  # a comment\n  "b"', r"a{2}b"),
]


@pytest.mark.parametrize("ebnf,pattern", SPACED_REPETITIONS)
def test_whitespace_before_and_inside_repetition_operators(ebnf, pattern):
    assert_language(ebnf, lambda s: re.fullmatch(pattern, s) is not None, "abc")


@pytest.mark.parametrize("bad", ['root ::= "a"{2, -2}', 'root ::= "a"{2, -10}', 'root ::= "a"{-1}', 'root ::= "a"{2, -}'])
def test_only_minus_one_stands_for_no_upper_bound(bad):
    with pytest.raises(xgr2.GrammarError, match="expected a number"):
        xgr2.Grammar.from_ebnf(bad)


def test_a_rule_after_a_rule_that_ends_in_a_reference():
    # Skipping space to look for an operator must not swallow the next rule's name.
    assert_language('root ::= a\nb ::= "x"\na ::= "a" b ?', lambda s: s in ("a", "ax"), "ax")


def test_string_escapes():
    g = xgr2.Grammar.from_ebnf(r'root ::= "\a\e\'\?\/\"\\\x41\x1F600\u00e9\U0001F600\0"')
    assert accepts(g, "\a\x1b'?/\"\\A\U0001F600\u00e9\U0001F600\0")
    assert not accepts(g, "\a\x1b'?/\"\\A")
    assert str(xgr2.Grammar.from_ebnf(str(g))) == str(g)


def test_hex_escape_reads_every_hex_digit():
    # `\x41` then "B" is U+41B, not "AB" (XGrammar: any number of hex digits).
    g = xgr2.Grammar.from_ebnf(r'root ::= "\x41B"')
    assert accepts(g, "\u041b") and not accepts(g, "AB")
    with pytest.raises(xgr2.GrammarError, match="code point"):
        xgr2.Grammar.from_ebnf(r'root ::= "\x110000"')
    with pytest.raises(xgr2.GrammarError, match="hex digits"):
        xgr2.Grammar.from_ebnf(r'root ::= "\xg"')


def test_printer_never_writes_a_hex_escape_that_swallows_the_next_character():
    g = xgr2.Grammar.from_ebnf(r'root ::= "\u0001A" [\u0002B]')
    assert accepts(xgr2.Grammar.from_ebnf(str(g)), "\x01AB")


def test_negated_empty_class_matches_any_character():
    assert_language("root ::= [^]", lambda s: len(s) == 1, "a\n\u00e9", max_len=2)


def test_class_escapes():
    assert_language(r'root ::= [\-\]\[\^a]+', lambda s: re.fullmatch(r"[-\]\[^a]+", s) is not None, "-]^ab[", 3)


def test_empty_group():
    assert_language('root ::= "a" ( ) ()  "b"', lambda s: s == "ab", "ab")


def test_dot_is_any_character_as_gbnf_writes_it():
    assert_language('root ::= "a" . "b"', lambda s: len(s) == 3 and s[0] == "a" and s[2] == "b", "ab\u00e9\n", 4)
    assert str(xgr2.Grammar.from_ebnf('root ::= .+')) == str(xgr2.Grammar.from_ebnf("root ::= [^]+"))


def test_empty_alternatives_as_gbnf_writes_them():
    # llama.cpp's json.gbnf: `ws ::= | " " | ...`; an empty alternative is "".
    assert_language('root ::= "a" ws "b"\nws ::= | " " ws', lambda s: re.fullmatch("a +b|ab", s) is not None, "ab ")
    assert_language('root ::= ("x" |) "y" ("z" | | "w")', lambda s: re.fullmatch("x?y[zw]?", s) is not None, "xyzw")


def test_empty_literal_alternative():
    assert_language('root ::= ("" | "+" | "-") "1"', lambda s: s in ("1", "+1", "-1"), "+-1")


def substring_oracle(chunks):
    runs = {""}
    for i in range(len(chunks)):
        for j in range(i + 1, len(chunks) + 1):
            runs.add("".join(chunks[i:j]))
    return runs


@pytest.mark.parametrize("chunks", [["abc", "de", "fg"], ["a"], [], ["ab", "", "ab"], ["a", "b", "a", "b"]])
def test_substring_macro(chunks):
    runs = substring_oracle(chunks)
    args = ", ".join(f'"{c}"' for c in chunks)
    assert_language(f"root ::= Substring({args})", lambda s: s in runs, "abcdefg" if chunks else "a", 7)


def test_long_substring_lists_stay_exact_and_linear():
    # Past 32 chunks each run is a rule of its own (inlined, the automata were quadratic:
    # 320 chunks hit the state limit, 1,500 the nesting limit).
    rng = random.Random(3)
    chunks = [rng.choice(["a", "b", "ab", "ba", "bb"]) for _ in range(40)]
    runs = substring_oracle(chunks)
    args = ", ".join(f'"{c}"' for c in chunks)
    assert_language(f"root ::= Substring({args})", lambda s: s in runs, "ab", 7)
    words = [f"w{i} " for i in range(3000)]
    start = xgr2.compile(xgr2.Grammar.from_ebnf(f"root ::= Substring({', '.join(map(repr, words))})"
                                                .replace("'", '"')), BYTES).initial_state()
    for _ in range(20):
        i = rng.randrange(3000)
        j = rng.randrange(i + 1, min(3000, i + 200) + 1)
        assert accepts(start, "".join(words[i:j]))
        assert not accepts(start, "".join(words[i:j]) + words[(j + 1) % 3000])  # a chunk skipped


def test_a_rule_named_like_a_substring_run_is_the_grammars_own():
    chunks = ", ".join(f'"c{i}"' for i in range(40))
    g = xgr2.Grammar.from_ebnf(f'root ::= Substring({chunks}) substring_run_1\nsubstring_run_1 ::= "!"')
    start = xgr2.compile(g, BYTES).initial_state()
    assert accepts(start, "c3c4!") and not accepts(start, "c3c4c39")
    with pytest.raises(xgr2.GrammarError, match="undefined rule `substring_run_2`"):
        xgr2.Grammar.from_ebnf(f"root ::= Substring({chunks}) substring_run_2")


def test_regex_macro():
    assert_language(r'root ::= "ID-" Regex("[0-9]{2}")', lambda s: re.fullmatch(r"ID-[0-9]{2}", s) is not None,
                    "ID-0", 5)


def test_regex_macro_flags_and_json_string():
    assert_language(r'root ::= Regex("ab.", flags="is")', lambda s: re.fullmatch(r"ab.", s, re.I | re.S) is not None,
                    "aAbB\n", 3)
    assert_language(r'root ::= Regex("a.", flags="i")', lambda s: re.fullmatch(r"a.", s, re.I) is not None, "aA\n", 2)
    # json_string: control characters, `"` and `\` are never matched.
    assert_language(r'root ::= Regex("[^a]+", json_string=true)',
                    lambda s: re.fullmatch(r'[^a"\\\x00-\x1f]+', s) is not None, 'a"\\\nb', 3)


@pytest.mark.parametrize("text,message", [
    ('root[max_tokens=3] ::= "a"', "rule options"),
    ('root ::= a\na[lazy] ::= "x"', "rule options"),
    ('root ::= TagDispatch(("<t>", a), color=true)\na ::= "x"', "unknown TagDispatch option"),
    ('root ::= Token("x")', "Token takes token ids"),
    ("root ::= ExcludeToken()", "needs at least one token id"),
    ('root ::= TokenTagDispatch((1, a), color=true)\na ::= "x"', "unknown TokenTagDispatch option"),
    ('root ::= TokenTagDispatch(("<t>", a))\na ::= "x"', "token ids"),
    ('root ::= TokenTagDispatch((1, a), excludes="x")\na ::= "x"', "`excludes` takes"),
    ('root ::= TokenTagDispatch((1, a), loop_after_dispatch=1)\na ::= "x"', "true or false"),
    ("root ::= TokenTagDispatch((1))", "(token_id, rule_name) pairs"),
    ("root ::= TokenTagDispatch((1, missing))", "missing"),
    ('root ::= Regex("a", color=true)', "Regex takes"),
    ('root ::= Regex("a", flags="x")', "unknown Regex flag"),
    ('root ::= Regex("a(")', "invalid Regex pattern"),
    ('root ::= Substring("a", x)', "Substring takes strings"),
    ('root ::= Substring("a"', "macro call"),
    ('root ::= "a" {2, x}', "number"),
])
def test_unsupported_or_malformed_constructs_name_the_problem(text, message):
    with pytest.raises(xgr2.GrammarError, match=re.escape(message)):
        xgr2.Grammar.from_ebnf(text)


def test_a_rule_named_like_a_macro_is_still_a_rule_when_not_called():
    assert_language('root ::= Regex (Regex)\nRegex ::= "r"', lambda s: s == "rr", "r")


# Right recursion: a rule's calls of itself in tail position loop back to its start
# (the same language; no call opened per repetition).
TAIL_RECURSIVE = [
    ('root ::= "" | [ab] root', r"[ab]*"),
    ('root ::= "a" | "a" root', r"a+"),
    ('root ::= "c" s "c"\ns ::= "" | "a" s | "b" "b" s', r"c(a|bb)*c"),
    # the first call is not in tail position (a ")" follows), the second is
    ('root ::= "" | "a" root "b" root', None),
    # a tail call inside a choice inside a group, and one after an optional part
    ('root ::= "x" ("a" root | "b"?)', r"x(ax)*b?"),
    # mutual recursion stays calls
    ('root ::= "" | "a" t\nt ::= "b" root', r"(ab)*"),
]


def balanced(s: str) -> bool:
    depth = 0
    for ch in s:
        if ch not in "ab":
            return False
        depth += 1 if ch == "a" else -1
        if depth < 0:
            return False
    return depth == 0


@pytest.mark.parametrize("ebnf,pattern", TAIL_RECURSIVE)
def test_tail_calls_keep_the_language(ebnf, pattern):
    oracle = balanced if pattern is None else (lambda s, p=pattern: re.fullmatch(p, s) is not None)
    assert_language(ebnf, oracle, "abcx", max_len=6)


def test_right_recursion_keeps_the_parser_state_flat():
    # XGrammar's documented JSON string is right-recursive; 100,000 characters used to
    # open as many calls (and take minutes).
    g = xgr2.Grammar.from_ebnf(
        'root ::= "\\"" s "\\""\ns ::= "" | [^"\\\\] s | "\\\\" ["\\\\/bfnrt] s')
    start = xgr2.compile(g, BYTES).initial_state()
    short, long = (start.advance_bytes(b'"' + b"ab\\n" * n) for n in (10, 25_000))
    assert long.memory_bytes == short.memory_bytes
    assert long.advance_bytes(b'"').can_terminate

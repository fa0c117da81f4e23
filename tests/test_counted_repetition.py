"""Counted repetitions (grammar/repetition.h): `X{m,n}` of a regular, prefix-free X is
one rule whose items count the repetitions, so the states inside share their automaton
node and its mask. Oracles: Python's `re` and arithmetic on the counts for the language,
the brute-force mask (try_advance per token) for every mask near and far from the bounds,
in both cold-walk modes."""

import json
import random
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import xgr2
from parsing import accepts
from test_mask_oracle import check_along

pytestmark = pytest.mark.usefixtures("cold_walk_mode")

BYTES = xgr2.TokenizerInfo([bytes([i]) for i in range(256)])


def counted_rules(grammar: xgr2.Grammar) -> list[str]:
    """The printed counted rules that compression made (named `repeat`)."""
    return [line for line in str(grammar).splitlines() if line.startswith("repeat")]


def test_json_string_bounds_become_a_counted_rule_that_prints_back():
    g = xgr2.Grammar.from_json_schema({"type": "string", "minLength": 2, "maxLength": 1000})
    assert counted_rules(g) == ["repeat ::= json_char{2,1000}"]
    assert "rep_x" not in str(g)  # no doubling rules
    assert str(xgr2.Grammar.from_ebnf(str(g))) == str(g)


@pytest.mark.parametrize("body,pattern", [
    ('"ab"', "ab"),
    ('[a-c]', "[a-c]"),
    ('("x" | "yz" | "\\\\" [nt])', r"(?:x|yz|\\[nt])"),
    ('[\\u00e0-\\u00ff]', "[\u00e0-\u00ff]"),
])
@pytest.mark.parametrize("lo,hi", [(0, 40), (3, 40), (40, 40), (35, None), (0, 1000), (7, 70)])
def test_counted_language_matches_python_re(body, pattern, lo, hi):
    bound = f"{{{lo},{'' if hi is None else hi}}}"
    g = xgr2.Grammar.from_ebnf(f'root ::= "<" {body}{bound} ">"')
    assert len(counted_rules(g)) == 1, str(g)
    start = xgr2.compile(g, BYTES).initial_state()
    rng = random.Random(lo * 1000 + (hi or 0))
    alphabet = {'"ab"': ["ab", "a", "b"], "[a-c]": ["a", "b", "c", "d"],
                '("x" | "yz" | "\\\\" [nt])': ["x", "yz", "\\n", "\\t", "y", "\\"],
                "[\\u00e0-\\u00ff]": ["\u00e0", "\u00ff", "\u00e9", "a"]}[body]
    top = (hi if hi is not None else lo + 20) + 2
    for n in sorted({0, 1, lo - 1, lo, lo + 1, top - 3, top - 2, top - 1} | {rng.randint(0, top) for _ in range(6)}):
        if n < 0:
            continue
        for _ in range(3):
            text = "<" + "".join(rng.choice(alphabet) for _ in range(n)) + ">"
            expected = re.fullmatch(f"<(?:{pattern}){bound}>", text) is not None
            assert accepts(start, text) == expected, text


@given(st.integers(0, 60), st.integers(0, 60), st.lists(st.sampled_from(["ab", "c", "a", "b", "cc"]), max_size=80))
@settings(max_examples=150, deadline=None)
def test_counts_of_a_multi_byte_body_property(lo, span, parts):
    hi = lo + span
    g = xgr2.Grammar.from_ebnf(f'root ::= ("ab" | "c"){{{lo},{hi}}} "."')
    start = xgr2.compile(g, BYTES).initial_state()
    text = "".join(parts) + "."
    assert accepts(start, text) == (re.fullmatch(f"(?:ab|c){{{lo},{hi}}}\\.", text) is not None)


@pytest.mark.parametrize("schema,value", [
    ({"type": "string", "maxLength": 30}, "The quick brown fox jumps over"),
    ({"type": "string", "maxLength": 12}, "caf\u00e9 \"q\" \\\U0001f600!"),
    ({"type": "string", "minLength": 9, "maxLength": 9}, "abc def g"),
    ({"type": "string", "minLength": 5, "maxLength": 200}, "one two three four five six"),
    ({"type": "object", "properties": {"a": {"type": "string", "maxLength": 8}, "b": {"type": "integer"}},
      "required": ["a", "b"], "additionalProperties": False}, {"a": "12345678", "b": 7}),
    ({"type": "array", "items": {"type": "string", "minLength": 1, "maxLength": 6}, "maxItems": 3},
     ["abcdef", "x", "\u00e9t\u00e9"]),
])
def test_masks_along_bounded_strings_match_brute_force(schema, value, llama3_tokenizer_info, llama3_hf_tokenizer):
    g = xgr2.Grammar.from_json_schema(schema, any_whitespace=False)
    assert counted_rules(g), str(g)
    state = xgr2.compile(g, llama3_tokenizer_info).initial_state()
    ids = llama3_hf_tokenizer.encode(json.dumps(value, separators=(",", ":")), add_special_tokens=False)
    state = check_along(state, ids, llama3_tokenizer_info, random.Random(0), range(len(ids) + 1), complete_vocab=False)
    assert state.can_terminate


def test_a_token_too_long_for_the_rule_may_go_on_after_it(llama3_tokenizer_info, llama3_hf_tokenizer):
    # Near its maximum the rule's own walk rejects a long word, but the rule may end on
    # the way and the word go on in what follows ([a-z]+): the full parser decides it.
    g = xgr2.Grammar.from_ebnf('root ::= "<" [a-z]{0,40} [a-z]+ ">"')
    assert len(counted_rules(g)) == 1, str(g)
    compiled = xgr2.compile(g, llama3_tokenizer_info)
    state = compiled.initial_state().advance_bytes(b"<" + b"a" * 38)
    long_word = llama3_hf_tokenizer.encode("information", add_special_tokens=False)
    assert len(long_word) == 1 and state.accepts(long_word[0])
    check_along(state, [], llama3_tokenizer_info, random.Random(0), [0], complete_vocab=False)


@pytest.mark.parametrize("count", [0, 2, 3, 36, 37, 38, 39, 40])
def test_masks_at_every_distance_to_the_bounds_match_brute_force(count, llama3_tokenizer_info):
    g = xgr2.Grammar.from_ebnf('root ::= "<" [a-z ]{3,40} (">" | "." [a-z]{2,50} ">")')
    state = xgr2.compile(g, llama3_tokenizer_info).initial_state().advance_bytes(b"<" + b"ab c" * (count // 4) +
                                                                                    b"x" * (count % 4))
    check_along(state, [], llama3_tokenizer_info, random.Random(count), [0], complete_vocab=False)


def test_masks_at_every_byte_of_escapes_near_the_maximum(llama3_tokenizer_info):
    # Inside an escape or a multi-byte character the repetition under way completes
    # before the next begins: one fewer may begin than from the rule's start (a long
    # token there was once allowed one character too many).
    compiled = xgr2.compile(xgr2.Grammar.from_json_schema({"type": "string", "maxLength": 8}), llama3_tokenizer_info)
    rng = random.Random(3)
    for ascii_only in (True, False):
        text = json.dumps("ab\u00e9\U0001f600cdef", ensure_ascii=ascii_only).encode()
        for end in range(1, len(text)):
            state = compiled.initial_state().advance_bytes(text[:end])
            check_along(state, [], llama3_tokenizer_info, rng, [0], complete_vocab=False)


@pytest.mark.parametrize("src", [
    'root ::= r{0,50} "."\nr ::= "<" [a-z]{0,40} ">"',  # the outer counted first, the inner later
    'root ::= ("<" [a-z]{0,40} ">"){0,50} "."',  # the inner first
])
def test_a_counted_repetition_inside_another_keeps_both_counts(src):
    # A counted body copied into an outer counted rule's automaton is copied as the
    # repetition it stands for (once, its body alone was copied: one letter).
    start = xgr2.compile(xgr2.Grammar.from_ebnf(src), BYTES).initial_state()
    rng = random.Random(0)
    for _ in range(300):
        n = rng.choice([0, 1, 2, 49, 50, 51])
        text = "".join("<" + "a" * rng.choice([0, 1, 39, 40, 41]) + ">" for _ in range(n)) + "."
        assert accepts(start, text) == bool(re.fullmatch(r"(<[a-z]{0,40}>){0,50}\.", text)), text[:90]


def test_counted_rules_after_doubled_repetitions_match_python_re():
    # Doubled repetitions (a body that is not prefix-free: "a" | "ab") add rules before the
    # counted one is made; the table of rule bodies once was sized without them and was
    # written past (heap corruption on a real-world schema, check-jsonschema's mergify).
    parts = " ".join(f'("a" | "a{c}"){{40}}' for c in "bcdefghij")
    g = xgr2.Grammar.from_ebnf(f'root ::= {parts} [a-z]{{0,50}} "."')
    assert len(counted_rules(g)) == 1, str(g)
    start = xgr2.compile(g, BYTES).initial_state()
    pattern = "".join(f"(?:a|a{c}){{40}}" for c in "bcdefghij") + "[a-z]{0,50}\\."
    rng = random.Random(7)
    for _ in range(40):
        text = "".join(rng.choice(["a", "a" + c]) for c in "bcdefghij" for _ in range(40))
        tail = "".join(rng.choice("abz") for _ in range(rng.choice([0, 1, 49, 50, 51])))
        for candidate in (text + tail + ".", text[:-1] + tail + "."):
            assert accepts(start, candidate) == (re.fullmatch(pattern, candidate) is not None), candidate

"""Masks inside names and keywords: tool names after `<function=`, schema keys, EBNF
keywords, where a direct walk steps through long literal chains and meets a loop, a rule
call or the rule's end.

Every mask is checked against the brute-force oracle (each token tried with
`try_advance`), with the Llama-3 vocabulary, in both cold-walk modes: the direct walk of
a first visit (the default) and a classification of every node.
"""

import numpy as np
import pytest

import xgr2
from xgr2 import tool_calling

pytestmark = pytest.mark.usefixtures("cold_walk_mode")


def oracle_mask(state, vocab_size):
    return np.fromiter((state.try_advance(t) is not None for t in range(vocab_size)), dtype=bool, count=vocab_size)


def assert_masks(compiled, prefixes):
    tok = compiled.tokenizer_info
    for prefix in prefixes:
        state = compiled.initial_state().advance_text(prefix)
        mask = xgr2.bitmask_to_bool(state.bitmask(), tok.vocab_size)
        wrong = np.flatnonzero(mask != oracle_mask(state, tok.vocab_size))
        assert wrong.size == 0, f"after {prefix!r}: {wrong.size} ids differ, e.g. " + ", ".join(
            f"{tok.decoded_vocab[w]!r} (mask {mask[w]})" for w in wrong[:6]
        )


@pytest.fixture
def tok(llama3_tokenizer_info):
    llama3_tokenizer_info.clear_cross_grammar_cache()  # first visits everywhere
    return llama3_tokenizer_info


def tool(name, properties):
    return {"type": "function", "function": {"name": name, "parameters": {"type": "object", "properties": properties}}}


def test_tool_names_sharing_prefixes(tok):
    tools = [
        tool("get_weather", {"city": {"type": "string"}}),
        tool("get_weather_hourly", {"hours": {"type": "integer"}}),
        tool("get_time", {}),
        tool("set_alarm", {"at": {"type": "string", "enum": ["7:00", "8:00"]}}),
        tool("s", {}),
    ]
    compiled = xgr2.compile(tool_calling.llama3_function_tag(tools), tok)
    assert_masks(compiled, ["Hi <function=", "<function=get_", "<function=get_weather", "<function=get_weather_h",
                            "<function=s", "<function=set_alarm>", "<function=get_time>{"])


@pytest.mark.parametrize(
    "ebnf,prefixes",
    [
        # keywords with shared prefixes, then a loop
        ('root ::= ("SELECT" | "SELECTED" | "SET" | "S") " " [a-z]+ ";"', ["", "SE", "SELECT", "S", "SET "]),
        # a chain that ends its rule where the caller goes on
        ('root ::= kw " " kw\nkw ::= "alpha" | "alphabet" | "beta"', ["", "al", "alpha", "alpha ", "beta b"]),
        # a chain reaching a call of a nullable rule, and a loop inside the chain's rule
        ('root ::= "ab" opt "cd" [0-9]* "end"\nopt ::= "x"?', ["", "a", "ab", "abx", "abc", "abcd1"]),
        # a long literal, longer than any token
        ('root ::= "' + "constrained_decoding_with_a_long_literal_" * 3 + '" [ab]', ["", "constrained_dec"]),
        # alternatives of one byte and a chain inside a repetition
        ('root ::= ("ab" | "a" | "abc"){2,3} "."', ["", "a", "ab", "abab", "abcab"]),
        # two rules' literals at once, parting into a digit and a letter loop
        ('root ::= a | b\na ::= "xy" [0-9]+\nb ::= "xz" [a-z]+ | "w"', ["", "x", "xy", "xz", "w"]),
        # a loop of single bytes inside the literals, then a class
        ('root ::= "a" ("bc")* "d" [0-9]+', ["", "a", "abc", "abcbc", "abcd"]),
        # whitespace bytes as literal letters, and a literal that is its rule's end
        ('root ::= " " "the" | "\\n" [a-z]+ | "ab" | "abc" [0-9]*', ["", " ", " th", "\n", "a", "ab", "abc"]),
        # a quote (thousands of tokens start with one) before a string's content
        ('root ::= "\\"" [a-z]* "\\"" ":" [0-9]', ["", '"', '"ab', '"ab"']),
    ],
)
def test_ebnf_chains(tok, ebnf, prefixes):
    assert_masks(xgr2.compile(xgr2.Grammar.from_ebnf(ebnf), tok), prefixes)


def test_schema_enums_and_property_names(tok):
    schema = {
        "type": "object",
        "properties": {
            "unit": {"enum": ["celsius", "celsius_scaled", "fahrenheit", "kelvin"]},
            "unique_id": {"type": "integer"},
            "units": {"type": "array", "items": {"enum": ["m", "mm", "km"]}},
        },
        "required": ["unit"],
    }
    compiled = xgr2.compile(xgr2.Grammar.from_json_schema(schema, any_whitespace=False), tok)
    assert_masks(compiled, ["{", '{"unit":"', '{"unit":"cel', '{"unit":"celsius', '{"unit":"kelvin",',
                            '{"unit":"kelvin","uni', '{"unit":"kelvin","units":["k'])

"""json_schema's `excludes` in structural tags: strings that string values and property
names may not hold, matched on the text as written (escapes not decoded), as XGrammar
defines it; strings with a `pattern` or known `format` are not filtered.

Oracle: documents are instances drawn by hypothesis-jsonschema (valid by `jsonschema`),
serialized by `json.dumps` in several layouts, some characters re-spelled as `\\uXXXX`;
a document must be accepted exactly when no string token of its text (between the
quotes) holds an exclusion. Masks along the way are checked against the brute-force
oracle (every token tried) with the Llama-3 vocabulary.
"""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import xgr2

hypothesis_jsonschema = pytest.importorskip("hypothesis_jsonschema")

BYTES = xgr2.TokenizerInfo([bytes([b]) for b in range(256)])
STRING_TOKEN = re.compile(r'"((?:[^"\\]|\\.)*)"')


def grammar_of(schema, excludes, style="json") -> xgr2.Grammar:
    return xgr2.Grammar.from_structural_tag({"type": "json_schema", "json_schema": schema, "style": style,
                                            "excludes": excludes})


def accepts(grammar: xgr2.Grammar, text: str) -> bool:
    state = xgr2.compile(grammar, BYTES).initial_state().try_advance_bytes(text.encode())
    return state is not None and state.can_terminate


def holds_exclusion(text: str, excludes: list[str]) -> bool:
    """Whether a string token of the JSON text, as written, holds an exclusion."""
    return any(e in token for token in STRING_TOKEN.findall(text) for e in excludes)


def respell(text: str, picks: list[bool], literals: set[str]) -> str:
    """`text` with letters inside string tokens re-spelled as \\uXXXX where `picks` says,
    but in `literals` (names and enum values: as json.dumps writes them, printable ASCII
    raw, is how the grammar writes a literal)."""
    i = 0

    def one(m):
        nonlocal i
        if json.loads(m.group(0)) in literals:
            return m.group(0)
        units = []
        for u in re.findall(r"\\u[0-9a-fA-F]{4}|\\.|.", m.group(1)):  # escapes stay as they are
            units.append(f"\\u{ord(u):04x}" if u.isalpha() and ord(u) < 0x10000 and picks[i % len(picks)] else u)
            i += 1
        return '"' + "".join(units) + '"'
    return STRING_TOKEN.sub(one, text) if picks else text


SCHEMAS = [
    {"type": "object", "properties": {
        "name": {"type": "string"}, "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 3},
        "kind": {"enum": ["plain", "table", "abc", 3]}, "short": {"type": "string", "maxLength": 4},
        "n": {"type": "integer"}},
     "required": ["name", "kind"], "additionalProperties": False},
    {"type": "object", "properties": {"a": {"type": "string"}},
     "additionalProperties": {"type": "array", "items": {"type": "string"}}},
    {"type": "array", "items": {"anyOf": [{"type": "string", "minLength": 1}, {"type": "object"}]}, "maxItems": 3},
]
LITERALS = {"name", "tags", "kind", "short", "n", "a", "plain", "table", "abc"}  # declared names, enum values
EXCLUDES = st.lists(st.sampled_from(["a", "ab", "ta", "\\", "\\n", "\\u", "e\"", "é", "x y", "ble"]),
                    min_size=1, max_size=3, unique=True)


@pytest.mark.parametrize("index", range(len(SCHEMAS)))
@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_accepted_exactly_when_no_string_token_holds_an_exclusion(index, data):
    schema = SCHEMAS[index]
    instance = data.draw(hypothesis_jsonschema.from_schema(schema, custom_formats={}))
    excludes = data.draw(EXCLUDES)
    layout = data.draw(st.sampled_from([{}, {"indent": 2}, {"separators": (",", ":")}, {"ensure_ascii": False}]))
    if isinstance(instance, dict):  # declared properties first, in declared order
        order = list(schema.get("properties", {}))
        instance = dict(sorted(instance.items(), key=lambda kv: order.index(kv[0]) if kv[0] in order else len(order)))
    text = respell(json.dumps(instance, **layout), data.draw(st.lists(st.booleans(), max_size=4)), LITERALS)
    assert json.loads(text) == instance
    try:
        grammar = grammar_of(schema, excludes)
    except xgr2.StructuralTagError as e:  # no document at all (a required name holds an exclusion)
        assert "no output satisfies" in str(e)
        assert holds_exclusion(text, excludes), (text, excludes)
        return
    assert accepts(grammar, text) is not holds_exclusion(text, excludes), (text, excludes)


def test_pattern_and_format_strings_are_not_filtered():
    schema = {"type": "object", "properties": {
        "p": {"type": "string", "pattern": "^ab+$"}, "d": {"type": "string", "format": "date"},
        "f": {"type": "string"}}}
    grammar = grammar_of(schema, ["ab", "-0"])
    assert accepts(grammar, '{"p": "abbb"}')
    assert accepts(grammar, '{"d": "2024-02-29"}')
    assert not accepts(grammar, '{"f": "2024-02-29"}')
    assert not accepts(grammar, '{"f": "ab"}')
    assert accepts(grammar, '{"f": "\\u0061b"}')  # as written: no "ab"


def test_numbers_and_punctuation_are_not_text():
    grammar = grammar_of({"type": "object", "properties": {"n": {"type": "number"}, "s": {"type": "string"}}},
                         ["1", ":", "n"])
    assert accepts(grammar, '{"s": "ok", "n": 11}') is False  # the key "n" holds "n"
    grammar = grammar_of({"type": "object", "properties": {"v": {"type": "number"}, "s": {"type": "string"}}},
                         ["1", ":", ","])
    assert accepts(grammar, '{"v": 11, "s": "ok"}')
    assert not accepts(grammar, '{"v": 11, "s": "1"}')
    assert not accepts(grammar, '{"v": 11, "s": "a,b"}')


def test_lengths_stay_exact_beside_excludes():
    grammar = grammar_of({"type": "string", "minLength": 2, "maxLength": 3}, ["z"])
    assert [accepts(grammar, json.dumps(s)) for s in ["a", "ab", "abc", "abcd", "az", "\u00e9\u00e9"]] == \
        [False, True, True, False, False, True]
    assert accepts(grammar, '"\\u00e9\\n"')  # two characters, each escaped


def test_xml_styles_filter_raw_values_and_literals():
    schema = {"type": "object", "properties": {"s": {"type": "string"}, "e": {"enum": ["ab", "cd"]},
                                               "j": {"type": "object", "properties": {"t": {"type": "string"}}}}}
    grammar = grammar_of(schema, ["ab"], "qwen_xml")
    def text(name, value):
        return f"<parameter={name}>{value}</parameter>"
    assert accepts(grammar, text("s", "xyz"))
    assert not accepts(grammar, text("s", "xaby"))
    assert accepts(grammar, text("e", "cd"))
    assert not accepts(grammar, text("e", "ab"))
    assert accepts(grammar, text("j", '{"t": "x"}'))
    assert not accepts(grammar, text("j", '{"t": "xab"}'))  # nested JSON strings too


@pytest.mark.parametrize("spec, path, message", [
    ({"excludes": [""]}, "/excludes/0", "non-empty strings"),
    ({"excludes": "ab"}, "/excludes", "non-empty strings"),
    ({"excludes": [1]}, "/excludes/0", "non-empty strings"),
    ({"excludes": [" ab"], "style": "qwen_xml"}, "/excludes/0", "whitespace"),
    ({"excludes": ["ab\n"], "style": "minimax_xml"}, "/excludes/0", "whitespace"),
    ({"excludes": ["ab"], "style": "cohere_xml"}, "/excludes", "takes no"),
    ({"excludes": ["ab"], "style": "minimax_m3_xml"}, "/excludes", "takes no"),
])
def test_malformed_excludes_are_errors_at_their_path(spec, path, message):
    with pytest.raises(xgr2.StructuralTagError, match=message) as e:
        xgr2.Grammar.from_structural_tag({"type": "json_schema", "json_schema": {"type": "object"}, **spec})
    assert e.value.path == path


def test_an_empty_list_changes_nothing():
    schema = {"type": "object", "properties": {"s": {"type": "string"}}}
    assert str(grammar_of(schema, [])) == str(xgr2.Grammar.from_structural_tag(
        {"type": "json_schema", "json_schema": schema}))


def test_masks_match_the_brute_force_oracle(llama3_tokenizer_info):
    schema = {"type": "object", "properties": {"city": {"type": "string"}, "unit": {"enum": ["celsius", "kelvin"]}},
              "additionalProperties": {"type": "string", "maxLength": 6}}
    compiled = xgr2.compile(grammar_of(schema, ["lv", "\\u"]), llama3_tokenizer_info)
    vocab = llama3_tokenizer_info.vocab_size
    text = '{"city": "Paris", "unit": "celsius", "note": "x"}'
    for cut in [1, 2, 9, 12, 27, 30, 38, 41, 46]:
        state = compiled.initial_state().advance_text(text[:cut])
        mask = xgr2.bitmask_to_bool(state.bitmask(), vocab)
        oracle = np.fromiter((state.try_advance(t) is not None for t in range(vocab)), dtype=bool, count=vocab)
        assert np.array_equal(mask, oracle), text[:cut]

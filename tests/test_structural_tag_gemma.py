"""The gemma style of structural tags' ``json_schema`` format: tool arguments as Gemma 4
writes them, ``{key:value,...}`` with bare keys in case-insensitively sorted order (its
chat template sorts them), strings between ``<|"|>`` delimiters, no whitespace.

Oracle: instances drawn from each schema by hypothesis-jsonschema (valid by
``jsonschema``) are written in the style by a renderer written here from the style's
definition; the grammar must accept every rendering and reject renderings that break the
schema (a required key left out, an undeclared key, keys out of the sorted order, JSON).
"""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import xgr2

hypothesis_jsonschema = pytest.importorskip("hypothesis_jsonschema")

BYTES = xgr2.TokenizerInfo([bytes([b]) for b in range(256)])
Q = '<|"|>'


def grammar_of(schema) -> xgr2.Grammar:
    return xgr2.Grammar.from_structural_tag({"type": "json_schema", "json_schema": schema, "style": "gemma"})


def accepts(grammar: xgr2.Grammar, text: str) -> bool:
    state = xgr2.compile(grammar, BYTES).initial_state().try_advance_bytes(text.encode())
    return state is not None and state.can_terminate


def sort_key(name: str):
    return (name.lower(), name)


def render(value) -> str:
    if isinstance(value, dict):
        return "{" + ",".join(f"{k}:{render(value[k])}" for k in sorted(value, key=sort_key)) + "}"
    if isinstance(value, list):
        return "[" + ",".join(render(v) for v in value) + "]"
    if isinstance(value, str):
        return Q + value + Q
    return json.dumps(value)


SCHEMAS = [
    {"type": "object", "properties": {
        "zeta": {"type": "string"}, "Alpha": {"type": "integer", "minimum": 0, "maximum": 99},
        "ratio": {"type": "number"}, "on": {"type": "boolean"}, "none": {"type": "null"},
        "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 3},
        "where": {"type": "object", "properties": {"city": {"type": "string"}, "zip": {"type": "integer"}},
                  "required": ["city"], "additionalProperties": False},
        "unit": {"enum": ["C", "F"]}},
     "required": ["zeta", "Alpha", "where"], "additionalProperties": False},
]

TEXT = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="<"), max_size=8)


@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_renderings_of_valid_instances_are_accepted_and_broken_ones_rejected(data):
    schema = SCHEMAS[0]
    instance = data.draw(hypothesis_jsonschema.from_schema(schema).filter(lambda v: "<" not in json.dumps(v)))
    grammar = grammar_of(schema)
    assert accepts(grammar, render(instance)), instance
    for name in schema["required"]:
        assert not accepts(grammar, render({k: v for k, v in instance.items() if k != name}))
    assert not accepts(grammar, render({**instance, "undeclared": 1}))
    assert not accepts(grammar, json.dumps(instance))
    keys = sorted(instance, key=sort_key)
    if len(keys) > 1:  # the keys in another order than the template's
        swapped = "{" + ",".join(f"{k}:{render(instance[k])}" for k in [keys[1], keys[0], *keys[2:]]) + "}"
        assert not accepts(grammar, swapped)


def test_layout_details():
    schema = {"type": "object", "properties": {"command": {"type": "string"}, "n": {"type": "number"}},
              "required": ["command"]}
    grammar = grammar_of(schema)
    assert accepts(grammar, '{command:' + Q + 'grep -E "a|b" x.py' + Q + '}')
    assert accepts(grammar, "{command:" + Q + "x" + Q + ",n:1.5}")
    assert not accepts(grammar, "{command:" + Q + "x" + Q + ",n:" + Q + "1.5" + Q + "}")  # a number is bare
    assert not accepts(grammar, "{command:" + Q + "x" + Q + ", n:1.5}")  # no whitespace
    for marker in ["<tool_call|>", "<|tool_call>", Q]:  # a parser would cut the call there
        assert not accepts(grammar, "{command:" + Q + "ls" + marker + "rm" + Q + "}")


def test_open_objects_empty_objects_and_free_values():
    bag = grammar_of({"type": "object", "properties": {"action_id": {"type": "string"}}, "required": ["action_id"],
                      "additionalProperties": True})
    assert accepts(bag, "{action_id:" + Q + "bake" + Q + ",duration:5,more:[1,{a:null}]}")
    assert not accepts(bag, "{action_id:" + Q + "bake" + Q + "," + Q + "duration" + Q + ":5}")  # keys are bare
    empty = grammar_of({"type": "object", "properties": {}})
    assert accepts(empty, "{}") and not accepts(empty, "{why:" + Q + "x" + Q + "}")
    free = grammar_of(True)
    assert accepts(free, "{}") and accepts(free, "{why:1,how:" + Q + "two" + Q + "}")


def test_arrays_count_their_items_and_refs_recurse():
    lines = grammar_of({"type": "object", "properties": {"lines": {"type": "array", "items": {"type": "string"},
                                                                  "minItems": 1, "maxItems": 2}},
                        "required": ["lines"]})
    assert accepts(lines, "{lines:[" + Q + "a" + Q + "]}")
    assert accepts(lines, "{lines:[" + Q + "a" + Q + "," + Q + "b" + Q + "]}")
    assert not accepts(lines, "{lines:[]}")
    assert not accepts(lines, "{lines:[" + ",".join([Q + "a" + Q] * 3) + "]}")
    tree = grammar_of({"type": "object", "properties": {"name": {"type": "string"},
                                                        "kids": {"type": "array", "items": {"$ref": "#"}}},
                       "required": ["name"]})
    assert accepts(tree, "{kids:[{name:" + Q + "leaf" + Q + "}],name:" + Q + "root" + Q + "}")


@pytest.mark.parametrize("schema, words", [
    ({"type": "object", "patternProperties": {"^x_": {"type": "string"}}}, "patternProperties"),
    ({"type": "object", "properties": {"room number": {"type": "string"}}}, "identifier"),
    ({"type": "object", "properties": {"q": {"type": "string", "maxLength": 3}}}, "maxLength"),
])
def test_what_the_style_cannot_write_is_refused(schema, words):
    with pytest.raises(xgr2.StructuralTagError, match=words):
        grammar_of(schema)

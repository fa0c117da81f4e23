"""The minimax_m3_xml style of structural tags' ``json_schema`` format: arguments as
recursive XML, every value an element ``]<]minimax[>[<NAME>VALUE]<]minimax[>[</NAME>``.

Oracle: instances drawn from each schema by hypothesis-jsonschema (valid by
``jsonschema``) are written in the style by a renderer written here from the style's
definition (objects as their properties' elements in declared order, arrays as ``item``
elements, strings raw, other scalars as JSON text); the grammar must accept every
rendering and reject renderings that break the schema.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import xgr2

hypothesis_jsonschema = pytest.importorskip("hypothesis_jsonschema")

BYTES = xgr2.TokenizerInfo([bytes([b]) for b in range(256)])
NS = "]<]minimax[>["


def el(name: str, body: str) -> str:
    return f"{NS}<{name}>{body}{NS}</{name}>"


def grammar_of(schema, **options) -> xgr2.Grammar:
    return xgr2.Grammar.from_structural_tag({"type": "json_schema", "json_schema": schema, "style": "minimax_m3_xml",
                                            **options})


def accepts(grammar: xgr2.Grammar, text: str) -> bool:
    state = xgr2.compile(grammar, BYTES).initial_state().try_advance_bytes(text.encode())
    return state is not None and state.can_terminate


def render(schema: dict, value) -> str:
    """The body of an element holding `value` (of `schema`, for the declared order)."""
    if isinstance(value, dict):
        order = list(schema.get("properties", {}))
        keys = [k for k in order if k in value] + [k for k in value if k not in order]
        return "".join(el(k, render(schema.get("properties", {}).get(k, {}), value[k])) for k in keys)
    if isinstance(value, list):
        return "".join(el("item", render(schema.get("items", {}), v)) for v in value)
    if isinstance(value, str):
        return value
    return json.dumps(value)


SCHEMAS = [
    {"type": "object", "properties": {
        "name": {"type": "string"}, "count": {"type": "integer", "minimum": 0, "maximum": 50},
        "ratio": {"type": "number"}, "on": {"type": "boolean"},
        "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 3},
        "where": {"type": "object", "properties": {"city": {"type": "string"}, "zip": {"type": "integer"}},
                  "required": ["city"], "additionalProperties": False},
        "maybe": {"anyOf": [{"type": "integer"}, {"type": "null"}]}},
     "required": ["name", "count", "where"], "additionalProperties": False},
    {"type": "object", "properties": {"unit": {"enum": ["C", "F"]}, "points": {
        "type": "array", "minItems": 1, "maxItems": 2, "items": {
            "type": "object", "properties": {"x": {"type": "number"}, "y": {"type": "number"}},
            "required": ["x", "y"], "additionalProperties": False}}},
     "required": ["unit", "points"], "additionalProperties": False},
]


@pytest.mark.parametrize("index", range(len(SCHEMAS)))
@settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_renderings_of_valid_instances_are_accepted_and_broken_ones_rejected(index, data):
    schema = SCHEMAS[index]
    instance = data.draw(hypothesis_jsonschema.from_schema(schema, custom_formats={}).filter(
        lambda v: all(NS not in s for s in json.dumps(v))))
    grammar = grammar_of(schema)
    assert accepts(grammar, render(schema, instance)), instance
    for name in schema["required"]:  # a required element left out
        broken = {k: v for k, v in instance.items() if k != name}
        assert not accepts(grammar, render(schema, broken)), broken
    assert not accepts(grammar, render(schema, {**instance, "undeclared": 1}))
    assert not accepts(grammar, json.dumps(instance))  # JSON is not this style


def test_nested_objects_and_arrays_are_elements_not_json():
    schema = SCHEMAS[0]
    ok = el("name", "A") + el("count", "2") + el("where", el("city", "Oslo"))
    grammar = grammar_of(schema)
    assert accepts(grammar, ok)
    assert accepts(grammar, ok.replace(f"{NS}<count>", f"\n{NS}<count>"))  # whitespace between elements
    assert not accepts(grammar, ok.replace(el("where", el("city", "Oslo")), el("where", '{"city": "Oslo"}')))
    assert not accepts(grammar, ok.replace(f"{NS}</name>", f"{NS}</wrong>"))  # a closing tag names its element
    assert not accepts(grammar, ok.replace(el("count", "2"), el("count", "51")))  # maximum 50
    assert not accepts(grammar, ok.replace(el("name", "A"), el("name", f"A{NS}<x>1{NS}</x>")))


def test_recursive_definitions_stay_recursive_xml():
    schema = {"type": "object", "properties": {"name": {"type": "string"},
                                               "child": {"anyOf": [{"type": "null"}, {"$ref": "#"}]}},
              "required": ["name", "child"], "additionalProperties": False}
    grammar = grammar_of(schema)
    assert accepts(grammar, el("name", "root") + el("child", el("name", "leaf") + el("child", "null")))
    assert not accepts(grammar, el("name", "root") + el("child", '{"name": "leaf", "child": null}'))


def test_free_values_and_dynamic_names():
    free = grammar_of({"type": "object", "additionalProperties": True})
    for body in ["", "plain text", "42", el("nested", "v"), el("a", "1") + el("b", "2")]:
        assert accepts(free, el("any_key", body)), body
    patterned = grammar_of({"type": "object", "patternProperties": {"^x": {"type": "integer"}},
                            "additionalProperties": False})
    assert accepts(patterned, el("x_one", "1"))
    assert not accepts(patterned, el("y_one", "1")) and not accepts(patterned, el("x_one", "one"))
    named = grammar_of({"type": "object", "propertyNames": {"pattern": "^[a-z]+$"},
                        "additionalProperties": {"type": "string"}})
    assert accepts(named, el("abc", "v")) and not accepts(named, el("abc_1", "v"))


def test_empty_containers_consts_and_whitespace():
    schema = {"type": "object", "properties": {
        "eo": {"type": "object", "properties": {}, "additionalProperties": False},
        "ea": {"type": "array", "items": False}, "fixed": {"const": {"x": [1, True]}}, "n": {"type": "null"}},
        "required": ["eo", "ea", "fixed", "n"], "additionalProperties": False}
    grammar = grammar_of(schema)
    fixed = el("fixed", el("x", el("item", "1") + el("item", "true")))
    assert accepts(grammar, el("eo", "") + el("ea", "") + fixed + el("n", "null"))
    assert not accepts(grammar, el("eo", " ") + el("ea", "") + fixed + el("n", "null"))
    assert not accepts(grammar, el("eo", "") + el("ea", "") + el("fixed", '{"x":[1,true]}') + el("n", "null"))
    tight = grammar_of({"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "string"}},
                        "required": ["a", "b"]}, max_whitespace_cnt=1)
    assert accepts(tight, el("a", "x") + "\n" + el("b", "y"))
    assert not accepts(tight, el("a", "x") + "\n\n" + el("b", "y"))


def test_any_order_applies_in_every_object():
    schema = {"$defs": {"p": {"type": "object", "properties": {"x": {"type": "integer"}, "y": {"type": "integer"}},
                              "required": ["x", "y"], "additionalProperties": False}},
              "type": "object", "properties": {"name": {"type": "string"}, "point": {"$ref": "#/$defs/p"}},
              "required": ["name", "point"], "additionalProperties": False}
    reordered = el("point", el("y", "2") + el("x", "1")) + el("name", "p")
    assert not accepts(grammar_of(schema), reordered)
    assert accepts(grammar_of(schema, any_order=True), reordered)


@pytest.mark.parametrize("string_schema", [{"type": "string", "pattern": "a"}, {"type": "string", "format": "email"},
                                           {"type": "string", "minLength": 1}, {"type": "string", "maxLength": 9}])
def test_string_checks_that_raw_text_cannot_make_are_refused(string_schema):
    with pytest.raises(xgr2.StructuralTagError, match="namespace-marker"):
        grammar_of({"type": "object", "properties": {"q": string_schema}, "required": ["q"]})


@pytest.mark.parametrize("key", ["", "/closing", "has>delimiter", " \t\n"])
def test_names_an_element_cannot_hold_are_refused(key):
    with pytest.raises(xgr2.StructuralTagError, match="element name"):
        grammar_of({"type": "object", "properties": {key: {"type": "string"}}, "required": [key]})

"""`any_order`: XGrammar's relaxed objects, from `Grammar.from_json_schema(any_order=True)`
and the structural tags' `json_schema` format (JSON and XML styles).

The oracle is the documented rule, written here independently of the grammar: in every
object, each entry is a permitted key whose value its schema allows (checked with
`jsonschema` for values that hold no object), keys may repeat or be missing, and the
number of entries lies in [max(minProperties, number of required), maxProperties].
Documents are valid instances from hypothesis-jsonschema, written with their keys
shuffled, plus mutations (entries dropped, repeated, retyped, unknown keys added); the
grammar accepts a text iff the oracle says valid.
"""

from __future__ import annotations

import json
import random

import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis_jsonschema import from_schema

import xgr2
from parsing import accepts

BYTES = xgr2.TokenizerInfo([bytes([i]) for i in range(256)] + [b"<eos>"], stop_token_ids=[256])


RELAXED = {"properties", "required", "additionalProperties", "minProperties", "maxProperties", "items"}


class Pairs(list):
    """A JSON object as its (key, value) entries, repeats kept."""


def parse(text: str):
    return json.loads(text, object_pairs_hook=Pairs)


def relaxed_valid(schema, value) -> bool:
    """The any_order rule for the schemas of this file (objects, arrays, scalars)."""
    if schema is True or schema == {}:
        return True
    if schema is False:
        return False
    # The keywords not about entries or items (type, enum, bounds of scalars): as JSON Schema.
    base = {k: v for k, v in schema.items() if k not in RELAXED}
    if not jsonschema.Draft202012Validator(base).is_valid(plain(value)):
        return False
    if isinstance(value, Pairs):
        props = schema.get("properties", {})
        low = max(schema.get("minProperties", 0), len(set(schema.get("required", []))))
        high = schema.get("maxProperties")
        if len(value) < low or (high is not None and len(value) > high):
            return False
        # Strict (the default): no undeclared key unless additionalProperties allows it.
        extra = schema.get("additionalProperties", False if "properties" in schema else True)
        for key, item in value:
            sub = props[key] if key in props else extra
            if not relaxed_valid(sub, item):
                return False
        return True
    if isinstance(value, list):
        return all(relaxed_valid(schema.get("items", True), item) for item in value)
    return True


def plain(value):
    """A parsed document back as Python values (the last of repeated keys wins)."""
    if isinstance(value, Pairs):
        return {k: plain(v) for k, v in value}
    if isinstance(value, list):
        return [plain(v) for v in value]
    return value


def dump(value) -> str:
    """Compact JSON of a value whose Pairs are written in their order."""
    if isinstance(value, Pairs):
        return "{" + ",".join(json.dumps(k) + ":" + dump(v) for k, v in value) + "}"
    if isinstance(value, list):
        return "[" + ",".join(dump(v) for v in value) + "]"
    return json.dumps(value)


def as_pairs(value, rng: random.Random):
    """A Python value with every object's keys in a random order."""
    if isinstance(value, dict):
        items = [(k, as_pairs(v, rng)) for k, v in value.items()]
        rng.shuffle(items)
        return Pairs(items)
    if isinstance(value, list):
        return [as_pairs(v, rng) for v in value]
    return value


def mutations(doc, rng: random.Random):
    """Variants of a document's top-level object: an entry dropped, repeated, given a
    value of another type, an unknown key added."""
    if not isinstance(doc, Pairs):
        return []
    out = []
    if doc:
        i = rng.randrange(len(doc))
        out.append(Pairs(doc[:i] + doc[i + 1:]))
        out.append(Pairs(doc + [doc[i]]))
        out.append(Pairs(doc[:i] + [(doc[i][0], rng.choice(["x", 7, 1.5, None, True, [], Pairs()]))] + doc[i + 1:]))
    out.append(Pairs(doc + [("zz_unknown", 1)]))
    return out


SCHEMAS = {
    "required and optional": {
        "type": "object",
        "properties": {"name": {"type": "string", "maxLength": 4}, "age": {"type": "integer", "minimum": 0},
                       "tag": {"enum": ["a", "b"]}},
        "required": ["name", "age"],
    },
    "additional schema": {
        "type": "object",
        "properties": {"id": {"type": "integer"}},
        "required": ["id"],
        "additionalProperties": {"type": "boolean"},
    },
    "bounded count": {
        "type": "object",
        "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}, "c": {"type": "null"}},
        "minProperties": 1,
        "maxProperties": 2,
    },
    "nested": {
        "type": "object",
        "properties": {
            "point": {"type": "object", "properties": {"x": {"type": "integer"}, "y": {"type": "integer"}},
                      "required": ["x", "y"]},
            "items": {"type": "array", "items": {"type": "object", "properties": {"k": {"type": "string"}},
                                                  "required": ["k"]}, "maxItems": 2},
        },
        "required": ["point"],
    },
    "no properties": {"type": "object", "additionalProperties": False},
}


@pytest.fixture(scope="module")
def starts():
    return {name: xgr2.compile(xgr2.Grammar.from_json_schema(s, any_whitespace=False, any_order=True),
                               BYTES).initial_state()
            for name, s in SCHEMAS.items()}


@pytest.mark.parametrize("name", list(SCHEMAS))
def test_shuffled_and_mutated_documents_follow_the_rule(starts, name):
    schema = SCHEMAS[name]
    rng = random.Random(name)
    checked = {"valid": 0, "invalid": 0}

    @settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
    @given(from_schema(schema), st.integers(0, 2**32 - 1))
    def check(instance, seed):
        rng.seed(seed)
        doc = as_pairs(instance, rng)
        for variant in [doc] + mutations(doc, rng):
            text = dump(variant)
            expected = relaxed_valid(schema, parse(text))
            checked["valid" if expected else "invalid"] += 1
            assert accepts(starts[name], text) == expected, text

    check()
    assert checked["valid"] and (checked["invalid"] or name == "no properties"), checked


def test_the_rule_is_wider_than_the_schema_only_as_documented():
    """A valid instance in any key order is accepted; a repeated or missing required key
    is too (the documented relaxation); a wrong value or an unknown key never is."""
    schema = SCHEMAS["required and optional"]
    start = xgr2.compile(xgr2.Grammar.from_json_schema(schema, any_order=True), BYTES).initial_state()
    assert accepts(start, '{"age": 3, "name": "Al"}')
    assert accepts(start, '{ "tag" : "a" ,\n"name": "Al", "age": 3}')
    assert accepts(start, '{"age": 3, "age": 4}')  # two entries: the count of required names
    assert not accepts(start, '{"age": 3}')  # one entry, two required
    assert not accepts(start, '{"age": -1, "name": "Al"}')
    assert not accepts(start, '{"age": 3, "name": "Al", "other": 1}')
    strict = xgr2.compile(xgr2.Grammar.from_json_schema(schema), BYTES).initial_state()
    assert not accepts(strict, '{"age": 3, "name": "Al"}')  # declared order without any_order


def test_without_any_order_the_grammar_is_unchanged():
    schema = SCHEMAS["nested"]
    assert str(xgr2.Grammar.from_json_schema(schema)) == str(xgr2.Grammar.from_json_schema(schema, any_order=False))
    assert str(xgr2.Grammar.from_json_schema(schema)) != str(xgr2.Grammar.from_json_schema(schema, any_order=True))


def test_count_bounds_that_no_object_meets_are_refused_like_any_empty_schema():
    schema = {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a", "b"],
              "additionalProperties": True, "maxProperties": 1}
    with pytest.raises(xgr2.SchemaError, match="no JSON value"):
        xgr2.Grammar.from_json_schema(schema, any_order=True)
    # Inside an object that may leave it out: that property is never written.
    outer = {"type": "object", "properties": {"in": schema, "n": {"type": "integer"}}}
    start = xgr2.compile(xgr2.Grammar.from_json_schema(outer, any_order=True), BYTES).initial_state()
    assert accepts(start, '{"n": 1}')
    for text in ('{"in": {"a": 1}}', '{"in": {"a": 1, "b": 2}}', '{"in": {}}'):
        assert not accepts(start, text)


def tag_start(style: str, schema: dict):
    spec = {"type": "structural_tag",
            "format": {"type": "json_schema", "json_schema": schema, "style": style, "any_order": True}}
    return xgr2.compile(xgr2.Grammar.from_structural_tag(spec), BYTES).initial_state()


def test_structural_tag_json_style():
    start = tag_start("json", SCHEMAS["required and optional"])
    assert accepts(start, '{"age": 3, "name": "Al"}')
    assert not accepts(start, '{"age": "3", "name": "Al"}')


XML_SCHEMA = {"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
              "required": ["city", "days"]}
XML_ENTRY = {
    "qwen_xml": ("<parameter={}>{}</parameter>", {"city": "Paris", "days": "3"}),
    "minimax_xml": ('<parameter name="{}">{}</parameter>', {"city": "Paris", "days": "3"}),
    "glm_xml": ("<arg_key>{}</arg_key><arg_value>{}</arg_value>", {"city": "Paris", "days": "3"}),
}


@pytest.mark.parametrize("style", list(XML_ENTRY))
def test_structural_tag_xml_styles(style):
    form, values = XML_ENTRY[style]
    start = tag_start(style, XML_SCHEMA)
    entry = {k: form.format(k, v) for k, v in values.items()}
    assert accepts(start, entry["days"] + "\n" + entry["city"])
    assert accepts(start, entry["city"] + entry["days"])
    assert accepts(start, entry["days"] + entry["days"])  # two entries, repeats allowed
    assert not accepts(start, entry["city"])  # fewer entries than required names
    assert not accepts(start, entry["city"] + form.format("days", "three"))
    assert not accepts(start, entry["city"] + form.format("other", "1"))


def test_the_option_is_part_of_the_grammar_cache_key():
    """The same schema text with and without any_order compiles to different grammars
    (the front end caches schemas by text and options)."""
    schema = json.dumps(SCHEMAS["bounded count"])
    relaxed = xgr2.compile(xgr2.Grammar.from_json_schema(schema, any_order=True), BYTES).initial_state()
    ordered = xgr2.compile(xgr2.Grammar.from_json_schema(schema), BYTES).initial_state()
    assert accepts(relaxed, '{"b":1,"a":2}') and not accepts(ordered, '{"b":1,"a":2}')

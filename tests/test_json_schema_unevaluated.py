"""unevaluatedProperties / unevaluatedItems: rewritten before allOf merging, checked
document by document against the `jsonschema` validator (the family tests in
test_json_schema.py draw instances of tests/schemas/unevaluated.json)."""

from __future__ import annotations

import itertools
import json

import jsonschema
import pytest

import xgr2
from parsing import accepts

BYTES = xgr2.TokenizerInfo([bytes([i]) for i in range(256)] + [b"<eos>"], stop_token_ids=[256])


def start(schema, **options):
    grammar = xgr2.Grammar.from_json_schema(schema, any_whitespace=False, **options)
    return xgr2.compile(grammar, BYTES).initial_state()


def objects(names, values=(1, "s", True)):
    """Every object over ``names`` (in that order) with values from ``values``."""
    out = []
    for k in range(len(names) + 1):
        for subset in itertools.combinations(names, k):
            for vals in itertools.product(values, repeat=k):
                out.append(dict(zip(subset, vals)))
    return out


def agreement(schema, docs, strict):
    """(accepted but invalid, valid but rejected) over ``docs``, compact, in their key order."""
    state = start(schema, strict=strict)
    valid = jsonschema.Draft202012Validator(schema).is_valid
    wider = [d for d in docs if accepts(state, json.dumps(d, separators=(",", ":"))) and not valid(d)]
    narrower = [d for d in docs if valid(d) and not accepts(state, json.dumps(d, separators=(",", ":")))]
    return wider, narrower


def test_unevaluated_false_in_an_allof_branch_does_not_see_its_siblings():
    # The branch's unevaluatedProperties sees only the branch's own `a`: `b`, which the
    # other branch declares, is invalid. Merging the branches first made `b` look declared.
    schema = {"type": "object", "allOf": [
        {"properties": {"a": {"type": "integer"}}, "unevaluatedProperties": False},
        {"properties": {"b": {"type": "integer"}}}]}
    for strict in (True, False):
        assert agreement(schema, objects(["a", "b", "c"]), strict) == ([], [])
    assert not accepts(start(schema), '{"a":1,"b":2}') and accepts(start(schema), '{"a":1}')


# (schema, names in the grammar's order: declared ones first, as the grammar writes them)
EXACT = {
    "discriminated-oneOf": (
        {"type": "object", "properties": {"kind": {"enum": ["x", "y"]}}, "oneOf": [
            {"properties": {"kind": {"const": "x"}, "x": {"type": "integer"}}, "required": ["kind"]},
            {"properties": {"kind": {"const": "y"}, "y": {"type": "string"}}, "required": ["kind"]}],
         "unevaluatedProperties": False}, ["kind", "x", "y", "z"]),
    "overlapping-oneOf": (  # both names present: both branches hold, so the oneOf fails
        {"type": "object", "oneOf": [{"properties": {"x": {"type": "integer"}}, "required": ["x"]},
                                     {"properties": {"y": {"type": "integer"}}, "required": ["y"]}],
         "unevaluatedProperties": False}, ["x", "y", "z"]),
    "if-then-else": (
        {"type": "object", "if": {"properties": {"x": {"type": "integer"}}, "required": ["x"]},
         "then": {"properties": {"y": {"type": "string"}}}, "else": {"properties": {"z": {"type": "boolean"}}},
         "unevaluatedProperties": False}, ["x", "y", "z", "w"]),
    "ref": (
        {"type": "object", "$defs": {"d": {"properties": {"x": {"type": "integer"}}}}, "$ref": "#/$defs/d",
         "unevaluatedProperties": {"type": "string"}}, ["x", "y", "z"]),
    "patterns": (
        {"type": "object", "properties": {"x": {"type": "integer"}}, "patternProperties": {"^y": {"type": "boolean"}},
         "unevaluatedProperties": {"type": "integer"}}, ["x", "y", "z"]),
}


@pytest.mark.parametrize("name", EXACT)
def test_exact_cases_agree_with_jsonschema(name):
    schema, names = EXACT[name]
    docs = objects(names, (1, "x", "y", True))
    for strict in (True, False):
        wider, narrower = agreement(schema, docs, strict)
        assert wider == []
        if not strict:  # strict generates no undeclared name unless the schema allows it explicitly
            assert narrower == []


def test_overlapping_anyof_is_narrower_never_wider():
    # With both branches valid, jsonschema counts the properties of both as evaluated; the
    # grammar takes them branch by branch (documented as narrower).
    schema = {"type": "object", "anyOf": [{"properties": {"x": {"type": "integer"}}},
                                          {"properties": {"y": {"type": "integer"}}}],
              "unevaluatedProperties": False}
    wider, narrower = agreement(schema, objects(["x", "y", "z"]), strict=False)
    assert wider == [] and narrower == [{"x": 1, "y": 1}]


def test_items_agree_with_jsonschema():
    schemas = [
        {"type": "array", "prefixItems": [{"type": "integer"}], "unevaluatedItems": {"type": "string"}},
        {"type": "array", "allOf": [{"prefixItems": [{"type": "integer"}, {}]}], "unevaluatedItems": False},
        {"type": "array", "prefixItems": [{"type": "integer"}], "items": {"type": "boolean"}, "unevaluatedItems": False},
        {"type": "array", "if": {"minItems": 2}, "then": {"prefixItems": [{}, {"type": "string"}]},
         "unevaluatedItems": False},
    ]
    arrays = [list(p) for n in range(4) for p in itertools.product((1, 2, "s", True), repeat=n)]
    for schema in schemas:
        assert agreement(schema, arrays, strict=False) == ([], []), schema


@pytest.mark.parametrize("schema,pointer", [
    ({"type": "object", "dependentSchemas": {"a": {"properties": {"b": {}}}}, "unevaluatedProperties": False},
     "/unevaluatedProperties"),
    ({"type": "object", "anyOf": [{"properties": {"a": {}}}], "oneOf": [{"properties": {"b": {}}}],
      "unevaluatedProperties": False}, "/unevaluatedProperties"),
    ({"type": "object", "allOf": [{"anyOf": [{"properties": {"a": {}}}, {}]}], "unevaluatedProperties": False},
     "/unevaluatedProperties"),
    ({"type": "array", "contains": {"type": "integer"}, "unevaluatedItems": False}, "/unevaluatedItems"),
])
def test_evaluations_that_depend_on_the_instance_are_refused(schema, pointer):
    with pytest.raises(xgr2.SchemaError) as info:
        xgr2.Grammar.from_json_schema(schema)
    assert info.value.pointer == pointer
    with pytest.warns(xgr2.SchemaWarning):
        xgr2.Grammar.from_json_schema(schema, unsupported="warn")  # the keyword left out: wider

"""Two places where a JSON Schema keyword's meaning depends on where it stands, against
the `jsonschema` validator (which resolves embedded resources itself):

- item keywords merged from an allOf: `items` beside another schema's `prefixItems`
  still holds every position (Draft 2020-12 §10.3.1.2: `items` looks only at the
  `prefixItems` of its own schema object);
- `$ref` inside an embedded resource (`$id`): resolved against that resource's base URI
  (RFC 3986 §5.2), so `#/$defs/x` names the resource's own `$defs`.

The JSON-Schema-Test-Suite cases of the same names failed before these were handled.
"""

from __future__ import annotations

import itertools
import json
import urllib.parse

import jsonschema
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import xgr2
from parsing import accepts
from test_json_schema import BYTES

VALUES = [1, 3, 6, "a", None]
ARRAYS = [list(t) for n in range(4) for t in itertools.product(VALUES, repeat=n)]
ITEM_SCHEMAS = [{"type": "integer"}, {"minimum": 3}, {"maximum": 5}, {"type": "string"}, {"const": 6}, True, False]


def start(schema):
    grammar = xgr2.Grammar.from_json_schema(schema, any_whitespace=False, strict=False)
    return xgr2.compile(grammar, BYTES).initial_state()


def assert_agrees(schema, validator_cls, instances):
    state = start(schema)
    validator = validator_cls(schema)
    for value in instances:
        text = json.dumps(value, separators=(",", ":"))
        assert accepts(state, text) == validator.is_valid(value), (schema, text)


item_schema = st.sampled_from(ITEM_SCHEMAS)


@st.composite
def array_parts_2020(draw):
    part = {}
    if draw(st.booleans()):
        part["prefixItems"] = draw(st.lists(item_schema, min_size=1, max_size=3))
    if draw(st.booleans()) or not part:
        part["items"] = draw(item_schema)
    return part


@st.composite
def array_parts_draft7(draw):
    part = {}
    if draw(st.booleans()):
        part["items"] = draw(st.lists(item_schema, min_size=1, max_size=3))
        if draw(st.booleans()):
            part["additionalItems"] = draw(item_schema)
    else:
        part["items"] = draw(item_schema)
    return part


def nest(parts, outer):
    """`parts` as an allOf, with `outer`'s keywords beside it (the shape the suite tests)."""
    return {"type": "array", **outer, "allOf": parts}


@settings(max_examples=150, deadline=None)
@given(st.lists(array_parts_2020(), min_size=1, max_size=3), array_parts_2020())
def test_items_beside_another_prefix_hold_every_position(parts, outer):
    assert_agrees(nest(parts, outer), jsonschema.Draft202012Validator, ARRAYS)


@settings(max_examples=100, deadline=None)
@given(st.lists(array_parts_draft7(), min_size=1, max_size=3), array_parts_draft7())
def test_draft7_tuple_items_merge_position_by_position(parts, outer):
    assert_agrees(nest(parts, outer), jsonschema.Draft7Validator, ARRAYS)


def test_suite_case_items_does_not_look_in_applicators():
    schema = {"allOf": [{"prefixItems": [{"minimum": 3}]}], "items": {"minimum": 5}}
    state = start(schema)
    assert not accepts(state, "[3,5]") and not accepts(state, "[3]")
    assert accepts(state, "[5,5]") and accepts(state, "[]")


def test_two_different_contains_in_one_allof_are_refused_not_narrowed():
    # One contains of both schemas would demand a single item meeting both: narrower.
    schema = {"type": "array", "allOf": [{"contains": {"type": "string"}}, {"contains": {"type": "integer"}}]}
    with pytest.raises(xgr2.SchemaError, match="contains"):
        xgr2.Grammar.from_json_schema(schema)
    with pytest.warns(xgr2.SchemaWarning):
        grammar = xgr2.Grammar.from_json_schema(schema, unsupported="warn", any_whitespace=False)
    state = xgr2.compile(grammar, BYTES).initial_state()
    assert accepts(state, '["a",1]')  # wider, never narrower


# ------------------------------------------------------------------ $id scopes
# (base of the embedded resource, reference) pairs; the expected target is computed by
# urllib.parse.urljoin (an independent RFC 3986 implementation).
REFS = [
    ("https://example.com/root.json", "#/$defs/v"),
    ("https://example.com/a/b/inner.json", "../c/other.json"),
    ("https://example.com/a/b/inner.json", "/x/y.json"),
    ("https://example.com/a/b/inner.json", "./sib.json#/$defs/v"),
    ("https://example.com/a/b/", "leaf.json"),
    ("https://example.com/a/b/inner.json", "//other.org/z.json"),
    ("urn:example:root", "#/$defs/v"),
]


@pytest.mark.parametrize("base,ref", REFS)
def test_ref_resolves_against_the_nearest_id(base, ref):
    target = urllib.parse.urljoin(base, ref) if not base.startswith("urn:") else base + ref
    doc, _, frag = target.partition("#")
    # The referring resource holds `v` = null, the target `v` = string (or is a string
    # schema itself), the root `v` = integer and a decoy resource `v` = boolean: the
    # instance that validates says which one the reference reached.
    own = {"type": "string"} if doc == base else {"type": "null"}
    referrer = {"$id": base, "$ref": ref, "$defs": {"v": own}}
    defs = {"v": {"type": "integer"}, "r": referrer,
            "d": {"$id": "https://decoy.example/d.json", "$defs": {"v": {"type": "boolean"}}}}
    if doc != base:
        defs["t"] = {"$id": doc, "$defs": {"v": {"type": "string"}}, **({} if frag else {"type": "string"})}
    schema = {"$id": "https://root.example/schema.json", "$defs": defs,
              "properties": {"default": {"$ref": base}}, "required": ["default"]}
    assert_agrees(schema, jsonschema.Draft202012Validator, [{"default": v} for v in ["s", 1, True, None]])


def test_suite_case_local_pointers_in_distinct_resources_stay_distinct():
    schema = {"$id": "https://example.com/root", "anyOf": [{"$ref": "#/$defs/value"}, {"$ref": "nested"}],
              "$defs": {"value": {"type": "integer"},
                        "resource": {"$id": "nested", "$ref": "#/$defs/value", "$defs": {"value": {"type": "string"}}}}}
    assert_agrees(schema, jsonschema.Draft202012Validator, ["value", 1, None, 1.5])


def test_refs_of_documents_without_ids_read_as_before():
    schema = {"$defs": {"a": {"type": "integer"}}, "properties": {"x": {"$ref": "#/$defs/a"}}}
    assert_agrees(schema, jsonschema.Draft202012Validator, [{"x": 1}, {"x": "a"}, {}])
    # Another document is refused, named as written (the document itself has no $id).
    with pytest.raises(xgr2.SchemaError, match=r"\$ref `other.json` names a document"):
        xgr2.Grammar.from_json_schema({"$defs": {"x": {"$id": "https://e.com/s.json"}}, "$ref": "other.json"})


@pytest.mark.parametrize("schema", [{"allOf": [{"prefixItems": {}}], "items": {"type": "integer"}},
                                    {"allOf": [{"items": {}}], "prefixItems": 3}])
def test_malformed_prefix_items_in_a_merge_is_still_an_error(schema):
    with pytest.raises(xgr2.SchemaError, match="prefixItems must be an array"):
        xgr2.Grammar.from_json_schema(schema)


@pytest.mark.parametrize("draft, validator_cls", [
    ("http://json-schema.org/draft-07/schema#", jsonschema.Draft7Validator),
    ("http://json-schema.org/draft-04/schema#", jsonschema.Draft4Validator),
    ("https://json-schema.org/draft/2020-12/schema", jsonschema.Draft202012Validator),
    (None, jsonschema.Draft202012Validator),
])
def test_keywords_beside_a_ref_follow_the_declared_draft(draft, validator_cls):
    # Drafts 3-7 ignore every keyword beside `$ref`; 2019-09 and later apply them too.
    defs = {"int": {"type": "integer"}, "small": {"type": "integer", "maximum": 5}}
    schemas = [
        {"$ref": "#/definitions/int", "type": "string", "definitions": defs},
        {"$ref": "#/definitions/int", "maximum": 3, "definitions": defs},
        {"type": "object", "properties": {"a": {"$ref": "#/definitions/small", "minimum": 2}}, "definitions": defs},
        {"type": "array", "items": {"$ref": "#/definitions/small", "enum": [1, 9]}, "definitions": defs},
    ]
    instances = [1, 2, 4, 9, "x", {"a": 1}, {"a": 4}, {"a": 9}, [1], [4], [9], []]
    for schema in schemas:
        if draft:
            schema = {"$schema": draft, **schema}
        try:
            assert_agrees(schema, validator_cls, instances)
        except xgr2.SchemaError as e:  # refused as unsatisfiable: then nothing validates
            assert "no JSON value is valid" in str(e)
            assert not any(validator_cls(schema).is_valid(v) for v in instances), schema


@pytest.mark.parametrize("draft, validator_cls", [
    ("http://json-schema.org/draft-04/schema#", jsonschema.Draft4Validator),
    ("http://json-schema.org/draft-07/schema#", jsonschema.Draft7Validator),
    ("https://json-schema.org/draft/2020-12/schema", jsonschema.Draft202012Validator),
])
def test_listed_integers_follow_the_declared_drafts_integer(draft, validator_cls):
    # Draft 4 validators reject 1.0 for `integer`; Draft 6 and later accept it. Texts,
    # not values: json.dumps would write 1.0 back as the text it came from.
    schemas = [
        {"type": "integer", "enum": [1, 2.0, 0, 100]},
        {"type": ["integer", "string"], "enum": [1, "a"]},
        {"type": "array", "enum": [[1, 2], [3.0]]},
        {"type": "object", "properties": {"n": {"type": "integer", "enum": [7]}}},
    ]
    texts = ["1", "1.0", "2", "2.0", "0", "-0", "0.0", "100", "100.0", '"a"', "[1,2]", "[1.0,2]", "[3]", "[3.0]",
             '{"n":7}', '{"n":7.0}']
    for schema in schemas:
        schema = {"$schema": draft, **schema}
        state = start(schema)
        validator = validator_cls(schema)
        for text in texts:
            value = json.loads(text)
            # The grammar may be narrower (one spelling of a listed number), never wider.
            if accepts(state, text):
                assert validator.is_valid(value), (schema, text)
            elif validator.is_valid(value) and "." not in text:
                pytest.fail(f"{text} rejected under {schema}")

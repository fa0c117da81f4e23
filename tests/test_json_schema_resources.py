"""`$ref`s to other documents: ``Grammar.from_json_schema(..., resources={uri: schema})``
against jsonschema with the same documents in a ``referencing.Registry``.

Each case compiles to a grammar that agrees with the validator on every instance listed
(compact JSON, keys in the order written). Resource names are taken as given (a relative
one against one unnamed base), as a registry keeps them; the cases a review found where
xgr2 read documents otherwise than jsonschema (drafts mixed across documents, a resource
whose ``$id`` is not its name, two documents with one ``$id``, a resource under the
schema's own URI) must be refused or agree, never accept more.
"""

from __future__ import annotations

import json

import jsonschema
import pytest
import referencing
import referencing.jsonschema

import xgr2
from parsing import accepts
from test_json_schema import BYTES

DRAFT7 = "http://json-schema.org/draft-07/schema#"
DRAFT4 = "http://json-schema.org/draft-04/schema#"

UNITS = {"$defs": {"unit": {"enum": ["C", "F"]},
                   "reading": {"type": "object", "properties": {"value": {"type": "number"},
                                                                "unit": {"$ref": "#/$defs/unit"}},
                               "required": ["value", "unit"], "additionalProperties": False}}}
TREE = {"$id": "https://example.com/schemas/tree.json", "type": "object",
        "properties": {"name": {"$ref": "name.json"}, "children": {"type": "array", "items": {"$ref": "#"}}},
        "required": ["name"], "additionalProperties": False}

CASES = [
    # a relative reference into a resource, whose own local $ref stays inside it
    ({"$ref": "units.json#/$defs/reading"}, {"units.json": UNITS},
     [{"value": 1.5, "unit": "C"}, {"value": 1, "unit": "K"}, {"value": "1", "unit": "F"}, {"unit": "C"}]),
    # an absolute $id base: the resource's key is resolved against it
    ({"$id": "https://example.com/a/main.json", "type": "array", "items": {"$ref": "defs.json#/$defs/small"},
      "maxItems": 2},
     {"https://example.com/a/defs.json": {"$defs": {"small": {"type": "integer", "maximum": 9}}}},
     [[1, 2], [10], [1, 2, 3], [], ["x"]]),
    ({"$id": "https://example.com/a/main.json", "$ref": "../b/defs.json#/$defs/s"},
     {"https://example.com/b/defs.json": {"$defs": {"s": {"type": "string", "maxLength": 2}}}},
     ["ab", "abc", 1]),
    # recursion through a resource (a tree whose names live in another document)
    ({"$ref": "https://example.com/schemas/tree.json"},
     {"https://example.com/schemas/tree.json": TREE,
      "https://example.com/schemas/name.json": {"type": "string", "pattern": "^[a-z]+$"}},
     [{"name": "a"}, {"name": "a", "children": [{"name": "b", "children": [{"name": "c"}]}]},
      {"name": "a", "children": [{"name": "B"}]}, {"children": []}]),
    # a resource named by its own $id anchor, and two resources referring to each other
    ({"$ref": "a.json#point"},
     {"a.json": {"$defs": {"p": {"$anchor": "point", "type": "object", "properties": {"x": {"$ref": "b.json"}},
                                 "required": ["x"]}}},
      "b.json": {"anyOf": [{"type": "integer"}, {"$ref": "a.json#/$defs/p"}]}},
     [{"x": 1}, {"x": {"x": 2}}, {"x": "1"}, {}]),
    # an $id inside a resource (found by reading every resource), a broken resource unused
    ({"$ref": "https://example.com/real.json"},
     {"https://example.com/k.json": {"$defs": {"b": {"$id": "real.json", "type": "boolean"}}},
      "unused.json": "{ not JSON"},
     [True, 1]),
    # a resource without $schema is read in the schema's draft (Draft 7: items as an array)
    ({"$schema": DRAFT7, "$ref": "pair.json"}, {"pair.json": {"type": "array", "items": [{"type": "integer"},
                                                                                         {"type": "string"}],
                                                              "additionalItems": False}},
     [[1, "a"], [1], [1, "a", 2], ["a", 1]]),
    # Draft 4 throughout (its boolean exclusiveMaximum, read in the resource too)
    ({"$schema": DRAFT4, "$ref": "max.json"}, {"max.json": {"type": "integer", "maximum": 5,
                                                            "exclusiveMaximum": True}},
     [4, 5, 6]),
]


def registry_for(schema, resources) -> referencing.Registry:
    """The resources in a registry, each read in its own draft (else the schema's)."""
    default = referencing.jsonschema.specification_with(schema.get("$schema", "https://json-schema.org/draft/2020-12/schema"))
    return referencing.Registry().with_resources(
        (uri, referencing.Resource.from_contents(doc, default_specification=default))
        for uri, doc in resources.items() if not isinstance(doc, str)
    )


@pytest.mark.parametrize("schema, resources, instances", CASES, ids=[str(i) for i in range(len(CASES))])
def test_grammar_agrees_with_jsonschema_and_its_registry(schema, resources, instances):
    grammar = xgr2.Grammar.from_json_schema(schema, any_whitespace=False, strict=False, resources=resources)
    state = xgr2.compile(grammar, BYTES).initial_state()
    validator = jsonschema.validators.validator_for(schema)(schema, registry=registry_for(schema, resources))
    verdicts = []
    for value in instances:
        text = json.dumps(value, separators=(",", ":"))
        assert accepts(state, text) == validator.is_valid(value), (schema, text)
        verdicts.append(validator.is_valid(value))
    assert True in verdicts and False in verdicts  # each case tells valid from invalid


D2020 = "https://json-schema.org/draft/2020-12/schema"
NEVER_WIDER = [
    ({"type": "object", "properties": {"a": {"$ref": "schema.json"}}}, {"schema.json": {"type": "integer"}},
     [{"a": {}}, {"a": 1}]),
    ({"type": "object", "properties": {"a": {"$ref": "d/x.json"}, "b": {"$ref": "x.json"}}},
     {"d/x.json": {"type": "integer"}, "k.json": {"$id": "x.json", "type": "string"}}, [{"b": 1}, {"b": "s"}]),
    ({"$id": "schemas/main.json", "$ref": "defs.json"},
     {"schemas/defs.json": {"type": "integer"}, "a/schemas/defs.json": {"type": "string"}}, ["a", 1]),
    ({"type": "object", "properties": {"a": {"$ref": "https://e.com/y.json"}, "b": {"$ref": "x.json"}}},
     {"good.json": {"$defs": {"y": {"$id": "https://e.com/y.json"}, "x": {"$id": "https://e.com/x.json", "type": "string"}}},
      "x.json": {"$schema": DRAFT4, "type": "integer"}}, [{"b": "s"}, {"b": 1}]),
    ({"type": "object", "properties": {"a": {"$ref": "q.json"}, "b": {"$ref": "https://e.com/x.json"}}},
     {"p.json": {"$id": "https://e.com/x.json", "type": "integer"}, "q.json": {"$id": "https://e.com/x.json", "type": "string"}},
     [{"b": "s"}, {"b": 1}]),
    ({"$ref": "r7.json#/definitions/a"},
     {"r7.json": {"$schema": DRAFT7, "definitions": {"a": {"$ref": "#/definitions/b", "maximum": 5},
                                                     "b": {"type": "integer"}}}}, [7, 3]),
    ({"$schema": DRAFT7, "$ref": "r.json#/$defs/a"},
     {"r.json": {"$schema": D2020, "$defs": {"a": {"type": "object", "dependencies": {"x": ["y"]}}}}}, [{"x": 1}, {}]),
    ({"$ref": "https://e.com/k/key.json"},
     {"https://e.com/k/key.json": {"$id": "https://e.com/other/x.json", "$ref": "y.json"},
      "https://e.com/k/y.json": {"type": "integer"}, "https://e.com/other/y.json": {"type": "string"}}, ["a", 1]),
]


@pytest.mark.parametrize("schema, resources, instances", NEVER_WIDER, ids=[str(i) for i in range(len(NEVER_WIDER))])
def test_documents_read_otherwise_than_jsonschema_are_refused_or_agree(schema, resources, instances):
    try:
        grammar = xgr2.Grammar.from_json_schema(schema, any_whitespace=False, strict=False, resources=resources)
    except xgr2.SchemaError:
        return
    state = xgr2.compile(grammar, BYTES).initial_state()
    validator = jsonschema.validators.validator_for(schema)(schema, registry=registry_for(schema, resources))
    for value in instances:
        text = json.dumps(value, separators=(",", ":"))
        assert accepts(state, text) == validator.is_valid(value), (schema, text)


def test_a_chain_of_thousands_of_refs_is_bounded_not_a_crash():
    resources = {f"r{i}.json": {"type": "array", "items": {"$ref": f"r{i + 1}.json"}} for i in range(6000)}
    # The depth limit, or (a sanitizer build's larger frames) the stack check before it.
    with pytest.raises(xgr2.SchemaError, match="nested more than|more than this thread's stack holds"):
        xgr2.Grammar.from_json_schema({"$ref": "r0.json"}, resources=resources)


def test_a_document_not_given_is_an_error_naming_resources():
    with pytest.raises(xgr2.SchemaError, match="resources") as info:
        xgr2.Grammar.from_json_schema({"properties": {"a": {"$ref": "other.json"}}}, resources={"units.json": UNITS})
    assert info.value.pointer == "/properties/a/$ref"


def test_a_resource_nothing_refers_to_is_never_read():
    grammar = xgr2.Grammar.from_json_schema({"type": "integer"}, resources={"bad.json": "{", "d3.json": {
        "$schema": "http://json-schema.org/draft-03/schema#"}})
    assert accepts(xgr2.compile(grammar, BYTES).initial_state(), "12")


def test_bad_resources_are_clear_errors():
    with pytest.raises(xgr2.SchemaError, match="resource `bad.json` is not valid JSON"):
        xgr2.Grammar.from_json_schema({"$ref": "bad.json"}, resources={"bad.json": "{"})
    with pytest.raises(TypeError, match="resources must map"):
        xgr2.Grammar.from_json_schema({}, resources=[("a.json", {})])
    with pytest.raises(TypeError, match="resource 'a.json' must be"):
        xgr2.Grammar.from_json_schema({}, resources={"a.json": 3})
    with pytest.raises(xgr2.SchemaError, match="documents of different drafts"):
        xgr2.Grammar.from_json_schema({"$schema": DRAFT4, "$ref": "a.json"},
                                      resources={"a.json": {"$schema": DRAFT7, "type": "integer"}})


def test_resources_are_part_of_the_cache_key():
    """The front end caches results by schema text and options: the same schema with other
    resources must not reuse a grammar."""
    schema = {"$ref": "n.json"}
    small = xgr2.compile(xgr2.Grammar.from_json_schema(schema, resources={"n.json": {"maximum": 5, "type": "integer"}},
                                                       any_whitespace=False), BYTES).initial_state()
    large = xgr2.compile(xgr2.Grammar.from_json_schema(schema, resources={"n.json": {"maximum": 50, "type": "integer"}},
                                                       any_whitespace=False), BYTES).initial_state()
    assert not accepts(small, "7") and accepts(large, "7")


METASCHEMA_CASES = [
    ({"$schema": D2020, "type": "object",
      "properties": {"t": {"$ref": "https://json-schema.org/draft/2020-12/meta/validation#/$defs/simpleTypes"}}},
     [{"t": "string"}, {"t": "strin"}, {"t": 1}]),
    ({"$schema": "http://json-schema.org/draft-07/schema#", "type": "object",
      "properties": {"n": {"$ref": "http://json-schema.org/draft-07/schema#/definitions/nonNegativeInteger"}}},
     [{"n": 0}, {"n": -1}, {"n": 2.5}, {"n": 7}]),
]


@pytest.mark.parametrize("schema, instances", METASCHEMA_CASES)
def test_refs_to_json_schema_metaschemas_come_from_jsonschema_specifications(schema, instances):
    # Not given in resources=: read from the package jsonschema itself resolves them with.
    pytest.importorskip("jsonschema_specifications")
    state = xgr2.compile(xgr2.Grammar.from_json_schema(schema, any_whitespace=False), BYTES).initial_state()
    validator = jsonschema.validators.validator_for(schema)(schema)
    verdicts = [validator.is_valid(v) for v in instances]
    assert [accepts(state, json.dumps(v, separators=(",", ":"))) for v in instances] == verdicts
    assert True in verdicts and False in verdicts


def test_metaschemas_the_schema_or_caller_gives_are_not_added_again():
    # A document given under another spelling of its URI (with `#`), or embedded in the
    # schema under its `$id` (a bundler's trimmed copy), is that document: the package's
    # copy must not be added beside it (two documents with one `$id` are an error).
    pytest.importorskip("jsonschema_specifications")
    d7 = "http://json-schema.org/draft-07/schema#"
    custom = {"$id": d7, "definitions": {"nonNegativeInteger": {"type": "integer", "minimum": 5}}}
    schema = {"$schema": d7, "type": "object", "properties": {"n": {"$ref": d7 + "/definitions/nonNegativeInteger"}}}
    state = xgr2.compile(xgr2.Grammar.from_json_schema(schema, any_whitespace=False, resources={d7: custom}),
                         BYTES).initial_state()
    assert [accepts(state, f'{{"n":{n}}}') for n in (4, 5)] == [False, True]  # the caller's copy, not the package's
    validation = "https://json-schema.org/draft/2020-12/meta/validation"
    trimmed = {"$id": validation, "$defs": {"simpleTypes": {"enum": ["string", "null"]}}}
    schema = {"$schema": D2020, "type": "object", "properties": {"t": {"$ref": validation + "#/$defs/simpleTypes"}},
              "$defs": {"v": trimmed}}
    state = xgr2.compile(xgr2.Grammar.from_json_schema(schema, any_whitespace=False), BYTES).initial_state()
    assert [accepts(state, f'{{"t":"{t}"}}') for t in ("string", "null", "object")] == [True, True, False]

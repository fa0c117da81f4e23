"""The conditionals case split (SplitByDiscriminator in csrc/frontends/json_schema.cc).

An allOf of three or more if/then/else whose `if`s test one property by const / enum is
compiled as one case per tested value. Its grammar must accept the same JSON values as the
pair-by-pair translation, under strict=True (undeclared properties not generated) too.
Oracles:

- the unsplit translation: the same schema with each conditional wrapped in a one-item
  allOf (no longer "plain", so never split; merged the same way otherwise);
- a reference written here from the documented rules: jsonschema validity and, under
  strict, no extra key where a name is declared; declared names are those of the base
  and of the allOf's plain items, and per conditional those of its `if` (whether it holds
  or not) and of the branch taken.

Values are compared in every key order (a value is accepted if some order of its keys
is). Where the allOf's plain items all come before its conditionals and every `if` tests
P alone, the grammar's order is also checked exactly: declared names in merge order (base
and plain items, then per conditional its `if`'s names, then its branch's), required
names without a declaration after them (sorted), extra keys last. (With plain items after
a conditional, the pair-by-pair merge puts their names first or last depending on where
pair merges happen; with an `if` that also tests another property, a case keeps a
conditional on the rest, merged as alternatives, whose names may come after later items'.)
"""

from __future__ import annotations

import copy
import itertools
import json
import random

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import xgr2
from parsing import accepts
from test_json_schema import BYTES, is_valid

P = "k"
VALUES = [1, 2, 3, "a", None]
NAMES = ["z", "y", "one"]
POOL = [None, 1, 2, 3, "a", "s", True, [], {}]


def compiled(schema, strict: bool):
    grammar = xgr2.Grammar.from_json_schema(json.dumps(schema), strict=strict, any_whitespace=False)
    return xgr2.compile(grammar, BYTES).initial_state()


def unsplit(schema):
    """The same schema, translated pair by pair: each conditional in a one-item allOf."""
    out = copy.deepcopy(schema)
    out["allOf"] = [{"allOf": [item]} if "if" in item else item for item in schema["allOf"]]
    return out


def listed(test) -> bool:
    """A const / enum test, as the split reads one (only type and annotations beside)."""
    return isinstance(test, dict) and ("const" in test or "enum" in test) and set(test) <= {"const", "enum", "type"}


def splits(schema) -> bool:
    """Whether the front end splits the schema's allOf (its conditions, mirrored)."""
    conds = [c for c in schema.get("allOf", []) if "if" in c and set(c) <= {"if", "then", "else"} and len(c) > 1]
    votes = sum(1 for c in conds if P in c["if"].get("required", []) and listed(c["if"].get("properties", {}).get(P)))
    return len(conds) >= 3 and votes >= 2


def layout(schema, doc: dict) -> tuple[list[str], list[str]]:
    """Declared names of the schema for ``doc`` in the grammar's order, and the required
    names without a declaration (sorted)."""
    names: list[str] = []
    required: set[str] = set()

    def declare(s, with_required=True):
        if isinstance(s, dict):
            for n in s.get("properties", {}):
                if n not in names:
                    names.append(n)
            if with_required:
                required.update(s.get("required", []))

    declare(schema)
    for item in schema.get("allOf", []):  # plain items: beside the branches, first
        if "if" not in item:
            declare(item)
    for item in schema.get("allOf", []):
        if "if" not in item or ("then" not in item and "else" not in item):  # no branch: no effect
            continue
        holds = is_valid(item["if"], doc)
        declare(item["if"], with_required=holds)
        declare(item.get("then") if holds else item.get("else"))
    return names, sorted(required - set(names))


def order_is_defined(schema) -> bool:
    """Whether no plain allOf item comes after a conditional and every `if` tests P alone
    (see the module docstring)."""
    items = schema.get("allOf", [])
    kinds = ["if" in item for item in items]
    if any(not kinds[i] and any(kinds[:i]) for i in range(len(kinds))):
        return False
    return all(set(item["if"].get("properties", {})) <= {P} for item in items if "if" in item)


def dump(doc, keys=None) -> str:
    if not isinstance(doc, dict):
        return json.dumps(doc, separators=(",", ":"))
    return "{" + ",".join(json.dumps(k) + ":" + dump(doc[k]) for k in (keys if keys is not None else doc)) + "}"


def expected(schema, doc, strict: bool) -> tuple[str, bool]:
    """The document's text in the grammar's order, and whether its value is accepted."""
    if not isinstance(doc, dict):
        return dump(doc), is_valid(schema, doc)
    names, required_only = layout(schema, doc)
    extra = [k for k in doc if k not in names + required_only]
    keys = [n for n in names + required_only if n in doc] + extra
    closed = strict and bool(names)  # a schema that declares no property allows any
    return dump(doc, keys), is_valid(schema, doc) and not (closed and extra)


def accepts_value(start, doc) -> bool:
    """Whether some order of the document's keys is accepted."""
    if not isinstance(doc, dict):
        return accepts(start, dump(doc))
    return any(accepts(start, dump(doc, keys)) for keys in itertools.permutations(doc))


def check(schema, docs, strict: bool):
    """Split grammar == reference, and == the pair-by-pair grammar unless that one is
    refused (past 256 branches): on values, and on texts where the order is defined."""
    assert splits(schema)
    split_start = compiled(schema, strict)
    try:
        unsplit_start = compiled(unsplit(schema), strict)
    except xgr2.SchemaError as e:
        assert "256 branches" in str(e)
        unsplit_start = None
    starts = [split_start] if unsplit_start is None else [split_start, unsplit_start]
    for doc in docs:
        text, ok = expected(schema, doc, strict)
        for start in starts:
            assert accepts_value(start, doc) == ok, (doc, strict, ok, start is split_start)
            if order_is_defined(schema):
                assert accepts(start, text) == ok, (text, strict, ok, start is split_start)


# ------------------------------------------------------------------ the reverted case
# Split before the fix, under strict: `z` (declared only by the third `if`, which the case
# k = 1 decides) was dropped, so {"k":1,"z":null,"one":null} was rejected.
REVERTED = {"allOf": [
    {"if": {"type": "object", "properties": {"k": {"const": 1}}, "required": ["k"]}, "then": {"required": ["one"]}},
    {"if": {"properties": {"k": {"const": 2}}, "required": ["k"]}, "then": {"maxProperties": 1}},
    {"if": {"properties": {"k": {"enum": [2, 3]}, "z": {"type": "null"}}, "required": ["k", "z"]},
     "then": False, "else": {"minProperties": 1}}]}

FAMILY_DOCS = [
    {"k": 1, "z": None, "one": None}, {"k": 1, "z": "s", "one": None}, {"k": 1, "z": None}, {"k": 1, "one": 2},
    {"k": 1, "z": None, "one": None, "zz": 1}, {"k": 2}, {"k": 2, "z": "s"}, {"k": 2, "z": None}, {"k": 3, "z": 1},
    {"k": 3, "z": None}, {"k": 3}, {"k": 4, "z": None}, {"k": "a", "z": None, "one": 1}, {"z": None}, {"z": 1},
    {"one": 1, "z": None}, {}, 1, "a", None, [],
]


@pytest.mark.parametrize("strict", [True, False])
def test_reverted_case_keeps_the_names_of_every_if(strict):
    check(REVERTED, FAMILY_DOCS, strict)
    start = compiled(REVERTED, strict)
    assert accepts(start, '{"k":1,"z":null,"one":null}')


# cfn-lint's engine-version shape: a type test of P, then a const test of P and another
# property per value; a property declared only in base, and a plain item between
# conditionals. Pair by pair it passes 256 branches: only the reference checks it
# (TABLE_SMALL: both).
TABLE = {"type": "object", "properties": {"n": {"type": "integer"}}, "allOf": [
    {"if": {"properties": {"k": {"type": "string"}}, "required": ["k"]},
     "then": {"properties": {"k": {"enum": ["a", "b", "c"]}}}},
    {"if": {"properties": {"k": {"const": "a"}, "z": {"type": ["string", "integer"]}}, "required": ["k", "z"]},
     "then": {"properties": {"z": {"enum": ["1", 2]}}}},
    {"properties": {"y": {"type": "integer"}}},
    {"if": {"properties": {"k": {"const": "b"}, "z": {"type": ["string", "integer"]}}, "required": ["k", "z"]},
     "then": {"properties": {"z": {"enum": [3]}}}, "else": {"properties": {"one": {"type": "null"}}}},
    {"if": {"properties": {"k": {"enum": ["b", "c"]}, "y": {"const": 1}}, "required": ["k", "y"]}, "then": False}]}

TABLE_DOCS = [
    {"k": "a", "z": "1"}, {"k": "a", "z": 3}, {"k": "a", "z": True}, {"k": "a"}, {"k": "a", "y": 1, "n": 2},
    {"k": "b", "z": 3}, {"k": "b", "z": 3, "y": 1}, {"k": "b", "z": 3, "y": 2}, {"k": "b", "one": None},
    {"k": "c", "one": None, "y": 1}, {"k": "c", "one": None, "y": 2, "zz": 0}, {"k": "d"}, {"k": 1}, {"n": 1},
    {"z": 2, "one": None}, {}, "x",
]


TABLE_SMALL = {**TABLE, "allOf": TABLE["allOf"][:4]}


@pytest.mark.parametrize("strict", [True, False])
@pytest.mark.parametrize("schema", [TABLE, TABLE_SMALL], ids=["table", "table_small"])
def test_engine_version_table(schema, strict):
    check(schema, TABLE_DOCS, strict)


def test_split_compiles_what_pair_by_pair_refuses():
    """The split is the path taken: 9 overlapping enum tests pass 256 branches pair by pair."""
    values = ["a", "b", "c", "d"]
    schema = {"type": "object", "allOf": [
        {"if": {"properties": {"k": {"enum": [values[i % 4], values[(i + 1) % 4]]}, "z": {"const": i}},
                "required": ["k", "z"]}, "then": {"properties": {f"p{i}": {"const": i}}}, "else": {"minProperties": 1}}
        for i in range(9)]}
    with pytest.raises(xgr2.SchemaError, match="more than 256 branches"):
        xgr2.Grammar.from_json_schema(unsplit(schema))
    start = compiled(schema, True)
    doc = {"k": "a", "z": 0, "p0": 0}
    text, ok = expected(schema, doc, True)
    assert ok and accepts(start, text)


# ------------------------------------------------------------------ random schemas
def value_test(draw):
    kind = draw(st.sampled_from(["const", "enum", "type"]))
    if kind == "const":
        return {"const": draw(st.sampled_from(VALUES))}
    if kind == "enum":
        return {"enum": draw(st.lists(st.sampled_from(VALUES), min_size=1, max_size=3, unique=True))}
    return {"type": draw(st.sampled_from(["integer", "string", "null", ["string", "integer"]]))}


def branch(draw):
    kind = draw(st.sampled_from(["none", "false", "required", "properties", "absent", "max", "min"]))
    name = draw(st.sampled_from(NAMES))
    return {"none": None, "false": False, "required": {"required": [name]},
            "properties": {"properties": {name: value_test(draw)}}, "absent": {"properties": {name: False}},
            "max": {"maxProperties": 1}, "min": {"minProperties": 2}}[kind]


@st.composite
def schemas(draw):
    conds = []
    for _ in range(draw(st.integers(3, 4))):
        test = value_test(draw) if draw(st.booleans()) else {"const": draw(st.sampled_from(VALUES))}
        when = {"properties": {P: test}, "required": [P]}
        if draw(st.booleans()):
            other = draw(st.sampled_from(NAMES))
            when["properties"][other] = value_test(draw)
            if draw(st.booleans()):
                when["required"].append(other)
        if draw(st.booleans()):
            when = {"type": "object", **when}
        cond = {"if": when}
        for key in ("then", "else"):
            b = branch(draw)
            if b is not None:
                cond[key] = b
        conds.append(cond)
    if draw(st.booleans()):  # an item between two conditionals
        conds.insert(draw(st.integers(1, len(conds) - 1)), {"properties": {draw(st.sampled_from(NAMES)): {}}})
    schema = {"allOf": conds}
    if draw(st.booleans()):
        schema["properties"] = {draw(st.sampled_from(NAMES + [P])): {}}
    return schema


def documents(rng: random.Random, n: int) -> list:
    docs: list = [rng.choice(POOL) for _ in range(2)]
    for _ in range(n):
        keys = rng.sample([P, *NAMES, "zz"], rng.randint(0, 4))
        docs.append({key: rng.choice(VALUES if key == P else POOL) for key in keys})
    return docs


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(schema=schemas(), seed=st.integers(0, 2**32), strict=st.booleans())
def test_split_and_pair_by_pair_accept_the_same_documents(schema, seed, strict):
    assume(splits(schema))
    try:
        xgr2.Grammar.from_json_schema(json.dumps(unsplit(schema)), strict=strict)
    except xgr2.SchemaError:
        assume(False)  # no value at all, or pair by pair past 256 branches
    check(schema, documents(random.Random(seed), 40), strict)

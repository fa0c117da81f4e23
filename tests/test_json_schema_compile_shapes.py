"""Shapes the schema compiler writes for speed must keep the language exact.

- anyOf / oneOf whose branches only list values (`enum` and annotations) become one
  enum (ListedBranches in csrc/frontends/json_schema.cc): anyOf of the union, oneOf of
  the values exactly one branch lists, met once by the keywords beside the combinator.
- JSON's separators (`ws ":" ws`, `ws "," ws`) are shared rules, never inlined
  (Rule::shared): objects with hundreds of optional properties.
- The JSON reader (support/json.cc) moves what it parses and appends plain runs at once.
- An object or array that may be empty writes its bracket and what follows it once
  (`"{" ws ("}" | items ws "}")`, JsonText::Container).
- An array or object with no keyword of its kind (the containers of an untyped,
  `not`-ed or multi-typed value) is one shared rule per grammar (`any_array`,
  `any_object`, JsonSchemaCompiler's AnyContainer), except in the indent layout.
- One patternProperties pattern beside declared properties and no other undeclared
  keys (OpenAPI's `^x-`): the pattern's keys less the declared names it matches,
  without the automaton of every undeclared key (KeyRegions).

Oracle: jsonschema's verdict on every candidate value, each serialized in the layouts the
grammar is asked for; the grammar accepts the text iff the value is valid.
"""

from __future__ import annotations

import collections
import itertools
import json

import pytest

import xgr2
from parsing import accepts
from test_json_schema import BYTES, is_valid

WORDS = ["a", "b", "c", "ab", "", "é", "a\"b", 1, 1.0, 2, None, True]


def state(schema, **opts):
    return xgr2.compile(xgr2.Grammar.from_json_schema(json.dumps(schema), **opts), BYTES).initial_state()


LISTED = [
    {"anyOf": [{"enum": ["a", "b"], "description": "x"}, {"enum": ["b", "c"], "title": "y"}]},
    {"oneOf": [{"enum": ["a", "b"]}, {"enum": ["b", "c"]}, {"enum": ["ab"], "x-note": 1}]},
    {"oneOf": [{"enum": ["a", "a"]}, {"enum": ["c"]}]},  # listed twice by one branch: once
    {"anyOf": [{"enum": ["a", "ab", "é"]}, {"enum": ["c"]}], "pattern": "^a"},
    {"oneOf": [{"enum": ["a", "ab"]}, {"enum": ["ab", "c"]}], "maxLength": 1},
    {"anyOf": [{"enum": [1, "a"]}, {"enum": [2, None]}], "type": "integer"},
    {"anyOf": [{"enum": ["a", "b", "c"]}, {"enum": ["a\"b"]}], "enum": ["b", "a\"b", "zz"]},
    {"oneOf": [{"enum": [1, 2]}, {"enum": [2, True]}]},  # not all strings: the general oneOf
    {"anyOf": [{"enum": ["a"]}, {"enum": ["b"], "minLength": 2}]},  # a constraint beside: general path
    {"anyOf": [{"enum": ["a"]}], "oneOf": [{"enum": ["a", "b"]}, {"enum": ["c"]}]},
    {"type": "object", "properties": {"k": {"oneOf": [{"enum": ["a", "b"]}, {"enum": ["b"]}]}}, "required": ["k"]},
]


@pytest.mark.parametrize("schema", LISTED, ids=range(len(LISTED)))
def test_listed_branches_accept_exactly_the_valid_values(schema):
    start = state(schema, any_whitespace=False)
    values = WORDS + [{"k": w} for w in WORDS] + [{}]
    for value in values:
        text = json.dumps(value, separators=(",", ":"), ensure_ascii=False)
        assert accepts(start, text) == is_valid(schema, value), (schema, text)


def test_listed_branches_that_list_nothing_allow_nothing():
    for schema in ({"anyOf": [{"enum": []}, {"enum": []}]}, {"oneOf": [{"enum": ["a"]}, {"enum": ["a"]}]}):
        with pytest.raises(xgr2.SchemaError, match="no JSON value is valid"):
            xgr2.Grammar.from_json_schema(schema)


def test_many_optional_properties_compile_and_keep_their_order():
    # 300 optional properties (the shape of renovate's configuration schema).
    names = [f"p{i:03d}" for i in range(300)]
    schema = {"type": "object", "properties": {n: {"type": "integer"} for n in names}, "additionalProperties": False}
    start = state(schema)
    rng = list(range(300))
    for picked in ([0], [299], [5, 17, 298], rng[::7], rng):
        value = {names[i]: i for i in picked}
        for sep in ((",", ":"), (", ", ": "), (" ,\n", " :\t")):
            assert accepts(start, json.dumps(value, separators=sep)), (picked, sep)
    swapped = '{"p017": 1, "p005": 2}'
    assert not accepts(start, swapped)
    assert not accepts(start, '{"p001" : 1 , }')
    assert not accepts(start, '{"p001"' + " " * 21 + ': 1}')  # whitespace runs stay bounded (20)
    assert accepts(start, '{"p001"' + " " * 20 + ': 1}')


@pytest.mark.parametrize("indent", [None, 2])
def test_separators_in_other_layouts_are_unchanged(indent):
    schema = {"type": "object", "properties": {"a": {"type": "array", "items": {"type": "integer"}}, "b": {"type": "string"}}}
    start = state(schema, indent=indent) if indent else state(schema, any_whitespace=False)
    for value in ({"a": [1, 2, 3], "b": "x"}, {"b": "y"}, {"a": []}):
        good = json.dumps(value, indent=indent) if indent else json.dumps(value, separators=(",", ":"))
        assert accepts(start, good)
        assert not accepts(start, json.dumps(value, indent=4 if indent else None))


def test_grammar_text_round_trips_with_shared_separators():
    schema = {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"enum": ["x", "y"]}}}
    grammar = xgr2.Grammar.from_json_schema(schema)
    text = str(grammar)
    assert "colon ::=" in text and "comma ::=" in text
    again = xgr2.compile(xgr2.Grammar.from_ebnf(text), BYTES).initial_state()
    first = xgr2.compile(grammar, BYTES).initial_state()
    for a, b in itertools.product([None, 1, "q"], ["x", "z", None]):
        value = {k: v for k, v in (("a", a), ("b", b)) if v is not None}
        doc = json.dumps(value)
        assert accepts(first, doc) == accepts(again, doc) == is_valid(schema, value), doc


def test_reader_keeps_strings_with_escapes_and_non_ascii_runs():
    key = 'plain run \u00e9\u4e2d\U0001F600 \\ "quoted" \t tab/slash'
    schema = {"type": "object", "properties": {key: {"const": "v" * 300 + "\u00fc"}}, "required": [key]}
    start = state(schema, any_whitespace=False)
    good = json.dumps({key: "v" * 300 + "\u00fc"}, separators=(",", ":"))
    assert accepts(start, good)
    assert accepts(start, json.dumps({key: "v" * 300 + "\u00fc"}, separators=(",", ":"), ensure_ascii=False))
    assert not accepts(start, good.replace("tab/slash", "tab/slasH"))
    with pytest.raises(xgr2.SchemaError):
        xgr2.Grammar.from_json_schema('{"type": "string", "pattern": "a\x01"}')  # raw control character


def test_listed_values_rejected_by_a_decidable_keyword_need_no_undecidable_one():
    # -1 fails `minimum`, so `multipleOf` (not decided on a listed value) is never asked.
    schema = {"anyOf": [{"enum": ["a"]}, {"enum": [-1]}], "minimum": 0, "multipleOf": 2}
    start = state(schema, any_whitespace=False)
    for value in ("a", -1, 0, 2):
        assert accepts(start, json.dumps(value)) == is_valid(schema, value), value
    schema = {"anyOf": [{"enum": ["a"]}, {"enum": [[]]}], "minItems": 1, "uniqueItems": True}
    start = state(schema, any_whitespace=False)
    assert accepts(start, '"a"') and not accepts(start, "[]")


def test_identical_listed_branches_stay_small():
    values = [f"v{i}" for i in range(5000)]
    schema = {"anyOf": [{"enum": values}] * 100}
    start = state(schema, any_whitespace=False)
    assert accepts(start, '"v1"') and accepts(start, '"v4999"') and not accepts(start, '"v5000"')
    assert len(str(xgr2.Grammar.from_json_schema(schema))) < 200_000


def test_large_enums_merge_without_reaching_the_work_bound():
    # 6,000 x 6,000 string comparisons: the work bound counts compared arrays and objects only.
    values = [f"s{i}" for i in range(6000)]
    start = state({"allOf": [{"enum": values}, {"enum": values[::-1][:3000]}]}, any_whitespace=False)
    assert accepts(start, '"s5999"') and accepts(start, '"s3000"') and not accepts(start, '"s2999"')


PATTERN_BESIDE_NAMES = [
    {"type": "object", "properties": {"x-a": {"type": "string"}, "b": {}}, "patternProperties": {"^x-": {"type": "integer"}},
     "additionalProperties": False},
    {"type": "object", "properties": {"ab": {"type": "integer"}}, "patternProperties": {"b": {"type": "string"}}},
    {"type": "object", "properties": {"a": {}}, "patternProperties": {"^(a|é)$": {"type": "integer"}},
     "additionalProperties": False},
]


@pytest.mark.parametrize("schema", PATTERN_BESIDE_NAMES, ids=range(len(PATTERN_BESIDE_NAMES)))
def test_one_pattern_beside_declared_names_keys_exactly(schema):
    # strict: a key is written when declared or matched by the pattern, and then the
    # grammar accepts exactly the valid values.
    import re

    start = state(schema, any_whitespace=False)
    (pattern,) = schema["patternProperties"]
    for key in ["x-a", "x-b", "x-", "b", "ab", "a", "é", "c", "xb", "bb", "aé"]:
        for v in (1, "s", None):
            value = {key: v}
            text = json.dumps(value, separators=(",", ":"), ensure_ascii=False)
            written = key in schema["properties"] or re.search(pattern, key) is not None
            assert accepts(start, text) == (written and is_valid(schema, value)), (schema, text)
    assert accepts(start, "{}")


@pytest.mark.parametrize("layout", [{}, {"any_whitespace": False}, {"indent": 2}, {"separators": (", ", ": ")}])
def test_containers_that_may_be_empty_in_every_layout(layout):
    schema = {"type": "object", "properties": {"a": {"type": "array", "items": {"type": "integer"}, "maxItems": 2},
                                               "o": {"type": "object", "properties": {"x": {"type": "boolean"}}}}}
    start = state(schema, **layout)
    values = [{}, {"a": []}, {"a": [1]}, {"a": [1, 2]}, {"a": [1, 2, 3]}, {"o": {}}, {"o": {"x": True}},
              {"a": [], "o": {}}, {"a": [7], "o": {"x": False}}]
    indent = layout.get("indent")
    seps = layout.get("separators", (",", ":") if "any_whitespace" in layout else None)
    for value in values:
        text = json.dumps(value, indent=indent, separators=seps)
        assert accepts(start, text) == is_valid(schema, value), (layout, text)
    if not layout:  # any whitespace, inside empty containers too
        assert accepts(start, '{ "a" : [ ] , "o" : {\n} }') and not accepts(start, '{ "a" : [ , ] }')


ANY_CONTAINERS = [
    {"not": {"type": "string"}},
    {"type": ["array", "object", "null"]},
    {"anyOf": [{"type": "integer"}, {"type": "array"}], "minimum": 2},
    {"type": "object", "properties": {"k": {"not": {"const": "a"}}, "m": {"type": ["array", "boolean"]}}},
    {"type": "array", "items": {"not": {"type": "array"}}},  # keyworded outside, keyword-less inside
    {"type": "object", "additionalProperties": {"type": ["object", "string"]}, "maxProperties": 2},
]
CONTAINER_VALUES = ["a", 3, 1, None, True, [], [1, "a"], [[], {}], {}, {"k": "a"}, {"k": "b", "m": [1]},
                    {"m": True}, {"k": [], "m": [{"x": [None]}]}, {"a": {}, "b": "s", "c": 1}, [["x"]], [{"y": 2}]]


@pytest.mark.parametrize("layout", [{}, {"any_whitespace": False}, {"indent": 2}])
@pytest.mark.parametrize("schema", ANY_CONTAINERS, ids=range(len(ANY_CONTAINERS)))
def test_containers_without_keywords_accept_exactly_the_valid_values(schema, layout):
    start = state(schema, strict=False, **layout)  # JSON Schema's default: jsonschema's verdict
    for value in CONTAINER_VALUES:
        if layout.get("indent"):
            text = json.dumps(value, indent=2)
        elif layout:
            text = json.dumps(value, separators=(",", ":"))
        else:
            text = json.dumps(value, indent=1).replace("\n", "\n\t")
        assert accepts(start, text) == is_valid(schema, value), (schema, layout, text)


# One restrictive keyword of each kind beside a value that also allows the other
# containers: a keyword missing from AnyContainer's lists would widen its container.
CONTAINER_KEYWORDS = [
    {"minItems": 2}, {"maxItems": 1}, {"uniqueItems": True, "items": {"enum": [1, "a", "x"]}},
    {"contains": {"type": "string"}}, {"prefixItems": [{"type": "integer"}]},
    {"prefixItems": [{"type": "integer"}], "items": False},
    {"items": {"type": "array"}}, {"minProperties": 2}, {"maxProperties": 1}, {"required": ["k"]},
    {"properties": {"k": {"const": "b"}}}, {"patternProperties": {"^k$": {"type": "string"}}},
    {"propertyNames": {"maxLength": 1}}, {"additionalProperties": {"type": "array"}},
    {"dependentRequired": {"k": ["m"]}}, {"dependentSchemas": {"k": {"required": ["m"]}}},
]


@pytest.mark.parametrize("strict", [True, False])
@pytest.mark.parametrize("keyword", CONTAINER_KEYWORDS, ids=range(len(CONTAINER_KEYWORDS)))
def test_each_container_keyword_keeps_its_own_container(keyword, strict):
    schema = {"type": ["array", "object", "null"], **keyword}
    start = state(schema, strict=strict, any_whitespace=False)
    for value in CONTAINER_VALUES + [[1, 1], ["a", "x"], {"k": "b", "m": 1}]:
        text = json.dumps(value, separators=(",", ":"))
        if strict:  # may be narrower (undeclared properties), never wider
            assert not accepts(start, text) or is_valid(schema, value), (schema, text)
        else:
            assert accepts(start, text) == is_valid(schema, value), (schema, text)


def test_containers_without_keywords_share_one_rule():
    text = str(xgr2.Grammar.from_json_schema({"anyOf": [{"not": {"type": "string"}}, {"type": ["array", "null"]}]}))
    assert text.count("any_array ::=") == 1 and text.count("any_object ::=") == 1
    assert "any_array" not in str(xgr2.Grammar.from_json_schema({"not": {"type": "string"}}, indent=2))


# ------------------------------------------------------------ JSON text of Python values
from hypothesis import example, given, settings, strategies as st  # noqa: E402

from xgr2 import _core  # noqa: E402

JSON_SCALARS = (st.none() | st.booleans() | st.integers() | st.integers(min_value=-(10**40), max_value=10**40)
                | st.floats(allow_nan=False, allow_infinity=False) | st.text())
JSON_VALUES = st.recursive(JSON_SCALARS, lambda inner: st.lists(inner, max_size=4) | st.tuples(inner, inner)
                           | st.dictionaries(st.text(max_size=6), inner, max_size=4), max_leaves=30)


def _no_lone_surrogate(value):
    try:
        json.dumps(value, ensure_ascii=False).encode("utf-8")
        return True
    except UnicodeEncodeError:
        return False


@settings(max_examples=300, deadline=None)
@given(JSON_VALUES)
@example({"k\"\\\x00\x1f\x7f\u2028\u00e9\U0001F600": ["\n\t\b\f\r", -0.0, 1e16, 5e-324, 1e308, -1, 0,
                                                       2**63 - 1, 2**63, -2**63, -2**63 - 1, 10**40, ()]})
def test_json_text_of_python_values_reads_back_as_json_dumps_does(value):
    """Schemas given as dicts are written as JSON in C++ (_core.json_text), not by json.dumps."""
    text = _core.json_text(value)
    if not _no_lone_surrogate(value):
        assert text is None  # left to json.dumps
        return
    assert json.loads(text) == json.loads(json.dumps(value))
    assert text == json.dumps(value, ensure_ascii=False)  # the same text, non-ASCII raw


class _Str(str):
    pass


class _Int(int):
    pass


_cycle: list = [1]
_cycle.append({"again": _cycle})


@pytest.mark.parametrize("value", [
    {1: "a"}, {None: 1}, float("nan"), [float("inf")], {"a": {1, 2}}, _Str("x"), {"k": _Str("v")}, [_Int(3)],
    collections.OrderedDict(a=1), "lone \ud800", "pair as two \ud83d\ude00", {"deep": json.loads("[" * 600 + "]" * 600)},
    _cycle,
])
def test_json_text_leaves_other_values_to_json_dumps(value):
    assert _core.json_text(value) is None


def test_json_text_sees_a_cycle_at_its_first_revisit():
    big = {"big": list(range(100_000))}
    big["self"] = big
    assert _core.json_text(big) is None  # at once: not 512 copies of the list first


def test_schemas_json_dumps_refuses_stay_schema_errors():
    circular = {"type": "object"}
    circular["properties"] = {"self": circular}
    for schema in ({"type": "number", "maximum": float("nan")}, circular, {"enum": [{1, 2}]}):
        with pytest.raises(xgr2.SchemaError, match="not JSON-serializable"):
            xgr2.Grammar.from_json_schema(schema)
    # json.dumps's conversions still apply where C++ leaves a value to it: int keys become strings.
    start = state({"type": "object", "properties": {1: {"const": 2}}, "required": ["1"]}, any_whitespace=False)
    assert accepts(start, '{"1":2}')

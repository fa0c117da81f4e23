"""The cohere_xml style of structural tags' ``json_schema`` format: arguments as recursive
``<cofl:value name="NAME" type="raw|json|dict|list">VALUE</cofl:value>`` elements.

Oracle: instances drawn from each schema by hypothesis-jsonschema (valid by
``jsonschema``) are written in the style by a renderer written here from the style's
definition (strings raw, numbers / booleans / null as JSON text, objects as their
properties' elements in declared order, arrays as unnamed elements, names with XML
entities); the grammar must accept every rendering and reject renderings that break the
schema or use another type attribute.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import xgr2

hypothesis_jsonschema = pytest.importorskip("hypothesis_jsonschema")

BYTES = xgr2.TokenizerInfo([bytes([b]) for b in range(256)])
CLOSE = "</cofl:value>"


def escape_name(name: str) -> str:
    return name.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")


def render_value(schema: dict, value, name: str | None = None) -> str:
    """The element holding `value` (of `schema`, for the declared order)."""
    head = "<cofl:value" + (f' name="{escape_name(name)}"' if name is not None else "")
    if isinstance(value, dict):
        props = schema.get("properties", {})
        keys = [k for k in props if k in value] + [k for k in value if k not in props]
        body, kind = "".join(render_value(props.get(k, {}), value[k], k) for k in keys), "dict"
    elif isinstance(value, list):
        body, kind = "".join(render_value(schema.get("items", {}), v) for v in value), "list"
    elif isinstance(value, str):
        body, kind = value, "raw"
    else:
        body, kind = json.dumps(value), "json"
    return f'{head} type="{kind}">{body}{CLOSE}'


def render(schema: dict, arguments: dict) -> str:
    """The root object's elements."""
    return render_value(schema, arguments)[len('<cofl:value type="dict">'):-len(CLOSE)]


def grammar_of(schema, **options) -> xgr2.Grammar:
    return xgr2.Grammar.from_structural_tag({"type": "json_schema", "json_schema": schema, "style": "cohere_xml",
                                            **options})


def accepts(grammar: xgr2.Grammar, text: str) -> bool:
    state = xgr2.compile(grammar, BYTES).initial_state().try_advance_bytes(text.encode())
    return state is not None and state.can_terminate


SCHEMAS = [
    {"type": "object", "properties": {
        "name": {"type": "string"}, "count": {"type": "integer", "minimum": 0, "maximum": 50},
        "ratio": {"type": "number"}, "on": {"type": "boolean"},
        "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 3},
        "where": {"type": "object", "properties": {"city": {"type": "string"}, "zip": {"type": "integer"}},
                  "required": ["city"], "additionalProperties": False},
        "maybe": {"anyOf": [{"type": "integer"}, {"type": "null"}, {"type": "string", "maxLength": 4}]}},
     "required": ["name", "count", "where"], "additionalProperties": False},
    {"type": "object", "properties": {"unit": {"enum": ["C", "F", 3]}, "points": {
        "type": "array", "minItems": 1, "maxItems": 2, "items": {
            "type": "object", "properties": {"x": {"type": "number"}, "y": {"type": ["number", "string"]}},
            "required": ["x", "y"], "additionalProperties": False}}},
     "required": ["unit", "points"], "additionalProperties": False},
    {"type": "object", "properties": {"a&b": {"type": "boolean"}},
     "additionalProperties": {"type": "integer"}, "required": ["a&b"]},
]


def writable(value) -> bool:
    """No string holds the close tag and no name holds NUL, which XML cannot carry."""
    if isinstance(value, dict):
        return all("\x00" not in k and writable(v) for k, v in value.items())
    if isinstance(value, list):
        return all(writable(v) for v in value)
    return not isinstance(value, str) or CLOSE not in value


@pytest.mark.parametrize("index", range(len(SCHEMAS)))
@settings(max_examples=30, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_renderings_of_valid_instances_are_accepted_and_broken_ones_rejected(index, data):
    schema = SCHEMAS[index]
    instance = data.draw(hypothesis_jsonschema.from_schema(schema, custom_formats={}).filter(writable))
    grammar = grammar_of(schema)
    text = render(schema, instance)
    assert accepts(grammar, text), text
    for name in schema["required"]:  # a required element left out
        broken = {k: v for k, v in instance.items() if k != name}
        assert not accepts(grammar, render(schema, broken)), broken
    if schema.get("additionalProperties") is False:
        assert not accepts(grammar, render(schema, {**instance, "undeclared": 1}))
    assert not accepts(grammar, json.dumps(instance))  # JSON is not this style
    for kind in ("raw", "json", "dict", "list"):  # each value's type attribute is its own
        for other in {"raw", "json", "dict", "list"} - {kind}:
            swapped = text.replace(f'type="{kind}"', f'type="{other}"', 1)
            if swapped != text:
                assert not accepts(grammar, swapped), swapped


# Cases re-typed from XGrammar's tests of its cohere_xml style (same verdicts).
NAME_AGE = {"type": "object", "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
            "required": ["name", "age"]}


@pytest.mark.parametrize("text, ok", [
    ('<cofl:value name="name" type="raw">Bob</cofl:value><cofl:value name="age" type="json">100</cofl:value>', True),
    ('<cofl:value name="name" type="raw">Bob</cofl:value>', False),
    ("<cofl:value name=name type=raw>Bob</cofl:value><cofl:value name=age type=json>100</cofl:value>", False),
    ("<parameter=name>Bob</parameter><parameter=age>100</parameter>", False),
    ('<cofl:value name="name" type="raw">Bob</cofl:value>\n <cofl:value name="age" type="json"> 7\n</cofl:value>',
     True),
    ('<cofl:value name="name" type="json">"Bob"</cofl:value><cofl:value name="age" type="json">1</cofl:value>', False),
])
def test_name_and_age(text, ok):
    assert accepts(grammar_of(NAME_AGE), text) is ok


def test_nested_dicts_and_lists_with_unnamed_items():
    schema = {"type": "object", "properties": {
        "config": {"type": "object", "properties": {"mode": {"type": "string"}, "enabled": {"type": "boolean"}},
                   "required": ["mode", "enabled"]},
        "items": {"type": "array", "items": {"type": "string"}, "minItems": 2, "maxItems": 2},
        "records": {"type": "array", "items": {"type": "object", "properties": {
            "id": {"type": "integer"}, "label": {"type": "string"}}, "required": ["id", "label"]},
            "minItems": 1, "maxItems": 1}},
        "required": ["config", "items", "records"]}
    ok = ('<cofl:value name="config" type="dict"><cofl:value name="mode" type="raw">fast</cofl:value>'
          '<cofl:value name="enabled" type="json">true</cofl:value></cofl:value>'
          '<cofl:value name="items" type="list"><cofl:value type="raw">first</cofl:value>'
          '<cofl:value type="raw">second</cofl:value></cofl:value>'
          '<cofl:value name="records" type="list"><cofl:value type="dict">'
          '<cofl:value name="id" type="json">1</cofl:value><cofl:value name="label" type="raw">one</cofl:value>'
          "</cofl:value></cofl:value>")
    grammar = grammar_of(schema)
    assert accepts(grammar, ok)
    assert not accepts(grammar, ok.replace('<cofl:value type="raw">first', '<cofl:value name="0" type="raw">first'))


def test_additional_properties_do_not_reuse_declared_names():
    schema = {"type": "object", "properties": {"foo": {"type": "integer"}}, "required": ["foo"],
              "additionalProperties": {"anyOf": [{"type": "string"}, {"type": "integer"}]}}
    grammar = grammar_of(schema)
    foo = '<cofl:value name="foo" type="json">1</cofl:value>'
    assert accepts(grammar, foo + '<cofl:value name="bar" type="raw">extra</cofl:value>')
    assert accepts(grammar, foo + '<cofl:value name="bar" type="json">2</cofl:value>')
    assert not accepts(grammar, foo + '<cofl:value name="bar" type="dict">2</cofl:value>')
    assert not accepts(grammar, '<cofl:value name="foo" type="raw">wrong</cofl:value>')
    assert not accepts(grammar, foo + '<cofl:value name="foo" type="raw">again</cofl:value>')


def test_names_escape_xml_entities_declared_and_dynamic():
    schema = {"type": "object", "properties": {'a"<b>&': {"type": "integer"}},
              "patternProperties": {"^x": {"type": "boolean"}}, "additionalProperties": False}
    grammar = grammar_of(schema)
    assert accepts(grammar, '<cofl:value name="a&quot;&lt;b&gt;&amp;" type="json">1</cofl:value>')
    assert not accepts(grammar, '<cofl:value name="a"<b>&" type="json">1</cofl:value>')
    assert accepts(grammar, '<cofl:value name="x&amp;y" type="json">true</cofl:value>')
    assert not accepts(grammar, '<cofl:value name="x&y" type="json">true</cofl:value>')
    assert not accepts(grammar, '<cofl:value name="y" type="json">true</cofl:value>')


def test_free_values_any_type_and_nesting():
    grammar = grammar_of({"type": "object"})
    for text in ['<cofl:value name="k" type="raw">t</cofl:value>',
                 '<cofl:value name="k" type="json">-1.5e3</cofl:value>',
                 '<cofl:value name="k" type="list"><cofl:value type="dict"><cofl:value name="z" type="json">null'
                 "</cofl:value></cofl:value></cofl:value>", ""]:
        assert accepts(grammar, text), text
    assert not accepts(grammar, '<cofl:value name="k" type="json">tru</cofl:value>')
    assert not accepts(grammar, '<cofl:value type="raw">t</cofl:value>')  # a property needs a name


def test_string_pattern_format_and_lengths_on_raw_text():
    schema = {"type": "object", "properties": {"code": {"type": "string", "pattern": "^[A-Z]{3}$"},
                                               "day": {"type": "string", "format": "date"},
                                               "short": {"type": "string", "maxLength": 2}},
              "required": ["code", "day", "short"]}
    grammar = grammar_of(schema)

    def text(code, day, short):
        return "".join(f'<cofl:value name="{k}" type="raw">{v}</cofl:value>'
                       for k, v in (("code", code), ("day", day), ("short", short)))
    assert accepts(grammar, text("ABC", "2024-02-29", "hi"))
    assert not accepts(grammar, text("ABCD", "2024-02-29", "hi"))
    assert not accepts(grammar, text("ABC", "2024-13-01", "hi"))
    assert not accepts(grammar, text("ABC", "2024-02-29", "hey"))


def test_recursive_definitions_and_literals():
    schema = {"type": "object", "properties": {"tree": {"$ref": "#/$defs/node"}, "k": {"const": {"a": [1]}}},
              "required": ["tree", "k"],
              "$defs": {"node": {"type": "object", "properties": {"kids": {"type": "array",
                                                                           "items": {"$ref": "#/$defs/node"}}}}}}
    grammar = grammar_of(schema)
    k = '<cofl:value name="k" type="json">{"a": [1]}</cofl:value>'
    deep = ('<cofl:value name="tree" type="dict"><cofl:value name="kids" type="list"><cofl:value type="dict">'
            "</cofl:value></cofl:value></cofl:value>")
    assert accepts(grammar, deep + k)
    assert not accepts(grammar, deep + '<cofl:value name="k" type="dict"><cofl:value name="a" type="list">'
                       '<cofl:value type="json">1</cofl:value></cofl:value></cofl:value>')


@pytest.mark.parametrize("spaces", [0, 1, 2, 3, 4])
def test_a_json_values_whitespace_is_one_bounded_run_on_each_side(spaces):
    """The style's whitespace around a json-typed value is the only whitespace there:
    the value's JSON text brings none of its own around it (two runs in a row allowed
    twice max_whitespace_cnt)."""
    grammar = grammar_of({"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]},
                         max_whitespace_cnt=2)
    pad = " " * spaces
    assert accepts(grammar, f'<cofl:value name="n" type="json">{pad}7</cofl:value>') == (spaces <= 2)
    assert accepts(grammar, f'<cofl:value name="n" type="json">7{pad}</cofl:value>') == (spaces <= 2)


@pytest.mark.parametrize("schema, pointer", [
    ({"type": "object", "properties": {"s": {"type": "string", "not": {"const": "x"}}}}, "/properties/s/not"),
    ({"type": "array"}, "/type"),
    ({"type": "object", "properties": {"s": {"const": "a</cofl:value>"}}}, "/properties/s/const"),
    ({"type": "object", "properties": {"a\u0000b": {"type": "integer"}}}, "/properties/a\u0000b"),
    ({"type": "object", "properties": {"s": {"type": "string", "pattern": "("}}}, "/properties/s/pattern"),
])
def test_what_the_style_cannot_write_is_refused_with_its_pointer(schema, pointer):
    with pytest.raises(xgr2.StructuralTagError) as e:
        grammar_of(schema)
    assert e.value.path.endswith(pointer), e.value.path

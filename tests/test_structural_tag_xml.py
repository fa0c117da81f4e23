"""The XML parameter styles of structural tags' ``json_schema`` format (qwen_xml,
minimax_xml, deepseek_xml, glm_xml, kimi_k3_xml) and ``max_whitespace_cnt``.

Oracle: instances drawn from each schema by hypothesis-jsonschema (checked with
``jsonschema``) are written in the style by a renderer written here from the styles'
definitions (a string's raw text, other values as JSON); the grammar must accept every
rendering, and must reject renderings that break the schema: a required parameter left
out, a parameter no schema declares, a JSON value that is not valid there.
"""

from __future__ import annotations

import json

import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import xgr2

hypothesis_jsonschema = pytest.importorskip("hypothesis_jsonschema")

BYTES = xgr2.TokenizerInfo([bytes([b]) for b in range(256)])

# (opening of a parameter before its name, what follows the name, value opening, closing)
STYLES = {
    "qwen_xml": ("<parameter=", ">", "", "</parameter>"),
    "minimax_xml": ('<parameter name="', '">', "", "</parameter>"),
    "deepseek_xml": ('<｜DSML｜parameter name="', '" string="{flag}">', "", "</｜DSML｜parameter>"),
    "deepseek_v4_1_xml": ('<｜DSML｜ parameter name="', '" string="{flag}">', "", "</｜DSML｜ parameter>"),
    "glm_xml": ("<arg_key>", "</arg_key>", "<arg_value>", "</arg_value>"),
    "kimi_k3_xml": ('<|open|>argument key="', '" type="{type}"<|sep|>', "", "<|close|>argument<|sep|>"),
}


def kimi_type(value) -> str:
    """Kimi-K3's type attribute: the type the value is written as (its parser reads
    "string" as raw text and JSON-decodes any other); ints and floats are "number"."""
    if isinstance(value, bool):
        return "boolean"
    return {str: "string", int: "number", float: "number", type(None): "null", dict: "object",
            list: "array"}[type(value)]

SCHEMAS = [
    {"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer", "minimum": 1}},
     "required": ["city"]},
    {"type": "object", "properties": {"unit": {"enum": ["celsius", "fahrenheit"]}, "n": {"type": "number"},
                                      "flag": {"type": "boolean"}, "tags": {"type": "array", "items": {"type": "string"}}},
     "required": ["unit", "flag"]},
    {"type": "object", "properties": {"where": {"$ref": "#/$defs/place"}, "code": {"type": "string", "pattern": "^[A-Z]{3}$"}},
     "required": ["where", "code"], "$defs": {"place": {"type": "object", "properties": {"lat": {"type": "number"}},
                                                       "additionalProperties": False,
                                                       "required": ["lat"]}}},
    {"type": "object", "properties": {"note": {"type": "string", "maxLength": 5}, "kind": {"const": "fixed"}},
     "required": ["kind"]},
]


def is_raw(schema: dict) -> bool:
    return schema.get("type") == "string" or "const" in schema or "enum" in schema


def render(style: str, schema: dict, instance: dict, gap: str = "\n") -> str:
    key_open, key_close, value_open, close = STYLES[style]
    out = [gap]
    for name, sub in schema["properties"].items():
        if name not in instance:
            continue
        value = instance[name]
        raw = is_raw(sub) and isinstance(value, str)
        text = value if raw else json.dumps(value)
        out.append(key_open + name + key_close.format(flag="true" if raw else "false",
                                                      type=kimi_type(value)) +
                   value_open + text + close + gap)
    return "".join(out)


def accepts(grammar: xgr2.Grammar, text: str) -> bool:
    state = xgr2.compile(grammar, BYTES).initial_state().try_advance_bytes(text.encode())
    return state is not None and state.can_terminate


def grammar_of(style: str, schema: dict) -> xgr2.Grammar:
    return xgr2.Grammar.from_structural_tag({"type": "json_schema", "json_schema": schema, "style": style})


@pytest.mark.parametrize("style", STYLES)
@pytest.mark.parametrize("index", range(len(SCHEMAS)))
@settings(max_examples=15, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_renderings_of_valid_instances_are_accepted_and_broken_ones_rejected(style, index, data):
    schema = SCHEMAS[index]
    instance = data.draw(hypothesis_jsonschema.from_schema(schema))
    jsonschema.validate(instance, schema)
    # Raw text cannot hold the closing tag (it would end the value there).
    if any(isinstance(v, str) and STYLES[style][3] in v for v in instance.values()):
        return
    grammar = grammar_of(style, schema)
    assert accepts(grammar, render(style, schema, instance)), render(style, schema, instance)
    assert accepts(grammar, render(style, schema, instance, gap=""))
    for name in schema["required"]:
        assert not accepts(grammar, render(style, schema, {k: v for k, v in instance.items() if k != name}))
    undeclared = {**instance, "zzz": 1}
    assert not accepts(grammar, render(style, {**schema, "properties": {**schema["properties"], "zzz": {}}},
                                       undeclared))


@pytest.mark.parametrize("style", STYLES)
def test_values_are_checked_against_their_schemas(style):
    schema = SCHEMAS[0]
    grammar = grammar_of(style, schema)
    good = render(style, schema, {"city": "Paris\nFrance", "days": 3})
    assert accepts(grammar, good)
    assert not accepts(grammar, good.replace("3", "0"))  # minimum 1
    assert not accepts(grammar, good.replace("3", '"3"'))  # not an integer
    assert accepts(grammar, good.replace("Paris", '"Paris"'))  # raw text: quotes are text
    spaced = render(style, schema, {"city": "x", "days": 3}).replace("3", " 3 ")
    assert accepts(grammar, spaced)  # whitespace around a JSON value
    codes = grammar_of(style, SCHEMAS[2])
    where = {"where": {"lat": 1.5}}
    assert accepts(codes, render(style, SCHEMAS[2], {**where, "code": "ABC"}))
    assert not accepts(codes, render(style, SCHEMAS[2], {**where, "code": "ABCD"}))
    consts = grammar_of(style, SCHEMAS[3])
    assert accepts(consts, render(style, SCHEMAS[3], {"kind": "fixed", "note": "short"}))
    assert not accepts(consts, render(style, SCHEMAS[3], {"kind": "fixed", "note": "toolong"}))
    assert not accepts(consts, render(style, SCHEMAS[3], {"kind": "other"}))


@pytest.mark.parametrize("value_schema, raw, json_text, rejected", [
    # Each branch of a bare anyOf, and each type of a type list, is a value of its own, a
    # string one raw (as XGrammar's XML styles).
    ({"anyOf": [{"const": "a"}, {"const": "b"}]}, ["a", "b"], [], ["c", '"a"']),
    ({"anyOf": [{"type": "string", "maxLength": 5}, {"type": "integer"}]}, ["hello", "42"], ["42"], ["toolong"]),
    ({"type": ["string", "null"], "maxLength": 3}, ["abc", "null"], ["null"], ["abcd"]),
    ({"type": ["integer", "null"]}, [], ["7", "null"], ["x", '"7"']),
    # pydantic's Optional[datetime]: a known format is checked on raw text.
    ({"anyOf": [{"type": "string", "format": "date"}, {"type": "null"}], "default": None},
     ["2024-02-29", "null"], ["null"], ["2023-02-29", "x"]),
    # What raw text cannot check exactly stays JSON: a oneOf (5 matches both branches, so
    # the schema rejects it), a string branch with two checks, keywords beside a type list
    # that a raw string would ignore.
    ({"oneOf": [{"type": "integer", "minimum": 0}, {"type": "integer", "maximum": 10}]}, [], ["-3", "11"],
     ["5", "x"]),
    ({"anyOf": [{"type": "string", "pattern": "^a", "minLength": 2}, {"type": "null"}]}, [], ['"ab"', "null"],
     ["ab", '"a"']),
    ({"type": ["string", "null"], "not": {"const": "bad"}}, [], ['"ok"', "null"], ["bad", '"bad"', "ok"]),
    # Unconstrained: raw text.
    ({}, ["any text", '{"a": 1}'], [], []),
    ({"description": "anything"}, ["x y"], [], []),
])
def test_unions_and_unconstrained_values_take_each_branch_own_form(value_schema, raw, json_text, rejected):
    schema = {"type": "object", "properties": {"v": value_schema}, "required": ["v"]}
    grammar = grammar_of("qwen_xml", schema)
    for value in raw:
        assert accepts(grammar, f"<parameter=v>{value}</parameter>"), value
    for value in json_text:
        assert accepts(grammar, f"<parameter=v> {value}\n</parameter>"), value
    for value in rejected:
        assert not accepts(grammar, f"<parameter=v>{value}</parameter>"), value


def test_raw_strings_check_a_known_format_and_refuse_what_they_cannot_check():
    grammar = grammar_of("qwen_xml", {"type": "object", "properties": {"d": {"type": "string", "format": "uuid"}}})
    assert accepts(grammar, "<parameter=d>123e4567-e89b-12d3-a456-426614174000</parameter>")
    assert not accepts(grammar, "<parameter=d>123e4567</parameter>")
    for sub, key in [({"type": "string", "not": {"const": "x"}}, "not"), ({"type": "string", "allOf": [{}]}, "allOf")]:
        with pytest.raises(xgr2.StructuralTagError, match=f"/json_schema/properties/d/{key}"):
            grammar_of("qwen_xml", {"type": "object", "properties": {"d": sub}})
    # Unknown formats and keywords are annotations, as in JSON.
    loose = grammar_of("qwen_xml", {"type": "object", "properties": {
        "d": {"type": "string", "format": "color", "x-order": 1, "nullable": True}}})
    assert accepts(loose, "<parameter=d>any text</parameter>")


def test_a_draft7_ref_ignores_its_siblings_in_xml_styles_too():
    schema = {"$schema": "http://json-schema.org/draft-07/schema#", "type": "object",
              "properties": {"n": {"$ref": "#/definitions/i", "type": "string"}}, "required": ["n"],
              "definitions": {"i": {"type": "integer"}}}
    grammar = grammar_of("qwen_xml", schema)
    assert accepts(grammar, "<parameter=n>5</parameter>")
    assert not accepts(grammar, "<parameter=n>five</parameter>")


def test_additional_properties_take_any_name_only_when_allowed():
    open_schema = {**SCHEMAS[0], "additionalProperties": {"type": "integer"}}
    grammar = grammar_of("qwen_xml", open_schema)
    assert accepts(grammar, "<parameter=city>x</parameter><parameter=extra_1>5</parameter>")
    assert not accepts(grammar, "<parameter=city>x</parameter><parameter=extra_1>five</parameter>")
    assert not accepts(grammar_of("qwen_xml", SCHEMAS[0]), "<parameter=city>x</parameter><parameter=e>5</parameter>")
    # A declared name is never an additional one: its value keeps its own schema.
    free = grammar_of("qwen_xml", {**SCHEMAS[0], "additionalProperties": True})
    assert not accepts(free, "<parameter=city>x</parameter><parameter=days>five</parameter>")
    assert not accepts(free, "<parameter=city>x</parameter><parameter=days>0</parameter>")  # minimum 1
    assert accepts(free, "<parameter=city>x</parameter><parameter=days_x>five</parameter>")
    assert accepts(free, "<parameter=city>x</parameter><parameter=day>five</parameter>")


def test_qwen_xml_parameter_is_the_qwen_xml_style():
    spec = {"type": "qwen_xml_parameter", "json_schema": SCHEMAS[0]}
    grammar = xgr2.Grammar.from_structural_tag(spec)
    assert accepts(grammar, "<parameter=city>Oslo</parameter>")
    assert not accepts(grammar, '<parameter name="city">Oslo</parameter>')


def test_max_whitespace_cnt_bounds_each_run():
    schema = {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}
    spec = {"type": "json_schema", "json_schema": schema, "max_whitespace_cnt": 2}
    grammar = xgr2.Grammar.from_structural_tag(spec)
    assert accepts(grammar, '{  "a":  1}')
    assert not accepts(grammar, '{   "a": 1}')
    compact = xgr2.Grammar.from_structural_tag({**spec, "max_whitespace_cnt": 0})
    assert accepts(compact, '{"a":1}') and not accepts(compact, '{"a": 1}')
    assert accepts(xgr2.Grammar.from_structural_tag({**spec, "max_whitespace_cnt": None}), '{ "a" : 1 }')


def test_formats_without_a_type_are_read_from_their_fields():
    spec = {"format": {"begin": "<r>", "content": {"elements": [{"value": "a"}, {"excludes": ["</r>"]}]},
                       "end": "</r>"}}
    grammar = xgr2.Grammar.from_structural_tag(spec)
    assert accepts(grammar, "<r>a free text</r>")
    assert not accepts(grammar, "<r>b</r>")
    rules = {"format": {"rules": [["@", {"value": "X"}]], "loop": False}}
    assert accepts(xgr2.Grammar.from_structural_tag(rules), "text@X")


def kimi(name: str, type_name: str, body: str) -> str:
    return f'<|open|>argument key="{name}" type="{type_name}"<|sep|>{body}<|close|>argument<|sep|>'


def test_kimi_k3_type_attribute_matches_how_the_value_is_written():
    """"string" is raw text, any other name JSON of that type; a property of one type
    takes only its name, a union's branches each their own, a free-form key any name."""
    schema = {"type": "object", "required": ["city"], "properties": {
        "city": {"type": "string"}, "days": {"type": "integer"}, "unit": {"enum": ["C", "F"]},
        "where": {"$ref": "#/$defs/place"}, "maybe": {"anyOf": [{"type": "integer"}, {"type": "null"}]}},
        "$defs": {"place": {"type": "object", "properties": {"lat": {"type": "number"}}}}}
    grammar = grammar_of("kimi_k3_xml", schema)
    city = kimi("city", "string", "Paris")
    assert accepts(grammar, city)
    assert not accepts(grammar, kimi("city", "number", "Paris"))
    assert accepts(grammar, city + kimi("days", "number", "3"))
    assert not accepts(grammar, city + kimi("days", "integer", "3"))
    assert not accepts(grammar, city + kimi("days", "string", "3"))
    assert accepts(grammar, city + kimi("unit", "string", "F"))
    assert not accepts(grammar, city + kimi("unit", "string", '"F"'))
    assert accepts(grammar, city + kimi("where", "object", '{"lat": 1.5}'))
    assert not accepts(grammar, city + kimi("where", "string", '{"lat": 1.5}'))
    assert accepts(grammar, city + kimi("maybe", "null", "null"))
    assert accepts(grammar, city + kimi("maybe", "number", "4"))
    assert not accepts(grammar, city + kimi("maybe", "null", "4"))
    free = grammar_of("kimi_k3_xml", {**schema, "additionalProperties": True})
    assert accepts(free, city + kimi("extra", "boolean", "any text"))  # free-form: any name
    assert not accepts(free, city + kimi("extra", "bool", "x"))
    assert not accepts(grammar, city + kimi("extra", "string", "x"))


def test_kimi_k3_with_any_order():
    schema = {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "string"}},
              "required": ["a", "b"]}
    spec = {"type": "json_schema", "json_schema": schema, "style": "kimi_k3_xml", "any_order": True}
    grammar = xgr2.Grammar.from_structural_tag(spec)
    assert accepts(grammar, kimi("b", "string", "x") + kimi("a", "number", "1"))
    assert not accepts(grammar, kimi("b", "string", "x"))


# A string reached through a local $ref or an allOf of one schema is written raw, as a
# string property is (XGrammar's XML styles read them so); each style writes it so.
@pytest.mark.parametrize("style", ["qwen_xml", "minimax_xml", "glm_xml", "kimi_k3_xml"])
@pytest.mark.parametrize("wrap", ["ref", "allOf"])
def test_a_string_behind_a_ref_or_one_allof_is_raw_text(style, wrap):
    short = {"type": "string", "minLength": 2, "maxLength": 4}
    value = {"$ref": "#/$defs/short"} if wrap == "ref" else {"allOf": [short], "description": "d"}
    schema = {"type": "object", "properties": {"q": value}, "required": ["q"], "$defs": {"short": short}}
    grammar = grammar_of(style, schema)

    def param(body: str) -> str:
        key_open, key_close, value_open, close = STYLES[style]
        return "\n" + key_open + "q" + key_close.format(type="string") + value_open + body + close + "\n"

    for body in ["ab", "abcd", "é😀", " a "]:
        assert accepts(grammar, param(body)), body
    for body in ["a", "abcde", '"abcd"']:  # quoted, the last is 6 characters of raw text
        assert not accepts(grammar, param(body)), body


def test_a_recursive_definition_met_again_is_json():
    """anyOf [string of 1-4 characters, $ref to itself]: the string branch is raw; the
    inner reference is JSON (an infinite expansion is not written raw)."""
    value = {"anyOf": [{"type": "string", "minLength": 1, "maxLength": 4}, {"$ref": "#/$defs/value"}]}
    schema = {"type": "object", "properties": {"v": {"$ref": "#/$defs/value"}}, "required": ["v"],
              "$defs": {"value": value}}
    grammar = grammar_of("glm_xml", schema)
    for body, ok in [("a", True), ("abcd", True), ('"abc"', True), ("abcde", False), ('"abcde"', False)]:
        assert accepts(grammar, f"<arg_key>v</arg_key><arg_value>{body}</arg_value>") == ok, body


def test_a_root_ref_to_the_definitions_is_its_target():
    """Pydantic writes a model's schema as {"$ref": "#/$defs/Model", "$defs": {...}}."""
    schema = {"$ref": "#/$defs/Query", "$defs": {"Query": {
        "type": "object", "properties": {"city": {"type": "string"}, "n": {"type": "integer"}}, "required": ["city"]}}}
    grammar = grammar_of("qwen_xml", schema)
    assert accepts(grammar, "<parameter=city>Oslo</parameter>\n<parameter=n>3</parameter>")
    assert not accepts(grammar, "<parameter=n>3</parameter>")
    assert not accepts(grammar, "<parameter=city>Oslo</parameter><parameter=n>three</parameter>")
    with pytest.raises(xgr2.StructuralTagError, match=r"\$ref"):
        grammar_of("qwen_xml", {"$ref": "#/$defs/Loop", "$defs": {"Loop": {"$ref": "#/$defs/Loop"}}})
    with pytest.raises(xgr2.StructuralTagError, match=r"\$ref"):
        grammar_of("qwen_xml", {"$ref": "#/$defs/Q", "type": "object", "$defs": {"Q": {"type": "object"}}})


@pytest.mark.parametrize("schema", [{"type": "object"}, True])
def test_an_object_without_properties_takes_any_parameters(schema):
    """As in the JSON style, where {"type": "object"} allows any property."""
    grammar = grammar_of("qwen_xml", schema)
    assert accepts(grammar, "")
    assert accepts(grammar, "<parameter=city>Paris</parameter>\n<parameter=days>3</parameter>")
    assert not accepts(grammar, "<parameter=1city>Paris</parameter>")  # names are identifiers


@pytest.mark.parametrize("style", STYLES)
def test_a_tool_without_parameters_has_nothing_between_its_tags(style):
    for schema in [{"type": "object", "properties": {}, "required": []},
                   {"type": "object", "properties": {}, "additionalProperties": False},
                   {"type": "object", "additionalProperties": True, "maxProperties": 0}]:
        grammar = grammar_of(style, schema)
        assert accepts(grammar, "")
        for gap in [" ", "\n", "\t\t", " \n\t"]:
            assert not accepts(grammar, gap), (schema, gap)


def test_min_and_max_properties_in_declared_order_and_in_any_order():
    schema = {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
              "required": ["a"], "minProperties": 1, "maxProperties": 2}
    grammar = grammar_of("qwen_xml", schema)
    assert accepts(grammar, "<parameter=a>1</parameter>")
    assert accepts(grammar, "<parameter=a>1</parameter><parameter=b>2</parameter>")
    with pytest.raises(xgr2.StructuralTagError, match="minProperties"):
        grammar_of("qwen_xml", {"type": "object", "properties": {}, "required": [], "minProperties": 1})
    with pytest.raises(xgr2.StructuralTagError, match="minProperties"):
        grammar_of("qwen_xml", {**schema, "minProperties": 2})  # needs counting: any_order only
    with pytest.raises(xgr2.StructuralTagError, match="maxProperties"):
        grammar_of("qwen_xml", {**schema, "maxProperties": 1})
    spec = {"type": "json_schema", "json_schema": {**schema, "minProperties": 2}, "style": "qwen_xml",
            "any_order": True}
    unordered = xgr2.Grammar.from_structural_tag(spec)
    assert accepts(unordered, "<parameter=b>2</parameter><parameter=a>1</parameter>")
    assert not accepts(unordered, "<parameter=a>1</parameter>")
    assert not accepts(unordered, "<parameter=a>1</parameter><parameter=b>2</parameter><parameter=b>3</parameter>")


def test_unevaluated_properties_is_additional_properties_at_an_xml_root():
    open_schema = {"type": "object", "properties": {"city": {"type": "string"}}, "unevaluatedProperties": True}
    assert accepts(grammar_of("qwen_xml", open_schema), "<parameter=city>x</parameter><parameter=other>y</parameter>")
    closed = {**open_schema, "unevaluatedProperties": False}
    assert not accepts(grammar_of("qwen_xml", closed), "<parameter=city>x</parameter><parameter=other>y</parameter>")


def test_kimi_k3_keys_are_escaped_as_xml_attributes():
    schema = {"type": "object", "properties": {'we"ird&<key>': {"type": "string"}}, "required": ['we"ird&<key>']}
    grammar = grammar_of("kimi_k3_xml", schema)
    assert accepts(grammar, kimi("we&quot;ird&amp;&lt;key&gt;", "string", "v"))
    assert not accepts(grammar, kimi('we"ird&<key>', "string", "v"))


@pytest.mark.parametrize("style", ["qwen_xml", "kimi_k3_xml"])
def test_pattern_properties_take_the_names_their_pattern_matches(style):
    schema = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"],
              "patternProperties": {"^metric_[a-z]+$": {"type": "number"}, "^flag_[a-z]+$": {"type": "boolean"}},
              "additionalProperties": False}
    grammar = grammar_of(style, schema)

    def param(name, value):
        if style == "kimi_k3_xml":
            return kimi(name, kimi_type(value), value if isinstance(value, str) else json.dumps(value))
        return f"<parameter={name}>{value if isinstance(value, str) else json.dumps(value)}</parameter>"

    assert accepts(grammar, param("name", "w") + param("metric_cpu", 1.5) + param("flag_on", True))
    assert not accepts(grammar, param("name", "w") + param("metric_cpu", True))  # a metric is a number
    assert not accepts(grammar, param("name", "w") + param("metric_CPU", 1))  # no pattern matches
    assert not accepts(grammar, param("name", "w") + param("other", 1))  # additionalProperties false
    opened = grammar_of(style, {**schema, "additionalProperties": {"type": "string"}})
    assert accepts(opened, param("name", "w") + param("other", "x"))
    assert not accepts(opened, param("name", "w") + param("metric_x", "x"))  # a pattern's name keeps its schema


def test_pattern_properties_that_xml_cannot_check_are_refused():
    both = {"type": "object", "patternProperties": {"^a": {"type": "integer"}, "b$": {"type": "string"}}}
    with pytest.raises(xgr2.StructuralTagError, match="two patternProperties"):
        grammar_of("qwen_xml", both)  # "ab" takes both schemas
    declared = {"type": "object", "properties": {"ax": {"type": "string"}}, "patternProperties": {"^a": {"maxLength": 2}}}
    with pytest.raises(xgr2.StructuralTagError, match="declared property"):
        grammar_of("qwen_xml", declared)
    with pytest.raises(xgr2.StructuralTagError, match="pattern"):
        grammar_of("qwen_xml", {"type": "object", "patternProperties": {"(?<=a)b": {}}})


def test_deepseek_v4_1_flags_say_how_each_value_is_written():
    """string="true" before raw text, "false" before JSON; a union's branches each theirs."""
    def out(flag, value):
        return f'<｜DSML｜ parameter name="value" string="{flag}">{value}</｜DSML｜ parameter>'

    cases = [({"type": "string"}, "hi", "true"), ({"const": "fixed"}, "fixed", "true"), ({"enum": [1, 2]}, "2", "false"),
             ({"type": "array", "items": {"type": "integer"}}, "[1, 2]", "false"),
             ({"type": "object", "properties": {"x": {"type": "string"}}, "required": ["x"]}, '{"x": "hi"}', "false"),
             ({"anyOf": [{"type": "integer"}, {"type": "string"}]}, "7", "false"),
             ({"anyOf": [{"type": "integer"}, {"type": "string"}]}, "seven", "true")]
    for schema, value, flag in cases:
        grammar = grammar_of("deepseek_v4_1_xml", {"type": "object", "properties": {"value": schema},
                                                   "required": ["value"], "additionalProperties": False})
        assert accepts(grammar, out(flag, value)), (schema, value)
        if value != "7":  # 7 is also raw text of the string branch
            assert not accepts(grammar, out("false" if flag == "true" else "true", value)), (schema, value)
        assert not accepts(grammar, out(flag, value).replace("｜DSML｜ parameter", "｜DSML｜parameter"))


@pytest.mark.parametrize("style", [*STYLES, "minimax_m3_xml", "cohere_xml", "gemma"])
def test_a_long_ref_chain_is_an_error_not_a_crash(style):
    """Each $ref of a chain is a level of the writer's recursion: bounded (1000)."""
    n = 5000
    defs = {f"d{i}": {"$ref": f"#/$defs/d{i + 1}"} for i in range(n)}
    defs[f"d{n}"] = {"type": "string"}
    schema = {"type": "object", "properties": {"x": {"$ref": "#/$defs/d0"}}, "required": ["x"], "$defs": defs}
    with pytest.raises(xgr2.StructuralTagError, match="1000 deep"):
        grammar_of(style, schema)

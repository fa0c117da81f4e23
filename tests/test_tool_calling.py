"""Tool-calling presets (xgr2.tool_calling) against independent renderers of each format.

Tools are real BFCL function definitions (the `bfcl-eval` package), arguments are drawn
with hypothesis-jsonschema from their parameters. For every family, the renderers below
(written from the formats' chat templates, not from the presets) write whole outputs;
the preset's grammar must accept them byte by byte and refuse: a call naming a tool not
offered, arguments that jsonschema says are invalid, a second call with
parallel_tool_calls=False, no call with "required", any call with "none".
"""

from __future__ import annotations

import functools
import json
import random
from pathlib import Path

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import xgr2
from parsing import accepts
from test_json_schema import bfcl_to_standard, dump, hypothesis_jsonschema, is_valid, mutate, narrower, property_order
from test_structural_tag_xml import kimi_type
from xgr2 import tool_calling

BYTES = xgr2.TokenizerInfo([bytes([b]) for b in range(256)] + [b"<eos>"], stop_token_ids=[256])
XML = {"qwen3_coder", "glm45", "glm47", "minimax_m2", "deepseek_v32"}  # string parameters as raw text
SECTION = {"mistral", "deepseek_v3", "deepseek_v31", "deepseek_v32", "kimi_k2", "minimax_m2",
           "cohere"}  # one block ends the output


@functools.lru_cache(maxsize=1)
def bfcl_tools() -> list[dict]:
    """Distinct BFCL functions whose parameters are standard JSON Schema objects."""
    try:
        import bfcl_eval
    except ImportError:
        return []
    data = Path(bfcl_eval.__file__).parent / "data"
    seen, out = set(), []
    for name in ("BFCL_v4_simple_python.json", "BFCL_v4_multiple.json", "BFCL_v4_live_simple.json"):
        for line in (data / name).read_text().splitlines():
            for fn in json.loads(line).get("function", []):
                params = bfcl_to_standard(fn.get("parameters", {}))
                if fn["name"] in seen or params is None or params.get("type") != "object" or not params.get("properties"):
                    continue
                seen.add(fn["name"])
                out.append({"type": "function", "function": {"name": fn["name"], "description": fn.get("description", ""),
                                                             "parameters": params}})
    return out


# ------------------------------------------------------------------ independent renderers
def args_json(args, schema) -> str:
    return dump(args, property_order(schema))


def is_text_param(sub) -> bool:
    return isinstance(sub, dict) and (sub.get("type") == "string" or (
        "type" not in sub and all(isinstance(e, str) for e in sub.get("enum", [0]))))


def xml_value(value, sub) -> str:
    """A string parameter's raw text; anything else (or a non-string value) as JSON."""
    return value if isinstance(value, str) and is_text_param(sub) else dump(value, property_order(sub))


def declared_first(args: dict, props: dict) -> list:
    """The XML styles write parameters in the schema's declared order (undeclared ones last)."""
    return sorted(args.items(), key=lambda kv: list(props).index(kv[0]) if kv[0] in props else len(props))


def gemma_text(value) -> str:
    """A value in Gemma 4's notation: bare keys in case-insensitive order, strings between
    <|"|> delimiters, other scalars as JSON, no whitespace."""
    if isinstance(value, dict):
        keys = sorted(value, key=lambda k: (k.lower(), k))
        return "{" + ",".join(f"{k}:{gemma_text(value[k])}" for k in keys) + "}"
    if isinstance(value, list):
        return "[" + ",".join(gemma_text(v) for v in value) + "]"
    if isinstance(value, str):
        return '<|"|>' + value + '<|"|>'
    return json.dumps(value)


def xml_attribute(name: str) -> str:
    return name.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")


def cohere_element(value, sub, name: str | None = None) -> str:
    """A value in Cohere's cofl:value notation: strings raw, objects and arrays as nested
    elements (declared properties first, in order), other values as JSON; names with XML
    entities."""
    sub = sub if isinstance(sub, dict) else {}
    head = "<cofl:value"
    if name is not None:
        head += f' name="{xml_attribute(name)}"'
    if isinstance(value, dict):
        props = sub.get("properties", {})
        kind, body = "dict", "".join(cohere_element(v, props.get(k), k) for k, v in declared_first(value, props))
    elif isinstance(value, list):
        kind, body = "list", "".join(cohere_element(v, sub.get("items")) for v in value)
    elif isinstance(value, str):
        kind, body = "raw", value
    else:
        kind, body = "json", json.dumps(value)
    return f'{head} type="{kind}">{body}</cofl:value>'


M3 = "]<]minimax[>["


def m3_body(value, sub) -> str:
    """A value's element body in MiniMax-M3's notation: objects as their properties'
    elements (declared first, in order), arrays as `item` elements, strings raw, other
    scalars as JSON."""
    sub = sub if isinstance(sub, dict) else {}
    if isinstance(value, dict):
        props = sub.get("properties", {})
        return "".join(f"{M3}<{k}>{m3_body(v, props.get(k))}{M3}</{k}>" for k, v in declared_first(value, props))
    if isinstance(value, list):
        return "".join(f"{M3}<item>{m3_body(v, sub.get('items'))}{M3}</item>" for v in value)
    return value if isinstance(value, str) else json.dumps(value)


def m3_names_ok(value) -> bool:
    """Whether every key is an element name MiniMax-M3's style can write (not blank, not
    starting with `/`, no `>`)."""
    if isinstance(value, dict):
        return all(k.strip() and not k.startswith("/") and ">" not in k and m3_names_ok(v) for k, v in value.items())
    return all(m3_names_ok(v) for v in value) if isinstance(value, list) else True


def m3_meaning(value, sub):
    """What a reader takes from m3_body's text: a scalar's text is a string where the
    schema declares a string (or an enum of strings), else JSON where it parses (the notation does not mark
    strings); an empty body is an empty array or object where the schema declares one."""
    sub = sub if isinstance(sub, dict) else {}
    if isinstance(value, dict) and value:
        if sub.get("type") is None and all(k == "item" for k in value):  # read as an array's items
            return [m3_meaning(value["item"], sub.get("items"))]
        return {k: m3_meaning(v, sub.get("properties", {}).get(k)) for k, v in value.items()}
    if isinstance(value, list) and value:
        return [m3_meaning(v, sub.get("items")) for v in value]
    text = value if isinstance(value, str) else "" if isinstance(value, (dict, list)) else json.dumps(value)
    if sub.get("type") == "string" or (sub.get("enum") and all(isinstance(e, str) for e in sub["enum"])):
        return text
    if text == "" and sub.get("type") in ("array", "object"):
        return [] if sub["type"] == "array" else {}
    try:
        return json.loads(text)
    except ValueError:
        return text


def render_call(family: str, name: str, args, schema, index: int) -> str:
    a = args_json(args, schema)
    props = schema.get("properties", {})
    if family == "llama3_json":
        return f'{{"name": {json.dumps(name)}, "parameters": {a}}}'
    if family == "llama3_function_tag":
        return f"<function={name}>{a}</function>"
    if family == "hermes":
        return f'<tool_call>\n{{"name": {json.dumps(name)}, "arguments": {a}}}\n</tool_call>'
    if family == "qwen3_coder":
        ps = "".join(f"<parameter={k}>\n{xml_value(v, props.get(k))}\n</parameter>\n" for k, v in declared_first(args, props))
        return f"<tool_call>\n<function={name}>\n{ps}</function>\n</tool_call>"
    if family == "glm45":
        ps = "".join(f"<arg_key>{k}</arg_key>\n<arg_value>{xml_value(v, props.get(k))}</arg_value>\n"
                     for k, v in declared_first(args, props))
        return f"<tool_call>{name}\n{ps}</tool_call>"
    if family == "gemma4":  # Gemma 4's chat template: its own notation, keys dictsorted
        return f"<|tool_call>call:{name}{gemma_text(args)}<tool_call|>"
    if family == "glm47":  # GLM-4.7's chat template: no newlines
        ps = "".join(f"<arg_key>{k}</arg_key><arg_value>{xml_value(v, props.get(k))}</arg_value>"
                     for k, v in declared_first(args, props))
        return f"<tool_call>{name}{ps}</tool_call>"
    if family == "minimax_m2":  # MiniMax-M2's chat_template.jinja: one parameter per line
        ps = "".join(f'<parameter name="{k}">{xml_value(v, props.get(k))}</parameter>\n'
                     for k, v in declared_first(args, props))
        return f'<invoke name="{name}">\n{ps}</invoke>\n'
    if family == "deepseek_v32":  # encoding_dsv32.py: parameters joined by "\n" inside the invoke's "\n"s
        ps = "\n".join(f'<｜DSML｜parameter name="{k}" string="{str(is_text_param(props.get(k))).lower()}">'
                       f"{xml_value(v, props.get(k))}</｜DSML｜parameter>" for k, v in declared_first(args, props))
        return f'<｜DSML｜invoke name="{name}">\n{ps}\n</｜DSML｜invoke>'
    if family == "mistral":
        return f'{{"name": {json.dumps(name)}, "arguments": {a}}}'
    if family == "deepseek_v3":
        return f"<｜tool▁call▁begin｜>function<｜tool▁sep｜>{name}\n```json\n{a}\n```<｜tool▁call▁end｜>"
    if family == "deepseek_v31":
        return f"<｜tool▁call▁begin｜>{name}<｜tool▁sep｜>{a}<｜tool▁call▁end｜>"
    if family == "kimi_k2":
        return f"<|tool_call_begin|>functions.{name}:{index}<|tool_call_argument_begin|>{a}<|tool_call_end|>"
    if family == "harmony":
        return f"<|channel|>commentary to=functions.{name} <|constrain|>json<|message|>{a}<|call|>"
    if family == "cohere":
        props = schema.get("properties", {})
        elements = "".join(cohere_element(v, props.get(k), k) for k, v in declared_first(args, props))
        return f'<cofl:tool_call id="{index}" name="{name}">{elements}</cofl:tool_call>'
    if family == "minimax_m3":
        return f'{M3}<invoke name="{name}">{m3_body(args, schema)}{M3}</invoke>\n'
    if family == "kimi_k3":  # XML-escaped keys, values by their type
        props = schema.get("properties", {})
        ps = "".join(f'<|open|>argument key="{xml_attribute(k)}" type="{kimi_type(v)}"<|sep|>'
                     f"{v if isinstance(v, str) else dump(v, property_order(props.get(k)))}<|close|>argument<|sep|>"
                     for k, v in declared_first(args, props))
        return f'<|open|>call tool="{name}" index="{index}"<|sep|>{ps}<|close|>call<|sep|>'
    raise AssertionError(family)


def render(family: str, text: str, calls: list, thought: str | None) -> str:
    """A whole output: reasoning (if any), free text, then the calls."""
    rendered = [render_call(family, n, a, s, i) for i, (n, a, s) in enumerate(calls)]
    if family == "harmony":
        head = f"<|channel|>analysis<|message|>{thought}<|end|><|start|>assistant" if thought is not None else ""
        return head + (rendered[0] if calls else f"<|channel|>final<|message|>{text}<|return|>")
    head = f"<think>\n{thought}\n</think>\n\n" if thought is not None else ""
    if family == "cohere" and thought is not None:
        head = f"<|START_THINKING|>{thought}<|END_THINKING|>\n"
    if family == "minimax_m3" and thought is not None:
        head = f"<mm:think>{thought}</mm:think>\n"
    if family == "kimi_k3":  # the output starts inside the think or response block
        head = f"{thought}<|close|>think<|sep|><|open|>response<|sep|>" if thought is not None else ""
        tools = "<|open|>tools<|sep|>" + "".join(rendered) + "<|close|>tools<|sep|>" if calls else ""
        return head + text + "<|close|>response<|sep|>" + tools + "<|close|>message<|sep|>"
    if family == "llama3_json":
        return head + ("; ".join(rendered) if calls else text)
    if family == "mistral":
        body = "[TOOL_CALLS][" + ", ".join(rendered) + "]" if calls else ""
    elif family == "deepseek_v3":
        body = "<｜tool▁calls▁begin｜>" + "\n".join(rendered) + "<｜tool▁calls▁end｜>" if calls else ""
    elif family == "deepseek_v31":
        body = "<｜tool▁calls▁begin｜>" + "".join(rendered) + "<｜tool▁calls▁end｜>" if calls else ""
    elif family == "kimi_k2":
        body = "<|tool_calls_section_begin|>" + "".join(rendered) + "<|tool_calls_section_end|>" if calls else ""
    elif family == "minimax_m2":
        body = "\n<minimax:tool_call>\n" + "".join(rendered) + "</minimax:tool_call>" if calls else ""
    elif family == "cohere":
        body = "<cofl:tool_calls>" + "".join(rendered) + "</cofl:tool_calls>" if calls else ""
    elif family == "minimax_m3":
        body = f"{M3}<tool_call>\n" + "".join(rendered) + f"{M3}</tool_call>" if calls else ""
    elif family == "deepseek_v32":
        body = ("\n\n<｜DSML｜function_calls>\n" + "\n".join(rendered) + "\n</｜DSML｜function_calls>") if calls else ""
    else:
        body = "\n".join(rendered)
    return head + text + body


# ------------------------------------------------------------------ oracle test
def grammar_accepts(family, tools, text, tool_choice="auto", parallel=True, reasoning=False) -> bool:
    g = getattr(tool_calling, family)(tools, tool_choice, parallel_tool_calls=parallel, reasoning=reasoning)
    return accepts(compiled(g), text)


_COMPILED: dict[str, xgr2.MatcherState] = {}


def compiled(g: xgr2.Grammar) -> xgr2.MatcherState:
    key = str(g)
    if key not in _COMPILED:
        _COMPILED[key] = xgr2.compile(g, BYTES).initial_state()
    return _COMPILED[key]


def strict(schema):
    """``schema`` as ``from_json_schema(strict=True)`` reads it (the structural tag's json_schema
    format): objects that declare properties get no others unless the schema allows them."""
    if isinstance(schema, list):
        return [strict(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out = {k: (v if k in ("enum", "const", "default", "examples") else
               {n: strict(p) for n, p in v.items()} if k == "properties" else strict(v)) for k, v in schema.items()}
    if "properties" in out and "additionalProperties" not in out and "patternProperties" not in out:
        out["additionalProperties"] = False
    return out


def draw_args(data, tool):
    schema = tool["function"]["parameters"]
    try:
        value = data.draw(hypothesis_jsonschema.from_schema(schema), label="args")
    except (hypothesis_jsonschema._canonicalise.InvalidArgument,
            hypothesis_jsonschema._canonicalise.HypothesisRefResolutionError):
        assume(False)
    assume(is_valid(strict(schema), value) and not narrower(schema))
    return value


def xml_meaning(args, schema):
    """What an XML-style parser reads from the rendered text: string parameters as text."""
    props = schema.get("properties", {})
    return {k: xml_value(v, props.get(k)) if is_text_param(props.get(k)) else v for k, v in args.items()}


FREE_TEXT = st.text(alphabet="abc xyz.,!?\né", max_size=12).map(lambda s: "Ok " + s)


def draw_request(family: str, data) -> tuple[random.Random, list, bool, str | None, str, list]:
    """Three BFCL tools offered, reasoning on or off, free text and 1-3 calls of them with
    valid arguments: (rng for what the test draws next, tools, reasoning, thought, text,
    calls as (name, args, schema))."""
    pool = bfcl_tools()
    if not pool:
        pytest.skip("bfcl-eval is not installed (pip install --no-deps bfcl-eval)")
    rng = random.Random(data.draw(st.integers(0, 2**32), label="seed"))
    tools = rng.sample(pool, 3)
    for t in tools:
        try:
            xgr2.Grammar.from_json_schema(t["function"]["parameters"])
        except xgr2.SchemaError:
            assume(False)
    if family in ("gemma4", "cohere", "kimi_k3", "minimax_m3"):  # keywords the styles refuse
        try:
            tool_calling.structural_tag(family, tools)
            tool_calling.gemma4(tools)
        except xgr2.StructuralTagError:
            assume(False)
    reasoning = data.draw(st.booleans(), label="reasoning")
    thought = "Let me see.\nHmm" if reasoning else None
    text = data.draw(FREE_TEXT, label="text")
    n = 1 if family == "harmony" else data.draw(st.integers(1, 3), label="calls")
    chosen = [rng.choice(tools) for _ in range(n)]
    calls = [(t["function"]["name"], draw_args(data, t), t["function"]["parameters"]) for t in chosen]
    if family in XML:  # raw strings must be text the format can hold
        for _, a, s in calls:
            assume(all("<" not in xml_value(v, s["properties"].get(k)) for k, v in a.items()))
    if family in ("gemma4", "cohere", "kimi_k3", "minimax_m3"):  # no delimiter in raw text; names hold no NUL
        assume(all("<" not in json.dumps(a) and "\\u0000" not in json.dumps(a) for _, a, _ in calls))
    if family == "minimax_m3":  # free-form objects' keys must be element names
        assume(all(m3_names_ok(a) for _, a, _ in calls))
    return rng, tools, reasoning, thought, text, calls


@pytest.mark.parametrize("family", tool_calling.FAMILIES)
@settings(max_examples=6, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_rendered_outputs_are_accepted_and_mutations_refused(family, data):
    rng, tools, reasoning, thought, text, calls = draw_request(family, data)
    pre = "" if family == "llama3_json" else text  # Llama JSON: the calls are the whole output

    def ok(txt, **kw):
        return grammar_accepts(family, tools, txt, reasoning=reasoning, **kw)

    # Accepted: calls (with and without text before), text alone.
    assert ok(render(family, pre, calls, thought)), render(family, pre, calls, thought)
    assert ok(render(family, "", calls, thought), tool_choice="required")
    assert ok(render(family, text, [], thought))
    assert ok(render(family, text, [], thought), tool_choice="none")
    assert ok(render(family, pre, calls[:1], thought), parallel=False)
    named = {"type": "function", "function": {"name": calls[0][0]}}
    assert ok(render(family, "", calls[:1], thought), tool_choice=named)
    # Refused: a tool not offered, a second call without parallel calls, no call when
    # required, any call when none, a call of a tool the named choice leaves out.
    bad_name = [("not_offered_" + calls[0][0], *calls[0][1:])] + calls[1:]
    assert not ok(render(family, pre, bad_name, thought))
    if family != "harmony":
        two = calls[:1] * 2
        assert not ok(render(family, pre, two, thought), parallel=False)
    assert not ok(render(family, text, [], thought), tool_choice="required")
    assert not ok(render(family, text, calls, thought), tool_choice="none")
    others = [t for t in tools if t["function"]["name"] != calls[0][0]]
    if others:
        only = {"type": "allowed_tools", "allowed_tools": {"mode": "required", "tools": [others[0]]}}
        assert not ok(render(family, "", calls[:1], thought), tool_choice=only)
    # Arguments: accepted exactly when valid (XML styles: raw strings read as text, no
    # undeclared parameters, string keywords other than enum/const not enforced).
    name, args, schema = calls[0]
    for _ in range(3):
        bad = mutate(args, rng)
        if family in XML:
            if not isinstance(bad, dict) or any("<" in json.dumps(v) for v in bad.values()):
                continue
            got = ok(render(family, pre, [(name, bad, schema)], thought))
            meaning = xml_meaning(bad, schema)
            if not all(k in schema["properties"] for k in bad):
                assert not got
            elif any(k not in bad for k in schema.get("required", [])):
                assert not got
            elif got:
                assert is_valid(schema, meaning), meaning
            continue
        if family == "minimax_m3":  # element names; string checks not enforced; strings not marked
            if not isinstance(bad, dict) or "<" in json.dumps(bad) or not all(k.isidentifier() for k in bad):
                continue
            # The notation is ambiguous (`{}` and `""` are both an empty body): judge what the
            # reader reads from the text, where it reads one complete call.
            text = render(family, pre, [(name, bad, schema)], thought)
            read = tool_calling.parse_calls(family, text, tools, reasoning=reasoning)
            if len(read) != 1 or read[0].error is not None:
                continue
            got = ok(text)
            assert got == is_valid(strict(tool_calling._without_string_checks(schema)), read[0].arguments), (bad, got)
            continue
        if family == "gemma4":  # keys are bare identifiers; string checks not enforced
            if not isinstance(bad, dict) or "<" in json.dumps(bad) or not all(k.isidentifier() for k in bad):
                continue
            got = ok(render(family, pre, [(name, bad, schema)], thought))
            if got:
                assert is_valid(strict(tool_calling._without_string_checks(schema)), bad), (bad, got)
            if not is_valid(strict(tool_calling._without_string_checks(schema)), bad):
                assert not got, bad
            continue
        if family in ("cohere", "kimi_k3") and (
                not isinstance(bad, dict) or "<" in json.dumps(bad) or "\\u0000" in json.dumps(bad)):
            continue
        got = ok(render(family, pre, [(name, bad, schema)], thought))
        assert got == is_valid(strict(schema), bad), (bad, got)


# ------------------------------------------------------------------ layouts and errors
WEATHER = {"type": "function", "function": {"name": "get_weather", "description": "Weather of a city.", "parameters": {
    "type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer", "minimum": 1}},
    "required": ["city"]}}}
TIME = {"type": "function", "function": {"name": "get_time", "parameters": {
    "type": "object", "properties": {"tz": {"enum": ["UTC", "CET"]}}, "required": ["tz"]}}}


@pytest.mark.parametrize("family, good, bad", [
    ("hermes", '<tool_call>\n{"name": "get_time", "arguments": {"tz": "UTC"}}\n</tool_call>',
     '<tool_call>\n{"name":"get_time","arguments":{"tz":"UTC"}}\n</tool_call>'),
    ("llama3_json", '{"name": "get_time", "parameters": {"tz": "CET"}}', ' {"name": "get_time", "parameters": {}}'),
    ("mistral", '[TOOL_CALLS] [{"name": "get_time", "arguments": {"tz": "UTC"}}]',
     '[TOOL_CALLS][{"name": "get_time", "arguments": {"tz": "UTC"}}] Done.'),
    ("qwen3_coder", "<tool_call>\n<function=get_weather>\n<parameter=city>\nNew York\n</parameter>\n"
     "<parameter=days>\n3\n</parameter>\n</function>\n</tool_call>",
     "<tool_call>\n<function=get_weather>\n<parameter=days>\n3\n</parameter>\n</function>\n</tool_call>"),
    ("glm45", "<tool_call>get_time\n<arg_key>tz</arg_key>\n<arg_value>CET</arg_value>\n</tool_call>",
     "<tool_call>get_time\n<arg_key>tz</arg_key>\n<arg_value>PST</arg_value>\n</tool_call>"),
    ("gemma4", '<|tool_call>call:get_weather{city:<|"|>New York<|"|>,days:3}<tool_call|>',
     '<|tool_call>call:get_weather{days:3,city:<|"|>New York<|"|>}<tool_call|>'),  # keys in sorted order
    ("gemma4", '<|tool_call>call:get_time{tz:<|"|>UTC<|"|>}<tool_call|>',
     '<|tool_call>call:get_time{"tz": "UTC"}<tool_call|>'),  # not JSON
    ("glm47", "<tool_call>get_time<arg_key>tz</arg_key><arg_value>CET</arg_value></tool_call>",
     "<tool_call>get_time\n<arg_key>tz</arg_key>\n<arg_value>CET</arg_value>\n</tool_call>"),  # no newlines
    ("minimax_m2", '\n<minimax:tool_call>\n<invoke name="get_weather">\n<parameter name="city">New York</parameter>\n'
     '<parameter name="days">3</parameter>\n</invoke>\n</minimax:tool_call>',
     '<minimax:tool_call>\n<invoke name="get_weather">\n<parameter name="city">New York</parameter>\n'
     '</invoke>\n</minimax:tool_call>'),  # the block starts on a new line
    ("minimax_m2", 'Ok.\n<minimax:tool_call>\n<invoke name="get_time">\n<parameter name="tz">UTC</parameter>\n'
     '</invoke>\n</minimax:tool_call>',
     'Ok.\n<minimax:tool_call>\n<invoke name="get_weather">\n<parameter name="city">a</parameter>b</parameter>\n'
     '</invoke>\n</minimax:tool_call>'),  # a raw value ends at the first </parameter>
    ("deepseek_v32", '\n\n<｜DSML｜function_calls>\n<｜DSML｜invoke name="get_weather">\n'
     '<｜DSML｜parameter name="city" string="true">New York</｜DSML｜parameter>\n'
     '<｜DSML｜parameter name="days" string="false">3</｜DSML｜parameter>\n</｜DSML｜invoke>\n</｜DSML｜function_calls>',
     '\n\n<｜DSML｜function_calls>\n<｜DSML｜invoke name="get_weather">\n'
     '<｜DSML｜parameter name="city" string="false">"New York"</｜DSML｜parameter>\n'
     '</｜DSML｜invoke>\n</｜DSML｜function_calls>'),  # a string parameter is raw text, string="true"
    ("deepseek_v32", 'Ok.\n\n<｜DSML｜function_calls>\n<｜DSML｜invoke name="get_time">\n'
     '<｜DSML｜parameter name="tz" string="true">CET</｜DSML｜parameter>\n</｜DSML｜invoke>\n</｜DSML｜function_calls>',
     'Ok.<｜DSML｜function_calls>\n<｜DSML｜invoke name="get_time">\n'
     '<｜DSML｜parameter name="tz" string="true">CET</｜DSML｜parameter>\n</｜DSML｜invoke>\n</｜DSML｜function_calls>'),
    ("harmony", '<|channel|>commentary to=functions.get_time <|constrain|>json<|message|>{"tz":"UTC"}<|call|>',
     '<|channel|>commentary to=functions.get_time <|constrain|>json<|message|>{"tz":"UTC"}<|call|>'
     "<|start|>assistant<|channel|>final<|message|>x<|return|>"),
    ("cohere", 'Ok.<cofl:tool_calls><cofl:tool_call id="0" name="get_weather">\n<cofl:value name="city" type="raw">'
     'New York</cofl:value>\n<cofl:value name="days" type="json"> 3 </cofl:value>\n</cofl:tool_call>'
     '<cofl:tool_call id="1" name="get_time"><cofl:value name="tz" type="raw">UTC</cofl:value></cofl:tool_call>'
     "</cofl:tool_calls>",
     '<cofl:tool_calls><cofl:tool_call id="0" name="get_weather"><cofl:value name="city" type="json">"New York"'
     "</cofl:value></cofl:tool_call></cofl:tool_calls>"),  # a string is raw text
    ("cohere", '<cofl:tool_calls><cofl:tool_call id="7" name="get_time"><cofl:value name="tz" type="raw">CET'
     "</cofl:value></cofl:tool_call></cofl:tool_calls>",
     '<cofl:tool_calls><cofl:tool_call id="7" name="get_time"><cofl:value name="tz" type="raw">CET'
     "</cofl:value></cofl:tool_call></cofl:tool_calls> Done."),  # the block ends the output
    ("kimi_k3", 'Ok.<|close|>response<|sep|><|open|>tools<|sep|><|open|>call tool="get_weather" index="0"<|sep|>'
     '<|open|>argument key="city" type="string"<|sep|>New York<|close|>argument<|sep|>'
     '<|open|>argument key="days" type="number"<|sep|>3<|close|>argument<|sep|><|close|>call<|sep|>'
     "<|close|>tools<|sep|><|close|>message<|sep|>",
     'Ok.<|close|>response<|sep|><|open|>tools<|sep|><|open|>call tool="get_weather" index="0"<|sep|>'
     '<|open|>argument key="city" type="string"<|sep|>New York<|close|>argument<|sep|>'
     '<|open|>argument key="days" type="string"<|sep|>3<|close|>argument<|sep|><|close|>call<|sep|>'
     "<|close|>tools<|sep|><|close|>message<|sep|>"),  # an integer is typed "number"
    ("kimi_k3", "Sure.<|close|>response<|sep|><|close|>message<|sep|>",
     "Sure.<|close|>response<|sep|>"),  # the message is closed
])
def test_exact_layouts(family, good, bad):
    assert grammar_accepts(family, [WEATHER, TIME], good)
    assert not grammar_accepts(family, [WEATHER, TIME], bad)


def test_deepseek_v32_call_without_parameters():
    """The encoder joins no parameters to "" between the invoke's two newlines."""
    none = {"type": "function", "function": {"name": "now"}}
    for sep in ("\n\n", "\n"):
        text = f'\n\n<｜DSML｜function_calls>\n<｜DSML｜invoke name="now">{sep}</｜DSML｜invoke>\n</｜DSML｜function_calls>'
        assert grammar_accepts("deepseek_v32", [none, WEATHER], text)
    # A tool with a required parameter has no empty form.
    text = '\n\n<｜DSML｜function_calls>\n<｜DSML｜invoke name="get_weather">\n\n</｜DSML｜invoke>\n</｜DSML｜function_calls>'
    assert not grammar_accepts("deepseek_v32", [none, WEATHER], text)


@pytest.mark.parametrize("family, marker", [("minimax_m2", "<minimax:tool_call>"),
                                            ("deepseek_v32", "<｜DSML｜function_calls>")])
def test_a_block_marker_is_never_free_text(family, marker):
    for choice in ("auto", "none"):
        assert not grammar_accepts(family, [TIME], f"See {marker} here", tool_choice=choice)
        assert grammar_accepts(family, [TIME], f"See {marker[:-1]} here", tool_choice=choice)


def test_partial_trigger_in_free_text_is_text():
    assert grammar_accepts("hermes", [TIME], "Use <tool_ call> or <tool_call")
    assert not grammar_accepts("hermes", [TIME], "Use <tool_call> here")


@pytest.mark.parametrize("tool_choice", [
    {"type": "function", "function": {"name": "nope"}},
    {"type": "allowed_tools", "allowed_tools": {"mode": "auto", "tools": [{"type": "function", "function": {"name": "x"}}]}},
    ["get_time", "nope"],
])
def test_a_choice_naming_a_tool_not_offered_raises(tool_choice):
    with pytest.raises(xgr2.ToolCallingError, match="not among the offered tools") as e:
        tool_calling.hermes([WEATHER, TIME], tool_choice)
    assert isinstance(e.value, ValueError)


@pytest.mark.parametrize("tools, tool_choice, words", [
    ([WEATHER], "sometimes", "tool_choice must be"),
    ([WEATHER], {"type": "allowed_tools", "allowed_tools": {"mode": "none", "tools": []}}, "mode must be"),
    ([WEATHER, WEATHER], "auto", "two tools are named"),
    ([{"type": "function"}], "auto", "tools\\[0\\]"),
    ([{"type": "function", "function": {"description": "x"}}], "auto", "name must be"),
    ({"type": "function"}, "auto", "must be a list"),
    ([], "required", "no tool is offered"),
    ([WEATHER], {"type": "custom"}, "expected"),
])
def test_bad_requests_raise_tool_calling_error(tools, tool_choice, words):
    with pytest.raises(xgr2.ToolCallingError, match=words):
        tool_calling.llama3_function_tag(tools, tool_choice)


def test_unknown_family_and_bad_parameters():
    with pytest.raises(xgr2.ToolCallingError, match="unknown tool-calling family"):
        tool_calling.structural_tag("llama5", [WEATHER])
    bad = {"type": "function", "function": {"name": "f", "parameters": {"type": "object", "minProperties": "x"}}}
    with pytest.raises(xgr2.StructuralTagError):
        tool_calling.hermes([bad])


def test_no_tools_with_auto_is_free_text_and_specs_are_json():
    assert grammar_accepts("kimi_k2", [], "anything at all")
    for family in tool_calling.FAMILIES:
        spec = tool_calling.structural_tag(family, [WEATHER, TIME], "auto", reasoning=True)
        assert json.loads(json.dumps(spec)) == spec


def spec_triggers(family: str, tool_choice="auto") -> tuple[list[str], list[str]]:
    """The triggers and excluded strings of the preset's own ``triggered_tags`` (the
    free text's call or section start), read from its structural tag; ([], []) for a
    family whose free text has no trigger (llama3_json, harmony)."""
    def find(f):
        if isinstance(f, dict):
            if f.get("type") == "triggered_tags":
                return f
            values = f.values()
        elif isinstance(f, list):
            values = f
        else:
            return None
        return next((hit for v in values if (hit := find(v)) is not None), None)

    found = find(tool_calling.structural_tag(family, [WEATHER, TIME], tool_choice)["format"])
    return (list(found["triggers"]), list(found.get("excludes", []))) if found else ([], [])


@pytest.mark.parametrize("family", tool_calling.FAMILIES)
def test_token_masks_along_an_output_match_brute_force(family, llama3_tokenizer_info, llama3_hf_tokenizer):
    """Llama-3 masks along a rendered output (reasoning, free text holding "<tool" and the
    family's trigger less its last character, a call) equal brute force (``try_advance``
    of every id) at a few states inside the partial trigger and a few others."""
    from test_mask_oracle import check_along

    triggers, _ = spec_triggers(family)
    partial = triggers[0][:-1] if triggers else ""
    calls = [("get_weather", {"city": "Paris", "days": 2}, WEATHER["function"]["parameters"])]
    text = render(family, f"Let me <tool {partial} check.", calls, "ok")
    grammar = getattr(tool_calling, family)([WEATHER, TIME], reasoning=True)
    state = xgr2.compile(grammar, llama3_tokenizer_info).initial_state()
    ids = llama3_hf_tokenizer.encode(text, add_special_tokens=False)
    ends = [0]
    for t in ids:
        ends.append(ends[-1] + len(llama3_tokenizer_info.decoded_vocab[t]))
    data, rng = text.encode(), random.Random(family)
    start = data.index(b"Let me <tool") if b"Let me" in data else len(data)
    inside = sorted(k for k, e in enumerate(ends) if start < e <= start + len(f"Let me <tool {partial}".encode()))
    # ~0.1 s a state: 4 inside the partial trigger (the last one among them), 3 others, the end.
    check_at = set(rng.sample(inside, min(3, len(inside))) + inside[-1:] + rng.sample(range(len(ids) + 1), 3))
    check_at.add(len(ids))
    state = check_along(state, ids, llama3_tokenizer_info, rng, check_at, complete_vocab=False)
    assert state.can_terminate


def test_a_repeated_request_reuses_its_grammar_and_a_changed_one_does_not():
    # A server sends the same tools again and again: the grammar is built once.
    first = tool_calling.llama3_function_tag([WEATHER, TIME])
    assert tool_calling.llama3_function_tag([json.loads(json.dumps(WEATHER)), TIME]) is first
    changed = json.loads(json.dumps(WEATHER))
    changed["function"]["name"] = "get_forecast"
    other = tool_calling.llama3_function_tag([changed, TIME])
    assert other is not first
    assert tool_calling.llama3_function_tag([WEATHER, TIME], parallel_tool_calls=False) is not first
    call = '<function=get_forecast>{"city": "Paris"}</function>'
    assert xgr2.compile(other, BYTES).initial_state().try_advance_bytes(call.encode()) is not None
    assert xgr2.compile(first, BYTES).initial_state().try_advance_bytes(call.encode()) is None


# ------------------------------------------------------------------ chat-template layouts
WEATHER_TOOLS = [{"type": "function", "function": {"name": "get_weather", "parameters": {
    "type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}]


@pytest.mark.parametrize("family", [f for f in tool_calling.FAMILIES
                                    if f not in ("harmony", "cohere", "kimi_k3", "minimax_m3")])
def test_reasoning_whose_opening_tag_the_prompt_wrote(family):
    """Templates that end the prompt with "<think>" leave the model "...</think>"; GLM-4.5
    writes "\\n<think>". All three layouts are one reasoning block."""
    call = [("get_weather", {"city": "Oslo"}, WEATHER_TOOLS[0]["function"]["parameters"])]
    full = render(family, "", call, "Let me check.")
    assert full.startswith("<think>\n")
    for text in [full, full.removeprefix("<think>"), "\n" + full]:
        assert grammar_accepts(family, WEATHER_TOOLS, text, reasoning=True), text
        calls = tool_calling.parse_calls(family, text, WEATHER_TOOLS, reasoning=True)
        assert [(c.name, c.arguments, c.error) for c in calls] == [("get_weather", {"city": "Oslo"}, None)]
    assert not grammar_accepts(family, WEATHER_TOOLS, full.replace("</think>", ""), reasoning=True)


def test_cohere_reasoning_between_its_thinking_tokens():
    call = [("get_weather", {"city": "Oslo"}, WEATHER_TOOLS[0]["function"]["parameters"])]
    full = render("cohere", "", call, "Let me check.")
    assert full.startswith("<|START_THINKING|>")
    for text in [full, full.removeprefix("<|START_THINKING|>")]:
        assert grammar_accepts("cohere", WEATHER_TOOLS, text, reasoning=True), text
        calls = tool_calling.parse_calls("cohere", text, WEATHER_TOOLS, reasoning=True)
        assert [(c.name, c.arguments, c.error) for c in calls] == [("get_weather", {"city": "Oslo"}, None)]
    assert not grammar_accepts("cohere", WEATHER_TOOLS, full.replace("<|END_THINKING|>", ""), reasoning=True)
    assert not grammar_accepts("cohere", WEATHER_TOOLS, full.replace("<|END_THINKING|>", "</think>"), reasoning=True)


UNION_TOOLS = [{"type": "function", "function": {"name": "find", "parameters": {
    "type": "object", "properties": {"q": {"type": ["string", "null"]},
                                     "n": {"anyOf": [{"type": "integer"}, {"type": "string", "enum": ["all"]}]}},
    "required": ["q", "n"]}}}]


@pytest.mark.parametrize("family", ["qwen3_coder", "glm45", "glm47", "minimax_m2", "deepseek_v32"])
def test_string_branches_of_a_union_are_raw_text(family):
    """A `["string", "null"]` or `anyOf` parameter: its string values raw (as the chat
    templates write any string), its other values JSON; DeepSeek V3.2's flag says which."""
    schema = UNION_TOOLS[0]["function"]["parameters"]
    for args, raw in [({"q": "Beijing", "n": 3}, {"q": True, "n": False}),
                      ({"q": None, "n": "all"}, {"q": False, "n": True})]:
        call = render_call(family, "find", args, schema, 0)
        for name, value in args.items():  # render_call writes declared strings raw only
            json_text, raw_text = json.dumps(value), value if isinstance(value, str) else json.dumps(value)
            call = call.replace(f">{json_text}<", f">{raw_text}<").replace(f">\n{json_text}\n<", f">\n{raw_text}\n<")
            if family == "deepseek_v32":
                flag = "true" if raw[name] else "false"
                call = call.replace(f'name="{name}" string="false"', f'name="{name}" string="{flag}"')
        text = render(family, "", [], None) + _wrap_calls(family, call)
        assert grammar_accepts(family, UNION_TOOLS, text), text
        calls = tool_calling.parse_calls(family, text, UNION_TOOLS)
        assert [(c.name, c.arguments) for c in calls] == [("find", args)]
        quoted = text.replace(">Beijing<", '>"Beijing"<').replace(">\nBeijing\n<", '>\n"Beijing"\n<')
        if quoted != text and family == "deepseek_v32":  # a JSON string under string="true" is raw text
            assert not grammar_accepts(family, UNION_TOOLS, quoted.replace('string="true">"', 'string="false">"'))


def _wrap_calls(family: str, call: str) -> str:
    """One rendered call in its family's block (as `render` does)."""
    if family == "minimax_m2":
        return "\n<minimax:tool_call>\n" + call + "</minimax:tool_call>"
    if family == "deepseek_v32":
        return "\n\n<｜DSML｜function_calls>\n" + call + "\n</｜DSML｜function_calls>"
    return call


def test_harmony_recipient_in_the_header_preambles_and_analysis():
    args = '{"city": "Oslo"}'
    layouts = [f"<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{args}<|call|>",
               f"<|channel|>commentary to=functions.get_weather<|constrain|>json<|message|>{args}<|call|>",
               f" to=functions.get_weather<|channel|>commentary json<|message|>{args}<|call|>",
               f" to=functions.get_weather<|channel|>commentary <|constrain|>json<|message|>{args}<|call|>"]
    preamble = "<|channel|>commentary<|message|>Checking the weather.<|end|><|start|>assistant"
    analysis = "<|channel|>analysis<|message|>Need the weather.<|end|><|start|>assistant"
    for call in layouts:
        for head, reasoning in [("", False), (preamble, False), ("", True), (analysis, True),
                                (analysis + analysis + preamble, True)]:
            text = head + call
            assert grammar_accepts("harmony", WEATHER_TOOLS, text, reasoning=reasoning), text
            calls = tool_calling.parse_calls("harmony", text, WEATHER_TOOLS, reasoning=reasoning)
            assert [(c.name, c.arguments) for c in calls] == [("get_weather", {"city": "Oslo"})], text
        assert not grammar_accepts("harmony", WEATHER_TOOLS, analysis + call, reasoning=False)  # no reasoning asked
        assert not grammar_accepts("harmony", WEATHER_TOOLS, call.replace("get_weather", "get_time"))
        assert not grammar_accepts("harmony", WEATHER_TOOLS, call.replace(args, '{"city": 1}'))


def test_gemma4_calls_read_back():
    q = '<|"|>'
    text = (f"Sure.<|tool_call>call:plan{{steps:[{q}a{q},{q}b, c{q}],where:{{lat:1.5,ok:true}},n:null}}<tool_call|>"
            f"<|tool_call>call:plan{{steps:[{q}cut")
    calls = tool_calling.parse_calls("gemma4", text)
    assert calls[0] == tool_calling.ToolCall("plan", {"steps": ["a", "b, c"], "where": {"lat": 1.5, "ok": True},
                                                      "n": None})
    assert calls[1].name == "plan" and calls[1].arguments is None and calls[1].error

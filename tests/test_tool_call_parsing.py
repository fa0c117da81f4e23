"""xgr2.tool_calling.parse_calls: reading calls back out of outputs, for every family.

Outputs come from the independent renderers of tests/test_tool_calling.py (BFCL tools,
arguments drawn by hypothesis-jsonschema); each one is first checked against the preset's
grammar, so the texts parsed are outputs the constrained model could write. The calls
read back must be exactly the rendered ones (names, decoded arguments, order), also when
the arguments are invalid or the tool is not offered (parsing judges nothing), and a
call cut off anywhere before its end must not read as complete.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import xgr2
from test_json_schema import mutate
from test_tool_calling import (TIME, WEATHER, XML, draw_request, grammar_accepts, m3_meaning, render, render_call,
                               xml_meaning)
from xgr2.tool_calling import FAMILIES, ToolCall, parse_calls


def expected(family: str, calls: list) -> list[tuple]:
    """(name, arguments) as a parser of the family reads them."""
    return [(name, xml_meaning(args, schema) if family in XML else m3_meaning(args, schema) if family == "minimax_m3"
             else args) for name, args, schema in calls]


def read(family: str, text: str, tools: list = (), reasoning: bool = False) -> list[tuple]:
    got = parse_calls(family, text, tools, reasoning=reasoning)
    assert all(isinstance(c, ToolCall) and c.error is None for c in got), got
    return [(c.name, c.arguments) for c in got]


@pytest.mark.parametrize("family", FAMILIES)
@settings(max_examples=6, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_rendered_outputs_read_back(family, data):
    rng, tools, reasoning, thought, text, calls = draw_request(family, data)
    pre = "" if family == "llama3_json" else text
    whole = render(family, pre, calls, thought)
    assert grammar_accepts(family, tools, whole, reasoning=reasoning), whole
    assert read(family, whole, tools, reasoning) == expected(family, calls)
    assert read(family, render(family, text, [], thought), tools, reasoning) == []  # free text only

    # Parsing judges nothing: a tool not offered and invalid arguments read as written.
    name, args, schema = calls[0]
    if family not in XML and family not in ("gemma4", "cohere", "kimi_k3", "minimax_m3"):  # (object arguments)
        bad = [("not_offered_" + name, mutate(args, rng), schema)] + calls[1:]
        assert read(family, render(family, pre, bad, thought), tools, reasoning) == expected(family, bad)

    # A call cut off before its end never reads as complete.
    last = render_call(family, *calls[-1][:2], calls[-1][2], len(calls) - 1)
    start, n = whole.rindex(last), len(calls)
    for cut in sorted(rng.sample(range(start + 1, start + len(last)), min(8, len(last) - 1))):
        got = parse_calls(family, whole[:cut], tools, reasoning=reasoning)
        assert [(c.name, c.arguments) for c in got[:n - 1]] == expected(family, calls[:-1]), whole[:cut]
        assert len(got) < n or got[-1].error is not None, (whole[:cut], got)


TRICKY = {"city": 'a</tool_call></function>```<｜tool▁call▁end｜><|tool_call_end|><|call|>"}] x', "days": 2}


@pytest.mark.parametrize("family", sorted(set(FAMILIES) - XML))
def test_end_delimiters_inside_json_strings_do_not_end_a_call(family):
    calls = [("get_weather", TRICKY, WEATHER["function"]["parameters"])]
    text = render(family, "", calls, None)
    assert grammar_accepts(family, [WEATHER, TIME], text)
    assert read(family, text, [WEATHER, TIME]) == expected(family, calls)


def test_xml_values_follow_the_declared_types():
    """A string parameter is its raw text even when it looks like JSON; others are JSON."""
    tools = [{"type": "function", "function": {"name": "f", "parameters": {"type": "object", "properties": {
        "s": {"type": "string"}, "n": {"type": "integer"}, "e": {"enum": ["1", "2"]}}}}}]
    qwen = ("<tool_call>\n<function=f>\n<parameter=s>\n12\n</parameter>\n<parameter=n>\n12\n</parameter>\n"
            "<parameter=e>\n2\n</parameter>\n</function>\n</tool_call>")
    glm = ("<tool_call>f\n<arg_key>s</arg_key>\n<arg_value>12</arg_value>\n<arg_key>n</arg_key>\n"
           "<arg_value>12</arg_value>\n<arg_key>e</arg_key>\n<arg_value>2</arg_value>\n</tool_call>")
    minimax = ('\n<minimax:tool_call>\n<invoke name="f">\n<parameter name="s">12</parameter>\n'
               '<parameter name="n">12</parameter>\n<parameter name="e">2</parameter>\n</invoke>\n</minimax:tool_call>')
    for family, text in (("qwen3_coder", qwen), ("glm45", glm), ("minimax_m2", minimax)):
        assert grammar_accepts(family, tools, text)
        assert read(family, text, tools) == [("f", {"s": "12", "n": 12, "e": "2"})]
        assert read(family, text) == [("f", {"s": 12, "n": 12, "e": 2})]  # no tools: JSON where it parses
    # DeepSeek V3.2 marks raw text itself (string="true"), with or without tools.
    dsml = ('\n\n<｜DSML｜function_calls>\n<｜DSML｜invoke name="f">\n'
            '<｜DSML｜parameter name="s" string="true">12</｜DSML｜parameter>\n'
            '<｜DSML｜parameter name="n" string="false">12</｜DSML｜parameter>\n'
            '<｜DSML｜parameter name="e" string="true">2</｜DSML｜parameter>\n</｜DSML｜invoke>\n</｜DSML｜function_calls>')
    assert grammar_accepts("deepseek_v32", tools, dsml)
    assert read("deepseek_v32", dsml, tools) == read("deepseek_v32", dsml) == [("f", {"s": "12", "n": 12, "e": "2"})]


def test_call_delimiters_in_free_text_before_the_block_are_text():
    text = ('Write <invoke name="f">\n</invoke>\n like this.\n<minimax:tool_call>\n<invoke name="get_time">\n'
            '<parameter name="tz">UTC</parameter>\n</invoke>\n</minimax:tool_call>')
    assert grammar_accepts("minimax_m2", [TIME], text)
    assert read("minimax_m2", text, [TIME]) == [("get_time", {"tz": "UTC"})]


def test_reasoning_text_is_not_read_as_calls():
    call = '<tool_call>\n{"name": "get_time", "arguments": {"tz": "UTC"}}\n</tool_call>'
    text = f"<think>\nmaybe {call}?\n</think>\n\nFine."
    assert grammar_accepts("hermes", [TIME], text, reasoning=True)
    assert read("hermes", text, [TIME], reasoning=True) == []
    assert read("hermes", text + call, [TIME], reasoning=True) == [("get_time", {"tz": "UTC"})]
    harmony = ("<|channel|>analysis<|message|><|channel|>commentary to=functions.get_time <|constrain|>json"
               '<|message|>{}<|call|><|end|><|start|>assistant<|channel|>final<|message|>UTC<|return|>')
    assert read("harmony", harmony, [TIME], reasoning=True) == []


@pytest.mark.parametrize("family, text, error", [
    ("hermes", '<tool_call>\n{"name": "f", "arguments": {"a": 1}}\n', "cut off"),
    ("hermes", '<tool_call>\n{"name": "f", "arguments": {"a": 1}}\nDone', "unexpected text"),
    ("hermes", '<tool_call>\n{"name": "f"}\n</tool_call>', "no 'arguments'"),
    ("hermes", '<tool_call>\n{"arguments": {}}\n</tool_call>', "no string \"name\""),
    ("llama3_json", '{"name": "f", "parameters": {}}; oops', "not JSON"),
    ("mistral", "[TOOL_CALLS] nope", "not followed by a JSON list"),
    ("mistral", "[TOOL_CALLS] [{\"name\": \"f\", \"arguments\": {}}", "cut off"),
    ("kimi_k2", "<|tool_calls_section_begin|><|tool_call_begin|>functions.f:0<|tool_call_argument_begin|>{x}",
     "not JSON"),
    ("glm45", "<tool_call>f\n<arg_key>a</arg_key>\n<arg_value>1</arg_value>\n", "cut off"),
    ("minimax_m2", '\n<minimax:tool_call>\n<invoke name="f">\n<parameter name="a">1</parameter>\n</invoke>', "cut off"),
    ("minimax_m2", '\n<minimax:tool_call>\n<invoke name="f">\n<parameter name="a">1\n</invoke>', "unexpected text"),
    ("deepseek_v32", '\n\n<｜DSML｜function_calls>\n<｜DSML｜invoke name="f">\n'
     '<｜DSML｜parameter name="a" string="false">1</｜DSML｜parameter>\n</｜DSML｜inv', "cut off"),
])
def test_malformed_calls_are_returned_with_an_error(family, text, error):
    call = parse_calls(family, text)[-1]
    assert call.error is not None and error in call.error


def test_unknown_family_raises():
    with pytest.raises(xgr2.ToolCallingError, match="unknown tool-calling family"):
        parse_calls("llama5", "")


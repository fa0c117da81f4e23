"""Tool-calling presets: the grammar of a model family's output, from OpenAI-style tools.

Each preset takes the request's ``tools`` (``[{"type": "function", "function": {"name",
"description", "parameters"}}]``), ``tool_choice``, ``parallel_tool_calls`` and
``reasoning``, writes a structural tag (docs/structural_tags.md) for the family's output
layout and compiles it with :meth:`xgr2.Grammar.from_structural_tag`. Argument values
follow :meth:`xgr2.Grammar.from_json_schema` of the tool's ``parameters`` (properties in
declared order, any JSON whitespace), through the structural tag's ``json_schema`` format.

``tool_choice``:

- ``"auto"``: free text, calls allowed (the family's rules for where they go);
- ``"required"``: at least one call, and the answer starts with it (after the
  reasoning, when ``reasoning=True``);
- ``"none"``: free text only; text that would start a call is refused;
- ``{"type": "function", "function": {"name": N}}``: like ``"required"``, tool ``N`` only;
- ``{"type": "allowed_tools", "allowed_tools": {"mode": "auto" | "required", "tools":
  [...]}}`` (Chat Completions; the Responses form with ``mode``/``tools`` at the top level
  too), or a plain list of tool names: those tools only, in that mode.

A choice naming a tool that is not offered raises :class:`xgr2.ToolCallingError` (a
``ValueError``). ``parallel_tool_calls=False`` allows one call at most.

Special tokens: pass the model's ``tokenizer_info=`` and every delimiter that is one of
its special tokens (``<|tool_call_begin|>``, ``<|channel|>``, ``[TOOL_CALLS]``, ...) is
matched by that token's id, never by its text (``special_token_ids`` never match grammar
text; ``from_huggingface`` puts a tokenizer's special added tokens there). A delimiter
that is a stop token (Harmony's ``<|call|>`` and ``<|return|>`` in gpt-oss) ends the
output there: the stop token is allowed where the grammar can end. Triggers that are
special tokens make the free text before a call "any tokens but the trigger"
(``token_triggered_tags``). Without ``tokenizer_info`` the delimiters are text, as the
layouts below write them (right for tokenizers that have them as ordinary tokens, or
none).

>>> import xgr2
>>> from xgr2 import tool_calling
>>> tools = [{"type": "function", "function": {"name": "get_weather", "parameters": {
...     "type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}]
>>> g = tool_calling.hermes(tools, "required")
>>> tok = xgr2.TokenizerInfo([bytes([b]) for b in range(256)])
>>> text = '<tool_call>\\n{"name": "get_weather", "arguments": {"city": "Paris"}}\\n</tool_call>'
>>> xgr2.compile(g, tok).initial_state().try_advance_bytes(text.encode()).can_terminate
True
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Union

from ._errors import ToolCallingError
from ._grammar import Grammar, _dumps
from ._special_delimiters import with_special_tokens
from ._tokenizer import TokenizerInfo
from ._tool_call_parsing import ToolCall, parse_calls

__all__ = [
    "FAMILIES",
    "ToolCall",
    "ToolChoice",
    "cohere",
    "deepseek_v3",
    "deepseek_v31",
    "deepseek_v32",
    "glm45",
    "glm47",
    "gemma4",
    "harmony",
    "hermes",
    "kimi_k2",
    "kimi_k3",
    "llama3_function_tag",
    "llama3_json",
    "minimax_m2",
    "minimax_m3",
    "mistral",
    "parse_calls",
    "qwen3_coder",
    "structural_tag",
    "think_then",
]

ToolChoice = Union[str, Mapping[str, Any], Sequence[Any]]
"""``"auto"``, ``"required"``, ``"none"``, a named function, allowed tools, or a list of names."""

_Format = dict[str, Any]  # a structural-tag format object


@dataclass(frozen=True)
class _Tool:
    name: str
    parameters: Any  # a JSON Schema (object or boolean)


# ---------------------------------------------------------------------------------------
# Requests: tools and tool_choice


def _parse_tools(tools: Sequence[Mapping[str, Any]]) -> list[_Tool]:
    if isinstance(tools, (str, bytes, Mapping)) or not isinstance(tools, Sequence):
        raise ToolCallingError("tools must be a list of {\"type\": \"function\", \"function\": {...}} objects")
    out: list[_Tool] = []
    names: set[str] = set()
    for i, tool in enumerate(tools):
        fn = tool.get("function") if isinstance(tool, Mapping) else None
        if not isinstance(tool, Mapping) or tool.get("type", "function") != "function" or not isinstance(fn, Mapping):
            raise ToolCallingError(f"tools[{i}] must be {{\"type\": \"function\", \"function\": {{...}}}}")
        name = fn.get("name")
        if not isinstance(name, str) or not name:
            raise ToolCallingError(f"tools[{i}].function.name must be a non-empty string")
        if name in names:
            raise ToolCallingError(f"two tools are named {name!r}")
        names.add(name)
        # No parameters: OpenAI's "takes no arguments".
        params = fn.get("parameters", {"type": "object", "properties": {}})
        if not isinstance(params, (Mapping, bool)):
            raise ToolCallingError(f"tools[{i}].function.parameters must be a JSON Schema object")
        out.append(_Tool(name, dict(params) if isinstance(params, Mapping) else params))
    return out


def _tool_ref_name(ref: Any, where: str) -> str:
    if isinstance(ref, str):
        return ref
    if isinstance(ref, Mapping):
        fn = ref.get("function")
        name = fn.get("name") if isinstance(fn, Mapping) else ref.get("name")
        if isinstance(name, str):
            return name
    raise ToolCallingError(f"{where} must name a function: a name or {{\"type\": \"function\", \"function\": "
                           f"{{\"name\": ...}}}}, got {ref!r}")


def _choose(tools: list[_Tool], tool_choice: ToolChoice) -> tuple[str, list[_Tool]]:
    """The mode ("auto", "required" or "none") and the tools a call may name."""
    names: list[str] | None = None
    if isinstance(tool_choice, str):
        if tool_choice not in ("auto", "required", "none"):
            raise ToolCallingError(f"tool_choice must be \"auto\", \"required\" or \"none\", got {tool_choice!r}")
        mode = tool_choice
    elif isinstance(tool_choice, Mapping):
        kind = tool_choice.get("type")
        if kind == "function":
            mode, names = "required", [_tool_ref_name(tool_choice, "tool_choice")]
        elif kind == "allowed_tools":
            spec = tool_choice.get("allowed_tools", tool_choice)
            if not isinstance(spec, Mapping):
                raise ToolCallingError("tool_choice.allowed_tools must be an object with \"mode\" and \"tools\"")
            mode = spec.get("mode", "auto")
            if mode not in ("auto", "required"):
                raise ToolCallingError(f"allowed_tools mode must be \"auto\" or \"required\", got {mode!r}")
            refs = spec.get("tools")
            if not isinstance(refs, Sequence) or isinstance(refs, (str, bytes)):
                raise ToolCallingError("tool_choice.allowed_tools.tools must be a list")
            names = [_tool_ref_name(r, f"allowed_tools.tools[{i}]") for i, r in enumerate(refs)]
        else:
            raise ToolCallingError(f"tool_choice of type {kind!r}: expected \"function\" or \"allowed_tools\"")
    elif isinstance(tool_choice, Sequence) and not isinstance(tool_choice, bytes):
        mode, names = "auto", [_tool_ref_name(r, f"tool_choice[{i}]") for i, r in enumerate(tool_choice)]
    else:
        raise ToolCallingError(f"unsupported tool_choice {tool_choice!r}")
    chosen = tools
    if names is not None:
        by_name = {t.name: t for t in tools}
        for name in names:
            if name not in by_name:
                raise ToolCallingError(f"tool_choice names {name!r}, which is not among the offered tools "
                                       f"({', '.join(sorted(by_name)) or 'none'})")
        chosen = [by_name[n] for n in dict.fromkeys(names)]
    if not chosen and mode != "none":
        if mode == "required":
            raise ToolCallingError("tool_choice requires a call, but no tool is offered")
        mode = "none"
    return mode, chosen


# ---------------------------------------------------------------------------------------
# Structural-tag building blocks


def _const(value: str) -> _Format:
    return {"type": "const_string", "value": value}


def _text(*excludes: str) -> _Format:
    return {"type": "any_text", "excludes": list(excludes)} if excludes else {"type": "any_text"}


def _regex(pattern: str) -> _Format:
    return {"type": "regex", "pattern": pattern}


def _seq(*elements: _Format) -> _Format:
    return {"type": "sequence", "elements": list(elements)} if len(elements) != 1 else elements[0]


def _tag(begin: str, content: _Format, end: str) -> _Format:
    return {"type": "tag", "begin": begin, "content": content, "end": end}


def _schema(schema: Any) -> _Format:
    return {"type": "json_schema", "json_schema": schema}


def _or(elements: list[_Format]) -> _Format:
    return {"type": "or", "elements": elements} if len(elements) > 1 else elements[0]


def _json_name(name: str) -> str:
    return json.dumps(name, ensure_ascii=False)


# `<think>` reasoning, then any whitespace before the answer (Qwen3 and DeepSeek-R1 write
# "<think>\n...\n</think>\n\n"). The opening tag may be left out: many chat templates end
# the prompt with it (DeepSeek-R1 and V3.1/V3.2 thinking, Qwen3 Thinking-2507 and Next,
# MiniMax-M2, GLM-4.7, Kimi K2.5), so the model writes only "...</think>"; GLM-4.5 writes
# a newline before it.
_THINK = _seq(_regex("\n?"), {"type": "optional", "content": _const("<think>")}, _tag("", _text(), "</think>"),
              _regex(r"[ \t\r\n]*"))


def _is_string(schema: Mapping[str, Any]) -> bool:
    """Typed ``string``, or untyped with a string ``const`` or an ``enum`` of strings."""
    if "type" in schema:
        return bool(schema["type"] == "string")
    enum = schema.get("enum")
    return isinstance(schema.get("const"), str) or (
        isinstance(enum, list) and bool(enum) and all(isinstance(e, str) for e in enum))


def _is_raw(schema: Any) -> bool:
    """Whether the XML styles write a parameter of this schema as raw text (not JSON)."""
    return isinstance(schema, Mapping) and _is_string(schema)


_ANNOTATIONS = frozenset({"title", "description", "default", "examples", "$comment"})


def _forms(schema: Any) -> tuple[list[Mapping[str, Any]], Any]:
    """How the XML styles write a parameter of this schema: the string schemas of its
    raw-text forms, and the schema of its JSON form (None when every value is raw text).
    A type list with ``string`` (``["string", "null"]``) and a bare ``anyOf`` with string
    branches (pydantic's ``Optional[str]``) have both, as the chat templates write a
    string value raw whatever else the parameter may be."""
    if not isinstance(schema, Mapping):
        return [], schema
    if _is_string(schema):
        return [schema], None
    types = schema.get("type")
    if isinstance(types, list) and "string" in types:
        others = [t for t in types if t != "string"]
        json_part = {**schema, "type": others[0] if len(others) == 1 else others} if others else None
        return [{**schema, "type": "string"}], json_part
    branches = schema.get("anyOf")
    if isinstance(branches, list) and branches and set(schema) <= {"anyOf"} | _ANNOTATIONS:
        raw = [b for b in branches if isinstance(b, Mapping) and _is_string(b)]
        rest = [b for b in branches if not (isinstance(b, Mapping) and _is_string(b))]
        if raw:
            return raw, ({"anyOf": rest} if rest else None)
    return [], schema


def _raw_value(schema: Mapping[str, Any]) -> _Format:
    """A string parameter's raw text (its const / enum enforced)."""
    if isinstance(schema.get("const"), str):
        return _const(schema["const"])
    enum = schema.get("enum")
    if isinstance(enum, list) and enum and all(isinstance(e, str) for e in enum):
        return _or([_const(e) for e in enum])
    return _text()


def _json_value(schema: Any, root: Any) -> _Format:
    """A parameter value written as JSON."""
    if isinstance(schema, Mapping) and isinstance(root, Mapping):  # keep $ref targets reachable
        defs = {k: root[k] for k in ("$defs", "definitions") if k in root and k not in schema}
        schema = {**schema, **defs}
    return _schema(schema)


def _xml_params(tool: _Tool, begin: Callable[[str, bool], str], end: str, after: str = "") -> _Format:
    """The declared properties in order, each `begin(name, raw) value end after` (``raw``:
    the value is a string's raw text, which may not contain ``end``); required ones must
    appear, the others may be left out; no other properties."""
    params = tool.parameters if isinstance(tool.parameters, Mapping) else {}
    props = params.get("properties", {})
    required = set(params.get("required", []))
    elements: list[_Format] = []
    for name, sub in props.items():
        raws, json_part = _forms(sub)
        free = any(_raw_value(r) == _text() for r in raws)  # plain text covers every raw form
        alts = [_tag(begin(name, True), _text() if free else _raw_value(r), end) for r in (raws[:1] if free else raws)]
        if json_part is not None:
            alts.append(_tag(begin(name, False), _json_value(json_part, params), end))
        one = alts[0] if len(alts) == 1 else _or(alts)
        if after:
            one = _seq(one, _const(after))
        elements.append(one if name in required else {"type": "optional", "content": one})
    return _seq(*elements) if elements else _const("")


def _has_required(tool: _Tool) -> bool:
    return isinstance(tool.parameters, Mapping) and bool(tool.parameters.get("required"))


@dataclass(frozen=True)
class _Family:
    """Calls that sit in free text (section None) or in one section that ends the output."""

    call: Callable[[_Tool], _Format]  # one whole call, a `tag` that begins with `trigger`
    trigger: str  # the text that starts a call (section None) or the section
    section: Callable[[_Format], _Format] | None = None  # the calls' format -> the section tag
    separator: str = ""  # between calls in a section
    # The section's marker, when `trigger` is the marker preceded by the whitespace the
    # template always writes before it: free text may not hold the marker otherwise.
    marker: str | None = None
    think: _Format = field(default_factory=lambda: _THINK)  # the reasoning block that `reasoning=True` puts first
    excludes: tuple[str, ...] = ()  # other strings free text may not hold (stray call markers)


def _answer(family: _Family, mode: str, tools: list[_Tool], parallel: bool) -> _Format:
    if mode == "none":
        return _text(family.marker or family.trigger, *family.excludes)
    calls = [family.call(t) for t in tools]
    # A free-text occurrence of the marker ends where the trigger ends; the longer
    # string (the trigger) wins there, so only a marker without its whitespace is refused.
    listed = ([family.marker] if family.marker else []) + list(family.excludes)
    excludes = {"excludes": listed} if listed else {}
    if family.section is None:
        return {"type": "triggered_tags", "triggers": [family.trigger], "tags": calls,
                "at_least_one": mode == "required", "stop_after_first": not parallel, **excludes}
    inner = {"type": "tags_with_separator", "tags": calls, "separator": family.separator,
             "at_least_one": True, "stop_after_first": not parallel}
    return {"type": "triggered_tags", "triggers": [family.trigger], "tags": [family.section(inner)],
            "at_least_one": mode == "required", "stop_after_first": True, **excludes}


def _wrap(answer: _Format, reasoning: bool, think: _Format = _THINK) -> dict[str, Any]:
    return {"type": "structural_tag", "format": _seq(think, answer) if reasoning else answer}


# ---------------------------------------------------------------------------------------
# Families

_LLAMA_FUNCTION_TAG = _Family(
    call=lambda t: _tag(f"<function={t.name}>", _schema(t.parameters), "</function>"), trigger="<function=")

_HERMES = _Family(
    call=lambda t: _tag(f'<tool_call>\n{{"name": {_json_name(t.name)}, "arguments": ', _schema(t.parameters),
                        "}\n</tool_call>"),
    trigger="<tool_call>")

_QWEN3_CODER = _Family(
    call=lambda t: _tag(f"<tool_call>\n<function={t.name}>\n",
                        _xml_params(t, lambda p, raw: f"<parameter={p}>\n", "\n</parameter>\n"),
                        "</function>\n</tool_call>"),
    trigger="<tool_call>")

_GLM45 = _Family(
    call=lambda t: _tag(f"<tool_call>{t.name}\n",
                        _xml_params(t, lambda p, raw: f"<arg_key>{p}</arg_key>\n<arg_value>", "</arg_value>\n"),
                        "</tool_call>"),
    trigger="<tool_call>")

# GLM-4.7 / GLM-5's template: no newlines (strings raw, other values JSON).
_GLM47 = _Family(
    call=lambda t: _tag(f"<tool_call>{t.name}",
                        _xml_params(t, lambda p, raw: f"<arg_key>{p}</arg_key><arg_value>", "</arg_value>"),
                        "</tool_call>"),
    trigger="<tool_call>")

# Keywords a Gemma string cannot be checked for (its value runs to the `<|"|>`
# delimiter): left out, as the XML families leave them unchecked.
_UNCHECKED_STRING_KEYWORDS = ("pattern", "format", "minLength", "maxLength")
_SUBSCHEMA_MAPS = ("properties", "$defs", "definitions", "patternProperties")
_SUBSCHEMA_LISTS = ("anyOf", "oneOf", "allOf", "prefixItems")
_SUBSCHEMAS = ("items", "additionalProperties", "not", "contains")


def _without_string_checks(schema: Any) -> Any:
    """``schema`` with the string keywords Gemma's style cannot check removed, in every
    subschema (keys of ``properties`` are names, not keywords: kept)."""
    if not isinstance(schema, Mapping):
        return schema
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key in _UNCHECKED_STRING_KEYWORDS:
            continue
        if key in _SUBSCHEMA_MAPS and isinstance(value, Mapping):
            out[key] = {k: _without_string_checks(v) for k, v in value.items()}
        elif key in _SUBSCHEMA_LISTS and isinstance(value, list):
            out[key] = [_without_string_checks(v) for v in value]
        elif key in _SUBSCHEMAS:
            out[key] = _without_string_checks(value)
        else:
            out[key] = value
    return out


_GEMMA4 = _Family(
    call=lambda t: _tag(f"<|tool_call>call:{t.name}",
                        {"type": "json_schema", "json_schema": _without_string_checks(t.parameters), "style": "gemma"},
                        "<tool_call|>"),
    trigger="<|tool_call>")

_MISTRAL = _Family(
    call=lambda t: _tag(f'{{"name": {_json_name(t.name)}, "arguments": ', _schema(t.parameters), "}"),
    trigger="[TOOL_CALLS]",
    section=lambda calls: _tag("[TOOL_CALLS]", _seq(_regex(" ?"), _const("["), calls, _const("]")), ""),
    separator=", ")

_DEEPSEEK_V3 = _Family(
    call=lambda t: _tag(f"<｜tool▁call▁begin｜>function<｜tool▁sep｜>{t.name}\n```json\n", _schema(t.parameters),
                        "\n```<｜tool▁call▁end｜>"),
    trigger="<｜tool▁calls▁begin｜>",
    section=lambda calls: _tag("<｜tool▁calls▁begin｜>", calls, "<｜tool▁calls▁end｜>"),
    separator="\n")

_DEEPSEEK_V31 = _Family(
    call=lambda t: _tag(f"<｜tool▁call▁begin｜>{t.name}<｜tool▁sep｜>", _schema(t.parameters), "<｜tool▁call▁end｜>"),
    trigger="<｜tool▁calls▁begin｜>",
    section=lambda calls: _tag("<｜tool▁calls▁begin｜>", calls, "<｜tool▁calls▁end｜>"))

def _dsml_params(tool: _Tool) -> _Format:
    """DeepSeek V3.2's parameters: the encoder joins them with "\n" between the invoke's
    "\n"s, so no parameter at all is "\n\n" (a bare "\n" is accepted too)."""
    params = _xml_params(tool, lambda p, raw: f'<｜DSML｜parameter name="{p}" string="{"true" if raw else "false"}">',
                         "</｜DSML｜parameter>", after="\n")
    return params if _has_required(tool) else _or([_const("\n"), params])


_DEEPSEEK_V32 = _Family(
    call=lambda t: _tag(f'<｜DSML｜invoke name="{t.name}">\n', _dsml_params(t), "</｜DSML｜invoke>"),
    trigger="\n\n<｜DSML｜function_calls>",
    section=lambda calls: _tag("\n\n<｜DSML｜function_calls>\n", calls, "\n</｜DSML｜function_calls>"),
    separator="\n",
    marker="<｜DSML｜function_calls>")

_MINIMAX_M2 = _Family(
    call=lambda t: _tag(f'<invoke name="{t.name}">\n',
                        _xml_params(t, lambda p, raw: f'<parameter name="{p}">', "</parameter>", after="\n"),
                        "</invoke>\n"),
    trigger="\n<minimax:tool_call>",
    section=lambda calls: _tag("\n<minimax:tool_call>\n", calls, "</minimax:tool_call>"),
    marker="<minimax:tool_call>")

_KIMI_K2 = _Family(
    call=lambda t: _tag(f"<|tool_call_begin|>functions.{t.name}:",
                        _seq(_regex("[0-9]+"), _const("<|tool_call_argument_begin|>"), _schema(t.parameters)),
                        "<|tool_call_end|>"),
    trigger="<|tool_calls_section_begin|>",
    section=lambda calls: _tag("<|tool_calls_section_begin|>", calls, "<|tool_calls_section_end|>"))


def _reasoning(begin: str, end: str) -> _Format:
    """Free text between `begin` (optional: the prompt may end with it) and `end`, then
    any whitespace: the reasoning block of a family with its own delimiters."""
    return _seq({"type": "optional", "content": _const(begin)}, _tag("", _text(), end), _regex(r"[ \t\r\n]*"))


# MiniMax-M3: every tag behind the namespace marker; arguments in the minimax_m3_xml style.
_M3 = "]<]minimax[>["
_MINIMAX_M3 = _Family(
    call=lambda t: _tag(f'{_M3}<invoke name="{t.name}">',
                        {"type": "json_schema", "json_schema": _without_string_checks(t.parameters),
                         "style": "minimax_m3_xml"},
                        f"{_M3}</invoke>\n"),
    trigger=f"{_M3}<tool_call>",
    section=lambda calls: _tag(f"{_M3}<tool_call>\n", calls, f"{_M3}</tool_call>"),
    think=_reasoning("<mm:think>", "</mm:think>"),
    excludes=("<mm:think>", "</mm:think>", f"{_M3}</tool_call>", f"{_M3}<invoke", f"{_M3}</invoke>"))


_COHERE = _Family(
    call=lambda t: _tag('<cofl:tool_call id="',
                        _seq(_regex("[0-9]+"), _const(f'" name="{t.name}">'),
                             {"type": "json_schema", "json_schema": t.parameters, "style": "cohere_xml"}),
                        "</cofl:tool_call>"),
    trigger="<cofl:tool_calls>",
    section=lambda calls: _tag("<cofl:tool_calls>", calls, "</cofl:tool_calls>"),
    think=_reasoning("<|START_THINKING|>", "<|END_THINKING|>"))

# Kimi-K3's blocks: `<|open|>NAME<|sep|>` ... `<|close|>NAME<|sep|>`, back to back.
_K3_MARKERS = ("<|open|>", "<|close|>")


def _kimi_k3_spec(tools: Sequence[Mapping[str, Any]], tool_choice: ToolChoice, parallel_tool_calls: bool,
                  reasoning: bool) -> dict[str, Any]:
    mode, chosen = _choose(_parse_tools(tools), tool_choice)

    def call(t: _Tool) -> _Format:
        arguments = {"type": "json_schema", "json_schema": t.parameters, "style": "kimi_k3_xml",
                     "excludes": [*_K3_MARKERS, "<|sep|>"]}
        return _tag(f'<|open|>call tool="{t.name}" index="', _seq(_regex("[0-9]+"), _const('"<|sep|>'), arguments),
                    "<|close|>call<|sep|>")

    # The prompt ends with the first block's opening marker: the output starts in its body.
    elements = []
    if reasoning:
        elements += [{"type": "optional", "content": _const("<|open|>think<|sep|>")},
                     _tag("", _text(*_K3_MARKERS), "<|close|>think<|sep|>"), _const("<|open|>response<|sep|>")]
    elements.append(_tag("", _text(*_K3_MARKERS), "<|close|>response<|sep|>"))
    if mode != "none" and chosen:
        block = _tag("<|open|>tools<|sep|>",
                     {"type": "tags_with_separator", "tags": [call(t) for t in chosen], "separator": "",
                      "at_least_one": True, "stop_after_first": not parallel_tool_calls},
                     "<|close|>tools<|sep|>")
        elements.append(block if mode == "required" else {"type": "optional", "content": block})
    elements.append(_const("<|close|>message<|sep|>"))
    return {"type": "structural_tag", "format": _seq(*elements)}


def _family_spec(family: _Family, tools: Sequence[Mapping[str, Any]], tool_choice: ToolChoice,
                 parallel_tool_calls: bool, reasoning: bool) -> dict[str, Any]:
    mode, chosen = _choose(_parse_tools(tools), tool_choice)
    return _wrap(_answer(family, mode, chosen, parallel_tool_calls), reasoning, family.think)


def _llama3_json_spec(tools: Sequence[Mapping[str, Any]], tool_choice: ToolChoice, parallel_tool_calls: bool,
                      reasoning: bool) -> dict[str, Any]:
    mode, chosen = _choose(_parse_tools(tools), tool_choice)
    # Free text may not start with "{" (that is a call) nor with whitespace (so that
    # whitespace before a "{" cannot hide a call).
    text = _or([_const(""), _seq(_regex("[^{ \t\r\n]"), _text())])
    calls = {"type": "tags_with_separator", "separator": "; ", "at_least_one": True,
             "stop_after_first": not parallel_tool_calls,
             "tags": [_tag(f'{{"name": {_json_name(t.name)}, "parameters": ', _schema(t.parameters), "}")
                      for t in chosen]} if chosen else text
    answer = {"none": text, "required": calls, "auto": _or([calls, text])}[mode]
    return _wrap(answer, reasoning)


def _harmony_spec(tools: Sequence[Mapping[str, Any]], tool_choice: ToolChoice, parallel_tool_calls: bool,
                  reasoning: bool) -> dict[str, Any]:
    del parallel_tool_calls  # a Harmony turn ends at its first <|call|>
    mode, chosen = _choose(_parse_tools(tools), tool_choice)
    final = _tag("<|channel|>final<|message|>", _text(), "<|return|>")
    # The recipient goes in the channel (OpenAI's docs) or in the header, before the
    # channel (gpt-oss's chat template); the content type `<|constrain|>json` or `json`.
    content_type = {"type": "optional", "content": _or([_const(" <|constrain|>json"), _const("<|constrain|>json"),
                                                        _const(" json")])}
    calls = []
    for t in chosen:
        arguments = _seq(content_type, _const("<|message|>"), _schema(t.parameters))
        calls.append(_tag(f"<|channel|>commentary to=functions.{t.name}", arguments, "<|call|>"))
        calls.append(_tag(f" to=functions.{t.name}<|channel|>commentary", arguments, "<|call|>"))
    answer = {"none": final, "required": _or(calls) if calls else final, "auto": _or(calls + [final])}[mode]
    # Messages before it, each ending the message and starting the next: commentary
    # preambles (a call's announcement) and, with reasoning, analysis (none, one or more).
    earlier = [_tag("<|channel|>commentary<|message|>", _text(), "<|end|>")]
    if reasoning:
        earlier.append(_tag("<|channel|>analysis<|message|>", _text(), "<|end|>"))
    prefix = {"type": "star", "content": _seq(_or(earlier) if len(earlier) > 1 else earlier[0],
                                              _const("<|start|>assistant"))}
    return {"type": "structural_tag", "format": _seq(prefix, answer)}


_SPECS: dict[str, Callable[[Sequence[Mapping[str, Any]], ToolChoice, bool, bool], dict[str, Any]]] = {
    "llama3_json": _llama3_json_spec,
    "llama3_function_tag": lambda *a: _family_spec(_LLAMA_FUNCTION_TAG, *a),
    "hermes": lambda *a: _family_spec(_HERMES, *a),
    "qwen3_coder": lambda *a: _family_spec(_QWEN3_CODER, *a),
    "mistral": lambda *a: _family_spec(_MISTRAL, *a),
    "deepseek_v3": lambda *a: _family_spec(_DEEPSEEK_V3, *a),
    "deepseek_v31": lambda *a: _family_spec(_DEEPSEEK_V31, *a),
    "deepseek_v32": lambda *a: _family_spec(_DEEPSEEK_V32, *a),
    "kimi_k2": lambda *a: _family_spec(_KIMI_K2, *a),
    "glm45": lambda *a: _family_spec(_GLM45, *a),
    "glm47": lambda *a: _family_spec(_GLM47, *a),
    "gemma4": lambda *a: _family_spec(_GEMMA4, *a),
    "minimax_m2": lambda *a: _family_spec(_MINIMAX_M2, *a),
    "minimax_m3": lambda *a: _family_spec(_MINIMAX_M3, *a),
    "cohere": lambda *a: _family_spec(_COHERE, *a),
    "kimi_k3": _kimi_k3_spec,
    "harmony": _harmony_spec,
}

FAMILIES: tuple[str, ...] = tuple(_SPECS)
"""The names :func:`structural_tag` takes, one per preset function of this module."""


def structural_tag(family: str, tools: Sequence[Mapping[str, Any]], tool_choice: ToolChoice = "auto", *,
                   parallel_tool_calls: bool = True, reasoning: bool = False,
                   tokenizer_info: TokenizerInfo | None = None) -> dict[str, Any]:
    """The structural tag (``{"type": "structural_tag", "format": ...}``) of a preset.

    The same JSON that the preset compiles; it can also be sent as a ``response_format``.

    Args:
        family: one of :data:`FAMILIES` (the preset function's name).
        tools, tool_choice, parallel_tool_calls, reasoning, tokenizer_info: as for the preset.

    Returns:
        The spec, a JSON-serializable dict (with ``tokenizer_info``, delimiters that are
        special tokens are ``{"type": "token", "token": ID}`` formats).

    Raises:
        ToolCallingError: an unknown family, bad tools or a bad ``tool_choice``.

    >>> structural_tag("hermes", [], "none")
    {'type': 'structural_tag', 'format': {'type': 'any_text', 'excludes': ['<tool_call>']}}
    """
    if family not in _SPECS:
        raise ToolCallingError(f"unknown tool-calling family {family!r}; known: {', '.join(FAMILIES)}")
    spec = _SPECS[family](tools, tool_choice, parallel_tool_calls, reasoning)
    return spec if tokenizer_info is None else with_special_tokens(spec, tokenizer_info)


# A server sees the same tool list again and again; building its grammar (every tool's
# JSON Schema and the automata) costs about 0.7 ms per tool, so the latest grammars are
# kept by their spec's text. Grammars are immutable: sharing one is safe.
_GRAMMAR_CACHE_SIZE = 64


@functools.lru_cache(maxsize=_GRAMMAR_CACHE_SIZE)
def _grammar_from_spec_text(text: str) -> Grammar:
    return Grammar.from_structural_tag(text)


def _grammar(family: str, tools: Sequence[Mapping[str, Any]], tool_choice: ToolChoice, parallel_tool_calls: bool,
             reasoning: bool, tokenizer_info: TokenizerInfo | None) -> Grammar:
    spec = structural_tag(family, tools, tool_choice, parallel_tool_calls=parallel_tool_calls, reasoning=reasoning,
                          tokenizer_info=tokenizer_info)
    try:
        text = _dumps(spec)  # the text from_structural_tag would make
    except (TypeError, ValueError):  # not JSON: let the front end name the bad field
        return Grammar.from_structural_tag(spec)
    return _grammar_from_spec_text(text)


_ARGS = """
    Args:
        tools: OpenAI-style tool definitions.
        tool_choice: see the module docstring.
        parallel_tool_calls: whether more than one call may be made.
        reasoning: {reasoning}
        tokenizer_info: the model's tokenizer: delimiters that are its special tokens are
            then matched by token id (see the module docstring).

    Returns:
        The grammar of the whole output.

    Raises:
        ToolCallingError: bad tools, or a ``tool_choice`` naming a tool that is not offered.
        StructuralTagError: a tool's ``parameters`` the JSON Schema front end rejects.
"""
_THINK_DOC = ("put ``<think>`` free text ``</think>`` first, then any whitespace "
              "(Qwen3, DeepSeek-R1, GLM-4.5, Kimi-K2-Thinking, MiniMax-M2).")


def llama3_json(tools: Sequence[Mapping[str, Any]], tool_choice: ToolChoice = "auto", *,
                parallel_tool_calls: bool = True, reasoning: bool = False,
                tokenizer_info: TokenizerInfo | None = None) -> Grammar:
    """Llama 3.1 / 3.2 / 3.3 JSON tool calls (Meta's JSON tool-calling prompt; vLLM's
    ``llama3_json`` parser).

    The output is either free text or only calls, each exactly
    ``{"name": "NAME", "parameters": ARGS}`` (that spacing; ARGS any JSON layout),
    several joined by ``"; "``. Free text is empty or starts with a character other
    than ``{`` and whitespace. The optional ``<|python_tag|>`` prefix is not produced.
    """
    return _grammar("llama3_json", tools, tool_choice, parallel_tool_calls, reasoning, tokenizer_info)


def llama3_function_tag(tools: Sequence[Mapping[str, Any]], tool_choice: ToolChoice = "auto", *,
                        parallel_tool_calls: bool = True, reasoning: bool = False,
                        tokenizer_info: TokenizerInfo | None = None) -> Grammar:
    """Llama 3.1 custom-function calls: ``<function=NAME>ARGS</function>`` in free text.

    Free text runs until the first ``<function=``, which must go on into a call of an
    offered tool; free text resumes after ``</function>`` (unless parallel calls are off,
    then the output ends there).
    """
    return _grammar("llama3_function_tag", tools, tool_choice, parallel_tool_calls, reasoning, tokenizer_info)


def hermes(tools: Sequence[Mapping[str, Any]], tool_choice: ToolChoice = "auto", *,
           parallel_tool_calls: bool = True, reasoning: bool = False,
           tokenizer_info: TokenizerInfo | None = None) -> Grammar:
    """Hermes 2/3, Qwen 2.5 and Qwen3 (non-coder) calls in free text, each exactly
    ``<tool_call>\\n{"name": "NAME", "arguments": ARGS}\\n</tool_call>``.

    Free text (between calls, too: the templates put ``\\n``) runs until the first
    ``<tool_call>``, which must go on into a call.
    """
    return _grammar("hermes", tools, tool_choice, parallel_tool_calls, reasoning, tokenizer_info)


def qwen3_coder(tools: Sequence[Mapping[str, Any]], tool_choice: ToolChoice = "auto", *,
                parallel_tool_calls: bool = True, reasoning: bool = False,
                tokenizer_info: TokenizerInfo | None = None) -> Grammar:
    """Qwen3-Coder XML-style calls in free text, each exactly::

        <tool_call>
        <function=NAME>
        <parameter=P>
        VALUE
        </parameter>
        ...
        </function>
        </tool_call>

    Parameters come in the schema's declared order, required ones always, optional
    ones possibly left out, no others. VALUE is the raw text of a ``string``-typed
    parameter (its ``enum``/``const`` enforced, other string keywords not; it may not
    contain ``\\n</parameter>\\n``) and JSON (``from_json_schema`` of the property's
    schema) for every other parameter.
    """
    return _grammar("qwen3_coder", tools, tool_choice, parallel_tool_calls, reasoning, tokenizer_info)


def mistral(tools: Sequence[Mapping[str, Any]], tool_choice: ToolChoice = "auto", *,
            parallel_tool_calls: bool = True, reasoning: bool = False,
            tokenizer_info: TokenizerInfo | None = None) -> Grammar:
    """Mistral 7B v0.3 / Nemo / Small (v3 tokenizer): free text, then possibly
    ``[TOOL_CALLS]`` and, after an optional space, a JSON list
    ``[{"name": "NAME", "arguments": ARGS}, ...]`` (calls joined by ``", "``), which ends
    the output.
    """
    return _grammar("mistral", tools, tool_choice, parallel_tool_calls, reasoning, tokenizer_info)


def deepseek_v3(tools: Sequence[Mapping[str, Any]], tool_choice: ToolChoice = "auto", *,
                parallel_tool_calls: bool = True, reasoning: bool = False,
                tokenizer_info: TokenizerInfo | None = None) -> Grammar:
    """DeepSeek V3 / V3-0324 / R1: free text, then possibly one section that ends the
    output: ``<｜tool▁calls▁begin｜>``, calls joined by ``\\n``, each
    ``<｜tool▁call▁begin｜>function<｜tool▁sep｜>NAME\\n```json\\nARGS\\n```<｜tool▁call▁end｜>``,
    then ``<｜tool▁calls▁end｜>``.
    """
    return _grammar("deepseek_v3", tools, tool_choice, parallel_tool_calls, reasoning, tokenizer_info)


def deepseek_v31(tools: Sequence[Mapping[str, Any]], tool_choice: ToolChoice = "auto", *,
                 parallel_tool_calls: bool = True, reasoning: bool = False,
                 tokenizer_info: TokenizerInfo | None = None) -> Grammar:
    """DeepSeek V3.1: free text, then possibly one section that ends the output:
    ``<｜tool▁calls▁begin｜>``, calls with nothing between them, each
    ``<｜tool▁call▁begin｜>NAME<｜tool▁sep｜>ARGS<｜tool▁call▁end｜>``, then
    ``<｜tool▁calls▁end｜>``.
    """
    return _grammar("deepseek_v31", tools, tool_choice, parallel_tool_calls, reasoning, tokenizer_info)


def deepseek_v32(tools: Sequence[Mapping[str, Any]], tool_choice: ToolChoice = "auto", *,
                 parallel_tool_calls: bool = True, reasoning: bool = False,
                 tokenizer_info: TokenizerInfo | None = None) -> Grammar:
    """DeepSeek V3.2 (DSML markup): free text, then possibly one block that ends the
    output::

        TEXT

        <｜DSML｜function_calls>
        <｜DSML｜invoke name="NAME">
        <｜DSML｜parameter name="P" string="true|false">VALUE</｜DSML｜parameter>
        ...
        </｜DSML｜invoke>
        <｜DSML｜invoke name="NAME2">
        ...
        </｜DSML｜invoke>
        </｜DSML｜function_calls>

    Conventions of DeepSeek's reference encoder (``encoding/encoding_dsv32.py`` in the
    DeepSeek-V3.2 model repository, adapted in SGLang as ``encoding_dsv32.py``; llama.cpp's
    ``DeepSeek-V3.2.jinja`` writes the same): the block starts with a blank line
    (``"\\n\\n<｜DSML｜function_calls>"``, also when there is no text before it; the
    encoder's parser requires it, so the marker without it is refused in free text),
    invokes and parameters one per line, a call without parameters is
    ``<｜DSML｜invoke name="NAME">\\n\\n</｜DSML｜invoke>`` (``>\\n</...`` is accepted too).
    ``string="true"`` with the raw text for a ``string``-typed parameter, ``string="false"``
    with JSON for every other one (the encoder writes any ``str`` value raw; the decoder
    reads both forms back to the same value). Parameters, their order and VALUE as in
    :func:`qwen3_coder` (a raw string may not contain ``</｜DSML｜parameter>``). With
    ``reasoning``: the model's own template opens ``<think>`` in the prompt; the preset
    expects ``<think>`` in the output like the other families.
    """
    return _grammar("deepseek_v32", tools, tool_choice, parallel_tool_calls, reasoning, tokenizer_info)


def kimi_k2(tools: Sequence[Mapping[str, Any]], tool_choice: ToolChoice = "auto", *,
            parallel_tool_calls: bool = True, reasoning: bool = False,
            tokenizer_info: TokenizerInfo | None = None) -> Grammar:
    """Kimi K2: free text, then possibly one section that ends the output:
    ``<|tool_calls_section_begin|>``, calls with nothing between them, each
    ``<|tool_call_begin|>functions.NAME:INDEX<|tool_call_argument_begin|>ARGS<|tool_call_end|>``
    (INDEX decimal digits, not checked to count up), then ``<|tool_calls_section_end|>``.
    """
    return _grammar("kimi_k2", tools, tool_choice, parallel_tool_calls, reasoning, tokenizer_info)


def glm45(tools: Sequence[Mapping[str, Any]], tool_choice: ToolChoice = "auto", *,
          parallel_tool_calls: bool = True, reasoning: bool = False,
          tokenizer_info: TokenizerInfo | None = None) -> Grammar:
    """GLM-4.5 / 4.6 calls in free text, each exactly
    ``<tool_call>NAME\\n`` then per parameter ``<arg_key>P</arg_key>\\n<arg_value>VALUE</arg_value>\\n``
    then ``</tool_call>``. Parameters and VALUE as in :func:`qwen3_coder` (a string's raw
    text may not contain ``</arg_value>\\n``).
    """
    return _grammar("glm45", tools, tool_choice, parallel_tool_calls, reasoning, tokenizer_info)


def glm47(tools: Sequence[Mapping[str, Any]], tool_choice: ToolChoice = "auto", *,
          parallel_tool_calls: bool = True, reasoning: bool = False,
          tokenizer_info: TokenizerInfo | None = None) -> Grammar:
    """GLM-4.7 / GLM-5 calls in free text, each exactly ``<tool_call>NAME`` then per
    parameter ``<arg_key>P</arg_key><arg_value>VALUE</arg_value>`` then ``</tool_call>``
    (their chat template: no newlines). Parameters and VALUE as in :func:`qwen3_coder` (a
    string's raw text may not contain ``</arg_value>``).
    """
    return _grammar("glm47", tools, tool_choice, parallel_tool_calls, reasoning, tokenizer_info)


def gemma4(tools: Sequence[Mapping[str, Any]], tool_choice: ToolChoice = "auto", *,
           parallel_tool_calls: bool = True, reasoning: bool = False,
           tokenizer_info: TokenizerInfo | None = None) -> Grammar:
    """Gemma 4 calls in free text, each exactly ``<|tool_call>call:NAME{ARGS}<tool_call|>``,
    ARGS as its chat template writes them (the structural tags' ``gemma`` style): bare keys
    in case-insensitively sorted order, strings between ``<|"|>`` delimiters, other values
    as JSON text, no whitespace. A string's ``pattern``, ``format`` and lengths are not
    checked (its raw text may not contain ``<|"|>`` or a call marker); keys must be
    identifiers.
    """
    return _grammar("gemma4", tools, tool_choice, parallel_tool_calls, reasoning, tokenizer_info)


def minimax_m2(tools: Sequence[Mapping[str, Any]], tool_choice: ToolChoice = "auto", *,
               parallel_tool_calls: bool = True, reasoning: bool = False,
               tokenizer_info: TokenizerInfo | None = None) -> Grammar:
    """MiniMax-M2 / M2.1 / M2.5 XML-style calls: free text, then possibly one block that
    ends the output::

        TEXT
        <minimax:tool_call>
        <invoke name="NAME">
        <parameter name="P">VALUE</parameter>
        ...
        </invoke>
        <invoke name="NAME2">
        ...
        </invoke>
        </minimax:tool_call>

    Conventions of the model's chat template (MiniMax-M2's ``chat_template.jinja``, as
    in llama.cpp's ``models/templates/unsloth-MiniMax-M2.jinja``; MiniMax's
    ``docs/tool_calling_guide.md`` shows the same output and reads a value by the
    parameter's declared type, as vLLM's ``minimax_m2`` parser does): the block
    starts on a new line (``"\\n<minimax:tool_call>\\n"``, also with no text before it;
    the marker without that newline is refused in free text), one ``<invoke>`` per call,
    one ``<parameter>`` per line, no separator between invokes. Parameters, their order
    and VALUE as in :func:`qwen3_coder` (a raw string may not contain ``</parameter>``,
    where the readers end a value). MiniMax-M1's JSON-lines ``<tool_calls>`` format is
    not this preset.
    """
    return _grammar("minimax_m2", tools, tool_choice, parallel_tool_calls, reasoning, tokenizer_info)


def minimax_m3(tools: Sequence[Mapping[str, Any]], tool_choice: ToolChoice = "auto", *,
               parallel_tool_calls: bool = True, reasoning: bool = False,
               tokenizer_info: TokenizerInfo | None = None) -> Grammar:
    """MiniMax-M3's namespaced XML calls (``NS`` = ``]<]minimax[>[``): free text, then
    possibly one block that ends the output::

        TEXTNS<tool_call>
        NS<invoke name="NAME">NS<P>VALUENS</P>...NS</invoke>
        NS</tool_call>

    Conventions of XGrammar's ``minimax_m3`` builtin structural tag: one ``<invoke>``
    per call, each followed by a newline; arguments in the ``minimax_m3_xml`` style of
    structural tags (docs/structural_tags.md): every value an element named after its
    property (an array's items ``item``), strings raw, other scalars JSON text. A
    string's ``pattern``, ``format`` and lengths are not checked (raw text runs to the
    marker), as in :func:`gemma4`. Free text holds neither ``<mm:think>`` /
    ``</mm:think>`` nor a stray ``NS</tool_call>``, ``NS<invoke`` or ``NS</invoke>``.
    """
    return _grammar("minimax_m3", tools, tool_choice, parallel_tool_calls, reasoning, tokenizer_info)


def cohere(tools: Sequence[Mapping[str, Any]], tool_choice: ToolChoice = "auto", *,
           parallel_tool_calls: bool = True, reasoning: bool = False,
           tokenizer_info: TokenizerInfo | None = None) -> Grammar:
    """Cohere Command's XML calls: free text, then possibly one block that ends the output
    (one line; whitespace may go between the elements)::

        TEXT<cofl:tool_calls><cofl:tool_call id="0" name="NAME">
        <cofl:value name="P" type="raw">VALUE</cofl:value>...</cofl:tool_call>...</cofl:tool_calls>

    Conventions of XGrammar's ``cohere`` builtin structural tag: one
    ``<cofl:tool_call>`` per call, each with a numeric ``id``, no separator between
    calls; arguments in the ``cohere_xml`` style of structural tags
    (docs/structural_tags.md): every value an element whose ``type`` says how it is
    written (``raw`` string text, ``json`` numbers / booleans / null, ``dict`` and
    ``list`` of elements), names as XML attribute values. With ``reasoning``:
    ``<|START_THINKING|>`` free text ``<|END_THINKING|>`` first (the opening tag may
    have ended the prompt), then any whitespace. A tool whose parameters the style
    cannot write (a string's pattern beside a length, ``not``, ...) raises
    :class:`xgr2.StructuralTagError`.
    """
    return _grammar("cohere", tools, tool_choice, parallel_tool_calls, reasoning, tokenizer_info)


def kimi_k3(tools: Sequence[Mapping[str, Any]], tool_choice: ToolChoice = "auto", *,
            parallel_tool_calls: bool = True, reasoning: bool = False,
            tokenizer_info: TokenizerInfo | None = None) -> Grammar:
    """Kimi-K3's message of blocks, generated after the prompt's opening marker (one line)::

        [THOUGHT<|close|>think<|sep|><|open|>response<|sep|>]TEXT<|close|>response<|sep|>
        <|open|>tools<|sep|><|open|>call tool="NAME" index="0"<|sep|>
        <|open|>argument key="P" type="string"<|sep|>VALUE<|close|>argument<|sep|>...
        <|close|>call<|sep|>...<|close|>tools<|sep|><|close|>message<|sep|>

    Conventions of XGrammar's ``kimi_k3`` builtin structural tag: the chat template's
    generation prompt ends with ``<|open|>think<|sep|>`` (thinking) or
    ``<|open|>response<|sep|>``, so the output starts inside that block; the response
    block comes first, then the tools block, then ``<|close|>message<|sep|>``. With
    ``"required"`` (or a named tool) the tools block must come, after the response
    block (which may be empty); ``"none"`` leaves it out. Arguments are in the
    ``kimi_k3_xml`` style of structural tags (docs/structural_tags.md): the ``type``
    attribute says how the value is written (``string`` raw text, ``number``,
    ``boolean``, ``null``, ``object``, ``array`` JSON); no string value or key holds
    ``<|open|>``, ``<|close|>`` or ``<|sep|>`` (``excludes``), nor does free text hold
    the first two. A tool whose parameters the style cannot write raises
    :class:`xgr2.StructuralTagError`.
    """
    return _grammar("kimi_k3", tools, tool_choice, parallel_tool_calls, reasoning, tokenizer_info)


def harmony(tools: Sequence[Mapping[str, Any]], tool_choice: ToolChoice = "auto", *,
            parallel_tool_calls: bool = True, reasoning: bool = False,
            tokenizer_info: TokenizerInfo | None = None) -> Grammar:
    """OpenAI Harmony (gpt-oss), the text generated after the prompt's ``<|start|>assistant``.

    With ``reasoning``: ``<|channel|>analysis<|message|>TEXT<|end|><|start|>assistant``
    first. Then either a call,
    ``<|channel|>commentary to=functions.NAME <|constrain|>json<|message|>ARGS<|call|>``,
    or the answer, ``<|channel|>final<|message|>TEXT<|return|>`` (``"none"``: only the
    answer; ``"required"``: only a call). A turn ends at its first ``<|call|>``, so
    ``parallel_tool_calls`` changes nothing. With ``tokenizer_info`` of gpt-oss, the
    delimiters are its special tokens and ``<|call|>`` / ``<|return|>``, its stop tokens,
    end the output (see the module docstring).
    """
    return _grammar("harmony", tools, tool_choice, parallel_tool_calls, reasoning, tokenizer_info)


for _f in (llama3_json, llama3_function_tag, hermes, qwen3_coder, mistral, deepseek_v3, deepseek_v31, deepseek_v32,
           kimi_k2, glm45, glm47, gemma4, minimax_m2):
    _f.__doc__ = (_f.__doc__ or "") + _ARGS.format(reasoning=_THINK_DOC)
harmony.__doc__ = (harmony.__doc__ or "") + _ARGS.format(
    reasoning="put the ``analysis`` channel's message first.")
minimax_m3.__doc__ = (minimax_m3.__doc__ or "") + _ARGS.format(
    reasoning="put ``<mm:think>`` free text ``</mm:think>`` first (the opening tag may have ended the prompt), "
    "then any whitespace.")
kimi_k3.__doc__ = (kimi_k3.__doc__ or "") + _ARGS.format(
    reasoning="start inside the thinking block (its opening marker optional) and open the response block after it.")
cohere.__doc__ = (cohere.__doc__ or "") + _ARGS.format(
    reasoning="put ``<|START_THINKING|>`` free text ``<|END_THINKING|>`` first, then any whitespace.")
del _f


def think_then(answer: Mapping[str, Any] | None = None, *, json_schema: Any = None,
               tokenizer_info: TokenizerInfo | None = None) -> Grammar:
    """``<think>`` reasoning ``</think>``, any whitespace, then the answer, without tools.

    The layout of reasoning models' output (Qwen3, DeepSeek-R1, GLM-4.5, Kimi-K2-Thinking,
    MiniMax-M2 write ``<think>\\n...\\n</think>\\n\\n``): the reasoning is free text
    without ``</think>``; the answer is ``answer``, a structural-tag format
    (docs/structural_tags.md), or with ``json_schema=`` a JSON document of that schema
    (as :meth:`xgr2.Grammar.from_json_schema` with its defaults), or else free text.
    ``tokenizer_info``: as for the presets (``<think>`` matched by id where it is one of
    the model's special tokens).

    >>> g = think_then(json_schema={"type": "object", "properties": {"ok": {"type": "boolean"}}})
    >>> import xgr2
    >>> tok = xgr2.TokenizerInfo([bytes([b]) for b in range(256)])
    >>> state = xgr2.compile(g, tok).initial_state()
    >>> state.try_advance_bytes(b'<think>Sure.</think>\\n{"ok": true}').can_terminate
    True
    """
    if answer is not None and json_schema is not None:
        raise ToolCallingError("give the answer as a format or as json_schema=, not both")
    if answer is not None and not isinstance(answer, Mapping):
        raise ToolCallingError(f"answer must be a structural-tag format (a dict), got {type(answer).__name__}")
    content = dict(answer) if answer is not None else _schema(json_schema) if json_schema is not None else _text()
    spec = _wrap(content, True)
    if tokenizer_info is not None:
        spec = with_special_tokens(spec, tokenizer_info)
    return Grammar.from_structural_tag(spec)

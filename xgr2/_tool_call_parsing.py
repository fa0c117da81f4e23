"""Reading the tool calls back out of a model's output, per tool-calling family.

The inverse of the presets in :mod:`xgr2.tool_calling`: each reader finds the calls by the
family's delimiters and decodes their arguments. Readers accept exactly the presets'
layouts and are lenient elsewhere (an unconstrained model's output): a call whose name
or arguments cannot be read is still returned, with :attr:`ToolCall.error` saying why,
so that a caller can count it as invalid instead of missing it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ._errors import ToolCallingError


@dataclass(frozen=True)
class ToolCall:
    """One call read from an output.

    Attributes:
        name: the tool's name as written (``""`` when it could not be read).
        arguments: the decoded arguments (a dict for a well-formed call; ``None`` when
            they could not be decoded).
        error: why the call could not be read completely (malformed JSON, a call cut off
            before its end delimiter, ...), or ``None``.
    """

    name: str
    arguments: Any
    error: str | None = None


_Reader = Callable[[str, Mapping[str, Any]], list[ToolCall]]  # (answer text, params by tool name)
_DECODER = json.JSONDecoder()


def _from_object(obj: Any, args_key: str) -> ToolCall:
    if not isinstance(obj, dict):
        return ToolCall("", None, "call is not a JSON object")
    name = obj.get("name")
    if not isinstance(name, str):
        return ToolCall("", obj.get(args_key), "call has no string \"name\"")
    if args_key not in obj:
        return ToolCall(name, None, f"call has no {args_key!r}")
    return ToolCall(name, obj[args_key])


_WS = re.compile(r"[ \t\r\n]*")


def _close(text: str, pos: int, end: str, space: bool) -> tuple[int, str | None]:
    """Where the call's ``end`` (after JSON whitespace, when ``space``) stops at ``pos``,
    or ``pos`` and why it does not."""
    rest = text[pos:].lstrip(" \t\r\n") if space else text[pos:]
    if rest.startswith(end):
        return len(text) - len(rest) + len(end), None
    if end.startswith(rest):
        return pos, f"call is cut off before {end!r}"
    return pos, f"unexpected text in the call: {rest[:40]!r}"


def _scan(text: str, begin: re.Pattern[str], end: str, make: Callable[[re.Match[str], Any], ToolCall],
          pos: int = 0, space: bool = False) -> list[ToolCall]:
    """Calls that each start where ``begin`` matches, go on with one JSON value (decoded
    with ``json``, so a delimiter inside a string value cannot end the call early) and
    end with ``end`` right after it (after whitespace, when ``space``); ``make`` builds
    the call."""
    out = []
    while (m := begin.search(text, pos)) is not None:
        pos = len(text) - len(text[m.end():].lstrip(" \t\r\n"))
        try:
            value, pos = _DECODER.raw_decode(text, pos)
        except ValueError as e:
            out.append(ToolCall(m[1] if begin.groups else "", None, f"arguments are not JSON: {e}"))
            continue
        call = make(m, value)
        pos, error = _close(text, pos, end, space)
        out.append(ToolCall(call.name, call.arguments, call.error or error))
    return out


def _named(m: re.Match[str], value: Any) -> ToolCall:
    return ToolCall(m[1], value)


# ---------------------------------------------------------------------------------------
# JSON-argument families


def _rx(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern, re.S)


def _hermes(text: str, params: Mapping[str, Any]) -> list[ToolCall]:
    return _scan(text, _rx(r"<tool_call>"), "</tool_call>", lambda m, v: _from_object(v, "arguments"), space=True)


def _llama3_function_tag(text: str, params: Mapping[str, Any]) -> list[ToolCall]:
    return _scan(text, _rx(r"<function=([^>]*)>"), "</function>", _named)


def _json_sequence(text: str, separator: str, args_key: str) -> list[ToolCall]:
    """JSON call objects joined by ``separator`` (Llama JSON)."""
    out: list[ToolCall] = []
    pos = 0
    while True:
        try:
            obj, pos = _DECODER.raw_decode(text, pos)
        except ValueError as e:
            return out + [ToolCall("", None, f"call is not JSON: {e}")]
        out.append(_from_object(obj, args_key))
        if not text.startswith(separator, pos):
            rest = text[pos:]
            if rest:
                out.append(ToolCall("", None, f"text after the calls: {rest[:40]!r}"))
            return out
        pos += len(separator)


def _llama3_json(text: str, params: Mapping[str, Any]) -> list[ToolCall]:
    if not text.startswith("{"):
        return []  # free text (the format's calls are the whole output)
    return _json_sequence(text, "; ", "parameters")


def _mistral(text: str, params: Mapping[str, Any]) -> list[ToolCall]:
    start = text.find("[TOOL_CALLS]")
    if start < 0:
        return []
    body = text[start + len("[TOOL_CALLS]"):].lstrip(" ")
    if not body.startswith("["):
        return [ToolCall("", None, "[TOOL_CALLS] is not followed by a JSON list")]
    # Item by item, so that a list cut off keeps its complete calls.
    out: list[ToolCall] = []
    pos = 1
    while True:
        pos = len(body) - len(body[pos:].lstrip(" \t\r\n"))
        try:
            obj, pos = _DECODER.raw_decode(body, pos)
        except ValueError as e:
            return out + [ToolCall("", None, f"call is not JSON: {e}")]
        out.append(_from_object(obj, "arguments"))
        rest = body[pos:].lstrip(" \t\r\n")
        if rest.startswith(","):
            pos = len(body) - len(rest) + 1
            continue
        if not rest.startswith("]") or rest[1:]:
            why = "the list of calls is cut off" if not rest else f"unexpected text in the calls: {rest[:40]!r}"
            out[-1] = ToolCall(out[-1].name, out[-1].arguments, out[-1].error or why)
        return out


def _section(begin: str, call_begin: str, call_end: str, space: bool = False) -> _Reader:
    """Calls in one section that starts with ``begin`` (free text before it may hold call
    delimiters as text); each call ``call_begin`` (with the name as group 1) ARGS ``call_end``."""
    call_rx = _rx(call_begin)

    def reader(text: str, params: Mapping[str, Any]) -> list[ToolCall]:
        section = text.find(begin)
        return [] if section < 0 else _scan(text, call_rx, call_end, _named, section + len(begin), space)

    return reader


# The recipient in the channel or in the header before it; the content type optional.
_HARMONY_CALL = _rx(r"(?:<\|channel\|>commentary to=functions\.([^\s<]*)|"
                    r" ?to=functions\.([^\s<]*)<\|channel\|>commentary)"
                    r"(?: ?<\|constrain\|>json| json)?<\|message\|>")


def _harmony(text: str, params: Mapping[str, Any]) -> list[ToolCall]:
    # A turn ends with its last message: a call, or the final answer (whose text may
    # mention anything); preambles and analysis come before it.
    last = text.rpartition("<|start|>assistant")[2] if "<|end|><|start|>assistant" in text else \
        text.removeprefix("<|start|>assistant")
    if _HARMONY_CALL.match(last) is None:
        return []
    return _scan(last, _HARMONY_CALL, "<|call|>", lambda m, value: ToolCall(m[1] or m[2], value))[:1]


# ---------------------------------------------------------------------------------------
# XML-parameter families: a string parameter's value is its raw text


def _xml_value(raw: str, schema: Any, string: str | None = None) -> Any:
    """A parameter's value: raw text when the format marks it so (DeepSeek V3.2's
    ``string="true"``) or, unmarked, when the schema declares a string; else JSON."""
    from .tool_calling import _is_raw  # the presets' own rule for raw-text parameters

    if string == "true" or (string is None and _is_raw(schema)):
        return raw
    try:
        return json.loads(raw)
    except ValueError:
        return raw  # unknown parameter or an invalid value: keep the text for validation to judge


def _xml(begin: re.Pattern[str], param: re.Pattern[str], end: str, section: str | None = None) -> _Reader:
    """Calls ``begin`` (name as group 1), then parameters ``param`` (groups ``key`` and
    ``value``, the raw text, and optionally ``string``, ``"true"`` for raw text), then
    ``end``; with ``section``, only after its first occurrence (free text before it may
    hold call delimiters as text). A value's delimiter cannot occur inside it: raw strings
    may not hold it (the presets refuse that) and JSON values hold no raw newline."""

    def reader(text: str, params: Mapping[str, Any]) -> list[ToolCall]:
        out, pos = [], 0
        if section is not None:
            start = text.find(section)
            if start < 0:
                return []
            pos = start + len(section)
        while (m := begin.search(text, pos)) is not None:
            schema = params.get(m[1])
            props = schema.get("properties", {}) if isinstance(schema, Mapping) else {}
            args, pos = {}, m.end()
            while (p := param.match(text, pos)) is not None:
                args[p["key"]] = _xml_value(p["value"], props.get(p["key"]), p.groupdict().get("string"))
                pos = p.end()
            pos, error = _close(text, pos, end, False)
            out.append(ToolCall(m[1], args, error))
        return out

    return reader


# Gemma 4: `<|tool_call>call:NAME{ARGS}<tool_call|>`, ARGS in its own notation.
_GEMMA_CALL = _rx(r"<\|tool_call>call:([^{<]*)")
_GEMMA_QUOTE = '<|"|>'
_GEMMA_SCALAR = _rx(r"[^,}\]]*")


def _gemma_value(text: str, pos: int) -> tuple[Any, int]:
    """The value at ``text[pos:]`` in Gemma's notation and the position after it; raises
    ValueError where the text is not one."""
    if text.startswith(_GEMMA_QUOTE, pos):
        end = text.find(_GEMMA_QUOTE, pos + len(_GEMMA_QUOTE))
        if end < 0:
            raise ValueError("an unterminated string")
        return text[pos + len(_GEMMA_QUOTE):end], end + len(_GEMMA_QUOTE)
    if text.startswith("{", pos) or text.startswith("[", pos):
        close = "}" if text[pos] == "{" else "]"
        out: Any = {} if close == "}" else []
        pos += 1
        while not text.startswith(close, pos):
            if close == "}":
                colon = text.find(":", pos)
                if colon < 0:
                    raise ValueError("a key without a value")
                key = text[pos:colon]
                out[key], pos = _gemma_value(text, colon + 1)
            else:
                value, pos = _gemma_value(text, pos)
                out.append(value)
            if text.startswith(",", pos):
                pos += 1
            elif not text.startswith(close, pos):
                raise ValueError(f"expected ',' or {close!r}")
        return out, pos + 1
    m = _GEMMA_SCALAR.match(text, pos)
    if m is None:  # the pattern matches the empty string: never
        raise ValueError("no value")
    return json.loads(m[0]), m.end()


def _gemma4(text: str, params: Mapping[str, Any]) -> list[ToolCall]:
    out, pos = [], 0
    while (m := _GEMMA_CALL.search(text, pos)) is not None:
        try:
            args, end = _gemma_value(text, m.end())
            if not isinstance(args, dict) or not text.startswith("<tool_call|>", end):
                raise ValueError("the call does not end with <tool_call|>")
            out.append(ToolCall(m[1], args))
            pos = end + len("<tool_call|>")
        except (ValueError, IndexError) as e:
            out.append(ToolCall(m[1], None, f"malformed call: {e}"))
            pos = m.end()
    return out


# Cohere: `<cofl:tool_calls>` then `<cofl:tool_call id="N" name="NAME">ELEMENTS</cofl:tool_call>`,
# each value a `<cofl:value [name="KEY"] type="raw|json|dict|list">` element.
_COHERE_CALL = _rx(r'<cofl:tool_call id="[0-9]*" name="([^"]*)">')
_COHERE_VALUE = _rx(r'[ \t\r\n]*<cofl:value(?: name="(?P<name>[^"]*)")? type="(?P<type>raw|json|dict|list)">')
_COHERE_CLOSE = "</cofl:value>"
_ENTITIES = (("&lt;", "<"), ("&gt;", ">"), ("&quot;", '"'), ("&amp;", "&"))  # &amp; last


def _xml_unescape(text: str) -> str:
    """An XML attribute value as the XML styles write names (four entities)."""
    for entity, char in _ENTITIES:
        text = text.replace(entity, char)
    return text


def _cohere_elements(text: str, pos: int, named: bool) -> tuple[Any, int]:
    """The elements at ``text[pos:]``, as a dict (``named``) or a list, and the position
    after them (before whatever closes them); raises ValueError where one is malformed."""
    out: Any = {} if named else []
    while (m := _COHERE_VALUE.match(text, pos)) is not None:
        kind, pos = m["type"], m.end()
        if kind in ("dict", "list"):
            value, pos = _cohere_elements(text, pos, kind == "dict")
            while pos < len(text) and text[pos] in " \t\r\n":
                pos += 1
            if not text.startswith(_COHERE_CLOSE, pos):
                raise ValueError(f"a {kind} element without its end")
        else:
            end = text.find(_COHERE_CLOSE, pos)
            if end < 0:
                raise ValueError("an element without its end")
            value = text[pos:end] if kind == "raw" else json.loads(text[pos:end])
            pos = end
        pos += len(_COHERE_CLOSE)
        if named:
            name = m["name"]
            if name is None:
                raise ValueError("an argument without a name")
            out[_xml_unescape(name)] = value
        else:
            out.append(value)
    return out, pos


def _cohere(text: str, params: Mapping[str, Any]) -> list[ToolCall]:
    start = text.find("<cofl:tool_calls>")
    if start < 0:
        return []
    out, pos = [], start
    while (m := _COHERE_CALL.search(text, pos)) is not None:
        try:
            args, pos = _cohere_elements(text, m.end(), True)
            pos, error = _close(text, pos, "</cofl:tool_call>", True)
            out.append(ToolCall(m[1], args, error))
        except ValueError as e:
            out.append(ToolCall(m[1], None, f"malformed call: {e}"))
            pos = m.end()
    return out


# MiniMax-M3: `NS<tool_call>\n` then `NS<invoke name="NAME">ELEMENTS NS</invoke>\n`, each value an
# element `NS<KEY>BODY NS</KEY>` (NS = `]<]minimax[>[`), an array's items named `item`.
_M3 = "]<]minimax[>["
_M3_INVOKE = _rx(re.escape(_M3) + r'<invoke name="([^"]*)">')
_M3_OPEN = _rx(r"[ \t\r\n]*" + re.escape(_M3) + r"<([^/>][^>]*)>")
_M3_CLOSE = _rx(r"[ \t\r\n]*" + re.escape(_M3) + r"</[^>]*>")


def _m3_schema_type(schema: Any) -> str | None:
    t = schema.get("type") if isinstance(schema, Mapping) else None
    return t if isinstance(t, str) else None


def _m3_value(text: str, pos: int, schema: Any) -> tuple[Any, int]:
    """The body at ``text[pos:]`` (up to its closing tag, not taken) and where it ends: a
    schema's object or array (or, without one, child elements: all ``item`` a list) as
    elements, a string raw, anything else JSON."""
    kind = _m3_schema_type(schema)
    if _M3_OPEN.match(text, pos) and kind != "string":
        children, at = [], pos
        while (m := _M3_OPEN.match(text, at)) is not None:
            name = m[1]
            sub = (schema.get("items") if name == "item" and kind == "array" else
                   schema.get("properties", {}).get(name)) if isinstance(schema, Mapping) else None
            value, at = _m3_value(text, m.end(), sub)
            close = _M3_CLOSE.match(text, at)
            if close is None:
                raise ValueError(f"the element {name!r} has no end")
            children.append((name, value))
            at = close.end()
        as_list = kind == "array" or (kind is None and children and all(n == "item" for n, _ in children))
        return ([v for _, v in children] if as_list else dict(children)), at
    end = text.find(_M3, pos)
    if end < 0:
        raise ValueError("a value without its end")
    body = text[pos:end]
    if kind == "object" and not body.strip():
        return {}, end
    if kind == "array" and not body.strip():
        return [], end
    return _xml_value(body, schema, "true" if kind == "string" else None), end


def _minimax_m3(text: str, params: Mapping[str, Any]) -> list[ToolCall]:
    start = text.find(_M3 + "<tool_call>")
    if start < 0:
        return []
    out, pos = [], start
    while (m := _M3_INVOKE.search(text, pos)) is not None:
        schema = params.get(m[1])
        try:
            args, pos = _m3_value(text, m.end(), schema if isinstance(schema, Mapping) else {"type": "object"})
            if not isinstance(args, dict):
                raise ValueError("the arguments are not elements")
            pos, error = _close(text, pos, _M3 + "</invoke>\n", True)
            out.append(ToolCall(m[1], args, error))
        except ValueError as e:
            out.append(ToolCall(m[1], None, f"malformed call: {e}"))
            pos = m.end()
    return out


# Kimi-K3: `<|open|>tools<|sep|>` then `<|open|>call tool="NAME" index="N"<|sep|>ARGUMENTS<|close|>call<|sep|>`,
# each argument `<|open|>argument key="KEY" type="TYPE"<|sep|>VALUE<|close|>argument<|sep|>` (`string`: raw text).
_K3_CALL = _rx(r'<\|open\|>call tool="([^"]*)" index="[0-9]*"<\|sep\|>')
_K3_ARGUMENT = _rx(r'[ \t\r\n]*<\|open\|>argument key="(?P<key>[^"]*)" type="(?P<type>[a-z]*)"<\|sep\|>'
                   r"(?P<value>.*?)<\|close\|>argument<\|sep\|>")


def _kimi_k3(text: str, params: Mapping[str, Any]) -> list[ToolCall]:
    start = text.find("<|open|>tools<|sep|>")
    if start < 0:
        return []
    out, pos = [], start
    while (m := _K3_CALL.search(text, pos)) is not None:
        args, pos = {}, m.end()
        while (a := _K3_ARGUMENT.match(text, pos)) is not None:
            args[_xml_unescape(a["key"])] = _xml_value(a["value"], None, "true" if a["type"] == "string" else "false")
            pos = a.end()
        pos, error = _close(text, pos, "<|close|>call<|sep|>", True)
        out.append(ToolCall(m[1], args, error))
    return out


_READERS: dict[str, _Reader] = {
    "llama3_json": _llama3_json,
    "llama3_function_tag": _llama3_function_tag,
    "hermes": _hermes,
    "qwen3_coder": _xml(_rx(r"<tool_call>\n<function=([^>\n]*)>\n"),
                        _rx(r"<parameter=(?P<key>[^>\n]*)>\n(?P<value>.*?)\n</parameter>\n"),
                        "</function>\n</tool_call>"),
    "mistral": _mistral,
    "deepseek_v3": _section("<｜tool▁calls▁begin｜>",
                            r"<｜tool▁call▁begin｜>function<｜tool▁sep｜>([^\n]*)\n```json\n",
                            "```<｜tool▁call▁end｜>", space=True),
    "deepseek_v31": _section("<｜tool▁calls▁begin｜>", r"<｜tool▁call▁begin｜>(.*?)<｜tool▁sep｜>",
                             "<｜tool▁call▁end｜>"),
    # A call without parameters is ">\n\n</｜DSML｜invoke>" (the encoder's empty join).
    "deepseek_v32": _xml(_rx(r'<｜DSML｜invoke name="([^"\n]*)">\n\n?'),
                         _rx(r'<｜DSML｜parameter name="(?P<key>[^"\n]*)" string="(?P<string>true|false)">'
                             r"(?P<value>.*?)</｜DSML｜parameter>\n"),
                         "</｜DSML｜invoke>", section="<｜DSML｜function_calls>"),
    "kimi_k2": _section("<|tool_calls_section_begin|>",
                        r"<\|tool_call_begin\|>functions\.(.*?):[0-9]+<\|tool_call_argument_begin\|>",
                        "<|tool_call_end|>"),
    "glm45": _xml(_rx(r"<tool_call>([^\n]*)\n"),
                  _rx(r"<arg_key>(?P<key>.*?)</arg_key>\n<arg_value>(?P<value>.*?)</arg_value>\n"), "</tool_call>"),
    "glm47": _xml(_rx(r"<tool_call>([^\n<]*)"),
                  _rx(r"<arg_key>(?P<key>.*?)</arg_key><arg_value>(?P<value>.*?)</arg_value>"), "</tool_call>"),
    "minimax_m2": _xml(_rx(r'<invoke name="([^"\n]*)">\n'),
                       _rx(r'<parameter name="(?P<key>[^"\n]*)">(?P<value>.*?)</parameter>\n'), "</invoke>\n",
                       section="<minimax:tool_call>"),
    "harmony": _harmony,
    "gemma4": _gemma4,
    "cohere": _cohere,
    "kimi_k3": _kimi_k3,
    "minimax_m3": _minimax_m3,
}


def _answer(family: str, text: str, reasoning: bool) -> str:
    """The text after the reasoning block that the presets put first with ``reasoning``."""
    if not reasoning:
        return text
    if family == "harmony":  # analysis messages are skipped where the calls are read
        return text
    begin, end = {"cohere": ("<|START_THINKING|>", "<|END_THINKING|>"),
                  "kimi_k3": ("<|open|>think<|sep|>", "<|close|>think<|sep|>"),
                  "minimax_m3": ("<mm:think>", "</mm:think>")}.get(family, ("<think>", "</think>"))
    stripped = text.lstrip()
    head, found, rest = stripped.partition(end)
    if not found:  # cut off inside the reasoning, or none written
        return "" if stripped.startswith(begin) else text
    return rest.lstrip(" \t\r\n")


def parse_calls(family: str, text: str, tools: Sequence[Mapping[str, Any]] = (), *,
                reasoning: bool = False) -> list[ToolCall]:
    """The tool calls in a model's output, read in the layout of a preset.

    Reads every call the family's delimiters mark in ``text``, in order, whether or not it
    names an offered tool or its arguments validate: checking them is the caller's job
    (``jsonschema`` against the tool's ``parameters``). A call that cannot be read fully
    is returned with :attr:`ToolCall.error` set. Text that the preset's grammar accepts
    always reads without errors, one :class:`ToolCall` per call.

    Args:
        family: one of :data:`xgr2.tool_calling.FAMILIES`.
        text: the generated text (stop token excluded).
        tools: the offered tools; the XML-style families (``qwen3_coder``, ``glm45``, ``glm47``,
            ``minimax_m2``) read a parameter declared ``string`` as raw text and any other
            as JSON (without tools: JSON where it parses, else raw text); ``deepseek_v32``
            follows each parameter's ``string`` attribute instead.
        reasoning: as for the preset: skip the leading ``<think>`` block (Cohere, Kimi-K3,
            MiniMax-M3: their thinking block; Harmony: the analysis message), whose text may mention
            calls that are not made.

    Returns:
        The calls, in output order.

    Raises:
        ToolCallingError: an unknown family.

    >>> text = 'Sure.<tool_call>\\n{"name": "get_weather", "arguments": {"city": "Paris"}}\\n</tool_call>'
    >>> parse_calls("hermes", text)
    [ToolCall(name='get_weather', arguments={'city': 'Paris'}, error=None)]
    >>> parse_calls("glm45", "<tool_call>f\\n<arg_key>n</arg_key>\\n<arg_value>3</arg_value>\\n</tool_call>")
    [ToolCall(name='f', arguments={'n': 3}, error=None)]
    """
    reader = _READERS.get(family)
    if reader is None:
        raise ToolCallingError(f"unknown tool-calling family {family!r}; known: {', '.join(_READERS)}")
    params: dict[str, Any] = {}
    for tool in tools:
        fn = tool.get("function") if isinstance(tool, Mapping) else None
        if isinstance(fn, Mapping) and isinstance(fn.get("name"), str):
            params[fn["name"]] = fn.get("parameters", {})
    return reader(_answer(family, text, reasoning), params)

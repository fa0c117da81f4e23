"""A small JSON Schema -> EBNF converter for the demo (until xgr2's JSON Schema front end lands).

Supported:
  - ``type``: ``"object"``, ``"array"``, ``"string"``, ``"number"``, ``"integer"``,
    ``"boolean"``, ``"null"`` (one type, not a list);
  - objects: ``properties``; *every* listed property is emitted, in the listed order (so
    ``required`` is always satisfied); no other property is ever emitted (so
    ``additionalProperties`` is satisfied too);
  - arrays: ``items`` (one schema; no items: any JSON value), ``minItems``, ``maxItems``;
  - strings: ``minLength``, ``maxLength`` (in characters: escapes count as one);
  - ``enum`` and ``const`` of any JSON values.

Property names, ``enum`` and ``const`` values are written one way: as
``json.dumps(value, ensure_ascii=False)`` writes them (non-ASCII characters raw, objects
and arrays with ``", "`` and ``": "``).

Limits: the language is a subset of the schema's instances (property order fixed,
optional properties always present, numbers without bounds checks since ``minimum`` and
friends are rejected). Annotations (``title``, ``description``, ``$schema``, ``$id``,
``default``, ``examples``, ``format``) are ignored. Anything else (``anyOf``, ``oneOf``,
``allOf``, ``$ref``, ``pattern``, ``minimum``, type lists, ...) raises ``ValueError``.
Whitespace between tokens is optional and at most 16 characters (a model cannot loop on
blank lines forever).
"""

from __future__ import annotations

import json
import re
from typing import Any

_IGNORED = {"title", "description", "$schema", "$id", "$comment", "default", "examples", "format",
            "required", "additionalProperties"}
_SUPPORTED = {"type", "properties", "items", "minItems", "maxItems", "minLength", "maxLength",
              "enum", "const"} | _IGNORED

# Base rules, emitted when used.
_BASE = {
    "ws": r"ws ::= [ \t\n]{0,16}",
    "string": r'string ::= "\"" char* "\""',
    "char": r'char ::= [^\x00-\x1F"\\] | "\\" (["/\\bfnrt] | "u" [0-9A-Fa-f]{4})',
    "integer": r'integer ::= "-"? ("0" | [1-9] [0-9]{0,15})',
    "number": r'number ::= integer ("." [0-9]{1,16})? ([eE] [+\-]? [0-9]{1,3})?',
    "boolean": r'boolean ::= "true" | "false"',
    "null": r'null ::= "null"',
    "value": r'value ::= object | array | string | number | boolean | null',
    "object": r'object ::= "{" ws (string ws ":" ws value (ws "," ws string ws ":" ws value)*)? ws "}"',
    "array": r'array ::= "[" ws (value (ws "," ws value)*)? ws "]"',
}
_DEPENDS = {"string": ["char"], "number": ["integer"], "object": ["ws", "string", "value"],
            "array": ["ws", "value"], "value": ["object", "array", "string", "number", "boolean", "null"]}


def literal(text: str) -> str:
    """``text`` as an EBNF string literal (quotes, backslashes and control characters escaped)."""
    out = []
    for ch in text:
        if ch in '"\\':
            out.append("\\" + ch)
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\x{ord(ch):02X}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def schema_to_ebnf(schema: dict[str, Any]) -> str:
    """EBNF text (root rule ``root``) for the JSON documents described by ``schema``.

    Raises:
      ValueError: on a keyword or type outside the supported subset.

    >>> print(schema_to_ebnf({"type": "object", "properties": {"ok": {"type": "boolean"}}}), end="")
    root ::= "{" ws "\\"ok\\"" ws ":" ws boolean ws "}"
    ws ::= [ \\t\\n]{0,16}
    boolean ::= "true" | "false"
    """
    return _Converter().run(schema)


class _Converter:
    def __init__(self) -> None:
        self.rules: list[str] = []
        self.names: set[str] = set()
        self.base: list[str] = []

    def run(self, schema: dict[str, Any]) -> str:
        self.rules.append("")  # root first
        self.names.add("root")
        self.rules[0] = f"root ::= {self.expr(schema, 'root')}"
        base = []
        for name in self.base:  # transitive closure, in first-use order
            for dep in [name, *_all_deps(name)]:
                if dep not in base:
                    base.append(dep)
        return "\n".join(self.rules + [_BASE[name] for name in base]) + "\n"

    def use(self, name: str) -> str:
        if name not in self.base:
            self.base.append(name)
        return name

    def rule(self, hint: str, body: str) -> str:
        """Adds a rule named after ``hint`` (made unique) and returns its name."""
        name = re.sub(r"[^A-Za-z0-9_]", "_", hint) or "r"
        unique, n = name, 1
        while unique in self.names or unique in _BASE:
            n += 1
            unique = f"{name}_{n}"
        self.names.add(unique)
        self.rules.append(f"{unique} ::= {body}")
        return unique

    def expr(self, schema: Any, path: str) -> str:
        """An EBNF expression for ``schema`` (sub-rules are named after ``path``)."""
        if schema is True or schema == {}:
            return self.use("value")
        if not isinstance(schema, dict):
            raise ValueError(f"{path}: a schema must be an object, got {schema!r}")
        unknown = sorted(set(schema) - _SUPPORTED)
        if unknown:
            raise ValueError(f"{path}: unsupported JSON Schema keywords {unknown} (see xgr2.demo.schema_to_ebnf)")
        if "const" in schema:
            return literal(_json(schema["const"]))
        if "enum" in schema:
            if not schema["enum"]:
                raise ValueError(f"{path}: empty enum")
            return "(" + " | ".join(literal(_json(v)) for v in schema["enum"]) + ")"
        kind = schema.get("type")
        if kind == "object":
            return self.object(schema, path)
        if kind == "array":
            return self.array(schema, path)
        if kind == "string":
            if "minLength" in schema or "maxLength" in schema:
                lo, hi = int(schema.get("minLength", 0)), schema.get("maxLength")
                reps = f"{{{lo},{'' if hi is None else int(hi)}}}"
                return f'"\\"" {self.use("char")}{reps} "\\""'
            return self.use("string")
        if kind in ("number", "integer", "boolean", "null"):
            return self.use(kind)
        if kind is None:
            return self.use("value")
        raise ValueError(f"{path}: unsupported type {kind!r}")

    def object(self, schema: dict[str, Any], path: str) -> str:
        ws = self.use("ws")
        members = [f'{literal(_json(name))} {ws} ":" {ws} {self.expr(sub, f"{path}_{name}")}'
                   for name, sub in (schema.get("properties") or {}).items()]
        inner = f' {ws} "," {ws} '.join(members)
        body = f'"{{" {ws} {inner} {ws} "}}"' if members else f'"{{" {ws} "}}"'
        return body if path == "root" else self.rule(path, body)

    def array(self, schema: dict[str, Any], path: str) -> str:
        ws = self.use("ws")
        item = self.expr(schema.get("items", True), f"{path}_item")
        lo, hi = int(schema.get("minItems", 0)), schema.get("maxItems")
        if hi is not None and int(hi) < lo:
            raise ValueError(f"{path}: maxItems < minItems")
        if hi is not None and int(hi) == 0:
            body = f'"[" {ws} "]"'
        else:
            more = f"{{{max(lo - 1, 0)},{'' if hi is None else int(hi) - 1}}}"
            items = f'{item} ({ws} "," {ws} {item}){more}'
            body = f'"[" {ws} {items} {ws} "]"' if lo > 0 else f'"[" {ws} ({items})? {ws} "]"'
        return body if path == "root" else self.rule(path, body)


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def _all_deps(name: str) -> list[str]:
    seen: list[str] = []
    stack = list(_DEPENDS.get(name, []))
    while stack:
        dep = stack.pop(0)
        if dep not in seen:
            seen.append(dep)
            stack.extend(_DEPENDS.get(dep, []))
    return seen

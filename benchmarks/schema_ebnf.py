"""A JSON Schema subset to xgr2 EBNF, for the benchmarks only.

xgr2 has no JSON-Schema front end yet; `bench_schemas.py` uses this converter to give
xgr2 the same language that xgrammar and llguidance build from the schema themselves.

    python benchmarks/schema_ebnf.py schema.json      # prints the EBNF
    from schema_ebnf import schema_to_ebnf            # (benchmarks/ on sys.path)

Supported (anything else raises `UnsupportedSchema`):

- `{}` or `true`: any JSON value;
- `type`: "object", "array", "string", "integer", "number", "boolean", "null", or a
  list of them (a choice);
- `enum` and `const` (values written as compact JSON, non-ASCII characters raw;
  filtered by `type` when both are given);
- objects: `properties` in the schema's order, `required`; an optional property may be
  left out but the others keep their order (like xgrammar's default). With properties,
  `additionalProperties` must be absent or false (no other keys: xgrammar's strict
  mode); without properties, absent or true means any object and false means `{}`;
- arrays: `items` (a schema; absent or true = any values);
- annotations (`description`, `title`, `default`, `examples`, `$schema`) are ignored.

Whitespace: `[ \\t\\n\\r]*` wherever JSON allows it, none around the root value. When the
root is an object or an array, strings carry xgrammar's lookahead assertion
`(= ws [,}\\]:])` (a string is always followed by one of those): the mask cache may use
it, the language is unchanged.
"""

from __future__ import annotations

import json
import re
import sys

ANNOTATIONS = {"description", "title", "default", "examples", "$schema", "$comment"}
TYPES = ("object", "array", "string", "integer", "number", "boolean", "null")

# Basic rules, each emitted when used (and with the rules it refers to).
BASIC = {
    "ws": (r"[ \t\n\r]*", []),
    "string": (r'"\"" char* "\""', ["char"]),
    "char": (r'[^\x00-\x1F"\\] | "\\" escape', ["escape"]),
    "escape": (r'["/\\bfnrt] | "u" [0-9A-Fa-f]{4}', []),
    "integer": (r'"-"? ("0" | [1-9] [0-9]*)', []),
    "number": (r'"-"? ("0" | [1-9] [0-9]*) ("." [0-9]+)? ([Ee] [+\-]? [0-9]+)?', []),
    "boolean": (r'"true" | "false"', []),
    "null": (r'"null"', []),
    "any": ("any_object | any_array | string | number | boolean | null",
            ["any_object", "any_array", "string", "number", "boolean", "null"]),
    "any_object": (r'"{" ws (any_member (ws "," ws any_member)* ws)? "}"', ["ws", "any_member"]),
    "any_member": (r'string ws ":" ws any', ["string", "ws", "any"]),
    "any_array": (r'"[" ws (any (ws "," ws any)* ws)? "]"', ["ws", "any"]),
}
STRING_LOOKAHEAD = r"(= ws [,}\]:])"


class UnsupportedSchema(ValueError):
    """The schema uses something this converter does not model."""


def literal(text: str) -> str:
    """An EBNF string literal matching exactly `text`."""
    out = []
    for ch in text:
        if ch in '"\\':
            out.append("\\" + ch)
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\x{ord(ch):02X}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def json_literal(value) -> str:
    return literal(json.dumps(value, ensure_ascii=False, separators=(",", ":")))


def has_type(value, t: str) -> bool:
    if t == "integer":
        return (isinstance(value, int) and not isinstance(value, bool)) or (
            isinstance(value, float) and value.is_integer())
    if t == "number":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    return isinstance(value, {"object": dict, "array": list, "string": str, "boolean": bool,
                              "null": type(None)}[t])


class _Converter:
    def __init__(self):
        self.rules: list[tuple[str, str]] = []  # schema rules, in creation order
        self.names: set[str] = set(BASIC)
        self.basic_used: set[str] = set()

    def fresh(self, hint: str) -> str:
        base = re.sub(r"[^A-Za-z0-9_]", "_", hint) or "r"
        name, k = base, 1
        while name in self.names:
            k += 1
            name = f"{base}_{k}"
        self.names.add(name)
        return name

    def basic(self, name: str) -> str:
        stack = [name]
        while stack:
            n = stack.pop()
            if n not in self.basic_used:
                self.basic_used.add(n)
                stack.extend(BASIC[n][1])
        return name

    def add(self, name: str, body: str) -> str:
        self.rules.append((name, body))
        return name

    # -- an expression matching the values of `schema`; `path` names new rules
    def value(self, schema, path: str) -> str:
        if schema is True or schema == {}:
            return self.basic("any")
        if not isinstance(schema, dict):
            raise UnsupportedSchema(f"{path}: schema must be an object or true, got {schema!r}")
        known = {"type", "enum", "const", "properties", "required", "additionalProperties", "items"}
        extra = set(schema) - known - ANNOTATIONS
        if extra:
            raise UnsupportedSchema(f"{path}: unsupported keywords {sorted(extra)}")
        types = schema.get("type", list(TYPES))
        types = [types] if isinstance(types, str) else list(types)
        for t in types:
            if t not in TYPES:
                raise UnsupportedSchema(f"{path}: unsupported type {t!r}")
        if "const" in schema or "enum" in schema:
            values = [schema["const"]] if "const" in schema else schema["enum"]
            values = [v for v in values if any(has_type(v, t) for t in types)]
            if not values:
                raise UnsupportedSchema(f"{path}: no enum value has the schema's type")
            return "(" + " | ".join(json_literal(v) for v in values) + ")"
        alts = [self.typed(t, schema, path if len(types) == 1 else f"{path}_{t}") for t in types]
        return alts[0] if len(alts) == 1 else "(" + " | ".join(alts) + ")"

    def typed(self, t: str, schema: dict, path: str) -> str:
        if t == "object":
            return self.obj(schema, path)
        if t == "array":
            items = schema.get("items", True)
            item = self.value(items, f"{path}_item")
            return self.add(self.fresh(path), f'"[" ws ({item} (ws "," ws {item})* ws)? "]"')
        return self.basic(t)

    def obj(self, schema: dict, path: str) -> str:
        self.basic("ws")
        props = schema.get("properties", {})
        required = set(schema.get("required", []))
        additional = schema.get("additionalProperties", not props)
        missing = required - set(props)
        if missing:
            raise UnsupportedSchema(f"{path}: required properties without a schema: {sorted(missing)}")
        if not props:
            if additional is False:
                return '("{" ws "}")'
            if additional is not True and additional != {}:
                raise UnsupportedSchema(f"{path}: additionalProperties must be a boolean")
            return self.basic("any_object")
        if additional is not False:
            raise UnsupportedSchema(f"{path}: properties with additionalProperties allowed")
        name = self.fresh(path)
        keys = list(props)
        # prop_i: one "key": value member; rest_i: the members after the i-th, in order,
        # each behind a comma, the optional ones possibly left out.
        members = []
        for key in keys:
            value = self.value(props[key], f"{path}_{key}")
            members.append(self.add(self.fresh(f"{name}_p_{key}"),
                                    f'{literal(json.dumps(key, ensure_ascii=False))} ws ":" ws {value}'))
        rests: list[str | None] = [None] * (len(keys) + 1)
        for i in range(len(keys) - 1, 0, -1):
            item = f'ws "," ws {members[i]}'
            body = item if keys[i] in required else f"({item})?"
            if rests[i + 1]:
                body += f" {rests[i + 1]}"
            rests[i] = self.add(self.fresh(f"{name}_rest_{i}"), body)
        # The first member present is one of the members up to the first required one.
        first = next((i for i, k in enumerate(keys) if k in required), len(keys) - 1)
        alts = [members[i] + (f" {rests[i + 1]}" if rests[i + 1] else "") for i in range(first + 1)]
        inner = alts[0] if len(alts) == 1 else "(" + " | ".join(alts) + ")"
        if required:
            body = f'"{{" ws {inner} ws "}}"'
        else:
            body = f'"{{" ws ({inner} ws)? "}}"'
        return self.add(name, body)


def schema_to_ebnf(schema, *, lookahead: bool | None = None) -> str:
    """xgr2 EBNF text (root rule `root`) for the JSON Schema `schema` (a dict, or JSON text).

    `lookahead` (default: when the root is an object or an array) adds the string rule's
    lookahead assertion, which is only true when no string can end the document.
    """
    if isinstance(schema, (str, bytes)):
        schema = json.loads(schema)
    if lookahead is None:
        lookahead = isinstance(schema, dict) and schema.get("type") in ("object", "array")
    conv = _Converter()
    root = conv.value(schema, "root")
    if lookahead and "string" in conv.basic_used:
        conv.basic("ws")
    lines = []
    if root != "root":
        lines.append(f"root ::= {root}")
    for name, body in reversed(conv.rules):  # outer rules first
        lines.append(f"{name} ::= {body}")
    for name, (body, _) in BASIC.items():
        if name in conv.basic_used:
            if name == "string" and lookahead:
                body += " " + STRING_LOOKAHEAD
            lines.append(f"{name} ::= {body}")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python benchmarks/schema_ebnf.py SCHEMA.json")
    with open(sys.argv[1], encoding="utf-8") as f:
        print(schema_to_ebnf(json.load(f)), end="")

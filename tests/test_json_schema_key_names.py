"""Strings that must differ from given names: property names beside declared ones
(additionalProperties) and `not` of string values, against `jsonschema`.

Where such a string still spells the start of an excluded name of printable ASCII, the
grammar writes those characters raw, as json.dumps does (docs/json_schema.md): so a
document json.dumps writes is accepted iff it is valid, and any other spelling (every
character as a \\u escape) is accepted only when valid, never as a disguised name.
"""

from __future__ import annotations

import functools
import json

import jsonschema
from hypothesis import given, settings
from hypothesis import strategies as st

import xgr2
from parsing import accepts

BYTES = xgr2.TokenizerInfo([bytes([i]) for i in range(256)] + [b"<eos>"], stop_token_ids=[256])

# `/` has an escape of its own (\/); DEL and controls are escaped by json.dumps (DEL with
# ensure_ascii); é is non-ASCII and 😀 a surrogate pair in \u form; `"` and `\` must be
# escaped; names with any of these but `/` take the exact every-form trie.
NAME_CHARS = "ab/~ \x7f\"\\é\U0001F600"
KEY_CHARS = NAME_CHARS + "c\n\x01"

names_st = st.frozensets(st.text(NAME_CHARS, max_size=4), max_size=5)


@functools.lru_cache(maxsize=None)
def starts(names: frozenset[str]) -> tuple[xgr2.MatcherState, xgr2.MatcherState]:
    """The object schema (names declared, others integers) and the `not enum` string schema."""
    obj = {"type": "object", "properties": {n: {"type": "null"} for n in sorted(names)},
           "additionalProperties": {"type": "integer"}}
    text = {"type": "string", "not": {"enum": sorted(names)}}
    return tuple(xgr2.compile(xgr2.Grammar.from_json_schema(s, any_whitespace=False), BYTES).initial_state()
                 for s in (obj, text))


def escaped(ch: str, upper: bool = False) -> str:
    """`ch` as \\u escapes (a surrogate pair above U+FFFF)."""
    data = ch.encode("utf-16-be")
    out = "".join(f"\\u{data[i]:02x}{data[i + 1]:02x}" for i in range(0, len(data), 2))
    return out.replace("\\u", "\\U").upper().replace("\\U", "\\u") if upper else out


def other_spellings(s: str) -> set[str]:
    """JSON strings of `s` other than json.dumps writes: every character escaped (lower
    and upper hex), one character escaped, `/` as `\\/`."""
    plain = [json.dumps(ch, ensure_ascii=False)[1:-1] for ch in s]
    out = {'"' + "".join(escaped(ch, upper) for ch in s) + '"' for upper in (False, True)}
    for i, ch in enumerate(s):
        out.add('"' + "".join(plain[:i]) + escaped(ch) + "".join(plain[i + 1:]) + '"')
    out.add('"' + "".join(p.replace("/", "\\/") for p in plain) + '"')
    return out


def keys_for(names: frozenset[str], extra: list[str]) -> set[str]:
    keys = set(extra) | set(names)
    for n in names:
        keys |= {n[:i] for i in range(len(n))} | {n + "a", n + "c", n + "\x7f"}
    return keys


@settings(max_examples=150, deadline=None)
@given(names_st, st.lists(st.text(KEY_CHARS, max_size=5), max_size=6))
def test_strings_other_than_the_names(names, extra):
    obj_start, text_start = starts(names)
    schema = {"type": "object", "properties": {n: {"type": "null"} for n in names},
              "additionalProperties": {"type": "integer"}}
    validator = jsonschema.Draft202012Validator(schema)
    for key in keys_for(names, extra):
        excluded = key in names
        for value in (1, None):  # a declared name takes null, any other an integer
            for ensure_ascii in (True, False):
                text = json.dumps({key: value}, ensure_ascii=ensure_ascii, separators=(",", ":"))
                assert accepts(obj_start, text) == validator.is_valid({key: value}), text
        for ensure_ascii in (True, False):
            literal = json.dumps(key, ensure_ascii=ensure_ascii)
            assert accepts(text_start, literal) == (not excluded), literal
        # Another spelling of an excluded name is never taken as another name.
        if excluded:
            for spelling in other_spellings(key):
                assert not accepts(text_start, spelling), spelling
                assert not accepts(obj_start, "{" + spelling + ":1}"), spelling

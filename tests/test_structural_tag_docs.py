"""docs/structural_tag_examples.md, generated here: per structural-tag format, a small spec,
an output its grammar accepts, one it rejects, and the grammar it compiles to.

Every example is run through the real matcher (``try_advance_bytes`` for text,
``try_advance`` per token where the output holds tokens matched by id, then
``can_terminate``): the accepted one must be accepted and the rejected one not, and the
page says where the matcher stops on the rejected one, so it cannot drift from what the
formats accept.
Regenerate with `python tests/test_structural_tag_docs.py > docs/structural_tag_examples.md`.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Union

import xgr2

DOC = Path(__file__).resolve().parent.parent / "docs" / "structural_tag_examples.md"

# Every byte is a token (ids 0-255, the id is the byte), then special tokens and a stop
# token, as in tests/test_tool_calling_special_tokens.py.
SPECIAL = ["<|think|>", "<|/think|>", "<|call|>", "<|/call|>", "<|python|>"]
STOP = ["<|eos|>"]
IDS = {name: 256 + i for i, name in enumerate(SPECIAL + STOP)}
TOK = xgr2.TokenizerInfo([bytes([b]) for b in range(256)] + [n.encode() for n in SPECIAL + STOP],
                         special_token_ids=[IDS[n] for n in SPECIAL], stop_token_ids=[IDS[n] for n in STOP],
                         vocab_type="raw")

# An output: text (read byte by byte), or a list of text and token ids (a token matched by
# id, shown as `<[id]>`, the EBNF spelling of that one token).
Output = Union[str, list]


def ex(*parts: str) -> list:
    """An output with tokens: a name in SPECIAL is that token, by id; other parts are text."""
    return [IDS[p] if p in IDS else p for p in parts]


WEATHER = {"type": "object", "properties": {"city": {"type": "string"}, "unit": {"enum": ["celsius", "fahrenheit"]}},
           "required": ["city"], "additionalProperties": False}
TIME = {"type": "object", "properties": {"tz": {"type": "string"}}, "required": ["tz"], "additionalProperties": False}


def const(value: str) -> dict:
    return {"type": "const_string", "value": value}


def schema(s: dict) -> dict:
    return {"type": "json_schema", "json_schema": s}


def tag(begin, content: dict, end) -> dict:
    return {"type": "tag", "begin": begin, "content": content, "end": end}


def token(name: str) -> dict:
    return {"type": "token", "token": name}


# (type, heading suffix, one sentence, format, accepted, rejected, why it is rejected)
EXAMPLES = [
    ("const_string", "", "Exactly one fixed string.",
     const("I cannot help with that."),
     "I cannot help with that.", "I can't help with that.", "any other text, even one that means the same"),
    ("json_schema", " (JSON)", "A JSON value valid against a JSON Schema, compiled as `Grammar.from_json_schema` "
     "compiles it (properties in declared order, whitespace runs bounded).",
     schema(WEATHER),
     '{"city": "Paris", "unit": "celsius"}', '{"unit": "celsius"}', "`city` is required, and comes first"),
    ("json_schema", " (`qwen_xml` style)", "The same schema written as Qwen's XML parameters: one "
     "`<parameter=NAME>VALUE</parameter>` per property, a string value as raw text.",
     {"type": "json_schema", "json_schema": WEATHER, "style": "qwen_xml"},
     "<parameter=city>Paris</parameter>\n<parameter=unit>celsius</parameter>",
     "<parameter=unit>celsius</parameter>\n<parameter=city>Paris</parameter>",
     "parameters come in declared order, and `city` is required"),
    ("json_schema", " (`cohere_xml` style)", "The same schema as Cohere Command writes arguments: one "
     "`<cofl:value name=\"NAME\" type=\"TYPE\">VALUE</cofl:value>` per property, the type saying how the value "
     "is written (`raw` text, `json`, a `dict` or `list` of elements).",
     {"type": "json_schema", "json_schema": WEATHER, "style": "cohere_xml"},
     '<cofl:value name="city" type="raw">Paris</cofl:value><cofl:value name="unit" type="raw">celsius</cofl:value>',
     '<cofl:value name="city" type="json">"Paris"</cofl:value>',
     "a string is raw text, typed `raw`"),
    ("json_schema", " (with `excludes`)", "The JSON schema with strings that no string value or property name "
     "may hold, matched on the text as written.",
     {"type": "json_schema", "json_schema": WEATHER, "excludes": ["</tool_call>"]},
     '{"city": "Paris"}', '{"city": "Paris</tool_call>"}', "the value holds an excluded string"),
    ("grammar", "", "An EBNF grammar (root rule `root`), its rules added with a prefix.",
     {"type": "grammar", "grammar": 'root ::= expr\nexpr ::= term (("+" | "-") term)*\nterm ::= [0-9]+ | "(" expr ")"'},
     "(12+3)-4", "(12+3", "the parenthesis is never closed: a prefix of a sentence, not a sentence"),
    ("regex", "", "Text the regex matches in full (`Grammar.from_regex`).",
     {"type": "regex", "pattern": r"\d{4}-\d{2}-\d{2}"},
     "2024-05-17", "2024-5-17", "the month needs two digits"),
    ("any_text", "", "Free text (any valid UTF-8) that never contains one of the `excludes` strings.",
     {"type": "any_text", "excludes": ["```"]},
     "It will be sunny in Paris, 21 °C.", "Here you go:\n```python\nprint(21)\n```",
     "an excluded string is a dead end, wherever it occurs"),
    ("sequence", "", "The elements one after another, nothing between them.",
     {"type": "sequence", "elements": [const("Temperature: "), {"type": "regex", "pattern": "-?[0-9]+"},
                                       const(" °C")]},
     "Temperature: 21 °C", "Temperature: 21", "the last element is missing"),
    ("or", "", "Exactly one of the elements.",
     {"type": "or", "elements": [const("unknown"), {"type": "regex", "pattern": "[0-9]+ (minutes|hours)"}]},
     "45 minutes", "soon", "neither element matches it"),
    ("optional", "", "The content or nothing.",
     {"type": "optional", "content": tag("<think>", {"type": "any_text"}, "</think>")},
     "", "<think>Paris.</think><think>Oslo.</think>", "at most one occurrence of the content"),
    ("plus", "", "One or more occurrences of the content, back to back.",
     {"type": "plus", "content": {"type": "regex", "pattern": "- [^\\n]+\\n"}},
     "- Paris\n- Oslo\n", "", "at least one occurrence is needed"),
    ("star", "", "Zero or more occurrences of the content, back to back.",
     {"type": "star", "content": tag("<city>", {"type": "regex", "pattern": "[A-Z][a-z]+"}, "</city>")},
     "<city>Paris</city><city>Oslo</city>", "<city>Paris</city> <city>Oslo</city>",
     "nothing may come between two occurrences, not even a space"),
    ("repeat", "", "Between `min` and `max` occurrences of the content (`max: -1`: no upper bound).",
     {"type": "repeat", "min": 1, "max": 3, "content": {"type": "regex", "pattern": "#[a-z]+ "}},
     "#sunny #warm ", "#sunny #warm #dry #calm ", "four occurrences, at most three allowed"),
    ("tag", "", "`begin`, the content, then one of the `end` strings; free text inside may not contain an end "
     "string, so the first one closes the tag.",
     tag("<summary>", {"type": "any_text"}, ["</summary>", "</s>"]),
     "<summary>Sunny all week.</summary>", "<summary>Close it with </s> or </summary>.</summary>",
     "the first `</s>` already closes the tag, and nothing may follow it"),
    ("triggered_tags", "", "Free text until a trigger completes; a completed trigger must go on into one of the "
     "tags that begin with it, then free text resumes.",
     {"type": "triggered_tags", "triggers": ["<function="],
      "tags": [tag("<function=get_weather>", schema(WEATHER), "</function>"),
               tag("<function=get_time>", schema(TIME), "</function>")]},
     'Let me check. <function=get_weather>{"city": "Paris"}</function> Done.',
     'Let me check. <function=get_news>{"topic": "Paris"}</function>',
     "after the trigger `<function=` only an offered tag may follow"),
    ("tags_with_separator", "", "One or more of the tags with the separator between them (or nothing, unless "
     "`at_least_one`), and no free text.",
     {"type": "tags_with_separator", "separator": "\n", "at_least_one": True,
      "tags": [tag("<call>", schema(TIME), "</call>")]},
     '<call>{"tz": "CET"}</call>\n<call>{"tz": "UTC"}</call>', 'Sure.\n<call>{"tz": "CET"}</call>',
     "no free text: the output must begin with a tag"),
    ("dispatch", "", "Free text in which each completed rule pattern continues with its format, then free text "
     "again (`loop: false`: the construct ends after one).",
     {"type": "dispatch", "rules": [["@weather(", {"type": "regex", "pattern": "[A-Z][a-z]+\\)"}],
                                    ["@time(", {"type": "regex", "pattern": "[A-Z]{3}\\)"}]]},
     "Looking up @weather(Paris) and @time(CET) now.", "Looking up @weather(paris) now.",
     "after `@weather(` the regex needs a capitalized name"),
    ("token", "", "One token, by id: its text spelled in other tokens is not it.",
     token("<|python|>"),
     ex("<|python|>"), "<|python|>", "the same text in byte tokens is not the token"),
    ("exclude_token", "", "One token, any but the excluded ones (never a stop token).",
     {"type": "exclude_token", "exclude_tokens": ["<|call|>", "<|/call|>"]},
     ex("<|think|>"), ex("<|call|>"), "an excluded token"),
    ("any_tokens", "", "Any number of tokens (at most `max_tokens`) other than the excluded ones.",
     {"type": "any_tokens", "exclude_tokens": ["<|call|>"], "max_tokens": 16},
     ex("<|think|>", "Sunny.", "<|/think|>"), ex("Now ", "<|call|>"), "an excluded token"),
    ("tag", " (token begin and end)", "A `tag` whose `begin` and `end` are tokens matched by id.",
     tag(token("<|think|>"), {"type": "any_text"}, token("<|/think|>")),
     ex("<|think|>", "Paris is in France.", "<|/think|>"), "<|think|>Paris is in France.<|/think|>",
     "the text of the tokens, in byte tokens, is not the tokens"),
    ("token_triggered_tags", "", "Free tokens until a trigger token, which must go on into a tag that begins "
     "with it; then free tokens resume.",
     {"type": "token_triggered_tags", "trigger_tokens": ["<|call|>"], "exclude_tokens": ["<|/call|>"],
      "tags": [tag(token("<|call|>"), schema(WEATHER), token("<|/call|>"))]},
     ex("Checking. ", "<|call|>", '{"city": "Paris"}', "<|/call|>"),
     ex('Checking. <|call|>{"city": "Paris"}', "<|/call|>"),
     "the trigger spelled in byte tokens is free text, and `<|/call|>` is excluded from free tokens"),
    ("token_dispatch", "", "Free tokens in which each trigger token continues with its format, then free tokens "
     "again (`loop: false`: the construct ends after one).",
     {"type": "token_dispatch", "rules": [["<|python|>", {"type": "regex", "pattern": "[a-z_]+\\([0-9.]*\\)"}]],
      "loop": False},
     ex("Let me compute. ", "<|python|>", "sqrt(2)"), ex("<|python|>", "sqrt(2)", "<|python|>", "sqrt(3)"),
     "with `loop: false` the construct ends after one dispatch"),
]


def grammar_of(fmt: dict) -> xgr2.Grammar:
    return xgr2.Grammar.from_structural_tag({"type": "structural_tag", "format": fmt}, tokenizer_info=TOK)


def tokens_of(output: Output) -> list[int]:
    """The output's token ids (a byte's token id is the byte)."""
    if isinstance(output, str):
        return list(output.encode())
    return [t for p in output for t in ([p] if isinstance(p, int) else list(p.encode()))]


def run(compiled: xgr2.CompiledGrammar, output: Output) -> tuple[bool, int]:
    """(accepted, how many tokens the matcher takes): text by try_advance_bytes, an output
    with tokens by try_advance per token."""
    state = compiled.initial_state()
    if isinstance(output, str):
        data = output.encode()
        nxt = state.try_advance_bytes(data)
        if nxt is not None:
            return nxt.can_terminate, len(data)
        for i, b in enumerate(data):  # where it stops
            nxt = state.try_advance_bytes(bytes([b]))
            if nxt is None:
                return False, i
            state = nxt
        raise AssertionError("try_advance_bytes refused what byte steps took")
    ids = tokens_of(output)
    for i, t in enumerate(ids):
        nxt = state.try_advance(t)
        if nxt is None:
            return False, i
        state = nxt
    return state.can_terminate, len(ids)


def show(ids: list[int]) -> str:
    """Byte tokens as their text, others as `<[id]>`."""
    out, text = [], b""
    for t in ids + [-1]:
        if 0 <= t < 256:
            text += bytes([t])
            continue
        out.append(text.decode())
        text = b""
        if t >= 0:
            out.append(f"<[{t}]>")
    return "".join(out)


def backtick_run(text: str) -> int:
    """The longest run of backticks in text."""
    return max((len(r) for r in "".join(c if c == "`" else " " for c in text).split()), default=0)


def code(text: str) -> str:
    """Inline code, fenced with more backticks than the text holds in a row."""
    fence = "`" * (backtick_run(text) + 1)
    pad = " " if "`" in text else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def block(output: Output) -> list[str]:
    text = show(tokens_of(output))
    if not text:
        return ["(the empty output)"]
    return fenced("text", text)


def fenced(lang: str, text: str) -> list[str]:
    fence = "`" * max(3, backtick_run(text) + 1)
    return [fence + lang, text, fence]


def where(output: Output, taken: int) -> str:
    """Where the matcher stops on a rejected output, in words."""
    ids = tokens_of(output)
    if taken == len(ids):
        return "The matcher takes all of it, but cannot end there."
    nxt = ids[taken]
    if nxt >= 256:
        unit = code(f"<[{nxt}]>")
    else:
        char = bytes(ids[taken:taken + 4]).decode(errors="ignore")[:1]
        unit = {" ": "a space", "\n": "a newline"}.get(char) or code(char)
    if taken == 0:
        return f"The matcher refuses the first token, {unit}."
    prefix = show(ids[:taken])
    took = f"{code(prefix)} ({taken} tokens)" if "\n" not in prefix else f"the first {taken} tokens"
    return f"The matcher takes {took} and refuses the next token, {unit}."


def slug(kind: str, suffix: str) -> str:
    """GitHub's anchor of the heading."""
    return kind + "".join(c for c in suffix.lower().replace(" ", "-") if c.isalnum() or c in "-_")


def page() -> str:
    names = ", ".join(f"`{n}` = `<[{IDS[n]}]>`" for n in SPECIAL)
    lines = [
        "# Structural tags: an example and the grammar of each format",
        "",
        "Generated by `tests/test_structural_tag_docs.py`, which runs every example below through the",
        "matcher: the accepted output must be accepted, the rejected one must not, and the page says",
        "where the matcher stops on it. See [structural_tags.md](structural_tags.md) for the",
        "fields and the semantics of each format.",
        "",
        "Each format `F` is compiled as",
        "`xgr2.Grammar.from_structural_tag({\"type\": \"structural_tag\", \"format\": F}, tokenizer_info=tok)`,",
        "where `tok` has every byte as a token (ids 0-255, the id is the byte), the special tokens",
        f"{names},",
        f"and the stop token `<|eos|>` (id {IDS['<|eos|>']}). Token formats may name tokens by their text; the",
        "grammar holds their ids. In the example outputs `<[id]>` is the token with that id (as the",
        "grammar spells it) and every other character is text, one byte token per byte: so",
        "`<|call|>` written out there is eight byte tokens, not the special token.",
        "",
        "Formats: " + ", ".join(f"[`{k}`{s}](#{slug(k, s)})" for k, s, *_ in EXAMPLES) + ".",
        "",
    ]
    for kind, suffix, sentence, fmt, accepted, rejected, why in EXAMPLES:
        grammar = grammar_of(fmt)
        _, taken = run(xgr2.compile(grammar, TOK), rejected)
        lines += [
            f"## `{kind}`{suffix}",
            "",
            sentence,
            "",
            *fenced("json", json.dumps(fmt, indent=2, ensure_ascii=False)),
            "",
            "Accepted:",
            "",
            *block(accepted),
            "",
            f"Rejected ({why}):",
            "",
            *block(rejected),
            "",
            where(rejected, taken),
            "",
            "Grammar:",
            "",
            *fenced("ebnf", str(grammar).rstrip("\n")),
            "",
        ]
    return "\n".join(lines)


def test_accepted_examples_are_accepted_and_rejected_ones_are_not():
    for kind, suffix, _, fmt, accepted, rejected, _ in EXAMPLES:
        grammar = grammar_of(fmt)
        assert xgr2.Grammar.from_ebnf(str(grammar)) == grammar, kind + suffix  # the page's text is the grammar
        compiled = xgr2.compile(grammar, TOK)
        assert run(compiled, accepted) == (True, len(tokens_of(accepted))), (kind + suffix, accepted)
        assert not run(compiled, rejected)[0], (kind + suffix, rejected)


def test_every_format_has_an_example():
    assert {k for k, *_ in EXAMPLES} == {
        "const_string", "json_schema", "grammar", "regex", "any_text", "sequence", "or", "optional", "plus", "star",
        "repeat", "tag", "triggered_tags", "tags_with_separator", "dispatch", "token", "exclude_token", "any_tokens",
        "token_triggered_tags", "token_dispatch"}


def test_docs_page_is_generated_from_the_examples():
    assert DOC.read_text() == page(), (
        "regenerate: python tests/test_structural_tag_docs.py > docs/structural_tag_examples.md")


if __name__ == "__main__":
    sys.stdout.write(page())

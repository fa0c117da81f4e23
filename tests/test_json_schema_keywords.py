"""Every JSON Schema keyword with its status, checked, and docs/json_schema.md generated from it.

Statuses:
- exact: compiled with unsupported="error"; the oracle tests (test_json_schema.py) check it.
- narrower: compiled; the grammar accepts a subset of the valid documents (said how).
- refused: SchemaError under unsupported="error"; under "warn" the keyword is ignored
  (the grammar is wider) with a SchemaWarning, under "ignore" silently.
- annotation: no effect on validity, ignored exactly.

Regenerate the page with `python tests/test_json_schema_keywords.py > docs/json_schema.md`.
"""

from __future__ import annotations

import sys
import warnings
from pathlib import Path

import pytest

import xgr2

DOC = Path(__file__).resolve().parent.parent / "docs" / "json_schema.md"

NEGATION_NOTE = ("`not` is written as a schema: types, const / enum (a trie of excluded strings, beside pattern / lengths the automaton less them; open intervals between excluded numbers), required, properties, bounds and counts, items / contains, anyOf, oneOf (none of the branches, or two that may overlap), nested not, pattern (the complement of its language, as an automaton: docs/limits.md); refused for format, additionalProperties schemas, prefixItems and uniqueItems inside it. Where `not` asks for a non-integral number (`not: {type: integer}`, also a `oneOf` of `integer` and `number`), those are generated in plain notation only (`1.5`, `-0.25`; not `15e-1`, since whether a number with an exponent is integral compares two unbounded digit counts: narrower)")

# keyword, status, a schema that uses it, note
KEYWORDS = [
    ("type", "exact", {"type": ["string", "null"]}, "strings, arrays of types, `integer` as integer syntax"),
    ("enum", "exact", {"enum": [1, "a", None]}, "values checked against the length, range and count keywords beside them"),
    ("const", "exact", {"const": {"a": [1]}}, "objects in their key order; numbers also in their plain spellings (under a Draft 3 / 4 "
     "`$schema`, integral numbers in integer syntax only: those drafts' `integer` rejects 1.0)"),
    ("properties", "narrower", {"properties": {"a": {"type": "integer"}}}, "in declared order"),
    ("required", "exact", {"type": "object", "required": ["a"]}, ""),
    ("additionalProperties", "exact", {"additionalProperties": {"type": "integer"}},
     "extra keys are never a declared name; `strict=True` generates none unless allowed explicitly"),
    ("patternProperties", "exact", {"type": "object", "patternProperties": {"^x-": {"type": "string"}}},
     "beside properties, additionalProperties and other patterns: a key matching several patterns takes all of their "
     "schemas, a declared name also those of the patterns it matches (key languages as automata, at most 64 regions); "
     "with propertyNames, every key also in its names"),
    ("propertyNames", "exact", {"type": "object", "propertyNames": {"maxLength": 3}},
     "beside declared properties or patternProperties: only type string, pattern, min / maxLength, const and enum "
     "(an automaton of names); alone: any string schema"),
    ("minProperties", "exact", {"type": "object", "properties": {"a": {}, "b": {}}, "minProperties": 1}, "up to 1000"),
    ("maxProperties", "exact", {"type": "object", "additionalProperties": True, "maxProperties": 2}, "up to 1000"),
    ("dependentRequired", "exact", {"properties": {"a": {}, "b": {}}, "dependentRequired": {"a": ["b"]}},
     "as if {required: [name]} then {required: [...]}"),
    ("items", "exact", {"type": "array", "items": {"type": "integer"}}, "also the Draft 4-7 array form"),
    ("prefixItems", "exact", {"type": "array", "prefixItems": [{"type": "integer"}], "items": False}, ""),
    ("additionalItems", "exact", {"type": "array", "items": [{"type": "integer"}], "additionalItems": False},
     "Draft 4-7"),
    ("contains", "exact", {"type": "array", "contains": {"type": "integer"}},
     "refused with prefixItems, minItems, maxItems or uniqueItems"),
    ("minContains", "exact", {"type": "array", "contains": {"type": "integer"}, "minContains": 2}, ""),
    ("maxContains", "exact", {"type": "array", "contains": {"type": "integer"}, "maxContains": 2},
     "each item a hit or a miss (`contains` or its negation, as for `not`: refused where that cannot be written, "
     "and a miss that is a non-integral number where `contains` asks for an integer is written in plain notation, "
     "as for `not`), the hits counted; up to 1,000,000,000"),
    ("minItems", "exact", {"type": "array", "minItems": 500}, "repetition compression: any bound"),
    ("maxItems", "exact", {"type": "array", "maxItems": 10000}, ""),
    ("uniqueItems", "narrower", {"type": "array", "items": {"enum": ["a", "b"]}, "uniqueItems": True},
     "items from a finite set (enum, const, boolean, null; at most 64 values), in that set's order; refused otherwise"),
    ("minLength", "exact", {"type": "string", "minLength": 2}, "code points; an escape is one character"),
    ("maxLength", "exact", {"type": "string", "maxLength": 10000},
     "a counted rule of characters (any bound; docs/design.md, counted repetitions); "
     "with pattern: the pattern's automaton intersected with the lengths (bounds up to 9,999); refused with a format"),
    ("pattern", "exact", {"type": "string", "pattern": "^[a-z]+$"},
     "a search, as ECMA-262 and the `jsonschema` validator read it, in the syntax of docs/regex.md (`\\d \\w \\s` ASCII; `.` excludes only `\\n`, as in Python's `re`, which `jsonschema` uses; ECMA-262's also excludes `\\r`, U+2028, U+2029); two patterns in an allOf intersect; leading `^(?!X)` lookaheads exact"),
    ("format", "narrower", {"type": "string", "format": "date-time"},
     "date-time, date, time, duration, email, hostname, ipv4, ipv6, uri, uri-reference, iri, uuid, uri-template, "
     "json-pointer, relative-json-pointer (docs/json_formats.md); other formats annotate"),
    ("minimum", "exact", {"type": "number", "minimum": -1.5}, "digit-level automata, any magnitude"),
    ("maximum", "exact", {"type": "integer", "maximum": 10**40}, ""),
    ("exclusiveMinimum", "exact", {"type": "number", "exclusiveMinimum": 0}, "also Draft 4's boolean form"),
    ("exclusiveMaximum", "exact", {"type": "number", "exclusiveMaximum": 1}, ""),
    ("multipleOf", "exact", {"type": "number", "multipleOf": 0.25},
     "refused above 4000 automaton states; two in an allOf: their least common multiple"),
    ("anyOf", "exact", {"anyOf": [{"type": "string"}, {"type": "integer"}]}, "keywords beside it apply to every branch"),
    ("oneOf", "exact", {"oneOf": [{"type": "string"}, {"type": "integer"}]},
     "branches that may overlap as anyOf [bi and not bj for each bj it may overlap]; provably disjoint pairs "
     "(types, constants, a required discriminator, listed values the other branch rejects, an anyOf / oneOf each of "
     "whose branches is apart) need no `not`; `not bj` as for `not`, leaving out the keywords that bi already implies "
     "(the same property schema, type or required names), and `additionalProperties: false` negated within the names "
     "the other branch generates; refused where a `not bj` cannot be written"),
    ("allOf", "exact", {"allOf": [{"type": "integer"}, {"minimum": 0}]}, "merged (item keywords position by position: a side's `items` also holds the other side's prefix); refused when two values cannot merge (e.g. two different `contains`)"),
    ("not", "exact", {"not": {"type": "object", "required": ["a"]}}, NEGATION_NOTE),
    ("$ref", "exact", {"$defs": {"a": {"type": "integer"}}, "$ref": "#/$defs/a"},
     "JSON pointers (with ~0 ~1 and %-escapes), $anchor, recursion; resolved against the base URI of the resource it stands in "
     "(RFC 3986, the nearest `$id`), so `#/$defs/x` under an embedded `$id` names that resource's `$defs`; other documents only as given in `resources=` "
     "(nothing is fetched; a resource without `$schema` is read in the schema's draft), and the metaschemas of JSON "
     "Schema's drafts (json-schema.org URIs) from the jsonschema-specifications package when it is installed. Keywords beside a `$ref` apply too, "
     "except under a `$schema` of Draft 4, 6 or 7, which ignore them (`$id` included). Drafts: the `$schema` URI "
     "of Draft 4, 6, 7 or 2019-09 (else 2020-12) sets which keywords exist (Draft 4's `id` is `$id`); a subschema "
     "naming another draft than the document, and Draft 3, are refused; a `$ref` into an `$id` that two "
     "different schemas have is an error"),
    ("$defs", "exact", {"$defs": {"a": {}}}, "also `definitions`"),
    ("if", "exact", {"if": {"properties": {"k": {"const": "a"}}, "required": ["k"]}, "then": {"required": ["n"]}, "else": {"maxProperties": 1}},
     "with then / else, as anyOf [if and then, (not if) and else]; `not if` as for `not`, refused where it cannot be written; "
     "an allOf of conditionals keeps at most 256 branches after dropping contradictory ones; an allOf of 3 or more "
     "whose ifs test one property by const / enum is compiled as one case per tested value instead (the same language)"),
    ("dependentSchemas", "exact", {"dependentSchemas": {"a": {"required": ["b"]}}}, "as if {required: [name]} then the schema"),
    ("dependencies", "exact", {"dependencies": {"a": ["b"]}}, "Draft 4-7: arrays as dependentRequired, schemas as dependentSchemas"),
    ("unevaluatedProperties", "narrower",
     {"properties": {"a": {}}, "allOf": [{"properties": {"b": {}}}], "unevaluatedProperties": {"type": "integer"}},
     "rewritten before allOf merging, as additionalProperties over the names and patterns the schema evaluates in "
     "place (own keywords, allOf, $ref) and, for one anyOf / oneOf / if beside it, branch by branch; where several "
     "anyOf branches hold at once only one branch's names count (narrower). Refused beside dependentSchemas that "
     "declare properties, beside two such applicators, or when a nested anyOf / oneOf / if decides what is evaluated"),
    ("unevaluatedItems", "narrower", {"prefixItems": [{"type": "integer"}], "unevaluatedItems": False},
     "as unevaluatedProperties, with the items prefixItems / items evaluate; refused where contains evaluates"),
    ("title", "annotation", {"type": "integer", "title": "x"}, "also description, default, examples, $comment, "
     "deprecated, readOnly, writeOnly, content*, and unknown keywords"),
]


@pytest.mark.parametrize("keyword,status,schema,note", KEYWORDS, ids=[k[0] for k in KEYWORDS])
def test_keyword_status(keyword, status, schema, note):
    if status in ("exact", "narrower", "annotation"):
        g = xgr2.Grammar.from_json_schema(schema)
        if status == "annotation":
            plain = {k: v for k, v in schema.items() if k != keyword}
            assert str(g) == str(xgr2.Grammar.from_json_schema(plain))
        return
    with pytest.raises(xgr2.SchemaError) as info:
        xgr2.Grammar.from_json_schema(schema)
    assert info.value.pointer.startswith("/")
    with pytest.warns(xgr2.SchemaWarning):
        xgr2.Grammar.from_json_schema(schema, unsupported="warn")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        xgr2.Grammar.from_json_schema(schema, unsupported="ignore")


def render() -> str:
    lines = [
        "# JSON Schema support",
        "",
        "`xgr2.Grammar.from_json_schema(schema, *, any_whitespace=True, indent=None, separators=None,",
        "strict=True, unsupported=\"error\", resources=None, any_order=False)` compiles Draft 2020-12 (and",
        "the Draft 4-7 spellings) in C++",
        "(`csrc/frontends/json_schema.cc`). Without being asked, the grammar never accepts a document",
        "the schema rejects: a keyword it cannot express exactly raises `xgr2.SchemaError` (with the",
        "JSON pointer), unless `unsupported=\"warn\"` or `\"ignore\"` asks to widen by ignoring it.",
        "",
        "Generated from `tests/test_json_schema_keywords.py`, which checks every row.",
        "",
        "| keyword | status | notes |",
        "| --- | --- | --- |",
    ]
    for keyword, status, _, note in KEYWORDS:
        lines.append(f"| `{keyword}` | {status} | {note} |")
    lines += [
        "",
        "## Text",
        "",
        "- JSON text per RFC 8259: strings take every escape (`\\uXXXX` in either case, surrogate pairs",
        "  for characters above U+FFFF) and raw non-ASCII; no raw control characters; numbers without",
        "  leading zeros. Property names and constant strings are written raw, or with `\\uXXXX` for",
        "  non-ASCII and control characters (what `json.dumps` writes with `ensure_ascii`).",
        "- Numbers under `minimum` / `maximum` / `multipleOf` are written without an exponent (a",
        "  narrower choice: exponent notation within a range is not a regular language); unconstrained",
        "  numbers take the full syntax.",
        "- Layout: `any_whitespace=True` allows runs of at most 20 whitespace characters between",
        "  tokens (and around the document); `any_whitespace=False` is compact (`,` and `:`);",
        "  `separators` and `indent` follow `json.dumps` exactly (with `indent`, nesting deeper than 32",
        "  levels is not generated).",
        "- `strict=True`: a schema that declares `properties` gets no other property unless",
        "  `additionalProperties` or `patternProperties` allows it; `strict=False` is JSON Schema's",
        "  default. A schema without `properties` (`{\"type\": \"object\"}`) allows any property. The",
        "  properties an `if` declares count as declared whether it holds or not (with those of the",
        "  `then` or `else` taken). Where every valid value needs a property that strict does not",
        "  write (a oneOf whose branches declare different names: each must break the other), the",
        "  `SchemaError` says so; `strict=False` compiles it.",
        "- An object's properties come in declared order (required and optional), then the others.",
        "- `any_order=True` (XGrammar's `any_order`, also the structural tags' `json_schema` field) is",
        "  the one setting that widens on purpose: in every object, entries come in any order, each a",
        "  permitted key (declared, or allowed by `additionalProperties` / `patternProperties`) with a",
        "  value its schema allows; keys may repeat and required ones may be missing; only the number",
        "  of entries is bounded, to [max(`minProperties`, number of required names), `maxProperties`].",
        "  Values are still exact, and objects inside them are relaxed the same way.",
        "- A schema that no value satisfies raises `SchemaError`.",
        "- Declared property names are written at most once; names taken under `additionalProperties`",
        "  or `patternProperties` may repeat one another (`{\"x\": 1, \"x\": 2}`, which RFC 8259 permits",
        "  and parsers read as one property), so with `minProperties` such a document can count fewer",
        "  properties once parsed: distinct arbitrary names are not a context-free language.",
        "- A property name beside declared ones (and a string under `not` of string values) is written,",
        "  while it spells the start of an excluded name of printable ASCII and at the first character",
        "  that leaves them, with printable ASCII characters raw, as `json.dumps` writes them (not",
        "  `\\u0061` for `a` there); after that character, in any form.",
        "",
    ]
    return "\n".join(lines)


def test_docs_page_is_generated_from_this_table():
    assert DOC.read_text() == render(), "regenerate: python tests/test_json_schema_keywords.py > docs/json_schema.md"


if __name__ == "__main__":
    sys.stdout.write(render())

"""Grammars: the structure that constrains generation."""

from __future__ import annotations

import json
import re
import warnings
from collections.abc import Mapping
from typing import Any, Callable, Literal

from . import _core
from ._errors import SchemaError, StructuralTagError
from ._frozen import Frozen, init_slots
from ._tokenizer import TokenizerInfo


class SchemaWarning(UserWarning):
    """A JSON Schema keyword widened or ignored under ``unsupported="warn"``."""


class Grammar(Frozen):
    """An immutable context-free grammar over UTF-8 text.

    Build one with :meth:`from_ebnf` or :meth:`builtin_json`. ``str(grammar)`` prints a
    normalized EBNF text that parses back to the same grammar.

    >>> g = Grammar.from_ebnf('root ::= "a"+ ("b" | [c-e])')
    >>> print(g, end="")
    root ::= "a"+ ("b" | [c-e])
    """

    __slots__ = ("_ir", "_source")
    _ir: _core.GrammarIR
    _source: "tuple[Any, ...] | None"  # what built it (text and options), a Compiler's cache key; None: unknown

    def __init__(self, ir: _core.GrammarIR, source: "tuple[Any, ...] | None" = None):
        init_slots(self, _ir=ir, _source=source)

    @staticmethod
    def from_ebnf(text: str, root: str = "root") -> "Grammar":
        """Parses EBNF in the XGrammar/GBNF dialect.

        Rules are ``name ::= expression``; expressions use string literals with escapes
        (``\\n \\t \\\\ \\" \\xHH \\uHHHH``), character classes (``[a-z]``, ``[^"\\\\]``),
        ``.`` (any character), ``( )``, ``|`` (one of several alternatives may be empty,
        as GBNF's ``ws ::= | " "``), ``* + ?``, ``{m} {m,} {m,n}``, token ids
        (``<[1, 5-9]>``, ``<[^3]>`` or GBNF's ``!<[3]>``), ``#`` comments, and an optional
        lookahead assertion ``(= ...)`` at the end of a rule. Left recursion is fine.

        Args:
            text: the grammar.
            root: name of the start rule.

        Raises:
            GrammarError: with ``line``, ``column`` and a caret excerpt.

        >>> Grammar.from_ebnf('root ::= "x" | root "x"').root
        'root'
        """
        if not isinstance(text, str):
            raise TypeError(f"grammar text must be str, got {type(text).__name__}")
        if not isinstance(root, str):
            raise TypeError(f"root must be str, got {type(root).__name__}")
        return Grammar(_core.GrammarIR.from_ebnf(text, root))

    @staticmethod
    def from_regex(pattern: str) -> "Grammar":
        """A grammar for the strings that ``pattern`` matches in full (``re.fullmatch``).

        The Python / ECMAScript subset used in JSON Schema: literals and escapes, classes,
        ``.`` (any character but ``\\n``), ``* + ? {m} {m,} {m,n}`` and their lazy forms,
        alternation, groups (capturing, ``(?:...)``, named). ``\\d \\w \\s`` are ASCII, as
        in ECMAScript without the ``u`` flag. See ``docs/regex.md``.

        Raises:
            RegexError: with the ``position`` of a syntax error or of an unsupported
                construct (backreferences, lookaround, ``\\b``, inline flags).

        >>> print(Grammar.from_regex("ab?c"), end="")
        root ::= "a" "b"? "c"
        """
        if not isinstance(pattern, str):
            raise TypeError(f"pattern must be str, got {type(pattern).__name__}")
        return Grammar(_core.GrammarIR.from_regex(pattern), ("regex", pattern))

    @staticmethod
    def from_json_schema(
        schema: "dict[str, Any] | bool | str | type",
        *,
        any_whitespace: bool = True,
        indent: int | None = None,
        separators: tuple[str, str] | None = None,
        strict: bool = True,
        unsupported: Literal["error", "warn", "ignore"] = "error",
        resources: "Mapping[str, dict[str, Any] | bool | str] | None" = None,
        any_order: bool = False,
    ) -> "Grammar":
        """A grammar for the JSON texts that are valid instances of ``schema``.

        Args:
            schema: a JSON Schema as a dict (or bool), a JSON string, or a pydantic model
                class. Draft 2020-12 and the Draft-07 spellings; see
                ``docs/json_schema.md`` for every keyword and its status.
            any_whitespace: allow whitespace between tokens (each run at most 20
                characters, so a model cannot loop on whitespace). False: compact output.
            indent: exactly the layout of ``json.dumps(value, indent=indent)``.
            separators: ``(item_separator, key_separator)`` as in ``json.dumps``.
            strict: properties the schema does not declare are generated only where it
                allows them explicitly (``additionalProperties``, ``patternProperties``);
                False follows JSON Schema's default (any extra property allowed).
            unsupported: what to do with a keyword that cannot be expressed exactly:
                ``"error"`` raises :class:`SchemaError`; ``"warn"`` / ``"ignore"`` widen
                where the docs table says so (with a warning for ``"warn"``).
            resources: other schema documents that ``$ref`` may name, by URI, as a
                ``referencing.Registry`` holds them for ``jsonschema``: names are taken as
                given (so ``{"$ref": "defs.json#/$defs/id"}`` in a schema without ``$id``
                finds the resource ``"defs.json"``). Read when a ``$ref`` first names
                another document; one that cannot be read is an error only where a ``$ref``
                names it. A resource without ``$schema`` is read in the schema's draft;
                documents of different drafts, an ``$id`` that two documents claim, and a
                resource whose ``$id`` differs from its name while it has relative
                references are refused (jsonschema reads those otherwise than the
                standard). Nothing is ever fetched: a ``$ref`` to a document not given here
                is an error, except the metaschemas of JSON Schema's drafts (json-schema.org
                URIs), read from the jsonschema-specifications package when it is installed
                (it comes with ``jsonschema``).
            any_order: XGrammar's relaxed objects (its ``any_order``, also a field of the
                structural tags' ``json_schema`` format): in every object, entries in any
                order, each a permitted key with a value its schema allows, repeated keys
                allowed and required keys not tracked; only the number of entries is
                bounded, to [max(minProperties, number of required), maxProperties]. Wider
                than the schema by design: use it where the key order must not be forced.

        Raises:
            SchemaError: naming the keyword and its JSON pointer.

        >>> g = Grammar.from_json_schema({"type": "integer", "minimum": 1, "maximum": 12})
        >>> g.root
        'root'
        >>> g = Grammar.from_json_schema({"$ref": "units.json#/$defs/unit"},
        ...                              resources={"units.json": {"$defs": {"unit": {"enum": ["C", "F"]}}}})
        """
        if isinstance(schema, type) and hasattr(schema, "model_json_schema"):
            schema = schema.model_json_schema()
        if not isinstance(schema, (dict, bool, str)):
            raise TypeError(f"schema must be a dict, bool, JSON string or pydantic model class, got {type(schema).__name__}")
        text = _json_text(schema, SchemaError, "the schema")
        if indent is not None and (not isinstance(indent, int) or isinstance(indent, bool) or indent < 0):
            raise ValueError(f"indent must be a non-negative int or None, got {indent!r}")
        if separators is not None:
            if (not isinstance(separators, (tuple, list)) or len(separators) != 2
                    or not all(isinstance(s, str) for s in separators)):
                raise TypeError(f"separators must be a pair of strings, got {separators!r}")
            separators = (separators[0], separators[1])
        policies = {"error": 0, "warn": 1, "ignore": 2}
        if unsupported not in policies:
            raise ValueError(f'unsupported must be "error", "warn" or "ignore", got {unsupported!r}')
        if resources is None:
            resources = {}
        if not isinstance(resources, Mapping):
            raise TypeError(f"resources must map URI strings to schemas, got {type(resources).__name__}")
        documents = []
        for uri, document in resources.items():
            if not isinstance(uri, str):
                raise TypeError(f"resources must map URI strings to schemas, got the key {uri!r}")
            for part, what in ((uri, "URI"), (document if isinstance(document, str) else "", "JSON text")):
                try:
                    part.encode("utf-8")
                except UnicodeEncodeError:
                    raise SchemaError(f"resource {uri!r}: its {what} is not valid Unicode (a lone surrogate)", "") from None
            if not isinstance(document, (dict, bool, str)):
                raise TypeError(f"resource {uri!r} must be a dict, bool or JSON string, got {type(document).__name__}")
            documents.append((uri, _json_text(document, SchemaError, f"resource {uri!r}")))
        documents += _metaschemas_named(text, {uri for uri, _ in documents})
        ir, notes = _core.GrammarIR.from_json_schema(
            text, bool(any_whitespace), -1 if indent is None else indent, separators, bool(strict),
            policies[unsupported], documents, bool(any_order))
        if unsupported == "warn":
            for note in notes:
                warnings.warn(note, SchemaWarning, stacklevel=2)
        return Grammar(ir, ("json_schema", text, bool(any_whitespace), indent, separators, bool(strict), unsupported,
                            tuple(documents), bool(any_order)))

    @staticmethod
    def from_structural_tag(spec: "dict[str, Any] | str", *,
                            tokenizer_info: TokenizerInfo | None = None) -> "Grammar":
        """A grammar from a structural tag in XGrammar's JSON format (the
        ``response_format`` that vLLM and SGLang accept).

        ``spec`` is ``{"type": "structural_tag", "format": {...}}``, a bare format object,
        or the older ``{"type": "structural_tag", "structures": [...], "triggers": [...]}``.
        Formats: ``const_string``, ``json_schema``, ``grammar``, ``regex``, ``any_text``,
        ``sequence``, ``or``, ``optional``, ``plus``, ``star``, ``repeat``, ``tag``,
        ``triggered_tags``, ``tags_with_separator``, ``dispatch``, and the token-level
        ``token``, ``exclude_token``, ``any_tokens``, ``token_triggered_tags``,
        ``token_dispatch`` (tokens matched by id, never by their text; a ``tag``'s
        ``begin`` / ``end`` may be ``{"type": "token", "token": ...}``). See
        ``docs/structural_tags.md``.

        Args:
            spec: the structural tag, as a dict or JSON text (or a pydantic model
                instance, dumped with ``model_dump_json``).
            tokenizer_info: resolves tokens given by their text (``"<|call|>"``) to the
                lowest id with that text; needed only when the spec names tokens so.

        Raises:
            StructuralTagError: naming the JSON pointer of the bad field.

        >>> g = Grammar.from_structural_tag({"type": "structural_tag", "format": {
        ...     "type": "tag", "begin": "<think>", "content": {"type": "any_text"}, "end": "</think>"}})
        >>> g.root
        'root'
        """
        if hasattr(spec, "model_dump_json") and not isinstance(spec, type):
            spec = spec.model_dump_json()
        if not isinstance(spec, (dict, str)):
            raise TypeError(f"spec must be a dict or a JSON string, got {type(spec).__name__}")
        if tokenizer_info is not None and not isinstance(tokenizer_info, TokenizerInfo):
            raise TypeError(f"tokenizer_info must be a TokenizerInfo, got {type(tokenizer_info).__name__}")
        core = None if tokenizer_info is None else tokenizer_info._core
        text = _json_text(spec, StructuralTagError, "the structural tag")
        # The text is the compiler's cache key, unless tokens named by their text were
        # resolved with a tokenizer (printing a tool set's grammar for the key cost 0.16 ms
        # at 50 tools).
        return Grammar(_core.GrammarIR.from_structural_tag(text, core),
                       ("structural_tag", text) if core is None else None)

    @staticmethod
    def builtin_json() -> "Grammar":
        """A grammar for any JSON value (RFC 8259), whitespace allowed between tokens.

        >>> "object ::=" in str(Grammar.builtin_json())
        True
        """
        return Grammar.from_ebnf(_core.GrammarIR.builtin_json_ebnf())

    @property
    def root(self) -> str:
        """Name of the start rule."""
        return self._ir.root_name

    @property
    def rule_names(self) -> list[str]:
        """Names of all rules, in order of first appearance in the text."""
        return list(self._ir.rule_names)

    def __str__(self) -> str:
        return self._ir.to_ebnf()

    def __repr__(self) -> str:
        return f"Grammar(root={self.root!r}, rules={len(self.rule_names)})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Grammar) and (self.root, str(self)) == (other.root, str(other))

    def __hash__(self) -> int:
        return hash((self.root, str(self)))

    def __reduce__(self) -> tuple[Callable[[str, str], Grammar], tuple[str, str]]:
        return (Grammar.from_ebnf, (str(self), self.root))


# A json-schema.org URI in a `$ref` or `$id`: the metaschema of a draft (or one of its
# vocabularies); and an `$id` naming one (the schema then has its own copy).
_METASCHEMA_URI = re.compile(r'"\$(?:ref|id)"\s*:\s*"(https?://json-schema\.org/(?:draft/\d{4}-\d{2}|draft-\d\d)/)')
_METASCHEMA_ID = re.compile(r'"\$id"\s*:\s*"(https?://json-schema\.org/[^"]*)"')
_metaschema_texts: dict[str, str] = {}


def _same_uri(uri: str) -> str:
    """A URI as compared here: https, no empty fragment (jsonschema reads them alike)."""
    return uri.replace("http://", "https://", 1).rstrip("#")


def _metaschemas_named(text: str, given: "set[str]") -> list[tuple[str, str]]:
    """The metaschemas of the drafts whose json-schema.org URIs a `$ref` (or the schema's
    `$id`: a metaschema itself) names, as (URI, JSON text), from the jsonschema-specifications
    package (installed with jsonschema) when it is there. Read from disk, never fetched.
    Documents the caller gives (`given`) or the schema defines (an `$id`) are left out."""
    prefixes: set[str] = set()
    known = {_same_uri(u) for u in given}
    at = text.find("json-schema.org/")
    while at >= 0:  # most schemas name it once, in `$schema`: look only around each
        window = (max(0, at - 40), at + 200)
        prefixes.update(_same_uri(m) for m in _METASCHEMA_URI.findall(text, *window))
        known.update(_same_uri(m) for m in _METASCHEMA_ID.findall(text, *window))
        at = text.find("json-schema.org/", at + 1)
    if not prefixes:
        return []
    try:
        from jsonschema_specifications import REGISTRY  # type: ignore[import-untyped]
    except ImportError:
        return []
    out = []
    for uri in REGISTRY:
        if _same_uri(uri).startswith(tuple(prefixes)) and _same_uri(uri) not in known:
            if uri not in _metaschema_texts:
                _metaschema_texts[uri] = json.dumps(REGISTRY[uri].contents)
            out.append((uri, _metaschema_texts[uri]))
    return out


def _dumps(value: Any) -> str:
    """``json.dumps(value, allow_nan=False)``, written in C++ where it can be (json.dumps of
    a large schema cost more than compiling it); raises json.dumps's errors."""
    text = _core.json_text(value)
    return text if text is not None else json.dumps(value, allow_nan=False)


def _json_text(value: Any, error: type[SchemaError] | type[StructuralTagError], what: str) -> str:
    """``value`` as JSON text (a str is taken as JSON text already); a value JSON cannot
    hold (NaN, a set, ...) is ``error`` with an empty pointer."""
    if isinstance(value, str):
        return value
    try:
        return _dumps(value)
    except (TypeError, ValueError) as e:
        raise error(f"{what} is not JSON-serializable: {e}", "") from None


def clear_shared_automata() -> None:
    """Forgets the rule automata that grammars share process-wide, and the JSON-Schema
    grammars kept for structural tags and tool-calling presets.

    Grammars built afterwards determinize their rules afresh: what a fresh process pays.
    For cold-compile measurements and to give back memory; existing grammars are not
    affected. The stores are bounded anyway (``docs/limits.md``).

    >>> clear_shared_automata()
    """
    _core.clear_shared_automata()

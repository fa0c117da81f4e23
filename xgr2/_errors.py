"""Exception types raised by xgr2."""

from __future__ import annotations


class Xgr2Error(Exception):
    """Base class of every error xgr2 raises on purpose."""


class GrammarError(Xgr2Error, ValueError):
    """A malformed grammar. ``line`` and ``column`` are 1-based (0 when unknown).

    >>> import xgr2
    >>> try:
    ...     xgr2.Grammar.from_ebnf('root ::= "a" b')
    ... except xgr2.GrammarError as e:
    ...     print(e.line, e.column)
    1 14
    """

    def __init__(self, message: str, line: int = 0, column: int = 0):
        super().__init__(message)
        self.line = line
        self.column = column


class RegexError(GrammarError):
    """A malformed or unsupported regular expression. ``position`` is the 0-based offset
    (in characters) in the pattern where the problem starts.

    >>> import xgr2
    >>> try:
    ...     xgr2.Grammar.from_regex("a(b")
    ... except xgr2.RegexError as e:
    ...     print(e.position)
    1
    """

    def __init__(self, message: str, position: int = 0):
        super().__init__(message, 1, position + 1)
        self.position = position


class SchemaError(Xgr2Error, ValueError):
    """A JSON Schema that cannot be compiled exactly: malformed, or a keyword that
    ``unsupported="error"`` refuses. ``pointer`` is the JSON pointer (RFC 6901) of the
    offending place in the schema.

    >>> import xgr2
    >>> try:
    ...     xgr2.Grammar.from_json_schema({"type": "strin"})
    ... except xgr2.SchemaError as e:
    ...     print(e.pointer)
    /type
    """

    def __init__(self, message: str, pointer: str = ""):
        super().__init__(f"{message} (at {pointer or '/'})" if pointer is not None else message)
        self.pointer = pointer


class StructuralTagError(Xgr2Error, ValueError):
    """A malformed structural tag, or one using a format not supported yet. ``path`` is
    the JSON pointer (RFC 6901) of the offending field in the spec.

    >>> import xgr2
    >>> try:
    ...     xgr2.Grammar.from_structural_tag({"type": "sequence", "elements": [{"type": "const_strin"}]})
    ... except xgr2.StructuralTagError as e:
    ...     print(e.path)
    /elements/0/type
    """

    def __init__(self, message: str, path: str = ""):
        super().__init__(f"{message} (at {path or '/'})")
        self.path = path


class TokenizerError(Xgr2Error, ValueError):
    """An inconsistent tokenizer description (sizes, ids, unknown format)."""


class InvalidTokenError(Xgr2Error, ValueError):
    """A token id outside ``[0, vocab_size)``."""


class TokenRejectedError(Xgr2Error, ValueError):
    """The grammar does not allow this token (or text) at this state.

    The state it was called on is unchanged and still valid.
    """


class ToolCallingError(Xgr2Error, ValueError):
    """Bad tool definitions or a ``tool_choice`` that names no offered tool
    (:mod:`xgr2.tool_calling`)."""

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


class TokenizerError(Xgr2Error, ValueError):
    """An inconsistent tokenizer description (sizes, ids, unknown format)."""


class InvalidTokenError(Xgr2Error, ValueError):
    """A token id outside ``[0, vocab_size)``."""


class TokenRejectedError(Xgr2Error, ValueError):
    """The grammar does not allow this token (or text) at this state.

    The state it was called on is unchanged and still valid.
    """

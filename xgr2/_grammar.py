"""Grammars: the structure that constrains generation."""

from __future__ import annotations

from . import _core


class Grammar:
    """An immutable context-free grammar over UTF-8 text.

    Build one with :meth:`from_ebnf` or :meth:`builtin_json`. ``str(grammar)`` prints a
    normalized EBNF text that parses back to the same grammar.

    >>> g = Grammar.from_ebnf('root ::= "a"+ ("b" | [c-e])')
    >>> print(g, end="")
    root ::= "a"+ ("b" | [c-e])
    """

    __slots__ = ("_ir",)

    def __init__(self, ir: _core.GrammarIR):
        self._ir = ir

    @staticmethod
    def from_ebnf(text: str, root: str = "root") -> "Grammar":
        """Parses EBNF in the XGrammar/GBNF dialect.

        Rules are ``name ::= expression``; expressions use string literals with escapes
        (``\\n \\t \\\\ \\" \\xHH \\uHHHH``), character classes (``[a-z]``, ``[^"\\\\]``),
        ``( )``, ``|``, ``* + ?``, ``{m} {m,} {m,n}``, ``#`` comments, and an optional
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

    def __reduce__(self):
        return (Grammar.from_ebnf, (str(self), self.root))

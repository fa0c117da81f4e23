"""Compiling a grammar against a tokenizer, and the states it starts."""

from __future__ import annotations

from . import _core
from ._grammar import Grammar
from ._tokenizer import TokenizerInfo

MatcherState = _core.MatcherState


class CompiledGrammar:
    """A grammar bound to a tokenizer's vocabulary. Immutable and thread-safe.

    >>> import xgr2
    >>> tok = xgr2.TokenizerInfo([b"a", b"b", b"ab", b"</s>"], stop_token_ids=[3])
    >>> compiled = xgr2.compile('root ::= "a" "b"*', tok)
    >>> compiled.initial_state().advance(0).can_terminate
    True
    """

    __slots__ = ("_core", "grammar", "tokenizer_info")

    def __init__(self, grammar: Grammar, tokenizer_info: TokenizerInfo, *, precompute: str = "none",
                 mask_cache: bool = True):
        if precompute not in ("none", "all"):
            raise ValueError(f"precompute must be 'none' or 'all', got {precompute!r}")
        self.grammar = grammar
        self.tokenizer_info = tokenizer_info
        self._core = _core.CompiledGrammarCore(
            grammar._ir, tokenizer_info._core, mask_cache=bool(mask_cache), precompute_all=precompute == "all"
        )

    @property
    def vocab_size(self) -> int:
        """Width of the logits (and of a bitmask row, in bits)."""
        return self.tokenizer_info.vocab_size

    @property
    def num_cached_node_masks(self) -> int:
        """How many parser nodes have their token classification computed so far."""
        return self._core.num_cached_node_masks

    @property
    def cache_memory_bytes(self) -> int:
        """Memory held by the token-mask cache."""
        return self._core.cache_memory_bytes

    def initial_state(self) -> MatcherState:
        """The state before any token: an immutable :class:`MatcherState`."""
        return self._core.initial_state()

    def __reduce__(self):
        raise TypeError("CompiledGrammar is not picklable yet; pickle the Grammar and TokenizerInfo and compile again")


class Compiler:
    """Compiles grammars for one tokenizer.

    >>> import xgr2
    >>> tok = xgr2.TokenizerInfo([b"a", b"b"])
    >>> Compiler(tok).compile(xgr2.Grammar.from_ebnf('root ::= "ab"')).vocab_size
    2
    """

    def __init__(self, tokenizer_info: TokenizerInfo):
        if not isinstance(tokenizer_info, TokenizerInfo):
            raise TypeError(f"expected xgr2.TokenizerInfo, got {type(tokenizer_info).__name__}")
        self.tokenizer_info = tokenizer_info

    def compile(self, grammar: Grammar | str, *, precompute: str = "none", mask_cache: bool = True) -> CompiledGrammar:
        """Compiles a :class:`Grammar` (or EBNF text with root rule ``root``).

        Args:
            grammar: the grammar.
            precompute: ``"none"`` computes each parser node's token classification the
                first time a state needs it (JIT); ``"all"`` computes them all now, for a
                flat per-token latency.
            mask_cache: ``False`` computes every mask by walking the whole vocabulary
                (slow; a reference for testing).
        """
        if isinstance(grammar, str):
            grammar = Grammar.from_ebnf(grammar)
        if not isinstance(grammar, Grammar):
            raise TypeError(f"expected xgr2.Grammar or EBNF text, got {type(grammar).__name__}")
        return CompiledGrammar(grammar, self.tokenizer_info, precompute=precompute, mask_cache=mask_cache)


def compile(  # noqa: A001
    grammar: Grammar | str, tokenizer_info: TokenizerInfo, *, precompute: str = "none", mask_cache: bool = True
) -> CompiledGrammar:
    """Compiles ``grammar`` against ``tokenizer_info``; see :meth:`Compiler.compile`."""
    return Compiler(tokenizer_info).compile(grammar, precompute=precompute, mask_cache=mask_cache)

"""Compiling a grammar against a tokenizer, the states it starts, and the compile cache."""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any, Callable, NamedTuple

from . import _core
from ._core import BackgroundJob as _BackgroundJob
from ._errors import Xgr2Error
from ._frozen import Frozen, init_slots
from ._grammar import Grammar
from ._tokenizer import TokenizerInfo

# Tests only: False makes every cold state classify its nodes at once, as before direct
# cold walks (docs/design.md, "Cold states"), so that the classification's own tests
# exercise it on every state.
_DIRECT_COLD_WALKS = True

MatcherState = _core.MatcherState

# Version of the pickled form of CompiledGrammar; bump it when that form changes.
PICKLE_FORMAT_VERSION = 1

_PRECOMPUTE_MODES = ("none", "all")
_REFRESH = 64  # Compiler: inserts between exact recounts of the cache's bytes


class PrecomputeJob(Frozen):
    """A background precompute started by :meth:`CompiledGrammar.precompute_masks`.

    Thread-safe. It does not keep its grammar alive: once the grammar is freed, the job
    stops after the node mask it is computing (if any).
    """

    __slots__ = ("_core",)
    _core: _BackgroundJob

    def __init__(self, core: _BackgroundJob):
        init_slots(self, _core=core)

    def join(self, timeout: float | None = None) -> None:
        """Waits until the job is done (or ``timeout`` seconds), like ``Thread.join``."""
        self._core.wait(timeout)

    def done(self) -> bool:
        """Whether the job has finished, was cancelled or stopped: no piece runs or will."""
        return self._core.done()

    def is_alive(self) -> bool:
        """``not done()``, like ``Thread.is_alive``."""
        return not self._core.done()

    def cancel(self) -> None:
        """Starts no further node mask; the one being computed (if any) finishes."""
        self._core.cancel()

    @property
    def progress(self) -> tuple[int, int]:
        """(node masks computed by this job, node masks it was started with)."""
        return self._core.pieces_done, self._core.num_pieces


class CompiledGrammar(Frozen):
    """A grammar bound to a tokenizer's vocabulary. Immutable and thread-safe.

    Its token-mask cache fills in as states need node masks (``precompute="none"``) or
    all at once (``precompute="all"``). Picklable: the grammar, tokenizer and options
    travel and the automata are rebuilt on load (node masks are recomputed on use).

    >>> import xgr2
    >>> tok = xgr2.TokenizerInfo([b"a", b"b", b"ab", b"</s>"], stop_token_ids=[3])
    >>> compiled = xgr2.compile('root ::= "a" "b"*', tok)
    >>> compiled.initial_state().advance(0).can_terminate
    True
    """

    __slots__ = ("_core", "_grammar", "_tokenizer_info", "_precompute", "_mask_cache")
    _core: _core.CompiledGrammarCore
    _grammar: Grammar
    _tokenizer_info: TokenizerInfo
    _precompute: str | int
    _mask_cache: bool

    def __init__(self, grammar: Grammar, tokenizer_info: TokenizerInfo, *, precompute: str | int = "none",
                 _mask_cache: bool = True):
        # _mask_cache=False: every mask walks the whole vocabulary (slow; the tests' reference).
        _check_precompute(precompute)
        core = _core.CompiledGrammarCore(
            grammar._ir, tokenizer_info._core, mask_cache=bool(_mask_cache), precompute_all=precompute == "all",
            precompute_costliest=precompute if isinstance(precompute, int) else 0,
            direct_cold_walks=_DIRECT_COLD_WALKS,
        )
        init_slots(self, _core=core, _grammar=grammar, _tokenizer_info=tokenizer_info, _precompute=precompute,
                   _mask_cache=bool(_mask_cache))

    @property
    def grammar(self) -> Grammar:
        """The grammar compiled."""
        return self._grammar

    @property
    def tokenizer_info(self) -> TokenizerInfo:
        """The vocabulary it was compiled for."""
        return self._tokenizer_info

    @property
    def precompute(self) -> str | int:
        """The ``precompute`` option it was compiled with."""
        return self._precompute

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

    @property
    def memory_bytes(self) -> int:
        """Memory held by the automata and the token-mask cache (grows with use)."""
        return self._core.memory_bytes

    def precompute_masks(self, count: int | None = None, *, num_threads: int = 0,
                         background: bool = False) -> PrecomputeJob | None:
        """Computes node masks not computed yet, on the engine's thread pool, the GIL released.

        Args:
            count: ``None`` computes all of them; a number computes that many of the
                nodes estimated costliest (those whose closure can scan the first bytes
                of the most tokens, such as the inside of a string).
            num_threads: threads of the pool (0: all cores).
            background: return at once with a :class:`PrecomputeJob`, so the caller can
                prefill the model meanwhile. The job runs one node mask at a time on the
                pool's workers whenever no foreground call (a batch fill, another
                grammar's work) needs them, so it does not delay other requests; it
                stops when cancelled or when this grammar is freed. States stay usable
                during it (a node mask needed early is computed on demand).
        """
        if count is not None and (isinstance(count, bool) or not isinstance(count, int) or count < 0):
            raise ValueError(f"count must be None or a non-negative int, got {count!r}")
        if background:
            return PrecomputeJob(self._core.precompute_in_background(-1 if count is None else count, num_threads))
        if count is None:
            self._core.precompute_all(num_threads)
        else:
            self._core.precompute_costliest(count, num_threads)
        return None

    def initial_state(self) -> MatcherState:
        """The state before any token: an immutable :class:`MatcherState`."""
        return self._core.initial_state()

    def __reduce__(self) -> tuple[Callable[..., CompiledGrammar], tuple[Any, ...]]:
        args = (PICKLE_FORMAT_VERSION, str(self.grammar), self.grammar.root, self.tokenizer_info,
                self.precompute, self._mask_cache)
        return (_restore_compiled_grammar, args)

    def __repr__(self) -> str:
        return f"CompiledGrammar(root={self.grammar.root!r}, vocab_size={self.vocab_size})"


def _restore_compiled_grammar(version: int, text: str, root: str, tokenizer_info: TokenizerInfo,
                              precompute: str | int, mask_cache: bool) -> CompiledGrammar:
    if version != PICKLE_FORMAT_VERSION:
        raise Xgr2Error(
            f"this CompiledGrammar was pickled in format version {version}, but this xgr2 reads version "
            f"{PICKLE_FORMAT_VERSION}: compile the grammar again"
        )
    grammar = Grammar.from_ebnf(text, root=root)
    return CompiledGrammar(grammar, tokenizer_info, precompute=precompute, _mask_cache=mask_cache)


def _compile_full_walk(grammar: Grammar | str, tokenizer_info: TokenizerInfo) -> CompiledGrammar:
    """Tests only: a compiled grammar whose masks walk the whole vocabulary at every state,
    without the token-mask cache (the reference that the cached masks are compared with)."""
    if isinstance(grammar, str):
        grammar = Grammar.from_ebnf(grammar)
    return CompiledGrammar(grammar, tokenizer_info, _mask_cache=False)


class CacheInfo(NamedTuple):
    """Statistics of a :class:`Compiler`'s cache."""

    hits: int
    misses: int
    entries: int
    bytes: int
    limit_bytes: int


class _LruCache:
    """A :class:`Compiler`'s mutable part: its entries and statistics, under ``lock``."""

    def __init__(self) -> None:
        self.entries: OrderedDict[tuple[Any, str, str | int, bool], CompiledGrammar] = OrderedDict()
        self.lock = threading.Lock()
        self.hits = 0
        self.misses = 0
        # Bytes of the cached entries as of their insertion (masks computed later grow
        # them): a running total, refreshed from the entries every _REFRESH inserts, so a
        # compile costs O(1) here rather than a sum over the whole cache.
        self.bytes = 0
        self.inserts = 0


class Compiler(Frozen):
    """Compiles grammars for one tokenizer, keeping recent results in an LRU cache.

    The cache is keyed by the grammar's normalized text, root and options (a grammar
    from a JSON Schema or a regex by the schema or pattern and the options that built
    it: printing a large grammar costs milliseconds), holds at
    most ``cache_limit_bytes`` (measured with :attr:`CompiledGrammar.memory_bytes`,
    which grows as node masks are computed; the limit is enforced at each compile),
    and is safe to use from several threads. ``cache_limit_bytes=0`` disables it.

    >>> import xgr2
    >>> compiler = Compiler(xgr2.TokenizerInfo([b"a", b"b"]))
    >>> compiler.compile('root ::= "ab"') is compiler.compile('root ::=  "a" "b"'.replace('" "', ''))
    True
    >>> compiler.cache_info().hits
    1
    """

    __slots__ = ("_tokenizer_info", "_cache_limit_bytes", "_lru")
    _tokenizer_info: TokenizerInfo
    _cache_limit_bytes: int
    _lru: _LruCache

    def __init__(self, tokenizer_info: TokenizerInfo, *, cache_limit_bytes: int = 512 << 20):
        if not isinstance(tokenizer_info, TokenizerInfo):
            raise TypeError(f"expected xgr2.TokenizerInfo, got {type(tokenizer_info).__name__}")
        if cache_limit_bytes < 0:
            raise ValueError(f"cache_limit_bytes must be >= 0, got {cache_limit_bytes}")
        init_slots(self, _tokenizer_info=tokenizer_info, _cache_limit_bytes=int(cache_limit_bytes), _lru=_LruCache())

    @property
    def tokenizer_info(self) -> TokenizerInfo:
        """The vocabulary this compiler compiles for."""
        return self._tokenizer_info

    @property
    def cache_limit_bytes(self) -> int:
        """The cache's byte limit (0: no cache)."""
        return self._cache_limit_bytes

    def compile(self, grammar: Grammar | str, *, precompute: str | int = "none") -> CompiledGrammar:
        """Compiles a :class:`Grammar` (or EBNF text with root rule ``root``).

        Args:
            grammar: the grammar.
            precompute: ``"none"`` computes each parser node's token classification the
                first time a state needs it (JIT), except that a state scanning few first
                bytes (a value after ``"key":``, a number, a name) whose classification is
                not cached yet gets its mask by a direct walk of the vocabulary, and its
                nodes are classified at their 8th such visit: no first-visit stall there;
                ``"all"`` computes them all now, for a flat per-token latency; a number
                computes that many of the costliest ones now and the rest on first use
                (see :meth:`CompiledGrammar.precompute_masks`).
        """
        if isinstance(grammar, str):
            grammar = Grammar.from_ebnf(grammar)
        if not isinstance(grammar, Grammar):
            raise TypeError(f"expected xgr2.Grammar or EBNF text, got {type(grammar).__name__}")
        _check_precompute(precompute)
        lru = self._lru
        if self.cache_limit_bytes == 0:  # no cache: skip the key (printing the grammar)
            with lru.lock:
                lru.misses += 1
            return CompiledGrammar(grammar, self.tokenizer_info, precompute=precompute)
        key = (grammar._source or ("text", str(grammar)), grammar.root, precompute, _DIRECT_COLD_WALKS)
        with lru.lock:
            cached = lru.entries.get(key)
            if cached is not None:
                lru.entries.move_to_end(key)
                lru.hits += 1
                return cached
            lru.misses += 1
        compiled = CompiledGrammar(grammar, self.tokenizer_info, precompute=precompute)
        with lru.lock:
            cached = lru.entries.get(key)  # another thread may have compiled it meanwhile
            if cached is not None:
                return cached
            size = compiled.memory_bytes
            if size <= self.cache_limit_bytes:
                lru.entries[key] = compiled
                lru.bytes += size
                lru.inserts += 1
                if lru.inserts % _REFRESH == 0:
                    lru.bytes = sum(c.memory_bytes for c in lru.entries.values())
                self._evict()
        return compiled

    def _evict(self) -> None:
        lru = self._lru
        while lru.bytes > self.cache_limit_bytes and lru.entries:
            _, oldest = lru.entries.popitem(last=False)
            lru.bytes = max(0, lru.bytes - oldest.memory_bytes)

    def cache_info(self) -> CacheInfo:
        """Hits, misses, entries and bytes of the compile cache.

        Cached grammars grow as their node masks are computed; the byte limit is enforced
        on a running total at each compile, recounted exactly every 64 inserts and here.
        """
        lru = self._lru
        with lru.lock:
            lru.bytes = sum(c.memory_bytes for c in lru.entries.values())  # exact, then enforced
            self._evict()
            return CacheInfo(lru.hits, lru.misses, len(lru.entries), lru.bytes, self.cache_limit_bytes)

    def clear_cache(self) -> None:
        """Drops every cached compiled grammar (statistics are kept)."""
        lru = self._lru
        with lru.lock:
            lru.entries.clear()
            lru.bytes = 0


def _check_precompute(precompute: object) -> None:
    if isinstance(precompute, bool) or not (precompute in _PRECOMPUTE_MODES or
                                            (isinstance(precompute, int) and precompute >= 0)):
        raise ValueError(f"precompute must be one of {_PRECOMPUTE_MODES} or a count >= 0, got {precompute!r}")


def compile(  # noqa: A001
    grammar: Grammar | str, tokenizer_info: TokenizerInfo, *, precompute: str | int = "none"
) -> CompiledGrammar:
    """Compiles ``grammar`` against ``tokenizer_info`` (no cache); see :meth:`Compiler.compile`."""
    return Compiler(tokenizer_info, cache_limit_bytes=0).compile(grammar, precompute=precompute)

"""xgr2: structured generation for JAX.

Compile a grammar against a tokenizer, walk immutable matcher states along the
generated tokens, and turn their packed bitmasks into masked logits and samples
with :mod:`xgr2.jax`.

>>> import xgr2
>>> tok = xgr2.TokenizerInfo([b"{", b"}", b"{}", b"x", b"<eos>"], stop_token_ids=[4])
>>> state = xgr2.compile('root ::= "{" "}"', tok).initial_state()
>>> [t for t in range(5) if state.accepts(t)]
[0, 2]
"""

try:
    from . import _core
except ImportError as _error:  # a source tree without its compiled engine
    import os as _os

    raise ImportError(
        f"xgr2's compiled engine (xgr2/_core) is missing beside {_os.path.dirname(__file__)}: this looks like "
        "the source tree, which shadows the installed package when Python starts in the repository root. "
        "Run from another directory (or use the `xgr2-demo` command), or build the engine in place "
        "(see docs/development.md)."
    ) from _error
from ._batch import batch_advance, batch_fill_bitmask
from ._bitmask import allocate_token_bitmask, bitmask_to_bool, get_bitmask_shape
from ._compiler import CacheInfo, CompiledGrammar, Compiler, MatcherState, PrecomputeJob, compile
from ._errors import (
    GrammarError,
    InvalidTokenError,
    RegexError,
    SchemaError,
    StructuralTagError,
    TokenizerError,
    TokenRejectedError,
    ToolCallingError,
    Xgr2Error,
)
from ._grammar import Grammar, SchemaWarning, clear_shared_automata
from ._tokenizer import CrossGrammarCacheInfo, TokenizerInfo
from ._tree_masks import TreeMasks, tree_masks
from . import tool_calling

_core._set_error_types(GrammarError, TokenizerError, InvalidTokenError, TokenRejectedError, RegexError, SchemaError,
                       StructuralTagError)

__version__ = "0.1.0"

__all__ = [
    "CacheInfo",
    "CompiledGrammar",
    "CrossGrammarCacheInfo",
    "Compiler",
    "Grammar",
    "GrammarError",
    "InvalidTokenError",
    "MatcherState",
    "PrecomputeJob",
    "RegexError",
    "SchemaError",
    "SchemaWarning",
    "StructuralTagError",
    "TokenRejectedError",
    "TokenizerError",
    "TokenizerInfo",
    "ToolCallingError",
    "TreeMasks",
    "Xgr2Error",
    "allocate_token_bitmask",
    "batch_advance",
    "batch_fill_bitmask",
    "bitmask_to_bool",
    "clear_shared_automata",
    "compile",
    "get_bitmask_shape",
    "tool_calling",
    "tree_masks",
]

"""Batch calls for serving engines: many states, one call, on a C++ thread pool."""

from __future__ import annotations

from typing import Sequence

import numpy as np

from . import _core
from ._compiler import MatcherState


def _state_list(states: Sequence[MatcherState]) -> list[MatcherState]:
    states = list(states)
    for i, s in enumerate(states):
        if not isinstance(s, MatcherState):
            raise TypeError(f"states[{i}] is {type(s).__name__}, not an xgr2.MatcherState")
    return states


def batch_fill_bitmask(
    states: Sequence[MatcherState],
    out: np.ndarray,
    rows: Sequence[int] | None = None,
    *,
    num_threads: int = 0,
) -> None:
    """Fills ``out[rows[i]]`` with the bitmask of ``states[i]`` for every i, in parallel.

    The GIL is released while the rows are filled, on up to ``num_threads`` threads
    (0: every hardware thread).

    Args:
        states: matcher states sharing one vocabulary size.
        out: a writable C-contiguous int32 array ``[B, ceil(vocab_size / 32)]``.
        rows: the row of each state (default ``0 .. len(states) - 1``).
        num_threads: upper bound on the threads used.

    >>> import xgr2
    >>> tok = xgr2.TokenizerInfo([b"a", b"b"])
    >>> s = xgr2.compile('root ::= "a" "b"', tok).initial_state()
    >>> out = xgr2.allocate_token_bitmask(2, 2)
    >>> batch_fill_bitmask([s, s.advance(0)], out)
    >>> out[:, 0].tolist()
    [1, 2]
    """
    states = _state_list(states)
    rows = list(range(len(states))) if rows is None else [int(r) for r in rows]
    _core.batch_fill_bitmask(states, out, rows, int(num_threads))


def batch_advance(
    states: Sequence[MatcherState], tokens: Sequence[int] | np.ndarray, *, num_threads: int = 0
) -> list[MatcherState | None]:
    """Advances ``states[i]`` by ``tokens[i]`` for every i, in parallel.

    Returns:
        The new states; ``None`` where the grammar rejects the token (that row's old
        state is still valid). Token ids outside the vocabulary raise
        :class:`xgr2.InvalidTokenError`.

    >>> import xgr2
    >>> tok = xgr2.TokenizerInfo([b"a", b"b"])
    >>> s = xgr2.compile('root ::= "a" "b"', tok).initial_state()
    >>> [x is not None for x in batch_advance([s, s], [0, 1])]
    [True, False]
    """
    states = _state_list(states)
    tokens = [int(t) for t in (tokens if isinstance(tokens, list) else np.asarray(tokens).reshape(-1))]
    return _core.batch_advance(states, tokens, int(num_threads))

"""Grammar masks for whole draft trees (speculative decoding), in one C++ call."""

from __future__ import annotations

from typing import Any, NamedTuple, Sequence

import numpy as np

from . import _core
from ._compiler import MatcherState
from ._errors import InvalidTokenError


class TreeMasks(NamedTuple):
    """What :func:`tree_masks` computed for a batch of draft trees (host numpy arrays).

    Attributes:
      bitmask: int32 ``[B, N, W]``: row ``i`` holds the tokens the grammar allows after the
        path root -> ``i``; all zero for nodes without a state (inadmissible, padding,
        below an inadmissible node, not visited within ``max_nodes``) and for terminated
        states. Never "allow all". This is the ``tree_bitmask`` of
        :func:`xgr2.jax.verify_tree`.
      admissible: bool ``[B, N]``: node ``i`` was visited and its token is legal after its
        parent's path (the root counts as admissible when its row has a state).
      states: per row, per node, the :class:`MatcherState` after the path root -> ``i``
        (``None`` where ``admissible`` is false): commit an accepted path by picking
        ``states[b][last_node]``, never by advancing again.
      visited: bool ``[B, N]``: the node's token was tried (it is valid, its parent has a
        state, and it came within ``max_nodes``). When a row may be truncated, verify
        ``tree._replace(valid=tree.valid & visited)`` so that a node left out by the budget,
        whose token the parent's mask may allow, is never accepted without a state.
      truncated: bool ``[B]``: the row had more reachable nodes than ``max_nodes``.
    """

    bitmask: np.ndarray
    admissible: np.ndarray
    states: list[list[MatcherState | None]]
    visited: np.ndarray
    truncated: np.ndarray


def _tree_array(value: Any, name: str, kind: str) -> np.ndarray:
    array = np.asarray(value)
    if kind == "int" and not np.issubdtype(array.dtype, np.integer):
        raise TypeError(f"{name} must be an integer array, got dtype {array.dtype}")
    if kind == "bool" and array.dtype != np.bool_:
        raise TypeError(f"{name} must be a bool array, got dtype {array.dtype}")
    if array.ndim != 2:
        raise ValueError(f"{name} must be 2-D [B, N], got shape {array.shape}")
    return array


def _unpack_tree(tree: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    if hasattr(tree, "parents") and hasattr(tree, "tokens") and hasattr(tree, "valid"):
        parts = (tree.parents, tree.tokens, tree.valid)
    elif isinstance(tree, (tuple, list)) and len(tree) == 3:
        parts = tuple(tree)
    else:
        raise TypeError(
            f"tree must be an xgr2.jax.DraftTree or a (parents, tokens, valid) tuple, got {type(tree).__name__}"
        )
    parents = _tree_array(parts[0], "tree.parents", "int")
    tokens = _tree_array(parts[1], "tree.tokens", "int")
    valid = _tree_array(parts[2], "tree.valid", "bool")
    for name, array in (("tree.tokens", tokens), ("tree.valid", valid)):
        if array.shape != parents.shape:
            raise ValueError(f"{name} must have the shape of tree.parents {parents.shape}, got {array.shape}")
    return parents, tokens, valid


def tree_masks(
    states: Sequence[MatcherState | None],
    tree: Any,
    *,
    max_nodes: int | None = None,
    out: np.ndarray | None = None,
    num_threads: int = 0,
) -> TreeMasks:
    """The grammar mask of every node of a batch of draft trees, in one call.

    Node 0 of each row is the root: the state ``states[b]`` itself (its token is not
    advanced; row 0 is that state's own mask). Node ``i > 0`` stands for the path root ->
    ``i``: its state is its parent's state advanced by ``tokens[b, i]``. Nodes are visited
    in node order (parents precede children), on a C++ thread pool with the GIL released:
    first the states of each row, then the masks of all nodes in parallel. A row whose
    state is ``None`` is padding (all zero).

    Args:
      states: one :class:`MatcherState` (or ``None``) per row, sharing a vocabulary size.
      tree: an :class:`xgr2.jax.DraftTree` or a ``(parents, tokens, valid)`` tuple of numpy
        or JAX arrays ``[B, N]``: integer ``parents`` (``parents[b, i] < i``, ``-1`` for the
        root and for padding), integer ``tokens`` (ids in ``[0, vocab_size)`` for valid
        nodes below the root; others are ignored), bool ``valid``.
      max_nodes: at most this many nodes per row are visited (root included), in node
        order; the rest get no state and a zero row, and the row is marked ``truncated``.
        A deterministic bound on the work (``None``: no bound).
      out: optional int32 C-contiguous ``[B, N, ceil(vocab_size / 32)]`` array to write
        the bitmask into (reused across calls); a new one otherwise.
      num_threads: upper bound on the threads used (0: every hardware thread).

    Returns:
      A :class:`TreeMasks`.

    Raises:
      TypeError: wrong types or dtypes. ValueError: wrong shapes, a parent that does not
      precede its node. InvalidTokenError: a valid node's token outside the vocabulary.

    Example:
      >>> import numpy as np, xgr2
      >>> tok = xgr2.TokenizerInfo([b"a", b"b", b"<eos>"], stop_token_ids=[2])
      >>> s = xgr2.compile('root ::= "a" "b"', tok).initial_state()
      >>> # root, then "a" and "b" below it, then "b" below "a": parents, tokens, valid
      >>> tree = (np.array([[-1, 0, 0, 1]]), np.array([[0, 0, 1, 1]]), np.ones((1, 4), bool))
      >>> m = xgr2.tree_masks([s], tree)
      >>> m.bitmask[0, :, 0].tolist(), m.admissible.tolist()   # bits: a = 1, b = 2, <eos> = 4
      ([1, 2, 0, 4], [[True, True, False, True]])
      >>> m.states[0][3].can_terminate
      True
    """
    states = list(states)
    for i, s in enumerate(states):
        if s is not None and not isinstance(s, MatcherState):
            raise TypeError(f"states[{i}] is {type(s).__name__}, not an xgr2.MatcherState or None")
    parents, tokens, valid = _unpack_tree(tree)
    batch, n = parents.shape
    if len(states) != batch:
        raise ValueError(f"got {len(states)} states for a tree batch of {batch} rows")
    vocabs = {s.vocab_size for s in states if s is not None}
    if len(vocabs) > 1:
        raise ValueError(f"all states must share one vocabulary size, got {sorted(vocabs)}")
    if max_nodes is not None and (not isinstance(max_nodes, (int, np.integer)) or max_nodes < 1):
        raise ValueError(f"max_nodes must be a positive int or None, got {max_nodes!r}")

    if vocabs:
        vocab = vocabs.pop()
        words = (vocab + 31) // 32
        # Checked here on the original dtype: a cast to int32 could wrap a bad id into range.
        live = valid.copy()
        live[:, 0] = False
        live &= parents >= 0
        bad = live & ((tokens < 0) | (tokens >= vocab))
        if bad.any():
            b, i = map(int, np.argwhere(bad)[0])
            raise InvalidTokenError(
                f"tree.tokens[{b}, {i}] = {int(tokens[b, i])} is outside the vocabulary [0, {vocab})"
            )
        order = np.arange(n)
        bad = valid & ((parents < -1) | (parents >= order))
        bad[:, 0] = False
        if bad.any():
            b, i = map(int, np.argwhere(bad)[0])
            raise ValueError(
                f"tree.parents[{b}, {i}] = {int(parents[b, i])}: a parent must precede its node (-1 for none)"
            )
    elif out is not None:
        words = np.shape(out)[-1]
    else:
        raise ValueError("every state is None: pass out= so that the bitmask width is known")

    if out is None:
        out = np.empty((batch, n, words), np.int32)
    elif not isinstance(out, np.ndarray) or out.dtype != np.int32:
        raise TypeError("out must be a numpy int32 array")
    elif out.shape != (batch, n, words) or not out.flags.c_contiguous or not out.flags.writeable:
        raise ValueError(f"out must be a writable C-contiguous int32 array {(batch, n, words)}, got {out.shape}")
    admissible, visited = np.empty((batch, n), np.bool_), np.empty((batch, n), np.bool_)

    def as_int32(a: np.ndarray) -> np.ndarray:
        return np.ascontiguousarray(np.where(valid, a, -1), np.int32)

    node_states, truncated = _core.tree_masks(
        states, as_int32(parents), as_int32(tokens), np.ascontiguousarray(valid), out, admissible, visited,
        -1 if max_nodes is None else int(max_nodes), int(num_threads),
    )
    return TreeMasks(out, admissible, node_states, visited, np.asarray(truncated, np.bool_))

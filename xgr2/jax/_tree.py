"""Draft token trees for speculative decoding: a pytree and converters from common layouts.

Node 0 is the root (the last committed token); nodes are topologically ordered
(``parents[i] < i``); children of a node are tried in increasing node order.
"""

from __future__ import annotations

from typing import NamedTuple, Sequence

import jax
import jax.numpy as jnp
import numpy as np
import numpy.typing as npt

__all__ = ["DraftTree", "ancestor_mask", "tree_depth"]


class DraftTree(NamedTuple):
    """A batch of draft trees (a pytree: passes through ``jit``, ``vmap`` and sharding).

    Attributes:
      parents: int32 ``[B, N]``, ``parents[b, i] < i`` for ``i > 0``; ``-1`` for the root
        (node 0) and for padding nodes.
      tokens: int32 ``[B, N]``: the drafted token of each node (the root's is unused).
      valid: bool ``[B, N]``: real nodes (padding nodes and their subtrees are ignored).

    Example:
      >>> from xgr2.jax import DraftTree
      >>> tree = DraftTree.from_paths([(0,), (1,), (0, 0)], tokens=[[0, 11, 12, 13]])
      >>> tree.parents.tolist(), tree.to_paths(0)
      ([[-1, 0, 0, 1]], [(0,), (1,), (0, 0)])
    """

    parents: jax.Array
    tokens: jax.Array
    valid: jax.Array

    # ------------------------------------------------------------------ converters (host)

    @staticmethod
    def from_parents(
        parents: npt.ArrayLike, tokens: npt.ArrayLike | None = None, valid: npt.ArrayLike | None = None
    ) -> "DraftTree":
        """From EAGLE-style parent lists: ``parents [B, N]`` (or ``[N]``), ``-1`` for the root.

        Args:
          parents: int ``[B, N]`` or ``[N]``; ``parents[i] < i`` for real nodes ``i > 0``; a
            node ``i > 0`` with parent ``-1`` is padding.
          tokens: int ``[B, N]`` or ``[N]`` (zeros if omitted).
          valid: optional bool ``[B, N]``; nodes whose parent is invalid are invalid too.

        Raises:
          ValueError: if a parent does not precede its child.
        """
        par = np.atleast_2d(np.asarray(parents, np.int64))
        batch, n = par.shape
        tok = np.zeros((batch, n), np.int32) if tokens is None else np.asarray(tokens)
        tok = np.broadcast_to(np.atleast_2d(tok), (batch, n))
        order = np.arange(n)
        if (par >= order).any():
            raise ValueError("draft tree nodes must be topologically ordered (parents[i] < i)")
        ok = np.ones((batch, n), bool) if valid is None else np.broadcast_to(np.asarray(valid, bool), (batch, n)).copy()
        ok[:, 1:] &= par[:, 1:] >= 0
        for i in range(1, n):
            p = np.maximum(par[:, i], 0)
            ok[:, i] &= ok[np.arange(batch), p]
        return DraftTree(
            jnp.asarray(np.where(order == 0, -1, par), jnp.int32),
            jnp.asarray(tok, jnp.int32),
            jnp.asarray(ok),
        )

    @staticmethod
    def from_paths(paths: Sequence[Sequence[int]], tokens: npt.ArrayLike | None = None) -> "DraftTree":
        """From Medusa / vLLM tree choices: each path lists child ranks from the root.

        Nodes are numbered root first, then the paths sorted by (length, path); the parent of
        ``path`` is ``path[:-1]``, which must be in the list too. The tree shape is shared by
        the batch; ``tokens [B, N]`` (or ``[N]``) gives the tokens in that node order.
        """
        ordered = sorted({tuple(p) for p in paths}, key=lambda p: (len(p), p))
        index: dict[tuple[int, ...], int] = {(): 0}
        for i, path in enumerate(ordered, 1):
            index[path] = i
        parents = [-1]
        for path in ordered:
            if path[:-1] not in index:
                raise ValueError(f"path {path} has no parent path {path[:-1]}")
            parents.append(index[path[:-1]])
        return DraftTree.from_parents(np.asarray(parents), tokens)

    @staticmethod
    def from_next_token_sibling(
        next_token: npt.ArrayLike, next_sibling: npt.ArrayLike, tokens: npt.ArrayLike | None = None
    ) -> "DraftTree":
        """From SGLang / XGrammar ``retrive_next_token`` / ``retrive_next_sibling`` arrays.

        ``next_token[b, i]`` is the first child of ``i`` and ``next_sibling[b, i]`` its next
        sibling, ``-1`` for none; nodes not reached from the root are invalid.
        """
        first = np.atleast_2d(np.asarray(next_token))
        sibling = np.atleast_2d(np.asarray(next_sibling))
        batch, n = first.shape
        parents = np.full((batch, n), -1, np.int64)
        reached = np.zeros((batch, n), bool)
        for b in range(batch):
            reached[b, 0] = True
            stack = [0]
            while stack:
                node = stack.pop()
                child = first[b, node]
                while child >= 0:
                    if reached[b, child]:
                        raise ValueError(f"node {child} is reached twice in row {b}")
                    reached[b, child] = True
                    parents[b, child] = node
                    stack.append(child)
                    child = sibling[b, child]
        return DraftTree.from_parents(parents, tokens, reached)

    def to_next_token_sibling(self) -> tuple[np.ndarray, np.ndarray]:
        """``(next_token, next_sibling)`` int32 ``[B, N]`` (children in node order)."""
        parents, valid = np.asarray(self.parents), np.asarray(self.valid)
        batch, n = parents.shape
        first = np.full((batch, n), -1, np.int32)
        sibling = np.full((batch, n), -1, np.int32)
        for b in range(batch):
            last: dict[int, int] = {}
            for i in range(1, n):
                if not valid[b, i]:
                    continue
                p = parents[b, i]
                if p in last:
                    sibling[b, last[p]] = i
                else:
                    first[b, p] = i
                last[p] = i
        return first, sibling

    def to_paths(self, row: int = 0) -> list[tuple[int, ...]]:
        """The Medusa-style paths of row ``row`` (in node order)."""
        parents, valid = np.asarray(self.parents)[row], np.asarray(self.valid)[row]
        paths: dict[int, tuple[int, ...]] = {0: ()}
        rank: dict[int, int] = {}
        out: list[tuple[int, ...]] = []
        for i in range(1, len(parents)):
            if not valid[i]:
                continue
            p = int(parents[i])
            rank[p] = rank.get(p, -1) + 1
            paths[i] = paths[p] + (rank[p],)
            out.append(paths[i])
        return out


@jax.jit
def tree_depth(tree: DraftTree) -> jax.Array:
    """int32 ``[B, N]``: 0 for the root, ``depth(parent) + 1`` otherwise (jit-friendly).

    Example:
      >>> from xgr2.jax import DraftTree, tree_depth
      >>> tree_depth(DraftTree.from_parents([-1, 0, 0, 1])).tolist()
      [[0, 1, 1, 2]]
    """
    parents = jnp.asarray(tree.parents)
    n = parents.shape[1]

    def body(i: jax.Array, depth: jax.Array) -> jax.Array:
        d = jnp.take_along_axis(depth, jnp.maximum(parents[:, i], 0)[:, None], axis=1)[:, 0] + 1
        return depth.at[:, i].set(jnp.where(parents[:, i] >= 0, d, 0))

    depth: jax.Array = jax.lax.fori_loop(1, n, body, jnp.zeros(parents.shape, jnp.int32))
    return depth


@jax.jit
def ancestor_mask(tree: DraftTree) -> jax.Array:
    """bool ``[B, N, N]`` tree-attention mask: ``[b, i, j]`` iff ``j`` is ``i`` or an ancestor.

    Example:
      >>> from xgr2.jax import DraftTree, ancestor_mask
      >>> ancestor_mask(DraftTree.from_parents([-1, 0, 1]))[0].astype(int).tolist()
      [[1, 0, 0], [1, 1, 0], [1, 1, 1]]
    """
    parents = jnp.asarray(tree.parents)
    batch, n = parents.shape
    eye = jnp.broadcast_to(jnp.eye(n, dtype=jnp.bool_), (batch, n, n))

    def body(i: jax.Array, mask: jax.Array) -> jax.Array:
        p = jnp.maximum(parents[:, i], 0)
        inherited = jnp.take_along_axis(mask, p[:, None, None], axis=1)[:, 0]
        row = eye[:, i] | (inherited & (parents[:, i] >= 0)[:, None])
        return mask.at[:, i].set(row)

    mask: jax.Array = jax.lax.fori_loop(1, n, body, eye)
    return mask

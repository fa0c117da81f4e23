"""Model-free draft trees for speculative decoding: grammar-forced text and prompt lookup.

Two sources need no draft model. The grammar: where a state admits only one
continuation, :meth:`xgr2.MatcherState.jump_forward_text` spells it out (property names,
enum values, punctuation), and its tokenization is a likely draft. Prompt lookup: the last
few tokens often occurred before, in the prompt or in the text so far (keys named in the
request, a repeated ``", "``), and what followed them then is a likely continuation.
:class:`TreeDrafter` merges both into one fixed-size :class:`DraftTree` per step (a trie,
so shared prefixes cost one node); the model scores every node in one pass, and
:func:`xgr2.jax.verify_tree` keeps the longest path it agrees with.
"""

from __future__ import annotations

from typing import Callable, Sequence

import jax.numpy as jnp
import numpy as np

import xgr2
from xgr2.jax._tree import DraftTree

__all__ = ["TreeDrafter", "build_draft_tree", "prompt_lookup"]


def prompt_lookup(
    context: Sequence[int],
    *,
    max_ngram: int = 3,
    min_ngram: int = 1,
    max_branches: int = 3,
    length: int = 8,
) -> list[list[int]]:
    """Continuations of the context's last tokens, taken from where those tokens occurred before.

    For ``n`` from ``max_ngram`` down to ``min_ngram``: every earlier occurrence of the
    last ``n`` tokens, most recent first, proposes the (up to) ``length`` tokens that
    followed it. Longer matches come first; a continuation equal to or a prefix of one
    already proposed is skipped.

    Args:
      context: token ids (e.g. prompt + generated so far, the last committed token last).
      max_ngram, min_ngram: the n-gram sizes tried (``1 <= min_ngram <= max_ngram``).
      max_branches: at most this many continuations.
      length: at most this many tokens per continuation.

    Returns:
      The continuations, best first (possibly none).

    Example:
      >>> prompt_lookup([5, 6, 7, 8, 1, 5, 6], length=2)
      [[7, 8]]
      >>> prompt_lookup([1, 2, 9, 1, 3, 1], max_ngram=1, length=1)
      [[3], [2]]
    """
    if not 1 <= min_ngram <= max_ngram:
        raise ValueError(f"need 1 <= min_ngram <= max_ngram, got {min_ngram}, {max_ngram}")
    c = np.asarray(context, np.int64).reshape(-1)
    out: list[list[int]] = []
    for n in range(max_ngram, min_ngram - 1, -1):
        if len(c) <= n:
            continue
        # Window i is c[i:i+n], i + n <= len - 1: a match always has a next token.
        windows = np.lib.stride_tricks.sliding_window_view(c[:-1], n)
        for i in np.flatnonzero((windows == c[-n:]).all(axis=1))[::-1]:
            cont = c[i + n: i + n + length].tolist()
            if any(prev[: len(cont)] == cont for prev in out):
                continue
            out.append(cont)
            if len(out) >= max_branches:
                return out
    return out


def build_draft_tree(roots: Sequence[int], paths: Sequence[Sequence[Sequence[int]]], num_nodes: int) -> DraftTree:
    """A fixed-size batch of draft tries: row ``b`` holds ``roots[b]`` and the paths ``paths[b]``.

    Paths are inserted in order below the root, sharing common prefixes; nodes are
    numbered as they are created (so parents precede children and earlier paths' children
    come first, which is the order :func:`xgr2.jax.verify_tree` tries them). A path stops
    where the row runs out of nodes. Unused nodes are padding (``valid`` false, parent -1).

    Args:
      roots: the root token of each row (the last committed token, which the model
        consumes at node 0).
      paths: per row, the drafted token sequences, best first.
      num_nodes: ``N``, the nodes per row (root included); fixed so that a jitted
        consumer compiles once.

    Returns:
      A :class:`DraftTree` of ``[B, N]`` arrays.

    Example:
      >>> t = build_draft_tree([9], [[[1, 2], [1, 3], [4]]], num_nodes=6)
      >>> t.parents.tolist(), t.tokens.tolist(), t.valid.tolist()
      ([[-1, 0, 1, 1, 0, -1]], [[9, 1, 2, 3, 4, 0]], [[True, True, True, True, True, False]])
    """
    if num_nodes < 1:
        raise ValueError(f"num_nodes must be positive, got {num_nodes}")
    if len(paths) != len(roots):
        raise ValueError(f"got {len(paths)} path lists for {len(roots)} roots")
    batch = len(roots)
    parents = np.full((batch, num_nodes), -1, np.int32)
    tokens = np.zeros((batch, num_nodes), np.int32)
    valid = np.zeros((batch, num_nodes), np.bool_)
    for b in range(batch):
        tokens[b, 0], valid[b, 0] = roots[b], True
        children: dict[tuple[int, int], int] = {}
        used = 1
        for path in paths[b]:
            node = 0
            for token in path:
                child = children.get((node, int(token)))
                if child is None:
                    if used == num_nodes:
                        break
                    child = children[(node, int(token))] = used
                    parents[b, used], tokens[b, used], valid[b, used] = node, token, True
                    used += 1
                node = child
    return DraftTree(jnp.asarray(parents), jnp.asarray(tokens), jnp.asarray(valid))


class TreeDrafter:
    """Drafts one token tree per row from the grammar's forced text and from prompt lookup.

    Per row, the paths are (best first): the tokenization of the state's
    :meth:`~xgr2.MatcherState.jump_forward_text` (when not empty) followed by the best
    prompt-lookup continuation of the context extended by it, then the prompt-lookup
    continuations of the context itself (:func:`prompt_lookup`). They are merged into a
    trie of ``num_nodes`` nodes (:func:`build_draft_tree`). The tokenizer's canonical
    spelling of the forced text may differ from the model's (its last token may merge
    with what follows); verification simply rejects what the model would not emit.

    Args:
      encode: text -> token ids, without special tokens (e.g.
        ``lambda s: tok.encode(s, add_special_tokens=False).ids`` for a ``tokenizers``
        tokenizer).
      num_nodes: nodes per tree, root included.
      max_ngram, min_ngram, max_branches, lookup_length: see :func:`prompt_lookup`.

    Example:
      >>> import xgr2
      >>> vocab = [b"{", b"}", b'"', b"a", b"b", b":", b"<eos>"]
      >>> tok = xgr2.TokenizerInfo(vocab, stop_token_ids=[6])
      >>> state = xgr2.compile('root ::= "{" [ab]* ":" "ab}"', tok).initial_state().advance(0)
      >>> state = state.advance(3).advance(5)           # "{a:" -- the rest, "ab}", is forced
      >>> encode = lambda s: [vocab.index(c.encode()) for c in s]
      >>> drafter = TreeDrafter(encode, num_nodes=6)
      >>> tree = drafter.draft([state], [[0, 3, 5]], roots=[5])
      >>> tree.tokens.tolist(), tree.parents.tolist()
      ([[5, 3, 4, 1, 0, 0]], [[-1, 0, 1, 2, -1, -1]])
    """

    def __init__(
        self,
        encode: Callable[[str], Sequence[int]],
        *,
        num_nodes: int = 16,
        max_ngram: int = 3,
        min_ngram: int = 1,
        max_branches: int = 3,
        lookup_length: int = 8,
    ) -> None:
        if num_nodes < 1:
            raise ValueError(f"num_nodes must be positive, got {num_nodes}")
        if not 1 <= min_ngram <= max_ngram:
            raise ValueError(f"need 1 <= min_ngram <= max_ngram, got {min_ngram}, {max_ngram}")
        self.encode = encode
        self.num_nodes = num_nodes
        self.max_ngram, self.min_ngram = max_ngram, min_ngram
        self.max_branches, self.lookup_length = max_branches, lookup_length

    def _lookup(self, context: Sequence[int], branches: int) -> list[list[int]]:
        return prompt_lookup(context, max_ngram=self.max_ngram, min_ngram=self.min_ngram, max_branches=branches,
                             length=self.lookup_length)

    def paths(self, state: xgr2.MatcherState | None, context: Sequence[int]) -> list[list[int]]:
        """The drafted token sequences of one row, best first (none for a ``None`` or
        terminated state)."""
        if state is None or state.is_terminated:
            return []
        out: list[list[int]] = []
        forced = [int(t) for t in self.encode(state.jump_forward_text())][: self.num_nodes - 1]
        if forced:
            after = self._lookup(list(context) + forced, 1)
            out.append(forced + (after[0] if after else []))
        out.extend(self._lookup(context, self.max_branches))
        return out

    def draft(
        self,
        states: Sequence[xgr2.MatcherState | None],
        contexts: Sequence[Sequence[int]],
        roots: Sequence[int],
    ) -> DraftTree:
        """The ``[B, num_nodes]`` draft trees of a batch.

        Args:
          states: each row's matcher state after its last committed token (``None``: a
            finished row, drafted as a bare root).
          contexts: each row's token ids so far (prompt and generated, ``roots[b]`` last).
          roots: each row's last committed token (node 0, which the model consumes first).
        """
        if not len(states) == len(contexts) == len(roots):
            raise ValueError(f"got {len(states)} states, {len(contexts)} contexts and {len(roots)} roots")
        return build_draft_tree(roots, [self.paths(s, c) for s, c in zip(states, contexts)], self.num_nodes)

"""Speculative constrained decoding in the demo: a drafted token tree per model call.

Each step, per row: :class:`xgr2.jax.TreeDrafter` drafts a tree from the grammar's
forced text and prompt lookup; the model runs once over the whole tree (tree attention
over the KV cache, ``tree_step``) while the host computes the grammar mask of every node
(:meth:`xgr2.jax.ConstrainedDecoder.tree_masks`); :func:`xgr2.jax.verify_tree` keeps the
longest path the (masked) model agrees with plus one bonus token; the decoder commits it
by picking the matcher state of the path's last node; the cache keeps the path's keys
and values (``compact_cache``). Greedy verification emits exactly the tokens of plain
greedy constrained decoding, one to ``num_nodes`` of them per model call.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any, Protocol

import jax
import numpy as np

import xgr2.jax


class TreeModel(Protocol):
    """What :func:`speculative_loop` needs of a model (:class:`~xgr2.demo.llama.Llama`)."""

    def tree_step(self, tree: xgr2.jax.DraftTree, pos: np.ndarray, cache: Any) -> tuple[jax.Array, Any]: ...

    def compact_cache(self, cache: Any, pos: np.ndarray, accepted_nodes: jax.Array) -> Any: ...


def warm_up(model: TreeModel, batch: int, sizes: Sequence[int], pos: int, cache: Any, vocab_size: int,
            temperature: float) -> Any:
    """Compiles (on first use) and runs the tree step, verification and compaction once per
    tree size (:attr:`xgr2.jax.TreeDrafter.sizes`).

    The tree steps write slots ``pos ...`` that the first real step overwrites before any
    attention reads them; returns the cache to use.
    """
    words = (vocab_size + 31) // 32
    for size in sizes:
        tree = xgr2.jax.build_draft_tree([0] * batch, [[]] * batch, size)
        logits, cache = model.tree_step(tree, np.full(batch, pos, np.int32), cache)
        result = _verify(jax.random.key(0), logits, np.full((batch, size, words), -1, np.int32), tree, temperature)
        cache = model.compact_cache(cache, np.full(batch, pos, np.int32), result.accepted_nodes)
    jax.block_until_ready(cache)  # type: ignore[no-untyped-call]
    return cache


def draft_sizes(num_nodes: int) -> tuple[int, ...]:
    """The tree sizes the demo drafts with: 1 (nothing to draft: as cheap as a plain step),
    4, 8, 16, ... below ``num_nodes``, and ``num_nodes``. On CPU (SmolLM2-135M, float32,
    2 cores, 12-07) passes over 1 / 4 / 8 / 12 / 16 nodes took 27 / 35 / 40-46 / 65 / 46-61
    ms against 26-27 ms for a one-token step: XLA CPU's matrix products run fastest on
    row counts that are multiples of 4 and 8, so the demo's default is 8 nodes.

    Example:
      >>> draft_sizes(8)
      (1, 4, 8)
      >>> draft_sizes(12)
      (1, 4, 8, 12)
    """
    sizes, size = {1, num_nodes}, 4
    while size < num_nodes:
        sizes.add(size)
        size *= 2
    return tuple(sorted(sizes))


def _verify(key: jax.Array, logits: jax.Array, bitmask: np.ndarray | jax.Array, tree: xgr2.jax.DraftTree,
            temperature: float) -> xgr2.jax.VerifyResult:
    method = "greedy" if temperature <= 0 else "speculative"
    return xgr2.jax.verify_tree(key, logits, jax.numpy.asarray(bitmask), tree, method=method, temperature=max(temperature, 1e-6),
                                max_depth=tree.tokens.shape[1] - 1)


def speculative_loop(
    model: TreeModel,
    decoder: xgr2.jax.ConstrainedDecoder,
    drafter: xgr2.jax.TreeDrafter,
    roots: np.ndarray,
    pos: int,
    cache: Any,
    prompt_ids: list[int],
    key: jax.Array,
    temperature: float,
    on_step: Callable[[list[list[int]], int, float], None],
) -> None:
    """Decodes with draft trees until every row of ``decoder`` finishes.

    Args:
      model: runs a tree over the cache and compacts the cache.
      decoder: a constrained decoder that has committed each row's first token.
      drafter: drafts the trees (one of ``drafter.sizes`` nodes per row and step).
      roots: int32 [B], the ids ``decoder.commit`` returned (fed at node 0).
      pos: the cache position of the roots (all rows start together after the prompt).
      cache: the model's cache, holding the prompt; its length must cover
        ``pos + max_tokens + num_nodes``.
      prompt_ids: the prompt (the start of every row's lookup context).
      key: step ``t`` verifies with ``fold_in(key, t)`` (``temperature > 0``).
      temperature: 0 verifies greedily, otherwise speculative (rejection) sampling.
      on_step: called after each step with the tokens emitted per row, the number of
        draft tokens accepted over the active rows, and the host seconds spent on masks.
    """
    positions = np.full(decoder.batch, pos, np.int32)
    roots = np.asarray(roots, np.int32).copy()
    while not decoder.done:
        active = decoder.active
        states = [s if a else None for s, a in zip(decoder.states, active)]
        contexts = [prompt_ids + ids for ids in decoder.token_ids]
        tree = drafter.draft(states, contexts, roots.tolist())
        logits, cache = model.tree_step(tree, positions, cache)  # async: the masks below overlap it
        t_mask = time.perf_counter()
        masks = decoder.tree_masks(tree)
        mask_s = time.perf_counter() - t_mask
        step_key = key if temperature <= 0 else jax.random.fold_in(key, decoder.num_steps)  # greedy: unused
        result = _verify(step_key, logits, masks.bitmask, tree, temperature)
        emitted = decoder.commit_tree(tree, masks, result)  # waits for the device
        cache = model.compact_cache(cache, positions, result.accepted_nodes)
        accepted = np.asarray(result.accept_len)
        # New arrays, never updates in place: the device may still be reading the ones
        # handed to it (compact_cache runs asynchronously, and on CPU JAX may alias an
        # aligned numpy buffer instead of copying it; a torn read of `positions` once
        # moved the wrong cache slot in CI and derailed the whole output).
        positions = positions + np.array([len(tokens) for tokens in emitted], np.int32)
        roots = np.array([tokens[-1] if tokens else root for tokens, root in zip(emitted, roots)], np.int32)
        on_step(emitted, int(accepted[active].sum()), mask_s)

"""Device-side verification of a draft tree against target logits under a grammar mask."""

from __future__ import annotations

import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from xgr2.jax._masking import _check_bitmask, _unpack
from xgr2.jax._cpu_kernels import use_kernels
from xgr2.jax._sampling import _F32, _greedy, _per_row, _pick_index, _truncated_probs
from xgr2.jax._tree import DraftTree, tree_depth

__all__ = ["VerifyResult", "verify_tree"]


class VerifyResult(NamedTuple):
    """What :func:`verify_tree` accepted, per row.

    Attributes:
      accept_len: int32 ``[B]``: number of accepted draft tokens (the root not counted).
      last_node: int32 ``[B]``: the deepest accepted node (0, the root, if none).
      accepted_nodes: int32 ``[B, D]``: the accepted path ``0, n1, ..., last_node``, padded
        with ``-1``; ``D = max_depth + 1``.
      bonus_token: int32 ``[B]``: the token sampled (or argmax) after ``last_node``; ``-1``
        if the grammar allows nothing there.
    """

    accept_len: jax.Array
    last_node: jax.Array
    accepted_nodes: jax.Array
    bonus_token: jax.Array


# The fori_loop carries: (node, accepted length, accepted path, done) for greedy, and
# (node, last child tried, accepted length, accepted path, residual probs, done) for speculative.
_GreedyState = tuple[jax.Array, jax.Array, jax.Array, jax.Array]
_SpeculativeState = tuple[jax.Array, jax.Array, jax.Array, jax.Array, jax.Array, jax.Array]
# (node, last child tried, accepted length, accepted path, removed children, done).
_OneHotState = tuple[jax.Array, jax.Array, jax.Array, jax.Array, jax.Array, jax.Array]


def _pick(a: jax.Array, index: jax.Array) -> jax.Array:
    """``a[b, index[b]]`` for ``a [B, N, ...]``."""
    index = index.reshape(index.shape + (1,) * (a.ndim - 1))
    return jnp.take_along_axis(a, index, axis=1)[:, 0]


def _draw_explicit(u: jax.Array, probs: jax.Array) -> jax.Array:
    """One token per row from explicit probabilities ``[B, V]`` by inverse CDF; -1 if all 0."""
    cum = jnp.cumsum(probs, axis=1)
    token = _pick_index(cum, probs, u * cum[:, -1])
    return jnp.where(jnp.any(probs > 0, axis=1), token, -1)


@functools.partial(jax.jit, static_argnames=("method", "depth", "has_k", "has_p", "kernels"))
def _verify(key: jax.Array, logits: jax.Array, bitmask: jax.Array, parents: jax.Array, tokens: jax.Array,
            valid: jax.Array, draft_probs: jax.Array | None, temperature: jax.Array, top_k: jax.Array | None,
            top_p: jax.Array | None, *, method: str, depth: int, has_k: bool, has_p: bool,
            kernels: bool = False) -> VerifyResult:
    batch, n, vocab = logits.shape
    node = jax.lax.broadcasted_iota(jnp.int32, (batch, n), 1)
    rows = logits.reshape(batch * n, vocab)
    masks = jnp.broadcast_to(bitmask, (batch, n, bitmask.shape[-1])).reshape(batch * n, -1)
    path0 = jnp.full((batch, depth), -1, jnp.int32).at[:, 0].set(0)
    zero = jnp.zeros((batch,), jnp.int32)

    if method == "greedy":
        best = _greedy(rows, masks, None, kernels=kernels).reshape(batch, n)

        def step(_: jax.Array, state: _GreedyState) -> _GreedyState:
            cur, length, path, done = state
            match = (parents == cur[:, None]) & valid & (tokens == _pick(best, cur)[:, None]) & (node > 0)
            take = jnp.any(match, axis=1) & ~done
            child = jnp.argmax(match, axis=1).astype(jnp.int32)
            slot = jnp.minimum(length + 1, depth - 1)
            path = path.at[jnp.arange(batch), slot].set(jnp.where(take, child, _pick(path, slot)))
            return jnp.where(take, child, cur), length + take.astype(jnp.int32), path, done | ~take

        cur, length, path, _ = jax.lax.fori_loop(0, depth - 1, step, (zero, zero, path0, zero > 0))
        return VerifyResult(length, cur, path, _pick(best, cur))

    def repeat(v: jax.Array | None) -> jax.Array | None:
        return None if v is None else jnp.repeat(v, n)

    allowed = _unpack(masks, vocab)
    probs = _truncated_probs(
        rows, allowed, jnp.repeat(temperature, n), repeat(top_k) if has_k else None,
        repeat(top_p) if has_p else None, None,
    ).reshape(batch, n, vocab)

    u_bonus = jax.random.uniform(jax.random.fold_in(key, n), (batch,), _F32)
    if draft_probs is None:  # deterministic drafts (a distinct compilation)
        return _verify_one_hot_drafts(key, probs, parents, tokens, valid, depth, u_bonus)

    def speculative_step(i: jax.Array, state: _SpeculativeState) -> _SpeculativeState:
        cur, tried, length, path, resid, done = state
        cand = (parents == cur[:, None]) & valid & (node > tried[:, None])
        has = jnp.any(cand, axis=1)
        child = jnp.argmax(cand, axis=1).astype(jnp.int32)
        token = _pick(tokens, child)
        q_row = _pick(draft_probs, cur)
        p_t = jnp.take_along_axis(resid, token[:, None], 1)[:, 0]
        q_t = jnp.take_along_axis(q_row, token[:, None], 1)[:, 0]
        u = jax.random.uniform(jax.random.fold_in(key, i), (batch,), _F32)
        live = has & ~done
        accept = live & (u * q_t < p_t)
        reject = live & ~accept
        residual = jnp.maximum(resid - q_row, 0)
        mass = jnp.sum(residual, axis=1, keepdims=True)
        residual = jnp.where(mass > 0, residual / jnp.where(mass > 0, mass, 1), resid)
        resid = jnp.where(accept[:, None], _pick(probs, child), jnp.where(reject[:, None], residual, resid))
        slot = jnp.minimum(length + 1, depth - 1)
        path = path.at[jnp.arange(batch), slot].set(jnp.where(accept, child, _pick(path, slot)))
        return (
            jnp.where(accept, child, cur), jnp.where(live, child, tried), length + accept.astype(jnp.int32), path, resid,
            done | (~has & ~done),
        )

    state = (zero, zero, zero, path0, probs[:, 0], zero > 0)
    cur, _, length, path, resid, _ = jax.lax.fori_loop(0, n, speculative_step, state)
    return VerifyResult(length, cur, path, _draw_explicit(u_bonus, resid))


def _verify_one_hot_drafts(key: jax.Array, probs: jax.Array, parents: jax.Array, tokens: jax.Array,
                           valid: jax.Array, depth: int, u_bonus: jax.Array) -> VerifyResult:
    """Multi-branch rejection sampling with deterministic drafts, without a pass over the
    vocabulary per tried child.

    With a one-hot draft ``q = e_t``, rejecting ``t`` turns the residual into ``p`` with
    ``p(t)`` removed and renormalised. So the residual at node ``cur`` is always
    ``probs[cur]`` without the tokens of the children already rejected there, divided by
    the mass left (a rejection that would leave none removes nothing, as in the general
    loop): a child's acceptance probability is a gather, and only the bonus token reads a
    whole row. The same uniforms as the
    general loop (``fold_in(key, i)`` at step ``i``), so both draw the same tokens up to
    rounding.
    """
    batch, n, _ = probs.shape
    node = jax.lax.broadcasted_iota(jnp.int32, (batch, n), 1)
    zero = jnp.zeros((batch,), jnp.int32)
    path0 = jnp.full((batch, depth), -1, jnp.int32).at[:, 0].set(0)
    # The residual's mass is summed from small parts, never as 1 - E (which cancels when the
    # drafts cover almost all of it): `rest`, the mass of a node's row outside its children's
    # tokens (one pass), plus its children's distinct tokens not yet removed.
    real = valid & (node > 0)
    drafted = jnp.zeros(probs.shape, jnp.bool_).at[
        jnp.arange(batch)[:, None], jnp.maximum(parents, 0), tokens].max(real)
    rest = jnp.sum(jnp.where(drafted, _F32(0), probs), axis=2)
    same_token = tokens[:, :, None] == tokens[:, None, :]  # [B, N, N]
    siblings = (parents[:, :, None] == parents[:, None, :]) & real[:, :, None] & real[:, None, :]
    earlier = node[:, None, :] < node[:, :, None]
    first = real & ~jnp.any(siblings & same_token & earlier, axis=2)  # first child drafting its token

    def removed_before(removed: jax.Array, cur: jax.Array, token: jax.Array) -> jax.Array:
        """Whether a rejected child of ``cur`` whose token left the residual drafted ``token``."""
        return jnp.any(removed & (parents == cur[:, None]) & (tokens == token[:, None]), axis=1)

    def remaining_mass(removed: jax.Array, cur: jax.Array) -> jax.Array:
        kids = first & (parents == cur[:, None])
        gone = jnp.any(same_token & (removed & (parents == cur[:, None]))[:, None, :], axis=2)
        p_kids = jnp.take_along_axis(_pick(probs, cur), tokens, axis=1)  # [B, N]
        return _pick(rest, cur) + jnp.sum(jnp.where(kids & ~gone, p_kids, _F32(0)), axis=1)

    def step(i: jax.Array, state: _OneHotState) -> _OneHotState:
        cur, tried, length, path, removed, done = state
        cand = (parents == cur[:, None]) & valid & (node > tried[:, None])
        has = jnp.any(cand, axis=1)
        child = jnp.argmax(cand, axis=1).astype(jnp.int32)
        token = _pick(tokens, child)
        p_row = jnp.take_along_axis(_pick(probs, cur), token[:, None], 1)[:, 0]
        p_row = jnp.where(removed_before(removed, cur, token), _F32(0), p_row)
        remaining = remaining_mass(removed, cur)
        p_t = jnp.where(remaining > 0, p_row / jnp.where(remaining > 0, remaining, 1), p_row)
        u = jax.random.uniform(jax.random.fold_in(key, i), (batch,), _F32)
        live = has & ~done
        accept = live & (u < p_t)
        reject = live & ~accept
        # As the general loop: a rejection that would leave no mass keeps the residual (the
        # token stays in it, for later siblings and the bonus token alike).
        drop = reject & (remaining - p_row > 0)
        removed = removed | (drop[:, None] & (node == child[:, None]))
        slot = jnp.minimum(length + 1, depth - 1)
        path = path.at[jnp.arange(batch), slot].set(jnp.where(accept, child, _pick(path, slot)))
        return (
            jnp.where(accept, child, cur), jnp.where(live, child, tried), length + accept.astype(jnp.int32), path,
            removed, done | (~has & ~done),
        )

    state = (zero, zero, zero, path0, jnp.zeros((batch, n), jnp.bool_), zero > 0)
    cur, _, length, path, removed, _ = jax.lax.fori_loop(0, n, step, state)
    # The bonus comes from the last node's row without the tokens its rejections removed.
    row = _pick(probs, cur)
    gone = removed & (parents == cur[:, None])
    hit = jnp.zeros(row.shape, jnp.bool_).at[jnp.arange(batch)[:, None], tokens].max(gone)
    resid = jnp.where(hit, _F32(0), row)
    resid = jnp.where(jnp.any(resid > 0, axis=1, keepdims=True), resid, row)  # rounding left no mass
    return VerifyResult(length, cur, path, _draw_explicit(u_bonus, resid))


def verify_tree(
    key: jax.Array,
    target_logits: jax.Array,
    tree_bitmask: jax.Array,
    tree: DraftTree,
    *,
    method: str = "greedy",
    draft_probs: jax.Array | None = None,
    temperature: float | jax.Array = 1.0,
    top_k: int | jax.Array | None = None,
    top_p: float | jax.Array | None = None,
    max_depth: int | None = None,
) -> VerifyResult:
    """Verifies a batch of draft trees under the grammar masks, on device.

    Node ``i``'s logits predict ``i``'s children; ``tree_bitmask[b, i]`` holds the tokens the
    grammar allows after the path root -> ``i`` (all zeros for inadmissible nodes).

    ``method="greedy"``: from the root, accept the child (first in node order) whose token is
    the masked argmax of the current node; the bonus token is the masked argmax at the last
    accepted node. ``method="speculative"``: multi-branch rejection sampling (SpecInfer /
    EAGLE): at a node, children are tried in node order; child ``c`` is accepted with
    probability ``min(1, p(c) / q(c))``, where ``p`` is the masked, tempered, truncated target
    distribution; on rejection ``p <- normalise(max(p - q, 0))`` and the next sibling is tried;
    if all are rejected (or at a leaf) the bonus token is drawn from ``p``. So the emitted
    tokens are distributed exactly as token-by-token masked sampling from the target. Without
    ``draft_probs`` the drafts are taken as deterministic (``q`` one-hot on the drafted token):
    then the siblings are tried without replacement.

    Args:
      key: a ``jax.random`` key.
      target_logits: float ``[B, N, V]``.
      tree_bitmask: int32 ``[B, N, W]`` with ``W * 32 >= V``.
      tree: the :class:`DraftTree` (``[B, N]`` arrays).
      method: ``"greedy"`` or ``"speculative"``.
      draft_probs: optional float ``[B, N, V]``: the draft distribution at each node (the
        children of node ``i`` were drawn from ``draft_probs[:, i]``).
      temperature, top_k, top_p: as in :func:`xgr2.jax.sample`, scalars or ``[B]``
        (``method="speculative"`` only; ``top_k`` may be an array here).
      max_depth: static bound on the tree depth, so ``D = max_depth + 1``. If omitted it is
        read from a concrete ``tree`` (one host sync) or taken as ``N - 1`` under tracing.

    Returns:
      A :class:`VerifyResult`.

    Example:
      >>> import jax, jax.numpy as jnp
      >>> from xgr2.jax import DraftTree, verify_tree
      >>> tree = DraftTree.from_parents([-1, 0, 1], tokens=[0, 2, 1])
      >>> logits = jnp.array([[[0., 0., 9.], [0., 9., 0.], [9., 0., 0.]]])
      >>> mask = jnp.full((1, 3, 1), -1, jnp.int32)
      >>> r = verify_tree(jax.random.key(0), logits, mask, tree)
      >>> int(r.accept_len[0]), r.accepted_nodes.tolist(), int(r.bonus_token[0])
      (2, [[0, 1, 2]], 0)
    """
    if method not in ("greedy", "speculative"):
        raise ValueError(f"method must be 'greedy' or 'speculative', got {method!r}")
    logits = jnp.asarray(target_logits)
    if logits.ndim != 3 or not jnp.issubdtype(logits.dtype, jnp.floating):
        raise ValueError(f"target_logits must be float [B, N, V], got {logits.dtype} {logits.shape}")
    batch, n, vocab = logits.shape
    mshape = _check_bitmask(tree_bitmask, vocab, f", target_logits shape {logits.shape}")
    if tuple(mshape[:-1]) != (batch, n):
        raise ValueError(f"tree_bitmask must be [B, N, W] = [{batch}, {n}, W], got {mshape}")
    parents, tokens, valid = (jnp.asarray(a) for a in tree)
    if parents.shape != (batch, n):
        raise ValueError(f"tree arrays must be [B, N] = [{batch}, {n}], got {parents.shape}")
    if max_depth is None:
        if isinstance(tree.parents, jax.core.Tracer):
            max_depth = n - 1
        else:
            depth = np.asarray(tree_depth(DraftTree(parents, tokens, valid)))
            max_depth = int(np.max(np.where(np.asarray(valid), depth, 0)))
    q = None if draft_probs is None else jnp.asarray(draft_probs, _F32)
    temperature = _per_row(temperature, batch, "temperature")
    k = None if top_k is None else _per_row(top_k, batch, "top_k", "int32")
    p = None if top_p is None else _per_row(top_p, batch, "top_p")
    result: VerifyResult = _verify(
        key, logits, jnp.asarray(tree_bitmask), parents.astype(jnp.int32), tokens.astype(jnp.int32),
        valid.astype(jnp.bool_), q, temperature, k, p,
        method=method, depth=max_depth + 1, has_k=k is not None, has_p=p is not None,
        kernels=method == "greedy" and use_kernels(logits),
    )
    return result

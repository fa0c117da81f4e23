"""The host half of a constrained decode loop: a batch of matcher states and their bitmasks.

JAX dispatch is asynchronous: once the model's step is dispatched, the host is free until
it reads the step's result. :class:`ConstrainedDecoder` puts the grammar work there: the
bitmask of the next step is filled (on the C++ thread pool) while the device computes the
logits, and the sampled tokens are committed when they come back.
"""

from __future__ import annotations

from typing import Any, Callable, Literal, Sequence

import jax
import numpy as np

import xgr2
from xgr2.jax._sampling import sample
from xgr2.jax._tree import DraftTree
from xgr2.jax._verify import VerifyResult

__all__ = ["ConstrainedDecoder", "FinishReason"]

FinishReason = Literal["stop", "length", "no_tokens"]


class ConstrainedDecoder:
    """Keeps one :class:`xgr2.MatcherState` per batch row and the bitmask of its next step.

    A step is: :meth:`next_bitmask` (host; call it right after dispatching the model's
    step, so that it overlaps the device), sample with that bitmask (e.g.
    :func:`xgr2.jax.sample`), then :meth:`commit` the tokens, which returns the ids to feed
    the model next. :meth:`generate` runs that loop. For speculative decoding,
    :meth:`tree_masks` gives the masks of a draft tree and :meth:`commit_tree` commits the
    path :func:`xgr2.jax.verify_tree` accepted, by picking the state at its last node.

    A row finishes when it commits a stop token (its state is then terminated), when it
    reaches ``max_tokens`` committed tokens (stop token included), or when its grammar
    allows no token at all (a sampled ``-1``: possible only without stop tokens). Finished
    rows keep their state; their bitmask rows allow everything (their samples are
    ignored) and they are fed ``pad_token_id``.

    Two bitmask buffers alternate, so the buffer being filled is never one that the
    previous step's (asynchronous) sampling may still read.

    Args:
      compiled: the compiled grammar (its ``tokenizer_info`` gives the vocabulary size and
        the stop tokens).
      batch: the number of rows.
      states: optional initial states, one per row (default: the grammar's initial state),
        e.g. to continue after a forced prefix.
      max_tokens: at most this many tokens committed per row (``None``: no limit).
      constrained: ``False`` masks nothing (for comparison runs); rows then finish on
        stop tokens and ``max_tokens`` only.
      stop_token_ids: ids that finish a row (default: the tokenizer's stop tokens).
      pad_token_id: the id fed for finished rows (default: the smallest stop id, else 0).
      num_threads: threads for the batch calls (0: every hardware thread).

    Example:
      >>> import jax, xgr2, xgr2.jax
      >>> tok = xgr2.TokenizerInfo([b"a", b"b", b"<eos>"], stop_token_ids=[2])
      >>> dec = xgr2.jax.ConstrainedDecoder(xgr2.compile('root ::= "ab"', tok), batch=2)
      >>> logits = jax.numpy.zeros((2, 3))
      >>> while not dec.done:
      ...     tokens = dec.commit(xgr2.jax.greedy(logits, dec.next_bitmask()))
      >>> dec.token_ids, dec.finish_reasons
      ([[0, 1], [0, 1]], ['stop', 'stop'])
    """

    def __init__(
        self,
        compiled: xgr2.CompiledGrammar,
        batch: int = 1,
        *,
        states: Sequence[xgr2.MatcherState] | None = None,
        max_tokens: int | None = None,
        constrained: bool = True,
        stop_token_ids: Sequence[int] | None = None,
        pad_token_id: int | None = None,
        num_threads: int = 0,
    ) -> None:
        if not isinstance(compiled, xgr2.CompiledGrammar):
            raise TypeError(f"compiled must be an xgr2.CompiledGrammar, got {type(compiled).__name__}")
        if states is None:
            if not isinstance(batch, (int, np.integer)) or batch < 1:
                raise ValueError(f"batch must be a positive int, got {batch!r}")
            states = [compiled.initial_state() for _ in range(batch)]
        else:
            states = list(states)
            batch = len(states)
            for i, s in enumerate(states):
                if not isinstance(s, xgr2.MatcherState):
                    raise TypeError(f"states[{i}] is {type(s).__name__}, not an xgr2.MatcherState")
                if s.vocab_size != compiled.vocab_size:
                    raise ValueError(f"states[{i}] has vocab_size {s.vocab_size}, the grammar {compiled.vocab_size}")
        if max_tokens is not None and max_tokens < 1:
            raise ValueError(f"max_tokens must be positive or None, got {max_tokens}")
        info = compiled.tokenizer_info
        stops = list(info.stop_token_ids if stop_token_ids is None else stop_token_ids)
        self.vocab_size: int = info.vocab_size
        self.batch: int = batch
        self.constrained: bool = constrained
        self.max_tokens = max_tokens
        self.stop_token_ids: frozenset[int] = frozenset(int(t) for t in stops)
        # A grammar's stop token always ends its state, so it ends the row too.
        self._ends = self.stop_token_ids | (frozenset(info.stop_token_ids) if constrained else frozenset())
        self.pad_token_id: int = int(pad_token_id if pad_token_id is not None else min(stops, default=0))
        self.num_threads = num_threads
        #: Current state of each row (``None`` entries never occur; finished rows keep theirs).
        self.states: list[xgr2.MatcherState] = states
        #: Tokens committed per row, stop tokens excluded.
        self.token_ids: list[list[int]] = [[] for _ in range(batch)]
        #: Why each row finished (``None`` while it runs).
        self.finish_reasons: list[FinishReason | None] = [None] * batch
        self.num_steps = 0
        self._counts = np.zeros(batch, np.int64)  # committed tokens per row, stops included
        self._buffers = [xgr2.allocate_token_bitmask(batch, self.vocab_size) for _ in range(2)]
        self._tree_buffers: dict[int, list[np.ndarray]] = {}  # per tree size: two, alternating
        for row, s in enumerate(states):
            if s.is_terminated:
                self.finish_reasons[row] = "stop"

    # ----------------------------------------------------------------- status

    @property
    def active(self) -> np.ndarray:
        """bool ``[B]``: rows still generating."""
        return np.array([r is None for r in self.finish_reasons])

    @property
    def done(self) -> bool:
        """Every row has finished."""
        return all(r is not None for r in self.finish_reasons)

    # ----------------------------------------------------------------- one token per step

    def next_bitmask(self) -> np.ndarray:
        """Fills and returns the int32 ``[B, W]`` bitmask of the next step (host, C++ pool).

        Active rows get their state's mask; finished rows (and every row when not
        constrained) allow everything. Buffers alternate between calls, so the returned
        array stays intact until the call after next.
        """
        out = self._buffers[self.num_steps % 2]
        out.fill(-1)
        if self.constrained:
            rows = [r for r in range(self.batch) if self.finish_reasons[r] is None]
            xgr2.batch_fill_bitmask([self.states[r] for r in rows], out, rows, num_threads=self.num_threads)
        return out

    def commit(self, tokens: Any) -> np.ndarray:
        """Commits one sampled token per row; returns the int32 ``[B]`` ids to feed the model.

        Reading ``tokens`` waits for the device. Finished rows' tokens are ignored (and
        fed as ``pad_token_id``); a ``-1`` (no allowed token) finishes its row.

        Raises:
          ValueError: ``tokens`` is not ``[B]``.
          xgr2.TokenRejectedError: the grammar rejects a row's token (it was not sampled
            under :meth:`next_bitmask`).
          xgr2.InvalidTokenError: a token id outside the vocabulary.
        """
        tokens = np.asarray(tokens)
        if tokens.shape != (self.batch,) or not np.issubdtype(tokens.dtype, np.integer):
            raise ValueError(f"tokens must be integer [{self.batch}], got {tokens.dtype} {tokens.shape}")
        feed = np.full(self.batch, self.pad_token_id, np.int32)
        live = [r for r in range(self.batch) if self.finish_reasons[r] is None]
        rows = [r for r in live if tokens[r] != -1]
        # Everything is checked before any row changes, so an error leaves the decoder as it was.
        if self.constrained and rows:
            new = xgr2.batch_advance([self.states[r] for r in rows], tokens[rows], num_threads=self.num_threads)
            advanced: list[xgr2.MatcherState] = []
            for r, s in zip(rows, new):
                if s is None:
                    raise xgr2.TokenRejectedError(f"row {r}: token {int(tokens[r])} is not allowed by the grammar")
                advanced.append(s)
            for r, s in zip(rows, advanced):
                self.states[r] = s
        elif rows:
            bad = [r for r in rows if not 0 <= tokens[r] < self.vocab_size]
            if bad:
                raise xgr2.InvalidTokenError(f"row {bad[0]}: token id {int(tokens[bad[0]])} is outside the vocabulary")
        for r in live:
            if tokens[r] == -1:
                self.finish_reasons[r] = "no_tokens"
        for r in rows:
            token = int(tokens[r])
            self._record(r, [token], self._take(r, [token])[1])
            feed[r] = token if self.finish_reasons[r] is None else self.pad_token_id
        self.num_steps += 1
        return feed

    def _take(self, row: int, tokens: list[int]) -> tuple[int, FinishReason | None]:
        """How many of ``tokens`` the row takes before it finishes, and why it finishes."""
        count = int(self._counts[row])
        for k, token in enumerate(tokens, 1):
            if token in self._ends:
                return k, "stop"
            if self.max_tokens is not None and count + k >= self.max_tokens:
                return k, "length"
        return len(tokens), None

    def _record(self, row: int, tokens: list[int], reason: FinishReason | None) -> None:
        self._counts[row] += len(tokens)
        self.token_ids[row].extend(tokens[:-1] if reason == "stop" else tokens)
        self.finish_reasons[row] = reason

    def generate(
        self,
        step: Callable[[np.ndarray], jax.Array],
        logits: jax.Array,
        key: jax.Array,
        **sampling: Any,
    ) -> list[list[int]]:
        """Runs the loop until every row finishes; returns :attr:`token_ids`.

        Args:
          step: dispatches the model on the ids to feed (int32 ``[B]``) and returns the next
            logits ``[B, V]`` without waiting for them (a jitted function does that).
          logits: the logits of the first step (e.g. from the prefill).
          key: a ``jax.random`` key; step ``t`` samples with ``fold_in(key, t)``.
          **sampling: passed to :func:`xgr2.jax.sample` (``temperature``, ``top_k``, ...).
        """
        while not self.done:
            bitmask = self.next_bitmask()  # the device is computing `logits` meanwhile
            tokens = self.commit(sample(jax.random.fold_in(key, self.num_steps), logits, bitmask, **sampling))
            if not self.done:
                logits = step(tokens)
        return self.token_ids

    # ----------------------------------------------------------------- draft trees

    def tree_masks(self, tree: DraftTree, *, max_nodes: int | None = None) -> xgr2.TreeMasks:
        """:func:`xgr2.tree_masks` of the active rows' states (finished rows are padding).

        Unconstrained decoders are not supported here (there is nothing to mask). Buffers
        alternate between steps, so the returned bitmask stays intact until the step
        after next.
        """
        if not self.constrained:
            raise ValueError("tree_masks needs a constrained decoder")
        shape = np.shape(tree.parents)
        words = (self.vocab_size + 31) // 32
        # Two buffers per tree size, alternating like next_bitmask's: the device may still
        # read the previous step's (on CPU, JAX may alias a numpy buffer rather than copy it).
        if shape[-1] not in self._tree_buffers:
            self._tree_buffers[shape[-1]] = [np.empty((self.batch, shape[-1], words), np.int32) for _ in range(2)]
        out = self._tree_buffers[shape[-1]][self.num_steps % 2]
        roots = [s if r is None else None for s, r in zip(self.states, self.finish_reasons)]
        return xgr2.tree_masks(roots, tree, max_nodes=max_nodes, out=out, num_threads=self.num_threads)

    def commit_tree(self, tree: DraftTree, masks: xgr2.TreeMasks, result: VerifyResult) -> list[list[int]]:
        """Commits each active row's accepted path and bonus token; returns them per row.

        The new state is picked from ``masks.states`` at the last accepted node (the
        path is not advanced again), then advanced by the bonus token (skipped when it is
        ``-1`` or the row finishes on the path). With ``max_tokens``, the path is cut at
        the row's limit, again by picking the state of the node there.

        Raises:
          ValueError: an accepted node has no state in ``masks`` (verify a tree pruned
            with ``valid & masks.visited`` when ``max_nodes`` truncates); no row changes.
          TokenRejectedError: a bonus token the grammar rejects, which ``verify_tree``
            with these masks never returns; the rows before it are already committed.
        """
        tokens = np.asarray(tree.tokens)
        paths = np.asarray(result.accepted_nodes)
        lengths = np.asarray(result.accept_len)
        bonus = np.asarray(result.bonus_token)
        emitted: list[list[int]] = [[] for _ in range(self.batch)]
        plans = []  # checked for every row before any row changes
        for r in range(self.batch):
            if self.finish_reasons[r] is not None:
                continue
            nodes = [int(n) for n in paths[r, 1 : int(lengths[r]) + 1]]
            path_tokens = [int(tokens[r, n]) for n in nodes]
            taken, reason = self._take(r, path_tokens)
            last = nodes[taken - 1] if taken else 0
            state = masks.states[r][last]
            if state is None:
                raise ValueError(f"row {r}: accepted node {last} has no state in the tree masks")
            plans.append((r, path_tokens[:taken], reason, state))
        for r, path_tokens, reason, state in plans:
            self.states[r] = state
            self._record(r, path_tokens, reason)
            emitted[r] = path_tokens
            if reason is not None:
                continue
            extra = int(bonus[r])
            if extra < 0:
                self.finish_reasons[r] = "no_tokens"
                continue
            self.states[r] = state.advance(extra)
            self._record(r, [extra], self._take(r, [extra])[1])
            emitted[r].append(extra)
        self.num_steps += 1
        return emitted

"""Constrained (or free) sampling from a model, overlapping host mask work with the device.

Each step: the jitted decode step for step t is dispatched (JAX returns at once and the
device computes in the background); meanwhile :class:`xgr2.jax.ConstrainedDecoder` fills
step t's bitmask from its batch of immutable :class:`xgr2.MatcherState` (one per row);
then ``xgr2.jax.sample`` picks the tokens among the allowed ones and the decoder commits
them (advancing the states, ending rows on stop tokens or ``max_tokens``).
"""

from __future__ import annotations

import codecs
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

import jax
import numpy as np

import xgr2
import xgr2.jax

from .speculative import TreeModel, draft_sizes, speculative_loop, warm_up


class Model(Protocol):
    """What :func:`generate` needs of a model (:class:`~xgr2.demo.llama.Llama`,
    :class:`~xgr2.demo.gemma3.Gemma3`): ``cfg.vocab_size`` (the logits width), a prefill
    into a fixed-size cache and a one-token decode step."""

    cfg: Any

    def prefill(self, tokens: np.ndarray, max_len: int) -> tuple[jax.Array, Any]: ...

    def decode_step(self, tokens: np.ndarray, pos: int, cache: Any) -> tuple[jax.Array, Any]: ...


@dataclass
class GenerationStats:
    """What a :func:`generate` call did and how long it took.

    ``tokens_per_s`` counts the tokens that came out of decode steps (each row's first
    token comes from the prefill) over the decode loop's wall time, compilation excluded.
    """

    constrained: bool
    batch: int
    prompt_tokens: int
    steps: int = 0                 # decode steps run (one model call each)
    tokens: int = 0                # generated tokens, all rows, stop tokens included
    decode_tokens: int = 0         # of those, the ones that came out of decode steps
    prefill_s: float = 0.0         # prompt pass (compilation excluded after the first call)
    decode_s: float = 0.0          # wall time of the decode loop
    mask_s: float = 0.0            # host time spent filling bitmasks (ConstrainedDecoder.next_bitmask)
    finished: list[bool] = field(default_factory=list)       # row ended with a stop token
    token_ids: list[list[int]] = field(default_factory=list)  # per row, stop token excluded
    draft_nodes: int = 0           # speculative: nodes per draft tree (0: one token per step)
    accepted: int = 0              # speculative: draft tokens accepted, all rows and steps
    row_steps: int = 0             # speculative: active rows summed over the tree steps

    @property
    def tokens_per_s(self) -> float:
        return self.decode_tokens / self.decode_s if self.decode_s else 0.0

    @property
    def mean_accepted(self) -> float:
        """Speculative: draft tokens accepted per row and model call (each call also emits
        one bonus token, so a row gains ``mean_accepted + 1`` tokens per call)."""
        return self.accepted / self.row_steps if self.row_steps else 0.0

    @property
    def ms_per_step(self) -> float:
        return 1e3 * self.decode_s / self.steps if self.steps else 0.0

    @property
    def mask_ms_per_step(self) -> float:
        """Host mask time per decode step (all rows together)."""
        return 1e3 * self.mask_s / max(self.steps, 1)


def cache_length(prompt_tokens: int, max_tokens: int, multiple: int = 64) -> int:
    """KV cache size for a run, rounded up so that nearby prompt lengths share one compilation."""
    return -(-(prompt_tokens + max(max_tokens, 1)) // multiple) * multiple


def generate(
    model: Model,
    tokenizer: Any,
    compiled_grammar: xgr2.CompiledGrammar,
    prompt: str,
    *,
    max_tokens: int,
    temperature: float = 0.0,
    seed: int = 0,
    batch: int = 1,
    constrained: bool = True,
    on_text: Callable[[str], None] | None = None,
    max_len: int | None = None,
    precompute: bool = True,
    speculative: int = 0,
) -> tuple[list[str], GenerationStats]:
    """Samples ``batch`` completions of ``prompt``.

    Args:
      model: the model.
      tokenizer: a ``tokenizers.Tokenizer`` (or anything whose ``encode(text).ids`` gives
        the prompt's ids, BOS included if the model wants one), to encode ``prompt``
        (special tokens such as ``<|im_start|>`` written in the prompt are recognised).
      compiled_grammar: the grammar the output must follow; its ``tokenizer_info`` gives
        the stop tokens and the bytes of each token, also when ``constrained=False``.
      prompt: the prompt text (already chat-templated).
      max_tokens: at most this many tokens per row, stop token included.
      temperature: 0 is greedy.
      seed: seeds the sampling key, shared by the batch (rows differ through ``jax.random``).
      batch: rows sampled side by side from the same prompt.
      constrained: ``False`` samples freely (all-ones bitmask) for comparison.
      on_text: called with each new piece of row 0's text as it is generated.
      max_len: KV cache positions (default :func:`cache_length`); runs with equal batch
        and ``max_len`` share one compiled decode step.
      precompute: when constrained, start computing the grammar's node masks as a
        background job on the engine's thread pool (:class:`xgr2.PrecomputeJob`) before the prefill, so that they are ready (or on their way)
        when decoding starts; a mask not ready yet is computed on demand.
      speculative: when positive (and constrained), each decode step runs a draft tree of
        this many nodes (:mod:`xgr2.demo.speculative`; the model needs ``tree_step``);
        greedy output is the same token for token. ``max_len`` must then also cover
        these nodes (the default does).

    Returns:
      the text of each row (stop token excluded) and the run's :class:`GenerationStats`.
    """
    info = compiled_grammar.tokenizer_info
    vocab_bytes = info.decoded_vocab
    if model.cfg.vocab_size != info.vocab_size:
        raise ValueError(f"model logits width {model.cfg.vocab_size} != tokenizer info vocab_size {info.vocab_size}")
    prompt_ids = tokenizer.encode(prompt).ids
    stats = GenerationStats(constrained=constrained, batch=batch, prompt_tokens=len(prompt_ids))
    if speculative and not constrained:
        raise ValueError("speculative decoding needs constrained=True (it drafts from the grammar's states)")
    stats.draft_nodes = speculative
    if max_len is None:
        max_len = cache_length(len(prompt_ids), max_tokens + speculative)
    if max_len < len(prompt_ids) + max_tokens + speculative:
        raise ValueError(f"max_len {max_len} < prompt ({len(prompt_ids)} tokens) + max_tokens ({max_tokens})"
                         + (f" + draft nodes ({speculative})" if speculative else ""))

    if constrained and precompute:
        compiled_grammar.precompute_masks(background=True)  # overlaps the prefill below
    t0 = time.perf_counter()
    logits, cache = model.prefill(np.tile(np.asarray(prompt_ids, np.int32), (batch, 1)), max_len)
    logits.block_until_ready()
    stats.prefill_s = time.perf_counter() - t0

    # Warm-up, outside the timed loop: compile (on first use) and run the sampler and the
    # decode step once. The decode step writes position len(prompt), which the first real
    # step overwrites before attending to it.
    bitmask = xgr2.allocate_token_bitmask(batch, info.vocab_size)  # all ones: nothing masked
    key = jax.random.key(seed)
    xgr2.jax.sample(jax.random.fold_in(key, 0), logits, bitmask, temperature=temperature).block_until_ready()
    warm, cache = model.decode_step(np.zeros(batch, np.int32), len(prompt_ids), cache)
    warm.block_until_ready()
    if speculative:
        tree_model: TreeModel = model  # type: ignore[assignment]  # checked by use: Llama has tree_step
        cache = warm_up(tree_model, batch, draft_sizes(speculative), len(prompt_ids), cache, info.vocab_size, temperature)
        # Per tokenizer, not per request (a server builds it once): outside the timed decode.
        drafter = xgr2.jax.TreeDrafter(lambda text: tokenizer.encode(text, add_special_tokens=False).ids,
                                       vocab_bytes, num_nodes=speculative, sizes=draft_sizes(speculative))

    decoder = xgr2.jax.ConstrainedDecoder(compiled_grammar, batch, max_tokens=max_tokens, constrained=constrained)
    stream = _Utf8Stream(vocab_bytes, on_text)
    pos = len(prompt_ids)
    t0 = time.perf_counter()
    if speculative:
        _run_speculative(model, drafter, decoder, logits, cache, prompt_ids, key, temperature, stats, stream)
    while not speculative:
        # The device is computing `logits` (dispatched at the end of the previous step).
        t_mask = time.perf_counter()
        bitmask = decoder.next_bitmask()  # finished rows (and unconstrained runs) allow all
        if constrained:
            stats.mask_s += time.perf_counter() - t_mask
        live = int(decoder.active.sum())
        step = decoder.num_steps
        sampled = xgr2.jax.sample(jax.random.fold_in(key, step), logits, bitmask, temperature=temperature)
        tokens = decoder.commit(sampled)  # waits for the device; finished rows are fed the pad id
        stats.tokens += live
        stats.decode_tokens += live if step > 0 else 0
        if decoder.done:
            break
        logits, cache = model.decode_step(tokens, pos, cache)  # async: overlaps the next mask fill
        pos += 1
        stats.steps += 1
        stream.update(decoder.token_ids[0])  # host work also overlaps the device
    stats.decode_s = time.perf_counter() - t0
    out_ids = decoder.token_ids
    stream.update(out_ids[0], final=True)
    stats.finished = [reason == "stop" for reason in decoder.finish_reasons]
    stats.token_ids = out_ids
    texts = [b"".join(vocab_bytes[t] for t in ids).decode("utf-8", errors="replace") for ids in out_ids]
    return texts, stats


def _run_speculative(model: Any, drafter: xgr2.jax.TreeDrafter, decoder: xgr2.jax.ConstrainedDecoder,
                     logits: jax.Array,
                     cache: Any, prompt_ids: list[int], key: jax.Array, temperature: float,
                     stats: GenerationStats, stream: _Utf8Stream) -> None:
    """The first token from the prefill's logits (as in the plain loop), then draft trees."""
    t_mask = time.perf_counter()
    bitmask = decoder.next_bitmask()
    stats.mask_s += time.perf_counter() - t_mask
    stats.tokens += decoder.batch
    roots = decoder.commit(xgr2.jax.sample(jax.random.fold_in(key, 0), logits, bitmask, temperature=temperature))

    def on_step(emitted: list[list[int]], accepted: int, mask_s: float) -> None:
        stats.steps += 1
        stats.mask_s += mask_s
        stats.accepted += accepted
        stats.row_steps += sum(1 for tokens in emitted if tokens)
        count = sum(len(tokens) for tokens in emitted)  # stop tokens included (excluded from token_ids)
        stats.tokens += count
        stats.decode_tokens += count
        stream.update(decoder.token_ids[0])

    speculative_loop(model, decoder, drafter, roots, len(prompt_ids), cache, prompt_ids, key, temperature,
                     on_step)


class _Utf8Stream:
    """Feeds token bytes through an incremental UTF-8 decoder to a text callback."""

    def __init__(self, vocab_bytes: list[bytes], on_text: Callable[[str], None] | None):
        self._vocab, self._on_text = vocab_bytes, on_text
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._sent = 0

    def update(self, ids: list[int], final: bool = False) -> None:
        """Sends the text of the ids not sent yet (``final``: flush a trailing partial character)."""
        if self._on_text is None:
            return
        data = b"".join(self._vocab[t] for t in ids[self._sent:])
        self._sent = len(ids)
        text = self._decoder.decode(data, final=final)
        if text:
            self._on_text(text)

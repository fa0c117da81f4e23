"""A Gemma 3 decoder in JAX (Gemma 3 270M), with a fixed-size KV cache.

What differs from :mod:`xgr2.demo.llama`:
  - embeddings scaled by ``sqrt(d_model)``; the output head is the (unscaled) embedding;
  - RMSNorm on each query and key head before RoPE, and a norm after attention and after
    the feed-forward, before each residual add (GGUF norm weights already include
    Gemma's ``+ 1``);
  - GeGLU feed-forward (tanh-approximated GELU);
  - two kinds of layers: every ``global_every``-th layer (5, 11, 17 of 18) attends to the
    whole context with RoPE base 1e6; the others are local, attending to the last
    ``sliding_window`` positions (the query's included) with RoPE base 1e4.

The cache of a local layer is a ring of ``min(sliding_window, max_len)`` slots: position
``p`` lives in slot ``p % size``. A global layer's cache is a ring of ``max_len`` slots,
which never wraps. Slot ``j`` of a ring of ``size`` slots, seen from position ``q``, holds
position ``q - (q - j) % size`` (negative: not written yet), so both kinds share one mask.
As in :mod:`xgr2.demo.llama`, :func:`decode_step` compiles once per (batch, ``max_len``).

For Gemma 3 270M: ``model = Gemma3.from_checkpoint(gguf_loader.load("gemma3-270m"))``.
A tiny random model:

>>> import jax, numpy as np
>>> cfg = Gemma3Config(vocab_size=32, d_model=16, n_layers=3, n_heads=2, n_kv_heads=1, head_dim=8,
...                    ffn_dim=24, norm_eps=1e-6, sliding_window=4, global_every=3)
>>> model = Gemma3(cfg, init_params(cfg, jax.random.key(0)))
>>> logits, cache = model.prefill(np.array([[1, 2, 3]]), max_len=8)    # 3 prompt tokens
>>> logits.shape, [k.shape for k in cache.k]   # [B, V]; per layer [B, slots, kv heads, head_dim]
((1, 32), [(1, 4, 1, 8), (1, 4, 1, 8), (1, 8, 1, 8)])
>>> logits, cache = model.decode_step(np.array([7]), 3, cache)         # token 7 at position 3
>>> logits.shape
(1, 32)
"""

from __future__ import annotations

import collections
import functools
import math
from dataclasses import dataclass
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from .llama import Llama, Params, _attention, _rmsnorm, _rope


@dataclass(frozen=True)
class Gemma3Config:
    """Hyperparameters (hashable: a static argument of the jitted functions)."""

    vocab_size: int
    d_model: int
    n_layers: int
    n_heads: int
    n_kv_heads: int
    head_dim: int
    ffn_dim: int
    norm_eps: float
    sliding_window: int
    global_every: int = 6             # layer i is global iff (i + 1) % global_every == 0
    rope_global_base: float = 1_000_000.0
    rope_local_base: float = 10_000.0

    def is_global(self, layer: int) -> bool:
        return (layer + 1) % self.global_every == 0

    def cache_slots(self, layer: int, max_len: int) -> int:
        """Ring size of ``layer``'s cache for ``max_len`` positions."""
        return max_len if self.is_global(layer) else min(self.sliding_window, max_len)

    @staticmethod
    def from_hparams(h: dict[str, Any]) -> Gemma3Config:
        """From GGUF ``gemma3.*`` metadata (prefix dropped, see ``gguf_loader.Checkpoint``).

        The layer pattern and the local RoPE base are not in the GGUF; they are Gemma 3's.
        """
        return Gemma3Config(
            vocab_size=int(h["vocab_size"]), d_model=int(h["embedding_length"]), n_layers=int(h["block_count"]),
            n_heads=int(h["attention.head_count"]), n_kv_heads=int(h["attention.head_count_kv"]),
            head_dim=int(h["attention.key_length"]), ffn_dim=int(h["feed_forward_length"]),
            norm_eps=float(h["attention.layer_norm_rms_epsilon"]),
            sliding_window=int(h.get("attention.sliding_window", 512)),
            rope_global_base=float(h.get("rope.freq_base", 1_000_000.0)),
        )


class KVCache(NamedTuple):
    """Keys and values, one float32 array ``[B, slots, n_kv_heads, head_dim]`` per layer
    (slots: :meth:`Gemma3Config.cache_slots`)."""

    k: tuple[jax.Array, ...]
    v: tuple[jax.Array, ...]


# GGUF tensor names (after ``blk.{i}.``) of each layer's parameters.
_LAYER_TENSORS = {
    "attn_norm": "attn_norm", "wq": "attn_q", "wk": "attn_k", "wv": "attn_v", "wo": "attn_output",
    "q_norm": "attn_q_norm", "k_norm": "attn_k_norm", "post_attn_norm": "post_attention_norm",
    "ffn_norm": "ffn_norm", "w_gate": "ffn_gate", "w_up": "ffn_up", "w_down": "ffn_down",
    "post_ffn_norm": "post_ffw_norm",
}
_NORMS = {"attn_norm", "q_norm", "k_norm", "post_attn_norm", "ffn_norm", "post_ffn_norm"}


def params_from_gguf(weights: dict[str, np.ndarray], cfg: Gemma3Config) -> Params:
    """The parameter pytree from GGUF tensors ((out, in) matrices; stored here as (in, out))."""
    def tensor(name: str) -> jax.Array:
        w = weights[name]
        return jnp.asarray(w if w.ndim == 1 else np.ascontiguousarray(w.T))

    layers = [{key: tensor(f"blk.{i}.{name}.weight") for key, name in _LAYER_TENSORS.items()}
              for i in range(cfg.n_layers)]
    return {"embed": jnp.asarray(weights["token_embd.weight"]), "norm": tensor("output_norm.weight"),
            "layers": layers}


def init_params(cfg: Gemma3Config, key: jax.Array, scale: float = 0.1) -> Params:
    """Random parameters (normal times ``scale``; norms ``1 + scale * normal``; embedding
    unscaled), for tests and examples."""
    d, hd = cfg.d_model, cfg.head_dim
    shapes = {"wq": (d, cfg.n_heads * hd), "wk": (d, cfg.n_kv_heads * hd), "wv": (d, cfg.n_kv_heads * hd),
              "wo": (cfg.n_heads * hd, d), "w_gate": (d, cfg.ffn_dim), "w_up": (d, cfg.ffn_dim),
              "w_down": (cfg.ffn_dim, d), "q_norm": (hd,), "k_norm": (hd,), "attn_norm": (d,),
              "post_attn_norm": (d,), "ffn_norm": (d,), "post_ffn_norm": (d,)}
    keys = iter(jax.random.split(key, cfg.n_layers * len(shapes) + 1))
    layers = [{name: float(name in _NORMS) + scale * jax.random.normal(next(keys), shape)
               for name, shape in shapes.items()} for _ in range(cfg.n_layers)]
    return {"embed": jax.random.normal(next(keys), (cfg.vocab_size, d)), "norm": jnp.ones(d), "layers": layers}


def _transformer(params: Params, tokens: jax.Array, start: jax.Array, cache: KVCache | None,
                 cfg: Gemma3Config) -> tuple[jax.Array, list[tuple[jax.Array, jax.Array]]]:
    """Final hidden states [B, S, D] of ``tokens`` [B, S] at positions ``start ...``, and
    each layer's keys and values: the new ones [B, S, KV, Dh] without a cache, the
    updated cache arrays with one.

    Without a cache, attention covers ``tokens`` alone (causal, windowed in local layers).
    With one (a decode step: S = 1), the new key/value is written in its slot and
    attention covers the cache.
    """
    b, s = tokens.shape
    positions = start + jnp.arange(s, dtype=jnp.int32)
    x = params["embed"][tokens] * math.sqrt(cfg.d_model)
    kvs = []
    for i, layer in enumerate(params["layers"]):  # a Python loop: faster than scan on XLA CPU
        rope_base = cfg.rope_global_base if cfg.is_global(i) else cfg.rope_local_base
        h = _rmsnorm(x, layer["attn_norm"], cfg.norm_eps)
        q = (h @ layer["wq"]).reshape(b, s, cfg.n_heads, cfg.head_dim)
        k = (h @ layer["wk"]).reshape(b, s, cfg.n_kv_heads, cfg.head_dim)
        q = _rope(_rmsnorm(q, layer["q_norm"], cfg.norm_eps), positions, rope_base)
        k = _rope(_rmsnorm(k, layer["k_norm"], cfg.norm_eps), positions, rope_base)
        v = (h @ layer["wv"]).reshape(b, s, cfg.n_kv_heads, cfg.head_dim)
        if cache is None:
            key_positions = positions
        else:
            slots = cache.k[i].shape[1]
            at = (0, start % slots, 0, 0)
            k = jax.lax.dynamic_update_slice(cache.k[i], k, at)
            v = jax.lax.dynamic_update_slice(cache.v[i], v, at)
            key_positions = start - (start - jnp.arange(slots, dtype=jnp.int32)) % slots
        kvs.append((k, v))
        distance = positions[:, None] - key_positions[None, :]  # [S, T]
        mask = (key_positions[None, :] >= 0) & (distance >= 0)
        if not cfg.is_global(i):
            mask &= distance < cfg.sliding_window
        h = _attention(q, k, v, mask) @ layer["wo"]  # scores / sqrt(head_dim): query_pre_attn_scalar = 256
        x = x + _rmsnorm(h, layer["post_attn_norm"], cfg.norm_eps)
        h = _rmsnorm(x, layer["ffn_norm"], cfg.norm_eps)
        h = (jax.nn.gelu(h @ layer["w_gate"], approximate=True) * (h @ layer["w_up"])) @ layer["w_down"]
        x = x + _rmsnorm(h, layer["post_ffn_norm"], cfg.norm_eps)
    return _rmsnorm(x, params["norm"], cfg.norm_eps), kvs


def _logits(params: Params, x: jax.Array) -> jax.Array:
    return jnp.einsum("...d,vd->...v", x, params["embed"])  # tied head


def _to_ring(kv: jax.Array, slots: int) -> jax.Array:
    """A new cache ring of ``slots`` slots [B, slots, ...] holding the last positions of
    ``kv`` [B, S, ...] (positions 0 ... S-1), position p in slot p % slots."""
    b, s = kv.shape[:2]
    if s <= slots:
        return jnp.zeros((b, slots, *kv.shape[2:]), kv.dtype).at[:, :s].set(kv)
    return jnp.roll(kv[:, s - slots:], s % slots, axis=1)  # position s - slots + i -> slot (s + i) % slots


# How many times each jitted entry point was traced (see llama.TRACES).
TRACES: collections.Counter[str] = collections.Counter()


@functools.partial(jax.jit, static_argnames="cfg")
def forward(params: Params, tokens: jax.Array, *, cfg: Gemma3Config) -> jax.Array:
    """Logits [B, S, V] of every position of ``tokens`` [B, S]: a full causal pass, no cache."""
    TRACES["forward"] += 1
    x, _ = _transformer(params, tokens, jnp.int32(0), None, cfg)
    return _logits(params, x)


@functools.partial(jax.jit, static_argnames=("cfg", "max_len"))
def prefill(params: Params, tokens: jax.Array, *, cfg: Gemma3Config, max_len: int) -> tuple[jax.Array, KVCache]:
    """Runs the prompt ``tokens`` [B, S] into a new cache for ``max_len`` positions.

    Returns:
      the logits [B, V] of the last prompt position and the cache.
    """
    TRACES["prefill"] += 1
    x, kvs = _transformer(params, tokens, jnp.int32(0), None, cfg)
    rings = [(_to_ring(k, cfg.cache_slots(i, max_len)), _to_ring(v, cfg.cache_slots(i, max_len)))
             for i, (k, v) in enumerate(kvs)]
    return _logits(params, x[:, -1]), KVCache(*map(tuple, zip(*rings, strict=True)))


@functools.partial(jax.jit, static_argnames="cfg", donate_argnames="cache")
def decode_step(params: Params, tokens: jax.Array, pos: jax.Array, cache: KVCache, *,
                cfg: Gemma3Config) -> tuple[jax.Array, KVCache]:
    """One token per row: ``tokens`` int32 [B] at position ``pos`` (int32 scalar).

    Compiled once per (batch, cache size): the position is traced. The cache is donated
    (updated in place): use the returned one.
    """
    TRACES["decode_step"] += 1
    x, kvs = _transformer(params, tokens[:, None], pos, cache, cfg)
    return _logits(params, x[:, 0]), KVCache(*map(tuple, zip(*kvs, strict=True)))


class Gemma3(Llama):
    """A model: its config and parameters, with the entry points above bound to them
    (:class:`xgr2.demo.llama.Llama`'s methods, calling this module's functions)."""

    _forward = staticmethod(forward)
    _prefill = staticmethod(prefill)
    _decode_step = staticmethod(decode_step)
    _tree_step = None  # no tree pass (speculative decoding) for Gemma 3 yet

    @staticmethod
    def from_checkpoint(ckpt: Any) -> Gemma3:
        """From a ``gguf_loader.Checkpoint`` of a gemma3 GGUF."""
        cfg = Gemma3Config.from_hparams(ckpt.hparams)
        return Gemma3(cfg, params_from_gguf(ckpt.weights, cfg))

"""A Llama-architecture decoder in JAX (SmolLM2), with a fixed-size KV cache.

Parameters are a plain pytree of float32 arrays (float32 is much faster than bfloat16 on
XLA CPU). :meth:`Llama.decode_step` is jitted once per (batch, cache length): the cache
has a fixed size and the position is a traced scalar, so decoding never retraces.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

Params = dict[str, Any]  # {"embed": [V, D], "norm": [D], "layers": [{...}, ...]}


@dataclass(frozen=True)
class LlamaConfig:
    """Hyperparameters (hashable: a static argument of the jitted functions)."""

    vocab_size: int
    d_model: int
    n_layers: int
    n_heads: int
    n_kv_heads: int
    ffn_dim: int
    rope_base: float
    norm_eps: float

    @property
    def head_dim(self) -> int:
        return self.d_model // self.n_heads

    @staticmethod
    def from_hparams(h: dict[str, Any]) -> "LlamaConfig":
        """From GGUF ``llama.*`` metadata (prefix dropped, see ``gguf_loader.Checkpoint``)."""
        return LlamaConfig(
            vocab_size=int(h["vocab_size"]), d_model=int(h["embedding_length"]), n_layers=int(h["block_count"]),
            n_heads=int(h["attention.head_count"]), n_kv_heads=int(h["attention.head_count_kv"]),
            ffn_dim=int(h["feed_forward_length"]), rope_base=float(h.get("rope.freq_base", 10000.0)),
            norm_eps=float(h["attention.layer_norm_rms_epsilon"]),
        )


class KVCache(NamedTuple):
    """Keys and values of every layer: float32 ``[n_layers, B, max_len, n_kv_heads, head_dim]`` each."""

    k: jax.Array
    v: jax.Array


def params_from_gguf(weights: dict[str, np.ndarray], cfg: LlamaConfig) -> Params:
    """The parameter pytree from GGUF tensors ((out, in) matrices; stored here as (in, out))."""
    mat = lambda name: jnp.asarray(np.ascontiguousarray(weights[name].T))  # noqa: E731
    layers = []
    for i in range(cfg.n_layers):
        p = f"blk.{i}."
        layers.append({
            "attn_norm": jnp.asarray(weights[p + "attn_norm.weight"]),
            "wq": mat(p + "attn_q.weight"), "wk": mat(p + "attn_k.weight"),
            "wv": mat(p + "attn_v.weight"), "wo": mat(p + "attn_output.weight"),
            "ffn_norm": jnp.asarray(weights[p + "ffn_norm.weight"]),
            "w_gate": mat(p + "ffn_gate.weight"), "w_up": mat(p + "ffn_up.weight"),
            "w_down": mat(p + "ffn_down.weight"),
        })
    embed = jnp.asarray(weights["token_embd.weight"])
    head = weights.get("output.weight")  # absent: tied to the embedding
    return {"embed": embed, "norm": jnp.asarray(weights["output_norm.weight"]), "layers": layers,
            "head": embed if head is None else jnp.asarray(head)}


def _rmsnorm(x: jax.Array, w: jax.Array, eps: float) -> jax.Array:
    return x * jax.lax.rsqrt(jnp.mean(x * x, axis=-1, keepdims=True) + eps) * w


def _rope(x: jax.Array, positions: jax.Array, base: float) -> jax.Array:
    """Rotate-half rotary embedding of ``x`` [B, S, heads, head_dim] at ``positions`` [S]."""
    half = x.shape[-1] // 2
    inv_freq = base ** (-jnp.arange(half, dtype=jnp.float32) / half)
    angles = positions.astype(jnp.float32)[:, None] * inv_freq  # [S, half]
    cos, sin = jnp.cos(angles)[:, None], jnp.sin(angles)[:, None]
    x1, x2 = x[..., :half], x[..., half:]
    return jnp.concatenate([x1 * cos - x2 * sin, x2 * cos + x1 * sin], axis=-1)


def _attention(q: jax.Array, k: jax.Array, v: jax.Array, mask: jax.Array) -> jax.Array:
    """Grouped-query attention: q [B, S, H, Dh], k/v [B, T, KV, Dh], mask bool [S, T] -> [B, S, H * Dh]."""
    b, s, h, dh = q.shape
    kv = k.shape[2]
    q = q.reshape(b, s, kv, h // kv, dh)
    scores = jnp.einsum("bskgd,btkd->bkgst", q, k) / jnp.sqrt(jnp.float32(dh))
    scores = jnp.where(mask, scores, -jnp.inf)
    out = jnp.einsum("bkgst,btkd->bskgd", jax.nn.softmax(scores, axis=-1), v)
    return out.reshape(b, s, h * dh)


def _transformer(params: Params, tokens: jax.Array, start: jax.Array, cache: KVCache | None,
                 cfg: LlamaConfig) -> tuple[jax.Array, KVCache | None]:
    """Final hidden states [B, S, D] of ``tokens`` [B, S] at positions ``start ...``.

    With a cache, the new keys/values are written at ``start`` and attention covers the
    cache up to each position; without one, attention is causal over ``tokens`` alone.
    """
    b, s = tokens.shape
    positions = start + jnp.arange(s, dtype=jnp.int32)
    x = params["embed"][tokens]
    for i, layer in enumerate(params["layers"]):  # a Python loop: faster than scan on XLA CPU
        h = _rmsnorm(x, layer["attn_norm"], cfg.norm_eps)
        q = _rope((h @ layer["wq"]).reshape(b, s, cfg.n_heads, cfg.head_dim), positions, cfg.rope_base)
        k = _rope((h @ layer["wk"]).reshape(b, s, cfg.n_kv_heads, cfg.head_dim), positions, cfg.rope_base)
        v = (h @ layer["wv"]).reshape(b, s, cfg.n_kv_heads, cfg.head_dim)
        if cache is None:
            key_positions = positions
        else:
            at = (i, 0, start, 0, 0)
            cache = KVCache(jax.lax.dynamic_update_slice(cache.k, k[None], at),
                            jax.lax.dynamic_update_slice(cache.v, v[None], at))
            k, v = cache.k[i], cache.v[i]
            key_positions = jnp.arange(k.shape[1], dtype=jnp.int32)
        mask = key_positions[None, :] <= positions[:, None]
        x = x + _attention(q, k, v, mask) @ layer["wo"]
        h = _rmsnorm(x, layer["ffn_norm"], cfg.norm_eps)
        x = x + (jax.nn.silu(h @ layer["w_gate"]) * (h @ layer["w_up"])) @ layer["w_down"]
    return _rmsnorm(x, params["norm"], cfg.norm_eps), cache


def _logits(params: Params, x: jax.Array) -> jax.Array:
    return jnp.einsum("...d,vd->...v", x, params["head"])


class Llama:
    """A Llama model: config, parameters and its jitted entry points.

    >>> # model = Llama(LlamaConfig.from_hparams(ckpt.hparams), params_from_gguf(ckpt.weights, cfg))
    >>> # logits, cache = model.prefill(prompt_ids[None], max_len=256)
    >>> # logits, cache = model.decode_step(next_ids, np.int32(len(prompt_ids)), cache)
    """

    def __init__(self, cfg: LlamaConfig, params: Params):
        self.cfg = cfg
        self.params = params
        self.decode_traces = 0  # how many times decode_step was traced (compiled)
        self._forward = jax.jit(self._forward_impl)
        self._prefill = jax.jit(self._prefill_impl, static_argnames="max_len")
        self._decode = jax.jit(self._decode_impl, donate_argnames="cache")

    def forward(self, tokens: jax.Array) -> jax.Array:
        """Logits [B, S, V] of every position of ``tokens`` [B, S]: a full causal pass, no cache."""
        return self._forward(self.params, jnp.asarray(tokens, jnp.int32))

    def prefill(self, tokens: jax.Array, max_len: int) -> tuple[jax.Array, KVCache]:
        """Runs the prompt ``tokens`` [B, S] into a new cache of ``max_len`` positions.

        Returns:
          the logits [B, V] of the last prompt position and the cache.
        """
        if tokens.shape[1] > max_len:
            raise ValueError(f"prompt of {tokens.shape[1]} tokens does not fit a cache of {max_len}")
        return self._prefill(self.params, jnp.asarray(tokens, jnp.int32), max_len=max_len)

    def decode_step(self, tokens: jax.Array, pos: jax.Array, cache: KVCache) -> tuple[jax.Array, KVCache]:
        """One token per row: ``tokens`` int32 [B] at position ``pos`` (int32 scalar).

        The cache is donated (updated in place): use the returned one. Asynchronous like
        any JAX call: it returns at once and the logits [B, V] are computed in the background.
        """
        return self._decode(self.params, jnp.asarray(tokens, jnp.int32), jnp.asarray(pos, jnp.int32), cache)

    def new_cache(self, batch: int, max_len: int) -> KVCache:
        """A zeroed cache for ``batch`` rows of ``max_len`` positions."""
        c = self.cfg
        shape = (c.n_layers, batch, max_len, c.n_kv_heads, c.head_dim)
        return KVCache(jnp.zeros(shape, jnp.float32), jnp.zeros(shape, jnp.float32))

    def _forward_impl(self, params: Params, tokens: jax.Array) -> jax.Array:
        x, _ = _transformer(params, tokens, jnp.int32(0), None, self.cfg)
        return _logits(params, x)

    def _prefill_impl(self, params: Params, tokens: jax.Array, *, max_len: int) -> tuple[jax.Array, KVCache]:
        cache = self.new_cache(tokens.shape[0], max_len)
        x, cache = _transformer(params, tokens, jnp.int32(0), cache, self.cfg)
        return _logits(params, x[:, -1]), cache

    def _decode_impl(self, params: Params, tokens: jax.Array, pos: jax.Array,
                     cache: KVCache) -> tuple[jax.Array, KVCache]:
        self.decode_traces += 1  # Python side effect: runs only while tracing
        x, cache = _transformer(params, tokens[:, None], pos, cache, self.cfg)
        return _logits(params, x[:, 0]), cache


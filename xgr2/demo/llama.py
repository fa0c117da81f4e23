"""A Llama-architecture decoder in JAX (SmolLM2), with a fixed-size KV cache.

Parameters are a plain pytree of float32 arrays (float32 is much faster than bfloat16 on
XLA CPU). :func:`decode_step` is compiled once per (batch, cache length): the cache has
a fixed size and the position is a traced scalar, so decoding never retraces.

For SmolLM2: ``cfg = LlamaConfig.from_hparams(ckpt.hparams)`` and
``Llama(cfg, params_from_gguf(ckpt.weights, cfg))`` with ``ckpt = gguf_loader.load()``.
A tiny random model:

>>> import jax, numpy as np
>>> cfg = LlamaConfig(vocab_size=32, d_model=16, n_layers=2, n_heads=4, n_kv_heads=2, ffn_dim=24,
...                   rope_base=10000.0, norm_eps=1e-5)
>>> model = Llama(cfg, init_params(cfg, jax.random.key(0)))
>>> logits, cache = model.prefill(np.array([[1, 2, 3]]), max_len=8)    # 3 prompt tokens
>>> logits.shape, cache.k.shape     # [B, V]; [layers, B, max_len, kv heads, head_dim]
((1, 32), (2, 1, 8, 2, 4))
>>> logits, cache = model.decode_step(np.array([7]), 3, cache)         # token 7 at position 3
>>> logits.shape
(1, 32)
"""

from __future__ import annotations

import collections
import collections.abc
import functools
from dataclasses import dataclass
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from xgr2.jax import DraftTree, ancestor_mask, tree_depth

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
    def from_hparams(h: dict[str, Any]) -> LlamaConfig:
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
    """The parameter pytree from GGUF tensors, matrices kept (out, in) (see :func:`_linear`)."""
    def mat(name: str) -> jax.Array:
        return jnp.asarray(weights[name])

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


def init_params(cfg: LlamaConfig, key: jax.Array, scale: float = 0.1) -> Params:
    """Random parameters (normal, times ``scale``; embedding unscaled), for tests and examples.
    Matrices are (out, in), as :func:`_linear` takes them."""
    d, hd = cfg.d_model, cfg.head_dim
    shapes = {"wq": (cfg.n_heads * hd, d), "wk": (cfg.n_kv_heads * hd, d), "wv": (cfg.n_kv_heads * hd, d),
              "wo": (d, cfg.n_heads * hd), "w_gate": (cfg.ffn_dim, d), "w_up": (cfg.ffn_dim, d),
              "w_down": (d, cfg.ffn_dim)}
    keys = iter(jax.random.split(key, cfg.n_layers * len(shapes) + 1))
    layers = [{"attn_norm": jnp.ones(d), "ffn_norm": jnp.ones(d),
               **{name: scale * jax.random.normal(next(keys), shape) for name, shape in shapes.items()}}
              for _ in range(cfg.n_layers)]
    embed = jax.random.normal(next(keys), (cfg.vocab_size, d))
    return {"embed": embed, "head": embed, "norm": jnp.ones(d), "layers": layers}


def _linear(x: jax.Array, w: jax.Array) -> jax.Array:
    """``x`` [..., in] times the (out, in) matrix ``w``: [..., out].

    Computed as ``w @ x.T`` with the product's layout pinned (the barrier), so XLA CPU runs
    a matrix times a few columns. Left free, XLA folds the transposes into the dot and
    runs ``x @ w.T``, whose cost on 2 cores grows ~2x from one row to four (SmolLM2-135M's
    matrices: 18 ms for one row, 37 for four; pinned: 17 and 25). A draft tree's pass over
    a few nodes then costs ~1.3-1.5x a one-token step instead of 2-2.6x.
    """
    rows = x.reshape(-1, x.shape[-1])
    pinned: jax.Array = jax.lax.optimization_barrier(w @ rows.T)  # type: ignore[no-untyped-call]
    return pinned.T.reshape(*x.shape[:-1], w.shape[0])


def _rmsnorm(x: jax.Array, w: jax.Array, eps: float) -> jax.Array:
    w = w.reshape((1,) * (x.ndim - 1) + w.shape)  # explicit ranks: works under rank_promotion="raise"
    return x * jax.lax.rsqrt(jnp.mean(x * x, axis=-1, keepdims=True) + eps) * w


def _rope(x: jax.Array, positions: jax.Array, base: float) -> jax.Array:
    """Rotate-half rotary embedding of ``x`` [B, S, heads, head_dim] at ``positions`` [S] or [B, S]."""
    half = x.shape[-1] // 2
    inv_freq = base ** (-jnp.arange(half, dtype=jnp.float32) / half)
    angles = positions.astype(jnp.float32)[..., None] * inv_freq.reshape((1,) * positions.ndim + (half,))  # [(B,) S, half]
    if angles.ndim == 2:
        angles = angles[None]
    cos, sin = jnp.cos(angles)[:, :, None], jnp.sin(angles)[:, :, None]  # [1 or B, S, 1, half]
    x1, x2 = x[..., :half], x[..., half:]
    return jnp.concatenate([x1 * cos - x2 * sin, x2 * cos + x1 * sin], axis=-1)


def _attention(q: jax.Array, k: jax.Array, v: jax.Array, mask: jax.Array) -> jax.Array:
    """Grouped-query attention: q [B, S, H, Dh], k/v [B, T, KV, Dh], mask bool [S, T] or [B, S, T]
    -> [B, S, H * Dh]."""
    b, s, h, dh = q.shape
    kv = k.shape[2]
    q = q.reshape(b, s, kv, h // kv, dh)
    scores = jnp.einsum("bskgd,btkd->bkgst", q, k) / jnp.sqrt(jnp.float32(dh))
    mask = mask[None, None, None] if mask.ndim == 2 else mask[:, None, None]
    scores = jnp.where(mask, scores, -jnp.inf)
    out = jnp.einsum("bkgst,btkd->bskgd", jax.nn.softmax(scores, axis=-1), v)
    return out.reshape(b, s, h * dh)


def _transformer(params: Params, tokens: jax.Array, start: jax.Array, cache: KVCache | None,
                 cfg: LlamaConfig) -> tuple[jax.Array, KVCache | None]:
    """Final hidden states [B, S, D] of ``tokens`` [B, S] at positions ``start ...``.

    With a cache, the new keys/values are written at ``start`` and attention covers the
    cache up to each position; without one, attention is causal over ``tokens`` alone.
    """
    positions = start + jnp.arange(tokens.shape[1], dtype=jnp.int32)
    if cache is None:
        return _layers(params, tokens, positions, positions[None, :] <= positions[:, None], None, None, cfg)
    key_positions = jnp.arange(cache.k.shape[2], dtype=jnp.int32)

    def write(c: KVCache, i: int, k: jax.Array, v: jax.Array) -> KVCache:
        at = (i, 0, start, 0, 0)
        return KVCache(jax.lax.dynamic_update_slice(c.k, k[None], at), jax.lax.dynamic_update_slice(c.v, v[None], at))

    return _layers(params, tokens, positions, key_positions[None, :] <= positions[:, None], cache, write, cfg)


_Write = collections.abc.Callable[[KVCache, int, jax.Array, jax.Array], KVCache]


def _layers(params: Params, tokens: jax.Array, positions: jax.Array, mask: jax.Array, cache: KVCache | None,
            write: _Write | None, cfg: LlamaConfig) -> tuple[jax.Array, KVCache | None]:
    """The decoder stack over ``tokens`` [B, S] at RoPE ``positions`` ([S] or [B, S]).

    Without a cache, attention is over ``tokens`` themselves under ``mask`` [S, S]; with
    one, ``write(cache, layer, k, v)`` stores each layer's new keys/values and attention
    covers the whole cache under ``mask`` ([S, T] or [B, S, T]).
    """
    b, s = tokens.shape
    x = params["embed"][tokens]
    for i, layer in enumerate(params["layers"]):  # a Python loop: faster than scan on XLA CPU
        h = _rmsnorm(x, layer["attn_norm"], cfg.norm_eps)
        q = _rope(_linear(h, layer["wq"]).reshape(b, s, cfg.n_heads, cfg.head_dim), positions, cfg.rope_base)
        k = _rope(_linear(h, layer["wk"]).reshape(b, s, cfg.n_kv_heads, cfg.head_dim), positions, cfg.rope_base)
        v = _linear(h, layer["wv"]).reshape(b, s, cfg.n_kv_heads, cfg.head_dim)
        if cache is not None and write is not None:
            cache = write(cache, i, k, v)
            k, v = cache.k[i], cache.v[i]
        x = x + _linear(_attention(q, k, v, mask), layer["wo"])
        h = _rmsnorm(x, layer["ffn_norm"], cfg.norm_eps)
        x = x + _linear(jax.nn.silu(_linear(h, layer["w_gate"])) * _linear(h, layer["w_up"]), layer["w_down"])
    return _rmsnorm(x, params["norm"], cfg.norm_eps), cache


def _logits(params: Params, x: jax.Array) -> jax.Array:
    return _linear(x, params["head"])


# How many times each jitted entry point was traced (a Python side effect that runs only
# while tracing): tests use it to check that decoding never retraces.
TRACES: collections.Counter[str] = collections.Counter()


@functools.partial(jax.jit, static_argnames="cfg")
def forward(params: Params, tokens: jax.Array, *, cfg: LlamaConfig) -> jax.Array:
    """Logits [B, S, V] of every position of ``tokens`` [B, S]: a full causal pass, no cache."""
    TRACES["forward"] += 1
    x, _ = _transformer(params, tokens, jnp.int32(0), None, cfg)
    return _logits(params, x)


@functools.partial(jax.jit, static_argnames=("cfg", "max_len"))
def prefill(params: Params, tokens: jax.Array, *, cfg: LlamaConfig, max_len: int) -> tuple[jax.Array, KVCache]:
    """Runs the prompt ``tokens`` [B, S] into a new cache of ``max_len`` positions.

    Returns:
      the logits [B, V] of the last prompt position and the cache.
    """
    TRACES["prefill"] += 1
    x, filled = _transformer(params, tokens, jnp.int32(0), new_cache(cfg, tokens.shape[0], max_len), cfg)
    assert filled is not None  # a cache in, a cache out
    return _logits(params, x[:, -1]), filled


@functools.partial(jax.jit, static_argnames="cfg", donate_argnames="cache")
def decode_step(params: Params, tokens: jax.Array, pos: jax.Array, cache: KVCache, *,
                cfg: LlamaConfig) -> tuple[jax.Array, KVCache]:
    """One token per row: ``tokens`` int32 [B] at position ``pos`` (int32 scalar).

    Compiled once per (batch, cache size): the position is traced. The cache is donated
    (updated in place): use the returned one. Like any JAX call it returns at once; the
    logits [B, V] are computed in the background.
    """
    TRACES["decode_step"] += 1
    x, updated = _transformer(params, tokens[:, None], pos, cache, cfg)
    assert updated is not None  # a cache in, a cache out
    return _logits(params, x[:, 0]), updated


def _tree_mask(tree: DraftTree, pos: jax.Array, max_len: int) -> jax.Array:
    """bool [B, N, T]: node i sees the cache before its row's ``pos`` and its own path's slots."""
    n = tree.parents.shape[1]
    t = jnp.arange(max_len, dtype=jnp.int32)[None, :]
    rel = t - pos[:, None]                                                  # [B, T]: slot - pos
    in_tree = (rel >= 0) & (rel < n)
    index = jnp.broadcast_to(jnp.clip(rel, 0, n - 1)[:, None, :], (rel.shape[0], n, max_len))
    on_path = jnp.take_along_axis(ancestor_mask(tree), index, axis=2)      # [B, N, T]
    return (rel < 0)[:, None, :] | (in_tree[:, None, :] & on_path)


@functools.partial(jax.jit, static_argnames="cfg", donate_argnames="cache")
def tree_step(params: Params, tree: DraftTree, pos: jax.Array, cache: KVCache, *,
              cfg: LlamaConfig) -> tuple[jax.Array, KVCache]:
    """Runs a batch of draft trees in one pass (speculative decoding).

    Row ``b``'s node ``i`` (``tree.tokens[b, i]``; node 0 is the last emitted token, not
    yet in the cache) is written at cache slot ``pos[b] + i``, rotated at position
    ``pos[b] + depth(i)``, and attends to the cache before ``pos[b]`` and to its own
    ancestors in the tree (:func:`xgr2.jax.ancestor_mask`). Padding nodes run too (they
    see the cache and themselves); nobody attends to them.

    Args:
      tree: an :class:`xgr2.jax.DraftTree` ``[B, N]``.
      pos: int32 [B], each row's next cache position; ``pos + N`` must fit the cache.
      cache: donated (updated in place): use the returned one.

    Returns:
      the logits [B, N, V] of every node (node i's predict its children) and the cache.
      Keep the accepted path's entries with :func:`compact_cache`.
    """
    TRACES["tree_step"] += 1
    b = tree.tokens.shape[0]

    def write(c: KVCache, i: int, k: jax.Array, v: jax.Array) -> KVCache:
        # A row's nodes take the contiguous slots pos[r] ...: one in-place slice update per
        # row (a scatter over the whole cache would copy it at every layer).
        ck, cv = c
        for r in range(b):
            at = (i, r, pos[r], 0, 0)
            ck = jax.lax.dynamic_update_slice(ck, k[r][None, None], at)
            cv = jax.lax.dynamic_update_slice(cv, v[r][None, None], at)
        return KVCache(ck, cv)

    positions = pos[:, None] + tree_depth(tree)
    x, updated = _layers(params, tree.tokens, positions, _tree_mask(tree, pos, cache.k.shape[2]), cache, write, cfg)
    assert updated is not None  # a cache in, a cache out
    return _logits(params, x), updated


@functools.partial(jax.jit, donate_argnames="cache")
def compact_cache(cache: KVCache, pos: jax.Array, accepted_nodes: jax.Array) -> KVCache:
    """Moves the keys/values of each row's accepted tree path into place after a :func:`tree_step`.

    ``accepted_nodes`` int32 [B, D] is :attr:`xgr2.jax.VerifyResult.accepted_nodes` (the
    path ``0, n1, ..., nk`` padded with -1): slot ``pos + n_j`` moves to ``pos + j``.
    Parents precede children, so ``n_j >= j``: every source is read before any write.
    Slots past the path keep stale entries, which the next step overwrites before any
    attention reads them. The cache is donated.
    """
    TRACES["compact_cache"] += 1
    d = accepted_nodes.shape[1]
    step = jnp.arange(d, dtype=jnp.int32)[None, :]
    src = pos[:, None] + jnp.where(accepted_nodes >= 0, accepted_nodes, step)
    dst = pos[:, None] + step
    rows = jnp.arange(accepted_nodes.shape[0])[:, None]
    return KVCache(cache.k.at[:, rows, dst].set(cache.k[:, rows, src]),
                   cache.v.at[:, rows, dst].set(cache.v[:, rows, src]))


def new_cache(cfg: LlamaConfig, batch: int, max_len: int) -> KVCache:
    """A zeroed cache for ``batch`` rows of ``max_len`` positions."""
    shape = (cfg.n_layers, batch, max_len, cfg.n_kv_heads, cfg.head_dim)
    return KVCache(jnp.zeros(shape, jnp.float32), jnp.zeros(shape, jnp.float32))


class Llama:
    """A model: its config and parameters, with the entry points above bound to them.

    The per-step methods copy their host inputs (``jnp.array``): a call returns before the
    device has read them, and on CPU JAX may alias an aligned numpy buffer instead of
    copying it, so a caller updating its array in place would race the computation.

    Models with equal configs share compiled code. Another architecture reuses the methods
    by subclassing and binding its own module's entry points (:class:`xgr2.demo.gemma3.Gemma3`).
    """

    # The jitted functions the methods call (set before the methods that shadow their names).
    _forward = staticmethod(forward)
    _prefill = staticmethod(prefill)
    _decode_step = staticmethod(decode_step)
    _tree_step: Any = staticmethod(tree_step)

    def __init__(self, cfg: Any, params: Params):  # cfg: a LlamaConfig, or a subclass's architecture config
        self.cfg = cfg
        self.params = params

    def forward(self, tokens: np.ndarray | jax.Array) -> jax.Array:
        """See :func:`forward`."""
        logits: jax.Array = self._forward(self.params, jnp.array(tokens, jnp.int32), cfg=self.cfg)
        return logits

    def prefill(self, tokens: np.ndarray | jax.Array, max_len: int) -> tuple[jax.Array, KVCache]:
        """See :func:`prefill`."""
        if tokens.shape[1] > max_len:
            raise ValueError(f"a prompt of {tokens.shape[1]} tokens does not fit a cache of {max_len}")
        out: tuple[jax.Array, KVCache] = self._prefill(self.params, jnp.array(tokens, jnp.int32), cfg=self.cfg,
                                                        max_len=max_len)
        return out

    def decode_step(self, tokens: np.ndarray | jax.Array, pos: int | jax.Array,
                    cache: KVCache) -> tuple[jax.Array, KVCache]:
        """See :func:`decode_step`."""
        out: tuple[jax.Array, KVCache] = self._decode_step(self.params, jnp.array(tokens, jnp.int32),
                                                            jnp.array(pos, jnp.int32), cache, cfg=self.cfg)
        return out

    def tree_step(self, tree: DraftTree, pos: np.ndarray | jax.Array, cache: KVCache) -> tuple[jax.Array, KVCache]:
        """See :func:`tree_step`. Raises NotImplementedError for an architecture without one."""
        if self._tree_step is None:
            raise NotImplementedError(f"{type(self).__name__} has no tree pass (speculative decoding)")
        tree = DraftTree(*(jnp.array(a) for a in tree))
        out: tuple[jax.Array, KVCache] = self._tree_step(self.params, tree, jnp.array(pos, jnp.int32), cache,
                                                          cfg=self.cfg)
        return out

    def compact_cache(self, cache: KVCache, pos: np.ndarray | jax.Array, accepted_nodes: jax.Array) -> KVCache:
        """See :func:`compact_cache`."""
        out: KVCache = compact_cache(cache, jnp.array(pos, jnp.int32), jnp.array(accepted_nodes, jnp.int32))
        return out

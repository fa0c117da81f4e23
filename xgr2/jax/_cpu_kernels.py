"""The C++ CPU kernels of :func:`xgr2.jax.greedy` / :func:`xgr2.jax.sample` (XLA FFI targets).

Why: on XLA's CPU backend a fused pass over ``[B, V]`` logits that tests mask bits or takes
``exp`` runs several times slower than a plain reduction, and every extra op costs
dispatch time; one C++ call reads each row once or twice with SIMD and returns the
tokens (csrc/sampling/masked_sampling.cc). Same semantics and exactness as the pure-JAX
path; the random numbers differ (64 random bits per row from ``key``), so a given key draws
other tokens than on the pure-JAX path, with the same distribution.

Used inside the jitted entry points through ``jax.lax.platform_dependent``, so a
computation lowered for a GPU or TPU keeps its own path (_dense, pure JAX), and only when the process
has a single CPU device (a computation sharded over several CPU devices keeps the
pure-JAX path, which XLA partitions without gathering the logits). ``XGR2_CPU_KERNELS=0``
in the environment turns the kernels off.
"""

from __future__ import annotations

import functools
import os

import jax
import jax.numpy as jnp

from xgr2 import _core

_GREEDY = "xgr2_masked_greedy"
_SAMPLE = "xgr2_masked_sample"


@functools.cache
def _register() -> bool:
    """Registers the targets once; False if the extension has none or jax refuses them."""
    targets = _core.xla_ffi_targets()
    try:
        for name, capsule in targets.items():
            jax.ffi.register_ffi_target(name, capsule, platform="cpu")
    except Exception:  # an older jaxlib without this FFI: the pure-JAX path
        return False
    return bool(targets)


@functools.cache
def _available() -> bool:
    """Registered, and the process has exactly one CPU device (fixed once JAX started)."""
    try:
        single_cpu = len(jax.devices("cpu")) == 1
    except RuntimeError:  # no CPU backend
        return False
    return single_cpu and _register()


def use_kernels(logits: jax.Array) -> bool:
    """Whether the entry points should offer the CPU kernels for these logits (decided at
    trace time, a static argument of the jitted functions)."""
    if os.environ.get("XGR2_CPU_KERNELS", "1") == "0" or logits.dtype != jnp.float32:
        return False
    return _available()


def _rows(bitmask: jax.Array, constrained: jax.Array | None, batch: int) -> tuple[jax.Array, jax.Array]:
    mask = jnp.broadcast_to(bitmask, (batch, bitmask.shape[-1]))
    flags = jnp.ones((batch,), jnp.bool_) if constrained is None else constrained
    return mask, flags


def cpu_greedy(logits: jax.Array, bitmask: jax.Array, constrained: jax.Array | None) -> jax.Array:
    """int32 ``[B]``: the masked argmax of ``logits`` float32 ``[B, V]`` (C++)."""
    batch = logits.shape[0]
    mask, flags = _rows(bitmask, constrained, batch)
    out = jax.ShapeDtypeStruct((batch,), jnp.int32)  # type: ignore[no-untyped-call]  # unannotated in jax
    call = jax.ffi.ffi_call(_GREEDY, out, vmap_method="sequential")
    tokens: jax.Array = call(logits, mask, flags)
    return tokens


def cpu_sample(
    key: jax.Array,
    logits: jax.Array,
    bitmask: jax.Array,
    temperature: jax.Array,
    top_k: jax.Array | None,
    top_p: jax.Array | None,
    min_p: jax.Array | None,
    constrained: jax.Array | None,
) -> jax.Array:
    """int32 ``[B]`` sampled as :func:`xgr2.jax.sample` specifies (C++), from a 64-bit seed
    per row hashed from ``key``'s words and the row index."""
    batch = logits.shape[0]
    mask, flags = _rows(bitmask, constrained, batch)
    # The key's words; the kernel hashes them with the row index into each row's seed
    # (cheaper than jax.random.bits here).
    words = jax.random.key_data(key) if jnp.issubdtype(key.dtype, jax.dtypes.prng_key) else key
    words = words.reshape(-1).astype(jnp.uint32)
    k = jnp.zeros((batch,), jnp.int32) if top_k is None else top_k.astype(jnp.int32)
    p = jnp.ones((batch,), jnp.float32) if top_p is None else top_p
    m = jnp.zeros((batch,), jnp.float32) if min_p is None else min_p
    out = jax.ShapeDtypeStruct((batch,), jnp.int32)  # type: ignore[no-untyped-call]  # unannotated in jax
    call = jax.ffi.ffi_call(_SAMPLE, out, vmap_method="sequential")
    tokens: jax.Array = call(logits, mask, flags, words, temperature.astype(jnp.float32), k, p, m)
    return tokens


__all__ = ["cpu_greedy", "cpu_sample", "use_kernels"]

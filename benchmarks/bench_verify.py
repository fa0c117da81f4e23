"""Times xgr2.jax.verify_tree (greedy and speculative) against the read floor of its logits.

A draft tree of N nodes (a random tree, every node drafted) per row, target logits
``[B, N, V]``, a random grammar mask per node. The floor is ``jnp.max(logits, -1)`` over all
``B * N`` rows (jitted), what any verification must at least read. Prints a table (median of
several repetitions, ms, and ratio to the floor); ``--write-results`` adds it at the top of
``benchmarks/RESULTS.md``. Runs on whatever JAX's default device is (CPU here, a GPU where
one is lent).

    python benchmarks/bench_verify.py [--quick] [--write-results]
"""

from __future__ import annotations

import argparse

import jax
import jax.numpy as jnp
import numpy as np

import _common  # noqa: E402, F401  (first: a source tree with a built core goes before the installed xgr2)
from bench_sampling import timeit
from xgr2.jax import DraftTree, verify_tree


def random_tree(rng: np.random.Generator, batch: int, nodes: int, vocab: int) -> DraftTree:
    """Each node's parent uniform among the earlier nodes (about log N deep); random tokens."""
    parents = np.stack([np.concatenate([[-1], [rng.integers(0, i) for i in range(1, nodes)]]) for _ in range(batch)])
    tokens = rng.integers(0, vocab, (batch, nodes))
    return DraftTree.from_parents(parents, tokens)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="B in {1, 8}, N = 16, V = 128256, 3 reps")
    parser.add_argument("--reps", type=int, default=21)
    parser.add_argument("--write-results", action="store_true", help="add the table to benchmarks/RESULTS.md")
    args = parser.parse_args()
    shapes = [(1, 16), (8, 16)] if args.quick else [(1, 16), (1, 64), (8, 16), (8, 64)]
    reps = 3 if args.quick else args.reps
    vocab = 128256
    floor = jax.jit(lambda x: jnp.max(x, -1))
    key = jax.random.key(0)
    rng = np.random.default_rng(0)
    header = f"{'B':>3} {'N':>4} {'V':>7} {'floor':>7} " + " ".join(
        f"{n:>15}" for n in ["greedy", "speculative", "spec top_p=0.9"])
    print(header)
    rows = []
    for batch, nodes in shapes:
        logits = jax.random.normal(jax.random.key(1), (batch, nodes, vocab), jnp.float32) * 3
        bitmask = jnp.asarray(rng.integers(-(2**31), 2**31, (batch, nodes, -(-vocab // 32))), jnp.int32)
        tree = random_tree(rng, batch, nodes, vocab)
        base = timeit(lambda: floor(logits), reps)
        ours = [
            timeit(lambda: verify_tree(key, logits, bitmask, tree, method="greedy"), reps),
            timeit(lambda: verify_tree(key, logits, bitmask, tree, method="speculative"), reps),
            timeit(lambda: verify_tree(key, logits, bitmask, tree, method="speculative", top_p=0.9), reps),
        ]
        line = f"{batch:>3} {nodes:>4} {vocab:>7} {base:7.2f} " + " ".join(f"{t:8.2f} ({t / base:4.1f}x)" for t in ours)
        print(line, flush=True)
        rows.append(line)
    if args.write_results:
        from _common import append_results

        note = (f"{jax.devices()[0].platform} ({jax.devices()[0].device_kind}), jax {jax.__version__}: ms (median), "
                "ratio to the read floor `jnp.max(logits, -1)` over all B*N rows; random trees, every node drafted")
        append_results("draft-tree verification (xgr2.jax.verify_tree)", "bench_verify.py", None,
                       ["", note, "", "```", header, *rows, "```"], at_top=True)


if __name__ == "__main__":
    main()

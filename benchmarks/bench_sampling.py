"""Times xgr2.jax.greedy / sample (plain, top-k, top-p, min-p) against naive versions and the
read floor (``jnp.max(logits, -1)`` jitted), on JAX's default device (CPU, or a lent GPU:
benchmarks/device_check.sh).

Naive: full argsort for top-k / top-p, full Gumbel noise for plain sampling, argmax of masked
logits for greedy. Prints a table (median of several repetitions, ms, and ratio to the floor);
``--write-results`` adds it at the top of ``benchmarks/RESULTS.md``.

    python benchmarks/bench_sampling.py [--quick] [--write-results]
"""

from __future__ import annotations

import argparse
import time

import jax
import jax.numpy as jnp
import numpy as np

import _common  # noqa: E402, F401  (first: a source tree with a built core goes before the installed xgr2)
from xgr2.jax import apply_token_bitmask, greedy, sample


def timeit(fn, reps: int) -> float:
    jax.block_until_ready(fn())
    times = []
    for _ in range(reps):
        start = time.perf_counter()
        jax.block_until_ready(fn())
        times.append(time.perf_counter() - start)
    return float(np.median(times)) * 1e3


@jax.jit
def naive_greedy(logits, bitmask):
    return jnp.argmax(apply_token_bitmask(logits, bitmask), -1)


@jax.jit
def naive_sample(key, logits, bitmask):
    return jax.random.categorical(key, apply_token_bitmask(logits, bitmask), -1)  # V Gumbels


@jax.jit
def naive_top_k_top_p(key, logits, bitmask, k, p):
    x = apply_token_bitmask(logits, bitmask)
    order = jnp.argsort(-x, axis=-1)
    s = jnp.take_along_axis(x, order, -1)
    rank = jax.lax.broadcasted_iota(jnp.int32, s.shape, 1)
    s = jnp.where(rank < k, s, -jnp.inf)
    probs = jax.nn.softmax(s, -1)
    before = jnp.cumsum(probs, -1) - probs
    s = jnp.where(before < p, s, -jnp.inf)
    return jnp.take_along_axis(order, jax.random.categorical(key, s, -1)[:, None], -1)[:, 0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="B in {1, 8}, V = 128256, 3 reps")
    parser.add_argument("--reps", type=int, default=31)
    parser.add_argument("--no-naive", action="store_true", help="skip the argsort baselines")
    parser.add_argument("--write-results", action="store_true", help="add the table to benchmarks/RESULTS.md")
    args = parser.parse_args()
    batches, vocabs, reps = ([1, 8], [128256], 3) if args.quick else ([1, 8, 64], [49152, 128256, 262144], args.reps)
    floor = jax.jit(lambda x: jnp.max(x, -1))
    key = jax.random.key(0)
    rows = []
    header = f"{'B':>3} {'V':>7} {'floor':>7} " + " ".join(
        f"{n:>15}" for n in ["greedy", "sample", "top_k=50", "top_p=0.9", "min_p=0.1", "naive greedy", "naive sample", "naive top-k/p"]
    )
    print(header)
    for v in vocabs:
        for b in batches:
            logits = jax.random.normal(jax.random.key(1), (b, v), jnp.float32) * 3
            bitmask = jnp.asarray(np.random.default_rng(0).integers(-(2**31), 2**31, (b, -(-v // 32))), jnp.int32)
            base = timeit(lambda: floor(logits), reps)
            ours = [
                timeit(lambda: greedy(logits, bitmask), reps),
                timeit(lambda: sample(key, logits, bitmask), reps),
                timeit(lambda: sample(key, logits, bitmask, top_k=50), reps),
                timeit(lambda: sample(key, logits, bitmask, top_p=0.9), reps),
                timeit(lambda: sample(key, logits, bitmask, min_p=0.1), reps),
            ]
            naive = [timeit(lambda: naive_greedy(logits, bitmask), reps), timeit(lambda: naive_sample(key, logits, bitmask), reps)]
            if args.no_naive or b * v > 8 * 128256:
                naive.append(float("nan"))
            else:
                naive.append(timeit(lambda: naive_top_k_top_p(key, logits, bitmask, 50, 0.9), max(1, reps // 3)))
            cells = " ".join(f"{t:8.2f} ({t / base:4.1f}x)" for t in ours + naive)
            line = f"{b:>3} {v:>7} {base:7.2f} {cells}"
            print(line, flush=True)
            rows.append(line)
    if args.write_results:
        from _common import append_results

        device = jax.devices()[0]
        note = (f"{device.platform} ({device.device_kind}), jax {jax.__version__}: ms (median), ratio to the read floor "
                "`jnp.max(logits, -1)`; naive top-k/p skipped (nan) above B*V = 8*128256 (argsort takes seconds)")
        append_results("fused masked sampling (xgr2.jax)", "bench_sampling.py", None,
                       ["", note, "", "```", header, *rows, "```"], at_top=True)

if __name__ == "__main__":
    main()

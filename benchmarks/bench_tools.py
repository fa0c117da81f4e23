"""Dynamic tool-calling benchmark (XGrammar-2 paper §4.1): xgr2 vs xgrammar vs llguidance.

Workload. A pool of 100 distinct BFCL functions: the first functions of
`bfcl_eval/data/BFCL_v4_simple_python.json` with a distinct name and parameter schema
whose possible answer (`possible_answer/`) gives a valid call. Parameter schemas are mapped
to JSON Schema as in bench_schema_compile.py ("dict" -> object, "float" -> number, "tuple"
-> array, "any" -> no constraint) and every object with `properties` is closed
(`additionalProperties: false`, unless the schema says otherwise) so that the three
engines describe the same language (llguidance would otherwise allow extra properties,
xgr2 and xgrammar would not). For each k in 5, 20, 50, two settings of 100 requests each
(fixed seed): *static*, the same k tools in every request, and *dynamic*, k tools sampled
uniformly from the pool per request. A request's ground-truth output is the BFCL question
of one or two of its tools as free text, then their calls in Llama 3.1's custom-function
format `<function=NAME>{JSON arguments}</function>` (arguments from the possible answer,
the first listed option of each parameter, `json.dumps` spacing), tokenized with the
Llama-3 tokenizer and ending with `<|eot_id|>` allowed.

Grammar per request (free text with calls of the request's tools; "auto", parallel calls):

- xgr2: `xgr2.tool_calling.llama3_function_tag(tools)` (a structural tag, triggered_tags
  on "<function=").
- xgrammar: its structural tag with the same shape (`triggered_tags`, one `tag` per tool
  with `json_schema` content), `GrammarCompiler.compile_structural_tag`.
- llguidance: a Lark grammar: each call is a lazy rule `TEXT "<function="` (text up to the
  first trigger) then one alternative per tool, `"NAME>" %json {schema} "</function>"`;
  the text after the last call is `/(.|\\n)*/ & ~/(.|\\n)*<function=(.|\\n)*/`, so no
  engine lets free text hold the trigger. This is StructTag.to_grammar's construction
  with one trigger rule for all tools and the closing text excluded from holding it.

Languages: the three grammars accept the same calls and free text, except (seen in the
mask comparison this script prints, first request of each configuration): xgrammar's
free text also takes Llama-3's 254 reserved special tokens and tokens that are partial
UTF-8 characters; xgr2's `json_schema` content allows whitespace between `>` and the
arguments and between them and `</function>`, and caps a whitespace run inside the
arguments at 20 characters (the peers take longer runs of spaces); the rest are other
tokenizations of the same text. All three let the output end in a partial trigger
(`<function`).

Server style: one compiler per engine across the 100 requests of a configuration, fresh
for each configuration: xgr2 `Compiler(tok)` (whole-grammar cache on) with the
cross-grammar cache cleared first; xgrammar `GrammarCompiler(cache_enabled=True)`;
llguidance keeps nothing between grammars (a new LLMatcher per request). Each engine runs
in its own worker process (the tokenizer set up once, not timed), one at a time. Per
request: compile, initial state, then forced decoding of the ground truth with a mask
before every token and after the last (single-threaded fill). Reported per k and
setting: time to first mask (compile + initial state + first mask; median, p99), mask
p50 / p99 / max over all tokens, and the reuse rates of the paper's Table 1: structure
reuse (requests whose whole tool set came before), tool reuse (tools of a request that
an earlier request had), and for xgr2 the fraction of its node-mask cache lookups served
by the cross-grammar cache (hits / (hits + misses) of
`TokenizerInfo.cross_grammar_cache_info()`, over the configuration, and over requests
2..100) and its misses per request from the second on (each a walk over the vocabulary
from one node). In the static setting the compiler's whole-grammar cache serves
requests 2..100 without any lookup, so the hit rate there is the first request's.
With `--engines xgr2,xgrammar,llguidance,xgr2-background`, also xgr2 with
`precompute_masks(num_threads=1, background=True)` started right after each compile:
every node mask on one pool thread while the masks are asked (an extra configuration,
not in the targets; here a request's whole grammar takes longer to precompute than its
masks, and the job competes with them for the two cores).

Setup: `pip install --no-deps bfcl-eval` (beside bench_json_mask.py's). Run from the
repository root so that the source tree's xgr2 is measured:

    python benchmarks/bench_tools.py [--ks 5,20,50] [--requests 100] [--write-results]

A few minutes on 2 cores. `--write-results` puts a dated section near the top of
benchmarks/RESULTS.md.
"""

from __future__ import annotations

import argparse
import base64
import gc
import importlib.resources
import json
import os
import random
import select
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
import _common  # noqa: E402, F401  (first: a source tree with a built core goes before the installed xgr2)

import numpy as np  # noqa: E402

ENGINE_NAMES = ["xgr2", "xgrammar", "llguidance"]
SETTINGS = ["static", "dynamic"]
TRIGGER = "<function="
END = "</function>"


# --------------------------------------------------------------------------- workload
def close_objects(s):
    """`s` with every object that lists properties closed (additionalProperties false)."""
    if isinstance(s, list):
        return [close_objects(x) for x in s]
    if not isinstance(s, dict):
        return s
    out = {k: close_objects(v) for k, v in s.items()}
    if isinstance(out.get("properties"), dict) and "additionalProperties" not in out:
        out["additionalProperties"] = False
    return out


def first_option(options):
    """The value a BFCL possible answer lists first ("" means "may be left out": None)."""
    for value in options if isinstance(options, list) else [options]:
        if value == "":
            return None
        if isinstance(value, dict):  # a dict parameter: each field lists its options too
            fields = {k: first_option(v) for k, v in value.items()}
            return {k: v for k, v in fields.items() if v is not None}
        return value
    return None


def load_pool(size: int) -> list[dict]:
    """`size` distinct BFCL functions with a valid ground-truth call each:
    {"name", "parameters" (JSON Schema), "args" (a valid call's arguments), "question"}."""
    import jsonschema

    from bench_schema_compile import normalize_bfcl

    try:
        data = importlib.resources.files("bfcl_eval") / "data"
    except ModuleNotFoundError:
        sys.exit("bfcl_eval not found: pip install --no-deps bfcl-eval")
    name = "BFCL_v4_simple_python.json"
    answers = {}
    for line in (data / "possible_answer" / name).read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        answers[record["id"]] = record["ground_truth"]
    pool, names, schemas = [], set(), set()
    for line in (data / name).read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        fn, truth = record["function"][0], answers.get(record["id"])
        key = json.dumps(fn["parameters"], sort_keys=True)
        if fn["name"] in names or key in schemas or not truth or fn["name"] not in truth[0]:
            continue
        params = close_objects(normalize_bfcl(fn["parameters"], {}))
        args = {}
        for prop in params.get("properties", {}):  # declared order, as the grammars want
            options = truth[0][fn["name"]].get(prop)
            value = first_option(options) if options is not None else None
            if value is not None:
                args[prop] = value
        try:
            jsonschema.validate(args, params)
        except jsonschema.ValidationError:
            continue
        names.add(fn["name"])
        schemas.add(key)
        question = record["question"][0][-1]["content"]
        pool.append({"name": fn["name"], "parameters": params, "args": args, "question": question})
        if len(pool) == size:
            return pool
    sys.exit(f"only {len(pool)} usable BFCL functions, wanted {size}")


def ground_truth(pool: list[dict], calls: list[int]) -> str:
    """Free text (the first called tool's BFCL question), then the calls."""
    text = pool[calls[0]]["question"].replace(TRIGGER, "<function ") + "\n\n"
    return text + "\n".join(f"{TRIGGER}{pool[i]['name']}>{json.dumps(pool[i]['args'])}{END}" for i in calls)


def make_configs(pool: list[dict], ks: list[int], n_requests: int, seed: int, hf_tok) -> list[dict]:
    """One configuration per (k, setting): its requests' tool indices and ground truth."""
    rng = random.Random(seed)
    configs = []
    for k in ks:
        fixed = rng.sample(range(len(pool)), k)
        for setting in SETTINGS:
            requests = []
            for _ in range(n_requests):
                tools = list(fixed) if setting == "static" else rng.sample(range(len(pool)), k)
                calls = rng.sample(tools, min(len(tools), rng.choice([1, 2])))
                text = ground_truth(pool, calls)
                requests.append({"tools": tools, "ids": hf_tok.encode(text, add_special_tokens=False)})
            configs.append({"k": k, "setting": setting, "requests": requests})
    return configs


def reuse_rates(requests: list[dict]) -> tuple[float, float]:
    """Engine-independent reuse (%): requests whose whole tool set came before, and tools
    of a request that an earlier request had."""
    seen_sets, seen_tools, same, tools_seen, tools_total = set(), set(), 0, 0, 0
    for r in requests:
        key = frozenset(r["tools"])
        same += key in seen_sets
        seen_sets.add(key)
        tools_seen += sum(t in seen_tools for t in r["tools"])
        tools_total += len(r["tools"])
        seen_tools.update(r["tools"])
    return 100 * same / len(requests), 100 * tools_seen / tools_total


# --------------------------------------------------------------------------- grammars
def openai_tools(pool, idx):
    return [{"type": "function", "function": {"name": pool[i]["name"], "parameters": pool[i]["parameters"]}}
            for i in idx]


def xgrammar_structural_tag(pool, idx) -> str:
    tags = [{"type": "tag", "begin": f"{TRIGGER}{pool[i]['name']}>",
             "content": {"type": "json_schema", "json_schema": pool[i]["parameters"]}, "end": END} for i in idx]
    return json.dumps({"type": "structural_tag",
                       "format": {"type": "triggered_tags", "triggers": [TRIGGER], "tags": tags}})


def llguidance_lark(pool, idx) -> str:
    tools = "\n".join(f'tool_{j}: {json.dumps(pool[i]["name"] + ">")} %json {json.dumps(pool[i]["parameters"])}'
                      f' {json.dumps(END)}' for j, i in enumerate(idx))
    return "\n".join([
        "%llguidance {}",
        "start: call* TAIL",
        "call: trig (" + " | ".join(f"tool_{j}" for j in range(len(idx))) + ")",
        f"trig[lazy]: TEXT {json.dumps(TRIGGER)}",
        r"TEXT: /(.|\n)*/",
        r"TAIL: /(.|\n)*/ & ~/(.|\n)*<function=(.|\n)*/",
        tools,
    ])


class Server:
    """One engine's compiler across the requests of a configuration (server style)."""

    def __init__(self, name: str, engine):
        self.name, self.engine = name, engine
        self.compiler = None

    def reset(self):  # a fresh server for each configuration
        e = self.engine
        if self.name.startswith("xgr2"):
            e.tok.clear_cross_grammar_cache()
            e.xgr2.clear_shared_automata()
            self.compiler = e.xgr2.Compiler(e.tok)
        elif self.name == "xgrammar":
            self.compiler = e.xgr.GrammarCompiler(e.tok, cache_enabled=True)

    def compile(self, pool, idx):
        e = self.engine
        if self.name.startswith("xgr2"):
            from xgr2 import tool_calling

            compiled = self.compiler.compile(tool_calling.llama3_function_tag(openai_tools(pool, idx)))
            if self.name == "xgr2-background":
                e.start_background(compiled)
            return compiled
        if self.name == "xgrammar":
            return self.compiler.compile_structural_tag(xgrammar_structural_tag(pool, idx))
        matcher = e.llg.LLMatcher(e.tok, llguidance_lark(pool, idx))
        if matcher.is_error():
            raise RuntimeError(matcher.get_error())
        return matcher

    def cache_counts(self) -> tuple[int, int]:
        if not self.name.startswith("xgr2"):
            return 0, 0
        info = self.engine.tok.cross_grammar_cache_info()
        return info.hits, info.misses


# --------------------------------------------------------------------------- worker
def worker_main(name: str) -> None:
    """Reads one job {"pool", "configs", "keep"}; writes one JSON reply per configuration."""
    from _common import ENGINES, load_tokenizer, run_document

    engine = ENGINES[name]()
    engine.setup(load_tokenizer())
    server = Server(name, engine)
    gc.collect()
    gc.freeze()  # the tokenizers' many objects: keep them out of every later collection
    print(json.dumps({"ready": True}), flush=True)
    job = json.loads(sys.stdin.readline())
    pool = job["pool"]
    for config in job["configs"]:
        server.reset()
        out = []
        for j, req in enumerate(config["requests"]):
            h0, m0 = server.cache_counts()
            r = run_document(engine, lambda: server.compile(pool, req["tools"]), req["ids"], complete=True,
                             keep_masks=10**9 if j < job["keep"] else 0)
            h1, m1 = server.cache_counts()
            r["cache_hits"], r["cache_misses"] = h1 - h0, m1 - m0
            r["masks"] = [base64.b64encode(m.tobytes()).decode() for m in r["masks"]]
            out.append(r)
        print(json.dumps({"k": config["k"], "setting": config["setting"], "runs": out}), flush=True)


def run_worker(name: str, job: dict, timeout: float) -> list[dict]:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")]))
    proc = subprocess.Popen([sys.executable, str(Path(__file__).resolve()), "--worker", name], cwd=str(REPO),
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env)
    try:
        if not proc.stdout.readline():
            raise RuntimeError(f"{name} worker did not start")
        proc.stdin.write(json.dumps(job) + "\n")
        proc.stdin.flush()
        replies = []
        for _ in job["configs"]:
            ready, _, _ = select.select([proc.stdout], [], [], timeout)
            line = proc.stdout.readline() if ready else ""
            if not line:
                raise RuntimeError(f"{name} worker: no answer within {timeout:.0f} s or died")
            replies.append(json.loads(line))
            print(f"  {name} k={replies[-1]['k']} {replies[-1]['setting']} done", flush=True)
        return replies
    finally:
        if proc.poll() is None:
            proc.kill()  # our own child
        proc.wait()


# --------------------------------------------------------------------------- report
def config_stats(runs: list[dict]) -> dict:
    ok = [r for r in runs if "compile_ns" in r and r["mask_ns"]]
    ttfm = np.array([r["compile_ns"] + r["init_ns"] + r["mask_ns"][0] for r in ok]) / 1e6
    mask = np.array([x for r in ok for x in r["mask_ns"]]) / 1e3
    hits = [r["cache_hits"] for r in runs]
    misses = [r["cache_misses"] for r in runs]

    def rate(h, m):
        return 100 * sum(h) / (sum(h) + sum(m)) if sum(h) + sum(m) else float("nan")

    return {
        "ttfm_med": np.median(ttfm), "ttfm_p99": np.percentile(ttfm, 99),
        "compile_med": np.median([r["compile_ns"] for r in ok]) / 1e6,
        "mask_p50": np.percentile(mask, 50), "mask_p99": np.percentile(mask, 99), "mask_max": mask.max(),
        "masks": mask.size, "accepted": sum(r["error"] is None for r in runs), "n": len(runs),
        "hit_all": rate(hits, misses), "hit_later": rate(hits[1:], misses[1:]),
        "misses_later": float(np.mean(misses[1:])) if len(misses) > 1 else float("nan"),
        "errors": sorted({r["error"] for r in runs if r["error"]})[:3],
    }


def fmt(x: float) -> str:
    return "-" if np.isnan(x) else f"{x:.2f}" if x < 100 else f"{x:.0f}"


def results_table(stats: dict, engines: list[str], ks: list[int], configs: list[dict]) -> str:
    head = ["k", "setting", "engine", "TTFM median ms", "TTFM p99 ms", "compile median ms", "mask p50 µs",
            "mask p99 µs", "mask max µs", "masks", "accepted", "xgr2 cache hits % (all / req 2+)",
            "xgr2 walks per request (2+)"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for k in ks:
        for setting in SETTINGS:
            for e in engines:
                s = stats[e][(k, setting)]
                hit = f"{fmt(s['hit_all'])} / {fmt(s['hit_later'])}" if e.startswith("xgr2") else ""
                walks = fmt(s["misses_later"]) if e.startswith("xgr2") else ""
                lines.append("| " + " | ".join([
                    str(k), setting, e, fmt(s["ttfm_med"]), fmt(s["ttfm_p99"]), fmt(s["compile_med"]),
                    fmt(s["mask_p50"]), fmt(s["mask_p99"]), fmt(s["mask_max"]), str(s["masks"]),
                    f"{s['accepted']}/{s['n']}", hit, walks]) + " |")
    reuse = ["", "Reuse (Table 1 of the paper; tool-level, the same for every engine):", "",
             "| k | setting | structure reuse % | tool reuse % |", "|---|---|---|---|"]
    for c in configs:
        a, b = reuse_rates(c["requests"])
        reuse.append(f"| {c['k']} | {c['setting']} | {a:.1f} | {b:.1f} |")
    return "\n".join(lines + reuse)


def targets(stats: dict, engines: list[str], ks: list[int]) -> list[str]:
    """Issue 12's target: per k (dynamic), TTFM median and mask p99 no worse than the best peer's."""
    if "xgr2" not in engines or len(engines) < 2:
        return []
    out = []
    for k in ks:
        x = stats["xgr2"][(k, "dynamic")]
        peers = [stats[e][(k, "dynamic")] for e in engines if not e.startswith("xgr2")]
        if not peers:
            return []
        t, m = min(p["ttfm_med"] for p in peers), min(p["mask_p99"] for p in peers)
        out.append(f"k={k} dynamic: TTFM median {fmt(x['ttfm_med'])} ms vs best peer {fmt(t)} ms: "
                   f"{'met' if x['ttfm_med'] <= t else 'MISSED'}; mask p99 {fmt(x['mask_p99'])} µs vs best peer "
                   f"{fmt(m)} µs: {'met' if x['mask_p99'] <= m else 'MISSED'}")
    return out


def mask_differences(replies: dict, engines: list[str], configs: list[dict], keep: int, hf_tok) -> list[str]:
    from _common import MASK_WORDS, compare_masks

    runs, labels, next_ids = {}, [], []
    for c_idx, c in enumerate(configs):
        for j in range(keep):
            labels.append(f"k={c['k']} {c['setting']} request {j}")
            next_ids.append(c["requests"][j]["ids"])
    for e in engines:
        runs[e] = []
        for c_idx in range(len(configs)):
            for r in replies[e][c_idx]["runs"][:keep]:
                masks = [np.frombuffer(base64.b64decode(m), dtype=np.int32).reshape(MASK_WORDS) for m in r["masks"]]
                runs[e].append({"masks": masks})
    return compare_masks(runs, labels, hf_tok, next_ids)


# --------------------------------------------------------------------------- main
def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--engines", default=",".join(ENGINE_NAMES))
    p.add_argument("--ks", default="5,20,50", help="tools per request")
    p.add_argument("--requests", type=int, default=100, help="requests per configuration")
    p.add_argument("--pool", type=int, default=100, help="distinct BFCL functions")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--keep", type=int, default=1, help="compare the masks of this many requests per configuration")
    p.add_argument("--timeout", type=float, default=900, help="seconds per configuration before giving up")
    p.add_argument("--write-results", action="store_true", help="put a dated section near the top of RESULTS.md")
    args = p.parse_args(argv)
    t_start = time.perf_counter()
    engines, ks = args.engines.split(","), [int(k) for k in args.ks.split(",")]

    from _common import load_tokenizer

    hf_tok = load_tokenizer()
    pool = load_pool(args.pool)
    configs = make_configs(pool, ks, args.requests, args.seed, hf_tok)
    job = {"pool": pool, "configs": configs, "keep": args.keep}
    print(f"pool {len(pool)} BFCL functions; {len(configs)} configurations x {args.requests} requests; "
          f"{np.mean([len(r['ids']) for c in configs for r in c['requests']]):.0f} tokens per output on average",
          flush=True)

    replies, stats = {}, {}
    for e in engines:
        t0 = time.perf_counter()
        replies[e] = run_worker(e, job, args.timeout)
        stats[e] = {(r["k"], r["setting"]): config_stats(r["runs"]) for r in replies[e]}
        print(f"{e}: {time.perf_counter() - t0:.0f} s", flush=True)

    body = ["", results_table(stats, engines, ks, configs), ""]
    errors = [f"- {e} k={k} {s}: {msg}" for e in engines for (k, s), st in stats[e].items() for msg in st["errors"]]
    if errors:
        body += ["Rejected documents (first errors):", *errors, ""]
    goals = targets(stats, engines, ks)
    if goals:
        body += ["Issue 12 targets (xgr2 against the best peer, dynamic setting):", *(f"- {g}" for g in goals), ""]
    if len(engines) > 1 and args.keep:
        diffs = mask_differences(replies, engines, configs, args.keep, hf_tok)
        body.append(f"Masks of the first {args.keep} request(s) per configuration: "
                    + ("identical across engines." if not diffs else "differences:"))
        body += [f"- {d}" for d in diffs[:12]] + ([f"- ... {len(diffs) - 12} more kinds"] if len(diffs) > 12 else [])
    text = "\n".join(body)
    print(text)
    print(f"\nran in {time.perf_counter() - t_start:.0f} s")
    if args.write_results:
        from _common import append_results

        append_results("Dynamic tool-calling benchmark (BFCL, <function=NAME>, Llama-3 tokenizer)", "bench_tools.py",
                       argv, ["- TTFM = compile + initial state + first mask (single-threaded fill), one compiler per "
                              "engine across the 100 requests of a configuration; each engine in its own worker "
                              "process, one at a time.", *body, ""], at_top=True)
    return 0


if __name__ == "__main__":
    if sys.argv[1:2] == ["--worker"]:
        worker_main(sys.argv[2])
    else:
        sys.exit(main())

"""JSON-Schema compile benchmark: compile time and time to first mask of real schemas,
xgr2 vs xgrammar vs llguidance, fresh and warm compiler, and what each engine refuses.

Two sets of schemas:

(a) every distinct tool-parameter schema of the `bfcl-eval` package's
    `bfcl_eval/data/*.json` (3,154 with bfcl-eval 2026.3.23). BFCL's types are mapped to
    JSON Schema as in bench_schemas.py ("dict" -> object, "float" -> number, "tuple" ->
    array, "any" -> no constraint), and its Java/JavaScript type names too ("String",
    "char" -> string, "Boolean" -> boolean, "long" -> integer, "double" -> number,
    "Array"/"ArrayList" -> array, "HashMap" -> object); BFCL's own "optional" flag is
    dropped, a type contradicting its enum is dropped (the enum says what is meant), and
    so are required names without a property schema. Every other keyword is kept
    (format, maximum, minItems, ...; annotations are ignored by every engine).
(b) real-world JSON Schemas shipped inside PyPI packages, read unchanged from their
    installed files (each row of the set names its package, see REAL_WORLD): the JSON
    Schema metaschemas of jsonschema-specifications, the vendored SchemaStore schemas of
    check-jsonschema (GitHub workflows, GitLab CI, compose, renovate, ...), cfn-lint's
    schema extensions and CloudFormation snippets, nbformat's notebook schemas, the
    OpenAPI schemas of openapi-spec-validator / openapi-schema-validator, the SAM
    schemas of aws-sam-translator, CMake's file-API / presets schemas, and the
    configuration schemas of setuptools, scikit-build-core and black, and JupyterLab's
    settings schemas (one per extension plugin). Duplicate files
    (same JSON) count once.

Each engine runs in its own worker process (tokenizer set up once, not timed), one
running at a time; the engines take turns schema by schema (the first one rotating), so
a slow spell of the machine hits them alike. A schema that hangs an engine can be stopped: past
`--timeout` seconds (default 30) the worker is killed and restarted and the schema
counts as a timeout (refused). Per schema:

- compile: schema dict -> compiled grammar (xgr2: `Grammar.from_json_schema` +
  `Compiler.compile`; xgrammar: `GrammarCompiler.compile_json_schema`; llguidance:
  `LLMatcher.grammar_from_json_schema` + `LLMatcher(tokenizer, grammar)`);
- TTFM: compile + initial state + the first bitmask fill (single-threaded fill).

Fresh mode reports, per schema, the least of 3 runs (each from empty caches) for schemas
under 100 ms, one run above: this VM's timings move by 30-50% from run to run; warm
mode runs each schema once (a second run would hit the cache).

Engines: xgr2 with its defaults (exact: `unsupported="error"`), xgr2-warn (xgr2 with
`unsupported="warn"`: it widens only where docs/json_schema.md says, as xgrammar widens
by default with a log line), xgrammar, llguidance.

Fresh compiler: nothing cached from earlier schemas. xgr2: `clear_cross_grammar_cache()`
on the TokenizerInfo, `clear_shared_automata()` (the rule automata shared across
grammars; the pinned automata of JSON's fixed building blocks, built once per process,
stay) and a `Compiler(cache_limit_bytes=0)`; xgrammar: a new
`GrammarCompiler(cache_enabled=False)`; llguidance keeps nothing between grammars (a new
LLMatcher). Warm compiler: one long-lived compiler per engine with its caches on, over
the whole set in order (each schema is compiled once, after every earlier one): xgr2's
`Compiler` with the default cache and the cross-grammar node-mask cache kept;
xgrammar's `GrammarCompiler(cache_enabled=True)`; llguidance as fresh (nothing to
keep). Every engine uses its defaults (any whitespace; xgr2 `strict=True` and
xgrammar `strict_mode=True` leave out undeclared properties).

Refused: an exception while compiling (or a timeout); an exception at the first mask is
counted apart. The refusal target counts only the schemas the `jsonschema` validator can
use (it passes its metaschema and its `$ref`s resolve): refusing an invalid schema is no loss. xgr2's refusals are grouped by the keyword its SchemaError names, the
peers' by the first words of their message. The median target is checked twice: each
engine over the schemas it compiled (as the issue words it), and like for like, xgr2
against each peer over the schemas both compiled (a median over an engine's own set is
lower the more hard schemas it refuses).

Setup (beside bench_json_mask.py's): `pip install --no-deps bfcl-eval check-jsonschema
cfn-lint jupyterlab`, `pip install jsonschema-specifications nbformat openapi-spec-validator
aws-sam-translator cmake`. Run:

    python benchmarks/bench_schema_compile.py [--sets bfcl,real] [--limit N] [--write-results]

About 10 minutes on 2 cores with every schema. `--write-results` puts a dated section
near the top of benchmarks/RESULTS.md.
"""

from __future__ import annotations

import argparse
import gc
import hashlib
import importlib.resources
import json
import os
import re
import select
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from _common import has_type

ENGINE_NAMES = ["xgr2", "xgr2-warn", "xgrammar", "llguidance"]
MODES = ["fresh", "warm"]
FRESH_RUNS, FRESH_REPEAT_BELOW_MS = 3, 100  # fresh mode: the least of 3 runs, for schemas under 100 ms

# --------------------------------------------------------------------------- schemas
TYPE_MAP = {"dict": "object", "float": "number", "tuple": "array", "string": "string", "integer": "integer",
            "boolean": "boolean", "array": "array", "number": "number", "object": "object", "null": "null",
            # BFCL's Java / JavaScript type names
            "String": "string", "char": "string", "Boolean": "boolean", "long": "integer", "double": "number",
            "Array": "array", "ArrayList": "array", "HashMap": "object"}


def normalize_bfcl(s, notes: dict):
    """A BFCL parameter schema as standard JSON Schema (see the module docstring)."""
    if not isinstance(s, dict):
        return s

    def note(what):
        notes[what] = notes.get(what, 0) + 1

    out = {}
    for key, value in s.items():
        if key == "optional":
            note("BFCL optional flag dropped")
        elif key == "type":
            if value in ("any", ""):
                note(f"type {value!r} -> no constraint")
            elif value in TYPE_MAP:
                out["type"] = TYPE_MAP[value]
                if value != TYPE_MAP[value]:
                    note(f"type {value} -> {TYPE_MAP[value]}")
            else:
                out["type"] = value  # left for the engines to judge
                note(f"unknown type {value}")
        elif key == "properties" and isinstance(value, dict):
            out["properties"] = {k: normalize_bfcl(v, notes) for k, v in value.items()}
        elif key in ("items", "additionalProperties"):
            out[key] = normalize_bfcl(value, notes)
        else:
            out[key] = value
    if "enum" in out and "type" in out and isinstance(out["enum"], list) \
            and not all(has_type(v, out["type"]) for v in out["enum"] if out["type"] in TYPE_MAP.values()):
        del out["type"]
        note("type contradicting its enum dropped")
    if isinstance(out.get("required"), list) and isinstance(out.get("properties"), dict):
        kept = [k for k in out["required"] if k in out["properties"]]
        if len(kept) < len(out["required"]):
            note("required name without a property dropped")
            out["required"] = kept
    return out


def load_bfcl(notes: dict) -> list[tuple[str, str, dict]]:
    """(label, source, schema) of every distinct BFCL parameter schema, in file order."""
    try:
        data = importlib.resources.files("bfcl_eval") / "data"
    except ModuleNotFoundError:
        sys.exit("bfcl_eval not found: pip install --no-deps bfcl-eval")
    seen, out = set(), []
    for path in sorted(p for p in data.iterdir() if p.name.endswith(".json")):
        for line in path.read_text(encoding="utf-8").splitlines():
            try:
                record = json.loads(line)
            except json.JSONDecodeError:
                continue
            fns = record.get("function") if isinstance(record, dict) else None
            for fn in fns if isinstance(fns, list) else [fns] if isinstance(fns, dict) else []:
                if not isinstance(fn, dict) or not isinstance(fn.get("parameters"), dict):
                    continue
                key = json.dumps(fn["parameters"], sort_keys=True)
                if key in seen:
                    continue
                seen.add(key)
                out.append((f"{record.get('id')}:{fn.get('name')}", path.name, normalize_bfcl(fn["parameters"], notes)))
    return out


# (distribution, import name, glob under the package) of the real-world schema files.
REAL_WORLD = [
    ("jsonschema-specifications", "jsonschema_specifications", "schemas/*/metaschema.json"),
    ("check-jsonschema", "check_jsonschema", "builtin_schemas/**/*.json"),
    ("cfn-lint", "cfnlint", "data/schemas/extensions/**/*.json"),
    ("cfn-lint", "cfnlint", "data/schemas/other/**/*.json"),
    ("nbformat", "nbformat", "v*/nbformat.v*.schema.json"),
    ("openapi-spec-validator", "openapi_spec_validator", "resources/schemas/**/schema.json"),
    ("openapi-schema-validator", "openapi_schema_validator", "schemas/**/*.json"),
    ("aws-sam-translator", "samtranslator", "**/*schema*/**/*.json"),
    ("aws-sam-translator", "samtranslator", "policy_templates_data/schema.json"),
    ("cmake", "cmake", "data/share/cmake-*/Help/manual/**/*schema*.json"),
    ("setuptools", "setuptools", "config/*.schema.json"),
    ("scikit-build-core", "scikit_build_core", "resources/*.schema.json"),
    ("black", "black", "resources/*.schema.json"),
    ("jupyterlab", "jupyterlab", "schemas/**/*.json"),
]
SCHEMA_WORDS = {"$schema", "type", "properties", "$ref", "anyOf", "oneOf", "allOf", "items", "enum", "definitions",
                "$defs", "if", "required", "const", "not", "patternProperties", "additionalProperties"}


def load_real_world(missing: list) -> list[tuple[str, str, dict]]:
    """(label, distribution version, schema) of each distinct schema file of REAL_WORLD."""
    import importlib.metadata
    import importlib.util

    seen, out = set(), []
    for dist, module, pattern in REAL_WORLD:
        spec = importlib.util.find_spec(module)
        if spec is None or not spec.submodule_search_locations:
            missing.append(dist)
            continue
        root = Path(list(spec.submodule_search_locations)[0])
        version = importlib.metadata.version(dist)
        for path in sorted(root.glob(pattern)):
            try:
                schema = json.loads(path.read_text(encoding="utf-8"))
            except (json.JSONDecodeError, UnicodeDecodeError):
                continue
            if not isinstance(schema, dict) or not (SCHEMA_WORDS & set(schema)) or "op" in schema:
                continue  # not a schema (data, a JSON patch)
            key = hashlib.sha1(json.dumps(schema, sort_keys=True).encode()).hexdigest()
            if key in seen:
                continue
            seen.add(key)
            out.append((f"{dist}:{path.relative_to(root)}", f"{dist} {version}", schema))
    return out


def jsonschema_cannot_use(schema) -> str | None:
    """Why the `jsonschema` validator cannot use `schema` (None: it can): the schema fails
    its metaschema (check_schema, `regex` format included), or a `$ref` does not resolve
    (looked up from the document's root in jsonschema's own registry; `$ref`s under a
    nested `$id` are not checked). A refusal of such a schema is no loss."""
    import jsonschema
    import referencing
    import referencing.exceptions
    import referencing.jsonschema
    from jsonschema_specifications import REGISTRY

    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    try:
        cls.check_schema(schema)
    except jsonschema.exceptions.SchemaError as e:
        return f"fails its metaschema: {e.message[:80]}"
    spec = referencing.jsonschema.specification_with(cls.META_SCHEMA.get("$id", cls.META_SCHEMA.get("$schema", "")),
                                                     default=referencing.jsonschema.DRAFT202012)
    resolver = REGISTRY.resolver_with_root(referencing.Resource.from_contents(schema, default_specification=spec))

    def refs(node, nested_id):
        if isinstance(node, dict):
            if isinstance(node.get("$ref"), str) and not nested_id:
                yield node["$ref"]
            for k, v in node.items():
                if k not in ("enum", "const", "examples", "default"):
                    yield from refs(v, nested_id or (node is not schema and isinstance(node.get("$id"), str)))
        elif isinstance(node, list):
            for v in node:
                yield from refs(v, nested_id)

    for ref in refs(schema, False):
        try:
            resolver.lookup(ref)
        except referencing.exceptions.Unresolvable:
            return f"$ref {ref[:60]} does not resolve"
    return None


# --------------------------------------------------------------------------- worker
class Xgr2Adapter:
    def __init__(self, hf_tok, vocab_size, stops):
        import xgr2

        self.xgr2 = xgr2
        self.tok = xgr2.TokenizerInfo.from_huggingface(hf_tok, vocab_size=vocab_size, stop_token_ids=stops)
        self.warm = None
        self.unsupported = "error"

    def compile(self, schema, mode):
        if mode == "fresh":
            self.tok.clear_cross_grammar_cache()
            self.xgr2.clear_shared_automata()
            compiler = self.xgr2.Compiler(self.tok, cache_limit_bytes=0)
        else:
            if self.warm is None:
                self.tok.clear_cross_grammar_cache()
                self.xgr2.clear_shared_automata()
                self.warm = self.xgr2.Compiler(self.tok)
            compiler = self.warm
        return compiler.compile(self.xgr2.Grammar.from_json_schema(schema, unsupported=self.unsupported))

    def first_mask(self, compiled, out):
        compiled.initial_state().fill_bitmask(out, 0)


class Xgr2WarnAdapter(Xgr2Adapter):
    """xgr2 with unsupported="warn": widens only where docs/json_schema.md says (as xgrammar
    widens, with a log line, by default); the warnings are silenced here."""

    def __init__(self, hf_tok, vocab_size, stops):
        super().__init__(hf_tok, vocab_size, stops)
        self.unsupported = "warn"

    def compile(self, schema, mode):
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return super().compile(schema, mode)


class XGrammarAdapter:
    def __init__(self, hf_tok, vocab_size, stops):
        import xgrammar

        self.xgr = xgrammar
        self.tok = xgrammar.TokenizerInfo.from_huggingface(hf_tok, vocab_size=vocab_size, stop_token_ids=stops)
        self.warm = None

    def compile(self, schema, mode):
        if mode == "fresh":
            compiler = self.xgr.GrammarCompiler(self.tok, cache_enabled=False)
        else:
            if self.warm is None:
                self.warm = self.xgr.GrammarCompiler(self.tok, cache_enabled=True)
            compiler = self.warm
        return compiler.compile_json_schema(json.dumps(schema))

    def first_mask(self, compiled, out):
        self.xgr.GrammarMatcher(compiled).fill_next_token_bitmask(out, 0)


class LLGuidanceAdapter:
    def __init__(self, hf_tok, vocab_size, stops):
        import llguidance
        import llguidance.hf
        import llguidance.numpy

        self.llg = llguidance
        self.tok = llguidance.hf.from_tokenizer(hf_tok, n_vocab=vocab_size, eos_token=stops)

    def compile(self, schema, mode):
        matcher = self.llg.LLMatcher(self.tok, self.llg.LLMatcher.grammar_from_json_schema(schema))
        if matcher.is_error():
            raise RuntimeError(matcher.get_error())
        return matcher

    def first_mask(self, matcher, out):
        self.llg.numpy.fill_next_token_bitmask(matcher, out, 0)
        if matcher.is_error():
            raise RuntimeError(matcher.get_error())


ADAPTERS = {"xgr2": Xgr2Adapter, "xgr2-warn": Xgr2WarnAdapter, "xgrammar": XGrammarAdapter,
            "llguidance": LLGuidanceAdapter}


def worker_main(engine: str) -> None:
    """Reads {"mode", "schema"} jobs, one JSON per line; writes one reply per line."""
    from _common import MASK_WORDS, STOP_TOKEN_IDS, VOCAB_SIZE, load_tokenizer

    adapter = ADAPTERS[engine](load_tokenizer(), VOCAB_SIZE, STOP_TOKEN_IDS)
    out = np.zeros((1, MASK_WORDS), dtype=np.int32)
    gc.collect()
    gc.freeze()  # the tokenizers' many objects: keep them out of every later collection
    print(json.dumps({"ready": True}), flush=True)
    pc = time.perf_counter_ns

    def run(job) -> dict:
        reply = {}
        gc.collect()
        gc.disable()
        try:
            t0 = pc()
            compiled = adapter.compile(job["schema"], job["mode"])
            t1 = pc()
            reply["compile_ms"] = (t1 - t0) / 1e6
            try:
                adapter.first_mask(compiled, out)
                reply["ttfm_ms"] = (pc() - t0) / 1e6
            except Exception as e:  # noqa: BLE001
                reply["mask_error"] = f"{type(e).__name__}: {str(e)[:300]}"
        except Exception as e:  # noqa: BLE001 - a refusal
            reply["error"] = f"{type(e).__name__}: {str(e)[:300]}"
        finally:
            gc.enable()
        return reply

    warm_set = None
    for line in sys.stdin:
        job = json.loads(line)
        # A warm compiler serves one set, and none is alive in fresh mode (fresh keeps
        # nothing of earlier schemas, their memory included).
        if job["mode"] == "fresh" or job.get("set") != warm_set:
            adapter.warm, warm_set = None, (job.get("set") if job["mode"] == "warm" else None)
        reply = run(job)
        # Fresh: every run starts from empty caches, so the least of up to 3 runs (those
        # under FRESH_REPEAT_BELOW_MS) is the cold time with less of the machine's noise.
        for _ in range(FRESH_RUNS - 1):
            if job["mode"] != "fresh" or reply.get("ttfm_ms", np.inf) > FRESH_REPEAT_BELOW_MS:
                break
            again = run(job)
            if again.get("ttfm_ms", np.inf) < reply["ttfm_ms"]:
                reply = again
        print(json.dumps(reply), flush=True)


class Worker:
    def __init__(self, engine: str, timeout: float):
        self.engine, self.timeout, self.proc, self.restarts = engine, timeout, None, 0

    def start(self):
        here = os.path.dirname(os.path.abspath(__file__))
        self.proc = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--worker", self.engine], cwd=here,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1,
                                     env=dict(os.environ, PYTHONPATH=os.pathsep.join(
                                         [here] + sys.path + [os.environ.get("PYTHONPATH", "")])))
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"{self.engine} worker did not start")

    def run(self, schema, mode, set_name="") -> dict:
        if self.proc is None or self.proc.poll() is not None:
            self.restarts += self.proc is not None
            self.start()
        self.proc.stdin.write(json.dumps({"schema": schema, "mode": mode, "set": set_name}) + "\n")
        self.proc.stdin.flush()
        ready, _, _ = select.select([self.proc.stdout], [], [], self.timeout)
        line = self.proc.stdout.readline() if ready else ""
        if line:
            return json.loads(line)
        if not ready:
            self.proc.kill()  # our own child
            self.proc.wait()
            return {"error": f"timeout: no answer within {self.timeout:.0f} s", "timeout": True}
        rc = self.proc.wait()
        return {"error": f"worker died (exit {rc})", "crash": True}

    def close(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.stdin.close()
            self.proc.wait(timeout=30)


# --------------------------------------------------------------------------- report
def refusal_reason(engine: str, error: str) -> str:
    """A short group name for a refusal message."""
    if error.startswith("timeout"):
        return "timeout"
    if engine.startswith("xgr2"):
        text = error.split(" (pass unsupported=")[0].split(" (at ")[0]
        text = re.sub(r"\$ref `[^`]*`", "$ref `…`", text)  # group by kind, not by target
        text = re.sub(r"(pattern|type) \"[^\"]*\"", r'\1 "…"', text)
        return re.sub(r"\d+", "N", text)[:110]
    text = re.sub(r"\s+", " ", error)
    return re.sub(r"\d+", "N", text)[:100]


def stats(values) -> tuple[float, float, float]:
    a = np.asarray(values, dtype=float)
    return (float(np.median(a)), float(np.percentile(a, 99)), float(a.max())) if a.size else (np.nan,) * 3


def fmt(x: float) -> str:
    return "-" if np.isnan(x) else f"{x:.2f}" if x < 100 else f"{x:.0f}"


def set_table(results: dict, n: int, engines: list[str], common: list[int] | None = None) -> str:
    """Rows engine x mode; columns counts and compile / TTFM median, p99, max (ms).
    With `common`, only those schema indices count (every engine compiled them)."""
    head = ["engine", "mode", "schemas", "refused", "of which timeouts", "mask errors", "compile median",
            "compile p99", "compile max", "TTFM median", "TTFM p99", "TTFM max"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for engine in engines:
        for mode in MODES:
            rs = results[engine][mode]
            idx = range(n) if common is None else common
            ok = [rs[i] for i in idx if "error" not in rs[i] and "mask_error" not in rs[i]]
            refused = sum("error" in rs[i] for i in idx)
            timeouts = sum(bool(rs[i].get("timeout")) for i in idx)
            mask_err = sum("mask_error" in rs[i] for i in idx)
            c, t = stats([r["compile_ms"] for r in ok]), stats([r["ttfm_ms"] for r in ok])
            lines.append("| " + " | ".join([engine, mode, str(len(idx)), str(refused), str(timeouts), str(mask_err),
                                            *map(fmt, c), *map(fmt, t)]) + " |")
    return "\n".join(lines)


def targets(results: dict, n: int, engines: list[str], usable: list[int]) -> list[str]:
    """Issue 10's targets for xgr2 against the peers, per mode. Refusals are counted among
    the schemas the jsonschema validator can use (`usable`): xgr2 exact (the default,
    unsupported="error") and xgr2-warn (widening where the docs table says, as xgrammar
    widens by default) against each peer."""
    if "xgr2" not in engines:
        return []
    out = []
    for mode in MODES:
        def ok(e):
            return [r for r in results[e][mode] if "error" not in r and "mask_error" not in r]

        def refused(e):
            return sum("error" in results[e][mode][i] for i in usable)

        x = stats([r["ttfm_ms"] for r in ok("xgr2")])
        peers = [e for e in engines if not e.startswith("xgr2")]
        best = min((stats([r["ttfm_ms"] for r in ok(e)])[0] for e in peers), default=np.nan)
        mine = [e for e in ("xgr2", "xgr2-warn") if e in engines]
        fewest = min(refused(e) for e in mine)
        # Like for like: each engine's median over its own set rewards refusing the hard
        # schemas, so the medians over the schemas both compile are given too.
        pairs = []
        for e in peers:
            both = [i for i, (a, b) in enumerate(zip(results["xgr2"][mode], results[e][mode]))
                    if not any(k in r for r in (a, b) for k in ("error", "mask_error"))]
            if both:
                pairs.append((e, len(both), stats([results["xgr2"][mode][i]["ttfm_ms"] for i in both])[0],
                              stats([results[e][mode][i]["ttfm_ms"] for i in both])[0]))
        checks = [
            (f"TTFM median {fmt(x[0])} ms vs best peer {fmt(best)} ms", not peers or x[0] <= best),
            ("on the schemas both compile, TTFM median " + ", ".join(
                f"xgr2 {fmt(a)} vs {e} {fmt(b)} ms ({k})" for e, k, a, b in pairs), all(a <= b for *_, a, b in pairs)),
            (f"TTFM p99 {fmt(x[1])} ms < 50 ms", x[1] < 50),
            (f"TTFM max {fmt(x[2])} ms < 500 ms", x[2] < 500),
            (f"refuses (of the {len(usable)} schemas jsonschema can use) "
             + ", ".join(f"{e} {refused(e)}" for e in mine + peers),
             fewest == 0 or all(fewest < refused(e) for e in peers)),
        ]
        out.append(f"{mode}: " + "; ".join(f"{text}: {'met' if good else 'MISSED'}" for text, good in checks))
    return out


def reasons_table(results: dict, labels: list[str], engine: str, limit: int) -> list[str]:
    groups: dict[str, list[str]] = {}
    for label, r in zip(labels, results[engine]["fresh"]):
        if "error" in r:
            groups.setdefault(refusal_reason(engine, r["error"]), []).append(label)
    rows = sorted(groups.items(), key=lambda kv: -len(kv[1]))
    lines = [f"- {len(where)} × {reason} (e.g. {where[0]})" for reason, where in rows[:limit]]
    if len(rows) > limit:
        lines.append(f"- ... {len(rows) - limit} more reasons, {sum(len(w) for _, w in rows[limit:])} schemas")
    return lines


# --------------------------------------------------------------------------- main
def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--sets", default="bfcl,real", help="comma-separated: bfcl, real")
    p.add_argument("--engines", default=",".join(ENGINE_NAMES))
    p.add_argument("--limit", type=int, default=0, help="at most this many schemas per set (evenly spaced)")
    p.add_argument("--timeout", type=float, default=30, help="seconds per schema before the worker is killed")
    p.add_argument("--write-results", action="store_true", help="put a dated section near the top of RESULTS.md")
    args = p.parse_args(argv)
    t_start = time.perf_counter()
    engines = args.engines.split(",")

    sets, notes, missing = {}, {}, []
    if "bfcl" in args.sets:
        sets["bfcl"] = load_bfcl(notes)
    if "real" in args.sets:
        sets["real"] = load_real_world(missing)
    for name, items in sets.items():
        if args.limit and len(items) > args.limit:
            sets[name] = [items[round(i * len(items) / args.limit)] for i in range(args.limit)]
    sources = {}
    for _, source, _ in sets.get("real", []):
        sources[source] = sources.get(source, 0) + 1
    print(", ".join(f"{k}: {len(v)} schemas" for k, v in sets.items()))
    if missing:
        print("packages not installed (their schemas left out): " + ", ".join(sorted(set(missing))))

    # results[set][engine][mode] = list of replies, in schema order
    results = {s: {e: {} for e in engines} for s in sets}
    restarts = {}
    # Engines take turns schema by schema (each in its own worker, one running at a time,
    # the first engine rotating), so a slow spell of the machine hits them alike.
    workers = {engine: Worker(engine, args.timeout) for engine in engines}
    t0 = time.perf_counter()
    for set_name, items in sets.items():
        for mode in MODES:
            for engine in engines:
                results[set_name][engine][mode] = []
            for i, (_, _, schema) in enumerate(items):
                for engine in engines[i % len(engines):] + engines[:i % len(engines)]:
                    results[set_name][engine][mode].append(workers[engine].run(schema, mode, set_name))
            print(f"{set_name} {mode}: {time.perf_counter() - t0:.0f} s", flush=True)
    for engine, worker in workers.items():
        worker.close()
        restarts[engine] = worker.restarts

    from _common import append_results

    body = []
    for set_name, items in sets.items():
        n, labels, res = len(items), [x[0] for x in items], results[set_name]
        common = [i for i in range(n) if all("error" not in res[e][m][i] and "mask_error" not in res[e][m][i]
                                             for e in engines for m in MODES)]
        title = {"bfcl": "(a) BFCL tool-parameter schemas", "real": "(b) real-world schemas from PyPI packages"}
        body += ["", f"### {title[set_name]}", ""]
        if set_name == "bfcl":
            body.append(f"{n} distinct parameter schemas of bfcl_eval/data; mapped: "
                        + ", ".join(f"{k} {v}" for k, v in sorted(notes.items())) + ".")
        else:
            body.append(f"{n} distinct schema files from: " + ", ".join(f"{k} ({v})" for k, v in sources.items())
                        + "." + (f" Not installed: {', '.join(sorted(set(missing)))}." if missing else ""))
        body += ["", "Times in ms over the schemas each engine compiled:", "", set_table(res, n, engines), "",
                 f"Only the {len(common)} schemas that every engine compiled in both modes:", "",
                 set_table(res, n, engines, common), "", "Issue 10 targets (xgr2, TTFM over the schemas it compiled):"]
        unusable = {i: why for i, (_, _, schema) in enumerate(items)
                    if set_name == "real" and (why := jsonschema_cannot_use(schema))}
        body += [f"- {line}" for line in targets(res, n, engines, [i for i in range(n) if i not in unusable])]
        if unusable:
            body += ["", f"Schemas the jsonschema validator cannot use ({len(unusable)}; their refusals are not counted "
                     "above; Python's `re` is its `regex` format check):"]
            body += [f"- {labels[i]}: {why}" for i, why in unusable.items()]
        for engine in engines:
            refused = sum("error" in r for r in res[engine]["fresh"])
            body += ["", f"{engine} refusals (fresh): {refused} of {n}" + (", by reason:" if refused else "")]
            body += reasons_table(res, labels, engine, 15 if engine.startswith("xgr2") else 8)
            mask_errors = [(labels[i], r["mask_error"]) for i, r in enumerate(res[engine]["fresh"]) if "mask_error" in r]
            if mask_errors:
                body.append(f"- first-mask errors: {len(mask_errors)} (e.g. {mask_errors[0][0]}: {mask_errors[0][1][:150]})")
    body += ["", "Worker restarts (after a timeout or crash): " + ", ".join(f"{e} {n}" for e, n in restarts.items())]
    text = "\n".join(body)
    print(text)
    print(f"\nran in {time.perf_counter() - t_start:.0f} s")
    if args.write_results:
        append_results("JSON-Schema compile benchmark (BFCL and real-world schemas, Llama-3 tokenizer)",
                       "bench_schema_compile.py", argv,
                       ["- Compile = schema to compiled grammar; TTFM = compile + initial state + first mask"
                        " (single-threaded fill); fresh = empty caches per schema (least of 3 runs under 100 ms), warm = one long-lived compiler"
                        " per engine over the set; each engine in its own worker process, engines taking turns schema by schema.",
                        *body.copy(), ""], at_top=True)
    return 0


if __name__ == "__main__":
    if sys.argv[1:2] == ["--worker"]:
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        worker_main(sys.argv[2])
    else:
        sys.exit(main())

"""JSON-Schema benchmark: xgr2 vs xgrammar vs llguidance on real tool-parameter schemas.

The schemas are the "parameters" of BFCL function definitions (bfcl_eval/data): 10
evenly spaced distinct ones from each of 6 Python-typed files, plus the first schema
having a feature (nested object, tuple, "any", ...) that these miss. They are mapped
from BFCL's types to standard JSON Schema ("dict" -> "object", "float" -> "number",
"tuple" -> "array", "any" -> any value). Kept: type, properties, required, enum, items.
Dropped: annotations (description, default), BFCL's own "optional" flag (optional
means not in "required"), and the keywords not modelled (format, maximum: the counts
in the selection are printed); also required names without a property schema, and a
type that contradicts its enum (BFCL has "integer" with ["1", "2"]: the enum is kept).
Objects with properties get "additionalProperties": false (no other keys, as in
xgrammar's strict mode); objects without properties get true (any object). Schemas
with other BFCL types (Java/JavaScript ones such as "String" or "HashMap") are not
selected. The same standard schema goes to xgr2 (`Grammar.from_json_schema`, a
compiler without cache; the conversion counts as compile time), xgrammar
(`compile_json_schema`, a fresh compiler with the cache disabled) and llguidance
(`grammar_from_json_schema`).

xgr2 keeps node masks in a cross-grammar cache per tokenizer (shared by every grammar
compiled in the process, like a server that has seen requests before): the "xgr2" row
reuses the masks of structures earlier schemas shared (strings, numbers), "xgr2-cold"
clears that cache before every compile, "xgr2-precompute" computes every node mask
at compile time. With `--engines xgr2-background` (run it alone: its job goes on while
the other engines' workers take their turns), xgr2 starts that on one pool thread after
each compile (`precompute_masks(num_threads=1, background=True)`, the second core here)
and asks the masks meanwhile.

For each schema one valid argument object is built deterministically (every property
in schema order, plausible values), serialized with `json.dumps` (default separators),
checked with `jsonschema`, tokenized with the Llama-3 tokenizer and forced-decoded
through every engine, single-threaded: compile time, TTFM (compile + initial state +
first mask), every mask fill (wall and thread CPU) and advance, and the grammar time of
the whole request (compile + initial state + all masks + all advances). Aggregates:
medians over schemas of compile, TTFM and request time; percentiles over all masks.
Every engine must accept every document (and allow a stop token at its end); failures
are listed. Masks of the first steps are compared with xgr2's.

With `--set real`, the schemas are instead the real-world set of bench_schema_compile.py
(JSON Schemas shipped in PyPI packages: GitHub workflows, compose files, CloudFormation
snippets, notebook formats, ...), unchanged, each with the document that
benchmarks/real_world_documents.py drew for it with `hypothesis-jsonschema` (valid by
`jsonschema`; written once to benchmarks/data/real_world_documents.jsonl, since drawing
takes minutes). The statistics cover the schemas that every engine compiles and whose
document every engine accepts; the others are listed as failures.

Setup: as for bench_json_mask.py, plus `pip install jsonschema`. Run:

    python benchmarks/bench_schemas.py [--set bfcl|real] [--per-file 10] [--engines ...] [--write-results]

`--write-results` appends a dated section to benchmarks/RESULTS.md. About 1 minute on
2 cores.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time

import numpy as np

from _common import (
    RESULTS_MD,
    agreement_lines,
    append_results,
    bfcl_data_dir,
    compare_masks,
    has_type,
    load_tokenizer,
    mask_tables,
    run_document,
    setup_engines,
    summarize,
)

ENGINE_NAMES = ["xgr2", "xgrammar", "llguidance", "xgr2-precompute", "xgr2-cold"]
# BFCL files with Python-typed function definitions, in selection order.
BFCL_FILES = [
    "BFCL_v4_simple_python.json",
    "BFCL_v4_multiple.json",
    "BFCL_v4_parallel_multiple.json",
    "BFCL_v4_live_simple.json",
    "BFCL_v4_live_multiple.json",
    "BFCL_v4_live_parallel_multiple.json",
]
TYPE_MAP = {"dict": "object", "float": "number", "tuple": "array", "string": "string",
            "integer": "integer", "boolean": "boolean", "array": "array"}
KEPT = {"type", "properties", "required", "enum", "items"}
# Schema features for which the first schema having it is always selected.
FEATURES = ["enum", "array", "array of objects", "nested object", "object without properties",
            "tuple", "any", "optional property"]


# --------------------------------------------------------------------------- schemas
class Unsupported(Exception):
    pass


def normalize(s: dict, features: set, dropped: dict, nested: bool = False) -> dict:
    """BFCL parameter schema -> standard JSON Schema (see the module docstring)."""
    t = s.get("type")
    for key in set(s) - KEPT:
        dropped[key] = dropped.get(key, 0) + 1
    if t == "any":
        features.add("any")
        return {}
    if t not in TYPE_MAP:
        raise Unsupported(t)
    out = {"type": TYPE_MAP[t]}
    if "enum" in s:
        features.add("enum")
        out["enum"] = list(s["enum"])
        if not all(has_type(v, out["type"]) for v in out["enum"]):
            del out["type"]  # e.g. "integer" with ["1", "2"]: the enum says what is meant
            dropped["type contradicting its enum"] = dropped.get("type contradicting its enum", 0) + 1
    if t == "dict":
        props = {k: normalize(v, features, dropped, True) for k, v in s.get("properties", {}).items()}
        if nested:
            features.add("nested object")
        if props:
            out["properties"] = props
            required = [k for k in s.get("required", []) if k in props]
            if len(required) < len(s.get("required", [])):
                dropped["required name without a property"] = dropped.get("required name without a property", 0) + 1
            if required:
                out["required"] = required
            if len(required) < len(props):
                features.add("optional property")
            out["additionalProperties"] = False
        else:
            features.add("object without properties")
            out["additionalProperties"] = True
    elif t in ("array", "tuple"):
        features.add("tuple" if t == "tuple" else "array")
        if "items" in s:
            out["items"] = normalize(s["items"], features, dropped, True)
            if out["items"].get("type") == "object":
                features.add("array of objects")
    return out


def load_schemas(per_file: int) -> tuple[list[tuple[str, dict, set]], dict]:
    """(label, standard schema, features) of `per_file` evenly spaced distinct schemas
    of each BFCL file, plus the first schema of every feature in FEATURES not yet
    covered. Returns them and the counts of dropped keywords."""
    data = bfcl_data_dir()
    seen, by_file = set(), {}
    for fname in BFCL_FILES:
        by_file[fname] = []
        for line in (data / fname).read_text(encoding="utf-8").splitlines():
            record = json.loads(line)
            for fn in record["function"]:
                key = json.dumps(fn["parameters"], sort_keys=True)
                if key in seen:
                    continue
                seen.add(key)
                features, dropped = set(), {}
                try:
                    schema = normalize(fn["parameters"], features, dropped)
                except Unsupported:
                    continue
                label = f"{record['id']}:{fn['name']}"
                by_file[fname].append((label, schema, features, dropped))
    picked = []
    for fname, cands in by_file.items():
        n = min(per_file, len(cands))
        picked += [cands[round(i * len(cands) / n)] for i in range(n)]
    for feature in FEATURES:
        if not any(feature in p[2] for p in picked):
            extra = next((c for f in BFCL_FILES for c in by_file[f] if feature in c[2]), None)
            if extra:
                picked.append(extra)
    dropped = {}
    for *_, d in picked:
        for key, n in d.items():
            dropped[key] = dropped.get(key, 0) + n
    return [p[:3] for p in picked], dropped


def failure_lines(failures: list[str], runs: dict[str, list[dict]], limit: int | None) -> list[str]:
    """Every failure, or per engine its counts (refused to compile / rejected the
    document) and the first `limit`."""
    if limit is None:
        return [f"- {f}" for f in failures]
    out = []
    for name, rs in runs.items():
        mine = [f for f in failures if f.startswith(f"{name} on ")]
        rejected = sum(1 for r in rs if r["error"] and "rejected" in r["error"])
        other = sum(1 for r in rs if r["error"]) - rejected
        out.append(f"- {name}: {other} refused or failed, {rejected} documents rejected; e.g.")
        out += [f"  - {f.removeprefix(name + ' on ')[:300]}" for f in mine[:limit]]
    return out


def real_world_schemas() -> tuple[list[tuple[str, dict, set]], dict[str, str], dict[str, int]]:
    """(label, schema, no features) of the real-world schemas that have a drawn document,
    the documents by label, and the counts of schemas left out by reason."""
    from bench_schema_compile import load_real_world
    from real_world_documents import declared_orders, in_declared_order, load_documents, schema_sha1

    drawn = load_documents()
    schemas, documents, left_out = [], {}, {}
    for label, _, schema in load_real_world([]):
        sha1, text = drawn.get(label, (None, None))
        if text is None or sha1 != schema_sha1(schema):
            why = "none drawn" if text is None else "schema changed since drawn"
            left_out[why] = left_out.get(why, 0) + 1
            continue
        schemas.append((label, schema, set()))
        documents[label] = json.dumps(in_declared_order(json.loads(text), declared_orders(schema)))
    return schemas, documents, left_out


# --------------------------------------------------------------------------- documents
STRING_SAMPLES = [  # (words of a property name, value), first match wins
    ({"email"}, "jane.doe@example.com"),
    ({"url", "link", "website", "endpoint"}, "https://example.com/api/v1"),
    ({"date", "day", "birthday"}, "2024-06-15"),
    ({"time", "hour"}, "14:30"),
    ({"city", "location", "place", "address", "destination", "origin"}, "San Francisco, CA"),
    ({"country", "nation"}, "United States"),
    ({"language", "lang"}, "English"),
    ({"currency"}, "USD"),
    ({"id", "code"}, "A1234"),
    ({"name", "title", "author", "user", "player", "team", "artist"}, "John Smith"),
    ({"query", "keyword", "keywords", "search", "text", "message", "content", "prompt"}, "best pizza near me"),
]


def sample_string(name: str) -> str:
    """A string value that fits a property called `name` (snake_case or camelCase)."""
    words = set(re.sub(r"([a-z])([A-Z])", r"\1_\2", name).lower().replace("-", "_").split("_"))
    return next((value for keys, value in STRING_SAMPLES if keys & words), "San Francisco")


def sample_value(schema: dict, name: str):
    """A plausible value of `schema` (the standard form), deterministic."""
    if "enum" in schema:
        return schema["enum"][0]
    if schema == {}:
        return sample_string(name)
    t = schema["type"]
    if t == "object":
        props = schema.get("properties")
        return {k: sample_value(v, k) for k, v in props.items()} if props else {"key": "value", "count": 3}
    if t == "array":
        items = schema.get("items", {})
        return [sample_value(items, name), sample_value(items, name)] if items else ["San Francisco", 42]
    if t == "string":
        return sample_string(name)
    if t == "integer":
        return 2024 if "year" in name.lower() else 10
    if t == "number":
        return 37.7749 if "lat" in name.lower() else 2.5
    if t == "boolean":
        return True
    raise ValueError(t)


# --------------------------------------------------------------------------- main
def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--set", choices=["bfcl", "real"], default="bfcl",
                   help="BFCL tool-parameter schemas, or the real-world schemas of bench_schema_compile.py")
    p.add_argument("--per-file", type=int, default=10, help=f"schemas from each of {len(BFCL_FILES)} BFCL files")
    p.add_argument("--engines", default=",".join(ENGINE_NAMES), help="comma-separated subset")
    p.add_argument("--check-steps", type=int, default=10, help="steps whose masks are compared")
    p.add_argument("--no-warmup", action="store_true", help="skip the untimed warm-up pass")
    p.add_argument("--verbose", action="store_true", help="print every schema and document")
    p.add_argument("--write-results", action="store_true", help=f"append to {RESULTS_MD.name}")
    args = p.parse_args(argv)
    t_start = time.perf_counter()

    import jsonschema

    hf_tok = load_tokenizer()
    if args.set == "real":
        schemas, documents, dropped = real_world_schemas()
    else:
        schemas, dropped = load_schemas(args.per_file)
        documents = {label: json.dumps(sample_value(schema, "")) for label, schema, _ in schemas}
    cases = []  # (label, schema, text, ids)
    feature_counts = dict.fromkeys(FEATURES, 0)
    for label, schema, features in schemas:
        text = documents[label]
        try:
            jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)(schema).validate(
                json.loads(text))
        except jsonschema.ValidationError as e:
            print(f"skipping {label}: its sample does not validate: {e.message}")
            continue
        cases.append((label, schema, text, hf_tok.encode(text, add_special_tokens=False)))
        for f in features:
            feature_counts[f] += 1
        if args.verbose:
            print(f"{label}: {json.dumps(schema)}\n  {text}")
    n_tokens = [len(ids) for *_, ids in cases]
    print(f"{len(cases)} schemas; documents of {min(n_tokens)}-{max(n_tokens)} tokens"
          f" (median {int(np.median(n_tokens))}, total {sum(n_tokens)})")
    if args.set == "bfcl":
        print("schemas with: " + ", ".join(f"{f} {n}" for f, n in feature_counts.items()))

    engines, setup_ms = setup_engines(args.engines.split(","), hf_tok)
    if not engines:
        print("no engine available")
        return 1

    runs, failures = {}, []
    for name, engine in engines.items():
        t0 = time.perf_counter()
        if not args.no_warmup:  # a schema not in the set, so no node mask is shared
            warm = {"type": "object", "properties": {"w": {"type": "boolean"}}, "required": ["w"],
                    "additionalProperties": False}
            warm_ids = hf_tok.encode('{"w": true}', add_special_tokens=False)
            run_document(engine, lambda: engine.compile_json_schema(warm), warm_ids, False, 0)
        runs[name] = [
            run_document(engine, lambda s=schema: engine.compile_json_schema(s), ids, True, args.check_steps)
            for _, schema, _, ids in cases
        ]
        for (label, _, text, _), r in zip(cases, runs[name]):
            if r["error"]:
                failures.append(f"{name} on {label}: {r['error']}")
                print(f"FAIL {failures[-1]}\n  document: {text}")
        print(f"{name}: {time.perf_counter() - t0:.1f} s")

    # Statistics over the documents every engine compiled and accepted: the same masks for all.
    kept = [i for i in range(len(cases)) if all(r[i]["error"] is None for r in runs.values())]
    stats = {n: s for n, s in ((n, summarize([r[i] for i in kept], np.median)) for n, r in runs.items()) if s}
    table = mask_tables(stats, setup_ms, "schemas accepted")
    mismatches = compare_masks(runs, [c[0] for c in cases], hf_tok, [c[3] for c in cases]) if len(runs) > 1 else []
    mismatches.sort(key=lambda note: -int(note.split()[0]))
    agreement = (
        f"Masks compared with {next(iter(runs))}'s over the first {args.check_steps} steps"
        f" of each document: {'differences grouped by kind, most frequent first' if mismatches else 'identical'}"
        if len(runs) > 1 else "Masks not compared (one engine)"
    )
    notes = [
        "Total ms/request = compile + initial state + all masks + all advances; medians over schemas.",
        f"Statistics over the {len(kept)} of {len(cases)} documents that every engine compiled and accepted.",
        ("Dropped BFCL keywords (occurrences): " if args.set == "bfcl" else "Schemas without a document: ")
        + ", ".join(f"{k} {n}" for k, n in sorted(dropped.items())),
    ]
    print()
    print(table)
    print()
    for line in notes:
        print(line)
    print("Failures: " + ("none" if not failures else str(len(failures))))
    for f in failures:
        print("  " + f)
    print(agreement)
    for note in mismatches[:12]:
        print("  " + note)
    if len(mismatches) > 12:
        print(f"  ... {len(mismatches) - 12} more kinds")
    print(f"\nran in {time.perf_counter() - t_start:.0f} s")

    if args.write_results:
        source = (f"from {', '.join(f.removeprefix('BFCL_v4_') for f in BFCL_FILES)}" if args.set == "bfcl" else
                  "of bench_schema_compile.py's real-world set with a document from real_world_documents.py")
        append_results(
            "JSON-Schema benchmark (" + ("BFCL tool-parameter" if args.set == "bfcl" else "real-world")
            + " schemas, Llama-3 tokenizer)",
            "bench_schemas.py",
            argv,
            [
                f"- {len(cases)} schemas {source};"
                f" documents of {min(n_tokens)}-{max(n_tokens)} tokens (median {int(np.median(n_tokens))},"
                f" {sum(n_tokens)} in all)",
                *(["- Schemas with: " + ", ".join(f"{f} {n}" for f, n in feature_counts.items())]
                  if args.set == "bfcl" else []),
                *(f"- {line}" for line in notes),
                "",
                table,
                "",
                "Failures: " + ("none" if not failures else ""),
                *failure_lines(failures, runs, limit=None if args.set == "bfcl" else 3),
                "",
                *agreement_lines(agreement, mismatches, limit=12),
                "",
            ],
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())

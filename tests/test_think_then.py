"""`tool_calling.think_then`: `<think>` reasoning, then an answer (a JSON Schema's document,
a structural-tag format, or free text).

Oracles: the answer part of a text is accepted iff `jsonschema` says its JSON is valid
(documents from hypothesis-jsonschema, and mutations), and the reasoning part iff it
holds no `</think>`.
"""

from __future__ import annotations

import json

import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis_jsonschema import from_schema

import xgr2
from parsing import accepts
from xgr2 import tool_calling

BYTES = xgr2.TokenizerInfo([bytes([b]) for b in range(256)] + [b"<think>"], special_token_ids=[256])
SCHEMA = {"type": "object", "properties": {"answer": {"type": "integer", "minimum": 0},
                                          "why": {"type": "string", "maxLength": 8}},
          "required": ["answer"], "additionalProperties": False}
THOUGHTS = st.text(alphabet="ab </>think\n", max_size=20)


@pytest.fixture(scope="module")
def start():
    return xgr2.compile(tool_calling.think_then(json_schema=SCHEMA), BYTES).initial_state()


@settings(max_examples=80, deadline=None, suppress_health_check=list(HealthCheck))
@given(thought=THOUGHTS, doc=from_schema(SCHEMA) | st.dictionaries(st.sampled_from(["answer", "why", "x"]),
                                                              st.integers(-2, 2) | st.text("ab", max_size=9)))
def test_reasoning_then_a_schema_document(start, thought, doc):
    # Properties come in declared order (docs/json_schema.md), undeclared ones last.
    doc = {k: doc[k] for k in [*SCHEMA["properties"], *doc] if k in doc}
    text = f"<think>{thought}</think>\n\n{json.dumps(doc)}"
    expected = "</think>" not in thought and jsonschema.Draft202012Validator(SCHEMA).is_valid(doc)
    assert accepts(start, text) == expected, text


def test_the_reasoning_comes_first_and_whitespace_may_follow_it(start):
    assert accepts(start, '<think></think>{"answer": 1}')
    assert not accepts(start, '{"answer": 1}')
    assert not accepts(start, '<think>x</think>{"answer": 1} more')


def test_free_text_and_format_answers():
    free = xgr2.compile(tool_calling.think_then(), BYTES).initial_state()
    assert accepts(free, "<think>hmm</think>\n\nAnything at all, even <think>.")
    choice = tool_calling.think_then({"type": "or", "elements": [{"type": "const_string", "value": "yes"},
                                                                 {"type": "const_string", "value": "no"}]})
    state = xgr2.compile(choice, BYTES).initial_state()
    assert accepts(state, "<think>?</think> no") and not accepts(state, "<think>?</think> maybe")


def test_a_special_think_token_is_matched_by_id():
    tok = xgr2.TokenizerInfo([bytes([b]) for b in range(256)] + [b"<think>", b"</think>"],
                             special_token_ids=[256, 257])
    state = xgr2.compile(tool_calling.think_then(json_schema=SCHEMA, tokenizer_info=tok), tok).initial_state()
    for t in [256] + list(b"plan") + [257] + list(b'{"answer": 3}'):
        state = state.try_advance(t)
        assert state is not None
    assert state.can_terminate


def test_bad_arguments_are_clear_errors():
    with pytest.raises(xgr2.ToolCallingError, match="not both"):
        tool_calling.think_then({"type": "any_text"}, json_schema=SCHEMA)
    with pytest.raises(xgr2.ToolCallingError, match="format"):
        tool_calling.think_then("text")

"""Masks where a rule may end after almost any byte, checked against the brute-force
oracle with the Llama-3 vocabulary.

A string's content may end after any character, so about 1,400 Llama-3 tokens cross its
end (those holding a quote after valid content). The engine decides them in each
context through their subtrees merged by the parse they start from (CrossingGroups in
csrc/engine/crossing_groups.h, from the second context on), which holds only where the
context cannot go on with the bytes that follow an end of the rule on their paths. These tests cover both sides:
string values in many contexts (merged, sharing one classification across grammars),
escapes and multi-byte characters before the quote, and grammars whose continuation
does scan the rule's own bytes (walked token by token instead).
"""

import json

import numpy as np
import pytest

import xgr2

# Exact with direct cold walks (the default) and with every node classified.
pytestmark = pytest.mark.usefixtures("cold_walk_mode")


def oracle_mask(state, vocab_size):
    return np.fromiter((state.try_advance(t) is not None for t in range(vocab_size)), dtype=bool, count=vocab_size)


def check_masks_along(compiled, hf, text, at):
    """Walks `text`'s tokens; at each prefix ending with one of the strings in `at` (and at
    the start), compares the mask with the oracle."""
    tok = compiled.tokenizer_info
    ids = hf.encode(text, add_special_tokens=False)
    state = compiled.initial_state()
    checked = 0
    for k, t in enumerate([*ids, None]):
        prefix = hf.decode(ids[:k])
        if k == 0 or any(prefix.endswith(s) for s in at):
            mask = xgr2.bitmask_to_bool(state.bitmask(), tok.vocab_size)
            expected = oracle_mask(state, tok.vocab_size)
            wrong = np.flatnonzero(mask != expected)
            assert wrong.size == 0, (
                f"after {prefix!r}: mask differs at {wrong.size} ids, e.g. "
                + ", ".join(f"{tok.decoded_vocab[w]!r} mask={mask[w]}" for w in wrong[:6])
            )
            checked += 1
        if t is not None:
            state = state.advance(t)
    assert state.can_terminate
    return checked


SCHEMAS = [
    {
        "type": "object",
        "properties": {
            "name": {"type": "string"},
            "tags": {"type": "array", "items": {"type": "string"}},
            "note": {"type": "string"},
        },
        "required": ["name", "tags", "note"],
    },
    {
        "type": "object",
        "properties": {
            "city": {"type": "string"},
            "days": {"type": "integer"},
            "pairs": {"type": "object", "additionalProperties": {"type": "string"}},
        },
        "required": ["city", "days", "pairs"],
    },
]

DOCS = [
    {"name": 'say "hi"\\ to Zoë', "tags": ["a", "b,c", '"q"'], "note": "tab\there é€😀"},
    {"city": "Los Angeles", "days": 3, "pairs": {"k\"ey": "v", "x": "\\u"}},
]


def test_string_values_in_many_contexts_match_the_oracle(llama3_tokenizer_info, llama3_hf_tokenizer):
    compiler = xgr2.Compiler(llama3_tokenizer_info)  # one cross-grammar pool for both schemas
    for compact in (True, False):
        for schema, doc in zip(SCHEMAS, DOCS):
            grammar = xgr2.Grammar.from_json_schema(schema, any_whitespace=not compact)
            compiled = compiler.compile(grammar)
            text = json.dumps(doc, ensure_ascii=False, separators=(",", ":") if compact else None)
            # Every opening quote of a value, and inside strings after an escape.
            assert check_masks_along(compiled, llama3_hf_tokenizer, text, at=('"', "\\", "é", "k")) >= 6


CONTENT = 's ::= ([^\\u0000-\\u001F"\\\\] | "\\\\" (["/\\\\bfnrt] | "u" [0-9A-Fa-f]{4}))*\n'


@pytest.mark.parametrize(
    "ebnf, text",
    [
        # The continuation scans none of the bytes that follow an end on the crossing
        # paths (in Llama-3 those are punctuation and spaces, not letters): merged.
        ('root ::= "\\"" s [a-z0-9]+ "\\""\n' + CONTENT, '"hello world9"'),
        # It scans them all: each join may live on, so every path is walked.
        ('root ::= "\\"" s [ -~]+ "\\""\n' + CONTENT, '"hello, \\"world\\". 9"'),
        # Two contexts of one content rule, and a quote that may or may not end it.
        ('root ::= "<" s ">" | "\\"" s "\\"" ";" | "\\"" s "x\\"" "!"\n' + CONTENT, '"he said \\"x\\", ok x"!'),
    ],
)
def test_rules_that_end_after_any_byte_match_the_oracle(llama3_tokenizer_info, llama3_hf_tokenizer, ebnf, text):
    compiler = xgr2.Compiler(llama3_tokenizer_info)
    # The content's first context walks every crossing path (the merge is built at the
    # second): take it in another grammar, so that the one under test may merge.
    compiler.compile(xgr2.Grammar.from_ebnf('root ::= "[" s "]"\n' + CONTENT)).initial_state().advance_bytes(b"[").bitmask()
    compiled = compiler.compile(xgr2.Grammar.from_ebnf(ebnf))
    assert check_masks_along(compiled, llama3_hf_tokenizer, text, at=tuple('"\\ ,.x')) >= 3


def test_string_values_filled_by_threads_match_the_oracle(llama3_tokenizer_info):
    # An empty cross-grammar cache: many new string contexts at once, filled on several
    # threads while one of them builds the content's merged trie (the others walk on).
    tok = llama3_tokenizer_info
    tok.clear_cross_grammar_cache()
    compiler = xgr2.Compiler(tok)
    states = []
    for n in range(6):
        names = [f"p{n}_{i}" for i in range(3)]
        schema = {"type": "object", "properties": {p: {"type": "string"} for p in names}, "required": names}
        state = compiler.compile(xgr2.Grammar.from_json_schema(schema, any_whitespace=False)).initial_state()
        for p in names:
            state = state.advance_bytes(f'{"{" if p == names[0] else ","}"{p}":"'.encode())
            states.append(state)
            state = state.advance_bytes(b'x"')
    out = xgr2.allocate_token_bitmask(len(states), tok.vocab_size)
    xgr2.batch_fill_bitmask(states, out, num_threads=4)
    for row, state in enumerate(states[::4]):
        mask = xgr2.bitmask_to_bool(out[4 * row], tok.vocab_size)
        assert np.array_equal(mask, oracle_mask(state, tok.vocab_size)), f"row {4 * row}"
    for row, state in enumerate(states):
        assert np.array_equal(out[row], state.bitmask()), f"row {row}"

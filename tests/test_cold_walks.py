"""First visits of sparse states: a direct walk instead of a classification.

A state whose node masks are not cached yet and that scans few first bytes (a value
after `"key":`, a number) takes its mask by a direct walk of the vocabulary; its nodes
are classified at their 8th such visit in the grammar. Dense states (inside a string)
classify at once. Every mask equals the full walk's (the reference without any cache).
"""

import numpy as np
import pytest
import xgr2
from test_mask_oracle import oracle_mask
from xgr2._compiler import _compile_full_walk as full_walk

SCHEMA = {"type": "object", "properties": {"count": {"type": "integer"}, "name": {"type": "string"}},
          "required": ["count", "name"]}


@pytest.fixture
def fresh_pool(llama3_tokenizer_info):
    """No node mask of an earlier test in the cross-grammar cache."""
    llama3_tokenizer_info.clear_cross_grammar_cache()
    xgr2.clear_shared_automata()
    return llama3_tokenizer_info


def states(tok, text):
    grammar = xgr2.Grammar.from_json_schema(SCHEMA)
    compiled = xgr2.compile(grammar, tok)
    return compiled, compiled.initial_state().advance_text(text), full_walk(grammar, tok).initial_state().advance_text(text)


def test_a_sparse_state_is_walked_directly_until_its_eighth_visit(fresh_pool):
    compiled, state, reference = states(fresh_pool, '{"count": ')
    expected = reference.bitmask()
    before = compiled.num_cached_node_masks
    for visit in range(1, 8):
        assert np.array_equal(state.bitmask(), expected), visit
        assert compiled.num_cached_node_masks == before, f"visit {visit} classified"
    assert np.array_equal(state.bitmask(), expected)
    assert compiled.num_cached_node_masks > before  # the 8th visit classified its nodes
    assert np.array_equal(state.bitmask(), expected)  # and now it is served from them


def test_a_dense_state_is_classified_at_once(fresh_pool):
    compiled, state, reference = states(fresh_pool, '{"count": 3, "name": "ab')
    before = compiled.num_cached_node_masks
    assert np.array_equal(state.bitmask(), reference.bitmask())
    assert compiled.num_cached_node_masks > before


@pytest.mark.usefixtures("classify_always")
def test_without_direct_walks_a_sparse_state_is_classified_at_once(fresh_pool):
    compiled, state, reference = states(fresh_pool, '{"count": ')
    before = compiled.num_cached_node_masks
    assert np.array_equal(state.bitmask(), reference.bitmask())
    assert compiled.num_cached_node_masks > before


def test_direct_walks_are_exact_along_a_document(fresh_pool, llama3_hf_tokenizer):
    text = '{"count": 12, "name": "x y"}'
    grammar = xgr2.Grammar.from_json_schema(SCHEMA)
    state = xgr2.compile(grammar, fresh_pool).initial_state()
    reference = full_walk(grammar, fresh_pool).initial_state()
    for token in llama3_hf_tokenizer.encode(text, add_special_tokens=False):
        assert np.array_equal(state.bitmask(), reference.bitmask())
        state, reference = state.advance(token), reference.advance(token)
    assert np.array_equal(state.bitmask(), reference.bitmask())
    assert state.can_terminate


def test_a_sparse_state_too_costly_to_walk_is_classified_at_once(fresh_pool):
    # After a number deep in a C expression few first bytes are scannable, but every
    # step closes a hundred items (each precedence level, whitespace with comments): the
    # direct walk gives up on its parsing-work budget, and the state classifies instead.
    from pathlib import Path

    ebnf = (Path(__file__).resolve().parent.parent / "benchmarks" / "grammars" / "c_subset.ebnf").read_text()
    grammar = xgr2.Grammar.from_ebnf(ebnf)
    compiled = xgr2.compile(grammar, fresh_pool)
    text = "struct ring {\n    int data[16"
    state = compiled.initial_state().advance_text(text)
    before = compiled.num_cached_node_masks
    assert np.array_equal(state.bitmask(), full_walk(grammar, fresh_pool).initial_state().advance_text(text).bitmask())
    assert compiled.num_cached_node_masks > before  # classified at the first visit


def test_walks_from_narrow_states_equal_brute_force(fresh_pool):
    # A state that scans a few first bytes and no whitespace (a key's next letter, a
    # compact layout's value start) interns its walk's states only after some parsing
    # steps; a walk that goes on into a string's content or a number must stay exact.
    tok = fresh_pool
    grammar = xgr2.Grammar.from_json_schema(SCHEMA, any_whitespace=False)
    compiled = xgr2.compile(grammar, tok)
    for prefix in ['{"', '{"co', '{"count":', '{"count":1', '{"count":12,"', '{"count":12,"name":',
                   '{"count":12,"name":"x']:
        state = compiled.initial_state().advance_text(prefix)
        mask = xgr2.bitmask_to_bool(state.bitmask(), tok.vocab_size)
        assert np.array_equal(mask, oracle_mask(state, tok.vocab_size)), prefix

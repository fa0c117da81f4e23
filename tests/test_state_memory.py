"""Parser state memory: a state keeps alive only the Earley sets a parse from it can still
reach (one per open rule call), not every byte's set since the start.

`MatcherState.memory_bytes` counts those sets. The structural properties checked here:
it stays the same however long a flat document gets, grows linearly with nesting depth,
and the sharing behind it never lets one snapshot's advance change another (rollback to
an old state, branches from one state); every mask is compared with a fresh replay of
the same tokens on a grammar compiled without the mask cache (the full vocabulary walk).
"""

import gc
import json

import numpy as np
import pytest

import xgr2
from xgr2._compiler import _compile_full_walk


def flat_document(num_objects: int) -> bytes:
    """A JSON array of small objects cut inside the last object's "tags" array, in a
    string: four open calls (array, object, array, string) whatever the length."""
    items = [{"id": i, "name": f"item {i}", "tags": ["a", "b"], "ok": i % 2 == 0} for i in range(num_objects)]
    text = json.dumps(items)
    return text[: text.rindex('"b"') + 2].encode()


@pytest.fixture(scope="module")
def byte_json(byte_tokenizer_info):
    return xgr2.compile(xgr2.Grammar.builtin_json(), byte_tokenizer_info)


@pytest.fixture(scope="module")
def byte_json_reference(byte_tokenizer_info):
    return _compile_full_walk(xgr2.Grammar.builtin_json(), byte_tokenizer_info)


def test_flat_document_retains_the_same_at_ten_times_the_length(byte_json):
    short = byte_json.initial_state().advance_bytes(flat_document(200))
    long = byte_json.initial_state().advance_bytes(flat_document(2000))
    assert long.num_bytes > 9 * short.num_bytes
    assert long.memory_bytes == short.memory_bytes
    # A handful of sets (the open calls plus the current one), not one per byte.
    assert short.memory_bytes < 4096 < short.num_bytes


def test_flat_llama3_tokens_retain_the_same_at_ten_times_the_length(llama3_tokenizer_info, llama3_hf_tokenizer):
    compiled = xgr2.compile(xgr2.Grammar.builtin_json(), llama3_tokenizer_info)
    retained = []
    for n in (100, 1000):
        state = compiled.initial_state()
        for t in llama3_hf_tokenizer.encode(flat_document(n).decode(), add_special_tokens=False):
            state = state.advance(t)
        retained.append(state.memory_bytes)
    assert retained[0] == retained[1] < 4096


def test_complete_document_retains_only_the_current_set(byte_json):
    state = byte_json.initial_state()
    empty = state.memory_bytes
    done = state.advance_bytes(json.dumps([[1, [2, {"a": [3]}]]] * 50).encode())
    assert done.can_terminate
    assert done.memory_bytes <= 2 * empty  # the final set and the initial one it completes


def test_memory_grows_linearly_with_nesting_depth(byte_json):
    def nested(depth: int, tail: int) -> int:
        return byte_json.initial_state().advance_bytes(b"[" * depth + b"1," * tail + b"1").memory_bytes

    d1, d100, d200, d400 = nested(1, 10), nested(100, 10), nested(200, 10), nested(400, 10)
    per_level = (d400 - d200) / 200
    assert per_level > 0
    assert d200 - d100 == pytest.approx(100 * per_level, rel=0.05)
    assert d100 - d1 == pytest.approx(99 * per_level, rel=0.1)
    # The length inside the deepest array does not count, only the depth.
    assert nested(200, 5000) == d200


def test_deep_nesting_drops_without_recursion(byte_json):
    # 100,000 open arrays: releasing them one destructor inside another would overflow
    # the C++ stack.
    state = byte_json.initial_state().advance_bytes(b"[" * 100_000)
    assert state.memory_bytes > 100_000 * 16
    del state
    gc.collect()
    assert byte_json.initial_state().advance_bytes(b"[1]").can_terminate


def replayed_mask(compiled, data: bytes) -> np.ndarray:
    return compiled.initial_state().advance_bytes(data).bitmask()


def test_rollback_to_old_snapshots_after_advancing_far(byte_json, byte_json_reference):
    doc = flat_document(300)
    cuts = list(range(0, len(doc), 997)) + [len(doc) - 3]
    state, kept = byte_json.initial_state(), {}
    for i in range(len(doc)):
        if i in cuts:
            kept[i] = (state, state.memory_bytes)
        state = state.advance_bytes(doc[i : i + 1])
    final_mask = state.bitmask()
    del state
    gc.collect()
    for i, (old, retained) in kept.items():
        assert old.num_bytes == i
        assert old.memory_bytes == retained
        np.testing.assert_array_equal(old.bitmask(), replayed_mask(byte_json_reference, doc[:i]))
        # Rolling back and advancing again gives what the first pass gave.
        np.testing.assert_array_equal(old.advance_bytes(doc[i:]).bitmask(), final_mask)


def test_branches_from_one_snapshot_are_independent(byte_json, byte_json_reference):
    prefix = b'[{"a": [1, {"b": "x'
    root = byte_json.initial_state().advance_bytes(prefix)
    root_mask, root_retained = root.bitmask(), root.memory_bytes
    endings = [b'"}], "c": 2}]', b'y"}]}, [[[true]]]]', b'\\n", "d": []}]}]', b'"}, 3]}, {}]']
    branches = [root.advance_bytes(e[: len(e) // 2]) for e in endings]
    finished = [b.advance_bytes(e[len(e) // 2 :]) for b, e in zip(branches, endings)]
    for b in finished:
        assert b.can_terminate
    del finished[1], branches[1]  # dropping one branch leaves the others and the root intact
    gc.collect()
    np.testing.assert_array_equal(root.bitmask(), root_mask)
    assert root.memory_bytes == root_retained
    for e, b in zip(endings[:1] + endings[2:], branches):
        half = prefix + e[: len(e) // 2]
        np.testing.assert_array_equal(b.bitmask(), replayed_mask(byte_json_reference, half))
    for e in endings:
        cut = prefix + e[:3]
        np.testing.assert_array_equal(root.advance_bytes(e[:3]).bitmask(), replayed_mask(byte_json_reference, cut))

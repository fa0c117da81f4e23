"""Batch calls give the same results as the single calls, row by row."""

import numpy as np
import pytest
import xgr2
from grammars import EBNF


@pytest.fixture(scope="module")
def json_states(byte_fallback_tokenizer_info):
    compiled = xgr2.compile(EBNF["json"], byte_fallback_tokenizer_info)
    states, s = [], compiled.initial_state()
    for ch in '{"key": [1, 2.5, "x\\u00e9"], "b": {"c": null}}':
        states.append(s)
        s = s.advance_text(ch)
    return states + [s], byte_fallback_tokenizer_info


def test_batch_fill_matches_single_calls(json_states):
    states, tok = json_states
    rows = list(reversed(range(len(states))))
    out = np.full((len(states) + 2, (tok.vocab_size + 31) // 32), 7, dtype=np.int32)
    xgr2.batch_fill_bitmask(states, out, rows, num_threads=2)
    for state, row in zip(states, rows):
        assert (out[row] == state.bitmask()).all()
    assert (out[len(states):] == 7).all()  # rows not named are untouched


def test_batch_advance_matches_single_calls(json_states):
    states, tok = json_states
    rng = np.random.default_rng(0)
    tokens = rng.integers(0, tok.vocab_size, size=len(states))
    for i, s in enumerate(states):  # make about half the rows accept their token
        allowed = np.nonzero(xgr2.bitmask_to_bool(s.bitmask(), tok.vocab_size))[0]
        if i % 2 and allowed.size:
            tokens[i] = allowed[rng.integers(allowed.size)]
    results = xgr2.batch_advance(states, tokens)
    assert any(r is None for r in results) and any(r is not None for r in results)
    for s, t, r in zip(states, tokens, results):
        single = s.try_advance(int(t))
        assert (single is None) == (r is None)
        if r is not None:
            assert (r.bitmask() == single.bitmask()).all() and len(r) == len(s) + 1


def test_batch_errors(json_states):
    states, tok = json_states
    out = xgr2.allocate_token_bitmask(len(states), tok.vocab_size)
    with pytest.raises(TypeError, match="MatcherState"):
        xgr2.batch_fill_bitmask([states[0], None], out)
    with pytest.raises(ValueError, match="rows"):
        xgr2.batch_fill_bitmask(states[:2], out, [0])
    with pytest.raises(IndexError):
        xgr2.batch_fill_bitmask(states[:2], out, [0, len(states)])
    with pytest.raises(TypeError, match="int32"):
        xgr2.batch_fill_bitmask(states[:1], out.astype(np.int64))
    with pytest.raises(xgr2.InvalidTokenError, match="row 1"):
        xgr2.batch_advance(states[:2], [0, tok.vocab_size])
    with pytest.raises(ValueError, match="tokens"):
        xgr2.batch_advance(states[:2], [0])
    assert xgr2.batch_advance([], []) == []
    xgr2.batch_fill_bitmask([], out)

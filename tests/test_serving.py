"""Serving soundness: one request's background precompute never holds up another
request's masks, background work stops when cancelled or when its grammar is freed,
and masks filled from several threads at once stay exact."""

import gc
import itertools
import threading

import numpy as np
import pytest

import xgr2
from xgr2._compiler import _compile_full_walk

_fresh_block = itertools.count()


def slow_grammar(num_rules: int) -> str:
    """Rules whose string bodies each exclude another CJK character: no two share a
    structure, so each body's node mask is a walk of most of the vocabulary, never
    found in the cross-grammar cache (each call uses characters not used before)."""
    base = 0x4E00 + 1000 * next(_fresh_block)
    lines = ["root ::= " + " | ".join(f'"k{k}=" s{k}' for k in range(num_rules))]
    lines += [f's{k} ::= "\\"" [^"\\\\\\u{base + k:04x}]* "\\""' for k in range(num_rules)]
    return "\n".join(lines)


JSON_PREFIXES = ["", "{", '{"a', '{"a": ', '{"a": [1', '{"a": [1, "x', '{"a": [1, "x"], "b": tr', '{"a": {"c": -0.5']


def warm_json_states(tok):
    compiled = xgr2.compile(xgr2.Grammar.builtin_json(), tok, precompute="all")
    states = [compiled.initial_state().advance_text(p) for p in JSON_PREFIXES]
    reference = np.stack([s.bitmask() for s in states])
    out = xgr2.allocate_token_bitmask(len(states), tok.vocab_size)
    xgr2.batch_fill_bitmask(states, out)  # the walks' memos filled too
    assert np.array_equal(out, reference)
    return compiled, states, reference


def test_foreground_fill_returns_while_background_precompute_runs(llama3_tokenizer_info):
    tok = llama3_tokenizer_info
    _, states, reference = warm_json_states(tok)
    slow = xgr2.compile(slow_grammar(200), tok)  # about 1 s of precompute on one core
    job = slow.precompute_masks(num_threads=1, background=True)
    assert isinstance(job, xgr2.PrecomputeJob)
    out = xgr2.allocate_token_bitmask(len(states), tok.vocab_size)
    for _ in range(20):
        out.fill(0)
        xgr2.batch_fill_bitmask(states, out)
        assert np.array_equal(out, reference)
    # The old pool ran one job at a time: the fill above waited for the whole precompute.
    assert not job.done() and job.is_alive()
    done, total = job.progress
    assert 0 <= done < total
    job.cancel()
    job.join()
    assert job.done()
    stopped_at = job.progress[0]
    assert stopped_at < total
    # What was computed is exact; the rest is computed on demand or by a new job.
    state = slow.initial_state().advance_text("k7=")
    plain = _compile_full_walk(slow.grammar, tok).initial_state().advance_text("k7=")
    assert np.array_equal(state.bitmask(), plain.bitmask())
    rest = slow.precompute_masks(background=True)
    assert 0 < rest.progress[1] <= total - stopped_at  # only what is still missing
    rest.join()
    assert slow.precompute_masks(background=True).progress == (0, 0)


def test_background_precompute_stops_when_its_grammar_is_freed(llama3_tokenizer_info):
    slow = xgr2.compile(slow_grammar(200), llama3_tokenizer_info)
    job = slow.precompute_masks(num_threads=1, background=True)
    del slow
    gc.collect()
    job.join(timeout=30)
    assert job.done()
    done, total = job.progress
    assert done < total  # it stopped, not finished


def test_background_precompute_finishes_and_matches_foreground(llama3_tokenizer_info):
    text = slow_grammar(10)
    background = xgr2.compile(text, llama3_tokenizer_info)
    job = background.precompute_masks(background=True)
    job.join()
    assert job.done() and job.progress[0] == job.progress[1] > 0
    foreground = xgr2.compile(text, llama3_tokenizer_info)
    foreground.precompute_masks()
    assert background.num_cached_node_masks == foreground.num_cached_node_masks
    assert background.precompute_masks(background=True).progress == (0, 0)  # nothing left


def test_batch_fills_from_many_threads_at_once(llama3_tokenizer_info):
    tok = llama3_tokenizer_info
    _, states, reference = warm_json_states(tok)
    cold = xgr2.compile(xgr2.Grammar.builtin_json(), tok)  # its node masks computed on demand, concurrently
    cold_states = [cold.initial_state().advance_text(p) for p in JSON_PREFIXES]
    slow = xgr2.compile(slow_grammar(40), tok)
    job = slow.precompute_masks(background=True)
    errors = []

    def serve(which):
        try:
            batch = states if which % 2 else cold_states
            out = xgr2.allocate_token_bitmask(len(batch), tok.vocab_size)
            for _ in range(30):
                out.fill(0)
                xgr2.batch_fill_bitmask(batch, out, num_threads=2)
                assert np.array_equal(out, reference)
        except BaseException as e:  # reported by the main thread
            errors.append(e)

    threads = [threading.Thread(target=serve, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    job.join()
    assert not errors, errors[0]


def test_precompute_job_bad_arguments(byte_tokenizer_info):
    compiled = xgr2.compile('root ::= "a"+', byte_tokenizer_info)
    with pytest.raises(ValueError, match="count"):
        compiled.precompute_masks(-1, background=True)
    job = compiled.precompute_masks(1, background=True)
    job.join(timeout=0)  # a zero timeout returns at once
    job.join()
    assert job.done()
    job.cancel()  # cancelling a finished job is harmless
    assert job.done()


def test_interpreter_exits_cleanly_during_background_precompute(tmp_path):
    from conftest import llama3_tokenizer_path

    """A worker must never release the grammar's last reference (which holds Python
    objects): at interpreter exit that aborted the process."""
    import os
    import subprocess
    import sys

    script = tmp_path / "exit_early.py"
    script.write_text(
        "import xgr2\n"
        f"tok = xgr2.TokenizerInfo.from_tokenizer_json({llama3_tokenizer_path()!r})\n"
        "rules = ' | '.join(f'\"k{k}=\" s{k}' for k in range(200))\n"
        "body = '\\n'.join(f's{k} ::= \"x\" [^\"\\\\u{0x4e00 + k:04x}]* \"y\"' for k in range(200))\n"
        "compiled = xgr2.compile('root ::= ' + rules + '\\n' + body, tok)\n"
        "job = compiled.precompute_masks(background=True)\n"
    )
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    for _ in range(3):
        result = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=120)
        assert result.returncode == 0, result.stderr

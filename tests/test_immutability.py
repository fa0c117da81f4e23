"""Matcher states are immutable values: advancing, forking, forcing text and rejected
advances never change a state that already exists, and states are safe to share
between threads.

Every state's observable behaviour (bitmask, accepts() on probe tokens, can_terminate,
is_terminated, num_tokens, jump-forward text) is recorded when it is created and compared
again after all the other operations.
"""

import random
import threading

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import xgr2
from grammars import EBNF

MAX_STATES = 30  # states whose full snapshot (with mask) is kept per example


@pytest.fixture(scope="module")
def llama3_json(llama3_tokenizer_info):
    return xgr2.compile(EBNF["json"], llama3_tokenizer_info), llama3_tokenizer_info


@pytest.fixture(scope="module")
def byte_fallback_arith(byte_fallback_tokenizer_info):
    return xgr2.compile(EBNF["arith"], byte_fallback_tokenizer_info), byte_fallback_tokenizer_info


def outcome(fn):
    """The value of ``fn()``, or the type of the exception it raised."""
    try:
        return ("value", fn())
    except Exception as e:  # noqa: BLE001 - recorded, then compared
        return ("raised", type(e).__name__)


def snapshot(state, probes):
    return {
        "mask": state.bitmask().tobytes(),
        "accepts": tuple(state.accepts(t) for t in probes),
        "can_terminate": state.can_terminate,
        "is_terminated": state.is_terminated,
        "num_tokens": state.num_tokens,
        "len": len(state),
        "num_bytes": state.num_bytes,
        "jump_forward_bytes": state.jump_forward_bytes(),
        # Recorded as an outcome, so that an exception would be compared too.
        "jump_forward_text": outcome(state.jump_forward_text),
    }


class Scenario:
    """Random operations on a growing family of states, all recorded at creation."""

    def __init__(self, compiled, tok, rnd):
        self.tok, self.rnd = tok, rnd
        self.stop = set(tok.stop_token_ids)
        self.probes = sorted(set(rnd.sample(range(tok.vocab_size), 150)) | self.stop | {tok.vocab_size - 1})
        self.states, self.snaps = [], []
        self.add(compiled.initial_state())

    def add(self, state):
        if len(self.states) < MAX_STATES:
            self.states.append(state)
            self.snaps.append(snapshot(state, self.probes))

    def allowed(self, state):
        return np.flatnonzero(xgr2.bitmask_to_bool(state.bitmask(), self.tok.vocab_size)).tolist()

    def pick_parent(self):
        # Mostly the newest states (long chains), sometimes any (forks from old ancestors).
        if self.rnd.random() < 0.6:
            return self.states[-1 - self.rnd.randrange(min(3, len(self.states)))]
        return self.rnd.choice(self.states)

    def step(self):
        rnd, tok, s = self.rnd, self.tok, self.pick_parent()
        op = rnd.choice(["token", "token", "token", "bytes", "forced", "stop", "reject_token", "reject_bytes", "recheck"])
        allowed = self.allowed(s)
        text_ids = [t for t in allowed if t not in self.stop]
        if op == "token" and text_ids:
            t = rnd.choice(text_ids)
            child = s.advance(t)
            assert child.num_tokens == s.num_tokens + 1 and not child.is_terminated
            assert child.num_bytes == s.num_bytes + len(tok.decoded_vocab[t])
            self.add(child)
        elif op == "bytes" and text_ids:
            # The same token's bytes, as forced text: same parser position as the token.
            t = rnd.choice(text_ids)
            data = tok.decoded_vocab[t]
            try:
                child = s.advance_text(data.decode("utf-8"))
            except UnicodeDecodeError:
                child = s.advance_bytes(data)
            assert child.num_bytes == s.num_bytes + len(data)
            np.testing.assert_array_equal(child.bitmask(), s.advance(t).bitmask())
            self.add(child)
        elif op == "forced":
            forced = s.jump_forward_bytes()
            if forced:
                child = s.advance_bytes(forced)
                assert child.num_bytes == s.num_bytes + len(forced)
                self.add(child)
        elif op == "stop" and s.can_terminate:
            child = s.advance(rnd.choice(sorted(self.stop)))
            assert child.is_terminated and not child.can_terminate and child.num_tokens == s.num_tokens + 1
            assert child.try_advance(rnd.choice(self.probes)) is None
            self.add(child)
        elif op == "reject_token":
            rejected = sorted(set(self.probes) - set(allowed))
            if rejected:
                t = rnd.choice(rejected)
                assert s.try_advance(t) is None and not s.accepts(t)
                with pytest.raises(xgr2.TokenRejectedError):
                    s.advance(t)
        elif op == "reject_bytes":
            bad = rnd.choice([b"\xff", b"\x00", b"}}]]", b"\xc0\x80"])
            if s.try_advance_bytes(bad) is None:
                with pytest.raises(xgr2.TokenRejectedError):
                    s.advance_bytes(bad)
            if bad.isascii() and s.try_advance_bytes(bad) is None:
                with pytest.raises(xgr2.TokenRejectedError):
                    s.advance_text(bad.decode())
        elif op == "recheck":
            i = rnd.randrange(len(self.states))
            assert snapshot(self.states[i], self.probes) == self.snaps[i], f"state {i} changed"

    def check_all(self):
        for i, (state, snap) in enumerate(zip(self.states, self.snaps)):
            now = snapshot(state, self.probes)
            changed = [k for k in snap if now[k] != snap[k]]
            assert not changed, f"state {i} of {len(self.states)} changed: {changed}"


def run_scenario(compiled, tok, rnd, n_ops):
    sc = Scenario(compiled, tok, rnd)
    for _ in range(n_ops):
        sc.step()
    sc.check_all()


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rnd=st.randoms(use_true_random=False), n_ops=st.integers(10, 60))
def test_llama3_json_states_are_immutable(llama3_json, rnd, n_ops):
    run_scenario(*llama3_json, rnd, n_ops)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rnd=st.randoms(use_true_random=False), n_ops=st.integers(10, 80))
def test_byte_fallback_arith_states_are_immutable(byte_fallback_arith, rnd, n_ops):
    run_scenario(*byte_fallback_arith, rnd, n_ops)


def test_rejected_advance_leaves_state_usable(llama3_json, llama3_hf_tokenizer):
    compiled, tok = llama3_json
    state = compiled.initial_state().advance_text('{"key": [1, 2')
    before = snapshot(state, tok.stop_token_ids)
    bad = llama3_hf_tokenizer.encode("}", add_special_tokens=False)[0]
    for _ in range(3):
        with pytest.raises(xgr2.TokenRejectedError):
            state.advance(bad)
        assert state.try_advance(bad) is None
        with pytest.raises(xgr2.TokenRejectedError):
            state.advance_text('}"')
    assert snapshot(state, tok.stop_token_ids) == before
    assert state.advance_text("]}").can_terminate


def test_forks_share_a_past_but_not_a_future(byte_fallback_arith):
    compiled, tok = byte_fallback_arith
    base = compiled.initial_state().advance_text("(1 + 2")
    closed = base.advance_text(")")
    longer = base.advance_text("3 * 4")
    assert closed.can_terminate and not longer.can_terminate and not base.can_terminate
    assert base.advance_text(")").bitmask().tobytes() == closed.bitmask().tobytes()
    del base  # the forks keep their shared history alive
    assert closed.advance_text(" - 5").can_terminate
    assert longer.try_advance_bytes(b"))") is None
    assert longer.advance_text(")").can_terminate


def test_long_history_is_released_without_recursion(byte_fallback_arith):
    """A chain of many states is destroyed iteratively (no stack overflow)."""
    compiled, _ = byte_fallback_arith
    state = compiled.initial_state().advance_text("1")
    for _ in range(200_000 // 10):
        state = state.advance_text(" + 12345")
    assert state.can_terminate and state.num_bytes == 1 + 200_000 // 10 * 8
    del state


def test_jump_forward_text_mid_character(byte_tokenizer_info):
    """Regression: inside a multi-byte character jump_forward_text() raised RuntimeError
    ("nanobind::str(): conversion error"). Inside a character there is no whole text to
    force, so it returns "" and its bytes stay a prefix of jump_forward_bytes()."""
    compiled = xgr2.compile('root ::= "a✓b✓"', byte_tokenizer_info)
    state = compiled.initial_state().advance_bytes(b"a\xe2")
    forced = state.jump_forward_bytes()
    assert forced == "✓b✓".encode()[1:]
    text = state.jump_forward_text()
    assert text == "" and forced.startswith(text.encode())
    one = compiled.initial_state().advance_bytes("a✓".encode()[:-1])
    assert one.jump_forward_text() == ""
    assert one.advance_bytes(b"\x93").jump_forward_text() == "b✓"


def test_jump_forward_text_whole_characters(byte_tokenizer_info):
    compiled = xgr2.compile('root ::= "a✓b" | "a✓c"', byte_tokenizer_info)
    state = compiled.initial_state().advance_text("a")
    assert state.jump_forward_bytes() == "✓".encode()
    assert state.jump_forward_text() == "✓"
    assert state.advance_text(state.jump_forward_text()).jump_forward_bytes() == b""  # "b" or "c" next
    # "✓" and "✗" share their first two bytes: forced bytes end inside a character.
    split = xgr2.compile('root ::= "a" ("✓" | "✗")', byte_tokenizer_info).initial_state().advance_text("a")
    assert split.jump_forward_bytes() == b"\xe2\x9c" and split.jump_forward_text() == ""
    json_state = xgr2.compile(EBNF["json"], byte_tokenizer_info).initial_state().advance_text('{"a": tr')
    assert json_state.jump_forward_text() == "ue"


# ---------------------------------------------------------------------------------------
# Threads.


def thread_workload(compiled, tok, seed, n_states=20):
    """Shared states from a random walk, plus for each a token to advance by and one to reject."""
    rng = random.Random(seed)
    stop = set(tok.stop_token_ids)
    states, plans = [], []
    state = compiled.initial_state()
    while len(states) < n_states:
        mask = xgr2.bitmask_to_bool(state.bitmask(), tok.vocab_size)
        allowed = [t for t in np.flatnonzero(mask).tolist() if t not in stop]
        rejected = np.flatnonzero(~mask).tolist()
        if not allowed:
            break
        good, bad = rng.choice(allowed), rng.choice(rejected)
        states.append(state)
        plans.append((good, bad))
        state = state.advance(good)
    return states, plans


def run_states(states, plans, tok, out, row, order):
    """Per state: fill_bitmask into ``out[row]``, advance, reject; returns comparable results."""
    results = {}
    for i in order:
        s = states[i]
        good, bad = plans[i]
        s.fill_bitmask(out, row)
        mask = out[row].tobytes()
        child = s.advance(good)
        child_mask = child.bitmask().tobytes()
        assert s.try_advance(bad) is None and not s.accepts(bad)
        with pytest.raises(xgr2.TokenRejectedError):
            s.advance(bad)
        results[i] = (mask, child_mask, child.num_tokens, child.can_terminate, s.jump_forward_bytes())
    return results


@pytest.mark.parametrize("which", ["llama3_json", "byte_fallback_arith"])
def test_threads_share_states(which, request):
    compiled, tok = request.getfixturevalue(which)
    states, plans = thread_workload(compiled, tok, seed=7)
    n = len(states)
    width = xgr2.get_bitmask_shape(1, tok.vocab_size)[1]
    expected = run_states(states, plans, tok, np.zeros((1, width), np.int32), 0, range(n))

    n_threads, rounds = 4, 8
    shared_out = np.zeros((n_threads, width), np.int32)  # each thread writes only its row
    barrier = threading.Barrier(n_threads)
    results, errors = [None] * n_threads, []

    def worker(k):
        try:
            rng = random.Random(k)
            barrier.wait()
            merged = {}
            for _ in range(rounds):
                order = list(range(n))
                rng.shuffle(order)
                got = run_states(states, plans, tok, shared_out, k, order)
                for i, r in got.items():
                    assert merged.setdefault(i, r) == r
            results[k] = merged
        except BaseException as e:  # noqa: BLE001 - reported by the main thread
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(n_threads)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not any(t.is_alive() for t in threads), "a worker thread hung"
    if errors:
        raise errors[0]
    for k in range(n_threads):
        assert results[k] == expected, f"thread {k} saw different results than the sequential run"
    # The shared states themselves are unchanged.
    assert run_states(states, plans, tok, np.zeros((1, width), np.int32), 0, range(n)) == expected


# ---------------------------------------------------------------------------------------
# Every public value rejects attribute assignment and deletion.


def _public_instances():
    """One instance of every public class of xgr2 and xgr2.jax (exceptions aside)."""
    import jax
    import jax.numpy as jnp

    import xgr2.jax as xjax

    tok = xgr2.TokenizerInfo([b"a", b"b", b"</s>"], stop_token_ids=[2])
    grammar = xgr2.Grammar.from_ebnf('root ::= "a" "b"*')
    compiler = xgr2.Compiler(tok)
    compiled = compiler.compile(grammar)
    tree = xjax.DraftTree.from_parents([-1, 0], tokens=[0, 1])
    job = compiled.precompute_masks(background=True)
    job.join()
    return [
        tok, grammar, compiler, compiled, compiled.initial_state(), compiler.cache_info(),
        tok.cross_grammar_cache_info(), tree, job, xgr2.tree_masks([compiled.initial_state()], tree),
        xjax.verify_tree(jax.random.key(0), jnp.zeros((1, 2, 3), jnp.float32), jnp.full((1, 2, 1), -1, jnp.int32),
                         tree),
        xjax.TreeDrafter(lambda text: [], tok.decoded_vocab),
    ]


# Loop drivers, not values: they exist to change as decoding goes on (one per decoding).
DRIVERS = {"ConstrainedDecoder"}


def _public_classes():
    import inspect

    import xgr2.jax as xjax

    out = set()
    for module in (xgr2, xjax):
        for name in module.__all__:
            obj = getattr(module, name)
            if inspect.isclass(obj) and not issubclass(obj, (BaseException, Warning)) and obj.__name__ not in DRIVERS:
                out.add(obj)
    return out


def test_public_values_reject_attribute_assignment():
    pytest.importorskip("jax")
    instances = _public_instances()
    assert {type(v) for v in instances} == _public_classes(), "a public class has no instance in this test"
    for value in instances:
        names = [n for n in dir(value) if not n.startswith("__")] + ["new_attribute"]
        for name in names:
            with pytest.raises(AttributeError):
                setattr(value, name, None)
            if name != "new_attribute":
                with pytest.raises(AttributeError):
                    delattr(value, name)
    tok, _, _, compiled, *_ = instances
    assert compiled.tokenizer_info is tok  # unchanged by the attempts
    assert compiled.initial_state().advance(0).can_terminate

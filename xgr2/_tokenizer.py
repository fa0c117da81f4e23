"""Tokenizer vocabularies as byte strings, from Hugging Face tokenizers or raw lists."""

from __future__ import annotations

import json
import os
from typing import Any, Callable, Iterable, NamedTuple, Sequence

from . import _core
from ._core import MaskPool as _MaskPool
from ._errors import TokenizerError
from ._frozen import Frozen, init_slots

_VOCAB_TYPES = {"raw": 0, "byte_level": 1, "byte_fallback": 2}

# End-of-sequence tokens recognised when the tokenizer itself names none.
_KNOWN_STOP_TOKENS = (
    "<|eot_id|>", "<|end_of_text|>", "<|endoftext|>", "<|im_end|>", "</s>", "<eos>",
    "<end_of_turn>", "<|end|>", "<|eom_id|>",
)


def _ids(values: Iterable[int] | None, what: str) -> list[int]:
    if values is None:
        return []
    if isinstance(values, int):
        values = [values]
    out = []
    for v in values:
        if isinstance(v, bool) or not isinstance(v, int):
            raise TypeError(f"{what} must be ints, got {v!r}")
        if not -(2**31) <= v < 2**31:
            raise TokenizerError(f"{what}: token id {v} is outside the int32 range")
        out.append(int(v))
    return out


class CrossGrammarCacheInfo(NamedTuple):
    """See :meth:`TokenizerInfo.cross_grammar_cache_info`."""

    hits: int
    misses: int
    entries: int
    bytes: int
    limit_bytes: int
    evictions: int  # entries dropped, least recently used first, to stay under limit_bytes


class TokenizerInfo(Frozen):
    """A model's vocabulary as byte strings, ready for compiling grammars.

    Build it from a Hugging Face tokenizer (:meth:`from_huggingface`), a
    ``tokenizer.json`` (:meth:`from_tokenizer_json`) or a list of byte strings.

    Args:
        vocab: token ``i``'s bytes (``str`` entries are UTF-8 encoded), or, with another
            ``vocab_type``, the tokenizer's own spelling of each token.
        vocab_size: the logits width; ids past ``len(vocab)`` are padding and never
            allowed. Defaults to ``len(vocab)``.
        stop_token_ids: tokens that end generation; allowed exactly when the grammar can end.
        special_token_ids: tokens that never match grammar text.
        vocab_type: ``"raw"``, ``"byte_level"`` (GPT-2 byte-to-unicode) or
            ``"byte_fallback"`` (SentencePiece ``<0xAB>`` and U+2581).

    >>> tok = TokenizerInfo([b"a", b"bc", b"</s>"], vocab_size=64, stop_token_ids=[2])
    >>> tok.vocab_size, tok.tokenizer_size, tok.stop_token_ids
    (64, 3, [2])
    """

    __slots__ = ("_core", "_pool", "_decoded", "_args")
    _core: _core.TokenizerInfoCore
    _pool: _MaskPool
    _decoded: list[list[bytes]]
    _args: tuple[list[bytes], int, list[int], list[int], str]

    def __init__(
        self,
        vocab: Sequence[bytes | str],
        *,
        vocab_size: int | None = None,
        stop_token_ids: Iterable[int] | None = None,
        special_token_ids: Iterable[int] | None = None,
        vocab_type: str = "raw",
    ):
        if vocab_type not in _VOCAB_TYPES:
            raise TokenizerError(f"unknown vocab_type {vocab_type!r}; expected one of {sorted(_VOCAB_TYPES)}")
        encoded = []
        for i, t in enumerate(vocab):
            if isinstance(t, str):
                t = t.encode("utf-8", "surrogatepass")
            elif not isinstance(t, (bytes, bytearray)):
                raise TypeError(f"vocab entries must be bytes or str; entry {i} is {type(t).__name__}")
            encoded.append(bytes(t))
        if vocab_size is None:
            vocab_size = len(encoded)
        if isinstance(vocab_size, bool) or not isinstance(vocab_size, int):
            raise TypeError(f"vocab_size must be an int, got {vocab_size!r}")
        if len(encoded) > 2**31 - 1 or vocab_size > 2**31 - 1:
            raise TokenizerError("vocabulary too large")
        stops, specials = _ids(stop_token_ids, "stop_token_ids"), _ids(special_token_ids, "special_token_ids")
        core = _core.TokenizerInfoCore(encoded, _VOCAB_TYPES[vocab_type], vocab_size, stops, specials)
        # _pool: held for this object's life, the cache outlives the grammars compiled for it.
        # _decoded: a one-slot list, filled on first use of decoded_vocab.
        init_slots(self, _core=core, _pool=_core.mask_pool_for(core), _decoded=[],
                   _args=(encoded, vocab_size, stops, specials, vocab_type))

    @property
    def vocab_size(self) -> int:
        """Width of the logits; bitmask rows have ``ceil(vocab_size / 32)`` words."""
        return self._core.vocab_size

    @property
    def tokenizer_size(self) -> int:
        """Number of real tokens (ids past it are padding)."""
        return self._core.tokenizer_size

    @property
    def vocab_type(self) -> str:
        """How token spellings were turned into bytes."""
        return {v: k for k, v in _VOCAB_TYPES.items()}[self._core.vocab_type]

    @property
    def stop_token_ids(self) -> list[int]:
        """Tokens allowed exactly when the grammar can end; accepting one terminates."""
        return list(self._core.stop_ids)

    @property
    def special_token_ids(self) -> list[int]:
        """Tokens that never match grammar text."""
        return list(self._core.special_ids)

    @property
    def decoded_vocab(self) -> list[bytes]:
        """The bytes each token id stands for (special tokens keep their spelling).

        Every token is decoded the way the tokenizer's decoder would, added tokens too.
        """
        if not self._decoded:
            self._decoded.append(self._core.decoded_vocab())
        return self._decoded[0]

    def cross_grammar_cache_info(self) -> CrossGrammarCacheInfo:
        """Statistics of the node masks shared across grammars compiled for this vocabulary.

        A node's accepted tokens depend only on the automaton structure that the
        vocabulary's tokens can reach from it (usually a few bytes), so grammars that share
        a structure there (a JSON string, a number, a schema property's value, whatever
        follows it) share the work of classifying the vocabulary; the tokens left to the
        parser in a caller context are shared the same way when the structure around the
        context matches too. ``entries`` counts both kinds (and the small index entries
        that find them). When an insertion would exceed ``limit_bytes``, the least
        recently used entries are evicted (``evictions`` counts them). The cache belongs to the
        vocabulary: every ``TokenizerInfo`` with the same tokens, special and stop ids and
        ``vocab_size`` (a copy, a pickle round
        trip, the same tokenizer loaded again) shares it, and it lives while one of them
        or a grammar compiled for one does.

        >>> tok = TokenizerInfo([b"a", b"b"])
        >>> tok.cross_grammar_cache_info().entries
        0
        """
        return CrossGrammarCacheInfo(*self._pool.stats())

    def clear_cross_grammar_cache(self) -> None:
        """Forgets the shared node masks (compiled grammars keep those they use).

        The vocabulary's token slices stay, like its trie: the sets of tokens spelled by a
        dense class of characters (JSON string content, free text), built once per class,
        the JSON string one when the vocabulary is first loaded, the others on first use.
        So does the classification of JSON string content made at that load (the
        costliest first mask of a JSON grammar); neither counts in
        :meth:`cross_grammar_cache_info`'s entries or bytes.
        """
        self._pool.clear()

    def set_cross_grammar_cache_limit(self, limit_bytes: int) -> None:
        """Bounds the shared node masks' memory (default 256 MiB); over it the least recently used entries go."""
        if isinstance(limit_bytes, bool) or not isinstance(limit_bytes, int) or limit_bytes < 0:
            raise ValueError(f"limit_bytes must be a non-negative int, got {limit_bytes!r}")
        self._pool.set_limit(limit_bytes)

    def __reduce__(self) -> tuple[Callable[..., TokenizerInfo], tuple[Any, ...]]:
        return (_restore_tokenizer_info, self._args)

    def __repr__(self) -> str:
        return (f"TokenizerInfo(vocab_type={self.vocab_type!r}, tokenizer_size={self.tokenizer_size}, "
                f"vocab_size={self.vocab_size}, stop_token_ids={self.stop_token_ids})")

    @staticmethod
    def from_huggingface(
        tokenizer: Any,
        *,
        vocab_size: int | None = None,
        stop_token_ids: Iterable[int] | None = None,
    ) -> "TokenizerInfo":
        """From a ``transformers`` fast tokenizer or a ``tokenizers.Tokenizer``.

        The vocabulary kind (byte-level BPE, SentencePiece byte fallback, raw) is read
        from the tokenizer's decoder. Stop tokens default to the tokenizer's EOS
        (for a bare ``tokenizers.Tokenizer``: the known end-of-text tokens it has).

        Args:
            tokenizer: ``transformers.PreTrainedTokenizerFast`` or ``tokenizers.Tokenizer``.
            vocab_size: the model's logits width, if larger than the tokenizer.
            stop_token_ids: override the stop tokens.
        """
        backend = getattr(tokenizer, "backend_tokenizer", None)
        eos: list[int] = []
        if backend is not None:  # transformers fast tokenizer
            eos_id = getattr(tokenizer, "eos_token_id", None)
            eos = _ids(eos_id, "eos_token_id") if eos_id is not None else []
        elif type(tokenizer).__module__.startswith("tokenizers") and hasattr(tokenizer, "to_str"):
            backend = tokenizer
        else:
            raise TokenizerError(
                f"unsupported tokenizer type {type(tokenizer).__name__}: pass a transformers fast tokenizer, "
                "a tokenizers.Tokenizer, or build TokenizerInfo from a list of token bytes"
            )
        return TokenizerInfo._from_backend(backend, vocab_size, stop_token_ids, eos)

    @staticmethod
    def from_tokenizer_json(
        path: str | os.PathLike[str],
        *,
        vocab_size: int | None = None,
        stop_token_ids: Iterable[int] | None = None,
    ) -> "TokenizerInfo":
        """From a Hugging Face ``tokenizer.json`` file.

        The EOS token is read from a ``tokenizer_config.json`` beside it when present.
        """
        import tokenizers

        path = os.fspath(path)
        if not os.path.isfile(path):
            raise TokenizerError(f"no tokenizer file at {path!r}")
        try:
            backend = tokenizers.Tokenizer.from_file(path)
        except Exception as e:  # the tokenizers library raises a bare Exception
            raise TokenizerError(f"cannot read tokenizer file {path!r}: {e}") from e
        eos: list[int] = []
        config = os.path.join(os.path.dirname(path), "tokenizer_config.json")
        if os.path.isfile(config):
            with open(config, encoding="utf-8") as f:
                token = json.load(f).get("eos_token")
            if isinstance(token, dict):
                token = token.get("content")
            eos_id = backend.token_to_id(token) if isinstance(token, str) else None
            if eos_id is not None:
                eos = [eos_id]
        return TokenizerInfo._from_backend(backend, vocab_size, stop_token_ids, eos)

    @staticmethod
    def _from_backend(backend: Any, vocab_size: int | None, stop_token_ids: Any, eos: list[int]) -> "TokenizerInfo":
        spec = json.loads(backend.to_str())
        vocab = backend.get_vocab(with_added_tokens=True)
        size = max(vocab.values()) + 1 if vocab else 0
        tokens = [""] * size
        for text, i in vocab.items():
            tokens[i] = text
        added = spec.get("added_tokens") or []
        special = [a["id"] for a in added if a.get("special")]
        if stop_token_ids is None:
            stop_token_ids = eos or [vocab[t] for t in _KNOWN_STOP_TOKENS if t in vocab]
        return TokenizerInfo(
            tokens,
            vocab_size=vocab_size,
            stop_token_ids=stop_token_ids,
            special_token_ids=special,
            vocab_type=_detect_vocab_type(spec),
        )


def _restore_tokenizer_info(encoded: list[bytes], vocab_size: int, stops: list[int], specials: list[int],
                            vocab_type: str) -> TokenizerInfo:
    return TokenizerInfo(
        encoded, vocab_size=vocab_size, stop_token_ids=stops, special_token_ids=specials, vocab_type=vocab_type
    )


def _decoder_types(decoder: Any) -> list[dict[str, Any]]:
    if not isinstance(decoder, dict):
        return []
    if decoder.get("type") == "Sequence":
        return [d for sub in decoder.get("decoders", []) for d in _decoder_types(sub)]
    return [decoder]


def _detect_vocab_type(spec: dict[str, Any]) -> str:
    decoders = _decoder_types(spec.get("decoder"))
    kinds = {d.get("type") for d in decoders}
    if "ByteLevel" in kinds:
        return "byte_level"
    model = spec.get("model") or {}
    if model.get("byte_fallback") or "ByteFallback" in kinds or "Metaspace" in kinds:
        return "byte_fallback"
    if any(d.get("type") == "Replace" and "\u2581" in json.dumps(d.get("pattern", ""), ensure_ascii=False)
           for d in decoders):
        return "byte_fallback"
    if model.get("type") == "WordPiece":
        raise TokenizerError("WordPiece tokenizers are not supported: their tokens do not concatenate to text")
    return "raw"

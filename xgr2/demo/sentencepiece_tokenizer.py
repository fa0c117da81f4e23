"""A SentencePiece BPE tokenizer rebuilt from GGUF metadata (Gemma 3), without protobuf.

GGUF files of SentencePiece models (``tokenizer.ggml.model == "llama"``) carry each
piece with its score and type; the types are SentencePiece's own (1 normal, 2 unknown,
3 control, 4 user-defined, 6 byte). :func:`model_proto` writes them back as a
SentencePiece ``ModelProto`` (BPE, byte fallback, identity normalizer, no dummy prefix,
spaces escaped as U+2581), encoded by hand: the wire format needs a dozen lines, where
the ``protobuf`` runtime would be one more dependency. The ``sentencepiece`` package then
does the encoding, exactly as the model was trained.

Two GGUF quirks are undone: ``<unk>`` is stored as a control piece (it becomes UNKNOWN
again), and user-defined whitespace-run pieces are stored with literal spaces
(SentencePiece matches them after escaping, so they are written back with U+2581).

SentencePiece never matches control pieces (``<start_of_turn>``, ``<eos>``...) inside
text; :class:`SentencePieceTokenizer` splits the text on them first, as the Hugging Face
tokenizers do.

>>> pieces = ["<pad>", "<eos>", "<bos>", "<unk>"] + [f"<0x{b:02X}>" for b in range(256)] + ["▁a", "b"]
>>> types = [3, 3, 3, 3] + [6] * 256 + [1, 1]
>>> tok = SentencePieceTokenizer(model_proto(pieces, [0.0] * len(pieces), types), bos_id=2)
>>> enc = tok.encode(" ab<eos>")
>>> enc.tokens, enc.ids
(['<bos>', '▁a', 'b', '<eos>'], [2, 260, 261, 1])
>>> tok.decode(enc.ids)
' ab'
"""

from __future__ import annotations

import re
import struct
from collections.abc import Sequence
from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    import xgr2

NORMAL, UNKNOWN, CONTROL, USER_DEFINED, BYTE = 1, 2, 3, 4, 6  # SentencePiece piece types


def _varint(n: int) -> bytes:
    n &= (1 << 64) - 1  # negative int32 values are written as 64-bit two's complement
    out = bytearray()
    while n >= 0x80:
        out.append(n & 0x7F | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def _field(number: int, value: bytes | float) -> bytes:
    """One protobuf field: length-delimited (bytes), 32-bit (float) or varint (int, bool, enum)."""
    if isinstance(value, bytes):
        return _varint(number << 3 | 2) + _varint(len(value)) + value
    if isinstance(value, float):
        return _varint(number << 3 | 5) + struct.pack("<f", value)
    return _varint(number << 3) + _varint(int(value))


def model_proto(pieces: Sequence[str], scores: Sequence[float], types: Sequence[int], *,
                unk_id: int = 3, bos_id: int = 2, eos_id: int = 1, pad_id: int = 0) -> bytes:
    """A serialized SentencePiece ``ModelProto`` (BPE with byte fallback) from GGUF token lists.

    Args:
      pieces, scores, types: ``tokenizer.ggml.tokens``, ``.scores`` and ``.token_type``.
      unk_id, bos_id, eos_id, pad_id: the special ids (GGUF ``tokenizer.ggml.*_token_id``).
    """
    out = bytearray()
    for i, (piece, score, kind) in enumerate(zip(pieces, scores, types, strict=True)):
        if i == unk_id:
            kind = UNKNOWN
        elif kind == USER_DEFINED and piece.strip(" ") == "":
            piece = piece.replace(" ", "\u2581")
        # ModelProto.pieces (1): SentencePiece {piece (1), score (2), type (3)}
        out += _field(1, _field(1, piece.encode("utf-8")) + _field(2, float(score)) + _field(3, kind))
    trainer = (_field(3, 2)                       # model_type: BPE
               + _field(4, len(pieces))           # vocab_size
               + _field(35, True)                 # byte_fallback
               + _field(40, unk_id) + _field(41, bos_id) + _field(42, eos_id) + _field(43, pad_id))
    normalizer = (_field(1, b"identity")
                  + _field(3, False)              # add_dummy_prefix
                  + _field(4, False)              # remove_extra_whitespaces
                  + _field(5, True))              # escape_whitespaces
    out += _field(2, trainer) + _field(3, normalizer)
    return bytes(out)


class Encoding(NamedTuple):
    """What :meth:`SentencePieceTokenizer.encode` returns (the fields a ``tokenizers.Encoding`` has)."""

    ids: list[int]
    tokens: list[str]


class SentencePieceTokenizer:
    """Encodes and decodes with a SentencePiece model, control tokens written in the text
    recognised (the small part of the ``tokenizers.Tokenizer`` interface the demo uses).

    Args:
      model: a serialized ``ModelProto`` (:func:`model_proto`).
      bos_id: prepended by :meth:`encode` unless ``add_special_tokens=False``; ``None``: never.
    """

    def __init__(self, model: bytes, bos_id: int | None = None):
        import sentencepiece

        self.model = model
        self.bos_id = bos_id
        self._sp = sentencepiece.SentencePieceProcessor(model_proto=model)
        controls = [self._sp.id_to_piece(i) for i in range(self._sp.get_piece_size()) if self._sp.is_control(i)]
        self._controls = {p: self._sp.piece_to_id(p) for p in controls}
        # Longest first, so that a control piece that prefixes another never wins.
        self._split = re.compile("(" + "|".join(map(re.escape, sorted(controls, key=len, reverse=True))) + ")")

    def get_vocab_size(self) -> int:
        return self._sp.get_piece_size()

    def id_to_token(self, i: int) -> str:
        return self._sp.id_to_piece(i)

    def token_to_id(self, piece: str) -> int | None:
        i = self._sp.piece_to_id(piece)
        return None if i == self._sp.unk_id() and piece != self._sp.id_to_piece(i) else i

    def encode(self, text: str, add_special_tokens: bool = True) -> Encoding:
        """The ids and pieces of ``text``, a BOS first (if the tokenizer has one and
        ``add_special_tokens``); control pieces in the text become their ids."""
        ids = [self.bos_id] if add_special_tokens and self.bos_id is not None else []
        for part in self._split.split(text):
            if part in self._controls:
                ids.append(self._controls[part])
            elif part:
                ids.extend(self._sp.encode(part))
        return Encoding(ids, [self._sp.id_to_piece(i) for i in ids])

    def decode(self, ids: Sequence[int]) -> str:
        """The text of ``ids`` (control tokens, BOS and EOS included, decode to nothing)."""
        text: str = self._sp.decode([int(i) for i in ids])  # sentencepiece ships no type information
        return text

    def tokenizer_info(
        self, vocab_size: int | None = None, stop_token_ids: Sequence[int] | None = None
    ) -> xgr2.TokenizerInfo:
        """xgr2's view of the vocabulary: byte fallback, control and unknown pieces special."""
        import xgr2

        sp = self._sp
        n = sp.get_piece_size()
        special = [i for i in range(n) if sp.is_control(i) or sp.is_unknown(i)]
        return xgr2.TokenizerInfo([sp.id_to_piece(i) for i in range(n)], vocab_size=vocab_size,
                                  stop_token_ids=stop_token_ids, special_token_ids=special,
                                  vocab_type="byte_fallback")

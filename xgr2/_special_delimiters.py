"""Tool-calling delimiters that are special tokens of the model's tokenizer, matched by id.

A preset writes its delimiters as text (``<|channel|>``, ``<|tool_call_begin|>``, ...).
Where the tokenizer has such a delimiter as a special token, the model emits that one
token, which never matches grammar text; :func:`with_special_tokens` rewrites the spec so
that the grammar expects the token by id there (docs/structural_tags.md, "Tokens"):

- text pieces that are a special token's text become ``{"type": "token"}`` formats;
- a ``tag`` stays a tag: its begin is the first piece of the begin string, its end the
  last piece of the end string, and the pieces between go into its content;
- a piece that is a stop token's text ends the output there (a stop token ends
  generation where the grammar can end), so a tag's end of stop tokens becomes ``""``;
- ``triggered_tags`` whose triggers are all special tokens become
  ``token_triggered_tags``: free tokens until a trigger token; a text trigger holding a
  special token's text after some text triggers at that text.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, Union

if TYPE_CHECKING:
    from ._tokenizer import TokenizerInfo

_Format = dict[str, Any]
_Piece = Union[str, int]  # text, or a special token's id


class _Rewriter:
    def __init__(self, specials: dict[str, int], stops: set[str]):
        self.specials, self.stops = specials, stops
        names = sorted(set(specials) | stops, key=len, reverse=True)  # longest first
        self.pattern = re.compile("(" + "|".join(re.escape(n) for n in names) + ")")

    def pieces(self, text: str) -> list[_Piece]:
        """The text split at special tokens' texts: text pieces and token ids; a stop
        token's text ends it."""
        out: list[_Piece] = []
        for part in self.pattern.split(text):
            if part in self.stops:
                break
            if part in self.specials:
                out.append(self.specials[part])
            elif part:
                out.append(part)
        return out

    @staticmethod
    def piece_format(piece: _Piece) -> _Format:
        if isinstance(piece, int):
            return {"type": "token", "token": piece}
        return {"type": "const_string", "value": piece}

    def seq(self, pieces: list[_Piece], *rest: _Format) -> _Format:
        elements = [self.piece_format(p) for p in pieces] + list(rest)
        if not elements:
            return {"type": "const_string", "value": ""}
        return elements[0] if len(elements) == 1 else {"type": "sequence", "elements": elements}

    def tag(self, tag: _Format) -> _Format:
        begin, end, content = tag["begin"], tag["end"], self.format(tag["content"])
        out = dict(tag)
        if isinstance(begin, str):
            pieces = self.pieces(begin)
            if pieces and (len(pieces) > 1 or isinstance(pieces[0], int)):
                out["begin"] = self.piece_format(pieces[0]) if isinstance(pieces[0], int) else pieces[0]
                content = self.seq(pieces[1:], content)
        if isinstance(end, str):
            pieces = self.pieces(end)
            if pieces != [end]:
                last = pieces[-1] if pieces else ""
                out["end"] = self.piece_format(last) if isinstance(last, int) else last
                if len(pieces) > 1:
                    content = {"type": "sequence", "elements": [content] + [self.piece_format(p) for p in pieces[:-1]]}
        out["content"] = content
        return out

    def triggered(self, fmt: _Format) -> _Format:
        triggers = fmt["triggers"]
        ids = [self.specials.get(t) for t in triggers]
        if any(i is None for i in ids):  # text triggers: tags keep their text begins
            # A trigger holding a special token's text after some text (MiniMax-M3's
            # `]<]minimax[>[<tool_call>` where `<tool_call>` is a token) triggers at that
            # text, as its tags' begins now end there (the token goes into their content).
            cut = [p[0] if (p := self.pieces(t)) and isinstance(p[0], str) else t for t in triggers]
            return {**fmt, "triggers": cut, "tags": [self.tag(t) for t in fmt["tags"]]}
        tags = []
        for tag in fmt["tags"]:
            trigger = next(t for t in triggers if tag["begin"].startswith(t))
            rest = tag["begin"][len(trigger):]
            content = {"type": "sequence", "elements": [{"type": "const_string", "value": rest}, tag["content"]]} \
                if rest else tag["content"]
            rewritten = self.tag({**tag, "begin": "", "content": content})
            tags.append({**rewritten, "begin": {"type": "token", "token": self.specials[trigger]}})
        return {"type": "token_triggered_tags", "trigger_tokens": ids, "tags": tags,
                "at_least_one": fmt.get("at_least_one", False), "stop_after_first": fmt.get("stop_after_first", False)}

    def format(self, fmt: _Format) -> _Format:
        kind = fmt.get("type")
        if kind == "const_string":
            return self.seq(self.pieces(fmt["value"]))
        if kind == "tag":
            return self.tag(fmt)
        if kind == "triggered_tags":
            return self.triggered(fmt)
        if kind == "tags_with_separator":
            return {**fmt, "tags": [self.tag(t) for t in fmt["tags"]]}
        if kind in ("sequence", "or"):
            return {**fmt, "elements": [self.format(e) for e in fmt["elements"]]}
        if kind in ("optional", "plus", "star", "repeat"):
            return {**fmt, "content": self.format(fmt["content"])}
        return fmt


def with_special_tokens(spec: dict[str, Any], tokenizer_info: TokenizerInfo) -> dict[str, Any]:
    """``spec`` (a preset's structural tag) with the delimiters that are special tokens of
    ``tokenizer_info`` matched by id; the spec itself when it holds none."""
    vocab = tokenizer_info.decoded_vocab
    stop_ids = set(tokenizer_info.stop_token_ids)
    text = repr(spec)
    specials: dict[str, int] = {}
    stops: set[str] = set()
    for i in sorted(set(tokenizer_info.special_token_ids) | stop_ids):
        name = vocab[i].decode("utf-8", "replace")
        if not name or name not in text:
            continue
        if i in stop_ids:
            stops.add(name)
        else:
            specials.setdefault(name, i)  # the lowest id with that text
    if not specials and not stops:
        return spec
    return {**spec, "format": _Rewriter(specials, stops).format(spec["format"])}

"""Model-free draft trees for speculative decoding: grammar-forced text and prompt lookup.

Two sources need no draft model. The grammar: where a state admits only one
continuation, :meth:`xgr2.MatcherState.jump_forward_text` spells it out (property names,
enum values, punctuation), and its tokenization is a likely draft. Prompt lookup: the last
few tokens often occurred before, in the prompt or in the text so far (keys named in the
request, a repeated ``", "``), and what followed them then is a likely continuation.
:class:`TreeDrafter` merges both into one fixed-size :class:`DraftTree` per step (a trie,
so shared prefixes cost one node); the model scores every node in one pass, and
:func:`xgr2.jax.verify_tree` keeps the longest path it agrees with.
"""

from __future__ import annotations

import heapq
from typing import Callable, Sequence

import jax.numpy as jnp
import numpy as np

import xgr2
from xgr2._frozen import Frozen, init_slots
from xgr2.jax._tree import DraftTree

__all__ = ["TreeDrafter", "admissible_prefix", "build_draft_tree", "prompt_lookup", "text_lookup"]

# How likely the model's next token is the r-th longest vocabulary token that spells a
# prefix of the forced text (r = 0, 1, ...): weight ``_RANK_DECAY ** (r + 1)``. Measured on the
# schema-heavy task of benchmarks/bench_speculative.py (SmolLM2, greedy): ranks 0 / 1 / 2+
# took 45% / 27% / 28% of 89 forced steps; halving per rank follows that order.
_RANK_DECAY = 0.5

# Characters that end a free stretch of text in most grammars (a JSON string or number, an
# XML attribute, an argument list): where one is allowed and text is forced after it,
# closing the stretch there is a likely draft (:meth:`TreeDrafter.closings`).
_CLOSERS = b'",}])>;\''

# A pretty printer puts the items of a list on lines of their own, laid out alike: the
# whitespace after a ',' is that after the '{' or '[' that opened the list, when that came
# later and broke the line (and one space, not a line break, in a list opened inline).
_SIBLINGS = {ord(","): b"{["}


def prompt_lookup(
    context: Sequence[int],
    *,
    max_ngram: int = 3,
    min_ngram: int = 1,
    max_branches: int = 3,
    length: int = 8,
) -> list[list[int]]:
    """Continuations of the context's last tokens, taken from where those tokens occurred before.

    For ``n`` from ``max_ngram`` down to ``min_ngram``: every earlier occurrence of the
    last ``n`` tokens, most recent first, proposes the (up to) ``length`` tokens that
    followed it. Longer matches come first; a continuation equal to or a prefix of one
    already proposed is skipped.

    Args:
      context: token ids (e.g. prompt + generated so far, the last committed token last).
      max_ngram, min_ngram: the n-gram sizes tried (``1 <= min_ngram <= max_ngram``).
      max_branches: at most this many continuations.
      length: at most this many tokens per continuation.

    Returns:
      The continuations, best first (possibly none).

    Example:
      >>> prompt_lookup([5, 6, 7, 8, 1, 5, 6], length=2)
      [[7, 8]]
      >>> prompt_lookup([1, 2, 9, 1, 3, 1], max_ngram=1, length=1)
      [[3], [2]]
    """
    if not 1 <= min_ngram <= max_ngram:
        raise ValueError(f"need 1 <= min_ngram <= max_ngram, got {min_ngram}, {max_ngram}")
    c = np.asarray(context, np.int64).reshape(-1)
    out: list[list[int]] = []
    for n in range(max_ngram, min_ngram - 1, -1):
        if len(c) <= n:
            continue
        # Window i is c[i:i+n], i + n <= len - 1: a match always has a next token.
        windows = np.lib.stride_tricks.sliding_window_view(c[:-1], n)
        for i in np.flatnonzero((windows == c[-n:]).all(axis=1))[::-1]:
            cont = c[i + n: i + n + length].tolist()
            if any(prev[: len(cont)] == cont for prev in out):
                continue
            out.append(cont)
            if len(out) >= max_branches:
                return out
    return out


def build_draft_tree(roots: Sequence[int], paths: Sequence[Sequence[Sequence[int]]], num_nodes: int) -> DraftTree:
    """A fixed-size batch of draft tries: row ``b`` holds ``roots[b]`` and the paths ``paths[b]``.

    Paths are inserted in order below the root, sharing common prefixes; nodes are
    numbered as they are created (so parents precede children and earlier paths' children
    come first, which is the order :func:`xgr2.jax.verify_tree` tries them). A path stops
    where the row runs out of nodes. Unused nodes are padding (``valid`` false, parent -1).

    Args:
      roots: the root token of each row (the last committed token, which the model
        consumes at node 0).
      paths: per row, the drafted token sequences, best first.
      num_nodes: ``N``, the nodes per row (root included); fixed so that a jitted
        consumer compiles once.

    Returns:
      A :class:`DraftTree` of ``[B, N]`` arrays.

    Example:
      >>> t = build_draft_tree([9], [[[1, 2], [1, 3], [4]]], num_nodes=6)
      >>> t.parents.tolist(), t.tokens.tolist(), t.valid.tolist()
      ([[-1, 0, 1, 1, 0, -1]], [[9, 1, 2, 3, 4, 0]], [[True, True, True, True, True, False]])
    """
    if num_nodes < 1:
        raise ValueError(f"num_nodes must be positive, got {num_nodes}")
    if len(paths) != len(roots):
        raise ValueError(f"got {len(paths)} path lists for {len(roots)} roots")
    batch = len(roots)
    parents = np.full((batch, num_nodes), -1, np.int32)
    tokens = np.zeros((batch, num_nodes), np.int32)
    valid = np.zeros((batch, num_nodes), np.bool_)
    for b in range(batch):
        tokens[b, 0], valid[b, 0] = roots[b], True
        children: dict[tuple[int, int], int] = {}
        used = 1
        for path in paths[b]:
            node = 0
            for token in path:
                child = children.get((node, int(token)))
                if child is None:
                    if used == num_nodes:
                        break
                    child = children[(node, int(token))] = used
                    parents[b, used], tokens[b, used], valid[b, used] = node, token, True
                    used += 1
                node = child
    return DraftTree(jnp.asarray(parents), jnp.asarray(tokens), jnp.asarray(valid))


def text_lookup(
    text: str,
    *,
    max_suffix: int = 24,
    min_suffix: int = 1,
    max_branches: int = 3,
    length: int = 32,
) -> list[str]:
    """Like :func:`prompt_lookup` on characters: continuations of the text's last characters.

    Matching text rather than token ids finds continuations whose tokenization differs
    (``name": "`` after a name that ended in another token). Suffix lengths are tried from
    ``max_suffix`` down to ``min_suffix``, each one's matches most recent first.

    Example:
      >>> text_lookup('"a": 1, "bc": 2, "a', length=4)
      ['": 1']
    """
    out: list[str] = []
    size = min(max_suffix, len(text) - 1)
    while size >= min_suffix:
        suffix, end = text[-size:], len(text) - 1
        while len(out) < max_branches:
            at = text.rfind(suffix, 0, end)
            if at < 0:
                break
            cont = text[at + size: at + size + length]
            if cont and not any(prev.startswith(cont) for prev in out):
                out.append(cont)
            end = at + size - 1
        if len(out) >= max_branches:
            break
        size -= 1
    return out


def admissible_prefix(state: xgr2.MatcherState, tokens: Sequence[int]) -> list[int]:
    """The longest prefix of ``tokens`` the grammar accepts from ``state`` (a stop token ends it)."""
    out: list[int] = []
    for token in tokens:
        nxt = state.try_advance(int(token))
        if nxt is None:
            break
        out.append(int(token))
        if nxt.is_terminated:
            break
        state = nxt
    return out


def _whitespace_after(text: bytes, at: int) -> bytes:
    """The run of whitespace right after ``text[at]``."""
    end = at + 1
    while end < len(text) and text[end] in b" \t\n\r":
        end += 1
    return text[at + 1: end]


def _closing_layout(text: bytes, default: bytes) -> bytes:
    """The whitespace before a closing ``}`` or ``]`` after ``text``: where its opener broke
    the line, a line of its own at the opener line's indentation (as a pretty printer
    closes a list); else ``default``.

    Example:
      >>> _closing_layout(b'{\\n  "a": [1, 2]', b"")
      b'\\n'
      >>> _closing_layout(b'{"a": [1, 2]', b"")
      b''
    """
    depth = 0
    for at in range(len(text) - 1, -1, -1):
        c = text[at]
        if c in b"}]":
            depth += 1
        elif c in b"{[":
            if depth == 0:
                if b"\n" not in _whitespace_after(text, at):
                    return default
                line = text.rfind(b"\n", 0, at) + 1
                indent = line
                while indent < at and text[indent] in b" \t":
                    indent += 1
                return b"\n" + text[line:indent]
            depth -= 1
    return default


def _maximal(paths: list[list[int]]) -> list[list[int]]:
    """The paths that no other path extends, in their order."""
    return [p for p in paths if not any(len(q) > len(p) and q[: len(p)] == p for q in paths)]


class TreeDrafter(Frozen):
    """Drafts one token tree per row from the grammar's forced text and from prompt lookup.

    Per row, the tree holds, best first:

    * the tokenizations of the state's :meth:`~xgr2.MatcherState.jump_forward_text` ``F``
      (where only optional whitespace is left to choose, as between JSON values, ``F`` is
      the text forced but for it, with the whitespace the model wrote after the same
      characters before: ``, "age": `` after ``"name": "Al"``):
      a model spells forced text its own way (``"customer_id`` + ``e`` + ``nti`` ... rather
      than the tokenizer's ``"`` + ``customer`` + ``_`` ...), so the drafter grows a tree
      whose children at each node are the vocabulary tokens spelling a prefix of the
      rest of ``F``, longest first, expanded best first (the r-th longest child has weight
      ``0.5 ** (r + 1)`` of its parent); ``forced_nodes`` bounds its share of the tree;
    * ``F`` followed by character-level lookups of the context text + ``F``
      (:func:`text_lookup`), tokenized as one string (so that ``F``'s last token can merge
      with what follows it, as the model's tokens do);
    * token-level lookups of the context (:func:`prompt_lookup`).

    Each candidate is cut where the grammar rejects it (:func:`admissible_prefix`: the
    tree spends no node on a token the mask forbids) and to ``max_length`` tokens, and
    the candidates are merged into a trie (:func:`build_draft_tree`). The tree has the
    smallest of ``sizes`` nodes that holds every row's draft, at most ``num_nodes``: a
    step with little to draft runs a smaller (cheaper) model pass, and a consumer that
    compiles per shape compiles once per size.

    Args:
      encode: text -> token ids, without special tokens (e.g.
        ``lambda s: tok.encode(s, add_special_tokens=False).ids`` for a ``tokenizers``
        tokenizer).
      vocab: each token id's bytes (:attr:`xgr2.TokenizerInfo.decoded_vocab`), to spell
        the context as text and the forced text as tokens.
      num_nodes: most nodes per tree, root included.
      sizes: the tree sizes to choose from (each ``1 <= size <= num_nodes``;
        ``num_nodes`` is always one of them). Default: ``num_nodes`` only.
      max_branches: candidates per source (text lookup, token lookup).
      max_length: at most this many tokens per candidate.
      max_ngram: longest token n-gram tried by the token lookup.
      forced_nodes: at most this many nodes for the tokenizations of the forced text
        (default: all drafted nodes, ``num_nodes - 1``; the other sources fill what it
        leaves); 0 drafts only the tokenizer's own spelling of it.

    Example:
      >>> import xgr2
      >>> vocab = [b"{", b"}", b'"', b"a", b"b", b":", b"<eos>"]
      >>> tok = xgr2.TokenizerInfo(vocab, stop_token_ids=[6])
      >>> state = xgr2.compile('root ::= "{" [ab]* ":" "ab}"', tok).initial_state().advance(0)
      >>> state = state.advance(3).advance(5)           # "{a:" -- the rest, "ab}", is forced
      >>> encode = lambda s: [vocab.index(c.encode()) for c in s]
      >>> drafter = TreeDrafter(encode, tok.decoded_vocab, num_nodes=6)
      >>> tree = drafter.draft([state], [[0, 3, 5]], roots=[5])
      >>> tree.tokens.tolist(), tree.parents.tolist()
      ([[5, 3, 4, 1, 0, 0]], [[-1, 0, 1, 2, -1, -1]])
      >>> TreeDrafter(encode, tok.decoded_vocab, num_nodes=6, sizes=(1, 4)).draft(
      ...     [state], [[0, 3, 5]], roots=[5]).tokens.shape    # 4 nodes hold it
      (1, 4)
    """

    __slots__ = ("encode", "vocab", "num_nodes", "sizes", "max_branches", "max_length", "max_ngram",
                 "forced_nodes", "_token_of", "_longest")
    encode: Callable[[str], Sequence[int]]
    vocab: tuple[bytes, ...]
    num_nodes: int
    sizes: tuple[int, ...]
    max_branches: int
    max_length: int
    max_ngram: int
    forced_nodes: int
    _token_of: dict[bytes, int]
    _longest: int

    def __init__(
        self,
        encode: Callable[[str], Sequence[int]],
        vocab: Sequence[bytes],
        *,
        num_nodes: int = 8,
        sizes: Sequence[int] = (),
        max_branches: int = 3,
        max_length: int = 8,
        max_ngram: int = 3,
        forced_nodes: int | None = None,
    ) -> None:
        if num_nodes < 1:
            raise ValueError(f"num_nodes must be positive, got {num_nodes}")
        chosen = sorted({int(n) for n in sizes} | {num_nodes})
        if chosen[0] < 1 or chosen[-1] > num_nodes:
            raise ValueError(f"sizes must lie in [1, num_nodes = {num_nodes}], got {tuple(sizes)}")
        if forced_nodes is None:
            forced_nodes = num_nodes - 1
        if forced_nodes < 0:
            raise ValueError(f"forced_nodes must be >= 0, got {forced_nodes}")
        vocab = tuple(vocab)
        # The lowest id of each spelling (special tokens spell nothing: never drafted here).
        token_of: dict[bytes, int] = {}
        for i, spelling in enumerate(vocab):
            if spelling:
                token_of.setdefault(spelling, i)
        init_slots(self, encode=encode, vocab=vocab, num_nodes=num_nodes, sizes=tuple(chosen),
                   max_branches=max_branches, max_length=max_length, max_ngram=max_ngram,
                   forced_nodes=forced_nodes, _token_of=token_of, _longest=max(map(len, token_of), default=0))

    def _spellings(self, state: xgr2.MatcherState, data: bytes) -> list[tuple[int, xgr2.MatcherState]]:
        """The admissible tokens that spell a prefix of ``data``, longest first, with the
        states they lead to."""
        out = []
        for n in range(min(self._longest, len(data)), 0, -1):
            token = self._token_of.get(data[:n])
            if token is not None:
                nxt = state.try_advance(token)
                if nxt is not None:
                    out.append((token, nxt))
        return out

    @staticmethod
    def _laid_out(state: xgr2.MatcherState, written: bytes, siblings: bool = True) -> str:
        """The text forced but for optional whitespace (``,"age":`` after a JSON value), with
        the whitespace the model wrote after the same character last time (``, "age": ``;
        one space after a ``:`` or ``,`` not written yet, as ``json.dumps`` separates):
        with JSON's free layout nothing is forced between values, yet the keys are. With
        ``siblings``, laid out as a pretty printer lays out a list: after a ``,``, the
        whitespace of a later ``{`` or ``[`` that broke the line, and a closing ``}`` or
        ``]`` as its opener (:func:`_closing_layout`).

        Example:
          >>> import xgr2
          >>> tok = xgr2.TokenizerInfo([bytes([b]) for b in range(128)], stop_token_ids=[0])
          >>> schema = {"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "string"}},
          ...           "required": ["a", "b"]}
          >>> g = xgr2.compile(xgr2.Grammar.from_json_schema(schema), tok)
          >>> g.initial_state().advance_text('{"a": "x"').jump_forward_text()   # whitespace may come next
          ''
          >>> TreeDrafter._laid_out(g.initial_state().advance_text('{"a": "x"'), b'{"a": "x"')
          ', "b": "'
          >>> TreeDrafter._laid_out(g.initial_state().advance_text('{"a": "x",'), b'{"a": "w",  "b": "y"} {"a": "x",')
          '  "b": "'
          >>> TreeDrafter._laid_out(g.initial_state().advance_text('{"a": "x"'), b'Like {"x": 1, "y": 2}: {\\n  "a": "x"')
          ',\\n  "b": "'
        """
        data, gaps = state._jump_forward_past_whitespace()
        if not data:
            return ""
        out = bytearray()
        for k, gap in enumerate(gaps):
            out += data[gaps[k - 1] if k else 0: gap]
            before = out[-1:] or written[-1:]
            at = written.rfind(before, 0, len(written) - 1)  # not the character being continued
            if at >= 0:  # the whitespace run after that character's last occurrence
                space = _whitespace_after(written, at)
            else:  # not written yet: json.dumps's default separators
                space = b" " if before in (b":", b",") else b""
            latest = at
            for sibling in _SIBLINGS.get(before[0], b"") if before and siblings else b"":
                opened = written.rfind(bytes([sibling]), 0, len(written) - 1)
                if opened > latest:  # a list opened since
                    latest, after = opened, _whitespace_after(written, opened)
                    if b"\n" in after:  # one item per line
                        space = after
                    elif b"\n" in space:  # inline, unlike the last ',': json.dumps's ", "
                        space = b" "
            if siblings and data[gap: gap + 1] in (b"}", b"]"):
                space = _closing_layout(written + out, space)
            out += space
        out += data[gaps[-1] if gaps else 0:]
        text = bytes(out)
        while text:  # whole characters only
            try:
                return text.decode("utf-8")
            except UnicodeDecodeError as e:
                text = text[: e.start]
        return ""

    def closings(self, state: xgr2.MatcherState, written: bytes, depth: int = 2) -> list[str]:
        """The texts that close the free stretch ``state`` is in and go on with forced text:
        each closing character of :data:`_CLOSERS` the grammar allows next, followed by
        the text forced after it (laid out as the list's items are, then, where that
        differs, as after the character's last occurrence), or by up to ``depth - 1``
        more closings where a choice follows it (`", "` and `"]` after an array's string).
        Empty where none is followed by forced text.

        Example:
          >>> import xgr2
          >>> tok = xgr2.TokenizerInfo([bytes([b]) for b in range(128)], stop_token_ids=[0])
          >>> schema = {"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "integer"}},
          ...           "required": ["a", "b"]}
          >>> g = xgr2.compile(xgr2.Grammar.from_json_schema(schema), tok)
          >>> TreeDrafter(lambda s: [], tok.decoded_vocab).closings(g.initial_state().advance_text('{"a": "Jo'), b'{"a": "Jo')
          ['", "b":']
          >>> tags = {"type": "object", "properties": {"t": {"type": "array", "items": {"type": "string"}}},
          ...         "required": ["t"]}
          >>> g = xgr2.compile(xgr2.Grammar.from_json_schema(tags), tok)
          >>> TreeDrafter(lambda s: [], tok.decoded_vocab).closings(g.initial_state().advance_text('{"t": ["a", "b'),
          ...                                                       b'{"t": ["a", "b')
          ['", "', '"]}']
        """
        out = []
        last = written[-1:]
        for closer in _CLOSERS:
            nxt = state.try_advance_bytes(bytes([closer]))
            if nxt is None:
                continue
            if nxt.is_terminated:
                out.append(chr(closer))
                continue
            text = written + bytes([closer])
            forced = nxt.jump_forward_text()
            # Else both layouts where they differ (the list's, the character's last).
            rests = [forced] if forced else [self._laid_out(nxt, text), self._laid_out(nxt, text, siblings=False)]
            rests = [rest for rest in dict.fromkeys(rests) if rest]
            if rests:
                out += [chr(closer) + rest for rest in rests]
            elif depth > 1 and (not last or nxt.try_advance_bytes(last) is None):
                # A choice follows a character that ended the stretch (the stretch's last
                # character may not follow it): close one level further.
                out += [chr(closer) + more for more in self.closings(nxt, text, depth - 1)]
        return out

    def forced_tokenizations(self, state: xgr2.MatcherState, forced: str, budget: int) -> list[list[int]]:
        """Up to ``budget`` tree nodes of tokenizations of the forced text, as paths in the
        order they were grown (each path's parent path comes before it).

        Best-first: a node's children are the tokens spelling a prefix of the rest of
        ``forced`` (longest first, the r-th weighing ``0.5 ** (r + 1)`` of its parent); the
        heaviest open node is expanded next. Paths end where ``forced`` is spelled out,
        at ``max_length`` tokens, or where the grammar terminates.

        Example:
          >>> import xgr2
          >>> vocab = [b"a", b"b", b"ab", b"<eos>"]
          >>> tok = xgr2.TokenizerInfo(vocab, stop_token_ids=[3])
          >>> state = xgr2.compile('root ::= "abab"', tok).initial_state()
          >>> drafter = TreeDrafter(lambda s: [], tok.decoded_vocab)
          >>> drafter.forced_tokenizations(state, state.jump_forward_text(), 4)
          [[2], [0], [2, 2], [2, 0]]
        """
        data = forced.encode("utf-8")
        paths: list[list[int]] = []
        heap: list[tuple[float, int, list[int], xgr2.MatcherState, int]] = [(-1.0, 0, [], state, 0)]
        pushed = 1
        while heap and len(paths) < budget:
            weight, _, path, at, offset = heapq.heappop(heap)
            if path:
                paths.append(path)
            if len(path) >= self.max_length or at.is_terminated or offset >= len(data):
                continue
            for rank, (token, nxt) in enumerate(self._spellings(at, data[offset:])):
                heapq.heappush(heap, (weight * _RANK_DECAY ** (rank + 1), pushed, path + [token], nxt,
                                      offset + len(self.vocab[token])))
                pushed += 1
        return paths

    def paths(self, state: xgr2.MatcherState | None, context: Sequence[int]) -> list[list[int]]:
        """The drafted token sequences of one row, best first, each admissible from
        ``state`` (none for a ``None`` or terminated state)."""
        if state is None or state.is_terminated:
            return []
        forced = state.jump_forward_text()
        written = b"".join(self.vocab[t] for t in context[-256:])  # a bounded window: flat cost per step
        if not forced:  # a choice of whitespace only (JSON's layout): guess the model's own
            forced = self._laid_out(state, written)
        text = written.decode("utf-8", errors="replace") + forced
        # Text matches from the wrong place (the prompt's '"age" (integer)' after '"age"') are
        # cut short by the grammar: look at several, keep the longest admissible ones.
        by_text = [admissible_prefix(state, list(self.encode(forced + cont))[: self.max_length])
                   for cont in text_lookup(text, max_branches=3 * self.max_branches)]
        by_text.sort(key=len, reverse=True)  # stable: equal lengths keep the lookup's order
        candidates = by_text[: self.max_branches]
        if forced:
            # The tokenization tree (best first), then the tokenizer's spelling of F, which
            # the lookups above may carry on past F.
            spelled = _maximal(self.forced_tokenizations(state, forced, self.forced_nodes))
            canonical = admissible_prefix(state, list(self.encode(forced))[: self.max_length])
            candidates = spelled + [canonical] + candidates
        else:
            # Inside free text (a string, a number): the model may close it now, and what
            # follows the closing character is often forced (`", "age": ` after a name).
            candidates = [admissible_prefix(state, list(self.encode(text))[: self.max_length])
                          for text in self.closings(state, written)] + candidates
        candidates += [admissible_prefix(state, c) for c in prompt_lookup(
            context, max_ngram=self.max_ngram, max_branches=self.max_branches, length=self.max_length)]
        out: list[list[int]] = []
        for path in candidates:
            if path and not any(prev[: len(path)] == path for prev in out):
                out.append(path)
        return out

    def draft(
        self,
        states: Sequence[xgr2.MatcherState | None],
        contexts: Sequence[Sequence[int]],
        roots: Sequence[int],
    ) -> DraftTree:
        """The ``[B, size]`` draft trees of a batch (``size``: the smallest of :attr:`sizes`
        that holds every row's draft).

        Args:
          states: each row's matcher state after its last committed token (``None``: a
            finished row, drafted as a bare root).
          contexts: each row's token ids so far (prompt and generated, ``roots[b]`` last).
          roots: each row's last committed token (node 0, which the model consumes first).
        """
        if not len(states) == len(contexts) == len(roots):
            raise ValueError(f"got {len(states)} states, {len(contexts)} contexts and {len(roots)} roots")
        tree = build_draft_tree(roots, [self.paths(s, c) for s, c in zip(states, contexts)], self.num_nodes)
        # Nodes are numbered as they are created, so the first `used` hold every row's draft.
        used = int(np.asarray(tree.valid).sum(axis=1).max(initial=1))
        size = next(n for n in self.sizes if n >= used)
        if size == self.num_nodes:
            return tree
        return DraftTree(tree.parents[:, :size], tree.tokens[:, :size], tree.valid[:, :size])

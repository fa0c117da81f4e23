"""A reference recognizer for the mask tests, independent of the engine's parser.

Random grammars are small ASTs (``random_grammar``), printed as xgr2 EBNF (``to_ebnf``)
and turned here into plain BNF over character sets, which a memoized Earley recognizer
written for the tests runs over *bytes*: a byte string is a viable prefix when it is a
prefix of the UTF-8 encoding of some string of the language. Partial UTF-8 sequences are
decided with code point ranges (the code points whose encoding starts with the pending
bytes form one range), so tokens that split characters are checked exactly.

AST nodes: ``("lit", text)``, ``("cls", negated, [(lo, hi), ...])`` (code points),
``("tok", negated, [(lo, hi), ...])`` (one whole token by id, xgr2's ``<[...]>``; see
``step_token``), ``("ref", rule_index)``, ``("rep", child, lo, hi_or_None)``, ``("seq", [...])``,
``("alt", [...])``; a grammar is a list of rule bodies, rule 0 the root.
"""

from __future__ import annotations

import random

MAX_CP = 0x10FFFF
SURROGATES = (0xD800, 0xDFFF)

# Characters of the random grammars: 1- to 4-byte UTF-8, sharing lead bytes ("é"/"ê",
# "日"/"本") so partial sequences of one character are prefixes of others.
CHARS = ["a", "b", "c", " ", "é", "ê", "日", "本", "🙂", "\x00", "\n", "\""]


# ---------------------------------------------------------------------------------------
# Random grammars and their EBNF text.


def random_grammar(rng: random.Random, chars: list[str] = CHARS, max_rules: int = 3,
                   token_ids: list[int] | None = None) -> list:
    """A random AST of 1 to ``max_rules`` rules (rule 0 is the root); with ``token_ids``,
    also leaves that match one token by id (sets of those ids, or all but them)."""
    n_rules = rng.randint(1, max_rules)

    def leaf():
        kinds = ["lit", "lit", "lit", "cls", "cls", "ref", "empty"] + (["tok", "tok"] if token_ids else [])
        kind = rng.choice(kinds)
        if kind == "tok":
            ids = sorted(rng.sample(token_ids, rng.randint(1, 3)))
            return ("tok", rng.random() < 0.3, [(i, i) for i in ids])
        if kind == "lit":
            return ("lit", "".join(rng.choice(chars) for _ in range(rng.randint(1, 3))))
        if kind == "empty":
            return ("lit", "")
        if kind == "ref":
            return ("ref", rng.randrange(n_rules))
        ranges = []
        for _ in range(rng.randint(1, 2)):
            lo, hi = sorted(ord(rng.choice(chars)) for _ in range(2))
            ranges.append((lo, hi if rng.random() < 0.5 else lo))
        return ("cls", rng.random() < 0.25, ranges)

    def expr(depth):
        kind = "leaf" if depth >= 3 else rng.choice(["leaf", "seq", "seq", "alt", "rep"])
        if kind == "leaf":
            return leaf()
        if kind == "rep":
            lo = rng.randint(0, 2)
            return ("rep", expr(depth + 1), lo, rng.choice([None, lo, lo + 1, lo + 3]))
        return (kind, [expr(depth + 1) for _ in range(rng.randint(2, 3))])

    return [expr(0) for _ in range(n_rules)]


def rule_name(i: int) -> str:
    return "root" if i == 0 else f"r{i}"


def _escape(cp: int) -> str:
    return f"\\u{cp:04X}" if cp < 0x10000 else f"\\U{cp:08X}"


def to_ebnf(ast: list) -> str:
    """The grammar as xgr2 EBNF (every character escaped, every group parenthesized)."""

    def show(e):
        kind = e[0]
        if kind == "lit":
            return '"' + "".join(_escape(ord(c)) for c in e[1]) + '"'
        if kind == "cls":
            body = "".join(_escape(lo) + ("" if hi == lo else "-" + _escape(hi)) for lo, hi in e[2])
            return "[" + ("^" if e[1] else "") + body + "]"
        if kind == "ref":
            return rule_name(e[1])
        if kind == "tok":
            return "<[" + ("^" if e[1] else "") + ", ".join(
                str(lo) if lo == hi else f"{lo}-{hi}" for lo, hi in e[2]) + "]>"
        if kind == "rep":
            _, child, lo, hi = e
            return f"({show(child)}){{{lo},{'' if hi is None else hi}}}"
        sep = " " if kind == "seq" else " | "
        return "(" + sep.join(show(c) for c in e[1]) + ")"

    return "".join(f"{rule_name(i)} ::= {show(body)}\n" for i, body in enumerate(ast))


# ---------------------------------------------------------------------------------------
# Character sets as sorted disjoint code point ranges (surrogates never included).


def _normalize(ranges):
    out = []
    for lo, hi in sorted(ranges):
        if out and lo <= out[-1][1] + 1:
            out[-1][1] = max(out[-1][1], hi)
        else:
            out.append([lo, hi])
    cut = []
    for lo, hi in out:  # drop the surrogates
        if lo < SURROGATES[0]:
            cut.append((lo, min(hi, SURROGATES[0] - 1)))
        if hi > SURROGATES[1]:
            cut.append((max(lo, SURROGATES[1] + 1), hi))
    return tuple((lo, hi) for lo, hi in cut if lo <= hi)


def char_set(negated: bool, ranges) -> tuple:
    ranges = _normalize(ranges)
    if not negated:
        return ranges
    out, start = [], 0
    for lo, hi in ranges:
        if lo > start:
            out.append((start, lo - 1))
        start = hi + 1
    if start <= MAX_CP:
        out.append((start, MAX_CP))
    return _normalize(out)


def _contains(cs, cp) -> bool:
    return any(lo <= cp <= hi for lo, hi in cs)


def _overlaps(cs, lo, hi) -> bool:
    return any(a <= hi and lo <= b for a, b in cs)


def utf8_range(pending: bytes):
    """(n, lo, hi): the sequence length and the code points whose UTF-8 encoding starts with
    ``pending`` (1 to 3 bytes), or None when no valid encoding does."""
    lead = pending[0]
    if 0xC2 <= lead <= 0xDF:
        n, bounds = 2, (0x80, 0x7FF)
    elif 0xE0 <= lead <= 0xEF:
        n, bounds = 3, (0x800, 0xFFFF)
    elif 0xF0 <= lead <= 0xF4:
        n, bounds = 4, (0x10000, MAX_CP)
    else:
        return None
    if len(pending) > n or any(b & 0xC0 != 0x80 for b in pending[1:]):
        return None

    def decode(tail_byte):
        full = pending + bytes([tail_byte]) * (n - len(pending))
        cp = full[0] & (0x7F >> n)
        for b in full[1:]:
            cp = (cp << 6) | (b & 0x3F)
        return cp

    lo, hi = max(decode(0x80), bounds[0]), min(decode(0xBF), bounds[1])
    if lo > hi or (SURROGATES[0] <= lo and hi <= SURROGATES[1]):
        return None
    return n, lo, hi


# ---------------------------------------------------------------------------------------
# The recognizer.


class Recognizer:
    """Viable byte prefixes of a grammar AST, by Earley over characters.

    ``start()`` gives the state before any byte; ``step(state, byte)`` the state after it
    (None: no string of the language starts so); ``can_end(state)``: the bytes so far are
    a whole string of the language. States are hashable and every step is memoized.
    """

    def __init__(self, ast: list):
        self.prods: list[tuple[int, tuple]] = []  # (lhs, symbols); a symbol: ("n", id) or ("t", charset)
        self.n_rules = len(ast)
        self._next = len(ast)
        for i, body in enumerate(ast):
            self._add(i, [self._symbol(body)])
        self._clean()
        self.by_lhs: dict[int, list[int]] = {}
        for p, (lhs, _) in enumerate(self.prods):
            self.by_lhs.setdefault(lhs, []).append(p)
        self.nullable = self._nullable()
        self._sets: list[frozenset] = []
        self._ids: dict[frozenset, int] = {}
        self._memo: dict = {}
        self._start = None

    # -- BNF from the AST

    def _fresh(self) -> int:
        self._next += 1
        return self._next - 1

    def _add(self, lhs, symbols):
        self.prods.append((lhs, tuple(symbols)))

    def _symbol(self, e):
        """A symbol (nonterminal or terminal) for expression ``e``."""
        kind = e[0]
        if kind == "ref":
            return ("n", e[1])
        if kind == "cls":
            return ("t", char_set(e[1], e[2]))
        if kind == "tok":
            return ("k", (e[1], tuple(e[2])))
        nt = self._fresh()
        if kind == "lit":
            self._add(nt, [("t", char_set(False, [(ord(c), ord(c))])) for c in e[1]])
        elif kind == "seq":
            self._add(nt, [self._symbol(c) for c in e[1]])
        elif kind == "alt":
            for c in e[1]:
                self._add(nt, [self._symbol(c)])
        else:  # rep: child{lo} then a star or a chain of optionals
            _, child, lo, hi = e
            c = self._symbol(child)
            tail = self._fresh()
            if hi is None:
                self._add(tail, [])
                self._add(tail, [("n", tail), c])
            else:
                self._add(tail, [])
                for _ in range(hi - lo - 1):
                    inner = tail
                    tail = self._fresh()
                    self._add(tail, [])
                    self._add(tail, [c, ("n", inner)])
                if hi - lo >= 1:
                    outer = self._fresh()
                    self._add(outer, [])
                    self._add(outer, [c, ("n", tail)])
                    tail = outer
            self._add(nt, [c] * lo + [("n", tail)])
        return ("n", nt)

    def _clean(self):
        """Drops productions that use a symbol deriving no string (empty classes included),
        so that every item the parser keeps can be completed: a non-empty chart is viable."""
        productive: set[int] = set()
        changed = True
        while changed:
            changed = False
            for lhs, syms in self.prods:
                if lhs not in productive and all(self._productive(s, productive) for s in syms):
                    productive.add(lhs)
                    changed = True
        self.root_productive = 0 in productive
        self.prods = [(lhs, syms) for lhs, syms in self.prods
                      if all(self._productive(s, productive) for s in syms)]

    @staticmethod
    def _productive(symbol, productive) -> bool:
        kind, value = symbol
        if kind == "t":
            return bool(value)
        if kind == "k":
            return value[0] or bool(value[1])
        return value in productive

    def _nullable(self):
        nullable: set[int] = set()
        changed = True
        while changed:
            changed = False
            for lhs, syms in self.prods:
                if lhs not in nullable and all(s[0] == "n" and s[1] in nullable for s in syms):
                    nullable.add(lhs)
                    changed = True
        return nullable

    # -- Earley over characters. A chart is an int id of a frozenset of items
    # (production, dot, origin); origin is a chart id, or SELF for the chart holding the
    # item. Charts are interned by content, so equal parser configurations share their
    # memoized steps whatever bytes led to them.

    SELF = -1

    def _closure(self, seeds):
        """Predicts and completes until nothing changes (Aycock-Horspool for nullables)."""
        items = set(seeds)
        work = list(items)
        while work:
            p, dot, origin = work.pop()
            lhs, syms = self.prods[p]
            new = []
            if dot < len(syms):
                kind, value = syms[dot]
                if kind == "n":
                    new += [(q, 0, self.SELF) for q in self.by_lhs.get(value, [])]
                    if value in self.nullable:
                        new.append((p, dot + 1, origin))
            else:  # complete: advance the items of the origin chart that wait for lhs
                waiting = list(items) if origin == self.SELF else self._sets[origin]
                for q, qdot, qorigin in waiting:
                    qsyms = self.prods[q][1]
                    if qdot < len(qsyms) and qsyms[qdot] == ("n", lhs):
                        if origin != self.SELF and qorigin == self.SELF:
                            qorigin = origin  # SELF inside the origin chart means the origin
                        new.append((q, qdot + 1, qorigin))
            for item in new:
                if item not in items:
                    items.add(item)
                    work.append(item)
        return self._intern(frozenset(items))

    def _intern(self, items: frozenset) -> int:
        if items not in self._ids:
            self._ids[items] = len(self._sets)
            self._sets.append(items)
        return self._ids[items]

    def start(self):
        """The state before any byte (None if the grammar derives no string)."""
        if not self.root_productive:
            return None
        if self._start is None:
            self._start = self._closure([(p, 0, self.SELF) for p in self.by_lhs.get(0, [])])
        return (self._start, b"")

    def _scan(self, chart: int, cp: int):
        key = (chart, cp)
        if key not in self._memo:
            seeds = []
            for p, dot, origin in self._sets[chart]:
                syms = self.prods[p][1]
                if dot < len(syms) and syms[dot][0] == "t" and _contains(syms[dot][1], cp):
                    seeds.append((p, dot + 1, chart if origin == self.SELF else origin))
            self._memo[key] = self._closure(seeds) if seeds else None
        return self._memo[key]

    def _expects(self, chart: int, lo: int, hi: int) -> bool:
        for p, dot, _ in self._sets[chart]:
            syms = self.prods[p][1]
            if dot < len(syms) and syms[dot][0] == "t" and _overlaps(syms[dot][1], lo, hi):
                return True
        return False

    def step(self, state, byte: int):
        """The state after one more byte, or None if no string of the language starts so."""
        if state is None:
            return None
        chart, pending = state
        if not pending and byte < 0x80:
            nxt = self._scan(chart, byte)
            return None if nxt is None else (nxt, b"")
        data = pending + bytes([byte])
        span = utf8_range(data)
        if span is None:
            return None
        n, lo, hi = span
        if len(data) == n:  # a whole character: lo == hi
            nxt = self._scan(chart, lo)
            return None if nxt is None else (nxt, b"")
        return (chart, data) if self._expects(chart, lo, hi) else None

    def step_token(self, state, token_id: int):
        """The state after one whole token matched by id (only between characters), or
        None. A text token may also continue as its bytes (``feed``): the caller keeps
        both readings."""
        if state is None or state[1]:
            return None
        chart = state[0]
        key = (chart, "token", token_id)
        if key not in self._memo:
            seeds = []
            for p, dot, origin in self._sets[chart]:
                syms = self.prods[p][1]
                if dot < len(syms) and syms[dot][0] == "k":
                    negated, ranges = syms[dot][1]
                    if any(lo <= token_id <= hi for lo, hi in ranges) != negated:
                        seeds.append((p, dot + 1, chart if origin == self.SELF else origin))
            self._memo[key] = self._closure(seeds) if seeds else None
        nxt = self._memo[key]
        return None if nxt is None else (nxt, b"")

    def feed(self, state, data: bytes):
        for b in data:
            state = self.step(state, b)
            if state is None:
                return None
        return state

    def can_end(self, state) -> bool:
        """Whether the bytes so far are a whole string of the language."""
        if state is None or state[1]:
            return False
        chart = state[0]
        start = self.SELF if chart == self._start else self._start
        return any(self.prods[p][0] == 0 and dot == len(self.prods[p][1]) and origin == start
                   for p, dot, origin in self._sets[chart])

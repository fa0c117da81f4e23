"""A Python regex -> EBNF converter for the demo (until xgr2's regex front end lands).

The grammar's language is the set of strings ``re.fullmatch(pattern, s, flags)`` accepts.
The pattern is parsed by Python's own regex parser (``re._parser``, ``sre_parse`` before
Python 3.11) and its tree is written as one EBNF rule, ``root``:

  - literals, ``.`` (any character but ``\\n``; any character with ``re.DOTALL``),
    character classes with ranges, negation and the categories ``\\d \\w \\s \\D \\W \\S``;
  - repetitions ``* + ? {m} {m,} {m,n}``, lazy ones too (same language), groups of any
    kind that only group (capturing, ``(?:...)``, named, with scoped flags), ``|``;
  - ``^``, ``$``, ``\\A``, ``\\Z`` where they can only stand at the start (end) of the
    string: they are dropped.

The categories follow ``re`` exactly: Unicode by default, ASCII with ``re.ASCII`` or
``(?a)`` (the class of each one is read off ``re`` itself, over every code point).
Surrogate code points never match: xgr2 works on UTF-8 text, which cannot hold them.

Anything else raises :class:`xgr2.GrammarError` naming the construct: backreferences and
conditionals, lookaround assertions, ``\\b`` and ``\\B``, atomic groups and possessive
repetitions, case-insensitive matching (``re.IGNORECASE``, ``(?i)``) and ``re.LOCALE``.
An invalid pattern raises it too, with the column of the error.

>>> print(regex_to_ebnf(r"^[a-z]+(-[0-9]{2,4})?$"))
root ::= [a-z]+ ("-" [0-9]{2,4})?
>>> print(regex_to_ebnf(r"(?a)\\w+@\\w+\\.(com|org)"))
root ::= [0-9A-Z_a-z]+ "@" [0-9A-Z_a-z]+ "." ("com" | "org")
"""

from __future__ import annotations

import functools
import re

from xgr2 import GrammarError

try:  # Python 3.11+
    from re import _constants as _c
    from re import _parser as _sre
except ImportError:  # pragma: no cover - Python 3.10
    import sre_constants as _c  # type: ignore[no-redef]
    import sre_parse as _sre  # type: ignore[no-redef]

Ranges = list[tuple[int, int]]  # sorted, disjoint, non-adjacent inclusive code point ranges

# Valid Unicode scalar values: what UTF-8 text can hold (no surrogates).
_UNIVERSE: Ranges = [(0, 0xD7FF), (0xE000, 0x10FFFF)]

# Constructs without an EBNF equivalent (the language of a regex with them is not context-free,
# or depends on how the match was found), by opcode name.
_UNSUPPORTED = {
    "GROUPREF": "backreferences (\\1, (?P=name))",
    "GROUPREF_EXISTS": "conditional groups ((?(1)a|b))",
    "GROUPREF_IGNORE": "backreferences (\\1, (?P=name))",
    "ASSERT": "lookahead and lookbehind assertions ((?=...), (?<=...))",
    "ASSERT_NOT": "negative lookahead and lookbehind assertions ((?!...), (?<!...))",
    "ATOMIC_GROUP": "atomic groups ((?>...))",
    "POSSESSIVE_REPEAT": "possessive repetitions (*+, ++, ?+, {m,n}+)",
}
_AT_START = {"AT_BEGINNING", "AT_BEGINNING_STRING", "AT_BEGINNING_LINE"}
_AT_END = {"AT_END", "AT_END_STRING", "AT_END_LINE"}


def regex_to_ebnf(pattern: str, flags: int = 0) -> str:
    """EBNF text (one rule, ``root``) for the strings ``re.fullmatch(pattern, s, flags)`` accepts.

    Raises:
      GrammarError: the pattern is invalid, or uses a construct outside the supported set.
    """
    if not isinstance(pattern, str):
        raise TypeError(f"pattern must be a str, got {type(pattern).__name__}")
    try:
        parsed = _sre.parse(pattern, flags)
    except re.error as e:
        raise GrammarError(f"invalid regex: {e.msg}", e.lineno or 1, e.colno or 1) from None
    text, _ = _sequence(list(parsed), parsed.state.flags, at_start=True, at_end=True)
    return f"root ::= {text}"


def _check_flags(flags: int) -> None:
    if flags & re.IGNORECASE:
        raise GrammarError("regex: case-insensitive matching (re.IGNORECASE, (?i)) is not supported")
    if flags & re.LOCALE:
        raise GrammarError("regex: locale-dependent matching (re.LOCALE, (?L)) is not supported")


def _sequence(items: list, flags: int, at_start: bool, at_end: bool) -> tuple[str, bool]:
    """EBNF of a sequence of sre nodes, and whether it is one atom (a postfix operator may
    follow it without parentheses). ``at_start``/``at_end``: the sequence can only begin at
    the start (end where it ends) of the string."""
    _check_flags(flags)
    anchors = [str(op) == "AT" and str(av) in _AT_START | _AT_END for op, av in items]
    first = next((i for i, a in enumerate(anchors) if not a), len(items))
    last = max((i for i, a in enumerate(anchors) if not a), default=-1)
    parts: list[tuple[str, bool]] = []  # (EBNF, is one atom)
    run: list[int] = []  # consecutive literal code points, written as one string
    for i, (op, av) in enumerate(items):
        name = str(op)
        if name != "LITERAL" and run:
            parts.append((_string(run), True))
            run = []
        if name == "LITERAL":
            run.append(av)
        elif name == "AT":
            where = str(av)
            if where in _AT_START and at_start and i < first:
                continue  # fullmatch starts at the start of the string
            if where in _AT_END and at_end and i > last:
                continue  # ... and ends at its end
            if where in _AT_START | _AT_END:
                raise GrammarError(f"regex: an anchor ({where}) that is not at the start or end of the pattern "
                                   "is not supported")
            raise GrammarError(f"regex: word boundaries (\\b, \\B) are not supported ({where})")
        elif name == "NOT_LITERAL":
            parts.append((_char_class(_complement([(av, av)])), True))
        elif name == "ANY":
            parts.append((_char_class(_UNIVERSE if flags & re.DOTALL else _complement([(10, 10)])), True))
        elif name == "IN":
            parts.append((_char_class(_class_ranges(av, flags)), True))
        elif name in ("MAX_REPEAT", "MIN_REPEAT"):  # lazy or greedy: the same language
            lo, hi, sub = av
            body, atom = _sequence(list(sub), flags, at_start=False, at_end=False)
            parts.append(_repeat(body if atom else f"({body})", lo, hi))
        elif name == "SUBPATTERN":  # a group in a sequence needs no parentheses
            _group, add_flags, del_flags, sub = av
            parts.append(_sequence(list(sub), (flags | add_flags) & ~del_flags,
                                   at_start=at_start and i <= first, at_end=at_end and i >= last))
        elif name == "BRANCH":
            _, branches = av
            alternatives = [_sequence(list(b), flags, at_start=at_start and i <= first,
                                      at_end=at_end and i >= last)[0] for b in branches]
            parts.append(("(" + " | ".join(alternatives) + ")", True))
        elif name in _UNSUPPORTED:
            raise GrammarError(f"regex: {_UNSUPPORTED[name]} are not supported")
        else:
            raise GrammarError(f"regex: the construct {name} is not supported")
    if run:
        parts.append((_string(run), True))
    if not parts:
        return '""', True
    return " ".join(text for text, _ in parts), len(parts) == 1 and parts[0][1]


def _repeat(atom: str, lo: int, hi: int) -> tuple[str, bool]:
    if hi == 0:
        return '""', True
    if hi == _c.MAXREPEAT:
        return atom + {0: "*", 1: "+"}.get(lo, f"{{{lo},}}"), False
    if (lo, hi) == (0, 1):
        return atom + "?", False
    return atom + (f"{{{lo}}}" if lo == hi else f"{{{lo},{hi}}}"), False


def _string(code_points: list[int]) -> str:
    out = []
    for cp in code_points:
        if 0xD800 <= cp <= 0xDFFF:
            raise GrammarError(f"regex: the surrogate code point U+{cp:04X} can never match UTF-8 text")
        ch = chr(cp)
        out.append("\\" + ch if ch in '"\\' else ch if ch.isprintable() else _escape(cp))
    return '"' + "".join(out) + '"'


def _escape(cp: int) -> str:
    return f"\\x{cp:02X}" if cp < 0x80 else f"\\u{cp:04X}" if cp <= 0xFFFF else f"\\U{cp:08X}"


def _class_char(cp: int) -> str:
    ch = chr(cp)
    if cp < 0x80:
        if ch.isalnum() or ch == "_":
            return ch
        return "\\" + ch if 0x20 < cp < 0x7F else _escape(cp)  # escaped punctuation stands for itself
    return ch if ch.isprintable() else _escape(cp)


def _char_class(ranges: Ranges) -> str:
    """A bracket class for ``ranges`` (within :data:`_UNIVERSE`), listed or negated, whichever is shorter."""
    if not ranges:
        raise GrammarError("regex: a character class that matches no character is not supported")
    complement = _complement(ranges)
    negated = len(complement) < len(ranges)

    def item(lo: int, hi: int) -> str:
        return _class_char(lo) if lo == hi else f"{_class_char(lo)}-{_class_char(hi)}"

    return ("[^" if negated else "[") + "".join(item(lo, hi) for lo, hi in (complement if negated else ranges)) + "]"


def _class_ranges(items: list, flags: int) -> Ranges:
    """The code points an sre ``IN`` node matches."""
    ranges: Ranges = []
    negate = False
    for op, av in items:
        name = str(op)
        if name == "NEGATE":
            negate = True
        elif name == "LITERAL":
            ranges.append((av, av))
        elif name == "RANGE":
            ranges.append(av)
        elif name == "CATEGORY":
            ranges.extend(_category(str(av), bool(flags & re.ASCII)))
        else:
            raise GrammarError(f"regex: {name} inside a character class is not supported")
    ranges = _normalize(ranges)
    return _complement(ranges) if negate else ranges


@functools.cache
def _category(name: str, ascii_only: bool) -> tuple[tuple[int, int], ...]:
    """The code points of ``\\d``, ``\\s``, ``\\w`` or their negations, as ``re`` matches them."""
    escape = {"DIGIT": r"\d", "SPACE": r"\s", "WORD": r"\w"}.get(name.removeprefix("CATEGORY_").removeprefix("NOT_"))
    if escape is None:
        raise GrammarError(f"regex: the category {name} is not supported")
    positive = [(m.start(), m.end() - 1)
                for m in re.finditer(escape + "+", _all_characters(), re.ASCII if ascii_only else 0)]
    return tuple(_complement(_normalize(positive)) if "NOT_" in name else _normalize(positive))


@functools.lru_cache(maxsize=1)
def _all_characters() -> str:
    return "".join(map(chr, range(0x110000)))  # character i at index i


def _normalize(ranges: Ranges) -> Ranges:
    """Sorted, merged, clipped to :data:`_UNIVERSE` (no surrogates)."""
    clipped = [(max(lo, ulo), min(hi, uhi)) for lo, hi in ranges for ulo, uhi in _UNIVERSE]
    out: Ranges = []
    for lo, hi in sorted(r for r in clipped if r[0] <= r[1]):
        if out and lo <= out[-1][1] + 1:
            out[-1] = (out[-1][0], max(out[-1][1], hi))
        else:
            out.append((lo, hi))
    return out


def _complement(ranges: Ranges) -> Ranges:
    """:data:`_UNIVERSE` minus ``ranges``."""
    out: Ranges = []
    start = 0
    for lo, hi in _normalize(ranges):
        if lo > start:
            out.append((start, lo - 1))
        start = hi + 1
    if start <= 0x10FFFF:
        out.append((start, 0x10FFFF))
    return _normalize(out)

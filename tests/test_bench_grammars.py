"""The code grammars of benchmarks/bench_compile.py accept their documents and reject broken ones.

Each grammar comes twice: `.ebnf` (xgr2 and xgrammar) and `.lark` (llguidance, checked
here with the lark package's Earley parser). Both must take the whole benchmark document,
byte by byte for xgr2, and both must refuse a few one-edit breakages of it, each of
which Python's own parser (`ast`) or SQLite also refuses, so the edits are real errors.
"""

from __future__ import annotations

import ast
import sqlite3
from pathlib import Path

import pytest

import xgr2
from parsing import accepts

lark = pytest.importorskip("lark")

GRAMMARS_DIR = Path(__file__).resolve().parent.parent / "benchmarks" / "grammars"
BYTES = xgr2.TokenizerInfo([bytes([i]) for i in range(256)])


def sqlite_accepts(text: str) -> bool:
    try:
        sqlite3.connect(":memory:").executescript(text)
        return True
    except sqlite3.Error:
        return False


def python_accepts(text: str) -> bool:
    try:
        ast.parse(text)
        return True
    except SyntaxError:
        return False


# stem, document, independent oracle (None: none at hand), (old, new) edits that break it
CASES = [
    ("c_subset", "c_program.c", None, [
        ("r->count++;", "r->count++"),  # missing ";"
        ("int ring_push(", "int ring push("),  # two names
        ("    r->count++;\n    return 0;\n}", "    r->count++;\n    return 0;\n"),  # unclosed body
        ("/* A fixed-size", "/ A fixed-size"),  # broken comment
    ]),
    ("sql_subset", "sql_program.sql", sqlite_accepts, [
        ("GROUP BY a.name", "GROUP a.name"),
        ("VALUES ('Ursula K. Le Guin', '1929-10-21', 'US'),", "VALUES ('Ursula K. Le Guin', '1929-10-21', 'US',"),
        ("WHERE quantity <= 0 OR", "WHERE quantity <= 0 OR OR"),
        ("'Solaris', 12.5", "'Solaris, 12.5"),  # string runs on
        ("SELECT title, price FROM books", "SELECT title, price FROM"),
    ]),
    ("py_subset", "py_program.py", python_accepts, [
        ("    def add(self, item: Item) -> None:", "    def add(self, item: Item) -> None"),  # missing ":"
        ("        self._cache.clear()", "            self._cache.clear()"),  # over-indented
        ("        return count", "      return count"),  # dedent to no level
        ("for row in rows:", "for row rows:"),
        ('row.get("tags", [])))', 'row.get("tags", []))'),  # unclosed call
        ('"""A small in-memory', '""A small in-memory'),  # empty string, then words
    ]),
]


@pytest.fixture(scope="module")
def parsers():
    """stem -> (xgr2 initial state, lark parser); built once (lark takes about a second)."""
    out = {}
    for stem, _, _, _ in CASES:
        ebnf = (GRAMMARS_DIR / f"{stem}.ebnf").read_text(encoding="utf-8")
        lark_text = (GRAMMARS_DIR / f"{stem}.lark").read_text(encoding="utf-8")
        out[stem] = (xgr2.compile(xgr2.Grammar.from_ebnf(ebnf), BYTES).initial_state(),
                     lark.Lark(lark_text, start="start", parser="earley", lexer="dynamic"))
    return out


def lark_accepts(parser, text: str) -> bool:
    try:
        parser.parse(text)
        return True
    except lark.exceptions.LarkError:
        return False


@pytest.mark.parametrize("stem,doc,oracle,edits", CASES, ids=[c[0] for c in CASES])
def test_grammar_accepts_its_document(parsers, stem, doc, oracle, edits):
    text = (GRAMMARS_DIR / doc).read_text(encoding="utf-8")
    start, parser = parsers[stem]
    assert oracle is None or oracle(text)
    assert accepts(start, text), f"xgr2 rejects {doc}"
    assert lark_accepts(parser, text), f"lark rejects {doc}"
    # The benchmark needs a document of some length: at least 1,500 bytes (C: 800).
    assert len(text) >= (800 if stem == "c_subset" else 1500)


@pytest.mark.parametrize(
    "stem,doc,oracle,old,new",
    [(stem, doc, oracle, old, new) for stem, doc, oracle, edits in CASES for old, new in edits],
    ids=[f"{stem}-{i}" for stem, _, _, edits in CASES for i in range(len(edits))],
)
def test_grammar_rejects_a_broken_document(parsers, stem, doc, oracle, old, new):
    text = (GRAMMARS_DIR / doc).read_text(encoding="utf-8")
    assert text.count(old) == 1, f"edit {old!r} must match the document once"
    broken = text.replace(old, new)
    start, parser = parsers[stem]
    assert oracle is None or not oracle(broken)
    assert not accepts(start, broken), f"xgr2 accepts {doc} with {old!r} -> {new!r}"
    assert not lark_accepts(parser, broken), f"lark accepts {doc} with {old!r} -> {new!r}"

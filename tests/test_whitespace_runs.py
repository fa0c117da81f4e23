"""Direct walks step whitespace runs as one chain of states.

Llama-3 has ~760 trie nodes spelled only of spaces, tabs, newlines and carriage returns
(indentation, blank lines). Where the parse steps alike on those four bytes (JSON's
bounded whitespace, any `[ \\t\\n\\r]*`), every such node of a depth is at the same state,
so the direct walk steps one state per depth and walks only the other children of those
nodes (`WhitespaceRuns` in csrc/engine/token_walk.cc). Where the four bytes step apart
(only spaces allowed, a newline that ends the run, json.dumps's indentation), at the
start or deeper in the run, the walk goes on node by node. Every mask here must equal
the brute-force one (`try_advance` per token id): through the full walk (the direct
walk of every state), in both cold-walk modes, and from a second compile that finds
the first one's masks in the cross-grammar cache.
"""

import numpy as np
import pytest

import xgr2
from xgr2._compiler import _compile_full_walk as full_walk

pytestmark = pytest.mark.usefixtures("cold_walk_mode")

SCHEMA = {"type": "object", "properties": {"city": {"type": "string"}, "count": {"type": "integer"},
                                           "tags": {"type": "array", "items": {"type": "boolean"}}},
          "required": ["city", "count"]}

EBNF_CASES = [
    ('root ::= [ \\t\\n\\r]* "x"', ["", " ", "\n\n\t", " " * 40]),  # unbounded: the chain runs to the deepest node
    ('root ::= " "* "x"', ["", "  "]),  # only spaces: the four bytes step apart at the start
    ('root ::= [ \\t\\n\\r] " "* "x"', ["", "\t", "\t "]),  # alike at the start, apart one byte later
    ('root ::= [ \\t\\n\\r]{0,3} ("\\n" | "a")', ["", " ", "  ", "   "]),  # a newline also ends the run
    ('root ::= [ \\t\\n\\r]{2,5} "b" | "a"', ["", " ", "    ", "     "]),  # a run with a minimum
    ('root ::= "x" [ \\t\\n\\r]{0,4}', ["", "x", "x  ", "x    "]),  # the run ends the document
]


def brute_force(state, vocab_size):
    return np.fromiter((state.try_advance(t) is not None for t in range(vocab_size)), dtype=bool, count=vocab_size)


def check(tok, grammar, prefixes):
    compiled = [full_walk(grammar, tok)]
    compiled += [xgr2.Compiler(tok, cache_limit_bytes=0).compile(grammar) for _ in range(2)]
    for prefix in prefixes:
        expected = None
        for k, c in enumerate(compiled):
            state = c.initial_state().advance_bytes(prefix.encode())
            if expected is None:
                expected = brute_force(state, tok.vocab_size)
            mask = xgr2.bitmask_to_bool(state.bitmask(), tok.vocab_size)
            wrong = np.flatnonzero(mask != expected)
            assert wrong.size == 0, (k, prefix, [tok.decoded_vocab[t] for t in wrong[:8]])


@pytest.mark.parametrize("ebnf,prefixes", EBNF_CASES, ids=[c[0] for c in EBNF_CASES])
def test_masks_around_whitespace_runs_equal_brute_force(llama3_tokenizer_info, ebnf, prefixes):
    check(llama3_tokenizer_info, xgr2.Grammar.from_ebnf(ebnf), prefixes)


def test_json_schema_whitespace_equals_brute_force_at_every_run_length(llama3_tokenizer_info):
    """Bounded runs (at most 20 characters) before keys, colons, values and brackets,
    partly spent (a token may hold only what is left of the run) and spent whole."""
    prefixes = ['{', '{"city"', '{"city":', '{"city": "SF"', '{"city": "SF",', '{"city": "SF", "count": 3',
                '{"city": "SF", "count": 3, "tags": [', '{"city": "SF", "count": 3, "tags": [true',
                '{' + ' ' * 7, '{"city":' + '\n' * 3 + '\t' * 9, '{' + ' ' * 19, '{' + ' \n' * 10,
                '{"city": "SF", "count": 3}', '{"city": "SF", "count": 3}' + ' ' * 20]
    check(llama3_tokenizer_info, xgr2.Grammar.from_json_schema(SCHEMA), prefixes)


def test_json_dumps_indentation_equals_brute_force(llama3_tokenizer_info):
    """Exact layouts: a newline then so many spaces, which no run of alike bytes spells."""
    grammar = xgr2.Grammar.from_json_schema(SCHEMA, indent=2)
    check(llama3_tokenizer_info, grammar, ['{', '{\n', '{\n ', '{\n  "city": "SF",', '{\n  "city": "SF",\n  '])


def test_tokens_of_whitespace_are_allowed_up_to_the_runs_bound(llama3_tokenizer_info):
    """After `{` (20 characters of whitespace allowed) every token of 1-20 whitespace
    characters is allowed and none longer; after 15 of them, only those of at most 5."""
    tok = llama3_tokenizer_info
    vocab = tok.decoded_vocab
    spaces = {t: len(vocab[t]) for t in range(tok.tokenizer_size)
              if vocab[t] and not vocab[t].strip(b" \t\n\r")}
    assert len(spaces) > 300
    compiled = xgr2.compile(xgr2.Grammar.from_json_schema(SCHEMA), tok)
    for spent in (0, 15):
        state = compiled.initial_state().advance_bytes(b"{" + b" " * spent)
        mask = xgr2.bitmask_to_bool(state.bitmask(), tok.vocab_size)
        allowed = {t for t, n in spaces.items() if mask[t]}
        assert allowed == {t for t, n in spaces.items() if n <= 20 - spent}, spent

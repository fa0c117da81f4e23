"""JSON string content and the builtin JSON grammar's nodes are classified when a
vocabulary is loaded (csrc/engine/prebuilt_masks.h).

The string content classification is made from the builtin JSON grammar and from the
JSON Schema front end's string content, and used by every grammar with the same
structure there through the cross-grammar cache; every other node of the builtin JSON
grammar is classified too. These tests check that a fresh vocabulary's first masks find
them, that clearing the cache keeps them, and that masks built on them equal the
brute-force oracle (each token tried with `try_advance`).
"""

import numpy as np
import pytest

import xgr2


@pytest.fixture(scope="module")
def fresh_tok(llama3_hf_tokenizer):
    """A Llama-3 vocabulary no other test uses (its own width and stop token), so its
    cross-grammar cache starts with the prebuilt entries only."""
    return xgr2.TokenizerInfo.from_huggingface(
        llama3_hf_tokenizer, vocab_size=len(llama3_hf_tokenizer) + 96, stop_token_ids=[128008]
    )


def oracle_mask(state, vocab_size):
    return np.fromiter((state.try_advance(t) is not None for t in range(vocab_size)), dtype=bool, count=vocab_size)


def assert_oracle(state, tok, where):
    mask = xgr2.bitmask_to_bool(state.bitmask(), tok.vocab_size)
    wrong = np.flatnonzero(mask != oracle_mask(state, tok.vocab_size))
    assert wrong.size == 0, f"{where}: {wrong.size} ids differ, e.g. " + ", ".join(
        repr(tok.decoded_vocab[w]) for w in wrong[:6]
    )


STRING_GRAMMARS = [
    ("builtin JSON, a key", lambda: xgr2.Grammar.builtin_json(), '{"'),
    ("builtin JSON, a value", lambda: xgr2.Grammar.builtin_json(), '["a", "'),
    ("builtin JSON, a member's value", lambda: xgr2.Grammar.builtin_json(), '{"k": "'),
    ("builtin JSON, the root", lambda: xgr2.Grammar.builtin_json(), '"'),
    ("schema string", lambda: xgr2.Grammar.from_json_schema({"type": "string"}), '"'),
    (
        "schema property",
        lambda: xgr2.Grammar.from_json_schema(
            {"type": "object", "properties": {"city": {"type": "string"}, "n": {"type": "integer"}}}
        ),
        '{"city": "',
    ),
]


def test_the_prebuilt_entries_are_not_counted_like_the_slices(fresh_tok):
    info = fresh_tok.cross_grammar_cache_info()
    assert (info.hits, info.misses, info.entries, info.bytes) == (0, 0, 0, 0)


@pytest.mark.parametrize("name,grammar,prefix", STRING_GRAMMARS, ids=[g[0] for g in STRING_GRAMMARS])
def test_the_first_mask_inside_a_string_finds_the_prebuilt_content(fresh_tok, name, grammar, prefix):
    fresh_tok.clear_cross_grammar_cache()  # as a new vocabulary: the prebuilt entries only
    state = xgr2.Compiler(fresh_tok, cache_limit_bytes=0).compile(grammar()).initial_state().advance_text(prefix)
    state.bitmask()
    # Without the prebuilt content, a fresh cache has nothing to hit here.
    assert fresh_tok.cross_grammar_cache_info().hits >= 1
    assert_oracle(state, fresh_tok, f"{name} after {prefix!r}")
    # Inside the content and after an escape, too.
    for more in ("ab ", "\\n", "é\\u00e9"):
        state = state.advance_text(more)
        assert_oracle(state, fresh_tok, f"{name} after {prefix + more!r}")


@pytest.mark.parametrize("limit", [0, 256 << 20])
def test_clearing_or_bounding_the_cache_keeps_the_prebuilt_entries(fresh_tok, limit):
    """With no room for any entry, or after a clear, the first string mask still finds them."""
    compiled = xgr2.Compiler(fresh_tok, cache_limit_bytes=0).compile(xgr2.Grammar.builtin_json())
    compiled.initial_state().advance_text('{"a": [1, "').bitmask()
    fresh_tok.clear_cross_grammar_cache()
    fresh_tok.set_cross_grammar_cache_limit(limit)
    try:
        info = fresh_tok.cross_grammar_cache_info()
        assert (info.hits, info.misses, info.entries) == (0, 0, 0)
        compiled = xgr2.Compiler(fresh_tok, cache_limit_bytes=0).compile(xgr2.Grammar.builtin_json())
        state = compiled.initial_state().advance_text('[1, "')
        state.bitmask()
        assert fresh_tok.cross_grammar_cache_info().hits >= 1
        assert_oracle(state, fresh_tok, f"limit {limit}")
    finally:
        fresh_tok.set_cross_grammar_cache_limit(256 << 20)
        fresh_tok.clear_cross_grammar_cache()


def test_masks_built_on_the_prebuilt_content_are_exact_along_a_document(fresh_tok):
    """With a cache too small to keep anything (only the prebuilt entries are found) and
    with the default one: the masks agree with the oracle both ways."""
    text = '{"name": "O\'Brien \\"x\\"", "tags": ["a b", "\\u00e9"], "n": -1.5e3}'
    for limit in (0, 256 << 20):
        fresh_tok.clear_cross_grammar_cache()
        fresh_tok.set_cross_grammar_cache_limit(limit)
        state = xgr2.Compiler(fresh_tok, cache_limit_bytes=0).compile(xgr2.Grammar.builtin_json()).initial_state()
        for k in range(0, len(text), 11):
            assert_oracle(state, fresh_tok, f"limit {limit}, after {text[:k]!r}")
            state = state.advance_text(text[k : k + 11])
    fresh_tok.set_cross_grammar_cache_limit(256 << 20)
    fresh_tok.clear_cross_grammar_cache()


BUILTIN_JSON_PREFIXES = ["", '{"k": ', "[", "[1, ", '{"a": {"b": [true, ', '{"k": 1', '{"k": -0.5e', '{"k": t', '{"k": {}']


@pytest.mark.parametrize("prefix", BUILTIN_JSON_PREFIXES)
def test_the_builtin_json_grammar_finds_every_first_mask_prebuilt(fresh_tok, prefix):
    """Value starts, numbers, keywords, after a container: each first mask of a fresh
    compile only hits (without the prebuilt nodes, a cleared cache misses there)."""
    fresh_tok.clear_cross_grammar_cache()
    compiled = xgr2.Compiler(fresh_tok, cache_limit_bytes=0).compile(xgr2.Grammar.builtin_json())
    state = compiled.initial_state().advance_text(prefix)
    state.bitmask()
    info = fresh_tok.cross_grammar_cache_info()
    assert info.hits >= 1 and info.misses == 0, (prefix, info)
    assert_oracle(state, fresh_tok, f"builtin JSON after {prefix!r}")

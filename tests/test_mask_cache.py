"""The adaptive token-mask cache gives exactly the masks of the uncached full walk.

Every mode is compared with `mask_cache=False` (the whole vocabulary walked by the
full parser at each state): JIT (`precompute="none"`), all node masks precomputed, and
a compiled grammar whose node masks were filled by earlier walks (cache hits).
"""

import random

import numpy as np
import pytest
import xgr2
from grammars import EBNF

# Grammars that stress the context-dependent (uncertain) tokens: rules ending inside
# tokens, shared sub-rules with different followers, recursion through the root,
# nullable rules between terminals.
CONTEXT_GRAMMARS = {
    "shared_subrule": 'root ::= "<" word ">" | "[" word "]" | word ","\nword ::= [a-z]+',
    "recursive_root": 'root ::= "(" root ")" root | ""',
    "nullable_gaps": 'root ::= a b a "!"\na ::= [ ]* | "x"\nb ::= "y"? [0-9]*',
    "number_list": 'root ::= "[" (num ("," " "? num)*)? "]"\nnum ::= "-"? [0-9]+ ("." [0-9]+)?',
    "keywords": 'root ::= (kw " ")* kw\nkw ::= "if" | "in" | "int" | "i" | "for" | "format"',
    "utf8_tail": 'root ::= [α-ω]+ ("✓" | "✗") [a-z]*',
}

ALL_GRAMMARS = {**EBNF, **CONTEXT_GRAMMARS}


def allowed(state, vocab_size):
    return xgr2.bitmask_to_bool(state.bitmask(), vocab_size)


def compare_walks(tokenizer_info, grammar_text, seeds, steps):
    reference = xgr2.compile(grammar_text, tokenizer_info, mask_cache=False)
    lazy = xgr2.compile(grammar_text, tokenizer_info)
    eager = xgr2.compile(grammar_text, tokenizer_info, precompute="all")
    assert lazy.num_cached_node_masks == 0
    assert eager.num_cached_node_masks > 0
    vocab_size = tokenizer_info.vocab_size
    stops = set(tokenizer_info.stop_token_ids)
    for seed in seeds:  # later seeds reuse the node masks earlier walks computed
        rng = random.Random(seed)
        states = [c.initial_state() for c in (reference, lazy, eager)]
        for _ in range(steps):
            masks = [allowed(s, vocab_size) for s in states]
            for mode, mask in zip(("lazy", "eager"), masks[1:]):
                diff = np.nonzero(mask != masks[0])[0]
                assert diff.size == 0, f"{mode} differs on tokens {diff[:10].tolist()} at seed {seed}"
            choices = [t for t in np.nonzero(masks[0])[0].tolist() if t not in stops]
            if not choices:
                break
            token = rng.choice(choices)
            states = [s.advance(token) for s in states]
    assert lazy.num_cached_node_masks <= eager.num_cached_node_masks


@pytest.mark.parametrize("name", sorted(ALL_GRAMMARS))
def test_cache_matches_full_walk_byte_fallback(name, byte_fallback_tokenizer_info):
    compare_walks(byte_fallback_tokenizer_info, ALL_GRAMMARS[name], seeds=range(4), steps=25)


@pytest.mark.parametrize("name", ["json", "arith", "number_list", "shared_subrule", "keywords"])
def test_cache_matches_full_walk_llama3(name, llama3_tokenizer_info):
    compare_walks(llama3_tokenizer_info, ALL_GRAMMARS[name], seeds=range(2), steps=12)


def test_cache_is_filled_lazily_and_reports_memory(byte_fallback_tokenizer_info):
    compiled = xgr2.compile(EBNF["json"], byte_fallback_tokenizer_info)
    assert compiled.num_cached_node_masks == 0 and compiled.cache_memory_bytes == 0
    compiled.initial_state().bitmask()
    first = compiled.num_cached_node_masks
    assert first > 0 and compiled.cache_memory_bytes > 0
    compiled.initial_state().advance_text('{"a": [1, true]').bitmask()
    assert compiled.num_cached_node_masks > first


def test_precompute_rejects_unknown_mode(byte_tokenizer_info):
    with pytest.raises(ValueError, match="precompute"):
        xgr2.compile('root ::= "a"', byte_tokenizer_info, precompute="some")


def test_background_precompute_while_states_are_used(llama3_tokenizer_info):
    compiled = xgr2.compile(EBNF["json"], llama3_tokenizer_info)
    reference = xgr2.compile(EBNF["json"], llama3_tokenizer_info, precompute="all")
    thread = compiled.precompute_masks(num_threads=2, background=True)
    state, ref = compiled.initial_state(), reference.initial_state()
    for text in ['{"a', '": [', "1, ", '"x"]}']:  # masks while the pool works
        assert np.array_equal(state.bitmask(), ref.bitmask())
        state, ref = state.advance_text(text), ref.advance_text(text)
    thread.join()
    assert compiled.num_cached_node_masks == reference.num_cached_node_masks
    compiled.precompute_masks()  # nothing left to do

"""The adaptive token-mask cache gives exactly the masks of the uncached full walk.

Every mode is compared with `_compile_full_walk` (the whole vocabulary walked by the
full parser at each state): JIT (`precompute="none"`), all node masks precomputed, and
a compiled grammar whose node masks were filled by earlier walks (cache hits).
"""

import gc
import random

import numpy as np
import pytest
import xgr2
from grammars import EBNF
from xgr2._compiler import _compile_full_walk as full_walk

# The classification and its caches, on every state (no direct cold walks).
pytestmark = pytest.mark.usefixtures("classify_always")

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
    # Small rules that call others are copied into their one caller (InlinableRules):
    # a value wrapper around a wide loop, recursion through itself and through another.
    "wrapped_strings": 'root ::= "[" item ("," item)* "]"\nitem ::= "\\"" body "\\""\nbody ::= [^"\\\\]*',
    "self_recursive": 'root ::= a "!"\na ::= "(" a ")" | "x"',
    "mutual_recursion": 'root ::= p\np ::= "[" q "]" | "."\nq ::= p p?',
}

ALL_GRAMMARS = {**EBNF, **CONTEXT_GRAMMARS}


def allowed(state, vocab_size):
    return xgr2.bitmask_to_bool(state.bitmask(), vocab_size)


def compare_walks(tokenizer_info, grammar_text, seeds, steps):
    reference = full_walk(grammar_text, tokenizer_info)
    lazy = xgr2.compile(grammar_text, tokenizer_info)
    eager = xgr2.compile(grammar_text, tokenizer_info, precompute="all")
    some = xgr2.compile(grammar_text, tokenizer_info, precompute=3)  # the 3 costliest now
    assert lazy.num_cached_node_masks == 0
    assert eager.num_cached_node_masks > 0
    assert some.num_cached_node_masks == min(3, eager.num_cached_node_masks)
    vocab_size = tokenizer_info.vocab_size
    stops = set(tokenizer_info.stop_token_ids)
    for seed in seeds:  # later seeds reuse the node masks earlier walks computed
        rng = random.Random(seed)
        states = [c.initial_state() for c in (reference, lazy, eager, some)]
        for _ in range(steps):
            masks = [allowed(s, vocab_size) for s in states]
            for mode, mask in zip(("lazy", "eager", "costliest"), masks[1:]):
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


@pytest.mark.parametrize("mode", ["some", -1, True, 2.5, None])
def test_precompute_rejects_unknown_mode(mode, byte_tokenizer_info):
    with pytest.raises(ValueError, match="precompute"):
        xgr2.compile('root ::= "a"', byte_tokenizer_info, precompute=mode)


def test_precompute_costliest_first(llama3_tokenizer_info):
    compiled = xgr2.compile(EBNF["json"], llama3_tokenizer_info)
    compiled.precompute_masks(2)
    assert compiled.num_cached_node_masks == 2
    # The costliest are inside strings, where most of the vocabulary is accepted: a
    # state there needs no new node mask.
    inside = compiled.initial_state().advance_text('{"ab')
    inside.bitmask()
    assert compiled.num_cached_node_masks == 2
    with pytest.raises(ValueError, match="count"):
        compiled.precompute_masks(-1)
    compiled.precompute_masks(0)
    assert compiled.num_cached_node_masks == 2


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


# Grammars sharing sub-structures (a string body, a number, a list) in different
# contexts, and near-misses that must not share: compiled one after another against one
# vocabulary (twice: the second time every structure has been seen), later ones reuse
# the node masks and per-context uncertain tokens of earlier ones (cross-grammar cache).
SHARING_GRAMMARS = [
    'root ::= "{" "\\"a\\":" str "}"\nstr ::= "\\"" [^"\\\\]* "\\""',
    'root ::= "[" str ("," str)* "]"\nstr ::= "\\"" [^"\\\\]* "\\""',
    'root ::= s2 " and " s2 "."\ns2 ::= "\\"" [^"\\\\]* "\\""',
    'root ::= "{" "\\"a\\":" str "}"\nstr ::= "\\"" [^"\\\\x]* "\\""',  # one byte less
    'root ::= "{" "\\"a\\":" str "}"\nstr ::= "\\"" [^"\\\\]* "\'"',  # another end
    'root ::= "(" (num ",")* num ")"\nnum ::= "-"? [0-9]+ ("." [0-9]+)?',
    'root ::= "[" num ("," num)* "]" | str\nnum ::= "-"? [0-9]+ ("." [0-9]+)?\nstr ::= "\\"" [^"\\\\]* "\\""',
    'root ::= "<" [^<>]* ">" root | ""',
    'root ::= "<" [^<>]* ">" "!" root | ""',
    'root ::= "{" [a-z]+ "}"',
    'root ::= "{" [a-y]+ "}"',  # same edges but one range end
    'root ::= "{" ([a-y] | "z")+ "}"',  # the same language, another automaton
    # The string body in caller contexts that differ right after it, or only beyond
    # its caller (pair's callers): uncertain tokens per context are shared too.
    'root ::= "{" "\\"a\\":" str ("," str)* "}"\nstr ::= "\\"" [^"\\\\]* "\\""',
    'root ::= "{" "\\"a\\":" str ";" "}"\nstr ::= "\\"" [^"\\\\]* "\\""',
    'root ::= pair ("&" pair)*\npair ::= str "=" str\nstr ::= "\\"" [^"\\\\]* "\\""',
    'root ::= pair ("|" pair)*\npair ::= str "=" str\nstr ::= "\\"" [^"\\\\]* "\\""',
]


def fresh_copy(tokenizer_info):
    """The same vocabulary with its (shared) cross-grammar cache emptied."""
    import pickle

    tok = pickle.loads(pickle.dumps(tokenizer_info))
    tok.clear_cross_grammar_cache()
    return tok


def test_cross_grammar_cache_is_shared_by_equal_vocabularies():
    import pickle

    vocab = [b"a", b"b", b"ab", b"</s>"]
    tok = xgr2.TokenizerInfo(vocab, stop_token_ids=[3])
    xgr2.compile('root ::= "a"+ "b"', tok).initial_state().advance_text("a").bitmask()
    entries = tok.cross_grammar_cache_info().entries
    assert entries > 0
    assert pickle.loads(pickle.dumps(tok)).cross_grammar_cache_info().entries == entries
    assert xgr2.TokenizerInfo(list(vocab), stop_token_ids=[3]).cross_grammar_cache_info().entries == entries
    # Anything a mask depends on tells vocabularies apart.
    for other in (xgr2.TokenizerInfo(vocab), xgr2.TokenizerInfo(vocab, stop_token_ids=[3], vocab_size=8),
                  xgr2.TokenizerInfo([b"a", b"b", b"ac", b"</s>"], stop_token_ids=[3])):
        assert other.cross_grammar_cache_info().entries == 0
    del tok
    gc.collect()
    # The last holder gone, the same vocabulary starts a fresh cache.
    assert xgr2.TokenizerInfo(vocab, stop_token_ids=[3]).cross_grammar_cache_info().entries == 0


@pytest.mark.parametrize("limit", [None, 20_000])
def test_cross_grammar_cache_hits_keep_masks_exact(limit, byte_fallback_tokenizer_info):
    tok = fresh_copy(byte_fallback_tokenizer_info)
    if limit is not None:  # a tiny cache that keeps evicting
        tok.set_cross_grammar_cache_limit(limit)
    assert tok.cross_grammar_cache_info().entries == 0
    try:
        for text in SHARING_GRAMMARS + SHARING_GRAMMARS[::-1]:
            compare_walks(tok, text, seeds=range(3), steps=20)
            info = tok.cross_grammar_cache_info()
            assert info.bytes <= info.limit_bytes
    finally:  # the cache is shared with the session's tokenizer
        tok.set_cross_grammar_cache_limit(256 << 20)
    info = tok.cross_grammar_cache_info()
    assert info.hits > 0 and info.misses > 0
    if limit is None:
        assert info.entries > 0
    else:
        assert info.evictions > 0


def test_cross_grammar_cache_evicts_least_recently_used_first():
    # A grammar recompiled between others keeps its entries (each recompile uses them
    # all) while the others' are evicted: a cache that starts over when full would
    # make it miss again.
    vocab = [bytes([b]) for b in range(32, 127)] + [b"ab", b"12", b'":', b"true"]
    tok = xgr2.TokenizerInfo(vocab)
    hot = 'root ::= "{" [a-z]+ ":" [0-9]+ "}"'

    def use(text, prefix):
        compiled = xgr2.Compiler(tok, cache_limit_bytes=0).compile(text)
        compiled.initial_state().advance_text(prefix).bitmask()

    use(hot, "{ab:1")
    tok.set_cross_grammar_cache_limit(6 * tok.cross_grammar_cache_info().bytes)
    for i in range(40):
        use(f'root ::= "<{i}" [A-Z]+ "=" [a-f]{{{i % 5 + 1}}} ">"', f"<{i}AB=")
        before = tok.cross_grammar_cache_info()
        use(hot, "{ab:1")
        after = tok.cross_grammar_cache_info()
        assert after.misses == before.misses and after.hits > before.hits, i
        assert after.bytes <= after.limit_bytes
    assert tok.cross_grammar_cache_info().evictions > 0


def test_cross_grammar_cache_is_shared_and_clearable(llama3_tokenizer_info):
    tok = fresh_copy(llama3_tokenizer_info)
    body = 'str ::= "\\"" [^"\\\\]* "\\""'
    first = xgr2.compile(f'root ::= "{{\\"k\\":" str "}}"\n{body}', tok)
    first.initial_state().advance_text('{"k":"ab').bitmask()
    before = tok.cross_grammar_cache_info()
    # Another grammar, another context: the string body's masks come from the cache.
    second = xgr2.compile(f'root ::= "[" str "]"\n{body}', tok)
    state = second.initial_state().advance_text('["ab')
    reference = full_walk(f'root ::= "[" str "]"\n{body}', tok)
    assert np.array_equal(state.bitmask(), reference.initial_state().advance_text('["ab').bitmask())
    after = tok.cross_grammar_cache_info()
    assert after.hits > before.hits
    tok.clear_cross_grammar_cache()
    assert tok.cross_grammar_cache_info().entries == 0
    assert state.bitmask().any()  # compiled grammars keep the masks they use
    with pytest.raises(ValueError):
        tok.set_cross_grammar_cache_limit(-1)


def test_node_masks_are_shared_as_far_as_the_tokens_reach():
    # After the digits, the longest tokens reach ",h" and test the byte after it; the
    # classification is shared by grammars that differ only further on ("]" vs "}"),
    # and not by one that differs in the byte tested there ("x" vs "y": ",hy" is
    # rejected by the first grammar, accepted by the last).
    vocab = [b"[", b"]", b"}", b"1", b"12", b",", b",h", b",hy", b"x", b"y", b"xy"]
    tok = xgr2.TokenizerInfo(vocab)
    grammars = ['root ::= "[" [0-9]+ ",hx]"', 'root ::= "[" [0-9]+ ",hx}"', 'root ::= "[" [0-9]+ ",hy]"']
    hits = []
    for text in grammars + grammars[::-1]:
        expected = full_walk(text, tok).initial_state().advance_text("[1").bitmask()
        state = xgr2.compile(text, tok).initial_state().advance_text("[1")
        before = tok.cross_grammar_cache_info().hits
        assert np.array_equal(state.bitmask(), expected), text
        hits.append(tok.cross_grammar_cache_info().hits - before)
    assert hits[:3] == [0, 1, 0]  # the second grammar reuses the first one's classification
    last = xgr2.compile(grammars[2], tok).initial_state().advance_text("[1")
    assert np.flatnonzero(allowed(last, len(vocab))).tolist() == [3, 4, 5, 6, 7]  # 1 12 , ,h ,hy


def test_node_masks_are_shared_past_what_the_walk_reached():
    # From the node after "[", the 4-space token reaches 4 bytes into the whitespace
    # run, but on the other branch the walk stops after "2" (no token goes further).
    # The classification depends on the nodes it reached only, so the second grammar,
    # which differs 2 bytes after the "2" (within 4 bytes of the node), shares it; the
    # third differs at a byte the walk tested ("3") and does not. Each mask is exact.
    vocab = [bytes([b]) for b in range(32, 127)] + [b"    "]
    tok = xgr2.TokenizerInfo(vocab)
    grammars = [f'root ::= "[" [ ]{{0,4}} ("1" | "{alt}") "]"' for alt in ("2xx", "2xy", "3xy")]
    hits = []
    for text in grammars:
        expected = full_walk(text, tok).initial_state().advance_text("[").bitmask()
        state = xgr2.compile(text, tok).initial_state().advance_text("[")
        before = tok.cross_grammar_cache_info().hits
        assert np.array_equal(state.bitmask(), expected), text
        hits.append(tok.cross_grammar_cache_info().hits - before)
    assert hits == [0, 1, 0]


def test_node_masks_are_shared_past_bytes_the_walk_never_asked():
    # Inside the string, the token '", "#' walks past the closing quote to the next
    # key's opening quote and asks that node for "#" only. The next key's first letter
    # is read nowhere else, so the grammar with key "xyz" shares the classification of
    # the one with "bcd"; with key "#yz" the asked byte has an edge, and it does not.
    # Each mask is exact.
    vocab = [bytes([b]) for b in range(32, 127)] + [b'", "', b'", "#', b"hel", b'lo"']
    tok = xgr2.TokenizerInfo(vocab)
    grammars = [f'root ::= "{{\\"s\\": \\"" [a-z]* "\\", \\"{key}\\": 1}}"' for key in ("bcd", "xyz", "#yz")]
    hits, misses = [], []
    for text in grammars:
        expected = full_walk(text, tok).initial_state().advance_text('{"s": "hel').bitmask()
        state = xgr2.compile(text, tok).initial_state().advance_text('{"s": "hel')
        before = tok.cross_grammar_cache_info()
        assert np.array_equal(state.bitmask(), expected), text
        after = tok.cross_grammar_cache_info()
        hits.append(after.hits - before.hits)
        misses.append(after.misses - before.misses)
    assert hits[1] > 0 and misses[1] == 0
    assert misses[2] > 0


def exact_masks_and_misses(grammars, tok, prefix):
    """Compiles each grammar in turn with `tok` (one cross-grammar cache), checks its mask
    after `prefix` against the full walk, and returns each mask's cache misses."""
    misses = []
    for text in grammars:
        expected = full_walk(text, tok).initial_state().advance_text(prefix).bitmask()
        state = xgr2.compile(text, tok).initial_state().advance_text(prefix)
        before = tok.cross_grammar_cache_info()
        assert np.array_equal(state.bitmask(), expected), text
        misses.append(tok.cross_grammar_cache_info().misses - before.misses)
    return misses


def test_a_walk_stored_under_another_index_key_is_found_the_next_time():
    # From the node after "[", the walk reaches the nodes after "a" and after "q" but
    # asks them nothing (no token is longer than a byte). The lookup index is the ball
    # of radius 1, which also holds the edge after "q" ("x" or "y"): the first two
    # grammars have different index keys and the same walk. The second finds nothing
    # under its index key and walks; the third (its structure, something else further
    # on) must then find that walk, not walk again. Each mask is exact.
    vocab = [bytes([b]) for b in range(32, 127)]
    tok = xgr2.TokenizerInfo(vocab)
    grammars = [f'root ::= "[" ("a" | "q" "{c}") "1" "{end}"' for c, end in (("x", "2"), ("y", "2"), ("y", "3"))]
    misses = exact_masks_and_misses(grammars, tok, "[")
    assert misses[0] > 0 and misses[1] > 0
    assert misses[2] == 0


def test_a_rule_shared_by_structure_is_told_apart_by_what_it_calls():
    # Both roots are `"<" (B | "#") ">"`: the same automaton, calling a different B (a
    # wide loop, so a rule of its own). A node's classification is shared by its rule's
    # structure, which must name the callees': the node after "<" accepts " a>" only
    # where B takes the space. The third grammar repeats the first one's structure
    # under other rule names and numbers, and finds it without walking.
    vocab = [bytes([b]) for b in range(32, 127)] + [b" a>", b"ab>", b"#>", b"<a"]
    tok = xgr2.TokenizerInfo(vocab)
    grammars = ['root ::= "<" (b | "#") ">"\nb ::= [ -~]*', 'root ::= "<" (b | "#") ">"\nb ::= [!-~]*',
                'root ::= "<" (other | "#") ">"\nfirst ::= "never"\nother ::= [ -~]*']
    misses = exact_masks_and_misses(grammars, tok, "<")
    allowed_space = xgr2.bitmask_to_bool(xgr2.compile(grammars[0], tok).initial_state().advance_text("<").bitmask(),
                                         tok.vocab_size)
    assert allowed_space[vocab.index(b" a>")]
    assert misses[0] > 0 and misses[1] > 0 and misses[2] == 0


def random_record_grammar(rng):
    """A JSON-like record grammar: whitespace runs of random bounds, short keys over a
    small alphabet and a few value kinds, so that many grammars share structure up to
    some point and differ just past it."""
    ws = f"[ \\n]{{0,{rng.randint(1, 6)}}}"
    values = ['"\\"" [^"\\\\]* "\\""', "[0-9]+", '"true" | "false"', '"[" [0-9] ("," [0-9])* "]"', '"x"* "y"']
    members = [
        f'"\\"{"".join(rng.choice("abxy") for _ in range(rng.randint(1, 3)))}\\"" {ws} ":" {ws} ({rng.choice(values)})'
        for _ in range(rng.randint(1, 3))
    ]
    body = f' {ws} "," {ws} '.join(members)
    return f'root ::= "{{" {ws} {body} {ws} "}}"'


def test_cross_grammar_cache_stays_exact_over_random_related_grammars():
    # Many grammars that agree around a node and differ a few bytes further (where a
    # walk may or may not reach): every mask from the shared cache equals the full walk.
    rng = random.Random(7)
    alphabet = ' \n{}[]":,abxy0123tfy'
    tokens = {bytes([b]) for b in range(32, 127)} | {b"\n"}
    while len(tokens) < 400:
        tokens.add("".join(rng.choice(alphabet) for _ in range(rng.randint(2, 6))).encode())
    tok = xgr2.TokenizerInfo(sorted(tokens))
    for _ in range(14):
        compare_walks(tok, random_record_grammar(rng), seeds=range(2), steps=25)
    info = tok.cross_grammar_cache_info()
    assert info.hits > 0 and info.misses > 0


def test_a_grammar_compiled_again_reuses_its_masks(llama3_tokenizer_info):
    # A fresh compile of the same grammar (no compile cache) takes every node mask,
    # context list and uncertain-token walk from the cross-grammar cache: no misses.
    tok = fresh_copy(llama3_tokenizer_info)
    prefixes = ['{"a": [1, "x', '{"a": [1, "x"], "b": {"c": tr', '{"a": [1, "x"], "b": {"c": true}}']

    def masks():
        compiled = xgr2.Compiler(tok, cache_limit_bytes=0).compile(xgr2.Grammar.builtin_json())
        return [compiled.initial_state().advance_text(p).bitmask() for p in prefixes]

    first = masks()
    before = tok.cross_grammar_cache_info()
    again = masks()
    after = tok.cross_grammar_cache_info()
    assert after.misses == before.misses and after.hits > before.hits
    reference = full_walk(xgr2.Grammar.builtin_json(), tok)
    for p, a, b in zip(prefixes, first, again):
        expected = reference.initial_state().advance_text(p).bitmask()
        assert np.array_equal(a, expected) and np.array_equal(b, expected), p


def test_a_recompiled_grammar_reuses_masks_that_have_no_structural_key():
    # 729 keywords: the walk from the start reaches an automaton node per 3-byte prefix,
    # past the structural key's limit of 512 nodes, so only the per-grammar entries can
    # share its classification with the second compile.
    words = [a + b + c + "z" for a in "abcdefghi" for b in "abcdefghi" for c in "abcdefghi"]
    vocab = [bytes([b]) for b in range(32, 127)] + [w[:n].encode() for w in words[::37] for n in (2, 3)]
    tok = xgr2.TokenizerInfo(vocab)
    text = "root ::= " + " | ".join(f'"{w}"' for w in words)
    expected = full_walk(text, tok).initial_state().bitmask()
    for _ in range(2):
        before = tok.cross_grammar_cache_info()
        state = xgr2.Compiler(tok, cache_limit_bytes=0).compile(text).initial_state()
        assert np.array_equal(state.bitmask(), expected)
        after = tok.cross_grammar_cache_info()
    assert after.misses == before.misses and after.hits > before.hits  # the second compile


def test_shared_context_tokens_depend_on_what_follows_the_callers():
    # The string body's uncertain tokens after `=` (the rule `pair` ends with it) depend
    # on what follows pair in the root: '"&' goes on only in the first grammar, '"|'
    # only in the second. Both grammars are compiled twice, alternately, so every
    # context list could come from the other grammar if the shared key ignored it.
    vocab = [bytes([b]) for b in range(32, 127)] + [b'v"&"', b'v"|"', b'"&"', b'"|"', b'"="', b'v"']
    tok = xgr2.TokenizerInfo(vocab)
    body = '\npair ::= str "=" str\nstr ::= "\\"" [^"\\\\]* "\\""'  # a wide class: not inlined
    grammars = {sep: f'root ::= pair ("{sep}" pair)*{body}' for sep in "&|"}
    for sep in "&|&|":
        text = grammars[sep]
        reference = full_walk(text, tok)
        cached = xgr2.compile(text, tok)
        for prefix in ('"k"="v', '"k"="', '"k"="v"' + sep + '"a"="b'):
            expected = reference.initial_state().advance_text(prefix).bitmask()
            assert np.array_equal(cached.initial_state().advance_text(prefix).bitmask(), expected), (sep, prefix)
    assert tok.cross_grammar_cache_info().hits > 0


@pytest.mark.parametrize("triggers", [["<function="], ["abab", "<tool>"], ["<<x", "<x>"], ["aab", "ab"]])
@pytest.mark.parametrize("options", ["", ', stop_str=("zz",)', ", at_least_one=true", ', excludes=("qq",)'])
def test_partial_tag_masks_match_the_full_walk(triggers, options, llama3_tokenizer_info, byte_tokenizer_info):
    # Free text after a partial tag ("<functio") takes the tokens of the bytes that step
    # as from the free text's own node from that node's mask (SiblingSteps), when this
    # grammar has it: the free text's masks come first ("", "note "), then the partial
    # tags, in a fresh pool. Tags that overlap themselves or each other ("abab" after
    # "aba", "<<x" after "<<") make states whose sibling is not the dispatch's start.
    for base in (llama3_tokenizer_info, byte_tokenizer_info):
        tok = fresh_copy(base)
        tags = ", ".join(f'("{t}", body)' for t in triggers)
        text = f'root ::= TagDispatch({tags}{options})\nbody ::= w "}}"\nw ::= [a-z] | [a-z] [a-z]'
        reference = full_walk(text, tok)
        cached = xgr2.compile(text, tok)
        prefixes = ["", "note ", "é"]
        prefixes += [f"note {t[:k]}" for t in triggers for k in range(1, len(t))]
        prefixes += [f"x{t[:k]}{t[:j]}" for t in triggers for k in range(1, len(t)) for j in range(1, len(t))]
        prefixes += [f"{t[:k]}é{t[:k]}" for t in triggers for k in range(1, len(t))]
        # After a call the free text goes on (the root rule ends anywhere: a context walk
        # from the tag's end assumes nothing past it).
        after = [f"{t}ab}}" for t in triggers] + [f"x{t}a}} {u[:1]}" for t in triggers for u in triggers]
        for prefix in [p for p in prefixes if not any(t in p for t in triggers)] + after:
            expected = reference.initial_state().advance_text(prefix).bitmask()
            assert np.array_equal(cached.initial_state().advance_text(prefix).bitmask(), expected), (triggers, prefix)


def test_a_partial_tag_that_no_token_completes_is_shared_across_grammars(llama3_tokenizer_info):
    # From the "<" of "<function=" no Llama-3 token spells "function=" to the tag's end, so
    # that node's walk reaches the tag and the free text alone, whatever the tool names:
    # its classification is stored by structure (TokensStopInsideTag), and a grammar
    # with other names finds it (a server's requests with other tool sets).
    tok = fresh_copy(llama3_tokenizer_info)
    assert not any(t.startswith(b"function=") for t in tok.decoded_vocab)
    hits = []
    for names in (("get_weather", "calc"), ("lookup", "book_flight")):
        alternatives = " | ".join(f'"{n}>" "{{}}"' for n in names)
        text = f'root ::= TagDispatch(("<function=", body))\nbody ::= {alternatives}'
        compiled = xgr2.compile(text, tok)
        compiled.initial_state().bitmask()  # the free text's mask first, as in generation
        before = tok.cross_grammar_cache_info().hits
        mask = compiled.initial_state().advance_text("note <").bitmask()
        hits.append(tok.cross_grammar_cache_info().hits - before)
        assert np.array_equal(mask, full_walk(text, tok).initial_state().advance_text("note <").bitmask()), names
    assert hits[1] > hits[0], hits

"""Behaviour of the public Python API: bitmask helpers and bit order, token counting, stop,
special and padding tokens, jump-forward text, forced text, state identity, grammar printing,
equality and pickling, and tokenizer loading.
"""

import json
import pickle

import numpy as np
import pytest

import xgr2

# ---------------------------------------------------------------------------------------------
# Helpers


def allowed(state: xgr2.MatcherState) -> list[int]:
    """Allowed token ids, read from the packed bitmask."""
    return np.flatnonzero(xgr2.bitmask_to_bool(state.bitmask(), state.vocab_size)).tolist()


def allowed_by_accepts(state: xgr2.MatcherState) -> list[int]:
    return [t for t in range(state.vocab_size) if state.accepts(t)]


def numbered_tokenizer(n: int, **kwargs) -> xgr2.TokenizerInfo:
    """Token i is "<iii>": same length, so no token is a prefix of another."""
    return xgr2.TokenizerInfo([f"<{i:03d}>".encode() for i in range(n)], **kwargs)


# ---------------------------------------------------------------------------------------------
# Bitmask helpers and bit order


@pytest.mark.parametrize(
    "batch,vocab,words", [(1, 1, 1), (1, 31, 1), (1, 32, 1), (1, 33, 2), (3, 64, 2), (2, 65, 3), (0, 10, 1),
                          (4, 128256, 4008)]
)
def test_bitmask_shape_and_allocation(batch, vocab, words):
    assert xgr2.get_bitmask_shape(batch, vocab) == (batch, words)
    mask = xgr2.allocate_token_bitmask(batch, vocab)
    assert mask.shape == (batch, words)
    assert mask.dtype == np.int32
    assert mask.flags.c_contiguous and mask.flags.writeable
    assert (mask == -1).all()
    assert xgr2.bitmask_to_bool(mask, vocab).all()  # -1 = every token allowed


def test_bitmask_to_bool_bit_order():
    """Token t is bit t % 32 (LSB first) of word t // 32."""
    words = np.array([1, 0], np.int32)
    assert np.flatnonzero(xgr2.bitmask_to_bool(words, 64)).tolist() == [0]
    words = np.array([-(2**31), 1], np.int32)  # the sign bit is token 31; bit 0 of word 1 is token 32
    assert np.flatnonzero(xgr2.bitmask_to_bool(words, 64)).tolist() == [31, 32]
    words = np.array([0b1010, 1 << 30], np.int32)
    assert np.flatnonzero(xgr2.bitmask_to_bool(words, 64)).tolist() == [1, 3, 62]
    # Batched input keeps its leading dims; vocab_size cuts the last word.
    batch = np.array([[-1, -1], [0, 7]], np.int32)
    got = xgr2.bitmask_to_bool(batch, 35)
    assert got.shape == (2, 35) and got.dtype == bool
    assert got[0].all() and np.flatnonzero(got[1]).tolist() == [32, 33, 34]


def test_bitmask_to_bool_matches_a_bit_loop():
    rng = np.random.default_rng(0)
    words = rng.integers(-(2**31), 2**31, size=(3, 4), dtype=np.int64).astype(np.int32)
    got = xgr2.bitmask_to_bool(words, 120)
    for b in range(3):
        for t in range(120):
            assert got[b, t] == bool((int(words[b, t // 32]) >> (t % 32)) & 1), (b, t)


def test_state_bitmask_bit_order():
    """Allow exactly tokens 0, 31, 32 and 69 of a 70-token vocabulary and read the raw words."""
    tok = numbered_tokenizer(70)
    state = xgr2.compile('root ::= "<000>" | "<031>" | "<032>" | "<069>"', tok).initial_state()
    words = state.bitmask()
    assert words.dtype == np.int32 and words.shape == (3,)
    assert words.tolist() == [1 - 2**31, 1, 1 << 5]  # bit 0 | sign bit; bit 0; token 69 = bit 5
    assert allowed(state) == [0, 31, 32, 69] == allowed_by_accepts(state)
    out = xgr2.allocate_token_bitmask(2, 70)
    state.fill_bitmask(out, row=1)
    assert out[1].tolist() == words.tolist()
    assert (out[0] == -1).all()  # other rows untouched
    state.fill_bitmask(out)  # row defaults to 0
    assert out[0].tolist() == words.tolist()


def test_fill_bitmask_accepts_a_1d_row():
    tok = numbered_tokenizer(40)
    state = xgr2.compile('root ::= "<033>"', tok).initial_state()
    row = np.full(2, -1, np.int32)
    state.fill_bitmask(row)
    assert row.tolist() == [0, 2]


# ---------------------------------------------------------------------------------------------
# Token counting, stop tokens, termination


def test_len_counts_tokens_not_bytes():
    tok = xgr2.TokenizerInfo([b"a", b"bb", b"abc", b"</s>"], stop_token_ids=[3])
    compiled = xgr2.compile('root ::= ("a" | "bb" | "abc")*', tok)
    s = compiled.initial_state()
    assert len(s) == s.num_tokens == 0 and s.num_bytes == 0
    s = s.advance(2)
    assert len(s) == s.num_tokens == 1 and s.num_bytes == 3
    s = s.advance(1).advance(0)
    assert len(s) == 3 and s.num_bytes == 6
    s = s.advance_text("bb")  # forced text is bytes, not tokens
    assert len(s) == 3 and s.num_bytes == 8
    s = s.advance(3)  # the stop token counts
    assert len(s) == s.num_tokens == 4 and s.is_terminated and s.num_bytes == 8
    assert compiled.initial_state().try_advance(3).num_tokens == 1


def test_stop_token_allowed_exactly_when_the_grammar_can_end():
    tok = xgr2.TokenizerInfo([b"(", b")", b"x", b"</s>"], stop_token_ids=[3])
    s = xgr2.compile('root ::= "(" root ")" | "x"', tok).initial_state()
    for token in [0, 0, 2, 1, 1]:
        assert not s.accepts(3) and not s.can_terminate and 3 not in allowed(s)
        s = s.advance(token)
    assert s.can_terminate and not s.is_terminated
    assert allowed(s) == [3] == allowed_by_accepts(s)
    done = s.advance(3)
    assert done.is_terminated and not done.can_terminate
    assert (done.bitmask() == 0).all()
    assert allowed_by_accepts(done) == []
    assert done.jump_forward_text() == "" and done.jump_forward_bytes() == b""
    out = xgr2.allocate_token_bitmask(1, 4)
    done.fill_bitmask(out)
    assert (out == 0).all()
    # The state before the stop token is unchanged.
    assert s.can_terminate and not s.is_terminated and allowed(s) == [3]


def test_several_stop_tokens():
    tok = xgr2.TokenizerInfo([b"a", b"</s>", b"<|eot|>", b"<|end|>"], vocab_size=40, stop_token_ids=[3, 1])
    assert tok.stop_token_ids == [1, 3]
    s = xgr2.compile('root ::= "a"*', tok).initial_state()
    assert allowed(s) == [0, 1, 3]  # 2 is neither a stop token nor grammar text
    for stop in (1, 3):
        done = s.advance(0).advance(stop)
        assert done.is_terminated and (done.bitmask() == 0).all()
        for token in range(40):
            assert done.try_advance(token) is None
            with pytest.raises(xgr2.TokenRejectedError):
                done.advance(token)


def test_grammar_that_must_be_empty():
    tok = xgr2.TokenizerInfo([b"a", b"</s>"], stop_token_ids=[1])
    s = xgr2.compile('root ::= ""', tok).initial_state()
    assert s.can_terminate and allowed(s) == [1]
    assert s.jump_forward_text() == ""


def test_without_stop_tokens_a_finished_grammar_allows_nothing():
    tok = xgr2.TokenizerInfo([b"a", b"b"])
    s = xgr2.compile('root ::= "a"', tok).initial_state().advance(0)
    assert s.can_terminate and not s.is_terminated
    assert allowed(s) == [] and (s.bitmask() == 0).all()


def test_padding_ids_never_allowed():
    tok = xgr2.TokenizerInfo([b"a", b"b", b"</s>"], vocab_size=100, stop_token_ids=[2])
    assert tok.vocab_size == 100 and tok.tokenizer_size == 3
    s = xgr2.compile('root ::= [a-z]*', tok).initial_state()
    words = s.bitmask()
    assert words.shape == (4,)
    assert allowed(s) == [0, 1, 2]
    assert words[1:].tolist() == [0, 0, 0]  # ids 32..99 (and the tail past 100) are zero
    for pad in range(3, 100):
        assert not s.accepts(pad)
        with pytest.raises(xgr2.TokenRejectedError):
            s.advance(pad)
    with pytest.raises(xgr2.InvalidTokenError):
        s.advance(100)


def test_special_tokens_never_allowed_even_if_their_bytes_match():
    tok = xgr2.TokenizerInfo([b"a", b"<s>", b"</s>", b"<"], stop_token_ids=[2], special_token_ids=[1])
    compiled = xgr2.compile('root ::= "<s>" | "a"', tok)
    s = compiled.initial_state()
    assert allowed(s) == [0, 3] == allowed_by_accepts(s)
    assert s.try_advance(1) is None
    with pytest.raises(xgr2.TokenRejectedError):
        s.advance(1)
    # The same text as forced bytes is fine: it is grammar text, not the special token.
    assert s.advance_text("<s>").can_terminate
    # A special token that is also a stop token stops.
    tok2 = xgr2.TokenizerInfo([b"a", b"</s>"], stop_token_ids=[1], special_token_ids=[1])
    s2 = xgr2.compile('root ::= "a" | "</s>"', tok2).initial_state()
    assert allowed(s2) == [0]
    assert allowed(s2.advance(0)) == [1]


def test_accepts_agrees_with_the_mask_for_every_token():
    """Including the empty token, padding, special and stop tokens."""
    tok = xgr2.TokenizerInfo(
        [b"a", b"", b"ab", b"b", b"</s>", b"<s>", b"\xff", b"\xc3", b"abab"],
        vocab_size=45,
        stop_token_ids=[4],
        special_token_ids=[5],
    )
    compiled = xgr2.compile('root ::= ("a" "b")* "a"?', tok)
    states = [compiled.initial_state()]
    for text in ["a", "b", "a", "b"]:
        states.append(states[-1].advance_text(text))
    for s in states:
        assert allowed(s) == allowed_by_accepts(s), repr(s)


# ---------------------------------------------------------------------------------------------
# Jump-forward and forced text


@pytest.fixture(scope="module")
def hello():
    tok = xgr2.TokenizerInfo(
        [b"hello", b" world", b"!", b"h", b" w", b"</s>", b"hello world"], vocab_size=40, stop_token_ids=[5]
    )
    return xgr2.compile('root ::= "hello" " world"? "!"', tok)


def test_jump_forward_text(hello):
    s = hello.initial_state()
    assert s.jump_forward_text() == "hello"
    assert s.jump_forward_bytes() == b"hello"
    s2 = s.advance_text(s.jump_forward_text())
    assert s2.jump_forward_text() == "" and s2.jump_forward_bytes() == b""  # " world" or "!"
    assert allowed(s2) == [1, 2, 4] == allowed_by_accepts(s2)
    assert len(s2) == 0 and s2.num_bytes == 5
    s3 = s2.advance(4)  # " w"
    assert s3.jump_forward_text() == "orld!"
    s4 = s3.advance_text("orld!")
    assert s4.can_terminate and allowed(s4) == [5]
    assert s4.jump_forward_text() == ""
    # The same result by tokens.
    assert hello.initial_state().advance(6).advance(2).can_terminate


def test_jump_forward_stops_at_a_possible_end():
    tok = xgr2.TokenizerInfo([b"a", b"b"])
    s = xgr2.compile('root ::= "ab" "cd"?', tok).initial_state()
    assert s.jump_forward_text() == "ab"
    assert s.advance_text("ab").jump_forward_text() == ""


def test_advance_bytes_then_masks(hello):
    s = hello.initial_state().advance_bytes(b"hel")
    assert s.num_bytes == 3 and len(s) == 0
    assert allowed(s) == [] == allowed_by_accepts(s)  # no token spells "lo..."
    assert s.jump_forward_bytes() == b"lo"
    s = s.advance_bytes(b"lo")
    assert allowed(s) == [1, 2, 4]
    assert s.try_advance_bytes(b"?") is None
    assert s.try_advance_bytes(b"").num_bytes == 5


def test_jump_forward_multibyte_utf8():
    tok = xgr2.TokenizerInfo(["日", "本", "語", "!"])
    s = xgr2.compile('root ::= "日本" ("語" | "!")', tok).initial_state()
    assert s.jump_forward_text() == "日本"
    assert s.jump_forward_bytes() == "日本".encode()
    s = s.advance_text("日本")
    assert s.jump_forward_text() == ""
    assert allowed(s) == [2, 3]


def test_jump_forward_text_returns_complete_characters_only():
    """日 = E6 97 A5 and 旦 = E6 97 A6 share two bytes: the bytes go on, the text stops."""
    tok = xgr2.TokenizerInfo(["日", "旦"])
    s = xgr2.compile('root ::= "日" | "旦"', tok).initial_state()
    assert s.jump_forward_bytes() == b"\xe6\x97"
    assert s.jump_forward_text() == ""
    s = xgr2.compile('root ::= "a日" | "a旦"', tok).initial_state()
    assert s.jump_forward_bytes() == b"a\xe6\x97"
    assert s.jump_forward_text() == "a"


def test_jump_forward_text_in_the_middle_of_a_character():
    """After forced bytes that split a character, the forced rest starts with continuation bytes.

    jump_forward_text must still return a str (whose UTF-8 is part of jump_forward_bytes), not
    raise nanobind's RuntimeError("conversion error").
    """
    tok = xgr2.TokenizerInfo(["日", "本"])
    s = xgr2.compile('root ::= "日本"', tok).initial_state().advance_bytes("日".encode()[:1])
    assert s.jump_forward_bytes() == "日本".encode()[1:]
    text = s.jump_forward_text()
    assert isinstance(text, str)
    assert text.encode() in s.jump_forward_bytes()


# ---------------------------------------------------------------------------------------------
# State identity


def test_states_hash_by_identity():
    tok = xgr2.TokenizerInfo([b"a", b"b"])
    compiled = xgr2.compile('root ::= ("a" | "b")*', tok)
    s = compiled.initial_state()
    a1, a2 = s.advance(0), s.advance(0)
    assert hash(a1) == hash(a1)
    assert a1 == a1 and a1 != a2  # same history, different objects
    seen = {s: "start", a1: "a1", a2: "a2"}
    assert len(seen) == 3 and seen[a1] == "a1" and seen[s] == "start"
    assert len({s, s, a1}) == 2
    assert compiled.initial_state() not in seen


def test_state_properties_and_repr():
    tok = xgr2.TokenizerInfo([b"a", b"</s>"], vocab_size=33, stop_token_ids=[1])
    compiled = xgr2.compile('root ::= "a"', tok)
    assert compiled.vocab_size == 33
    assert compiled.tokenizer_info is tok
    assert compiled.grammar == xgr2.Grammar.from_ebnf('root ::= "a"')
    s = compiled.initial_state()
    assert isinstance(s, xgr2.MatcherState) and s.vocab_size == 33
    assert repr(s) == "MatcherState(num_tokens=0, can_terminate=False, is_terminated=False)"
    assert repr(s.advance(0)) == "MatcherState(num_tokens=1, can_terminate=True, is_terminated=False)"
    assert repr(s.advance(0).advance(1)) == "MatcherState(num_tokens=2, can_terminate=False, is_terminated=True)"


def test_compiler_and_compile_agree():
    tok = xgr2.TokenizerInfo([b"a", b"b", b"ab"])
    g = xgr2.Grammar.from_ebnf('root ::= "a" "b"')
    for compiled in (xgr2.compile(g, tok), xgr2.compile('root ::= "a" "b"', tok), xgr2.Compiler(tok).compile(g)):
        assert allowed(compiled.initial_state()) == [0, 2]


def test_root_other_than_root():
    g = xgr2.Grammar.from_ebnf('start ::= "a" b\nb ::= "c"', root="start")
    assert g.root == "start" and g.rule_names == ["start", "b"]
    s = xgr2.compile(g, xgr2.TokenizerInfo([b"a", b"c"])).initial_state()
    assert allowed(s) == [0]
    g_b = xgr2.Grammar.from_ebnf('start ::= "a" b\nb ::= "c"', root="b")
    assert allowed(xgr2.compile(g_b, xgr2.TokenizerInfo([b"a", b"c"])).initial_state()) == [1]


# ---------------------------------------------------------------------------------------------
# Grammar printing, equality, pickling


@pytest.mark.parametrize(
    "text,printed",
    [
        ('root ::= "a"+ ("b" | [c-e])', 'root ::= "a"+ ("b" | [c-e])\n'),
        ('root   ::=   "a"   # comment\n\n', 'root ::= "a"\n'),
        ('root ::= (("a"))', 'root ::= "a"\n'),
        ('root ::= "a" | ("b" | "c")', 'root ::= "a" | "b" | "c"\n'),
        ('root ::= "a" ("b" "c")', 'root ::= "a" "b" "c"\n'),
        ('root ::= ("a" "b")*', 'root ::= ("a" "b")*\n'),
        ('root ::= ("a" | "b")?', 'root ::= ("a" | "b")?\n'),
        ("root ::= 'x'", 'root ::= "x"\n'),
        (r'root ::= "\x41\n\t" [\u0061-c]', 'root ::= "A\\n\\t" [a-c]\n'),
        ('root ::= "é\x7f"', 'root ::= "é\\u007F"\n'),
        ("root ::= [ab] [a-c] [^x]", "root ::= [ab] [a-c] [^x]\n"),
        ('root ::= [\\]\\-\\\\]', 'root ::= [\\-\\\\\\]]\n'),
        ('root ::= "q"{2,5} "r"{3,} "s"{4} "t"{0,1}', 'root ::= "q"{2,5} "r"{3,} "s"{4} "t"?\n'),
        ('root ::= "" | "a"', 'root ::= "" | "a"\n'),
        ('root ::= "x" | root "x"', 'root ::= "x" | root "x"\n'),
        ('root ::= "a" (= "b")', 'root ::= "a" (= "b")\n'),
    ],
)
def test_grammar_printing(text, printed):
    g = xgr2.Grammar.from_ebnf(text)
    assert str(g) == printed
    again = xgr2.Grammar.from_ebnf(str(g))
    assert str(again) == printed  # a fixed point
    assert again == g and hash(again) == hash(g)


def test_grammar_with_several_rules_prints_a_fixed_point():
    g = xgr2.Grammar.from_ebnf('root ::= a b | c\nb ::= "b"  # b\nc ::= a+\na ::= [a]')
    printed = str(g)
    assert sorted(printed.splitlines()) == sorted(['root ::= a b | c', 'a ::= [a]', 'b ::= "b"', "c ::= a+"])
    assert printed.startswith("root ::= ")
    assert str(xgr2.Grammar.from_ebnf(printed)) == printed
    assert repr(g) == "Grammar(root='root', rules=4)"


def test_grammar_rule_names_in_definition_order():
    """Documented as "in definition order" (not order of first mention)."""
    g = xgr2.Grammar.from_ebnf('root ::= a b\nb ::= "b"\na ::= "a"')
    assert g.root == "root"
    assert g.rule_names == ["root", "b", "a"]


def test_grammar_equality():
    a = xgr2.Grammar.from_ebnf('root ::= "a" | "b"')
    assert a == xgr2.Grammar.from_ebnf('root ::= ("a") | ("b")  # same grammar')
    assert a != xgr2.Grammar.from_ebnf('root ::= "b" | "a"')
    assert a != 'root ::= "a" | "b"\n'  # not equal to its text
    two_roots = 'x ::= "a"\ny ::= "b"'
    assert xgr2.Grammar.from_ebnf(two_roots, root="x") != xgr2.Grammar.from_ebnf(two_roots, root="y")
    assert len({a, xgr2.Grammar.from_ebnf('root ::= "a" | "b"')}) == 1


@pytest.mark.parametrize(
    "text,root",
    [('root ::= "a"+ ("b" | [c-e])', "root"), ('x ::= "a" y\ny ::= "b"*', "y"), (None, "root")],
)
def test_grammar_pickle(text, root):
    g = xgr2.Grammar.builtin_json() if text is None else xgr2.Grammar.from_ebnf(text, root=root)
    copy = pickle.loads(pickle.dumps(g))
    assert copy == g and copy.root == root and str(copy) == str(g) and copy.rule_names == g.rule_names


def test_builtin_json_grammar():
    g = xgr2.Grammar.builtin_json()
    assert g.root == "root"
    tok = xgr2.TokenizerInfo([b"{", b"}", b'"', b"a", b":", b" ", b"1", b"</s>"], stop_token_ids=[7])
    s = xgr2.compile(g, tok).initial_state()
    s = s.advance_text('{"a": 1}')
    assert s.can_terminate and 7 in allowed(s)


def test_compiled_grammar_is_reusable_across_states():
    tok = xgr2.TokenizerInfo([b"a", b"b"])
    compiled = xgr2.compile('root ::= "a"*', tok)
    a = compiled.initial_state()
    b = compiled.initial_state()
    assert a is not b
    assert allowed(a.advance(0)) == allowed(b) == [0]


# ---------------------------------------------------------------------------------------------
# Tokenizers


def test_raw_vocabulary():
    tok = xgr2.TokenizerInfo(["a", b"b\xff", "é", bytearray(b"c")], vocab_size=10)
    assert tok.vocab_type == "raw"
    assert tok.decoded_vocab == [b"a", b"b\xff", "é".encode(), b"c"]
    assert (tok.vocab_size, tok.tokenizer_size) == (10, 4)
    assert tok.special_token_ids == [] and tok.stop_token_ids == []
    assert repr(tok) == "TokenizerInfo(vocab_type='raw', tokenizer_size=4, vocab_size=10, stop_token_ids=[])"


def test_ids_are_sorted_and_deduplicated():
    tok = xgr2.TokenizerInfo([b"a", b"b", b"c"], stop_token_ids=[2, 1, 2], special_token_ids=0)
    assert tok.stop_token_ids == [1, 2]
    assert tok.special_token_ids == [0]


def test_byte_level_vocabulary():
    """GPT-2 byte-to-unicode: printable bytes map to themselves, the rest to U+0100 onwards."""
    tok = xgr2.TokenizerInfo(["Ġ", "Ċ", "a", "Ġa", "ĠĊ", "Ā", "é", "Ã©", "ĉ"], vocab_type="byte_level")
    assert tok.vocab_type == "byte_level"
    assert tok.decoded_vocab == [b" ", b"\n", b"a", b" a", b" \n", b"\x00", b"\xe9", "é".encode(), b"\t"]


def test_byte_fallback_vocabulary():
    tok = xgr2.TokenizerInfo(["<0x0A>", "▁a", "a", "<0xE6>", "▁▁b", "<0xzz>"], vocab_type="byte_fallback")
    assert tok.vocab_type == "byte_fallback"
    assert tok.decoded_vocab == [b"\n", b" a", b"a", b"\xe6", b"  b", b"<0xzz>"]


def _byte_level_bpe():
    tokenizers = pytest.importorskip("tokenizers")
    from tokenizers import AddedToken, decoders, models, pre_tokenizers

    vocab = {"a": 0, "b": 1, "Ġ": 2, "Ċ": 3, "Ġa": 4, "ab": 5}
    tk = tokenizers.Tokenizer(models.BPE(vocab=vocab, merges=[("a", "b"), ("Ġ", "a")]))
    tk.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tk.decoder = decoders.ByteLevel()
    tk.add_special_tokens([AddedToken("<|endoftext|>", special=True)])
    return tk


def test_from_tokenizer_json(tmp_path):
    tk = _byte_level_bpe()
    path = tmp_path / "tokenizer.json"
    tk.save(str(path))
    tok = xgr2.TokenizerInfo.from_tokenizer_json(path)
    assert tok.vocab_type == "byte_level"
    assert tok.tokenizer_size == tok.vocab_size == 7
    assert tok.decoded_vocab[:6] == [b"a", b"b", b" ", b"\n", b" a", b"ab"]
    assert tok.special_token_ids == [6]
    assert tok.stop_token_ids == [6]  # "<|endoftext|>" is a known end-of-text token
    s = xgr2.compile('root ::= "a" " " "ab" "\\n"', tok).initial_state()
    assert allowed(s) == [0]
    s = s.advance(0)
    assert allowed(s) == [2, 4]
    assert s.advance(4).advance(1).advance(3).can_terminate

    # vocab_size pads; a tokenizer_config.json beside it names the EOS token.
    padded = xgr2.TokenizerInfo.from_tokenizer_json(str(path), vocab_size=64)
    assert (padded.vocab_size, padded.tokenizer_size) == (64, 7)
    (tmp_path / "tokenizer_config.json").write_text(json.dumps({"eos_token": {"content": "Ċ"}}))
    assert xgr2.TokenizerInfo.from_tokenizer_json(path).stop_token_ids == [3]
    assert xgr2.TokenizerInfo.from_tokenizer_json(path, stop_token_ids=[0, 1]).stop_token_ids == [0, 1]


def test_from_huggingface_tokenizers_and_transformers():
    tk = _byte_level_bpe()
    tok = xgr2.TokenizerInfo.from_huggingface(tk, vocab_size=40)
    assert tok.vocab_type == "byte_level" and tok.vocab_size == 40
    assert tok.decoded_vocab[:6] == [b"a", b"b", b" ", b"\n", b" a", b"ab"]
    transformers = pytest.importorskip("transformers")
    fast = transformers.PreTrainedTokenizerFast(tokenizer_object=tk, eos_token="Ċ")
    tok = xgr2.TokenizerInfo.from_huggingface(fast)
    assert tok.stop_token_ids == [3]
    assert tok.decoded_vocab[:6] == [b"a", b"b", b" ", b"\n", b" a", b"ab"]


def test_from_huggingface_rejects_unsupported_objects():
    for bad in (object(), "gpt2", None, 3, {"a": 0}, ["a", "b"]):
        with pytest.raises(xgr2.TokenizerError, match="unsupported tokenizer type"):
            xgr2.TokenizerInfo.from_huggingface(bad)

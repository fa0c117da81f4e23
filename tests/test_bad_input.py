"""Malformed input: every bad grammar, tokenizer, token id or array raises a clear error of
xgr2's own types (or TypeError/ValueError/IndexError for API misuse) and never crashes.

Crash checks run in a subprocess so that a segfault or abort fails one test instead of the
whole session.
"""

import os
import pickle
import re
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest

import xgr2

# ---------------------------------------------------------------------------------------------
# Helpers


def small_tokenizer(**kwargs) -> xgr2.TokenizerInfo:
    """Tokens: 0 "a", 1 "b", 2 "ab", 3 "</s>" (stop), 4 "<s>" (special); vocab_size 40."""
    kwargs.setdefault("vocab_size", 40)
    kwargs.setdefault("stop_token_ids", [3])
    kwargs.setdefault("special_token_ids", [4])
    return xgr2.TokenizerInfo([b"a", b"b", b"ab", b"</s>", b"<s>"], **kwargs)


@pytest.fixture(scope="module")
def state() -> xgr2.MatcherState:
    """Initial state of `root ::= "a" "b"*` over small_tokenizer()."""
    return xgr2.compile('root ::= "a" "b"*', small_tokenizer()).initial_state()


def caret_excerpt(text: str, line: int, column: int) -> str:
    """The two lines GrammarError messages end with: the source line and a caret under `column`."""
    source_line = text.split("\n")[line - 1]
    # Messages show control characters as spaces; long lines are cut around the error
    # (checked separately in test_long_line_error_is_short).
    source_line = "".join(" " if ord(c) < 0x20 and c != "\t" else c for c in source_line)
    return "  " + source_line + "\n  " + " " * (column - 1) + "^"


def test_long_line_error_is_short():
    text = "root ::= " + '"a" ' * 5000 + "nope"
    with pytest.raises(xgr2.GrammarError) as info:
        xgr2.Grammar.from_ebnf(text)
    message = str(info.value)
    assert len(message) < 400
    assert info.value.line == 1 and info.value.column == len(text) - 3
    excerpt, caret = message.splitlines()[-2:]
    assert excerpt.startswith("  ...") and "nope" in excerpt
    assert excerpt[caret.index("^"):].startswith("nope")


def assert_not_binding_noise(message: str) -> None:
    """nanobind's overload-resolution message names internal signatures; it is not a clear error."""
    assert "incompatible function arguments" not in message, message
    assert "_core" not in message, message


# ---------------------------------------------------------------------------------------------
# Malformed grammars

BAD_GRAMMARS = [
    # (id, text, a phrase the message must contain)
    ("undefined_rule", 'root ::= "a" b', "undefined rule `b`"),
    ("unterminated_string", 'root ::= "abc', "unterminated string"),
    ("string_across_newline", 'root ::= "ab\n"', "unterminated string"),
    ("unterminated_class", "root ::= [a-z", "unterminated character class"),
    ("bad_range", "root ::= [z-a]", "bad character range"),
    ("empty_class", "root ::= []", "empty character class"),
    ("empty_grammar", "", "empty"),
    ("only_whitespace", "  \n\t\n", "empty"),
    ("only_comments", "# a comment\n# another\n", "empty"),
    ("missing_assign", 'root "a"', "::="),
    ("missing_body", "root ::=", "expected an expression"),
    ("empty_body_of_a_middle_rule", 'root ::= "a"\nb ::=\nc ::= "x"', "expected an expression"),
    ("duplicate_rule", 'root ::= "a"\nroot ::= "b"', "defined twice"),
    ("unclosed_paren", 'root ::= ("a" "b"', "unclosed `(`"),
    ("stray_close_paren", 'root ::= "a")', "expected a rule name"),
    ("min_gt_max", 'root ::= "a"{3,1}', "min > max"),
    ("huge_bound", 'root ::= "a"{2000000000}', "exceeds the limit"),
    ("huge_upper_bound", 'root ::= "a"{1,99999999999999999999}', "exceeds the limit"),
    ("unclosed_repeat", 'root ::= "a"{3', "expected `}`"),
    ("bad_escape", r'root ::= "\q"', "invalid escape"),
    ("hex_escape_without_digits", r'root ::= "\xg"', "hex digits"),
    ("hex_escape_without_digits_in_class", r"root ::= [\x]", "hex digits"),
    ("surrogate_escape", r'root ::= "\uD800"', "not a valid Unicode code point"),
    ("too_big_escape", r'root ::= "\U00110000"', "not a valid Unicode code point"),
    ("unterminated_escape", 'root ::= "a\\', "unterminated escape"),
    ("no_finite_string", 'root ::= "a" root', "derives no finite string"),
    ("mutual_no_finite_string", 'root ::= "a" x\nx ::= "b" root', "derives no finite string"),
    ("deep_parens", "root ::= " + "(" * 5000 + '"a"' + ")" * 5000, "nested too deeply"),
    ("lookahead_not_at_end", 'root ::= "a" (= "b") "c"', "lookahead assertion must end its rule"),
    ("unclosed_lookahead", 'root ::= "a" (= "b"', "expected `)`"),
    ("unexpected_char", 'root ::= "a" @', "unexpected character `@`"),
    ("rule_name_digit", '1root ::= "a"', "expected a rule name"),
    ("nul_byte", 'root ::= "a" \x00', "unexpected character"),
    # Bounds above 32 are compressed and directly nested repetitions merge
    # (grammar/repetition.cc); nested small ones with text between them still multiply.
    ("automaton_too_large", 'root ::= (((( "a" | "b" ){32} "c"){32} "d"){32} "e"){32}', "grammar too large"),
    ("dfa_too_large", 'root ::= [ab]* "a" [ab]{20}', "grammar too large"),
]


@pytest.mark.parametrize("text,phrase", [c[1:] for c in BAD_GRAMMARS], ids=[c[0] for c in BAD_GRAMMARS])
def test_malformed_grammar_raises_grammar_error(text, phrase):
    with pytest.raises(xgr2.GrammarError) as info:
        xgr2.Grammar.from_ebnf(text)
    err = info.value
    assert isinstance(err, ValueError) and isinstance(err, xgr2.Xgr2Error)
    assert phrase in str(err)
    assert isinstance(err.line, int) and isinstance(err.column, int)
    short_line = err.line and len(text.split("\n")[err.line - 1]) <= 100
    if short_line:  # located errors end with the caret excerpt
        assert str(err).endswith(caret_excerpt(text, err.line, err.column)), str(err)
        assert f"line {err.line}, column {err.column}" in str(err)


@pytest.mark.parametrize("text,phrase", [c[1:] for c in BAD_GRAMMARS[:6]], ids=[c[0] for c in BAD_GRAMMARS[:6]])
def test_compile_of_malformed_text_raises_grammar_error(text, phrase):
    """xgr2.compile accepts EBNF text; the same errors come out of it."""
    with pytest.raises(xgr2.GrammarError, match=re.escape(phrase)):
        xgr2.compile(text, small_tokenizer())


@pytest.mark.parametrize(
    "text,line,column",
    [
        ('root ::= "a" b', 1, 14),  # the undefined reference
        ('root ::= "a"\nroot ::= "b"', 2, 1),  # the second definition
        ('root ::= "a"\nx ::= "abc\ny ::= "b"', 2, 7),  # the opening quote
        ("root ::= [z-a]", 1, 11),  # the range's first character
        ('root ::= "ok"\n  \tx ::= "\\q"', 2, 11),  # the backslash (a tab is one column)
        ('root ::= ("a" "b"', 1, 10),  # the unclosed paren
        ('root ::= "a"{3,1}', 1, 13),  # the `{`
        ('root ::= "日本" nope', 1, 15),  # columns count code points, not bytes
        ('# comment\n\nroot ::= "a" (= "b") "c"', 3, 14),  # the lookahead
    ],
)
def test_grammar_error_line_and_column(text, line, column):
    with pytest.raises(xgr2.GrammarError) as info:
        xgr2.Grammar.from_ebnf(text)
    assert (info.value.line, info.value.column) == (line, column)
    assert str(info.value).endswith(caret_excerpt(text, line, column)), str(info.value)


def test_grammar_error_survives_pickling():
    with pytest.raises(xgr2.GrammarError) as info:
        xgr2.Grammar.from_ebnf("root ::= x")
    copy = pickle.loads(pickle.dumps(info.value))
    assert type(copy) is xgr2.GrammarError
    assert (copy.line, copy.column, str(copy)) == (info.value.line, info.value.column, str(info.value))


def test_unknown_root_name():
    with pytest.raises(xgr2.GrammarError, match="root rule `start` is not defined"):
        xgr2.Grammar.from_ebnf('root ::= "a"', root="start")
    with pytest.raises(xgr2.GrammarError, match="root rule `main` is not defined"):
        xgr2.Grammar.from_ebnf('root ::= "a"', root="main")


def test_error_in_a_very_long_line_gives_a_short_message():
    """An error far into a long line must not paste the whole line into the message."""
    text = "root ::= " + '"a" ' * 200_000 + "nope"
    with pytest.raises(xgr2.GrammarError) as info:
        xgr2.Grammar.from_ebnf(text)
    assert info.value.line == 1 and info.value.column == len(text) - 3
    message = str(info.value)
    assert "undefined rule `nope`" in message
    assert len(message) < 2_000, f"message is {len(message)} characters long"


def test_lone_surrogate_grammar_text_is_a_clear_error():
    """A str that cannot be UTF-8 encoded: a ValueError (GrammarError or UnicodeError), not
    nanobind's 'incompatible function arguments' TypeError."""
    with pytest.raises(ValueError) as info:
        xgr2.Grammar.from_ebnf('root ::= "\ud800"')
    assert_not_binding_noise(str(info.value))


def test_grammar_argument_types():
    with pytest.raises(TypeError, match="must be str, got bytes"):
        xgr2.Grammar.from_ebnf(b'root ::= "a"')
    with pytest.raises(TypeError, match="root must be str"):
        xgr2.Grammar.from_ebnf('root ::= "a"', root=None)
    with pytest.raises(TypeError, match="got int"):
        xgr2.compile(123, small_tokenizer())
    with pytest.raises(TypeError, match="got NoneType"):
        xgr2.compile(None, small_tokenizer())
    with pytest.raises(TypeError, match="expected xgr2.TokenizerInfo, got str"):
        xgr2.compile('root ::= "a"', "gpt2")
    with pytest.raises(TypeError, match="expected xgr2.TokenizerInfo"):
        xgr2.Compiler(None)


# ---------------------------------------------------------------------------------------------
# Slow grammars: long literals and long rule chains must compile in (near) linear time.


def _compile_seconds(text: str, root: str = "root") -> float:
    start = time.perf_counter()
    xgr2.Grammar.from_ebnf(text, root=root)
    return time.perf_counter() - start


def test_long_literal_compiles_in_linear_time():
    """A 40,000-character literal took ~3 s and 150,000 characters ~50 s (quadratic pruning)."""
    short = _compile_seconds('root ::= "' + "a" * 10_000 + '"')
    long = _compile_seconds('root ::= "' + "a" * 40_000 + '"')
    assert long < 8 * short + 0.25, f"10k chars: {short:.3f}s, 40k chars: {long:.3f}s"


def test_rule_order_does_not_make_compilation_quadratic():
    """A chain r0 -> r1 -> ... defined in forward order must not be much slower than in reverse."""
    n = 10_000
    rules = [f'r{i} ::= "x" r{i + 1}' for i in range(n)] + [f'r{n} ::= "y"']
    forward = _compile_seconds("\n".join(rules), root="r0")
    backward = _compile_seconds("\n".join(reversed(rules)), root="r0")
    assert forward < 10 * backward + 0.25, f"forward order {forward:.3f}s, reverse order {backward:.3f}s"


# ---------------------------------------------------------------------------------------------
# Tokenizer descriptions


def test_vocab_size_smaller_than_tokenizer_names_both_numbers():
    with pytest.raises(xgr2.TokenizerError) as info:
        xgr2.TokenizerInfo([b"a", b"b", b"c"], vocab_size=2)
    assert isinstance(info.value, ValueError)
    assert "2" in str(info.value) and "3" in str(info.value)
    assert re.search(r"vocab_size 2\b.*\b3 tokens", str(info.value)), str(info.value)


@pytest.mark.parametrize(
    "kwargs,phrase",
    [
        ({"stop_token_ids": [5]}, "stop token id 5"),
        ({"stop_token_ids": [-1]}, "stop token id -1"),
        ({"stop_token_ids": [10], "vocab_size": 64}, "stop token id 10"),  # a padding id
        ({"special_token_ids": [-1]}, "special token id -1"),
        ({"special_token_ids": [2, 7]}, "special token id 7"),
        ({"vocab_size": 0}, "vocab_size 0"),
        ({"vocab_size": -3}, "vocab_size -3"),
        ({"vocab_size": 2**40}, "too large"),
        ({"vocab_type": "bpe"}, "unknown vocab_type 'bpe'"),
        ({"vocab_type": ""}, "unknown vocab_type"),
    ],
)
def test_bad_tokenizer_description_raises_tokenizer_error(kwargs, phrase):
    with pytest.raises(xgr2.TokenizerError) as info:
        xgr2.TokenizerInfo([b"a", b"b", b"c"], **kwargs)
    assert phrase in str(info.value)
    assert isinstance(info.value, ValueError) and isinstance(info.value, xgr2.Xgr2Error)


def test_empty_vocabulary():
    with pytest.raises(xgr2.TokenizerError, match="empty"):
        xgr2.TokenizerInfo([])
    with pytest.raises(xgr2.TokenizerError, match="empty"):
        xgr2.TokenizerInfo([], vocab_size=32)


def test_stop_id_beyond_int32_is_a_tokenizer_error():
    """Ids that do not fit int32 must get the same clear error as any other out-of-range id."""
    with pytest.raises(xgr2.TokenizerError) as info:
        xgr2.TokenizerInfo([b"a", b"b"], stop_token_ids=[2**40])
    assert str(2**40) in str(info.value)


@pytest.mark.parametrize(
    "vocab,kwargs,exc,phrase",
    [
        ([b"a", 3], {}, TypeError, "entry 1 is int"),
        ([b"a", None], {}, TypeError, "entry 1 is NoneType"),
        ([b"a", [1, 2]], {}, TypeError, "entry 1 is list"),
        (b"ab", {}, TypeError, "entry 0 is int"),
        ([b"a"], {"vocab_size": 3.0}, TypeError, "vocab_size must be an int"),
        ([b"a"], {"vocab_size": True}, TypeError, "vocab_size must be an int"),
        ([b"a"], {"stop_token_ids": ["a"]}, TypeError, "stop_token_ids must be ints"),
        ([b"a"], {"stop_token_ids": [True]}, TypeError, "stop_token_ids must be ints"),
        ([b"a"], {"special_token_ids": [0.0]}, TypeError, "special_token_ids must be ints"),
    ],
)
def test_tokenizer_argument_types(vocab, kwargs, exc, phrase):
    with pytest.raises(exc, match=re.escape(phrase)):
        xgr2.TokenizerInfo(vocab, **kwargs)


def test_from_huggingface_rejects_unsupported_objects():
    for bad in (object(), "gpt2", None, 3, {"a": 0}):
        with pytest.raises(xgr2.TokenizerError, match="unsupported tokenizer type"):
            xgr2.TokenizerInfo.from_huggingface(bad)


def test_from_tokenizer_json_missing_file(tmp_path):
    with pytest.raises(xgr2.TokenizerError, match="no tokenizer file"):
        xgr2.TokenizerInfo.from_tokenizer_json(tmp_path / "missing.json")
    with pytest.raises(xgr2.TokenizerError, match="no tokenizer file"):
        xgr2.TokenizerInfo.from_tokenizer_json(tmp_path)  # a directory


def test_from_tokenizer_json_malformed_file_is_a_tokenizer_error(tmp_path):
    pytest.importorskip("tokenizers")
    path = tmp_path / "tokenizer.json"
    path.write_text("{not json", encoding="utf-8")
    with pytest.raises(xgr2.TokenizerError):
        xgr2.TokenizerInfo.from_tokenizer_json(path)
    path.write_text('{"version": "1.0"}', encoding="utf-8")
    with pytest.raises(xgr2.TokenizerError):
        xgr2.TokenizerInfo.from_tokenizer_json(path)


# ---------------------------------------------------------------------------------------------
# Token ids and states


@pytest.mark.parametrize("token", [-1, 40, 41, -(2**31), 2**31 - 1])
@pytest.mark.parametrize("method", ["advance", "try_advance", "accepts"])
def test_token_outside_vocabulary(state, method, token):
    with pytest.raises(xgr2.InvalidTokenError) as info:
        getattr(state, method)(token)
    assert isinstance(info.value, ValueError)
    assert f"token id {token} is outside the vocabulary [0, 40)" in str(info.value)


@pytest.mark.parametrize("token", [2**31, 2**40, -(2**40), 2**70])
@pytest.mark.parametrize("method", ["advance", "try_advance", "accepts"])
def test_token_beyond_int32_is_an_invalid_token_error(state, method, token):
    """Overflowing ids are just as invalid as -1; the error must say so, not name bindings."""
    with pytest.raises(xgr2.InvalidTokenError) as info:
        getattr(state, method)(token)
    assert str(token) in str(info.value)


@pytest.mark.parametrize("token", [1.0, "a", None, b"a"])
def test_token_of_wrong_type(state, token):
    with pytest.raises(TypeError):
        state.advance(token)


def test_rejected_token_leaves_state_usable(state):
    with pytest.raises(xgr2.TokenRejectedError, match="token 1 is not allowed here") as info:
        state.advance(1)
    assert isinstance(info.value, ValueError) and isinstance(info.value, xgr2.Xgr2Error)
    assert state.try_advance(1) is None
    # The old state is unchanged and still works.
    assert len(state) == 0 and state.num_bytes == 0 and not state.is_terminated
    assert state.accepts(0) and state.accepts(2)
    s1 = state.advance(0)
    assert len(s1) == 1 and s1.can_terminate


@pytest.mark.parametrize("token", [4, 39])  # a special token and a padding id
def test_special_and_padding_tokens_are_rejected_not_invalid(state, token):
    with pytest.raises(xgr2.TokenRejectedError):
        state.advance(token)
    assert not state.accepts(token)


def test_rejected_text_and_bytes(state):
    with pytest.raises(xgr2.TokenRejectedError, match="does not allow this text"):
        state.advance_text("b")
    with pytest.raises(xgr2.TokenRejectedError, match="does not allow these bytes"):
        state.advance_bytes(b"\xff")
    assert state.try_advance_bytes(b"ba") is None
    assert state.advance_text("ab").num_bytes == 2


def test_advance_text_with_lone_surrogate_is_a_clear_error(state):
    with pytest.raises(ValueError) as info:
        state.advance_text("a\ud800")
    assert_not_binding_noise(str(info.value))


def test_text_and_bytes_argument_types(state):
    with pytest.raises(TypeError):
        state.advance_bytes("a")
    with pytest.raises(TypeError):
        state.advance_text(b"a")
    with pytest.raises(TypeError):
        state.advance_text(None)


def test_advancing_a_terminated_state(state):
    done = state.advance(0).advance(3)
    assert done.is_terminated
    for token in range(40):
        with pytest.raises(xgr2.TokenRejectedError, match="terminated"):
            done.advance(token)
        assert done.try_advance(token) is None
        assert not done.accepts(token)
    with pytest.raises(xgr2.TokenRejectedError):
        done.advance_text("b")
    with pytest.raises(xgr2.TokenRejectedError):
        done.advance_bytes(b"")
    with pytest.raises(xgr2.InvalidTokenError):  # range checks still come first
        done.advance(40)


def test_state_is_not_picklable(state):
    with pytest.raises(TypeError, match="MatcherState is not picklable") as info:
        pickle.dumps(state)
    assert "replay" in str(info.value)  # says what to do instead
    with pytest.raises(TypeError, match="not picklable"):
        pickle.dumps(state.advance(0))


def test_unpickling_a_corrupt_compiled_grammar_is_a_clear_error():
    compiled = xgr2.compile('root ::= "a"', small_tokenizer())
    fn, args = compiled.__reduce__()
    with pytest.raises(xgr2.GrammarError):
        fn(args[0], 'root ::= "a', *args[2:])  # damaged grammar text


# ---------------------------------------------------------------------------------------------
# Bitmask arguments

WORDS = 2  # ceil(40 / 32)


def _noncontiguous_rows():
    return np.full((2, 2 * WORDS), -1, np.int32)[:, ::2]


def _read_only():
    a = np.full((1, WORDS), -1, np.int32)
    a.flags.writeable = False
    return a


BAD_BITMASKS = [
    # (id, factory, exception, message regex)
    ("int64", lambda: np.full((1, WORDS), -1, np.int64), TypeError, "dtype int32"),
    ("float32", lambda: np.full((1, WORDS), -1, np.float32), TypeError, "dtype int32"),
    ("uint32", lambda: np.full((1, WORDS), 7, np.uint32), TypeError, "dtype int32"),
    ("int16", lambda: np.full((1, 2 * WORDS), -1, np.int16), TypeError, "dtype int32"),
    ("bool", lambda: np.ones((1, WORDS * 32), bool), TypeError, "dtype int32"),
    ("big_endian", lambda: np.full((1, WORDS), -1, ">i4"), TypeError, "int32"),
    ("too_narrow", lambda: np.full((1, WORDS - 1), -1, np.int32), ValueError, "2 int32 words.*got 1"),
    ("too_wide", lambda: np.full((1, WORDS + 1), -1, np.int32), ValueError, "2 int32 words.*got 3"),
    ("3d", lambda: np.full((1, 1, WORDS), -1, np.int32), ValueError, "2-D.*got 3 dimensions"),
    ("0d", lambda: np.array(-1, np.int32), ValueError, "2-D.*got 0 dimensions"),
    ("noncontiguous_rows", _noncontiguous_rows, ValueError, "C-contiguous"),
    ("fortran_order", lambda: np.asfortranarray(np.full((3, WORDS), -1, np.int32)), ValueError, "C-contiguous"),
    ("read_only", _read_only, TypeError, "writable"),
    ("python_list", lambda: [[-1] * WORDS], TypeError, "numpy int32 array"),
    ("tuple", lambda: (-1,) * WORDS, TypeError, "numpy int32 array"),
    ("string", lambda: "bitmask", TypeError, "numpy int32 array"),
    ("none", lambda: None, TypeError, "bitmask"),
]


@pytest.mark.parametrize("factory,exc,pattern", [c[1:] for c in BAD_BITMASKS], ids=[c[0] for c in BAD_BITMASKS])
def test_bad_bitmask_argument(state, factory, exc, pattern):
    out = factory()
    before = np.array(out, copy=True) if isinstance(out, np.ndarray) else None
    with pytest.raises(exc) as info:
        state.fill_bitmask(out)
    assert re.search(pattern, str(info.value)), str(info.value)
    assert_not_binding_noise(str(info.value))
    if before is not None:  # nothing was written
        np.testing.assert_array_equal(out, before)


@pytest.mark.parametrize("row", [2, 3, -1, -3, 2**40])
def test_bitmask_row_out_of_range(state, row):
    out = xgr2.allocate_token_bitmask(2, 40)
    with pytest.raises(IndexError, match=rf"row {row} is outside the bitmask's 2 rows"):
        state.fill_bitmask(out, row)
    with pytest.raises(IndexError):
        state.fill_bitmask(out, row=row)
    assert (out == -1).all()


def test_bitmask_row_of_an_empty_batch(state):
    """allocate_token_bitmask(0, V) is a valid [0, W] array; row 0 of it is out of range."""
    out = xgr2.allocate_token_bitmask(0, 40)
    assert out.shape == (0, WORDS)
    with pytest.raises(IndexError, match="row 0 is outside the bitmask's 0 rows"):
        state.fill_bitmask(out, 0)


@pytest.mark.parametrize("row", [1.0, "0", None])
def test_bitmask_row_of_wrong_type(state, row):
    with pytest.raises(TypeError):
        state.fill_bitmask(xgr2.allocate_token_bitmask(2, 40), row)


def test_strided_but_valid_bitmasks_are_written_correctly(state):
    """Row strides other than W (every other row, reversed rows, one-row Fortran) are fine."""
    expected = state.bitmask()
    base = np.full((4, WORDS), -1, np.int32)
    state.fill_bitmask(base[::2], 1)
    np.testing.assert_array_equal(base[2], expected)
    assert (base[[0, 1, 3]] == -1).all()
    rev = np.full((3, WORDS), -1, np.int32)
    state.fill_bitmask(rev[::-1], 0)
    np.testing.assert_array_equal(rev[2], expected)
    assert (rev[:2] == -1).all()
    one = np.asfortranarray(np.full((1, WORDS), -1, np.int32))
    state.fill_bitmask(one)
    np.testing.assert_array_equal(one[0], expected)


def test_bitmask_helper_errors():
    with pytest.raises(ValueError, match="vocab_size > 0"):
        xgr2.get_bitmask_shape(1, 0)
    with pytest.raises(ValueError, match="batch_size >= 0"):
        xgr2.get_bitmask_shape(-1, 10)
    with pytest.raises(ValueError):
        xgr2.allocate_token_bitmask(-1, 10)
    with pytest.raises(ValueError, match="too few for vocab_size 33"):
        xgr2.bitmask_to_bool(np.zeros(1, np.int32), 33)


# ---------------------------------------------------------------------------------------------
# Crash checks in a subprocess

CRASH_SCRIPT_PRELUDE = """
import pickle, sys
import numpy as np
import xgr2

OUTCOMES = []

def run(name, fn, must_raise=True):
    print(">", name, flush=True)
    try:
        fn()
        outcome = "ok"
    except Exception as e:
        outcome = type(e).__name__
    print("<", name, outcome, "must_raise" if must_raise else "may_pass", flush=True)

G = xgr2.Grammar.from_ebnf
T = xgr2.TokenizerInfo
"""

CRASH_SCRIPT_BODY = """
for i, text in enumerate(BAD_GRAMMARS):
    run(f"grammar_{i}", lambda: G(text))
    run(f"compile_{i}", lambda: xgr2.compile(text, T([b"a"])))
run("unknown_root", lambda: G('root ::= "a"', root="nope"))
run("long_line_error", lambda: G("root ::= " + '"a" ' * 200000 + "nope"))
run("long_literal_1mb", lambda: G('root ::= "' + "a" * 1000000 + '"'))
run("long_comment_1mb", lambda: G("# " + "x" * 1000000 + '\\nroot ::= "a"'), must_raise=False)
run("long_choice", lambda: G("root ::= " + " | ".join('"%d"' % i for i in range(50000))), must_raise=False)
run("nul_only", lambda: G("\\x00"))
run("nul_in_name", lambda: G('ro\\x00ot ::= "a"'))
run("nul_bare", lambda: G('root ::= "a" \\x00 "b"'))
run("nul_in_string", lambda: str(G('root ::= "a\\x00b"')), must_raise=False)
run("nul_in_class", lambda: str(G("root ::= [\\x00-a]")), must_raise=False)
run("lone_surrogate", lambda: G('root ::= "\\ud800"'))
run("lone_surrogate_root", lambda: G('root ::= "a"', root="\\ud800"))
run("grammar_bytes", lambda: G(b'root ::= "a"'))
run("grammar_int", lambda: G(123))
run("compile_int", lambda: xgr2.compile(123, T([b"a"])))
run("compile_none_tok", lambda: xgr2.compile('root ::= "a"', None))

run("vocab_empty", lambda: T([]))
run("vocab_empty_padded", lambda: T([], vocab_size=64))
run("vocab_size_small", lambda: T([b"a", b"b"], vocab_size=1))
run("vocab_size_negative", lambda: T([b"a"], vocab_size=-1))
run("vocab_size_huge", lambda: T([b"a"], vocab_size=2**40))
run("stop_out_of_range", lambda: T([b"a"], stop_token_ids=[1]))
run("stop_negative", lambda: T([b"a"], stop_token_ids=[-1]))
run("stop_huge", lambda: T([b"a"], stop_token_ids=[2**40]))
run("special_negative", lambda: T([b"a"], special_token_ids=[-7]))
run("special_huge", lambda: T([b"a"], special_token_ids=[-(2**63)]))
run("vocab_non_bytes", lambda: T([b"a", 1]))
run("vocab_type_unknown", lambda: T([b"a"], vocab_type="wordpiece"))
run("hf_unsupported", lambda: T.from_huggingface(object()))
run("json_missing", lambda: T.from_tokenizer_json("/nonexistent/tokenizer.json"))
for vocab_type in ("raw", "byte_level", "byte_fallback"):
    def invalid_utf8(vocab_type=vocab_type):
        tok = T([b"\\xff", b"\\xc3", b"a\\xff", b"\\xe6\\x97", b"a", b"", b"\\xed\\xa0\\x80", "\\ud800"],
                vocab_type=vocab_type, vocab_size=70)
        tok.decoded_vocab
        for grammar in ('root ::= [^b]*', 'root ::= "a"+', 'root ::= "\\u65e5"'):
            s = xgr2.compile(grammar, tok).initial_state()
            s.bitmask()
            for t in range(70):
                s.try_advance(t)
            s.jump_forward_bytes()
    run("invalid_utf8_vocab_" + vocab_type, invalid_utf8, must_raise=False)
run("huge_token", lambda: xgr2.compile('root ::= "x"*', T([b"x" * 200000, b"x"])).initial_state().bitmask(),
    must_raise=False)

tok = T([b"a", b"b", b"ab", b"</s>", b"<s>"], vocab_size=40, stop_token_ids=[3], special_token_ids=[4])
s = xgr2.compile('root ::= "a" "b"*', tok).initial_state()
for method in ("advance", "try_advance", "accepts"):
    for token in (-1, 40, 2**31 - 1, 2**31, 2**40, -(2**40), 2**100, 1.5, None, "a"):
        run(f"{method}({token!r})", lambda: getattr(s, method)(token))
run("advance_rejected", lambda: s.advance(1))
run("advance_text_rejected", lambda: s.advance_text("b"))
run("advance_bytes_rejected", lambda: s.advance_bytes(b"\\xff\\x00"))
run("advance_text_surrogate", lambda: s.advance_text("\\ud800"))
run("advance_text_nul", lambda: s.advance_text("\\x00"))
run("advance_text_long", lambda: s.advance_text("a" + "b" * 100000), must_raise=False)
done = s.advance(0).advance(3)
run("advance_terminated", lambda: done.advance(1))
run("advance_stop_terminated", lambda: done.advance(3))
run("advance_text_terminated", lambda: done.advance_text("b"))
run("pickle_state", lambda: pickle.dumps(s))
run("pickle_compiled", lambda: pickle.loads(pickle.dumps(xgr2.compile('root ::= "a"', tok))), must_raise=False)

W = 2
def ro():
    a = np.zeros((1, W), np.int32)
    a.flags.writeable = False
    return a
bad_arrays = {
    "int64": np.zeros((1, W), np.int64), "float32": np.zeros((1, W), np.float32),
    "uint32": np.zeros((1, W), np.uint32), "big_endian": np.zeros((1, W), ">i4"),
    "narrow": np.zeros((1, 1), np.int32), "wide": np.zeros((1, 3), np.int32),
    "3d": np.zeros((1, 1, W), np.int32), "0d": np.zeros((), np.int32),
    "noncontig": np.zeros((2, 2 * W), np.int32)[:, ::2], "fortran": np.asfortranarray(np.zeros((3, W), np.int32)),
    "read_only": ro(), "list": [[0, 0]], "none": None, "empty_rows": np.zeros((0, W), np.int32),
    "empty_width": np.zeros((1, 0), np.int32), "object": np.array([[None, None]], dtype=object),
}
for name, arr in bad_arrays.items():
    run("fill_" + name, lambda: s.fill_bitmask(arr))
good = np.zeros((2, W), np.int32)
for row in (2, -1, 2**40, 2**70, -(2**70), 1.5, None):
    run(f"fill_row_{row!r}", lambda: s.fill_bitmask(good, row))
run("bitmask_to_bool_narrow", lambda: xgr2.bitmask_to_bool(np.zeros(1, np.int32), 64))
run("shape_bad", lambda: xgr2.get_bitmask_shape(1, 0))
print("DONE", flush=True)
"""

ALLOWED_ERRORS = {
    "GrammarError",
    "TokenizerError",
    "InvalidTokenError",
    "TokenRejectedError",
    "TypeError",
    "ValueError",
    "IndexError",
    "UnicodeEncodeError",
}


def _run_script(script: str, cwd) -> subprocess.CompletedProcess:
    # cwd away from the repository root: `-c` puts the cwd on sys.path, and the source tree's
    # xgr2/ (without the built extension) would shadow the installed package.
    return subprocess.run(
        [sys.executable, "-X", "faulthandler", "-c", script],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "PYTHONHASHSEED": "0"},
    )


def _check_outcomes(proc: subprocess.CompletedProcess) -> None:
    lines = proc.stdout.splitlines()
    started = [line[2:] for line in lines if line.startswith("> ")]
    assert proc.returncode == 0 and "DONE" in lines, (
        f"the interpreter died (returncode {proc.returncode}) while running case "
        f"{started[-1] if started else None!r}\nstderr:\n{proc.stderr[-3000:]}"
    )
    bad = []
    for line in lines:
        if line.startswith("< "):
            _, name, outcome, rule = line.split(" ")
            if outcome == "ok" and rule == "must_raise":
                bad.append(f"{name}: no error")
            elif outcome != "ok" and outcome not in ALLOWED_ERRORS:
                bad.append(f"{name}: {outcome}")
    assert not bad, "unexpected outcomes:\n" + "\n".join(bad)


def test_bad_inputs_never_crash_the_interpreter(tmp_path):
    grammars = [text for _, text, _ in BAD_GRAMMARS]
    script = CRASH_SCRIPT_PRELUDE + f"BAD_GRAMMARS = {grammars!r}\n" + textwrap.dedent(CRASH_SCRIPT_BODY)
    assert len(script) < 100_000  # one argv string must stay under the kernel's 128 KiB limit
    _check_outcomes(_run_script(script, tmp_path))


@pytest.mark.parametrize("op", ["?", "*", "+", "{1}", "{0,2}"])
def test_long_chain_of_postfix_operators_does_not_crash(tmp_path, op):
    """`"a"????...` nests one repetition per operator; 100,000 of them overflowed the C stack.

    Either a GrammarError or a working grammar is fine; a dead interpreter is not.
    """
    script = CRASH_SCRIPT_PRELUDE + textwrap.dedent(f"""
        def chain():
            g = G('root ::= "a"' + {op!r} * 100000)
            str(g)
            tok = T([b"a", b"aa"])
            xgr2.compile(g, tok).initial_state().advance(0).bitmask()
        run("postfix_chain", chain, must_raise=False)
        print("DONE", flush=True)
    """)
    _check_outcomes(_run_script(script, tmp_path))


@pytest.mark.parametrize("text", [
    '{"description": "00\\\x8000"}',           # a backslash before U+0080 in a JSON string
    '{"description": "\\\u00e9"}',
])
def test_error_messages_about_non_ascii_input_are_library_errors(text):
    # Found by benchmarks/fuzz_frontends.py: the message quoted one byte of a UTF-8
    # character and its conversion to str raised RuntimeError instead of SchemaError.
    with pytest.raises(xgr2.SchemaError, match="escape"):
        xgr2.Grammar.from_json_schema(text)


def test_a_schema_whose_merges_multiply_is_a_bounded_error():
    # SchemaStore's Web-Types schema (draft 4): its recursive contribution types, each an
    # allOf of other recursive types, once took every byte of memory; now a SchemaError at
    # the documented bound (docs/limits.md), after a few seconds.
    schema = (Path(__file__).parent / "data" / "web_types_schema.json").read_text()
    with pytest.raises(xgr2.SchemaError, match="merged subschemas|million JSON values"):
        xgr2.Grammar.from_json_schema(schema)


def test_merges_that_multiply_through_properties_are_a_bounded_error():
    # An acyclic allOf chain whose recursion goes through properties: merged copies share
    # their children, so 26 definitions compile (0.6 s); 30 reach the bound on values
    # copied or compared (not the one on copies kept) in under a second.
    n = 30
    defs = {}
    for i in range(n):
        parts = [{"$ref": f"#/$defs/t{j}"} if j < n else {"type": "object"} for j in (i + 1, i + 2, i + 3)]
        parts.append({"type": "object", "properties": {f"p{i}": {"$ref": f"#/$defs/t{(7 * i + 3) % n}"},
                                                       f"q{i}": {"enum": ["v0v0v0"]}}})
        defs[f"t{i}"] = {"allOf": parts}
    with pytest.raises(xgr2.SchemaError, match="million JSON values"):
        xgr2.Grammar.from_json_schema({"$defs": defs, "$ref": "#/$defs/t0"})


def test_a_negation_that_flattens_its_own_conditional_again_is_an_error_not_a_crash():
    # D1's `if` holds D0, whose oneOf negates D1, whose `if` is flattened again ...: the
    # nesting of merges is bounded (a stack overflow before, found by a review's fuzzer).
    schema = {"properties": {"a": {"patternProperties": {"^c$": {"$ref": "#/$defs/D1"}}}},
              "$defs": {"D0": {"const": {"b": "x"}, "oneOf": [{"enum": [{}, {"b": "x"}, {"c": None}]},
                                                               {"$ref": "#/$defs/D1"}]},
                        "D1": {"if": {"items": {"type": "integer"}, "$ref": "#/$defs/D0"},
                               "then": {"$ref": "#/$defs/D1"}, "else": {"pattern": "^x"}}}}
    with pytest.raises(xgr2.SchemaError, match="nested more than"):
        xgr2.Grammar.from_json_schema(schema, strict=False, any_whitespace=False)


DEEP_INPUTS = [
    ("ebnf", lambda: xgr2.Grammar.from_ebnf("root ::= " + "(" * 999 + '"a"' + ")" * 999)),
    ("regex", lambda: xgr2.Grammar.from_regex("(" * 999 + "a" + ")" * 999)),
    ("refs", lambda: xgr2.Grammar.from_json_schema(
        {"$ref": "r0.json"},
        resources={f"r{i}.json": {"type": "array", "items": {"$ref": f"r{i + 1}.json"}} for i in range(1200)})),
    ("allOf", lambda: xgr2.Grammar.from_json_schema(
        {"$defs": {f"d{i}": {"allOf": [{"$ref": f"#/$defs/d{i + 1}"}, {"minLength": 1}]} for i in range(900)}
         | {"d900": {"type": "string"}}, "$ref": "#/$defs/d0"})),
]


@pytest.mark.skipif(sys.platform not in ("linux", "darwin"), reason="the stack's bounds are read on Linux and macOS only")
@pytest.mark.parametrize("stack_kib", [256, 1024])
@pytest.mark.parametrize("name,build", DEEP_INPUTS, ids=[name for name, _ in DEEP_INPUTS])
def test_deep_input_on_a_small_thread_stack_is_an_error_not_a_crash(name, build, stack_kib):
    # The depth limits assume a stack of several MiB; on a thread with less, each front
    # end stops where the stack is nearly full (support/stack.h) with its own error.
    import threading

    outcome = []

    def run():
        try:
            build()
            outcome.append("compiled")
        except xgr2.Xgr2Error as e:
            outcome.append(str(e))

    old = threading.stack_size(stack_kib << 10)
    try:
        thread = threading.Thread(target=run)
        thread.start()
        thread.join()
    finally:
        threading.stack_size(old)
    assert len(outcome) == 1, outcome
    assert outcome[0] == "compiled" or "nested" in outcome[0], outcome[0]
    if stack_kib == 256 and name != "allOf":
        assert "stack" in outcome[0], outcome[0]

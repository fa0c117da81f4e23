"""The compile cache (LRU, byte limit, thread-safe, statistics) and pickled compiled grammars."""

import pickle
import re
import threading

import numpy as np
import pytest
import xgr2
from grammars import EBNF


def test_cache_hits_misses_and_identity(byte_tokenizer_info):
    compiler = xgr2.Compiler(byte_tokenizer_info)
    a = compiler.compile(EBNF["arith"])
    assert compiler.compile(xgr2.Grammar.from_ebnf(EBNF["arith"])) is a  # same normalized text
    assert compiler.compile(EBNF["arith"], precompute="all") is not a  # options are part of the key
    info = compiler.cache_info()
    assert (info.hits, info.misses, info.entries) == (1, 2, 2)
    assert 0 < info.bytes <= info.limit_bytes


def test_structural_tags_are_found_by_their_text(byte_tokenizer_info):
    compiler = xgr2.Compiler(byte_tokenizer_info)

    def spec(name):
        return {"type": "structural_tag", "format": {"type": "triggered_tags", "triggers": ["<f="], "tags": [
            {"begin": f"<f={name}>", "content": {"type": "json_schema", "json_schema": {"type": "integer"}},
             "end": "</f>"}]}}

    a = compiler.compile(xgr2.Grammar.from_structural_tag(spec("add")))
    assert compiler.compile(xgr2.Grammar.from_structural_tag(spec("add"))) is a  # built again: same text
    b = compiler.compile(xgr2.Grammar.from_structural_tag(spec("sub")))
    assert b is not a
    assert b.initial_state().advance_text("<f=sub>12</f>").can_terminate
    assert a.initial_state().try_advance_bytes(b"<f=sub>") is None
    info = compiler.cache_info()
    assert (info.hits, info.misses) == (1, 2)


def test_cache_respects_byte_limit_over_thousands_of_grammars(byte_tokenizer_info):
    limit = 200_000
    compiler = xgr2.Compiler(byte_tokenizer_info, cache_limit_bytes=limit)
    for i in range(2000):
        compiled = compiler.compile(f'root ::= "k{i}" [a-z]{{1,{1 + i % 7}}} ("," [0-9]+)*')
        info = compiler.cache_info()  # the limit holds after every compile...
        assert info.bytes <= limit or info.entries == 1
        if i % 3 == 0:  # ...even though node-mask caches grow after insertion
            compiled.initial_state().advance_text(f"k{i}").bitmask()
    info = compiler.cache_info()
    assert info.misses == 2000 and 0 < info.entries < 2000 and info.bytes <= limit


def test_cache_can_be_disabled_and_cleared(byte_tokenizer_info):
    off = xgr2.Compiler(byte_tokenizer_info, cache_limit_bytes=0)
    assert off.compile('root ::= "a"') is not off.compile('root ::= "a"')
    on = xgr2.Compiler(byte_tokenizer_info)
    on.compile('root ::= "a"')
    on.clear_cache()
    assert on.cache_info().entries == 0
    with pytest.raises(ValueError):
        xgr2.Compiler(byte_tokenizer_info, cache_limit_bytes=-1)


def test_cache_is_thread_safe(byte_tokenizer_info):
    compiler = xgr2.Compiler(byte_tokenizer_info, cache_limit_bytes=1 << 20)
    texts = [f'root ::= "t{i % 10}" [0-9]*' for i in range(200)]
    results, errors = {}, []

    def work(offset):
        try:
            for k in range(offset, len(texts), 4):
                results[k] = compiler.compile(texts[k])
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(o,)) for o in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    info = compiler.cache_info()
    assert info.hits + info.misses == len(texts) and info.entries == 10
    for k, compiled in results.items():
        assert compiled.initial_state().advance_text(f"t{k % 10}7").can_terminate


def test_pickled_compiled_grammar_gives_the_same_masks(byte_fallback_tokenizer_info):
    compiled = xgr2.compile(EBNF["json"], byte_fallback_tokenizer_info, precompute="all")
    restored = pickle.loads(pickle.dumps(compiled))
    assert restored.precompute == "all" and restored.vocab_size == compiled.vocab_size
    a, b = compiled.initial_state(), restored.initial_state()
    for ch in '{"k": [1, "x"]}':
        assert np.array_equal(a.bitmask(), b.bitmask())
        a, b = a.advance_text(ch), b.advance_text(ch)
    assert a.can_terminate and b.can_terminate


def test_pickle_version_mismatch_is_a_clear_error(byte_tokenizer_info):
    compiled = xgr2.compile('root ::= "a"', byte_tokenizer_info)
    fn, args = compiled.__reduce__()
    with pytest.raises(xgr2.Xgr2Error, match="format version 999"):
        fn(999, *args[1:])


def test_tokenizer_info_pickles(llama3_tokenizer_info):
    restored = pickle.loads(pickle.dumps(llama3_tokenizer_info))
    assert restored.decoded_vocab == llama3_tokenizer_info.decoded_vocab
    assert restored.stop_token_ids == llama3_tokenizer_info.stop_token_ids
    assert restored.vocab_type == "byte_level"


def test_rule_automata_shared_across_grammars_keep_inlined_rules_apart(byte_tokenizer_info):
    # Rule automata are shared process-wide by a key of the rule's body. An inlined
    # empty rule once wrote the same key words as a reference to the first rule, so
    # `"a" e | "b" r` and `"a" r | "b" e` shared one automaton: whichever compiled second
    # took the other's language (a Hypothesis run of test_regex_dfa.py hit it).
    tail = '\ne ::= ""\nr ::= "x" r | "y"'
    languages = {'root ::= "a" e | "b" r': r"a|bx*y", 'root ::= "a" r | "b" e': r"ax*y|b"}
    texts = ["", "a", "b", "ay", "by", "axy", "bxy", "ax", "bx"]
    for _ in range(2):  # each grammar compiled after the other
        for text, pattern in languages.items():
            start = xgr2.Compiler(byte_tokenizer_info, cache_limit_bytes=0).compile(text + tail).initial_state()
            for s in texts:
                state = start.try_advance_bytes(s.encode())
                got = state is not None and state.can_terminate
                assert got == (re.fullmatch(pattern, s) is not None), (text, s)


def test_clearing_shared_automata_rebuilds_the_same_grammar(byte_tokenizer_info):
    # clear_shared_automata makes the next grammars determinize every rule afresh (a
    # cold compile); grammars built before and after must recognize the same language.
    schema = {"type": "object", "properties": {"a": {"type": "integer", "minimum": 3}, "b": {"type": "string"}},
              "additionalProperties": {"type": "boolean"}}
    texts = ['{"a": 3}', '{"a": 2}', '{"b": "x", "c": true}', '{"a": 12, "b": "\\u0062", "b\\u00e9": false}',
             '{"b\\u00e9": 1}', '{"\\u00e9": true}', '{"c\\"": 1}']
    def accepted():
        start = xgr2.Compiler(byte_tokenizer_info, cache_limit_bytes=0).compile(
            xgr2.Grammar.from_json_schema(schema)).initial_state()
        out = []
        for t in texts:
            state = start.try_advance_bytes(t.encode())
            out.append(state is not None and state.can_terminate)
        return out
    import json
    import jsonschema

    expected = [jsonschema.Draft202012Validator(schema).is_valid(json.loads(t)) for t in texts]
    before = accepted()
    xgr2.clear_shared_automata()
    assert accepted() == before == expected


def test_schema_grammars_are_cached_by_schema_and_options(byte_tokenizer_info):
    # A JSON-Schema grammar's cache key is its schema text and options (printing a large
    # grammar for a text key cost milliseconds): the same schema hits, other options miss,
    # and the printed form of the grammar is a grammar of its own (same language).
    schema = {"type": "object", "properties": {"n": {"type": "integer", "maximum": 9}}, "required": ["n"]}
    compiler = xgr2.Compiler(byte_tokenizer_info)
    first = compiler.compile(xgr2.Grammar.from_json_schema(schema))
    assert compiler.compile(xgr2.Grammar.from_json_schema(schema)) is first
    compact = compiler.compile(xgr2.Grammar.from_json_schema(schema, any_whitespace=False))
    printed = compiler.compile(str(xgr2.Grammar.from_json_schema(schema)))
    assert compact is not first and printed is not first
    assert compiler.cache_info().hits == 1
    for compiled, text, ok in [(first, '{ "n" : 9 }', True), (compact, '{ "n": 9}', False), (compact, '{"n":9}', True),
                               (printed, '{ "n" : 9 }', True), (printed, '{"n": 10}', False)]:
        state = compiled.initial_state().try_advance_bytes(text.encode())
        assert (state is not None and state.can_terminate) == ok, text

"""TagDispatch: free text that dispatches at the first completed tag.

The oracle (``Oracle``) is an independent reference of the semantics in
docs/tag_dispatch.md, written with ``bytes.find``: in free text, the first completed
occurrence of any tag, stop string or excluded string decides (the earliest end; at the
same end, the longest string); free text must be valid UTF-8. Sub-grammars are small
languages with Python membership and prefix predicates. It answers both "is this a whole
document" and "is this a prefix of one", so byte masks (one token per byte) are checked
against it at every position, and the Llama-3 tokenizer's masks, with tags split across
tokens, against try_advance.
"""

import random
import re

import numpy as np
import pytest

import xgr2
from parsing import accepts
from test_mask_oracle import check_along

BYTES = xgr2.TokenizerInfo([bytes([b]) for b in range(256)] + [b"<eos>"], stop_token_ids=[256])


class Finite:
    """A finite language (a sub-grammar ``a | b | ...``)."""

    def __init__(self, *words):
        self.words = [w.encode() for w in words]
        self.ebnf = " | ".join('"' + w + '"' for w in words)

    def full(self, s):
        return s in self.words

    def prefix(self, s):
        return any(w.startswith(s) for w in self.words)


class Braced:
    """``"{" [a-z]* "}"``: an infinite sub-grammar."""

    ebnf = '"{" [a-z]* "}"'

    def full(self, s):
        return re.fullmatch(rb"\{[a-z]*\}", s) is not None

    def prefix(self, s):
        return re.fullmatch(rb"(\{[a-z]*\}?)?", s) is not None


def utf8_ok(data, complete):
    try:
        data.decode("utf-8") if complete else _incremental_decode(data)
        return True
    except UnicodeDecodeError:
        return False


def _incremental_decode(data):
    import codecs

    codecs.getincrementaldecoder("utf-8")().decode(data, final=False)


class Oracle:
    def __init__(self, tags, stops=(), excludes=(), stop_eos=True, loop=True, at_least_one=False):
        self.tags = [(t.encode(), sub) for t, sub in tags]
        self.patterns = [(t, "tag", sub) for t, sub in self.tags]
        self.patterns += [(s.encode(), "stop", None) for s in stops]
        self.patterns += [(x.encode(), "exclude", None) for x in excludes]
        self.stop_eos, self.loop, self.at_least_one = stop_eos, loop, at_least_one
        self.spec = dict(tags=tags, stops=stops, excludes=excludes, stop_eos=stop_eos, loop=loop,
                         at_least_one=at_least_one)

    def first(self, text, i):
        """(end, kind, sub) of the first completed string in text[i:], or None."""
        best = None
        for p, kind, sub in self.patterns:
            k = text.find(p, i)
            if k >= 0 and (best is None or k + len(p) < best[0] or
                           (k + len(p) == best[0] and len(p) > best[3])):
                best = (k + len(p), kind, sub, len(p))
        return best

    def run(self, text, i, count, whole):
        """Whether text[i:] (in free text, after `count` dispatches) is a whole
        document (`whole`) or a prefix of one."""
        may_end = count > 0 or not self.at_least_one
        hit = self.first(text, i)
        if hit is None:
            if not utf8_ok(text[i:], whole):
                return False
            # A partial document in free text can always be finished (a character that
            # is in no string, then a stop string or a tag and its sub-grammar).
            return (self.stop_eos and may_end) if whole else True
        end, kind, sub, length = hit
        if not utf8_ok(text[i:end - length], True):
            return False
        if kind == "exclude":
            return False
        if kind == "stop":
            return may_end and end == len(text)
        rest = text[end:]
        if not whole and sub.prefix(rest):
            return True
        for k in range(len(rest) + 1):
            if sub.full(rest[:k]):
                if not self.loop:
                    if k == len(rest):
                        return True
                elif self.run(text, end + k, count + 1, whole):
                    return True
        return False

    def accepts(self, text):
        return self.run(text, 0, 0, True)

    def viable(self, text):
        return self.run(text, 0, 0, False)

    def ebnf(self):
        subs = {}
        pairs = []
        for t, sub in self.spec["tags"]:
            name = subs.setdefault(id(sub), (f"sub{len(subs)}", sub))[0]
            pairs.append(f"({quote(t)}, {name})")
        opts = [f"stop_eos={str(self.stop_eos).lower()}", f"loop_after_dispatch={str(self.loop).lower()}"]
        if self.spec["stops"]:
            opts.append("stop_str=(" + ", ".join(quote(s) for s in self.spec["stops"]) + ",)")
        if self.spec["excludes"]:
            opts.append("excludes=(" + ", ".join(quote(s) for s in self.spec["excludes"]) + ",)")
        if self.at_least_one:
            opts.append("at_least_one=true")
        text = "root ::= TagDispatch(" + ", ".join(pairs + opts) + ")\n"
        for name, sub in subs.values():
            text += f"{name} ::= {sub.ebnf}\n"
        return text


def quote(s):
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


ABCD, EFG, BRACED = Finite("abcd"), Finite("efg"), Braced()
SPECS = {
    # XGrammar's documented example.
    "two_tags": Oracle([("tag1", ABCD), ("tag2", EFG)]),
    # Tags that overlap: failure links (abab / bac), one tag a suffix of another at the
    # same end ("<fn>" wins over "n>"), a sub-grammar with several lengths.
    "overlap": Oracle([("abab", Finite("x", "xy")), ("bac", BRACED), ("<fn>", EFG), ("n>", Finite("q"))]),
    # Stop strings end it; no end of text in free text.
    "stops": Oracle([("<f>", BRACED)], stops=["</s>", "END"], stop_eos=False),
    # At least one call, only one, excluded strings in free text.
    "one_call": Oracle([("<call>", BRACED), ("<c2>", EFG)], excludes=["bad", "</a"], loop=False,
                       at_least_one=True),
    # At least one call, then any number, ended by a stop string.
    "at_least_one_loop": Oracle([("[[", Finite("a", "ab"))], stops=["]]"], stop_eos=False, at_least_one=True),
    # Multi-byte characters in tags and free text.
    "utf8": Oracle([("→f", BRACED), ("«é»", Finite("ü"))], stops=["⏹"], excludes=["☠"]),
}


def alphabet(oracle):
    chars = set("z ")
    for p, _, sub in oracle.patterns:
        chars.update(p.decode())
    return sorted(chars)


def random_texts(oracle, rng, count):
    """Random documents: pieces of tags, stop strings, sub-grammar words and characters."""
    pieces = []
    for p, kind, sub in oracle.patterns:
        s = p.decode()
        pieces += [s] * 3 + [s[:k] for k in range(1, len(s))]
        if sub is not None:
            words = [w.decode() for w in sub.words] if isinstance(sub, Finite) else ["{ab}", "{}", "{a"]
            pieces += [s + w for w in words] * 2
    pieces += alphabet(oracle)
    calls = [p.decode() + rng_word(sub) for p, kind, sub in oracle.patterns if kind == "tag"]
    stops = [p.decode() for p, kind, _ in oracle.patterns if kind == "stop"]
    for i in range(count):
        if i % 2:  # shaped like a document: free text and calls, then maybe a stop string
            parts = []
            for _ in range(rng.randrange(0, 4)):
                parts += [rng.choice(pieces) if rng.random() < 0.5 else "", rng.choice(calls)]
            parts.append(rng.choice(pieces) if rng.random() < 0.5 else "")
            if stops and rng.random() < 0.7:
                parts.append(rng.choice(stops))
        else:
            parts = [rng.choice(pieces) for _ in range(rng.randrange(0, 7))]
        yield "".join(parts).encode()


def rng_word(sub):
    return sub.words[0].decode() if isinstance(sub, Finite) else "{ab}"


def compiled(oracle, tok=BYTES):
    return xgr2.compile(xgr2.Grammar.from_ebnf(oracle.ebnf()), tok)


@pytest.mark.parametrize("name", sorted(SPECS))
def test_documents_and_prefixes_match_the_oracle(name):
    oracle = SPECS[name]
    start = compiled(oracle).initial_state()
    rng = random.Random(name)
    accepted = rejected = 0
    for text in random_texts(oracle, rng, 600):
        expected = oracle.accepts(text)
        assert accepts(start, text) == expected, (text, expected)
        accepted += expected
        rejected += not expected
        for k in range(len(text) + 1):
            assert (start.try_advance_bytes(text[:k]) is not None) == oracle.viable(text[:k]), (text[:k], text)
    assert accepted > 50 and rejected > 50, (accepted, rejected)  # the sample tests both sides


@pytest.mark.parametrize("name", sorted(SPECS))
def test_byte_masks_match_the_oracle(name):
    """Advance byte by byte: the mask allows byte b exactly when the oracle says the text
    plus b is a prefix of a document, and the stop token exactly when it is one."""
    oracle = SPECS[name]
    start = compiled(oracle).initial_state()
    rng = random.Random(name + "masks")
    texts = [t for t in random_texts(oracle, rng, 200) if oracle.viable(t)][:40]
    for text in texts:
        state = start
        for k in range(len(text) + 1):
            mask = xgr2.bitmask_to_bool(state.bitmask(), BYTES.vocab_size)
            prefix = text[:k]
            expected = [oracle.viable(prefix + bytes([b])) for b in range(256)]
            wrong = [b for b in range(256) if mask[b] != expected[b]]
            assert not wrong, (prefix, [(bytes([b]), expected[b]) for b in wrong[:6]])
            assert mask[256] == oracle.accepts(prefix), prefix
            if k < len(text):
                state = state.advance(text[k])


def test_xgrammar_documented_cases():
    start = compiled(SPECS["two_tags"]).initial_state()
    for text, ok in [("tag1abcd", True), ("tag1abcdtag2efg", True), ("tag1abcdqqqqtag2efg", True),
                     ("tag1abc", False), ("tag1abce", False), ("ttag1abd", False), ("tag", True), ("", True)]:
        assert accepts(start, text.encode()) == ok, text


def test_xgrammar_documented_multiline_form():
    """XGrammar's EBNF page: options on their own lines, an empty excludes tuple."""
    g = xgr2.Grammar.from_ebnf('root ::= TagDispatch(\n    ("<tool_call>", tool_call_body),\n    ("<code>", code_body),\n'
                               '    loop_after_dispatch=true,\n    excludes=()\n)\n'
                               'tool_call_body ::= "{" [^}]* "}"\ncode_body ::= "```" [^`]* "```"')
    start = xgr2.compile(g, BYTES).initial_state()
    assert accepts(start, b'I will call a tool. <tool_call>{"name": "get_weather"}</tool_call> Done.')
    assert accepts(start, b"no tool call at all")
    assert accepts(start, b"<code>```print(1)```<tool_call>{}")
    assert not accepts(start, b"<code>print(1)")


def test_excluded_outer_stop_tag():
    """XGrammar's pattern: an excluded string that the enclosing rule then requires."""
    g = xgr2.Grammar.from_ebnf('root ::= body "</answer>"\n'
                               'body ::= TagDispatch(("<tool_call>", call), excludes=("</answer>",))\n'
                               'call ::= "{" [^}]* "}"')
    start = xgr2.compile(g, BYTES).initial_state()
    assert accepts(start, b"hi <tool_call>{x} ok</answer>")
    assert accepts(start, b"</answer>")
    assert not accepts(start, b"a</answer>b</answer>")
    assert not accepts(start, b"<tool_call>{x}")
    # A partial tag is still free text.
    assert accepts(start, b"<tool_ca</answer>")


def test_partial_tag_is_free_text_but_a_completed_tag_dispatches():
    start = compiled(SPECS["two_tags"]).initial_state()
    assert accepts(start, b"tag")  # ends inside a partial tag
    assert accepts(start, b"ta tag xtag1abcd")
    assert start.try_advance_bytes(b"tag1") is not None and not accepts(start, b"tag1")
    # After a completed tag only its sub-grammar may follow.
    after = start.advance_bytes(b"xx tag1")
    allowed = xgr2.bitmask_to_bool(after.bitmask(), BYTES.vocab_size)
    assert np.flatnonzero(allowed).tolist() == [ord("a")]


@pytest.mark.parametrize("text,message", [
    ('root ::= TagDispatch(("<a>", s), ("<a>", s))\ns ::= "x"', "listed twice"),
    ('root ::= TagDispatch(("<a>", s), stop_str=("<a>",))\ns ::= "x"', "listed twice"),
    ('root ::= TagDispatch(("", s))\ns ::= "x"', "a tag is empty"),
    ('root ::= TagDispatch(("<ab>", s), ("b", s))\ns ::= "x"', "can never complete"),
    ('root ::= TagDispatch(("<ab>", s), excludes=("<a",))\ns ::= "x"', "can never complete"),
    ('root ::= TagDispatch(("<a>", s), stop_eos=false)\ns ::= "x"', "never ends"),
    ('root ::= TagDispatch(at_least_one=true)', "needs a tag"),
    ('root ::= TagDispatch(("<a>", s), loop_after_dispatch=1)\ns ::= "x"', "true or false"),
    ('root ::= TagDispatch(("<a>", s), stop_str=(1,))\ns ::= "x"', "strings only"),
    ('root ::= TagDispatch(("<a>"))', "pairs"),
    ('root ::= TagDispatch(("<a>", "s"))', "pairs"),
    ('root ::= TagDispatch(("<a>", missing))', "undefined rule `missing`"),
    ('root ::= TagDispatch(("' + "x" * 20000 + '", s))\ns ::= "x"', "over the limit"),
])
def test_malformed_tag_dispatch_raises_grammar_error(text, message):
    with pytest.raises(xgr2.GrammarError, match=re.escape(message)):
        xgr2.Grammar.from_ebnf(text)


@pytest.mark.parametrize("name", sorted(SPECS))
def test_printed_grammar_parses_back_and_pickles(name):
    import pickle

    g = xgr2.Grammar.from_ebnf(SPECS[name].ebnf())
    assert str(xgr2.Grammar.from_ebnf(str(g))) == str(g)
    c = pickle.loads(pickle.dumps(xgr2.compile(g, BYTES)))
    rng = random.Random(name)
    start, again = compiled(SPECS[name]).initial_state(), c.initial_state()
    for text in random_texts(SPECS[name], rng, 100):
        assert accepts(start, text) == accepts(again, text)


def test_dispatch_nested_in_a_larger_grammar():
    """A TagDispatch is an expression: it can sit inside a sequence and a repetition."""
    g = xgr2.Grammar.from_ebnf('root ::= "[" TagDispatch(("<", a), stop_str=("]",), stop_eos=false) "!"\n'
                               'a ::= [0-9]+ ">"')
    start = xgr2.compile(g, BYTES).initial_state()
    assert accepts(start, b"[hi <12> x]!")
    assert not accepts(start, b"[hi <12> x!")
    assert not accepts(start, b"[<x>]!")


LLAMA_DOCS = [
    ("Sure, let me check.<function=get_weather>{\"city\": \"Paris\"}</function> and "
     "<function=get_time>{}</function> done <functio"),
    "No tool here, just <funct text and <function=get_time>{}</function>",
]


def test_llama3_masks_with_tags_split_across_tokens(llama3_tokenizer_info, llama3_hf_tokenizer):
    tok = llama3_tokenizer_info
    g = xgr2.Grammar.from_ebnf(
        'root ::= TagDispatch(("<function=get_weather>", weather), ("<function=get_time>", time))\n'
        'weather ::= "{\\"city\\": \\"" [A-Za-z ]+ "\\"}</function>"\n'
        'time ::= "{}</function>"')
    c = xgr2.compile(g, tok)
    rng = random.Random(0)
    split_tags = 0
    for doc in LLAMA_DOCS:
        ids = llama3_hf_tokenizer.encode(doc, add_special_tokens=False)
        bounds = set(np.cumsum([len(tok.decoded_vocab[t]) for t in ids]).tolist())
        for m in re.finditer(rb"<function=get_(weather|time)>", doc.encode()):
            split_tags += any(m.start() < b < m.end() for b in bounds)
        check_at = set(rng.sample(range(len(ids) + 1), min(8, len(ids) + 1)))
        # And every state inside a partial tag (free text after "<", "<funct", ...), whose
        # masks take the slice of the free text that the next byte may go back to.
        ends = np.cumsum([0] + [len(tok.decoded_vocab[t]) for t in ids]).tolist()
        tag = b"<function=get_"
        check_at |= {k for k, e in enumerate(ends)
                     if any(doc.encode()[:e].endswith(tag[:n]) for n in range(1, len(tag)))}
        state = check_along(c.initial_state(), ids, tok, rng, check_at)
        assert state.can_terminate
    assert split_tags >= 2  # the tokenizer really splits tags, so the test covers it
    # A completed tag is never free text: "<function=get_time>" then free text is rejected.
    state = c.initial_state().advance_text("<function=get_time>")
    assert state.try_advance_bytes(b"hello") is None


def test_stops_is_read_as_stop_str():
    """Newer XGrammar prints TagDispatch's stop strings as `stops=(...)`."""
    a = xgr2.Grammar.from_ebnf('root ::= TagDispatch(("<a>", r), stop_eos=false, stops=("END",))\nr ::= "x"')
    b = xgr2.Grammar.from_ebnf('root ::= TagDispatch(("<a>", r), stop_eos=false, stop_str=("END",))\nr ::= "x"')
    assert str(a) == str(b)

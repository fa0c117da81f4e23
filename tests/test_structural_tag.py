"""Structural tags (XGrammar's JSON format) against an independent Python oracle.

``Oracle.ends(fmt, text, i, ends)`` is the set of positions where format ``fmt`` can stop
when it starts at ``text[i]``: a backtracking reference of the documented semantics,
with ``json.loads`` + ``jsonschema`` for JSON bodies (properties in declared order, as
the engine generates them), ``re.fullmatch`` for regexes, and ``str.find`` for free
text (the first completed trigger or excluded string decides). A document is accepted
when the root format can stop at its end. Documents come from a generator that builds
valid outputs from the spec, plus mutations of them; the specs are written here in the
shapes of XGrammar's structural-tag reference.
"""

import json
import pickle
import random
import re

import jsonschema
import pytest

import xgr2
from hypothesis import given, settings
from hypothesis import strategies as st
from parsing import accepts as accepts_text
from test_mask_oracle import check_along

BYTES = xgr2.TokenizerInfo([bytes([b]) for b in range(256)] + [b"<eos>"], stop_token_ids=[256])

WEATHER = {"type": "object", "properties": {"city": {"type": "string", "maxLength": 12},
                                            "days": {"type": "integer", "minimum": 1, "maximum": 7}},
           "required": ["city"], "additionalProperties": False}
TIME = {"type": "object", "properties": {"tz": {"enum": ["UTC", "CET"]}}, "required": ["tz"],
        "additionalProperties": False}
# Example values (valid and not) the generator draws JSON bodies from.
VALUES = {
    json.dumps(WEATHER, sort_keys=True): [{"city": "Paris"}, {"city": "Oslo", "days": 3}, {"city": "x", "days": 9},
                                          {"days": 2}, {"city": "a very long city name"}, {"city": "</f>"}],
    json.dumps(TIME, sort_keys=True): [{"tz": "UTC"}, {"tz": "CET"}, {"tz": "PST"}, {}],
}
# Python regexes equivalent to the EBNF grammars used in the specs.
GRAMMARS = {'root ::= "yes" | "no"': r"yes|no", 'root ::= [0-9]+ ("." [0-9]+)?': r"[0-9]+(\.[0-9]+)?"}


def tag(begin, content, end):
    return {"type": "tag", "begin": begin, "content": content, "end": end}


def schema(s):
    return {"type": "json_schema", "json_schema": s}


WEATHER_TAG = tag("<function=get_weather>", schema(WEATHER), "</function>")
TIME_TAG = tag("<function=get_time>", schema(TIME), "</function>")

SPECS = {
    "const_string": {"type": "const_string", "value": "Let's think step by step."},
    "json_schema": schema(WEATHER),
    "grammar": {"type": "sequence", "elements": [{"type": "const_string", "value": "answer: "},
                                                 {"type": "grammar", "grammar": 'root ::= "yes" | "no"'}]},
    "regex": {"type": "regex", "pattern": "[A-Z]{3}-[0-9]{2,4}"},
    "any_text_excludes": {"type": "any_text", "excludes": ["<function=", "STOP"]},
    "think_then_answer": {"type": "sequence", "elements": [
        tag("<think>", {"type": "any_text"}, "</think>"),
        {"type": "or", "elements": [schema(TIME), {"type": "grammar", "grammar": 'root ::= [0-9]+ ("." [0-9]+)?'}]}]},
    "optional_plus_star_repeat": {"type": "sequence", "elements": [
        {"type": "optional", "content": {"type": "const_string", "value": "Hi "}},
        {"type": "plus", "content": {"type": "const_string", "value": "ab"}},
        {"type": "star", "content": {"type": "regex", "pattern": "[xy]"}},
        {"type": "repeat", "min": 1, "max": 2, "content": {"type": "const_string", "value": "!"}},
        {"type": "repeat", "min": 0, "max": -1, "content": {"type": "const_string", "value": "?"}}]},
    "tag_multiple_ends": tag("<response>", schema(TIME), ["</response>", "</answer>"]),
    "triggered_tags": {"type": "triggered_tags", "triggers": ["<function="], "tags": [WEATHER_TAG, TIME_TAG]},
    "triggered_at_least_one": {"type": "triggered_tags", "triggers": ["<function="], "tags": [WEATHER_TAG, TIME_TAG],
                               "at_least_one": True},
    "triggered_exactly_one": {"type": "triggered_tags", "triggers": ["<function="], "tags": [WEATHER_TAG, TIME_TAG],
                              "at_least_one": True, "stop_after_first": True},
    "triggered_stop_after_first_excludes": {"type": "triggered_tags", "triggers": ["<f"],
                                            "tags": [tag("<f1>", schema(TIME), "</f>"), tag("<f2>", {"type": "any_text"}, "</f>")],
                                            "stop_after_first": True, "excludes": ["<bad>"]},
    "tags_with_separator": {"type": "tags_with_separator", "tags": [WEATHER_TAG, TIME_TAG], "separator": "\n"},
    "tags_with_separator_one": {"type": "tags_with_separator", "tags": [TIME_TAG], "separator": ",",
                                "at_least_one": True, "stop_after_first": True},
    "dispatch_in_tag": tag("<response>", {"type": "dispatch", "rules": [["<function=get_time>", {"type": "sequence", "elements": [schema(TIME), {"type": "const_string", "value": "</function>"}]}],
                                                                        ["<calc>", {"type": "regex", "pattern": "[0-9+]+</calc>"}]],
                                          "loop": True, "excludes": ["</response>"]}, "</response>"),
    "dispatch_no_loop": {"type": "dispatch", "rules": [["@", {"type": "regex", "pattern": "[a-z]+"}]], "loop": False},
    "reasoning_then_tools": {"type": "sequence", "elements": [
        tag("<think>", {"type": "any_text"}, "</think>"),
        {"type": "triggered_tags", "triggers": ["<function="], "tags": [WEATHER_TAG, TIME_TAG]}]},
}


def first_completion(text, i, strings):
    """(end, string) of the first completed occurrence of any string in text[i:] (the
    earliest end; at the same end the longest), or None."""
    best = None
    for s in strings:
        k = text.find(s, i)
        if k >= 0 and (best is None or (k + len(s), -len(s)) < (best[0], -len(best[1]))):
            best = (k + len(s), s)
    return best


class Oracle:
    """Where a format can stop: ``ends(fmt, text, i, ends)`` -> set of positions."""

    def __init__(self, text):
        self.text = text

    def ends(self, f, i, tag_ends=()):
        t = self.text
        kind = f["type"]
        if kind == "const_string":
            return {i + len(f["value"])} if t.startswith(f["value"], i) else set()
        if kind == "json_schema":
            return {j for j in range(i + 1, len(t) + 1) if json_ok(t[i:j], f["json_schema"])}
        if kind == "grammar":
            return {j for j in range(i, len(t) + 1) if re.fullmatch(GRAMMARS[f["grammar"]], t[i:j])}
        if kind == "regex":
            return {j for j in range(i, len(t) + 1) if re.fullmatch(f["pattern"], t[i:j])}
        if kind == "any_text":
            return self.free(i, [], excludes(f, tag_ends), True, lambda *a: set())
        if kind in ("sequence", "or"):
            if kind == "or":
                return set().union(*(self.ends(e, i, tag_ends) for e in f["elements"]))
            positions = {i}
            for e in f["elements"]:
                positions = set().union(*(self.ends(e, p, tag_ends) for p in positions)) if positions else set()
            return positions
        if kind in ("optional", "star", "plus", "repeat"):
            lo, hi = {"optional": (0, 1), "star": (0, -1), "plus": (1, -1)}.get(kind, (f.get("min"), f.get("max")))
            step = lambda ps: set().union(set(), *(self.ends(f["content"], p, tag_ends) for p in ps))  # noqa: E731
            frontier = {i}
            for _ in range(lo):
                frontier = step(frontier)
            result = set(frontier)
            if hi != -1:
                for _ in range(hi - lo):
                    frontier = step(frontier)
                    result |= frontier
                return result
            todo = list(frontier)
            while todo:  # unbounded: every position reachable by more rounds
                for q in step([todo.pop()]) - result:
                    result.add(q)
                    todo.append(q)
            return result
        if kind == "tag":
            return self.tag(f, i)
        if kind == "triggered_tags":
            return self.triggered(f, i, tag_ends)
        if kind == "tags_with_separator":
            return self.separated(f, i)
        if kind == "dispatch":
            rules = f["rules"]

            def after(pattern, j):
                fmt = next(r[1] for r in rules if r[0] == pattern)
                return self.ends(fmt, j, tag_ends)

            return self.free(i, [r[0] for r in rules], excludes(f, tag_ends), f.get("loop", True), after)
        raise AssertionError(kind)

    def tag(self, f, i):
        if not self.text.startswith(f["begin"], i):
            return set()
        ends = [f["end"]] if isinstance(f["end"], str) else f["end"]
        out = set()
        for j in self.ends(f["content"], i + len(f["begin"]), ends):
            out |= {j + len(e) for e in ends if self.text.startswith(e, j)}
        return out

    def any_tag(self, tags, i):
        return set().union(*(self.tag(tg, i) for tg in tags))

    def free(self, i, triggers, excl, loop, after, seen=None):
        """Free text from i: it may stop anywhere before the first completed string; a
        completed trigger continues with after(trigger, end), then free text again."""
        seen = set() if seen is None else seen
        if i in seen:
            return set()
        seen.add(i)
        hit = first_completion(self.text, i, list(triggers) + list(excl))
        limit = len(self.text) if hit is None else hit[0] - 1
        out = set(range(i, limit + 1))
        if hit is not None and hit[1] in triggers and hit[1] not in excl:
            for k in after(hit[1], hit[0]):
                out |= self.free(k, triggers, excl, loop, after, seen) if loop else {k}
        return out

    def triggered(self, f, i, tag_ends):
        tags, triggers = f["tags"], f["triggers"]

        def after(trigger, j):
            start = j - len(trigger)
            return self.any_tag([tg for tg in tags if tg["begin"].startswith(trigger)], start)

        loop = not f.get("stop_after_first", False)
        excl = excludes(f, tag_ends)
        if not f.get("at_least_one", False):
            return self.free(i, triggers, excl, loop, after)
        first = self.any_tag(tags, i)
        if not loop:
            return first
        return set().union(*(self.free(k, triggers, excl, True, after) for k in first)) if first else set()

    def separated(self, f, i):
        tags, sep = f["tags"], f["separator"]
        first = self.any_tag(tags, i)
        out = set() if f.get("at_least_one", False) else {i}
        if f.get("stop_after_first", False):
            return out | first
        result, todo = set(first), list(first)
        while todo:
            p = todo.pop()
            if self.text.startswith(sep, p):
                for q in self.any_tag(tags, p + len(sep)) - result:
                    result.add(q)
                    todo.append(q)
        return out | result


def excludes(f, tag_ends):
    return list(dict.fromkeys(list(f.get("excludes", [])) + [e for e in tag_ends if e]))


def json_ok(s, sch):
    """A JSON text valid under ``sch``, objects with properties in declared order and no
    duplicates, at most 20 whitespace characters per run outside strings."""
    if re.search(r"\s{21}", s):  # whitespace runs are bounded (outside strings; tests have no long ones)
        return False
    pairs_ok = [True]

    def hook(pairs):
        keys = [k for k, _ in pairs]
        props = list(sch.get("properties", {}))
        order = [props.index(k) for k in keys if k in props]
        if len(set(keys)) != len(keys) or order != sorted(order):
            pairs_ok[0] = False
        return dict(pairs)

    try:
        value = json.loads(s, object_pairs_hook=hook, parse_constant=lambda c: (_ for _ in ()).throw(ValueError(c)))
    except ValueError:
        return False
    if not pairs_ok[0]:
        return False
    try:
        jsonschema.validate(value, sch)
    except jsonschema.ValidationError:
        return False
    return True


def accepts(spec, text):
    return len(text) in Oracle(text).ends(spec, 0)


# ---- document generator ---------------------------------------------------------------

FREE_PIECES = ["Sure", " ", "ok.", "<", "<f", "<function", "<function=", "</", "</function>", "STOP", "\n",
               "é", "<think>", "</think>", "<response>", "</response>", "<calc>", "@", "{", "x"]


def gen(f, rng, ends=()):
    kind = f["type"]
    if kind == "const_string":
        return f["value"]
    if kind == "json_schema":
        return json.dumps(rng.choice(VALUES[json.dumps(f["json_schema"], sort_keys=True)]))
    if kind == "grammar":
        return rng.choice({"yes|no": ["yes", "no", "maybe"]}.get(GRAMMARS[f["grammar"]], ["12", "3.5", "7."]))
    if kind == "regex":
        return rng.choice({"[A-Z]{3}-[0-9]{2,4}": ["ABC-12", "XYZ-1234", "AB-12"], "[xy]": ["x", "y"],
                           "[a-z]+": ["ab", "z"], "[0-9+]+</calc>": ["1+2</calc>", "3</calc>"]}[f["pattern"]])
    if kind == "any_text":
        return free_text(rng)
    if kind == "sequence":
        return "".join(gen(e, rng, ends) for e in f["elements"])
    if kind == "or":
        return gen(rng.choice(f["elements"]), rng, ends)
    if kind in ("optional", "star", "plus", "repeat"):
        lo, hi = {"optional": (0, 1), "star": (0, 3), "plus": (1, 3)}.get(kind, (f.get("min"), f.get("max")))
        hi = lo + 3 if hi == -1 else hi
        return "".join(gen(f["content"], rng, ends) for _ in range(rng.randint(lo, hi)))
    if kind == "tag":
        end = f["end"] if isinstance(f["end"], str) else rng.choice(f["end"])
        return f["begin"] + gen(f["content"], rng) + end
    if kind in ("triggered_tags", "tags_with_separator"):
        calls = [gen(rng.choice(f["tags"]), rng) for _ in range(rng.randint(0, 3))]
        if kind == "tags_with_separator":
            return f["separator"].join(calls)
        return "".join(free_text(rng) + c for c in calls) + free_text(rng)
    if kind == "dispatch":
        out = ""
        for _ in range(rng.randint(0, 2)):
            pattern, fmt = rng.choice(f["rules"])
            out += free_text(rng) + pattern + gen(fmt, rng)
        return out + free_text(rng)
    raise AssertionError(kind)


def free_text(rng):
    return "".join(rng.choice(FREE_PIECES) for _ in range(rng.randint(0, 3)))


def mutate(text, rng):
    if not text:
        return rng.choice(FREE_PIECES)
    k = rng.randrange(len(text))
    op = rng.randrange(4)
    if op == 0:
        return text[:k] + text[k + 1:]
    if op == 1:
        return text[:k] + rng.choice(FREE_PIECES) + text[k:]
    if op == 2:
        return text[:k]
    return text + rng.choice(FREE_PIECES)


@pytest.mark.parametrize("name", sorted(SPECS))
def test_documents_match_the_oracle(name):
    spec = SPECS[name]
    start = xgr2.compile(xgr2.Grammar.from_structural_tag({"type": "structural_tag", "format": spec}),
                         BYTES).initial_state()
    rng = random.Random(name)
    verdicts = []
    for n in range(150):
        text = gen(spec, rng)
        if n % 2:
            text = mutate(text, rng)
        expected = accepts(spec, text)
        assert accepts_text(start, text) == expected, (text, expected)
        verdicts.append(expected)
    assert any(verdicts) and not all(verdicts), "the sample must test both acceptance and rejection"


def test_documented_behaviour():
    """The examples the reference describes, as str checks."""
    think = xgr2.compile(xgr2.Grammar.from_structural_tag(SPECS["think_then_answer"]), BYTES).initial_state()
    assert accepts_text(think, '<think>a < b, so </think>{"tz": "UTC"}')
    assert not accepts_text(think, "<think>a</think>b</think>1")  # the tag's end ends the free text
    tools = xgr2.compile(xgr2.Grammar.from_structural_tag(SPECS["triggered_tags"]), BYTES).initial_state()
    assert accepts_text(tools, 'I will call a tool now. <function=get_weather>{"city": "San Fran"}</function>')
    assert accepts_text(tools, "no call at all, <function but never completed")
    assert not accepts_text(tools, "<function=get_date>{}</function>")  # a trigger must go on into a tag
    one = xgr2.compile(xgr2.Grammar.from_structural_tag(SPECS["triggered_exactly_one"]), BYTES).initial_state()
    assert accepts_text(one, '<function=get_time>{"tz": "CET"}</function>')
    assert not accepts_text(one, 'x<function=get_time>{"tz": "CET"}</function>')  # at_least_one: no leading text
    assert not accepts_text(one, "")


def test_wrapper_bare_format_and_json_text_give_the_same_grammar():
    spec = SPECS["triggered_tags"]
    grammars = [xgr2.Grammar.from_structural_tag(s) for s in
                (spec, {"type": "structural_tag", "format": spec}, json.dumps({"type": "structural_tag", "format": spec}))]
    assert str(grammars[0]) == str(grammars[1]) == str(grammars[2])


def test_older_structures_and_triggers_form():
    spec = {"type": "structural_tag", "triggers": ["<function="],
            "structures": [{"begin": "<function=get_weather>", "schema": WEATHER, "end": "</function>"},
                           {"begin": "<function=get_time>", "schema": TIME, "end": "</function>"}]}
    start = xgr2.compile(xgr2.Grammar.from_structural_tag(spec), BYTES).initial_state()
    new = {"type": "triggered_tags", "triggers": ["<function="], "tags": [WEATHER_TAG, TIME_TAG]}
    rng = random.Random(1)
    for _ in range(100):
        text = mutate(gen(new, rng), rng) if rng.random() < 0.5 else gen(new, rng)
        assert accepts_text(start, text) == accepts(new, text), text
    assert str(xgr2.Grammar.from_structural_tag({k: v for k, v in spec.items() if k != "type"})) == \
        str(xgr2.Grammar.from_structural_tag(spec))
    # XGrammar's older API also took each schema as JSON text.
    as_text = {**spec, "structures": [{**s, "schema": json.dumps(s["schema"])} for s in spec["structures"]]}
    assert str(xgr2.Grammar.from_structural_tag(as_text)) == str(xgr2.Grammar.from_structural_tag(spec))
    with pytest.raises(xgr2.StructuralTagError, match="/structures/0/schema"):
        xgr2.Grammar.from_structural_tag({**spec, "structures": [{**spec["structures"][0], "schema": "{"}]})


@pytest.mark.parametrize("name", sorted(SPECS))
def test_grammar_prints_parses_back_and_pickles(name):
    g = xgr2.Grammar.from_structural_tag(SPECS[name])
    again = xgr2.Grammar.from_ebnf(str(g))
    assert str(again) == str(g)
    assert str(pickle.loads(pickle.dumps(g))) == str(g)


@pytest.mark.parametrize("spec,path,message", [
    ({"type": "sequence", "elements": [{"type": "const_strin"}]}, "/elements/0/type", "unknown format type"),
    ({"type": "sequence"}, "", 'missing required field "elements"'),
    ({"type": "sequence", "elements": []}, "/elements", "must not be empty"),
    ({"type": "const_string", "value": 3}, "/value", "must be a string"),
    ({"type": "const_string", "value": "a", "vlaue": "b"}, "/vlaue", 'unknown field "vlaue"'),
    ({"type": "structural_tag", "format": {"type": "tag", "begin": "<a>", "content": schema({"type": "strin"}),
                                           "end": "</a>"}}, "/format/content/json_schema/type", "invalid JSON Schema"),
    ({"type": "regex", "pattern": "a("}, "/pattern", "invalid regex"),
    ({"type": "grammar", "grammar": "root ::= x"}, "/grammar", "invalid grammar"),
    ({"type": "repeat", "min": 2, "max": 1, "content": {"type": "const_string", "value": "a"}}, "/max", '"max"'),
    ({"type": "repeat", "min": 1.5, "max": 2, "content": {"type": "const_string", "value": "a"}}, "/min", "integer"),
    ({"type": "tag", "begin": "<a>", "content": {"type": "any_text"}}, "", 'missing required field "end"'),
    ({"type": "tag", "begin": {"type": "token", "token": "<|a|>"}, "content": {"type": "any_text"}, "end": "x"},
     "/begin/token", "pass the tokenizer"),
    ({"type": "tag", "begin": {"type": "token", "token": 1}, "content": {"type": "any_text"}, "end": {"token": -2}},
     "/end/token", "integer"),
    ({"type": "triggered_tags", "triggers": ["<f="], "tags": [WEATHER_TAG]}, "/tags/0/begin", "starts with no trigger"),
    ({"type": "triggered_tags", "triggers": ["<", "<f"], "tags": [WEATHER_TAG]}, "/tags/0/begin", "two triggers"),
    ({"type": "triggered_tags", "triggers": ["<function=", "<x"], "tags": [WEATHER_TAG]}, "/triggers/1",
     "no tag begins with"),
    ({"type": "triggered_tags", "triggers": ["<function="], "tags": [WEATHER_TAG], "excludes": ["<fun"]}, "",
     "can never complete"),
    ({"type": "dispatch", "rules": [["<a>"]]}, "/rules/0", "pair"),
    ({"type": "dispatch", "rules": [["<a>", {"type": "const_string", "value": "x"}]], "loop": "yes"}, "/loop",
     "true or false"),
    ({"type": "json_schema", "json_schema": TIME, "style": "yaml"}, "/style", '"style" must be'),
    ({"type": "json_schema", "json_schema": {"type": "string"}, "style": "qwen_xml"}, "/json_schema/type",
     "needs \"type\": \"object\""),
    ({"type": "json_schema", "json_schema": TIME, "max_whitespace_cnt": -1}, "/max_whitespace_cnt", "[0, 1000]"),
    ({"type": "json_schema", "json_schema": TIME, "any_order": 1}, "/any_order", "true or false"),
    ({"format": {"begin": "<a>", "content": {"nothing": 1}, "end": "</a>"}}, "/format/content", "needs a \"type\""),
    ({"type": "any_tokens", "exclude_tokens": [1.5]}, "/exclude_tokens/0", "integer"),
    ({"type": "exclude_token", "exclude_tokens": 3}, "/exclude_tokens", "must be an array"),
    ({"type": "token", "token": 1, "id": 2}, "/id", "unknown field"),
    ({"type": "token_triggered_tags", "trigger_tokens": [1], "tags": []}, "/tags", "must not be empty"),
    ({"type": "token_triggered_tags", "trigger_tokens": [], "tags": [WEATHER_TAG]}, "/trigger_tokens", "must not be empty"),
    ({"type": "token_triggered_tags", "trigger_tokens": [1], "tags": [WEATHER_TAG]}, "/tags/0/begin", "needs a token"),
    ({"type": "token_triggered_tags", "trigger_tokens": [1, 2], "tags": [{**WEATHER_TAG, "begin": {"token": 1}}]},
     "/trigger_tokens/1", "no tag begins"),
    ({"type": "token_triggered_tags", "trigger_tokens": [1], "tags": [{**WEATHER_TAG, "begin": {"token": 3}}]},
     "/tags/0/begin", "not one of the trigger tokens"),
    ({"type": "triggered_tags", "triggers": ["<"], "tags": [{**WEATHER_TAG, "begin": {"token": 3}}]},
     "/tags/0/begin", "token_triggered_tags"),
    ({"type": "token_dispatch", "rules": [[1]]}, "/rules/0", "pair"),
    ({"type": "token_dispatch", "rules": [["<x>", {"type": "const_string", "value": "x"}]]}, "/rules/0/0",
     "pass the tokenizer"),
    ({"type": "structural_tag"}, "", 'missing required field "format"'),
    ({"type": "structural_tag", "format": {"type": "any_text"}, "extra": 1}, "/extra", "unknown field"),
    ({"type": "structural_tag", "structures": [{"begin": "<a>", "schema": {}, "end": 1}], "triggers": ["<"]},
     "/structures/0/end", "must be a string"),
    ({"type": "json_schema", "json_schema": {"type": "integer", "minimum": 3, "maximum": 1}}, "",
     "no output satisfies"),
    ("[1, 2]", "", "must be a JSON object"),
    ('{"type": ', "", "not valid JSON"),
    ({"type": "a/b~c"}, "/type", "unknown format type"),
    ({"type": "sequence", "elements": [{"type": "or", "elements": [{"type": "x"}]}]},
     "/elements/0/elements/0/type", "unknown format type"),
])
def test_malformed_specs_name_the_path(spec, path, message):
    with pytest.raises(xgr2.StructuralTagError, match=re.escape(message)) as info:
        xgr2.Grammar.from_structural_tag(spec)
    assert info.value.path == path
    assert isinstance(info.value, ValueError) and isinstance(info.value, xgr2.Xgr2Error)


def test_bad_argument_types():
    with pytest.raises(TypeError):
        xgr2.Grammar.from_structural_tag(3)
    with pytest.raises(xgr2.StructuralTagError, match="JSON-serializable"):
        xgr2.Grammar.from_structural_tag({"type": "const_string", "value": float("nan")})


def test_llama3_masks_along_a_tool_calling_document(llama3_tokenizer_info, llama3_hf_tokenizer):
    tok = llama3_tokenizer_info
    spec = SPECS["reasoning_then_tools"]
    compiled = xgr2.compile(xgr2.Grammar.from_structural_tag(spec), tok)
    doc = ('<think>The user wants weather; call get_weather.</think>Let me check. '
           '<function=get_weather>{"city": "Paris", "days": 2}</function> and the time: '
           '<function=get_time>{"tz": "CET"}</function> Done <func')
    assert accepts(spec, doc)
    ids = llama3_hf_tokenizer.encode(doc, add_special_tokens=False)
    rng = random.Random(0)
    check_at = set(rng.sample(range(len(ids) + 1), 12))
    state = check_along(compiled.initial_state(), ids, tok, rng, check_at)
    assert state.can_terminate
    # Inside a call the mask is the JSON schema's: after `{"city": "Paris", "days": ` only digits 1-7.
    state = compiled.initial_state().advance_text('<think></think><function=get_weather>{"city": "Paris", "days": ')
    allowed = [tok.decoded_vocab[t] for t in xgr2.bitmask_to_bool(state.bitmask(), tok.vocab_size).nonzero()[0]]
    assert allowed and all(re.fullmatch(rb"[1-7]", a) or a.isspace() for a in allowed), allowed[:20]


def grammar_accepts(spec, text: str) -> bool:
    state = xgr2.compile(xgr2.Grammar.from_structural_tag(spec), BYTES).initial_state()
    return accepts_text(state, text)


@settings(max_examples=150, deadline=None)
@given(text=st.text(alphabet="ab</thinké>", max_size=9), limit=st.integers(0, 6))
def test_any_text_max_chars_bounds_the_text_before_the_first_end(text, limit):
    """Oracle: the tag's content ends at the first `</think>` (Python's str.find), and
    has at most `limit` characters (code points, so `é` is one)."""
    spec = {"type": "tag", "begin": "<think>", "content": {"type": "any_text", "max_chars": limit}, "end": "</think>"}
    full = "<think>" + text + "</think>"
    expected = len(text) <= limit and full.find("</think>", len("<think>")) == len("<think>") + len(text)
    assert grammar_accepts(spec, full) == expected


def test_any_text_max_chars_at_the_top_level_and_its_errors():
    assert grammar_accepts({"type": "any_text", "max_chars": 3}, "a😀c")
    assert not grammar_accepts({"type": "any_text", "max_chars": 3}, "abcd")
    assert grammar_accepts({"type": "any_text", "max_chars": None}, "abcd")
    with pytest.raises(xgr2.StructuralTagError, match="max_tokens"):
        xgr2.Grammar.from_structural_tag({"type": "any_text", "max_tokens": 3})
    for bad in [-1, 1.5, "x", 2**31]:
        with pytest.raises(xgr2.StructuralTagError, match="max_chars"):
            xgr2.Grammar.from_structural_tag({"type": "any_text", "max_chars": bad})
    too_big = {"type": "tag", "begin": "<think>", "content": {"type": "any_text", "max_chars": 5000}, "end": "</think>"}
    with pytest.raises(xgr2.StructuralTagError, match="max_chars"):
        xgr2.Grammar.from_structural_tag(too_big)

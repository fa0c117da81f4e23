"""Fuzz targets of xgr2's front ends: regex, JSON Schema and EBNF (not run in CI).

    python benchmarks/fuzz_frontends.py regex  --minutes 10
    python benchmarks/fuzz_frontends.py schema --minutes 10
    python benchmarks/fuzz_frontends.py ebnf   --minutes 10

Hypothesis generates inputs: structured ones from the front end's syntax (random regex
syntax, random JSON Schemas built from the keyword set of issue 10 with $refs and
recursion, random EBNF grammars), wrong-typed keyword values, and byte-level mutations
of structured inputs (so malformed input reaches the error paths too). Hypothesis runs
in batches of `--batch` examples with a fresh seed each, until the time is spent.

Each input goes to a worker process (one at a time; `RLIMIT_AS` caps its memory, 3 GiB
by default) that builds the grammar (`Grammar.from_regex` / `from_json_schema` /
`from_ebnf`), prints it and parses the print back (it must print the same: the
documented round trip), compiles it for a small byte-level vocabulary (256 single
bytes plus some multi-byte tokens), fills the initial mask and walks up to 16 tokens
picked from the masks. Checked on every input:

- no crash: the worker does not die from a signal (nor exit otherwise);
- no hang: the whole job finishes within `--timeout` seconds (default 10);
- only xgr2's own exceptions escape: `xgr2.Xgr2Error` subclasses, or TypeError /
  ValueError (API misuse); anything else (RuntimeError, MemoryError, IndexError,
  SystemError, ...) is a failure;
- bounded work: front end + compile + first mask under `--slow` seconds (default 2),
  printed grammar under 16 MB;
- the printed grammar parses back to the same print.

A failing input is shrunk by hypothesis to a small reproducer, printed and saved
(with the slowest inputs) as JSON under `--out` (default /tmp/xgr2-fuzz). The summary
gives inputs tried, outcomes (compiled / refused with which exception type), failures
with reproducers and the slowest jobs.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

import _common  # noqa: F401  (first: a source tree with a built core goes before the installed xgr2)

ALLOWED_EXCEPTIONS = {"TypeError", "ValueError"}  # plus every xgr2.Xgr2Error subclass (the worker says)
MAX_GRAMMAR_CHARS = 16 << 20


# --------------------------------------------------------------------------- worker
def _small_vocab() -> list[bytes]:
    extra = [b'{"', b'":', b'", "', b'"}', b"true", b"false", b"null", b"12", b"0.5", b"-1", b"e+",
             b"abc", b"ab", b"\\u00", b"\\n", b"  ", b"\n  ", b"\xc3\xa9", b"\xe2\x82\xac", b"\xf0\x9f\x98\x80",
             b"http://", b"2024-", b"T12:", b"@", b"::", b"[a", b"]", b"()", b"<eos>"]
    return [bytes([i]) for i in range(256)] + extra


def worker_main() -> None:
    """Reads one JSON job per line on stdin, writes one JSON reply per line."""
    import resource

    limit = int(os.environ.get("XGR2_FUZZ_MEM", 3 << 30))
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    import numpy as np

    import xgr2

    vocab = _small_vocab()
    tok = xgr2.TokenizerInfo(vocab, stop_token_ids=[len(vocab) - 1])
    out = np.zeros(xgr2.get_bitmask_shape(1, tok.vocab_size), dtype=np.int32)
    for line in sys.stdin:
        job = json.loads(line)
        reply = {"stage": "front"}
        rng = random.Random(job.get("seed", 0))
        try:
            t0 = time.perf_counter()
            if job["kind"] == "regex":
                g = xgr2.Grammar.from_regex(job["input"])
            elif job["kind"] == "ebnf":
                g = xgr2.Grammar.from_ebnf(job["input"])
            else:
                g = xgr2.Grammar.from_json_schema(job["input"], **job.get("options", {}))
            t1 = time.perf_counter()
            reply["front_ms"] = (t1 - t0) * 1e3
            reply["stage"] = "print"
            text = str(g)
            reply["grammar_chars"], reply["rules"] = len(text), len(g.rule_names)
            reply["stage"] = "reparse"
            again = str(xgr2.Grammar.from_ebnf(text, g.root))
            if again != text:
                reply["roundtrip"] = "print of the reparsed grammar differs"
            reply["stage"] = "compile"
            t2 = time.perf_counter()
            state = xgr2.Compiler(tok, cache_limit_bytes=0).compile(g).initial_state()
            state.fill_bitmask(out, 0)
            t3 = time.perf_counter()
            reply["compile_ms"] = (t3 - t2) * 1e3
            reply["stage"] = "walk"
            steps = 0
            for steps in range(16):
                allowed = np.flatnonzero(xgr2.bitmask_to_bool(out[0], tok.vocab_size))
                if not allowed.size or state.is_terminated:
                    break
                state = state.advance(int(rng.choice(list(allowed))))
                state.fill_bitmask(out, 0)
            reply["walk_ms"] = (time.perf_counter() - t3) * 1e3
            reply["steps"] = steps
            reply["outcome"] = "compiled"
        except Exception as e:  # noqa: BLE001 - classify, the parent judges
            reply["outcome"] = type(e).__name__
            reply["xgr2_error"] = isinstance(e, xgr2.Xgr2Error)
            reply["message"] = str(e)[:300]
        sys.stdout.write(json.dumps(reply) + "\n")
        sys.stdout.flush()


class Worker:
    """A worker process; `run(job)` returns its reply, or {"outcome": "crash"/"hang"}."""

    def __init__(self, timeout: float):
        self.timeout, self.proc = timeout, None

    def _start(self):
        env = dict(os.environ, PYTHONFAULTHANDLER="1")
        self.proc = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--worker"], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, text=True, bufsize=1)

    def run(self, job: dict) -> dict:
        if self.proc is None or self.proc.poll() is not None:
            self._start()
        self.proc.stdin.write(json.dumps(job) + "\n")
        self.proc.stdin.flush()
        t0 = time.perf_counter()
        ready, _, _ = select.select([self.proc.stdout], [], [], self.timeout)
        line = self.proc.stdout.readline() if ready else ""
        if line:
            reply = json.loads(line)
            reply["wall_s"] = time.perf_counter() - t0
            return reply
        if not ready:  # hang: kill the worker (our own child, by pid)
            self.proc.kill()
            self.proc.wait()
            self.proc = None
            return {"outcome": "hang", "wall_s": time.perf_counter() - t0}
        rc = self.proc.wait()
        err = self.proc.stderr.read()[-2000:]
        self.proc = None
        sig = signal.Signals(-rc).name if rc < 0 else None
        return {"outcome": "crash", "returncode": rc, "signal": sig, "stderr": err,
                "wall_s": time.perf_counter() - t0}

    def close(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.stdin.close()
            self.proc.wait(timeout=5)


# --------------------------------------------------------------------------- generators
def strategies():
    from hypothesis import strategies as st

    # ---- mutations: byte-level edits with characters that matter to the parsers
    specials = list("()[]{}|*+?.^$\\-,:\"'#=<>!/uUxX0123456789aAzZ \t\n") + ["\u00e9", "\u20ac", "\U0001f600", "\x00",
                                                                          "\ud800", "\uffff"]

    @st.composite
    def mutate(draw, base):
        s = draw(base)
        for _ in range(draw(st.integers(1, 4))):
            i = draw(st.integers(0, len(s)))
            op = draw(st.sampled_from(["insert", "delete", "replace", "duplicate", "swap"]))
            c = draw(st.sampled_from(specials))
            if op == "insert":
                s = s[:i] + c + s[i:]
            elif op == "delete" and s:
                s = s[:i] + s[i + 1:]
            elif op == "replace" and s:
                s = s[:i] + c + s[i + 1:]
            elif op == "duplicate" and s:
                j = draw(st.integers(i, len(s)))
                s = s[:j] + s[i:j] + s[j:]
            elif op == "swap" and len(s) > 1:
                j = draw(st.integers(0, len(s) - 1))
                a, b = min(i, j), max(i, j)
                if b < len(s):
                    s = s[:a] + s[b] + s[a + 1:b] + s[a] + s[b + 1:]
        return s

    small = st.integers(0, 12)
    big = st.sampled_from([0, 1, 2, 9, 10, 99, 100, 255, 1000, 9999, 10000, 10001, 65535, 100000, 2**31 - 1, 2**31,
                           2**63, 10**30])
    count = st.one_of(small, small, big)

    # ---- regex
    class_chars = st.sampled_from(list("abcxyzAZ09_-. ^]\\[") + ["\\d", "\\w", "\\s", "\\D", "\\W", "\\S", "\\n",
                                                                "\\t", "\\]", "\\-", "\\\\", "\\u00e9", "\\x41",
                                                                "\\u{1F600}", "\u00e9", "\U0001f600", "\\b", "\\."])
    char_class = st.builds(lambda neg, items: "[" + ("^" if neg else "") + "".join(items) + "]", st.booleans(),
                           st.lists(st.one_of(class_chars,
                                              st.builds(lambda a, b: f"{a}-{b}", class_chars, class_chars)),
                                    max_size=5))
    atom = st.one_of(
        st.sampled_from(list("abcxyz0189 _-@/") + ["\u00e9", "\u4e2d", "\U0001f600"]),
        st.sampled_from([".", "\\.", "\\d", "\\w", "\\s", "\\D", "\\W", "\\S", "\\n", "\\t", "\\r", "\\f", "\\v",
                         "\\0", "\\x41", "\\xff", "\\u0041", "\\uD83D\\uDE00", "\\uD800", "\\u{10FFFF}",
                         "\\u{110000}", "\\/", "\\-", "\\*", "\\(", "\\{", "\\$", "\\^",
                         # constructs that must be refused with a RegexError
                         "\\1", "\\k<n>", "\\b", "\\B", "(?=a)", "(?!a)", "(?<=a)", "(?<!a)", "(?i)", "(?i:a)",
                         "\\p{L}", "\\cA", "^", "$", "\\Z", "\\A"]),
        char_class,
    )

    def quantified(inner):
        q = st.one_of(st.sampled_from(["", "", "*", "+", "?", "*?", "+?", "??"]),
                      st.builds(lambda m, lazy: "{%d}%s" % (m, lazy), count, st.sampled_from(["", "?"])),
                      st.builds(lambda m, lazy: "{%d,}%s" % (m, lazy), count, st.sampled_from(["", "?"])),
                      st.builds(lambda m, n, lazy: "{%d,%d}%s" % (m, n, lazy), count, count,
                                st.sampled_from(["", "?"])))
        group = st.builds(lambda open_, body: open_ + body + ")",
                          st.sampled_from(["(", "(", "(?:", "(?P<g>", "(?<name>"]), inner)
        return st.builds(lambda a, q: a + q, st.one_of(atom, group), q)

    regex = st.recursive(
        atom,
        lambda inner: st.one_of(
            st.lists(quantified(inner), min_size=1, max_size=5).map("".join),
            st.lists(inner, min_size=2, max_size=4).map("|".join),
        ),
        max_leaves=25,
    )
    regex = st.builds(lambda a, r, b: a + r + b, st.sampled_from(["", "", "^"]), regex, st.sampled_from(["", "", "$"]))
    regex_inputs = st.one_of(regex, regex, mutate(regex), st.text(st.sampled_from(specials), max_size=30))

    # ---- JSON Schema
    from hypothesis.strategies import deferred

    names = st.sampled_from(["a", "b", "name", "x-y", "a/b", "m~n", "é", "", "$ref", "\"q\"", "100%"])
    json_scalar = st.one_of(st.none(), st.booleans(), st.integers(-10**20, 10**20),
                            st.floats(allow_nan=False, allow_infinity=False, width=32),
                            st.text(max_size=6))
    json_value = st.recursive(json_scalar, lambda c: st.one_of(st.lists(c, max_size=3),
                                                                 st.dictionaries(names, c, max_size=3)), max_leaves=6)
    types = st.sampled_from(["string", "integer", "number", "boolean", "null", "object", "array"])
    formats = st.sampled_from(["date-time", "date", "time", "duration", "email", "hostname", "ipv4", "ipv6", "uri",
                               "uri-reference", "uuid", "idn-email", "regex", "json-pointer", "unknown"])
    numbers = st.one_of(st.integers(-10**40, 10**40), st.integers(-100, 100),
                        st.floats(-1e6, 1e6, allow_nan=False).map(lambda f: round(f, 3)),
                        st.sampled_from([0, 0.5, 1e-9, 1e300, -0.0, 3, 7, 0.1]))
    refs = st.sampled_from(["#", "#/$defs/A", "#/$defs/B", "#/definitions/A", "#/$defs/missing", "#/properties/a",
                            "#/$defs/A/properties/a", "#/$defs/a~1b", "#/$defs/m~0n", "#/$defs/%25", "other.json#",
                            "#A", "#/items", "#/$defs/A/items/0"])
    schema = deferred(lambda: st.one_of(st.booleans(), st.just({}), keyword_schema, keyword_schema, keyword_schema))

    def kw(name, value):
        return st.tuples(st.just(name), value)

    props = st.dictionaries(names, schema, max_size=4)
    keywords = st.one_of(
        kw("type", st.one_of(types, st.lists(types, min_size=1, max_size=3), st.sampled_from(["strin", 3]))),
        kw("enum", st.lists(json_value, max_size=4)), kw("const", json_value),
        kw("properties", props), kw("required", st.lists(names, max_size=3)),
        kw("additionalProperties", schema), kw("patternProperties", st.dictionaries(regex, schema, max_size=2)),
        kw("propertyNames", schema), kw("minProperties", count), kw("maxProperties", count),
        kw("dependentRequired", st.dictionaries(names, st.lists(names, max_size=2), max_size=2)),
        kw("items", st.one_of(schema, st.lists(schema, max_size=3))), kw("prefixItems", st.lists(schema, max_size=3)),
        kw("additionalItems", schema), kw("contains", schema), kw("minContains", count), kw("maxContains", count),
        kw("minItems", count), kw("maxItems", count), kw("uniqueItems", st.booleans()),
        kw("minLength", count), kw("maxLength", count), kw("pattern", regex_inputs), kw("format", formats),
        kw("minimum", numbers), kw("maximum", numbers), kw("exclusiveMinimum", st.one_of(numbers, st.booleans())),
        kw("exclusiveMaximum", st.one_of(numbers, st.booleans())), kw("multipleOf", numbers),
        kw("anyOf", st.lists(schema, max_size=3)), kw("oneOf", st.lists(schema, max_size=3)),
        kw("allOf", st.lists(schema, max_size=3)), kw("not", schema), kw("if", schema), kw("then", schema),
        kw("else", schema), kw("$ref", refs), kw("$defs", st.dictionaries(st.sampled_from(["A", "B", "a/b", "m~n", "%"]),
                                                                          schema, max_size=3)),
        kw("definitions", st.dictionaries(st.sampled_from(["A", "B"]), schema, max_size=2)),
        kw("$id", st.sampled_from(["A", "#A", "http://x/y.json", "urn:x"])), kw("$anchor", st.just("A")),
        kw("title", st.text(max_size=5)), kw("description", st.text(max_size=5)), kw("default", json_value),
        kw("examples", st.lists(json_value, max_size=2)), kw("$comment", st.text(max_size=3)),
        kw("$schema", st.sampled_from(["https://json-schema.org/draft/2020-12/schema",
                                       "http://json-schema.org/draft-07/schema#"])),
        kw("unevaluatedProperties", schema), kw("dependentSchemas", st.dictionaries(names, schema, max_size=2)),
        kw("contentEncoding", st.just("base64")), kw("nullable", st.booleans()),
        # a keyword with a wrong-typed value
        st.tuples(st.sampled_from(["minLength", "properties", "required", "items", "enum", "pattern", "$ref", "allOf",
                                   "minimum", "type", "additionalProperties", "format", "multipleOf"]), json_value),
    )
    keyword_schema = st.lists(keywords, max_size=5).map(dict)
    root_schema = st.builds(lambda body, defs: {**body, **({"$defs": defs} if defs else {})}, keyword_schema,
                            st.dictionaries(st.sampled_from(["A", "B", "a/b", "m~n"]), schema, max_size=2))
    options = st.fixed_dictionaries({}, optional={
        "any_whitespace": st.booleans(), "indent": st.one_of(st.none(), st.integers(0, 4)),
        "separators": st.sampled_from([(",", ":"), (", ", ": "), ("\n", " = "), ("", "")]),
        "strict": st.booleans(), "unsupported": st.sampled_from(["error", "warn", "ignore"])})
    schema_text = root_schema.map(lambda s: json.dumps(s, ensure_ascii=False))
    schema_inputs = st.one_of(root_schema, root_schema, root_schema, mutate(schema_text))

    # ---- EBNF: mostly well-formed pieces, a few that must be refused (rarer, so that most
    # grammars get through to the compiler)
    def ebnf_strategy(clean: bool):
        def mostly(good, bad):
            return good if clean else st.one_of(good, good, good, good, bad)

        rule_names = mostly(st.sampled_from(["root", "a", "b", "c", "value", "ws"]), st.just("undefined_rule"))
        literal = mostly(
            st.one_of(st.text(st.sampled_from(list("abc{}:,\" ") + ["\u00e9", "\U0001f600"]), max_size=4).map(
                lambda s: json.dumps(s, ensure_ascii=False)),
                st.sampled_from(['"\\n"', '"\\t"', '"\\\\"', '"\\""', '"\\x41"', '"\\u00e9"',
                                 '"\\xff"', "'a'"])),
            st.sampled_from(['"\\U0001F600"', '"\\q"', '""', "''", '"\\u{41}"', '"\\uD800"']))
        eclass = st.builds(lambda neg, items: "[" + ("^" if neg else "") + "".join(items) + "]", st.booleans(),
                           st.lists(mostly(st.sampled_from(["a-z", "0-9", "\\n", "\\]", "\\\\", "\\u0000-\\u001F",
                                                            "\"", "-", "\\x00-\\xff", "\u00e9"]),
                                           st.sampled_from(["z-a", "\\q", "[", "\\U0001F600"])), min_size=1, max_size=4))
        count = small if clean else st.one_of(small, small, small, small, big)
        eatom = st.one_of(literal, eclass, rule_names)

        def equant(inner):
            return st.builds(lambda a, q: a + q, st.one_of(eatom, inner.map(lambda e: "(" + e + ")")),
                             st.one_of(st.sampled_from(["", "", "*", "+", "?"]),
                                       st.builds(lambda m, k: "{%d,%d}" % (m, m + k), count, small),
                                       st.builds(lambda m, n: "{%d,%d}" % (m, n), count, count),
                                       st.builds(lambda m: "{%d}" % m, count), st.builds(lambda m: "{%d,}" % m, count)))

        eexpr = st.recursive(eatom, lambda inner: st.one_of(
            st.lists(equant(inner), min_size=1, max_size=4).map(" ".join),
            st.lists(inner, min_size=2, max_size=3).map(" | ".join)), max_leaves=20)
        lookahead = st.one_of(st.none(), st.none(), st.none(), literal, eclass)

        def assemble(root, rules, comment):
            lines = [f"root ::= {root}"] + [f"{n} ::= {e}" + (f" (= {la})" if la else "") for n, (e, la) in rules.items()]
            text = "\n".join(lines)
            for name in ["a", "b", "c", "value", "ws"]:  # define the referenced ones (not undefined_rule)
                if name not in rules and re.search(rf"\b{name}\b", text):
                    lines.append(f'{name} ::= "{name}"')
            return "\n".join(lines) + ("\n# comment" if comment else "")

        grammar = st.builds(assemble, eexpr, st.dictionaries(st.sampled_from(["a", "b", "c", "value", "ws"]),
                                                             st.tuples(eexpr, lookahead), max_size=4), st.booleans())
        return grammar

    clean_grammar, grammar = ebnf_strategy(True), ebnf_strategy(False)
    ebnf_inputs = st.one_of(clean_grammar, clean_grammar, grammar, mutate(grammar))

    return {
        "regex": st.builds(lambda s: {"kind": "regex", "input": s}, regex_inputs),
        "schema": st.builds(lambda s, o: {"kind": "schema", "input": s, "options": o}, schema_inputs, options),
        "ebnf": st.builds(lambda s: {"kind": "ebnf", "input": s}, ebnf_inputs),
    }


# --------------------------------------------------------------------------- driver
def judge(reply: dict, slow_s: float) -> str | None:
    """The failure this reply shows, or None."""
    outcome = reply["outcome"]
    if outcome == "crash":
        return f"crash (signal {reply.get('signal')}, exit {reply.get('returncode')})"
    if outcome == "hang":
        return "hang (time limit)"
    if outcome != "compiled" and not reply.get("xgr2_error") and outcome not in ALLOWED_EXCEPTIONS:
        return f"foreign exception {outcome} at {reply['stage']}"
    if outcome != "compiled" and reply["stage"] == "reparse":
        return f"round trip: the printed grammar does not parse: {outcome}: {reply.get('message', '')[:200]}"
    if reply.get("roundtrip"):
        return "round trip: " + reply["roundtrip"]
    if outcome == "compiled" and reply.get("grammar_chars", 0) > MAX_GRAMMAR_CHARS:
        return f"grammar of {reply['grammar_chars']} chars"
    work = (reply.get("front_ms", 0) + reply.get("compile_ms", 0)) / 1e3
    if work > slow_s:
        return f"slow: front end + compile + first mask {work:.1f} s"
    return None


class StopFuzz(BaseException):
    """Time is up (a BaseException, so that hypothesis stops without shrinking)."""


def signature(failure: str) -> str:
    """What makes two failures the same kind: the message without numbers and excerpts."""
    return re.sub(r"\d+", "N", failure.split(" at line")[0].split(": {")[0])[:120]


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("target", choices=["regex", "schema", "ebnf"])
    p.add_argument("--minutes", type=float, default=10)
    p.add_argument("--timeout", type=float, default=10, help="seconds per input (a hang beyond)")
    p.add_argument("--slow", type=float, default=2, help="seconds of front end + compile + first mask (a failure)")
    p.add_argument("--batch", type=int, default=300, help="examples per hypothesis run")
    p.add_argument("--seed", type=int, default=None)
    p.add_argument("--out", default="/tmp/xgr2-fuzz")
    args = p.parse_args(argv)

    from hypothesis import HealthCheck, Phase, given, seed, settings

    strategy = strategies()[args.target]
    worker = Worker(args.timeout)
    out_dir = Path(args.out)
    out_dir.mkdir(parents=True, exist_ok=True)
    stats = {"inputs": 0, "outcomes": {}, "slowest": [], "failures": {}, "messages": {}}
    deadline = time.monotonic() + args.minutes * 60
    rng = random.Random(args.seed)
    t_start = time.monotonic()

    def check(job):
        if time.monotonic() > deadline + 60:  # a long batch or shrink: stop here
            raise StopFuzz
        job = dict(job, seed=stats["inputs"])
        reply = worker.run(job)
        stats["inputs"] += 1
        o = reply["outcome"]
        stats["outcomes"][o] = stats["outcomes"].get(o, 0) + 1
        if o not in ("compiled", "crash", "hang"):
            key = f"{o} at {reply['stage']}: {reply.get('message', '')[:70]}"
            stats["messages"][key] = stats["messages"].get(key, 0) + 1
        work = reply.get("front_ms", 0) + reply.get("compile_ms", 0)
        stats["slowest"] = sorted(stats["slowest"] + [(work, reply.get("wall_s", 0), job["input"], reply)],
                                  key=lambda x: -max(x[0], x[1] * 1e3))[:5]
        failure = judge(reply, args.slow)
        if failure:
            sig = signature(failure)
            if sig in known:  # already shrunk once: count it, keep looking for new kinds
                known[sig] += 1
                return
            raise AssertionError(f"{failure}: {json.dumps(reply)[:600]}")

    known: dict[str, int] = {}  # failure signature -> later occurrences
    batches = 0
    while time.monotonic() < deadline:
        batches += 1
        batch_seed = rng.getrandbits(64)

        @seed(batch_seed)
        @settings(max_examples=args.batch, deadline=None, database=None, derandomize=False,
                  suppress_health_check=list(HealthCheck),
                  phases=[Phase.generate, Phase.shrink])
        @given(strategy)
        def run(job):
            check(job)

        try:
            run()
        except StopFuzz:
            break
        except Exception as e:  # noqa: BLE001 - shrunk: hypothesis re-raised on the minimal example
            msg = str(e).split("\n")[0]
            kind = msg.split(":")[0]
            known.setdefault(signature(msg), 0)
            stats["failures"].setdefault(kind, []).append({"message": msg, "batch_seed": batch_seed,
                                                           "repro": getattr(e, "__notes__", [])})
            print(f"FAILURE ({kind}) in batch {batches} (seed {batch_seed}):\n  {msg[:800]}")
            for note in getattr(e, "__notes__", []):
                print("  " + note[:2000])
            (out_dir / f"{args.target}-failure-{len(sum(stats['failures'].values(), []))}.json").write_text(
                json.dumps(stats["failures"][kind][-1], indent=1, default=str))
        elapsed = time.monotonic() - t_start
        slowest = stats["slowest"][0] if stats["slowest"] else (0, 0, "", {})
        print(f"[{elapsed:6.0f} s] batch {batches}: {stats['inputs']} inputs, outcomes {stats['outcomes']};"
              f" slowest {slowest[0]:.0f} ms / {slowest[1]:.1f} s wall: {str(slowest[2])[:120]!r}", flush=True)
    worker.close()

    print(f"\n== fuzz {args.target}: {stats['inputs']} inputs in {(time.monotonic() - t_start) / 60:.1f} min,"
          f" {batches} hypothesis batches of up to {args.batch}")
    print("outcomes: " + ", ".join(f"{k} {v}" for k, v in sorted(stats["outcomes"].items(), key=lambda kv: -kv[1])))
    print("most frequent refusals:")
    for msg, n in sorted(stats["messages"].items(), key=lambda kv: -kv[1])[:12]:
        print(f"  {n:6d}  {msg}")
    print("failures: " + ("none" if not stats["failures"] else ""))
    for kind, items in stats["failures"].items():
        print(f"  {kind}: {len(items)} (first: {items[0]['message'][:300]})")
        for note in items[0]["repro"]:
            print("    " + note[:1500])
    for sig, n in known.items():
        print(f"  seen again {n} times: {sig}")
    print("slowest jobs (front end + compile + first mask ms, wall s incl. walk):")
    for work, wall, inp, reply in stats["slowest"]:
        text = inp if isinstance(inp, str) else json.dumps(inp, ensure_ascii=False)
        print(f"  {work:8.1f} ms  {wall:6.2f} s  {reply['outcome']}  {text[:300]!r}")
    (out_dir / f"{args.target}-summary.json").write_text(json.dumps(
        {k: v for k, v in stats.items() if k != "slowest"}
        | {"slowest": [(w, s, i) for w, s, i, _ in stats["slowest"]]}, indent=1, default=str))
    return 1 if stats["failures"] else 0


if __name__ == "__main__":
    if sys.argv[1:2] == ["--worker"]:
        worker_main()
    else:
        sys.exit(main())

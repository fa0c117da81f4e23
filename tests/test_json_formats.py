"""Grammars of JSON Schema ``format`` values (``xgr2._core.json_format_ebnf``) against
independent validators.

For each format the grammar, driven byte by byte, accepts a string iff the oracle does.
The oracle is jsonschema's format checker (Draft 2020-12) where it follows the RFC; where
the grammar is deliberately narrower (docs/json_formats.md), exactness is checked against
the validator restricted to the narrowed set, and soundness (accepted => the validator
accepts) always. Strings: hypothesis-generated valid instances, their mutations, and
hand-picked edge cases. Own references (transcribed from the RFC, not from the grammar)
are marked as such.
"""

import ipaddress
import random
import re
import string
import time

import pytest

import xgr2
from parsing import accepts as accepts_text

jsonschema = pytest.importorskip("jsonschema")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from hypothesis.provisional import domains, urls  # noqa: E402

CHECKER = jsonschema.Draft202012Validator.FORMAT_CHECKER
BYTES = xgr2.TokenizerInfo([bytes([i]) for i in range(256)])
# The header's contract: matched strings are printable ASCII without `"` and `\`.
CONTRACT = frozenset(chr(c) for c in range(0x20, 0x7F)) - {'"', "\\"}
FORMATS = ["date", "time", "date-time", "duration", "email", "idn-email", "hostname", "ipv4", "ipv6",
           "uri", "uri-reference", "iri", "iri-reference", "uri-template", "uuid", "json-pointer",
           "relative-json-pointer"]
SETTINGS = settings(max_examples=80, deadline=None, suppress_health_check=list(HealthCheck))

_compiled = {}


def compiled(fmt):
    if fmt not in _compiled:
        _compiled[fmt] = xgr2.compile(xgr2.Grammar.from_ebnf(xgr2._core.json_format_ebnf(fmt)), BYTES)
    return _compiled[fmt]


def accepts(fmt, s):
    return accepts_text(compiled(fmt).initial_state(), s)


def conforms(fmt, s):
    if fmt not in CHECKER.checkers:  # jsonschema checks some formats only with extra packages
        pytest.skip(f"jsonschema does not check {fmt!r} here (pip install jsonschema[format])")
    return CHECKER.conforms(s, fmt)


def mutations(s, alphabet, count=8, seed=0):
    """Strings one edit (insert, delete, replace a character) away from `s`."""
    rng = random.Random(f"{s}/{seed}")
    out = []
    for _ in range(count):
        i = rng.randrange(len(s) + 1)
        op = rng.randrange(3)
        if op == 0:
            out.append(s[:i] + rng.choice(alphabet) + s[i:])
        elif i < len(s):
            out.append(s[:i] + (rng.choice(alphabet) if op == 1 else "") + s[i + 1:])
    return out


def check(fmt, strings, oracle, sound=None):
    """accepts == oracle on every string; accepted => sound (a wider validator)."""
    for s in strings:
        got = accepts(fmt, s)
        assert got == bool(oracle(s)), (fmt, s, got)
        if got:
            assert set(s) <= CONTRACT, (fmt, s)
            assert conforms(fmt, s) if sound is None else sound(s), (fmt, s)


def with_mutations(strings, alphabet):
    out = list(strings)
    for s in strings:
        out += mutations(s, alphabet)
    return out


# ---------------------------------------------------------------------------------------
# Every format: the EBNF parses, compiles, and the contract holds at every step.

@pytest.mark.parametrize("fmt", FORMATS)
def test_grammar_compiles_quickly(fmt):
    text = xgr2._core.json_format_ebnf(fmt)
    assert text and "root ::=" in text
    best = min(_timed(lambda: xgr2.compile(xgr2.Grammar.from_ebnf(text), BYTES)) for _ in range(5))
    assert best < 0.02, (fmt, best)  # generous bound for a loaded machine; measured well below


def _timed(fn):
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def test_unknown_and_refused_formats():
    for fmt in ["regex", "no-such-format", "idn-hostname", "", "DATE"]:
        assert xgr2._core.json_format_ebnf(fmt) is None


SAMPLES = {
    "date": "2024-02-29", "time": "23:59:59.5+05:30", "date-time": "2000-02-29T00:00:00Z",
    "duration": "P1Y2M3DT4H5M6S", "email": "a.b+c@example.com", "idn-email": "x@[IPv6:::1]",
    "hostname": "www.example.com.", "ipv4": "192.168.0.1", "ipv6": "::ffff:1.2.3.4",
    "uri": "http://u@[v1.x]:80/a?b#c", "uri-reference": "//h/p?q", "iri": "a:b", "iri-reference": "../x",
    "uri-template": "/x{?a,b*}{#c:3}", "uuid": "123e4567-E89B-12d3-a456-426614174000",
    "json-pointer": "/a~0b/~1/ !", "relative-json-pointer": "10/x",
}


@pytest.mark.parametrize("fmt", FORMATS)
def test_no_byte_outside_the_contract(fmt):
    """At each prefix of a valid string, no byte outside printable ASCII, `"` or `\\` is allowed."""
    s = SAMPLES[fmt]
    assert accepts(fmt, s)
    forbidden = [b for b in range(256) if chr(b) not in CONTRACT]
    state = compiled(fmt).initial_state()
    for ch in s + "\0":
        for b in forbidden:
            assert state.try_advance_bytes(bytes([b])) is None, (fmt, state, b)
        if ch != "\0":
            state = state.advance_bytes(ch.encode())


# ---------------------------------------------------------------------------------------
# RFC 3339 date, time, date-time: jsonschema's checkers (Python's date, rfc3339-validator)
# are exact oracles, leap seconds included (both refuse second 60).

def _offset(minutes):
    if minutes is None:
        return "Z"
    sign = "+" if minutes >= 0 else "-"
    return f"{sign}{abs(minutes) // 60:02d}:{abs(minutes) % 60:02d}"


times = st.builds(
    lambda t, frac, off, z: t.strftime("%H:%M:%S") + frac + (z if off is None else _offset(off)),
    st.times(), st.sampled_from(["", ".0", ".5", ".123456", ".000000001"]),
    st.none() | st.integers(-23 * 60 - 59, 23 * 60 + 59), st.sampled_from(["Z", "z"]),
)
DATE_EDGES = ["2000-02-29", "1900-02-29", "2100-02-29", "2004-02-29", "2003-02-29", "1600-02-29", "0400-02-29",
              "0000-02-29", "0000-01-01", "0001-01-01", "9999-12-31", "2023-04-31", "2023-04-30", "2023-13-01",
              "2023-00-10", "2023-01-00", "2023-01-32", "2023-1-01", "20230101", "2023-06-31", "2023-11-31"]
TIME_EDGES = ["23:59:60Z", "00:00:00Z", "24:00:00Z", "12:60:00Z", "12:00:00", "12:00:00+24:00",
              "12:00:00+23:59", "12:00:00.Z", "12:00:00.1z", "12:00:00-00:00", "1:00:00Z", "12:00:00+0100"]
DT_ALPHABET = string.digits + "-:.+TtZz "


@SETTINGS
@given(st.lists(st.dates(), min_size=1, max_size=8))
def test_date(ds):
    check("date", with_mutations([d.isoformat() for d in ds], DT_ALPHABET) + DATE_EDGES,
          lambda s: conforms("date", s))


@SETTINGS
@given(st.lists(times, min_size=1, max_size=8))
def test_time(ts):
    check("time", with_mutations(ts, DT_ALPHABET) + TIME_EDGES, lambda s: conforms("time", s))


@SETTINGS
@given(st.lists(st.tuples(st.dates(), st.sampled_from("Tt"), times), min_size=1, max_size=8))
def test_date_time(parts):
    strings = [d.isoformat() + sep + t for d, sep, t in parts]
    edges = [d + "T12:00:00Z" for d in DATE_EDGES] + ["2000-01-01T" + t for t in TIME_EDGES] + [
        "2000-01-01 12:00:00Z", "2000-01-01t12:00:00z"]
    check("date-time", with_mutations(strings, DT_ALPHABET) + edges, lambda s: conforms("date-time", s))


# ---------------------------------------------------------------------------------------
# RFC 3339 Appendix A duration. isoduration (jsonschema's checker) is wider than the
# ABNF (fractions, P1Y2D, ...): exactness against our own transcription of the ABNF as a
# regex, soundness against jsonschema.

_N = r"[0-9]+"
DURATION_RE = re.compile(
    rf"P(?:(?:{_N}D|{_N}M(?:{_N}D)?|{_N}Y(?:{_N}M(?:{_N}D)?)?)(?:T(?:{_N}H(?:{_N}M(?:{_N}S)?)?|{_N}M(?:{_N}S)?|{_N}S))?"
    rf"|T(?:{_N}H(?:{_N}M(?:{_N}S)?)?|{_N}M(?:{_N}S)?|{_N}S)|{_N}W)"
)


@SETTINGS
@given(st.lists(st.from_regex(DURATION_RE, fullmatch=True), min_size=1, max_size=8))
def test_duration(ds):
    edges = ["P", "PT", "P1Y2D", "PT1H1S", "P1W2D", "P1.5Y", "p1y", "P1Y1M1DT1H1M1S", "P0D", "PT0S", "P1DT"]
    check("duration", with_mutations(ds, string.digits + "PYMWDTHS.,") + edges,
          lambda s: DURATION_RE.fullmatch(s))


# ---------------------------------------------------------------------------------------
# IPv4 / IPv6: Python's ipaddress (jsonschema's checker) is exact.

@SETTINGS
@given(st.lists(st.ip_addresses(v=4), min_size=1, max_size=8))
def test_ipv4(addrs):
    edges = ["0.0.0.0", "255.255.255.255", "256.0.0.1", "01.2.3.4", "1.2.3", "1.2.3.4.5", "1..2.3", "00.0.0.0"]
    check("ipv4", with_mutations([str(a) for a in addrs], string.digits + "."), lambda s: conforms("ipv4", s))
    check("ipv4", edges, lambda s: conforms("ipv4", s))


def _ipv6_forms(a):
    yield a.compressed
    yield a.exploded
    yield a.exploded.upper()
    v4 = ipaddress.IPv4Address(int(a) & 0xFFFFFFFF)
    yield a.exploded[:-9] + str(v4)  # the low 32 bits as a dotted quad


@SETTINGS
@given(st.lists(st.ip_addresses(v=6), min_size=1, max_size=6))
def test_ipv6(addrs):
    strings = [f for a in addrs for f in _ipv6_forms(a)]
    edges = ["::", "::1", "1::", "::ffff:1.2.3.4", "::1.2.3.4", "1:2:3:4:5:6:7::", "::2:3:4:5:6:7:8",
             "1:2:3:4:5:6:7:8", "1:2:3:4:5:6:7:8:9", "1::2::3", ":::", "1:2:3:4:5:6:1.2.3.4", "12345::",
             "fe80::1%eth0", "::ffff:01.2.3.4", "1:2:3:4:5:6:7:1.2.3.4", "::1.2.3", "1:2:3:4:5::1.2.3.4"]
    check("ipv6", with_mutations(strings, string.hexdigits + ":.") + edges, lambda s: conforms("ipv6", s))


# ---------------------------------------------------------------------------------------
# UUID: jsonschema (uuid.UUID plus hyphen positions) accepts extra hyphens elsewhere
# (`12345678-1234-1234-1234-1234-5678abcd`); exact against RFC 4122 §3's layout (own
# reference), sound against jsonschema.

UUID_RE = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")


@SETTINGS
@given(st.lists(st.uuids(), min_size=1, max_size=8))
def test_uuid(us):
    strings = [str(u) for u in us] + [str(u).upper() for u in us]
    edges = ["12345678-1234-1234-1234-1234-5678abcd", "{12345678-1234-1234-1234-123456789abc}",
             "urn:uuid:12345678-1234-1234-1234-123456789abc", "123456781234123412341234567890ab"]
    check("uuid", with_mutations(strings, string.hexdigits + "-g") + edges, lambda s: UUID_RE.fullmatch(s))


# ---------------------------------------------------------------------------------------
# Host names. jsonschema's checker (fqdn: RFC 1123 labels of 1-63 characters, at most
# 253 besides a trailing dot) is exact for the label syntax; the grammar bounds the total
# length by tiers (docs/json_formats.md), so exactness is on the tiers' union.

def _tiers(total, max_part):
    """{part length: most parts} of the grammar's tiers (a restatement of the docs)."""
    full = (total + 1) // (max_part + 1)
    counts = [2 ** k for k in range(10) if 2 ** k <= (total + 1) // 2] + [full, full + 1, (total + 1) // 2]
    out = {}
    for c in counts:
        if c >= 1:
            length = min(max_part, (total + 1) // c - 1)
            out[length] = (total + 1) // (length + 1)
    return out


def in_tiers(name, total, max_part):
    parts = name.split(".")
    longest = max(len(p) for p in parts)
    return any(len(parts) <= n and longest <= length for length, n in _tiers(total, max_part).items())


def test_tiers_bound_the_total():
    for total, max_part in [(253, 63), (189, 63), (64, 64)]:
        for length, n in _tiers(total, max_part).items():
            assert n * (length + 1) - 1 <= total
        assert max(_tiers(total, max_part).values()) == (total + 1) // 2


HOST_ALPHABET = string.ascii_letters + string.digits + "-._"


@SETTINGS
@given(st.lists(domains(), min_size=1, max_size=8))
def test_hostname(names):
    strings = names + [n + "." for n in names] + [n.upper() for n in names]
    edges = ["a", "a.", ".", "", "-a", "a-", "a--b", "1.2.3.4", "a" * 63, "a" * 64, "a..b", "a_b",
             ".".join(["a" * 63] * 3) + "." + "a" * 61, ".".join(["a" * 63] * 4), ".".join(["a"] * 127),
             ".".join(["a"] * 127) + ".", ".".join(["a"] * 128), ".".join(["ab"] * 84), ".".join(["abc"] * 63)]
    check("hostname", with_mutations(strings, HOST_ALPHABET) + edges,
          lambda s: conforms("hostname", s) and in_tiers(s[:-1] if s.endswith(".") else s, 253, 63))


# ---------------------------------------------------------------------------------------
# E-mail. jsonschema only checks for an `@`; the reference is our own transcription of
# RFC 5321 §4.1.2 Mailbox restricted to Dot-string local parts and IPv4 / IPv6 address
# literals, with §4.5.3.1's lengths (local part <= 64, domain <= 189 as the grammar
# allots them) and the tiers.

ATEXT = re.escape("!#$%&'*+/=?^_`{|}~-")
DOT_ATOM = re.compile(rf"[A-Za-z0-9{ATEXT}]+(?:\.[A-Za-z0-9{ATEXT}]+)*")
DOMAIN = re.compile(r"(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*")


def email_reference(s):
    local, at, domain = s.rpartition("@")
    if not at or not DOT_ATOM.fullmatch(local) or not in_tiers(local, 64, 64):
        return False
    if domain.startswith("[") and domain.endswith("]"):
        literal = domain[1:-1]
        try:
            if literal.startswith("IPv6:"):
                return ipaddress.IPv6Address(literal[5:]) is not None and "%" not in literal
            return ipaddress.IPv4Address(literal) is not None
        except ValueError:
            return False
    return bool(DOMAIN.fullmatch(domain)) and in_tiers(domain, 189, 63)


@SETTINGS
@given(st.lists(st.emails(), min_size=1, max_size=8))
def test_email(addrs):
    edges = ["a@b", "@b", "a@", "a.@b", ".a@b", "a..b@c", "a@[1.2.3.4]", "a@[IPv6:::1]", "a@[IPv6:1.2.3.4]",
             "a@[01.2.3.4]", "a@b.", "a b@c", "a@b@c", '"a"@b', "a@-b", "x" * 64 + "@b", "x" * 65 + "@b",
             "a@" + ".".join(["b" * 63] * 3), "a@[tag:x]"]
    for fmt in ["email", "idn-email"]:
        check(fmt, with_mutations(addrs, string.ascii_letters + "@.[]:-+!_~"), email_reference)
        check(fmt, edges, email_reference)


# ---------------------------------------------------------------------------------------
# URIs (RFC 3986): jsonschema's checker (rfc3987) is exact, and so is rfc3986-validator:
# both are checked. IRIs restricted to ASCII are the same language.

rfc3986_validator = pytest.importorskip("rfc3986_validator")
URI_ALPHABET = string.ascii_letters[:8] + string.digits[:4] + ":/?#[]@!$&'()*+,;=-._~% v"


def _uri_ok(s, reference):
    """Both validators accept dotted quads with leading zeros inside an IP literal, which
    RFC 3986 §3.2.2 (dec-octet) refuses: Python's ipaddress decides those."""
    literal = re.search(r"\[([^\]]*)\]", s)
    if literal and not literal.group(1)[:1] in "vV" and "." in literal.group(1):
        try:
            ipaddress.IPv6Address(literal.group(1))
        except ValueError:
            return False
    return rfc3986_validator.validate_rfc3986(s, rule="URI_reference" if reference else "URI")


@settings(SETTINGS, max_examples=60)
@given(st.lists(urls() | st.from_regex(rfc3986_validator.URI_RE_COMP, fullmatch=True)
                | st.from_regex(re.compile(rfc3986_validator.RELATIVE_REF_RE, re.VERBOSE), fullmatch=True),
                min_size=1, max_size=6))
def test_uri(samples):
    samples = [s for s in samples if set(s) <= CONTRACT]
    edges = ["http://[::1]:80/", "http://[v7.a:b]/", "http://[1.2.3.4]/", "a:", "a:%zz", "a:%4A", "1a:b",
             "//h", "?q", "#f", "", "a/b:c", "./a:c", "http://u@h:p/", "http://h:80:80/", "mailto:a@b",
             "urn:isbn:0451450523", "http://[::ffff:1.2.3.4]/", "http://[::ffff:01.2.3.4]/", "a:b c", "a:<>"]
    strings = with_mutations(samples, URI_ALPHABET) + edges
    for fmt, reference in [("uri", False), ("uri-reference", True), ("iri", False), ("iri-reference", True)]:
        check(fmt, strings, lambda s: _uri_ok(s, reference) and conforms(fmt, s))


# ---------------------------------------------------------------------------------------
# URI Template (RFC 6570 §2, level 4). The uri-template package (jsonschema's checker) is
# wider than the RFC (it takes any literal character but braces, `%` without hex digits,
# `{a:01}`, `{a..b}`) and refuses some valid forms (`{%41}`, `{a:1000}`), which the
# grammar refuses too: exactness is against our own transcription of §2 as a regex, so
# narrowed, soundness against the package.

_PCT = r"%[0-9A-Fa-f]{2}"
_VARCHAR = rf"(?:[A-Za-z0-9_]|{_PCT})"
_VARSPEC = rf"[A-Za-z0-9_](?:\.?{_VARCHAR})*(?::[1-9][0-9]{{0,2}}|\*)?"  # narrowed: see above
TEMPLATE_RE = re.compile(rf"(?:[!#$&(-;=?-\[\]_a-z~]|{_PCT}|\{{[+#./;?&]?{_VARSPEC}(?:,{_VARSPEC})*\}})*")

VARNAME = st.lists(st.sampled_from(["a", "Z", "0", "_", "%41", "%e9"]), min_size=1, max_size=4).flatmap(
    lambda cs: st.lists(st.sampled_from(["", "."]), min_size=len(cs) - 1, max_size=len(cs) - 1).map(
        lambda dots: cs[0] + "".join(d + c for d, c in zip(dots, cs[1:]))))
EXPRESSION = st.builds(
    lambda op, vs: "{" + op + ",".join(vs) + "}", st.sampled_from(["", "+", "#", ".", "/", ";", "?", "&"]),
    st.lists(st.builds(lambda v, m: v + m, VARNAME, st.sampled_from(["", "*", ":1", ":999", ":1000", ":0"])),
             min_size=1, max_size=3),
)
LITERALS = st.text(alphabet="abcXYZ019/.:?=&-_~[]!%20", max_size=6)
TEMPLATE = st.lists(LITERALS | EXPRESSION, max_size=4).map("".join)


@SETTINGS
@given(st.lists(TEMPLATE, min_size=1, max_size=8))
def test_uri_template(templates):
    edges = ["{", "}", "{}", "{a", "{=a}", "{!a}", "{@a}", "{|a}", "{,a}", "{a,}", "{a.}", "{.a}", "{a..b}",
             "%", "%4", "%4g", "{a:0}", "{a:01}", "{a*:3}", "x{a}y{b}", "'", "<", "^", "`", "|", "{%41}",
             "{a%41}", "{a.%41}"]

    check("uri-template", with_mutations(templates, "{}+#./;?&=,!@|*:%0aA_ '<") + edges,
          lambda s: TEMPLATE_RE.fullmatch(s))


# ---------------------------------------------------------------------------------------
# JSON Pointer (RFC 6901): jsonschema (the jsonpointer package) is exact on the contract's
# characters; the grammar refuses the others (`"`, `\`, control and non-ASCII characters).

POINTER = st.lists(st.text(alphabet=sorted(CONTRACT), max_size=6).map(lambda t: "/" + t.replace("~", "~0")
                   .replace("/", "~1")), max_size=4).map("".join)


@SETTINGS
@given(st.lists(POINTER, min_size=1, max_size=8))
def test_json_pointer(pointers):
    edges = ["", "/", "//", "a", "/~", "/~2", "/~01", "/a~", '/"', "/\\", "/\u00e9", "/\t", "#/a"]
    check("json-pointer", with_mutations(pointers, "/~01a ") + edges,
          lambda s: set(s) <= CONTRACT and conforms("json-pointer", s))


# Relative JSON Pointer (draft-handrews-relative-json-pointer-01 §3; no index
# manipulation). jsonschema's checker wrongly refuses integers with a 0 followed by a
# digit after the first position ("100"): the reference is our own transcription of §3,
# soundness is checked against jsonschema but for such integers.
REL_RE = re.compile(r"(?:0|[1-9][0-9]*)(?:#|(?:/(?:[^/~]|~[01])*)*)")


@SETTINGS
@given(st.lists(st.tuples(st.integers(0, 10 ** 6), st.just("#") | POINTER), min_size=1, max_size=8))
def test_relative_json_pointer(pairs):
    strings = [f"{n}{p}" for n, p in pairs]
    edges = ["0", "0#", "01", "00/a", "1/a", "100#", "-1/a", "#", "/a", "0/a~2", "1#/a", "0+1/a"]

    def sound(s):
        digits = re.match(r"[0-9]*", s).group()
        return conforms("relative-json-pointer", s) or re.search(r"0[0-9]", digits)

    check("relative-json-pointer", with_mutations(strings, "/~01#a") + edges,
          lambda s: set(s) <= CONTRACT and REL_RE.fullmatch(s), sound=sound)

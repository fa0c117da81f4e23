"""The numeric JSON Schema keywords (minimum, maximum, exclusiveMinimum, exclusiveMaximum,
multipleOf) against exact oracles.

The oracle: a text is accepted iff it is JSON number syntax (``json.loads``, values kept
exact with ``Decimal``/``int``), its exact value satisfies the constraints, and it is in
the documented form: integers never have a fraction or exponent, and exponent notation
is accepted only when the constraints depend on the sign alone (no multipleOf, every
bound absent or 0). Texts are fed byte by byte through a one-byte-per-token vocabulary.
"""

import json
import random
import time
from decimal import Decimal, localcontext
from fractions import Fraction

import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import xgr2

TOK = xgr2.TokenizerInfo([bytes([i]) for i in range(256)])


def numeric_grammar(integer, minimum="", maximum="", exclusive_minimum=False, exclusive_maximum=False,
                    multiple_of=""):
    handle = xgr2._core.GrammarIR._numeric_range(integer, minimum, maximum, exclusive_minimum, exclusive_maximum,
                                                 multiple_of)
    return None if handle is None else xgr2.Grammar(handle)


def walk(state, text):
    """The state after `text`, or None; checks on the way that every state reached has a
    continuation (it can end or some byte is allowed): no dead ends."""
    for byte in text.encode():
        state = state.try_advance_bytes(bytes([byte]))
        if state is None:
            return None
        assert state.can_terminate or state.bitmask().any(), text
    return state


def accepts(state, text):
    end = walk(state, text)
    return end is not None and end.can_terminate


def exact_value(text):
    """The exact value of a JSON number text, or None if it is not one."""
    try:
        v = json.loads(text, parse_float=Decimal, parse_int=int, parse_constant=lambda c: None)
    except (ValueError, RecursionError):
        return None
    if isinstance(v, bool) or not isinstance(v, (int, Decimal)):
        return None
    return Fraction(v)


def oracle(text, integer, minimum, maximum, exclusive_minimum, exclusive_maximum, multiple_of):
    value = exact_value(text)
    if value is None:
        return False
    has_exponent = "e" in text or "E" in text
    if integer and ("." in text or has_exponent):
        return False
    sign_only = all(b == "" or Fraction(Decimal(b)) == 0 for b in (minimum, maximum))
    if has_exponent and not (sign_only and multiple_of == ""):
        return False
    if minimum:
        lo = Fraction(Decimal(minimum))
        if value < lo or (exclusive_minimum and value == lo):
            return False
    if maximum:
        hi = Fraction(Decimal(maximum))
        if value > hi or (exclusive_maximum and value == hi):
            return False
    if multiple_of:
        if (value / Fraction(Decimal(multiple_of))).denominator != 1:
            return False
    return True


def number_text(value: Fraction, places: int) -> str:
    """`value` written with exactly `places` fraction digits (it must fit)."""
    scaled = value * 10**places
    assert scaled.denominator == 1
    n = abs(scaled.numerator)
    digits = str(n).rjust(places + 1, "0")
    text = digits[:-places] + "." + digits[-places:] if places else digits
    return ("-" if value < 0 else "") + text


def multiples_near(bounds, multiple_of):
    """Multiples of `multiple_of` around each bound (and around 0)."""
    m = Fraction(Decimal(multiple_of))
    places = max(0, -Decimal(multiple_of).normalize().as_tuple().exponent)
    out = set()
    for b in [b for b in bounds if b] + ["0"]:
        q = Fraction(Decimal(b)) // m
        for j in range(-3, 4):
            t = number_text((q + j) * m, places)
            out.update({t, t + ("0" if "." in t else ".00")})
    return out


def candidates(bounds, rng, integer):
    """Texts around the bounds: bound +- small steps, trailing zeros, -0, leading zeros,
    exponent forms, and random strings of number characters."""
    out = {"0", "-0", "0.0", "-0.0", "00", "01", "-01", "1", "-1", "0.", ".5", "-", "", "1e5", "1E-2", "0e0",
           "-0e1", "2.50", "1.0", "1e400", "-1e400", "1.5e+3"}
    for b in bounds:
        if not b:
            continue
        v = Fraction(Decimal(b))
        for places in (0, 1, 2, 3, 7):
            for step_places in (0, 1, 2, 3, 6):
                step = Fraction(1, 10**step_places)
                for k in (-2, -1, 0, 1, 2):
                    w = v + k * step
                    p = max(places, step_places)
                    if (w * 10**p).denominator == 1:
                        t = number_text(w, p)
                        out.update({t, t + ("0" if "." in t else ".0"), "0" + t.lstrip("-")})
                        if w == 0:
                            out.add("-" + t)
        m = Decimal(b)
        out.update({f"{m:e}", f"{m:E}", str(m), f"{m:f}"})
    for _ in range(60):
        out.add("".join(rng.choice("0123456789.-eE+") for _ in range(rng.randint(1, 8))))
        out.add(str(rng.randint(-10**6, 10**6)) + ("." + str(rng.randint(0, 999)) if rng.random() < 0.5 else ""))
    return sorted(out)


def check_constraints(integer, minimum="", maximum="", exclusive_minimum=False, exclusive_maximum=False,
                      multiple_of="", extra=(), rng=None):
    rng = rng or random.Random(0)
    args = (integer, minimum, maximum, exclusive_minimum, exclusive_maximum, multiple_of)
    grammar = numeric_grammar(*args)
    texts = candidates([minimum, maximum, multiple_of], rng, integer) + list(extra)
    if multiple_of:
        texts += sorted(multiples_near([minimum, maximum], multiple_of))
    if grammar is None:  # the front end says no value satisfies: no candidate may
        assert not any(oracle(t, *args) for t in texts), args
        return
    state = xgr2.compile(grammar, TOK).initial_state()
    for text in texts:
        want = oracle(text, *args)
        assert accepts(state, text) == want, (args, text, want)


# --- fixed cases, each checked against the oracle -----------------------------------------------

@pytest.mark.parametrize("args", [
    (False, "0.25", "", False, False, ""),
    (False, "0.25", "", True, False, ""),
    (False, "", "0.25", False, True, ""),
    (False, "-2.5", "10", False, False, ""),
    (False, "-2.5", "-0.125", True, True, ""),
    (False, "0", "", True, False, ""),
    (False, "0", "", False, False, ""),
    (False, "", "0", False, True, ""),
    (False, "0", "0", False, False, ""),
    (False, "-0", "", False, False, ""),
    (False, "1e3", "1E-7", False, False, ""),
    (False, "1E-7", "1e3", False, False, ""),
    (False, "", "", False, False, ""),
    (True, "", "", False, False, ""),
    (True, "1.5", "9.5", False, False, ""),
    (True, "-15", "230", False, True, ""),
    (True, "10", "10", False, False, ""),
    (True, "10", "10", True, False, ""),
    (True, "0", "", False, False, "7"),
    (True, "-100", "100", False, False, "15"),
    (True, "", "", False, False, "0.5"),
    (True, "", "", False, False, "2.5"),
    (True, "1", "1000", False, False, "1e2"),
    (False, "0", "100", False, False, "0.01"),
    (False, "-10", "10", True, True, "2.5"),
    (False, "", "", False, False, "0.3"),
    (False, "0.1", "0.9", False, False, "0.3"),
    (False, "", "", False, False, "1"),
])
def test_fixed_cases(args):
    check_constraints(*args)


def test_huge_bounds_are_exact():
    big = "1" + "0" * 400
    check_constraints(True, "1.0e400", "", False, False, "",
                      extra=[big, big[:-1], big + "0", "9" * 400, str(10**400 + 1), "-" + big])
    check_constraints(False, "", "1e400", False, True, "",
                      extra=[big, "9" * 400 + ".999", "9" * 400 + ".9e1", "-" + big])
    check_constraints(False, "1E-70", "", False, False, "",
                      extra=["0." + "0" * 69 + "1", "0." + "0" * 69 + "09", "0." + "0" * 70 + "1"])


def test_forty_digit_bounds_compile_fast():
    rng = random.Random(1)
    lo = str(rng.randrange(10**39, 10**40))
    hi = str(rng.randrange(10**40, 10**41))
    start = time.perf_counter()
    grammar = numeric_grammar(True, "-" + hi, lo + ".5", False, False, "")
    xgr2.compile(grammar, TOK)
    elapsed = time.perf_counter() - start
    assert elapsed < 0.5, elapsed
    check_constraints(True, "-" + hi, lo + ".5", extra=[lo, "-" + hi, str(int(lo) + 1), str(-int(hi) - 1)])


def test_empty_ranges_return_none():
    assert numeric_grammar(True, "1.2", "1.8") is None
    assert numeric_grammar(True, "5", "3") is None
    assert numeric_grammar(False, "1", "1", True, False) is None
    assert numeric_grammar(True, "1", "4", False, False, "5") is None


@pytest.mark.parametrize("args, message", [
    ((False, "abc", "", False, False, ""), "minimum 'abc' is not a JSON number"),
    ((False, "", "01", False, True, ""), "exclusiveMaximum '01' is not a JSON number"),
    ((False, "", "", False, False, "0"), "multipleOf '0' must be greater than 0"),
    ((False, "", "", False, False, "-2"), "multipleOf '-2' must be greater than 0"),
    ((True, "", "", False, False, "1e400"), "multipleOf '1e400' is too large"),
    ((True, "1e5000", "", False, False, ""), "more than 1000 digits"),
    ((True, "0", "1" + "0" * 39, False, False, "99991"), "automaton states"),
])
def test_errors(args, message):
    with pytest.raises(xgr2.SchemaError, match=message):
        numeric_grammar(*args)


def test_multiple_of_huge_values():
    big = "1" + "0" * 60
    check_constraints(True, "", "", False, False, "3", extra=[big, str(10**60 + 2), str(10**60 - 1), "-" + big])


# --- random constraints (hypothesis) ----------------------------------------------------------

def decimal_text(draw, magnitude):
    places = draw(st.integers(0, 6))
    n = draw(st.integers(-magnitude * 10**places, magnitude * 10**places))
    text = number_text(Fraction(n, 10**places), places)
    style = draw(st.sampled_from(["plain", "exp", "trailing"]))
    if style == "exp" and n != 0:
        d = Decimal(n).scaleb(-places)
        with localcontext() as ctx:
            ctx.prec = 100
            return f"{d:E}" if draw(st.booleans()) else f"{d:e}"
    if style == "trailing" and "." in text:
        return text + "00"
    return text


@st.composite
def constraint_sets(draw):
    integer = draw(st.booleans())
    magnitude = draw(st.sampled_from([10, 1000, 10**25]))
    multiple_of = ""
    if draw(st.integers(0, 3)) == 0:
        if integer:
            multiple_of = draw(st.sampled_from(["2", "3", "7", "10", "12", "25", "0.5", "1.5", "1e1"]))
        else:
            multiple_of = draw(st.sampled_from(["0.01", "0.5", "2.5", "0.3", "3", "1e-3", "0.25"]))
        if magnitude > 1000:  # product automata grow with the bounds' length times the modulus
            magnitude = 1000
    minimum = decimal_text(draw, magnitude) if draw(st.booleans()) else ""
    maximum = decimal_text(draw, magnitude) if draw(st.booleans()) else ""
    return (integer, minimum, maximum, draw(st.booleans()), draw(st.booleans()), multiple_of)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(args=constraint_sets(), seed=st.integers(0, 2**32))
def test_random_constraints_match_oracle(args, seed):
    check_constraints(*args, rng=random.Random(seed))


# `not: {type: integer}` leaves the non-integral numbers, generated in plain notation.
NON_INTEGRAL_SCHEMAS = [
    {"not": {"type": "integer"}},
    {"type": "number", "not": {"type": "integer"}},
    {"oneOf": [{"type": "integer"}, {"type": "number"}]},
    {"oneOf": [{"type": "integer"}, {"type": "string"}, {"type": "number", "minimum": -1.5, "exclusiveMaximum": 2}]},
    {"type": "number", "multipleOf": 0.25, "not": {"type": "integer"}},
    {"type": "array", "items": {"type": "number"}, "contains": {"type": "integer"}, "maxContains": 1},
]


@pytest.mark.parametrize("schema", NON_INTEGRAL_SCHEMAS)
@settings(max_examples=120, deadline=None)
@given(value=st.one_of(
    st.decimals(min_value=-10, max_value=10, places=3, allow_nan=False, allow_infinity=False).map(str),
    st.integers(-10, 10).map(str),
    st.sampled_from(["1.0", "-0.0", "2.50", "15e-1", "1e2", "0.5E1", '"s"', "null"])))
def test_non_integral_numbers_agree_with_jsonschema_in_plain_notation(schema, value):
    """Oracle: jsonschema. Sound on every text; complete on plain notation (no exponent),
    integers in integer syntax (`integer`'s documented narrowing: not 5.000)."""
    text = f"[{value},{value}]" if schema.get("type") == "array" else value
    grammar = xgr2.Grammar.from_json_schema(schema, any_whitespace=False)
    state = xgr2.compile(grammar, TOK).initial_state().try_advance_bytes(text.encode())
    accepted = state is not None and state.can_terminate
    valid = jsonschema.Draft202012Validator(schema).is_valid(json.loads(text))
    number = value.lstrip("-").replace(".", "", 1)
    integral_with_point = "." in value and number.isdigit() and Decimal(value) == Decimal(value).to_integral_value()
    if accepted or ("e" not in value.lower() and not integral_with_point):
        assert accepted == valid, (schema, text)

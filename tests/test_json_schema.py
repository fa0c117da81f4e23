"""JSON Schema front end against the `jsonschema` validator.

Schemas: the hand-written files in tests/schemas/ (one per keyword family), every
tool-parameter schema of the `bfcl-eval` package, and pydantic models. Oracles:

- soundness: random documents drawn from the grammar (random allowed bytes) validate;
- completeness: instances from `hypothesis-jsonschema`, written with the declared
  property order, are accepted in the compact, indented and any-whitespace layouts;
- exactness: mutated instances are accepted iff `jsonschema` says valid (strict=False,
  JSON Schema's own semantics), except where docs/json_schema.md says the grammar is
  narrower (formats, uniqueItems order), where accepted implies valid.
"""

from __future__ import annotations

import decimal
import functools
import json
import math
import random
import re
from decimal import Decimal
from pathlib import Path

import jsonschema
import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import xgr2
from parsing import accepts
from test_regex import _end_of_string, _python

hypothesis_jsonschema = pytest.importorskip("hypothesis_jsonschema")

SCHEMA_DIR = Path(__file__).parent / "schemas"
BYTES = xgr2.TokenizerInfo([bytes([i]) for i in range(256)] + [b"<eos>"], stop_token_ids=[256])


def family_schemas():
    out = []
    for path in sorted(SCHEMA_DIR.glob("*.json")):
        for i, schema in enumerate(json.loads(path.read_text())):
            out.append(pytest.param(schema, id=f"{path.stem}-{i}"))
    return out


FAMILY = family_schemas()


def narrower(schema) -> bool:
    """Schemas whose grammar is documented as narrower than the schema."""
    text = json.dumps(schema)
    return '"format"' in text or '"uniqueItems"' in text


# ------------------------------------------------------------------ writing documents
def property_order(schema) -> dict[str, int]:
    """Declared property names in document order (the grammar's order)."""
    order: dict[str, int] = {}

    def walk(s):
        if isinstance(s, dict):
            props = s.get("properties")
            if isinstance(props, dict):
                for name in props:
                    order.setdefault(name, len(order))
            for k, v in s.items():
                if k not in ("enum", "const", "examples", "default"):
                    walk(v)
        elif isinstance(s, list):
            for v in s:
                walk(v)

    walk(schema)
    return order


def branch_orders(schema) -> list[dict[str, int]]:
    """Key orders a document may need: the schema's, then each top-level anyOf / oneOf
    branch's own declared properties first (a branch writes its declared properties in
    its order, then the others: a property only another branch declares comes after)."""
    whole = property_order(schema)
    orders = [whole]
    if isinstance(schema, dict):
        for key in ("anyOf", "oneOf"):
            branches = schema.get(key)
            for branch in branches if isinstance(branches, list) else []:
                own = property_order(branch)
                for name in whole:
                    own.setdefault(name, len(own))
                if own not in orders:
                    orders.append(own)
    return orders


def accepted_in_some_order(schema, value, orders, layout, ensure_ascii, rng) -> tuple[bool, str]:
    """Whether the grammar accepts ``value`` written in one of ``orders``; the last text."""
    state = compiled(json.dumps(schema), False, layout)
    for order in orders:
        text = dump(value, order, layout=layout, ensure_ascii=ensure_ascii, rng=rng)
        if accepts(state, text):
            return True, text
    return False, text


def number_text(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if math.isinf(v) or math.isnan(v):
        raise ValueError("not JSON")
    text = format(decimal.Decimal(repr(v)), "f")  # positional: no exponent (docs: numbers)
    return text if "." in text else text + ".0"


def dump(value, order, *, layout="compact", ensure_ascii=True, rng=None, depth=0) -> str:
    """JSON text of ``value`` with object keys in ``order`` (others after, as they come)."""
    def ws():
        if layout != "any" or rng.random() < 0.5:
            return ""
        return "".join(rng.choice(" \t\n\r") for _ in range(rng.randint(1, 20)))

    def items_sep():
        return {"compact": ",", "indent": ",\n" + "  " * (depth + 1), "any": ws() + "," + ws()}[layout]

    def open_(b):
        return {"compact": b, "indent": b + "\n" + "  " * (depth + 1), "any": b + ws()}[layout]

    def close(b):
        return {"compact": b, "indent": "\n" + "  " * depth + b, "any": ws() + b}[layout]

    key_sep = {"compact": ":", "indent": ": ", "any": None}[layout]
    sub = functools.partial(dump, order=order, layout=layout, ensure_ascii=ensure_ascii, rng=rng, depth=depth + 1)
    if value is None or isinstance(value, (bool, int, float)):
        return "null" if value is None else number_text(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=ensure_ascii)
    if isinstance(value, list):
        if not value:
            return "[" + (ws() if layout == "any" else "") + "]"
        return open_("[") + items_sep().join(sub(v) for v in value) + close("]")
    keys = sorted(value, key=lambda k: order.get(k, len(order)))
    if not keys:
        return "{" + (ws() if layout == "any" else "") + "}"
    parts = [json.dumps(k, ensure_ascii=ensure_ascii) + (key_sep or ws() + ":" + ws()) + sub(value[k]) for k in keys]
    return open_("{") + items_sep().join(parts) + close("}")


def ecma_pattern(validator, pattern, instance, schema):
    """`pattern` as ECMA-262 (JSON Schema's regex dialect) reads it, not Python: `\\d \\w \\s`
    are ASCII and `$` is the end of the string (Python's also matches before a final
    newline). jsonschema's own check uses Python's `re`."""
    if not isinstance(instance, str):
        return
    python = _end_of_string(_python(pattern))
    if not re.search(python, instance, re.ASCII):
        yield jsonschema.ValidationError(f"{instance!r} does not match {pattern!r}")


@functools.lru_cache(maxsize=None)
def validator_class(base):
    return jsonschema.validators.extend(base, {"pattern": ecma_pattern})


def ecma_property_patterns(schema):
    """``schema`` with each patternProperties pattern rewritten as ecma_pattern reads
    patterns: jsonschema matches those keys (also for additionalProperties) with Python's
    ``re.search``, where ``^[a-z]+$`` matches the key ``"a\\n"``."""
    if isinstance(schema, list):
        return [ecma_property_patterns(x) for x in schema]
    if not isinstance(schema, dict):
        return schema
    out = {k: ecma_property_patterns(v) for k, v in schema.items()}
    if isinstance(schema.get("patternProperties"), dict):
        out["patternProperties"] = {_end_of_string(_python(p)): ecma_property_patterns(v)
                                    for p, v in schema["patternProperties"].items()}
    return out


def is_valid(schema, value, formats=False) -> bool:
    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    checker = cls.FORMAT_CHECKER if formats else None
    return validator_class(cls)(ecma_property_patterns(schema), format_checker=checker).is_valid(value)


@functools.lru_cache(maxsize=None)
def compiled(schema_json: str, strict: bool, layout: str):
    opts = {"compact": dict(any_whitespace=False), "indent": dict(indent=2), "any": {}}[layout]
    grammar = xgr2.Grammar.from_json_schema(schema_json, strict=strict, **opts)
    return xgr2.compile(grammar, BYTES).initial_state()


# ------------------------------------------------------------------ soundness: random documents
def random_document(start, rng: random.Random, budget: int = 300) -> bytes | None:
    """Random allowed bytes, preferring closers and the end; None if it runs too long."""
    state, out = start, bytearray()
    closers, openers = set(b'"]}'), set(b"[{")
    for _ in range(4 * budget):
        if state.is_terminated:
            return bytes(out)
        allowed = np.flatnonzero(xgr2.bitmask_to_bool(state.bitmask(), BYTES.vocab_size)).tolist()
        assert allowed, f"dead end after {bytes(out)!r}"
        over = len(out) > budget
        preferred = [t for t in allowed if t == 256 or t in closers]
        if preferred and (over or rng.random() < 0.3):
            token = 256 if 256 in preferred else rng.choice(preferred)
        else:
            token = rng.choice([t for t in allowed if not (over and t in openers)] or allowed)
        state = state.advance(token)
        if token != 256:
            out.append(token)
    return None


@pytest.mark.parametrize("schema", FAMILY)
@pytest.mark.parametrize("strict", [True, False])
def test_random_documents_of_the_grammar_validate(schema, strict):
    start = compiled(json.dumps(schema), strict, "any")
    rng = random.Random(0)
    for _ in range(20):
        doc = random_document(start, rng)
        if doc is None:
            continue
        value = json.loads(doc)
        assert is_valid(schema, value), doc


# ------------------------------------------------------------------ completeness and exactness
MUTANTS = [0, -1, 1.5, 10**30, "", "x", "abcdefgh", "2020-01-01", True, None, [], {}, [1], {"a": 1}, "é\n"]


def mutate(value, rng: random.Random):
    """A copy of ``value`` with one random change."""
    value = json.loads(json.dumps(value))
    paths = []

    def walk(v, path):
        paths.append(path)
        if isinstance(v, list):
            for i, x in enumerate(v):
                walk(x, path + [i])
        elif isinstance(v, dict):
            for k, x in v.items():
                walk(x, path + [k])

    walk(value, [])
    path = rng.choice(paths)
    if not path:
        return rng.choice(MUTANTS)
    parent = value
    for p in path[:-1]:
        parent = parent[p]
    kind = rng.random()
    if kind < 0.5:
        parent[path[-1]] = rng.choice(MUTANTS)
    elif kind < 0.7:
        del parent[path[-1]]
    elif isinstance(parent, dict):
        # A new key sorts last; a key declared elsewhere in the schema could be written
        # where this object's grammar does not expect it (declared order is per object).
        parent["zz"] = rng.choice(MUTANTS)
    else:
        parent.append(rng.choice(MUTANTS))
    return value


def has_integral_float(value) -> bool:
    if isinstance(value, float):
        return value.is_integer()
    if isinstance(value, list):
        return any(has_integral_float(v) for v in value)
    if isinstance(value, dict):
        return any(has_integral_float(v) for v in value.values())
    return False


def check_instances(schema, data, n_mutations=4):
    try:
        value = data.draw(hypothesis_jsonschema.from_schema(schema), label="instance")
    except hypothesis_jsonschema._canonicalise.HypothesisRefResolutionError:
        pytest.skip("hypothesis-jsonschema cannot draw recursive schemas (the random-document test covers them)")
    # hypothesis-jsonschema predates some 2020-12 keywords (prefixItems) and reads patterns
    # as Python does: skip its misses.
    if not is_valid(schema, value):
        return
    # An integral float (0.0) where the schema says `integer`: valid, written "0.0", which
    # the grammar's integer syntax leaves out (documented narrower; hypothesis-jsonschema
    # draws such values now and then).
    assume(not has_integral_float(value))
    # jsonschema checks a fractional multipleOf in floating point (0.6900000000000001 is a
    # "multiple" of 0.01); the grammar is exact on the decimal text.
    if isinstance(value, float) and isinstance(schema, dict) and "multipleOf" in schema:
        assume(Decimal(repr(value)) % Decimal(str(schema["multipleOf"])) == 0)
    rng = random.Random(data.draw(st.integers(0, 2**32), label="seed"))
    orders = branch_orders(schema)
    for layout in ("compact", "indent", "any"):
        for ensure_ascii in (True, False):
            ok, text = accepted_in_some_order(schema, value, orders, layout, ensure_ascii, rng)
            if narrower(schema):
                assert not ok or is_valid(schema, value, formats=True), text
            else:
                assert ok, text
    for _ in range(n_mutations):
        bad = mutate(value, rng)
        layout = rng.choice(["compact", "indent", "any"])
        ok, text = accepted_in_some_order(schema, bad, orders, layout, rng.random() < 0.5, rng)
        if narrower(schema):
            assert not ok or is_valid(schema, bad, formats=True), text
        else:
            assert ok == is_valid(schema, bad), (text, is_valid(schema, bad))


@pytest.mark.parametrize("schema", FAMILY)
@settings(max_examples=15, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_instances_and_mutations_agree_with_jsonschema(schema, data):
    check_instances(schema, data)


# ------------------------------------------------------------------ BFCL tool parameters
BFCL_TYPES = {"dict": "object", "float": "number", "tuple": "array", "any": None}


def bfcl_to_standard(s):
    """BFCL's Python-typed parameter schemas as standard JSON Schema (None: other types)."""
    if isinstance(s, list):
        out = [bfcl_to_standard(x) for x in s]
        return None if any(x is None for x in out) else out
    if not isinstance(s, dict):
        return s
    out = {}
    for k, v in s.items():
        if k in ("description", "default", "optional", "title"):
            continue
        if k == "type":
            if v in BFCL_TYPES:
                if BFCL_TYPES[v] is None:
                    continue
                v = BFCL_TYPES[v]
            elif v not in ("object", "array", "string", "integer", "number", "boolean", "null"):
                return None
            out[k] = v
        elif k in ("properties",):
            props = {name: bfcl_to_standard(p) for name, p in v.items()}
            if any(p is None for p in props.values()):
                return None
            out[k] = props
        elif k in ("items", "additionalProperties"):
            sub = bfcl_to_standard(v)
            if sub is None:
                return None
            out[k] = sub
        else:
            out[k] = v
    return out


@functools.lru_cache(maxsize=1)
def bfcl_schemas():
    try:
        import bfcl_eval
    except ImportError:
        return []
    data = Path(bfcl_eval.__file__).parent / "data"
    seen, out = set(), []
    for path in sorted(data.glob("BFCL_v4_*.json")):
        for line in path.read_text().splitlines():
            try:
                entry = json.loads(line)
            except ValueError:
                continue
            for fn in entry.get("function", []) if isinstance(entry.get("function"), list) else []:
                schema = bfcl_to_standard(fn.get("parameters", {}))
                if schema is None:
                    continue
                key = json.dumps(schema, sort_keys=True)
                if key not in seen:
                    seen.add(key)
                    out.append(schema)
    return out


def test_every_bfcl_parameter_schema_compiles_or_names_its_keyword():
    schemas = bfcl_schemas()
    if not schemas:
        pytest.skip("bfcl-eval is not installed (pip install --no-deps bfcl-eval)")
    refused = {}
    for schema in schemas:
        try:
            xgr2.Grammar.from_json_schema(schema)
        except xgr2.SchemaError as e:
            assert e.pointer.startswith("/") or e.pointer == "", e
            refused[str(e)[:60]] = refused.get(str(e)[:60], 0) + 1
    assert len(schemas) > 1000
    assert sum(refused.values()) <= len(schemas) // 20, refused


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_bfcl_instances_and_mutations_agree_with_jsonschema(data):
    schemas = bfcl_schemas()
    if not schemas:
        pytest.skip("bfcl-eval is not installed")
    schema = data.draw(st.sampled_from(schemas), label="schema")
    try:
        xgr2.Grammar.from_json_schema(schema)
    except xgr2.SchemaError:
        return
    try:
        check_instances(schema, data, n_mutations=2)
    except hypothesis_jsonschema._canonicalise.InvalidArgument:
        return


# ------------------------------------------------------------------ token masks
@pytest.mark.parametrize("index", [0, 2, 3])
def test_token_masks_along_a_document_match_brute_force(index, llama3_tokenizer_info, llama3_hf_tokenizer):
    from test_mask_oracle import check_along

    schema = json.loads((SCHEMA_DIR / "objects.json").read_text())[index]
    value = {"a": 7, "b": "hé", "c": None, "zz": True} if index != 3 else {"a": -12}
    value = {k: v for k, v in value.items() if is_valid(schema, {**{"a": 1}, k: v})}
    assert is_valid(schema, value)
    text = json.dumps(value, ensure_ascii=False)
    compiled_grammar = xgr2.compile(xgr2.Grammar.from_json_schema(schema, strict=False), llama3_tokenizer_info)
    state = compiled_grammar.initial_state()
    rng = random.Random(index)
    ids = llama3_hf_tokenizer.encode(text, add_special_tokens=False)
    state = check_along(state, ids, llama3_tokenizer_info, rng, range(0, len(ids), 3), complete_vocab=False)
    assert state.can_terminate


# ------------------------------------------------------------------ API and errors
def test_pydantic_model():
    pydantic = pytest.importorskip("pydantic")

    class Point(pydantic.BaseModel):
        x: int
        y: float = 0.0
        label: str | None = None

    g = xgr2.Grammar.from_json_schema(Point, any_whitespace=False)
    start = xgr2.compile(g, BYTES).initial_state()
    for text, ok in [('{"x":1}', True), ('{"x":1,"y":2.5,"label":null}', True), ('{"y":2.5}', False),
                     ('{"x":"1"}', False), ('{"x":1,"label":"a"}', True)]:
        assert accepts(start, text) == ok == is_valid(Point.model_json_schema(), json.loads(text)), text


def test_layout_options_write_exactly_what_json_dumps_writes():
    schema = {"type": "object", "properties": {"a": {"type": "array", "items": {"type": "integer"}},
                                                "b": {"type": "object", "properties": {"c": {"type": "null"}}}}}
    value = {"a": [1, 2], "b": {"c": None}}
    for kwargs, dumps in [(dict(indent=2), dict(indent=2)), (dict(indent=0), dict(indent=0)),
                          (dict(separators=(", ", ": ")), dict(separators=(", ", ": "))),
                          (dict(any_whitespace=False), dict(separators=(",", ":"))),
                          (dict(indent=4, separators=(",", " = ")), dict(indent=4, separators=(",", " = ")))]:
        start = xgr2.compile(xgr2.Grammar.from_json_schema(schema, **kwargs), BYTES).initial_state()
        assert accepts(start, json.dumps(value, **dumps)), kwargs
        assert not accepts(start, json.dumps(value, indent=3)), kwargs


def test_whitespace_runs_are_bounded():
    start = xgr2.compile(xgr2.Grammar.from_json_schema({"type": "array"}), BYTES).initial_state()
    assert accepts(start, "[" + " " * 20 + "]")
    assert not accepts(start, "[" + " " * 21 + "]")


def test_strict_only_generates_declared_properties():
    schema = {"type": "object", "properties": {"a": {"type": "integer"}}}
    strict = xgr2.compile(xgr2.Grammar.from_json_schema(schema), BYTES).initial_state()
    loose = xgr2.compile(xgr2.Grammar.from_json_schema(schema, strict=False), BYTES).initial_state()
    assert accepts(strict, '{"a": 1}') and not accepts(strict, '{"a": 1, "b": 2}')
    assert accepts(loose, '{"a": 1, "b": 2}') and not accepts(loose, '{"b": 2, "a": "x"}')
    # An extra key is never a declared one (its value would escape the declared schema).
    assert not accepts(loose, '{"b": 2, "a": "x"}') and not accepts(loose, '{"a": 1, "a": "x"}')


def test_const_beside_enum_is_the_const_only_if_listed():
    # Found by the case-split oracle: a const merged beside an enum took the const alone.
    for schema, ok in [({"enum": [1, 2], "const": 2}, ["2"]), ({"allOf": [{"const": 2}, {"enum": [1, 2]}]}, ["2"]),
                       ({"anyOf": [{"type": "string"}, {"allOf": [{"enum": [1]}, {"const": 2}]}]}, ['"a"']),
                       ({"anyOf": [{"type": "string"}, {"allOf": [{"enum": [1]}, {"const": 2, "not": {"const": 3}}]}]},
                        ['"a"']),
                       ({"anyOf": [{"type": "string"}, {"enum": [1], "const": 2, "not": {"const": 3}}]}, ['"a"']),
                       ({"allOf": [{"enum": [1, 2]}, {"allOf": [{"const": 2}, {"not": {"const": 1}}]}]}, ["2"])]:
        start = xgr2.compile(xgr2.Grammar.from_json_schema(schema), BYTES).initial_state()
        for text in ["1", "2", '"a"']:
            assert accepts(start, text) == (text in ok) == is_valid(schema, json.loads(text)), (schema, text)
    with pytest.raises(xgr2.SchemaError, match="no JSON value"):
        xgr2.Grammar.from_json_schema({"enum": [1], "const": 2})


def test_contains_where_no_item_is_allowed():
    # `items: false` / maxItems 0 leave only [] (hypothesis-jsonschema draws nothing here);
    # it was refused as "contains with ... maxItems" although exactly expressible.
    for schema in [{"contains": {"const": 1}, "maxContains": 2, "minContains": 0, "items": False},
                   {"contains": {"const": 1}, "items": False},
                   {"type": "array", "contains": {"const": 1}, "minContains": 0, "maxItems": 0}]:
        start = xgr2.compile(xgr2.Grammar.from_json_schema(schema, strict=False), BYTES).initial_state()
        for text in ["[]", "[1]", "[2]", "5", '"x"']:
            assert accepts(start, text) == is_valid(schema, json.loads(text)), (schema, text)


def test_a_schema_that_only_strict_empties_says_so():
    # Each oneOf branch must fail the other, i.e. carry the other's property with another
    # type: strict writes only the properties a branch declares, so nothing is left.
    schema = {"type": "object", "oneOf": [{"properties": {"x": {"type": "integer"}}},
                                          {"properties": {"y": {"type": "integer"}}}]}
    with pytest.raises(xgr2.SchemaError, match="strict=True writes.*compiles with strict=False"):
        xgr2.Grammar.from_json_schema(schema)
    start = xgr2.compile(xgr2.Grammar.from_json_schema(schema, strict=False), BYTES).initial_state()
    for text in ['{"y":"s"}', '{"y":1,"x":"s"}', '{"x":1}', "{}"]:  # a branch's own names first
        assert accepts(start, text) == is_valid(schema, json.loads(text)), text
    with pytest.raises(xgr2.SchemaError, match="nothing satisfies"):  # empty either way: the plain message
        xgr2.Grammar.from_json_schema({"type": "object", "required": ["a"], "properties": {"a": False}})


@pytest.mark.parametrize("schema,pointer,words", [
    ({"type": "strin"}, "/type", "unknown type"),
    ({"properties": {"a": {"type": 5}}}, "/properties/a/type", "type"),
    ({"$ref": "#/$defs/missing"}, "/$ref", "points to nothing"),
    ({"type": "string", "pattern": "a("}, "/pattern", "invalid pattern"),
    ({"if": {"type": "string", "format": "email"}, "then": {"minLength": 1}}, "/if", "`if` whose negation"),
    ({"not": {"type": "string", "format": "email"}}, "/not", "`not` of a schema"),
    ({"oneOf": [{"type": "string", "format": "email"}, {"type": "string", "maxLength": 3}]}, "/oneOf/0",
     "branch 0 this front end cannot negate"),
    ({"type": "array", "items": {"type": "object"}, "uniqueItems": True}, "/uniqueItems", "uniqueItems"),
    ({"type": "integer", "multipleOf": 0}, "/multipleOf", "multipleOf"),
    ({"allOf": [{"patternProperties": {"^x": {}}, "additionalProperties": False}, {"patternProperties": {"^y": {}}}]},
     "/allOf/1/patternProperties/^y", "another branch's patternProperties and additionalProperties"),
    ({"type": "integer", "minimum": "1"}, "/minimum", "minimum must be a number"),
    ({"required": "a"}, "/required", "required must be an array"),
    ("{not json", "", "not valid JSON"),
])
def test_bad_or_unsupported_schemas_raise_schema_error_with_pointer(schema, pointer, words):
    with pytest.raises(xgr2.SchemaError) as info:
        xgr2.Grammar.from_json_schema(schema)
    assert info.value.pointer == pointer and words in str(info.value), str(info.value)


def test_unsupported_warn_widens_with_a_warning():
    schema = {"oneOf": [{"type": "string", "format": "email"}, {"type": "string", "maxLength": 8}]}
    with pytest.warns(xgr2.SchemaWarning, match="oneOf"):
        g = xgr2.Grammar.from_json_schema(schema, unsupported="warn")
    start = xgr2.compile(g, BYTES).initial_state()
    assert accepts(start, '"ab"') and not accepts(start, "1")
    assert accepts(start, '"a@b.com"')  # valid under both branches: wider than the schema, as warned
    xgr2.Grammar.from_json_schema(schema, unsupported="ignore")


def test_argument_errors():
    with pytest.raises(TypeError):
        xgr2.Grammar.from_json_schema(5)
    with pytest.raises(ValueError):
        xgr2.Grammar.from_json_schema({}, indent=-1)
    with pytest.raises(ValueError):
        xgr2.Grammar.from_json_schema({}, unsupported="maybe")
    with pytest.raises(TypeError):
        xgr2.Grammar.from_json_schema({}, separators=(",",))


def test_the_grammar_prints_and_parses_back():
    for param in FAMILY:
        g = xgr2.Grammar.from_json_schema(param.values[0])
        assert str(xgr2.Grammar.from_ebnf(str(g))) == str(g)

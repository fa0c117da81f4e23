"""JSON Schema front ends against the official JSON-Schema-Test-Suite (Draft 2020-12, or
Draft 7 with --draft 7): xgr2, and with --peers xgrammar and llguidance from PyPI, with the
same checks.

The suite ships inside the `jsonschema` package's source distribution on PyPI; this
script downloads it once (PyPI's simple index; cached under ~/.cache/xgr2) or reads a local
copy (`--suite DIR`, the suite's tests/draft2020-12 or tests/draft7 folder). The suite's
schemas do not name their draft (the folder does): with --draft 7 each object schema gets
`"$schema": "http://json-schema.org/draft-07/schema#"`. Not run in CI.

Each schema is compiled with undeclared properties allowed (JSON Schema's own semantics:
xgr2 strict=False, xgrammar strict_mode=False), compact layout. Each test's instance is
written as compact JSON, its keys in the instance's order and then in the schema's
declared order (xgr2 writes properties in declared order), and counted as
- unsound: accepted although the suite says invalid (a defect, always);
- narrower: rejected although valid (for xgr2: formats are asserted, integers have no
  fraction, key orders: docs/json_schema.md);
- or agreeing. Schemas an engine refuses count apart.

    python benchmarks/schema_test_suite.py [--draft 7] [--suite DIR] [--peers] [--verbose] [--write-results]
"""

from __future__ import annotations

import argparse
import io
import json
import re
import sys
import tarfile
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import xgr2  # noqa: E402  (before _common, which puts the checkout first too)

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import declared_orders  # noqa: E402

JSONSCHEMA_VERSION = "4.25.1"
CACHE = Path.home() / ".cache" / "xgr2"
DRAFT_URIS = {"2020-12": "https://json-schema.org/draft/2020-12/schema", "7": "http://json-schema.org/draft-07/schema#"}
BYTES = xgr2.TokenizerInfo([bytes([i]) for i in range(256)] + [b"<eos>"], stop_token_ids=[256])


def fetch_suite(folder: str) -> Path:
    """The suite's tests/<folder> (``folder`` "remotes": its remotes/ tree)."""
    cache = CACHE / f"jsonschema-{JSONSCHEMA_VERSION}-{folder}"
    if cache.is_dir():
        return cache
    index = urllib.request.urlopen("https://pypi.org/simple/jsonschema/").read().decode()
    sdist = re.escape(f"jsonschema-{JSONSCHEMA_VERSION}.tar.gz")
    url = re.search(f'href="([^"#]*{sdist})', index).group(1)
    data = urllib.request.urlopen(url).read()
    cache.mkdir(parents=True)
    inside = ("json", "remotes") if folder == "remotes" else ("json", "tests", folder)
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        for member in tar.getmembers():
            parts = Path(member.name).parts
            if parts[1:1 + len(inside)] == inside and member.isfile() and member.name.endswith(".json"):
                if folder != "remotes" and len(parts) != 5:
                    continue
                target = cache.joinpath(*parts[1 + len(inside):])
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(tar.extractfile(member).read())
    return cache


def suite_remotes() -> dict:
    """The documents the suite serves at http://localhost:1234/ (its refRemote tests), by URI."""
    root = fetch_suite("remotes")
    return {"http://localhost:1234/" + p.relative_to(root).as_posix(): json.loads(p.read_text())
            for p in sorted(root.rglob("*.json"))}


def declared_order(schema) -> dict[str, int]:
    """Each property name's place: its first declaration in the schema."""
    order: dict[str, int] = {}
    for names in declared_orders(schema):
        for name in names:
            order.setdefault(name, len(order))
    return order


def reordered(value, order):
    if isinstance(value, list):
        return [reordered(v, order) for v in value]
    if isinstance(value, dict):
        keys = sorted(value, key=lambda k: order.get(k, len(order)))
        return {k: reordered(value[k], order) for k in keys}
    return value


def accepts(state, text: str) -> bool:
    after = state.try_advance_bytes(text.encode())
    return after is not None and after.can_terminate


class Xgr2:
    """xgr2, given the suite's remote documents as ``resources`` (nothing is fetched)."""

    name = "xgr2"

    def __init__(self):
        self.remotes = suite_remotes()

    def compile(self, schema):
        try:
            grammar = xgr2.Grammar.from_json_schema(schema, any_whitespace=False, strict=False, resources=self.remotes)
        except xgr2.SchemaError as e:
            return None, str(e)
        state = xgr2.compile(grammar, BYTES).initial_state()
        return (lambda text: accepts(state, text)), ""


class XGrammar:
    """xgrammar's byte-level acceptance check (its testing helper), strict_mode off."""

    name = "xgrammar"

    def __init__(self):
        import xgrammar
        from xgrammar.testing import _is_grammar_accept_string

        self.xgr, self.accept = xgrammar, _is_grammar_accept_string

    def compile(self, schema):
        try:
            grammar = self.xgr.Grammar.from_json_schema(json.dumps(schema), any_whitespace=False, strict_mode=False)
        except Exception as e:  # noqa: BLE001 (a peer's refusal, whatever its type)
            return None, str(e)
        return (lambda text: self.accept(grammar, text)), ""


class LLGuidance:
    """llguidance over the Llama-3 tokenizer (the text's tokens, consumed in order)."""

    name = "llguidance"

    def __init__(self):
        from _common import LLGuidanceEngine, load_tokenizer

        self.hf = load_tokenizer()
        self.engine = LLGuidanceEngine()
        self.engine.setup(self.hf)

    def compile(self, schema):
        llg = self.engine.llg
        grammar = llg.LLMatcher.grammar_from_json_schema(schema)
        probe = llg.LLMatcher(self.engine.tok, grammar)
        if probe.is_error():
            return None, probe.get_error()

        def accept(text):
            matcher = llg.LLMatcher(self.engine.tok, grammar)
            tokens = self.hf.encode(text, add_special_tokens=False)
            return matcher.consume_tokens(tokens) and matcher.is_accepting()

        return accept, ""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--draft", choices=sorted(DRAFT_URIS), default="2020-12", help="the suite's folder (default 2020-12)")
    ap.add_argument("--suite", type=Path, help="a local tests/draft2020-12 (or draft7) folder of the suite")
    ap.add_argument("--verbose", action="store_true", help="list every refusal and disagreement")
    ap.add_argument("--peers", action="store_true", help="also xgrammar and llguidance (from PyPI), same checks")
    ap.add_argument("--write-results", action="store_true", help="add the table to benchmarks/RESULTS.md")
    args = ap.parse_args()
    folder = "draft" + args.draft
    suite = args.suite or fetch_suite(folder)
    engines = [Xgr2()] + ([XGrammar(), LLGuidance()] if args.peers else [])
    rows = []
    print(f"JSON-Schema-Test-Suite {folder} (jsonschema {JSONSCHEMA_VERSION} sdist), compact JSON, "
          "undeclared properties allowed:")
    for engine in engines:
        counts = dict(schemas=0, refused=0, tests=0, agree=0, unsound=0, narrower=0)
        for path in sorted(suite.glob("*.json")):
            for case in json.loads(path.read_text()):
                counts["schemas"] += 1
                schema = case["schema"]
                if args.draft != "2020-12" and isinstance(schema, dict) and "$schema" not in schema:
                    schema = {"$schema": DRAFT_URIS[args.draft], **schema}
                accept, error = engine.compile(schema)
                if accept is None:
                    counts["refused"] += 1
                    if args.verbose:
                        print(f"{engine.name} refused   {path.stem}: {case['description']}: {error[:200]}")
                    continue
                order = declared_order(schema)
                for test in case["tests"]:
                    counts["tests"] += 1
                    texts = {json.dumps(v, separators=(",", ":"), ensure_ascii=False)
                             for v in (test["data"], reordered(test["data"], order))}
                    accepted = any(accept(t) for t in sorted(texts))
                    verdict = "agree" if accepted == test["valid"] else "unsound" if accepted else "narrower"
                    counts[verdict] += 1
                    if args.verbose and verdict != "agree":
                        print(f"{engine.name} {verdict:9} {path.stem}: {case['description']}: "
                              f"{test['description']}: {min(texts)}")
        print(f"{engine.name:10} {json.dumps(counts)}")
        rows.append(f"| {engine.name} | " + " | ".join(str(v) for v in counts.values()) + " |")
    if args.write_results:
        from _common import append_results

        append_results(
            f"JSON-Schema-Test-Suite conformance ({folder})", "schema_test_suite.py", None,
            [f"- Suite: the {folder} folder of jsonschema {JSONSCHEMA_VERSION}'s sdist (PyPI)"
             + ("" if args.draft == "2020-12" else f", each object schema given `\"$schema\": \"{DRAFT_URIS[args.draft]}\"`")
             + "; each schema compiled "
             "as the engine's JSON Schema grammar with undeclared properties allowed (xgr2 strict=False, xgrammar "
             "strict_mode=False), each test's instance as compact JSON (keys in its own order, then in the schema's "
             "declared order); xgr2 and xgrammar checked byte by byte, llguidance through the Llama-3 tokens of the text.",
             "- unsound: accepted, the suite says invalid; narrower: rejected, the suite says valid; tests counts only "
             "the schemas the engine compiled.",
             "", "| engine | " + " | ".join(counts) + " |", "|---" * (len(counts) + 1) + "|", *rows])


if __name__ == "__main__":
    main()

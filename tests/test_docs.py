"""The ``>>>`` examples in every public xgr2 module run as doctests and pass."""

import contextlib
import doctest
import importlib
import io

import pytest

CORE_MODULES = [
    "xgr2",
    "xgr2._batch",
    "xgr2._tree_masks",
    "xgr2._bitmask",
    "xgr2._grammar",
    "xgr2._tokenizer",
    "xgr2._compiler",
    "xgr2._errors",
    "xgr2.tool_calling",
    "xgr2._tool_call_parsing",
]
JAX_MODULES = ["xgr2.jax", "xgr2.jax._masking", "xgr2.jax._sampling", "xgr2.jax._decoder", "xgr2.jax._drafting"]
# The xgr2.jax package docstring only describes the layout; its submodules hold the examples.
NO_EXAMPLES_EXPECTED = {"xgr2.jax"}


def run_doctests(name: str) -> doctest.TestResults:
    """doctest.testmod on the installed module; fails with doctest's own report."""
    module = importlib.import_module(name)
    report = io.StringIO()
    with contextlib.redirect_stdout(report):
        results = doctest.testmod(module, verbose=False, report=True)
    assert results.failed == 0, f"{results.failed} doctest failure(s) in {name}:\n{report.getvalue()}"
    return results


@pytest.mark.parametrize("name", CORE_MODULES)
def test_core_doctests(name):
    results = run_doctests(name)
    assert results.attempted > 0, f"{name} has no doctest examples"


@pytest.mark.parametrize("name", JAX_MODULES)
def test_jax_doctests(name):
    pytest.importorskip("jax")
    results = run_doctests(name)
    if name not in NO_EXAMPLES_EXPECTED:
        assert results.attempted > 0, f"{name} has no doctest examples"

"""The package type-checks: ``mypy --strict xgr2`` passes (config in pyproject.toml), and
the engine's stub ``xgr2/_core.pyi`` is what nanobind's stubgen generates from the
compiled extension, so it cannot fall behind the bindings.

Regenerate the stub after changing csrc/bindings/module.cc::

    python -m nanobind.stubgen -P -q -m xgr2._core -o xgr2/_core.pyi
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

import xgr2

ROOT = Path(__file__).resolve().parent.parent


def test_mypy_strict_passes():
    if importlib.util.find_spec("mypy") is None:
        pytest.skip("mypy is not installed (it is in the test extra: pip install '.[test]')")
    # One run; its cache (.mypy_cache, ignored by git) makes later runs take seconds.
    result = subprocess.run([sys.executable, "-m", "mypy", "--strict", "xgr2"], cwd=ROOT, capture_output=True,
                            text=True, timeout=600)
    assert result.returncode == 0, result.stdout + result.stderr


def test_core_stub_is_generated_from_the_extension(tmp_path):
    if importlib.util.find_spec("nanobind") is None:
        pytest.skip("nanobind is not installed (it is in the test extra: pip install '.[test]')")
    out = tmp_path / "_core.pyi"
    # The stub of the extension this test imports (installed, or built in place).
    env = dict(os.environ, PYTHONPATH=str(Path(xgr2.__file__).resolve().parent.parent))
    subprocess.run([sys.executable, "-m", "nanobind.stubgen", "-P", "-q", "-m", "xgr2._core", "-o", str(out)],
                   cwd=tmp_path, env=env, check=True, timeout=120)
    committed = (ROOT / "xgr2" / "_core.pyi").read_text()
    assert out.read_text() == committed, (
        "xgr2/_core.pyi is stale: run `python -m nanobind.stubgen -P -q -m xgr2._core -o xgr2/_core.pyi`")

"""What a newcomer meets first: the demo command and importing xgr2 from a source tree."""

import shutil
import subprocess
import sys
from pathlib import Path

import xgr2

REPO = Path(__file__).resolve().parent.parent


def test_importing_a_source_tree_without_the_engine_says_what_to_do(tmp_path):
    # A copy of the package's Python files, as in a fresh clone (no compiled _core).
    src = Path(xgr2.__file__).parent
    shutil.copytree(src, tmp_path / "xgr2", ignore=shutil.ignore_patterns("_core*", "__pycache__", "demo"))
    result = subprocess.run([sys.executable, "-c", "import xgr2"], cwd=tmp_path, capture_output=True, text=True)
    assert result.returncode != 0
    message = result.stderr.strip().splitlines()[-1]
    assert message.startswith("ImportError: xgr2's compiled engine (xgr2/_core) is missing"), result.stderr
    assert "circular import" not in message and "partially initialized" not in message
    assert "build the engine in place" in message and "another directory" in message


def test_the_demo_command_is_installed_and_runs_from_the_repository_root():
    exe = shutil.which("xgr2-demo", path=str(Path(sys.executable).parent)) or shutil.which("xgr2-demo")
    assert exe, "the xgr2-demo console script is not installed"
    result = subprocess.run([exe, "--help"], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert "--schema" in result.stdout

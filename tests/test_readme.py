"""The README's Python snippets run as written, in order, in one namespace."""

import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"


@pytest.mark.slow
def test_readme_snippets_run(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)  # the compare_models snippet stores its runs in runs/
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)
    assert len(blocks) >= 4
    namespace = {}
    for block in blocks:
        exec(compile(block, str(README), "exec"), namespace)  # noqa: S102
    assert "idata" in namespace

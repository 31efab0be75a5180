"""The README's notebook snippet runs as written (from the repo root) and says what it claims."""

from __future__ import annotations

import os
import re

import pytest

from tests.conftest import REPO, requires_node


@requires_node
def test_readme_python_snippet_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    text = (REPO / "README.md").read_text(encoding="utf-8")
    block = re.search(r"```python\n(.*?)```", text, re.S)
    assert block is not None
    monkeypatch.chdir(REPO)
    ns: dict[str, object] = {}
    exec(compile(block.group(1), "README.md", "exec"), ns)  # our own README, not log content
    report = ns["report"]
    assert report.ok  # type: ignore[attr-defined]
    diff = ns["a"].compare(ns["log"], ns["a"].read_log(ns["store"], thread="fork"))  # type: ignore[attr-defined]
    assert (diff.kind, diff.divergence) == ("fork", 18)
    ns["m"].close()  # type: ignore[attr-defined]


def test_readme_starts_with_the_two_commands() -> None:
    lines = (REPO / "README.md").read_text(encoding="utf-8").splitlines()
    first_block = lines.index("```bash")
    assert lines[first_block + 1].startswith("make demo")
    assert lines[first_block + 2].startswith("make test")
    assert os.path.exists(REPO / ".ci" / "run")
    assert "make test" in (REPO / ".ci" / "run").read_text()

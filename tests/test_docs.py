"""The documentation site builds with ``mkdocs build --strict`` (warnings are errors)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO

pytest.importorskip("mkdocs", reason="mkdocs is not installed")
pytest.importorskip("material", reason="mkdocs-material is not installed")
pytest.importorskip("mkdocstrings_handlers.python", reason="mkdocstrings-python is not installed")


def test_docs_build_strict(tmp_path: Path) -> None:
    site = tmp_path / "site"
    env = dict(os.environ, NO_MKDOCS_2_WARNING="1", PYTHONPATH=str(REPO))
    proc = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file", str(REPO / "mkdocs.yml"),
         "--site-dir", str(site)],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=600,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    # the API reference was generated from docstrings, not left empty
    page = (site / "reference" / "bulk" / "index.html").read_text(encoding="utf-8")
    assert "verify_store" in page and "MachineSpec" in page
    assert "first_mismatch" in page
    for ref in ("hashing", "errors", "engines", "frames", "log", "xstate", "statechart", "replay", "forks", "widgets", "render", "cli"):
        assert (site / "reference" / ref / "index.html").is_file(), ref
    for page_dir in ("tutorial", "explanation", "cli", "how-to/scale-out", "how-to/verify-in-ci"):
        assert (site / page_dir / "index.html").is_file(), page_dir

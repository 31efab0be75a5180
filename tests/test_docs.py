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
    # the API reference was generated from docstrings, one page per public name
    page = (site / "reference" / "verify_store" / "index.html").read_text(encoding="utf-8")
    assert "verify_store" in page and "MachineSpec" in page
    import agentscope

    for name in agentscope.__all__:
        if not name.startswith("__"):
            assert any((site / "reference" / d / "index.html").is_file()
                       for d in (name.lower(), f"{name.lower()}-class", "errors")), name
    # no reST role is left literal anywhere in the reference
    for html_file in (site / "reference").rglob("*.html"):
        text = html_file.read_text(encoding="utf-8")
        for role in (":func:`", ":class:`", ":meth:`", ":attr:`", ":data:`", ":mod:`", ":exc:`"):
            assert role not in text, (html_file, role)
    errors_page = (site / "reference" / "errors" / "index.html").read_text(encoding="utf-8")
    assert "replay-diverged" in errors_page and "machine-version-mismatch" in errors_page
    for page_dir in ("tutorial", "explanation", "cli", "how-to/scale-out", "how-to/verify-in-ci"):
        assert (site / page_dir / "index.html").is_file(), page_dir


def test_reference_pages_are_current() -> None:
    """The per-name reference pages and their nav match ``agentscope.__all__``."""
    proc = subprocess.run([sys.executable, str(REPO / "docs" / "_ext" / "gen_reference.py"), "--check"],
                          cwd=REPO, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr

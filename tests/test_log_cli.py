"""The ``agentscope demo`` command on the bundled real log."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from agentscope.cli import main
from tests.conftest import REPO, load_json


def test_demo_prints_summary_and_hash_status(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["demo"]) == 0
    out = capsys.readouterr().out
    summary = load_json("g_triage.summary.json")["main"]
    main_log = load_json("g_triage.main.log.json")
    assert re.search(rf"entries\s+{summary['entries']}\b", out)
    for event_type, count in summary["eventTypes"].items():
        assert re.search(rf"^\s+{re.escape(event_type)}\s+{count}$", out, re.M), event_type
    assert "supportTriage @ efe50ed5" in out
    assert main_log[0]["metadata"]["executionId"] in out
    assert "91 of 91 entries carry verification.stateHash; 91 are 8-hex-digit strings" in out
    assert main_log[-1]["verification"]["stateHash"] in out
    assert "not yet verified" in out and "verified:" not in out.replace("not yet verified:", "")


def test_demo_other_thread_and_module_entry_point() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "agentscope.cli", "demo", "--thread", "second"],
        capture_output=True, text=True, cwd=REPO, env={"PYTHONPATH": str(REPO), "PATH": ""}, check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert re.search(r"entries\s+40\b", proc.stdout)

"""`agentscope demo` prints the log's summary (event-type counts, time span) computed from the data."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from agentscope.cli import main
from tests.conftest import load_json, requires_node


@requires_node
def test_demo_prints_event_type_counts_of_the_real_log(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["demo", "-o", str(tmp_path / "p.html")]) == 0
    text = capsys.readouterr().out
    entries = load_json("g_triage.main.log.json")  # the same thread, as the fixture JSON
    counts = Counter(e["event"]["type"] for e in entries)
    assert f"xstate.done.actor {counts['xstate.done.actor']}" in text
    assert f"DRAFT_READY {counts['DRAFT_READY']}" in text
    assert "over 0.881 s" in text  # 10:25:08.172 .. 10:25:09.053 in the fixture
    assert "91 verified" in text
    assert (tmp_path / "p.html").stat().st_size > 10_000

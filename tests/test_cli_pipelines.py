"""The CLI in a shell pipeline (issue 26): real ``agentscope … | head`` processes. Every command's
standard output goes through one checked writer: a reader that goes away is exit 141 with no
word on stderr, and nothing claims output that was not written."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import FIXTURES

AGENTSCOPE = Path(sys.executable).with_name("agentscope")
PY_COUNTER = "py:agentscope.examples.python_machines:counter_machine"
ENTRIES = 4000


@pytest.fixture(scope="module")
def long_log(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The real counter log's first entries, then INC to ENTRIES entries (no hashes: they would
    only restate the replay): about 1 MB as JSON lines, far more than a pipe holds."""
    first: list[dict[str, Any]] = json.loads((FIXTURES / "a_counter.log.json").read_text())[:2]
    entries = []
    for i in range(ENTRIES):
        e = dict(first[min(i, 1)], index=i, id=f"evt_{i:08d}")
        e.pop("verification", None)
        entries.append(e)
    path = tmp_path_factory.mktemp("pipe") / "long.log.json"
    path.write_text(json.dumps(entries))
    return path


def _pipe(argv: list[str], reader: list[str]) -> tuple[int, bytes, str]:
    """``agentscope ARGV | READER``: (agentscope's exit code, what the reader printed, agentscope's stderr)."""
    writer = subprocess.Popen([str(AGENTSCOPE), *argv], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert writer.stdout is not None and writer.stderr is not None
    head = subprocess.Popen(reader, stdin=writer.stdout, stdout=subprocess.PIPE)
    writer.stdout.close()  # only head reads the pipe now: when it exits, the pipe is closed
    took, _ = head.communicate(timeout=120)
    err = writer.stderr.read().decode()
    writer.stderr.close()
    return writer.wait(timeout=120), took, err


def test_export_to_a_reader_that_stops_early_exits_141_and_claims_nothing(long_log: Path) -> None:
    code, took, err = _pipe(["export", str(long_log), "--to", "jsonl", "-o", "-"], ["head", "-c", "100000"])
    assert len(took) == 100_000
    assert code == 141, err
    assert err == ""  # silent: no "wrote 4000 entries", no traceback


def test_export_to_a_reader_that_takes_everything_says_so(long_log: Path) -> None:
    code, took, err = _pipe(["export", str(long_log), "--to", "jsonl", "-o", "-"], ["cat"])
    assert code == 0
    lines = took.decode().splitlines()
    assert len(lines) == ENTRIES and json.loads(lines[-1])["id"] == f"evt_{ENTRIES - 1:08d}"
    assert err == f"wrote {ENTRIES} entries to standard output\n"


@pytest.mark.parametrize("as_json", [True, False])
def test_query_to_head_exits_141(long_log: Path, as_json: bool) -> None:
    argv = ["query", str(long_log), "index >= 0", "--machine", PY_COUNTER, "--limit", "0",
            "--column", "context.count", *(["--json"] if as_json else [])]
    code, took, err = _pipe(argv, ["head", "-n", "3"])
    assert len(took.splitlines()) == 3
    assert code == 141, err
    assert err == ""


def test_export_csv_to_head_exits_141(long_log: Path) -> None:
    code, took, err = _pipe(["export", str(long_log), "--to", "csv", "-o", "-"], ["head", "-n", "1"])
    assert took.count(b"\n") == 1  # the header line
    assert code == 141 and err == ""

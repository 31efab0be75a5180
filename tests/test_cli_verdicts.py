"""One verdict -> exit-code rule for every command that verifies (issue 26): a log whose entries
carry no hash is "nothing verified", exit 1 (docs/cli.md), in ``verify``, ``show --machine`` and
``watch`` alike; ``--allow-missing`` accepts it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agentscope.cli import EXIT_FAILED, EXIT_OK, main, verdict_exit
from tests.conftest import load_json

PY = "py:agentscope.examples.python_machines:triage_machine"


@pytest.fixture()
def unhashed(tmp_path: Path) -> Path:
    """The real triage run (thread main) with every verification block removed, as JSON lines."""
    entries = load_json("g_triage.main.log.json")
    for e in entries:
        e.pop("verification", None)
    path = tmp_path / "unhashed.jsonl"
    path.write_text("".join(json.dumps(e) + "\n" for e in entries))
    return path


def _commands(log: Path) -> dict[str, list[str]]:
    return {
        "verify": ["verify", str(log), "--machine", PY],
        "show": ["show", str(log), "--machine", PY, "--limit", "0"],
        "watch": ["watch", str(log), "--machine", PY, "--idle-exit", "0", "--interval", "0"],
    }


@pytest.mark.parametrize("command", ["verify", "show", "watch"])
def test_a_log_without_hashes_is_nothing_verified_everywhere(
        command: str, unhashed: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = _commands(unhashed)[command]
    assert main(argv) == EXIT_FAILED
    out = capsys.readouterr().out
    assert "nothing verified" in out
    assert "verification OK" not in out and "OK: 91 missing" not in out
    assert main([*argv, "--allow-missing"]) == EXIT_OK
    assert "nothing verified" not in capsys.readouterr().out


@pytest.mark.parametrize("command", ["verify", "show"])
def test_json_says_nothing_verified(command: str, unhashed: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main([*_commands(unhashed)[command], "--json"]) == EXIT_FAILED
    doc = json.loads(capsys.readouterr().out)
    assert doc["ok"] is False and doc["nothing_verified"] is True


def test_the_rule() -> None:
    assert verdict_exit({"verified": 3, "missing": 2}, failed=False, allow_missing=False) == EXIT_OK
    assert verdict_exit({"missing": 5}, failed=False, allow_missing=False) == EXIT_FAILED
    assert verdict_exit({"missing": 5}, failed=False, allow_missing=True) == EXIT_OK
    assert verdict_exit({"verified": 4, "mismatch": 1}, failed=False, allow_missing=True) == EXIT_FAILED
    assert verdict_exit({"verified": 4}, failed=True, allow_missing=True) == EXIT_FAILED
    assert verdict_exit({}, failed=False, allow_missing=False) == EXIT_OK  # nothing replayed

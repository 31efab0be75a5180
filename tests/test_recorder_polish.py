"""Recorder edge cases: a non-SQLite target file, a machine whose context is not JSON."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentscope.engines.recorder import Recorder
from agentscope.engines.statechart import StatechartMachine
from agentscope.errors import RecorderError


def _machine(value: object) -> StatechartMachine:
    return StatechartMachine(
        {
            "id": "tagger",
            "initial": "idle",
            "context": {"tags": []},
            "states": {
                "idle": {"on": {"TAG": {"target": "tagged", "context": lambda c, e: {"tags": value}}}},
                "tagged": {},
            },
        }
    )


def test_to_sqlite_refuses_a_file_that_is_not_a_sqlite_store(tmp_path: Path) -> None:
    rec = Recorder(_machine([]), execution_id="exec_1")
    target = tmp_path / "x.json"
    original = b'[{"schemaVersion": 1, "index": 0}]\n' + bytes(range(256)) * 20
    target.write_bytes(original)
    with pytest.raises(RecorderError) as info:
        rec.to_sqlite(target, thread="t")
    assert str(target) in str(info.value)
    assert "not a SQLite" in str(info.value)
    assert target.read_bytes() == original
    assert not (tmp_path / "x.json-journal").exists()

"""Recorder edge cases: a non-SQLite target file, a machine whose context is not JSON."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from agentscope.engines.statechart import StatechartMachine
from agentscope.errors import MachineExecutionError, RecorderError
from agentscope.recorder import Recorder


def _machine(value: Any) -> StatechartMachine:
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


@pytest.mark.parametrize(
    ("value", "pointer", "type_name"),
    [({"a", "b"}, "/context/tags", "set"), ([1, {"at": datetime(2026, 1, 1)}], "/context/tags/1/at", "datetime")],
)
def test_send_with_non_json_context_raises_a_typed_error(value: Any, pointer: str, type_name: str) -> None:
    rec = Recorder(_machine(value), execution_id="exec_1")
    before = [dict(e) for e in rec.entries]
    persisted_before = rec.persisted
    with pytest.raises(MachineExecutionError) as info:
        rec.send({"type": "TAG"})
    err = info.value
    assert err.kind == "not-serializable"
    assert err.event_type == "TAG"
    assert err.index == 1
    assert "'TAG'" in str(err) and "entry 1" in str(err)
    assert pointer in str(err) and type_name in str(err)
    assert rec.entries == before
    assert rec.persisted == persisted_before

"""A restored snapshot naming a state the machine lacks: one typed error from both engines.

The message is XState's own (``Persisted snapshot references state 'zz' which does not exist on
machine 'counter'.``); in a log it names entry 0 and field ``event.snapshot.value``; the Node
engine keeps the JS stack trace in ``stack``, never in the message; the CLI exits 2 (bad input).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agentscope.cli import main
from agentscope.engines.statechart import StatechartMachine
from agentscope.errors import SnapshotRestoreError
from tests.conftest import MACHINES, load_json, node_ready

COUNTER = f"{MACHINES / 'counter.mjs'}:counterMachine"
PY_COUNTER = "py:agentscope.examples.python_machines:counter_machine"
needs_node = pytest.mark.skipif(not node_ready(), reason="needs node and `npm ci` (xstate)")
BAD = {"status": "active", "value": "zz", "context": {"count": 0}, "children": {}, "historyValue": {}}
MESSAGE = "Persisted snapshot references state 'zz' which does not exist on machine 'counter'."


def _log_with_bad_snapshot(tmp_path: Path) -> Path:
    entries: list[dict[str, Any]] = load_json("a_counter.log.json")[:1]
    entries[0]["event"] = {"type": "@agent.init", "snapshot": BAD}
    entries[0].pop("verification", None)
    path = tmp_path / "bad-snapshot.log.json"
    path.write_text(json.dumps(entries), encoding="utf-8")
    return path


def test_python_engine_raises_the_typed_error() -> None:
    m = StatechartMachine({"id": "counter", "initial": "a", "states": {"a": {}}})
    with pytest.raises(SnapshotRestoreError) as info:
        m.restore(BAD)
    assert str(info.value) == "field 'value': " + MESSAGE
    assert info.value.detail == MESSAGE and info.value.stack is None
    with pytest.raises(SnapshotRestoreError, match=r"state 'a\.q' which does not exist"):
        m.restore({**BAD, "value": {"a": "q"}})


@needs_node
def test_node_engine_raises_the_same_error_with_the_stack_kept_aside() -> None:
    from agentscope.engines.xstate import load_machine

    path, export = COUNTER.rsplit(":", 1)
    with load_machine(path, export) as m, pytest.raises(SnapshotRestoreError) as info:
        m.restore(BAD)
    assert info.value.detail == MESSAGE
    assert "\n" not in str(info.value) and " at " not in str(info.value)
    assert info.value.stack and "at " in info.value.stack


@pytest.mark.parametrize(
    "machine", [PY_COUNTER, pytest.param(COUNTER, marks=needs_node)], ids=["python", "node"]
)
def test_verify_names_entry_0_and_exits_2(
    machine: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = _log_with_bad_snapshot(tmp_path)
    code = main(["verify", str(log), "--machine", machine])
    _, err = capsys.readouterr()
    assert code == 2, err
    last = [ln for ln in err.splitlines() if ln.strip()][-1]
    assert "entry 0: field 'event.snapshot.value': " + MESSAGE in last, last
    assert "Traceback" not in err and " at " not in last

"""What-if under a machine that renamed a state the log's snapshot init uses (issue 26): the
thread's result is ``kind="cannot-restore"`` at entry 0 with the engine's reason, exit 1, and
every other thread of a store is still answered. Both engines: the changed machine is a real
XState module (tests/fixtures/changed/ticket_working.mjs) and its Python statechart twin
(tests/changed_machines.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import agentscope as asc
from agentscope.bulk import MachineSpec
from agentscope.cli import main
from agentscope.recorder import Recorder
from tests.changed_machines import ticket_v2_working
from tests.conftest import FIXTURES, REPO, node_ready

BRIDGED = FIXTURES / "e_bridge.v2.log.json"  # starts from a snapshot in state "inProgress"
NODE = f"{REPO / 'tests' / 'fixtures' / 'changed' / 'ticket_working.mjs'}:ticketV2Working"
PY = "py:tests.changed_machines:ticket_v2_working"
ENGINES = [PY, pytest.param(NODE, marks=pytest.mark.skipif(
    not node_ready(), reason="needs node and `npm ci` (xstate)"))]
REASON = "Persisted snapshot references state 'inProgress' which does not exist on machine 'ticket'"


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Thread ``bridged``: the real e_bridge.v2 run (snapshot init in ``inProgress``); thread
    ``fresh``: a run recorded by the renamed machine itself (it replays identically)."""
    path = tmp_path_factory.mktemp("whatif") / "tickets.sqlite"
    import sqlite3

    rec = Recorder(ticket_v2_working(), {"title": "Renamed"})
    for event in ({"type": "START"}, {"type": "COMMENT"}, {"type": "RESOLVE"}, {"type": "ACCEPT"}):
        rec.send(event)
    rec.to_sqlite(path, "fresh")
    con = sqlite3.connect(path)
    with con:
        for e in json.loads(BRIDGED.read_text()):
            con.execute("INSERT INTO agent_event_log (thread_id, idx, entry_id, entry) VALUES (?, ?, ?, ?)",
                        ("bridged", e["index"], e["id"], json.dumps(e)))
    con.close()
    return path


@pytest.mark.parametrize("spec", ENGINES)
def test_a_log_whose_snapshot_the_machine_cannot_restore(spec: str) -> None:
    machine = MachineSpec.parse(spec).load()
    try:
        result = asc.whatif(asc.read_log(BRIDGED), machine)
    finally:
        machine.close()
    (t,) = result.threads
    assert (t.kind, t.first_divergence, t.entries) == ("cannot-restore", 0, 7)
    assert REASON in t.detail and t.event_type == "@agent.init"
    assert t.recorded_hash == json.loads(BRIDGED.read_text())[0]["verification"]["stateHash"]
    assert not result.identical and list(result.diverged) == [t]


@pytest.mark.parametrize("spec", ENGINES)
def test_cli_whatif_cannot_restore_exits_1(spec: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["whatif", str(BRIDGED), "--machine", spec, "--json"]) == 1
    (row,) = json.loads(capsys.readouterr().out)["results"]
    assert (row["kind"], row["first_divergence"]) == ("cannot-restore", 0) and REASON in row["detail"]


@pytest.mark.parametrize("spec", ENGINES)
def test_every_other_thread_of_the_store_is_answered(spec: str, store: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    result = asc.whatif(store, MachineSpec.parse(spec), max_workers=1)
    kinds = {t.thread: (t.kind, t.first_divergence) for t in result.threads}
    assert kinds == {"bridged": ("cannot-restore", 0), "fresh": ("identical", None)}
    assert main(["whatif", str(store), "--machine", spec, "--workers", "1", "--json"]) == 1
    rows = {r["thread"]: r for r in json.loads(capsys.readouterr().out)["results"]}
    assert rows["bridged"]["kind"] == "cannot-restore" and REASON in rows["bridged"]["detail"]
    assert rows["fresh"]["kind"] == "identical"

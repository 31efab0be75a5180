"""The Recorder: logs it writes verify, match the real host's logs, and round-trip through files."""

from __future__ import annotations

import json
import re
import sqlite3
import uuid
from pathlib import Path
from typing import Any

import pytest

from agentscope.engines.base import NO_INPUT
from agentscope.engines.statechart import StatechartMachine
from agentscope.engines.xstate import load_machine
from agentscope.examples import python_machines as pm
from agentscope.hashing import state_hash
from agentscope.log import read_log
from agentscope.log.validate import validate_entries
from agentscope.pipeline import verify
from agentscope.recorder import ManualClock, Recorder, RecorderError, fold_entries
from tests.conftest import MACHINES, load_json, requires_node

KEY_ORDER = ["schemaVersion", "id", "index", "recordedAt", "machineId", "machineVersion", "event"]


def _strip_session(ev: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in ev.items() if k != "sessionId"}


def _run_host_script(thread: str, rec: Recorder, calls: list[dict[str, Any]]) -> None:
    for c in calls:
        if c["threadId"] != thread or "event" not in c["call"]:
            continue
        rec.send(c["call"]["event"])
        assert len(rec.entries) == c["logLength"], c


def test_recording_the_triage_host_script_reproduces_the_real_logs() -> None:
    """Driving the Python triage machine with the real host calls journals the same events
    (tool completions and failures included, in the same order) with the same state hashes."""
    script = load_json("g_triage.host-script.json")
    main_log = load_json("g_triage.main.log.json")
    rec = Recorder(pm.triage_machine(), {"team": "tier1", "maxKbAttempts": 2}, execution_id="exec-main")
    main_calls = script["calls"]
    fork_at = script["forkAt"]
    # main up to the fork point, then the fork, then the rest of main
    _run_host_script(
        "main", rec, [c for c in main_calls if c["threadId"] == "main" and c["logLength"] <= fork_at]
    )
    fork = rec.fork(fork_at)
    _run_host_script(
        "main", rec, [c for c in main_calls if c["threadId"] == "main" and c["logLength"] > fork_at]
    )
    _run_host_script("fork", fork, main_calls)
    for recorder, real in ((rec, main_log), (fork, load_json("g_triage.fork.log.json"))):
        assert [_strip_session(e["event"]) for e in recorder.entries] == [
            _strip_session(e["event"]) for e in real
        ]
        assert [e["verification"]["stateHash"] for e in recorder.entries] == [
            e["verification"]["stateHash"] for e in real
        ]
    assert fork.entries[:fork_at] == rec.entries[:fork_at]
    assert fork.entries[0]["metadata"] == {"executionId": "exec-main"}
    second = Recorder(pm.triage_machine(), {"team": "tier2", "maxKbAttempts": 3})
    _run_host_script("second", second, main_calls)
    real_second = load_json("g_triage.second.log.json")
    assert [e["verification"]["stateHash"] for e in second.entries] == [
        e["verification"]["stateHash"] for e in real_second
    ]


def _counter_session() -> Recorder:
    rec = Recorder(pm.counter_machine(), {"start": 2}, clock=ManualClock("2026-03-01T12:00:00Z"))
    for ev in [
        {"type": "INC"},
        {"type": "TOGGLE"},
        {"type": "INC", "by": 5},
        {"type": "NOPE"},
        {"type": "FINISH"},
    ]:
        rec.send(ev)
    return rec


def test_entries_have_the_era_c_envelope() -> None:
    rec = _counter_session()
    validate_entries(rec.entries, machine_id="counter", machine_version="adb004a6")
    for i, e in enumerate(rec.entries):
        assert list(e)[:7] == KEY_ORDER and list(e)[-1] == "verification"
        assert e["id"] == f"evt_{i:08d}" and e["index"] == i
        assert e["machineVersion"] == "adb004a6"
        assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", e["recordedAt"])
    init = rec.entries[0]
    assert init["event"] == {"type": "@agent.init", "input": {"start": 2}}
    assert list(init) == [*KEY_ORDER, "metadata", "verification"]
    assert uuid.UUID(init["metadata"]["executionId"]).version == 4
    assert rec.entries[0]["recordedAt"] == "2026-03-01T12:00:00.000Z"
    # the unhandled event is journaled and hashes like its predecessor (spec §1.5)
    assert rec.entries[4]["verification"] == rec.entries[3]["verification"]
    assert rec.persisted["status"] == "done" and rec.persisted["output"] == {"count": 8, "toggles": 1}


def test_recorded_log_verifies_with_zero_mismatches() -> None:
    rec = _counter_session()
    report = verify(pm.counter_machine(), rec.entries)
    assert report.ok
    assert len(report.mismatches) == 0
    snaps = fold_entries(pm.counter_machine(), rec.entries)
    assert [state_hash(s.persisted) for s in snaps] == [e["verification"]["stateHash"] for e in rec.entries]


def test_round_trip_through_json_jsonl_and_sqlite(tmp_path: Path) -> None:
    rec = _counter_session()
    j = rec.to_json(tmp_path / "log.json")
    jl = rec.to_jsonl(tmp_path / "log.jsonl")
    db = rec.to_sqlite(tmp_path / "store.sqlite", thread="main")
    rec.fork(3).to_sqlite(db, thread="branch")
    assert json.loads(j.read_text(encoding="utf-8")) == rec.entries
    assert [json.loads(line) for line in jl.read_text(encoding="utf-8").splitlines()] == rec.entries
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as con:
        rows = con.execute(
            "SELECT thread_id, idx, entry_id, entry FROM agent_event_log WHERE thread_id='main' ORDER BY idx"
        ).fetchall()
        index_names = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='index'")}
    assert [json.loads(r[3]) for r in rows] == rec.entries
    assert [(r[1], r[2]) for r in rows] == [(e["index"], e["id"]) for e in rec.entries]
    assert "agent_event_log_thread_entry_id" in index_names
    for source, kwargs in ((j, {}), (jl, {}), (db, {"thread": "main"})):
        log = read_log(source, **kwargs)
        assert log.entries == rec.entries
        assert verify(pm.counter_machine(), log).ok
    branch = read_log(db, thread="branch")
    assert branch.entries == rec.entries[:3]
    with pytest.raises(RecorderError, match="already exists"):
        rec.to_sqlite(db, thread="main")
    with pytest.raises(RecorderError, match="already exists"):
        rec.to_json(j)
    rec.to_json(j, overwrite=True)


def test_fork_rules() -> None:
    rec = _counter_session()
    with pytest.raises(RecorderError, match=r"\[1, 6\]"):
        rec.fork(0)
    with pytest.raises(RecorderError):
        rec.fork(7)
    with pytest.raises(RecorderError):
        rec.fork(True)
    f = rec.fork(3)
    assert f.entries == rec.entries[:3] and f.entries is not rec.entries
    f.send({"type": "RESET"})
    assert f.entries[3]["index"] == 3 and f.entries[3]["event"] == {"type": "RESET"}
    assert len(rec.entries) == 6
    assert verify(pm.counter_machine(), f.entries).ok
    full = rec.fork(6)
    assert full.entries == rec.entries


def test_timers_are_fired_by_the_manual_clock() -> None:
    machine = StatechartMachine(
        {
            "id": "timer",
            "initial": "wait",
            "context": {"fired": 0},
            "states": {
                "wait": {
                    "after": {1000: {"target": "ring", "context": lambda c, e: {"fired": c["fired"] + 1}}}
                },
                "ring": {"after": {500: "wait"}, "on": {"STOP": "stopped"}},
                "stopped": {"type": "final"},
            },
        }
    )
    rec = Recorder(machine, clock=ManualClock(0), execution_id="exec_1")
    assert rec.entries[0]["event"] == {"type": "@agent.init"}
    assert rec.advance(999) == []
    fired = rec.advance(1)
    assert [e["event"] for e in fired] == [{"type": "xstate.timer", "id": "xstate.after.1000.timer.wait"}]
    assert fired[0]["recordedAt"] == "1970-01-01T00:00:01.000Z"
    more = rec.advance(3000)  # ring(+500) -> wait(+1000) -> ring(+500) -> wait(+1000)
    assert [e["event"]["id"] for e in more] == [
        "xstate.after.500.timer.ring",
        "xstate.after.1000.timer.wait",
        "xstate.after.500.timer.ring",
        "xstate.after.1000.timer.wait",
    ]
    assert [e["recordedAt"][17:23] for e in more] == ["01.500", "02.500", "03.000", "04.000"]
    assert rec.persisted["context"] == {"fired": 3}
    assert verify(machine, rec.entries).ok


def test_actor_failures_and_manual_completion() -> None:
    machine = pm.triage_machine()
    rec = Recorder(
        machine,
        {"team": "t"},
        executors={"notifyOncall": lambda i: (_ for _ in ()).throw(ValueError("pager down"))},
    )
    rec.executors.pop("searchKnowledgeBase")
    rec.send(
        {
            "type": "TICKETS_RECEIVED",
            "tickets": [{"id": "T-9", "n": 2, "subject": "site down", "plan": "pro"}],
        }
    )
    # classify completed automatically; kb has no executor: still pending
    assert [p["actorId"] for p in rec.pending()] == ["kb"]
    rec.complete("kb", {"article": "KB-1", "confidence": 0.1})
    # urgent -> escalating -> notifyOncall fails -> unhandled error (no onError on page)
    last = rec.entries[-1]
    assert last["event"]["type"] == "xstate.error.actor" and last["event"]["error"] == {
        "name": "ValueError",
        "message": "pager down",
    }
    assert rec.persisted["status"] == "error"
    assert verify(pm.triage_machine(), rec.entries).ok
    with pytest.raises(RecorderError, match="no running child"):
        rec.complete("kb", 1)


def test_bridge_from_a_snapshot_runs_migrate() -> None:
    v1 = Recorder(pm.ticket_v1(), {"title": "Login button misaligned"}, execution_id="e")
    for ev in ["COMMENT", "COMMENT", "START", "COMMENT"]:
        v1.send({"type": ev})
    v1_real = load_json("e_bridge.v1.log.json")
    assert [e["verification"]["stateHash"] for e in v1.entries] == [
        e["verification"]["stateHash"] for e in v1_real
    ]
    v2 = Recorder(
        pm.ticket_v2(),
        snapshot=v1.persisted,
        execution_id="e",
        metadata={"migratedFrom": {"machineVersion": "1", "logIndex": len(v1.entries)}},
    )
    real = load_json("e_bridge.v2.log.json")
    assert v2.entries[0]["event"] == real[0]["event"]
    assert list(v2.entries[0]["metadata"]) == ["executionId", "migratedFrom"]
    for ev in real[1:]:
        v2.send(ev["event"])
    assert [e["verification"]["stateHash"] for e in v2.entries] == [
        e["verification"]["stateHash"] for e in real
    ]
    with pytest.raises(RecorderError, match="exactly one"):
        Recorder(pm.ticket_v2(), {"title": "x"}, snapshot=v1.persisted)


def test_bad_events_are_refused() -> None:
    rec = Recorder(pm.counter_machine(), NO_INPUT)
    with pytest.raises(RecorderError):
        rec.send({"type": ""})
    with pytest.raises(RecorderError):
        rec.send({"type": "@agent.init"})
    assert len(rec.entries) == 1


@requires_node
@pytest.mark.node
def test_recorded_logs_verify_with_the_node_engine_too(tmp_path: Path) -> None:
    """A Recorder-made log verifies under the real XState machine (the fixtures' .mjs twins)."""
    counter = _counter_session()
    triage = Recorder(pm.triage_machine(), {"team": "tier2", "maxKbAttempts": 3})
    _run_host_script("second", triage, load_json("g_triage.host-script.json")["calls"])
    path = triage.to_sqlite(tmp_path / "t.sqlite", thread="second")
    with load_machine(MACHINES / "counter.mjs") as js_counter:
        report = verify(js_counter, counter.entries)
        assert report.ok and len(report.mismatches) == 0
    with load_machine(MACHINES / "triage.mjs", "triageMachine") as js_triage:
        assert js_triage.version == triage.entries[0]["machineVersion"]
        report = verify(js_triage, read_log(path, thread="second"))
        assert report.ok and len(report.mismatches) == 0


def test_an_event_nested_thousands_deep_is_recorded_and_verifies(tmp_path: Path) -> None:
    deep: list[Any] = []
    cur = deep
    for _ in range(5_000):  # past Python's recursion limit, inside agentscope's MAX_DEPTH
        nxt: list[Any] = []
        cur.append(nxt)
        cur = nxt
    rec = Recorder(pm.counter_machine())
    entry = rec.send({"type": "INC", "by": 2, "nest": deep})
    assert entry["index"] == 1 and rec.persisted["context"]["count"] == 2
    assert verify(pm.counter_machine(), rec.entries).ok
    log = read_log(rec.to_jsonl(tmp_path / "deep.jsonl"))
    assert len(log) == 2 and log.entries[1]["event"]["type"] == "INC"
    child = rec.fork(2)  # copies the deep entries
    assert [e["id"] for e in child.entries] == [e["id"] for e in rec.entries]
    assert _depth(child.entries[1]["event"]["nest"]) == 5_000 and child.entries[1] is not rec.entries[1]
    with_input = Recorder(pm.counter_machine(), {"start": 1, "nest": deep})
    assert _depth(with_input.entries[0]["event"]["input"]["nest"]) == 5_000


def _depth(value: list[Any]) -> int:
    n = 0
    while value:
        value, n = value[0], n + 1
    return n

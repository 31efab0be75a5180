"""Integration: replay / verify / Timeline on every real fixture log with its real machine module
run by XState 6.0.0-alpha.48 in Node (``agentscope.engines.xstate``)."""

from __future__ import annotations

import copy
import json
import random
import subprocess
from collections.abc import Iterator
from typing import Any

import pytest

from agentscope.errors import ReplayDivergenceError
from agentscope.frames import Verdict
from agentscope.hashing import state_hash
from agentscope.pipeline import Timeline, replay, verify
from tests.conftest import MACHINES, REPO, load_json, requires_node
from tests.test_replay_support import iso

pytestmark = requires_node

xstate = pytest.importorskip("agentscope.engines.xstate")

LOGS = {
    # log file -> (module, export)
    "a_counter.log.json": ("counter.mjs", "counterMachine"),
    "c_fork_memory.parent.log.json": ("counter.mjs", "counterMachine"),
    "c_fork_memory.fork.log.json": ("counter.mjs", "counterMachine"),
    "c_fork_sqlite.parent.log.json": ("counter.mjs", "counterMachine"),
    "c_fork_sqlite.fork.log.json": ("counter.mjs", "counterMachine"),
    "e_bridge.v1.log.json": ("ticket.mjs", "ticketV1"),
    "e_bridge.v2.log.json": ("ticket.mjs", "ticketV2"),
    "g_triage.main.log.json": ("triage.mjs", "triageMachine"),
    "g_triage.fork.log.json": ("triage.mjs", "triageMachine"),
    "g_triage.second.log.json": ("triage.mjs", "triageMachine"),
}
REPLAYS = {
    "a_counter.log.json": "a_counter.replay.json",
    "c_fork_memory.parent.log.json": "c_fork_memory.parent.replay.json",
    "c_fork_memory.fork.log.json": "c_fork_memory.fork.replay.json",
    "e_bridge.v1.log.json": "e_bridge.v1.replay.json",
    "e_bridge.v2.log.json": "e_bridge.v2.replay.json",
    "g_triage.main.log.json": "g_triage.main.replay.json",
    "g_triage.fork.log.json": "g_triage.fork.replay.json",
    "g_triage.second.log.json": "g_triage.second.replay.json",
}


@pytest.fixture(scope="module")
def machines() -> Iterator[dict[tuple[str, str], Any]]:
    loaded: dict[tuple[str, str], Any] = {}
    for mod, export in set(LOGS.values()):
        loaded[(mod, export)] = xstate.load_machine(MACHINES / mod, export)
    yield loaded
    for m in loaded.values():
        m.close()


@pytest.mark.parametrize("name", sorted(LOGS))
def test_fixture_log_verifies_with_zero_mismatches(name: str, machines: Any) -> None:
    m = machines[LOGS[name]]
    log = load_json(name)
    rep = verify(m, log, strict=True)
    assert rep.ok, rep.summary()
    assert (rep.df["verdict"] == Verdict.VERIFIED.value).all()
    r = replay(m, log, verify="strict")
    assert r.state_hash == log[-1]["verification"]["stateHash"]


@pytest.mark.parametrize("name", sorted(REPLAYS))
def test_timeline_prefixes_match_reference(name: str, machines: Any) -> None:
    m = machines[LOGS[name]]
    log = load_json(name)
    ref = load_json(REPLAYS[name])
    tl = Timeline(m, log, checkpoint_every=7)
    for p in ref["prefixes"]:
        n = p["n"]
        f = tl[n - 1]
        assert f.computed_hash == p["getSnapshotStateHash"] == p["recordedStateHash"]
        assert state_hash(f.persisted) == p["getSnapshotStateHash"]
        assert replay(m, log[:n]).state_hash == p["getSnapshotStateHash"]


def test_readme_hashes(machines: Any) -> None:
    tri = machines[("triage.mjs", "triageMachine")]
    main = Timeline(tri, load_json("g_triage.main.log.json"), checkpoint_every=16)
    assert [main[n - 1].computed_hash for n in (1, 18, 45, 91)] == [
        "d9dc92dc", "f9b4cc6c", "3bbc8ce3", "5b6a2cd9"]
    assert main[-1].status == "done"
    assert main[-1].output["leftInQueue"] == 0


def test_checkpoint_seeks_equal_full_fold_on_real_logs(machines: Any) -> None:
    for name, ks in (("g_triage.main.log.json", (1, 7)), ("g_triage.fork.log.json", (5,))):
        m = machines[LOGS[name]]
        log = load_json(name)
        expected = [e["verification"]["stateHash"] for e in log]
        for k in ks:
            tl = Timeline(m, log, checkpoint_every=k, cache_size=0)
            order = list(range(len(log)))
            random.Random(k).shuffle(order)
            for n in order:
                tl.clear_cache()
                assert state_hash(tl[n].persisted) == expected[n], (name, k, n)
            assert tl.seek_fallbacks == 0


@pytest.mark.parametrize("index", [27, 35])
def test_tampered_triage_fails_at_exactly_that_entry(index: int, machines: Any) -> None:
    tri = machines[("triage.mjs", "triageMachine")]
    log = copy.deepcopy(load_json("g_triage.main.log.json"))
    ev = log[index]["event"]
    if index == 27:
        ev["output"]["confidence"] = 0.55  # would auto-resolve at 0.92
    else:
        ev["tickets"][0]["subject"] = "tampered"
    with pytest.raises(ReplayDivergenceError) as ei:
        replay(tri, log)
    assert ei.value.index == index and ei.value.kind == "state"
    assert ei.value.expected == log[index]["verification"]["stateHash"]
    rep = verify(tri, log)
    assert rep.first_mismatch is not None and rep.first_mismatch["index"] == index
    assert rep.first_mismatch["explanation"].startswith("unexplained")
    assert Timeline(tri, log).mismatch_indices[0] == index


def test_bridge_v1_v2_with_machines_per_version(machines: Any) -> None:
    v1m = machines[("ticket.mjs", "ticketV1")]
    v2m = machines[("ticket.mjs", "ticketV2")]
    v1 = load_json("e_bridge.v1.log.json")
    v2 = load_json("e_bridge.v2.log.json")
    both = v1 + v2
    rep = verify(None, both, machines={"1": v1m, "2": v2m}, strict=True)
    assert rep.ok, rep.summary()  # the bridge init (migratedFrom) restarts its own numbering (§1.5)
    assert list(rep.df["computed_hash"]) == list(rep.df["recorded_hash"])
    assert list(rep.df["segment"]) == [0] * len(v1) + [1] * len(v2)
    lacking = verify(None, both, machines={"1": v1m})
    assert not lacking.ok and list(lacking.log_failures["kind"]) == ["no-machine"]
    tl = Timeline(None, both, machines={"1": v1m, "2": v2m}, checkpoint_every=2)
    assert tl[len(v1)].computed_hash == "cba54eed" and tl[-1].computed_hash == "d1f45447"
    assert tl[len(v1) - 1].computed_hash == "6aa1b5fc"
    assert tl[len(v1)].context["commentCount"] == 3


# -- live-only hash causes, recorded from real live XState actors -------------------------------

WAITER = """
import { createMachine } from "xstate";
export const waiter = createMachine({
  id: "waiter", initial: "idle", context: { n: 0 },
  states: { idle: { on: { WAIT: "waiting" } }, waiting: { after: { 5000: "idle" } } },
});
"""
CRASHER = """
import { createAsyncLogic, setup } from "xstate";
export const job = createAsyncLogic({
  run: async () => { await new Promise((r) => setTimeout(r, 10)); throw new Error("boom"); },
});
export const crasher = setup({ actors: { job } }).createMachine({
  id: "crasher", initial: "idle",
  states: { idle: { on: { GO: "working" } }, working: { invoke: { id: "job", src: "job" } } },
});
"""
# A host that stamps hashes from the live actor, as runAgent does: the live persisted snapshot,
# with a live Error canonicalised as the hash does ({errorName, message}, spec §2.1).
LIVE = """
import { createActor } from "xstate";
import * as mod from "./machine.mjs";
const a = createActor(mod[process.argv[2]]);
a.subscribe({ error: () => {} });
a.start();
const out = [];
const sessions = {};
const remember = () => {
  for (const [id, c] of Object.entries(a.getSnapshot().children)) sessions[id] = c.sessionId;
};
const rec = (event) => {
  const p = a.getPersistedSnapshot();
  if (p.error instanceof Error) p.error = { errorName: p.error.name, message: p.error.message };
  out.push({ event, now: Date.now(), persisted: p });
};
rec({ type: "@agent.init" });
for (const step of JSON.parse(process.argv[3])) {
  if (step.sleep) { await new Promise((r) => setTimeout(r, step.sleep)); continue; }
  const ev = { ...step.event };
  if (ev.actorId) ev.sessionId = sessions[ev.actorId];
  if (!step.external) a.send(ev);  // external: the child itself already delivered it
  rec(ev);
  remember();
}
a.stop();
console.log(JSON.stringify(out));
"""


def _live_log(tmp_path: Any, source: str, export: str, steps: list[dict[str, Any]]) -> Any:
    (tmp_path / "node_modules").symlink_to(REPO / "node_modules")
    (tmp_path / "machine.mjs").write_text(source)
    (tmp_path / "live.mjs").write_text(LIVE)
    out = subprocess.run(["node", "live.mjs", export, json.dumps(steps)], cwd=tmp_path,
                         capture_output=True, text=True, check=True, timeout=60).stdout
    machine = xstate.load_machine(tmp_path / "machine.mjs", export)
    log = []
    for i, rec in enumerate(json.loads(out)):
        log.append({
            "schemaVersion": 1, "id": f"evt_{i:08d}", "index": i, "recordedAt": iso(rec["now"]),
            "machineId": machine.machine_id, "machineVersion": machine.version,
            "event": rec["event"], "verification": {"stateHash": state_hash(rec["persisted"])},
        })
    return machine, log, json.loads(out)


def test_live_after_timer_startedat_confirmed(tmp_path: Any) -> None:
    m, log, live = _live_log(tmp_path, WAITER, "waiter", [
        {"event": {"type": "WAIT"}}, {"sleep": 30}, {"event": {"type": "NOOP"}}])
    try:
        started = next(iter(live[1]["persisted"]["timers"].values()))["startedAt"]
        with pytest.raises(ReplayDivergenceError) as ei:
            replay(m, log)
        assert ei.value.index == 1  # the reference's own replay fails here too
        rep = verify(m, log, strict=True)
        assert rep.ok, rep.summary()
        assert list(rep.df["verdict"]) == ["verified", "explained", "explained"]
        assert f"startedAt={started}" in rep.df.loc[1, "explanation"]
        assert f"startedAt={started}" in rep.df.loc[2, "explanation"]
        assert bool(rep.df.loc[2, "ignored"])
    finally:
        m.close()


def test_live_error_confirmed(tmp_path: Any) -> None:
    m, log, _ = _live_log(tmp_path, CRASHER, "crasher", [
        {"event": {"type": "GO"}}, {"sleep": 60},
        {"event": {"type": "xstate.error.actor", "actorId": "job",
                   "error": {"name": "Error", "message": "boom"}}, "external": True}])
    try:
        rep = verify(m, log, strict=True)
        assert rep.ok, rep.summary()
        assert list(rep.df["verdict"]) == ["verified", "verified", "explained"]
        assert "live Error" in rep.df.loc[2, "explanation"]
        assert Timeline(m, log)[2].status == "error"
    finally:
        m.close()

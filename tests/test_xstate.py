"""The Node engine against the real fixtures: every recorded hash, replay prefixes, versions, graph.

Logs are read with ``json.load`` (independent of the log reader). Seeds follow spec §4.1 step 3:
``initial(input)`` or ``restore(init.event.snapshot)``.
"""

from __future__ import annotations

import dataclasses
import json
import random
from collections.abc import Iterator
from typing import Any

import pytest

from agentscope.engines.base import NO_INPUT, Machine, Snapshot
from agentscope.engines.xstate import XStateMachine, load_machine
from agentscope.hashing import canonical_json, djb2_hex, machine_version, state_hash
from tests.conftest import FIXTURES, MACHINES, REPO, load_json, requires_node

pytestmark = [requires_node, pytest.mark.node]

# log name -> (module, export)
LOGS: dict[str, tuple[str, str | None]] = {
    "a_counter": ("counter.mjs", None),
    "c_fork_memory.parent": ("counter.mjs", None),
    "c_fork_memory.fork": ("counter.mjs", None),
    "c_fork_sqlite.parent": ("counter.mjs", None),
    "c_fork_sqlite.fork": ("counter.mjs", None),
    "e_bridge.v1": ("ticket.mjs", "ticketV1"),
    "e_bridge.v2": ("ticket.mjs", "ticketV2"),
    "g_triage.main": ("triage.mjs", None),
    "g_triage.fork": ("triage.mjs", None),
    "g_triage.second": ("triage.mjs", None),
}


@pytest.fixture(scope="module")
def machines() -> Iterator[dict[tuple[str, str | None], XStateMachine]]:
    loaded: dict[tuple[str, str | None], XStateMachine] = {}
    for module, export in set(LOGS.values()):
        loaded[(module, export)] = load_machine(MACHINES / module, export)
    yield loaded
    for m in loaded.values():
        m.close()


def entries_of(name: str) -> list[dict[str, Any]]:
    with open(FIXTURES / f"{name}.log.json", encoding="utf-8") as fh:
        data: list[dict[str, Any]] = json.load(fh)
    return data


def seed(machine: Machine, init: dict[str, Any]) -> Snapshot:
    ev = init["event"]
    if "snapshot" in ev:
        return machine.restore(ev["snapshot"])
    return machine.initial(ev.get("input", NO_INPUT))


def full_fold(machine: Machine, entries: list[dict[str, Any]]) -> list[Snapshot]:
    s0 = seed(machine, entries[0])
    return [s0, *machine.fold(s0, [e["event"] for e in entries[1:]], sessions={})]


@pytest.mark.parametrize("name", sorted(LOGS))
def test_every_recorded_hash_reproduced(name: str, machines: dict[tuple[str, str | None], XStateMachine]) -> None:
    entries = entries_of(name)
    m = machines[LOGS[name]]
    snaps = full_fold(m, entries)
    assert len(snaps) == len(entries)
    recorded = [e["verification"]["stateHash"] for e in entries]
    computed = [state_hash(s.persisted) for s in snaps]
    assert computed == recorded


@pytest.mark.parametrize("name", sorted(n for n in LOGS if (FIXTURES / f"{n}.replay.json").exists()))
def test_replay_prefix_snapshots_equal(name: str, machines: dict[tuple[str, str | None], XStateMachine]) -> None:
    ref = load_json(f"{name}.replay.json")
    snaps = full_fold(machines[LOGS[name]], entries_of(name))
    assert ref["prefixes"]
    for p in ref["prefixes"]:
        ours = snaps[p["n"] - 1].persisted
        assert canonical_json(ours) == canonical_json(p["persistedSnapshot"])
        assert ours == p["persistedSnapshot"]
        assert state_hash(ours) == p["getSnapshotStateHash"]
    assert state_hash(snaps[-1].persisted) == ref["verifyTrue"]["finalStateHash"]


@pytest.mark.parametrize(
    ("machine_json", "module", "export"),
    [
        ("a_counter.machine.json", "counter.mjs", None),
        ("e_bridge.v1.machine.json", "ticket.mjs", "ticketV1"),
        ("e_bridge.v2.machine.json", "ticket.mjs", "ticketV2"),
        ("g_triage.machine.json", "triage.mjs", None),
    ],
)
def test_machine_id_version_and_structural_string(
    machine_json: str, module: str, export: str | None, machines: dict[tuple[str, str | None], XStateMachine]
) -> None:
    ref = load_json(machine_json)
    m = machines[(module, export)]
    assert m.machine_id == ref["machineId"]
    assert m.version == ref["machineVersion"]
    assert m.structural_string == ref["structuralHashInput"]
    assert m.structural_hash == ref["structuralHash"] == djb2_hex(ref["structuralHashInput"])
    assert m.declared_version == ref["explicitVersion"]


def test_loop_machine_version() -> None:
    with load_machine(MACHINES / "loop.mjs") as m:
        assert (m.machine_id, m.version, m.export_name) == ("loop", "a230273a", "default")
        assert '"actors":{"tick":{"config":{}}}' in m.structural_string


def test_spec_toggle_structural_example() -> None:
    # Spec §3: toggle -> b37c6aad, from a CommonJS module (module.exports = machine).
    with load_machine(REPO / "tests" / "xstate_machines" / "toggle.cjs") as m:
        assert m.structural_string == (
            '{"id":"toggle","initial":"off","states":{"off":{"on":{"TOGGLE":"on"}},"on":{"on":{"TOGGLE":"off"}}}}'
        )
        assert m.version == "b37c6aad"
        s = m.transition(m.initial(), {"type": "TOGGLE"})
        assert s.value == "on"


def test_structural_string_matches_python_port_on_json_configs() -> None:
    # The JS serializer and agentscope.hashing.structural_string agree on a function-free config.
    from agentscope.hashing import structural_string

    with load_machine(REPO / "tests" / "xstate_machines" / "toggle.cjs") as m:
        cfg = {
            "id": "toggle",
            "initial": "off",
            "states": {"off": {"on": {"TOGGLE": "on"}}, "on": {"on": {"TOGGLE": "off"}}},
        }
        assert structural_string(cfg) == m.structural_string
        assert machine_version(cfg) == m.version == "b37c6aad"


def test_bridge_migrate_reproduces_the_bridge_snapshot(machines: dict[tuple[str, str | None], XStateMachine]) -> None:
    v1 = machines[("ticket.mjs", "ticketV1")]
    v2 = machines[("ticket.mjs", "ticketV2")]
    tail = full_fold(v1, entries_of("e_bridge.v1"))[-1]
    migrated = v2.restore(tail.persisted)
    bridge = entries_of("e_bridge.v2")[0]["event"]["snapshot"]
    assert migrated.persisted == bridge
    assert migrated.context["commentCount"] == tail.context["comments"]


def test_export_selection() -> None:
    with pytest.raises(Exception, match="several machines"):
        load_machine(MACHINES / "ticket.mjs")
    with load_machine(MACHINES / "triage.mjs") as m:  # one machine among async-logic exports
        assert m.export_name == "triageMachine"
    with load_machine(MACHINES / "counter.mjs", "counterMachine") as m:
        assert m.export_name == "counterMachine"


def test_absent_input_differs_from_null(machines: dict[tuple[str, str | None], XStateMachine]) -> None:
    m = machines[("counter.mjs", None)]
    assert m.initial().context["count"] == 0  # input?.start ?? 0 with input undefined
    assert m.initial(None).context["count"] == 0
    assert m.initial({"start": 5}).context["count"] == 5


# ---------------------------------------------------------------------------------------------
# Batching, handles and re-seeding: none may change a hash.


def hashes(snaps: list[Snapshot]) -> list[str]:
    return [state_hash(s.persisted) for s in snaps]


@pytest.mark.parametrize("name", sorted(LOGS))
def test_reseed_is_hash_neutral_on_fixtures(name: str, machines: dict[tuple[str, str | None], XStateMachine]) -> None:
    entries = entries_of(name)
    m = machines[LOGS[name]]
    default = m.reseed_every
    runs: dict[int, list[Snapshot]] = {}
    try:
        for k in (0, 1, 3):
            m.reseed_every = k
            runs[k] = full_fold(m, entries)
    finally:
        m.reseed_every = default
    recorded = [e["verification"]["stateHash"] for e in entries]
    assert hashes(runs[0]) == hashes(runs[1]) == hashes(runs[3]) == recorded
    assert [s.persisted for s in runs[0]] == [s.persisted for s in runs[1]] == [s.persisted for s in runs[3]]


def loop_events(n: int, *, stale_every: int = 0) -> list[dict[str, Any]]:
    """Events of the loop machine's log (the tick actor's completions, recorded session ids).

    With ``stale_every``, a duplicate completion carrying the *previous* invocation's recorded
    session id is inserted after every ``stale_every``-th completion: a live actor drops it, and
    so must every fold, re-seeded or not.
    """
    out: list[dict[str, Any]] = []
    for i in range(n):
        ev = {"type": "xstate.done.actor", "actorId": "tick", "sessionId": f"rec:{i}", "output": {"delta": (i * 7) % 13}}
        out.append(ev)
        if stale_every and i % stale_every == stale_every - 1:
            out.append({**ev, "output": {"delta": 1000}})
    return out


def test_reseed_is_hash_neutral_on_long_loop_log() -> None:
    n = 1000
    events = loop_events(n, stale_every=50)
    results: dict[int, list[str]] = {}
    for k in (0, 1, 7, 64):
        with load_machine(MACHINES / "loop.mjs", reseed_every=k) as m:
            s0 = m.initial({"limit": n})
            results[k] = [state_hash(s0.persisted), *hashes(m.fold(s0, events, sessions={}))]
    assert results[1] == results[0]
    assert results[7] == results[0]
    assert results[64] == results[0]
    # the stale duplicates were dropped (no delta 1000 was added) and the loop finished
    with load_machine(MACHINES / "loop.mjs", reseed_every=7) as m:
        final = m.fold(m.initial({"limit": n}), events, sessions={})[-1]
    assert final.status == "done"
    assert final.context == {"limit": n, "i": n, "sum": sum((i * 7) % 13 for i in range(n))}


def test_batches_and_seeds_continue_identically() -> None:
    n = 400
    events = loop_events(n, stale_every=25)
    with load_machine(MACHINES / "loop.mjs", reseed_every=5) as m:
        s0 = m.initial({"limit": n})
        whole = hashes(m.fold(s0, events, sessions={}))
        # random batch sizes, continuing from the live handle with the same cache
        rng = random.Random(7)
        cache: dict[str, str] = {}
        s, got, i = s0, [], 0
        while i < len(events):
            step = rng.randint(1, 40)
            batch = m.fold(s, events[i : i + step], sessions=cache)
            got += hashes(batch)
            s, i = batch[-1], i + step
        assert got == whole
        # seeding from a persisted-only snapshot (no live handle) with the cache as of that point
        cache_mid: dict[str, str] = {}
        live_mid = m.fold(s0, events[:61], sessions=cache_mid)[-1]
        mid = Snapshot(live_mid.persisted, dataclasses.replace(live_mid.handle, id=None))
        rest = m.fold(mid, events[61:], sessions=dict(cache_mid))
        assert hashes(rest) == whole[61:]
        inner = m.fold(s0, events[:100], sessions={})
        assert all(s.handle.id is None for s in inner[:-1])  # only the last snapshot stays live
        assert inner[-1].handle.id is not None
        first = inner
        # a snapshot rebuilt from a plain dict (no handle at all)
        bare = Snapshot(dict(first[-1].persisted))
        assert hashes(m.fold(bare, events[100:200], sessions={})) == whole[100:200]


def test_fold_sessions_cache_updated_in_place() -> None:
    with load_machine(MACHINES / "loop.mjs") as m:
        s0 = m.initial({"limit": 3})
        cache: dict[str, str] = {}
        out = m.fold(s0, loop_events(2), sessions=cache)
        assert set(cache) == {"tick\u0000rec:0", "tick\u0000rec:1"}
        assert cache["tick\u0000rec:0"] == s0.handle.children["tick"]
        assert m.child_session(out[-1], "tick") == out[-1].handle.children["tick"]
        assert m.child_session(out[-1], "nope") is None


def test_transition_does_not_rebind(machines: dict[tuple[str, str | None], XStateMachine]) -> None:
    with load_machine(MACHINES / "loop.mjs") as m:
        s0 = m.initial({"limit": 3})
        ev = loop_events(1)[0]
        assert m.transition(s0, ev).persisted == s0.persisted  # recorded session: dropped
        assert m.fold(s0, [ev])[0].context["i"] == 1  # rebound: applied


def test_machine_protocol_and_empty_fold(machines: dict[tuple[str, str | None], XStateMachine]) -> None:
    m = machines[("counter.mjs", None)]
    assert isinstance(m, Machine)
    s = m.initial({"start": 1})
    assert m.fold(s, []) == []
    assert m.persist(s) == dict(s.persisted)
    assert m.ping()["pid"] == m.pid


# ---------------------------------------------------------------------------------------------
# Graph.


def test_triage_graph(machines: dict[tuple[str, str | None], XStateMachine]) -> None:
    g = machines[("triage.mjs", None)].graph
    assert g.machine_id == g.root == "supportTriage"
    nodes = g.nodes
    root = nodes["supportTriage"]
    assert root.children == tuple(f"supportTriage.{k}" for k in ("standby", "working", "paused", "closed"))
    assert root.initial == "supportTriage.standby"
    working = nodes["supportTriage.working"]
    assert working.kind == "compound"
    assert working.initial == "supportTriage.working.selecting"
    assert working.children[0] == "supportTriage.working.hist"
    hist = nodes["supportTriage.working.hist"]
    assert (hist.kind, hist.history, hist.initial) == ("history", "shallow", "supportTriage.working.selecting")
    analyzing = nodes["supportTriage.working.analyzing"]
    assert analyzing.kind == "parallel"
    assert analyzing.children == (
        "supportTriage.working.analyzing.classification",
        "supportTriage.working.analyzing.knowledge",
    )
    assert nodes["supportTriage.working.analyzing.knowledge.searching"].invoke == (("kb", "searchKnowledgeBase"),)
    assert nodes["supportTriage.working.analyzing.classification.running"].invoke == (("classify", "classifyTicket"),)
    assert nodes["supportTriage.working.escalating"].invoke == (("page", "notifyOncall"),)
    assert nodes["supportTriage.closed"].kind == "final"
    assert nodes["supportTriage.working.awaitingAgent.drafting"].kind == "atomic"
    assert nodes["supportTriage.working.awaitingAgent.drafting"].path == ("working", "awaitingAgent", "drafting")

    def tr(source: str, event: str) -> list[Any]:
        return [t for t in g.transitions if t.source == source and t.event == event]

    (resume,) = tr("supportTriage.paused", "RESUME")
    assert resume.targets == ("supportTriage.working.hist",) and not resume.dynamic
    sel = tr("supportTriage.working.selecting", "")
    assert [t.kind for t in sel] == ["always", "always"]
    assert sel[0].guard is not None and sel[0].targets == ("supportTriage.standby",)
    assert sel[1].guard is None and sel[1].targets == ("supportTriage.working.analyzing",)
    routing = tr("supportTriage.working.routing", "")
    assert [t.targets for t in routing] == [
        ("supportTriage.working.escalating",),
        ("supportTriage.working.selecting",),
        ("supportTriage.working.awaitingAgent",),
    ]
    assert [t.guard is not None for t in routing] == [True, True, False]
    kb_err = tr("supportTriage.working.analyzing.knowledge.searching", "xstate.error.actor.kb")
    assert [t.kind for t in kb_err] == ["invoke.onError", "invoke.onError"]
    assert kb_err[0].reenter and kb_err[0].targets == ("supportTriage.working.analyzing.knowledge.searching",)
    (kb_done,) = tr("supportTriage.working.analyzing.knowledge.searching", "xstate.done.actor.kb")
    assert kb_done.dynamic and kb_done.targets == () and kb_done.kind == "invoke.onDone"
    (an_done,) = tr("supportTriage.working.analyzing", "xstate.done.state.supportTriage.working.analyzing")
    assert an_done.kind == "onDone" and an_done.targets == ("supportTriage.working.routing",)
    (pause,) = tr("supportTriage.working", "PAUSE")
    assert pause.dynamic
    # active ids from a real persisted value
    snaps = full_fold(machines[("triage.mjs", None)], entries_of("g_triage.main"))
    parallel = next(s for s in snaps if isinstance(s.value, dict) and "analyzing" in s.value.get("working", {}))
    active = g.active_ids(parallel.value)
    assert {"supportTriage.working.analyzing.classification", "supportTriage.working.analyzing.knowledge"} <= active


def test_counter_graph_dynamic_transitions(machines: dict[tuple[str, str | None], XStateMachine]) -> None:
    g = machines[("counter.mjs", None)].graph
    by = {(t.source, t.event): t for t in g.transitions}
    for ev in ("INC", "DEC", "RESET"):
        t = by[("counter", ev)]
        assert t.dynamic and t.targets == ()
    assert by[("counter.off", "TOGGLE")].dynamic
    fin = by[("counter.on", "FINISH")]
    assert not fin.dynamic and fin.targets == ("counter.done",)


def test_graph_after_deep_history_wildcard_named_guard() -> None:
    with load_machine(REPO / "tests" / "xstate_machines" / "timers.mjs") as m:
        g = m.graph
        h = g.nodes["timers.deep.hist"]
        assert (h.kind, h.history, h.initial) == ("history", "deep", "timers.deep.y")
        assert g.nodes["timers.deep"].tags == ("busy",)
        by = {(t.source, t.event): t for t in g.transitions}
        after = by[("timers.wait", "xstate.after.1000.timers.wait")]
        assert after.kind == "after" and after.targets == ("timers.deep.hist",)
        go = by[("timers.wait", "GO")]
        assert go.guard == "isReady" and go.actions == ("noteGo",) and go.targets == ("timers.deep",)
        assert by[("timers.wait", "*")].targets == ("timers.wait",)
        # the timer shows up in the persisted snapshot and fires on its journaled event
        s0 = m.initial()
        assert "xstate.after.1000.timers.wait" in s0.timers
        s1 = m.transition(s0, {"type": "xstate.timer", "id": "xstate.after.1000.timers.wait"})
        assert s1.value == {"deep": "y"}


def test_fold_iter_equals_fold_and_tolerates_interleaved_calls() -> None:
    n = 300
    events = loop_events(n, stale_every=20)
    with load_machine(MACHINES / "loop.mjs", reseed_every=5) as m:
        s0 = m.initial({"limit": n})
        c1: dict[str, str] = {}
        whole = m.fold(s0, events, sessions=c1)
        c2: dict[str, str] = {}
        got: list[str] = []
        for i, snap in enumerate(m.fold_iter(s0, events, sessions=c2, chunk=7)):
            got.append(state_hash(snap.persisted))
            if i % 50 == 3:  # other requests while a chunk is in flight
                assert m.ping()["pid"] == m.pid
                assert m.restore(snap.persisted).persisted == snap.persisted
        assert got == hashes(whole)
        assert set(c2) == set(c1)  # the same recorded ids were bound (minted ids differ per fold)
        assert list(m.fold_iter(s0, [])) == []

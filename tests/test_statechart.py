"""The pure-Python statechart engine against the real XState logs and snapshots (fixtures)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from agentscope.engines.base import Machine
from agentscope.engines.statechart import StatechartMachine, setup
from agentscope.errors import EngineError, StatechartConfigError
from agentscope.examples import python_machines as pm
from agentscope.hashing import canonical_json, state_hash
from agentscope.recorder import fold_entries
from tests.conftest import load_json

LOGS: list[tuple[str, Callable[[], StatechartMachine]]] = [
    ("a_counter.log.json", pm.counter_machine),
    ("c_fork_memory.parent.log.json", pm.counter_machine),
    ("c_fork_memory.fork.log.json", pm.counter_machine),
    ("c_fork_sqlite.parent.log.json", pm.counter_machine),
    ("c_fork_sqlite.fork.log.json", pm.counter_machine),
    ("e_bridge.v1.log.json", pm.ticket_v1),
    ("e_bridge.v2.log.json", pm.ticket_v2),
    ("g_triage.main.log.json", pm.triage_machine),
    ("g_triage.fork.log.json", pm.triage_machine),
    ("g_triage.second.log.json", pm.triage_machine),
]


@pytest.mark.parametrize(("log", "factory"), LOGS, ids=[name for name, _ in LOGS])
def test_every_recorded_hash_is_reproduced(log: str, factory: Callable[[], StatechartMachine]) -> None:
    entries = load_json(log)
    machine = factory()
    snaps = fold_entries(machine, entries)
    computed = [state_hash(machine.persist(s)) for s in snaps]
    recorded = [e["verification"]["stateHash"] for e in entries]
    assert computed == recorded
    assert all(e["machineVersion"] == machine.version for e in entries[1:])


@pytest.mark.parametrize(
    ("replay", "log", "factory"),
    [
        ("a_counter.replay.json", "a_counter.log.json", pm.counter_machine),
        ("c_fork_memory.parent.replay.json", "c_fork_memory.parent.log.json", pm.counter_machine),
        ("c_fork_memory.fork.replay.json", "c_fork_memory.fork.log.json", pm.counter_machine),
        ("e_bridge.v1.replay.json", "e_bridge.v1.log.json", pm.ticket_v1),
        ("e_bridge.v2.replay.json", "e_bridge.v2.log.json", pm.ticket_v2),
        ("g_triage.main.replay.json", "g_triage.main.log.json", pm.triage_machine),
        ("g_triage.fork.replay.json", "g_triage.fork.log.json", pm.triage_machine),
        ("g_triage.second.replay.json", "g_triage.second.log.json", pm.triage_machine),
    ],
)
def test_persisted_snapshots_equal_xstate_ones(
    replay: str, log: str, factory: Callable[[], StatechartMachine]
) -> None:
    """The persisted snapshot itself (not only its hash) equals XState's, key order included."""
    machine = factory()
    snaps = fold_entries(machine, load_json(log))
    prefixes = load_json(replay)["prefixes"]
    assert prefixes
    for p in prefixes:
        ours = machine.persist(snaps[p["n"] - 1])
        assert canonical_json(ours) == canonical_json(p["persistedSnapshot"]), p["n"]
        assert list(ours) == list(p["persistedSnapshot"]), p["n"]


@pytest.mark.parametrize(
    ("machine_json", "factory"),
    [
        ("a_counter.machine.json", pm.counter_machine),
        ("e_bridge.v1.machine.json", pm.ticket_v1),
        ("e_bridge.v2.machine.json", pm.ticket_v2),
        ("g_triage.machine.json", pm.triage_machine),
    ],
)
def test_versions_equal_the_fixtures(machine_json: str, factory: Callable[[], StatechartMachine]) -> None:
    info = load_json(machine_json)
    machine = factory()
    assert machine.machine_id == info["machineId"]
    assert machine.version == info["machineVersion"]
    assert machine.structural_input == info["structuralHashInput"]
    assert machine.structural_hash == info["structuralHash"]


def test_children_persist_like_xstate_while_tools_run() -> None:
    machine = pm.triage_machine()
    s = machine.initial({"team": "t", "maxKbAttempts": 2})
    s = machine.transition(
        s, {"type": "TICKETS_RECEIVED", "tickets": [{"id": "T-1", "n": 1, "subject": "down", "plan": "pro"}]}
    )
    # Printed by xstate@6.0.0-alpha.48 for the same machine and event.
    expected = {
        "classify": {
            "address": "supportTriage/classify",
            "snapshot": {
                "status": "active",
                "input": {"id": "T-1", "subject": "down", "plan": "pro"},
                "effects": {"async": {"status": "active"}},
            },
            "src": "classifyTicket",
            "syncSnapshot": False,
        },
        "kb": {
            "address": "supportTriage/kb",
            "snapshot": {
                "status": "active",
                "input": {"id": "T-1", "n": 1, "subject": "down", "attempt": 0},
                "effects": {"async": {"status": "active"}},
            },
            "src": "searchKnowledgeBase",
            "syncSnapshot": False,
        },
    }
    p = machine.persist(s)
    assert p["children"] == expected
    assert p["value"] == {"working": {"analyzing": {"classification": "running", "knowledge": "searching"}}}
    assert machine.child_session(s, "kb") is not None
    assert machine.child_session(s, "nope") is None
    # a completion with a stale session is ignored; the minted one is taken
    stale = machine.transition(
        s, {"type": "xstate.done.actor", "actorId": "kb", "sessionId": "stale", "output": {}}
    )
    assert machine.persist(stale) == p
    sid = machine.child_session(s, "kb")
    done = machine.transition(
        s,
        {
            "type": "xstate.done.actor",
            "actorId": "kb",
            "sessionId": sid,
            "output": {"article": "A", "confidence": 1},
        },
    )
    assert list(machine.persist(done)["children"]) == ["classify"]


def test_migrate_runs_when_the_persisted_version_differs() -> None:
    v1_entries = load_json("e_bridge.v1.log.json")
    v1 = pm.ticket_v1()
    final_v1 = v1.persist(fold_entries(v1, v1_entries)[-1])
    bridged = pm.ticket_v2().restore(json.loads(json.dumps(final_v1)))
    bridge_init = load_json("e_bridge.v2.log.json")[0]
    assert pm.ticket_v2().persist(bridged) == bridge_init["event"]["snapshot"]
    assert state_hash(pm.ticket_v2().persist(bridged)) == bridge_init["verification"]["stateHash"]
    with pytest.raises(EngineError, match="does not match machine version"):
        pm.ticket_v1().restore(bridge_init["event"]["snapshot"])


def test_restore_of_every_persisted_snapshot_round_trips() -> None:
    machine = pm.triage_machine()
    entries = load_json("g_triage.main.log.json")
    snaps = fold_entries(machine, entries)
    for i, s in enumerate(snaps[:-1]):
        p = json.loads(json.dumps(machine.persist(s)))
        restored = machine.restore(p)
        assert machine.persist(restored) == p
        # and it continues identically (children get fresh sessions; rebinding maps them)
        nxt = machine.fold(restored, [entries[i + 1]["event"]])[0]
        assert state_hash(machine.persist(nxt)) == entries[i + 1]["verification"]["stateHash"], i


def test_after_timers_are_persisted_and_fired_like_xstate() -> None:
    machine = StatechartMachine(
        {"id": "m", "initial": "a", "states": {"a": {"after": {1000: "b"}, "on": {"X": "b"}}, "b": {}}}
    )
    s = machine.initial()
    # exactly what xstate@6.0.0-alpha.48 persists for the same machine
    assert machine.persist(s) == {
        "status": "active",
        "value": "a",
        "historyValue": {},
        "_nextTimerId": 0,
        "context": {},
        "children": {},
        "timers": {
            "xstate.after.1000.m.a": {
                "id": "xstate.after.1000.m.a",
                "delay": 1000,
                "type": "@xstate.raise",
                "event": {"type": "xstate.after", "delay": 1000, "stateId": "m.a"},
                "target": "self",
            }
        },
    }
    unknown = machine.transition(s, {"type": "xstate.timer", "id": "xstate.after.5.m.a"})
    assert machine.persist(unknown)["value"] == "a"
    fired = machine.transition(s, {"type": "xstate.timer", "id": "xstate.after.1000.m.a"})
    assert machine.persist(fired)["value"] == "b" and machine.persist(fired)["timers"] == {}
    left = machine.transition(s, {"type": "X"})
    assert machine.persist(left)["timers"] == {}


def test_unhandled_actor_error_sets_error_status() -> None:
    machine = setup(actors={"job": lambda i: i}).create_machine(
        {
            "id": "jobber",
            "initial": "idle",
            "states": {"idle": {"on": {"GO": "working"}}, "working": {"invoke": {"id": "job", "src": "job"}}},
        }
    )
    s = machine.transition(machine.initial(), {"type": "GO"})
    sid = machine.child_session(s, "job")
    err = {"name": "Error", "message": "boom"}
    out = machine.persist(
        machine.transition(
            s, {"type": "xstate.error.actor", "actorId": "job", "sessionId": sid, "error": err}
        )
    )
    assert out["status"] == "error" and out["error"] == err and out["children"] == {}
    assert list(out)[:3] == ["status", "error", "value"]
    # spec §3's computed example: jobber's structural hash (setup + async actor, onError target)
    jobber = setup(actors={"job": lambda i: i}).create_machine(
        {
            "id": "jobber",
            "initial": "idle",
            "states": {
                "idle": {"on": {"GO": {"target": "working"}}},
                "working": {"invoke": {"src": "job", "id": "job", "onError": {"target": "failed"}}},
                "failed": {},
                "done": {"type": "final"},
            },
        }
    )
    assert jobber.version == "74198848"


def test_spec_structural_examples() -> None:
    toggle = StatechartMachine(
        {
            "id": "toggle",
            "initial": "off",
            "states": {"off": {"on": {"TOGGLE": "on"}}, "on": {"on": {"TOGGLE": "off"}}},
        }
    )
    assert toggle.version == "b37c6aad"


@pytest.mark.parametrize(
    ("config", "match"),
    [
        ({"id": "m", "initial": "a", "states": {"a": {"spawn": 1}}}, "unsupported key"),
        ({"id": "m", "initial": "a", "states": {"a": {"on": {"X": "nowhere"}}}}, "invalid transition target"),
        (
            {"id": "m", "initial": "a", "states": {"a": {"initial": None, "states": {"b": {}}}}},
            "needs 'initial'",
        ),
        (
            {"id": "m", "initial": "a", "states": {"a": {"on": {"X": {"target": "a", "guard": "nope"}}}}},
            "unknown guard",
        ),
        ({"id": "m", "initial": "a", "states": {"a": {"type": "junction"}}}, "unsupported state type"),
        ({"id": "m", "initial": "a", "states": {"a": {"type": "choice"}}}, "a choice state needs 'choice'"),
        (
            {"id": "m", "initial": "a", "states": {"a": {"type": "choice", "choice": ["a"], "on": {"X": "a"}}}},
            r"a choice state cannot declare \['on'\]",
        ),
        ({"id": "m", "initial": "a", "states": {"a": {"choice": ["a"]}}}, "only be used with type 'choice'"),
        ({"id": "m", "initial": "a", "states": {"a": {"after": {"P1Y": "a"}}}}, "unknown delay 'P1Y'"),
        ({"id": "m", "initial": "a", "states": {"a": {"type": "history"}}}, "needs a 'target'"),
        ({"id": "m", "initial": "a", "states": {"a": {"invoke": {"src": lambda: 1}}}}, "src"),
        (
            {"id": "m", "initial": "a", "states": {"a": {"on": {"X": {"target": "a", "params": {}}}}}},
            "unsupported transition key",
        ),
        ({"id": "m", "initial": "a", "states": {"a": {"after": {"slow": "a"}}}}, "unknown delay"),
        ({"id": "m", "initial": "zz", "states": {"a": {}}}, "initial state"),
    ],
)
def test_unsupported_config_is_rejected_at_construction(config: dict[str, Any], match: str) -> None:
    with pytest.raises(StatechartConfigError, match=match):
        StatechartMachine(config)


def test_graph_lists_every_state_and_transition() -> None:
    g = pm.triage_machine().graph
    assert g.root == "supportTriage"
    assert len(g.nodes) == 19
    assert g.nodes["supportTriage.working.hist"].kind == "history"
    assert g.nodes["supportTriage.working.hist"].history == "shallow"
    assert g.nodes["supportTriage.working.analyzing"].kind == "parallel"
    assert g.nodes["supportTriage.working"].initial == "supportTriage.working.selecting"
    assert g.nodes["supportTriage.closed"].kind == "final"
    assert g.nodes["supportTriage.working.escalating"].invoke == (("page", "notifyOncall"),)
    resume = [t for t in g.transitions if t.event == "RESUME"]
    assert [t.targets for t in resume] == [("supportTriage.working.hist",)]
    approve = next(t for t in g.transitions if t.event == "APPROVE")
    assert approve.dynamic and approve.targets == ()
    kb_err = [t for t in g.transitions if t.event == "xstate.error.actor.kb"]
    assert [t.targets for t in kb_err] == [
        ("supportTriage.working.analyzing.knowledge.searching",),
        ("supportTriage.working.analyzing.knowledge.complete",),
    ]
    assert kb_err[0].reenter and kb_err[0].guard == "(inline)" and kb_err[0].kind == "invoke.onError"
    routing = [t for t in g.transitions if t.source == "supportTriage.working.routing"]
    assert [t.event for t in routing] == ["", "", ""] and all(t.kind == "always" for t in routing)
    on_done = next(t for t in g.transitions if t.kind == "onDone")
    assert on_done.event == "xstate.done.state.supportTriage.working.analyzing"
    assert g.active_ids({"working": {"awaitingAgent": "reviewing"}}) >= {
        "supportTriage.working.awaitingAgent.reviewing"
    }


def test_machine_protocol() -> None:
    assert isinstance(pm.counter_machine(), Machine)


def test_unhandled_event_returns_an_equal_snapshot() -> None:
    machine = pm.counter_machine()
    s = machine.initial({"start": 3})
    assert machine.transition(s, {"type": "NOPE"}).persisted == s.persisted
    with pytest.raises(EngineError):
        machine.transition(s, {"type": ""})


def test_invoke_src_must_be_a_provided_actor() -> None:
    cfg = {"id": "m", "initial": "a", "states": {"a": {"invoke": {"src": "missing"}}}}
    with pytest.raises(StatechartConfigError, match="not among the provided actors"):
        StatechartMachine(cfg, actors={"other": lambda i: i})
    machine = StatechartMachine(cfg)  # replay-only use: no implementations needed
    child = machine.persist(machine.initial())["children"]["0.m.a"]
    assert child["src"] == "missing" and child["address"] == "m/0.m.a"
    assert "input" not in child["snapshot"]


def test_graph_after_event_names() -> None:
    machine = StatechartMachine(
        {"id": "t", "initial": "w", "states": {"w": {"after": {1000: "r", "slow": "r"}}, "r": {}}},
        delays={"slow": 2500},
    )
    events = [t.event for t in machine.graph.transitions]
    assert events == ["xstate.after.1000.t.w", "xstate.after.slow.t.w"]
    timers = machine.persist(machine.initial())["timers"]
    assert list(timers) == ["xstate.after.slow.t.w", "xstate.after.1000.t.w"]
    assert timers["xstate.after.slow.t.w"]["delay"] == 2500
    assert timers["xstate.after.slow.t.w"]["event"] == {
        "type": "xstate.after",
        "delay": "slow",
        "stateId": "t.w",
    }


def test_a_raising_callable_becomes_machine_execution_error() -> None:
    from agentscope.errors import MachineExecutionError

    def boom(context: Any, event: Any) -> bool:
        raise ZeroDivisionError("guard failed")

    machine = StatechartMachine(
        {"id": "m", "initial": "a", "states": {"a": {"on": {"X": {"target": "a", "guard": boom}}}}}
    )
    s = machine.initial()
    with pytest.raises(MachineExecutionError, match="guard failed") as info:
        machine.fold(s, [{"type": "Y"}, {"type": "X"}])
    assert info.value.index == 1 and info.value.event_type == "X"
    assert isinstance(info.value.__cause__, ZeroDivisionError)


def test_initial_naming_no_child_state_is_rejected() -> None:
    # XState 6 throws `Initial state not found on "#x"` at its first transition; we refuse at once
    with pytest.raises(StatechartConfigError, match=r"state x: initial state 'a' not found"):
        StatechartMachine({"id": "x", "initial": "a", "states": {}})


@pytest.mark.parametrize(
    ("state", "match"),
    [
        ({"timeout": 1000, "onTimeout": "a"}, r"unsupported key\(s\) \['timeout', 'onTimeout'\]"),
        ({"onError": "a"}, r"unsupported key\(s\) \['onError'\]"),
        ({"invoke": {"src": "x", "timeout": 5}}, r"unsupported invoke key\(s\) \['timeout'\]"),
        ({"invoke": {"src": lambda i: i}}, "invoke 'src' must be a non-empty actor name"),
        ({"on": {"X": {"target": "a", "input": {}}}}, r"unsupported transition key\(s\) \['input'\]"),
        ({"route": {}}, r"unsupported key\(s\) \['route'\]"),
        ({"on": {"X": {"actions": [{"type": "xstate.sendTo"}]}}}, "action names or Raise/Cancel/Emit"),
        ({"after": {"P1Y": "a"}}, "unknown delay 'P1Y'"),
    ],
)
def test_unsupported_xstate_features_named_in_the_docs_are_rejected(state: dict[str, Any], match: str) -> None:
    """The "Not supported" table of docs/how-to/python-machines.md, row by row."""
    with pytest.raises(StatechartConfigError, match=match):
        StatechartMachine({"id": "m", "initial": "a", "states": {"a": state}})


def test_a_callable_takes_the_state_value_when_it_has_a_third_positional_parameter() -> None:
    """Read from a plain function's code object, the answer is what ``inspect.signature`` gives
    (wrapped functions, bound methods, partials and builtins are asked through it)."""
    import functools

    from agentscope.engines._statechart_nodes import takes_value

    def two(c: Any, e: Any) -> None: ...
    def three(c: Any, e: Any, v: Any) -> None: ...
    def star(*a: Any) -> None: ...
    def posonly(c: Any, /, e: Any, v: Any = 1) -> None: ...
    def kwonly(c: Any, e: Any, *, v: Any) -> None: ...

    @functools.wraps(three)
    def wraps_three(c: Any, e: Any) -> None: ...

    class K:
        def method(self, c: Any, e: Any, v: Any) -> None: ...

    cases = [two, three, star, posonly, kwonly, wraps_three, lambda c, e: 1, K().method,
             functools.partial(three, 1), print]
    assert [takes_value(f) for f in cases] == [False, True, True, True, False, True, False, True, False, True]

"""Both engines take the same transitions on every fixture machine that has a JS and a Python twin.

For each real log in ``tests/fixtures/real`` (and the changed ticket machine), the log is folded
once by the user's XState machine through Node and once by its Python twin
(``agentscope.examples.python_machines``, ``tests.changed_machines``); every entry's
``Snapshot.transitions`` (microstep, event, source, resolved targets, drawn edge, guard, kind,
reenter) must be equal, eventless chains and internal (``xstate.done.state``) events included.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from agentscope.engines.base import Machine, TakenTransition
from agentscope.engines.statechart import StatechartMachine
from agentscope.engines.xstate import XStateMachine, load_machine
from agentscope.examples import python_machines as pm
from agentscope.pipeline.fold import fold_segment
from tests import changed_machines
from tests.conftest import FIXTURES, REPO, load_json, node_ready

pytestmark = pytest.mark.skipif(not node_ready(), reason="needs node and node_modules/xstate")

JS = FIXTURES / "machines"
CASES: list[tuple[Path, str, Callable[[], StatechartMachine], tuple[str, ...]]] = [
    (JS / "counter.mjs", "counterMachine", pm.counter_machine,
     ("a_counter", "c_fork_memory.parent", "c_fork_memory.fork", "c_fork_sqlite.parent", "c_fork_sqlite.fork")),
    (JS / "ticket.mjs", "ticketV1", pm.ticket_v1, ("e_bridge.v1",)),
    (JS / "ticket.mjs", "ticketV2", pm.ticket_v2, ("e_bridge.v2",)),
    (JS / "triage.mjs", "triageMachine", pm.triage_machine, ("g_triage.main", "g_triage.fork", "g_triage.second")),
]


def taken_per_entry(m: Machine, entries: list[dict[str, Any]]) -> list[tuple[TakenTransition, ...] | None]:
    return [s.transitions for _, s in fold_segment(m, entries, 0, len(entries))]


def values_per_entry(m: Machine, entries: list[dict[str, Any]]) -> list[tuple[Any, ...] | None]:
    return [s.microstep_values for _, s in fold_segment(m, entries, 0, len(entries))]


@pytest.fixture(scope="module")
def node_machines() -> Iterator[dict[tuple[Path, str], XStateMachine]]:
    loaded: dict[tuple[Path, str], XStateMachine] = {}
    try:
        yield loaded
    finally:
        for m in loaded.values():
            m.close()


def js(loaded: dict[tuple[Path, str], XStateMachine], path: Path, export: str) -> XStateMachine:
    if (path, export) not in loaded:
        loaded[(path, export)] = load_machine(path, export)
    return loaded[(path, export)]


@pytest.mark.parametrize(("path", "export", "twin", "logs"), CASES, ids=[c[1] for c in CASES])
def test_both_engines_take_the_same_transitions_on_every_entry(
    node_machines: dict[tuple[Path, str], XStateMachine],
    path: Path,
    export: str,
    twin: Callable[[], StatechartMachine],
    logs: tuple[str, ...],
) -> None:
    node, py = js(node_machines, path, export), twin()
    assert node.graph.transitions == py.graph.transitions  # the same edges, in the same order
    for name in logs:
        entries = load_json(f"{name}.log.json")
        a, b = taken_per_entry(node, entries), taken_per_entry(py, entries)
        assert len(a) == len(entries)
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            assert x == y, f"{name} entry {i} ({entries[i]['event']['type']})"
        # every entry but a bridge init (restored: it took nothing) says what it took
        assert all(t is not None for t in a[1:])
        # and the state after each of its microsteps (an eventless chain's passing states)
        va, vb = values_per_entry(node, entries), values_per_entry(py, entries)
        assert va == vb, name
        for step, values in zip(a, va, strict=True):
            assert values is None or len(values) == len({t.microstep for t in step or ()})


def test_the_triage_logs_cover_eventless_chains_internal_events_and_the_kb_self_loop(
    node_machines: dict[tuple[Path, str], XStateMachine],
) -> None:
    node = js(node_machines, JS / "triage.mjs", "triageMachine")
    edges = node.graph.transitions
    taken = [t for name in ("g_triage.main", "g_triage.fork", "g_triage.second")
             for step in taken_per_entry(node, load_json(f"{name}.log.json")) for t in step or ()]
    assert any(t.kind == "always" and t.microstep >= 2 for t in taken)  # a chain of microsteps
    assert any(t.event == "xstate.done.state" for t in taken)  # raised by a parallel state's end
    kb_retry = next(i for i, e in enumerate(edges) if e.kind == "invoke.onError" and e.reenter)
    loop = "supportTriage.working.analyzing.knowledge.searching"
    assert edges[kb_retry].source == loop and edges[kb_retry].targets == (loop,)
    main = taken_per_entry(node, load_json("g_triage.main.log.json"))
    assert main[3] == (TakenTransition(0, "xstate.error.actor", loop, (loop,), kb_retry, guard="(inline)",
                                       kind="invoke.onError", reenter=True),)


def test_the_changed_ticket_machine_takes_the_same_transitions_on_both_engines(
    node_machines: dict[tuple[Path, str], XStateMachine],
) -> None:
    node = js(node_machines, REPO / "tests" / "fixtures" / "changed" / "ticket_working.mjs", "ticketV2Working")
    py = changed_machines.ticket_v2_working()
    # the v1 log's events (its init is not a bridge) replayed under the changed v2 machine
    entries = load_json("e_bridge.v1.log.json")
    a, b = taken_per_entry(node, entries), taken_per_entry(py, entries)
    assert a == b and all(a)


def test_a_delayed_transition_into_a_history_state_and_a_wildcard_on_both_engines(
    node_machines: dict[tuple[Path, str], XStateMachine],
) -> None:
    """``tests/xstate_machines/timers.mjs`` and its Python twin: a ``*`` self-target, the ``after``
    timer firing (``xstate.timer``: the raised ``xstate.after`` event) into a deep history state
    (reported as the history node, the edge drawn), then an event nothing takes."""
    node = js(node_machines, REPO / "tests" / "xstate_machines" / "timers.mjs", "timersMachine")
    py = StatechartMachine(
        {
            "id": "timers",
            "initial": "wait",
            "states": {
                "wait": {
                    "after": {1000: {"target": "deep.hist"}},
                    "on": {"GO": {"target": "deep", "guard": "isReady", "actions": ["noteGo"]},
                           "*": {"target": "wait"}},
                },
                "deep": {
                    "initial": "x",
                    "tags": ["busy"],
                    "states": {"x": {"on": {"NEXT": "y"}}, "y": {},
                               "hist": {"type": "history", "history": "deep", "target": "y"}},
                },
            },
        },
        guards={"isReady": lambda c, e: True},
        actions={"noteGo": lambda c, e: None},
    )
    assert node.graph.transitions == py.graph.transitions

    def run(m: Machine) -> list[tuple[TakenTransition, ...] | None]:
        s = m.transition(m.initial(), {"type": "FOO"})
        out = [s.transitions]
        s = m.transition(s, {"type": "xstate.timer", "id": next(iter(s.persisted["timers"]))})
        out.append(s.transitions)
        out.append(m.transition(s, {"type": "NEXT"}).transitions)
        return out

    got = run(node)
    assert got == run(py)
    assert [t.kind for step in got for t in step or ()] == ["on", "after"]
    assert got[1] is not None and got[1][0].targets == ("timers.deep.hist",) and got[2] == ()


def test_a_choice_state_routes_the_same_on_both_engines(
    node_machines: dict[tuple[Path, str], XStateMachine],
) -> None:
    """A ``type: "choice"`` state: its routing is one eventless function transition (kind
    ``"choice"`` on both engines' graphs), reported with the target it resolved to."""
    node = js(node_machines, REPO / "tests" / "xstate_machines" / "choice.mjs", "choiceMachine")
    py = StatechartMachine({"id": "ch", "initial": "idle", "context": {"n": 0}, "states": {
        "idle": {"on": {"GO": {"target": "route", "context": lambda c, e: {"n": c["n"] + 1}}}},
        "route": {"type": "choice",
                  "choice": lambda c, e: {"target": "big"} if c["n"] > 1 else {"target": "small"}},
        "small": {"on": {"GO": {"target": "route", "context": lambda c, e: {"n": c["n"] + 1}}}},
        "big": {}}})
    assert node.graph.transitions == py.graph.transitions
    go = [{"type": "GO"}] * 3
    a = [s.transitions for s in node.fold(node.initial(), go)]
    assert a == [s.transitions for s in py.fold(py.initial(), go)]
    assert [(t.kind, t.targets) for t in a[0] or ()] == [("on", ("ch.route",)), ("choice", ("ch.small",))]
    assert [(t.kind, t.targets) for t in a[1] or ()] == [("on", ("ch.route",)), ("choice", ("ch.big",))]

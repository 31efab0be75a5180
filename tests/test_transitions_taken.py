"""``Snapshot.transitions``: the microsteps a step took, pointing at graph edges, on both engines.

A view lights ``graph.transitions[t.edge]`` for each taken transition ``t`` (no inference from
state changes). The Python engine records them as it steps; the Node engine reads them off
XState's own macrostep (runner.mjs, "The transitions a step takes"), with no action run.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agentscope.engines.base import TakenTransition
from agentscope.engines.statechart import Raise, StatechartMachine
from agentscope.engines.xstate import XStateMachine, load_machine
from tests.conftest import node_ready

EDGES_JS = Path(__file__).resolve().parent / "xstate_machines" / "edges.mjs"
TRIAGE_JS = Path(__file__).resolve().parent / "fixtures" / "real" / "machines" / "triage.mjs"
needs_node = pytest.mark.skipif(not node_ready(), reason="needs node and node_modules/xstate")


def machine() -> StatechartMachine:
    def pick(c: Any, e: Any) -> Any:
        return {"target": "#m.done"} if e.get("final") else None

    return StatechartMachine(
        {
            "id": "m",
            "initial": "idle",
            "context": {"n": 0},
            "states": {
                "idle": {
                    "on": {
                        "GO": [
                            {"target": "busy", "guard": lambda c, e: c["n"] > 0},
                            {"target": "check", "actions": [Raise({"type": "POKE"})]},
                        ]
                    }
                },
                "check": {"always": {"target": "busy"}},
                "busy": {"on": {"POKE": {"context": {"n": 1}}, "END": pick}},
                "done": {"type": "final"},
            },
        }
    )


def test_each_microstep_names_the_edge_that_fired() -> None:
    m = machine()
    s = m.transition(m.initial(), {"type": "GO"})
    assert s.transitions == (
        TakenTransition(0, "GO", "m.idle", ("m.check",), edge=1, guard=None, kind="on"),
        TakenTransition(1, "GO", "m.check", ("m.busy",), edge=2, guard=None, kind="always"),
        TakenTransition(2, "POKE", "m.busy", (), edge=3, guard=None, kind="on"),
    )
    edges = m.graph.transitions
    assert [(edges[t.edge].source, edges[t.edge].event) for t in s.transitions if t.edge is not None] == [
        ("m.idle", "GO"),
        ("m.check", ""),
        ("m.busy", "POKE"),
    ]


def test_a_function_transition_reports_its_resolved_target() -> None:
    m = machine()
    s = m.transition(m.transition(m.initial(), {"type": "GO"}), {"type": "END", "final": True})
    assert s.transitions == (TakenTransition(0, "END", "m.busy", ("m.done",), edge=4, guard=None, kind="on"),)
    assert m.graph.transitions[4].dynamic


def test_initial_and_unhandled_steps() -> None:
    m = machine()
    s0 = m.initial()
    assert s0.transitions == (
        TakenTransition(0, "@xstate.init", "m", ("m.idle",), edge=None, kind="initial", reenter=True),
    )
    assert m.transition(s0, {"type": "NOPE"}).transitions == ()
    assert m.restore(m.persist(s0)).transitions is None  # a restored snapshot did not step


def side_effect(context: Any, event: Any) -> None:
    raise AssertionError("an effect ran during a pure transition")


def edges_python() -> StatechartMachine:
    """The Python twin of ``tests/xstate_machines/edges.mjs``."""
    return StatechartMachine(
        {
            "id": "edges",
            "type": "parallel",
            "context": {"n": 0},
            "states": {
                "a": {
                    "initial": "idle",
                    "states": {
                        "idle": {
                            "entry": lambda c, e: None,
                            "on": {
                                "SELF": {"target": "idle", "reenter": True, "actions": [side_effect]},
                                "STAY": {"context": lambda c, e: {"n": c["n"] + 1}},
                                "GO": lambda c, e: {"target": "check", "actions": [Raise({"type": "POKE"})]},
                            },
                        },
                        "check": {
                            "always": [{"guard": lambda c, e: c["n"] > 5, "target": "idle"}, {"target": "busy"}]
                        },
                        "busy": {
                            "on": {
                                "POKE": {"context": lambda c, e: {"n": c["n"] + 10}},
                                "PING": {"target": "busy", "reenter": True},
                                "BACK": {"target": "idle"},
                            }
                        },
                    },
                },
                "b": {
                    "initial": "off",
                    "states": {"off": {"on": {"PING": {"target": "on"}}}, "on": {"on": {"PING": {"target": "off"}}}},
                },
            },
        }
    )


EDGE_EVENTS = [{"type": t} for t in ("SELF", "STAY", "PING", "GO", "PING", "NOPE", "BACK", "STAY", "SELF")]


@pytest.fixture(scope="module")
def probe(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("edges") / "probe.txt"


@pytest.fixture(scope="module")
def edges_js(probe: Path) -> Iterator[XStateMachine]:
    old = os.environ.get("AGENTSCOPE_EDGES_PROBE")
    os.environ["AGENTSCOPE_EDGES_PROBE"] = str(probe)  # the runner inherits it
    try:
        with load_machine(EDGES_JS) as m:
            yield m
    finally:
        if old is None:
            del os.environ["AGENTSCOPE_EDGES_PROBE"]
        else:
            os.environ["AGENTSCOPE_EDGES_PROBE"] = old


@needs_node
def test_node_engine_names_each_edge_that_fired(edges_js: XStateMachine) -> None:
    m = edges_js
    s0 = m.initial()
    assert s0.transitions == (
        TakenTransition(0, "@xstate.init", "edges", ("edges.a.idle", "edges.b.off"), edge=None, kind="initial",
                        reenter=True),
    )
    self_loop, stay, ping, go = m.fold(s0, EDGE_EVENTS[:4])
    e = m.graph.transitions
    # a re-entering self-transition and a targetless one: the value does not change, the edge fires
    assert self_loop.value == stay.value == s0.value
    assert self_loop.transitions == (TakenTransition(0, "SELF", "edges.a.idle", ("edges.a.idle",), edge=0,
                                                     reenter=True),)
    assert stay.transitions == (TakenTransition(0, "STAY", "edges.a.idle", (), edge=1),)
    # the same event taken in one region only (a.idle has no PING), then the raised-event chain
    assert ping.transitions == (TakenTransition(0, "PING", "edges.b.off", ("edges.b.on",), edge=8),)
    assert go.transitions == (
        TakenTransition(0, "GO", "edges.a.idle", ("edges.a.check",), edge=2),
        TakenTransition(1, "GO", "edges.a.check", ("edges.a.busy",), edge=4, kind="always"),
        TakenTransition(2, "POKE", "edges.a.busy", (), edge=5),
    )
    assert e[3].event == "" and e[3].guard == "(inline)" and e[4].event == ""
    (both,) = m.fold(go, [{"type": "PING"}])
    assert both.transitions == (  # one event, two regions, one microstep
        TakenTransition(0, "PING", "edges.a.busy", ("edges.a.busy",), edge=6, reenter=True),
        TakenTransition(0, "PING", "edges.b.on", ("edges.b.off",), edge=9),
    )
    assert m.fold(both, [{"type": "NOPE"}])[0].transitions == ()


@needs_node
def test_both_engines_take_the_same_transitions_and_run_no_effect(edges_js: XStateMachine, probe: Path) -> None:
    py = edges_python()
    unnamed = [dataclasses.replace(t, actions=()) for t in py.graph.transitions]  # JS names it sideEffect
    assert [dataclasses.replace(t, actions=()) for t in edges_js.graph.transitions] == unnamed
    a = [edges_js.initial()]
    a += edges_js.fold(a[0], EDGE_EVENTS)
    b = [py.initial()]
    b += py.fold(b[0], EDGE_EVENTS)
    assert [s.persisted for s in a] == [s.persisted for s in b]
    assert [s.transitions for s in a] == [s.transitions for s in b]
    assert [s.microstep_values for s in a] == [s.microstep_values for s in b]
    go = a[4]  # GO: to check, eventless to busy, the raised POKE (busy again)
    assert go.microstep_values == ({"a": "check", "b": "on"}, {"a": "busy", "b": "on"}, {"a": "busy", "b": "on"})
    assert all(s.transitions for s in a if s is not a[6])  # only NOPE took nothing
    assert not probe.exists()  # the enqueued effects (entry, SELF's actions, GO's) never ran


@needs_node
def test_node_engine_reports_nothing_when_not_asked(edges_js: XStateMachine) -> None:
    edges_js.report_transitions = False
    try:
        s = edges_js.initial()
        assert s.transitions is None
        assert edges_js.fold(s, EDGE_EVENTS[:2])[1].transitions is None
    finally:
        edges_js.report_transitions = True


@needs_node
@pytest.mark.parametrize("engine", ["node", "python"])
def test_the_chart_lights_exactly_the_edges_the_engine_took(engine: str) -> None:
    """On the triage log: the kb retry self-loop (entry 3) and the eventless chain after the kb
    answer (entry 4: onDone of the kb, onDone of the parallel state, ``always`` to escalating),
    each edge by its index, for both engines (no inference from the state change)."""
    import re

    import agentscope as asc
    from agentscope.examples import example_path
    from agentscope.examples.python_machines import triage_machine
    from agentscope.render.chart import ObservedEdge, frame_svg, layout
    from agentscope.widgets._source import iter_frames, step_info

    log = asc.read_log(example_path("g_triage.sqlite"), thread="main")
    m = load_machine(TRIAGE_JS) if engine == "node" else triage_machine()
    try:
        frames = list(iter_frames(asc.Timeline(m, log)))
        g = m.graph
    finally:
        m.close()
    infos = [step_info(g, frames[k - 1] if k else None, f) for k, f in enumerate(frames)]
    lay = layout(g, observed_edges=[mv for i in infos for mv in i.moves])

    def lit(k: int) -> set[str]:
        svg = frame_svg(lay, infos[k].active, taken_edge=infos[k].moves)
        return set(re.findall(r'<g id="([^"]+)" class="[^"]*as-taken', svg))

    def drawn(*edges: int) -> set[str]:
        return {eid for i in edges for eid in lay.edge_elements(i)}

    retry = next(i for i, t in enumerate(g.transitions) if t.kind == "invoke.onError" and t.reenter)
    assert [t.edge for t in frames[3].transitions or ()] == [retry]
    assert [[t.kind for t in step] for step in frames[4].microsteps] == [["invoke.onDone"], ["onDone"], ["always"]]
    w = {"classification": "complete", "knowledge": "complete"}
    assert frames[4].microstep_values == ({"working": {"analyzing": w}}, {"working": "routing"},
                                          {"working": "escalating"})
    assert [len(step) for step in frames[0].microsteps] == [1]  # the initial entry
    assert frames[3].value == frames[2].value  # re-entered: the value alone cannot tell
    assert lit(3) == drawn(retry)
    chain = [t.edge for t in frames[4].transitions or () if t.edge is not None]
    assert [g.transitions[i].kind for i in chain] == ["invoke.onDone", "onDone", "always"]
    # the two static edges by index; the kb's onDone is a function transition (drawn "→ ?"):
    # its resolved move (searching → complete) is lit as the observed edge drawn for it
    resolved = lay.edge_elements(ObservedEdge(g.transitions[chain[0]].source, frames[4].transitions[0].targets[0],
                                              g.transitions[chain[0]].event))
    assert len(resolved) == 1 and resolved[0] not in drawn(chain[0])
    assert lit(4) == drawn(chain[1], chain[2]) | set(resolved)


@needs_node
def test_a_frozen_machine_reports_no_transitions_and_still_folds() -> None:
    """The one case the Node engine cannot report: hooks cannot go on a frozen machine. Its
    steps fold as before with ``transitions`` None (views then infer the move)."""
    with load_machine(Path(__file__).resolve().parent / "xstate_machines" / "frozen.mjs") as m:
        s = m.initial()
        (after,) = m.fold(s, [{"type": "GO"}])
        assert s.transitions is None and after.transitions is None
        assert after.value == "a" and after.state_hash == s.state_hash  # GO, then always back
        assert "frozen" in m._runner.stderr_text()


@pytest.mark.parametrize("engine", ["node", "python"])
def test_the_player_data_carries_each_microstep_with_its_own_lit_edges(engine: str) -> None:
    """Frame field ``ms`` of the static player (docs/pipeline.md's recipe for a panel): for a step
    of several microsteps, per microstep the event it processed, its own lit edge ids and the
    configuration active after it; absent for a step of one microstep."""
    if engine == "node" and not node_ready():
        pytest.skip("needs node and node_modules/xstate")
    import agentscope as asc
    from agentscope.examples import example_path
    from agentscope.examples.python_machines import triage_machine
    from agentscope.render import state_element_id
    from agentscope.render.player import pane_data
    from agentscope.render.source import iter_frames

    log = asc.read_log(example_path("g_triage.sqlite"), thread="main")
    m = load_machine(TRIAGE_JS) if engine == "node" else triage_machine()
    try:
        pane, lay = pane_data(iter_frames(asc.Timeline(m, log)), m.graph, name="main")
    finally:
        m.close()
    assert lay is not None
    rows = pane["frames"]
    assert "ms" not in rows[3] and "ms" not in rows[2]  # the kb retry: one microstep
    ms = rows[4]["ms"]
    assert [sub[0] for sub in ms] == ["xstate.done.actor", "xstate.done.state", "xstate.done.state"]
    assert [len(sub[1]) for sub in ms] == [1, 1, 1] and set(rows[4]["tk"]) == {e for sub in ms for e in sub[1]}
    w = "supportTriage.working"
    routing = pane["configs"][ms[1][2]]  # active after the parallel state's done: routing
    assert state_element_id(f"{w}.routing") in routing and state_element_id(f"{w}.analyzing") not in routing
    assert pane["configs"][ms[2][2]] == pane["configs"][rows[4]["a"]]  # the last is the step's own


def test_frame_data_lists_the_microsteps_of_a_step_that_took_several() -> None:
    """``frame_fields``' ``mi`` (the microsteps panel of render/frame.js): the triage kb answer
    (entry 4) is three microsteps, the last the eventless ``always`` to escalating; a step of one
    microstep (entry 3, the kb retry) has no ``mi``."""
    import agentscope as asc
    from agentscope.examples import example_path
    from agentscope.examples.python_machines import triage_machine
    from agentscope.render.player import frame_fields

    tl = asc.Timeline(triage_machine(), asc.read_log(example_path("g_triage.sqlite"), thread="main"))
    assert "mi" not in frame_fields(tl[3])
    mi = frame_fields(tl[4])["mi"]
    assert [m[0] for m in mi] == ["xstate.done.actor", "xstate.done.state", "xstate.done.state"]
    assert mi[-1][1] == [["always", "working.routing", ["working.escalating"], "(inline)"]]

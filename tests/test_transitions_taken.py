"""``Snapshot.transitions``: the microsteps a Python-engine step took, pointing at graph edges.

A view lights ``graph.transitions[t.edge]`` for each taken transition ``t`` (no inference from
state changes). The Node engine reports ``None`` (XState's pure API does not expose them).
"""

from __future__ import annotations

from typing import Any

from agentscope.engines.base import TakenTransition
from agentscope.engines.statechart import Raise, StatechartMachine


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

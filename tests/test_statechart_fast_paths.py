"""The Python engine's shortcuts give exactly what its general path gives.

``agentscope.engines._statechart_algo.FAST_PATHS`` switches them off: the cached selection walk
of a configuration (parallel regions included), the cached exit and entry sets (keyed by the
history value too), the targetless microstep, the event no active state takes, the quick
macrostep of an external event (a context-only function result applied in the selection loop,
effect-free targeted steps, the eventless loop skipped when nothing can follow), and the persisted
snapshot built from the previous one member by member. Every case below runs twice, on a
fresh machine each time, and every step must agree: the persisted snapshot as JSON text (key order
included), its state hash, the transitions taken and the actions. Generated machines (the
differential suite's vocabulary: parallel regions, finals, choices, history, wildcards, guards,
eventless transitions, timers, invokes, raised events) exercise both sides of every guard.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentscope.engines import _statechart_algo
from agentscope.engines.base import Machine
from agentscope.examples import example_path
from agentscope.examples.python_machines import counter_machine, ticket_v1, triage_machine
from agentscope.hashing import state_hash
from agentscope.log.entry import event_of
from agentscope.log.readers import read_log
from agentscope.pipeline.fold import seed_snapshot
from tests.differential.strategies import cases
from tests.differential.vocab import python_machine


def _trace(machine: Machine, init: Any, events: list[dict[str, Any]]) -> list[Any]:
    out: list[Any] = []
    try:
        s = init(machine)
        out.append((json.dumps(s.persisted), state_hash(s.persisted), s.transitions, s.actions))
        sessions: dict[str, str] = {}
        for ev in events:
            s = machine.fold(s, [ev], sessions=sessions)[0]
            out.append((json.dumps(s.persisted), state_hash(s.persisted), s.transitions, s.actions))
    except Exception as exc:  # both modes must fail alike, at the same step
        out.append(f"{type(exc).__name__}: {exc}")
    return out


def _both(monkeypatch: pytest.MonkeyPatch, make: Any, init: Any, events: list[dict[str, Any]]) -> list[Any]:
    fast = _trace(make(), init, events)
    with monkeypatch.context() as mp:
        mp.setattr(_statechart_algo, "FAST_PATHS", False)
        general = _trace(make(), init, events)
    assert fast == general
    return fast


# extra event types around the guards: reserved prefixes, types nothing takes, wildcard matches
_ODD_TYPES = st.sampled_from(["Z", "A.b", "xstate.other", "@xstate.other", "@agent.usage", "R", "A"])


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=cases(), odd=st.lists(st.tuples(st.integers(0, 12), _ODD_TYPES), max_size=4))
def test_generated_machines_agree_with_the_general_path(case: dict[str, Any], odd: list[tuple[int, str]]) -> None:
    events = list(case["events"])
    for at, t in odd:
        events.insert(min(at, len(events)), {"type": t})
    with pytest.MonkeyPatch.context() as mp:
        _both(mp, lambda: python_machine(case["desc"]), lambda m: m.initial(), events)


def test_the_counter_log_agrees_and_takes_the_shortcuts(monkeypatch: pytest.MonkeyPatch) -> None:
    kinds = ["INC", "DEC", "TOGGLE", "INC", "@agent.usage", "FINISH", "TOGGLE", "RESET", "DEC"]
    events = [{"type": kinds[i % len(kinds)], **({"by": i % 7} if i % 4 == 0 else {})} for i in range(60)]
    steps = _both(monkeypatch, counter_machine, lambda m: m.initial({"start": 1}), events)
    assert len(steps) == len(events) + 1
    m = counter_machine()
    s = m.initial({"start": 1})
    usage = m.transition(s, {"type": "@agent.usage", "tokens": 3})
    assert usage.persisted is s.persisted and usage.transitions == ()  # nothing takes it
    inc = m.transition(s, {"type": "INC"})
    assert list(inc.persisted) == list(s.persisted)  # the reused form keeps XState's key order
    assert inc.persisted["context"]["count"] == 2 and inc.persisted["value"] == s.persisted["value"]


def test_the_triage_log_agrees(monkeypatch: pytest.MonkeyPatch) -> None:
    """Parallel regions, a shallow history state (no cached exit/entry sets), eventless
    transitions and invoked actors, over the real log (sessions rebound as the fold does)."""
    log = read_log(example_path("g_triage.sqlite"), thread="main")
    events = [dict(event_of(e)) for e in log.entries[1:]]
    steps = _both(monkeypatch, triage_machine, lambda m: seed_snapshot(m, log.entries[0]), events)
    recorded = [e["verification"]["stateHash"] for e in log.entries]
    assert [h for _, h, _, _ in steps] == recorded


def test_ticket_events_nothing_takes(monkeypatch: pytest.MonkeyPatch) -> None:
    events = [{"type": t} for t in ["COMMENT", "NOPE", "START", "NOPE", "COMMENT", "RESOLVE", "COMMENT", "START"]]
    _both(monkeypatch, ticket_v1, lambda m: m.initial({"title": "t"}), events)


def test_a_restored_object_value_takes_the_general_selection(monkeypatch: pytest.MonkeyPatch) -> None:
    """A state restored from a persisted object value carries that value: selection walks it
    (``transition_node``) instead of the cached chain, with the same result."""
    config = {
        "id": "m", "initial": "a",
        "states": {
            "a": {"initial": "x", "states": {"x": {"on": {"GO": "y"}}, "y": {"on": {"GO": "x", "*": "x"}}},
                  "on": {"UP": "#m.b"}},
            "b": {"on": {"UP": "a", "a.*": "a.y"}},
        },
    }
    from agentscope.engines.statechart import StatechartMachine

    events = [{"type": t} for t in ["GO", "GO", "Q", "UP", "a.q", "UP", "GO", "Z"]]

    def restored(m: Machine) -> Any:
        return m.restore(dict(m.persist(m.initial()), value={"a": "y"}))

    _both(monkeypatch, lambda: StatechartMachine(config), restored, events)


def test_quick_steps_agree_with_the_general_path(monkeypatch: pytest.MonkeyPatch) -> None:
    """The quick macrostep's branches, each met: a function transition returning only a context
    patch (a dict, ``None``, ``UNDEFINED``, a patch holding ``UNDEFINED``), one returning nothing,
    one raising an event or starting a timer (the loop runs after it), effect-free targeted steps
    (a plain move, a re-entry of the same node), targets with entry/exit effects, a configuration
    with an eventless transition, parallel regions (several transitions selected at once), a
    history state, and a ``done`` state still taking events."""
    from agentscope.engines.statechart import UNDEFINED, Raise, StatechartMachine

    config: dict[str, Any] = {
        "id": "q",
        "initial": "a",
        "context": {"n": 0},
        "on": {
            "N": lambda c, e: {"context": {"n": c["n"] + e.get("by", 1)}},
            "BIG": lambda c, e: {"context": {"n": c["n"] + 2000}},
            "NONE": lambda c, e: {"context": None},
            "UNDEF": lambda c, e: {"context": UNDEFINED},
            "HOLE": lambda c, e: {"context": {"u": UNDEFINED, "n": c["n"] + 1}},
            "EMPTY": lambda c, e: {},
            "DECLINE": lambda c, e: None,
            "RAISE": lambda c, e: {"context": {"n": c["n"] + 1}, "actions": [Raise({"type": "N", "by": 10})]},
            "LATER": lambda c, e: {"actions": [Raise({"type": "N"}, delay=100, id="t1")]},
        },
        "states": {
            "a": {"on": {"GO": "b", "SELF": {"target": "a", "reenter": True}, "FN": lambda c, e: {"target": "b"}}},
            "b": {
                "on": {
                    "GO": {"target": "c", "context": lambda c, e: {"n": c["n"] * 2}},
                    "BACK": "a",
                    "N": {"guard": lambda c, e: c["n"] > 100, "target": "a"},
                },
            },
            "c": {
                "entry": lambda c, e: {"context": {"n": c["n"] + 100}},
                "exit": lambda c, e: {"context": {"n": c["n"] - 1}},
                "on": {"GO": "d", "BACK": "b"},
            },
            "d": {
                "always": {"guard": lambda c, e: c["n"] > 1000, "target": "p"},
                "on": {"GO": "p", "BACK": "c"},
            },
            "p": {
                "type": "parallel",
                "states": {
                    "r1": {
                        "initial": "x",
                        "states": {"x": {"on": {"T": "y", "N": lambda c, e: {"context": {"n": 0}}}}, "y": {}},
                    },
                    "r2": {
                        "initial": "u",
                        "states": {
                            "u": {"on": {"T": "v"}},
                            "v": {"on": {"T": "w"}},
                            "w": {"type": "final"},
                            "h": {"type": "history", "target": "u"},
                        },
                    },
                },
                "on": {"GO": "f", "BACK": "#q.p.r2.h"},
            },
            "f": {"type": "final"},
        },
    }
    kinds = ["N", "NONE", "UNDEF", "HOLE", "EMPTY", "DECLINE", "RAISE", "LATER", "Z", "SELF", "FN", "BACK",
             "GO", "N", "GO", "N", "GO", "N", "RAISE", "BACK", "GO", "BIG", "N", "T", "N", "HOLE", "T", "BACK", "T",
             "RAISE", "N", "GO", "N", "HOLE", "Z", "GO"]
    events = [{"type": k, **({"by": i} if k == "N" and i % 3 == 0 else {})} for i, k in enumerate(kinds)]
    steps = _both(monkeypatch, lambda: StatechartMachine(config), lambda m: m.initial(), events)
    assert len(steps) == len(events) + 1 and all(isinstance(s, tuple) for s in steps)
    values = [json.loads(p)["value"] for p, _, _, _ in steps]
    assert values[kinds.index("BIG") + 1] == {"p": {"r1": "x", "r2": "u"}}  # the eventless move ran
    assert values[-1] == "f" and json.loads(steps[-1][0])["status"] == "done"
    # the context-only step shares every other member of the previous persisted snapshot
    m = StatechartMachine(config)
    s = m.initial()
    n = m.transition(s, {"type": "N"})
    assert n.persisted["context"] == {"n": 1} and list(n.persisted) == list(s.persisted)
    assert n.persisted["children"] is s.persisted["children"] and n.transitions and n.transitions[0].event == "N"
    assert m.transition(n, {"type": "HOLE"}).persisted["context"] == {"n": 2}  # UNDEFINED dropped


def test_patches_with_big_integers_and_holes_merge_alike(monkeypatch: pytest.MonkeyPatch) -> None:
    """A context patch walked once for JS ``undefined`` and for integers beyond 2**53 (nested in
    lists, tuples and dicts) merges as the general path's two walks do: the integer becomes the
    double JS holds, an ``undefined`` object member vanishes and an array one is ``null``."""
    from agentscope.engines.statechart import UNDEFINED, StatechartMachine

    big = 2**53 + 1
    config: dict[str, Any] = {
        "id": "b",
        "initial": "a",
        "context": {"n": 0},
        "states": {
            "a": {
                "on": {
                    "DEEP": {"context": lambda c, e: {"x": {"list": [1, (2, [big])], "ok": "s"}}},
                    "TOP": {"context": lambda c, e: {"y": [big, -big, 3.5]}},
                    "HOLE": {"context": lambda c, e: {"z": [UNDEFINED, {"k": UNDEFINED, "j": big}]}},
                    "SAFE": {"context": lambda c, e: {"w": [2**53, {"v": [True, None, "t"]}]}},
                    "GO": lambda c, e: {"target": "b", "context": {"q": {"r": [big]}}},
                }
            },
            "b": {"on": {"GO": {"target": "a", "context": lambda c, e: {"u": UNDEFINED}}}},
        },
    }
    events = [{"type": t} for t in ["DEEP", "TOP", "SAFE", "HOLE", "DEEP", "GO", "GO", "TOP"]]
    steps = _both(monkeypatch, lambda: StatechartMachine(config), lambda m: m.initial(), events)
    ctx = json.loads(steps[-1][0])["context"]
    assert ctx["x"] == {"list": [1, [2, [9007199254740992.0]]], "ok": "s"}
    assert ctx["y"] == [9007199254740992.0, -9007199254740992.0, 3.5] and ctx["w"] == [2**53, {"v": [True, None, "t"]}]
    assert ctx["z"] == [None, {"j": 9007199254740992.0}] and ctx["q"] == {"r": [9007199254740992.0]}
    assert "u" not in ctx


def test_snapshots_built_without_init_equal_the_dataclass_built_ones() -> None:
    """The engine builds its snapshots field by field (every field of ``Snapshot``), and they are
    what the dataclass's own constructor gives."""
    import dataclasses

    from agentscope.engines import statechart
    from agentscope.engines.base import Snapshot

    assert [f.name for f in dataclasses.fields(Snapshot)] == [
        "persisted", "handle", "transitions", "actions", "state_hash", "unchanged", "microstep_values",
    ]  # the fields statechart._snapshot sets
    m = counter_machine()
    s = m.initial({"start": 1})
    inc = m.transition(s, {"type": "INC"})
    assert type(inc) is Snapshot and inc.state_hash is None and inc.handle is not None
    twin = Snapshot(inc.persisted, inc.handle, inc.transitions, inc.actions,
                    microstep_values=inc.microstep_values)
    fields = [f.name for f in dataclasses.fields(Snapshot)]
    assert [getattr(twin, f) for f in fields] == [getattr(inc, f) for f in fields] and twin == inc
    built = statechart._snapshot(inc.persisted, inc.handle, (), ())
    assert (built.persisted, built.handle, built.transitions, built.actions, built.state_hash,
            built.unchanged, built.microstep_values) == (inc.persisted, inc.handle, (), (), None, None, ())

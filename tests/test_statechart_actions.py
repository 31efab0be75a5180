"""Actions as data in the Python engine: Raise, delayed Raise, Cancel, Emit (XState 6 ``enq``).

Orders and timer shapes are XState's (see ``tests/test_statechart_ported.py`` for values recorded
from real XState and ``tests/differential/`` for the generated comparison); here: the API, what
``Snapshot.actions`` reports, the errors, and the same machines through Recorder and verify.
"""

from __future__ import annotations

import json
import subprocess
from typing import Any

import pytest

from agentscope.engines.statechart import UNDEFINED, Cancel, Emit, Raise, StatechartMachine
from agentscope.errors import EngineError, MachineExecutionError, StatechartConfigError
from agentscope.hashing import state_hash
from agentscope.pipeline import verify
from agentscope.recorder import ManualClock, Recorder
from tests.conftest import REPO, node_ready


def ping_pong() -> StatechartMachine:
    return StatechartMachine(
        {
            "id": "pp",
            "initial": "idle",
            "context": {"log": []},
            "states": {
                "idle": {
                    "on": {
                        # a dict transition may list action data next to its patch...
                        "START": {
                            "target": "waiting",
                            "actions": [
                                Raise({"type": "PING"}),
                                Raise({"type": "TIMEOUT"}, delay="PT1S", id="t"),
                            ],
                        }
                    }
                },
                "waiting": {
                    "on": {
                        "PING": {"context": lambda c, e: {"log": [*c["log"], "ping"]}},
                        # ... and a function transition returns it
                        "PONG": lambda c, e: {
                            "target": "idle",
                            "actions": [Cancel("t"), Emit({"type": "GOT"})],
                        },
                        "TIMEOUT": {
                            "target": "idle",
                            "context": lambda c, e: {"log": [*c["log"], "timeout"]},
                        },
                    }
                },
            },
        }
    )


def test_raised_event_is_processed_in_the_same_step_and_delayed_one_is_a_timer() -> None:
    m = ping_pong()
    s = m.transition(m.initial(), {"type": "START"})
    p = m.persist(s)
    assert p["value"] == "waiting" and p["context"] == {"log": ["ping"]}
    assert p["timers"] == {
        "t": {
            "id": "t",
            "delay": "PT1S",
            "type": "@xstate.raise",
            "event": {"type": "TIMEOUT"},
            "target": "self",
        }
    }
    assert s.actions == (Raise({"type": "PING"}), Raise({"type": "TIMEOUT"}, "PT1S", "t"))
    fired = m.transition(s, {"type": "xstate.timer", "id": "t"})
    assert m.persist(fired)["value"] == "idle" and m.persist(fired)["timers"] == {}
    assert m.persist(fired)["context"] == {"log": ["ping", "timeout"]}


def test_cancel_removes_the_timer_and_emit_changes_nothing() -> None:
    m = ping_pong()
    s = m.transition(m.transition(m.initial(), {"type": "START"}), {"type": "PONG"})
    assert m.persist(s)["timers"] == {} and m.persist(s)["value"] == "idle"
    assert s.actions == (Cancel("t"), Emit({"type": "GOT"}))


def test_auto_timer_ids_count_with_next_timer_id_across_restore() -> None:
    m = StatechartMachine(
        {
            "id": "a",
            "initial": "x",
            "states": {"x": {"on": {"T": lambda c, e: {"actions": [Raise({"type": "Z"}, delay=5)]}}}},
        }
    )
    s = m.transition(m.initial(), {"type": "T"})
    s = m.restore(m.persist(s))
    s = m.transition(s, {"type": "T"})
    p = m.persist(s)
    assert list(p["timers"]) == ["xstate.timer.auto.0", "xstate.timer.auto.1"] and p["_nextTimerId"] == 2


@pytest.mark.parametrize(
    ("action", "match"),
    [
        (Raise("PING"), "needs an event dict"),  # type: ignore[arg-type]
        (Raise({"type": "X"}, delay=True), "'delay' must be"),
        (Cancel(3), "Cancel needs a timer id"),  # type: ignore[arg-type]
        ("raise", "unknown action 'raise'"),
    ],
)
def test_bad_action_data_is_rejected_at_construction(action: Any, match: str) -> None:
    with pytest.raises(StatechartConfigError, match=match):
        StatechartMachine({"id": "b", "initial": "x", "states": {"x": {"on": {"GO": {"actions": [action]}}}}})


def test_bad_action_data_returned_at_run_time_is_an_engine_error() -> None:
    m = StatechartMachine(
        {"id": "b", "initial": "x", "states": {"x": {"on": {"GO": lambda c, e: {"actions": ["no"]}}}}}
    )
    with pytest.raises(EngineError, match="an action must be Raise, Cancel or Emit"):
        m.transition(m.initial(), {"type": "GO"})


def test_undefined_vanishes_from_persisted_json_and_hashes() -> None:
    m = StatechartMachine(
        {
            "id": "u",
            "initial": "a",
            "context": {"keep": 1},
            "states": {
                "a": {
                    "on": {
                        "GO": {
                            "target": "z",
                            "context": lambda c, e: {"gone": UNDEFINED, "arr": [UNDEFINED, 2]},
                        }
                    }
                },
                "z": {
                    "type": "final",
                    "output": lambda c, e: {"v": c.get("missing", UNDEFINED), "k": c["keep"]},
                },
            },
        }
    )
    s = m.transition(m.initial(), {"type": "GO"})
    p = m.persist(s)
    assert p["context"] == {"keep": 1, "arr": [None, 2]} and p["output"] == {"k": 1}
    assert isinstance(state_hash(p), str)  # the Recorder hashes persist() directly


def test_choice_with_no_passing_candidate_raises_xstates_error() -> None:
    m = StatechartMachine(
        {
            "id": "c",
            "initial": "idle",
            "context": {"n": 0},
            "states": {
                "idle": {"on": {"GO": "routing"}},
                "routing": {
                    "type": "choice",
                    "choice": [{"target": "big", "guard": lambda c, e: c["n"] > 5}],
                },
                "big": {},
            },
        }
    )
    with pytest.raises(MachineExecutionError, match=r"Choice \"c\.routing\" has no target"):
        m.transition(m.initial(), {"type": "GO"})


def test_callables_taking_a_third_argument_get_the_state_value() -> None:
    seen: list[Any] = []

    def guard(c: Any, e: Any, value: Any) -> bool:
        seen.append(value)
        return True

    m = StatechartMachine(
        {
            "id": "v",
            "type": "parallel",
            "states": {
                "p": {
                    "on": {"GO": {"guard": guard, "target": ".q"}},
                    "initial": "x",
                    "states": {"x": {}, "q": {}},
                },
                "r": {},
            },
        }
    )
    m.transition(m.initial(), {"type": "GO"})
    assert seen == [{"p": "x", "r": {}}]


def test_recorded_log_with_raises_and_iso_timers_verifies() -> None:
    m = ping_pong()
    rec = Recorder(m, clock=ManualClock(), execution_id="00000000-0000-4000-8000-000000000000")
    rec.send({"type": "START"})
    appended = rec.advance(1000)  # the "PT1S" delayed raise is due after 1000 ms
    assert [e["event"] for e in appended] == [{"type": "xstate.timer", "id": "t"}]
    rec.send({"type": "START"})
    rec.send({"type": "PONG"})
    report = verify(m, rec.entries)
    assert report.ok and report.counts()["verified"] == len(rec.entries)


def test_a_choice_state_draws() -> None:
    from agentscope.render import text_tree, to_dot

    m = StatechartMachine(
        {
            "id": "c",
            "initial": "idle",
            "states": {
                "idle": {"on": {"GO": "routing"}},
                "routing": {"type": "choice", "choice": [{"target": "idle"}]},
            },
        }
    )
    assert "◇ routing  — always → idle" in text_tree(m.graph)
    assert "as-choice" in to_dot(m.graph)


# what XState 6.0.0-alpha.48's parseDurationToMilliseconds gives (None: not a duration, XState
# keeps the string): JS `\d` and `/i` are ASCII-only, and `trim()` is ECMAScript white space
_DELAYS = {
    "PT1S": 1000, " PT1S\n": 1000, "\xa0PT1S": 1000, "\ufeffPT1S": 1000, "\u2028PT1S": 1000,
    "pt1.5s": 1500, "200MS": 200, "\x1cPT1S": None, "\x85PT1S": None, "PT\u0663S": None,
    "\u0661\u0660\u0660ms": None, "PT1\u017f": None, "P": None, "PT": None,
}


def test_delay_strings_are_read_as_xstate_reads_them() -> None:
    from agentscope.engines._statechart_nodes import parse_duration

    assert {k: parse_duration(k) for k in _DELAYS} == _DELAYS


@pytest.mark.skipif(not node_ready(), reason="needs node and `npm ci` (xstate)")
def test_delay_strings_table_is_what_xstate_says() -> None:
    script = """
import { createMachine, initialTransition } from 'xstate';
const out = {};
for (const key of JSON.parse(process.argv[1])) {
  const m = createMachine({ id: 'm', initial: 'a', states: { a: { after: { [key]: 'b' } }, b: {} } });
  const [s] = initialTransition(m);
  const delay = s.machine.getPersistedSnapshot(s).timers[`xstate.after.${key}.m.a`].delay;
  out[key] = typeof delay === 'number' ? delay : null;
}
console.log(JSON.stringify(out));
"""
    out = subprocess.run(
        ["node", "--input-type=module", "-e", script, json.dumps(list(_DELAYS))],
        cwd=REPO, capture_output=True, text=True, check=True, timeout=60,
    )
    assert json.loads(out.stdout) == _DELAYS

"""replay / verify / Timeline are engine-agnostic: the same real fixture logs with the pure-Python
statechart engine's ports of the fixture machines (``agentscope.examples.python_machines``)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from agentscope.errors import ReplayDivergenceError
from agentscope.hashing import state_hash
from agentscope.pipeline import Timeline, replay, verify
from tests.conftest import load_json

pm = pytest.importorskip("agentscope.examples.python_machines")

LOGS = {
    "a_counter.log.json": "counter_machine",
    "c_fork_memory.parent.log.json": "counter_machine",
    "c_fork_memory.fork.log.json": "counter_machine",
    "e_bridge.v1.log.json": "ticket_v1",
    "e_bridge.v2.log.json": "ticket_v2",
    "g_triage.main.log.json": "triage_machine",
    "g_triage.fork.log.json": "triage_machine",
    "g_triage.second.log.json": "triage_machine",
}


def _machine(factory: str) -> Any:
    return getattr(pm, factory)()


@pytest.mark.parametrize("name", sorted(LOGS))
def test_fixture_log_verifies(name: str) -> None:
    m = _machine(LOGS[name])
    log = load_json(name)
    rep = verify(m, log, strict=True)
    assert rep.ok, rep.summary()
    assert (rep.df["verdict"] == "verified").all()


def test_timeline_seeks_on_triage_equal_the_recorded_hashes() -> None:
    m = _machine("triage_machine")
    log = load_json("g_triage.main.log.json")
    tl = Timeline(m, log, checkpoint_every=6, cache_size=0)
    for n in reversed(range(len(log))):
        tl.clear_cache()
        assert state_hash(tl[n].persisted) == log[n]["verification"]["stateHash"]
    assert tl.seek_fallbacks == 0
    queue = tl.changes("/context/queue")
    assert len(queue) > 1 and queue.iloc[0]["op"] == "add"


def test_tampered_triage_and_bridge() -> None:
    m = _machine("triage_machine")
    log = copy.deepcopy(load_json("g_triage.main.log.json"))
    log[27]["event"]["output"]["confidence"] = 0.55
    with pytest.raises(ReplayDivergenceError) as ei:
        replay(m, log)
    assert ei.value.index == 27
    v1, v2 = load_json("e_bridge.v1.log.json"), load_json("e_bridge.v2.log.json")
    rep = verify(None, v1 + v2, machines={"1": _machine("ticket_v1"), "2": _machine("ticket_v2")},
                 strict=True)
    assert rep.ok, rep.summary()  # the bridge init (migratedFrom) restarts its own numbering (§1.5)
    assert list(rep.df["computed_hash"]) == list(rep.df["recorded_hash"])

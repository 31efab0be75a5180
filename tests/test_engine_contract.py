"""Both engines and a test double pass the one engine contract (``tests/engine_contract.py``)."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import Any

import pytest

from agentscope.engines.base import NO_INPUT, Machine, Snapshot
from agentscope.engines.statechart import StatechartMachine
from agentscope.errors import MachineExecutionError
from tests.conftest import MACHINES, load_json, requires_node
from tests.engine_contract import EngineContract
from tests.test_replay_support import Jobber, write_log


def _triage_log() -> list[dict[str, Any]]:
    return json.loads(json.dumps(load_json("g_triage.main.log.json")))


class TestPythonStatechart(EngineContract):
    def machine(self) -> Machine:
        from agentscope.examples import python_machines as pm

        return pm.triage_machine()

    def log(self) -> list[dict[str, Any]]:
        return _triage_log()

    def failing(self) -> tuple[Machine, Any, list[Mapping[str, Any]], int]:
        def boom(context: Any, event: Any) -> bool:
            raise ZeroDivisionError("guard failed")

        m = StatechartMachine(
            {"id": "m", "initial": "a", "states": {"a": {"on": {"X": {"target": "a", "guard": boom}}}}}
        )
        return m, NO_INPUT, [{"type": "Y"}, {"type": "Y"}, {"type": "X"}, {"type": "Y"}], 2


@requires_node
class TestNodeXState(EngineContract):
    @pytest.fixture(autouse=True)
    def _machines(self) -> Iterator[None]:
        from agentscope.engines.xstate import load_machine

        self._triage = load_machine(MACHINES / "triage.mjs", "triageMachine")
        self._faulty = load_machine(MACHINES.parent.parent.parent / "xstate_machines" / "faulty.mjs",
                                    "faultyMachine")
        yield
        self._triage.close()
        self._faulty.close()

    def machine(self) -> Machine:
        return self._triage

    def log(self) -> list[dict[str, Any]]:
        return _triage_log()

    def failing(self) -> tuple[Machine, Any, list[Mapping[str, Any]], int]:
        events = [{"type": "STORE", "payload": "a"}, {"type": "STORE", "payload": "b"}, {"type": "BOOM"}]
        return self._faulty, NO_INPUT, events, 2


class _Boomer(Jobber):
    def transition(self, snapshot: Snapshot, event: Mapping[str, Any]) -> Snapshot:
        if event.get("type") == "BOOM":
            raise MachineExecutionError("boom from the double")
        return super().transition(snapshot, event)


class TestDouble(EngineContract):
    """A pure-Python test double (``Jobber``, spec §7.3) minting its own session ids."""

    def machine(self) -> Machine:
        return Jobber(prefix="fold", loop=True)

    def log(self) -> list[dict[str, Any]]:
        live = Jobber(prefix="live", loop=True)
        events = [{"type": "GO"}, {"type": "xstate.done.actor", "actorId": "job", "output": 1},
                  {"type": "NOOP"}] * 4
        return write_log(live, events, input={"attempt": 1})

    def failing(self) -> tuple[Machine, Any, list[Mapping[str, Any]], int]:
        return _Boomer(loop=True), {"attempt": 1}, [{"type": "GO"}, {"type": "NOOP"}, {"type": "BOOM"}], 2

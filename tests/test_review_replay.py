"""Review findings on replay/Timeline. Each test failed before its fix."""

from __future__ import annotations

import pytest

from agentscope.engines.xstate import load_machine
from agentscope.pipeline import Timeline
from tests.conftest import MACHINES, load_json, requires_node


@requires_node
def test_timeline_index_error_names_the_index_asked_for() -> None:
    log = load_json("a_counter.log.json")
    with load_machine(MACHINES / "counter.mjs") as m:
        t = Timeline(m, log)
        with pytest.raises(IndexError, match=rf"index -{len(log) + 1} out of range for {len(log)} entries"):
            t[-(len(log) + 1)]

"""Review finding on compare(): two logs of one execution that differ from entry 0 on are
never a fork, since a fork keeps at least the init entry (spec §5.1: upToIndex in [1, len]).
Failed before the fix ("fork at index 0; 0 shared entries")."""

from __future__ import annotations

import copy

from agentscope.forks import compare
from tests.conftest import load_json


def test_a_different_init_entry_of_the_same_execution_is_not_a_fork() -> None:
    parent = load_json("c_fork_memory.parent.log.json")
    other = copy.deepcopy(parent[:5])
    # a new recording claiming the parent's execution: init input, events and clocks all differ
    other[0]["event"]["input"] = {"start": 100}
    for i, e in enumerate(other):
        e["recordedAt"] = f"2030-01-01T00:00:0{i}.000Z"
        if i:
            e["event"] = {"type": "DEC"}
    d = compare(parent, other)
    assert d.divergence == 0 and d.common_prefix == 0
    assert d.kind == "tamper" and d.tampered[0] == 0  # entry 0 altered in place (same id, index)
    # with another id at entry 0 as well, nothing ties the two: unrelated
    other[0]["id"] = "init"
    assert compare(parent, other).kind == "unrelated"

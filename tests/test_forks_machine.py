"""compare(..., machine=...) state diffs (spec §6.2 recommendation: replay both, diff states)."""

from __future__ import annotations

import copy
from collections.abc import Iterator, Mapping
from typing import Any

import jsonpatch
import jsonpointer
import pytest

from agentscope.engines.xstate import load_machine
from agentscope.examples import python_machines
from agentscope.forks import MISSING, Change, ForkDiff, compare
from agentscope.frames import Verdict
from tests.conftest import MACHINES, load_json, requires_node


def logical(p: Mapping[str, Any]) -> dict[str, Any]:
    out = {"status": p["status"], "value": p["value"], "context": p["context"]}
    out.update({k: p[k] for k in ("output", "error") if k in p})
    return out


def prefix_snapshot(name: str, n: int) -> dict[str, Any]:
    return next(p["persistedSnapshot"] for p in load_json(name)["prefixes"] if p["n"] == n)


def check_changes_are_exact(changes: tuple[Change, ...], left: Any, right: Any) -> None:
    """Every change resolves on its side (RFC 6901) and together they turn left into right."""
    ops = []
    for c in changes:
        if c.left is not MISSING:
            assert jsonpointer.resolve_pointer(left, c.path) == c.left
        if c.right is not MISSING:
            assert jsonpointer.resolve_pointer(right, c.path) == c.right
        ops.append({"op": c.op, "path": c.path, **({} if c.op == "remove" else {"value": c.right})})
    # array removals must run from the end
    removes = [o for o in ops if o["op"] == "remove"][::-1]
    rest = [o for o in ops if o["op"] != "remove"]
    assert jsonpatch.apply_patch(left, rest + removes) == right


def load_engine(engine: str, name: str) -> Any:
    """Return the fixture machine ``name`` ("counter" or "triage") on ``engine``."""
    if engine == "node":
        export = {"counter": "counterMachine", "triage": "triageMachine"}[name]
        return load_machine(MACHINES / f"{name}.mjs", export)
    return {"counter": python_machines.counter_machine, "triage": python_machines.triage_machine}[name]()


ENGINES = [pytest.param("node", marks=[requires_node, pytest.mark.node]), "python"]


@pytest.fixture(params=ENGINES)
def counter(request: pytest.FixtureRequest) -> Iterator[Any]:
    """The counter machine on each engine (XState in Node, the Python statechart engine)."""
    m = load_engine(request.param, "counter")
    yield m
    m.close()


@pytest.fixture(params=ENGINES)
def triage(request: pytest.FixtureRequest) -> Iterator[Any]:
    """The supportTriage machine on each engine."""
    m = load_engine(request.param, "triage")
    yield m
    m.close()


def test_state_diff_at_the_recorded_fork(counter: Any) -> None:
    m = counter
    parent = load_json("c_fork_memory.parent.log.json")
    fork = load_json("c_fork_memory.fork.log.json")
    d = compare(parent, fork, machine=m)
    assert isinstance(d, ForkDiff) and d.machine_used
    n4 = prefix_snapshot("c_fork_memory.parent.replay.json", 4)  # the state after entry 3
    # frames around the divergence
    assert d.left_before is not None and d.right_before is not None
    assert d.left_before.index == d.right_before.index == 3
    assert d.left_before.persisted == n4 and d.left_before.verdict is Verdict.VERIFIED
    assert d.left_at is not None and d.right_at is not None
    assert (d.left_at.event_type, d.right_at.event_type) == ("INC", "RESET")
    assert d.left_at.computed_hash == parent[4]["verification"]["stateHash"]
    assert d.right_at.computed_hash == fork[4]["verification"]["stateHash"]
    assert d.left_at.verdict is d.right_at.verdict is Verdict.VERIFIED
    assert set(d.right_at.changed_paths) == {"/context/count", "/context/last"}
    # INC adds 1 to the shared state's count; RESET sets it to 0 (counter.mjs)
    assert d.changes == (
        Change("/context/count", n4["context"]["count"] + 1, 0),
        Change("/context/last", "INC", "RESET"),
    )
    # one StateDiff per aligned index 4..7; the last one matches the fork's recorded final state
    assert [s.index for s in d.state_diffs] == [4, 5, 6, 7]
    assert [s.left_hash for s in d.state_diffs] == [e["verification"]["stateHash"] for e in parent[4:8]]
    assert [s.right_hash for s in d.state_diffs] == [e["verification"]["stateHash"] for e in fork[4:8]]
    final_right = logical(prefix_snapshot("c_fork_memory.fork.replay.json", 8))
    last = d.state_diffs[-1]
    assert {c.path for c in last.changes} >= {"/status", "/value", "/output"}
    for c in last.changes:
        assert c.right == (jsonpointer.resolve_pointer(final_right, c.path, MISSING))
    assert d.reconverged_at is None
    cf = d.changes_frame()
    assert list(cf.columns) == ["index", "path", "op", "left", "right"]
    assert cf[cf["index"] == 4]["path"].tolist() == ["/context/count", "/context/last"]
    assert cf[(cf["index"] == 7) & (cf["path"] == "/output")]["op"].tolist() == ["add"]
    tf = d.to_frame()
    assert tf["n_changes"].tolist()[:4] == [len(s.changes) for s in d.state_diffs]
    page = d._repr_html_()
    assert "/context/last" in page and "RESET" in page and "<script" not in page


def _rewrite(entries: list[dict[str, Any]], start: int, events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out = copy.deepcopy(entries[:start])
    for k, ev in enumerate(events):
        i = start + k
        out.append({**copy.deepcopy(entries[1]), "id": f"evt_{i:08d}", "index": i,
                    "recordedAt": f"2026-12-01T00:00:{i:02d}.000Z", "event": ev})
        out[-1].pop("verification", None)
    return out


def test_reconvergence_after_a_reordered_branch(counter: Any) -> None:
    m = counter
    parent = load_json("c_fork_memory.parent.log.json")
    # parent: INC, TOGGLE, DEC, TOGGLE; this branch: TOGGLE, INC, DEC, TOGGLE -> same from index 6
    branch = _rewrite(parent, 4, [{"type": "TOGGLE"}, {"type": "INC"}, {"type": "DEC"}, {"type": "TOGGLE"}])
    d = compare(parent, branch, machine=m)
    assert (d.kind, d.divergence) == ("fork", 4)
    n4 = prefix_snapshot("c_fork_memory.parent.replay.json", 4)["context"]
    assert d.changes == (
        Change("/context/count", n4["count"] + 1, n4["count"]),
        Change("/context/last", "INC", "TOGGLE"),
        Change("/context/toggles", n4["toggles"], n4["toggles"] + 1),
        Change("/value", "on", "off"),
    )
    assert d.reconverged_at == 6
    assert [s.same for s in d.state_diffs] == [False, False, True, True]
    short = compare(parent, branch, machine=m, horizon=2)
    assert short.state_diffs == d.state_diffs[:2] and short.reconverged_at is None
    assert short.changes == d.changes
    assert d.right_at is not None and d.right_at.verdict is Verdict.MISSING  # no recorded hashes
    assert d.left_at is not None and d.left_at.persisted is not None and d.right_at.persisted is not None
    check_changes_are_exact(d.changes, logical(d.left_at.persisted), logical(d.right_at.persisted))


def test_tampered_hash_with_a_machine_shows_no_state_change(counter: Any) -> None:
    m = counter
    parent = load_json("c_fork_memory.parent.log.json")
    bad = copy.deepcopy(parent)
    bad[5]["verification"]["stateHash"] = "deadbeef"
    d = compare(parent, bad, machine=m)
    assert (d.kind, d.divergence) == ("tamper", 5)
    assert d.state_diffs[0].same and d.changes == ()
    assert d.right_at is not None and d.right_at.verdict is Verdict.MISMATCH
    assert d.left_at is not None and d.left_at.verdict is Verdict.VERIFIED


def test_unrelated_runs_diff_from_the_init_entry(counter: Any) -> None:
    m = counter
    parent = load_json("c_fork_memory.parent.log.json")
    other = copy.deepcopy(parent)
    other[0]["event"]["input"] = {"start": 5}
    other[0]["metadata"]["executionId"] = "another-run"
    d = compare(parent, other, machine=m)
    assert (d.kind, d.divergence) == ("unrelated", 0)
    assert d.left_before is None and d.left_at is not None and d.left_at.index == 0
    assert d.changes == (Change("/context/count", 1, 5),)
    assert all(s.changes == (Change("/context/count", s.changes[0].left, s.changes[0].left + 4),) for s in d.state_diffs[:8])


# ---------------------------------------------------------------------------------------------
# the real engines: XState in Node, and the Python statechart engine's ports of the machines


def test_sqlite_variant_counter_fork_state_diff(counter: Any) -> None:
    parent = load_json("c_fork_sqlite.parent.log.json")
    fork = load_json("c_fork_sqlite.fork.log.json")
    d = compare(parent, fork, machine=counter)
    n4 = prefix_snapshot("c_fork_memory.parent.replay.json", 4)
    assert d.changes == (
        Change("/context/count", n4["context"]["count"] + 1, 0),
        Change("/context/last", "INC", "RESET"),
    )
    assert [s.right_hash for s in d.state_diffs] == [e["verification"]["stateHash"] for e in fork[4:8]]


def test_triage_fork_state_diff_names_the_context_paths(triage: Any) -> None:
    main = load_json("g_triage.main.log.json")
    fork = load_json("g_triage.fork.log.json")
    d = compare(main, fork, machine=triage)
    assert (d.kind, d.divergence) == ("fork", 18)
    shared = prefix_snapshot("g_triage.main.replay.json", 18)
    assert d.left_before is not None and d.left_before.persisted is not None
    assert logical(d.left_before.persisted) == logical(shared)
    # the replayed states are the recorded ones
    assert [s.left_hash for s in d.state_diffs] == [e["verification"]["stateHash"] for e in main[18:52]]
    assert [s.right_hash for s in d.state_diffs] == [e["verification"]["stateHash"] for e in fork[18:52]]
    ctx = shared["context"]
    assert d.left_at is not None and d.right_at is not None
    # fork side, REJECT (guard rejections < 2): drafting, rejections + 1, draft null (triage.mjs)
    assert d.right_at.value == {"working": {"awaitingAgent": "drafting"}}
    assert d.right_at.context == {**ctx, "rejections": ctx["rejections"] + 1, "draft": None}
    # main side, APPROVE: an "answered" outcome for the current ticket, then `selecting` takes
    # the next ticket off the queue and starts analyzing it (triage/kb cleared)
    answered = {"id": ctx["current"]["id"], "route": "answered", "category": ctx["triage"]["category"],
                "by": main[18]["event"]["agent"], "rejections": ctx["rejections"],
                "priority": ctx["triage"]["priority"]}
    by_path = {c.path: c for c in d.changes}
    assert by_path["/context/outcomes/3"] == Change("/context/outcomes/3", answered, MISSING)
    assert len(ctx["outcomes"]) == 3
    assert by_path["/context/queue/0"] == Change("/context/queue/0", MISSING, ctx["queue"][0])
    assert by_path["/context/rejections"] == Change("/context/rejections", 0, 1)
    assert by_path["/context/kb"] == Change("/context/kb", None, ctx["kb"])
    assert by_path["/context/triage"] == Change("/context/triage", None, ctx["triage"])
    for key in ("id", "n", "plan", "subject"):
        c = by_path[f"/context/current/{key}"]
        assert (c.left, c.right) == (ctx["queue"][0][key], ctx["current"][key])
    assert by_path["/value/working/awaitingAgent"].right == "drafting"
    assert by_path["/value/working/analyzing"].right is MISSING
    # nothing else differs: exactly these context members
    assert {c.path.split("/")[2] for c in d.changes if c.path.startswith("/context/")} == {
        "current", "kb", "outcomes", "queue", "rejections", "triage"
    }
    assert d.left_at is not None and d.right_at is not None
    assert d.left_at.persisted is not None and d.right_at.persisted is not None
    check_changes_are_exact(d.changes, logical(d.left_at.persisted), logical(d.right_at.persisted))
    # at index 25 the fork side equals the fork's recorded prefix snapshot n=26
    s25 = next(s for s in d.state_diffs if s.index == 25)
    right26 = logical(prefix_snapshot("g_triage.fork.replay.json", 26))
    for c in s25.changes:
        assert c.right == jsonpointer.resolve_pointer(right26, c.path, MISSING)

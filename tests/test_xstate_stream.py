"""The Node runner's fold transport: streamed byte-capped parts, hashes from JS, seeks that
receive only the last snapshot, pipelined folds, abandoned streams (issue 10)."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agentscope.engines.base import UNSENT
from agentscope.engines.xstate import XStateMachine, load_machine
from agentscope.hashing import state_hash
from tests.conftest import REPO, requires_node

pytestmark = [requires_node, pytest.mark.node]

LOOP = REPO / "agentscope" / "examples" / "machines" / "loop.mjs"
GROW = Path(__file__).resolve().parent.parent / "benchmarks" / "machines" / "grow.mjs"


def loop_events(n: int) -> list[dict[str, Any]]:
    return [{"type": "xstate.done.actor", "actorId": "tick", "sessionId": f"rec:{i}",
             "output": {"delta": (i * 7) % 13}} for i in range(n)]


@pytest.fixture(scope="module")
def loop() -> Iterator[XStateMachine]:
    with load_machine(LOOP) as m:
        yield m


def test_pipelined_fold_equals_one_fold_with_js_hashes(loop: XStateMachine) -> None:
    events = loop_events(700)
    s0 = loop.initial({"limit": 10_000})
    whole = loop.fold(s0, events, sessions={})
    piped = list(loop.fold_iter(s0, events, sessions={}, chunk=64))
    assert [s.persisted for s in piped] == [s.persisted for s in whole]
    assert [s.state_hash for s in piped] == [state_hash(s.persisted) for s in whole]
    assert piped[-1].context == {"limit": 10_000, "i": 700, "sum": sum((i * 7) % 13 for i in range(700))}


def test_replies_are_capped_by_bytes(loop: XStateMachine) -> None:
    with load_machine(GROW) as m:
        m.part_bytes = 50_000
        events = [{"type": "ADD", "text": "x" * 1000} for _ in range(300)]
        s0 = m.initial()
        rid = m._runner.send(m._seed_request(s0, events, {}, rebind=True), pipelined=True)
        sizes = [len(part["persisted"]) for _, part in m._runner.recv_stream(rid)]
        assert len(sizes) > 10 and sum(sizes) == 300  # many parts, none over ~50 KB + one snapshot
        assert max(sizes) <= 50  # the 50th snapshot alone holds 50 KB of items


def test_identical_snapshots_cross_once_and_stay_equal(loop: XStateMachine) -> None:
    s0 = loop.initial({"limit": 10})
    snaps = loop.fold(s0, [{"type": "NOPE"}] * 5, sessions={})
    assert all(s.persisted is snaps[0].persisted for s in snaps)  # sent once, reused
    assert {s.state_hash for s in snaps} == {state_hash(s0.persisted)}


def test_fold_last_receives_only_the_last_snapshot(loop: XStateMachine) -> None:
    events = loop_events(200)
    s0 = loop.initial({"limit": 10_000})
    last, hashes = loop.fold_last(s0, events, sessions={})
    whole = loop.fold(s0, events, sessions={})
    assert last.persisted == whole[-1].persisted
    assert hashes == [s.state_hash for s in whole]


def test_an_abandoned_stream_leaves_nothing_behind(loop: XStateMachine) -> None:
    s0 = loop.initial({"limit": 100_000})
    first = list(itertools.islice(loop.fold_iter(s0, loop_events(5_000), sessions={}, chunk=500), 10))
    assert len(first) == 10
    again = loop.fold(s0, loop_events(3), sessions={})  # reads and drops the abandoned replies
    assert again[-1].context["i"] == 3
    assert not loop._runner._stash and not loop._runner._parts and not loop._runner._abandoned


@pytest.mark.parametrize("fail_at", [3, 130, 257])
def test_a_failure_in_a_later_chunk_yields_every_earlier_snapshot(fail_at: int) -> None:
    faulty = Path(__file__).resolve().parent / "xstate_machines" / "faulty.mjs"
    with load_machine(faulty) as m:
        events: list[dict[str, Any]] = [{"type": "STORE", "payload": str(i)} for i in range(300)]
        events[fail_at] = {"type": "BOOM"}
        got = []
        with pytest.raises(Exception) as info:
            for snap in m.fold_iter(m.initial(), events, sessions={}, chunk=64):
                got.append(snap.context["stored"])
        assert getattr(info.value, "index", None) == fail_at
        assert got == [str(i) for i in range(fail_at)]
        assert m.fold(m.initial(), events[:2], sessions={})[-1].context["stored"] == "1"  # usable


def test_many_replies_leave_the_runner_stderr_clean() -> None:
    # every reply is written by one helper; it used to leave an "error" listener on stdout behind
    # per reply (Node warns past 10), and the runner's V8 heap flag must be known to this Node
    with load_machine(LOOP) as m:
        for _ in range(15):
            m.ping()
        s0 = m.initial({"limit": 100})
        assert len(m.fold(s0, loop_events(20), sessions={})) == 20
        runner = m._runner
        m.close()
        assert runner._drain_thread is not None
        runner._drain_thread.join(timeout=5.0)
        err = runner.stderr_text()
    assert "MaxListenersExceededWarning" not in err
    assert "unrecognized flag" not in err


def test_a_sparse_fold_sends_only_the_snapshots_a_verifying_pass_judges(loop: XStateMachine) -> None:
    events = loop_events(300)
    for j in (10, 11, 100, 128, 200):  # no-ops: the state stays, one at a request's start (128)
        events.insert(j, {"type": "NOPE"})
    s0 = loop.initial({"limit": 10_000})
    whole = loop.fold(s0, events, sessions={})
    expected: list[str | None] = [s.state_hash for s in whole]
    expected[5], expected[70] = "00000000", "NOT-HEX"  # a mismatch and an odd recorded text
    expected[90] = None  # no recorded hash: nothing to judge it by
    sparse = list(loop.fold_iter(s0, events, sessions={}, chunk=64, expected=expected))
    assert [s.state_hash for s in sparse] == [s.state_hash for s in whole]
    before = [s0.persisted, *(s.persisted for s in whole[:-1])]
    for j, (sp, wh) in enumerate(zip(sparse, whole, strict=True)):
        first, last = j % 64 == 0, j % 64 == 63 or j == len(events) - 1
        assert sp.unchanged == (None if first else wh.persisted == before[j]), j
        sent = first or last or j in (5, 70)
        assert sp.persisted == wh.persisted if sent else sp.persisted is UNSENT, j
        assert (sp.handle is not None) == (last and sent), j
    assert [j for j, s in enumerate(sparse) if s.unchanged] == [10, 11, 100, 200]
    assert sparse[-1].context == whole[-1].context


def test_a_sparse_fold_sends_every_snapshot_with_timers() -> None:
    with load_machine(REPO / "tests" / "xstate_machines" / "inspected.mjs") as m:
        done = {"type": "xstate.done.actor", "actorId": "doubler", "sessionId": "rec:1", "output": {"n": 2}}
        events = [{"type": "GO", "by": 1}, {"type": "NOPE"}, done, {"type": "NOTE", "text": "a"},
                  {"type": "NOPE"}, {"type": "NOPE"}]
        s0 = m.initial({"start": 0})
        whole = m.fold(s0, events, sessions={})
        sparse = list(m.fold_iter(s0, events, sessions={}, expected=[s.state_hash for s in whole]))
        assert not whole[1].timers and whole[2].timers  # the child's completion starts `after 30`
        assert [s.persisted is UNSENT for s in sparse] == [False, True, False, False, False, False]
        assert [s.unchanged for s in sparse] == [None, True, False, False, True, True]
        assert [s.persisted for s in sparse if s.persisted is not UNSENT] == [
            s.persisted for j, s in enumerate(whole) if j != 1]


def test_verify_judges_a_sparse_fold_as_a_whole_one(loop: XStateMachine) -> None:
    from agentscope import verify

    events = loop_events(400)
    events[50:50] = [{"type": "NOPE"}] * 3
    s0 = loop.initial({"limit": 10_000})
    snaps = [s0, *loop.fold(s0, events, sessions={})]
    entries = [
        {"schemaVersion": 1, "id": f"evt_{i:08d}", "index": i,
         "recordedAt": f"2026-11-30T10:00:{i // 1000:02d}.{i % 1000:03d}Z",
         "machineId": loop.machine_id, "machineVersion": loop.version, "event": ev,
         "verification": {"stateHash": snap.state_hash}}
        for i, (ev, snap) in enumerate(
            zip([{"type": "@agent.init", "input": {"limit": 10_000}}, *events], snaps, strict=True))
    ]
    entries[7]["verification"]["stateHash"] = "0badc0de"
    entries[60]["verification"]["stateHash"] = "Zz"
    del entries[90]["verification"]

    class Engine:  # the same engine, asked for a sparse fold or (sparse=False) never
        def __init__(self, m: XStateMachine, *, sparse: bool) -> None:
            self._m, self._sparse, self.asked = m, sparse, 0

        def __getattr__(self, name: str) -> Any:
            return getattr(self._m, name)

        def fold_iter(self, *args: Any, expected: Any = None, **kw: Any) -> Iterator[Any]:
            self.asked += expected is not None
            return self._m.fold_iter(*args, **kw, expected=expected if self._sparse else None)

    sparse, whole = Engine(loop, sparse=True), Engine(loop, sparse=False)
    got, want = verify(sparse, entries), verify(whole, entries)  # type: ignore[arg-type]
    assert sparse.asked == whole.asked == 1  # verify asked each for one sparse fold
    assert got.df.equals(want.df) and got.problems.equals(want.problems)
    assert got.counts() == want.counts()
    assert got.counts()["ignored"] == 3 and got.counts()["mismatch"] == 2

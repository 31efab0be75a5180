"""The one fold: every consumer reads the one pass, so each entry is applied to the machine once.

A counting proxy wraps a real engine (the Python statechart engine, and real XState through the
Node runner) and counts every entry it applies: events through ``fold``/``transition`` plus the
seeds (``initial``/``restore``). ``TimeTravel(machine, log)`` then ``to_html()`` must apply
exactly ``len(log)``; ``ForkView(m, a, b)`` the shared prefix once; ``Timeline.extend`` only the
new entries. The states the store gives back must equal a fold from a checkpoint.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from agentscope.engines.base import NO_INPUT, Graph, Snapshot
from agentscope.hashing import state_hash
from agentscope.pipeline import Timeline, verify
from agentscope.pipeline.timeline import fork_timelines
from tests.conftest import MACHINES, load_json, requires_node
from tests.test_replay_support import Jobber, write_log


class Counting:
    """A :class:`~agentscope.engines.base.Machine` proxy counting the entries applied."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.machine_id = inner.machine_id
        self.version = inner.version
        self.applied = 0

    @property
    def graph(self) -> Graph:
        return self.inner.graph  # type: ignore[no-any-return]

    def initial(self, input: Any = NO_INPUT) -> Snapshot:
        self.applied += 1
        return self.inner.initial(input)  # type: ignore[no-any-return]

    def restore(self, persisted: Mapping[str, Any]) -> Snapshot:
        self.applied += 1
        return self.inner.restore(persisted)  # type: ignore[no-any-return]

    def transition(self, snapshot: Snapshot, event: Mapping[str, Any]) -> Snapshot:
        self.applied += 1
        return self.inner.transition(snapshot, event)  # type: ignore[no-any-return]

    def persist(self, snapshot: Snapshot) -> dict[str, Any]:
        return self.inner.persist(snapshot)  # type: ignore[no-any-return]

    def child_session(self, snapshot: Snapshot, actor_id: str) -> str | None:
        return self.inner.child_session(snapshot, actor_id)  # type: ignore[no-any-return]

    def fold(self, seed: Snapshot, events: Sequence[Mapping[str, Any]], *,
             sessions: dict[str, str] | None = None) -> list[Snapshot]:
        events = list(events)
        self.applied += len(events)
        return self.inner.fold(seed, events, sessions=sessions)  # type: ignore[no-any-return]

    def close(self) -> None:
        self.inner.close()


class CountingStream(Counting):
    """The proxy for an engine that streams its folds (``fold_iter``, the Node engine)."""

    def fold_iter(self, seed: Snapshot, events: Sequence[Mapping[str, Any]], **kw: Any) -> Any:
        events = list(events)
        self.applied += len(events)
        return self.inner.fold_iter(seed, events, **kw)


def _counting(inner: Any) -> Counting:
    return CountingStream(inner) if callable(getattr(inner, "fold_iter", None)) else Counting(inner)


def _python_triage() -> tuple[Any, list[dict[str, Any]], list[dict[str, Any]]]:
    from agentscope.examples import python_machines as pm

    main = json.loads(json.dumps(load_json("g_triage.main.log.json")))
    fork = json.loads(json.dumps(load_json("g_triage.fork.log.json")))
    return pm.triage_machine(), main, fork


@pytest.fixture(scope="module")
def node_triage() -> Iterator[Any]:
    xstate = pytest.importorskip("agentscope.engines.xstate")
    m = xstate.load_machine(MACHINES / "triage.mjs", "triageMachine")
    yield m
    m.close()


def _engines(request: pytest.FixtureRequest, which: str) -> Any:
    if which == "python":
        return _python_triage()[0]
    return request.getfixturevalue("node_triage")


ENGINES = ["python", pytest.param("node", marks=requires_node)]


@pytest.mark.parametrize("which", ENGINES)
def test_timetravel_and_to_html_fold_each_entry_once(which: str, request: pytest.FixtureRequest) -> None:
    pytest.importorskip("ipywidgets")
    from agentscope.widgets import TimeTravel

    log = load_json("g_triage.main.log.json")
    m = _counting(_engines(request, which))
    tt = TimeTravel(m, log)
    for step in (0, 5, len(log) - 1, 3, 4):  # seeks and steps
        tt.go(step)
    page = tt.to_html()
    assert "<html" in page
    assert m.applied == len(log)
    # and the frames it showed are the real states: every hash recomputes to the pass's
    for i in (0, 3, len(log) - 1):
        f = tt.timeline.at(i)
        assert f.persisted is not None and state_hash(f.persisted) == f.computed_hash


@pytest.mark.parametrize("which", ENGINES)
def test_player_coverage_overlay_reads_the_pass_and_folds_nothing_again(
    which: str, request: pytest.FixtureRequest
) -> None:
    pytest.importorskip("ipywidgets")
    import agentscope as asc
    from agentscope.render import state_element_id
    from agentscope.widgets import TimeTravel

    log = load_json("g_triage.main.log.json")
    m = _counting(_engines(request, which))
    tt = TimeTravel(m, log)
    page = tt.to_html(coverage=True)
    assert m.applied == len(log)  # the heat map counted the view's pass: no entry applied again
    found = re.search(r'id="as-data">(.*?)</script>', page, re.S)
    assert found is not None
    heat = json.loads(found.group(1))["coverage"]
    drawn = {eid: visits for eid, _, visits, _ in heat["states"]}
    # the same counts as coverage of a fresh fold of the log, for every state the chart draws
    fresh = asc.coverage(log, _engines(request, which)).visits
    assert drawn == {state_element_id(s): v for s, v in fresh.items() if state_element_id(s) in drawn}
    assert len(drawn) == len(fresh) - 1  # every state but the root
    assert heat["visited"] == sum(1 for s, v in fresh.items() if v and s != m.graph.root)


@pytest.mark.parametrize("which", ENGINES)
def test_forkview_folds_the_shared_prefix_once(which: str, request: pytest.FixtureRequest) -> None:
    pytest.importorskip("ipywidgets")
    from agentscope.forks import compare
    from agentscope.widgets import ForkView

    a, b = load_json("g_triage.main.log.json"), load_json("g_triage.fork.log.json")
    m = _counting(_engines(request, which))
    common = compare(a, b).common_prefix
    shared = 0
    while shared < common and a[shared] == b[shared]:
        shared += 1
    assert shared > 1
    fv = ForkView(m, a, b)
    fv.go(fv.n - 1)
    fv.to_html()
    assert m.applied == len(a) + len(b) - shared
    # each side verifies exactly as its own Timeline does
    for tl, log in zip(fv.timelines, (a, b), strict=True):
        alone = Timeline(_engines(request, which), log)
        assert [f.computed_hash for f in tl.iter_frames()] == [f.computed_hash for f in alone.iter_frames()]
        assert tl.report.counts() == alone.report.counts()


@pytest.mark.parametrize("which", ENGINES)
def test_compare_with_a_machine_reuses_the_shared_prefix(which: str, request: pytest.FixtureRequest) -> None:
    from agentscope.forks import compare

    a, b = load_json("g_triage.main.log.json"), load_json("g_triage.fork.log.json")
    m = _counting(_engines(request, which))
    d = compare(a, b, machine=m)
    assert d.left_at is not None and d.right_at is not None
    assert m.applied <= len(a) + len(b) - d.common_prefix + 1


def test_timeline_extend_folds_only_the_new_entries() -> None:
    inner = Jobber(loop=True)
    events = [{"type": "GO"}, {"type": "xstate.done.actor", "actorId": "job", "output": 1}] * 40
    events += [{"type": "NOOP"}, {"type": "WAIT"}, {"type": "xstate.timer",
                                                    "id": "xstate.after.1000.jobber.waiting"}]
    log = write_log(inner, events, input={"attempt": 1})
    m = Counting(inner)
    tl = Timeline(m, log[:10])
    assert m.applied == 10
    got = tl.extend(log[10:50])
    assert got == range(10, 50) and m.applied == 50
    got = tl.extend(log[50:])
    assert got == range(50, len(log)) and m.applied == len(log)
    assert tl.extend([]) == range(len(log), len(log))
    whole = Timeline(inner, log)
    assert tl.report.counts() == whole.report.counts() and tl.report.ok
    assert [f.computed_hash for f in tl.iter_frames()] == [f.computed_hash for f in whole.iter_frames()]
    assert tl[len(log) - 1].persisted == whole[len(log) - 1].persisted
    assert len(tl.entries) == len(log) and len(log) > 50  # the log given was not modified
    assert m.applied == len(log)  # reading frames folded nothing


def test_timeline_extend_validates_and_starts_new_segments() -> None:
    inner = Jobber(loop=True)
    log = write_log(inner, [{"type": "GO"}, {"type": "NOOP"}], input={"attempt": 1})
    tl = Timeline(inner, log)
    bad = dict(log[2], index=7, id="x")
    tl.extend([bad])
    kinds = "; ".join(tl.report.problems_of(3))
    assert "non-contiguous" in kinds
    tl2 = Timeline(inner, [])
    assert not tl2.report.ok
    tl2.extend(log)
    assert tl2.report.ok and len(tl2) == len(log)


def test_store_states_equal_a_checkpoint_fold() -> None:
    """Every state the store decodes equals the engine's (checkpoint seeks fold, the store does not)."""
    from agentscope.examples import python_machines as pm

    for name in ("g_triage.main.log.json", "g_triage.fork.log.json", "a_counter.log.json"):
        log = load_json(name)
        m = pm.triage_machine() if name.startswith("g_") else pm.counter_machine()
        stored = Timeline(m, log)
        folded = Timeline(m, log, checkpoint_every=3, cache_size=0)
        for i in range(len(log)):
            fs, ff = stored[i], folded[i]
            assert fs.persisted == ff.persisted, (name, i)
            assert fs.changed_paths == ff.changed_paths
            assert fs.ignored == ff.ignored and fs.verdict == ff.verdict
        assert verify(m, log).counts() == stored.report.counts()


def test_fork_timelines_share_only_equal_entries() -> None:
    inner = Jobber(loop=True)
    events = [{"type": "GO"}, {"type": "xstate.done.actor", "actorId": "job", "output": 1}] * 5
    a = write_log(inner, events, input={"attempt": 1})
    b = [dict(e) for e in a]
    b[4] = dict(b[4], recordedAt="2030-01-01T00:00:00.000Z")  # equal under §6.1, not for the pass
    m = Counting(inner)
    ta, tb = fork_timelines(m, a, b, shared=len(a))
    assert m.applied == 4 + 2 * (len(a) - 4)
    assert [f.computed_hash for f in ta.iter_frames()] == [f.computed_hash for f in tb.iter_frames()]
    with pytest.raises(ValueError, match="does not start"):
        ta.fork(list(reversed(a)))


def test_a_validated_log_is_not_validated_again(monkeypatch: pytest.MonkeyPatch) -> None:
    """read_log validated every entry; replay, verify and Timeline check only what it could not
    (the machine's identity), and Timeline.extend checks the entries it adds."""
    import agentscope.log.validate as validate
    from agentscope.examples import python_machines as pm
    from agentscope.log import read_log
    from agentscope.pipeline import replay
    from tests.conftest import FIXTURES

    log = read_log(FIXTURES / "a_counter.log.json")
    assert validate.is_validated(log) and not validate.is_validated(list(log.entries))
    quick: list[int] = []  # the plain-case test of an entry (alone or in a chunk)
    exact: list[int] = []  # the rule-by-rule path (when the plain case does not hold)
    real_quick, real_exact = validate._plain_envelope, validate.entry_problem

    real_chunk = validate._plain_envelopes

    def counting_quick(entry: Any) -> bool:
        quick.append(id(entry))
        return real_quick(entry)

    def counting_chunk(chunk: Any, events: Any) -> bool:
        quick.extend(id(e) for e in chunk)
        return real_chunk(chunk, events)

    def counting_exact(entry: Any, **kw: Any) -> Any:
        exact.append(id(entry))
        return real_exact(entry, **kw)

    monkeypatch.setattr(validate, "_plain_envelope", counting_quick)
    monkeypatch.setattr(validate, "_plain_envelopes", counting_chunk)
    monkeypatch.setattr(validate, "entry_problem", counting_exact)
    m = pm.counter_machine()
    assert verify(m, log).ok and replay(m, log).length == len(log)
    tl = Timeline(m, log)
    assert tl.report.ok and quick == [] and exact == []
    verify(m, list(log.entries))  # a plain list was never validated: checked once, here
    assert sorted(quick) == sorted(id(e) for e in log.entries) and exact == []
    quick.clear()
    bad = dict(log.entries[-1], index=len(log), id="new", schemaVersion=2)
    tl.extend([bad])
    # a chunk that is not plainly right is tried as a chunk, then entry by entry
    assert set(quick) == {id(bad)} and exact == [id(bad)]
    assert tl.report.df.loc[len(log), "kind"] == "invalid-entry"


@pytest.mark.parametrize(
    "spec",
    [
        "py:agentscope.examples.python_machines:triage_machine",
        pytest.param(f"{MACHINES / 'triage.mjs'}:triageMachine", marks=requires_node),
    ],
    ids=["python", "node"],
)
def test_cli_diff_html_folds_the_shared_prefix_once(
    spec: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``agentscope diff A B --machine M --html OUT``: the diff and the fork player read one pass."""
    from agentscope import cli
    from tests.conftest import FIXTURES

    counters: list[Counting] = []
    load = cli._Machines._load

    def counted(self: Any, machine_spec: Any) -> Any:
        m = _counting(load(self, machine_spec))
        counters.append(m)
        return m

    monkeypatch.setattr(cli._Machines, "_load", counted)
    a_path, b_path = FIXTURES / "g_triage.main.log.json", FIXTURES / "g_triage.fork.log.json"
    a, b = load_json("g_triage.main.log.json"), load_json("g_triage.fork.log.json")
    shared = 0
    while shared < min(len(a), len(b)) and a[shared] == b[shared]:
        shared += 1
    assert 1 < shared < min(len(a), len(b))
    out = tmp_path / "fork.html"
    code = cli.main(["diff", str(a_path), str(b_path), "--machine", spec, "--html", str(out), "--json"])
    data = json.loads(capsys.readouterr().out)
    assert code == 1 and data["kind"] == "fork" and data["html"] == str(out.resolve())
    assert len(counters) == 1
    assert counters[0].applied == len(a) + len(b) - shared
    page = out.read_text(encoding="utf-8")
    assert '"kind":"fork"' in page and f'"divergence":{data["divergence"]}' in page
    # the diff read from the player's timelines is the one compare() computes on its own
    assert cli.main(["diff", str(a_path), str(b_path), "--machine", spec, "--json"]) == 1
    plain = json.loads(capsys.readouterr().out)
    assert plain["state_changes"] == data["state_changes"] and plain["state_changes"]
    assert plain["reconverged_at"] == data["reconverged_at"]


class _BreakingStream(Counting):
    """A streaming engine whose fold raises, without naming the event, after ``ok`` steps."""

    def __init__(self, inner: Any, ok: int) -> None:
        super().__init__(inner)
        self.ok = ok

    def fold_iter(self, seed: Snapshot, events: Sequence[Mapping[str, Any]], **kw: Any) -> Any:
        for k, snap in enumerate(self.inner.fold_iter(seed, events, **kw)):
            if k == self.ok:
                raise RuntimeError("the stream broke")
            yield snap


@pytest.mark.parametrize("ok", [0, 2])
def test_a_streamed_fold_that_raises_names_the_failing_entry(ok: int) -> None:
    """``fold_segment`` over a streaming engine yields every entry before the failing one, and the
    exception's note names the entry whose step raised (the engine gave no index), from a seed
    too (positions count from the segment's start, not the stream's)."""
    from agentscope.examples.python_machines import counter_machine
    from agentscope.pipeline.fold import fold_segment
    from benchmarks.bench_python_verify import make_log

    entries = make_log(12)
    m = _BreakingStream(counter_machine(), ok)
    got: list[int] = []
    with pytest.raises(RuntimeError) as ei:
        for i, _snap in fold_segment(m, entries, 0, len(entries)):
            got.append(i)
    assert got == list(range(ok + 1))
    assert ei.value.__notes__ == [f"while replaying entry {ok + 1} (id {entries[ok + 1]['id']!r}, "
                                  f"event {entries[ok + 1]['event']['type']!r})"]
    seed = counter_machine().initial({"start": 1})
    got = []
    with pytest.raises(RuntimeError) as ei:
        for i, _snap in fold_segment(m, entries, 1, len(entries), seed=seed):
            got.append(i)
    assert got == list(range(1, ok + 1))
    assert "while replaying entry " + str(ok + 1) in ei.value.__notes__[0]

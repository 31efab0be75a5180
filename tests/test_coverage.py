"""Coverage of a machine by one log, several logs or a whole store: visits equal the counts from
``Timeline.states()``; store-wide through the executor seam equals the local count; the heat map
classes every state by its visits. Both engines."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

import agentscope
from agentscope.coverage_map import STATE_COLUMNS, TRANSITION_COLUMNS, Coverage, coverage
from agentscope.examples import python_machines as pm
from agentscope.log import read_log
from agentscope.pipeline import Timeline
from agentscope.render.coverage import coverage_svg, heat_bucket
from tests.conftest import FIXTURES, MACHINES, load_json, node_ready

ENGINES = ["python", pytest.param("node", marks=pytest.mark.skipif(
    not node_ready(), reason="needs node and `npm ci` (xstate)"))]
LOGS = {
    "a_counter.log.json": ("counter_machine", "counter.mjs", "counterMachine"),
    "e_bridge.v2.log.json": ("ticket_v2", "ticket.mjs", "ticketV2"),
    "g_triage.main.log.json": ("triage_machine", "triage.mjs", "triageMachine"),
    "g_triage.second.log.json": ("triage_machine", "triage.mjs", "triageMachine"),
}
PY_TRIAGE = "py:agentscope.examples.python_machines:triage_machine"


@pytest.fixture(scope="module")
def machines() -> Iterator[Callable[[str, str], Any]]:
    opened: dict[tuple[str, str], Any] = {}

    def get(engine: str, log: str) -> Any:
        factory, module, export = LOGS[log]
        key = (engine, factory)
        if key not in opened:
            if engine == "python":
                opened[key] = getattr(pm, factory)()
            else:
                from agentscope.engines.xstate import load_machine

                opened[key] = load_machine(MACHINES / module, export)
        return opened[key]

    yield get
    for m in opened.values():
        m.close()


def _from_states(tl: Timeline) -> tuple[Counter[str], dict[str, int], dict[str, int]]:
    df = tl.states()
    visits: Counter[str] = Counter()
    first: dict[str, int] = {}
    last: dict[str, int] = {}
    for i, active in zip(df["index"], df["active"], strict=True):
        for s in active:
            visits[s] += 1
            first.setdefault(s, int(i))
            last[s] = int(i)
    return visits, first, last


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("name", sorted(LOGS))
def test_visits_equal_counts_from_states(name: str, engine: str, machines: Any) -> None:
    m = machines(engine, name)
    tl = Timeline(m, load_json(name))
    cov = coverage(tl, m)
    assert isinstance(cov, Coverage)
    assert tuple(cov.states.columns) == STATE_COLUMNS
    assert tuple(cov.transitions.columns) == TRANSITION_COLUMNS
    visits, first, last = _from_states(tl)
    assert list(cov.states["state"]) == list(m.graph.nodes)
    for row in cov.states.itertuples():
        assert row.visits == visits.get(row.state, 0), row.state
        if row.visits:
            assert (row.first_index, row.last_index, row.logs) == (
                first[row.state], last[row.state], 1)
        else:
            assert row.logs == 0
    assert cov.never_visited == [s for s in m.graph.nodes if visits.get(s, 0) == 0]
    # the root is active after every entry (done and error snapshots included)
    assert cov.visits[m.graph.root] == len(tl)
    # every step that changed the state value was attributed to some move
    df = tl.states()
    changes = sum(1 for a, b in zip(df["value"][:-1], df["value"][1:], strict=True) if a != b)
    assert int(cov.transitions["taken"].sum()) >= changes


def test_triage_transitions_against_the_log() -> None:
    m = pm.triage_machine()
    log = load_json("g_triage.main.log.json")
    tl = Timeline(m, log)
    cov = coverage(tl, m)
    t = cov.transitions.set_index(["source", "event", "target"])
    reject = t.loc[("supportTriage.working.awaitingAgent.reviewing", "REJECT",
                    "supportTriage.working.awaitingAgent.drafting")]
    rejects = [i for i, e in enumerate(log) if e["event"]["type"] == "REJECT"]
    assert bool(reject["declared"]) and reject["taken"] == len(rejects) == 3
    assert reject["first_index"] == rejects[0] and reject["last_index"] == rejects[-1]
    close = t.loc[("supportTriage.standby", "CLOSE_SHIFT", "supportTriage.closed")]
    assert close["taken"] == 1 and close["first_index"] == len(log) - 1
    never = cov.never_taken
    assert ("supportTriage.paused", "CLOSE_SHIFT", "supportTriage.closed") in set(
        zip(never["source"], never["event"], never["target"], strict=True))
    # eventless moves are microsteps: never listed as never taken
    assert (never["event"] != "").all()
    assert {"supportTriage.working.routing", "supportTriage.working.selecting"} <= set(
        cov.never_visited)


@pytest.mark.parametrize("engine", ENGINES)
def test_transitions_are_counted_as_the_engine_took_them(engine: str, machines: Any) -> None:
    """Every microstep counts for its own edge: the eventless chains out of ``selecting`` and
    ``routing`` and the parallel state's ``onDone`` are taken, counted once per step that took
    them, and nothing is undeclared (no move is guessed)."""
    m = machines(engine, "g_triage.main.log.json")
    log = load_json("g_triage.main.log.json")
    tl = Timeline(m, log)
    cov = coverage(tl, m)
    assert not cov.inferred and cov.transitions["declared"].all()
    t = cov.transitions.set_index(["source", "event", "target"])
    expected: Counter[int] = Counter()  # steps that took each edge
    for step in tl.steps():
        took = {x.edge for x in step.transitions or () if x.edge is not None}
        expected.update(took)
    w = "supportTriage.working."
    analyzed = t.loc[(w + "analyzing", "xstate.done.state." + w + "analyzing", w + "routing"), "taken"]
    routed = sum(int(t.loc[(w + "routing", "", w + x), "taken"])
                 for x in ("escalating", "selecting", "awaitingAgent"))
    edges = m.graph.transitions

    def edge(source: str, target: str) -> int:
        return next(i for i, e in enumerate(edges) if e.source == source and target in e.targets)

    assert analyzed == routed == expected[edge(w + "analyzing", w + "routing")] > 0
    assert int(t.loc[(w + "selecting", "", w + "analyzing"), "taken"]) == expected[
        edge(w + "selecting", w + "analyzing")] > 0


def test_a_machine_that_reports_nothing_falls_back_to_inferred_moves() -> None:
    """The only place moves are still inferred: an engine that reports no transitions (here the
    Python engine's snapshots with ``transitions`` dropped, as a third-party engine's are)."""
    import dataclasses

    from agentscope.engines.base import MachineBase

    class Silent(MachineBase):
        def __init__(self) -> None:
            self.inner = pm.triage_machine()
            self.machine_id, self.version = self.inner.machine_id, self.inner.version

        @property
        def graph(self) -> Any:
            return self.inner.graph

        def initial(self, input: Any = None) -> Any:
            return dataclasses.replace(self.inner.initial(input), transitions=None)

        def restore(self, persisted: Any) -> Any:
            return self.inner.restore(persisted)

        def transition(self, snapshot: Any, event: Any) -> Any:
            return dataclasses.replace(self.inner.transition(snapshot, event), transitions=None)

        def child_session(self, snapshot: Any, actor_id: str) -> str | None:
            return self.inner.child_session(snapshot, actor_id)

    m = Silent()
    cov = coverage(Timeline(m, load_json("g_triage.main.log.json")), m)
    assert cov.inferred
    assert (cov.never_taken["event"] != "").all()  # eventless moves cannot be seen: never listed


def test_several_logs_add_up_and_keep_first_seen() -> None:
    m = pm.triage_machine()
    names = ["g_triage.main.log.json", "g_triage.second.log.json"]
    parts = [coverage(Timeline(m, load_json(n)), m) for n in names]
    both = coverage([load_json(n) for n in names], m)
    assert both.logs == ("log 0", "log 1")
    for sid in m.graph.nodes:
        assert both.visits[sid] == parts[0].visits[sid] + parts[1].visits[sid]
    row = both.states.set_index("state").loc["supportTriage.closed"]
    assert row["logs"] == 2 and row["first_log"] == "log 0"


@pytest.mark.parametrize("engine", ENGINES)
def test_store_wide_through_the_executor_equals_local(engine: str, machines: Any) -> None:
    store = FIXTURES / "g_triage.sqlite"
    spec = PY_TRIAGE if engine == "python" else f"{MACHINES / 'triage.mjs'}:triageMachine"
    with ThreadPoolExecutor(max_workers=2) as pool:
        wide = coverage(store, spec, executor=pool, chunk_size=1)
    m = machines(engine, "g_triage.main.log.json")
    threads = ["fork", "main", "second"]
    local = coverage([read_log(store, thread=t) for t in threads], m)
    assert wide.logs == tuple(threads)
    assert wide.visits == local.visits
    assert wide.transitions["taken"].tolist() == local.transitions["taken"].tolist()
    live = coverage(store, m, threads=["main"])  # a live machine counts here, serially
    assert live.visits == coverage(Timeline(m, read_log(store, thread="main")), m).visits
    assert agentscope.coverage is coverage


def test_store_wide_default_process_pool() -> None:
    wide = coverage(FIXTURES / "g_triage.sqlite", PY_TRIAGE, max_workers=2)
    m = pm.triage_machine()
    assert wide.visits == coverage(
        [read_log(FIXTURES / "g_triage.sqlite", thread=t) for t in ("fork", "main", "second")],
        m).visits


def test_heat_map_classes_states_by_visits() -> None:
    pytest.importorskip("graphviz")
    m = pm.triage_machine()
    cov = coverage(Timeline(m, load_json("g_triage.main.log.json")), m)
    svg = cov.heatmap_svg()
    from agentscope.render.chart import layout

    lay = layout(m.graph)
    most = max(v for s, v in cov.visits.items() if s != m.graph.root)
    checked = 0
    for sid, v in cov.visits.items():
        eid = lay.plan.states.get(sid)
        if eid is None or f'id="{eid}"' not in lay.svg:  # the root is the page, not a box
            continue
        checked += 1
        cls = "as-unvisited" if v == 0 else f"as-heat-{heat_bucket(v, most)}"
        assert re.search(rf'id="{re.escape(eid)}" class="[^"]*\b{cls}\b', svg) or re.search(
            rf'class="[^"]*\b{cls}\b[^"]*" id="{re.escape(eid)}"', svg), (sid, cls)
    assert checked >= len(m.graph.nodes) - 2
    # removing the added classes gives back the layout byte for byte
    bare = re.sub(r" as-(?:heat-\d|unvisited)", "", coverage_svg(m.graph, cov.visits, chart=lay,
                                                                  style=False))
    assert lay.svg in bare
    assert "never visited" in cov._repr_html_()
    assert heat_bucket(0, 10) == 0 and heat_bucket(10, 10) == 5 and heat_bucket(1, 1000) == 1


def test_bad_inputs() -> None:
    m = pm.triage_machine()
    with pytest.raises(TypeError, match="coverage takes"):
        coverage(42, m)
    with pytest.raises(agentscope.errors.ThreadNotFoundError):
        coverage(FIXTURES / "g_triage.sqlite", PY_TRIAGE, threads=["nope"])


def test_static_page_escapes_log_content(tmp_path: Any) -> None:
    m = pm.counter_machine()
    log = load_json("a_counter.log.json")
    log[3] = dict(log[3], event={"type": "<script>alert(1)</script>"})
    page = coverage(Timeline(m, log), m).to_html(title="<script>x</script>")
    assert "<script>" not in page and "&lt;script&gt;x" in page
    assert page.startswith("<!doctype html>") and "never visited" in page
    (tmp_path / "c.html").write_text(page, encoding="utf-8")

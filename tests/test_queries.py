"""Questions about a history: ``Timeline.states/find/find_all/next_change/last_change`` and
``check``, against brute force on the real fixture logs (``timeline[n]`` for every n,
``replay(entries[:n+1])`` at random n), with both engines: the Python ports
(``agentscope.examples.python_machines``) and the real XState modules through Node."""

from __future__ import annotations

import copy
import random
from collections.abc import Callable, Iterator
from typing import Any

import pandas as pd
import pytest

import agentscope
from agentscope._query_lang import UNDEFINED, Env, compile_expression, js_equal, value_string
from agentscope.errors import QueryError
from agentscope.examples import python_machines as pm
from agentscope.frames import Frame
from agentscope.log.entry import event_type, recorded_at_ms
from agentscope.pipeline import Timeline, replay
from agentscope.queries import VIOLATION_COLUMNS, check
from tests.conftest import MACHINES, load_json, node_ready
from tests.test_fold import Counting

LOGS = {
    # log -> (python factory, node module, node export)
    "a_counter.log.json": ("counter_machine", "counter.mjs", "counterMachine"),
    "c_fork_memory.fork.log.json": ("counter_machine", "counter.mjs", "counterMachine"),
    "e_bridge.v1.log.json": ("ticket_v1", "ticket.mjs", "ticketV1"),
    "e_bridge.v2.log.json": ("ticket_v2", "ticket.mjs", "ticketV2"),
    "g_triage.main.log.json": ("triage_machine", "triage.mjs", "triageMachine"),
    "g_triage.fork.log.json": ("triage_machine", "triage.mjs", "triageMachine"),
}
ENGINES = ["python", pytest.param("node", marks=pytest.mark.skipif(
    not node_ready(), reason="needs node and `npm ci` (xstate)"))]


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


def _ctx(f: Frame, *keys: str) -> Any:
    """Brute-force path lookup on a frame's context (missing -> UNDEFINED)."""
    cur: Any = f.context
    for k in keys:
        if not isinstance(cur, dict) or k not in cur:
            return UNDEFINED
        cur = cur[k]
    return cur


def _num(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool)


# expression -> the same question asked directly of a Frame
QUESTIONS: dict[str, Callable[[Frame], bool]] = {
    "context.count > 1": lambda f: _num(_ctx(f, "count")) and _ctx(f, "count") > 1,
    "context.rejections >= 1": lambda f: _num(_ctx(f, "rejections")) and _ctx(f, "rejections") >= 1,
    "event.type == 'APPROVE' and context.rejections >= 1": lambda f: (
        f.event_type == "APPROVE" and _num(_ctx(f, "rejections")) and _ctx(f, "rejections") >= 1),
    "context.queue.length < 3": lambda f: isinstance(_ctx(f, "queue"), list) and len(
        _ctx(f, "queue")) < 3,
    "in('working.escalating')": lambda f: f.persisted is not None and isinstance(f.value, dict)
        and f.value.get("working") == "escalating",
    "not (status == 'active')": lambda f: f.status != "active",
    "event.type == 'INC' || event.type == 'DEC'": lambda f: f.event_type in ("INC", "DEC"),
    "event.type == 'COMMENT' or event.type == 'RESOLVE'": lambda f: f.event_type in (
        "COMMENT", "RESOLVE"),
    "context.nothing.here == undefined": lambda f: f.persisted is not None,
    "verdict != 'verified'": lambda f: f.verdict.value != "verified",
    "index >= 3 and !in('#supportTriage.paused')": lambda f: f.index >= 3 and not (
        isinstance(f.value, str) and f.value == "paused"),
}


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("name", sorted(LOGS))
def test_find_equals_a_scan_of_every_frame(name: str, engine: str, machines: Any) -> None:
    m = machines(engine, name)
    log = load_json(name)
    tl = Timeline(m, log, checkpoint_every=7)
    frames = [tl[n] for n in range(len(tl))]
    hits_any = 0
    for expr, brute in QUESTIONS.items():
        if "in(" in expr and m.machine_id != "supportTriage":
            with pytest.raises(QueryError, match="has no such state"):
                tl.find(expr)
            continue
        want = [f.index for f in frames if brute(f)]
        hits_any += bool(want)
        assert tl.find_all(expr) == want, expr
        assert tl.find(expr) == (want[0] if want else None), expr
        for start in (1, len(tl) // 2):
            later = [i for i in want if i >= start]
            assert tl.find(expr, start=start) == (later[0] if later else None), (expr, start)
    assert hits_any >= 2
    # a callable sees exactly the frames timeline[n] returns
    seen: list[Frame] = []
    assert tl.find(lambda f: seen.append(f) and False) is None
    assert seen == frames
    target = frames[len(frames) // 2]
    assert tl.find(lambda f: f.computed_hash == target.computed_hash) == next(
        f.index for f in frames if f.computed_hash == target.computed_hash)


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("name", sorted(LOGS))
def test_questions_read_the_one_fold(name: str, engine: str, machines: Any) -> None:
    """A Timeline that keeps every state (the default) answers states/find/check from its pass's
    snapshot store: no entry is applied to the engine again. A sparse one folds once more,
    continuously (at most one application per entry, not one seek per step)."""
    log = load_json(name)
    m = Counting(machines(engine, name))
    tl = Timeline(m, log)
    folded = m.applied
    assert folded == len(log)
    df = tl.states(["context", "/status"])
    assert len(df) == len(log) and df["status"].notna().all()
    tl.find("index < 0")
    tl.find_all(lambda f: f.status == "active")
    tl.next_change("context")
    tl.last_change("context")
    check(tl, {"never": "index < 0"}, loop=3, stuck=3600.0)
    agentscope.coverage(tl, machines(engine, name))
    assert m.applied == folded, f"questions applied {m.applied - folded} entries again"

    sparse_m = Counting(machines(engine, name))
    sparse = Timeline(sparse_m, log, checkpoint_every=4)
    folded = sparse_m.applied
    assert folded == len(log)
    pd.testing.assert_frame_equal(sparse.states(["context", "/status"]), df)
    assert folded < sparse_m.applied <= 2 * folded


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("name", sorted(LOGS))
def test_states_rows_equal_replay_of_each_prefix(name: str, engine: str, machines: Any) -> None:
    m = machines(engine, name)
    log = load_json(name)
    tl = Timeline(m, log, checkpoint_every=5)
    paths = ["context.count", "context.queue.length", "/context/rejections", "context.nope",
             "event.type"]
    df = tl.states(paths)
    assert list(df.columns) == ["index", "event_type", "verdict", "status", "value", "active",
                                *paths]
    assert len(df) == len(log)
    rng = random.Random(len(log))
    picks = sorted({0, len(log) - 1, *rng.sample(range(len(log)), min(8, len(log)))})
    order = list(m.graph.nodes)
    for n in picks:
        p = replay(m, log[: n + 1]).persisted
        row = df.iloc[n]
        assert row["index"] == n
        assert row["event_type"] == event_type(log[n])
        assert row["verdict"] == tl[n].verdict.value
        assert row["status"] == p["status"]
        assert row["value"] == value_string(p["value"])
        assert row["active"] == tuple(sorted(m.graph.active_ids(p["value"]), key=order.index))
        ctx = p["context"]
        for path, key in (("context.count", "count"), ("/context/rejections", "rejections")):
            if key in ctx:
                assert row[path] == ctx[key]
            else:
                assert row[path] is pd.NA
        q = ctx.get("queue")
        assert (row["context.queue.length"] == len(q)) if isinstance(q, list) else (
            row["context.queue.length"] is pd.NA)
        assert row["context.nope"] is pd.NA
        assert row["event.type"] == event_type(log[n])


def test_states_value_string_and_dtypes() -> None:
    m = pm.triage_machine()
    tl = Timeline(m, load_json("g_triage.main.log.json"))
    df = tl.states(["context.rejections", "context.current.id", "in('working.escalating')"])
    assert df.loc[1, "value"] == "working.analyzing.{classification:running,knowledge:searching}"
    assert df.loc[0, "value"] == "standby"
    assert df["context.rejections"].dtype == "Int64"
    assert df["context.current.id"].dtype == "string"
    assert df["in('working.escalating')"].dtype == "boolean"
    assert df.loc[4, "in('working.escalating')"] is True or bool(df.loc[4, "in('working.escalating')"])
    assert df["active"].iloc[0] == ("supportTriage", "supportTriage.standby")
    assert df.loc[90, "status"] == "done"
    # status done still lists the states of its value
    assert df.loc[90, "active"] == ("supportTriage", "supportTriage.closed")
    small = tl.states("context.rejections", value=False)
    assert list(small.columns) == ["index", "event_type", "verdict", "status", "context.rejections"]


def test_states_keep_lone_surrogate_event_types_and_state_names() -> None:
    """Lone surrogates (legal JS strings) in event types and state names stay exact in the
    categorical columns (Arrow-backed strings refuse them)."""
    from agentscope.engines.statechart import StatechartMachine
    from agentscope.recorder import Recorder

    m = StatechartMachine({"id": "odd", "initial": "\ud800a", "states": {
        "\ud800a": {"on": {"\udc00GO": "b\udc00"}}, "b\udc00": {}}})
    rec = Recorder(m)
    rec.send({"type": "\udc00GO"})
    rec.send({"type": "INC"})
    df = Timeline(m, rec.entries).states()
    assert list(df["event_type"]) == ["@agent.init", "\udc00GO", "INC"]
    assert list(df["value"]) == ["\ud800a", "b\udc00", "b\udc00"]
    assert str(df["event_type"].dtype) == str(df["value"].dtype) == "category"
    assert sorted(df["value"].cat.categories) == ["b\udc00", "\ud800a"]


@pytest.mark.parametrize("engine", ENGINES)
def test_next_and_last_change_equal_timeline_changes(engine: str, machines: Any) -> None:
    name = "g_triage.main.log.json"
    m = machines(engine, name)
    tl = Timeline(m, load_json(name), checkpoint_every=16)
    for path in ("/context/rejections", "/context/queue", "/value"):
        changed = tl.changes(path)["index"].tolist()
        assert changed, path
        assert tl.next_change(path) == changed[0]
        for n in (0, 10, 40, changed[-1]):
            later = [i for i in changed if i > n]
            assert tl.next_change(path, after=n) == (later[0] if later else None), (path, n)
            earlier = [i for i in changed if i < n]
            assert tl.last_change(path, before=n) == (earlier[-1] if earlier else None), (path, n)
        assert tl.last_change(path) == changed[-1]
    # dotted paths and pointers agree
    assert tl.next_change("context.rejections", after=5) == tl.next_change(
        "/context/rejections", after=5)
    q = [len(f.context["queue"]) for f in tl]
    brute = next(i for i in range(11, len(q)) if q[i] != q[i - 1])
    assert tl.next_change("context.queue.length", after=10) == brute


def test_a_missing_frame_after_a_version_bridge_without_machine() -> None:
    v1, v2 = load_json("e_bridge.v1.log.json"), load_json("e_bridge.v2.log.json")
    tl = Timeline(pm.ticket_v1(), v1 + v2)  # the v2 segment has no machine
    df = tl.states(["context.comments"])
    assert df["status"].iloc[: len(v1)].notna().all()
    assert df["status"].iloc[len(v1):].isna().all()
    assert df["value"].iloc[len(v1):].isna().all()
    assert tl.find_all("status == undefined") == list(range(len(v1), len(v1) + len(v2)))
    assert tl.find_all(lambda f: f.persisted is None) == list(range(len(v1), len(v1) + len(v2)))


# ---------------------------------------------------------------------------------------------
# The expression language itself


def _env(persisted: Any = None, event: Any = None) -> Env:
    entry = {"index": 0, "event": event or {"type": "E"}}
    return Env(0, entry, persisted, "verified", None if persisted is None else value_string(
        persisted.get("value")))


@pytest.mark.parametrize(("expr", "want"), [
    ("context.a == 1", True),
    ("context.a == 1.0", True),
    ("context.a == '1'", False),
    ("context.t == 1", False),
    ("context.t == true", True),
    ("context.missing == undefined", True),
    ("context.missing == null", False),
    ("context.n == null", True),
    ("context.missing > 0", False),
    ("context.missing <= 0", False),
    ("context.n >= 0", False),
    ("context.s.length == 2", True),  # "😀" is two UTF-16 code units
    ("context.list.length == 3", True),
    ("context.list[1] == 'b'", True),
    ("context['odd key'] == 5", True),
    ("context.obj == context.obj2", True),
    ("context.list == ['a']", None),  # array literals are not in the grammar
    ("context.nan == context.nan", False),
    ("context.nan != context.nan", True),
    ("'\\uD83D\\uDE00' == context.s", True),
    ("'\\uFFFF' < context.s", False),  # UTF-16 order: U+FFFF sorts after a surrogate pair
    ("context.a and context.missing", False),
    ("context.missing or context.a", True),
    ("!context.zero", True),
    ("not context.empty", True),
    ("context.emptylist", True),
    ("value == 'a.{b:c,d:e}'", True),
    ("status == 'active'", True),
    ("-1 < context.a", True),
])
def test_expression_semantics(expr: str, want: bool | None) -> None:
    p = {"status": "active", "value": {"a": {"d": "e", "b": "c"}},
         "context": {"a": 1, "t": True, "n": None, "s": "\U0001F600", "list": ["a", "b", "c"],
                     "odd key": 5, "obj": {"x": [1, {"y": 2}]}, "obj2": {"x": [1.0, {"y": 2}]},
                     "nan": float("nan"), "zero": 0, "empty": "", "emptylist": []}}
    if want is None:
        with pytest.raises(QueryError):
            compile_expression(expr)
        return
    assert compile_expression(expr).holds(_env(p)) is want


@pytest.mark.parametrize(("expr", "where"), [
    ("context.a >", "end"),
    ("context.a = 1", "column 11"),
    ("__import__('os')", "unknown name '__import__'"),
    ("context.a < 1 < 2", "do not chain"),
    ("in(context.a)", "one quoted state path"),
    ("", "empty expression"),
    ("context.a; 1", "unexpected character ';'"),
    ("context.", "member name"),
])
def test_expression_errors_name_the_column(expr: str, where: str) -> None:
    with pytest.raises(QueryError, match=where) as info:
        compile_expression(expr)
    assert info.value.expression == expr
    assert "^" in str(info.value)


def test_log_content_is_never_evaluated() -> None:
    # a string in the log that looks like code is only ever compared as data
    p = {"status": "active", "value": "x", "context": {"code": "__import__('os').system('x')"}}
    assert compile_expression("context.code == \"__import__('os').system('x')\"").holds(_env(p))
    assert js_equal(compile_expression("context.code")(_env(p)), p["context"]["code"])


def test_unknown_state_in_in_is_a_query_error() -> None:
    tl = Timeline(pm.triage_machine(), load_json("g_triage.main.log.json"))
    with pytest.raises(QueryError, match=r"no such state.*'standby'"):
        tl.find("in('working.nowhere')")
    assert tl.find("in('#supportTriage.working.escalating')") == tl.find("in('working.escalating')")


# ---------------------------------------------------------------------------------------------
# Invariants


@pytest.mark.parametrize("engine", ENGINES)
def test_check_user_invariants_equal_brute_force(engine: str, machines: Any) -> None:
    name = "g_triage.main.log.json"
    m = machines(engine, name)
    tl = Timeline(m, load_json(name))
    frames = list(tl)
    df = check(tl, {"no rejection": "context.rejections == 0",
                    "queue bounded": lambda f: len(f.context["queue"]) <= 6})
    assert tuple(df.columns) == VIOLATION_COLUMNS
    want = sorted(
        [(f.index, "no rejection") for f in frames if f.context["rejections"] != 0]
        + [(f.index, "queue bounded") for f in frames if len(f.context["queue"]) > 6],
        key=lambda r: (r[0], r[1] != "no rejection"),
    )
    assert list(zip(df["index"], df["invariant"], strict=True)) == want
    assert df["value"].tolist() == [value_string(frames[i].value) for i, _ in want]
    assert all("does not hold after entry" in msg for msg in df["message"])
    assert agentscope.check is check
    empty = check(tl, {"always": "true"})
    assert empty.empty and tuple(empty.columns) == VIOLATION_COLUMNS


def _counter_with_ignored_events(times: int) -> list[dict[str, Any]]:
    """The real counter log with ``times`` more events the machine ignores after its end."""
    log = load_json("a_counter.log.json")
    last = log[-1]
    out = copy.deepcopy(log)
    for k in range(times):
        e = copy.deepcopy(last)
        e["index"] = len(out)
        e["id"] = f"evt_extra_{k}"
        e["event"] = {"type": "NOT_HANDLED"}
        e.pop("verification", None)
        out.append(e)
    return out


@pytest.mark.parametrize("engine", ENGINES)
def test_loop_detector(engine: str, machines: Any) -> None:
    m = machines(engine, "a_counter.log.json")
    real = Timeline(m, load_json("a_counter.log.json"))
    # brute force on the real log: no (value, context) recurs 3 times without a new state between
    seen: list[Any] = []
    run: dict[str, int] = {}
    expected: list[int] = []
    for f in real:
        key = repr((value_string(f.value), sorted(f.context.items())))
        if key not in seen:
            seen.append(key)
            run = {key: 1}
            reported = False
        else:
            run[key] = run.get(key, 0) + 1
            if run[key] >= 3 and not reported:
                expected.append(f.index)
                reported = True
    got = check(real, loop=3)
    assert got["index"].tolist() == expected
    tl = Timeline(m, _counter_with_ignored_events(4))
    n = len(load_json("a_counter.log.json"))
    df = check(tl, loop=3)
    # the last real state recurs at n, n+1: its third occurrence (n+1) completes the loop
    assert (n + 1) in df["index"].tolist()
    row = df[df["index"] == n + 1].iloc[0]
    assert row["invariant"] == "loop" and "recurred 3 times" in row["message"]
    with pytest.raises(ValueError, match="loop must be an int >= 2"):
        check(tl, loop=1)


@pytest.mark.parametrize("engine", ENGINES)
def test_stuck_detector_uses_recorded_time(engine: str, machines: Any) -> None:
    name = "g_triage.main.log.json"
    m = machines(engine, name)
    log = load_json(name)
    tl = Timeline(m, log)

    frames = list(tl)
    limit = 0.004
    want: list[int] = []
    since: tuple[str, int] | None = None
    reported = False
    for f in frames:
        v = value_string(f.value)
        at = recorded_at_ms(f.entry)
        assert at is not None
        if since is None or since[0] != v:
            since, reported = (v, at), False
        elif not reported and f.status == "active" and (at - since[1]) / 1000 > limit:
            want.append(f.index)
            reported = True
    assert want, "the fixture has a stay longer than 4 ms"
    df = check(tl, stuck=limit)
    assert df["index"].tolist() == want
    assert set(df["invariant"]) == {"stuck"}
    import datetime as dt

    assert check(tl, stuck=dt.timedelta(milliseconds=4))["index"].tolist() == want
    assert check(tl, stuck=3600).empty

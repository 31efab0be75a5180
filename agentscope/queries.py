"""Questions about a replayed history: states as a DataFrame, "jump to when…", invariants.

:class:`agentscope.pipeline.Timeline` answers "what was the state at step n"; this module answers
the questions a notebook asks about the whole history:

- :func:`states` (``Timeline.states``): one row per entry with the state value, status, active
  state ids and any context paths asked for, as a :class:`pandas.DataFrame`;
- :func:`find`, :func:`find_all` (``Timeline.find``/``find_all``): the first / every step where a
  predicate holds, given as a Python callable on a :class:`~agentscope.frames.Frame` or as a
  small safe expression (``"context.retries > 3"``, ``"in('working.escalating')"``; the language
  is described in :mod:`agentscope._query_lang` and in docs/how-to/ask-questions.md);
- :func:`next_change`, :func:`last_change`: where a value at a path changed;
- :func:`check` (``agentscope.check``): named invariants over every step, with a built-in loop
  detector and a "stuck in a state longer than D of recorded time" rule, as a fixed-column
  violations DataFrame.

Every function reads the replayed states through :meth:`Timeline.steps`, the one walk of the
pass (a typed :class:`~agentscope.pipeline.Step` per entry): a timeline that keeps every state
(the default) gives them from its pass's snapshot store with no engine call, so
states/find/check never fold again;
a sparse one folds once, continuously, from the nearest checkpoint with the library's
``fold_segment``. Nothing here applies entries itself.
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from agentscope._query_lang import (
    UNDEFINED,
    Env,
    Expression,
    compile_expression,
    js_equal,
    js_truthy,
    resolve_state_ref,
    value_string,
)
from agentscope.errors import QueryError
from agentscope.jsondiff import ABSENT, resolve_pointer
from agentscope.log.entry import event_type, recorded_at_ms

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

    from agentscope.engines.base import Machine
    from agentscope.frames import Frame
    from agentscope.step import Step, StepSource

__all__ = [
    "VIOLATION_COLUMNS",
    "Predicate",
    "StateViews",
    "check",
    "find",
    "find_all",
    "last_change",
    "next_change",
    "states",
]

Predicate = str | Callable[["Frame"], Any]
"""An expression string or a callable taking a :class:`~agentscope.frames.Frame`."""

VIOLATION_COLUMNS: tuple[str, ...] = ("index", "invariant", "value", "message")
"""Columns of the DataFrame :func:`check` returns, in order."""


# ---------------------------------------------------------------------------------------------
# The walk: the one place queries read replayed states


class StateViews:
    """Per-walk caches over :meth:`Timeline.steps`: value strings and active-state sets keyed by
    value string, and the ``in(...)`` references resolved per machine (``coverage`` walks with
    one too)."""

    def __init__(self, refs: Sequence[str] = ()) -> None:
        self._active: dict[tuple[int, str], frozenset[str]] = {}
        self._values: dict[str, str] = {}
        self._refs = tuple(refs)
        self._resolved: dict[int, dict[str, str | None]] = {}

    def value(self, p: Mapping[str, Any]) -> str:
        s = value_string(p.get("value"))
        return self._values.setdefault(s, s)

    def active(self, m: Machine, value: str, p: Mapping[str, Any]) -> frozenset[str]:
        key = (id(m), value)
        got = self._active.get(key)
        if got is None:
            graph = m.graph
            ids = graph.active_ids(p.get("value"))
            got = frozenset(ids)
            self._active[key] = got
        return got

    def refs(self, m: Machine) -> dict[str, str | None]:
        got = self._resolved.get(id(m))
        if got is None:
            got = {r: resolve_state_ref(m.graph, r) for r in self._refs}
            self._resolved[id(m)] = got
        return got


def _env(step: Step, views: StateViews, *, active: bool) -> Env:
    entry = step.entry
    p = step.after
    verdict = str(step.verdict.value)
    if p is None or step.machine is None:
        return Env(step.index, entry, None, verdict)
    v = views.value(p)
    env = Env(step.index, entry, p, verdict, v)
    if active:
        env.active = views.active(step.machine, v, p)
        env.refs = views.refs(step.machine)
    return env


def _compile(tl: StepSource, source: str) -> Expression:
    """Compile ``source`` and check its ``in(...)`` states exist in one of ``tl``'s machines."""
    expr = compile_expression(source)
    machines = tl.segment_machines
    for ref in expr.state_refs:
        if machines and all(resolve_state_ref(m.graph, ref) is None for m in machines):
            g = machines[0].graph
            root = g.nodes[g.root]
            keys = ", ".join(repr(g.nodes[c].key) for c in root.children if c in g.nodes)
            raise QueryError(
                f"in({ref!r}): machine {machines[0].machine_id!r} has no such state (a path of "
                f"state keys from the root such as 'working.escalating', or '#id'; top-level "
                f"states: {keys})",
                expression=source,
            )
    return expr


# ---------------------------------------------------------------------------------------------
# Paths and predicates


def _path_fn(tl: StepSource, path: str) -> tuple[Callable[[Env], Any], bool]:
    """A column getter for ``path``: a JSON Pointer (``/context/queue``) into the persisted
    snapshot, or an expression (``context.queue.length``). Returns (getter, needs active)."""
    if not isinstance(path, str):
        raise TypeError(f"a path is a string; got {type(path).__name__}")
    if path.startswith("/") or path == "":

        def pointer(env: Env) -> Any:
            if env.persisted is None:
                return UNDEFINED
            got = resolve_pointer(env.persisted, path)
            return UNDEFINED if got is ABSENT else got

        return pointer, False
    expr = _compile(tl, path)
    return expr.fn, expr.uses_active


def _predicate(tl: StepSource, predicate: Predicate) -> tuple[Callable[[Step], bool], str]:
    """Turn a predicate into a test on a walk step; returns (test, label)."""
    if isinstance(predicate, str):
        expr = _compile(tl, predicate)
        views = StateViews(expr.state_refs)
        need = expr.uses_active

        def test_expr(step: Step) -> bool:
            return js_truthy(expr.fn(_env(step, views, active=need)))

        return test_expr, predicate
    if callable(predicate):
        fn = predicate

        def test_frame(step: Step) -> bool:
            return bool(fn(tl.frame_of(step)))

        return test_frame, getattr(predicate, "__name__", repr(predicate))
    raise TypeError(
        f"a predicate is an expression string or a callable on a Frame; got "
        f"{type(predicate).__name__}"
    )


# ---------------------------------------------------------------------------------------------
# Public functions (Timeline methods delegate here)


def states(tl: StepSource, paths: Sequence[str] | str | None = None, *, value: bool = True) -> pd.DataFrame:
    """The replayed state after every entry, one row per entry (``Timeline.states``).

    Parameters
    ----------
    tl : Timeline
    paths : sequence of str, optional
        One column per path: ``"context.queue.length"``-style (any expression of the query
        language, e.g. ``"context.retries > 3"``) or an RFC 6901 JSON Pointer into the persisted
        snapshot (``"/context/queue"``). The column is named by the path as given.
    value : bool
        Include the ``value`` and ``active`` columns (the slowest part; ``False`` skips them).

    Returns
    -------
    pandas.DataFrame
        ``len(tl)`` rows with columns ``index`` (int64), ``event_type``, ``verdict``, ``status``
        (categoricals; ``status`` is ``<NA>`` where the entry was not replayed), ``value`` (the
        state value as a stable string, e.g. ``working.analyzing.{classification:running,
        knowledge:searching}``, :func:`agentscope._query_lang.value_string`; ``<NA>`` when not
        replayed), ``active`` (tuple of the active state ids, root included, in the machine's
        document order; ``()`` when not replayed), then one column per path: JSON values as
        read (numbers, strings, lists, dicts, ``None`` for ``null``) with ``<NA>`` where the
        path is missing (JS ``undefined``). Columns holding only numbers, strings or booleans
        get pandas' nullable dtypes (``Int64``, ``Float64``, ``string``, ``boolean``).

    Notes
    -----
    Read from the timeline's snapshot store when it keeps every state (the default; no engine
    call), else one continuous fold of the log from its start (:meth:`Timeline.steps`) in large batches.
    Memory is the columns: a few tens of bytes per entry and path plus the values themselves (state value
    strings and active tuples are shared between equal states).

    Raises
    ------
    QueryError
        A path that does not parse, or an ``in(...)`` naming no state.
    """
    import numpy as np
    import pandas as pd

    path_list = [paths] if isinstance(paths, str) else list(paths or ())
    getters = [_path_fn(tl, p) for p in path_list]
    need_active = value or any(a for _, a in getters)
    refs: list[str] = []
    for p in path_list:
        if not p.startswith("/"):
            refs.extend(compile_expression(p).state_refs)
    views = StateViews(refs)
    n = len(tl)
    ev_col: list[str] = [""] * n
    verdict_col: list[str] = [""] * n
    status_col: list[Any] = [None] * n
    value_col: list[Any] = [None] * n
    active_col: list[tuple[str, ...]] = [()] * n
    path_cols: list[list[Any]] = [[pd.NA] * n for _ in path_list]
    order: dict[int, dict[str, int]] = {}
    tuples: dict[tuple[int, str], tuple[str, ...]] = {}
    types: dict[str, str] = {}
    for step in tl.steps():
        i = step.index
        env = _env(step, views, active=need_active)
        t = event_type(env.entry)
        ev_col[i] = types.setdefault(t, t)
        verdict_col[i] = env.verdict
        if env.persisted is not None:
            st = env.persisted.get("status")
            status_col[i] = st if isinstance(st, str) else None
            if value:
                value_col[i] = env.value
                assert step.machine is not None and env.active is not None and env.value is not None
                key = (id(step.machine), env.value)
                tup = tuples.get(key)
                if tup is None:
                    pos = order.get(id(step.machine))
                    if pos is None:
                        pos = {sid: k for k, sid in enumerate(step.machine.graph.nodes)}
                        order[id(step.machine)] = pos
                    tup = tuple(sorted(env.active, key=lambda s: pos.get(s, len(pos))))
                    tuples[key] = tup
                active_col[i] = tup
        for c, (fn, _) in enumerate(getters):
            got = fn(env)
            if got is not UNDEFINED:
                path_cols[c][i] = got
    data: dict[str, Any] = {
        "index": np.arange(n, dtype=np.int64),
        "event_type": _categorical(ev_col),
        "verdict": _categorical(verdict_col),
        "status": _categorical(status_col),
    }
    if value:
        data["value"] = _categorical(value_col)
        data["active"] = pd.Series(active_col, dtype=object)
    for p, col in zip(path_list, path_cols, strict=True):
        data[p] = _column(col)
    return pd.DataFrame(data)


def _categorical(values: list[Any]) -> pd.Categorical:
    """``pd.Categorical(values)``; when a value holds a lone UTF-16 surrogate (legal in a JS
    string: an event type, a state name), the same codes over categories in the ``"python"``
    string storage (Arrow's, pandas' default, holds only valid UTF-8)."""
    import numpy as np
    import pandas as pd

    try:
        return pd.Categorical(values)
    except UnicodeEncodeError:
        cats = sorted({v for v in values if isinstance(v, str)})
        code = {v: k for k, v in enumerate(cats)}
        return pd.Categorical.from_codes(
            [code.get(v, -1) if isinstance(v, str) else -1 for v in values],
            categories=pd.Index(cats, dtype=pd.StringDtype("python", na_value=np.nan)),
        )


def _column(values: list[Any]) -> pd.Series[Any]:
    """A path column: a nullable scalar dtype when every present value is one kind of scalar."""
    import pandas as pd

    kinds = set()
    for v in values:
        if v is pd.NA:
            continue
        if isinstance(v, bool):
            kinds.add("boolean")
        elif isinstance(v, int):
            kinds.add("Int64" if -(2**63) <= v < 2**63 else "object")
        elif isinstance(v, float):
            kinds.add("Float64")
        elif isinstance(v, str):
            kinds.add("string")
        else:
            kinds.add("object")
        if len(kinds) > 2:
            break
    if kinds == {"Int64", "Float64"}:
        kinds = {"Float64"}
    if len(kinds) == 1 and "object" not in kinds:
        try:
            return pd.Series(values, dtype=next(iter(kinds)))
        except (TypeError, ValueError):  # pragma: no cover - a value the dtype refuses
            pass
    return pd.Series(values, dtype=object)


def find(tl: StepSource, predicate: Predicate, *, start: int = 0) -> int | None:
    """The first position ``>= start`` where ``predicate`` holds, or ``None`` (``Timeline.find``).

    ``predicate`` is an expression string (``"context.retries > 3"``,
    ``"event.type == 'APPROVE' and context.rejections >= 2"``, ``"in('working.escalating')"``)
    or a callable taking the step's :class:`~agentscope.frames.Frame` (the same frame
    ``timeline[n]`` returns). Folds forward from ``start`` and stops at the first hit.

    Raises
    ------
    QueryError
        The expression does not parse or names no state; TypeError for another predicate type.
    """
    test, _ = _predicate(tl, predicate)
    for step in tl.steps(start):
        if test(step):
            return step.index
    return None


def find_all(
    tl: StepSource, predicate: Predicate, *, start: int = 0, stop: int | None = None
) -> list[int]:
    """Every position in ``start .. stop-1`` where ``predicate`` holds, ascending
    (``Timeline.find_all``); the predicate forms of :func:`find`."""
    test, _ = _predicate(tl, predicate)
    return [step.index for step in tl.steps(start, stop) if test(step)]


def _change_getter(tl: StepSource, path: str) -> Callable[[Step, StateViews], Any]:
    fn, need = _path_fn(tl, path)

    def get(step: Step, views: StateViews) -> Any:
        return fn(_env(step, views, active=need))

    return get


def _changed(before: Any, after: Any) -> bool:
    return not js_equal(before, after)


def next_change(tl: StepSource, path: str, *, after: int = -1) -> int | None:
    """The first position ``i > after`` where the value at ``path`` differs from the one after
    entry ``i - 1`` (``Timeline.next_change``), or ``None``.

    ``path`` is a path or expression as for :func:`states`. A segment's first entry compares
    with "absent" (``undefined``), as :meth:`Timeline.changes` does, so ``after=-1`` (the
    default) returns 0 when the path exists after the init entry. Equality is the query
    language's (:func:`agentscope._query_lang.js_equal`).
    """
    get = _change_getter(tl, path)
    views = StateViews(_refs_of(path))
    prev: Any = UNDEFINED
    seg = -1
    for step in tl.steps(max(0, after)):  # the step at `after` is the baseline
        cur = get(step, views) if step.after is not None else UNDEFINED
        if step.segment != seg:
            seg, prev = step.segment, UNDEFINED
        if step.index > after and _changed(prev, cur):
            return step.index
        prev = cur
    return None


def last_change(tl: StepSource, path: str, *, before: int | None = None) -> int | None:
    """The last position ``i < before`` (default: the end) where the value at ``path`` changed
    (``Timeline.last_change``), or ``None``; the rules of :func:`next_change`.

    ``last_change(path, before=n + 1)`` is the step that set the value seen at ``n``.
    """
    get = _change_getter(tl, path)
    views = StateViews(_refs_of(path))
    stop = len(tl) if before is None else min(before, len(tl))
    found: int | None = None
    prev: Any = UNDEFINED
    prev_seg = -1
    for step in tl.steps(0, stop):
        cur = get(step, views) if step.after is not None else UNDEFINED
        if step.segment != prev_seg:
            prev, prev_seg = UNDEFINED, step.segment
        if _changed(prev, cur):
            found = step.index
        prev = cur
    return found


def _refs_of(path: str) -> tuple[str, ...]:
    return () if path.startswith("/") or path == "" else compile_expression(path).state_refs


# ---------------------------------------------------------------------------------------------
# Invariants


def _seconds(d: float | _dt.timedelta) -> float:
    if isinstance(d, _dt.timedelta):
        return d.total_seconds()
    if isinstance(d, bool) or not isinstance(d, (int, float)) or d < 0:
        raise ValueError(f"stuck must be a non-negative number of seconds or a timedelta; got {d!r}")
    return float(d)


def check(
    tl: StepSource,
    invariants: Mapping[str, Predicate] | None = None,
    *,
    loop: int | None = None,
    stuck: float | _dt.timedelta | None = None,
) -> pd.DataFrame:
    """Check named invariants at every step of a timeline; return the violations.

    Parameters
    ----------
    tl : Timeline
    invariants : mapping of name to predicate, optional
        Each predicate (an expression string or a callable on a :class:`Frame`, as for
        :func:`find`) must hold after every replayed entry; every entry where it does not is a
        violation. Entries that were not replayed are not checked.
    loop : int, optional
        The built-in **loop detector** (invariant ``"loop"``): a violation where the same state
        value *and* context (compared by content) has recurred ``loop`` times since the last
        step that reached a state (value and context) never seen before in the segment, i.e.
        the machine goes round without progress: ``A A A`` (an event ignored over and over) or
        ``A B A B A``. Reported once per run, at the step that completes it. ``loop >= 2``.
    stuck : float seconds or timedelta, optional
        The built-in **stuck** rule (invariant ``"stuck"``): a violation at the first step at
        which the machine has been in the same state value for longer than ``stuck`` of
        recorded time (``recordedAt`` of that step minus that of the step that entered the
        value); once per stay. Only while ``status`` is ``"active"``.

    Returns
    -------
    pandas.DataFrame
        Columns :data:`VIOLATION_COLUMNS`: ``index`` (int64), ``invariant`` (its name),
        ``value`` (the state value string at that step) and ``message``; sorted by index, then
        in the order the invariants were given (user invariants, then ``loop``, ``stuck``).
        Empty (with those columns) when everything holds.

    Raises
    ------
    QueryError
        An expression does not parse or names no state.

    Examples
    --------
    >>> import agentscope as asc
    >>> from agentscope.examples import example_path
    >>> from agentscope.examples.python_machines import triage_machine
    >>> log = asc.read_log(example_path("g_triage.sqlite"), thread="fork")
    >>> tl = asc.Timeline(triage_machine(), log)
    >>> violations = asc.check(tl, {"one rejection": "context.rejections <= 1"}, loop=3)
    >>> violations["index"].tolist()
    [20, 21, 29, 30, 42, 43, 44]
    >>> print(violations.loc[0, "message"])
    'one rejection' does not hold after entry 20 (REJECT)
    """
    import pandas as pd

    tests: list[tuple[str, Callable[[Step], bool]]] = []
    for name, pred in (invariants or {}).items():
        test, _ = _predicate(tl, pred)
        tests.append((str(name), test))
    if loop is not None and (isinstance(loop, bool) or not isinstance(loop, int) or loop < 2):
        raise ValueError(f"loop must be an int >= 2 (repetitions); got {loop!r}")
    limit = None if stuck is None else _seconds(stuck)
    views = StateViews()
    rows: list[tuple[int, int, str, str, str]] = []
    order = {name: k for k, (name, _) in enumerate(tests)}
    order["loop"] = len(order)
    order["stuck"] = len(order)
    seen: set[int] = set()
    counts: dict[int, int] = {}
    run_reported = False
    since: tuple[str, int, int | None] | None = None  # (value, index, recordedAt ms)
    stuck_reported = False
    seg = -1
    for step in tl.steps():
        if step.after is None:
            continue
        if step.segment != seg:
            seg = step.segment
            seen, counts, run_reported = set(), {}, False
            since, stuck_reported = None, False
        v = views.value(step.after)
        for name, test in tests:
            ok = test(step)
            if not ok:
                rows.append((step.index, order[name], name, v,
                             f"{name!r} does not hold after entry {step.index} "
                             f"({event_type(step.entry)})"))
        if loop is not None:
            fp = hash(_fingerprint(v, step.after.get("context")))
            if fp not in seen:
                seen.add(fp)
                counts = {fp: 1}
                run_reported = False
            else:
                c = counts.get(fp, 0) + 1
                counts[fp] = c
                if c >= loop and not run_reported:
                    run_reported = True
                    rows.append((step.index, order["loop"], "loop", v,
                                 f"state {v!r} with the same context recurred {c} times with no "
                                 f"new state in between (loop >= {loop})"))
        if limit is not None:
            at = recorded_at_ms(step.entry)
            if since is None or since[0] != v:
                since, stuck_reported = (v, step.index, at), False
            elif (not stuck_reported and at is not None and since[2] is not None
                  and step.after.get("status") == "active"
                  and (at - since[2]) / 1000.0 > limit):
                stuck_reported = True
                rows.append((step.index, order["stuck"], "stuck", v,
                             f"in state {v!r} since entry {since[1]} for "
                             f"{(at - since[2]) / 1000.0:g} s of recorded time (> {limit:g} s)"))
    rows.sort(key=lambda r: (r[0], r[1]))
    return pd.DataFrame(
        {
            "index": pd.Series([r[0] for r in rows], dtype="int64"),
            "invariant": pd.Series([r[2] for r in rows], dtype=object),
            "value": pd.Series([r[3] for r in rows], dtype=object),
            "message": pd.Series([r[4] for r in rows], dtype=object),
        },
        columns=list(VIOLATION_COLUMNS),
    )


def _fingerprint(value: str, context: Any) -> bytes:
    """Value and context as bytes, equal exactly when both are equal (keys sorted)."""
    import orjson

    try:
        return value.encode("utf-8", "surrogatepass") + b"\x00" + orjson.dumps(
            context, option=orjson.OPT_SORT_KEYS)
    except TypeError:  # a lone surrogate or a non-JSON value: the canonical form handles them
        from agentscope.hashing import canonical_json

        return value.encode("utf-8", "surrogatepass") + b"\x00" + canonical_json(context).encode(
            "utf-8", "surrogatepass")

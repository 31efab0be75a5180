"""Coverage: which states and transitions of a machine a history exercised (one log or a store).

:func:`coverage` folds each log once (through a :class:`~agentscope.pipeline.Timeline` and the walk
of :mod:`agentscope.queries`) and counts, per state node, the entries after which it was active,
and per declared transition how often it was observed taken. A whole store runs through the
same ``concurrent.futures.Executor`` seam as :func:`agentscope.verify_store`
(:func:`agentscope.bulk.map_chunks`): a local process pool by default, or e.g. a Dask client's
``get_executor()``.

How a transition is *observed*: both engines report the transitions each step took
(:attr:`~agentscope.pipeline.Step.transitions`, every microstep: eventless ``always`` and
state-done ``onDone`` ones included), and each counts for its declared transition (a function
transition's resolved target is attributed to the declared one of its source and event, see
:func:`_attribute`). Only for an engine that reports nothing (a third-party
:class:`~agentscope.engines.base.Machine`, the Node engine with ``report_transitions=False``)
is a step's move inferred from the active states before and after it and the entry's event, by
:func:`agentscope.render.chart.taken_edges`; a step whose state value changed with no move
inferred is then listed as an undeclared ``(value before, event, value after)`` row, and
eventless and state-done transitions, which such a step cannot show, are not listed as never
taken (:attr:`Coverage.inferred`).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import Executor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from agentscope.errors import AgentscopeError, EngineError

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

    from agentscope.bulk import ChunkFailure, MachineSpec, StoreChunk
    from agentscope.engines.base import Graph, Machine
    from agentscope.pipeline.timeline import Timeline

__all__ = ["STATE_COLUMNS", "TRANSITION_COLUMNS", "Coverage", "coverage"]

STATE_COLUMNS: tuple[str, ...] = ("state", "visits", "first_index", "last_index", "logs", "first_log")
"""Columns of :attr:`Coverage.states`."""
TRANSITION_COLUMNS: tuple[str, ...] = (
    "source", "event", "target", "declared", "taken", "first_index", "last_index", "first_log")
"""Columns of :attr:`Coverage.transitions`."""

_UNOBSERVABLE = ("always", "onDone")


# ---------------------------------------------------------------------------------------------
# Counting one log


@dataclass
class _Counts:
    """What one or more logs showed: plain data (it crosses process boundaries)."""

    # state id -> [visits, first_index, last_index, logs, first_log]
    states: dict[str, list[Any]] = field(default_factory=dict)
    # (source, event, target) -> [taken, first_index, last_index, first_log]
    transitions: dict[tuple[str, str, str], list[Any]] = field(default_factory=dict)
    logs: list[str] = field(default_factory=list)
    inferred: bool = False  # some step's move was inferred (its engine reported none)

    def merge(self, other: _Counts) -> None:
        for sid, (v, fi, li, lg, fl) in other.states.items():
            cur = self.states.get(sid)
            if cur is None:
                self.states[sid] = [v, fi, li, lg, fl]
            else:
                cur[0] += v
                cur[3] += lg
                cur[2] = li  # first_index / first_log stay those of the earlier log
        for key, (t, fi, li, fl) in other.transitions.items():
            got = self.transitions.get(key)
            if got is None:
                self.transitions[key] = [t, fi, li, fl]
            else:
                got[0] += t
                got[2] = li
        self.logs.extend(other.logs)
        self.inferred = self.inferred or other.inferred


def _declared_moves(graph: Graph) -> list[tuple[str, str, str, str]]:
    """Every declared transition as (source, event, target, kind) moves, one per target, in
    document order; a targetless or dynamic transition is a move from its source to itself
    (how :func:`~agentscope.render.chart.taken_edges` reports it)."""
    out: list[tuple[str, str, str, str]] = []
    for t in graph.transitions:
        for target in (t.targets or (t.source,)):
            move = (t.source, t.event, target, t.kind)
            if move not in out:
                out.append(move)
    return out


def _attribute(
    graph: Graph,
    cache: dict[int, dict[tuple[str, str], list[str]]],
    source: str,
    event: str,
    target: str,
) -> tuple[str, str, str]:
    """The declared move an observed move (source, event, final target) belongs to: the
    declared transition of that source and event whose target is the observed one or an
    ancestor of it, else the first of that source and event in document order; the observed
    move itself when no declared transition has that source and event (undeclared)."""
    by = cache.get(id(graph))
    if by is None:
        by = {}
        for src, ev, tgt, _ in _declared_moves(graph):
            by.setdefault((src, ev), []).append(tgt)
        cache[id(graph)] = by
    targets = by.get((source, event))
    if not targets:
        return (source, event, target)
    for tgt in targets:
        if tgt == target or _is_ancestor(graph, tgt, target):
            return (source, event, tgt)
    return (source, event, targets[0])


def _is_ancestor(graph: Graph, a: str, b: str) -> bool:
    """Whether state ``a`` is a proper ancestor of state ``b``."""
    node = graph.nodes.get(b)
    while node is not None and node.parent is not None:
        if node.parent == a:
            return True
        node = graph.nodes.get(node.parent)
    return False


def _count_timeline(tl: Timeline, label: str) -> _Counts:
    from agentscope.queries import StateViews
    from agentscope.render.chart import taken_edges

    out = _Counts(logs=[label])
    views = StateViews()
    handlers: dict[int, dict[tuple[str, str], list[str]]] = {}
    prev_active: frozenset[str] | None = None
    prev_value: str | None = None
    seg = -1
    for step in tl.steps():
        p = step.after
        if p is None or step.machine is None:
            prev_active = None
            continue
        m = step.machine
        value = views.value(p)
        active = views.active(m, value, p)
        for sid in active:
            row = out.states.get(sid)
            if row is None:
                out.states[sid] = [1, step.index, step.index, 1, label]
            else:
                row[0] += 1
                row[2] = step.index
        if step.segment != seg:
            seg, prev_active, prev_value = step.segment, None, None
        keys: list[tuple[str, str, str]] = []
        if step.transitions is not None:  # what the engine took, microsteps included
            edges = m.graph.transitions
            for t in step.transitions:
                if t.edge is None:
                    continue
                d = edges[t.edge]
                targets = (t.targets if d.dynamic else d.targets) or (d.source,)
                keys.extend(_attribute(m.graph, handlers, d.source, d.event, x) for x in targets)
            keys = list(dict.fromkeys(keys))
        elif prev_active is not None and step.before is not None:
            out.inferred = True
            moves = taken_edges(m.graph, prev_active, active, step.event)
            keys = [_attribute(m.graph, handlers, e.source, e.event, e.target) for e in moves]
            if not keys and value != prev_value:
                keys = [(prev_value or "", step.event_type, value)]
        if keys:
            for key in keys:
                got = out.transitions.get(key)
                if got is None:
                    out.transitions[key] = [1, step.index, step.index, label]
                else:
                    got[0] += 1
                    got[2] = step.index
        prev_active, prev_value = active, value
    return out


# ---------------------------------------------------------------------------------------------
# The result


@dataclass(frozen=True)
class Coverage:
    """Visits per state and per transition of one machine over one or more logs.

    Attributes
    ----------
    machine_id : str
    graph : Graph
        The machine's statechart (for drawing the heat map).
    states : pandas.DataFrame
        One row per state node in document order (the root included), columns
        :data:`STATE_COLUMNS`: ``state`` (id), ``visits`` (int64: entries after which it was
        active, summed over the logs; an entry whose status is ``error`` or ``done`` still
        counts the states of its value), ``first_index``/``last_index`` (nullable Int64: entry
        positions in the log where it was first and last seen, in ``first_log`` for the first
        and in the last log that visited it for the last), ``logs`` (int64: logs that visited
        it), ``first_log`` (label of the first log that did: a thread id, a file, or
        ``"log <k>"``). Never-visited states have ``visits == 0``.
    transitions : pandas.DataFrame
        Columns :data:`TRANSITION_COLUMNS`: every declared transition (``declared`` True, in
        document order; ``target`` its target ids joined by spaces, ``""`` when targetless) and
        every undeclared observed change (``declared`` False: only where a move was inferred;
        source/target are then state value strings); ``taken`` (int64: steps that took it, each
        step counting a transition once), ``first_index``, ``last_index`` (Int64), ``first_log``.
    logs : tuple of str
        Labels of the logs counted, in order.
    inferred : bool
        Some step's move was inferred from the state change (its engine reported no
        transitions): eventless and state-done transitions then never count as never taken.

    Examples
    --------
    >>> import agentscope as asc
    >>> from agentscope.examples import example_path
    >>> from agentscope.examples.python_machines import triage_machine
    >>> machine = triage_machine()
    >>> logs = [asc.read_log(example_path("g_triage.sqlite"), thread=t) for t in ("main", "fork")]
    >>> cov = asc.coverage(logs, machine)
    >>> paused = cov.states.set_index("state").loc["supportTriage.paused"]
    >>> int(paused["visits"]), int(paused["logs"])  # entries after which it was active; logs
    (3, 2)
    """

    machine_id: str
    graph: Any = field(repr=False)
    states: pd.DataFrame = field(repr=False)
    transitions: pd.DataFrame = field(repr=False)
    logs: tuple[str, ...] = ()
    inferred: bool = False

    @property
    def never_visited(self) -> list[str]:
        """Ids of the states no counted entry left active."""
        df = self.states
        return [str(s) for s in df.loc[df["visits"] == 0, "state"]]

    @property
    def never_taken(self) -> pd.DataFrame:
        """Declared transitions never observed taken (rows of :attr:`transitions`; without the
        eventless and state-done ones when moves were :attr:`inferred`)."""
        df = self.transitions
        import pandas as pd

        hidden = {(src, ev, tgt) for src, ev, tgt, kind in _declared_moves(self.graph)
                  if self.inferred and (kind in _UNOBSERVABLE or not ev)}
        keys = list(zip(df["source"], df["event"], df["target"], strict=True))
        shown = pd.Series([k not in hidden for k in keys], index=df.index, dtype=bool)
        mask = df["declared"] & (df["taken"] == 0) & shown
        out: pd.DataFrame = df.loc[mask].reset_index(drop=True)
        return out

    @property
    def visits(self) -> dict[str, int]:
        """``{state id: visits}``."""
        return {str(s): int(v) for s, v in zip(self.states["state"], self.states["visits"],
                                                strict=True)}

    def heatmap_svg(self) -> str:
        """The statechart as SVG with states filled by visit count and never-visited states
        dashed and grey (:func:`agentscope.render.coverage.coverage_svg`)."""
        from agentscope.render.coverage import coverage_svg

        svg: str = coverage_svg(self.graph, self.visits)
        return svg

    def to_html(self, *, title: str | None = None) -> str:
        """A self-contained HTML page: the heat map, the never-visited states, the never-taken
        transitions and both tables (every log value escaped; no script, no network), drawn by
        :func:`agentscope.render.reprs.page_html`."""
        from agentscope.render.reprs import Heading, Items, Table, page_html

        never = self.never_taken
        everything = 1_000_000  # a page holds whole tables (a notebook repr holds the first rows)
        return page_html(title or f"coverage of {self.machine_id}", [
            *self._blocks(),
            Heading(f"never visited ({len(self.never_visited)})"),
            Items(self.never_visited, limit=everything),
            Heading(f"declared transitions never taken ({len(never)})"),
            Table.of(never, limit=everything),
            Heading("states"),
            Table.of(self.states, limit=everything),
            Heading("transitions"),
            Table.of(self.transitions, limit=everything),
        ])

    def _blocks(self) -> list[Any]:
        from agentscope.render.reprs import Bold, Markup, Para, Pre

        try:
            svg: Any = Markup(self.heatmap_svg())
        except Exception as err:  # drawing needs graphviz; the tables do not
            svg = Pre(f"heat map unavailable: {err}")
        seen = int((self.states["visits"] > 0).sum())
        return [
            Para(Bold(f"coverage of {self.machine_id}"),
                 f": {seen}/{len(self.states)} states visited over {len(self.logs)} log(s)"),
            svg,
        ]

    def _repr_html_(self) -> str:
        """The summary line and the heat map (:func:`agentscope.render.reprs.repr_html`)."""
        from agentscope.render.reprs import guarded

        return guarded(self, "coverage", self._blocks)

    def __repr__(self) -> str:
        seen = int((self.states["visits"] > 0).sum())
        declared = self.transitions[self.transitions["declared"]]
        taken = int((declared["taken"] > 0).fillna(False).sum())
        return (f"<Coverage {self.machine_id}: {seen}/{len(self.states)} states visited, "
                f"{taken}/{len(declared)} declared transitions taken, {len(self.logs)} log(s)>")


def _result(machine_id: str, graph: Graph, counts: _Counts) -> Coverage:
    import pandas as pd

    srows = []
    for sid in graph.nodes:
        got = counts.states.get(sid)
        if got is None:
            srows.append((sid, 0, None, None, 0, None))
        else:
            srows.append((sid, got[0], got[1], got[2], got[3], got[4]))
    for sid, got in counts.states.items():  # a log naming states this graph does not have
        if sid not in graph.nodes:
            srows.append((sid, got[0], got[1], got[2], got[3], got[4]))
    states = pd.DataFrame(srows, columns=list(STATE_COLUMNS)).astype(
        {"state": object, "visits": "int64", "first_index": "Int64", "last_index": "Int64",
         "logs": "int64", "first_log": object})
    trows = []
    declared = _declared_moves(graph)
    seen: set[tuple[str, str, str]] = set()
    for source, event, target, _kind in declared:
        key = (source, event, target)
        seen.add(key)
        got = counts.transitions.get(key)
        trows.append((source, event, target, True, got[0] if got else 0,
                      got[1] if got else None, got[2] if got else None, got[3] if got else None))
    for key, got in counts.transitions.items():
        if key not in seen:
            trows.append((*key, False, got[0], got[1], got[2], got[3]))
    transitions = pd.DataFrame(trows, columns=list(TRANSITION_COLUMNS)).astype(
        {"source": object, "event": object, "target": object, "declared": bool,
         "taken": "int64", "first_index": "Int64", "last_index": "Int64", "first_log": object})
    return Coverage(machine_id, graph, states, transitions, tuple(counts.logs), counts.inferred)


# ---------------------------------------------------------------------------------------------
# Entry point


def _label(log: Any, k: int) -> str:
    src = getattr(getattr(log, "log", log), "source", None)
    thread = getattr(getattr(log, "log", log), "thread", None)
    if isinstance(src, str) and src:
        return f"{src}#{thread}" if isinstance(thread, str) and thread else src
    return f"log {k}"


def coverage(
    logs_or_store: Any,
    machine: Any,
    *,
    machines: Mapping[str, Any] | None = None,
    threads: Iterable[str] | None = None,
    executor: Executor | None = None,
    max_workers: int | None = None,
    chunk_size: int | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> Coverage:
    """Which states and transitions of ``machine`` a history exercised.

    Parameters
    ----------
    logs_or_store : Timeline, EventLog, entries, a path, or a sequence of them
        One log (a :class:`~agentscope.pipeline.Timeline` is used as is, so nothing is folded
        twice in a notebook), several logs, or a SQLite store (spec §5.2): every thread of it
        (or ``threads``), counted across the store.
    machine : Machine, MachineSpec or str
        The machine. For a store, a :class:`~agentscope.bulk.MachineSpec` (or its text form)
        runs store-wide through the executor seam of :func:`agentscope.verify_store`; a live
        machine reads and counts the threads here, one after another.
    machines : mapping of version to Machine or spec, optional
        Machines by ``machineVersion`` for version-bridged logs (spec §1.5); for a store with
        an executor, specs.
    threads, executor, max_workers, chunk_size, progress
        As for :func:`agentscope.verify_store` (store only).

    Returns
    -------
    Coverage
        ``.states``, ``.transitions`` (DataFrames), ``.never_visited``, ``.never_taken``, and a
        heat map of the statechart (``.heatmap_svg()``, shown by the notebook).

    Raises
    ------
    TypeError
        An input of another type.
    MachineLoadError, EngineError, LogFormatError, ThreadNotFoundError
        As :func:`agentscope.verify_store` for a store; reading errors for a path.

    Examples
    --------
    >>> import agentscope as asc
    >>> from agentscope.examples import example_path
    >>> from agentscope.examples.python_machines import triage_machine
    >>> machine = triage_machine()
    >>> log = asc.read_log(example_path("g_triage.sqlite"), thread="fork")
    >>> cov = asc.coverage(asc.Timeline(machine, log), machine)
    >>> cov
    <Coverage supportTriage: 15/19 states visited, 18/20 declared transitions taken, 1 log(s)>
    >>> cov.never_visited[:2]
    ['supportTriage.working.hist', 'supportTriage.working.selecting']
    """
    from agentscope.bulk import MachineSpec, as_spec
    from agentscope.stores import holds_threads, read_log

    if holds_threads(logs_or_store):
        store = os.fspath(logs_or_store)
        if isinstance(machine, (MachineSpec, str, os.PathLike)):
            spec = as_spec(machine)
            extra = tuple((str(v), as_spec(s)) for v, s in (machines or {}).items())
            return _store_coverage(store, spec, extra, threads, executor, max_workers,
                                   chunk_size, progress)
        from agentscope.bulk import store_threads

        wanted = store_threads(store, threads)
        return _local(machine, machines, [(read_log(store, thread=t), t) for t in wanted])
    items: Sequence[Any]
    if isinstance(logs_or_store, (str, os.PathLike)) or _is_one_log(logs_or_store):
        items = [logs_or_store]
    elif isinstance(logs_or_store, Sequence):
        items = list(logs_or_store)
    else:
        raise TypeError(
            "coverage takes a Timeline, an EventLog, a list of entries, a log or store path, or a "
            f"sequence of those; got {type(logs_or_store).__name__}"
        )
    if isinstance(machine, (MachineSpec, str, os.PathLike)):
        live = as_spec(machine).load()
        try:
            return _local(live, machines, [(x, None) for x in items])
        finally:
            live.close()
    return _local(machine, machines, [(x, None) for x in items])


def _is_one_log(x: Any) -> bool:
    from agentscope.pipeline import Timeline

    if isinstance(x, Timeline) or hasattr(x, "entries"):
        return True
    return isinstance(x, Sequence) and bool(x) and isinstance(x[0], Mapping)


def _local(machine: Machine, machines: Mapping[str, Any] | None,
           items: Sequence[tuple[Any, str | None]]) -> Coverage:
    from agentscope.pipeline import Timeline
    from agentscope.stores import read_log

    total = _Counts()
    for k, (x, label) in enumerate(items):
        if isinstance(x, (str, os.PathLike)):
            x = read_log(x)
        tl = x if isinstance(x, Timeline) else Timeline(machine, x, machines=machines)
        total.merge(_count_timeline(tl, label or _label(x, k)))
    return _result(machine.machine_id, machine.graph, total)


def _store_coverage(
    store: str,
    spec: MachineSpec,
    extra: tuple[tuple[str, MachineSpec], ...],
    threads: Iterable[str] | None,
    executor: Executor | None,
    max_workers: int | None,
    chunk_size: int | None,
    progress: Callable[[int, int], None] | None,
) -> Coverage:
    from agentscope.bulk import map_chunks, store_threads

    wanted = store_threads(store, threads)
    by_thread: dict[str, _Counts] = {}
    for result in map_chunks(_coverage_chunk, store, wanted, spec, extra, executor=executor,
                             max_workers=max_workers, chunk_size=chunk_size, progress=progress):
        for thread, counts in result:
            by_thread[thread] = counts
    total = _Counts()
    for t in wanted:  # merged in store order, whatever order the chunks finished in
        total.merge(by_thread[t])
    m = spec.load()
    try:
        return _result(m.machine_id, m.graph, total)
    finally:
        m.close()


def _coverage_chunk(chunk: StoreChunk) -> list[tuple[str, _Counts]] | ChunkFailure:
    """Worker side: count each thread of ``chunk`` (a module-level function, so it pickles)."""
    from agentscope.bulk import ChunkFailure, worker_machine
    from agentscope.pipeline import Timeline
    from agentscope.stores import read_log

    try:
        machine = worker_machine(chunk.machine)
        machines = {v: worker_machine(s) for v, s in chunk.machines} or None
    except AgentscopeError as exc:
        return ChunkFailure(type(exc).__name__, str(exc))
    out: list[tuple[str, _Counts]] = []
    for thread in chunk.threads:
        try:
            log = read_log(chunk.store, thread=thread)
            out.append((thread, _count_timeline(Timeline(machine, log, machines=machines),
                                                thread)))
        except EngineError as exc:
            return ChunkFailure(type(exc).__name__, f"thread {thread!r}: {exc}")
        except AgentscopeError as exc:
            return ChunkFailure(type(exc).__name__, f"thread {thread!r}: {exc}")
    return out

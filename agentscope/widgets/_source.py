"""Where the views get their frames: a :class:`~agentscope.pipeline.Timeline`, or the entries alone.

Private helpers shared by :class:`~agentscope.widgets.TimeTravel`, :class:`~agentscope.widgets.ForkView`
and the static player.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from agentscope.engines.base import Graph
from agentscope.frames import Frame, Verdict
from agentscope.log.entry import AGENT_USAGE, entry_id, event_of, event_type, recorded_hash
from agentscope.pipeline.snapshots import DEFAULT_CACHE_BYTES, FrameLRU
from agentscope.render.chart import moves_from_taken, taken_edges
from agentscope.render.dot import ObservedEdge

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd

__all__ = [
    "EntriesOnly",
    "FrameCache",
    "FrameSource",
    "StepInfo",
    "as_entries",
    "entries_frame",
    "iter_frames",
    "make_fork_timelines",
    "make_timeline",
    "step_info",
    "usage_series",
]


class FrameSource(Protocol):
    """What a view needs from a timeline (``agentscope.pipeline.Timeline`` satisfies it)."""

    def __len__(self) -> int: ...

    def at(self, n: int) -> Frame: ...


def as_entries(log: Any) -> list[Mapping[str, Any]]:
    """Return the entries of an ``EventLog`` (its ``.entries``) or of a sequence of entry dicts."""
    entries = getattr(log, "entries", log)
    if isinstance(entries, Mapping | str | bytes):
        raise TypeError(f"expected an EventLog or a sequence of entries, got {type(log).__name__}")
    out = list(entries)
    for i, e in enumerate(out):
        if not isinstance(e, Mapping):
            raise TypeError(f"entry {i} is {type(e).__name__}, expected a mapping")
    return out


class EntriesOnly:
    """Frames without replay: the entry and its recorded hash, nothing replayed.

    Used by ``TimeTravel(log)`` with no machine. Each frame's verdict is ``MISSING`` when the
    entry has no hash and ``UNCHECKED`` otherwise; ``persisted`` is ``None``.
    """

    machine = None

    def __init__(self, log: Any) -> None:
        self.log = log
        self.entries = as_entries(log)

    def __len__(self) -> int:
        return len(self.entries)

    def at(self, n: int) -> Frame:
        if not -len(self.entries) <= n < len(self.entries):
            raise IndexError(f"step {n} out of range for a log of {len(self.entries)} entries")
        n %= len(self.entries)
        e = self.entries[n]
        h = recorded_hash(e)
        return Frame(index=n, entry=e, recorded_hash=h, verdict=Verdict.UNCHECKED if h else Verdict.MISSING)

    __getitem__ = at

    @property
    def mismatch_indices(self) -> list[int]:
        return []


class FrameCache:
    """A small LRU of frames in front of a :class:`FrameSource` (stepping reuses neighbours),
    bounded by ``size`` frames and ``max_bytes`` (:class:`~agentscope.pipeline.snapshots.FrameLRU`:
    a log of large states keeps fewer frames)."""

    def __init__(self, source: FrameSource, size: int = 256, max_bytes: int = DEFAULT_CACHE_BYTES) -> None:
        self.source = source
        self.size = size
        self.lru = FrameLRU(size, max_bytes)

    def __len__(self) -> int:
        return len(self.source)

    def at(self, n: int) -> Frame:
        f = self.lru.get(n)
        if f is None:
            f = self.source.at(n)
            self.lru.put(n, f)
        return f


def iter_frames(source: FrameSource) -> Iterator[Frame]:
    """Yield every frame in order: the source's own ``iter_frames()`` (a
    :class:`~agentscope.pipeline.Timeline` reads its one pass, no fold), else ``source.at(n)``."""
    it = getattr(source, "iter_frames", None)
    if callable(it):
        yield from it()
        return
    for n in range(len(source)):
        yield source.at(n)


def make_timeline(machine: Any, log: Any, checkpoint_every: int | None = None) -> FrameSource:
    """The :class:`~agentscope.pipeline.Timeline` a view replays with (default settings: every state
    kept in the byte-budgeted store, so the view never folds again)."""
    from agentscope.pipeline import Timeline

    tl: FrameSource = Timeline(machine, log, checkpoint_every=checkpoint_every)
    return tl


def make_fork_timelines(machine: Any, a: Any, b: Any, shared: int) -> tuple[FrameSource, FrameSource]:
    """Timelines of two forks folding their shared prefix once
    (:func:`agentscope.pipeline.timeline.fork_timelines`)."""
    from agentscope.pipeline.timeline import fork_timelines

    ta, tb = fork_timelines(machine, a, b, shared=shared)
    return ta, tb


@dataclass(frozen=True)
class StepInfo:
    """What a step changed on the chart: active ids after it, entered, exited, moves made."""

    active: frozenset[str]
    entered: frozenset[str]
    exited: frozenset[str]
    moves: tuple[ObservedEdge, ...]


def step_info(graph: Graph, previous: Frame | None, frame: Frame) -> StepInfo:
    """Return the chart changes of ``frame`` relative to ``previous`` (pure)."""
    if frame.persisted is None:
        return StepInfo(frozenset(), frozenset(), frozenset(), ())
    active = frozenset(graph.active_ids(frame.value))
    if previous is None or previous.persisted is None or frame.event_type == "@agent.init":
        return StepInfo(active, frozenset(), frozenset(), ())
    before = frozenset(graph.active_ids(previous.value))
    if frame.transitions is not None:  # what the engine took: exactly those edges (both engines)
        moves: tuple[ObservedEdge, ...] = moves_from_taken(graph, frame.transitions)
    elif frame.ignored:
        moves = ()
    else:  # only an engine that cannot report (a third-party Machine, report_transitions=False)
        moves = tuple(taken_edges(graph, before, active, frame.event))
    return StepInfo(active, active - before, before - active, moves)


OBSERVE_UP_TO = 2_000
"""Views walk a log once at construction to draw its observed moves when it has at most this many
entries (longer logs: on request, ``observed=True``)."""


def observed_moves(graph: Graph, source: FrameSource) -> list[ObservedEdge]:
    """Every move the frames of ``source`` make, in order, without repeats (one pass)."""
    moves: list[ObservedEdge] = []
    prev = None
    for frame in iter_frames(source):
        moves.extend(step_info(graph, prev, frame).moves)
        prev = frame
    return list(dict.fromkeys(moves))


def usage_series(entries: Sequence[Mapping[str, Any]]) -> np.ndarray[Any, Any] | None:
    """Cumulative ``@agent.usage`` tokens after each entry (spec §1.5), or ``None`` without any.

    A usage event counts ``usage.totalTokens`` when it is a finite number, else
    ``inputTokens + outputTokens`` (the finite ones).
    """
    import math

    import numpy as np

    per = np.zeros(len(entries), dtype=np.float64)
    seen = False
    for i, e in enumerate(entries):
        ev = event_of(e)
        if ev.get("type") != AGENT_USAGE:
            continue
        u = ev.get("usage")
        if not isinstance(u, Mapping):
            continue
        seen = True

        def num(k: str, usage: Mapping[str, Any] = u) -> float | None:
            v = usage.get(k)
            if isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v):
                return float(v)
            return None

        total = num("totalTokens")
        per[i] = total if total is not None else (num("inputTokens") or 0.0) + (num("outputTokens") or 0.0)
    return np.cumsum(per) if seen else None


def entries_frame(log: Any, entries: Sequence[Mapping[str, Any]]) -> pd.DataFrame:
    """Return one row per entry for the table window: the log's ``.df`` columns when it has one
    (a readable subset), else ``event_type``, ``id``, ``state_hash``, ``causation_id``."""
    import pandas as pd

    df = getattr(log, "df", None)
    if isinstance(df, pd.DataFrame) and len(df) == len(entries):
        prefer = ["event_type", "id", "recorded_at", "state_hash", "causation_id"]
        cols = [c for c in prefer if c in df.columns and (c != "causation_id" or df[c].notna().any())]
        if cols:
            out = df[cols].copy()
            out = out.reset_index(drop=True)
            return out
    rows = []
    for e in entries:
        rows.append(
            {
                "event_type": event_type(e),
                "id": entry_id(e),
                "state_hash": recorded_hash(e),
                "causation_id": e.get("causationId"),
            }
        )
    out = pd.DataFrame(rows, columns=["event_type", "id", "state_hash", "causation_id"])
    return out if out["causation_id"].notna().any() else out.drop(columns="causation_id")

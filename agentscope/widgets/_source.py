"""Where the Jupyter views get their frames: a :class:`~agentscope.pipeline.Timeline`, or the
entries alone.

Private helpers shared by :class:`~agentscope.widgets.TimeTravel` and
:class:`~agentscope.widgets.ForkView`; what the static player reads as well (frame sources,
:func:`step_info`, the token series) lives in :mod:`agentscope.render.source` and is re-exported.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from agentscope.engines.base import Graph
from agentscope.frames import Frame
from agentscope.log.entry import entry_id, event_type, recorded_hash
from agentscope.pipeline.snapshots import DEFAULT_CACHE_BYTES, FrameLRU
from agentscope.render.dot import ObservedEdge
from agentscope.render.source import (
    EntriesOnly,
    FrameSource,
    StepInfo,
    as_entries,
    iter_frames,
    step_info,
    usage_series,
)

if TYPE_CHECKING:
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

"""Where a drawing gets its frames, and what each step changes on the chart.

- :class:`FrameSource`: what a view or the static player reads (a
  :class:`~agentscope.pipeline.Timeline` satisfies it); :func:`iter_frames` walks one in order;
  :class:`EntriesOnly` is the source of a log without a machine (recorded hashes only).
- :func:`step_info`: the active, entered and exited states and the moves of one step (pure).
- :func:`usage_series`: the cumulative ``@agent.usage`` tokens after each entry (spec §1.5).

No widgets here: the static player and the Jupyter views both read these.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from agentscope.engines.base import Graph
from agentscope.frames import Frame, Verdict
from agentscope.log.entry import AGENT_USAGE, event_of, recorded_hash
from agentscope.render.chart import moves_from_taken, taken_edges
from agentscope.render.dot import ObservedEdge

if TYPE_CHECKING:
    import numpy as np

__all__ = ["EntriesOnly", "FrameSource", "StepInfo", "as_entries", "iter_frames", "step_info", "usage_series"]


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


def iter_frames(source: FrameSource) -> Iterator[Frame]:
    """Yield every frame in order: the source's own ``iter_frames()`` (a
    :class:`~agentscope.pipeline.Timeline` reads its one pass, no fold), else ``source.at(n)``."""
    it = getattr(source, "iter_frames", None)
    if callable(it):
        yield from it()
        return
    for n in range(len(source)):
        yield source.at(n)


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



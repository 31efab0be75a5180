"""Where the views get their frames: a :class:`~agentscope.replay.Timeline`, or the entries alone.

Private helpers shared by :class:`~agentscope.widgets.TimeTravel`, :class:`~agentscope.widgets.ForkView`
and the static player.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from agentscope.engines.base import Graph
from agentscope.frames import Frame, Verdict
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
    "folded_frames",
    "iter_frames",
    "recorded_hash",
    "step_info",
    "usage_series",
]


class FrameSource(Protocol):
    """What a view needs from a timeline (``agentscope.replay.Timeline`` satisfies it)."""

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


def recorded_hash(entry: Mapping[str, Any]) -> str | None:
    """Return ``entry.verification.stateHash`` when it is a string."""
    ver = entry.get("verification")
    h = ver.get("stateHash") if isinstance(ver, Mapping) else None
    return h if isinstance(h, str) else None


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
    """A small LRU of frames in front of a :class:`FrameSource` (stepping reuses neighbours)."""

    def __init__(self, source: FrameSource, size: int = 256) -> None:
        self.source = source
        self.size = size
        self._d: OrderedDict[int, Frame] = OrderedDict()

    def __len__(self) -> int:
        return len(self.source)

    def at(self, n: int) -> Frame:
        f = self._d.get(n)
        if f is None:
            f = self.source.at(n)
            self._d[n] = f
            if len(self._d) > self.size:
                self._d.popitem(last=False)
        else:
            self._d.move_to_end(n)
        return f


def iter_frames(source: FrameSource, *, batch: int = 1_000) -> Iterator[Frame]:
    """Yield every frame in order.

    Uses, in this order: the source's own ``iter_frames()``; a batched fold (see
    :func:`folded_frames`) when the source is a replaying timeline over a one-segment log; else
    ``source.at(n)`` for each ``n``.
    """
    it = getattr(source, "iter_frames", None)
    if callable(it):
        yield from it()
        return
    folded = folded_frames(source, batch=batch)
    if folded is not None:
        yield from folded
        return
    for n in range(len(source)):
        yield source.at(n)


def folded_frames(source: Any, *, batch: int = 1_000) -> Iterator[Frame] | None:
    """Frames of a replaying timeline produced by ``machine.fold`` in batches (spec §4.1).

    One engine call per ``batch`` entries instead of one per entry. The verdicts, hashes,
    explanations and ``ignored`` flags come from the timeline's report (its one indexing pass);
    ``changed_paths`` is left empty (the player derives it from its context patches). Returns
    ``None`` when the source has no machine, no report or more than one ``@agent.init`` segment.
    """
    from agentscope.engines.base import NO_INPUT

    machine = getattr(source, "machine", None)
    report = getattr(source, "report", None)
    log = getattr(source, "log", None)
    df = getattr(report, "df", None)
    if machine is None or df is None or log is None or not hasattr(machine, "fold"):
        return None
    entries = as_entries(log)
    if len(entries) != len(df) or not entries:
        return None
    inits = [
        i
        for i, e in enumerate(entries)
        if isinstance(e.get("event"), Mapping) and e["event"].get("type") == "@agent.init"
    ]
    if inits != [0]:
        return None
    cols = {
        c: df[c].tolist() for c in ("computed_hash", "verdict", "explanation", "ignored") if c in df.columns
    }

    def frame(i: int, persisted: Mapping[str, Any]) -> Frame:
        v = cols.get("verdict", [None] * len(entries))[i]
        expl = cols.get("explanation", [None] * len(entries))[i]
        return Frame(
            index=i,
            entry=entries[i],
            persisted=persisted,
            recorded_hash=recorded_hash(entries[i]),
            computed_hash=cols.get("computed_hash", [None] * len(entries))[i],
            verdict=Verdict(v) if v else Verdict.UNCHECKED,
            explanation=expl if isinstance(expl, str) else None,
            ignored=bool(cols.get("ignored", [False] * len(entries))[i]),
        )

    def walk() -> Iterator[Frame]:
        init = entries[0]["event"]
        if "snapshot" in init:
            seed = machine.restore(init["snapshot"])
        else:
            seed = machine.initial(init.get("input", NO_INPUT))
        yield frame(0, machine.persist(seed))
        sessions: dict[str, str] = {}
        snap = seed
        for start in range(1, len(entries), batch):
            stop = min(len(entries), start + batch)
            snaps = machine.fold(snap, [entries[i]["event"] for i in range(start, stop)], sessions=sessions)
            for k, sn in enumerate(snaps):
                yield frame(start + k, machine.persist(sn))
            snap = snaps[-1]

    return walk()


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
    taken = getattr(frame, "transitions", None)  # what the engine reports it took, when it does
    if frame.ignored:
        moves: tuple[ObservedEdge, ...] = ()
    elif taken is not None:
        moves = moves_from_taken(graph, taken)
    else:
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
        ev = e.get("event")
        if not isinstance(ev, Mapping) or ev.get("type") != "@agent.usage":
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
        ev = e.get("event")
        rows.append(
            {
                "event_type": str(ev.get("type", "")) if isinstance(ev, Mapping) else "",
                "id": str(e.get("id", "")),
                "state_hash": recorded_hash(e),
                "causation_id": e.get("causationId"),
            }
        )
    out = pd.DataFrame(rows, columns=["event_type", "id", "state_hash", "causation_id"])
    return out if out["causation_id"].notna().any() else out.drop(columns="causation_id")

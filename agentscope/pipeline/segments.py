"""Split a log at its ``@agent.init`` entries: the segments the fold replays one by one (spec §1.5).

A log is normally one segment. A version-bridged lineage (v1 entries, then a bridge init carrying
``snapshot`` and ``metadata.migratedFrom``, then v2 entries) is several; each replays with the
machine for its own ``machineVersion``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any

from agentscope.log.entry import AGENT_INIT, Segment, event_types, init_has_snapshot, migrated_from

__all__ = ["Segment", "as_log", "segments_of"]


def as_log(log: Any) -> Any:
    """Read ``log`` with :func:`agentscope.read_log` when it is a path; return anything else as is."""
    if isinstance(log, (str, os.PathLike)):
        from agentscope.stores import read_log

        return read_log(log)
    return log


def _segment(entries: Sequence[Mapping[str, Any]], number: int, start: int, stop: int) -> Segment:
    ref = next(
        (entries[i] for i in range(start, stop) if not init_has_snapshot(entries[i])),
        entries[start],
    )
    init = entries[start]
    mid = ref.get("machineId") if isinstance(ref, Mapping) else None
    ver = ref.get("machineVersion") if isinstance(ref, Mapping) else None
    return Segment(
        start=start,
        stop=stop,
        machine_id=mid if isinstance(mid, str) else None,
        machine_version=ver if isinstance(ver, str) else None,
        bridge=init_has_snapshot(init),
        migrated_from=migrated_from(init),
        number=number,
    )


def segments_of(
    entries: Sequence[Mapping[str, Any]], start: int = 0, *, types: Sequence[str] | None = None
) -> list[Segment]:
    """Split ``entries[start:]`` at each ``@agent.init`` entry.

    Position ``start`` always starts a segment, init or not (validation reports a missing init);
    segments are numbered from 0. O(n) once: :meth:`agentscope.pipeline.Timeline.extend` splits
    only the new entries (the first of them continues the last segment unless it is an init).
    ``types``, when the caller has read them, is ``event_types(entries, start)``.
    """
    if types is None:
        types = event_types(entries, start)
    if not types:
        return []
    starts = [start]
    k = 1
    while True:  # the next init past the last one found (a C-level search of the list)
        try:
            k = types.index(AGENT_INIT, k)
        except ValueError:
            break
        starts.append(start + k)
        k += 1
    return [
        _segment(entries, number, s, starts[number + 1] if number + 1 < len(starts) else len(entries))
        for number, s in enumerate(starts)
    ]

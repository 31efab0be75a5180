"""Live follow: watch a run as it happens, verifying each new entry (spec §4.1, §5.1, §5.2).

A consumer of the one pass: a tail (:mod:`agentscope.log.tail`) reads only the entries appended
to a store or JSONL file since the last poll, read-only, as a consistent prefix;
:meth:`agentscope.pipeline.Timeline.extend` folds and verifies only them. Nothing here folds or
validates. See :mod:`agentscope.log.tail` for how SQLite (also WAL) and JSONL are read, and how a
thread forked, truncated or rewritten under the follower is reported.

- :func:`follow` opens a source and returns a :class:`Follower` whose ``timeline`` grows with
  each ``poll()``; ``frames()`` yields every frame as it arrives.
- :meth:`agentscope.pipeline.Timeline.follow` continues an open timeline from its source.
- ``TimeTravel(machine, path, follow=True)`` and ``agentscope watch`` are built on these.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentscope.log.tail import (
    Follower,
    FollowError,
    FollowProblem,
    JsonlTail,
    SqliteTail,
    follow_timeline,
    open_tail,
)

if TYPE_CHECKING:  # pragma: no cover
    from agentscope.engines.base import Machine
    from agentscope.pipeline import Timeline

__all__ = ["FollowError", "FollowProblem", "Follower", "JsonlTail", "SqliteTail", "follow",
           "follow_timeline", "open_tail"]


def follow(
    machine: Machine | None,
    source: str | os.PathLike[str],
    *,
    thread: str | None = None,
    machines: Mapping[str, Machine] | None = None,
    **timeline_options: Any,
) -> Follower[Timeline]:
    """Open ``source`` for live follow: read what is there, and keep reading what is appended.

    Parameters
    ----------
    machine : Machine or None
        The engine to verify with (``None``: entries only).
    source : path
        A SQLite store (spec §5.2; ``thread`` required, or ``STORE#THREAD``) or a JSON Lines
        file. It may not exist yet. It is never written (read-only; no ``-wal``/``-shm`` created
        by the follower).
    thread : str, optional
        The store's thread.
    machines : Mapping[str, Machine], optional
        Machines by ``machineVersion`` (version-bridged logs, spec §1.5).
    **timeline_options
        Passed to :class:`agentscope.pipeline.Timeline`.

    Returns
    -------
    Follower
        ``.timeline`` holds what was read so far; ``.poll()`` / ``.frames()`` read more.

    Raises
    ------
    LogFormatError
        Not a store or a JSONL file, a store without a thread.
    """
    from agentscope.log.build import detect_era
    from agentscope.log.model import EventLog
    from agentscope.pipeline import Timeline

    text = os.fspath(source)
    if thread is None and "#" in text and not Path(text).exists():
        text, _, thread = text.rpartition("#")
    tail = open_tail(text, thread)
    first = tail.poll()
    era = detect_era(first) if first else "C"
    log = EventLog(first, source=text, thread=thread, era=era)
    tl = Timeline(machine, log, machines=machines, **timeline_options)
    return Follower(tl, tail)

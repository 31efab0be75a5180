"""Live follow: watch a run as it happens, verifying each new entry (spec §4.1, §5.1, §5.2).

A consumer of the one pass: a :class:`~agentscope.stores.follow.Follower` reads only what a
store's change cursor (:meth:`agentscope.stores.protocol.Store.changes`) says is new since the
last poll, read-only, as a consistent prefix; :meth:`agentscope.pipeline.Timeline.extend` folds
and verifies only that. Nothing here folds or validates, and nothing here opens a source: one
follow for every kind of store (SQLite in WAL or rollback-journal mode, JSON Lines files,
directories, databases), whose edge cases — a thread forked, truncated or rewritten under the
follower, a source removed or replaced — are the store's and are reported as a
:class:`~agentscope.errors.FollowProblem`.

- :func:`follow` opens a source and returns a :class:`Follower` whose ``timeline`` grows with
  each ``poll()``; ``frames()`` yields every frame as it arrives.
- :meth:`agentscope.pipeline.Timeline.follow` continues an open timeline from its source.
- ``TimeTravel(machine, path, follow=True)`` and ``agentscope watch`` are built on these.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from agentscope.errors import FollowError, FollowProblem
from agentscope.stores import split_thread
from agentscope.stores.follow import Follower, first_read, follow_timeline, open_followed

if TYPE_CHECKING:  # pragma: no cover
    from agentscope.engines.base import Machine
    from agentscope.pipeline import Timeline

__all__ = ["FollowError", "FollowProblem", "Follower", "follow", "follow_timeline"]


def follow(
    machine: Machine | None,
    source: str | os.PathLike[str],
    *,
    thread: str | None = None,
    machines: Mapping[str, Machine] | None = None,
    table: str | None = None,
    **timeline_options: Any,
) -> Follower[Timeline]:
    """Open ``source`` for live follow: read what is there, and keep reading what is appended.

    Parameters
    ----------
    machine : Machine or None
        The engine to verify with (``None``: entries only).
    source : path or URL
        Any store (:func:`agentscope.stores.open_store`): a SQLite store (spec §5.2; ``thread``
        or ``STORE#THREAD`` when it holds several), a JSON Lines file, a directory of log files,
        a database URL. It may not exist yet. It is never written (read-only; no
        ``-wal``/``-shm`` created by the follower).
    thread : str, optional
        The store's thread.
    machines : Mapping[str, Machine], optional
        Machines by ``machineVersion`` (version-bridged logs, spec §1.5).
    table : str, optional
        The event-log table of a database with several.
    **timeline_options
        Passed to :class:`agentscope.pipeline.Timeline`.

    Returns
    -------
    Follower
        ``.timeline`` holds what was read so far; ``.poll()`` / ``.frames()`` read more.

    Raises
    ------
    LogFormatError
        What ``verify`` raises on the same source: not a log (random bytes, a JSON document
        that is not a log), an entry breaking the envelope rules (§1.2); a store with several
        threads and none named (:class:`~agentscope.errors.ThreadNotFoundError`).
    UnreadableSourceError
        The source cannot be read ("Permission denied").
    """
    from agentscope.log.model import EventLog
    from agentscope.pipeline import Timeline
    from agentscope.stores.protocol import Cursor

    text, tail = split_thread(source)
    thread = thread if thread is not None else tail
    store = open_followed(text, table=table)
    log = None
    if store is not None:
        thread, log = first_read(store, thread)
    if log is None:
        log = EventLog([], source=text, thread=thread, era="C")
    elif log.thread is None:
        log.thread = thread
    tl = Timeline(machine, log, machines=machines, **timeline_options)
    n = len(log.entries)
    cursor = Cursor(n, log.entries[n - 1] if n else None)
    follower = Follower(tl, text, thread, store, cursor, table=table)
    follower.poll()  # the store's own bookmark (inode…): a replacement from now on is seen
    return follower

"""Following one thread of a store: a timeline fed by the store's change cursor (spec §5).

The reading half of live follow (:mod:`agentscope.follow`): one :class:`Follower` for every kind
of source, over :meth:`agentscope.stores.protocol.Store.changes` — whatever the source (a SQLite
store in WAL or rollback-journal mode, a JSON Lines file, a directory, a database), the edge
cases are the store's and are reported the same way: a thread rewound and rewritten, truncated,
a source removed or replaced after it was read is a :class:`~agentscope.errors.FollowProblem`
and following stops; nothing is merged.

The first read of a source is :meth:`Store.log` — the very reader ``verify`` uses, so the
envelope rules, a BOM, a non-log JSON document or random bytes get the same answer (a typed
error) from every command. Only a torn final record (a write in progress) is read past, and
then waited on. A source that does not exist yet (no file, an empty file, a store without its
event-log table or thread yet) is waited for.
"""

from __future__ import annotations

import os
import time
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, Generic, Protocol, TypeVar

from agentscope.errors import (
    FollowProblem,
    IncompleteRecordError,
    LogFormatError,
    LogReadWarning,
    ThreadNotFoundError,
)
from agentscope.stores.protocol import Cursor, Store
from agentscope.stores.sources import open_store, split_thread

__all__ = ["Extendable", "Follower", "first_read", "follow_timeline", "open_followed"]


class Extendable(Protocol):
    """What a :class:`Follower` needs of a timeline (:class:`agentscope.pipeline.Timeline` is
    one): its entries and log, random access to its frames, and ``extend``. A protocol, so this
    layer imports nothing of the replay layer above it."""

    @property
    def entries(self) -> Sequence[Mapping[str, Any]]: ...

    @property
    def log(self) -> Any: ...

    def __len__(self) -> int: ...

    def __getitem__(self, n: int) -> Any: ...

    def extend(self, entries: Sequence[Mapping[str, Any]]) -> range: ...


_T = TypeVar("_T", bound=Extendable)


def _not_yet(exc: LogFormatError) -> bool:
    """A source that is not there yet (waited for), as opposed to one that is not a log."""
    text = exc.detail
    return (
        text.startswith("no such file")
        or text.startswith("the source is empty")
        or text.startswith("no event-log table")
    )


def open_followed(source: str, *, table: str | None = None) -> Store | None:
    """``open_store(source)``, or ``None`` while the source does not exist yet (no file, an
    empty file, a store without an event-log table).

    Raises
    ------
    LogFormatError, UnreadableSourceError
        A source that exists and is not a log (random bytes), or cannot be read.
    """
    try:
        return open_store(source, table=table)
    except ThreadNotFoundError:
        raise
    except LogFormatError as exc:
        if _not_yet(exc):
            return None
        raise


def first_read(store: Store, thread: str | None) -> tuple[str | None, Any]:
    """The thread to follow and its log as ``verify`` reads it (:meth:`Store.log`, the one
    reader), read past a torn final record only (a write in progress). ``(thread, None)`` when
    the thread does not exist yet.

    Raises
    ------
    ThreadNotFoundError
        ``thread=None`` on a store with several threads.
    LogFormatError
        What ``verify`` raises on the same source (envelope rules, not a log).
    """
    names = [t.thread_id for t in store.threads()]
    if thread is None:
        if len(names) != 1:
            raise ThreadNotFoundError(
                f"following reads one thread: {store.address}#THREAD (threads: "
                f"{', '.join(names) or 'none yet'})",
                source=store.address,
            )
        thread = names[0]
    if thread not in names:
        return thread, None
    try:
        return thread, store.log(thread)
    except IncompleteRecordError as exc:
        if not exc.detail.startswith("incomplete final record"):
            raise
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", LogReadWarning)
            log = store.log(thread, errors="collect")
        if len(log.problems) != 1:
            raise
        return thread, log


class Follower(Generic[_T]):
    """A timeline kept up to date with one thread of a store: :meth:`poll` appends what is new.

    Build one with :func:`agentscope.follow.follow` or :meth:`agentscope.pipeline.Timeline.follow`.

    Attributes
    ----------
    timeline : Timeline
        The open timeline; it grows with each poll (``len(timeline)``).
    source : str
        The source's address as given (``#THREAD`` removed).
    thread : str | None
        The thread followed (``None`` until a single-thread source appears).
    store : Store | None
        The open store (``None`` while the source does not exist yet).
    cursor : Cursor
        Where the follower stands.
    problem : FollowProblem | None
        Set when following stopped (removed, replaced, truncated, rewritten, invalid entry).
    pending : bool
        An incomplete last record (a write in progress) is being waited on.
    """

    def __init__(
        self,
        timeline: _T,
        source: str,
        thread: str | None,
        store: Store | None,
        cursor: Cursor | None = None,
        *,
        table: str | None = None,
    ) -> None:
        self.timeline = timeline
        self.source = source
        self.thread = thread
        self.store = store
        self.table = table
        self.cursor = cursor or Cursor()
        self.problem: FollowProblem | None = None
        self.pending = False
        self.polls = 0

    def _changes(self) -> list[dict[str, Any]]:
        if self.problem is not None:
            return []
        if self.store is None:
            self.store = open_followed(self.source, table=self.table)
            if self.store is None:
                return []
        if self.thread is None:
            names = [t.thread_id for t in self.store.threads()]
            if len(names) != 1:
                return []
            self.thread = names[0]
        change = self.store.changes(self.thread, self.cursor)
        self.cursor = change.cursor
        self.pending = change.pending
        self.problem = change.problem
        return change.entries

    def poll(self) -> range:
        """Read what was appended, verify it (``Timeline.extend``) and return the new indices."""
        self.polls += 1
        new = self._changes()
        n = len(self.timeline)
        return self.timeline.extend(new) if new else range(n, n)

    def waiting_for(self) -> str | None:
        """What an idle follower is still waiting for, or ``None``: the source to appear, the
        store's thread (naming the threads it has), the rest of an incomplete last record."""
        if self.problem is not None:
            return None
        if self.store is None:
            return f"{self.source} does not exist yet"
        if self.thread is not None and len(self.timeline) == 0:
            try:
                names = [t.thread_id for t in self.store.threads()]
            except LogFormatError:
                names = []
            if self.thread not in names:
                return (f"no thread {self.thread!r} in {self.source} yet (threads: "
                        f"{', '.join(names) or 'none'})")
        if self.pending:
            line = getattr(self.cursor.token, "line", None)  # a line-based store's bookmark
            if isinstance(line, int):
                return f"line {line + 1} of {self.source} is incomplete (no newline yet): not read"
            return (f"the last record of {self.source} after entry {self.cursor.position - 1} "
                    "is incomplete (a write in progress): not read")
        return None

    def frames(
        self,
        *,
        interval: float = 0.2,
        idle_exit: float | None = None,
        stop: Callable[[], bool] | None = None,
        from_start: bool = True,
    ) -> Iterator[Any]:
        """Yield every frame (``timeline[i]``, a :class:`~agentscope.frames.Frame`), in order,
        as entries arrive: those already read first (unless ``from_start=False``), then new
        ones, polling every ``interval`` seconds.

        Ends after ``idle_exit`` seconds without a new entry, when ``stop()`` returns true, or
        at a :attr:`problem`.
        """
        tl = self.timeline
        i = 0 if from_start else len(tl)
        last_new = time.monotonic()
        while True:
            while i < len(tl):
                yield tl[i]
                i += 1
            if self.problem is not None or (stop is not None and stop()):
                return
            got = self.poll()
            if len(got):
                last_new = time.monotonic()
                continue
            if self.problem is not None:
                return
            if idle_exit is not None and time.monotonic() - last_new >= idle_exit:
                return
            if self.store is not None:
                self.store.wait(interval)  # a PostgreSQL store with `listen` wakes on NOTIFY
            else:
                time.sleep(interval)


def follow_timeline(timeline: _T, source: str | os.PathLike[str] | None = None, *,
                    thread: str | None = None) -> Follower[_T]:
    """A :class:`Follower` for an open timeline: it continues from the timeline's last entry.

    ``source``/``thread`` default to the log's ``source`` and ``thread`` (a log from
    :func:`agentscope.read_log`). The source's entry at ``len(timeline) - 1`` must still be the
    timeline's: a ``rewritten`` or ``truncated`` problem on the first poll otherwise.

    Raises
    ------
    LogFormatError
        The log has no source and none is given; the source is not a log.
    """
    log = timeline.log
    src = source if source is not None else getattr(log, "source", None)
    if src is None:
        raise LogFormatError("this timeline's log has no source path; pass source=")
    text, tail_thread = split_thread(os.fspath(src))
    thread = thread if thread is not None else (getattr(log, "thread", None) or tail_thread)
    entries: Sequence[Mapping[str, Any]] = timeline.entries
    n = len(entries)
    store = open_followed(text)
    if thread is None and store is not None and not Path(text).is_dir():
        names = [t.thread_id for t in store.threads()]
        thread = names[0] if len(names) == 1 else None
    cursor = Cursor(n, entries[n - 1] if n else None)
    return Follower(timeline, text, thread, store, cursor)

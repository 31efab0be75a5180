"""The store protocol: where logs live, read-only by construction (spec §5.1, §5.2).

A **store** holds threads, each one event log (spec §1): a SQLite store file (§5.2), a single log
file (one thread), a directory of log files (one thread per file), a PostgreSQL table (§5.2
layout or a column mapping). Every capability that needs a source (``read_log``,
``read_threads``, follow/``watch``, ``verify_store``, ``whatif``, ``coverage``, ``fork_tree``,
``compare``, the CLI) takes a :class:`Store` from :func:`agentscope.stores.open_store`; nothing
else opens a file or a connection. A store never writes: no method can append, fork or delete
(§5.1's ``append``/``fork`` are the host's; the Recorder's writers live in
:mod:`agentscope.log.writers`).

The protocol is the read half of §5.1's ``AgentEventLogStore`` (``read(threadId, {from})``,
``length(threadId)``) plus a thread listing and a **change cursor** for live follow:
:meth:`Store.changes` says what is new since a :class:`Cursor`, and reports a thread that was
rewound and rewritten, truncated, or a source that was removed or replaced as a typed
:class:`~agentscope.errors.FollowProblem`; nothing is ever merged.

Row-based stores (SQLite, PostgreSQL) implement :meth:`Store.read` and
:meth:`Store.threads`/:meth:`Store.length` and inherit :meth:`RowStore.log` and
:meth:`RowStore.changes` from :class:`RowStore`, so the row checks (invalid JSON, an ``idx`` or
``entry_id`` column disagreeing with the entry, non-UTF-8 text, a gap) are written once.
"""

from __future__ import annotations

import abc
from collections.abc import Hashable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from hashlib import blake2b
from types import TracebackType
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable
from urllib.parse import urlsplit, urlunsplit

from agentscope.errors import (
    DamagedStoreError,
    FollowProblem,
    LogFormatError,
    ThreadNotFoundError,
)
from agentscope.log.rows import Record, log_from_records

if TYPE_CHECKING:
    from agentscope.log.model import ErrorsMode, EventLog
    from agentscope.log.validate import Era

__all__ = [
    "Change",
    "Cursor",
    "Record",
    "RowStore",
    "Store",
    "ThreadInfo",
    "display_address",
    "entry_digest",
    "log_from_records",
]

BATCH = 1000
"""Records per batch of :meth:`Store.read` (one query per batch on a database, never per entry)."""


@dataclass(frozen=True, slots=True)
class ThreadInfo:
    """One thread of a store, from key columns (entries are parsed only where unavoidable).

    Attributes
    ----------
    thread_id : str
        The thread id (§5.2 ``thread_id``; for a log file, its file name without extension).
    length : int
        Number of entries (§5.1 ``length``: the next ``expectedIndex``).
    first_recorded_at, last_recorded_at : str | None
        ``recordedAt`` of entry 0 and of the last entry, as stored (ISO-8601 text), ``None`` when
        unknown or unreadable.
    parent : str | None
        The thread this one was forked from, where the store records it. §5.1/§5.2 define no
        fork metadata (``fork`` copies the prefix rows byte for byte and keeps nothing else), so
        no store of this package knows it and it is ``None``; the parent found from the copied
        prefixes themselves is :func:`agentscope.fork_tree`'s (it reads every thread).
    error : str | None
        Why the thread cannot be read in full (a damaged page: "… stops after idx 41 …"), or
        ``None``.
    """

    thread_id: str
    length: int
    first_recorded_at: str | None
    last_recorded_at: str | None
    parent: str | None = None
    error: str | None = None


@dataclass(frozen=True, slots=True)
class Cursor:
    """Where a follower of one thread stands.

    Attributes
    ----------
    position : int
        Entries read so far (the next index to read).
    last : Mapping | None
        The entry at ``position - 1`` as read (``None`` when ``position == 0``): the next
        :meth:`Store.changes` checks it is still there, unchanged (a rewound and rewritten
        thread is reported, never merged).
    token : Hashable | None
        The store's own bookmark (a byte offset and inode, a file signature); opaque to callers,
        ``None`` for a cursor built by a caller (e.g. from an open timeline). A non-``None`` token
        also means the source was seen: its removal is then a ``removed`` problem.
    """

    position: int = 0
    last: Mapping[str, Any] | None = None
    token: Hashable | None = None


@dataclass(frozen=True, slots=True)
class Change:
    """What :meth:`Store.changes` found: ``entries`` (parsed, in index order, starting at the
    cursor's position), the ``cursor`` after them, a ``problem`` when following must stop (then
    ``entries`` holds what was read before it), and ``pending`` when an incomplete last record
    (a write in progress) is being waited on."""

    entries: list[dict[str, Any]] = field(default_factory=list)
    cursor: Cursor = field(default_factory=Cursor)
    problem: FollowProblem | None = None
    pending: bool = False


@runtime_checkable
class Store(Protocol):
    """A read-only source of event-log threads (see the module docstring).

    Every method raises :class:`~agentscope.errors.ThreadNotFoundError` (listing the threads
    held) for a thread the store does not hold, :class:`~agentscope.errors.UnreadableSourceError`
    when the source cannot be read ("Permission denied"), :class:`~agentscope.errors.StoreError`
    when it cannot be opened as a store. Nothing is ever written: bytes of files are unchanged,
    a database sees read-only transactions only.
    """

    address: str
    """Display form of the source (a path, or a URL with any password removed)."""

    kind: str
    """What the source was recognised as: ``"sqlite"``, ``"json"``, ``"jsonl"``, ``"csv"``,
    ``"parquet"``, ``"inspection"``, ``"directory"``, ``"postgresql"``."""

    def threads(self) -> list[ThreadInfo]:
        """Every thread, ordered by ``thread_id``."""
        ...

    def length(self, thread: str) -> int:
        """Number of entries of ``thread`` (§5.1 ``length``)."""
        ...

    def read(self, thread: str, from_: int = 0) -> Iterator[list[Record]]:
        """The records of ``thread`` with ``idx >= from_`` in ``idx`` order, in batches (§5.1
        ``read``); a damaged part of a file ends the iteration with
        :class:`~agentscope.errors.DamagedStoreError` naming the last ``idx`` read."""
        ...

    def texts(self, thread: str, from_: int = 0) -> Iterator[list[str | bytes]]:
        """The ``text`` of each record :meth:`read` gives, alone, in batches: the cheapest whole
        scan of a thread (``compare`` of two stored logs reads only this)."""
        ...

    def log(
        self, thread: str | None = None, *, errors: ErrorsMode = "raise", era: Era | None = None
    ) -> EventLog:
        """The whole thread validated as an :class:`~agentscope.log.model.EventLog` (§1.2,
        §1.3): the one read path of ``read_log``. ``thread=None`` picks the only thread
        (:class:`~agentscope.errors.ThreadNotFoundError` when there are several). ``errors``
        as :func:`agentscope.read_log`."""
        ...

    def changes(self, thread: str, cursor: Cursor) -> Change:
        """What is new in ``thread`` since ``cursor`` (live follow). A thread or source that no
        longer extends what was read is a :class:`Change` with a ``problem``; a source not there
        yet (``cursor.token is None``, nothing read) is an empty change."""
        ...

    def wait(self, timeout: float) -> bool:
        """Block until the source may have changed, at most ``timeout`` seconds (a follower's
        pause between two :meth:`changes`): ``True`` when the source said it changed (a
        PostgreSQL ``NOTIFY`` on the store's ``listen`` channel), ``False`` after the timeout
        (a store that cannot be told just sleeps)."""
        ...

    def close(self) -> None:
        """Release the store's connection or files (idempotent)."""
        ...

    def __enter__(self) -> Store: ...

    def __exit__(
        self, tp: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None: ...


def entry_digest(text: str | bytes) -> bytes:
    """The content key of one stored entry: BLAKE2b-128 (16 bytes) of its text as stored
    (UTF-8; a row that is not UTF-8 by its bytes). Equal keys mean byte-identical entries (no
    collision is expected below 2^64 entries)."""
    data = text.encode("utf-8", "surrogatepass") if isinstance(text, str) else text
    return blake2b(data, digest_size=16).digest()


def display_address(address: str) -> str:
    """``address`` fit to print: a URL's password (and any ``password=`` query value) removed.

    >>> display_address("postgresql://ann:s3cret@db:5432/logs?table=t")
    'postgresql://ann@db:5432/logs?table=t'
    """
    if "://" not in address:
        return address
    parts = urlsplit(address)
    netloc = parts.netloc
    if "@" in netloc:
        user, _, host = netloc.rpartition("@")
        netloc = user.partition(":")[0] + "@" + host
    query = "&".join(
        q for q in parts.query.split("&") if q and not q.lower().startswith("password=")
    )
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


class RowStore(abc.ABC):
    """Base of the row-based stores (SQLite, PostgreSQL): implement ``threads``, ``length``,
    ``read`` (and ``close``); :meth:`log` and :meth:`changes` are derived from them here, so
    every row store validates and follows the same way. A context manager (closes on exit).
    """

    address: str
    kind: str

    @abc.abstractmethod
    def threads(self) -> list[ThreadInfo]: ...

    @abc.abstractmethod
    def length(self, thread: str) -> int: ...

    @abc.abstractmethod
    def read(self, thread: str, from_: int = 0) -> Iterator[list[Record]]: ...

    @abc.abstractmethod
    def close(self) -> None: ...

    def __enter__(self) -> RowStore:
        return self

    def __exit__(
        self, tp: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def texts(self, thread: str, from_: int = 0) -> Iterator[list[str | bytes]]:
        """See :meth:`Store.texts`: each :meth:`read` batch's texts."""
        for batch in self.read(thread, from_):
            yield [r.text for r in batch]

    def wait(self, timeout: float) -> bool:
        """See :meth:`Store.wait`: sleeps ``timeout`` seconds (no notifications)."""
        return sleep_for(timeout)

    def thread_source(self, thread: str) -> str:
        """``ADDRESS#THREAD``: how a thread of this store is named in messages."""
        return f"{self.address}#{thread}"

    def pick_thread(self, thread: str | None) -> str:
        """``thread``, or the only thread when ``None``; a named thread is checked by
        :meth:`length` (one key lookup), the only thread found by :meth:`threads`.

        Raises
        ------
        ThreadNotFoundError
            An unknown thread (the message lists the available ones), or several and none named.
        """
        if thread is not None:
            self.length(thread)  # raises ThreadNotFoundError naming the threads held
            return thread
        names = [t.thread_id for t in self.threads()]
        if len(names) != 1:
            raise ThreadNotFoundError(
                f"the store holds {len(names)} threads; pass thread= one of {names}",
                source=self.address,
            )
        return names[0]

    def thread_ids(self) -> list[str]:
        """The thread ids, ordered (:meth:`threads` without counts or ends; a store may list
        them from its key column alone)."""
        return [t.thread_id for t in self.threads()]

    def digests(self, threads: Iterable[str]) -> Iterator[tuple[str, list[bytes]]]:
        """``(thread, keys)`` for each of ``threads`` in order: the content key
        (:func:`entry_digest`) of each of its records in ``idx`` order, without parsing any (what
        :func:`agentscope.bulk.verify_store`'s fold tree and verdict cache compare). A store may
        compute them closer to its rows (one connection for all); by default from :meth:`read`.
        Raises as :meth:`read`."""
        for thread in threads:
            yield thread, [entry_digest(r.text) for batch in self.read(thread) for r in batch]

    def cached_snapshot(self, thread: str, execution_id: str | None) -> dict[str, Any] | None:
        """A persisted snapshot with ``agentMeta`` for this thread (§4.2), where the store keeps
        one (§5.2 ``agent_snapshots``); ``None`` by default."""
        return None

    def log(
        self, thread: str | None = None, *, errors: ErrorsMode = "raise", era: Era | None = None
    ) -> EventLog:
        """See :meth:`Store.log`."""
        name = self.pick_thread(thread)
        records: list[Record] = []
        damage: DamagedStoreError | None = None
        try:
            for batch in self.read(name):
                records.extend(batch)
        except DamagedStoreError as exc:
            damage = exc
        log = log_from_records(
            records, source=self.address, thread=name, errors=errors, era=era, damage=damage
        )
        try:
            log.cached_snapshot = self.cached_snapshot(name, log.execution_id)
        except LogFormatError:
            log.cached_snapshot = None  # a damaged snapshot table: the log itself is still read
        return log

    def changes(self, thread: str, cursor: Cursor) -> Change:
        """See :meth:`Store.changes`: reads ``idx >= position - 1`` (one query per batch), checks
        the entry at ``position - 1`` is still the one read, then parses the new rows; an
        unknown thread is an empty change (it may not exist yet)."""
        from agentscope.log.validate import loads

        source = self.thread_source(thread)
        position = cursor.position
        start = max(position - 1, 0)
        rows: list[Record] = []
        damage: DamagedStoreError | None = None
        try:
            for batch in self.read(thread, start):
                rows.extend(batch)
        except ThreadNotFoundError:
            pass
        except DamagedStoreError as exc:
            damage = exc
        out: list[dict[str, Any]] = []
        now = replace(cursor, token=cursor.token if cursor.token is not None else self.address)
        if position > 0:
            if not rows or rows[0].idx != position - 1:
                return Change(out, now, FollowProblem(
                    "truncated", position - 1,
                    f"entry {position - 1} is gone from thread {thread!r} (the thread was "
                    "truncated or deleted under the follower)", source))
            first = rows.pop(0)
            try:
                same = cursor.last is None or loads(_text(first.text)) == cursor.last
            except ValueError:
                same = False
            if not same:
                return Change(out, now, FollowProblem(
                    "rewritten", position - 1,
                    f"entry {position - 1} of thread {thread!r} changed since it was read (a "
                    "fork or an edit written over the followed thread)", source))
        last = cursor.last
        for rec in rows:
            if rec.idx != position:
                return Change(out, Cursor(position, last, now.token), FollowProblem(
                    "gap", position, f"expected idx {position}, the store has {rec.idx}", source))
            try:
                value = loads(_text(rec.text))
            except ValueError as exc:
                return Change(out, Cursor(position, last, now.token), FollowProblem(
                    "invalid", rec.idx, f"row holds invalid JSON: {exc}", source))
            if not isinstance(value, dict) or value.get("index") != rec.idx or (
                rec.entry_id is not None and value.get("id") != rec.entry_id
            ):
                return Change(out, Cursor(position, last, now.token), FollowProblem(
                    "invalid", rec.idx, f"row columns (idx={rec.idx}, entry_id={rec.entry_id!r}) "
                    "disagree with the entry JSON", source))
            out.append(value)
            last = value
            position += 1
        problem = None if damage is None else FollowProblem(
            "invalid", position, f"the store is damaged: {damage.detail}", source)
        return Change(out, Cursor(position, last, now.token), problem)


def sleep_for(timeout: float) -> bool:
    """:meth:`Store.wait` of a store that cannot be told of a change: sleep, ``False``."""
    import time

    time.sleep(max(timeout, 0.0))
    return False


def _text(text: str | bytes) -> str:
    """A record's text for parsing (a non-UTF-8 row fails to parse as invalid JSON)."""
    if isinstance(text, bytes):
        raise ValueError("the row's entry text is not UTF-8")
    return text

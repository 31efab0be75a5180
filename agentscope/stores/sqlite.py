"""A SQLite store file (spec §5.2) as a :class:`~agentscope.stores.protocol.Store`, read-only.

How the file is opened (``mode=ro``, one read transaction per call, ``immutable`` only without a
``-wal``, a ``-wal`` without ``-shm`` or a hot rollback journal read from a private copy) is
:func:`agentscope.log.sqlite.connect`'s job; this module adds the protocol: threads from the
key columns, batched reads, and the change cursor for follow, which first compares a cheap
``stat`` signature of the database and its ``-wal`` (no change: no open at all) and reports a
store removed or replaced (another inode) after it was read.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterable, Iterator
from hashlib import blake2b
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentscope.errors import FollowProblem, LogFormatError, ThreadNotFoundError
from agentscope.log.rows import Record
from agentscope.log.sqlite import (
    DAMAGE,
    cached_snapshot,
    connect,
    is_wal,
    pick_table,
    quote_ident,
    read_sqlite,
    thread_ids,
    thread_rows,
)
from agentscope.stores.protocol import BATCH, Change, Cursor, RowStore, ThreadInfo, entry_digest

if TYPE_CHECKING:
    from agentscope.log.model import ErrorsMode, EventLog
    from agentscope.log.validate import Era

__all__ = ["SqliteStore"]

_RECHECK_S = 1.0
"""An unchanged file signature is still re-read this often (a WAL restarting from its start
within one clock tick can keep its size and mtime)."""


def _recorded_at(text: object) -> str | None:
    from agentscope.log.entry import recorded_at_text
    from agentscope.log.validate import loads

    if not isinstance(text, str):
        return None
    try:
        return recorded_at_text(loads(text))
    except ValueError:
        return None


def _signature(path: Path) -> tuple[Any, ...]:
    out: list[Any] = []
    for p in (path, path.with_name(path.name + "-wal"), path.with_name(path.name + "-journal")):
        try:
            st = os.stat(p)
        except FileNotFoundError:
            out.append(None)
            continue
        out.append((st.st_ino, st.st_size, st.st_mtime_ns))
    return tuple(out)


class SqliteStore(RowStore):
    """The threads of one §5.2 SQLite file (see the module docstring).

    Parameters
    ----------
    path : path
        The store file. Opened read-only on each call; never written.
    table : str, optional
        The event-log table when the file has several with the §5.2 columns.

    Raises
    ------
    LogFormatError
        Not a SQLite file, no (or several, without ``table``) event-log tables; the message
        lists the tables found.
    UnreadableSourceError
        The file cannot be read ("Permission denied").
    """

    kind = "sqlite"

    def __init__(self, path: str | os.PathLike[str], *, table: str | None = None) -> None:
        self.path = Path(path)
        self.address = str(path)
        with connect(self.path) as conn:
            self.table = pick_table(conn, table, self.address)

    def threads(self) -> list[ThreadInfo]:
        """Every thread (``thread_id`` order): the count and entries 0 and last, by key; a
        thread on a damaged part of the file has ``error`` set and counts its readable rows."""
        out: list[ThreadInfo] = []
        t = quote_ident(self.table)
        with connect(self.path) as conn:
            for thread in thread_ids(conn, self.table):
                try:
                    n, low, high = conn.execute(
                        f"SELECT COUNT(*), MIN(idx), MAX(idx) FROM {t} WHERE thread_id = ?",
                        (thread,),
                    ).fetchone()
                    ends = dict(conn.execute(
                        f"SELECT idx, entry FROM {t} WHERE thread_id = ? AND idx IN (?, ?)",
                        (thread, low, high),
                    ).fetchall())
                    _, damage = thread_rows(conn, self.table, thread, self.address, what="idx")
                except DAMAGE:
                    rows, damage = thread_rows(conn, self.table, thread, self.address, "entry")
                    n = len(rows)
                    ends = {rows[0][0]: rows[0][1], rows[-1][0]: rows[-1][1]} if rows else {}
                    low = rows[0][0] if rows else None
                    high = rows[-1][0] if rows else None
                out.append(ThreadInfo(
                    thread, int(n), _recorded_at(ends.get(low)), _recorded_at(ends.get(high)),
                    error=None if damage is None else damage.detail,
                ))
        return out

    def _check(self, conn: Any, thread: str) -> None:
        try:  # one probe of the (thread_id, idx) key, not a listing of every thread
            probe = f"SELECT 1 FROM {quote_ident(self.table)} WHERE thread_id = ? LIMIT 1"
            if conn.execute(probe, (thread,)).fetchone() is not None:
                return
        except DAMAGE:
            pass
        if thread not in thread_ids(conn, self.table):
            raise ThreadNotFoundError(
                f"no thread {thread!r} in table {self.table!r}; available threads: "
                f"{thread_ids(conn, self.table)}",
                source=self.address,
            )

    def length(self, thread: str) -> int:
        """``COUNT(*)`` of the thread's rows (§5.2 ``length``)."""
        with connect(self.path) as conn:
            self._check(conn, thread)
            t = quote_ident(self.table)
            n = conn.execute(f"SELECT COUNT(*) FROM {t} WHERE thread_id = ?", (thread,)).fetchone()
            return int(n[0])

    def read(self, thread: str, from_: int = 0) -> Iterator[list[Record]]:
        """Records ``idx >= from_`` in batches of :data:`~agentscope.stores.protocol.BATCH`, all
        from one read transaction (one consistent committed prefix); a damaged page ends them
        with :class:`~agentscope.errors.DamagedStoreError`."""
        with connect(self.path) as conn:
            self._check(conn, thread)
            rows, damage = thread_rows(conn, self.table, thread, self.address, from_=from_)
        for k in range(0, len(rows), BATCH):
            yield [
                Record(idx, getattr(text, "raw", text), entry_id)
                for idx, entry_id, text in rows[k : k + BATCH]
            ]
        if damage is not None:
            raise damage

    def thread_ids(self) -> list[str]:
        """``SELECT DISTINCT thread_id`` (the primary-key index; never an entry)."""
        with connect(self.path) as conn:
            return thread_ids(conn, self.table)

    def digests(self, threads: Iterable[str]) -> Iterator[tuple[str, list[bytes]]]:
        """See :meth:`~agentscope.stores.protocol.RowStore.digests`: one read transaction for
        every thread, one query of the entry column per thread, no records built."""
        with connect(self.path) as conn:
            utf8 = conn.execute("PRAGMA encoding").fetchone()[0] == "UTF-8"
            # a UTF-8 database's text as stored, never decoded: the bytes entry_digest hashes
            what = "CAST(entry AS BLOB)" if utf8 else "entry"
            b2 = blake2b  # entry_digest, inlined for the common row
            for thread in threads:
                self._check(conn, thread)
                rows, damage = thread_rows(conn, self.table, thread, self.address, what=what)
                if damage is not None:
                    raise damage
                yield thread, [b2(data, digest_size=16).digest() if type(data) is bytes
                               else entry_digest(getattr(data, "raw", data)) for _idx, data in rows]

    def close(self) -> None:
        """Nothing held open between calls (each call opens and closes its connection)."""

    def log(
        self, thread: str | None = None, *, errors: ErrorsMode = "raise", era: Era | None = None
    ) -> EventLog:
        """See :meth:`agentscope.stores.protocol.Store.log`: the thread read in one read
        transaction (:func:`agentscope.log.sqlite.read_sqlite`), rows named ``table thread idx``
        in errors, the ``agent_snapshots`` row as its cached snapshot (§4.2)."""
        return read_sqlite(self.path, thread=thread, errors=errors, era=era, table=self.table,
                           source=self.address)

    def cached_snapshot(self, thread: str, execution_id: str | None) -> dict[str, Any] | None:
        """The thread's persisted snapshot from an ``agent_snapshots`` table (§4.2, §5.2)."""
        try:
            with connect(self.path) as conn:
                return cached_snapshot(conn, thread, execution_id)
        except (LogFormatError, *DAMAGE):
            return None

    def changes(self, thread: str, cursor: Cursor) -> Change:
        """See :meth:`agentscope.stores.protocol.Store.changes`. The file's ``stat`` signature
        short-cuts an unchanged store; a store removed, emptied or replaced (another inode) after
        it was read is a ``removed`` / ``replaced`` problem; a writer mid-transaction (locked)
        is an empty change, tried again on the next call."""
        source = self.thread_source(thread)
        sig = _signature(self.path)
        if sig[0] is None and cursor.position > 0:
            return Change([], cursor, FollowProblem(
                "removed", None, "the store file was removed after it was read", source))
        if isinstance(cursor.token, tuple):
            seen_sig = cursor.token[0][0]  # the database's (inode, size, mtime) when last read
            if sig[0] is None:
                return Change([], cursor, FollowProblem(
                    "removed", None, "the store file was removed after it was read", source))
            if seen_sig is not None and seen_sig[0] != sig[0][0]:
                return Change([], cursor, FollowProblem(
                    "replaced", None, "the store file was replaced (another inode) after it "
                    "was read", source))
        if sig[0] is None or sig[0][1] == 0:
            return Change([], cursor)
        now = time.monotonic()
        if isinstance(cursor.token, tuple) and cursor.token[0] == sig and now - cursor.token[1] < _RECHECK_S:
            return Change([], cursor)
        immutable = sig[1] is None and is_wal(self.path)
        try:
            change = super().changes(thread, cursor)
        except LogFormatError as exc:
            if "not a SQLite database" in str(exc):
                return Change([], cursor, FollowProblem(
                    "replaced", None, f"the store file is no longer a SQLite store: {exc.detail}",
                    source))
            return Change([], cursor)  # locked or busy (a journal writer mid-commit): try again
        if immutable and _signature(self.path) != sig:
            return Change([], cursor)  # a writer started while it was read as immutable: again
        return Change(change.entries,
                      Cursor(change.cursor.position, change.cursor.last, (sig, now)),
                      change.problem)

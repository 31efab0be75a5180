"""Reading the SQLite store layout of spec §5.2, strictly read-only.

The event-log table is ``(thread_id TEXT, idx INTEGER, entry_id TEXT, entry TEXT)`` with the
whole entry as compact JSON in ``entry``; any table with those four columns is recognised (the
default name is ``agent_event_log``; custom names are allowed). A snapshot table ``(id TEXT,
snapshot TEXT)`` (default ``agent_snapshots``) may hold persisted snapshots with ``agentMeta``.

How the file is opened (never written, no journal created):

- the connection URI has ``mode=ro``, so SQLite refuses every write;
- all reads of one call run inside one read transaction, so a writer appending in WAL mode at
  the same time is seen as one consistent prefix (the committed state when the read began);
- a WAL-mode database with no ``-wal`` file next to it (no live writer) is opened with
  ``immutable=1`` as well: a read-only connection would otherwise create ``-wal``/``-shm`` files.
  When a ``-wal`` file exists a writer may be live, so ``immutable`` would be wrong (it would
  ignore the writer's commits) and plain ``mode=ro`` is used.
- a ``-wal`` file with no ``-shm`` next to it (a store copied from a running host, or left by a
  crash: no writer can be live, since a WAL writer keeps a ``-shm``) still holds commits, but
  opening it would create the ``-shm``: the database and its ``-wal`` are copied to a private
  temporary directory and read there;
- a **hot rollback journal** (a non-empty ``-journal`` whose header is intact: a writer killed
  mid-transaction, or one mid-commit) holds the pages the interrupted transaction changed;
  ``mode=ro`` cannot roll it back ("attempt to write a readonly database"), so the database and
  its journal are copied to a private temporary directory and opened there, where SQLite rolls
  the copy back: the committed entries are read and the user's files keep every byte.
"""

from __future__ import annotations

import contextlib
import shutil
import sqlite3
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from agentscope.errors import (
    DamagedStoreError,
    LogFormatError,
    ThreadNotFoundError,
    UnreadableSourceError,
)
from agentscope.log.model import (
    ErrorsMode,
    EventLog,
)
from agentscope.log.rows import Record, log_from_records, thread_row, threads_frame
from agentscope.log.validate import Era, loads

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["EVENT_COLUMNS", "SNAPSHOT_COLUMNS", "read_sqlite", "read_threads"]

EVENT_COLUMNS = frozenset({"thread_id", "idx", "entry_id", "entry"})
SNAPSHOT_COLUMNS = frozenset({"id", "snapshot"})


def is_wal(path: Path) -> bool:
    with path.open("rb") as fh:
        header = fh.read(20)
    return len(header) >= 20 and header[18] == 2 and header[19] == 2


def _uri(path: Path) -> str:
    params = "mode=ro"
    wal_file = path.with_name(path.name + "-wal")
    if is_wal(path) and not wal_file.exists():
        params += "&immutable=1"
    return f"file:{quote(str(path.resolve()))}?{params}"


_JOURNAL_MAGIC = bytes.fromhex("d9d505f920a163d7")


def hot_journal(path: Path) -> Path | None:
    """The ``-journal`` of ``path`` when it is hot (non-empty, header intact), else ``None``."""
    journal = path.with_name(path.name + "-journal")
    try:
        with journal.open("rb") as fh:
            head = fh.read(8)
    except OSError:
        return None
    return journal if head == _JOURNAL_MAGIC else None


@contextlib.contextmanager
def connect(path: str | Path) -> Iterator[sqlite3.Connection]:
    """Open a §5.2 store read-only inside one read transaction (see the module docstring).

    Raises
    ------
    LogFormatError
        The file is missing or is not a SQLite database.
    """
    p = Path(path)
    if not p.is_file():
        raise LogFormatError("no such SQLite file", source=str(path))
    try:
        with p.open("rb") as fh:
            head = fh.read(16)
    except OSError as exc:
        raise UnreadableSourceError(
            f"cannot read the file: {exc.strerror or exc}", source=str(path), os_error=exc
        ) from None
    if head and head != b"SQLite format 3\x00":  # (an empty file is an empty database)
        raise LogFormatError(
            "not a SQLite database (a store is a SQLite file with the §5.2 tables; "
            "read JSON/JSONL logs with read_log)",
            source=str(path),
        )
    with contextlib.ExitStack() as stack:
        wal_file = p.with_name(p.name + "-wal")
        journal = hot_journal(p)
        private = False
        if wal_file.exists() and not p.with_name(p.name + "-shm").exists() and is_wal(p):
            tmp = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="agentscope-")))
            try:
                shutil.copyfile(p, tmp / "store.sqlite")
                shutil.copyfile(wal_file, tmp / "store.sqlite-wal")
                p = tmp / "store.sqlite"
            except FileNotFoundError:  # the last writer closed meanwhile: checkpointed, -wal gone
                pass  # the database file itself now holds every committed entry
        elif journal is not None:
            tmp = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="agentscope-")))
            try:
                shutil.copyfile(p, tmp / "store.sqlite")
                shutil.copyfile(journal, tmp / "store.sqlite-journal")
            except FileNotFoundError:  # the writer committed meanwhile: the journal is gone
                shutil.copyfile(p, tmp / "store.sqlite")
            p, private = tmp / "store.sqlite", True
        try:
            uri = f"file:{quote(str(p.resolve()))}" if private else _uri(p)
            conn = sqlite3.connect(uri, uri=True, isolation_level=None, check_same_thread=False)
        except sqlite3.Error as exc:
            raise LogFormatError(f"cannot open as SQLite: {exc}", source=str(path)) from None
        conn.text_factory = _text
        try:
            conn.execute("BEGIN")
            yield conn
        except DAMAGE as exc:
            what = "its schema is damaged" if isinstance(exc, UnicodeDecodeError) else exc
            raise LogFormatError(f"SQLite error: {what}", source=str(path)) from None
        finally:
            with contextlib.suppress(sqlite3.Error):
                conn.execute("ROLLBACK")
            conn.close()


DAMAGE = (sqlite3.DatabaseError, UnicodeDecodeError)
"""What reading a damaged file raises: SQLite's errors, and a ``UnicodeDecodeError`` when SQLite's
error message quotes a damaged (not UTF-8) schema name."""


class _NotUtf8(str):
    """Text a damaged store holds that is not UTF-8: decoded with U+FFFD, the bytes in ``raw``."""

    raw: bytes


def _text(data: bytes) -> str:
    """The connection's ``text_factory``: UTF-8, or a :class:`_NotUtf8` marker (never raises)."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        text = _NotUtf8(data.decode("utf-8", "replace"))
        text.raw = data
        return text


def quote_ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def all_tables(conn: sqlite3.Connection) -> list[str]:
    q = "SELECT name FROM sqlite_master WHERE type='table' ORDER BY name"
    return [r[0] for r in conn.execute(q)]


def tables_with(conn: sqlite3.Connection, columns: frozenset[str]) -> list[str]:
    names = all_tables(conn)
    out = []
    for name in names:
        cols = {r[1] for r in conn.execute(f"PRAGMA table_info({quote_ident(name)})")}
        if columns <= cols:
            out.append(name)
    return out


def event_tables(conn: sqlite3.Connection) -> list[str]:
    """Names of the tables with the §5.2 event-log columns, ``agent_event_log`` first."""
    found = tables_with(conn, EVENT_COLUMNS)
    return sorted(found, key=lambda n: (n != "agent_event_log", n))


def pick_table(conn: sqlite3.Connection, table: str | None, source: str) -> str:
    tables = event_tables(conn)
    if table is not None:
        if table not in tables:
            raise LogFormatError(
                f"no event-log table {table!r} with columns thread_id, idx, entry_id, entry; "
                f"found {tables or 'none'}",
                source=source,
            )
        return table
    if not tables:
        found = all_tables(conn)
        listed = ", ".join(found) if found else "none (an empty database)"
        raise LogFormatError(
            "no event-log table (a table with columns thread_id, idx, entry_id, entry, spec §5.2); "
            f"tables found: {listed}",
            source=source,
        )
    if len(tables) > 1:
        raise LogFormatError(
            f"several event-log tables {tables}; pass table= to choose one", source=source
        )
    return tables[0]


def thread_ids(conn: sqlite3.Connection, table: str) -> list[str]:
    """The thread ids of ``table``, in order; on a damaged file, every id still readable.

    The ``(thread_id, idx)`` primary-key index answers this without touching the table's own
    pages; when the index is damaged too, the table is scanned and the ids seen before the
    damage are returned (and the threads after it are not listed). ``thread_id`` values that
    are not text (the column is ``TEXT``, §5.2; SQLite does not enforce it) are not threads.
    """
    q = f"SELECT DISTINCT thread_id FROM {quote_ident(table)} ORDER BY thread_id"
    try:
        return [r[0] for r in conn.execute(q) if isinstance(r[0], str)]
    except DAMAGE:
        pass
    seen: dict[str, None] = {}
    try:
        for (thread,) in conn.execute(f"SELECT thread_id FROM {quote_ident(table)} NOT INDEXED"):
            if isinstance(thread, str):
                seen[thread] = None
    except DAMAGE:
        pass
    return sorted(seen)


def thread_rows(
    conn: sqlite3.Connection,
    table: str,
    thread: str,
    source: str,
    what: str = "entry_id, entry",
    from_: int = 0,
) -> tuple[list[tuple[Any, ...]], DamagedStoreError | None]:
    """The rows ``(idx, <what>)`` of one thread with ``idx >= from_`` in ``idx`` order, up to
    any damage.

    Returns the rows read and, when the file is damaged (``database disk image is
    malformed``), the :class:`DamagedStoreError` saying after which ``idx`` the thread stops.
    """
    t = quote_ident(table)
    rows: list[tuple[Any, ...]] = []
    low = from_ if from_ > 0 else -(2**63)  # from 0: every row, a (bad) negative idx too
    bulk = f"SELECT idx, {what} FROM {t} WHERE thread_id = ? AND idx >= ? ORDER BY idx"
    factory = conn.text_factory
    conn.text_factory = str  # SQLite's own UTF-8 decoding (in C); a text that is not UTF-8
    try:  # fails the query, which is then read again with the marking text factory
        return conn.execute(bulk, (thread, low)).fetchall(), None
    except DAMAGE:
        pass
    finally:
        conn.text_factory = factory
    try:
        return [tuple(r) for r in conn.execute(bulk, (thread, low))], None
    except DAMAGE:
        pass
    # damaged: read one row at a time (a cursor steps ahead of the row it returns, so the bulk
    # read above fails one row early) until the damage
    one = f"SELECT idx, {what} FROM {t} WHERE thread_id = ? AND idx > ? ORDER BY idx LIMIT 1"
    try:
        row = conn.execute(one, (thread, low - 1 if low > -(2**63) else low)).fetchone()
        while row is not None:
            rows.append(tuple(row))
            row = conn.execute(one, (thread, row[0])).fetchone()
        return rows, None  # pragma: no cover - the damage did not reproduce row by row
    except DAMAGE as exc:
        last = rows[-1][0] if rows else None
        total: int | None
        try:
            total = conn.execute(
                f"SELECT COUNT(*) FROM {quote_ident(table)} WHERE thread_id = ?", (thread,)
            ).fetchone()[0]
        except DAMAGE:
            total = None
        stops = f"after idx {last}" if last is not None else "before its first row (idx 0)"
        of = f" of {total} rows" if total is not None else ""
        return rows, DamagedStoreError(
            f"the store file is damaged ({exc}): thread {thread!r} stops {stops}; "
            f"{len(rows)}{of} are readable",
            source=source,
            index=len(rows),
            thread=thread,
            last_idx=last,
        )


def cached_snapshot(
    conn: sqlite3.Connection, thread: str, execution_id: str | None
) -> dict[str, Any] | None:
    """A persisted snapshot with ``agentMeta`` for this log from a snapshot table (§4.2, §5.2).

    Looks for a row whose ``id`` is the thread id or the log's ``executionId``; a snapshot whose
    ``agentMeta.logId`` names another execution is not this log's and is ignored.
    """
    for table in tables_with(conn, SNAPSHOT_COLUMNS):
        q = f"SELECT id, snapshot FROM {quote_ident(table)} WHERE id = ? OR id = ?"
        for _id, text in conn.execute(q, (thread, execution_id or thread)):
            try:
                snap = loads(text)
            except ValueError:
                continue
            meta = snap.get("agentMeta") if isinstance(snap, dict) else None
            if not isinstance(meta, dict):
                continue
            log_id = meta.get("logId")
            if log_id is not None and execution_id is not None and log_id != execution_id:
                continue
            assert isinstance(snap, dict)
            return snap
    return None


def _read_thread(
    conn: sqlite3.Connection,
    *,
    source: str,
    thread: str | None,
    errors: ErrorsMode,
    era: Era | None,
    table: str | None,
) -> EventLog:

    name = pick_table(conn, table, source)
    threads = thread_ids(conn, name)
    if thread is None:
        if len(threads) != 1:
            raise ThreadNotFoundError(
                f"the store holds {len(threads)} threads; pass thread= one of {threads}",
                source=source,
            )
        thread = threads[0]
    elif thread not in threads:
        raise ThreadNotFoundError(
            f"no thread {thread!r} in table {name!r}; available threads: {threads}", source=source
        )
    rows, damage = thread_rows(conn, name, thread, source)
    if damage is not None and errors == "raise":
        raise damage
    log = log_from_records(
        (Record(idx, text.raw if isinstance(text, _NotUtf8) else text, entry_id)
         for idx, entry_id, text in rows),
        source=source,
        thread=thread,
        errors=errors,
        era=era,
        damage=damage,
        where=f"{source} [{name} thread {thread!r} idx {{idx}}]",
    )
    try:
        log.cached_snapshot = cached_snapshot(conn, thread, log.execution_id)
    except DAMAGE:
        log.cached_snapshot = None  # a damaged snapshot table: the log itself is still read
    return log


def read_sqlite(
    path: str | Path,
    *,
    thread: str | None = None,
    errors: ErrorsMode = "raise",
    era: Era | None = None,
    table: str | None = None,
    source: str | None = None,
) -> EventLog:
    """Read one thread of a §5.2 store (read-only; see the module docstring).

    A damaged file (``database disk image is malformed`` part-way through the thread) raises
    :class:`DamagedStoreError` naming the last ``idx`` read; with ``errors="collect"`` the rows
    before the damage are returned, a :class:`~agentscope.errors.LogReadWarning` is issued and
    ``problems`` has a ``damaged-store`` row.

    Raises
    ------
    ThreadNotFoundError
        Unknown ``thread`` (the message lists the available ones), or several threads and no
        ``thread=``.
    DamagedStoreError
        The thread's rows are on a damaged part of the file (``.thread``, ``.last_idx``).
    LogFormatError
        Not a store, no or several event-log tables (the message lists the tables found), a
        row whose JSON is bad or disagrees with its ``idx``/``entry_id`` columns.
    UnreadableSourceError
        The file cannot be opened (permission denied).
    """
    src = source or str(path)
    with connect(path) as conn:
        return _read_thread(conn, source=src, thread=thread, errors=errors, era=era, table=table)


def read_sqlite_bytes(
    data: bytes,
    *,
    thread: str | None,
    errors: ErrorsMode,
    era: Era | None,
    table: str | None,
    source: str,
) -> EventLog:
    """Read a store given as bytes (e.g. a file object) via a private temporary copy."""
    with tempfile.TemporaryDirectory(prefix="agentscope-") as tmp:
        copy = Path(tmp) / "store.sqlite"
        copy.write_bytes(data)
        return read_sqlite(copy, thread=thread, errors=errors, era=era, table=table, source=source)


def read_threads(path: str | Path, *, table: str | None = None) -> pd.DataFrame:
    """List the threads of a §5.2 SQLite store file, one row per thread (read-only): the
    frame of :func:`agentscope.read_threads` (:func:`agentscope.stores.read_threads`, which
    reads any store), kept here for the callers that still pass a file path to the log layer.
    """
    src = str(path)
    rows: list[dict[str, Any]] = []
    with connect(path) as conn:
        name = pick_table(conn, table, src)
        q = quote_ident(name)
        for thread in thread_ids(conn, name):
            try:
                count = conn.execute(
                    f"SELECT COUNT(*) FROM {q} WHERE thread_id = ?", (thread,)
                ).fetchone()[0]
            except DAMAGE:
                count = None
            read, damage = thread_rows(conn, name, thread, src, what="entry")
            rows.append(thread_row(thread, len(read) if count is None else count,
                                   [r[1] for r in read],
                                   error=None if damage is None else damage.detail))
    return threads_frame(rows)

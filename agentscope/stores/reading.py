"""``read_log`` and ``read_threads`` of the flat API: any source, through a :class:`Store`.

A path or URL is opened with :func:`agentscope.stores.open_store` (a SQLite store, a log file,
a directory of log files, a PostgreSQL table; spec §5) and read with :meth:`Store.log` /
:meth:`Store.threads`; nothing here opens a file or a connection itself. Sources that are
already in memory (bytes, a file object, a list of entries, a DataFrame, an ``EventLog``) are
parsed by :func:`agentscope.log.readers.read_log`.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from agentscope.errors import DamagedStoreError
from agentscope.stores.protocol import Store

if TYPE_CHECKING:
    import pandas as pd

    from agentscope.log.model import ErrorsMode, EventLog
    from agentscope.log.readers import Format
    from agentscope.log.validate import Era

__all__ = ["THREAD_COLUMNS", "read_log", "read_threads"]

THREAD_COLUMNS = ("thread_id", "length", "first_recorded_at", "last_recorded_at", "machine_id",
                  "machine_version", "machine_versions", "execution_id", "parent", "readable",
                  "error")
"""The columns of :func:`read_threads`, in order."""


def read_log(
    source: Any,
    *,
    thread: str | None = None,
    format: Format | None = None,
    errors: ErrorsMode = "raise",
    columns: Mapping[str, Any] | None = None,
    era: Era | None = None,
    table: str | None = None,
) -> EventLog:
    """Read an event log from any supported source (spec §1, §5.2).

    Parameters
    ----------
    source : str | os.PathLike | Store | bytes | file-like | list[dict] | pandas.DataFrame | EventLog
        A path (``str`` is always a path or a URL) to a log file, a SQLite store or a
        directory of log files; a URL (``postgresql://user@host/db?table=…``); either with a
        ``#THREAD`` tail (:func:`agentscope.stores.split_thread`) when ``thread`` is not given; an open
        :class:`~agentscope.stores.Store`; raw bytes, a binary or text file object, a list of
        entry dicts, a DataFrame (with ``columns=``), or an :class:`EventLog` (re-validated).
    thread : str, optional
        The thread to read from a store (a SQLite or PostgreSQL store, a directory). A store
        with one thread needs none.
    format : {"json", "jsonl", "sqlite", "csv", "parquet", "dataframe", "records"}, optional
        Skip sniffing and read as this format.
    errors : {"raise", "collect"}
        ``"raise"`` (default) raises the first problem. ``"collect"`` keeps every entry that
        passes the envelope checks and lists each problem in :attr:`EventLog.problems`.
    columns : Mapping, optional
        For tabular sources: entry field to column name (see
        :func:`agentscope.log.tabular.entries_from_frame`); for a database, its column mapping.
    era : {"C", "B", "A"}, optional
        Force the era instead of detecting it (spec §0).
    table : str, optional
        The event-log table when the store has several with the §5.2 columns.

    Returns
    -------
    EventLog
        Entries exactly as read; ``.source``, ``.thread``, ``.era``, ``.cached_snapshot`` set.

    Raises
    ------
    LogFormatError
        Unreadable source, bad JSON (with ``.line``), unknown format, a row whose entry does not
        parse (naming thread and ``idx``).
    EntryValidationError, NonSerializableError
        An entry breaks spec §1.2/§1.3 (``.index``, ``.line``, ``.field`` name the place).
    MachineVersionMismatchError
        An entry targets another machine than the rest of the log (§1.3).
    ThreadNotFoundError
        ``thread`` is not in the store (the message lists the threads), or the store has several
        and none was named, or ``thread`` was given for a source holding one log.
    IncompleteRecordError
        A torn JSONL record (see :func:`agentscope.log.readers.read_jsonl`).
    DamagedStoreError
        The SQLite file is corrupt where the thread's rows are (§5.2).
    StoreError
        A URL that cannot be opened (refused connection, missing table or column); the message
        never holds a password.
    UnreadableSourceError
        The source exists but cannot be read (permission denied, I/O error), or a ``str`` that
        cannot be a path (e.g. JSON text passed as ``str``; pass it as ``bytes``).

    Examples
    --------
    >>> import agentscope as asc
    >>> from agentscope.examples import example_path
    >>> log = asc.read_log(example_path("g_triage.sqlite"), thread="fork")
    >>> len(log), log.thread, log.machine_id
    (52, 'fork', 'supportTriage')
    >>> log.df["event_type"].value_counts().head(2).to_dict()
    {'xstate.done.actor': 21, 'DRAFT_READY': 11}
    """
    from agentscope.stores.sources import open_store, split_thread

    if isinstance(source, str | os.PathLike):
        if format in ("dataframe", "records"):
            raise ValueError(f"format={format!r} is for in-memory sources, not a path")
        if thread is None:
            source, thread = split_thread(source)
        with open_store(source, table=table, format=format, columns=columns) as store:
            return store.log(thread, errors=errors, era=era)
    if isinstance(source, Store):
        return source.log(thread, errors=errors, era=era)
    from agentscope.log.readers import read_log as parse

    return parse(source, thread=thread, format=format, errors=errors, columns=columns, era=era,
                 table=table)


def read_threads(source: str | os.PathLike[str] | Store, *, table: str | None = None) -> pd.DataFrame:
    """List the threads of a store, one row per thread (read-only; spec §5.2).

    Parameters
    ----------
    source : str | os.PathLike | Store
        A SQLite store, a URL (``postgresql://…``), a directory of log files or a log file
        (one thread), or an open store. Never written.
    table : str, optional
        The event-log table, when the database has several with the §5.2 columns.

    Returns
    -------
    DataFrame
        Columns (:data:`THREAD_COLUMNS`) ``thread_id`` (str), ``length`` (int64),
        ``first_recorded_at`` and ``last_recorded_at`` (``datetime64[ns, UTC]``, from entry 0
        and the last readable entry), ``machine_id`` and ``machine_version`` (of the last
        readable entry), ``machine_versions`` (tuple of the distinct versions in log order),
        ``execution_id`` (the init entry's ``metadata.executionId``), ``parent`` (the thread it
        was forked from where the store records it, :attr:`ThreadInfo.parent`; else ``None``),
        ``readable`` (int64: rows that could be read) and ``error`` (``None``, or why the thread
        cannot be read in full: on a damaged file, "… thread 'b' stops after idx 41 …"; see
        :class:`~agentscope.errors.DamagedStoreError`).

    A damaged file (e.g. a zeroed page) does not stop the listing: every thread whose ids are
    still readable is listed and the damaged ones are marked in ``error``.

    Raises
    ------
    LogFormatError
        Not a store, or no / several event-log tables (pass ``table=``); the message lists the
        tables the database has.
    StoreError
        A URL that cannot be opened (the message never holds a password).
    UnreadableSourceError
        The source cannot be opened (permission denied).

    Examples
    --------
    >>> import agentscope as asc
    >>> from agentscope.examples import example_path
    >>> threads = asc.read_threads(example_path("g_triage.sqlite"))
    >>> print(threads[["thread_id", "length", "machine_version"]])
      thread_id  length machine_version
    0      fork      52        efe50ed5
    1      main      91        efe50ed5
    2    second      40        efe50ed5
    """
    import pandas as pd

    from agentscope.log.model import text_series
    from agentscope.stores.sources import open_store

    store = open_store(source, table=table)
    try:
        rows = [_thread_row(store, info) for info in store.threads()]
    finally:
        if store is not source:
            store.close()
    frame = pd.DataFrame(rows, columns=list(THREAD_COLUMNS))
    for name in ("error", "parent"):
        frame[name] = pd.Series([r[name] for r in rows], dtype=object)  # None, not NaN
    for name in ("thread_id", "machine_id", "machine_version", "execution_id"):
        values = [r[name] if isinstance(r[name], str) else None for r in rows]
        frame[name] = text_series(values)  # lone surrogates kept (a JS string may hold one)
    return frame.astype({
        "length": "int64",
        "first_recorded_at": "datetime64[ns, UTC]",
        "last_recorded_at": "datetime64[ns, UTC]",
        "readable": "int64",
    })


def _thread_row(store: Store, info: Any) -> dict[str, Any]:
    """One row of :func:`read_threads`: the thread's records read raw, each parsed once."""
    from agentscope.log.entry import execution_id, recorded_at_ns
    from agentscope.log.validate import loads

    texts: list[Any] = []
    damage: str | None = info.error
    try:
        for batch in store.read(info.thread_id):
            texts.extend(r.text for r in batch)
    except DamagedStoreError as exc:
        damage = damage or exc.detail
    versions: list[str] = []
    first: dict[str, Any] = {}
    last: dict[str, Any] = {}
    for i, text in enumerate(texts):
        try:
            entry = loads(text) if isinstance(text, str) else None
        except ValueError:
            continue
        if not isinstance(entry, dict):
            continue
        if i == 0:
            first = entry
        last = entry
        v = entry.get("machineVersion")
        if isinstance(v, str) and v not in versions:
            versions.append(v)
    init_execution = execution_id(first)
    return {
        "thread_id": info.thread_id,
        "length": info.length,
        "first_recorded_at": _stamp(recorded_at_ns(first)),
        "last_recorded_at": _stamp(recorded_at_ns(last)),
        "machine_id": last.get("machineId"),
        "machine_version": last.get("machineVersion"),
        "machine_versions": tuple(versions),
        "execution_id": init_execution if isinstance(init_execution, str) else None,
        "parent": info.parent,
        "readable": len(texts),
        "error": damage,
    }


def _stamp(ns: int | None) -> pd.Timestamp | None:
    """A ``recordedAt`` in epoch ns as a ``Timestamp`` (``None`` when invalid or outside the
    ns range)."""
    import pandas as pd

    from agentscope.log.model import NS_MAX, NS_MIN

    if ns is None or not NS_MIN <= ns <= NS_MAX:
        return None
    return pd.Timestamp(ns, unit="ns", tz="UTC")

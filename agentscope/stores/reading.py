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

__all__ = ["read_log", "read_threads"]



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
        entry dicts, a DataFrame (with ``columns=``), or an :class:`EventLog` (returned as is
        when :attr:`EventLog.validated`, else validated).
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
        Columns (:data:`agentscope.log.rows.THREAD_COLUMNS`) ``thread_id`` (str), ``length``
        (int64), ``first_recorded_at`` and ``last_recorded_at`` (``datetime64[ns, UTC]``, from
        entry 0 and the last readable entry), ``machine_id`` and ``machine_version`` (of the
        last readable entry), ``machine_versions`` (tuple of the distinct versions in log
        order), ``execution_id`` (the init entry's ``metadata.executionId``), ``readable``
        (int64: rows that could be read) and ``error`` (``None``, or why the thread cannot be
        read in full: on a damaged file, "… thread 'b' stops after idx 41 …"; see
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
    from agentscope.log.rows import threads_frame
    from agentscope.stores.sources import open_store

    store = open_store(source, table=table)
    try:
        return threads_frame([_thread_row(store, info) for info in store.threads()])
    finally:
        if store is not source:
            store.close()


def _thread_row(store: Store, info: Any) -> dict[str, Any]:
    """One row of :func:`read_threads`: the thread's records read raw (up to any damage)."""
    from agentscope.log.rows import thread_row

    texts: list[Any] = []
    damage: str | None = info.error
    try:
        for batch in store.texts(info.thread_id):
            texts.extend(batch)
    except DamagedStoreError as exc:
        damage = damage or exc.detail
    return thread_row(info.thread_id, info.length, texts, error=damage)

"""Opening a source as a :class:`~agentscope.stores.protocol.Store`: :func:`open_store` (a URL
by its scheme, a path by what it holds) and :func:`split_thread` (``SOURCE#THREAD``); spec §5.

The only place a source is recognised: a capability that needs a source passes it here.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from agentscope.errors import StoreError
from agentscope.stores.protocol import Store, display_address

__all__ = ["SCHEMES", "holds_threads", "open_store", "split_thread"]

SCHEMES: dict[str, str] = {
    "postgresql": "agentscope.stores.postgres",
    "postgres": "agentscope.stores.postgres",
}
"""URL scheme → module whose ``open_url(address, *, table=None, **options) -> Store`` opens it
(imported only when such a URL is opened, so an optional driver loads only then)."""


def split_thread(source: str | os.PathLike[str]) -> tuple[str, str | None]:
    """``SOURCE#THREAD`` → ``(SOURCE, THREAD)``; ``(source, None)`` without a thread.

    A URL's fragment is its thread (``postgresql://h/db#main``). A path that exists as written
    is never split; otherwise the split is at the first ``#`` whose left part is an existing
    file, so a thread id may hold ``#`` itself (``store.sqlite#run#2`` is thread ``run#2``);
    when no left part exists, at the first ``#`` (an error then names the missing file).
    """
    text = os.fspath(source)
    if "#" not in text:
        return text, None
    if _scheme(text) is not None:
        head, _, thread = text.partition("#")
        return head, thread or None
    if Path(text).expanduser().exists():
        return text, None
    cuts = [i for i, ch in enumerate(text) if ch == "#"]
    cut = next((i for i in cuts if Path(text[:i]).expanduser().is_file()), cuts[0])
    return text[:cut], text[cut + 1:] or None


def _scheme(text: str) -> str | None:
    head, sep, _ = text.partition("://")
    if sep and head and head.replace("+", "").replace("-", "").replace(".", "").isalnum():
        return head.lower()
    return None


def open_store(
    source: str | os.PathLike[str] | Store,
    *,
    table: str | None = None,
    format: str | None = None,
    columns: Mapping[str, Any] | None = None,
    **options: Any,
) -> Store:
    """Open ``source`` as a read-only :class:`Store`.

    Parameters
    ----------
    source : str | os.PathLike | Store
        A URL (``postgresql://user@host:port/db?table=…``), a path to a SQLite store, a log
        file or a directory of log files, or an open store (returned as is). A ``#THREAD`` tail
        is not taken here (:func:`split_thread`).
    table : str, optional
        The event-log table of a database with several (§5.2).
    format : str, optional
        A log file's format instead of sniffing: ``"json"``, ``"jsonl"``, ``"csv"``,
        ``"parquet"``, ``"sqlite"``.
    columns : Mapping, optional
        CSV/Parquet column mapping; for a database, the mapping of its columns.
    **options
        Passed to a URL's store (e.g. PostgreSQL's ``schema``).

    Returns
    -------
    Store
        ``.kind`` says what the source was recognised as.

    Raises
    ------
    StoreError
        A URL scheme no store takes (the message lists the known ones).
    LogFormatError
        A missing path (``no such file``), an unrecognised or empty file.
    UnreadableSourceError
        The source cannot be read ("Permission denied").
    """
    if not isinstance(source, str | os.PathLike):
        return source
    text = os.fspath(source)
    scheme = _scheme(text)
    if scheme is not None:
        module = SCHEMES.get(scheme)
        if module is None:
            raise StoreError(
                f"no store for URL scheme {scheme!r}; known: {', '.join(sorted(SCHEMES))}, "
                "or a path to a file or directory",
                source=display_address(text),
            )
        opener = importlib.import_module(module).open_url
        store: Store = opener(text, table=table, columns=columns, **options)
        return store
    from agentscope.log.readers import existing_path

    path, _ = existing_path(text, directory=True)
    is_dir = path.is_dir()
    if is_dir:
        from agentscope.stores.files import DirectoryStore

        return DirectoryStore(path, columns=columns)
    from agentscope.stores.files import FileStore, sniff_file

    kind = format or sniff_file(path)
    if kind == "sqlite":
        from agentscope.stores.sqlite import SqliteStore

        return SqliteStore(path, table=table)
    return FileStore(path, format=kind, columns=columns, sniffed=format is None)


def holds_threads(source: object) -> bool:
    """Whether ``source`` is a path or URL of a store of threads (a SQLite store file, a
    PostgreSQL table: a :class:`~agentscope.stores.protocol.RowStore`) rather than one log.

    Anything that is not a ``str``/``os.PathLike`` (an ``EventLog``, entries, a mapping) and a
    log file are ``False``. Opening is :func:`open_store`'s (a URL connects once).

    Raises
    ------
    LogFormatError, UnreadableSourceError, StoreError
        As :func:`open_store`: the source cannot be opened (``no such file`` …).
    """
    from agentscope.stores.protocol import RowStore

    if not isinstance(source, str | os.PathLike):
        return False
    with open_store(source) as store:
        return isinstance(store, RowStore)

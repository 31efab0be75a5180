"""Writing logs: the one place entries become JSON text, files and stores (spec §1.1, §1.4, §5.2).

The :class:`~agentscope.recorder.Recorder` and ``agentscope export`` both write through here:
JSON (:func:`write_json`), JSONL (:func:`write_jsonl`), a §5.2 SQLite store
(:class:`SQLiteStoreWriter`: a whole thread, or live appends), and flat tables for CSV and
Parquet (:func:`export_table`, :func:`log_bytes`); :func:`agentscope.read_log` reads every one
of them back.

:func:`js_json` has two number modes:

- ``integers="double"`` (default): ``JSON.stringify`` as V8 runs it over parsed JSON values, what
  a JavaScript host writes. Numbers as ``Number::toString`` (``1.0`` is ``1``, ``-0`` is ``0``,
  ``5e-7``; an integer beyond 2^53 rounded to its double), strings as ``JSON.stringify`` quotes
  them (lone surrogates escaped ``\\udxxx``, the rest literal), object members in V8's property
  order (integer-like keys first, ascending, then the others in insertion order). The
  :class:`~agentscope.recorder.Recorder` writes its logs so (:func:`write_json`,
  :func:`write_jsonl`, ``to_sqlite``).
- ``integers="exact"``: *raw* entry values as read (``agentscope export``, data embedded in HTML
  pages): integers keep the log's literal digits (``9007199254740993``; ``JSON.parse`` rounds it
  as it rounded the original), floats their shortest round-trip form, keys in the order held;
  compact; lone surrogates as ``\\udxxx`` escapes, so the text is valid UTF-8 and nothing is lost.

Both modes write nesting up to :data:`~agentscope._deep.MAX_DEPTH`.
"""

from __future__ import annotations

import io
import json
import math
import os
import re
import sqlite3
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from agentscope._deep import call_deep_checked
from agentscope.errors import NonSerializableError, RecorderError
from agentscope.hashing import escape_lone_surrogates, js_number, js_string

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "EXPORT_COLUMNS",
    "FORMATS",
    "Integers",
    "SQLiteStoreWriter",
    "export_table",
    "js_json",
    "log_bytes",
    "outside_inputs",
    "write_json",
    "write_jsonl",
]

Integers = Literal["double", "exact"]
"""How :func:`js_json` writes numbers: as V8 holds them, or with a raw value's integer digits."""

_MAX_INDEX = 4294967294
_SURROGATE = re.compile("[\ud800-\udfff]")


def _is_index(key: str) -> bool:
    return key.isdigit() and key.isascii() and (key == "0" or key[0] != "0") and int(key) <= _MAX_INDEX


def _v8_keys(keys: Iterable[str]) -> list[str]:
    """Own property order of an object built by ``JSON.parse``: array indices ascending first."""
    keys = list(keys)
    idx = sorted((k for k in keys if _is_index(k)), key=int)
    if not idx:
        return keys
    return idx + [k for k in keys if not _is_index(k)]


def _write(value: Any, out: list[str], indent: str | None, depth: int, path: str) -> None:
    if value is None:
        out.append("null")
    elif value is True:
        out.append("true")
    elif value is False:
        out.append("false")
    elif isinstance(value, str):
        out.append(js_string(value))
    elif isinstance(value, int | float):
        if isinstance(value, float) and not math.isfinite(value):
            raise NonSerializableError(path, "NaN" if math.isnan(value) else (
                "Infinity" if value > 0 else "-Infinity"))
        out.append(js_number(value))
    elif isinstance(value, Mapping):
        keys = _v8_keys(str(k) for k in value)
        if not keys:
            out.append("{}")
            return
        by_str = {str(k): v for k, v in value.items()}
        pad = "\n" + indent * (depth + 1) if indent is not None else ""
        sep = ": " if indent is not None else ":"
        out.append("{")
        for n, k in enumerate(keys):
            if n:
                out.append(",")
            out.append(pad)
            out.append(js_string(k))
            out.append(sep)
            _write(by_str[k], out, indent, depth + 1, f"{path}.{k}")
        out.append(("\n" + indent * depth if indent is not None else "") + "}")
    elif isinstance(value, list | tuple):
        if not value:
            out.append("[]")
            return
        pad = "\n" + indent * (depth + 1) if indent is not None else ""
        out.append("[")
        for n, v in enumerate(value):
            if n:
                out.append(",")
            out.append(pad)
            _write(v, out, indent, depth + 1, f"{path}[{n}]")
        out.append(("\n" + indent * depth if indent is not None else "") + "]")
    else:
        raise NonSerializableError(path, type(value).__name__)


def _double(value: Any, indent: str | None) -> str:
    out: list[str] = []
    _write(value, out, indent, 0, "entry")
    return "".join(out)


def _exact(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def js_json(value: Any, *, indent: int | None = None, integers: Integers = "double") -> str:
    """Return ``value`` as JSON text (see the module docstring for the two modes).

    Parameters
    ----------
    value
        A JSON value (``dict``/``list``/``tuple``/``str``/``int``/``float``/``bool``/``None``),
        nested up to :data:`~agentscope._deep.MAX_DEPTH` levels.
    indent
        ``integers="double"`` only: ``JSON.stringify(value, null, indent)``'s indent; ``None``
        writes compact text.
    integers
        ``"double"``: ``JSON.stringify`` as V8 writes the parsed value. ``"exact"``: a raw value,
        integer digits kept (exports, embedded page data).

    Raises
    ------
    NonSerializableError
        ``"double"``: a value JSON cannot hold (``NaN``, ``Infinity``, a non-JSON Python type);
        ``.path`` names it (``entry.event.output``).
    ValueError, TypeError
        ``"exact"``: NaN/Infinity, resp. a non-JSON value.
    DepthLimitError
        Nesting beyond :data:`~agentscope._deep.MAX_DEPTH`.
    """
    if integers == "exact":
        if indent is not None:
            raise ValueError("js_json(integers='exact') writes compact text only (indent=None)")
        # a raw lone surrogate can only sit inside a string, where "\\udxxx" is its JSON escape
        return escape_lone_surrogates(call_deep_checked("JSON text", value, _exact))
    text = call_deep_checked("JSON text", value, _double, " " * indent if indent else None)
    # lone surrogates are escaped by now; a pair held as two code points becomes the one
    # character it encodes, so the text is valid UTF-8 (what a JS host's UTF-16 string writes)
    if _SURROGATE.search(text):
        text = text.encode("utf-16-le", "surrogatepass").decode("utf-16-le")
    return text


def _same_file(a: Path, b: Path) -> bool:
    try:
        return a.is_file() and b.is_file() and os.path.samefile(a, b)
    except OSError:
        return False


def outside_inputs(
    target: str | os.PathLike[str], sources: Iterable[str | os.PathLike[str] | None], *, what: str
) -> Path:
    """``target`` as a path, refused when writing it would change one of ``sources`` (the logs
    and stores a command reads): the file itself, a SQLite store's ``-wal``/``-journal``/``-shm``,
    either through a symbolic or a hard link, or a path inside a directory store. Addresses
    (``postgresql://…``) and ``None`` are skipped. The debugger never writes to a user's log.

    Raises
    ------
    StoreError
        ``target`` is (or is inside) one of ``sources``; the message names ``what`` is written
        (e.g. ``"the player"``), the path and the source.
    """
    from agentscope.errors import StoreError

    path = Path(target).expanduser()
    resolved = path.resolve()
    for source in sources:
        if source is None or "://" in os.fspath(source):
            continue
        base = Path(source).expanduser().resolve()
        sides = [base, *(Path(f"{base}{x}") for x in ("-wal", "-journal", "-shm"))]
        inside = base.is_dir() and base in resolved.parents
        if inside or resolved in sides or any(_same_file(resolved, s) for s in sides):
            hurt = "be inside the store" if inside else "overwrite the log or store"
            raise StoreError(f"{what} {path} would {hurt} it reads; name a file outside it",
                             source=os.fspath(source))
    return path


def _text(value: Any, store: Any, index: Any, field: str) -> Any:
    """``value`` as is when SQLite can store it as UTF-8 text; a lone surrogate (which JSON
    escapes but a TEXT column cannot hold) is a :class:`~agentscope.errors.RecorderError`."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError as exc:
            where = f"{store}: " + ("" if index is None else f"entry {index}: ") + f"field '{field}'"
            raise RecorderError(
                f"{where}: {value!r} holds a lone surrogate ({value[exc.start]!r}), which a SQLite "
                "store's text column cannot hold"
            ) from None
    return value


def _target(path: str | os.PathLike[str], overwrite: bool) -> Path:
    p = Path(path)
    if p.exists() and not overwrite:
        raise FileExistsError(f"{p} already exists; pass overwrite=True to replace it")
    return p


def write_json(
    entries: Iterable[Mapping[str, Any]], path: str | os.PathLike[str], *, overwrite: bool = False
) -> Path:
    """Write ``entries`` as one JSON array (UTF-8, two-space indent); return the path.

    Raises ``FileExistsError`` for an existing file unless ``overwrite``.
    """
    p = _target(path, overwrite)
    p.write_text(js_json(list(entries), indent=2) + "\n", encoding="utf-8")
    return p


def write_jsonl(
    entries: Iterable[Mapping[str, Any]], path: str | os.PathLike[str], *, overwrite: bool = False
) -> Path:
    """Write one compact JSON entry per line (UTF-8, JSONL); return the path.

    Raises ``FileExistsError`` for an existing file unless ``overwrite``.
    """
    p = _target(path, overwrite)
    with p.open("w", encoding="utf-8") as fh:
        for e in entries:
            fh.write(js_json(e) + "\n")
    return p


# ---------------------------------------------------------------------------------------------
# Flat tables (CSV, Parquet) and a log's bytes in any format

EXPORT_COLUMNS = ("index", "id", "timestamp", "machine_id", "machine_version", "type", "event",
                  "causation_id", "metadata", "state_hash")
"""The columns of :func:`export_table`: the column-mapping keys :func:`agentscope.read_log`
reads a table with by default."""

FORMATS = ("json", "jsonl", "csv", "parquet")
"""The file formats :func:`log_bytes` writes (a SQLite store: :class:`SQLiteStoreWriter`)."""


def export_table(entries: Iterable[Mapping[str, Any]]) -> pd.DataFrame:
    """Return entries as a flat table: one row per entry, scalar cells, nested values as JSON text.

    Columns (:data:`EXPORT_COLUMNS`): ``index`` (int64), ``id``, ``timestamp`` (the entry's
    ``recordedAt`` text), ``machine_id``, ``machine_version``, ``type`` (the event type),
    ``event`` (the whole event, compact JSON), ``causation_id``, ``metadata`` (compact JSON or
    empty), ``state_hash`` (``verification.stateHash`` or empty). JSON cells are lossless (lone
    surrogates as ``\\udxxx`` escapes, :func:`js_json` with ``integers="exact"``); a lone
    surrogate in a plain text cell is written as the six characters ``\\udxxx`` (CSV and
    Parquet need valid Unicode). The names are the column-mapping keys of
    :func:`agentscope.read_log` for tables, so ``read_log`` reads the file back with no
    ``columns=``, hashes included: every field written here round-trips.
    """
    import pandas as pd

    from agentscope.log.entry import event_type, recorded_at_text, recorded_hash

    def text(value: Any) -> str | None:
        if value is None:
            return None
        return js_json(value, integers="exact")  # \udxxx escapes, exact integers, deep values

    def cell(value: Any) -> Any:
        return escape_lone_surrogates(value) if isinstance(value, str) else value

    rows: list[dict[str, Any]] = []
    for entry in entries:
        rows.append({
            "index": entry.get("index"),
            "id": cell(entry.get("id")),
            "timestamp": cell(recorded_at_text(entry)),
            "machine_id": cell(entry.get("machineId")),
            "machine_version": cell(entry.get("machineVersion")),
            "type": cell(event_type(entry)),
            "event": text(entry.get("event")),
            "causation_id": cell(entry.get("causationId")),
            "metadata": text(entry.get("metadata")),
            "state_hash": cell(recorded_hash(entry)),
        })
    return pd.DataFrame(rows, columns=list(EXPORT_COLUMNS)).astype({"index": "int64"})


def log_bytes(entries: Sequence[Mapping[str, Any]], fmt: str, *, integers: Integers = "exact") -> bytes:
    """The bytes of a log file of ``entries`` in ``fmt`` (one of :data:`FORMATS`).

    ``json``: one array, two-space indent; ``jsonl``: one compact entry per line (both in
    :func:`js_json`'s ``integers`` mode: ``"exact"`` keeps the digits read, ``"double"`` writes
    what a JS host writes); ``csv``/``parquet``: :func:`export_table`. UTF-8.

    Raises
    ------
    ValueError
        ``fmt`` is not one of :data:`FORMATS`.
    """
    if fmt == "jsonl":
        return "".join(js_json(e, integers=integers) + "\n" for e in entries).encode("utf-8")
    if fmt == "json":
        if integers == "double":
            return (js_json(list(entries), indent=2) + "\n").encode("utf-8")
        body = ",\n".join("  " + js_json(e, integers="exact") for e in entries)  # one entry a line
        return (f"[\n{body}\n]\n" if body else "[]\n").encode("utf-8")
    if fmt == "parquet":
        buf = io.BytesIO()
        export_table(entries).to_parquet(buf, index=False)
        return buf.getvalue()
    if fmt == "csv":
        return str(export_table(entries).to_csv(index=False)).encode("utf-8")
    raise ValueError(f"format must be one of {FORMATS}, not {fmt!r}")


# ---------------------------------------------------------------------------------------------
# A §5.2 SQLite store

_TABLE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_SQLITE_HEADER = b"SQLite format 3\x00"


class SQLiteStoreWriter:
    """A §5.2 SQLite event-log store opened for writing (table ``thread_id, idx, entry_id,
    entry`` with the ``(thread_id, idx)`` primary key and the unique
    ``<table>_thread_entry_id`` index, created when missing; ``entry`` the compact JSON of the
    entry as a JS host writes it, :func:`js_json`).

    Write a whole thread with :meth:`write_thread`, or journal entry by entry with
    :meth:`append` (spec §5.2 ``append``: each in its own ``BEGIN IMMEDIATE`` transaction that
    checks the thread's length first). ``wal=True`` switches the database to WAL mode first (so
    readers run while it writes); ``shared=True`` lets another Python thread use the connection.
    Existing threads are never touched. Use as a context manager or :meth:`close` it.

    Raises
    ------
    RecorderError
        ``table`` is not a plain identifier, or ``path`` is an existing file that is not a
        SQLite database (left unchanged), or the database refuses the write.
    """

    def __init__(self, path: str | os.PathLike[str], *, table: str = "agent_event_log",
                 wal: bool = False, shared: bool = False) -> None:
        if not _TABLE.match(table):
            raise RecorderError(f"table name {table!r} must match ^[A-Za-z_][A-Za-z0-9_]*$")
        p = Path(path)
        if p.is_file() and p.stat().st_size:
            with p.open("rb") as fh:
                header = fh.read(len(_SQLITE_HEADER))
            if header != _SQLITE_HEADER:
                raise RecorderError(f"{p} is not a SQLite store (§5.2); refusing to write to it")
        self.path, self.table = p, table
        self.con = sqlite3.connect(str(p), isolation_level=None, check_same_thread=not shared)
        try:
            if wal:
                self.con.execute("PRAGMA journal_mode=WAL")
            self.con.execute(
                f'CREATE TABLE IF NOT EXISTS "{table}" (thread_id TEXT NOT NULL, idx INTEGER NOT NULL, '
                "entry_id TEXT NOT NULL, entry TEXT NOT NULL, PRIMARY KEY (thread_id, idx))"
            )
            self.con.execute(
                f'CREATE UNIQUE INDEX IF NOT EXISTS "{table}_thread_entry_id" '
                f'ON "{table}" (thread_id, entry_id)'
            )
        except sqlite3.DatabaseError as exc:
            self.con.close()
            raise RecorderError(f"cannot write to the SQLite store {p}: {exc}") from exc

    def __enter__(self) -> SQLiteStoreWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the connection (idempotent)."""
        self.con.close()

    def _count(self, thread: str) -> int:
        (count,) = self.con.execute(
            f'SELECT COUNT(*) FROM "{self.table}" WHERE thread_id=?', (thread,)
        ).fetchone()
        return int(count)

    def _insert(self, rows: Iterable[tuple[str, int, str, str]]) -> None:
        self.con.executemany(
            f'INSERT INTO "{self.table}" (thread_id, idx, entry_id, entry) VALUES (?, ?, ?, ?)', rows
        )

    def write_thread(self, thread: str, entries: Iterable[Mapping[str, Any]]) -> None:
        """Write ``entries`` as the new thread ``thread``, in one transaction.

        Raises :class:`~agentscope.errors.RecorderError` when the thread already has entries
        (a store is append-only; nothing is written) or the database refuses the write.
        """
        self._transaction(thread, entries, expected=0, new=True)

    def append(self, thread: str, entry: Mapping[str, Any]) -> None:
        """Append one entry to ``thread``: §5.2 ``append`` with ``expectedIndex = entry.index``.

        Raises :class:`~agentscope.errors.RecorderError` when the thread's length is not the
        entry's index (a concurrent writer won; nothing is written) or the database refuses.
        """
        self._transaction(thread, [entry], expected=entry["index"], new=False)

    def _transaction(self, thread: str, entries: Iterable[Mapping[str, Any]], expected: int,
                     new: bool) -> None:
        _text(thread, self.path, None, "thread")
        con = self.con
        try:
            con.execute("BEGIN IMMEDIATE")
            try:
                count = self._count(thread)
                if count and new:
                    raise RecorderError(f"thread {thread!r} already exists in {self.path} ({count} "
                                        "entries); refusing to touch it")
                if count != expected:
                    raise RecorderError(
                        f'AgentEventLogStore.append: index conflict on thread "{thread}": expected '
                        f"index {expected} but found {count} — a concurrent writer won."
                    )
                self._insert((thread, e["index"], _text(e["id"], self.path, e["index"], "id"),
                              js_json(e)) for e in entries)
            except BaseException:
                con.execute("ROLLBACK")
                raise
            con.execute("COMMIT")
        except sqlite3.DatabaseError as exc:
            verb = "write to" if new else "append to"
            raise RecorderError(f"cannot {verb} the SQLite store {self.path}: {exc}") from exc

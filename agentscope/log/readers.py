"""``read_log``: every kind of source to an :class:`~agentscope.log.model.EventLog`.

Sources are recognised by content (spec §1 JSON and JSONL, §5.2 SQLite, tabular data); the
file extension only breaks ties. ``format=`` forces one of :data:`FORMATS`.
"""

from __future__ import annotations

import io
import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from agentscope.errors import LogFormatError, MachineVersionMismatchError
from agentscope.log.model import PROBLEM_COLUMNS, ErrorsMode, EventLog
from agentscope.log.validate import (
    AGENT_INIT_EVENT_TYPE,
    TOO_DEEP,
    Era,
    entry_problem,
    loads,
    log_problems,
)

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["FORMATS", "Format", "build_log", "detect_era", "read_log", "sniff"]

Format = Literal["json", "jsonl", "sqlite", "csv", "parquet", "dataframe", "records"]
FORMATS: tuple[str, ...] = ("json", "jsonl", "sqlite", "csv", "parquet", "dataframe", "records")

_SQLITE_MAGIC = b"SQLite format 3\x00"
_PARQUET_MAGIC = b"PAR1"
_JSONL_SUFFIXES = {".jsonl", ".ndjson", ".jsonlines"}
_EXT_FORMAT: dict[str, Format] = {
    ".csv": "csv",
    ".tsv": "csv",
    ".parquet": "parquet",
    ".pq": "parquet",
    ".sqlite": "sqlite",
    ".sqlite3": "sqlite",
    ".db": "sqlite",
}


# ---------------------------------------------------------------------------------------------
# Sniffing


def sniff(head: bytes, *, name: str | None = None) -> Format:
    """Guess a source's format from its first bytes (and, for ties, its file name).

    SQLite and Parquet by their magic bytes; ``[`` starts a JSON array; ``{`` starts JSON or
    JSONL: JSONL when the first line is a complete JSON object and more non-blank text
    follows, or when the name ends in ``.jsonl``/``.ndjson``; otherwise CSV when the name says so
    or the first line has commas or tabs and no brace.

    Raises
    ------
    LogFormatError
        When nothing fits.
    """
    if head.startswith(_SQLITE_MAGIC):
        return "sqlite"
    if head.startswith(_PARQUET_MAGIC):
        return "parquet"
    suffix = Path(name).suffix.lower() if name else ""
    text = head.lstrip(b"\xef\xbb\xbf \t\r\n")
    if text.startswith(b"["):
        return "json"
    if text.startswith(b"{"):
        if suffix in _JSONL_SUFFIXES:
            return "jsonl"
        first, sep, rest = text.partition(b"\n")
        if sep and rest.strip():
            try:
                value = json.loads(first)
            except ValueError:
                return "json"
            return "jsonl" if isinstance(value, dict) else "json"
        return "json"
    if suffix in _EXT_FORMAT:
        return _EXT_FORMAT[suffix]
    first_line = text.split(b"\n", 1)[0]
    if first_line and b"{" not in first_line and (b"," in first_line or b"\t" in first_line):
        return "csv"
    if not text:
        raise LogFormatError("the source is empty: expected a JSON or JSONL log", source=name)
    raise LogFormatError(
        "unrecognised log format: expected JSON (an entry array, a result object with 'events', "
        "or a persisted snapshot with 'agentMeta'), JSONL, a SQLite store (§5.2), CSV or Parquet",
        source=name,
    )


# ---------------------------------------------------------------------------------------------
# Building a log from parsed items


def detect_era(entries: Sequence[Any]) -> Era:
    """The format era of parsed entries (spec §0).

    ``"A"`` when entries have no envelope (no ``schemaVersion``, ``id``, ``machineId``);
    ``"B"`` when any entry has ``correlationId`` or a ``verification.effectsHash``, or the log has
    an envelope but does not start with ``@agent.init`` (Era B required no init entry);
    ``"C"`` otherwise (including an empty log).
    """
    dicts = [e for e in entries if isinstance(e, dict)]
    if not dicts:
        return "C"
    if all("schemaVersion" not in e and "machineId" not in e and "id" not in e for e in dicts):
        return "A"
    for e in dicts:
        ver = e.get("verification")
        if "correlationId" in e or (isinstance(ver, dict) and "effectsHash" in ver):
            return "B"
    first = entries[0]
    if isinstance(first, dict) and "schemaVersion" in first:
        event = first.get("event")
        if isinstance(event, dict) and event.get("type") != AGENT_INIT_EVENT_TYPE:
            return "B"
    return "C"


def _problem_row(err: LogFormatError | MachineVersionMismatchError, source: str | None) -> dict[str, Any]:
    if isinstance(err, MachineVersionMismatchError):
        return {
            "source": source,
            "index": err.index,
            "line": None,
            "field": "machineVersion"
            if err.expected.get("machineId") == err.actual.get("machineId")
            else "machineId",
            "code": err.code,
            "message": str(err),
        }
    return {
        "source": err.source if err.source is not None else source,
        "index": err.index,
        "line": err.line,
        "field": err.field,
        "code": err.code,
        "message": str(err),
    }


def problems_frame(rows: list[dict[str, Any]]) -> pd.DataFrame:
    """The :attr:`EventLog.problems` frame for ``rows`` (``index``/``line`` as nullable Int64)."""
    import pandas as pd

    frame = pd.DataFrame(rows, columns=list(PROBLEM_COLUMNS))
    frame = frame.astype({"index": "Int64", "line": "Int64"})
    return frame


def build_log(
    items: Sequence[Any],
    *,
    source: str | None,
    errors: ErrorsMode = "raise",
    era: Era | None = None,
    lines: Sequence[int | None] | None = None,
    positions: Sequence[int] | None = None,
    thread: str | None = None,
    cached_snapshot: dict[str, Any] | None = None,
    early_problems: Sequence[LogFormatError] = (),
) -> EventLog:
    """Validate parsed items (§1.2, §1.3) and wrap them in an :class:`EventLog`.

    ``errors="raise"`` raises the first problem; ``"collect"`` keeps every entry that passes
    §1.2 (log-level problems such as a gap or a duplicate id are recorded, the entries kept)
    and lists every problem, including ``early_problems`` (e.g. unparsable JSONL lines), in
    :attr:`EventLog.problems`.
    """
    if errors not in ("raise", "collect"):
        raise ValueError(f"errors must be 'raise' or 'collect', not {errors!r}")
    if early_problems and errors == "raise":
        raise early_problems[0]
    era = era or detect_era(items)
    pos = list(range(len(items))) if positions is None else list(positions)
    line_of: list[int | None] = [None] * len(items) if lines is None else list(lines)
    if errors == "raise":
        for problem in log_problems(items, source=source, era=era, positions=pos, lines=line_of):
            raise problem
        log = EventLog(list(items), source=source, thread=thread, era=era, cached_snapshot=cached_snapshot)
        # every entry passed §1.2 and the log §1.3 (without a machine): replay never re-checks them
        vars(log)["validated"] = True
        return log
    rows = [_problem_row(p, source) for p in early_problems]
    kept: list[dict[str, Any]] = []
    kept_pos: list[int] = []
    kept_lines: list[int | None] = []
    for i, item in enumerate(items):
        bad = entry_problem(item, index=pos[i], source=source, line=line_of[i], era=era)
        if bad is not None:
            rows.append(_problem_row(bad, source))
            continue
        kept.append(item)
        kept_pos.append(pos[i])
        kept_lines.append(line_of[i])
    for problem in log_problems(
        kept, source=source, era=era, positions=kept_pos, lines=kept_lines, check_entries=False
    ):
        rows.append(_problem_row(problem, source))
    rows.sort(key=lambda r: (r["index"] if r["index"] is not None else -1, r["line"] or 0))
    return EventLog(
        kept,
        source=source,
        thread=thread,
        era=era,
        cached_snapshot=cached_snapshot,
        problems=problems_frame(rows),
    )


# ---------------------------------------------------------------------------------------------
# JSON and JSONL


def _json_error(exc: json.JSONDecodeError, source: str | None, line_offset: int = 0) -> LogFormatError:
    if exc.msg == TOO_DEEP:  # no meaningful position
        return LogFormatError(f"invalid JSON: {exc.msg}", source=source)
    return LogFormatError(
        f"invalid JSON: {exc.msg} (line {exc.lineno + line_offset}, column {exc.colno})",
        source=source,
        line=exc.lineno + line_offset,
    )


def _decode(data: bytes, source: str | None) -> str:
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise LogFormatError(f"not UTF-8 text: {exc.reason} at byte {exc.start}", source=source) from None


def _snapshot_with_meta(value: Any) -> dict[str, Any] | None:
    return value if isinstance(value, dict) and isinstance(value.get("agentMeta"), dict) else None


def read_json_document(
    data: bytes, *, source: str | None, errors: ErrorsMode, era: Era | None
) -> EventLog:
    """Read a JSON document (spec §1): an entry array; a run-result object with ``events``
    (its ``snapshot``/``persistedSnapshot``/``persisted`` member becomes the cached snapshot
    when it carries ``agentMeta``, §4.2); a persisted snapshot with ``agentMeta`` alone (an
    empty log with that cached snapshot); or a single entry object.

    Raises
    ------
    LogFormatError
        Invalid JSON (``.line`` set) or an unrecognised top-level shape.
    """
    text = _decode(data, source)
    try:
        doc = loads(text)
    except json.JSONDecodeError as exc:
        raise _json_error(exc, source) from None
    cached: dict[str, Any] | None = None
    if isinstance(doc, list):
        items: list[Any] = doc
    elif isinstance(doc, dict) and isinstance(doc.get("events"), list):
        items = doc["events"]
        for key in ("snapshot", "persistedSnapshot", "persisted"):
            cached = _snapshot_with_meta(doc.get(key))
            if cached is not None:
                break
    elif _snapshot_with_meta(doc) is not None:
        items, cached = [], doc
    elif isinstance(doc, dict) and "event" in doc and ("index" in doc or "schemaVersion" in doc):
        items = [doc]
    else:
        raise LogFormatError(
            "unrecognised JSON document: expected an array of entries, an object with an "
            "'events' array, or a persisted snapshot with 'agentMeta'",
            source=source,
        )
    return build_log(items, source=source, errors=errors, era=era, cached_snapshot=cached)


def read_jsonl(data: bytes, *, source: str | None, errors: ErrorsMode, era: Era | None) -> EventLog:
    """Read JSON Lines / NDJSON: one entry per line, blank lines allowed, line numbers kept.

    A line that is not JSON raises :class:`LogFormatError` with ``.line`` (and ``.index``, the
    entry position it would have had), or is listed in ``problems`` with ``errors="collect"``.
    """
    from agentscope.log.fast import try_fast_jsonl

    fast = try_fast_jsonl(data, source=source) if era in (None, "C") else None
    if fast is not None:
        return fast
    text = _decode(data, source)
    items: list[Any] = []
    lines: list[int | None] = []
    positions: list[int] = []
    early: list[LogFormatError] = []
    position = 0
    for number, raw in enumerate(text.split("\n"), start=1):
        stripped = raw.strip()
        if not stripped:
            continue
        try:
            value = loads(stripped)
        except json.JSONDecodeError as exc:
            where = "" if exc.msg == TOO_DEEP else f" (column {exc.colno})"
            err = LogFormatError(
                f"invalid JSON on this line: {exc.msg}{where}",
                source=source,
                index=position,
                line=number,
            )
            if errors == "raise":
                raise err from None
            early.append(err)
            position += 1
            continue
        items.append(value)
        lines.append(number)
        positions.append(position)
        position += 1
    return build_log(
        items,
        source=source,
        errors=errors,
        era=era,
        lines=lines,
        positions=positions,
        early_problems=early,
    )


# ---------------------------------------------------------------------------------------------
# Dispatch


def _name_of(source: object) -> str | None:
    name = getattr(source, "name", None)
    return name if isinstance(name, str) else None


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
    """Read an event log from any supported source.

    Parameters
    ----------
    source : str | os.PathLike | bytes | file-like | list[dict] | pandas.DataFrame | EventLog
        A path (``str`` is always a path), raw bytes, a binary or text file object, a list of
        entry dicts, a DataFrame (with ``columns=``), or an :class:`EventLog` (re-validated).
    thread : str, optional
        The thread to read from a SQLite store (§5.2). A store with one thread needs none.
    format : {"json", "jsonl", "sqlite", "csv", "parquet", "dataframe", "records"}, optional
        Skip sniffing and read as this format.
    errors : {"raise", "collect"}
        ``"raise"`` (default) raises the first problem. ``"collect"`` keeps every entry that
        passes the envelope checks and lists each problem in :attr:`EventLog.problems`.
    columns : Mapping, optional
        For tabular sources: entry field to column name, see
        :func:`agentscope.log.tabular.entries_from_frame` for the keys.
    era : {"C", "B", "A"}, optional
        Force the era instead of detecting it (spec §0).
    table : str, optional
        SQLite: the event-log table when the store has several with the §5.2 columns.

    Returns
    -------
    EventLog
        Entries exactly as read; ``.source``, ``.thread``, ``.era``, ``.cached_snapshot`` set.

    Raises
    ------
    LogFormatError
        Unreadable source, bad JSON (with ``.line``), unknown format.
    EntryValidationError, NonSerializableError
        An entry breaks spec §1.2/§1.3 (``.index``, ``.line``, ``.field`` name the place).
    MachineVersionMismatchError
        An entry targets another machine than the rest of the log (§1.3).
    ThreadNotFoundError
        ``thread`` is not in the store, or the store has several threads and none was named.
    """
    if format is not None and format not in FORMATS:
        raise ValueError(f"format must be one of {FORMATS}, not {format!r}")
    if isinstance(source, EventLog):
        return build_log(
            source.entries,
            source=source.source,
            errors=errors,
            era=era or source.era,
            thread=source.thread,
            cached_snapshot=source.cached_snapshot,
        )
    if _is_dataframe(source) or format == "dataframe":
        from agentscope.log.tabular import read_frame

        return read_frame(source, columns=columns, source="<DataFrame>", errors=errors)
    if isinstance(source, list | tuple):
        return build_log(list(source), source="<list>", errors=errors, era=era)
    if isinstance(source, str | os.PathLike):
        path = Path(source)
        name = str(source)
        if not path.exists():
            raise LogFormatError("no such file", source=name)
        if path.is_dir():
            raise LogFormatError("is a directory, not a log file", source=name)
        fmt: str | None = format
        if fmt is None:
            with path.open("rb") as fh:
                fmt = sniff(fh.read(65536), name=name)
        if fmt == "sqlite":
            from agentscope.log.sqlite import read_sqlite

            return read_sqlite(path, thread=thread, errors=errors, era=era, table=table)
        if fmt in ("csv", "parquet"):
            from agentscope.log.tabular import read_table

            return read_table(path, fmt, columns=columns, source_name=name, errors=errors)
        return _read_bytes(
            path.read_bytes(), fmt, source=name, errors=errors, era=era, sniffed=format is None
        )
    if isinstance(source, bytes | bytearray | memoryview):
        data = bytes(source)
        name = "<bytes>"
    elif hasattr(source, "read"):
        raw = source.read()
        data = raw.encode("utf-8") if isinstance(raw, str) else bytes(raw)
        name = _name_of(source) or "<stream>"
    else:
        raise TypeError(
            "read_log: source must be a path, bytes, a file object, a list of entries or a "
            f"DataFrame, not {type(source).__name__}"
        )
    fmt = str(format or sniff(data[:65536], name=name))
    if fmt == "sqlite":
        from agentscope.log.sqlite import read_sqlite_bytes

        return read_sqlite_bytes(data, thread=thread, errors=errors, era=era, table=table, source=name)
    if fmt in ("csv", "parquet"):
        from agentscope.log.tabular import read_table

        return read_table(io.BytesIO(data), fmt, columns=columns, source_name=name, errors=errors)
    return _read_bytes(data, fmt, source=name, errors=errors, era=era, sniffed=format is None)


def _read_bytes(
    data: bytes,
    fmt: str,
    *,
    source: str,
    errors: ErrorsMode,
    era: Era | None,
    sniffed: bool = True,
) -> EventLog:
    if fmt == "json":
        try:
            return read_json_document(data, source=source, errors=errors, era=era)
        except LogFormatError as exc:
            # a JSONL file whose first line is longer than the sniffed head looks like JSON
            if sniffed and "Extra data" in exc.detail:
                return read_jsonl(data, source=source, errors=errors, era=era)
            raise
    if fmt == "jsonl":
        return read_jsonl(data, source=source, errors=errors, era=era)
    if fmt == "records":
        raise LogFormatError("format='records' needs a list of entry dicts", source=source)
    raise LogFormatError(f"cannot read format {fmt!r} from this source", source=source)


def _is_dataframe(value: object) -> bool:
    return type(value).__name__ == "DataFrame" and hasattr(value, "columns")


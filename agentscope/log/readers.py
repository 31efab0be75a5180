"""``read_log``: every kind of source to an :class:`~agentscope.log.model.EventLog`.

Sources are recognised by content (spec §1 JSON and JSONL, §5.2 SQLite, tabular data); the
file extension only breaks ties. ``format=`` forces one of :data:`FORMATS`.
"""

from __future__ import annotations

import io
import json
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from agentscope.errors import (
    LogFormatError,
    ThreadNotFoundError,
    UnreadableSourceError,
)
from agentscope.log.build import build_log, detect_era
from agentscope.log.model import ErrorsMode, EventLog
from agentscope.log.validate import (
    TOO_DEEP,
    Era,
    loads,
)

if TYPE_CHECKING:
    pass

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
    or the first line is text (no control bytes but tab and CR) with commas or tabs and no brace.

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
    binary = any(b < 0x20 and b not in b"\t\r" for b in first_line)  # NUL and such: not text
    if first_line and not binary and b"{" not in first_line and (b"," in first_line or b"\t" in first_line):
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


_MAX_RECOVERY_TRIES = 64
"""How many ``{`` positions a broken JSONL line is searched for a complete record after a torn one."""


def _glued_record(line: str) -> tuple[int, Any] | None:
    """A complete entry object after a torn record on the same line: ``(column, value)``.

    A crash mid-append followed by a restart that appends the whole entry again (with no
    newline between them) leaves ``<torn prefix><complete entry>`` on one line.
    """
    tries = 0
    k = line.find("{", 1)
    while k > 0 and tries < _MAX_RECOVERY_TRIES:
        tries += 1
        try:
            value = loads(line[k:])
        except json.JSONDecodeError:
            value = None
        if isinstance(value, dict) and "event" in value:
            return k + 1, value
        k = line.find("{", k + 1)
    return None


def read_jsonl(data: bytes, *, source: str | None, errors: ErrorsMode, era: Era | None) -> EventLog:
    """Read JSON Lines / NDJSON: one entry per line, blank lines allowed, line numbers kept.

    A line that is not JSON raises :class:`LogFormatError` with ``.line`` (and ``.index``, the
    entry position it would have had), or is listed in ``problems`` with ``errors="collect"``.

    Torn writes (a crash in the middle of an append) are told apart:

    - the final line of a file with no trailing newline that does not parse raises
      :class:`IncompleteRecordError` "incomplete final record (line N, no trailing newline)";
      with ``errors="collect"`` the entries before it are returned, a :class:`LogReadWarning`
      is issued and ``problems`` has a row (code ``incomplete-record``);
    - a line holding a torn record glued to a complete one (no newline between them) raises
      :class:`IncompleteRecordError` naming the column where the complete record starts;
      ``errors="collect"`` keeps that record;
    - a broken line that the next line repeats in full (the torn text is a prefix of it) raises
      :class:`IncompleteRecordError`; ``errors="collect"`` keeps the full copy.

    A broken line does not take an entry position when the next entry's ``index`` shows that
    it was re-written (so a torn-then-rewritten entry is never reported as a gap, and a lost
    one is: the next entries keep their positions).

    Raises
    ------
    LogFormatError, IncompleteRecordError
        Bad or torn lines (``errors="raise"``), with ``.line`` and ``.index``.
    EntryValidationError, NonSerializableError, MachineVersionMismatchError
        As :func:`build_log` (spec §1.2, §1.3).
    """
    import warnings

    from agentscope.errors import IncompleteRecordError, LogReadWarning
    from agentscope.log.fast import try_fast_jsonl

    fast = try_fast_jsonl(data, source=source) if era in (None, "C") else None
    if fast is not None:
        return fast
    text = _decode(data, source)
    raw_lines = text.split("\n")
    numbered = [(n, raw.strip()) for n, raw in enumerate(raw_lines, start=1) if raw.strip()]
    torn_tail = not text.endswith("\n")
    items: list[Any] = []
    lines: list[int | None] = []
    positions: list[int] = []
    early: list[LogFormatError] = []
    position = 0
    gap_before: int | None = None  # position a broken line would have taken
    tail_error: IncompleteRecordError | None = None
    for k, (number, stripped) in enumerate(numbered):
        try:
            value = loads(stripped)
        except json.JSONDecodeError as exc:
            where = "" if exc.msg == TOO_DEEP else f" (column {exc.colno})"
            final = k == len(numbered) - 1 and torn_tail
            glued = None if final or exc.msg == TOO_DEEP else _glued_record(stripped)
            following = numbered[k + 1][1] if k + 1 < len(numbered) else ""
            err: LogFormatError
            if final:
                err = tail_error = IncompleteRecordError(
                    f"incomplete final record (line {number}, no trailing newline): {exc.msg}{where}",
                    source=source,
                    index=position,
                    line=number,
                )
            elif glued is not None:
                err = IncompleteRecordError(
                    f"incomplete record (line {number}, columns 1-{glued[0] - 1}) followed on the "
                    f"same line by a complete record at column {glued[0]}; errors='collect' keeps "
                    "the complete record",
                    source=source,
                    index=position,
                    line=number,
                )
            elif following.startswith(stripped):
                err = IncompleteRecordError(
                    f"incomplete record (line {number}): line {numbered[k + 1][0]} repeats it "
                    "in full; errors='collect' keeps the full copy",
                    source=source,
                    index=position,
                    line=number,
                )
            else:
                err = LogFormatError(
                    f"invalid JSON on this line: {exc.msg}{where}",
                    source=source,
                    index=position,
                    line=number,
                )
            if errors == "raise":
                raise err from None
            early.append(err)
            if glued is None:
                gap_before = position
                continue
            value = glued[1]
        if gap_before is not None:
            # the broken line was a lost entry when this one carries the next index
            if isinstance(value, dict) and value.get("index") == gap_before + 1:
                position += 1
            gap_before = None
        items.append(value)
        lines.append(number)
        positions.append(position)
        position += 1
    log = build_log(items, source=source, errors=errors, era=era, lines=lines,
                    positions=positions, early_problems=early)
    if tail_error is not None:
        warnings.warn(
            f"{source or '<jsonl>'}: {tail_error.detail}; read the {len(log)} entries before it "
            "(see EventLog.problems)",
            LogReadWarning,
            stacklevel=4,
        )
    return log


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
    """Parse an event log from a log file, bytes, a file object, entries or a DataFrame: the
    parsing half of :func:`agentscope.read_log` (:func:`agentscope.stores.read_log`), which
    opens paths and URLs through :func:`agentscope.stores.open_store` and hands what is already
    in memory to this function. Parameters, return value and errors are that function's; a
    ``str`` is always a path, and ``thread`` is for a SQLite store (a §5.2 file read here
    until :mod:`agentscope.log.sqlite` moves into :mod:`agentscope.stores`).
    """
    if format is not None and format not in FORMATS:
        raise ValueError(f"format must be one of {FORMATS}, not {format!r}")
    in_memory = isinstance(source, EventLog | list | tuple) or _is_dataframe(source)
    if in_memory and not (isinstance(source, EventLog) and source.thread == thread):
        _no_threads(thread, "in-memory", _name_of(source) or type(source).__name__)
    if isinstance(source, EventLog):
        if source.validated and era in (None, source.era) and (
                errors == "collect" or (errors == "raise" and not len(source.read_problems))):
            return source  # checked when it was read: not validated again
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
        path, name = existing_path(source)
        fmt: str | None = format
        try:
            if fmt is None:
                with path.open("rb") as fh:
                    fmt = sniff(fh.read(65536), name=name)
            if fmt == "sqlite":
                from agentscope.log.sqlite import read_sqlite

                return read_sqlite(path, thread=thread, errors=errors, era=era, table=table)
            if fmt in ("csv", "parquet"):
                _no_threads(thread, fmt, name)
                return _read_table(path, fmt, columns=columns, name=name, errors=errors)
            data = path.read_bytes()
        except OSError as exc:
            raise _unreadable(exc, name) from None
        return _read_bytes(
            data, fmt, source=name, errors=errors, era=era, sniffed=format is None, thread=thread
        )
    if isinstance(source, bytes | bytearray | memoryview):
        data = bytes(source)
        name = "<bytes>"
    elif hasattr(source, "read"):
        try:
            raw = source.read()
        except OSError as exc:
            raise _unreadable(exc, _name_of(source) or "<stream>") from None
        data = _text_bytes(raw) if isinstance(raw, str) else bytes(raw)
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
        _no_threads(thread, fmt, name)
        return _read_table(io.BytesIO(data), fmt, columns=columns, name=name, errors=errors)
    return _read_bytes(
        data, fmt, source=name, errors=errors, era=era, sniffed=format is None, thread=thread
    )


def _read_table(
    source: Path | io.BytesIO,
    fmt: str,
    *,
    columns: Mapping[str, Any] | None,
    name: str,
    errors: ErrorsMode,
) -> EventLog:
    """:func:`~agentscope.log.tabular.read_table`, with any parser failure on a damaged file
    (pandas/pyarrow raise ``KeyError``, ``UnicodeDecodeError``, Arrow errors …) as a
    :class:`LogFormatError` naming the parser's error (chained as ``__cause__``)."""
    from agentscope.errors import AgentscopeError
    from agentscope.log.tabular import read_table

    try:
        return read_table(source, fmt, columns=columns, source_name=name, errors=errors)
    except AgentscopeError:
        raise
    except Exception as exc:  # the parsers' own errors on bad bytes: bad input, not a bug here
        detail = str(exc).splitlines()[0] if str(exc) else ""
        raise LogFormatError(
            f"cannot read as {fmt}: {type(exc).__name__}: {detail}", source=name
        ) from exc


def _read_bytes(
    data: bytes,
    fmt: str,
    *,
    source: str,
    errors: ErrorsMode,
    era: Era | None,
    sniffed: bool = True,
    thread: str | None = None,
) -> EventLog:
    if fmt in ("json", "jsonl") and era is None:
        from agentscope.log.inspection import is_inspection_stream, read_inspection

        end = data.find(b"\n", 0, 1 << 24)
        if is_inspection_stream(data[: end if end >= 0 else 1 << 24]):  # the first record
            return read_inspection(data, source=source, thread=thread, errors=errors)
    _no_threads(thread, fmt, source)
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


_MAX_PATH_TEXT = 4096
"""A ``str`` source longer than this (PATH_MAX on Linux) cannot be a path."""


def existing_path(source: str | os.PathLike[str], *, directory: bool = False) -> tuple[Path, str]:
    """``source`` as an existing file's path (or directory's, with ``directory=True``) and its
    display name, or a typed error saying why it is not one.

    Raises
    ------
    UnreadableSourceError
        A ``str`` that cannot be a path (a NUL, longer than 4096 characters, a name component
        too long); JSON text gets a hint to pass it as bytes.
    LogFormatError
        ``no such file``; ``is a directory, not a log file`` (unless ``directory``).
    """
    name = os.fspath(source)
    if isinstance(name, bytes):  # pragma: no cover - os.PathLike[bytes]
        name = os.fsdecode(name)
    # a long string is cut in its middle: the file name at its end stays readable
    short = name if len(name) <= 120 else name[:40] + "..." + name[-77:]
    looks_like_json = name.lstrip()[:1] in ("[", "{")
    hint = (
        "; it looks like JSON text: pass it as bytes (read_log(text.encode())) or a file object "
        "(io.StringIO(text)), a str is always a path"
        if looks_like_json
        else ""
    )
    if "\x00" in name or len(name) > _MAX_PATH_TEXT:
        raise UnreadableSourceError(f"this string cannot be a file path{hint}", source=short)
    path = Path(name)
    try:
        exists, is_dir = path.exists(), path.is_dir()
    except OSError as exc:  # e.g. a name component longer than NAME_MAX
        raise UnreadableSourceError(
            f"not a usable file path ({exc.strerror}){hint}", source=short, os_error=exc
        ) from None
    if not exists:
        raise LogFormatError(f"no such file{hint}", source=short)
    if is_dir and not directory:
        raise LogFormatError("is a directory, not a log file", source=name)
    return path, name


_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def _text_bytes(text: str) -> bytes:
    """UTF-8 of JSON text read from a text stream, lossless for lone surrogates.

    A JS string may hold a lone surrogate, which UTF-8 cannot encode; inside a JSON string the
    ``\\uXXXX`` escape means the same character, so each is written as one (outside a string
    it is invalid JSON either way).
    """
    return _LONE_SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text).encode("utf-8")


def _unreadable(exc: OSError, name: str) -> UnreadableSourceError:
    reason = exc.strerror or str(exc)
    return UnreadableSourceError(f"cannot read the file: {reason}", source=name, os_error=exc)


def _no_threads(thread: str | None, fmt: str, name: str) -> None:
    """A source other than a store holds one log: asking it for a thread is an error."""
    if thread is not None:
        raise ThreadNotFoundError(
            f"no thread {thread!r}: a {fmt} source holds a single log and no threads "
            "(threads are for SQLite stores, spec §5.2); leave thread= out",
            source=name,
        )


def _is_dataframe(value: object) -> bool:
    return type(value).__name__ == "DataFrame" and hasattr(value, "columns")


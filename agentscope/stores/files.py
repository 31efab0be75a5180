"""Log files as stores, read-only: one log file (one thread) and a directory of log files (one
thread per file). Spec §1 (JSON, JSONL), and the tabular and inspection forms the readers of
:mod:`agentscope.log` take.

A file's format is sniffed from its content (:func:`agentscope.log.readers.sniff`; the name only
breaks ties) and said in :attr:`FileStore.kind` (``"json"``, ``"jsonl"``, ``"csv"``,
``"parquet"``, ``"inspection"``); a file whose extension says otherwise (a ``.sqlite`` that is
really JSON) is read as what it is, and a :class:`~agentscope.errors.LogReadWarning` says so.
Reading a whole thread is :func:`agentscope.log.readers.read_log`'s job (the one set of readers,
torn records and BOMs included); this module adds threads, batched reads and the change cursor.

Following (:meth:`FileStore.changes`): a JSON Lines file is read **incrementally** from the last
byte offset (a last line without its newline is a write in progress, waited on; a leading UTF-8
BOM is skipped, as the readers skip it); any other file is re-read when its ``stat`` signature
changes and must still start with the entries read. Once read, a file that is removed, replaced
(another inode), shrinks or changes a line already read is reported, never merged.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Hashable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any

from agentscope.errors import (
    FollowProblem,
    LogFormatError,
    LogReadWarning,
    ThreadNotFoundError,
    UnreadableSourceError,
)
from agentscope.log.rows import Record
from agentscope.stores.protocol import BATCH, Change, Cursor, ThreadInfo, sleep_for

if TYPE_CHECKING:
    from agentscope.log.model import ErrorsMode, EventLog
    from agentscope.log.validate import Era

__all__ = ["LOG_SUFFIXES", "DirectoryStore", "FileStore"]

LOG_SUFFIXES = frozenset({".json", ".jsonl", ".ndjson", ".jsonlines", ".csv", ".tsv", ".parquet",
                          ".pq"})
"""The files a :class:`DirectoryStore` takes as threads."""

_BOM = b"\xef\xbb\xbf"
_HEAD = 65536


def _unreadable(exc: OSError, name: str) -> UnreadableSourceError:
    return UnreadableSourceError(
        f"cannot read the file: {exc.strerror or exc}", source=name, os_error=exc
    )


def sniff_file(path: Path) -> str:
    """What ``path`` holds: ``"sqlite"``, ``"json"``, ``"jsonl"``, ``"csv"``, ``"parquet"`` or
    ``"inspection"`` (an XState inspection stream, JSON or JSONL).

    Raises
    ------
    LogFormatError
        Unrecognised or empty content (the readers' one wording).
    UnreadableSourceError
        The file cannot be read ("Permission denied").
    """
    from agentscope.log.inspection import is_inspection_stream
    from agentscope.log.readers import sniff

    try:
        with path.open("rb") as fh:
            head = fh.read(_HEAD)
    except OSError as exc:
        raise _unreadable(exc, str(path)) from None
    fmt = sniff(head, name=str(path))
    if fmt in ("json", "jsonl"):
        end = head.find(b"\n")
        if is_inspection_stream(head[: end if end >= 0 else len(head)]):
            return "inspection"
    return fmt


@dataclass(frozen=True, slots=True)
class _JsonlMark:
    """A JSONL follower's bookmark: the inode, the offset after the last complete line, the
    line number there, and the last entry line read (its offset and bytes)."""

    ino: int
    offset: int
    line: int
    last_line: tuple[int, bytes] | None


class FileStore:
    """One log file as a store of one thread (named by the file name without extension).

    Parameters
    ----------
    path : path
        The file; read only when asked, never written.
    format : str, optional
        The format (default: sniffed, see :func:`sniff_file`).
    columns : Mapping, optional
        CSV/Parquet column mapping (:func:`agentscope.log.tabular.entries_from_frame`).
    sniffed : bool, optional
        Whether ``format`` was sniffed (default: when not given); a sniffed format that the file
        name contradicts is said in a :class:`~agentscope.errors.LogReadWarning`.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        format: str | None = None,
        columns: Mapping[str, Any] | None = None,
        sniffed: bool | None = None,
    ) -> None:
        self.path = Path(path)
        self.address = str(path)
        self.kind = format or sniff_file(self.path)
        sniffed = format is None if sniffed is None else sniffed
        self.columns = columns
        self.thread_id = self.path.stem
        self._cache: tuple[Hashable, EventLog] | None = None
        suffix = self.path.suffix.lower()
        named = {".sqlite": "sqlite", ".sqlite3": "sqlite", ".db": "sqlite", ".parquet": "parquet",
                 ".csv": "csv"}.get(suffix)
        if sniffed and named is not None and named != self.kind:
            warnings.warn(
                f"{self.address}: named {suffix} but its content is {self.kind}: read as {self.kind}",
                LogReadWarning,
                stacklevel=3,
            )

    # -- the protocol -------------------------------------------------------------------------

    def _thread(self, thread: str | None) -> str:
        if thread is not None and thread != self.thread_id:
            raise ThreadNotFoundError(
                f"no thread {thread!r}: a {self.kind} file holds a single log, thread "
                f"{self.thread_id!r}",
                source=self.address,
            )
        return self.thread_id

    def _stat(self) -> os.stat_result:
        try:
            return os.stat(self.path)
        except FileNotFoundError:
            raise LogFormatError("no such file", source=self.address) from None
        except OSError as exc:
            raise _unreadable(exc, self.address) from None

    def log(
        self, thread: str | None = None, *, errors: ErrorsMode = "raise", era: Era | None = None
    ) -> EventLog:
        """The file's one log (:func:`agentscope.log.readers.read_log`, the one reader)."""
        from agentscope.log.readers import read_log

        self._thread(thread)
        fmt = None if self.kind == "inspection" else self.kind
        return read_log(self.path, format=fmt, errors=errors, era=era,  # type: ignore[arg-type]
                        columns=self.columns)

    def _collected(self) -> EventLog:
        st = self._stat()
        sig = (st.st_ino, st.st_size, st.st_mtime_ns)
        if self._cache is None or self._cache[0] != sig:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", LogReadWarning)
                self._cache = (sig, self.log(errors="collect"))
        return self._cache[1]

    def threads(self) -> list[ThreadInfo]:
        """The one thread: its entries read with ``errors="collect"`` (a file has no key
        columns to count)."""
        log = self._collected()
        entries = log.entries
        from agentscope.log.entry import recorded_at_text

        return [ThreadInfo(
            self.thread_id, len(entries),
            recorded_at_text(entries[0]) if entries else None,
            recorded_at_text(entries[-1]) if entries else None,
        )]

    def length(self, thread: str) -> int:
        """Number of entries the file holds (read with ``errors="collect"``)."""
        self._thread(thread)
        return len(self._collected().entries)

    def read(self, thread: str, from_: int = 0) -> Iterator[list[Record]]:
        """The entries ``from_`` on, in batches, as records (``text`` is the entry's JSON).

        A JSON Lines file is streamed: each non-blank line is one record, its text as stored
        (a leading BOM and the line's surrounding blanks dropped; ``bytes`` when the line is not
        UTF-8), read a batch at a time, nothing parsed, like a database row (a last line without
        its newline is a record only when it parses: else it is a write in progress). Any other
        file is read whole (:meth:`log`) and each entry written back as compact JSON.
        """
        from agentscope.log.writers import js_json

        self._thread(thread)
        if self.kind == "jsonl":
            yield from self._jsonl_records(max(from_, 0))
            return
        entries = self._collected().entries
        for k in range(max(from_, 0), len(entries), BATCH):
            yield [Record(k + j, js_json(e), None) for j, e in enumerate(entries[k : k + BATCH])]

    def texts(self, thread: str, from_: int = 0) -> Iterator[list[str | bytes]]:
        """See :meth:`agentscope.stores.protocol.Store.texts`. A JSON Lines file is read in
        1 MiB chunks, each decoded and split at once (the lines :meth:`read` gives, without a
        :class:`Record` each); any other file, :meth:`read`'s texts."""
        self._thread(thread)
        if self.kind != "jsonl":
            for batch in self.read(thread, from_):
                yield [r.text for r in batch]
            return
        k = 0
        for lines in self._jsonl_chunks():
            if k + len(lines) > from_:
                yield lines[max(from_ - k, 0):]
            k += len(lines)

    def _jsonl_chunks(self) -> Iterator[list[str | bytes]]:
        try:
            fh = self.path.open("rb")
        except OSError as exc:
            raise _unreadable(exc, self.address) from None
        with fh:
            carry = fh.read(len(_BOM))
            carry = carry.removeprefix(_BOM)
            while True:
                chunk = fh.read(1 << 20)
                data = carry + chunk
                if not chunk:
                    tail = data.strip()
                    if tail and _parses(tail):  # a last line without its newline
                        yield [_decoded(tail)]
                    return
                cut = data.rfind(b"\n") + 1
                carry, data = data[cut:], data[:cut]
                try:
                    lines: list[str | bytes] = list(filter(None, map(  # at C speed
                        str.strip, data.decode("utf-8").split("\n"))))
                except UnicodeDecodeError:
                    lines = [_decoded(t) for t in (line.strip() for line in data.split(b"\n")) if t]
                if lines:
                    yield lines

    def _jsonl_records(self, from_: int) -> Iterator[list[Record]]:
        try:
            fh = self.path.open("rb")
        except OSError as exc:
            raise _unreadable(exc, self.address) from None
        with fh:
            batch: list[Record] = []
            k = 0
            first = True
            for line in fh:
                if first:
                    line, first = line.removeprefix(_BOM), False
                raw = line.strip()
                if raw and not line.endswith(b"\n") and not _parses(raw):
                    break  # a write in progress
                if not raw:
                    continue
                if k >= from_:
                    try:
                        text: str | bytes = raw.decode("utf-8")
                    except UnicodeDecodeError:
                        text = raw
                    batch.append(Record(k, text, None))
                    if len(batch) >= BATCH:
                        yield batch
                        batch = []
                k += 1
            if batch:
                yield batch

    def wait(self, timeout: float) -> bool:
        """See :meth:`agentscope.stores.protocol.Store.wait`: sleeps (a file sends no notice)."""
        return sleep_for(timeout)

    def close(self) -> None:
        """Nothing to release (files are opened per call)."""
        self._cache = None

    def __enter__(self) -> FileStore:
        return self

    def __exit__(
        self, tp: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    # -- following ----------------------------------------------------------------------------

    def changes(self, thread: str, cursor: Cursor) -> Change:
        """See :meth:`agentscope.stores.protocol.Store.changes` and the module docstring."""
        self._thread(thread)
        source = self.address
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            if cursor.token is not None or cursor.position > 0:
                return Change([], cursor, FollowProblem(
                    "removed", None, "the file was removed after it was read", source))
            return Change([], cursor)
        except OSError as exc:
            raise _unreadable(exc, source) from None
        ino = _ino(cursor.token)
        if ino is not None and st.st_ino != ino:
            return Change([], cursor, FollowProblem(
                "replaced", None, "the file was replaced (another inode) after it was read", source))
        if self.kind == "jsonl":
            return self._jsonl_changes(cursor, st)
        return self._whole_changes(cursor, st)

    def _whole_changes(self, cursor: Cursor, st: os.stat_result) -> Change:
        sig = (st.st_ino, st.st_size, st.st_mtime_ns)
        if cursor.token == sig:
            return Change([], cursor)
        if st.st_size == 0:
            return Change([], cursor)
        try:
            entries = self._collected().entries
        except LogFormatError as exc:
            return Change([], cursor, FollowProblem("invalid", None, exc.detail, self.address))
        n = cursor.position
        if len(entries) < n:
            return Change([], cursor, FollowProblem(
                "truncated", n - 1, f"the file now holds {len(entries)} entries; {n} were read",
                self.address))
        if n and cursor.last is not None and entries[n - 1] != cursor.last:
            return Change([], cursor, FollowProblem(
                "rewritten", n - 1, f"entry {n - 1} changed since it was read", self.address))
        new = [dict(e) for e in entries[n:]]
        last = new[-1] if new else cursor.last
        return Change(new, Cursor(len(entries), last, sig))

    def _jsonl_changes(self, cursor: Cursor, st: os.stat_result) -> Change:
        from agentscope.log.validate import loads

        source = self.address
        mark = cursor.token if isinstance(cursor.token, _JsonlMark) else None
        offset = mark.offset if mark else 0
        if st.st_size < offset:
            return Change([], cursor, FollowProblem(
                "truncated", cursor.position - 1 if cursor.position else None,
                f"the file shrank to {st.st_size} bytes; {offset} were read", source))
        if mark is not None and st.st_size == offset:
            return Change([], cursor)
        try:
            with self.path.open("rb") as fh:
                ino = os.fstat(fh.fileno()).st_ino
                if mark is not None and mark.last_line is not None:
                    at, raw = mark.last_line
                    fh.seek(at)
                    if fh.read(len(raw)) != raw:
                        return Change([], cursor, FollowProblem(
                            "rewritten", cursor.position - 1,
                            f"line {mark.line} changed since it was read", source))
                fh.seek(offset)
                data = fh.read()
        except FileNotFoundError:
            return self.changes(self.thread_id, cursor)
        except OSError as exc:
            raise _unreadable(exc, source) from None
        if offset == 0 and data.startswith(_BOM):
            data = data[len(_BOM):]
            offset = len(_BOM)
        line = mark.line if mark else 0
        last_line = mark.last_line if mark else None
        skip = cursor.position if mark is None else 0  # entries read elsewhere: check, skip
        position = cursor.position - skip
        last = cursor.last if mark is not None else None
        out: list[dict[str, Any]] = []
        start = 0
        while True:
            nl = data.find(b"\n", start)
            if nl < 0:
                break
            raw = data[start : nl + 1]
            line += 1
            stripped = raw.strip()
            if stripped:
                try:
                    value = loads(stripped.decode("utf-8"))
                except (ValueError, UnicodeDecodeError) as exc:
                    mark = _JsonlMark(ino, offset + start, line - 1, last_line)
                    return Change(out, Cursor(position + len(out) if not skip else position,
                                              last, mark), FollowProblem(
                        "invalid", position, f"line {line}: not a JSON entry: {exc}", source))
                if skip:
                    skip -= 1
                    position += 1
                    if skip == 0 and cursor.last is not None and value != cursor.last:
                        return Change([], cursor, FollowProblem(
                            "rewritten", position - 1,
                            f"entry {position - 1} changed since it was read", source))
                else:
                    out.append(value)
                    position += 1
                last = value
                last_line = (offset + start, raw)
            start = nl + 1
        if skip:  # fewer complete entries than were read
            return Change([], cursor, FollowProblem(
                "truncated", cursor.position - 1,
                f"the file holds {position} complete entries; {cursor.position} were read",
                source))
        pending = bool(data[start:].strip())
        return Change(out, Cursor(position, last, _JsonlMark(ino, offset + start, line, last_line)),
                      pending=pending)


def _decoded(raw: bytes) -> str | bytes:
    """A line's text: ``str`` when UTF-8, else the bytes as stored."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return raw


def _parses(raw: bytes) -> bool:
    """Whether a JSON Lines line is a complete JSON value."""
    from agentscope.log.validate import loads

    try:
        loads(raw.decode("utf-8"))
    except (ValueError, UnicodeDecodeError):
        return False
    return True


def _ino(token: object) -> int | None:
    if isinstance(token, _JsonlMark):
        return token.ino
    if isinstance(token, tuple) and token and isinstance(token[0], int):
        return token[0]
    return None


class DirectoryStore:
    """A directory of log files as a store: one thread per file with a log suffix
    (:data:`LOG_SUFFIXES`), named by its file name without extension (the full name when two
    files share a stem). Each thread is a :class:`FileStore`."""

    kind = "directory"

    def __init__(self, path: str | os.PathLike[str], *, columns: Mapping[str, Any] | None = None) -> None:
        self.path = Path(path)
        self.address = str(path)
        self.columns = columns
        try:
            files = sorted(p for p in self.path.iterdir()
                           if p.suffix.lower() in LOG_SUFFIXES and p.is_file())
        except OSError as exc:
            raise UnreadableSourceError(
                f"cannot read the directory: {exc.strerror or exc}", source=self.address,
                os_error=exc) from None
        stems = [p.stem for p in files]
        self._files = {
            (p.stem if stems.count(p.stem) == 1 else p.name): p for p in files
        }
        self._stores: dict[str, FileStore] = {}

    def _store(self, thread: str) -> FileStore:
        if thread not in self._files:
            raise ThreadNotFoundError(
                f"no thread {thread!r}; available threads: {sorted(self._files)}",
                source=self.address)
        if thread not in self._stores:
            self._stores[thread] = FileStore(self._files[thread], columns=self.columns)
        return self._stores[thread]

    def threads(self) -> list[ThreadInfo]:
        """One :class:`ThreadInfo` per log file, by thread id."""
        out = []
        for name in sorted(self._files):
            try:
                (info,) = self._store(name).threads()
            except LogFormatError as exc:
                info = ThreadInfo(name, 0, None, None, error=exc.detail)
            out.append(ThreadInfo(name, info.length, info.first_recorded_at,
                                  info.last_recorded_at, error=info.error))
        return out

    def length(self, thread: str) -> int:
        """Entries of the thread's file."""
        store = self._store(thread)
        return store.length(store.thread_id)

    def read(self, thread: str, from_: int = 0) -> Iterator[list[Record]]:
        """The thread's file's entries, in batches."""
        store = self._store(thread)
        return store.read(store.thread_id, from_)

    def texts(self, thread: str, from_: int = 0) -> Iterator[list[str | bytes]]:
        """The thread's file's record texts, in batches."""
        store = self._store(thread)
        return store.texts(store.thread_id, from_)

    def log(
        self, thread: str | None = None, *, errors: ErrorsMode = "raise", era: Era | None = None
    ) -> EventLog:
        """The thread's file read as one log (``thread=None``: the only file)."""
        if thread is None:
            if len(self._files) != 1:
                raise ThreadNotFoundError(
                    f"the directory holds {len(self._files)} log files; pass thread= one of "
                    f"{sorted(self._files)}", source=self.address)
            (thread,) = self._files
        store = self._store(thread)
        log = store.log(errors=errors, era=era)
        log.thread = thread
        return log

    def changes(self, thread: str, cursor: Cursor) -> Change:
        """The thread's file's changes (:meth:`FileStore.changes`)."""
        store = self._store(thread)
        return store.changes(store.thread_id, cursor)

    def wait(self, timeout: float) -> bool:
        """See :meth:`agentscope.stores.protocol.Store.wait`: sleeps."""
        return sleep_for(timeout)

    def close(self) -> None:
        """Forget the per-file stores."""
        self._stores.clear()

    def __enter__(self) -> DirectoryStore:
        return self

    def __exit__(
        self, tp: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

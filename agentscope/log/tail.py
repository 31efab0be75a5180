"""Tails: the new entries of a store or file being appended to, read-only (spec §5.1, §5.2).

The reading half of live follow (:mod:`agentscope.follow`): a :class:`Follower` hands what a tail
reads to :meth:`agentscope.pipeline.Timeline.extend`, which folds and verifies only the new
entries. This module reads; it never folds or validates, and imports nothing above ``log``.

Two tails read **only what is new** (work per entry O(1) amortised; nothing is re-read):

- :class:`SqliteTail`: one thread of a §5.2 store, also in WAL mode while the host's writer
  appends. Each poll first compares a cheap ``stat`` signature of the database and its ``-wal``
  (no change: no open at all); otherwise it opens the file read-only through
  :func:`agentscope.log.sqlite.connect` (the one place for the read-only rules: ``mode=ro``,
  one read transaction, so a poll sees one consistent committed prefix; ``immutable`` only when
  no ``-wal`` exists; a ``-wal`` without ``-shm`` read from a private copy) and selects
  ``idx >= next`` on the primary key. A poll that read a WAL-mode file as ``immutable`` (no
  ``-wal`` when it began) is discarded and retried if the files changed while it read: a writer
  that started meanwhile could be checkpointing pages the immutable read does not lock.
- :class:`JsonlTail`: a JSON Lines file, read from the last byte offset. A last line without
  its newline is a write in progress and is waited on, not an error.

What is under the follower is checked on every poll that sees a change, in O(1): the last entry
read must still be there unchanged (SQLite: the row at ``next - 1``; JSONL: the bytes of the last
line, the file's inode and size). A thread that is truncated, forked or rewritten under the
follower, or a file that is replaced or shrinks, is **reported** (:class:`FollowProblem`) and
following stops; nothing is merged.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, Generic, Protocol, TypeVar

from agentscope.errors import FollowError, FollowKind, FollowProblem, LogFormatError


class Extendable(Protocol):
    """What a :class:`Follower` needs of a timeline (:class:`agentscope.pipeline.Timeline` is
    one): its entries and log, random access to its frames, and ``extend``. A protocol, so
    this reading layer imports nothing of the replay layer above it."""

    @property
    def entries(self) -> Sequence[Mapping[str, Any]]: ...

    @property
    def log(self) -> Any: ...

    def __len__(self) -> int: ...

    def __getitem__(self, n: int) -> Any: ...

    def extend(self, entries: Sequence[Mapping[str, Any]]) -> range: ...


_T = TypeVar("_T", bound=Extendable)

__all__ = ["Extendable", "FollowError", "FollowProblem", "Follower", "JsonlTail", "SqliteTail",
           "follow_timeline", "open_tail"]

ProblemKind = FollowKind
_RECHECK_S = 1.0


def _sig(*paths: Path) -> tuple[Any, ...]:
    out: list[Any] = []
    for p in paths:
        try:
            st = os.stat(p)
        except FileNotFoundError:
            out.append(None)
            continue
        out.append((st.st_ino, st.st_size, st.st_mtime_ns))
    return tuple(out)


class _Tail:
    """What both tails share: where they read, and the problem that stopped them."""

    source: str
    problem: FollowProblem | None = None

    def _stop(self, kind: ProblemKind, index: int | None, message: str) -> list[dict[str, Any]]:
        self.problem = FollowProblem(kind, index, message, self.source)
        return []


class SqliteTail(_Tail):
    """New entries of one thread of a §5.2 SQLite store, read-only (see the module docstring).

    Parameters
    ----------
    path : path
        The store. It may not exist yet, nor the table or thread: polls then return nothing.
    thread : str
        The thread id.
    table : str, optional
        The event-log table (default: the only one, ``agent_event_log`` first).
    start : int
        Index of the first entry to read (entries ``0..start-1`` were read elsewhere).
    last : Mapping, optional
        The entry at ``start - 1`` as already read: the first poll checks it is still there.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        thread: str,
        *,
        table: str | None = None,
        start: int = 0,
        last: Mapping[str, Any] | None = None,
    ) -> None:
        self.path = Path(path)
        self.thread = thread
        self.table = table
        self.next = start
        self._last = last
        self._last_text: str | None = None
        self._seen: tuple[Any, ...] | None = None
        self._read_at = 0.0
        self.source = f"{self.path}#{thread}"
        self.problem: FollowProblem | None = None

    def poll(self) -> list[dict[str, Any]]:
        """Entries appended since the last poll (empty when nothing changed or after a problem)."""
        from agentscope.log.sqlite import connect, event_tables, is_wal, quote_ident
        from agentscope.log.validate import loads

        if self.problem is not None:
            return []
        wal = self.path.with_name(self.path.name + "-wal")
        before = _sig(self.path, wal)
        now = time.monotonic()
        if before[0] is None or before[0][1] == 0:
            return []
        # an unchanged signature means nothing new; still read once a second, since a WAL that
        # restarts from its beginning within one clock tick can keep its size and mtime
        if before == self._seen and now - self._read_at < _RECHECK_S:
            return []
        self._read_at = now
        immutable_read = before[1] is None and is_wal(self.path)
        try:
            with connect(self.path) as conn:
                tables = event_tables(conn)
                name = self.table or (tables[0] if tables else None)
                if name is None or name not in tables:
                    rows: list[Any] = []
                    last_row = None
                else:  # both on the (thread_id, idx) primary key: O(new rows), never a scan
                    q = quote_ident(name)
                    last_row = (
                        conn.execute(f"SELECT entry FROM {q} WHERE thread_id = ? AND idx = ?",
                                     (self.thread, self.next - 1)).fetchone()
                        if self.next > 0 else None
                    )
                    rows = conn.execute(
                        f"SELECT idx, entry_id, entry FROM {q} WHERE thread_id = ? AND idx >= ? "
                        "ORDER BY idx", (self.thread, self.next)).fetchall()
        except LogFormatError as exc:
            if "not a SQLite database" in str(exc) or "no such" in str(exc):
                raise
            return []  # locked or busy (a rollback-journal writer mid-commit): try again later
        if immutable_read and _sig(self.path, wal) != before:
            return []  # a writer started while the file was read as immutable: read it again
        if self.next > 0:
            if last_row is None:
                return self._stop("truncated", self.next - 1,
                                  f"entry {self.next - 1} is gone from thread {self.thread!r} "
                                  "(the thread was truncated or deleted under the follower)")
            text = last_row[0]
            if self._last_text is not None:
                same = text == self._last_text
            else:  # the entry was read elsewhere (Timeline.follow): compare the parsed values
                try:
                    same = self._last is None or loads(text) == self._last
                except ValueError:
                    same = False
            if not same:
                return self._stop("rewritten", self.next - 1,
                                  f"entry {self.next - 1} of thread {self.thread!r} changed "
                                  "since it was read (a fork or an edit under the follower)")
            self._last_text = text
        out: list[dict[str, Any]] = []
        for idx, entry_id, text in rows:
            if idx != self.next:
                self._stop("gap", self.next, f"expected idx {self.next}, the store has {idx}")
                break
            try:
                value = loads(text)
            except ValueError as exc:
                self._stop("invalid", idx, f"row holds invalid JSON: {exc}")
                break
            if not isinstance(value, dict) or value.get("index") != idx or value.get("id") != entry_id:
                self._stop("invalid", idx, f"row columns (idx={idx}, entry_id={entry_id!r}) "
                                           "disagree with the entry JSON")
                break
            out.append(value)
            self._last_text = text
            self.next += 1
        self._seen = before
        return out


class JsonlTail(_Tail):
    """New entries of a JSON Lines file being appended to (see the module docstring).

    Parameters
    ----------
    path : path
        The file (it may not exist yet).
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self.source = str(self.path)
        self.offset = 0
        self.next = 0
        self.line = 0
        self._partial = b""
        self._ino: int | None = None
        self._last_line: tuple[int, bytes] | None = None  # (offset, bytes incl. newline)
        self.problem: FollowProblem | None = None

    @property
    def pending(self) -> bool:
        """Whether an incomplete last line (a write in progress) is being waited on."""
        return bool(self._partial.strip())

    def poll(self) -> list[dict[str, Any]]:
        """Entries on the lines completed since the last poll."""
        from agentscope.log.validate import loads

        if self.problem is not None:
            return []
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            if self._ino is not None:
                return self._stop("replaced", None, "the file was removed")
            return []
        if self._ino is not None and st.st_ino != self._ino:
            return self._stop("replaced", None, "the file was replaced (another inode)")
        size_read = self.offset + len(self._partial)
        if st.st_size < size_read:
            return self._stop("truncated", self.next if self.next else None,
                              f"the file shrank to {st.st_size} bytes; {size_read} were read")
        if st.st_size == size_read:
            return []
        with self.path.open("rb") as fh:
            self._ino = os.fstat(fh.fileno()).st_ino
            if self._last_line is not None:
                at, raw = self._last_line
                fh.seek(at)
                if fh.read(len(raw)) != raw:
                    return self._stop("rewritten", self.next - 1,
                                      f"line {self.line} changed since it was read")
            fh.seek(size_read)
            data = fh.read()
        buf = self._partial + data
        out: list[dict[str, Any]] = []
        start = 0
        base = self.offset
        while True:
            nl = buf.find(b"\n", start)
            if nl < 0:
                break
            raw = buf[start : nl + 1]
            self.line += 1
            stripped = raw.strip()
            if stripped:
                try:
                    value = loads(stripped.decode("utf-8"))
                except (ValueError, UnicodeDecodeError) as exc:
                    self._stop("invalid", self.next,
                               f"line {self.line}: not a JSON entry: {exc}")
                    break
                out.append(value)
                self.next += 1
                self._last_line = (base + start, raw)
            start = nl + 1
        self.offset = base + start
        self._partial = buf[start:] if self.problem is None else b""
        return out


def open_tail(source: str | os.PathLike[str], thread: str | None = None, *,
              start: int = 0, last: Mapping[str, Any] | None = None) -> SqliteTail | JsonlTail:
    """A tail for ``source``: a SQLite store (``thread`` required) or a JSONL file.

    Raises
    ------
    LogFormatError
        A store without ``thread``, or a JSON (not JSON Lines) file.
    """
    p = Path(source)
    head = b""
    if p.is_file():
        with p.open("rb") as fh:
            head = fh.read(16)
    if head == b"SQLite format 3\x00" or (thread is not None and not head):
        if thread is None:
            raise LogFormatError("following a store needs a thread: STORE#THREAD", source=str(p))
        return SqliteTail(p, thread, start=start, last=last)
    if head.lstrip()[:1] == b"[":
        raise LogFormatError("only JSON Lines files (one entry per line) can be followed",
                             source=str(p))
    tail = JsonlTail(p)
    if start:
        # skip the lines already read elsewhere (once, at start), then follow from there
        skipped: list[dict[str, Any]] = []
        while len(skipped) < start:
            got = tail.poll()
            if not got:
                break
            skipped.extend(got)
        if len(skipped) != start or (last is not None and skipped[start - 1] != last):
            raise LogFormatError(f"the file no longer starts with the {start} entries read",
                                 source=str(p))
    return tail


class Follower(Generic[_T]):
    """A timeline kept up to date with its source: :meth:`poll` appends what is new.

    Build one with :func:`agentscope.follow.follow` or :meth:`agentscope.pipeline.Timeline.follow`.

    Attributes
    ----------
    timeline : Timeline
        The open timeline; it grows with each poll (``len(timeline)``).
    tail : SqliteTail | JsonlTail
    problem : FollowProblem | None
        Set when following stopped (truncated, forked/rewritten, replaced, invalid entry).
    """

    def __init__(self, timeline: _T, tail: SqliteTail | JsonlTail) -> None:
        self.timeline = timeline
        self.tail = tail
        self.polls = 0

    @property
    def problem(self) -> FollowProblem | None:
        return self.tail.problem

    def poll(self) -> range:
        """Read what was appended, verify it (``Timeline.extend``) and return the new indices."""
        self.polls += 1
        new = self.tail.poll()
        return self.timeline.extend(new) if new else range(len(self.timeline), len(self.timeline))

    def frames(
        self,
        *,
        interval: float = 0.2,
        idle_exit: float | None = None,
        stop: Callable[[], bool] | None = None,
        from_start: bool = True,
    ) -> Iterator[Any]:
        """Yield every frame (``timeline[i]``, a :class:`~agentscope.frames.Frame`), in order,
        as entries arrive: those already read first (unless ``from_start=False``), then new
        ones, polling every ``interval`` seconds.

        Ends after ``idle_exit`` seconds without a new entry, when ``stop()`` returns true, or
        at a :attr:`problem`.
        """
        tl = self.timeline
        i = 0 if from_start else len(tl)
        last_new = time.monotonic()
        while True:
            while i < len(tl):
                yield tl[i]
                i += 1
            if self.problem is not None or (stop is not None and stop()):
                return
            got = self.poll()
            if len(got):
                last_new = time.monotonic()
                continue
            if self.problem is not None:
                return
            if idle_exit is not None and time.monotonic() - last_new >= idle_exit:
                return
            time.sleep(interval)


def follow_timeline(timeline: _T, source: str | os.PathLike[str] | None = None, *,
                    thread: str | None = None) -> Follower[_T]:
    """A :class:`Follower` for an open timeline: it continues from the timeline's last entry.

    ``source``/``thread`` default to the log's ``source`` and ``thread`` (a log from
    :func:`agentscope.read_log`). The source's entry at ``len(timeline) - 1`` must still be the
    timeline's (else ``LogFormatError``, or a ``rewritten`` problem on the first poll).
    """
    log = timeline.log
    src = source if source is not None else getattr(log, "source", None)
    if src is None:
        raise LogFormatError("this timeline's log has no source path; pass source=")
    thread = thread if thread is not None else getattr(log, "thread", None)
    entries: Sequence[Mapping[str, Any]] = timeline.entries
    n = len(entries)
    tail = open_tail(src, thread, start=n, last=entries[n - 1] if n else None)
    return Follower(timeline, tail)

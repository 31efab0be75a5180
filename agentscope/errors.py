"""Every error agentscope raises.

One root, :class:`AgentscopeError`; each stage has its own subclass, which also inherits the
builtin a Python caller would expect (``ValueError`` for bad input, ``RuntimeError`` for an engine
that failed). Each error carries a stable ``code`` (the reference library's code where the spec
gives one, spec §1.2, §1.3, §4.1, §4.2) and the place it is about as attributes, so a caller can
branch on data rather than on message text.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

__all__ = [
    "AgentscopeError",
    "CacheWarning",
    "DamagedStoreError",
    "EngineError",
    "EntryValidationError",
    "FollowError",
    "FollowProblem",
    "IncompleteRecordError",
    "LogFormatError",
    "LogReadWarning",
    "MachineExecutionError",
    "MachineLoadError",
    "MachineVersionMismatchError",
    "NonSerializableError",
    "QueryError",
    "RecorderError",
    "ReplayDivergenceError",
    "SnapshotDivergedError",
    "SnapshotRestoreError",
    "StatechartConfigError",
    "StoreError",
    "ThreadNotFoundError",
    "UnreadableSourceError",
]


class AgentscopeError(Exception):
    """Root of every error agentscope raises. ``code`` is a stable, machine-readable string.

    Catch it to handle anything the library raises; the subclasses (listed with their codes in
    the reference's Errors page) carry the file, entry index, line and field where they apply.

    Examples
    --------
    >>> import agentscope as asc
    >>> try:
    ...     asc.read_log("no-such-log.json")
    ... except asc.AgentscopeError as err:
    ...     print(type(err).__name__, err.code)
    LogFormatError invalid-event-log
    """

    code: str = "agentscope-error"


def _place(
    source: str | None, index: int | None, line: int | None, field: str | None
) -> str:
    parts: list[str] = []
    if source:
        parts.append(str(source))
    if index is not None:
        parts.append(f"entry {index}")
    if line is not None:
        parts.append(f"line {line}")
    if field:
        parts.append(f"field '{field}'")
    return ": ".join(parts)


class LogFormatError(AgentscopeError, ValueError):
    """A log could not be read: bad syntax, a wrong shape, or an entry that breaks the spec.

    Attributes
    ----------
    source : str | None
        The file path (or ``"<list>"``, ``"<DataFrame>"``, ``"<stream>"``) the log came from.
    index : int | None
        0-based position of the entry in the log, when the problem is about one entry.
    line : int | None
        1-based line number in the file, for line-oriented sources (JSONL) and JSON syntax errors.
    field : str | None
        Dotted path of the offending field inside the entry, e.g. ``"verification.stateHash"``.
    detail : str
        What was wrong and what was expected, without the place prefix.
    """

    code = "invalid-event-log"

    def __init__(
        self,
        detail: str,
        *,
        source: str | None = None,
        index: int | None = None,
        line: int | None = None,
        field: str | None = None,
    ) -> None:
        self.detail = detail
        self.source = source
        self.index = index
        self.line = line
        self.field = field
        place = _place(source, index, line, field)
        super().__init__(f"{place}: {detail}" if place else detail)

    def with_place(
        self,
        *,
        source: str | None = None,
        index: int | None = None,
        line: int | None = None,
    ) -> LogFormatError:
        """Return a copy of this error with the missing place information filled in."""
        clone = type(self).__new__(type(self))
        clone.__dict__.update(self.__dict__)
        LogFormatError.__init__(
            clone,
            self.detail,
            source=self.source if self.source is not None else source,
            index=self.index if self.index is not None else index,
            line=self.line if self.line is not None else line,
            field=self.field,
        )
        return clone


class EntryValidationError(LogFormatError):
    """An entry breaks the envelope rules of spec §1.2 or the log-level rules of §1.3."""


class NonSerializableError(EntryValidationError):
    """A value in an entry is not JSON-safe (spec §1.2 step 2): ``-0``, ``NaN``, ``Infinity``, ….

    ``path`` is the reference library's path form (``entry.event.output.createdAt``) and
    ``value_type`` its type label (``"NaN"``, ``"-0"``, ``"Infinity"``, a type name …).
    """

    code = "non-serializable-event"

    def __init__(
        self,
        path: str,
        value_type: str,
        *,
        source: str | None = None,
        index: int | None = None,
        line: int | None = None,
    ) -> None:
        self.path = path
        self.value_type = value_type
        field = path[len("entry.") :] if path.startswith("entry.") else path
        super().__init__(
            f"Agent event field '{path}' is not JSON-serializable ({value_type}).",
            source=source,
            index=index,
            line=line,
            field=field,
        )


class IncompleteRecordError(LogFormatError):
    """A JSONL record was cut short: a crash in the middle of an append (a "torn" write).

    The final line of a file without a trailing newline that does not parse (message
    ``incomplete final record (line 17, no trailing newline)``), or a line holding the start of
    a record that a later line (or the rest of the same line) repeats in full. ``errors="collect"``
    keeps every complete entry and lists the torn record in ``EventLog.problems``.
    """

    code = "incomplete-record"


class DamagedStoreError(LogFormatError):
    """A SQLite store (spec §5.2) is corrupt where a thread's rows are stored.

    ``thread`` is the thread that cannot be read in full; ``last_idx`` the last ``idx`` read
    before the damage (``None`` when not even the first row is readable); ``index`` the
    position of the first entry that cannot be read.
    """

    code = "damaged-store"

    def __init__(
        self,
        detail: str,
        *,
        source: str | None = None,
        index: int | None = None,
        thread: str | None = None,
        last_idx: int | None = None,
    ) -> None:
        self.thread = thread
        self.last_idx = last_idx
        super().__init__(detail, source=source, index=index)


class UnreadableSourceError(LogFormatError):
    """A log source exists but cannot be opened or read (permission denied, an I/O error), or a
    string given as a path cannot be one (too long, an embedded NUL). ``os_error`` is the
    underlying :class:`OSError`, when there is one."""

    code = "unreadable-source"

    def __init__(self, detail: str, *, source: str | None = None, os_error: OSError | None = None) -> None:
        self.os_error = os_error
        super().__init__(detail, source=source)


class LogReadWarning(UserWarning):
    """A log was read with ``errors="collect"`` but part of it was left out (e.g. a torn final
    JSONL record); the details are in ``EventLog.problems``."""


class CacheWarning(UserWarning):
    """A verdict cache (``verify_store(cache=…)``) was not used, in whole or in part: the file
    is not a verdict cache of this version (or not a database), or rows of it are damaged. The
    rows concerned are verified again; the file is never trusted nor overwritten when foreign."""


class ThreadNotFoundError(LogFormatError, KeyError):
    """A store was asked for a thread it does not hold, or holds several and none was named."""

    code = "unknown-thread"

    def __str__(self) -> str:  # KeyError would otherwise quote the message
        return Exception.__str__(self)


class StoreError(LogFormatError):
    """A store (spec §5) cannot be opened or read as a whole: an address no store implementation
    takes (unknown URL scheme), a refused connection, a missing table (the message lists the
    tables found) or column (the message names the mapping), a SQLite store with a hot rollback
    journal, a missing optional extra (the message names it). ``source`` is the store's display
    address (secrets such as a URL's password removed, never printed back).
    """

    code = "store-error"


FollowKind = Literal["truncated", "rewritten", "replaced", "removed", "gap", "invalid"]
"""Why following stopped (see :class:`FollowProblem`)."""


@dataclass(frozen=True, slots=True)
class FollowProblem:
    """Why following a store's thread stopped: the source no longer extends what was read.

    ``kind``: ``truncated`` (fewer entries / bytes than already read), ``rewritten`` (the entry
    at an index already read changed: a fork written over the thread, or an edit), ``replaced``
    (the file was replaced: another inode), ``removed`` (the source, read before, is gone),
    ``gap`` (new rows do not continue the indices read), ``invalid`` (a complete line or row that
    is not a JSON entry). ``index`` is the entry index concerned (``None``: the whole source);
    ``source`` the store's display address (``STORE#THREAD`` for a thread of a store).
    """

    kind: FollowKind
    index: int | None
    message: str
    source: str

    def __str__(self) -> str:
        where = f" at entry {self.index}" if self.index is not None else ""
        return f"{self.source}: {self.kind}{where}: {self.message}"


class FollowError(AgentscopeError):
    """Following stopped because of a :class:`FollowProblem` (``.problem``)."""

    code = "follow-stopped"

    def __init__(self, problem: FollowProblem) -> None:
        super().__init__(str(problem))
        self.problem = problem


class MachineVersionMismatchError(AgentscopeError, ValueError):
    """An entry targets another machine id or version than expected (spec §1.3).

    ``expected`` and ``actual`` are ``{"machineId": …, "machineVersion": …}`` dicts.
    """

    code = "machine-version-mismatch"

    def __init__(
        self,
        event_id: str,
        index: int,
        expected: dict[str, Any],
        actual: dict[str, Any],
        *,
        source: str | None = None,
    ) -> None:
        self.event_id = event_id
        self.index = index
        self.expected = expected
        self.actual = actual
        self.source = source
        prefix = f"{source}: " if source else ""
        super().__init__(
            f"{prefix}Event log entry '{event_id}' at index {index} targets machine "
            f"{self.identity(actual)}, expected {self.identity(expected)}."
        )

    @staticmethod
    def identity(ident: Mapping[str, Any]) -> str:
        """A machine identity ``{"machineId", "machineVersion"}`` as this error words it:
        ``'id'@'version'``."""
        return f"'{ident.get('machineId')}'@'{ident.get('machineVersion')}'"


class ReplayDivergenceError(AgentscopeError):
    """Replay reached a state whose hash is not the recorded one (spec §4.1), at the first such entry.

    ``kind`` is ``"state"`` (hash differs) or ``"missing-verification"`` (strict mode, no hash).
    ``expected`` is the recorded hash, ``actual`` the recomputed one.
    """

    code = "replay-diverged"

    def __init__(
        self,
        event_id: str,
        index: int,
        kind: str,
        expected: str | None = None,
        actual: str | None = None,
    ) -> None:
        self.event_id = event_id
        self.index = index
        self.kind = kind
        self.expected = expected
        self.actual = actual
        if expected is None:  # nothing recorded: kind missing-verification (strict mode)
            msg = f"Replay entry '{event_id}' at index {index} has no recorded verification hash."
        else:
            msg = (
                f"Replay diverged after '{event_id}' at index {index}: expected state hash "
                f"'{expected}', got '{actual}'."
            )
        super().__init__(msg)


class SnapshotDivergedError(AgentscopeError):
    """A cached snapshot (``agentMeta``) disagrees with the log it claims to cache (spec §4.2)."""

    code = "snapshot-diverged"

    def __init__(self, expected: str, actual: str, log_index: int) -> None:
        self.expected = expected
        self.actual = actual
        self.log_index = log_index
        super().__init__(
            f"The cached snapshot disagrees with the event log at index {log_index}: the log "
            f"replays to state hash '{expected}', the snapshot hashes '{actual}'."
        )


class EngineError(AgentscopeError, RuntimeError):
    """A statechart engine failed: Node missing or crashed, a machine threw, bad runner output."""

    code = "engine-error"


class MachineLoadError(EngineError):
    """A machine module could not be loaded: not found, no such export, not a machine, …."""

    code = "machine-load-error"


class SnapshotRestoreError(EntryValidationError, EngineError):
    """A persisted snapshot names what the machine lacks (a state, a history node, a child's ``src``).

    Both engines raise it with the same message (XState's own words, e.g. ``Persisted snapshot
    references state 'zz' which does not exist on machine 'x'.``). ``field`` is the dotted path
    inside the snapshot (``"value"``); a log's init entry re-raises it with ``index=0`` and
    ``field="event.snapshot.value"``. ``stack`` keeps the JS stack trace of the Node engine (never
    in the message); ``None`` for the Python engine.
    """

    code = "invalid-snapshot"

    def __init__(
        self,
        detail: str,
        *,
        source: str | None = None,
        index: int | None = None,
        line: int | None = None,
        field: str | None = None,
        stack: str | None = None,
    ) -> None:
        self.stack = stack
        super().__init__(detail, source=source, index=index, line=line, field=field)

    def in_init_entry(self) -> SnapshotRestoreError:
        """Return this error placed in a log's init entry (entry 0, ``event.snapshot.<field>``)."""
        sub = f"event.snapshot.{self.field}" if self.field else "event.snapshot"
        return SnapshotRestoreError(self.detail, source=self.source, index=0, field=sub, stack=self.stack)


class StatechartConfigError(AgentscopeError, ValueError):
    """A Python statechart config is invalid or uses something the engine does not support."""

    code = "invalid-statechart"


class MachineExecutionError(EngineError):
    """The user's machine threw while the engine folded an event (a guard, ``context`` function,
    dynamic transition, ``migrate``…), or produced a snapshot that is not JSON.

    ``index`` is the position of the failing event in the batch given to ``fold`` (``None`` when
    the failure was outside a batch, e.g. in ``initial``; in a ``VerifyReport``'s ``errors``, the
    failing entry's position in the log), ``event_type`` its ``type``, ``kind`` the engine's
    classification (``"machine-error"``, ``"not-serializable"``). ``raised`` is what the machine
    raised, without the entry's place or the machine-mismatch context the message adds (e.g.
    ``"the machine 'ticket' raised in its context function: KeyError: 'title'"``): set on the
    error in a ``VerifyReport``'s ``errors``, ``None`` on an engine's own.
    """

    code = "machine-execution-error"

    def __init__(
        self, message: str, *, index: int | None = None, event_type: str | None = None, kind: str = "",
        raised: str | None = None,
    ) -> None:
        self.index = index
        self.event_type = event_type
        self.kind = kind
        self.raised = raised
        super().__init__(message)


class RecorderError(AgentscopeError, ValueError):
    """Misuse of :class:`~agentscope.recorder.Recorder`: a fork index outside ``[1, len]``,
    an existing output file or store thread, a malformed or reserved event."""

    code = "recorder-error"


class QueryError(AgentscopeError, ValueError):
    """A query expression (``Timeline.find``, ``check``, ``agentscope query``) cannot be used: a
    syntax error, an unknown name, or an ``in('state')`` that names no state of the machine.

    ``expression`` is the text and ``position`` the 0-based column of the problem (``None``
    when it is about the whole expression); the message shows the column with a caret.
    """

    code = "query-error"

    def __init__(self, message: str, *, expression: str | None = None,
                 position: int | None = None) -> None:
        self.expression = expression
        self.position = position
        super().__init__(message)

"""Record an event log by running a machine live, the way a host (``runAgent``) does.

:class:`Recorder` drives any :class:`~agentscope.engines.base.Machine` (the Python
:class:`~agentscope.engines.statechart.StatechartMachine` or the Node engine) and writes the
current-era log (spec §1.1): an ``@agent.init`` entry, then one entry per journaled event (spec
§1.5 "what gets journaled"): events the host sends, completions of invoked actors
(``xstate.done.actor`` / ``xstate.error.actor`` with ``actorId`` and ``sessionId``) and timer
firings (``xstate.timer``). Every entry carries ``verification.stateHash`` of the persisted
snapshot after it (spec §2), so a recorded log verifies with zero mismatches.

Time is a :class:`ManualClock`: nothing depends on the wall clock, so recording is deterministic
(``recordedAt`` values come from the clock; the ``executionId`` is a fresh UUID v4 unless given).
"""

from __future__ import annotations

import copy
import json
import os
import uuid
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from agentscope._deep import call_deep
from agentscope.engines._statechart_nodes import parse_duration
from agentscope.engines.base import NO_INPUT, Machine, Snapshot
from agentscope.errors import AgentscopeError, EngineError, MachineExecutionError, RecorderError
from agentscope.hashing import state_hash
from agentscope.log.entry import recorded_at_ms
from agentscope.log.validate import json_safety_problem
from agentscope.log.writers import SQLiteStoreWriter  # the one writer module
from agentscope.pipeline.fold import fold_segment  # the host sits above the fold

__all__ = ["ManualClock", "Recorder", "RecorderError"]



class ManualClock:
    """A clock that only moves when told to; milliseconds since the Unix epoch.

    Parameters
    ----------
    start : str | datetime | int, default ``"2026-01-01T00:00:00.000Z"``
        The starting instant: a ``recordedAt`` string (spec §1.4, read as V8 reads it, by
        :func:`agentscope.log.entry.recorded_at_ms`), an aware ``datetime`` or epoch
        milliseconds. Raises :class:`~agentscope.errors.RecorderError` for a string that is not a
        ``recordedAt`` (no offset, month 13, …) or a naive ``datetime``.

    Examples
    --------
    >>> import agentscope as asc
    >>> clock = asc.ManualClock("2026-01-01T00:00:00.000Z")
    >>> clock.advance(1500)
    >>> clock.iso(), clock.now_ms
    ('2026-01-01T00:00:01.500Z', 1767225601500)
    """

    def __init__(self, start: str | datetime | int = "2026-01-01T00:00:00.000Z") -> None:
        if isinstance(start, int):
            self.now_ms = start
        elif isinstance(start, str):
            ms = recorded_at_ms(start)
            if ms is None:
                raise RecorderError(f"ManualClock needs a recordedAt start (spec §1.4, with an "
                                    f"offset or Z), not {start!r}")
            self.now_ms = ms
        else:
            if start.tzinfo is None:
                raise RecorderError("ManualClock needs a timezone-aware start")
            self.now_ms = round(start.timestamp() * 1000)

    def advance(self, ms: int) -> None:
        """Move the clock forward by ``ms`` milliseconds (``ms >= 0``)."""
        if ms < 0:
            raise RecorderError("a clock cannot go backwards")
        self.now_ms += ms

    def iso(self) -> str:
        """The current instant as JS ``Date.prototype.toISOString`` writes it (``...T..:..:..sssZ``)."""
        dt = datetime(1970, 1, 1, tzinfo=UTC) + timedelta(milliseconds=self.now_ms)
        return dt.strftime("%Y-%m-%dT%H:%M:%S.") + f"{dt.microsecond // 1000:03d}Z"


def _error_payload(exc: BaseException) -> dict[str, Any]:
    """Normalize an exception the way ``createReplayEntry`` normalizes ``Error`` objects (spec §1.2)."""
    name = getattr(exc, "name", None)
    out: dict[str, Any] = {"name": name if isinstance(name, str) else type(exc).__name__, "message": str(exc)}
    if exc.__cause__ is not None:
        out["cause"] = _error_payload(exc.__cause__)
    return out


class Recorder:
    """Run ``machine`` live and journal a verifiable event log.

    Parameters
    ----------
    machine : Machine
        Any engine implementing the protocol.
    input : Any, optional
        The init input (absent by default: the init event then has no ``input`` key).
    snapshot : Mapping, optional
        Start from a persisted snapshot instead (a continuation: the init event carries the
        snapshot after ``machine.restore``, so ``migrate`` has run). Exclusive with ``input``.
    executors : Mapping[str, Callable[[Any], Any]], optional
        Actor implementations by ``src``: ``callable(input) -> output``; raising means failure.
        Defaults to the machine's ``actors`` when it has them (``StatechartMachine``). Invoked
        actors are completed automatically, in invocation order, after every step.
    clock : ManualClock, optional
        The time source for ``recordedAt`` and timers (default: a clock at 2026-01-01).
    machine_version : str, optional
        Override the ``machineVersion`` stamped on entries (spec §3).
    execution_id : str, optional
        The lineage id (init ``metadata.executionId``); a fresh UUID v4 by default.
    metadata : Mapping, optional
        Extra init metadata written after ``executionId`` (e.g. ``migratedFrom``).

    Raises
    ------
    RecorderError
        Both ``input`` and ``snapshot`` given.

    Examples
    --------
    >>> import agentscope as asc
    >>> from agentscope.examples.python_machines import counter_machine
    >>> rec = asc.Recorder(counter_machine())
    >>> rec.send({"type": "TOGGLE"})["index"]
    1
    >>> rec.clock.advance(1500)  # ms; timers and recordedAt follow this clock
    >>> entry = rec.send({"type": "INC", "by": 2})
    >>> entry["recordedAt"], entry["verification"], rec.persisted["context"]["count"]
    ('2026-01-01T00:00:01.500Z', {'stateHash': '0bc4a4c5'}, 2)
    >>> asc.verify(counter_machine(), rec.entries).ok
    True

    ``rec.to_jsonl(path)``, ``rec.to_json(path)`` and ``rec.to_sqlite(path, thread)`` write the log.
    """

    def __init__(
        self,
        machine: Machine,
        input: Any = NO_INPUT,
        *,
        snapshot: Mapping[str, Any] | None = None,
        executors: Mapping[str, Callable[[Any], Any]] | None = None,
        clock: ManualClock | None = None,
        machine_version: str | None = None,
        execution_id: str | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> None:
        if snapshot is not None and input is not NO_INPUT:
            raise RecorderError(
                "initEntry accepts exactly one of `input` (fresh start) or `snapshot` (continuation)."
            )
        self.machine = machine
        default_actors = getattr(machine, "actors", None)
        self.executors: dict[str, Callable[[Any], Any]] = dict(default_actors or {})
        self.executors.update(executors or {})
        self.clock = clock or ManualClock()
        self.machine_version = machine_version or machine.version
        self.execution_id = execution_id or str(uuid.uuid4())
        self.entries: list[dict[str, Any]] = []
        self._sink: tuple[SQLiteStoreWriter, str] | None = None
        self._completed: set[str] = set()
        self._due: dict[str, int] = {}
        if snapshot is not None:
            self.snapshot = machine.restore(snapshot)
            event: dict[str, Any] = {"type": "@agent.init", "snapshot": machine.persist(self.snapshot)}
        else:
            self.snapshot = machine.initial(input)
            event = {"type": "@agent.init"}
            if input is not NO_INPUT:
                event["input"] = call_deep(copy.deepcopy, input)
        meta: dict[str, Any] = {"executionId": self.execution_id}
        meta.update(metadata or {})
        self._append(event, meta)
        self._sync_timers()
        self.settle()

    # -- live operation ---------------------------------------------------------------
    @property
    def persisted(self) -> dict[str, Any]:
        """The current persisted snapshot."""
        return self.machine.persist(self.snapshot)

    def send(self, event: Mapping[str, Any]) -> dict[str, Any]:
        """Deliver a host event, journal it, then complete invoked actors. Returns its entry.

        Raises
        ------
        RecorderError
            ``event`` is not an object with a non-empty string ``type``, or uses the reserved
            ``@agent.init``.
        """
        if not isinstance(event, Mapping) or not isinstance(event.get("type"), str) or not event["type"]:
            raise RecorderError("an event must be a dict with a non-empty string 'type'")
        if event["type"] == "@agent.init":
            raise RecorderError("'@agent.init' is reserved for entry 0")
        ev = call_deep(lambda: json.loads(json.dumps(event)))  # a copy, however deep (MAX_DEPTH)
        entry = self._step(ev)
        self.settle()
        return entry

    def advance(self, ms: int) -> list[dict[str, Any]]:
        """Advance the clock by ``ms``; fire due timers in due order (each journaled as
        ``{"type": "xstate.timer", "id": <timer id>}``), completing actors after each.
        Returns the entries appended."""
        if ms < 0:
            raise RecorderError("a clock cannot go backwards")
        target = self.clock.now_ms + ms
        appended: list[dict[str, Any]] = []
        while True:
            due = sorted((t, tid) for tid, t in self._due.items() if t <= target)
            if not due:
                break
            when, tid = due[0]
            self.clock.now_ms = max(self.clock.now_ms, when)
            del self._due[tid]
            appended.append(self._step({"type": "xstate.timer", "id": tid}))
            n = len(self.entries)
            self.settle()
            appended.extend(self.entries[n:])
        self.clock.now_ms = target
        return appended

    def pending(self) -> list[dict[str, Any]]:
        """In-flight invoked actors: ``{"actorId", "src", "input", "sessionId"}`` in order."""
        out: list[dict[str, Any]] = []
        for actor_id, child in (self.persisted.get("children") or {}).items():
            session = self.machine.child_session(self.snapshot, actor_id)
            snap = child.get("snapshot") if isinstance(child, Mapping) else None
            out.append(
                {
                    "actorId": actor_id,
                    "src": child.get("src") if isinstance(child, Mapping) else None,
                    "input": snap.get("input") if isinstance(snap, Mapping) else None,
                    "sessionId": session,
                }
            )
        return out

    def complete(self, actor_id: str, output: Any = None) -> dict[str, Any]:
        """Journal ``xstate.done.actor`` for the running child ``actor_id`` (manual completion)."""
        return self._finish(actor_id, {"output": output})

    def fail(self, actor_id: str, error: BaseException | Mapping[str, Any]) -> dict[str, Any]:
        """Journal ``xstate.error.actor`` for the running child ``actor_id`` (manual failure)."""
        payload = _error_payload(error) if isinstance(error, BaseException) else dict(error)
        return self._finish(actor_id, {"error": payload})

    def settle(self) -> None:
        """Complete every in-flight actor that has an executor, repeatedly, in invocation order."""
        while True:
            todo = [
                p
                for p in self.pending()
                if p["sessionId"] not in self._completed and p["src"] in self.executors
            ]
            if not todo:
                return
            p = todo[0]
            self._completed.add(str(p["sessionId"]))
            try:
                result = self.executors[str(p["src"])](call_deep(copy.deepcopy, p["input"]))
            except Exception as exc:  # a failing actor is data: journaled as xstate.error.actor
                self._step(
                    {
                        "type": "xstate.error.actor",
                        "error": _error_payload(exc),
                        "actorId": p["actorId"],
                        "sessionId": p["sessionId"],
                    }
                )
                continue
            output = json.loads(json.dumps(result))
            self._step(
                {
                    "type": "xstate.done.actor",
                    "output": output,
                    "actorId": p["actorId"],
                    "sessionId": p["sessionId"],
                }
            )

    def fork(self, up_to_index: int) -> Recorder:
        """Return a new recorder continuing from the prefix ``entries[:up_to_index]`` (spec §5.1).

        ``up_to_index`` is exclusive and must be an integer in ``[1, len(entries)]``; entries are
        copied verbatim (ids, indices, ``recordedAt``, hashes, ``executionId``). The fork's state
        is the fold of the prefix; its clock starts at this recorder's current time.

        Raises
        ------
        RecorderError
            ``up_to_index`` out of range or not an integer.
        """
        n = len(self.entries)
        if isinstance(up_to_index, bool) or not isinstance(up_to_index, int) or not 1 <= up_to_index <= n:
            raise RecorderError(
                f"forkEventLog: upToIndex must be an integer in [1, {n}]; got {up_to_index!r}."
            )
        child = Recorder.__new__(Recorder)
        child.machine = self.machine
        child.executors = dict(self.executors)
        child.clock = ManualClock(self.clock.now_ms)
        child.machine_version = self.machine_version
        child.execution_id = self.execution_id
        child.entries = call_deep(copy.deepcopy, self.entries[:up_to_index])
        child._sink = None  # a fork is in memory until written
        child.snapshot = fold_entries(self.machine, child.entries)[-1]  # the one fold
        child._completed = set()
        child._due = {}
        child._sync_timers()
        return child

    # -- writing ----------------------------------------------------------------------
    def to_json(self, path: str | os.PathLike[str], *, overwrite: bool = False) -> Path:
        """Write the entries as one JSON array (UTF-8, as ``JSON.stringify`` writes it:
        :func:`agentscope.log.writers.write_json`). Refuses an existing file unless ``overwrite``."""
        from agentscope.log.writers import write_json

        return write_json(self.entries, self._target(path, overwrite), overwrite=True)

    def to_jsonl(self, path: str | os.PathLike[str], *, overwrite: bool = False) -> Path:
        """Write one compact JSON entry per line (UTF-8, :func:`agentscope.log.writers.write_jsonl`).
        Refuses an existing file unless ``overwrite``."""
        from agentscope.log.writers import write_jsonl

        return write_jsonl(self.entries, self._target(path, overwrite), overwrite=True)

    def to_sqlite(
        self,
        path: str | os.PathLike[str],
        thread: str = "main",
        *,
        table: str = "agent_event_log",
        live: bool = False,
        wal: bool = False,
    ) -> Path:
        """Append the log as thread ``thread`` of a §5.2 SQLite event-log store at ``path``.

        Creates the file and the table (``thread_id, idx, entry_id, entry`` with the
        ``(thread_id, idx)`` primary key and the unique ``<table>_thread_entry_id`` index) when
        missing. ``entry`` is the compact JSON of the entry, keys in insertion order.

        With ``live=True`` the store stays attached, as a host's store does: every later entry is
        appended as it is journaled (before the step returns), each in its own
        ``BEGIN IMMEDIATE`` transaction that checks the thread's length first (spec §5.2
        ``append``); :meth:`close` detaches. ``wal=True`` switches the database to WAL mode
        (``PRAGMA journal_mode=WAL``) first, so readers run while it writes.

        Raises
        ------
        RecorderError
            ``thread`` already has entries (a store is append-only and this never touches an
            existing thread), ``table`` is not a plain identifier, or ``path`` is an existing
            file that is not a SQLite database (it is left unchanged).
        """
        if not isinstance(thread, str) or not thread:
            raise RecorderError("thread must be a non-empty string")
        # a live store may be fed from another thread than the one that attached it
        store = SQLiteStoreWriter(path, table=table, wal=wal, shared=live)
        try:
            store.write_thread(thread, self.entries)
        except BaseException:
            store.close()
            raise
        if live:
            self.close()
            self._sink = (store, thread)
        else:
            store.close()
        return store.path

    def close(self) -> None:
        """Detach a live SQLite store (``to_sqlite(live=True)``); a no-op otherwise."""
        sink, self._sink = self._sink, None
        if sink is not None:
            sink[0].close()

    # -- internals --------------------------------------------------------------------
    @staticmethod
    def _target(path: str | os.PathLike[str], overwrite: bool) -> Path:
        p = Path(path)
        if p.exists() and not overwrite:
            raise RecorderError(f"{p} already exists; pass overwrite=True to replace it")
        return p

    def _finish(self, actor_id: str, payload: dict[str, Any]) -> dict[str, Any]:
        session = self.machine.child_session(self.snapshot, actor_id)
        if session is None:
            raise RecorderError(f"no running child {actor_id!r}")
        self._completed.add(session)
        kind = "xstate.done.actor" if "output" in payload else "xstate.error.actor"
        event = {"type": kind, **json.loads(json.dumps(payload)), "actorId": actor_id, "sessionId": session}
        entry = self._step(event)
        self.settle()
        return entry

    def _step(self, event: dict[str, Any]) -> dict[str, Any]:
        try:
            snapshot = self.machine.transition(self.snapshot, event)
        except AgentscopeError:
            raise
        except Exception as exc:
            raise EngineError(f"the machine failed on {event.get('type')!r}: {exc}") from exc
        entry = self._append(event, None, snapshot)  # raises before any state changes
        self.snapshot = snapshot
        self._sync_timers()
        return entry

    def _append(
        self, event: dict[str, Any], metadata: dict[str, Any] | None, snapshot: Snapshot | None = None
    ) -> dict[str, Any]:
        """Journal ``event`` with the state hash of ``snapshot`` (default: the current one).

        Raises :class:`MachineExecutionError` (kind ``"not-serializable"``) without appending
        when the persisted snapshot holds a value that is not JSON (spec §1.2 step 2, §6).
        """
        index = len(self.entries)
        persisted = self.machine.persist(self.snapshot if snapshot is None else snapshot)
        try:
            stamp = state_hash(persisted)
        except (TypeError, ValueError, RecursionError) as exc:
            where = _non_json_pointer(persisted)
            detail = f"{where[0]!r} holds a {where[1]}" if where else str(exc)
            raise MachineExecutionError(
                f"the machine's snapshot after {event.get('type')!r} (entry {index}) is not JSON: "
                f"{detail}; nothing was recorded",
                index=index,
                event_type=event.get("type"),
                kind="not-serializable",
            ) from exc
        entry: dict[str, Any] = {
            "schemaVersion": 1,
            "id": f"evt_{index:08d}",
            "index": index,
            "recordedAt": self.clock.iso(),
            "machineId": self.machine.machine_id,
            "machineVersion": self.machine_version,
            "event": event,
        }
        if metadata is not None:
            entry["metadata"] = metadata
        entry["verification"] = {"stateHash": stamp}
        if self._sink is not None:
            self._sink[0].append(self._sink[1], entry)  # write-ahead: in the store before the step returns
        self.entries.append(entry)
        return entry

    def _sync_timers(self) -> None:
        timers = self.machine.persist(self.snapshot).get("timers") or {}
        for tid in list(self._due):
            if tid not in timers:
                del self._due[tid]
        for tid, timer in timers.items():
            if tid not in self._due:
                delay = timer.get("delay", 0) if isinstance(timer, Mapping) else 0
                if isinstance(delay, str):  # a delayed raise persists its delay as written ("PT1S")
                    delay = parse_duration(delay) or 0
                self._due[tid] = self.clock.now_ms + int(delay if isinstance(delay, (int, float)) else 0)


def _non_json_pointer(value: Any, pointer: str = "") -> tuple[str, str] | None:
    """Return ``(JSON Pointer, type label)`` (RFC 6901) of the first non-JSON value, or ``None``."""
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                return pointer, f"non-string key {key!r}"
            found = _non_json_pointer(item, f"{pointer}/{key.replace('~', '~0').replace('/', '~1')}")
            if found:
                return found
        return None
    if isinstance(value, list | tuple):
        for i, item in enumerate(value):
            found = _non_json_pointer(item, f"{pointer}/{i}")
            if found:
                return found
        return None
    problem = json_safety_problem(value)
    return (pointer, problem[1]) if problem else None


def fold_entries(machine: Machine, entries: Sequence[Mapping[str, Any]]) -> list[Snapshot]:
    """Fold one segment of entries with ``machine``: one snapshot per entry (spec §4.1).

    The library's one fold (:func:`agentscope.pipeline.fold.fold_segment`: seed, batched ``fold``
    with session rebinding, the failing entry named).
    """
    return [snap for _, snap in fold_segment(machine, entries, 0, len(entries))]

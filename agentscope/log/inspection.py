"""Other people's logs: an XState inspection stream read as the root actor's event log.

Apps on plain XState (no agent library) can record what XState's inspection API reports
(``createActor(machine, {inspect})``) as JSON Lines, one record per inspection event. This module
reads such a recording as an :class:`~agentscope.log.model.EventLog` of one **root actor**, so
``verify``, the timeline, the player and every view work on it unchanged.

Records accepted (one JSON object per line, or a JSON array of them; key order free):

``@xstate.actor``
    An actor was created: ``sessionId``, ``rootId``, ``parentId`` (absent/``null`` for a root),
    ``actorId`` (XState v6's own event calls it ``id``; a root machine's actor id is its machine
    id), ``src``, optionally
    ``snapshot``, ``machineId``, ``machineVersion``, ``definition`` (the machine config as an
    object or JSON text, as ``@statelyai/inspect`` writes it).
``@xstate.snapshot`` (``@statelyai/inspect``, XState v5) and ``@xstate.transition`` (XState v6)
    The actor ``sessionId`` processed ``event`` and reached ``snapshot``. One record per
    processed (mailbox) event; raised events and eventless steps happen inside it, as in the
    journal of spec §1.5. ``sourceId``/``targetId`` name the sender/target session.
``@xstate.event``, ``@xstate.deadletter``, ``@xstate.microstep``, ``@xstate.action``
    Kept in :attr:`EventLog.actors` counts only; the events they carry reach the log through
    the snapshot/transition record of the actor that processed them.

``actorRef``/``sourceRef``/``targetRef``/``parentRef`` objects (or strings) may stand in for
``sessionId``/``sourceId``/``targetId``/``parentId``; ``createdAt`` (RFC 3339 text or epoch
milliseconds) becomes ``recordedAt``.

How the root actor's log is built (spec §1.1, §1.5):

- entry 0 is ``{"type": "@agent.init"}`` (with ``input`` when the root's ``@xstate.init`` event
  carried one): a fresh start, replayed from the machine;
- every later root snapshot/transition record is one entry, its ``event`` verbatim, in order;
- ``machineId`` is the recorded machine id (``machineId``, ``snapshot.machine.id``, the
  ``definition``'s ``id``, or the root actor's id); ``machineVersion`` the recorded
  ``machineVersion`` or ``snapshot.machine.version``, else the §3 version of the recorded
  ``definition`` (its declared ``version`` or its structural hash; a JSON round trip of
  ``machine.config`` gives the same hash unless an *array* in the config holds a function,
  which JSON writes as ``null``), else ``"(unversioned)"``. Pass ``machine=`` to stamp that
  machine's version instead (its id is still checked by replay);
- ``metadata.inspection`` keeps the record's ``sessionId``, ``sourceId``, ``line`` and the
  **recorded snapshot** (``snapshot``), so a step can be compared with the replayed one field
  by field; the init entry's ``metadata.executionId`` is the root session id.

Verification: when a recorded snapshot is a *persisted* snapshot (what
``actor.logic.getPersistedSnapshot(snapshot)`` returns: it has ``status``/``value``/``context``,
no ``tags``, and every child has a nested ``snapshot``), the entry gets
``verification.stateHash`` = the §2 hash of it, so replay compares each step with the recorded
state exactly as for an agent log (the hash strips the same volatile keys). A snapshot in another
form (e.g. the ``toJSON`` form with ``tags`` and child references) is kept in metadata but gives
no hash: verification reports the entry as ``missing`` instead of a false mismatch.
"""

from __future__ import annotations

import contextlib
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Protocol

from agentscope.errors import IncompleteRecordError, LogFormatError, ThreadNotFoundError
from agentscope.log.model import ErrorsMode, EventLog
from agentscope.log.validate import AGENT_INIT_EVENT_TYPE, TOO_DEEP, is_recorded_at, loads

if TYPE_CHECKING:
    import pandas as pd


class _Versioned(Protocol):
    """What :func:`read_inspection` needs of a machine: its §3 ``version`` (any
    :class:`~agentscope.engines.base.Machine` has one; the log layer sits below the engines)."""

    @property
    def version(self) -> str: ...


__all__ = [
    "ACTOR_COLUMNS",
    "INSPECTION_TYPES",
    "is_inspection_stream",
    "read_inspection",
]

INSPECTION_TYPES = frozenset(
    {
        "@xstate.actor",
        "@xstate.event",
        "@xstate.snapshot",
        "@xstate.transition",
        "@xstate.deadletter",
        "@xstate.microstep",
        "@xstate.action",
    }
)
"""The record types of an inspection stream (XState v5 via ``@statelyai/inspect``, and v6)."""

_STEP_TYPES = ("@xstate.snapshot", "@xstate.transition")
_INIT_EVENTS = ("@xstate.init", "xstate.init")
UNVERSIONED = "(unversioned)"
_EPOCH_STAMP = "1970-01-01T00:00:00.000Z"

ACTOR_COLUMNS = (
    "session_id",
    "parent_id",
    "root_id",
    "actor_id",
    "src",
    "is_root",
    "steps",
    "events",
    "status",
)
"""Columns of :attr:`EventLog.actors` for an inspection stream."""


def is_inspection_stream(head: bytes) -> bool:
    """Whether ``head`` (the first bytes of a source) starts like an inspection recording.

    True when the first JSON object (the first line, or the first item of an array) has a
    ``type`` in :data:`INSPECTION_TYPES` and no ``schemaVersion`` (an agent log entry has one).
    """
    text = head.lstrip(b"\xef\xbb\xbf \t\r\n")
    if text.startswith(b"["):
        text = text[1:].lstrip()
    if not text.startswith(b"{") or b'"@xstate.' not in text:
        return False
    try:  # the first JSON object, whatever follows it (the next line, or the array's rest)
        value, _ = json.JSONDecoder().raw_decode(text.decode("utf-8", "replace"))
    except (ValueError, RecursionError):
        return False
    return (
        isinstance(value, dict)
        and value.get("type") in INSPECTION_TYPES
        and "schemaVersion" not in value
    )


@dataclass
class _Actor:
    session_id: str
    parent_id: str | None = None
    root_id: str | None = None
    actor_id: str | None = None
    src: str | None = None
    record: Mapping[str, Any] | None = None
    steps: list[tuple[int, Mapping[str, Any]]] = field(default_factory=list)
    events: int = 0


def _ref_id(value: Any) -> str | None:
    """A session id from a recorded ref: a string, or an object with ``sessionId``/``id``."""
    if isinstance(value, str) and value:
        return value
    if isinstance(value, Mapping):
        for key in ("sessionId", "id"):
            v = value.get(key)
            if isinstance(v, str) and v:
                return v
    return None


def _session(record: Mapping[str, Any], key: str, ref: str) -> str | None:
    return _ref_id(record.get(key)) or _ref_id(record.get(ref))


def _stamp(value: Any) -> str | None:
    """``createdAt`` as ``recordedAt`` text: RFC 3339 kept as is, epoch ms like ``toISOString``."""
    if isinstance(value, str) and is_recorded_at(value):
        return value
    if isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value):
        try:
            when = datetime.fromtimestamp(value / 1000, tz=UTC)
        except (OverflowError, OSError, ValueError):
            return None
        return when.strftime("%Y-%m-%dT%H:%M:%S.") + f"{when.microsecond // 1000:03d}Z"
    return None


def _is_persisted(snapshot: Any) -> bool:
    """Whether ``snapshot`` has the persisted-snapshot shape (spec §7.4), so it can be hashed."""
    if not isinstance(snapshot, Mapping) or "tags" in snapshot:
        return False
    if not all(k in snapshot for k in ("status", "value", "context")):
        return False
    children = snapshot.get("children", {})
    if not isinstance(children, Mapping):
        return False
    return all(isinstance(c, Mapping) and isinstance(c.get("snapshot"), Mapping) for c in children.values())


def _definition(value: Any) -> Mapping[str, Any] | None:
    """A recorded machine ``definition`` (an object, or JSON text as @statelyai/inspect writes)."""
    if isinstance(value, str):
        try:
            value = loads(value)
        except (json.JSONDecodeError, RecursionError):
            return None
    return value if isinstance(value, Mapping) else None


def _definition_id(value: Any) -> str | None:
    definition = _definition(value)
    if definition is not None and isinstance(definition.get("id"), str) and definition["id"]:
        return str(definition["id"])
    return None


def _definition_version(value: Any) -> str | None:
    """spec §3: the declared ``version`` or the structural hash of the recorded config."""
    definition = _definition(value)
    if definition is None:
        return None
    from agentscope.hashing import machine_version

    try:
        return machine_version(definition)
    except (TypeError, ValueError, RecursionError):
        return None


def _identity(actor: _Actor, snapshot: Any) -> tuple[str, str]:
    rec = actor.record or {}
    machine = snapshot.get("machine") if isinstance(snapshot, Mapping) else None
    machine = machine if isinstance(machine, Mapping) else {}
    ids = (
        rec.get("machineId"),
        machine.get("id"),
        _definition_id(rec.get("definition")),
        rec.get("actorId"),
        actor.src,
        actor.actor_id,
    )
    machine_id = next((v for v in ids if isinstance(v, str) and v), "(machine)")
    versions = (rec.get("machineVersion"), machine.get("version"))
    version = next((v for v in versions if isinstance(v, str) and v), None)
    if version is None:
        version = _definition_version(rec.get("definition")) or UNVERSIONED
    return machine_id, version


def _parse_records(
    text: str, *, source: str, errors: ErrorsMode
) -> tuple[list[tuple[int, Any]], list[LogFormatError]]:
    """Records with their 1-based line numbers (a JSON array: line numbers of the document)."""
    problems: list[LogFormatError] = []
    stripped = text.lstrip()
    if stripped.startswith("["):
        try:
            doc = loads(text)
        except json.JSONDecodeError as exc:
            where = "" if exc.msg == TOO_DEEP else f" (line {exc.lineno}, column {exc.colno})"
            raise LogFormatError(f"invalid JSON: {exc.msg}{where}", source=source) from None
        if not isinstance(doc, list):  # pragma: no cover - starts with "["
            raise LogFormatError("an inspection recording must be JSON lines or an array", source=source)
        return [(i + 1, v) for i, v in enumerate(doc)], problems
    lines = text.split("\n")
    numbered = [(n, raw.strip()) for n, raw in enumerate(lines, start=1) if raw.strip()]
    torn_tail = not text.endswith("\n")
    out: list[tuple[int, Any]] = []
    for k, (number, raw) in enumerate(numbered):
        try:
            out.append((number, loads(raw)))
        except json.JSONDecodeError as exc:
            where = "" if exc.msg == TOO_DEEP else f" (column {exc.colno})"
            err: LogFormatError
            if k == len(numbered) - 1 and torn_tail:
                err = IncompleteRecordError(
                    f"incomplete final record (line {number}, no trailing newline): {exc.msg}{where}",
                    source=source,
                    line=number,
                )
            else:
                err = LogFormatError(
                    f"invalid JSON on this line: {exc.msg}{where}", source=source, line=number
                )
            if errors == "raise":
                raise err from None
            problems.append(err)
    return out, problems


def read_inspection(
    data: bytes | str,
    *,
    source: str = "<inspection>",
    thread: str | None = None,
    machine: _Versioned | None = None,
    errors: ErrorsMode = "raise",
) -> EventLog:
    """Read an XState inspection recording as the root actor's :class:`EventLog`.

    See the module docstring for the records accepted and how entries are built.
    :func:`agentscope.log.read_log` calls this for a source whose first record is an
    inspection event.

    Parameters
    ----------
    data : bytes or str
        The recording: JSON Lines (one inspection record per line) or a JSON array.
    source : str
        Where it came from, for messages and ``EventLog.source``.
    thread : str, optional
        The root session id to read when the recording holds several root actors (``rootId``
        values); with one root it may be left out. ``EventLog.thread`` is the root session id.
    machine : Machine, optional
        Stamp ``machine.version`` as every entry's ``machineVersion`` (a plain XState app
        records none), so ``verify(machine, log)`` needs no ``machine_version=``.
    errors : {"raise", "collect"}
        As for :func:`~agentscope.log.read_log`: ``"collect"`` skips bad records, listing each
        in ``problems``.

    Returns
    -------
    EventLog
        Era C entries (spec §1.1) of the root actor, ``thread`` set to the root session id and
        :attr:`EventLog.actors` listing every actor of that root's system (root first).

    Raises
    ------
    LogFormatError
        A line that is not JSON (``.line``), a record that is not an object or has no known
        ``type`` (``.line``, ``.field``), a step record without ``event``/``snapshot``, no root
        actor, or no recorded steps for it.
    IncompleteRecordError
        A torn final line (no trailing newline).
    ThreadNotFoundError
        ``thread`` is not a root session of the recording, or there are several and none was
        named (the message lists them).
    """
    from agentscope.log.build import build_log

    try:
        text = data.decode("utf-8-sig") if isinstance(data, bytes) else data
    except UnicodeDecodeError as exc:
        raise LogFormatError(f"not UTF-8 text: {exc.reason} at byte {exc.start}", source=source) from None
    records, problems = _parse_records(text, source=source, errors=errors)
    actors: dict[str, _Actor] = {}
    order: list[str] = []

    def actor(session: str) -> _Actor:
        if session not in actors:
            actors[session] = _Actor(session)
            order.append(session)
        return actors[session]

    def bad(detail: str, line: int, field_name: str | None = None) -> None:
        err = LogFormatError(detail, source=source, line=line, field=field_name)
        if errors == "raise":
            raise err
        problems.append(err)

    for line, rec in records:
        if not isinstance(rec, dict):
            bad("an inspection record must be a JSON object", line)
            continue
        kind = rec.get("type")
        if not (isinstance(kind, str) and kind in INSPECTION_TYPES):
            known = ", ".join(sorted(INSPECTION_TYPES))
            bad(f"unknown inspection record type {kind!r}; expected one of {known}", line, "type")
            continue
        session = _session(rec, "sessionId", "actorRef")
        if session is None:
            if kind in ("@xstate.actor", *_STEP_TYPES):
                bad(f"a {kind} record needs a sessionId (or actorRef)", line, "sessionId")
            continue
        a = actor(session)
        root_ref = _ref_id(rec.get("rootId"))
        if root_ref is not None and a.root_id is None:
            a.root_id = root_ref
        if kind == "@xstate.actor":
            a.record = rec
            a.parent_id = _session(rec, "parentId", "parentRef")
            # ``actorId``; XState v6's own event calls it ``id`` (in @statelyai/inspect
            # records ``id`` is the update's id, so ``actorId``/``src`` come first)
            for key in ("actorId", "id"):
                value = rec.get(key)
                if isinstance(value, str) and value:
                    a.actor_id = value
                    break
            src = rec.get("src")
            a.src = src if isinstance(src, str) else _definition_id(rec.get("definition")) or a.src
        elif kind in _STEP_TYPES:
            event = rec.get("event")
            if not (isinstance(event, dict) and isinstance(event.get("type"), str) and event["type"]):
                bad(f"a {kind} record needs an event object with a non-empty string type", line, "event")
                continue
            if "snapshot" not in rec:
                bad(f"a {kind} record needs the snapshot the actor reached", line, "snapshot")
                continue
            a.steps.append((line, rec))
        else:
            a.events += 1

    for a in actors.values():  # a root is its own root; others inherit through parents
        if a.root_id is None and a.parent_id is None:
            a.root_id = a.session_id
    roots = [s for s in order if actors[s].parent_id is None and actors[s].root_id in (None, s)]
    if not roots:
        raise LogFormatError(
            "no root actor in the inspection recording (an actor without a parent)", source=source
        )
    if thread is None:
        if len(roots) != 1:
            raise ThreadNotFoundError(
                f"the recording holds {len(roots)} root actors; pass thread= one of {roots}",
                source=source,
            )
        root_session = roots[0]
    elif thread in roots:
        root_session = thread
    else:
        raise ThreadNotFoundError(
            f"no root actor {thread!r} in the recording; root sessions: {roots}", source=source
        )
    root = actors[root_session]
    if not root.steps:
        raise LogFormatError(
            f"the root actor {root_session!r} has no recorded @xstate.snapshot/@xstate.transition "
            "records, so there is no log to read",
            source=source,
        )

    entries: list[dict[str, Any]] = []
    lines: list[int | None] = []
    steps = list(root.steps)
    first_event = steps[0][1]["event"]
    init_line: int | None
    if first_event.get("type") in _INIT_EVENTS:
        init_line, init_rec = steps.pop(0)
        init_event: dict[str, Any] = {"type": AGENT_INIT_EVENT_TYPE}
        if "input" in first_event:
            init_event["input"] = first_event["input"]
        init_snapshot = init_rec.get("snapshot")
    else:
        # recorded from mid-run: continue from the root's first known snapshot
        init_line = next((n for n, r in records if r is root.record), None)
        init_snapshot = (root.record or {}).get("snapshot")
        if not _is_persisted(init_snapshot):
            raise LogFormatError(
                f"the recording starts after the root actor {root_session!r} started (no "
                "@xstate.init step) and its @xstate.actor record has no persisted snapshot to "
                "start from",
                source=source,
                field="snapshot",
            )
        init_event = {"type": AGENT_INIT_EVENT_TYPE, "snapshot": init_snapshot}
    machine_id, version = _identity(root, init_snapshot)
    if machine is not None:
        version = machine.version

    def entry(
        i: int, event: Mapping[str, Any], rec: Mapping[str, Any] | None, snapshot: Any, line: int | None
    ) -> dict[str, Any]:
        inspection: dict[str, Any] = {"sessionId": root_session, "line": line, "snapshot": snapshot}
        if rec is not None:
            src_id = _session(rec, "sourceId", "sourceRef")
            if src_id is not None:
                inspection["sourceId"] = src_id
        meta: dict[str, Any] = {"executionId": root_session} if i == 0 else {}
        meta["inspection"] = inspection
        stamp = _stamp(rec.get("createdAt")) if rec is not None else None
        out: dict[str, Any] = {
            "schemaVersion": 1,
            "id": f"evt_{i:08d}",
            "index": i,
            "recordedAt": stamp or _EPOCH_STAMP,
            "machineId": machine_id,
            "machineVersion": version,
            "event": dict(event),
            "metadata": meta,
        }
        if _is_persisted(snapshot):
            from agentscope.hashing import state_hash

            # a snapshot that is not JSON-hashable gets no hash: verification says "missing"
            with contextlib.suppress(TypeError, ValueError, RecursionError):
                out["verification"] = {"stateHash": state_hash(snapshot)}
        return out

    init_rec_used = init_rec if first_event.get("type") in _INIT_EVENTS else root.record
    entries.append(entry(0, init_event, init_rec_used, init_snapshot, init_line))
    lines.append(init_line)
    for line, rec in steps:
        entries.append(entry(len(entries), rec["event"], rec, rec["snapshot"], line))
        lines.append(line)

    log = build_log(
        entries, source=source, errors=errors, era="C", lines=lines, thread=root_session,
        early_problems=problems,
    )
    log.actors = _actors_frame(actors, order, root_session)
    torn = [p for p in problems if isinstance(p, IncompleteRecordError)]
    if torn:
        import warnings

        from agentscope.errors import LogReadWarning

        warnings.warn(
            f"{source}: {torn[0].detail}; read the {len(log)} entries before it (see EventLog.problems)",
            LogReadWarning,
            stacklevel=4,
        )
    return log


def _actors_frame(actors: Mapping[str, _Actor], order: Sequence[str], root: str) -> pd.DataFrame:
    import pandas as pd

    members = [s for s in order if s == root or actors[s].root_id == root or _descends(actors, s, root)]
    members.sort(key=lambda s: s != root)
    rows: list[dict[str, Any]] = []
    for s in members:
        a = actors[s]
        last = a.steps[-1][1].get("snapshot") if a.steps else (a.record or {}).get("snapshot")
        status = last.get("status") if isinstance(last, Mapping) else None
        rows.append(
            {
                "session_id": s,
                "parent_id": a.parent_id,
                "root_id": a.root_id,
                "actor_id": a.actor_id,
                "src": a.src,
                "is_root": s == root,
                "steps": len(a.steps),
                "events": a.events,
                "status": status if isinstance(status, str) else None,
            }
        )
    from agentscope.log.model import text_series

    frame = pd.DataFrame(rows, columns=list(ACTOR_COLUMNS), dtype=object)
    for name in ("session_id", "parent_id", "root_id", "actor_id", "src", "status"):
        frame[name] = text_series([v if isinstance(v := r[name], str) else None for r in rows])
    return frame.astype({"steps": "int64", "events": "int64", "is_root": "bool"})


def _descends(actors: Mapping[str, _Actor], session: str, root: str) -> bool:
    seen: set[str] = set()
    current: str | None = session
    while current is not None and current not in seen:
        if current == root:
            return True
        seen.add(current)
        parent = actors.get(current)
        current = parent.parent_id if parent is not None else None
    return False

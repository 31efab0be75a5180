"""The replay fold's building blocks (spec §1.3, §1.5, §4.1), shared by ``replay``, ``verify``
and ``Timeline``.

Private module: the public names live in :mod:`agentscope.replay`.
"""

from __future__ import annotations

import importlib
import os
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from agentscope.engines.base import NO_INPUT, Machine, Snapshot
from agentscope.errors import (
    EngineError,
    EntryValidationError,
    MachineVersionMismatchError,
    SnapshotRestoreError,
)

__all__ = [
    "AGENT_INIT",
    "DEFAULT_BATCH",
    "Segment",
    "apply_entry",
    "as_log",
    "entries_of",
    "fold_segment",
    "identity_problem",
    "load_validators",
    "recorded_at_ms",
    "recorded_hash",
    "seed_snapshot",
    "segments_of",
    "source_of",
]

AGENT_INIT = "@agent.init"
DEFAULT_BATCH = 4096
"""Entries per ``Machine.fold`` call: one engine round trip per batch (the Node engine)."""


def as_log(log: Any) -> Any:
    """Read ``log`` with :func:`agentscope.read_log` when it is a path; return anything else as is."""
    if isinstance(log, (str, os.PathLike)):
        from agentscope.log import read_log

        return read_log(log)
    return log


def entries_of(log: Any) -> Sequence[Mapping[str, Any]]:
    """Return the entries of an ``EventLog`` (duck-typed on ``.entries``) or a sequence of dicts.

    The entries are not copied or modified. Raises ``TypeError`` for anything else.
    """
    entries = getattr(log, "entries", log)
    if isinstance(entries, (str, bytes, Mapping)) or not isinstance(entries, Sequence):
        raise TypeError(
            "expected an EventLog or a sequence of entry dicts; got "
            f"{type(log).__name__} (read a file with agentscope.read_log(path) first)"
        )
    return entries


def source_of(log: Any) -> str | None:
    """Return ``log.source`` when the log carries one (an ``EventLog`` read from a file)."""
    src = getattr(log, "source", None)
    return src if isinstance(src, str) else None


def event_of(entry: Mapping[str, Any]) -> Mapping[str, Any]:
    """Return the entry's event payload, or an empty mapping when it has none."""
    ev = entry.get("event") if isinstance(entry, Mapping) else None
    return ev if isinstance(ev, Mapping) else {}


def event_type(entry: Mapping[str, Any]) -> str:
    """Return the entry's ``event.type`` (``""`` when missing)."""
    t = event_of(entry).get("type")
    return t if isinstance(t, str) else ""


def recorded_hash(entry: Mapping[str, Any]) -> str | None:
    """Return ``entry.verification.stateHash`` or ``None`` when the entry carries none."""
    v = entry.get("verification") if isinstance(entry, Mapping) else None
    if isinstance(v, Mapping):
        h = v.get("stateHash")
        if isinstance(h, str) and h:
            return h
    return None


_RFC3339 = re.compile(
    r"^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(?:\.(\d+))?(Z|[+-]\d{2}:\d{2})$"
)


def recorded_at_ms(entry: Mapping[str, Any]) -> int | None:
    """Return ``entry.recordedAt`` as epoch milliseconds (``None`` when absent or unparsable).

    Accepts the RFC 3339 shape of spec §1.4 (any fraction length, ``Z`` or an offset).
    """
    text = entry.get("recordedAt") if isinstance(entry, Mapping) else None
    if not isinstance(text, str):
        return None
    m = _RFC3339.match(text)
    if m is None:
        return None
    y, mo, d, h, mi, s, frac, tz = m.groups()
    iso = f"{y}-{mo}-{d}T{'00' if h == '24' else h}:{mi}:{s}"
    iso += "+00:00" if tz == "Z" else tz
    try:
        base = datetime.fromisoformat(iso)
    except ValueError:
        return None
    ms = int(base.timestamp()) * 1000 + (86_400_000 if h == "24" else 0)
    if frac:
        ms += int((frac + "000")[:3])
    return ms


def init_has_snapshot(entry: Mapping[str, Any]) -> bool:
    """True for an ``@agent.init`` entry whose event carries ``snapshot`` (a continuation)."""
    ev = event_of(entry)
    return ev.get("type") == AGENT_INIT and "snapshot" in ev


@dataclass(frozen=True, slots=True)
class Segment:
    """One ``@agent.init``-led run of entries (spec §1.5): positions ``start`` to ``stop - 1``.

    ``version`` is the ``machineVersion`` the segment's entries target: that of its first entry
    that is not a snapshot init (a bridge init's own version is exempt, §1.3), else the init's.
    ``migrated_from`` is the bridge init's ``metadata.migratedFrom`` when present.
    """

    number: int
    start: int
    stop: int
    machine_id: str | None
    version: str | None
    bridge: bool
    migrated_from: Mapping[str, Any] | None

    def __len__(self) -> int:
        return self.stop - self.start


def segments_of(entries: Sequence[Mapping[str, Any]]) -> list[Segment]:
    """Split a log (or a concatenation of logs) at each ``@agent.init`` entry.

    Entry 0 always starts a segment, init or not (validation reports a missing init).
    """
    starts = [
        i for i, e in enumerate(entries) if i == 0 or event_type(e) == AGENT_INIT
    ]
    out: list[Segment] = []
    for number, start in enumerate(starts):
        stop = starts[number + 1] if number + 1 < len(starts) else len(entries)
        ref = next(
            (entries[i] for i in range(start, stop) if not init_has_snapshot(entries[i])),
            entries[start],
        )
        init = entries[start]
        meta = init.get("metadata") if isinstance(init, Mapping) else None
        mig = meta.get("migratedFrom") if isinstance(meta, Mapping) else None
        mid = ref.get("machineId") if isinstance(ref, Mapping) else None
        ver = ref.get("machineVersion") if isinstance(ref, Mapping) else None
        out.append(
            Segment(
                number=number,
                start=start,
                stop=stop,
                machine_id=mid if isinstance(mid, str) else None,
                version=ver if isinstance(ver, str) else None,
                bridge=init_has_snapshot(init),
                migrated_from=mig if isinstance(mig, Mapping) else None,
            )
        )
    return out


def identity_problem(
    entry: Mapping[str, Any], index: int, machine_id: str, machine_version: str
) -> MachineVersionMismatchError | None:
    """Return the §1.3 identity error for one entry, or ``None`` when it targets this machine.

    The ``machineVersion`` of an init entry carrying ``snapshot`` is exempt (the version bridge);
    its ``machineId`` is still checked.
    """
    aid = entry.get("machineId")
    aver = entry.get("machineVersion")
    bad_id = aid != machine_id
    bad_ver = aver != machine_version and not init_has_snapshot(entry)
    if not (bad_id or bad_ver):
        return None
    return MachineVersionMismatchError(
        str(entry.get("id", "")),
        index,
        {"machineId": machine_id, "machineVersion": machine_version},
        {"machineId": aid, "machineVersion": aver},
    )


ValidateEntries = Callable[..., None]
ValidateEntry = Callable[..., None]


def load_validators() -> tuple[ValidateEntries | None, ValidateEntry | None]:
    """Return ``(validate_entries, validate_entry)`` from :mod:`agentscope.log.validate`.

    Imported lazily; ``(None, None)`` when that module is not installed in this tree, in which
    case callers fall back to :func:`basic_validate` (the log-level rules of §1.3 only).
    """
    try:
        _v = importlib.import_module("agentscope.log.validate")
    except ImportError:
        return None, None
    return getattr(_v, "validate_entries", None), getattr(_v, "validate_entry", None)


def basic_validate(
    entries: Sequence[Mapping[str, Any]],
    *,
    machine_id: str,
    machine_version: str,
    source: str | None = None,
) -> None:
    """The §1.3 log-level rules (contiguity, unique ids, one init at 0, identity), raising.

    Used only when :mod:`agentscope.log.validate` is unavailable; it does not check the §1.2
    envelope field by field.
    """
    seen: set[Any] = set()
    for i, e in enumerate(entries):
        if not isinstance(e, Mapping):
            raise EntryValidationError(
                "Agent event entry must be an object.", source=source, index=i
            )
        if e.get("index") != i:
            raise EntryValidationError(
                f"Event log must be contiguous from index 0; found entry.index "
                f"{e.get('index')} at position {i}.",
                source=source,
                index=i,
                field="index",
            )
        eid = e.get("id")
        if eid in seen:
            raise EntryValidationError(
                f"Event log contains duplicate entry id '{eid}'.", source=source, index=i,
                field="id",
            )
        seen.add(eid)
        ev = e.get("event")
        if not isinstance(ev, Mapping) or not isinstance(ev.get("type"), str) or not ev["type"]:
            raise EntryValidationError(
                "Agent event entry.event requires a non-empty string type.",
                source=source,
                index=i,
                field="event.type",
            )
        if i == 0 and ev["type"] != AGENT_INIT:
            raise EntryValidationError(
                f"Event log must start with the reserved '@agent.init' entry; found "
                f"'{ev['type']}'.",
                source=source,
                index=0,
                field="event.type",
            )
        if i > 0 and ev["type"] == AGENT_INIT:
            raise EntryValidationError(
                f"Event log has a second '@agent.init' entry at index {i}.",
                source=source,
                index=i,
                field="event.type",
            )
        err = identity_problem(e, i, machine_id, machine_version)
        if err is not None:
            err.source = source
            raise err


def seed_snapshot(machine: Machine, init: Mapping[str, Any]) -> Snapshot:
    """Return the fold's seed for an init entry (spec §4.1 step 3).

    ``restore(event.snapshot)`` for a continuation (the engine runs the machine's ``migrate``),
    else ``initial(event.input)``; an absent ``input`` is :data:`NO_INPUT` (JS ``undefined``),
    distinct from ``input: null``.
    """
    ev = event_of(init)
    if "snapshot" in ev:
        snap = ev["snapshot"]
        if not isinstance(snap, Mapping):
            raise EntryValidationError(
                "an '@agent.init' snapshot must be a persisted snapshot object",
                index=0,
                field="event.snapshot",
            )
        try:
            return machine.restore(snap)
        except SnapshotRestoreError as exc:  # name the place: the init entry's snapshot
            raise exc.in_init_entry() from None
    return machine.initial(ev.get("input", NO_INPUT))


def apply_entry(
    machine: Machine,
    snapshot: Snapshot | None,
    entry: Mapping[str, Any],
    sessions: dict[str, str],
) -> Snapshot:
    """Apply one log entry: the fold's named step (spec §4.1 steps 3 and 5).

    An ``@agent.init`` entry seeds (``snapshot`` is then ignored, and ``sessions`` should be a
    fresh cache). Any other entry's event goes through ``machine.fold`` for one step, i.e.
    ``transition`` after actor-session rebinding with the per-fold cache ``sessions`` (updated
    in place). No event type gets special handling.

    Raises ``ValueError`` when a non-init entry is applied without a snapshot.
    """
    if event_type(entry) == AGENT_INIT:
        return seed_snapshot(machine, entry)
    if snapshot is None:
        raise ValueError("apply_entry needs the previous snapshot for a non-init entry")
    out = machine.fold(snapshot, [event_of(entry)], sessions=sessions)
    if len(out) != 1:
        raise EngineError(f"engine fold returned {len(out)} snapshots for 1 event")
    return out[0]


def _note(exc: BaseException, entries: Sequence[Mapping[str, Any]], i: int) -> None:
    e = entries[i]
    exc.add_note(
        f"while replaying entry {i} (id {e.get('id')!r}, event {event_type(e)!r})"
    )


def fold_segment(
    machine: Machine,
    entries: Sequence[Mapping[str, Any]],
    start: int,
    stop: int,
    *,
    batch: int = DEFAULT_BATCH,
    seed: Snapshot | None = None,
    sessions: dict[str, str] | None = None,
) -> Iterator[tuple[int, Snapshot]]:
    """Yield ``(position, snapshot after that entry)`` for positions ``start .. stop-1``.

    Without ``seed``, ``entries[start]`` is the init entry and is seeded from (it is yielded
    too). With ``seed`` (the snapshot after ``entries[start - 1]``, e.g. a restored checkpoint),
    folding starts at ``start``. Events go to ``machine.fold`` in batches of ``batch`` with one
    rebinding cache (``sessions``, fresh by default). When a batch fold raises, the batch is
    re-folded one step at a time so the earlier entries are still yielded and the exception
    names the failing entry (added as a note).
    """
    cache: dict[str, str] = {} if sessions is None else sessions
    i = start
    if seed is None:
        try:
            s = seed_snapshot(machine, entries[start])
        except Exception as exc:
            _note(exc, entries, start)
            raise
        yield start, s
        i = start + 1
    else:
        s = seed
    while i < stop:
        j = min(stop, i + max(1, batch))
        events = [event_of(entries[k]) for k in range(i, j)]
        saved = dict(cache)
        try:
            snaps = machine.fold(s, events, sessions=cache)
            if len(snaps) != len(events):
                raise EngineError(
                    f"engine fold returned {len(snaps)} snapshots for {len(events)} events"
                )
        except Exception as batch_exc:
            cache.clear()
            cache.update(saved)
            cur = s
            bad = getattr(batch_exc, "index", None)  # an engine that names the failing event
            if isinstance(bad, int) and not isinstance(bad, bool) and 0 <= bad < len(events):
                ok = machine.fold(s, events[:bad], sessions=cache) if bad else []
                for k, sn in enumerate(ok):
                    yield i + k, sn
                _note(batch_exc, entries, i + bad)
                raise
            for k, ev in enumerate(events):
                try:
                    cur = machine.fold(cur, [ev], sessions=cache)[0]
                except Exception as exc:
                    _note(exc, entries, i + k)
                    raise
                yield i + k, cur
            s = cur  # the batch failed but every single step succeeded
            i = j
            continue
        for k, sn in enumerate(snaps):
            yield i + k, sn
        s = snaps[-1]
        i = j

"""The one entry vocabulary: reading the fields of an ``AgentLogEntry`` (spec §1.1, §1.4, §1.5, §4.1).

Every module that needs an entry's event, event type, recorded hash, ``recordedAt`` or actor
session key asks here; nothing else indexes ``entry["event"]["type"]`` by hand. The accessors are
total: a malformed entry (validation reports it, :mod:`agentscope.log.validate`) reads as
"absent" (``{}``, ``""``, ``None``) instead of raising. Pure functions, no imports beyond the
standard library.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = [
    "AGENT_INIT",
    "AGENT_USAGE",
    "Segment",
    "entries_of",
    "entry_id",
    "entry_ids",
    "event_of",
    "event_type",
    "event_types",
    "events_of",
    "execution_id",
    "init_has_snapshot",
    "is_bridge_init",
    "migrated_from",
    "recorded_at_ms",
    "recorded_at_ns",
    "recorded_at_text",
    "recorded_hash",
    "recorded_hashes",
    "segments_of",
    "session_key",
    "source_of",
]

AGENT_INIT = "@agent.init"
"""The reserved type of entry 0 (spec §1.5)."""
AGENT_USAGE = "@agent.usage"
"""The reserved spend-record type (spec §1.5)."""


@dataclass(frozen=True, slots=True)
class Segment:
    """A run of entries replayed with one machine (spec §1.5, the version bridge): the one type.

    Attributes
    ----------
    start, stop : int
        Entry positions ``[start, stop)`` in the log.
    machine_id, machine_version : str | None
        The identity the segment's entries target (a bridge init's own stamp is exempt, §1.3,
        so it is taken from the first entry that is not a snapshot init when there is one).
    bridge : bool
        The segment starts with an ``@agent.init`` entry carrying ``snapshot`` (a continuation).
    migrated_from : Mapping | None
        The init's ``metadata.migratedFrom`` (``{"machineVersion", "logIndex"}``) when present.
    number : int
        0-based position among the log's segments.

    One split produces it, :func:`segments_of` (a segment per ``@agent.init``): the fold's
    segments and :attr:`agentscope.EventLog.segments` are the same.
    """

    start: int
    stop: int
    machine_id: str | None
    machine_version: str | None
    bridge: bool
    migrated_from: Mapping[str, Any] | None
    number: int = 0

    def __len__(self) -> int:
        return self.stop - self.start


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


def entry_id(entry: Any) -> str:
    """Return the entry's ``id`` as a string (``""`` when missing)."""
    v = entry.get("id") if type(entry) is dict or isinstance(entry, Mapping) else None
    return "" if v is None else str(v)


def event_of(entry: Any) -> Mapping[str, Any]:
    """Return the entry's event payload, or an empty mapping when it has none."""
    # ``type(x) is dict`` first: the common case, without the ABC check
    ev = entry.get("event") if type(entry) is dict or isinstance(entry, Mapping) else None
    return ev if type(ev) is dict or isinstance(ev, Mapping) else {}


def event_type(entry: Any) -> str:
    """Return the entry's ``event.type`` (``""`` when missing or not a string)."""
    t = event_of(entry).get("type")
    return t if isinstance(t, str) else ""


def recorded_hash(entry: Any) -> str | None:
    """Return ``entry.verification.stateHash`` (a non-empty string) or ``None`` (spec §2)."""
    v = entry.get("verification") if type(entry) is dict or isinstance(entry, Mapping) else None
    if type(v) is dict or isinstance(v, Mapping):
        h = v.get("stateHash")
        if isinstance(h, str) and h:
            return h
    return None


# Bulk forms of the accessors above, for the passes over a whole log: the same values as a
# call per entry (the plain ``dict`` case inline, anything else through the accessor itself).


def event_types(entries: Sequence[Any], start: int = 0, stop: int | None = None) -> list[str]:
    """``[event_type(e) for e in entries[start:stop]]``."""
    out: list[str] = []
    add = out.append
    for i in range(start, len(entries) if stop is None else stop):
        e = entries[i]
        ev = e.get("event") if type(e) is dict else None
        t = ev.get("type") if type(ev) is dict else None
        add(t if type(t) is str else event_type(e))
    return out


def events_of(entries: Sequence[Any], start: int = 0, stop: int | None = None) -> list[Mapping[str, Any]]:
    """``[event_of(e) for e in entries[start:stop]]``."""
    out: list[Mapping[str, Any]] = []
    add = out.append
    for i in range(start, len(entries) if stop is None else stop):
        e = entries[i]
        ev = e.get("event") if type(e) is dict else None
        add(ev if type(ev) is dict else event_of(e))
    return out


def entry_ids(entries: Sequence[Any]) -> list[str]:
    """``[entry_id(e) for e in entries]``."""
    out: list[str] = []
    add = out.append
    for e in entries:
        v = e.get("id") if type(e) is dict else None
        add(v if type(v) is str else entry_id(e))
    return out


def recorded_hashes(entries: Sequence[Any], start: int = 0, stop: int | None = None) -> list[str | None]:
    """``[recorded_hash(e) for e in entries[start:stop]]``."""
    out: list[str | None] = []
    add = out.append
    for i in range(start, len(entries) if stop is None else stop):
        e = entries[i]
        v = e.get("verification") if type(e) is dict else None
        h = v.get("stateHash") if type(v) is dict else None
        add(h if type(h) is str and h else recorded_hash(e))
    return out


def init_has_snapshot(entry: Any) -> bool:
    """True for an ``@agent.init`` entry whose event carries ``snapshot`` (a continuation, §1.5)."""
    ev = event_of(entry)
    return ev.get("type") == AGENT_INIT and "snapshot" in ev


def migrated_from(entry: Any) -> Mapping[str, Any] | None:
    """The init entry's ``metadata.migratedFrom`` mapping, or ``None`` (spec §1.5)."""
    meta = entry.get("metadata") if isinstance(entry, Mapping) else None
    mig = meta.get("migratedFrom") if isinstance(meta, Mapping) else None
    return mig if isinstance(mig, Mapping) else None


def is_bridge_init(entry: Any) -> bool:
    """A version-bridge init: carries ``snapshot`` and ``metadata.migratedFrom`` (spec §1.5)."""
    return init_has_snapshot(entry) and migrated_from(entry) is not None


def execution_id(entry: Any) -> Any:
    """The entry's ``metadata.executionId`` (any JSON value, ``None`` when absent; §1.5)."""
    meta = entry.get("metadata") if isinstance(entry, Mapping) else None
    return meta.get("executionId") if isinstance(meta, Mapping) else None


def recorded_at_text(entry: Any) -> str | None:
    """The entry's ``recordedAt`` as stored (ISO-8601 text, §1.2), ``None`` when absent or not a
    string."""
    value = entry.get("recordedAt") if isinstance(entry, Mapping) else None
    return value if isinstance(value, str) else None


def session_key(entry: Any) -> str | None:
    """The §4.1 rebinding key ``actorId + "\\0" + sessionId`` of a child completion, or ``None``."""
    ev = event_of(entry)
    a, sid = ev.get("actorId"), ev.get("sessionId")
    if isinstance(a, str) and isinstance(sid, str):
        return a + "\u0000" + sid
    return None


# §1.1's shape with §1.4's V8 ranges: month 1-12, day 1-31 in any month, hour 0-23 or exactly
# 24:00:00 with a zero fraction, minute/second 0-59, offset hour 0-23 and minute 0-59
_RECORDED_AT = re.compile(
    r"([0-9]{4})-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])"
    r"T(?:([01][0-9]|2[0-3]):([0-5][0-9]):([0-5][0-9])(?:\.([0-9]+))?|(24):00:00(?:\.0+)?)"
    r"(?:Z|([+-])([01][0-9]|2[0-3]):([0-5][0-9]))"
)


def _days_from_civil(y: int, m: int, d: int) -> int:
    """Days since 1970-01-01 of a proleptic Gregorian date; ``d`` may overflow the month."""
    y -= m <= 2
    era = (y if y >= 0 else y - 399) // 400
    yoe = y - era * 400
    mp = (m + 9) % 12
    doy = (153 * mp + 2) // 5 + d - 1
    doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    return era * 146097 + doe - 719468


def recorded_at_ns(entry_or_text: Any) -> int | None:
    """Return ``recordedAt`` as epoch nanoseconds the way V8's ``Date.parse`` reads it (§1.4).

    **The** ``recordedAt`` parser: :func:`recorded_at_ms`, the ``EventLog.df`` timestamp column
    and the SQLite reader all read through it.

    Parameters
    ----------
    entry_or_text : Mapping or str
        An entry (its ``recordedAt`` is read) or the string itself.

    Returns
    -------
    int or None
        Nanoseconds since 1970-01-01T00:00:00Z, an exact ``int`` for every year 0000-9999. A day
        past the month's end rolls over (``2026-02-30`` is March 2), ``24:00:00`` is the next
        midnight, year ``0000`` is valid, the offset is applied, fraction digits beyond the
        nanosecond are truncated (V8 itself keeps milliseconds: see :func:`recorded_at_ms`).
        ``None`` for an absent value or one V8 rejects (month 13, hour 25, offset ``+24:00``,
        …), exactly the strings :func:`agentscope.log.validate.is_recorded_at` rejects.
        ``datetime.fromisoformat`` is not used: it is stricter about days per month.
    """
    text = entry_or_text.get("recordedAt") if isinstance(entry_or_text, Mapping) else entry_or_text
    if not isinstance(text, str):
        return None
    m = _RECORDED_AT.fullmatch(text)
    if m is None:
        return None
    y, mo, d, hh, mi, ss, frac, h24, sign, oh, om = m.groups()
    days = _days_from_civil(int(y), int(mo), int(d))
    if h24:
        secs = 86_400
        ns = 0
    else:
        secs = int(hh) * 3600 + int(mi) * 60 + int(ss)
        ns = int((frac or "0")[:9].ljust(9, "0"))
    if sign:
        off = int(oh) * 3600 + int(om) * 60
        secs -= off if sign == "+" else -off
    return (days * 86_400 + secs) * 1_000_000_000 + ns


def recorded_at_ms(entry_or_text: Any) -> int | None:
    """Return ``recordedAt`` as epoch milliseconds, as V8's ``Date.parse`` does (§1.4).

    :func:`recorded_at_ns` truncated to the millisecond (a fraction's later digits are dropped,
    as V8 drops them); ``None`` where it is ``None``.
    """
    ns = recorded_at_ns(entry_or_text)
    return None if ns is None else ns // 1_000_000


def _segment(entries: Sequence[Any], number: int, start: int, stop: int) -> Segment:
    ref = next(
        (entries[i] for i in range(start, stop) if not init_has_snapshot(entries[i])),
        entries[start],
    )
    mid = ref.get("machineId") if isinstance(ref, Mapping) else None
    ver = ref.get("machineVersion") if isinstance(ref, Mapping) else None
    return Segment(
        start=start,
        stop=stop,
        machine_id=mid if isinstance(mid, str) else None,
        machine_version=ver if isinstance(ver, str) else None,
        bridge=init_has_snapshot(entries[start]),
        migrated_from=migrated_from(entries[start]),
        number=number,
    )


def segments_of(
    entries: Sequence[Any], start: int = 0, *, types: Sequence[str] | None = None
) -> list[Segment]:
    """Split ``entries[start:]`` at each ``@agent.init`` entry (spec §1.5): the one segment split.

    Position ``start`` always starts a segment, init or not (validation reports a missing init);
    segments are numbered from 0. O(n) once: :meth:`agentscope.pipeline.Timeline.extend` splits
    only the new entries (the first of them continues the last segment unless it is an init).
    ``types``, when the caller has read them, is ``event_types(entries, start)``.
    """
    if types is None:
        types = event_types(entries, start)
    if not types:
        return []
    starts = [start]
    k = 1
    while True:  # the next init past the last one found (a C-level search of the list)
        try:
            k = types.index(AGENT_INIT, k)
        except ValueError:
            break
        starts.append(start + k)
        k += 1
    return [
        _segment(entries, number, s, starts[number + 1] if number + 1 < len(starts) else len(entries))
        for number, s in enumerate(starts)
    ]

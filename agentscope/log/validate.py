"""Entry and log validation: spec §1.2 (the envelope), §1.3 (log-level rules), §1.4 (``recordedAt``).

The checks run in the reference library's order and raise with its message texts, prefixed with
the place (source, entry index, line, field) so a reader can find the bad entry.

Two entry points form the public contract used by the rest of agentscope:

- :func:`validate_entry` checks one entry (``assertAgentLogEntry``, §1.2).
- :func:`validate_entries` checks a whole log (``validateReplayEntries``, §1.3).

JSON safety (§1.2 step 2) needs to see what ``JSON.parse`` would have produced. Literals that a
Python parser silently normalises (``-0`` becomes int ``0``) or that JavaScript turns into a
non-finite number (``1e400``, ``NaN``, ``Infinity``) are caught while parsing: :func:`loads`
parses text with hooks that put an :class:`UnsafeLiteral` marker at such a place, and the
JSON-safety walk reports the marker with the reference library's path and value type.
"""

from __future__ import annotations

import heapq
import json
import math
import re
import sys
from collections.abc import Iterator, Mapping, Sequence
from itertools import chain, repeat
from operator import is_, itemgetter
from typing import Any, Literal, TypeVar

from agentscope._deep import MAX_DEPTH, DepthLimitError, call_deep, call_deep_checked, short_pointer
from agentscope.errors import (
    DamagedStoreError,
    EntryValidationError,
    IncompleteRecordError,
    LogFormatError,
    MachineVersionMismatchError,
    NonSerializableError,
)
from agentscope.log.problems import ProblemKind

__all__ = [
    "AGENT_INIT_EVENT_TYPE",
    "RECORDED_AT_PATTERN",
    "Era",
    "SegmentChecker",
    "UnsafeLiteral",
    "identity_problem",
    "is_recorded_at",
    "is_validated",
    "loads",
    "no_init_problem",
    "problem_kind",
    "read_findings",
    "segment_problems",
    "set_aside",
    "validate_entries",
    "validate_entry",
]

Era = Literal["A", "B", "C"]

AGENT_INIT_EVENT_TYPE = "@agent.init"
"""The reserved type of entry 0 (spec §1.5)."""

# §1.1's regex with §1.4's V8 range rules folded in: month 1–12, day 1–31 (not per month),
# hour 0–23 or exactly 24:00:00 with a zero fraction, minute/second 0–59, offset hour 0–23 and
# offset minute 0–59. ASCII digits only, like a JavaScript ``\d``; used with ``fullmatch``.
RECORDED_AT_PATTERN = (
    r"[0-9]{4}-(?:0[1-9]|1[0-2])-(?:0[1-9]|[12][0-9]|3[01])"
    r"T(?:(?:[01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](?:\.[0-9]+)?|24:00:00(?:\.0+)?)"
    r"(?:Z|[+-](?:[01][0-9]|2[0-3]):[0-5][0-9])"
)
_RECORDED_AT_RE = re.compile(RECORDED_AT_PATTERN)


def is_recorded_at(value: object) -> bool:
    """Return whether ``value`` is a ``recordedAt`` the reference library accepts (spec §1.4).

    The string must match §1.1's RFC 3339 regex (uppercase ``T``/``Z``) and be a date V8's
    ``Date.parse`` accepts: day 1–31 in any month (``2026-02-30`` passes), ``24:00:00`` only
    with a zero fraction, offsets up to ``±23:59``. ``datetime.fromisoformat`` is deliberately
    not used: it is stricter about days per month.
    """
    return isinstance(value, str) and _RECORDED_AT_RE.fullmatch(value) is not None


# ---------------------------------------------------------------------------------------------
# JSON safety (§1.2 step 2)


class UnsafeLiteral:
    """Marker a parser leaves where JSON text held a value ``JSON.parse`` makes unsafe.

    ``value_type`` is the reference library's label: ``"-0"``, ``"NaN"``, ``"Infinity"`` or
    ``"-Infinity"``; ``literal`` is the text as written.
    """

    __slots__ = ("literal", "value_type")

    def __init__(self, value_type: str, literal: str) -> None:
        self.value_type = value_type
        self.literal = literal

    def __repr__(self) -> str:
        return f"UnsafeLiteral({self.value_type!r}, {self.literal!r})"


def _parse_float(text: str) -> float | UnsafeLiteral:
    value = float(text)
    if math.isinf(value):
        return UnsafeLiteral("Infinity" if value > 0 else "-Infinity", text)
    if value == 0.0 and text.startswith("-"):
        return UnsafeLiteral("-0", text)
    return value


def _parse_int(text: str) -> int | UnsafeLiteral:
    if text == "-0":
        return UnsafeLiteral("-0", text)
    if len(text.lstrip("-")) > 308:  # may exceed Number.MAX_VALUE: JSON.parse gives ±Infinity
        value = float(text)  # correctly rounded, like JSON.parse; no int digit limit
        if math.isinf(value):
            return UnsafeLiteral("Infinity" if value > 0 else "-Infinity", text)
    return int(text)


def _parse_constant(text: str) -> UnsafeLiteral:
    return UnsafeLiteral("NaN" if text == "NaN" else text, text)


def loads(text: str | bytes) -> Any:
    """Parse JSON text the way ``JSON.parse`` sees it, marking unsafe literals.

    ``-0``/``-0.0``/``-0e5`` and overflowing literals (``1e400``) and the non-standard
    ``NaN``/``Infinity``/``-Infinity`` tokens become :class:`UnsafeLiteral` markers, which
    :func:`validate_entry` reports as :class:`~agentscope.errors.NonSerializableError`.

    Raises
    ------
    json.JSONDecodeError
        For text that is not JSON at all, or that nests arrays/objects deeper than Python's
        recursion limit allows (the message then says so).
    """
    try:  # past Python's recursion limit, again on a big stack (agentscope._deep)
        return call_deep(
            json.loads, text,
            parse_float=_parse_float, parse_int=_parse_int, parse_constant=_parse_constant,
        )
    except RecursionError:
        doc = text if isinstance(text, str) else text.decode("utf-8", "replace")
        raise json.JSONDecodeError(TOO_DEEP, doc, 0) from None


_SCALARS = (str, bool, int, type(None))

TOO_DEEP = f"arrays/objects nested deeper than agentscope's limit of {MAX_DEPTH:,} levels"
"""The message for a value nested deeper than the recursion limit allows (parse or check)."""


def _unsafe_value(value: Any, path: str, ancestors: list[int]) -> tuple[str, str] | None:
    """Return ``(path, value_type)`` of the first non-JSON-safe value, or ``None``."""
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 1023:
        try:
            float(value)
        except OverflowError:  # beyond Number.MAX_VALUE: a JS number would be ±Infinity
            return path, "Infinity" if value > 0 else "-Infinity"
        return None
    if isinstance(value, _SCALARS):
        return None
    if isinstance(value, float):
        if math.isnan(value):
            return path, "NaN"
        if math.isinf(value):
            return path, "Infinity" if value > 0 else "-Infinity"
        if value == 0.0 and math.copysign(1.0, value) < 0:
            return path, "-0"
        return None
    if isinstance(value, UnsafeLiteral):
        return path, value.value_type
    if isinstance(value, dict | list | tuple):
        if id(value) in ancestors:
            return path, "circular reference"
        ancestors.append(id(value))
        try:
            if isinstance(value, dict):
                for key, item in value.items():
                    if not isinstance(key, str):
                        return f"{path}.[{key!r}]", "non-string key"
                    found = _unsafe_value(item, f"{path}.{key}", ancestors)
                    if found:
                        return found
            else:
                for i, item in enumerate(value):
                    found = _unsafe_value(item, f"{path}[{i}]", ancestors)
                    if found:
                        return found
        finally:
            ancestors.pop()
        return None
    return path, type(value).__name__


_FAST_DEPTH = 64


def _plainly_safe(value: Any, depth: int) -> bool:
    """True when ``value`` is plainly JSON-safe: exact ``dict`` (``str`` keys)/``list``/``str``/
    ``bool``/``None``, ``int`` within a double's range, finite non-``-0.0`` ``float``, nested at
    most ``_FAST_DEPTH`` levels. No paths are built; ``False`` only means "ask
    :func:`_unsafe_value`" (which names the place), so a cycle or a deep value falls back too.
    The members' ``str``/``bool``/``None``/``int`` cases are tested in the loops (the same tests
    as at the top, without a call per member)."""
    t = type(value)
    if t is str or t is bool or value is None:
        return True
    if t is int:
        return bool(value.bit_length() <= 1023)
    if t is float:
        return bool(-_MAX_DOUBLE <= value <= _MAX_DOUBLE and (value != 0.0 or math.copysign(1.0, value) > 0))
    if depth >= _FAST_DEPTH:
        return False
    if t is dict:
        for key, item in value.items():
            if type(key) is not str:
                return False
            ti = type(item)
            if ti is str or ti is bool or item is None:
                continue
            if ti is int:
                if item.bit_length() > 1023:
                    return False
                continue
            if not _plainly_safe(item, depth + 1):
                return False
        return True
    if t is list:
        for item in value:
            ti = type(item)
            if ti is str or ti is bool or item is None:
                continue
            if ti is int:
                if item.bit_length() > 1023:
                    return False
                continue
            if not _plainly_safe(item, depth + 1):
                return False
        return True
    return False


_MAX_DOUBLE = sys.float_info.max


def json_safety_problem(value: Any, root: str = "entry") -> tuple[str, str] | None:
    """Return ``(path, value_type)`` for the first value ``JSON.stringify`` could not round-trip.

    Accepted: ``dict`` with ``str`` keys, ``list``/``tuple``, ``str``, ``bool``, ``int``, finite
    ``float`` other than ``-0.0``, ``None``. Everything else is reported with a label following
    spec §1.2 step 2 (``"NaN"``, ``"Infinity"``, ``"-Infinity"``, ``"-0"``, ``"circular
    reference"``, ``"non-string key"``) or the Python type name (``"datetime"``, ``"set"``, …).
    """
    if _plainly_safe(value, 0):  # the common case, without building a path per value
        return None
    return _unsafe_value(value, root, [])


# ---------------------------------------------------------------------------------------------
# One entry (§1.2)


def _is_nonempty_str(value: object) -> bool:
    return isinstance(value, str) and value != ""


def _is_object(value: object) -> bool:
    return isinstance(value, dict)


def _is_js_integer(value: object) -> bool:
    """``Number.isInteger`` on a JSON number: ``1.0`` passes, ``1.5``/``true`` fail."""
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        return True
    return isinstance(value, float) and math.isfinite(value) and value.is_integer()


_MISSING = "Agent event entry.{field} is missing; expected {want}."
"""A required field that is absent: said as "missing" (the reference library's message would
print JS's ``undefined`` in the place of the value, spec §1.2)."""


def _js_repr(value: object) -> str:
    """Render a value roughly as a JS template literal would (for messages only)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer() and math.isfinite(value):
        return str(int(value))
    if isinstance(value, dict):
        return "[object Object]"
    if isinstance(value, list):
        return ",".join("" if v is None else _js_repr(v) for v in value)
    if isinstance(value, UnsafeLiteral):
        return value.literal
    return str(value)


def entry_problem(
    entry: Any,
    *,
    index: int | None = None,
    source: str | None = None,
    line: int | None = None,
    era: Era = "C",
) -> LogFormatError | None:
    """Return the first §1.2 problem of ``entry`` as an error object (not raised), or ``None``.

    The non-raising twin of :func:`validate_entry`, used by ``errors="collect"``.
    """

    def bad(detail: str, field: str | None = None) -> EntryValidationError:
        return EntryValidationError(detail, source=source, index=index, line=line, field=field)

    # 1. an object
    if not isinstance(entry, dict):
        return bad("Agent event entry must be an object.")
    # 2. JSON safety of the whole entry (the plain case first: it never nests past 64 frames)
    try:
        unsafe = None if _plainly_safe(entry, 0) else call_deep_checked("entry", entry, json_safety_problem)
    except DepthLimitError as exc:
        where = short_pointer(exc.pointer or "").strip("/").replace("/", ".") or None
        return bad(f"Agent event entry: {TOO_DEEP}.", where)
    except RecursionError:
        return bad(f"Agent event entry: {TOO_DEEP}.")
    if unsafe is not None:
        return NonSerializableError(unsafe[0], unsafe[1], source=source, index=index, line=line)
    if era == "A":
        # Era A: {index, event, metadata?}; no envelope, no hashes (spec §0).
        if "index" not in entry:
            return bad(_MISSING.format(field="index", want="a non-negative integer"), "index")
        if not _is_js_integer(entry.get("index")) or entry["index"] < 0:
            return bad(
                f"Agent event entry.index must be a non-negative integer; got {_js_repr(entry['index'])}.",
                "index",
            )
        event = entry.get("event")
        if not (isinstance(event, dict) and _is_nonempty_str(event.get("type"))):
            return bad("Agent event entry.event requires a non-empty string type.", "event")
        if "metadata" in entry and not _is_object(entry["metadata"]):
            return bad("Agent event entry.metadata must be an object when present.", "metadata")
        return None
    # 3. schemaVersion
    if "schemaVersion" not in entry:
        return bad(_MISSING.format(field="schemaVersion", want="1"), "schemaVersion")
    version = entry["schemaVersion"]
    if isinstance(version, bool) or version != 1:
        return bad(
            f"Unsupported agent event schema version '{_js_repr(version)}'; expected '1'.",
            "schemaVersion",
        )
    # 4. index
    if "index" not in entry:
        return bad(_MISSING.format(field="index", want="a non-negative integer"), "index")
    idx = entry["index"]
    if not (type(idx) is int or _is_js_integer(idx)) or idx < 0:
        return bad(
            f"Agent event entry.index must be a non-negative integer; got {_js_repr(idx)}.", "index"
        )
    # 5. id, machineId, machineVersion
    for name in ("id", "machineId", "machineVersion"):
        v = entry.get(name)
        if not (type(v) is str and v) and not _is_nonempty_str(v):
            return bad(f"Agent event entry.{name} must be a non-empty string.", name)
    # 6. recordedAt (§1.4)
    if "recordedAt" not in entry:
        return bad(_MISSING.format(field="recordedAt", want="an RFC 3339 timestamp"), "recordedAt")
    recorded_at = entry["recordedAt"]
    if not is_recorded_at(recorded_at):
        return bad(f"Agent event entry.recordedAt is not RFC 3339: '{_js_repr(recorded_at)}'.", "recordedAt")
    # 7. event
    event = entry.get("event")
    if not (isinstance(event, dict) and _is_nonempty_str(event.get("type"))):
        field = "event.type" if isinstance(event, dict) else "event"
        return bad("Agent event entry.event requires a non-empty string type.", field)
    # 8. causationId
    if "causationId" in entry and not _is_nonempty_str(entry["causationId"]):
        return bad("Agent event entry.causationId must be a non-empty string when present.", "causationId")
    if era == "B" and "correlationId" in entry and not _is_nonempty_str(entry["correlationId"]):
        return bad(
            "Agent event entry.correlationId must be a non-empty string when present.", "correlationId"
        )
    # 9. metadata
    if "metadata" in entry and not _is_object(entry["metadata"]):
        return bad("Agent event entry.metadata must be an object when present.", "metadata")
    # 10. verification
    if "verification" in entry:
        ver = entry["verification"]
        if era == "B":
            if not (
                _is_object(ver)
                and _is_nonempty_str(ver.get("stateHash"))
                and _is_nonempty_str(ver.get("effectsHash"))
            ):
                field = "verification"
                if _is_object(ver):
                    field = (
                        "verification.stateHash"
                        if not _is_nonempty_str(ver.get("stateHash"))
                        else "verification.effectsHash"
                    )
                return bad(
                    "Agent event entry.verification requires non-empty stateHash and effectsHash strings.",
                    field,
                )
        elif not (type(ver) is dict and type(ver.get("stateHash")) is str and ver["stateHash"]) and not (
            _is_object(ver) and _is_nonempty_str(ver.get("stateHash"))
        ):
            field = "verification.stateHash" if _is_object(ver) else "verification"
            return bad("Agent event entry.verification requires a non-empty stateHash string.", field)
    return None


_ENVELOPE_KEYS = frozenset({"schemaVersion", "index", "id", "machineId", "machineVersion", "recordedAt",
                            "event", "causationId", "metadata", "verification"})


def _plain_envelope(entry: dict[str, Any]) -> bool:
    """True when ``entry`` passes every Era-C rule of :func:`entry_problem` except the
    ``recordedAt`` pattern (it is a ``str``; the caller matches the pattern, in bulk): the index,
    id and event type here, the rest by :func:`_plain_envelopes` (the one statement of the plain
    case). ``False`` only means "ask :func:`entry_problem`", which names the problem."""
    ix, eid, ev = entry.get("index"), entry.get("id"), entry.get("event")
    if type(ix) is not int or not 0 <= ix < _INT_LIMIT or type(eid) is not str or not eid:
        return False
    if type(ev) is not dict:
        return False
    et = ev.get("type")
    return type(et) is str and bool(et) and _plain_envelopes([entry], [ev])


_CHUNK = 1024
"""Entries the segment checker takes column by column at once (see ``SegmentChecker._plain_chunk``)."""
_ABSENT: Any = object()
_RECORDED_AT_OF = itemgetter("recordedAt")


def _column(objects: list[dict[str, Any]], name: str) -> list[Any]:
    """``[o.get(name) for o in objects]`` (each a ``dict``), without a bytecode loop."""
    return list(map(dict.get, objects, repeat(name)))


def _plain_envelopes(chunk: list[dict[str, Any]], events: list[dict[str, Any]]) -> bool:
    """The plain case of :func:`entry_problem` for every entry of ``chunk``, field by field over
    the whole chunk (no call per entry): only envelope members, ``schemaVersion`` the int ``1``,
    non-empty ``str`` machine id, version and ``recordedAt`` (its pattern is the caller's), plainly
    JSON-safe events, an optional non-empty ``str`` ``causationId``, optional ``metadata`` and
    ``verification`` objects, the latter with a non-empty ``str`` ``stateHash``. The caller has
    checked the rest: ``index`` an int in range, ``id`` a non-empty ``str``, ``events`` their
    events, ``dict`` with a non-empty ``str`` type."""
    n = len(chunk)
    if not all(map(_ENVELOPE_KEYS.issuperset, chunk)):
        return False
    sv = _column(chunk, "schemaVersion")
    if set(map(type, sv)) != {int} or sv.count(1) != n:
        return False
    for name in ("machineId", "machineVersion", "recordedAt"):
        col = _column(chunk, name)
        if set(map(type, col)) != {str} or not all(col):
            return False
    if not _all_plainly_safe(events):
        return False
    for name in ("causationId", "metadata", "verification"):
        given: list[Any] = list(map(dict.get, chunk, repeat(name), repeat(_ABSENT)))
        absent = sum(map(is_, given, repeat(_ABSENT)))  # by identity: no value's __eq__ asked
        if absent == n:
            continue
        if absent:
            given = [v for v in given if v is not _ABSENT]
        if name == "causationId":
            if set(map(type, given)) != {str} or not all(given):
                return False
            continue
        if set(map(type, given)) != {dict}:
            return False
        if name == "verification":
            hashes = _column(given, "stateHash")
            if set(map(type, hashes)) != {str} or not all(hashes):
                return False
            if set(map(len, given)) == {1}:  # {"stateHash": <str>} only: nothing else to judge
                continue
        if not _all_plainly_safe(given):
            return False
    return True


_FLAT_TYPES = frozenset({str, bool, type(None), int})
_INT_LIMIT = 1 << 1023


def _all_plainly_safe(objects: list[dict[str, Any]]) -> bool:
    """``all(_plainly_safe(o, 1) for o in objects)`` (each a ``dict``): flat objects (string
    keys; string, boolean, null or in-range integer members) are judged all together, anything
    nested one by one."""
    members = list(chain.from_iterable(map(dict.values, objects)))
    kinds = set(map(type, members))
    if kinds <= _FLAT_TYPES and set(map(type, chain.from_iterable(objects))) <= {str}:
        if int not in kinds:
            return True
        ints = [v for v in members if type(v) is int]
        return min(ints) > -_INT_LIMIT and max(ints) < _INT_LIMIT
    return all(_plainly_safe(o, 1) for o in objects)


_BULK_TIMES = 64
"""From this many ``recordedAt`` values on, the pattern is matched over all of them at once."""


def _unmatched_recorded_at(values: list[str]) -> list[int]:
    """Positions in ``values`` (strings) that :func:`is_recorded_at` rejects. Many are matched at
    once by RE2 through pyarrow (the same pattern: ASCII classes, anchored at both ends);
    text Arrow cannot hold (a lone surrogate) is matched one by one."""
    if len(values) >= _BULK_TIMES:
        try:
            import numpy as np
            import pyarrow as pa
            import pyarrow.compute as pc

            found = pc.match_substring_regex(pa.array(values, type=pa.string()),
                                             pattern=f"^(?:{RECORDED_AT_PATTERN})$")
            ok = found.to_numpy(zero_copy_only=False)
            return list(np.flatnonzero(~ok).tolist())
        except (UnicodeEncodeError, ImportError):
            pass
    return [i for i, v in enumerate(values) if _RECORDED_AT_RE.fullmatch(v) is None]


def validate_entry(
    entry: Any,
    *,
    index: int | None = None,
    source: str | None = None,
    line: int | None = None,
    era: Era = "C",
) -> None:
    """Check one log entry against the envelope rules of spec §1.2 (``assertAgentLogEntry``).

    Checks run in the reference order: an object; JSON safety of the whole entry; ``schemaVersion``
    is ``1``; ``index`` an integer >= 0; ``id``, ``machineId``, ``machineVersion`` non-empty
    strings; ``recordedAt`` RFC 3339 with V8's ranges (§1.4); ``event`` an object with a
    non-empty string ``type``; optional ``causationId`` a non-empty string; optional ``metadata``
    an object; optional ``verification`` carrying a non-empty ``stateHash``. Optional fields must be
    absent, never ``null``. Unknown top-level keys pass.

    Parameters
    ----------
    entry : Any
        The entry as parsed (values from :func:`loads` may hold :class:`UnsafeLiteral` markers).
    index, source, line : optional
        The place, used only for the error (``index`` is the entry's position in the log).
    era : {"C", "B", "A"}
        ``"B"`` also checks ``correlationId`` and requires ``effectsHash`` next to ``stateHash``
        in ``verification``; ``"A"`` checks only ``{index, event, metadata?}`` (spec §0, §1.2).

    Raises
    ------
    NonSerializableError
        A value is not JSON-safe: ``NaN``/``Infinity`` (also as text literals, or an overflowing
        literal such as ``1e400``), ``-0`` (also the ``-0`` literal), a non-JSON Python type, a
        cycle. ``.path`` is e.g. ``"entry.event.output.createdAt"``, ``.field`` the same without
        ``entry.``.
    EntryValidationError
        Any other envelope rule; ``.field`` names the offending field.
    """
    problem = entry_problem(entry, index=index, source=source, line=line, era=era)
    if problem is not None:
        raise problem


# ---------------------------------------------------------------------------------------------
# A whole log (§1.3)

AgentscopeValidationProblem = LogFormatError | MachineVersionMismatchError
"""What :func:`log_problems` yields."""


def _is_snapshot_init(entry: Mapping[str, Any]) -> bool:
    event = entry.get("event")
    return (
        isinstance(event, dict)
        and event.get("type") == AGENT_INIT_EVENT_TYPE
        and "snapshot" in event
    )


def reference_entry(entries: Sequence[Mapping[str, Any]]) -> Mapping[str, Any] | None:
    """The entry whose identity a log is checked against when no machine is given (§1.3, 02a45590).

    The first entry that is not an init-with-snapshot entry, or entry 0 if every entry is one.
    """
    if not entries:
        return None
    for entry in entries:
        if not _is_snapshot_init(entry):
            return entry
    return entries[0]


ANONYMOUS_MACHINE = "(machine)"
"""The ``machineId`` of an entry whose source named no machine (a table without that column)."""
UNVERSIONED = "(unversioned)"
"""The ``machineVersion`` of an entry whose source named no version."""


def targets(
    entry: Mapping[str, Any],
    machine_id: str | None,
    machine_version: str | None,
    *,
    bridge: bool = False,
) -> bool:
    """Whether ``entry`` targets ``machine_id``@``machine_version`` (spec §1.3).

    An entry without a machine identity (the :data:`ANONYMOUS_MACHINE` /
    :data:`UNVERSIONED` placeholders of a table-born log) targets whatever machine it is replayed
    with; ``bridge``: the version of an init-with-snapshot entry is exempt (§1.5).
    """
    mid, version = entry.get("machineId"), entry.get("machineVersion")
    id_ok = mid in (machine_id, ANONYMOUS_MACHINE)
    version_ok = bridge or version in (machine_version, UNVERSIONED)
    return id_ok and version_ok


def log_problems(
    entries: Sequence[Any],
    *,
    machine_id: str | None = None,
    machine_version: str | None = None,
    source: str | None = None,
    era: Era = "C",
    positions: Sequence[int] | None = None,
    lines: Sequence[int | None] | None = None,
    check_entries: bool = True,
) -> Iterator[AgentscopeValidationProblem]:
    """Yield every §1.2/§1.3 problem of one log, in order, as error objects (not raised).

    The rules are :class:`SegmentChecker`'s (the one statement), over the whole log as one
    segment (``read_log`` reads one log: a later ``@agent.init`` is a second one), then §1.3's
    identity rule: each entry targets the expected machine (the arguments, else the reference
    entry's, :func:`reference_entry`; Era B: entry 0's, no bridge exemption). An entry failing
    §1.2 takes no part in the identity rule. ``positions[i]`` is entry ``i``'s position in the
    source (it differs from ``i`` when invalid entries were set aside before this call), the
    ``index`` every problem names; ``lines[i]`` its line. ``check_entries=False``: the entries
    already passed §1.2.
    """
    checker = SegmentChecker(0, source=source, envelope=check_entries, era=era,
                             positions=positions, lines=lines)
    found = [err for _kind, err in checker.check(entries, 0, len(entries))[0]]
    if era == "A":
        yield from found
        return
    good = [i for i, e in enumerate(entries) if i not in checker.invalid and isinstance(e, Mapping)]
    if not good:
        yield from found
        return
    kept = [entries[i] for i in good]
    ref = kept[0] if era == "B" else reference_entry(kept)
    assert ref is not None
    expected_id = ref.get("machineId") if machine_id is None else machine_id
    expected_version = ref.get("machineVersion") if machine_version is None else machine_version
    mismatches: list[AgentscopeValidationProblem] = []
    for i in good:
        entry = entries[i]
        if not targets(entry, expected_id, expected_version, bridge=era == "C" and _is_snapshot_init(entry)):
            mismatches.append(MachineVersionMismatchError(
                entry.get("id"),
                checker.position(i),
                {"machineId": expected_id, "machineVersion": expected_version},
                {"machineId": entry.get("machineId"), "machineVersion": entry.get("machineVersion")},
                source=source,
            ))
    # in log order; an entry's identity problem after its other ones
    yield from heapq.merge(found, mismatches, key=lambda err: err.index if err.index is not None else -1)


def validate_entries(
    entries: Sequence[Any],
    *,
    machine_id: str | None = None,
    machine_version: str | None = None,
    source: str | None = None,
    era: Era = "C",
    lines: Sequence[int | None] | None = None,
) -> None:
    """Check a whole log against spec §1.3 (``validateReplayEntries`` at 02a45590).

    Every entry passes :func:`validate_entry`; ``entry.index`` equals its position; ids are
    unique; entry 0 is ``@agent.init`` and no later entry is; every entry targets the expected
    machine. The expected ``machineId``/``machineVersion`` are the arguments when given, else
    those of the reference entry: the first entry that is not an init-with-snapshot entry (entry
    0 if all are). The ``machineVersion`` of an init entry whose event carries ``snapshot`` (the
    version bridge, §1.5) is exempt. An empty log passes.

    Era ``"B"`` logs need no init entry and have no bridge exemption (the reference is entry 0);
    Era ``"A"`` logs are checked for contiguity only (spec §0, §1.3).

    Raises
    ------
    EntryValidationError, NonSerializableError
        The first envelope or log-level problem; ``.index`` is the position, ``.field`` the field.
    MachineVersionMismatchError
        An entry targets another machine id or version (``.index``, ``.expected``, ``.actual``).
    """
    for problem in log_problems(
        entries,
        machine_id=machine_id,
        machine_version=machine_version,
        source=source,
        era=era,
        lines=lines,
    ):
        raise problem


# ---------------------------------------------------------------------------------------------
# One segment of a lineage, reported (not raised) for the verifying pass (§1.3, §1.5, §4.2)


def identity_problem(
    entry: Mapping[str, Any], index: int, machine_id: str, machine_version: str
) -> MachineVersionMismatchError | None:
    """Return the §1.3 identity error for one entry, or ``None`` when it targets this machine.

    The ``machineVersion`` of an init entry carrying ``snapshot`` is exempt (the version bridge);
    its ``machineId`` is still checked. ``index`` is the position named in the error. An entry
    without a machine identity (:func:`targets`) targets any machine.
    """
    aid = entry.get("machineId")
    aver = entry.get("machineVersion")
    if targets(entry, machine_id, machine_version, bridge=_is_snapshot_init(entry)):
        return None
    return MachineVersionMismatchError(
        str(entry.get("id", "")),
        index,
        {"machineId": machine_id, "machineVersion": machine_version},
        {"machineId": aid, "machineVersion": aver},
    )


def _is_bridge(entry: Mapping[str, Any]) -> bool:
    meta = entry.get("metadata")
    return _is_snapshot_init(entry) and isinstance(meta, Mapping) and isinstance(
        meta.get("migratedFrom"), Mapping
    )


class SegmentChecker:
    """The §1.3 structure rules (and, with ``envelope``, §1.2's per entry), stated once, for one
    segment, checked incrementally (reported, not raised).

    ``read_log`` checks a log as one segment (:func:`log_problems`); the verifying pass checks
    each segment of a lineage (split at every ``@agent.init``, §1.5) with its own checker, so a
    log of one ``@agent.init`` gets the same problems from both. :meth:`check` takes positions
    ``lo .. hi - 1`` of the segment starting at ``start`` and keeps what the next call needs (ids
    seen, the numbering), so checking a growing log costs O(new entries). The rules, in this
    order for each entry:

    - it passes :func:`entry_problem` (with ``envelope``; ``invalid-entry`` or
      ``non-serializable-event``); an entry that does not still takes part in the rules below
      as far as its fields allow;
    - numbering (§1.3): ``entry.index`` is the entry's position (``positions[i]``, the source
      position; ``i`` without them), reported where the numbering breaks, not at every later
      entry (``non-contiguous`` where ``index - position`` changes to a value other than 0: an
      entry numbered 99 at position 70 is one problem, a gap at 3 is one); a version-bridge init
      (``snapshot`` + ``metadata.migratedFrom``, §1.5, §4.2) starting a later segment may restart
      it at 0 (the bridged run is a new log);
    - ids are unique in the segment (``duplicate-id``; Eras B and C);
    - Era C: the segment starts with ``@agent.init`` (``no-init``) and holds no other
      (``invalid-entry``, "a second '@agent.init' entry").

    Era A checks the envelope and the numbering only (spec §0). :attr:`stopped_at` is the first
    position a fold cannot pass (an entry that is not an object or has no event type, a segment
    that does not start with ``@agent.init``), or ``None``; :attr:`invalid` the positions that
    failed §1.2.
    """

    def __init__(self, start: int, *, source: str | None = None, envelope: bool = True,
                 era: Era = "C", positions: Sequence[int] | None = None,
                 lines: Sequence[int | None] | None = None) -> None:
        self.start = start
        self.source = source
        self.envelope = envelope  # False: the entries already passed §1.2 (a validated EventLog)
        self.era: Era = era
        self.positions = positions
        self.lines = lines
        self.seen: dict[Any, int] = {}
        self.base = 0
        """The numbering's origin: 0, or the start of a segment whose bridge init restarts it."""
        self.offset: int | None = 0
        """``entry.index - expected`` of the last entry numbered (``None``: not an integer)."""
        self.stopped_at: int | None = None
        self.invalid: set[int] = set()

    def position(self, i: int) -> int:
        """Entry ``i``'s position in the source (the ``index`` its problems name)."""
        return i if self.positions is None else self.positions[i]

    @classmethod
    def resumed(cls, entries: Sequence[Any], start: int, n: int, *,
                source: str | None = None) -> SegmentChecker:
        """A checker in the state it would have after checking ``entries[start:n]`` and finding
        nothing (entries a validating reader already checked, :func:`is_validated`): their ids
        seen, the numbering as entry ``n - 1`` left it. O(n - start), once."""
        out = cls(start, source=source)
        for i in range(start, n):
            e = entries[i]
            eid = e.get("id") if isinstance(e, Mapping) else None
            if isinstance(eid, str):
                out.seen.setdefault(eid, i)
        out._renumber(entries, n)
        return out

    def _renumber(self, entries: Sequence[Any], n: int) -> None:
        """Set :attr:`base` and :attr:`offset` as checking ``entries[start:n]`` left them."""
        first = entries[self.start] if n > self.start else None
        restarts = (self.era == "C" and self.start > 0 and isinstance(first, Mapping)
                    and first.get("index") == 0 and _is_bridge(first))
        self.base = self.start if restarts else 0
        last = entries[n - 1] if n > self.start else None
        got = last.get("index") if isinstance(last, Mapping) else None
        if n <= self.start:
            self.offset = 0
        elif isinstance(got, int) and not isinstance(got, bool):
            self.offset = got - (self.position(n - 1) - self.base)
        else:
            self.offset = None

    def truncated(self, entries: Sequence[Any], n: int) -> SegmentChecker:
        """A checker in the state it had after checking ``entries[start:n]`` only (``n`` at most
        what was checked; ``entries[:n]`` the entries it checked): ids seen before ``n``, the
        numbering as entry ``n - 1`` left it, a stop before ``n``."""
        out = SegmentChecker(self.start, source=self.source, envelope=self.envelope, era=self.era,
                             positions=self.positions, lines=self.lines)
        out.seen = {k: i for k, i in self.seen.items() if i < n}
        out.invalid = {i for i in self.invalid if i < n}
        out._renumber(entries, n)
        out.stopped_at = self.stopped_at if self.stopped_at is not None and self.stopped_at < n else None
        return out

    def check(
        self, entries: Sequence[Any], lo: int, hi: int
    ) -> tuple[list[tuple[ProblemKind, LogFormatError]], int]:
        """Check ``entries[lo:hi]``; return ``(problems, fold_stop)`` (``fold_stop`` <= ``hi``):
        ``(kind, error)`` pairs in log order, an entry's own §1.2 problem before the others."""
        out: list[tuple[ProblemKind, LogFormatError]] = []
        fold_stop = hi if self.stopped_at is None else min(hi, self.stopped_at)
        # entries plainly right but for the recordedAt pattern wait for one bulk match of it
        times_at: list[int] = []
        times: list[str] = []
        a = lo
        while a < hi:
            b = min(hi, a + _CHUNK)
            if not self._plain_chunk(entries, a, b, times_at, times):
                fold_stop = self._check_each(entries, a, b, out, times_at, times, fold_stop)
            a = b
        late = _unmatched_recorded_at(times) if times else []
        for j in late:
            i = times_at[j]
            problem = self._entry_problem(entries[i], i)
            if problem is not None:
                self.invalid.add(i)
                out.append((problem_kind(problem), problem))
        if late:  # in log order, an entry's own (§1.2, untagged) problem before the log's
            out.sort(key=lambda item: (item[1].index, "problem_kind" in vars(item[1])))
        if fold_stop < hi and self.stopped_at is None:
            self.stopped_at = fold_stop
        return [(kind, _kinded(err, kind)) for kind, err in out], fold_stop

    def _entry_problem(self, e: Any, i: int) -> LogFormatError | None:
        """:func:`entry_problem` of entry ``i``, placed (its source position and line)."""
        line = self.lines[i] if self.lines is not None else None
        return entry_problem(e, index=self.position(i), source=self.source, line=line, era=self.era)

    def _plain_chunk(self, entries: Sequence[Any], a: int, b: int, times_at: list[int],
                     times: list[str]) -> bool:
        """Check ``entries[a:b]`` column by column when every rule plainly holds for all of them
        (then record their ids and ``recordedAt`` values and return ``True``); ``False`` (nothing
        recorded) means "check them one by one": an accept-only shortcut of :meth:`_check_each`
        (Era C only)."""
        if self.era != "C":
            return False
        chunk = entries[a:b] if isinstance(entries, list) else [entries[i] for i in range(a, b)]
        n = len(chunk)
        if not chunk or set(map(type, chunk)) != {dict}:
            return False
        if a == self.start and a > 0:  # a later segment's init may restart the numbering: one by one
            return False
        ix = _column(chunk, "index")
        if set(map(type, ix)) != {int}:
            return False
        want0 = self.position(a) - self.base
        off = ix[0] - want0
        if off != 0 and off != self.offset:
            return False
        if self.positions is None:
            if ix != list(range(want0 + off, want0 + off + n)):
                return False
        elif ix != [p - self.base + off for p in self.positions[a:b]]:
            return False
        ids = _column(chunk, "id")
        seen = self.seen
        if set(map(type, ids)) != {str} or not all(ids) or len(set(ids)) != n \
                or not seen.keys().isdisjoint(ids):
            return False
        evs = _column(chunk, "event")
        if set(map(type, evs)) != {dict}:
            return False
        types = _column(evs, "type")
        if set(map(type, types)) != {str} or not all(types):
            return False
        if types.count(AGENT_INIT_EVENT_TYPE) != (1 if a == self.start else 0) or (
                a == self.start and types[0] != AGENT_INIT_EVENT_TYPE):
            return False
        if self.envelope and not _plain_envelopes(chunk, evs):
            return False
        seen.update(zip(ids, range(a, b), strict=True))
        self.offset = off
        if self.envelope:
            times_at.extend(range(a, b))
            times.extend(map(_RECORDED_AT_OF, chunk))
        return True

    def _check_each(self, entries: Sequence[Any], lo: int, hi: int,
                    out: list[tuple[ProblemKind, LogFormatError]], times_at: list[int], times: list[str],
                    fold_stop: int) -> int:
        """The rules entry by entry over ``entries[lo:hi]`` (problems into ``out``); return the
        new ``fold_stop``."""
        source, start, era = self.source, self.start, self.era
        envelope, seen = self.envelope, self.seen
        for i in range(lo, hi):
            e = entries[i]
            at = self.position(i)
            line = self.lines[i] if self.lines is not None else None

            def bad(detail: str, field: str, kind: ProblemKind, at: int = at,
                    line: int | None = line) -> EntryValidationError:
                return _kinded(EntryValidationError(detail, source=source, index=at, line=line,
                                                    field=field), kind)

            plain = type(e) is dict
            if not plain and not isinstance(e, Mapping):
                problem = self._entry_problem(e, i)
                assert problem is not None
                self.invalid.add(i)
                out.append((problem_kind(problem), problem))
                fold_stop = min(fold_stop, i)
                self.offset = None
                continue
            if envelope:
                if era == "C" and plain and _plain_envelope(e):
                    times_at.append(i)
                    times.append(e["recordedAt"])
                else:
                    problem = self._entry_problem(e, i)
                    if problem is not None:
                        self.invalid.add(i)
                        out.append((problem_kind(problem), problem))
            # numbering
            got = e.get("index")
            if i == start and i > 0 and era == "C" and got == 0 and _is_bridge(e):
                self.base = start
            if isinstance(got, int) and not isinstance(got, bool):
                off = got - (at - self.base)
                if off != 0 and off != self.offset:
                    out.append((ProblemKind.NON_CONTIGUOUS, bad(
                        "Event log must be contiguous from index 0; "
                        f"found entry.index {_js_repr(got)} at position {at}.",
                        "index", ProblemKind.NON_CONTIGUOUS,
                    )))
                self.offset = off
            else:
                self.offset = None
            ev = e.get("event")
            et = ev.get("type") if type(ev) is dict or isinstance(ev, Mapping) else None
            if era == "A":
                if not isinstance(et, str) or not et:
                    fold_stop = min(fold_stop, i)
                continue
            eid = e.get("id")
            if isinstance(eid, str):
                if eid in seen:
                    out.append((ProblemKind.DUPLICATE_ID, bad(
                        f"Event log contains duplicate entry id '{eid}'.", "id", ProblemKind.DUPLICATE_ID,
                    )))
                else:
                    seen[eid] = i
            if not isinstance(et, str) or not et:
                fold_stop = min(fold_stop, i)
            elif era != "C":
                continue
            elif i == start and et != AGENT_INIT_EVENT_TYPE:
                out.append((ProblemKind.NO_INIT, bad(
                    f"Event log must start with the reserved '{AGENT_INIT_EVENT_TYPE}' entry; "
                    f"found '{et}'.",
                    "event.type", ProblemKind.NO_INIT,
                )))
                fold_stop = min(fold_stop, i)
            elif i > start and et == AGENT_INIT_EVENT_TYPE:
                out.append((ProblemKind.INVALID_ENTRY, bad(
                    f"Event log has a second '{AGENT_INIT_EVENT_TYPE}' entry at index {at}.",
                    "event.type", ProblemKind.INVALID_ENTRY,
                )))
        return fold_stop


def segment_problems(
    entries: Sequence[Any],
    start: int,
    stop: int,
    *,
    source: str | None = None,
) -> tuple[list[tuple[ProblemKind, LogFormatError]], int]:
    """Every structure problem of the segment ``entries[start:stop]`` (:class:`SegmentChecker`).

    Returns ``(problems, fold_stop)``: ``problems`` is a list of ``(kind, error)`` in log order,
    ``kind`` a :class:`~agentscope.log.problems.ProblemKind` code, and ``fold_stop`` the first
    position a fold cannot pass, else ``stop``.
    """
    return SegmentChecker(start, source=source).check(entries, start, stop)


def is_validated(log: Any) -> bool:
    """Whether ``log`` is an ``EventLog`` whose reader validated every entry (§1.2) and the log
    (§1.3, without a machine) when it was read (:attr:`EventLog.validated`), so replay checks
    only the machine identity."""
    return getattr(log, "validated", False) is True


def read_findings(log: Any) -> dict[int, list[LogFormatError]] | None:
    """What the reader of a validated log found about its entries, so a pass takes it instead of
    checking the rules again: ``{position among the log's entries: [error, ...]}`` (each error
    tagged with its :class:`~agentscope.log.problems.ProblemKind`, ``index`` that position,
    ``str`` the reader's message), or ``None`` when ``log`` is not validated (the pass checks it).

    Rows about entries the reader set aside, or about the log as a whole, are not listed; nor
    is a reading of the machine identity against the log's own reference entry (§1.3 without
    a machine): the pass checks the identity against the machine it is given.
    """
    if not is_validated(log):
        return None
    table = log.read_problems
    if not len(table):
        return {}
    positions = log.positions
    at: dict[int, int] = (
        {p: p for p in positions} if isinstance(positions, range) and positions.start == 0
        else {p: i for i, p in enumerate(positions)}
    )
    out: dict[int, list[LogFormatError]] = {}
    for index, field_, kind, message, source in zip(
        table["index"], table["field"], table["kind"], table["message"], table["source"], strict=True
    ):
        if _missing(index) or kind == ProblemKind.MACHINE_MISMATCH:  # NA: about the whole log
            continue
        i = at.get(int(index))
        if i is None:
            continue
        err = EntryValidationError(str(message), field=field_ if isinstance(field_, str) else None)
        err.index, err.source = i, source if isinstance(source, str) else None
        out.setdefault(i, []).append(_kinded(err, ProblemKind(kind)))
    return out


def set_aside(log: Any) -> list[dict[str, Any]]:
    """The rows of a validated log's :attr:`~agentscope.log.model.EventLog.read_problems` that
    :func:`read_findings` does not attach to an entry of the log: entries the reader set aside
    (``errors="collect"``), lines it could not parse, a damaged store. Each a mapping of the
    problems table's columns (``index`` the source position, or ``None`` for the log as a
    whole); ``[]`` for a log that is not validated or has none."""
    if not is_validated(log):
        return []
    table = log.read_problems
    if not len(table):
        return []
    kept = set(log.positions)
    out: list[dict[str, Any]] = []
    for row in table.to_dict("records"):
        index = row.get("index")
        if _missing(index):
            row["index"] = None
        elif int(index) in kept:
            continue
        row = {k: None if _missing(v) else v for k, v in row.items()}
        out.append(row)
    return out


def _missing(value: Any) -> bool:
    """A problems table's missing cell: ``None``, ``NaN`` or pandas' ``NA``."""
    if value is None:
        return True
    try:
        return bool(value != value)
    except TypeError:  # pandas.NA: its comparisons are NA, ambiguous as a bool
        return True


def no_init_problem(entry: Any, index: int, *, source: str | None = None) -> EntryValidationError | None:
    """§1.3: a log (and each segment a fold starts, §1.5) begins with ``@agent.init``; the
    ``no-init`` error for ``entry`` at position ``index`` when it does not, else ``None``."""
    event = entry.get("event") if isinstance(entry, Mapping) else None
    found = event.get("type") if isinstance(event, Mapping) else None
    if found == AGENT_INIT_EVENT_TYPE:
        return None
    return _kinded(EntryValidationError(
        f"Event log must start with the reserved '{AGENT_INIT_EVENT_TYPE}' entry; found '{found}'.",
        source=source, index=index, field="event.type",
    ), ProblemKind.NO_INIT)


_E = TypeVar("_E", bound=LogFormatError)


def _kinded(err: _E, kind: ProblemKind) -> _E:
    """Tag ``err`` with the :class:`~agentscope.log.problems.ProblemKind` code of the rule it
    breaks (read back with :func:`problem_kind`)."""
    err.problem_kind = kind  # type: ignore[attr-defined]
    return err


def problem_kind(err: BaseException) -> ProblemKind:
    """The :class:`~agentscope.log.problems.ProblemKind` of a validation or reading error: the
    rule that raised it (set here, where the rules live), else by type (``machine-mismatch``,
    ``non-serializable-event``, ``incomplete-record``, ``damaged-store``, ``invalid-entry``)."""
    kind = getattr(err, "problem_kind", None)
    if isinstance(kind, str):
        return ProblemKind(kind)
    if isinstance(err, IncompleteRecordError):
        return ProblemKind.INCOMPLETE_RECORD
    if isinstance(err, DamagedStoreError):
        return ProblemKind.DAMAGED_STORE
    if isinstance(err, MachineVersionMismatchError):
        return ProblemKind.MACHINE_MISMATCH
    if isinstance(err, NonSerializableError):
        return ProblemKind.NON_SERIALIZABLE
    return ProblemKind.INVALID_ENTRY

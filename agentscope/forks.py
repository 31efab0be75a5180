"""Comparing two runs: where two logs part ways, and how their states differ there.

Implements spec §6 (comparing logs) on top of the fork semantics of §5.1 (a fork copies a prefix
verbatim: ids, indices, ``recordedAt``, hashes and the init entry's ``executionId``).

- :func:`compare` finds the common prefix of two logs under the Era-C entry-equivalence rule of
  §6.1 (same ``id``, same ``index``, same ``canonicalEventJson(event)``, equal state hashes when
  both are present; ``recordedAt``, ``metadata``, ``machineVersion``, ``causationId`` and
  ``schemaVersion`` are ignored), also reports the stricter whole-entry prefix of the legacy
  ``diffEventLogs`` (§6.2), classifies the pair, and, given a machine, replays both sides and
  diffs their states at the divergence and at every later aligned index.
- :func:`fork_tree` recovers which thread of a store was forked from which, and where.

Results are plain data (:class:`ForkDiff`, :class:`StateDiff`, :class:`Change`) with pandas
views and an escaped HTML rendering for notebooks.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from itertools import chain, compress, count, islice
from operator import eq, ne
from typing import TYPE_CHECKING, Any, Literal

import orjson

from agentscope.engines.base import Machine
from agentscope.errors import LogFormatError
from agentscope.frames import Frame
from agentscope.hashing import HashVariant, canonical_event_json, canonical_json, state_hash
from agentscope.jsondiff import MISSING, Change, diff_json
from agentscope.log.entry import event_type, recorded_at_ms, recorded_hash
from agentscope.log.model import DF_COLUMNS

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "CHANGE_COLUMNS",
    "ENTRY_COLUMNS",
    "MISSING",
    "TREE_COLUMNS",
    "Change",
    "ForkDiff",
    "ForkKind",
    "StateDiff",
    "compare",
    "fork_tree",
]

ForkKind = Literal["identical", "prefix", "fork", "tamper", "unrelated"]

ENTRY_COLUMNS: tuple[str, ...] = DF_COLUMNS
"""Columns of the suffix DataFrames (the ``EventLog.df`` layout)."""

CHANGE_COLUMNS: tuple[str, ...] = ("index", "path", "op", "left", "right")
"""Columns of :meth:`ForkDiff.changes_frame`."""

_HTML_ROWS = 20
_CELL_CHARS = 120


# ---------------------------------------------------------------------------------------------
# Inputs


@dataclass(frozen=True, eq=False)
class _Side:
    """One side of a comparison: its entries, and what the reader gave us besides them."""

    entries: Sequence[Any]
    log: Any
    raw: Sequence[Any] | None
    name: str
    source: str | None
    execution_id: str | None
    variant: HashVariant


def _execution_id_of(entries: Sequence[Any]) -> str | None:
    """``getLogExecutionId`` (§1.5): entry 0's ``metadata.executionId`` when it is a string."""
    if not entries:
        return None
    first = entries[0]
    if not isinstance(first, Mapping):
        return None
    meta = first.get("metadata")
    if isinstance(meta, Mapping):
        ex = meta.get("executionId")
        if isinstance(ex, str):
            return ex
    return None


def _as_side(obj: Any, default_name: str) -> _Side:
    """Return ``obj`` (``EventLog``, list of entry dicts, or a ``read_log`` source) as a side."""
    log: Any = None
    if hasattr(obj, "entries"):
        log = obj
        entries: Sequence[Any] = obj.entries
    elif isinstance(obj, Sequence) and not isinstance(obj, str | bytes | bytearray):
        entries = obj
    else:
        from agentscope.stores import read_log  # lazy: the reader is the heavy part

        log = read_log(obj)
        entries = log.entries
    raw = getattr(log, "raw_entries", None) if log is not None else None
    if raw is not None and (len(raw) != len(entries) or None in raw):
        raw = None
    source = getattr(log, "source", None) if log is not None else None
    thread = getattr(log, "thread", None) if log is not None else None
    if isinstance(obj, str | os.PathLike) and source is None:
        source = os.fspath(obj)
    if thread:
        name = str(thread)
    elif source:
        name = os.path.basename(str(source)) or default_name
    else:
        name = default_name
    ex = getattr(log, "execution_id", None) if log is not None else None
    if not isinstance(ex, str):
        ex = _execution_id_of(entries)
    era = getattr(log, "era", "C") if log is not None else "C"
    variant: HashVariant = "era-b" if era == "B" else "02a45590"
    return _Side(entries, log, raw, name, None if source is None else str(source), ex, variant)


def _entry(side: _Side, i: int) -> Mapping[str, Any]:
    e = side.entries[i]
    if not isinstance(e, Mapping):
        raise LogFormatError(
            f"an entry must be a JSON object, got {type(e).__name__}",
            source=side.source or side.name,
            index=i,
        )
    return e


# ---------------------------------------------------------------------------------------------
# Entry equality (§6.1) with cheap checks first


def _dumps(v: Any) -> bytes | None:
    try:
        return orjson.dumps(v)
    except (orjson.JSONEncodeError, TypeError):
        return None


def _quick_equal(a: Any, b: Any) -> bool:
    """Return True only if ``a`` and ``b`` are certainly the same JSON value (C-speed checks).

    Python ``==`` ignores key order but also says ``True == 1``; orjson's bytes tell booleans
    from numbers. A False answer means "unknown": the caller canonicalizes.
    """
    if a is b:
        return True
    if a != b:
        return False
    da = _dumps(a)
    return da is not None and da == _dumps(b)


def _state_hash_of(entry: Mapping[str, Any]) -> str | None:
    return recorded_hash(entry)


def _canon_event(event: Any) -> str:
    try:
        return canonical_event_json(event)
    except TypeError:
        return repr(event)


def _canon(value: Any) -> str:
    try:
        return canonical_json(value)
    except TypeError:
        return repr(value)


def _events_differ(ea: Any, eb: Any) -> bool:
    if _quick_equal(ea, eb):
        return False
    if isinstance(ea, Mapping) and isinstance(eb, Mapping):
        ta, tb = ea.get("type"), eb.get("type")
        if isinstance(ta, str) and isinstance(tb, str) and ta != tb:
            return True  # `type` is a top-level member both canonical forms keep verbatim
    return _canon_event(ea) != _canon_event(eb)


def _differing_fields(a: Mapping[str, Any], b: Mapping[str, Any]) -> tuple[str, ...]:
    """Return the §6.1 fields in which two entries differ (empty: "the same" entry)."""
    out: list[str] = []
    if a.get("id") != b.get("id"):
        out.append("id")
    ia, ib = a.get("index"), b.get("index")
    if isinstance(ia, bool) or isinstance(ib, bool) or ia != ib:
        out.append("index")
    if _events_differ(a.get("event"), b.get("event")):
        out.append("event")
    ha, hb = _state_hash_of(a), _state_hash_of(b)
    if ha is not None and hb is not None and ha != hb:
        out.append("verification.stateHash")
    return tuple(out)


def _same_position(left: _Side, right: _Side, i: int) -> bool:
    """Cheap test that position ``i`` certainly holds the same entry on both sides (whole entry)."""
    a, b = left.entries[i], right.entries[i]
    if a is b:
        return True
    if left.raw is not None and right.raw is not None:
        ra, rb = left.raw[i], right.raw[i]
        if ra is not None and ra == rb:
            return True
    return _quick_equal(a, b)


_CHUNK = 1 << 16


def _bulk_first_difference(left: _Side, right: _Side, i: int, n: int) -> int:
    """Return the first position in ``[i, n)`` whose pair is not byte-identical, or ``n``.

    C-speed iteration over the reader's raw texts when both sides have them (equal text means
    equal entries), otherwise over orjson bytes. A chunk that orjson cannot serialize (an
    integer beyond 64 bits, …) is walked with the per-position check instead.
    """
    le, re_ = left.entries, right.entries
    if le is re_:
        return n
    use_raw = left.raw is not None and right.raw is not None
    while i < n:
        end = min(n, i + _CHUNK)
        try:
            if use_raw:
                assert left.raw is not None and right.raw is not None
                flags = map(ne, islice(left.raw, i, end), islice(right.raw, i, end))
            else:
                flags = map(
                    ne,
                    map(orjson.dumps, islice(le, i, end)),
                    map(orjson.dumps, islice(re_, i, end)),
                )
            j = next(compress(count(i), flags), end)
        except TypeError:  # orjson.JSONEncodeError is a TypeError
            j = i
            while j < end and _same_position(left, right, j):
                j += 1
        if j < end:
            return j
        i = end
    return n


def _first_unsure(left: _Side, right: _Side, i: int, n: int) -> int:
    """Return the first position in ``[i, n)`` not certainly holding the same entry, or ``n``."""
    while i < n:
        j = _bulk_first_difference(left, right, i, n)
        if j >= n or not _same_position(left, right, j):
            return j
        i = j + 1  # raw text differed (spacing, key order) but the parsed entries are the same
    return n


def _realigns(left: _Side, right: _Side, i: int, n: int) -> bool:
    """Whether some position in ``[i, n)`` holds the very same entry on both sides.

    Dict ``==`` (C speed, fails fast on a different ``recordedAt`` or event) finds candidates;
    each candidate is confirmed byte-wise or, failing that, by whole-entry canonical JSON
    (booleans are not numbers; key order does not matter).
    """
    le, re_ = left.entries, right.entries
    while i < n:
        j = next(compress(count(i), map(eq, islice(le, i, n), islice(re_, i, n))), n)
        if j >= n:
            return False
        if _same_position(left, right, j) or _canon(le[j]) == _canon(re_[j]):
            return True  # (the canonical check covers a copy re-serialized in another key order)
        i = j + 1
    return False


@dataclass(frozen=True)
class _Scan:
    common: int
    whole: int
    fields: tuple[str, ...]


def _scan(left: _Side, right: _Side, start: int = 0) -> _Scan:
    """Return the §6.1 common prefix, the whole-entry prefix and the fields differing after it.

    Linear and stops at the divergence. Entries are first matched in bulk at C speed (the same
    list, the reader's raw texts, orjson bytes); only a pair those cannot settle is compared
    field by field, canonicalizing (spec §2.2) where needed.
    """
    n = min(len(left.entries), len(right.entries))
    whole: int | None = None
    i = start
    fields: tuple[str, ...] = ()
    while True:
        i = _first_unsure(left, right, i, n)
        if i >= n:
            break
        a, b = _entry(left, i), _entry(right, i)
        fields = _differing_fields(a, b)
        if fields:
            if whole is None:
                whole = i
            break
        if whole is None and _canon(a) != _canon(b):
            whole = i
        i += 1
    return _Scan(i, i if whole is None else whole, fields)


def _related(left: _Side, right: _Side, whole: int) -> bool:
    """Same execution: equal ``executionId`` (§1.5); without one, a byte-identical init entry."""
    ea, eb = left.execution_id, right.execution_id
    if ea is not None or eb is not None:
        return ea == eb
    return whole >= 1


# ---------------------------------------------------------------------------------------------
# Results


@dataclass(frozen=True, slots=True)
class StateDiff:
    """How the two sides' states differ after entry ``index`` (an index both sides have).

    ``left_hash``/``right_hash`` are the recomputed state hashes (spec §2) and ``changes`` the
    structural diff of the logical state ``{status, value, context, output?, error?}`` as
    JSON-Pointer :class:`Change` triples (``/value``, ``/context/count``, …).
    """

    index: int
    left_hash: str
    right_hash: str
    changes: tuple[Change, ...]

    @property
    def same(self) -> bool:
        """Whether both sides reached the same state hash."""
        return self.left_hash == self.right_hash


def _logical(persisted: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {
        "status": persisted.get("status"),
        "value": persisted.get("value"),
        "context": persisted.get("context", {}),
    }
    for k in ("output", "error"):
        if k in persisted:
            out[k] = persisted[k]
    return out


def _short(value: Any, limit: int = _CELL_CHARS) -> str:
    if value is MISSING:
        text = "(absent)"
    else:
        try:
            text = orjson.dumps(value).decode()
        except (orjson.JSONEncodeError, TypeError):
            text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _event_type(entry: Any) -> str | None:
    return event_type(entry) or None


def _entries_frame(entries: Sequence[Any]) -> pd.DataFrame:
    """The ``EventLog.df`` column layout for raw entries (used when no reader slice): the one
    builder, :func:`agentscope.log.model.build_entries_frame`."""
    from agentscope.log.model import build_entries_frame

    return build_entries_frame(entries)


def _suffix_frame(side: _Side, start: int) -> pd.DataFrame:
    log = side.log
    if log is not None:
        try:
            sliced = log[start:]
            df = sliced.df
        except (TypeError, AttributeError, KeyError, IndexError):
            df = None
        if df is not None:
            return df  # type: ignore[no-any-return]
    return _entries_frame(side.entries[start:])


@dataclass(frozen=True, eq=False)
class ForkDiff:
    """The comparison of two logs (spec §6): common prefix, divergence, kind, and state diffs.

    Attributes
    ----------
    kind : {"identical", "prefix", "fork", "tamper", "unrelated"}
        ``identical``: same length, every entry the same under §6.1. ``prefix``: one log extends
        the other. ``fork``: same execution, a shared prefix, then different entries (§5.1).
        ``tamper``: an entry with the same id and index but a different event or state hash
        that is an alteration rather than a new recording: only the hash differs, or the logs
        hold the very same entries again later, or it is the last aligned entry and keeps its
        ``recordedAt``; see :attr:`tampered` and :attr:`divergence_fields`. ``unrelated``: different
        executions (``executionId`` differs; without ids, the init entries differ).
    common_prefix : int
        Number of leading entries that are the same under §6.1.
    through_event_id : str | None
        Id of the last shared entry (``None`` when nothing is shared).
    divergence : int | None
        Index of the first entry that differs under §6.1, ``None`` when one log is a prefix of
        the other (or both are identical).
    whole_entry_prefix : int
        The legacy ``diffEventLogs`` common length: leading entries whose whole ``stableJson``
        (``canonical_json(entry)``, ``recordedAt``/``metadata`` included) is equal (§6.2).
    left_length : int
        Number of entries on the left side.
    right_length : int
        Number of entries on the right side.
    execution_ids : tuple[str | None, str | None]
        Each side's ``executionId`` (§1.5).
    names : tuple[str, str]
        Display names (thread id, file name, or ``"left"``/``"right"``).
    divergence_fields : tuple[str, ...]
        The §6.1 fields that differ at the divergence: among ``"id"``, ``"index"``, ``"event"``,
        ``"verification.stateHash"``.
    entry_changes : tuple[Change, ...]
        Whole-entry structural diff at the divergence (JSON Pointers such as ``/event/type``,
        ``/recordedAt``, ``/verification/stateHash``).
    tampered : tuple[int, ...]
        For ``kind == "tamper"``: every aligned index whose entry was altered (same id and index,
        different event or hash).
    left_before : Frame | None
        With a machine: the left side's frame just before the divergence.
    right_before : Frame | None
        With a machine: the right side's frame just before the divergence.
    left_at : Frame | None
        With a machine: the left side's frame at the divergence.
    right_at : Frame | None
        With a machine: the right side's frame at the divergence.
    state_diffs : tuple[StateDiff, ...]
        With a machine: one :class:`StateDiff` per aligned index from the divergence to the end
        of the shorter log (or over ``horizon`` indices).
    reconverged_at : int | None
        With a machine: the first index after the divergence where both sides reach the same
        state hash again.
    machine_used : bool
        Whether states were replayed.
    migrated_from : tuple
        Each side's init ``metadata.migratedFrom`` (``{"machineVersion", "logIndex"}``) when it
        is a version-bridge segment (§1.5), else ``None``. A segment shares its execution but
        no entries with the log it continues, so such a pair compares as a ``fork`` at index 0
        and the summary names the bridge.
    _left : _Side | None
        Internal: the left log as read, for :meth:`to_frame` and the views (not compared).
    _right : _Side | None
        Internal: the right log as read (not compared).

    Examples
    --------
    >>> import agentscope as asc
    >>> from agentscope.examples import example_path
    >>> store = example_path("g_triage.sqlite")
    >>> main = asc.read_log(store, thread="main")
    >>> fork = asc.read_log(store, thread="fork")
    >>> diff = asc.compare(main, fork)
    >>> diff.kind, diff.common_prefix, diff.divergence, diff.divergence_fields
    ('fork', 18, 18, ('event', 'verification.stateHash'))
    >>> diff.left_length, diff.right_length, diff.through_event_id
    (91, 52, 'evt_00000017')
    """

    kind: ForkKind
    common_prefix: int
    through_event_id: str | None
    divergence: int | None
    whole_entry_prefix: int
    left_length: int
    right_length: int
    execution_ids: tuple[str | None, str | None]
    names: tuple[str, str] = ("left", "right")
    divergence_fields: tuple[str, ...] = ()
    entry_changes: tuple[Change, ...] = ()
    tampered: tuple[int, ...] = ()
    left_before: Frame | None = None
    right_before: Frame | None = None
    left_at: Frame | None = None
    right_at: Frame | None = None
    state_diffs: tuple[StateDiff, ...] = ()
    reconverged_at: int | None = None
    machine_used: bool = False
    migrated_from: tuple[Any, Any] = (None, None)
    _left: _Side | None = field(default=None, repr=False, compare=False)
    _right: _Side | None = field(default=None, repr=False, compare=False)

    # -- data views -------------------------------------------------------------------------

    @property
    def suffix_start(self) -> int:
        """Index where the suffixes start: the divergence, or the common prefix length."""
        return self.common_prefix if self.divergence is None else self.divergence

    @cached_property
    def left_suffix(self) -> pd.DataFrame:
        """Left entries from :attr:`suffix_start` on, one row per entry (``EventLog.df`` columns)."""
        return self._suffix(self._left)

    @cached_property
    def right_suffix(self) -> pd.DataFrame:
        """Right entries from :attr:`suffix_start` on, one row per entry (``EventLog.df`` columns)."""
        return self._suffix(self._right)

    def _suffix(self, side: _Side | None) -> pd.DataFrame:
        if side is None:
            return _entries_frame([])
        return _suffix_frame(side, self.suffix_start)

    @property
    def changes(self) -> tuple[Change, ...]:
        """The state diff at the divergence (empty without a machine or a divergence)."""
        if self.state_diffs and self.state_diffs[0].index == self.divergence:
            return self.state_diffs[0].changes
        return ()

    def changes_frame(self) -> pd.DataFrame:
        """Return every state change as rows ``index, path, op, left, right``.

        ``left``/``right`` hold the JSON values (``MISSING`` when a side lacks the path); one row
        per :class:`Change` of every :class:`StateDiff`, in index then path order.
        """
        import pandas as pd

        rows = [
            (d.index, c.path, c.op, c.left, c.right) for d in self.state_diffs for c in d.changes
        ]
        df = pd.DataFrame(rows, columns=list(CHANGE_COLUMNS))
        df["index"] = df["index"].astype("int64")
        return df

    def to_frame(self, limit: int | None = None) -> pd.DataFrame:
        """Return the two logs side by side from :attr:`suffix_start` to the longer log's end.

        ``limit`` caps the number of rows (the first ``limit`` positions).

        Columns: ``index``, ``status`` (``"same"``, ``"differs"``, ``"left only"``, ``"right
        only"``), ``left_id``, ``left_event_type``, ``left_state_hash``, ``right_id``,
        ``right_event_type``, ``right_state_hash`` and, with a machine, ``left_computed_hash``,
        ``right_computed_hash``, ``n_changes`` (for aligned rows that were replayed).
        """
        import pandas as pd

        left, right = self._left, self._right
        start = self.suffix_start
        end = max(self.left_length, self.right_length)
        if limit is not None:
            end = min(end, start + max(limit, 0))
        by_index = {d.index: d for d in self.state_diffs}
        rows: list[dict[str, Any]] = []
        for i in range(start, end):
            a = left.entries[i] if left is not None and i < self.left_length else None
            b = right.entries[i] if right is not None and i < self.right_length else None
            if a is None:
                status = "right only"
            elif b is None:
                status = "left only"
            elif left is not None and right is not None and (
                _same_position(left, right, i) or not _differing_fields(a, b)
            ):
                status = "same"
            else:
                status = "differs"
            row: dict[str, Any] = {
                "index": i,
                "status": status,
                "left_id": a.get("id") if isinstance(a, Mapping) else None,
                "left_event_type": _event_type(a),
                "left_state_hash": _state_hash_of(a) if isinstance(a, Mapping) else None,
                "right_id": b.get("id") if isinstance(b, Mapping) else None,
                "right_event_type": _event_type(b),
                "right_state_hash": _state_hash_of(b) if isinstance(b, Mapping) else None,
            }
            if self.machine_used:
                d = by_index.get(i)
                row["left_computed_hash"] = d.left_hash if d else None
                row["right_computed_hash"] = d.right_hash if d else None
                row["n_changes"] = len(d.changes) if d else None
            rows.append(row)
        cols = [
            "index", "status", "left_id", "left_event_type", "left_state_hash",
            "right_id", "right_event_type", "right_state_hash",
        ]
        if self.machine_used:
            cols += ["left_computed_hash", "right_computed_hash", "n_changes"]
        df = pd.DataFrame(rows, columns=cols)
        df["index"] = df["index"].astype("int64")
        if self.machine_used:
            df["n_changes"] = df["n_changes"].astype("Int64")
        return df

    # -- display -----------------------------------------------------------------------------

    def summary(self) -> str:
        """Return a one-line human summary."""
        a, b = self.names
        lens = f"{a}={self.left_length}, {b}={self.right_length}"
        if self.kind == "identical":
            return f"identical ({lens})"
        if self.kind == "prefix":
            longer = a if self.left_length > self.right_length else b
            return f"prefix: {longer} extends the other after {self.common_prefix} entries ({lens})"
        head = f"{self.kind} at index {self.divergence}" if self.divergence is not None else self.kind
        text = f"{head}; {self.common_prefix} shared entries ({lens})"
        if self.divergence_fields:
            text += "; differs in " + ", ".join(self.divergence_fields)
        bridge = self._bridge_note()
        if bridge:
            text += "; " + bridge
        if self.kind == "tamper" and len(self.tampered) > 1:
            text += f"; {len(self.tampered)} altered entries"
        if self.machine_used and self.divergence is not None:
            text += (
                f"; reconverges at {self.reconverged_at}"
                if self.reconverged_at is not None
                else "; states never reconverge"
            )
        return text

    def _bridge_note(self) -> str:
        a, b = self.names
        for (name, other, other_len), mf in zip(
            ((b, a, self.left_length), (a, b, self.right_length)), self.migrated_from[::-1], strict=True
        ):
            if isinstance(mf, Mapping):
                note = f"{name} is a version-bridge segment (migrated from {mf.get('machineVersion')!r}"
                if mf.get("logIndex") == other_len:
                    note += f" at {other}'s end"
                return note + ")"
        return ""

    def __repr__(self) -> str:
        return f"<ForkDiff {self.summary()}>"

    def _repr_html_(self) -> str:
        """The kind, the facts of the divergence, the changed entries and states and the aligned
        rows, drawn (escaped and bounded) by :func:`agentscope.render.reprs.repr_html`."""
        from agentscope.render.reprs import guarded

        return guarded(self, "forkdiff", self._blocks)

    def _blocks(self) -> list[Any]:
        from agentscope.render.reprs import Bold, Facts, Para, Table

        a, b = self.names
        blocks: list[Any] = [Para(Bold(self.kind), " — ", self.summary())]
        facts: list[tuple[str, Any]] = [
            ("common prefix", self.common_prefix),
            ("through event id", self.through_event_id),
            ("divergence", self.divergence),
            ("whole-entry prefix (legacy)", self.whole_entry_prefix),
            (f"execution ({a})", self.execution_ids[0]),
            (f"execution ({b})", self.execution_ids[1]),
        ]
        if self.tampered:
            facts.append(("altered entries", ", ".join(map(str, self.tampered[:_HTML_ROWS]))))
        if self.machine_used:
            facts.append(("reconverged at", self.reconverged_at))
        blocks.append(Facts([(k, _short(v) if v is not None else None) for k, v in facts]))

        def changes(rows: Sequence[Change], more: int = 0) -> Table:
            cells = [[c.path or "(root)", _short(c.left), _short(c.right)] for c in rows]
            return Table(["path", a, b], cells, more=more, noun="changes")

        if self.entry_changes:
            blocks.append(f"Entries at index {self.divergence}:")
            blocks.append(changes(self.entry_changes[:_HTML_ROWS]))
        ch = self.changes
        if ch:
            blocks.append(f"State after index {self.divergence}:")
            blocks.append(changes(ch[:_HTML_ROWS], max(len(ch) - _HTML_ROWS, 0)))
        if self.kind != "identical":
            blocks.append(Table.of(self.to_frame(limit=_HTML_ROWS), limit=_HTML_ROWS))
        return blocks


# ---------------------------------------------------------------------------------------------
# Replay of both sides


def _side_frames(
    machine: Machine,
    left: _Side,
    right: _Side,
    divergence: int,
    stop: int,
    timelines: tuple[Any, Any] | None = None,
) -> tuple[Iterator[Frame], Iterator[Frame]]:
    """Return each side's frames, in order, for indices ``[max(divergence-1, 0), stop)``.

    Each side is an :class:`agentscope.pipeline.Timeline` (spec §4.1 fold with session
    rebinding, verdicts with their explanations) of the one pass, with the shared prefix folded
    once for both (:func:`~agentscope.pipeline.timeline.fork_timelines`), read in order; or the
    caller's ``timelines`` of the two logs, read without folding again.
    """
    from agentscope.pipeline.timeline import fork_timelines  # lazy: replay pulls in numpy/pandas

    lo = max(divergence - 1, 0)
    if timelines is not None:
        return timelines[0].iter_frames(lo, stop), timelines[1].iter_frames(lo, stop)
    tl, tr = fork_timelines(
        machine,
        left.log if left.log is not None else list(left.entries),
        right.log if right.log is not None else list(right.entries),
        shared=divergence,
    )
    return tl.iter_frames(lo, stop), tr.iter_frames(lo, stop)


# ---------------------------------------------------------------------------------------------
# compare


def compare(
    a: Any,
    b: Any,
    *,
    machine: Machine | None = None,
    horizon: int | None = None,
    timelines: tuple[Any, Any] | None = None,
) -> ForkDiff:
    """Return how two logs relate: common prefix, divergence, kind and (with a machine) states.

    Parameters
    ----------
    a, b : EventLog | Sequence[Mapping] | str | os.PathLike | Any
        The two logs ("left" and "right"). An ``EventLog`` or a list of entry dicts is used as
        is. Two stored logs named by path or URL (a JSON Lines file, ``STORE#THREAD`` of a
        SQLite or PostgreSQL store, a single-thread store) are compared as they are read, raw
        record by raw record (bounded memory), parsing only the entries the result needs (see
        Notes); anything else goes through :func:`agentscope.stores.read_log`. Entries are
        never modified.
    machine : Machine, optional
        Any engine (Node XState or the Python statechart engine). When given, both sides are
        replayed (spec §4.1) from the shared prefix on, and the result carries the frames around
        the divergence, a :class:`StateDiff` for every aligned index from the divergence to the
        end of the shorter log, and :attr:`ForkDiff.reconverged_at`.
    horizon : int, optional
        With a machine: diff at most this many aligned indices from the divergence on (at least
        1); ``None`` diffs to the end of the shorter log. For very long logs.
    timelines : (Timeline, Timeline), optional
        With a machine: the two logs' :class:`~agentscope.pipeline.Timeline` objects (e.g. from
        :func:`~agentscope.pipeline.timeline.fork_timelines`, which a player also reads); their
        frames are read instead of folding the sides again.

    Returns
    -------
    ForkDiff

    Raises
    ------
    LogFormatError
        An entry that the comparison has to look into is not a JSON object (names the side and
        the index).
    agentscope.errors.EngineError
        From the machine, when a side cannot be replayed.

    Notes
    -----
    Entry equality is spec §6.1. The scan is linear and stops at the divergence. It runs at C
    speed over whole chunks: the same list on both sides is settled at once, otherwise it
    compares the reader's raw texts when both logs expose ``raw_entries`` (a sequence of
    ``str``/``bytes`` aligned with ``entries``), else the orjson bytes of both entries (exact:
    ``true`` is not ``1``). Only a position those cannot settle (another key order, ``1.0`` for
    ``1``, a real difference) is compared field by field with canonical JSON (spec §2.2), so
    equal entries are never re-serialized in Python.

    Without a machine, two stored logs are scanned as raw records: equal texts are equal
    entries; at the first pair whose texts differ both entries are parsed, and the rest of
    both sides is only counted (and, for the realignment test below, compared as texts; a
    tamper's altered indices parse only the pairs whose texts differ). When a pair's texts
    differ but the entries are the same under §6.1 (another key order or spacing), both logs
    are read whole instead. The suffix tables and views of such a result read the logs on
    first use.

    The kind rule, in order: different executions → ``unrelated``; no §6.1 difference →
    ``identical`` or ``prefix``; the first differing pair has the same ``id`` and ``index`` and
    differs only in its state hash, or the logs hold the very same entries again at a later
    aligned index, or it is the last aligned pair and keeps the same ``recordedAt`` →
    ``tamper``; a difference at entry 0 is not a fork (a fork keeps the init entry, §5.1):
    ``tamper`` with the same id and index there, else ``unrelated`` (except a version-bridge
    segment, §4.2, reported as a ``fork`` at 0 and named as a bridge); otherwise ``fork``.
    Telling a fork from a tamper this way relies on real clocks: logs written with a frozen
    ``recordedAt`` can only be told apart by the realignment test.

    Examples
    --------
    >>> import agentscope as asc
    >>> from agentscope.examples import example_path
    >>> from agentscope.examples.python_machines import triage_machine
    >>> store = example_path("g_triage.sqlite")
    >>> main = asc.read_log(store, thread="main")
    >>> fork = asc.read_log(store, thread="fork")
    >>> asc.compare(main, fork)  # doctest: +ELLIPSIS
    <ForkDiff fork at index 18; 18 shared entries (main=91, fork=52); differs in event, ...>
    >>> asc.compare(main, main[:10]).kind
    'prefix'
    >>> diff = asc.compare(main, fork, machine=triage_machine())
    >>> diff.left_at.event_type, diff.right_at.event_type, diff.reconverged_at
    ('APPROVE', 'REJECT', None)
    """
    if machine is None and timelines is None:
        streamed = _streamed(a, b)
        if streamed is not None:
            return streamed
    left = _as_side(a, "left")
    right = _as_side(b, "right")
    if left.name == right.name:
        right = _rename(right, f"{right.name} (right)")
    scan = _scan(left, right)
    n_l, n_r = len(left.entries), len(right.entries)
    n = min(n_l, n_r)
    common = scan.common
    divergence: int | None = common if common < n else None
    related = n == 0 or _related(left, right, scan.whole)  # an empty log relates to anything

    tampered: tuple[int, ...] = ()
    kind: ForkKind
    if not related:
        kind = "unrelated"
    elif divergence is None:
        kind = "identical" if n_l == n_r else "prefix"
    elif _is_tamper(left, right, divergence, scan.fields):
        kind = "tamper"
        tampered = _altered_indices(left, right, divergence, n)
    elif divergence == 0 and not _is_bridge(left, right):
        kind = "unrelated"  # a fork keeps at least the init entry (§5.1)
    else:
        kind = "fork"

    entry_changes: tuple[Change, ...] = ()
    if divergence is not None:
        entry_changes = tuple(diff_json(_entry(left, divergence), _entry(right, divergence)))
    through = None
    if common > 0:
        tid = _entry(left, common - 1).get("id")
        through = tid if isinstance(tid, str) else None

    frames: dict[str, Frame | None] = {}
    diffs: tuple[StateDiff, ...] = ()
    reconverged: int | None = None
    if machine is not None and divergence is not None:
        stop = n if horizon is None else min(n, divergence + max(horizon, 1))
        out: list[StateDiff] = []
        for a_f, b_f in zip(*_side_frames(machine, left, right, divergence, stop, timelines), strict=True):
            i = a_f.index
            if i < divergence:
                frames["left_before"], frames["right_before"] = a_f, b_f
                continue
            if i == divergence:
                frames["left_at"], frames["right_at"] = a_f, b_f
            if a_f.persisted is None or b_f.persisted is None:
                break  # a side could not be replayed this far (no machine for its version)
            hl = a_f.computed_hash or state_hash(a_f.persisted, left.variant)
            hr = b_f.computed_hash or state_hash(b_f.persisted, right.variant)
            changes = () if hl == hr else tuple(diff_json(_logical(a_f.persisted), _logical(b_f.persisted)))
            out.append(StateDiff(i, hl, hr, changes))
            if reconverged is None and i > divergence and hl == hr:
                reconverged = i
        diffs = tuple(out)

    return ForkDiff(
        kind=kind,
        common_prefix=common,
        through_event_id=through,
        divergence=divergence,
        whole_entry_prefix=scan.whole,
        left_length=n_l,
        right_length=n_r,
        execution_ids=(left.execution_id, right.execution_id),
        names=(left.name, right.name),
        divergence_fields=scan.fields,
        entry_changes=entry_changes,
        tampered=tampered,
        left_before=frames.get("left_before"),
        right_before=frames.get("right_before"),
        left_at=frames.get("left_at"),
        right_at=frames.get("right_at"),
        state_diffs=diffs,
        reconverged_at=reconverged,
        machine_used=machine is not None,
        migrated_from=(_migrated_from(left), _migrated_from(right)),
        _left=left,
        _right=right,
    )


# ---------------------------------------------------------------------------------------------
# Two stored logs compared as they are read


class _LazyEntries(Sequence[Any]):
    """A side's entries read whole (:func:`agentscope.stores.read_log`) on first use: what a
    streamed :class:`ForkDiff` shows on demand (suffix tables, the views)."""

    def __init__(self, source: str, thread: str | None) -> None:
        self._source, self._thread = source, thread
        self._entries: Sequence[Any] | None = None

    def _load(self) -> Sequence[Any]:
        if self._entries is None:
            from agentscope.stores import read_log

            self._entries = read_log(self._source, thread=self._thread).entries
        return self._entries

    def __len__(self) -> int:
        return len(self._load())

    def __getitem__(self, i: Any) -> Any:
        return self._load()[i]


def _stream_source(source: Any) -> tuple[Any, str, str] | None:
    """``(store, thread, name)`` for a path or URL (``SOURCE#THREAD`` too) whose records a store
    streams (a JSON Lines file, a SQLite or PostgreSQL thread); ``None`` for anything else."""
    if not isinstance(source, str | os.PathLike):
        return None
    from agentscope.stores import open_store, split_thread
    from agentscope.stores.protocol import RowStore

    text, thread = split_thread(source)
    store = open_store(text)
    if isinstance(store, RowStore):
        return store, store.pick_thread(thread), store.pick_thread(thread)
    if store.kind == "jsonl" and thread is None:
        only = getattr(store, "thread_id", None)
        if isinstance(only, str):
            return store, only, os.path.basename(store.address)
    store.close()
    return None


_STREAM_CHUNK = 4096
"""Records of each side held at once by a streamed compare (bounded memory)."""


def _texts(side: tuple[Any, str, str], from_: int = 0) -> Iterator[Any]:
    """The side's record texts one by one (batches flattened at C speed)."""
    return chain.from_iterable(side[0].texts(side[1], from_))


def _parsed(text: Any, side: tuple[Any, str, str], i: int) -> Mapping[str, Any]:
    from agentscope.log.validate import loads

    try:
        value = loads(text) if isinstance(text, str) else None
    except ValueError as exc:
        raise LogFormatError(f"entry {i} is not JSON: {exc}", source=side[0].address, index=i) from None
    if not isinstance(value, Mapping):
        raise LogFormatError("an entry must be a JSON object", source=side[0].address, index=i)
    return value


def _streamed(a: Any, b: Any) -> ForkDiff | None:
    """:func:`compare` of two stored logs, reading their raw records side by side (one batch at
    a time) and parsing only what the result needs: entry 0 of each side, the pair at the first
    difference, the entry before it, and with a ``tamper`` each later pair whose texts differ.

    Equal texts are equal entries. A later aligned pair with byte-identical texts is the same
    entry again (the realignment test of a tamper): the prefix showed both sides written by
    one serializer. When a pair's texts differ but its entries are the same under §6.1 (another
    key order or spacing, another ``recordedAt``), ``None`` is returned and :func:`compare`
    reads both logs whole instead. ``None`` too for sources that are not streamed (a JSON document,
    CSV, Parquet, objects in memory).
    """
    from agentscope.log.entry import execution_id

    left = _stream_source(a)
    if left is None:
        return None
    right = _stream_source(b)
    if right is None:
        left[0].close()
        return None
    try:
        return _streamed_diff(left, right, execution_id)
    finally:
        left[0].close()
        right[0].close()


def _streamed_diff(left: tuple[Any, str, str], right: tuple[Any, str, str],
                   execution_id: Callable[[Any], Any]) -> ForkDiff | None:
    fa, fb = _texts(left), _texts(right)
    firsts: list[Mapping[str, Any]] = []
    prev: Any = None
    n_common = n_l = n_r = 0
    at: tuple[Mapping[str, Any], Mapping[str, Any]] | None = None
    fields: tuple[str, ...] = ()
    realign = False
    while True:  # a chunk of each side at a time, compared at C speed
        ca, cb = list(islice(fa, _STREAM_CHUNK)), list(islice(fb, _STREAM_CHUNK))
        if not ca and not cb:
            break
        if n_l == 0 and ca and cb:
            firsts = [_parsed(ca[0], left, 0), _parsed(cb[0], right, 0)]
        m = min(len(ca), len(cb))
        if at is None:
            j = next(compress(count(), map(ne, ca, cb)), m)
            if j < m:
                i = n_common + j
                ea, eb = _parsed(ca[j], left, i), _parsed(cb[j], right, i)
                fields = _differing_fields(ea, eb)
                if not fields:
                    return None  # the same entry under §6.1 in other bytes: compare() reads whole
                at = (ea, eb)
                realign = any(map(eq, islice(ca, j + 1, m), islice(cb, j + 1, m)))
            prev = ca[j - 1] if j else prev
            n_common += j
        elif not realign:
            realign = any(map(eq, ca, cb))
        n_l, n_r = n_l + len(ca), n_r + len(cb)
    n = min(n_l, n_r)
    divergence = n_common if at is not None else None
    ids = [execution_id(e) for e in firsts] if firsts else [None, None]
    ex = [x if isinstance(x, str) else None for x in ids]
    bridge = any(_migrated_of(e) is not None for e in firsts)
    related = n == 0 or ((ex[0] == ex[1]) if ex[0] is not None or ex[1] is not None else n_common >= 1)
    tampered: tuple[int, ...] = ()
    kind: ForkKind
    if not related:
        kind = "unrelated"
    elif at is None:
        kind = "identical" if n_l == n_r else "prefix"
    elif _tamper_rule(fields, n_common, n, bridge, lambda: realign, at):
        kind = "tamper"
        tampered = _streamed_altered(left, right, n_common)
    elif n_common == 0 and not bridge:
        kind = "unrelated"
    else:
        kind = "fork"
    through = None
    if n_common > 0:
        tid = _parsed(prev, left, n_common - 1).get("id")
        through = tid if isinstance(tid, str) else None
    names = (left[2], right[2] if right[2] != left[2] else f"{right[2]} (right)")
    sides = tuple(
        _Side(_LazyEntries(s[0].address, s[1] if s[2] == s[1] else None), None, None, name,
              s[0].address, x, "02a45590")
        for s, name, x in zip((left, right), names, ex, strict=True))
    return ForkDiff(
        kind=kind, common_prefix=n_common, through_event_id=through, divergence=divergence,
        whole_entry_prefix=n_common, left_length=n_l, right_length=n_r,
        execution_ids=(ex[0], ex[1]), names=names, divergence_fields=fields,
        entry_changes=() if at is None else tuple(diff_json(at[0], at[1])), tampered=tampered,
        migrated_from=(_migrated_of(firsts[0]) if firsts else None,
                       _migrated_of(firsts[1]) if firsts else None),
        _left=sides[0], _right=sides[1],
    )


def _streamed_altered(left: tuple[Any, str, str], right: tuple[Any, str, str], start: int) -> tuple[int, ...]:
    """:func:`_altered_indices` over raw records: only pairs whose texts differ are parsed."""
    out: list[int] = []
    for i, (ra, rb) in enumerate(zip(_texts(left, start), _texts(right, start), strict=False), start):
        if ra == rb:
            continue
        f = _differing_fields(_parsed(ra, left, i), _parsed(rb, right, i))
        if f and "id" not in f and "index" not in f:
            out.append(i)
    return tuple(out)


def _migrated_of(first: Any) -> Any:
    meta = first.get("metadata") if isinstance(first, Mapping) else None
    return meta.get("migratedFrom") if isinstance(meta, Mapping) else None


def _is_bridge(left: _Side, right: _Side) -> bool:
    """Whether either side starts a version-bridge segment (init ``metadata.migratedFrom``, §4.2)."""
    return _migrated_from(left) is not None or _migrated_from(right) is not None


def _migrated_from(side: _Side) -> Any:
    return _migrated_of(side.entries[0]) if side.entries else None


def _rename(side: _Side, name: str) -> _Side:
    return _Side(side.entries, side.log, side.raw, name, side.source, side.execution_id, side.variant)


def _is_tamper(left: _Side, right: _Side, i: int, fields: tuple[str, ...]) -> bool:
    """Whether the first difference (at ``i``) is an in-place alteration rather than a fork.

    With the same id and index: a hash-only difference (a deterministic machine cannot reach two
    states from the same prefix and event); or a difference in the init entry (a fork keeps it,
    §5.1) unless a side is a version-bridge segment; or the logs hold the very same entries again at a
    later aligned index (an edited copy); or, at the last aligned index where nothing later can
    tell, the same ``recordedAt`` (the same recording, altered).
    """
    n = min(len(left.entries), len(right.entries))
    return _tamper_rule(fields, i, n, _is_bridge(left, right),
                        lambda: _realigns(left, right, i + 1, n), (_entry(left, i), _entry(right, i)))


def _tamper_rule(fields: tuple[str, ...], i: int, n: int, bridge: bool,
                 realigns: Callable[[], bool], at: tuple[Mapping[str, Any], Mapping[str, Any]]) -> bool:
    """:func:`_is_tamper`'s rule on what it needs: the differing ``fields`` at ``i``, the aligned
    length ``n``, whether a side is a bridge segment, a (lazy) realignment test and the two
    entries at ``i``."""
    if "id" in fields or "index" in fields:
        return False
    if "event" not in fields:
        return True
    if i == 0 and not bridge:  # a fork keeps the init entry (§5.1)
        return True
    if realigns():
        return True
    if i == n - 1:
        ra, rb = at[0].get("recordedAt"), at[1].get("recordedAt")
        return ra is not None and ra == rb
    return False


def _altered_indices(left: _Side, right: _Side, start: int, n: int) -> tuple[int, ...]:
    out: list[int] = []
    for i in range(start, n):
        if _same_position(left, right, i):
            continue
        f = _differing_fields(_entry(left, i), _entry(right, i))
        if f and "id" not in f and "index" not in f:
            out.append(i)
    return tuple(out)


# ---------------------------------------------------------------------------------------------
# fork_tree

TREE_COLUMNS: tuple[str, ...] = (
    "thread",
    "execution_id",
    "length",
    "parent",
    "fork_index",
    "through_event_id",
    "root",
    "depth",
)
"""Columns of :func:`fork_tree`."""


def _threads_of(source: Any) -> Iterator[tuple[str, Any]]:
    if isinstance(source, Mapping):
        yield from ((str(k), v) for k, v in source.items())
        return
    if isinstance(source, Sequence) and not isinstance(source, str | bytes | bytearray):
        for pos, log in enumerate(source):
            thread = getattr(log, "thread", None)
            yield (str(thread) if thread else str(pos)), log
        return
    from agentscope.stores import open_store

    with open_store(source) as store:
        for info in store.threads():
            yield info.thread_id, store.log(info.thread_id)


def _older_at(x: _Side, y: _Side, k: int, order_x: int, order_y: int) -> bool:
    """Whether ``x`` is the older line at fork point ``k`` (so ``x`` may be ``y``'s parent)."""
    nx, ny = len(x.entries), len(y.entries)
    if nx > k and ny > k:
        tx, ty = recorded_at_ms(_entry(x, k)), recorded_at_ms(_entry(y, k))  # V8 rules, §1.4
        if tx is not None and ty is not None and tx != ty:
            return tx < ty
        return order_x < order_y
    if nx > k:  # y stops at the fork point: a copy that never advanced
        return True
    if ny > k:
        return False
    return order_x < order_y


def fork_tree(source: Any) -> pd.DataFrame:
    """Return the family tree of the threads of a store: who was forked from whom, and where.

    Parameters
    ----------
    source : str | os.PathLike | Mapping[str, EventLog | Sequence[Mapping]] | Sequence[EventLog]
        A store (a SQLite file or a ``postgresql://`` URL, spec §5.2; opened with
        :func:`agentscope.stores.open_store`, every thread read with
        :meth:`~agentscope.stores.Store.log`), a mapping ``thread id -> log``, or a
        list of logs (named by their ``thread``, else by position).

    Returns
    -------
    pandas.DataFrame
        One row per thread, in the source's order, with columns ``thread``, ``execution_id``,
        ``length``, ``parent`` (``None`` for a root), ``fork_index`` (the parent's
        ``upToIndex``: the number of shared entries, equal to the index where the thread
        diverges; ``<NA>`` for a root), ``through_event_id`` (last shared entry), ``root`` and
        ``depth`` (0 for a root).

    Notes
    -----
    Rule. Only threads of the same execution (equal ``executionId``, §1.5; threads without one
    must share a byte-identical init entry) can be related, and only when they share at least
    the init entry under §6.1. For a pair sharing ``k`` entries, the parent is the older line at
    the fork point (§5.1 copies entries verbatim, so the thread whose entry ``k`` was recorded
    first kept going while the other was being created); a thread that stops exactly at ``k``
    is the copy of the one that goes on; equal or unreadable ``recordedAt`` fall back to the
    source's order (earlier listed = parent). A thread's parent is the candidate sharing the
    longest prefix, ties going to the candidate whose entry ``k`` is oldest; candidates that
    hold the very same recording of entry ``k`` are copies of one line, and the oldest of them
    (by the same rule at their own fork point) wins. Threads of a unique execution are roots.

    Examples
    --------
    >>> import agentscope as asc
    >>> from agentscope.examples import example_path
    >>> tree = asc.fork_tree(example_path("g_triage.sqlite"))
    >>> print(tree[["thread", "parent", "fork_index", "root", "depth"]])
       thread parent  fork_index    root  depth
    0    fork   main          18    main      1
    1    main    NaN        <NA>    main      0
    2  second    NaN        <NA>  second      0
    """
    import pandas as pd

    sides: list[tuple[str, _Side]] = [(name, _as_side(log, name)) for name, log in _threads_of(source)]
    groups: dict[Any, list[int]] = {}
    for idx, (_, s) in enumerate(sides):
        groups.setdefault(s.execution_id, []).append(idx)

    parent: dict[int, tuple[int, int]] = {}
    for members in groups.values():
        if len(members) < 2:
            continue
        shared: dict[tuple[int, int], int] = {}
        for p_i, x in enumerate(members):
            for y in members[p_i + 1 :]:
                sc = _scan(sides[x][1], sides[y][1])
                if _related(sides[x][1], sides[y][1], sc.whole) and sc.common >= 1:
                    shared[(x, y)] = shared[(y, x)] = sc.common
        for t in members:
            cands: list[tuple[tuple[int, float, int], int, int]] = []
            for u in members:
                k = shared.get((t, u))
                if u == t or k is None or not _older_at(sides[u][1], sides[t][1], k, u, t):
                    continue
                us = sides[u][1]
                when = recorded_at_ms(_entry(us, k)) if len(us.entries) > k else None
                stamp = when / 1000 if when is not None else float("inf")
                cands.append(((-k, stamp, u), u, k))
            if not cands:
                continue
            cands.sort()
            top = [c for c in cands if c[0][:2] == cands[0][0][:2]]
            best_u, best_k = top[0][1], top[0][2]
            for _, u, _k in top[1:]:
                # candidates tied on prefix and on the recording of entry k are copies of one
                # line: the parent is the oldest of them, judged at their own fork point
                k_ub = shared.get((u, best_u))
                if k_ub is not None and _older_at(sides[u][1], sides[best_u][1], k_ub, u, best_u):
                    best_u = u
            parent[t] = (best_u, best_k)
    _break_cycles(parent)

    rows: list[dict[str, Any]] = []
    for idx, (name, s) in enumerate(sides):
        depth, root = 0, idx
        seen = {idx}
        while root in parent and parent[root][0] not in seen:
            root = parent[root][0]
            seen.add(root)
            depth += 1
        p = parent.get(idx)
        through = None
        if p is not None:
            tid = _entry(s, p[1] - 1).get("id")
            through = tid if isinstance(tid, str) else None
        rows.append(
            {
                "thread": name,
                "execution_id": s.execution_id,
                "length": len(s.entries),
                "parent": sides[p[0]][0] if p is not None else None,
                "fork_index": p[1] if p is not None else None,
                "through_event_id": through,
                "root": sides[root][0],
                "depth": depth,
            }
        )
    df = pd.DataFrame(rows, columns=list(TREE_COLUMNS))
    df["length"] = df["length"].astype("int64")
    df["depth"] = df["depth"].astype("int64")
    df["fork_index"] = df["fork_index"].astype("Int64")
    return df


def _break_cycles(parent: dict[int, tuple[int, int]]) -> None:
    """Cut parent links that would form a cycle (possible only with inconsistent clocks)."""
    for start in list(parent):
        path: list[int] = []
        node = start
        while node in parent and node not in path:
            path.append(node)
            node = parent[node][0]
        if node in path:  # cycle: drop the link with the shortest shared prefix
            cycle = path[path.index(node) :]
            weakest = min(cycle, key=lambda t: (parent[t][1], t))
            del parent[weakest]

"""``EventLog``: a read log, its entries exactly as read, and a lazily built DataFrame view.

Spec §1 (the entry), §1.5 (the init entry, ``executionId``, version-bridge segments), §4.2 (the
cached snapshot with ``agentMeta``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any, Literal, overload

from agentscope.log.validate import AGENT_INIT_EVENT_TYPE, Era

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "PROBLEM_COLUMNS",
    "EventLog",
    "Segment",
    "build_entries_frame",
    "recorded_at_series",
    "recorded_at_to_datetime",
    "recorded_at_to_ns",
]

from agentscope.log.problems import PROBLEM_COLUMNS  # re-exported: the one table

DF_COLUMNS = (
    "index",
    "id",
    "recorded_at",
    "machine_id",
    "machine_version",
    "event_type",
    "causation_id",
    "state_hash",
    "event",
    "metadata",
)


from agentscope.log.entry import (  # noqa: E402  (the one Segment type, the one entry vocabulary)
    Segment,
    event_of,
    event_type,
    event_types,
    execution_id,
    recorded_at_ns,
    recorded_hashes,
    segments_of,
)

NS_MIN = -(2**63) + 1
"""The earliest instant ``datetime64[ns]`` holds (1677-09-21T00:12:43.145224193Z), in epoch ns."""
NS_MAX = 2**63 - 1
"""The latest instant ``datetime64[ns]`` holds (2262-04-11T23:47:16.854775807Z), in epoch ns."""


def recorded_at_to_ns(value: object) -> int | None:
    """Read a ``recordedAt`` string as V8 does (§1.4) and return it in nanoseconds since the epoch.

    Day overflow rolls into the next month (``2026-02-30`` is March 2) and ``24:00:00`` is the
    next midnight, as ``Date.parse`` does; the offset is applied. Fraction digits are kept to
    the nanosecond (V8 itself keeps milliseconds; later digits are truncated). The result is an
    exact Python ``int`` for every year ``0000``–``9999``, also outside the ``datetime64[ns]``
    range (see :data:`NS_MIN`, :data:`NS_MAX`). Returns ``None`` for a value
    :func:`~agentscope.log.validate.is_recorded_at` rejects. The reading is
    :func:`agentscope.log.entry.recorded_at_ns`'s (the one parser); this takes the string only.
    """
    return recorded_at_ns(value) if isinstance(value, str) else None


def recorded_at_to_datetime(value: object) -> datetime | None:
    """Convert a ``recordedAt`` string to an aware UTC ``datetime`` the way V8 reads it (§1.4).

    See :func:`recorded_at_to_ns` for the reading. Precision: microseconds (``datetime``'s);
    :attr:`EventLog.df` keeps nanoseconds. Returns ``None`` for a rejected value or one outside
    ``datetime``'s range (year 0000).
    """
    ns = recorded_at_to_ns(value)
    if ns is None:
        return None
    try:
        return _EPOCH + timedelta(microseconds=ns // 1000)
    except OverflowError:
        return None


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def recorded_at_series(values: Sequence[object]) -> tuple[pd.Series, list[int]]:
    """``recordedAt`` values as a ``datetime64[ns, UTC]`` Series, plus the out-of-range positions.

    A valid ``recordedAt`` outside the ``datetime64[ns]`` range (before 1677-09-21 or after
    2262-04-11, e.g. year ``0000``, which V8 accepts) becomes ``NaT`` and its position is
    returned, so :attr:`EventLog.problems` can list it (kind ``timestamp-out-of-range``).
    Invalid or missing values are ``NaT`` and not listed (validation reports those).
    """
    import numpy as np
    import pandas as pd

    nat = np.iinfo(np.int64).min
    out = np.full(len(values), nat, dtype=np.int64)
    outside: list[int] = []
    for i, v in enumerate(values):
        ns = recorded_at_to_ns(v)
        if ns is None:
            continue
        if NS_MIN <= ns <= NS_MAX:
            out[i] = ns
        else:
            outside.append(i)
    series = pd.Series(out.view("datetime64[ns]")).dt.tz_localize("UTC")
    return series, outside


def _empty_problems() -> pd.DataFrame:
    from agentscope.log.problems import problems_frame

    return problems_frame([])


class EventLog:
    """One event log (one thread): the entries exactly as read, plus views over them.

    Build one with :func:`agentscope.log.read_log`. The constructor does not validate.

    Parameters
    ----------
    entries : list[dict] or callable
        The entries as read (dicts with their key order untouched), or a zero-argument callable
        returning them, used by readers that keep payloads raw until asked.
    source : str | None
        Where the log came from (a path, ``"<list>"``, ``"<stream>"``, ``"<DataFrame>"`` …).
    thread : str | None
        The store thread id, for logs read from a store (§5.2).
    era : {"C", "B", "A"}
        The format era (spec §0).
    cached_snapshot : dict | None
        A persisted snapshot carrying ``agentMeta`` (§4.2) that came with the log.
    problems : DataFrame | None
        What ``errors="collect"`` set aside (columns :data:`PROBLEM_COLUMNS`).
    length : int | None
        The number of entries, required when ``entries`` is a callable.
    frame_builder : callable | None
        Builds :attr:`df` without materialising entries (fast readers); optional.
    summary : Mapping | None
        Values a fast reader already computed (``machine_id``, ``machine_versions``,
        ``execution_id``, ``segments``), so those properties need not materialise the entries.
    validated : bool
        Whether a reader checked the log when it read it (see :attr:`validated`).
    positions : Sequence[int] | None
        Each entry's position in the source (see :attr:`positions`); ``None``: ``0 .. n - 1``.

    Examples
    --------
    >>> import agentscope as asc
    >>> from agentscope.examples import example_path
    >>> log = asc.read_log(example_path("g_triage.sqlite"), thread="main")
    >>> len(log), log.thread, log.machine_id, log.era
    (91, 'main', 'supportTriage', 'C')
    >>> log[0]["event"]
    {'type': '@agent.init', 'input': {'team': 'tier1', 'maxKbAttempts': 2}}
    >>> log.df.loc[1, ["event_type", "state_hash"]].tolist()
    ['TICKETS_RECEIVED', '725c43c9']
    """

    def __init__(
        self,
        entries: list[dict[str, Any]] | Callable[[], list[dict[str, Any]]],
        *,
        source: str | None = None,
        thread: str | None = None,
        era: Era = "C",
        cached_snapshot: dict[str, Any] | None = None,
        problems: pd.DataFrame | None = None,
        length: int | None = None,
        frame_builder: Callable[[], pd.DataFrame] | None = None,
        summary: Mapping[str, Any] | None = None,
        validated: bool = False,
        positions: Sequence[int] | None = None,
    ) -> None:
        if callable(entries):
            if length is None:
                raise TypeError("EventLog: a lazy entries loader needs length=")
            self._entries: list[dict[str, Any]] | None = None
            self._loader: Callable[[], list[dict[str, Any]]] | None = entries
            self._length = length
        else:
            self._entries = entries
            self._loader = None
            self._length = len(entries)
        self.source = source
        self.thread = thread
        self.era: Era = era
        self.cached_snapshot = cached_snapshot
        self.validated = validated
        """True when a reader checked the log as it read it: every entry kept passed the §1.2
        envelope rules and the log the §1.3 structure rules (numbering, unique ids, one
        ``@agent.init`` first; without a machine). With ``errors="raise"`` nothing was found;
        with ``"collect"`` what was found is in :attr:`problems` (and :attr:`read_problems`).
        ``verify``, ``replay`` and ``Timeline`` then check only the machine's identity; a slice
        of a validated log is validated (its entries keep their source positions)."""
        if positions is not None and len(positions) != self._length:
            raise ValueError(f"EventLog: {len(positions)} positions for {self._length} entries")
        self._positions = positions
        self._read = problems
        self._problems: pd.DataFrame | None = None
        self._timestamps_checked = False
        self._frame_builder = frame_builder
        self._df: pd.DataFrame | None = None
        self._summary = dict(summary) if summary is not None else None
        self.actors: pd.DataFrame | None = None
        """For a log read from an XState inspection stream (:mod:`agentscope.log.inspection`):
        every actor of the root actor's system, root first (columns
        :data:`~agentscope.log.inspection.ACTOR_COLUMNS`); ``None`` for other logs."""

    # -- entries --------------------------------------------------------------------------------

    @property
    def entries(self) -> list[dict[str, Any]]:
        """The entries exactly as read (dicts, key order untouched). Do not mutate them."""
        if self._entries is None:
            assert self._loader is not None
            self._entries = self._loader()
            self._loader = None
        return self._entries

    def __len__(self) -> int:
        return self._length

    def __iter__(self) -> Iterator[dict[str, Any]]:
        return iter(self.entries)

    @overload
    def __getitem__(self, key: int) -> dict[str, Any]: ...

    @overload
    def __getitem__(self, key: slice) -> EventLog: ...

    def __getitem__(self, key: int | slice) -> dict[str, Any] | EventLog:
        """``log[i]`` is entry ``i`` (a dict); ``log[a:b]`` is an :class:`EventLog` of those entries.

        A slice keeps source, thread, era and :attr:`validated`, drops the cached snapshot (it
        describes the whole log), and keeps the problems whose index falls in the slice; its
        entries keep their source :attr:`positions`. Steps other than 1 raise ``ValueError``
        (a log is contiguous).
        """
        if isinstance(key, slice):
            start, stop, step = key.indices(len(self))
            if step != 1:
                raise ValueError("EventLog slices must be contiguous (step 1)")
            stop = max(start, stop)
            positions = self.positions[start:stop]
            problems = self.problems
            if len(problems):  # those of the slice's entries: source positions in its range
                idx = problems["index"]
                lo = positions[0] if len(positions) else start
                hi = positions[-1] + 1 if len(positions) else start
                problems = problems[idx.isna() | ((idx >= lo) & (idx < hi))].reset_index(drop=True)
            part = EventLog(
                self.entries[start:stop],
                source=self.source,
                thread=self.thread,
                era=self.era,
                problems=problems,
                validated=self.validated,
                positions=None if self._positions is None and start == 0 else positions,
            )
            part._problems = problems  # the parent's timestamp rows are already in ``problems``
            part._timestamps_checked = True
            part.actors = self.actors
            return part
        return self.entries[key]

    @property
    def positions(self) -> Sequence[int]:
        """Each entry's position in the source, in order: ``range(len(log))`` unless the reader
        set entries aside (``errors="collect"``) or the log is a slice (``log[a:b]`` keeps
        ``a .. b - 1``). Every problems table's ``index`` is such a position (spec §1.3's
        ``entry.index`` of a well-formed log)."""
        return range(self._length) if self._positions is None else self._positions

    @property
    def read_problems(self) -> pd.DataFrame:
        """What the reader found (the rows of :attr:`problems` but the ``timestamp-out-of-range``
        notes, which need :attr:`df`): empty for a log read with ``errors="raise"``. Cheap: it
        builds nothing."""
        if self._read is None:
            self._read = _empty_problems()
        return self._read

    # -- identity -------------------------------------------------------------------------------

    def _summary_value(self, name: str) -> Any:
        if self._summary is not None and name in self._summary:
            return self._summary[name]
        return _SENTINEL

    @property
    def execution_id(self) -> str | None:
        """The log's lineage id: the init entry's ``metadata.executionId`` when a string (§1.5)."""
        cached = self._summary_value("execution_id")
        if cached is not _SENTINEL:
            return cached  # type: ignore[no-any-return]
        for entry in self.entries:
            if event_type(entry) == AGENT_INIT_EVENT_TYPE:
                value = execution_id(entry)
                return value if isinstance(value, str) else None
        return None

    @property
    def segments(self) -> tuple[Segment, ...]:
        """Version-bridge segments (spec §1.5): a new one at each ``@agent.init`` entry
        (:func:`~agentscope.log.entry.segments_of`, the split the fold uses).

        A valid Era-C log has one segment; a bridged continuation's segment has ``bridge=True``
        and ``migrated_from`` set. Era-A logs (no identity) have one segment with ``None``s.
        """
        cached = self._summary_value("segments")
        if cached is not _SENTINEL:
            return cached  # type: ignore[no-any-return]
        return tuple(segments_of(self.entries))

    @property
    def machine_id(self) -> str | None:
        """The ``machineId`` the log targets (its first segment's), or ``None`` (Era A, empty)."""
        cached = self._summary_value("machine_id")
        if cached is not _SENTINEL:
            return cached  # type: ignore[no-any-return]
        segs = self.segments
        if segs:
            return segs[0].machine_id
        if self.cached_snapshot is not None:
            meta = self.cached_snapshot.get("agentMeta")
            if isinstance(meta, dict) and isinstance(meta.get("machineId"), str):
                return meta["machineId"]  # type: ignore[no-any-return]
        return None

    @property
    def machine_versions(self) -> tuple[str, ...]:
        """The distinct machine versions of the segments, in log order."""
        cached = self._summary_value("machine_versions")
        if cached is not _SENTINEL:
            return cached  # type: ignore[no-any-return]
        out: list[str] = []
        for seg in self.segments:
            if isinstance(seg.machine_version, str) and seg.machine_version not in out:
                out.append(seg.machine_version)
        return tuple(out)

    # -- problems -------------------------------------------------------------------------------

    @property
    def problems(self) -> pd.DataFrame:
        """What ``errors="collect"`` set aside: one row per problem, in the shared problems table
        (:data:`~agentscope.log.problems.PROBLEM_COLUMNS`: ``index`` (the entry position),
        ``id``, ``field``, ``kind`` (a :class:`~agentscope.log.problems.ProblemKind` code),
        ``message``, ``expected``, ``actual``, ``source``, ``line`` (1-based, line-oriented
        sources)) — the same columns as :attr:`VerifyReport.problems`.

        Also lists, in every mode, each entry whose valid ``recordedAt`` (§1.4) lies outside
        the ``datetime64[ns]`` range (kind ``timestamp-out-of-range``, field ``recordedAt``):
        its :attr:`df` ``recorded_at`` is ``NaT``. Those rows are found on first access (this
        builds :attr:`df`)."""
        if self._problems is None:
            self._problems = self.read_problems
        if not self._timestamps_checked:
            self._timestamps_checked = True
            rows = self._timestamp_problems()
            if rows:
                import pandas as pd

                from agentscope.log.problems import problems_frame

                merged = pd.concat([self._problems, problems_frame(rows)], ignore_index=True)
                order = merged["index"].fillna(-1).astype("int64").argsort(kind="stable")
                self._problems = merged.iloc[order].reset_index(drop=True)
        return self._problems

    def _timestamp_problems(self) -> list[dict[str, Any]]:
        """Rows for valid ``recordedAt`` stamps outside ``datetime64[ns]`` (``NaT`` in :attr:`df`)."""
        if len(self) == 0:
            return []
        nat = self.df["recorded_at"].isna().to_numpy()
        if not nat.any():
            return []
        from agentscope.log.problems import ProblemKind

        rows: list[dict[str, Any]] = []
        for i in nat.nonzero()[0]:
            entry = self.entries[int(i)]
            value = entry.get("recordedAt") if isinstance(entry, dict) else None
            if recorded_at_to_ns(value) is None:
                continue  # missing or invalid: validation reports it (or Era A has none)
            rows.append(
                {
                    "source": self.source,
                    "index": int(self.positions[int(i)]),
                    "id": entry.get("id"),
                    "field": "recordedAt",
                    "kind": ProblemKind.TIMESTAMP_OUT_OF_RANGE.value,
                    "message": (
                        f"recordedAt {value!r} is a valid RFC 3339 time (§1.4) outside the "
                        "datetime64[ns] range (1677-09-21 to 2262-04-11): df.recorded_at is NaT"
                    ),
                    "actual": value,
                }
            )
        return rows

    # -- DataFrame views ------------------------------------------------------------------------

    @property
    def df(self) -> pd.DataFrame:
        """One row per entry, built on first access and cached.

        Columns: ``index`` (int64), ``id`` (str), ``recorded_at`` (``datetime64[ns, UTC]``, the
        V8 reading of §1.4 kept to the nanosecond; ``NaT`` outside 1677-09-21..2262-04-11, each
        such entry listed in :attr:`problems`), ``machine_id``/``machine_version``/``event_type`` (category),
        ``causation_id`` and ``state_hash`` (str, missing as NA), ``event`` (the payload
        mapping), ``metadata`` (mapping or None).
        """
        if self._df is None:
            if self._frame_builder is not None and self._entries is None:
                self._df = self._frame_builder()
            else:
                self._df = build_entries_frame(self.entries)
        return self._df

    def frame(self, flatten: bool = False) -> pd.DataFrame:
        """:attr:`df`, optionally with one ``event.<field>`` column per payload field.

        With ``flatten=True`` nested payload objects become dotted columns
        (``event.output.count``); the ``type`` field is already ``event_type`` and is not
        repeated. Fields absent from an entry are NaN.
        """
        import pandas as pd

        base = self.df
        if not flatten:
            return base.copy()
        payloads = [
            {k: v for k, v in event_of(e).items() if k != "type"} for e in self.entries
        ]
        flat = pd.json_normalize(payloads, sep=".") if payloads else pd.DataFrame(index=range(0))
        flat.columns = [f"event.{c}" for c in flat.columns]
        flat.index = base.index
        return pd.concat([base, flat], axis=1)

    # -- display --------------------------------------------------------------------------------

    def _headline(self) -> str:
        parts = [f"{len(self)} entries"]
        if self.thread is not None:
            parts.append(f"thread {self.thread!r}")
        if self.machine_id is not None:
            versions = ",".join(self.machine_versions) or "?"
            parts.append(f"machine {self.machine_id!r}@{versions}")
        parts.append(f"era {self.era}")
        if self.cached_snapshot is not None:
            parts.append("cached snapshot")
        shown = self._problems if self._problems is not None else self._read
        if shown is not None and len(shown):
            parts.append(f"{len(shown)} problems")
        return ", ".join(parts)

    def __repr__(self) -> str:
        src = f" from {self.source!r}" if self.source else ""
        return f"<EventLog{src}: {self._headline()}>"

    def _repr_html_(self) -> str:
        """HTML for Jupyter: a summary line and the first rows, drawn (escaped and bounded) by
        :func:`agentscope.render.reprs.repr_html`."""
        from agentscope.render.reprs import Bold, Code, Para, Table, guarded

        def build() -> list[Any]:
            df = self.df
            cols = [c for c in ("index", "id", "recorded_at", "event_type", "state_hash") if c in df.columns]
            src = (" from ", Code(self.source)) if self.source else ()
            return [
                Para(Bold("EventLog"), *src, ": ", self._headline()),
                Table.of(df[cols], limit=10, noun="entries"),
            ]

        return guarded(self, "eventlog", build)


_SENTINEL: Any = object()


def _index_cell(value: Any) -> int:
    """``entry.index`` for the int64 ``df["index"]`` column; ``-1`` when it is not an integer
    that fits (validation reports such an index)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return -1
    if isinstance(value, float) and not (math.isfinite(value) and value.is_integer()):
        return -1
    return int(value) if -(2**63) <= value < 2**63 else -1


def text_series(values: Sequence[str | None]) -> pd.Series:
    """A pandas ``string`` Series of ``values`` (``None`` as ``<NA>``), lossless for any JS string.

    pandas' default string storage is Arrow, which holds only valid UTF-8; a JS string may hold
    a lone surrogate (``"\\ud800"`` is valid JSON). Such a column is stored with the
    ``"python"`` string storage instead, which keeps it as is; otherwise the default is used.
    """
    import pandas as pd

    try:
        return pd.Series(values, dtype="string")
    except UnicodeEncodeError:
        return pd.Series(values, dtype=pd.StringDtype("python"))


def build_entries_frame(
    entries: Sequence[Any] | None = None, *, columns: Mapping[str, Any] | None = None
) -> pd.DataFrame:
    """The one builder of the entries frame (:attr:`EventLog.df`'s layout, :data:`DF_COLUMNS`).

    From ``entries`` (entry dicts; anything else is a row of missing values), or from
    ``columns``, what a columnar reader already holds (:mod:`agentscope.log.fast`): each value a
    ``pandas.Series`` already in the layout's dtype (used as is) or a list of raw cells
    (converted as an entry's field is). Columns: ``index`` (int64; ``-1`` where the entry's
    index is not an integer that fits), ``id``/``causation_id``/``state_hash`` (pandas
    ``string``, a lone surrogate kept), ``recorded_at`` (``datetime64[ns, UTC]``, V8's reading,
    §1.4), ``machine_id``/``machine_version``/``event_type`` (category), ``event``/``metadata``
    (object: the mappings). Rows in the given order, a ``RangeIndex``.

    Raises
    ------
    TypeError
        Neither or both of ``entries`` and ``columns`` given, or a column missing.
    """
    import pandas as pd

    if (entries is None) == (columns is None):
        raise TypeError("build_entries_frame takes entries or columns=, not both")
    if columns is None:
        assert entries is not None
        columns = _raw_columns(entries)
    missing = [c for c in DF_COLUMNS if c not in columns]
    if missing:
        raise TypeError(f"build_entries_frame: columns missing {missing}")

    def typed(name: str, values: Any) -> pd.Series:
        if isinstance(values, pd.Series):
            return values.reset_index(drop=True)  # a columnar reader's, in the layout's dtype
        if name == "index":
            return pd.Series([_index_cell(v) for v in values], dtype="int64")
        if name == "recorded_at":
            return recorded_at_series(values)[0]
        if name in ("event", "metadata"):
            return pd.Series(values, dtype="object")
        text = text_series([v if isinstance(v, str) else None for v in values])
        return text.astype("category") if name in _CATEGORY_COLUMNS else text

    return pd.DataFrame({name: typed(name, columns[name]) for name in DF_COLUMNS},
                        columns=list(DF_COLUMNS), copy=False)


_CATEGORY_COLUMNS = ("machine_id", "machine_version", "event_type")


def _raw_columns(entries: Sequence[Any]) -> dict[str, list[Any]]:
    """The raw cells of each :data:`DF_COLUMNS` column, read through the entry vocabulary."""
    dicts = [e if isinstance(e, Mapping) else {} for e in entries]

    def get(name: str) -> list[Any]:
        return [e.get(name) for e in dicts]

    return {
        "index": get("index"),
        "id": get("id"),
        "recorded_at": get("recordedAt"),
        "machine_id": get("machineId"),
        "machine_version": get("machineVersion"),
        "event_type": [t or None for t in event_types(dicts)],
        "causation_id": get("causationId"),
        "state_hash": recorded_hashes(dicts),
        "event": get("event"),
        "metadata": get("metadata"),
    }


ErrorsMode = Literal["raise", "collect"]

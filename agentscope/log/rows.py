"""Rows of a row-based store (§5.2: one JSON entry per ``(thread_id, idx)`` row) to an
:class:`~agentscope.log.model.EventLog`: the one row check every store uses (SQLite here,
PostgreSQL and any later row store through :mod:`agentscope.stores`)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from agentscope.errors import DamagedStoreError, LogFormatError

if TYPE_CHECKING:
    import pandas as pd

    from agentscope.log.model import ErrorsMode, EventLog
    from agentscope.log.validate import Era

__all__ = ["THREAD_COLUMNS", "Record", "log_from_records", "thread_row", "threads_frame"]


@dataclass(frozen=True, slots=True)
class Record:
    """One stored entry as the store holds it: ``idx`` (§5.2 ``idx``, the entry's position),
    ``text`` its JSON text as stored (``bytes`` when the stored text is not UTF-8: a damaged
    row), ``entry_id`` the §5.2 ``entry_id`` column where the store has one (checked against the
    entry's ``id``), else ``None``."""

    idx: int
    text: str | bytes
    entry_id: str | None = None



def log_from_records(
    records: Iterable[Record],
    *,
    source: str,
    thread: str,
    errors: ErrorsMode,
    era: Era | None,
    damage: DamagedStoreError | None = None,
    cached_snapshot: dict[str, Any] | None = None,
    where: str | None = None,
) -> EventLog:
    """Validate a thread's records (§1.2, §1.3, §5.2) into an :class:`EventLog`: the one row
    check of every row-based store. A row whose text is not UTF-8 or not JSON, or whose ``idx``
    / ``entry_id`` disagree with the entry's ``index`` / ``id``, is a
    :class:`~agentscope.errors.LogFormatError` naming ``source``, the thread and the ``idx``
    (raised, or a problem row with ``errors="collect"``); ``damage`` (rows after it unreadable)
    is raised, or listed with a :class:`~agentscope.errors.LogReadWarning`. ``where`` formats
    a row's place (``{idx}`` is replaced); default ``"<source> [thread '<t>' idx <idx>]"``.
    """
    from agentscope.log.build import build_log
    from agentscope.log.validate import loads

    if damage is not None and errors == "raise":
        raise damage
    items: list[Any] = []
    early: list[LogFormatError] = [] if damage is None else [damage]
    positions: list[int] = []
    for position, rec in enumerate(records):
        place = (where or f"{source} [thread {thread!r} idx {{idx}}]").replace("{idx}", str(rec.idx))
        err: LogFormatError | None = None
        value: Any = None
        if isinstance(rec.text, bytes):
            err = LogFormatError(
                "row's entry text is not UTF-8 (a damaged store?)", source=place, index=position
            )
        else:
            try:
                value = loads(rec.text)
            except (ValueError, TypeError) as exc:
                err = LogFormatError(f"row holds invalid JSON: {exc}", source=place, index=position)
        if err is None and isinstance(value, dict):
            bad_index = value.get("index") != rec.idx
            if bad_index or (rec.entry_id is not None and value.get("id") != rec.entry_id):
                err = LogFormatError(
                    f"row columns (idx={rec.idx}, entry_id={rec.entry_id!r}) disagree with the "
                    f"entry JSON (index={value.get('index')!r}, id={value.get('id')!r})",
                    source=place,
                    index=position,
                    field="index" if bad_index else "id",
                )
        if err is not None:
            if errors == "raise":
                raise err
            early.append(err)
            continue
        items.append(value)
        positions.append(position)
    log = build_log(items, source=source, errors=errors, era=era, positions=positions,
                    thread=thread, early_problems=early, cached_snapshot=cached_snapshot)
    if damage is not None:
        import warnings

        from agentscope.errors import LogReadWarning

        warnings.warn(f"{source}: {damage.detail}", LogReadWarning, stacklevel=5)
    return log


THREAD_COLUMNS = ("thread_id", "length", "first_recorded_at", "last_recorded_at", "machine_id",
                  "machine_version", "machine_versions", "execution_id", "readable", "error")
"""The columns of ``read_threads`` (:func:`threads_frame`), in order."""


def thread_row(thread: str, length: int, texts: Iterable[object], *,
               error: str | None = None) -> dict[str, Any]:
    """One row of ``read_threads`` from a thread's stored entry texts (each parsed once; a text
    that is not a JSON object is skipped): ``length`` as the store counts it, ``readable`` the
    texts given, the ``recordedAt`` of the first and last readable entries (epoch ns, ``None``
    when invalid), the last entry's machine, the distinct ``machineVersion`` values in order
    and the init entry's ``executionId`` (§1.5)."""
    from agentscope.log.entry import execution_id, recorded_at_ns
    from agentscope.log.validate import loads

    versions: list[str] = []
    first: dict[str, Any] = {}
    last: dict[str, Any] = {}
    readable = 0
    for i, text in enumerate(texts):
        readable += 1
        try:
            entry = loads(text) if isinstance(text, str) else None
        except ValueError:
            continue
        if not isinstance(entry, dict):
            continue
        if i == 0:
            first = entry
        last = entry
        v = entry.get("machineVersion")
        if isinstance(v, str) and v not in versions:
            versions.append(v)
    init_execution = execution_id(first)
    return {
        "thread_id": thread,
        "length": length,
        "first_recorded_at": recorded_at_ns(first),
        "last_recorded_at": recorded_at_ns(last),
        "machine_id": last.get("machineId"),
        "machine_version": last.get("machineVersion"),
        "machine_versions": tuple(versions),
        "execution_id": init_execution if isinstance(init_execution, str) else None,
        "readable": readable,
        "error": error,
    }


def threads_frame(rows: list[dict[str, Any]]) -> pd.DataFrame:
    """``read_threads``' DataFrame from :func:`thread_row` rows (:data:`THREAD_COLUMNS`; the
    ``recordedAt`` columns ``datetime64[ns, UTC]``, ``NaT`` outside the ns range; ids as text
    with lone surrogates kept; ``error`` ``None``, never ``NaN``)."""
    import pandas as pd

    from agentscope.log.model import NS_MAX, NS_MIN, text_series

    def stamp(ns: int | None) -> pd.Timestamp | None:
        if ns is None or not NS_MIN <= ns <= NS_MAX:
            return None
        return pd.Timestamp(ns, unit="ns", tz="UTC")

    rows = [dict(r, first_recorded_at=stamp(r["first_recorded_at"]),
                 last_recorded_at=stamp(r["last_recorded_at"])) for r in rows]
    frame = pd.DataFrame(rows, columns=list(THREAD_COLUMNS))
    frame["error"] = pd.Series([r["error"] for r in rows], dtype=object)  # None, not NaN
    for name in ("thread_id", "machine_id", "machine_version", "execution_id"):
        values = [r[name] if isinstance(r[name], str) else None for r in rows]
        frame[name] = text_series(values)  # lone surrogates kept (a JS string may hold one)
    return frame.astype({
        "length": "int64",
        "first_recorded_at": "datetime64[ns, UTC]",
        "last_recorded_at": "datetime64[ns, UTC]",
        "readable": "int64",
    })

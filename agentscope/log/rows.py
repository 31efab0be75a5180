"""Rows of a row-based store (§5.2: one JSON entry per ``(thread_id, idx)`` row) to an
:class:`~agentscope.log.model.EventLog`: the one row check every store uses (SQLite here,
PostgreSQL and any later row store through :mod:`agentscope.stores`)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from agentscope.errors import DamagedStoreError, LogFormatError

if TYPE_CHECKING:
    from agentscope.log.model import ErrorsMode, EventLog
    from agentscope.log.validate import Era

__all__ = ["Record", "log_from_records"]


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
    log = build_log(
        items,
        source=source,
        errors=errors,
        era=era,
        positions=positions,
        thread=thread,
        early_problems=early,
        cached_snapshot=cached_snapshot,
    )
    if damage is not None:
        import warnings

        from agentscope.errors import LogReadWarning

        warnings.warn(f"{source}: {damage.detail}", LogReadWarning, stacklevel=5)
    return log

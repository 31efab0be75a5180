"""Other people's logs: a DataFrame, CSV or Parquet turned into entries of the same model.

The result is an Era-C shaped log (spec §1.1); without a ``state_hash`` column verification reports every
entry as "missing". See :func:`entries_from_frame` for the column mapping.
"""

from __future__ import annotations

import contextlib
import json
import math
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from agentscope._deep import call_deep
from agentscope.errors import LogFormatError
from agentscope.log.model import ErrorsMode, EventLog
from agentscope.log.validate import (
    AGENT_INIT_EVENT_TYPE,
    ANONYMOUS_MACHINE,
    TOO_DEEP,
    UNVERSIONED,
    is_recorded_at,
)

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["MAPPING_KEYS", "entries_from_frame", "read_frame", "read_table"]

MAPPING_KEYS = (
    "type",
    "payload",
    "event",
    "timestamp",
    "id",
    "machine_id",
    "machine_version",
    "causation_id",
    "metadata",
    "state_hash",
)
"""Keys :func:`entries_from_frame` accepts in ``columns``."""

_TEXT_KEYS = ("type", "id", "machine_id", "machine_version", "causation_id", "state_hash")
"""Keys whose CSV columns are read as text (``"00123"`` stays ``"00123"``, not the number 123)."""



def _missing(value: Any) -> bool:
    if value is None:
        return True
    if isinstance(value, float) and math.isnan(value):
        return True
    try:
        import pandas as pd

        return bool(pd.isna(value)) if not isinstance(value, list | dict | tuple) else False
    except (TypeError, ValueError):
        return False


def _plain(value: Any) -> Any:
    """A pandas/numpy cell as a plain JSON value (numpy scalars to Python, NaN to None)."""
    if _missing(value):
        return None
    if hasattr(value, "item") and not isinstance(value, list | dict | str):
        with contextlib.suppress(ValueError, AttributeError):
            value = value.item()
    if isinstance(value, datetime):
        return _iso(value)
    if hasattr(value, "tolist") and not isinstance(value, str):
        value = value.tolist()
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value


def _iso(value: datetime) -> str:
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    value = value.astimezone(UTC)
    return value.strftime("%Y-%m-%dT%H:%M:%S.") + f"{value.microsecond // 1000:03d}Z"


def _timestamp(value: Any) -> str | None:
    if _missing(value):
        return None
    if isinstance(value, str):
        if is_recorded_at(value):
            return value
        import pandas as pd

        try:
            return _iso(pd.Timestamp(value).to_pydatetime())
        except (ValueError, TypeError, OverflowError):  # unparsable, or outside year 1..9999
            return None
    if isinstance(value, datetime):
        return _iso(value)
    if isinstance(value, int | float):  # epoch milliseconds, like Date.now()
        try:
            return _iso(datetime.fromtimestamp(value / 1000, tz=UTC))
        except (ValueError, OverflowError, OSError):
            return None
    return None


def _object(value: Any, what: str) -> dict[str, Any]:
    if _missing(value):
        return {}
    try:
        if isinstance(value, str):
            try:
                value = call_deep(json.loads, value)  # deep values: agentscope._deep
            except ValueError:
                raise ValueError(f"{what} is not JSON text: {value[:60]!r}") from None
        value = call_deep(_plain, value)
    except RecursionError:
        raise ValueError(f"{what}: {TOO_DEEP}") from None
    if not isinstance(value, dict):
        raise ValueError(f"{what} must be an object, got {type(value).__name__}")
    return value


def entries_from_frame(
    frame: pd.DataFrame,
    columns: Mapping[str, Any] | None = None,
    *,
    source: str = "<DataFrame>",
) -> tuple[list[dict[str, Any]], list[LogFormatError]]:
    """Turn rows into log entries (spec §1.1 envelope; ``verification`` from ``state_hash``).

    ``columns`` maps an entry field to the name of the column holding it:

    ``type`` (required unless ``event`` is given)
        The event type.
    ``payload``
        A column of objects (dicts or JSON text) whose fields join the event after ``type``;
        or a list of column names, each becoming one event field (missing cells left out).
    ``event``
        A column holding the whole event object (dict or JSON text) including ``type``.
    ``timestamp``
        ``recordedAt``: RFC 3339 text kept as is, other text parsed by pandas, datetimes, or
        epoch milliseconds; written as ``YYYY-MM-DDTHH:MM:SS.sssZ`` (naive times are UTC).
    ``state_hash``
        ``verification.stateHash`` (an empty cell: no ``verification``), so a table written by
        ``agentscope export`` verifies like the log it came from.
    ``id``, ``machine_id``, ``machine_version``, ``causation_id``, ``metadata``
        The envelope fields. Defaults: ids ``evt_<8-digit index>``, ``machineId``
        ``"(machine)"``, ``machineVersion`` ``"(unversioned)"``.

    Without ``columns`` every key whose name is a column is used. Row ``r`` becomes entry
    ``r + 1``: entry 0 is a synthesised ``{"type": "@agent.init"}`` (spec §1.5) unless the first
    row already is one. A row without a type, or with a bad payload, is returned as a problem
    (``index`` = the entry position it would have had) and left out.
    """
    if columns is None:
        columns = {k: k for k in MAPPING_KEYS if k in frame.columns}
    unknown = set(columns) - set(MAPPING_KEYS)
    if unknown:
        raise ValueError(f"unknown column-mapping keys {sorted(unknown)}; allowed: {MAPPING_KEYS}")
    wanted: list[str] = []
    for key, col in columns.items():
        names = col if key == "payload" and isinstance(col, list | tuple) else [col]
        for name in names:
            if name not in frame.columns:
                raise LogFormatError(
                    f"column {name!r} (mapped from {key!r}) is not in the data; columns are "
                    f"{list(frame.columns)}",
                    source=source,
                )
            wanted.append(name)
    if "type" not in columns and "event" not in columns:
        raise LogFormatError(
            "tabular logs need columns={'type': <column>, ...} (or 'event'); the data has "
            f"columns {list(frame.columns)}",
            source=source,
        )
    records: Sequence[dict[str, Any]] = frame.to_dict("records")  # type: ignore[assignment]
    entries: list[dict[str, Any]] = []
    problems: list[LogFormatError] = []
    offset = 1
    for r, row in enumerate(records):
        position = r + offset
        try:
            if "event" in columns:
                event = _object(row[columns["event"]], f"column {columns['event']!r}")
                if "type" in columns and not _missing(row[columns["type"]]):
                    rest = {k: v for k, v in event.items() if k != "type"}
                    event = {"type": _plain(row[columns["type"]]), **rest}
            else:
                event = {"type": _plain(row[columns["type"]])}
            payload_col = columns.get("payload")
            if isinstance(payload_col, list | tuple):
                for name in payload_col:
                    if not _missing(row[name]):
                        event[str(name)] = _plain(row[name])
            elif payload_col is not None:
                payload = _object(row[payload_col], f"column {payload_col!r}")
                event.update({k: v for k, v in payload.items() if k != "type"})
            if not isinstance(event.get("type"), str) or not event["type"]:
                raise ValueError("the event type is missing or not a string")
        except ValueError as exc:
            problems.append(
                LogFormatError(str(exc), source=source, index=position, line=r + 1, field="event")
            )
            continue
        if r == 0 and event["type"] == AGENT_INIT_EVENT_TYPE:
            offset = 0
            position = 0
        elif r == 0:
            entries.append(
                _entry(0, {"type": AGENT_INIT_EVENT_TYPE}, row, columns, init=True)
            )
        entries.append(_entry(position, event, row, columns))
    for i, e in enumerate(entries):  # positions shift when earlier rows were dropped
        e["index"] = i
        if "id" not in columns:
            e["id"] = f"evt_{i:08d}"
    return entries, problems


def _entry(
    index: int,
    event: dict[str, Any],
    row: Mapping[str, Any],
    columns: Mapping[str, Any],
    *,
    init: bool = False,
) -> dict[str, Any]:
    def cell(key: str) -> Any:
        return _plain(row[columns[key]]) if key in columns else None

    entry: dict[str, Any] = {
        "schemaVersion": 1,
        "id": f"evt_{index:08d}" if init or "id" not in columns else str(cell("id")),
        "index": index,
        "recordedAt": (_timestamp(row[columns["timestamp"]]) if "timestamp" in columns else None)
        or "1970-01-01T00:00:00.000Z",
        "machineId": str(cell("machine_id") or ANONYMOUS_MACHINE),
        "machineVersion": str(cell("machine_version") or UNVERSIONED),
        "event": event,
    }
    if init:
        return entry
    causation = cell("causation_id")
    if causation is not None:
        entry["causationId"] = str(causation)
    if "metadata" in columns and not _missing(row[columns["metadata"]]):
        entry["metadata"] = _object(row[columns["metadata"]], f"column {columns['metadata']!r}")
    state_hash = cell("state_hash")
    if state_hash is not None:
        entry["verification"] = {"stateHash": str(state_hash)}
    return entry


def read_frame(
    frame: Any,
    *,
    columns: Mapping[str, Any] | None,
    source: str,
    errors: ErrorsMode,
) -> EventLog:
    """Read a pandas DataFrame with a column mapping (see :func:`entries_from_frame`).

    Raises
    ------
    LogFormatError
        A mapped column is missing, or (``errors="raise"``) a row cannot become an entry.
    EntryValidationError
        A produced entry breaks §1.2/§1.3 (e.g. duplicate ids from the ``id`` column).
    """
    from agentscope.log.build import build_log

    entries, problems = entries_from_frame(frame, columns, source=source)
    return build_log(entries, source=source, errors=errors, era="C", early_problems=problems)


def read_table(
    source: str | Path | IO[bytes],
    fmt: str,
    *,
    columns: Mapping[str, Any] | None,
    source_name: str | None = None,
    errors: ErrorsMode,
) -> EventLog:
    """Read CSV (``fmt="csv"``, tab-separated for ``.tsv``) or Parquet, then map columns."""
    import pandas as pd

    name = source_name or (str(source) if isinstance(source, str | Path) else "<stream>")
    try:
        if fmt == "parquet":
            frame = pd.read_parquet(source)
        else:
            sep = "\t" if isinstance(source, str | Path) and str(source).endswith(".tsv") else ","
            mapping = columns if columns is not None else {k: k for k in MAPPING_KEYS}
            text = {mapping[k]: str for k in _TEXT_KEYS if isinstance(mapping.get(k), str)}
            # only an empty field is missing: "NaN", "null", "N/A" in a text column are text
            frame = pd.read_csv(source, sep=sep, dtype=text, keep_default_na=False, na_values=[""])
    except (ValueError, OSError) as exc:
        raise LogFormatError(f"cannot read as {fmt}: {exc}", source=name) from None
    return read_frame(frame, columns=columns, source=name, errors=errors)

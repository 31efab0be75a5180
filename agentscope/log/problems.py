"""The one problem vocabulary: kinds and the fixed-column problems table.

Every stage that finds something wrong with a log (reading, validation, verification, the
snapshot cache) reports it as a row of one table with the columns :data:`PROBLEM_COLUMNS`, and
``kind`` is always a :class:`ProblemKind` code. :attr:`EventLog.problems` and
:class:`~agentscope.VerifyReport` share it, so a notebook user filters one DataFrame the same way
whichever stage found the problem.

Pure data: this module imports nothing heavy at import time (pandas loads in
:func:`problems_frame`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from enum import StrEnum
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

__all__ = ["PROBLEM_COLUMNS", "ProblemKind", "problems_frame"]


class ProblemKind(StrEnum):
    """Stable codes for what can be wrong with a log or its replay (kebab-case, never renamed).

    Keep the members sorted, one per line: several people add kinds.
    """

    BRIDGE_LINK = "bridge-link"
    CACHE_BAD_INDEX = "cache-bad-index"
    CACHE_DIVERGED = "cache-diverged"
    CACHE_LINEAGE = "cache-lineage"
    CACHE_MACHINE = "cache-machine"
    CACHE_STALE = "cache-stale"
    CACHE_UNCHECKED = "cache-unchecked"
    CACHE_UNSTAMPED = "cache-unstamped"
    DAMAGED_STORE = "damaged-store"
    DUPLICATE_ID = "duplicate-id"
    EMPTY_LOG = "empty-log"
    ENGINE_ERROR = "engine-error"
    ERA_B = "era-b"
    EXPLAINED_MISMATCH = "explained-mismatch"
    INCOMPLETE_RECORD = "incomplete-record"
    INVALID_ENTRY = "invalid-entry"
    MACHINE_MISMATCH = "machine-mismatch"
    MISSING_VERIFICATION = "missing-verification"
    NO_INIT = "no-init"
    NO_MACHINE = "no-machine"
    NON_CONTIGUOUS = "non-contiguous"
    NON_SERIALIZABLE = "non-serializable-event"
    STATE_MISMATCH = "state-mismatch"
    TIMESTAMP_OUT_OF_RANGE = "timestamp-out-of-range"


PROBLEM_COLUMNS: tuple[str, ...] = (
    "index",
    "id",
    "field",
    "kind",
    "message",
    "expected",
    "actual",
    "source",
    "line",
)
"""Columns of every problems table, in this order.

``index`` (nullable int: entry index, ``<NA>`` for log-level problems), ``id`` (entry id or
``None``), ``field`` (dotted path into the entry, e.g. ``verification.stateHash``, or ``None``),
``kind`` (a :class:`ProblemKind` value, as a string), ``message`` (one human sentence),
``expected`` / ``actual`` (strings or ``None``, e.g. the recorded and recomputed hash),
``source`` (the file, store#thread or ``"<memory>"``), ``line`` (nullable int: the 1-based line
of a line-oriented source, e.g. JSONL, where the problem was read; ``<NA>`` otherwise).
"""


def problems_frame(rows: Iterable[Mapping[str, Any]]) -> pd.DataFrame:
    """Return the problems table for ``rows`` (mappings keyed by :data:`PROBLEM_COLUMNS`).

    Missing keys become ``None``; ``kind`` is stored as its string code; ``index`` and ``line``
    are nullable ``Int64`` columns; every other column is ``object`` (a message may quote a lone
    surrogate, which Arrow-backed strings refuse). An empty ``rows`` gives an empty table with
    the same columns and dtypes.
    """
    import pandas as pd

    rows = list(rows)
    data: dict[str, Any] = {}
    for col in PROBLEM_COLUMNS:
        values = [r.get(col) for r in rows]
        if col in ("index", "line"):
            data[col] = pd.array(values, dtype="Int64")
        elif col == "kind":
            data[col] = pd.Series([None if v is None else str(v) for v in values], dtype=object)
        else:
            data[col] = pd.Series(values, dtype=object)
    return pd.DataFrame(data, columns=list(PROBLEM_COLUMNS))

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

__all__ = ["FAILS_THE_LOG", "PROBLEM_COLUMNS", "ProblemKind", "problems_frame"]


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


FAILS_THE_LOG: frozenset[ProblemKind] = frozenset({
    ProblemKind.CACHE_BAD_INDEX,
    ProblemKind.CACHE_DIVERGED,
    ProblemKind.CACHE_LINEAGE,
    ProblemKind.CACHE_MACHINE,
    ProblemKind.EMPTY_LOG,
    ProblemKind.NO_MACHINE,
})
"""The log-level kinds (a problems row with ``index`` ``<NA>``) that make a verify fail: an empty
log, a segment the given ``machines`` have no machine for, a cached snapshot (§4.2) that does not
belong to the log or disagrees with it. The other log-level kinds are notes (``bridge-link``,
``cache-stale``, ``cache-unstamped``, ``cache-unchecked``)."""

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
    global _EMPTY
    rows = list(rows)
    n = len(rows)
    if n == 0:  # the usual case (a log without problems): a copy of the one empty table
        if _EMPTY is None:
            _EMPTY = _frame([], 0)
        return _EMPTY.copy()
    return _frame(rows, n)


_EMPTY: pd.DataFrame | None = None


def _frame(rows: list[Mapping[str, Any]], n: int) -> pd.DataFrame:
    import numpy as np
    import pandas as pd

    # the object columns as one block (one frame, no per-column Series), then the two integers
    texts = [c for c in PROBLEM_COLUMNS if c not in _INT_COLUMNS]
    block = np.empty((n, len(texts)), dtype=object)
    for j, col in enumerate(texts):
        values = [r.get(col) for r in rows]
        if col == "kind":
            values = [None if v is None else str(v) for v in values]
        block[:, j] = np.fromiter(values, dtype=object, count=n)
    df = pd.DataFrame(block, columns=texts, dtype=object, copy=False)
    ints: Any = pd.array([r.get("index") for r in rows], dtype="Int64")
    df.insert(0, "index", ints)  # the first column
    df["line"] = pd.array([r.get("line") for r in rows], dtype="Int64")  # the last column
    return df


_INT_COLUMNS = ("index", "line")
assert PROBLEM_COLUMNS[0] == "index" and PROBLEM_COLUMNS[-1] == "line"

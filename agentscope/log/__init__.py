"""Reading event logs: any source to an :class:`EventLog` (spec §1, §5.2).

- :func:`read_log` reads JSON (an entry array, a run result with ``events``, a persisted
  snapshot with ``agentMeta``), JSONL/NDJSON, a SQLite store (§5.2, read-only), a DataFrame,
  CSV or Parquet with a column mapping, file objects and lists of dicts.
- :func:`read_threads` lists the threads of a SQLite store.
- :mod:`agentscope.log.validate` holds the §1.2/§1.3 checks.
"""

from __future__ import annotations

from agentscope.log.model import EventLog, Segment
from agentscope.log.readers import FORMATS, read_log
from agentscope.log.sqlite import read_threads

__all__ = ["FORMATS", "EventLog", "Segment", "read_log", "read_threads"]

"""Split a log at its ``@agent.init`` entries: the segments the fold replays one by one (spec §1.5).

A log is normally one segment. A version-bridged lineage (v1 entries, then a bridge init carrying
``snapshot`` and ``metadata.migratedFrom``, then v2 entries) is several; each replays with the
machine for its own ``machineVersion``.
"""

from __future__ import annotations

import os
from typing import Any

from agentscope.log.entry import Segment, segments_of  # the one split, in log/

__all__ = ["Segment", "as_log", "segments_of"]


def as_log(log: Any) -> Any:
    """Read ``log`` with :func:`agentscope.read_log` when it is a path; return anything else as is."""
    if isinstance(log, (str, os.PathLike)):
        from agentscope.stores import read_log

        return read_log(log)
    return log

"""Replay an event log as a pure fold, verify it, and seek anywhere in it (spec §4).

The package reads top to bottom as the pipeline (each module imports only the ones above it):

- :mod:`~agentscope.replay.segments` — split a log at its ``@agent.init`` entries (§1.5);
- :mod:`~agentscope.replay.fold` — **the** fold: the only loop that applies entries to a machine
  (batched, with actor-session rebinding, §4.1); :func:`replay` is the reference fold raising at
  the first divergence;
- :mod:`~agentscope.replay.explain` — the known benign causes of a hash mismatch;
- :mod:`~agentscope.replay.verdicts` — the one pass: recorded vs recomputed hash, verdict,
  ``ignored``, problems, and the byte-budgeted snapshot store, per entry;
- :mod:`~agentscope.replay.report` — :class:`VerifyReport` and :func:`verify`;
- :mod:`~agentscope.replay.timeline` — :class:`Timeline`: random access over the one pass.

Importing the package is cheap: the names load on first use (pandas only with the report or the
timeline). ``agentscope.replay`` as an attribute of :mod:`agentscope` is the function
:func:`replay`; ``from agentscope.replay import Timeline`` works as usual.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__all__ = ["ReplayResult", "Timeline", "VerifyReport", "apply_entry", "replay", "verify"]

_HOME = {
    "ReplayResult": "agentscope.replay.fold",
    "apply_entry": "agentscope.replay.fold",
    "replay": "agentscope.replay.fold",
    "VerifyReport": "agentscope.replay.report",
    "verify": "agentscope.replay.report",
    "Timeline": "agentscope.replay.timeline",
}

if TYPE_CHECKING:  # pragma: no cover
    from agentscope.replay.fold import ReplayResult as ReplayResult
    from agentscope.replay.fold import apply_entry as apply_entry
    from agentscope.replay.fold import replay as replay
    from agentscope.replay.report import VerifyReport as VerifyReport
    from agentscope.replay.report import verify as verify
    from agentscope.replay.timeline import Timeline as Timeline


def __getattr__(name: str) -> Any:
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module 'agentscope.replay' has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(__all__) | {"segments", "fold", "explain", "verdicts", "report", "timeline"})

"""Replay an event log as a pure fold, verify it, and seek anywhere in it (spec §4).

The package reads top to bottom as the pipeline (each module imports only the ones above it):

- :mod:`~agentscope.pipeline.segments` — split a log at its ``@agent.init`` entries (§1.5);
- :mod:`~agentscope.pipeline.fold` — **the** fold: the only loop that applies entries to a machine
  (batched, with actor-session rebinding, §4.1); :func:`replay` is the reference fold raising at
  the first divergence;
- :mod:`~agentscope.pipeline.explain` — the known benign causes of a hash mismatch;
- :mod:`~agentscope.pipeline.onepass` — the one pass: recorded vs recomputed hash, verdict,
  ``ignored``, problems, and the byte-budgeted snapshot store, per entry;
- :mod:`~agentscope.pipeline.report` — :class:`VerifyReport` and :func:`verify`;
- :mod:`~agentscope.pipeline.timeline` — :class:`Timeline`: random access over the one pass;
  :meth:`Timeline.steps` yields :class:`Step` values (:mod:`agentscope.step`, below the
  questions of :mod:`agentscope.queries`, which read steps, not the timeline).

Importing the package is cheap: the names load on first use (pandas only with the report or the
timeline). The package is named for what it holds, not for one of its functions: ``replay`` is
:func:`agentscope.pipeline.fold.replay`, also reachable as ``agentscope.replay`` (the flat API),
while ``import agentscope.pipeline.fold`` imports the module.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__all__ = ["ReplayResult", "Step", "Timeline", "VerifyReport", "apply_entry", "replay", "verify"]

_HOME = {
    "ReplayResult": "agentscope.pipeline.fold",
    "apply_entry": "agentscope.pipeline.fold",
    "replay": "agentscope.pipeline.fold",
    "VerifyReport": "agentscope.pipeline.report",
    "verify": "agentscope.pipeline.report",
    "Timeline": "agentscope.pipeline.timeline",
    "Step": "agentscope.step",
}

if TYPE_CHECKING:  # pragma: no cover
    from agentscope.pipeline.fold import ReplayResult as ReplayResult
    from agentscope.pipeline.fold import apply_entry as apply_entry
    from agentscope.pipeline.fold import replay as replay
    from agentscope.pipeline.report import VerifyReport as VerifyReport
    from agentscope.pipeline.report import verify as verify
    from agentscope.pipeline.timeline import Timeline as Timeline
    from agentscope.step import Step as Step


def __getattr__(name: str) -> Any:
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module 'agentscope.pipeline' has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(__all__) | {"segments", "fold", "explain", "onepass", "report", "timeline"})

"""agentscope: a Jupyter time-travel debugger for statechart and agent event logs.

The public API is flat. Names are imported lazily, so ``import agentscope`` stays cheap and the
heavy parts (pandas, ipywidgets, the Node runner) load only when used.

- Reading logs: :func:`read_log`, :func:`read_threads`, :class:`EventLog` (spec §1, §5.2).
- Hashing: :func:`state_hash`, :func:`canonical_json` (spec §2, §3).
- Engines: :func:`load_machine` (real XState via Node), :class:`StatechartMachine` and
  :func:`setup` (pure Python), :class:`Recorder` (write logs).
- Replay: :func:`replay`, :func:`verify`, :class:`Timeline` (spec §4); their home is the package
  :mod:`agentscope.pipeline` (segments → fold → the pass → report → timeline).
- Forks: :func:`compare`, :func:`fork_tree` (spec §5.1, §6).
- Views: :class:`TimeTravel`, :class:`ForkView`, :func:`history`.
- Bulk: :func:`verify_store`.
- Questions over the one pass: :func:`whatif` (history under a changed machine).
- Questions: :func:`check` (invariants), :func:`coverage` / :class:`Coverage`; on a
  ``Timeline``: ``states()``, ``find()``, ``find_all()``, ``next_change()``, ``last_change()``.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

_EXPORTS: dict[str, str] = {
    "read_log": "agentscope.stores",
    "read_threads": "agentscope.stores",
    "EventLog": "agentscope.log",
    "state_hash": "agentscope.hashing",
    "canonical_json": "agentscope.hashing",
    "load_machine": "agentscope.engines.xstate",
    "StatechartMachine": "agentscope.engines.statechart",
    "setup": "agentscope.engines.statechart",
    "UNDEFINED": "agentscope.engines.statechart",
    "Recorder": "agentscope.recorder",
    "ManualClock": "agentscope.recorder",
    "replay": "agentscope.pipeline",
    "verify": "agentscope.pipeline",
    "Timeline": "agentscope.pipeline",
    "compare": "agentscope.forks",
    "fork_tree": "agentscope.forks",
    "ForkDiff": "agentscope.forks",
    "VerifyReport": "agentscope.pipeline",
    "Frame": "agentscope.frames",
    "TimeTravel": "agentscope.widgets",
    "ForkView": "agentscope.widgets",
    "history": "agentscope.widgets",
    "verify_store": "agentscope.bulk",
    "whatif": "agentscope.counterfactual",
    "WhatIf": "agentscope.counterfactual",
    "check": "agentscope.queries",
    "coverage": "agentscope.coverage_map",
    "Coverage": "agentscope.coverage_map",
    "AgentscopeError": "agentscope.errors",
}

__all__ = ["__version__", *sorted(_EXPORTS)]

if TYPE_CHECKING:  # pragma: no cover
    from agentscope.errors import AgentscopeError as AgentscopeError
    from agentscope.hashing import canonical_json as canonical_json
    from agentscope.hashing import state_hash as state_hash


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'agentscope' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(__all__) | {"__version__", "errors", "hashing", "log", "engines", "forks"})

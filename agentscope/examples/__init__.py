"""Bundled real examples: the support-triage agent store and the fixtures' machines (JS and Python)."""

from pathlib import Path

__all__ = ["TRIAGE_MACHINE", "TRIAGE_STORE"]

_HERE = Path(__file__).resolve().parent
TRIAGE_STORE = _HERE / "g_triage.sqlite"
"""The bundled real SQLite store of the support-triage agent: threads ``main``, ``fork``, ``second``."""
TRIAGE_MACHINE = _HERE / "machines" / "triage.mjs"
"""Its machine as an ES module for the Node engine (``triageMachine``); the Python twin is
:func:`agentscope.examples.python_machines.triage_machine`."""

"""Changed machines for what-if tests, as Python statecharts (the Node twins are in
``tests/fixtures/changed/``): importable as ``py:tests.changed_machines:<name>``."""

from __future__ import annotations

from typing import Any

from agentscope.engines.statechart import StatechartMachine


def _comment(c: dict[str, Any], e: dict[str, Any]) -> dict[str, Any]:
    return {"context": {"commentCount": c["commentCount"] + 1}}


def ticket_v2_working() -> StatechartMachine:
    """``ticket@2`` (``python_machines.ticket_v2``) with the state ``inProgress`` renamed to
    ``working``: a snapshot recorded in ``inProgress`` cannot be restored."""
    return StatechartMachine(
        {
            "id": "ticket",
            "version": "2",
            "initial": "open",
            "context": lambda input: {"title": input["title"], "commentCount": 0, "priority": "normal"},
            "states": {
                "open": {"on": {"COMMENT": _comment, "START": {"target": "working"}}},
                "working": {
                    "on": {
                        "COMMENT": _comment,
                        "ESCALATE": lambda c, e: {"context": {"priority": "high"}},
                        "RESOLVE": {"target": "review"},
                    }
                },
                "review": {"on": {"ACCEPT": {"target": "resolved"}, "REOPEN": {"target": "working"}}},
                "resolved": {"type": "final"},
            },
        }
    )

"""A machine whose context is keyed by e-mail address, for the redaction tests.

``contacts_machine()`` keeps ``context.byEmail`` (address -> ``{"name", "plan"}``), invokes a
``welcome`` actor whose input carries the address, and schedules a reminder timer whose id and
event carry the address: every section of the persisted snapshot (``context``, ``children``,
``timers``) holds the value a share must hide.
"""

from __future__ import annotations

from typing import Any

from agentscope.engines.statechart import Raise, StatechartMachine

__all__ = ["contacts_machine"]


def _signup(context: Any, event: Any) -> dict[str, Any]:
    email = event["email"]
    book = dict(context["byEmail"])
    book[email] = {"name": event.get("name"), "plan": event.get("plan")}
    return {
        "target": "welcoming",
        "context": {"byEmail": book, "count": context["count"] + 1},
        "actions": [Raise({"type": "REMIND", "email": email}, delay=60_000, id=f"remind:{email}")],
    }


def _welcomed(context: Any, event: Any) -> dict[str, Any]:
    return {"target": "open"}


def _remind(context: Any, event: Any) -> dict[str, Any]:
    email = event.get("email")
    book = dict(context["byEmail"])
    if email in book:
        book[email] = {**book[email], "reminded": True}
    return {"context": {"byEmail": book}}


def contacts_machine() -> StatechartMachine:
    """``open`` -SIGNUP-> ``welcoming`` (invokes ``welcome`` with the address) -done-> ``open``."""
    return StatechartMachine(
        {
            "id": "contacts",
            "initial": "open",
            "context": {"byEmail": {}, "count": 0},
            "on": {"REMIND": _remind},
            "states": {
                "open": {"on": {"SIGNUP": _signup}},
                "welcoming": {
                    "invoke": {
                        "id": "welcome",
                        "src": "sendWelcome",
                        "input": lambda c, e: {"email": e.get("email"), "name": e.get("name")},
                        "onDone": _welcomed,
                    },
                    "on": {"SIGNUP": _signup},
                },
            },
        },
        actors={"sendWelcome": lambda inp: {"sentTo": inp["email"]}},
    )

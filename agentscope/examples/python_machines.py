"""The fixtures' real machines written as Python configs for :class:`StatechartMachine`.

Each is the Python twin of a module in ``tests/fixtures/real/machines/`` (``counter.mjs``,
``ticket.mjs``, ``triage.mjs``): same ids, same structure (so the same structural
``machineVersion``), same context updates, so replaying the real logs reproduces every recorded
``verification.stateHash``. The triage actors are Python ports of the mocks the logs were recorded
with, so :class:`~agentscope.recorder.Recorder` can run the machine live.
"""

from __future__ import annotations

import re
from typing import Any

from agentscope.engines.statechart import StatechartMachine, setup

__all__ = [
    "ToolError",
    "classify_ticket",
    "counter_machine",
    "notify_oncall",
    "search_knowledge_base",
    "ticket_v1",
    "ticket_v2",
    "triage_machine",
]


# ---------------------------------------------------------------------------------------------
# counter (scenarios a and c): structural version "adb004a6"


def _counter_context(input: Any) -> dict[str, Any]:
    start = input.get("start") if isinstance(input, dict) else None
    return {"count": 0 if start is None else start, "toggles": 0, "last": None}


def _by(event: Any) -> Any:
    by = event.get("by")
    return 1 if by is None else by


def _toggle(target: str) -> Any:
    def toggle(context: Any, event: Any) -> dict[str, Any]:
        return {"target": target, "context": {"toggles": context["toggles"] + 1, "last": "TOGGLE"}}

    return toggle


def counter_machine() -> StatechartMachine:
    """The counter/toggle machine: ``off`` ⇄ ``on`` → ``done`` (final) with output."""
    return StatechartMachine(
        {
            "id": "counter",
            "initial": "off",
            "context": _counter_context,
            "on": {
                "INC": lambda c, e: {"context": {"count": c["count"] + _by(e), "last": "INC"}},
                "DEC": lambda c, e: {"context": {"count": c["count"] - _by(e), "last": "DEC"}},
                "RESET": lambda c, e: {"context": {"count": 0, "last": "RESET"}},
            },
            "states": {
                "off": {"on": {"TOGGLE": _toggle("on")}},
                "on": {"on": {"TOGGLE": _toggle("off"), "FINISH": {"target": "done"}}},
                "done": {"type": "final"},
            },
            "output": lambda c, e: {"count": c["count"], "toggles": c["toggles"]},
        }
    )


# ---------------------------------------------------------------------------------------------
# ticket (scenario e): explicit versions "1" and "2"


def _comment(field: str) -> Any:
    return lambda c, e: {"context": {field: c[field] + 1}}


def ticket_v1() -> StatechartMachine:
    """``ticket@1``: ``open`` → ``inProgress`` → ``resolved``; context ``{title, comments}``."""
    return StatechartMachine(
        {
            "id": "ticket",
            "version": "1",
            "initial": "open",
            "context": lambda input: {"title": input["title"], "comments": 0},
            "states": {
                "open": {"on": {"COMMENT": _comment("comments"), "START": {"target": "inProgress"}}},
                "inProgress": {"on": {"COMMENT": _comment("comments"), "RESOLVE": {"target": "resolved"}}},
                "resolved": {"type": "final"},
            },
        }
    )


def _migrate_ticket(persisted: dict[str, Any], from_version: str | None) -> dict[str, Any]:
    if from_version == "1":
        rest = {k: v for k, v in persisted["context"].items() if k != "comments"}
        return {
            **persisted,
            "context": {**rest, "commentCount": persisted["context"].get("comments"), "priority": "normal"},
        }
    return persisted


def ticket_v2() -> StatechartMachine:
    """``ticket@2``: renames ``comments`` to ``commentCount``, adds ``priority`` and ``review``;
    ``migrate`` upgrades a version-"1" snapshot."""
    return StatechartMachine(
        {
            "id": "ticket",
            "version": "2",
            "migrate": _migrate_ticket,
            "initial": "open",
            "context": lambda input: {"title": input["title"], "commentCount": 0, "priority": "normal"},
            "states": {
                "open": {"on": {"COMMENT": _comment("commentCount"), "START": {"target": "inProgress"}}},
                "inProgress": {
                    "on": {
                        "COMMENT": _comment("commentCount"),
                        "ESCALATE": lambda c, e: {"context": {"priority": "high"}},
                        "RESOLVE": {"target": "review"},
                    }
                },
                "review": {"on": {"ACCEPT": {"target": "resolved"}, "REOPEN": {"target": "inProgress"}}},
                "resolved": {"type": "final"},
            },
        }
    )


# ---------------------------------------------------------------------------------------------
# supportTriage (scenario g): structural version "efe50ed5"


class ToolError(Exception):
    """A tool failure; ``name`` is what the journaled error payload shows (JS ``Error``)."""

    name = "Error"


def classify_ticket(input: Any) -> dict[str, Any]:
    """Mock classifier: outage/billing/account/general and a priority."""
    s = str(input["subject"]).lower()
    if re.search(r"down|outage|500", s):
        category = "outage"
    elif re.search(r"invoice|refund|charge", s):
        category = "billing"
    elif re.search(r"password|login|2fa", s):
        category = "account"
    else:
        category = "general"
    if category == "outage":
        priority = "urgent"
    elif category == "billing" and input.get("plan") == "enterprise":
        priority = "high"
    else:
        priority = "normal"
    return {"category": category, "priority": priority}


def search_knowledge_base(input: Any) -> dict[str, Any]:
    """Mock KB search: fails on attempt 0 when ``n % 4 == 1`` and on attempt 1 when ``n % 8 == 5``."""
    n, attempt = input["n"], input["attempt"]
    if (n % 4 == 1 and attempt == 0) or (n % 8 == 5 and attempt == 1):
        raise ToolError(f"knowledge base timeout for {input['id']} (attempt {attempt})")
    s = str(input["subject"]).lower()
    if re.search(r"password|login|2fa", s):
        confidence = 0.92
    elif re.search(r"invoice|refund|charge", s):
        confidence = 0.7
    else:
        confidence = 0.55
    return {"article": f"KB-{n * 17 % 97}", "confidence": confidence}


def notify_oncall(input: Any) -> dict[str, Any]:
    """Mock pager."""
    return {"pageId": f"PG-{input['id']}", "team": input["team"]}


def _outcome(context: Any, route: str, extra: dict[str, Any]) -> list[Any]:
    triage = context.get("triage")
    category = triage.get("category") if isinstance(triage, dict) else None
    return [
        *context["outcomes"],
        {"id": context["current"]["id"], "route": route, "category": category, **extra},
    ]


def _triage_context(input: Any) -> dict[str, Any]:
    max_kb = input.get("maxKbAttempts")
    return {
        "team": input["team"],
        "maxKbAttempts": 2 if max_kb is None else max_kb,
        "queue": [],
        "current": None,
        "triage": None,
        "kb": None,
        "kbAttempt": 0,
        "kbErrors": [],
        "draft": None,
        "rejections": 0,
        "outcomes": [],
        "pauses": 0,
        "pauseReason": None,
        "batches": 0,
    }


def _error_message(event: Any) -> str:
    err = event.get("error")
    msg = err.get("message") if isinstance(err, dict) else None
    return "unknown error" if msg is None else str(msg)


def _priority(context: Any) -> Any:
    triage = context.get("triage")
    return triage.get("priority") if isinstance(triage, dict) else None


def _by_route(outcomes: list[Any]) -> dict[str, int]:
    acc: dict[str, int] = {}
    for o in outcomes:
        acc[o["route"]] = acc.get(o["route"], 0) + 1
    return acc


def triage_machine() -> StatechartMachine:
    """The support-ticket triage machine (compound, parallel, shallow history, guards, eventless
    transitions, async tools with retries, final output)."""
    return setup(
        actors={
            "classifyTicket": classify_ticket,
            "searchKnowledgeBase": search_knowledge_base,
            "notifyOncall": notify_oncall,
        }
    ).create_machine(
        {
            "id": "supportTriage",
            "initial": "standby",
            "context": _triage_context,
            "states": {
                "standby": {
                    "on": {
                        "TICKETS_RECEIVED": lambda c, e: {
                            "target": "working",
                            "context": {"queue": [*c["queue"], *e["tickets"]], "batches": c["batches"] + 1},
                        },
                        "CLOSE_SHIFT": {"target": "closed"},
                    }
                },
                "working": {
                    "initial": "selecting",
                    "on": {
                        "PAUSE": lambda c, e: {
                            "target": "paused",
                            "context": {"pauses": c["pauses"] + 1, "pauseReason": e.get("reason")},
                        },
                        "TICKETS_RECEIVED": lambda c, e: {
                            "context": {"queue": [*c["queue"], *e["tickets"]], "batches": c["batches"] + 1}
                        },
                    },
                    "states": {
                        "hist": {"type": "history", "history": "shallow", "target": "selecting"},
                        "selecting": {
                            "always": [
                                {
                                    "guard": lambda c, e: len(c["queue"]) == 0,
                                    "target": "#supportTriage.standby",
                                },
                                {
                                    "target": "analyzing",
                                    "context": lambda c, e: {
                                        "current": c["queue"][0],
                                        "queue": c["queue"][1:],
                                        "triage": None,
                                        "kb": None,
                                        "kbAttempt": 0,
                                        "draft": None,
                                        "rejections": 0,
                                    },
                                },
                            ]
                        },
                        "analyzing": {
                            "type": "parallel",
                            "states": {
                                "classification": {
                                    "initial": "running",
                                    "states": {
                                        "running": {
                                            "invoke": {
                                                "id": "classify",
                                                "src": "classifyTicket",
                                                "input": lambda c, e: {
                                                    "id": c["current"]["id"],
                                                    "subject": c["current"]["subject"],
                                                    "plan": c["current"]["plan"],
                                                },
                                                "onDone": lambda c, e: {
                                                    "target": "complete",
                                                    "context": {"triage": e.get("output")},
                                                },
                                            }
                                        },
                                        "complete": {"type": "final"},
                                    },
                                },
                                "knowledge": {
                                    "initial": "searching",
                                    "states": {
                                        "searching": {
                                            "invoke": {
                                                "id": "kb",
                                                "src": "searchKnowledgeBase",
                                                "input": lambda c, e: {
                                                    "id": c["current"]["id"],
                                                    "n": c["current"]["n"],
                                                    "subject": c["current"]["subject"],
                                                    "attempt": c["kbAttempt"],
                                                },
                                                "onDone": lambda c, e: {
                                                    "target": "complete",
                                                    "context": {"kb": e.get("output")},
                                                },
                                                "onError": [
                                                    {
                                                        "guard": lambda c, e: (
                                                            c["kbAttempt"] + 1 < c["maxKbAttempts"]
                                                        ),
                                                        "target": "searching",
                                                        "reenter": True,
                                                        "context": lambda c, e: {
                                                            "kbAttempt": c["kbAttempt"] + 1,
                                                            "kbErrors": [*c["kbErrors"], _error_message(e)],
                                                        },
                                                    },
                                                    {
                                                        "target": "complete",
                                                        "context": lambda c, e: {
                                                            "kb": None,
                                                            "kbErrors": [*c["kbErrors"], _error_message(e)],
                                                        },
                                                    },
                                                ],
                                            }
                                        },
                                        "complete": {"type": "final"},
                                    },
                                },
                            },
                            "onDone": {"target": "routing"},
                        },
                        "routing": {
                            "always": [
                                {"guard": lambda c, e: _priority(c) == "urgent", "target": "escalating"},
                                {
                                    "guard": lambda c, e: (
                                        c["kb"] is not None and c["kb"]["confidence"] >= 0.8
                                    ),
                                    "target": "selecting",
                                    "context": lambda c, e: {
                                        "outcomes": _outcome(
                                            c, "auto-resolved", {"article": c["kb"]["article"]}
                                        )
                                    },
                                },
                                {"target": "awaitingAgent"},
                            ]
                        },
                        "escalating": {
                            "invoke": {
                                "id": "page",
                                "src": "notifyOncall",
                                "input": lambda c, e: {"id": c["current"]["id"], "team": c["team"]},
                                "onDone": lambda c, e: {
                                    "target": "selecting",
                                    "context": {
                                        "outcomes": _outcome(
                                            c, "escalated", {"pageId": e["output"]["pageId"]}
                                        )
                                    },
                                },
                            }
                        },
                        "awaitingAgent": {
                            "initial": "drafting",
                            "states": {
                                "drafting": {
                                    "on": {
                                        "DRAFT_READY": lambda c, e: {
                                            "target": "reviewing",
                                            "context": {"draft": e.get("text")},
                                        }
                                    }
                                },
                                "reviewing": {
                                    "on": {
                                        "APPROVE": lambda c, e: {
                                            "target": "#supportTriage.working.selecting",
                                            "context": {
                                                "outcomes": _outcome(
                                                    c,
                                                    "answered",
                                                    {
                                                        "by": e.get("agent"),
                                                        "rejections": c["rejections"],
                                                        "priority": _priority(c),
                                                    },
                                                )
                                            },
                                        },
                                        "REJECT": {
                                            "guard": lambda c, e: c["rejections"] < 2,
                                            "target": "drafting",
                                            "context": lambda c, e: {
                                                "rejections": c["rejections"] + 1,
                                                "draft": None,
                                            },
                                        },
                                    }
                                },
                            },
                        },
                    },
                },
                "paused": {
                    "on": {
                        "RESUME": {"target": "#supportTriage.working.hist"},
                        "CLOSE_SHIFT": {"target": "closed"},
                    }
                },
                "closed": {"type": "final"},
            },
            "output": lambda c, e: {
                "team": c["team"],
                "handled": len(c["outcomes"]),
                "byRoute": _by_route(c["outcomes"]),
                "kbErrors": len(c["kbErrors"]),
                "pauses": c["pauses"],
                "leftInQueue": len(c["queue"]),
            },
        }
    )

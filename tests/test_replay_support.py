"""Small but real Python machines (``MachineBase`` subclasses) and a log writer for the replay
tests. Their persisted snapshots follow XState 6's shape (spec §7.4), so the spec's computed
hashes (§7.2, §2.4 jobber) check them independently.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from agentscope.engines.base import NO_INPUT, Graph, MachineBase, Snapshot, StateNodeInfo
from agentscope.hashing import state_hash


def _graph(mid: str, states: Sequence[str]) -> Graph:
    nodes = {mid: StateNodeInfo(id=mid, key=mid, path=(), kind="compound", parent=None,
                                children=tuple(f"{mid}.{s}" for s in states),
                                initial=f"{mid}.{states[0]}")}
    for s in states:
        nodes[f"{mid}.{s}"] = StateNodeInfo(id=f"{mid}.{s}", key=s, path=(s,), kind="atomic",
                                            parent=mid)
    return Graph(machine_id=mid, root=mid, nodes=nodes)


def _base(value: str, context: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "status": "active",
        "value": value,
        "historyValue": {},
        "_nextTimerId": 0,
        "context": dict(context),
        "children": {},
        "timers": {},
    }


class _Pure(MachineBase):
    """Shared plumbing: snapshots are plain persisted dicts; no handle."""

    states: Sequence[str] = ()

    @property
    def graph(self) -> Graph:
        return _graph(self.machine_id, self.states)

    def restore(self, persisted: Mapping[str, Any]) -> Snapshot:
        return Snapshot(copy.deepcopy(dict(persisted)))

    def child_session(self, snapshot: Snapshot, actor_id: str) -> str | None:
        child = snapshot.persisted.get("children", {}).get(actor_id)
        if isinstance(child, Mapping) and isinstance(child.get("sessionId"), str):
            return str(child["sessionId"])
        return None


class SpecCounter(_Pure):
    """The spec §7.2 "counter": ADD / SCALE / DONE, explicit version "v1"."""

    machine_id = "counter"
    version = "v1"
    states = ("counting", "done")

    def initial(self, input: Any = NO_INPUT) -> Snapshot:
        return Snapshot(_base("counting", {"total": 0, "ops": 0}))

    def transition(self, snapshot: Snapshot, event: Mapping[str, Any]) -> Snapshot:
        p = snapshot.persisted
        if p["status"] != "active":
            return snapshot
        ctx = p["context"]
        t = event.get("type")
        out = copy.deepcopy(dict(p))
        if t == "ADD":
            out["context"] = {"total": ctx["total"] + event["amount"], "ops": ctx["ops"] + 1}
        elif t == "SCALE":
            out["context"] = {"total": ctx["total"] * event["factor"], "ops": ctx["ops"] + 1}
        elif t == "DONE":
            out["value"] = "done"
            out["status"] = "done"
        else:
            return snapshot
        return Snapshot(out)


class FixtureCounter(_Pure):
    """A Python port of ``tests/fixtures/real/machines/counter.mjs`` (scenarios a and c)."""

    machine_id = "counter"
    version = "adb004a6"
    states = ("off", "on", "done")

    def initial(self, input: Any = NO_INPUT) -> Snapshot:
        start = input.get("start") if isinstance(input, Mapping) else None
        return Snapshot(_base("off", {"count": 0 if start is None else start, "toggles": 0,
                                      "last": None}))

    def transition(self, snapshot: Snapshot, event: Mapping[str, Any]) -> Snapshot:
        p = snapshot.persisted
        if p["status"] != "active":
            return snapshot
        ctx = dict(p["context"])
        t = event.get("type")
        value = p["value"]
        by = event.get("by", 1)
        if t == "TOGGLE" and value in ("off", "on"):
            value = "on" if value == "off" else "off"
            ctx.update(toggles=ctx["toggles"] + 1, last="TOGGLE")
        elif t == "FINISH" and value == "on":
            value = "done"
        elif t == "INC":
            ctx.update(count=ctx["count"] + by, last="INC")
        elif t == "DEC":
            ctx.update(count=ctx["count"] - by, last="DEC")
        elif t == "RESET":
            ctx.update(count=0, last="RESET")
        else:
            return snapshot
        out = copy.deepcopy(dict(p))
        out["value"] = value
        out["context"] = ctx
        if value == "done":
            out["status"] = "done"
            out["output"] = {"count": ctx["count"], "toggles": ctx["toggles"]}
        return Snapshot(out)


class Jobber(_Pure):
    """The §7.3 "jobber" (idle -GO-> working [invoke job] -> done/failed), optionally looping.

    Sessions are minted as ``<prefix>:<n>`` with ``n`` counted in ``_nextActorIds`` (stripped
    from the hash), so two instances with different prefixes play "live run" and "replay".
    With ``loop=True`` a completion returns to ``idle`` and counts ``runs``; ``NOOP`` is
    unhandled; ``WAIT`` in ``idle`` starts an ``after`` 1000 timer whose ``xstate.timer``
    returns to ``idle``; ``CRASH`` errors the machine (status ``"error"``).
    """

    machine_id = "jobber"
    states = ("idle", "working", "waiting", "done", "failed")

    def __init__(self, *, prefix: str = "fold", loop: bool = False, version: str = "74198848"):
        self.prefix = prefix
        self.loop = loop
        self.version = version

    def initial(self, input: Any = NO_INPUT) -> Snapshot:
        attempt = input.get("attempt") if isinstance(input, Mapping) else None
        ctx: dict[str, Any] = {"attempt": attempt, "result": None}
        if self.loop:
            ctx["runs"] = 0
        p = _base("idle", ctx)
        del p["_nextTimerId"]
        return Snapshot(p)

    def transition(self, snapshot: Snapshot, event: Mapping[str, Any]) -> Snapshot:
        p = snapshot.persisted
        if p["status"] != "active":
            return snapshot
        t = event.get("type")
        value = p["value"]
        out = copy.deepcopy(dict(p))
        if t == "GO" and value == "idle":
            n = int((p.get("_nextActorIds") or {}).get("job", 0)) + 1
            out["_nextActorIds"] = {"job": n}
            out["value"] = "working"
            out["children"] = {
                "job": {
                    "address": "jobber/job",
                    "sessionId": f"{self.prefix}:{n}",
                    "snapshot": {"status": "active", "input": {"attempt": p["context"]["attempt"]},
                                 "effects": {"async": {"status": "active"}}},
                    "src": "job",
                    "syncSnapshot": False,
                }
            }
        elif t in ("xstate.done.actor", "xstate.error.actor") and value == "working":
            child = p["children"].get(event.get("actorId"))
            if child is None or child.get("sessionId") != event.get("sessionId"):
                return snapshot  # a stale session: XState drops it
            out["children"] = {}
            if t == "xstate.error.actor":
                out["value"] = "failed"
            elif self.loop:
                out["value"] = "idle"
                out["context"]["result"] = event.get("output")
                out["context"]["runs"] = p["context"]["runs"] + 1
            else:
                out["value"] = "done"
                out["status"] = "done"
                out["context"]["result"] = event.get("output")
        elif t == "WAIT" and value == "idle":
            tid = "xstate.after.1000.jobber.waiting"
            out["value"] = "waiting"
            out["timers"] = {tid: {"id": tid, "delay": 1000, "type": "@xstate.raise",
                                   "event": {"type": "xstate.after", "delay": 1000,
                                             "stateId": "jobber.waiting"},
                                   "target": "self"}}
        elif t == "xstate.timer" and value == "waiting" and event.get("id") in p["timers"]:
            out["value"] = "idle"
            out["timers"] = {}
        elif t == "CRASH":
            out["status"] = "error"
            out["error"] = event.get("error")
        else:
            return snapshot
        return Snapshot(out)


T0 = datetime(2026, 1, 1, tzinfo=UTC)


def iso(ms: int) -> str:
    """``new Date(ms).toISOString()`` for epoch milliseconds."""
    d = datetime(1970, 1, 1, tzinfo=UTC) + timedelta(milliseconds=ms)
    return d.strftime("%Y-%m-%dT%H:%M:%S.") + f"{d.microsecond // 1000:03d}Z"


def write_log(
    machine: MachineBase,
    events: Sequence[Mapping[str, Any]],
    *,
    input: Any = NO_INPUT,
    start_ms: int = int(T0.timestamp() * 1000),
    step_ms: int = 1000,
    hashes: bool = True,
) -> list[dict[str, Any]]:
    """Write a log the way a live host would: run ``machine`` and stamp each post-state's hash.

    An event ``{"type": "xstate.done.actor", "actorId": a}`` without a ``sessionId`` gets the
    live child's session (what the live run would journal); an explicit one is kept.
    """
    init_ev: dict[str, Any] = {"type": "@agent.init"}
    if input is not NO_INPUT:
        init_ev["input"] = input
    s = machine.initial(input)
    out: list[dict[str, Any]] = []

    def entry(i: int, ev: Mapping[str, Any], snap: Snapshot) -> dict[str, Any]:
        e: dict[str, Any] = {
            "schemaVersion": 1,
            "id": f"evt_{i:08d}",
            "index": i,
            "recordedAt": iso(start_ms + i * step_ms),
            "machineId": machine.machine_id,
            "machineVersion": machine.version,
            "event": dict(ev),
        }
        if i == 0:
            e["metadata"] = {"executionId": "exec_test"}
        if hashes:
            e["verification"] = {"stateHash": state_hash(machine.persist(snap))}
        return e

    out.append(entry(0, init_ev, s))
    for i, ev in enumerate(events, start=1):
        ev = dict(ev)
        if "actorId" in ev and "sessionId" not in ev:
            sid = machine.child_session(s, ev["actorId"])
            ev["sessionId"] = sid if sid is not None else "none"
        s = machine.transition(s, ev)
        out.append(entry(i, ev, s))
    return out

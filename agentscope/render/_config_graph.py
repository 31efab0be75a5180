"""Build a :class:`~agentscope.engines.base.Graph` from a JSON machine config, without an engine.

Accepts XState's config shape as ``serializeMachine`` writes it (``g_triage.machine.json``):
``{"id", "initial", "states": {...}, "on", "always", "after", "invoke": {"onDone", "onError"},
"onDone", "type", "history", "target"}``. A transition written as code (``{"@code": ...}``, an
XState 6 function transition) is *dynamic*: its target is known only at run time. A guard written
as code is named by its body.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal, cast

from agentscope.engines.base import Graph, StateKind, StateNodeInfo, TransitionInfo
from agentscope.errors import StatechartConfigError

__all__ = ["graph_from_config"]

_TKind = Literal["on", "always", "after", "onDone", "onError", "invoke.onDone", "invoke.onError"]


def _guard_name(g: Any) -> str | None:
    if g is None:
        return None
    if isinstance(g, str):
        return g
    if isinstance(g, Mapping):
        if isinstance(g.get("type"), str):
            return str(g["type"])
        code = g.get("@code")
        if isinstance(code, str):
            return code.split("=>", 1)[-1].strip()
    return "guard"


def graph_from_config(config: Mapping[str, Any]) -> Graph:
    """Return the drawable structure of a JSON machine config (XState 6 shape).

    Raises
    ------
    StatechartConfigError
        When a target names no state (the message names the source state and the target).
    """
    machine_id = str(config.get("id") or "(machine)")
    nodes: dict[str, StateNodeInfo] = {}
    by_custom_id: dict[str, str] = {}
    raw: dict[str, Mapping[str, Any]] = {}

    def build(
        cfg: Mapping[str, Any], node_id: str, key: str, path: tuple[str, ...], parent: str | None
    ) -> None:
        states = cfg.get("states") or {}
        children = tuple(f"{node_id}.{k}" for k in states)
        typ = cfg.get("type")
        kind: StateKind
        if typ in ("parallel", "final", "history"):
            kind = cast(StateKind, typ)
        else:
            kind = "compound" if children else "atomic"
        initial = cfg.get("initial")
        invoke = cfg.get("invoke") or ()
        invokes = [invoke] if isinstance(invoke, Mapping) else list(invoke)
        nodes[node_id] = StateNodeInfo(
            id=node_id,
            key=key,
            path=path,
            kind=kind,
            parent=parent,
            children=children,
            initial=f"{node_id}.{initial}" if isinstance(initial, str) else None,
            history=cfg.get("history", "shallow") if kind == "history" else None,
            invoke=tuple(
                (str(i.get("id", "")), str(i.get("src", ""))) for i in invokes if isinstance(i, Mapping)
            ),
            tags=tuple(cfg.get("tags") or ()),
        )
        raw[node_id] = cfg
        if isinstance(cfg.get("id"), str) and parent is not None:
            by_custom_id[str(cfg["id"])] = node_id
        for k, sub in states.items():
            build(sub, f"{node_id}.{k}", k, (*path, k), node_id)

    build(config, machine_id, "", (), None)

    def resolve(source: str, target: str) -> str:
        if target.startswith("#"):
            t = target[1:]
            if t in nodes:
                return t
            if t in by_custom_id:
                return by_custom_id[t]
            head, _, rest = t.partition(".")
            if head in by_custom_id and f"{by_custom_id[head]}.{rest}" in nodes:
                return f"{by_custom_id[head]}.{rest}"
        elif target.startswith("."):
            cand = source + target
            if cand in nodes:
                return cand
        else:
            parent = nodes[source].parent
            cand = f"{parent}.{target}" if parent else target
            if cand in nodes:
                return cand
        raise StatechartConfigError(f"state {source!r}: transition target {target!r} names no state")

    transitions: list[TransitionInfo] = []

    def add(source: str, event: str, spec: Any, kind: _TKind) -> None:
        items = spec if isinstance(spec, list) else [spec]
        for item in items:
            if isinstance(item, str):
                item = {"target": item}
            if not isinstance(item, Mapping):
                continue
            if "@code" in item:
                transitions.append(TransitionInfo(source=source, event=event, dynamic=True, kind=kind))
                continue
            tg = item.get("target")
            tgs = [tg] if isinstance(tg, str) else list(tg or ())
            transitions.append(
                TransitionInfo(
                    source=source,
                    event=event,
                    targets=tuple(resolve(source, x) for x in tgs),
                    guard=_guard_name(item.get("guard")),
                    reenter=bool(item.get("reenter")),
                    kind=kind,
                )
            )

    for node_id, cfg in raw.items():
        for ev, spec in (cfg.get("on") or {}).items():
            add(node_id, ev, spec, "on")
        if "always" in cfg:
            add(node_id, "", cfg["always"], "always")
        for delay, spec in (cfg.get("after") or {}).items():
            add(node_id, f"xstate.after.{delay}.{node_id}", spec, "after")
        if "onDone" in cfg:
            add(node_id, f"xstate.done.state.{node_id}", cfg["onDone"], "onDone")
        invoke = cfg.get("invoke") or ()
        for inv in [invoke] if isinstance(invoke, Mapping) else list(invoke):
            iid = str(inv.get("id", ""))
            if "onDone" in inv:
                add(node_id, f"xstate.done.actor.{iid}", inv["onDone"], "invoke.onDone")
            if "onError" in inv:
                add(node_id, f"xstate.error.actor.{iid}", inv["onError"], "invoke.onError")
        if nodes[node_id].kind == "history" and isinstance(cfg.get("target"), str):
            pass  # the history default target is drawn by the view as part of the H node
    return Graph(machine_id=machine_id, root=machine_id, nodes=nodes, transitions=tuple(transitions))

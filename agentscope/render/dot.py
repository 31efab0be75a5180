"""Statechart → DOT: a pure function of an engine's :class:`~agentscope.engines.base.Graph`.

Drawing conventions (one per statechart feature):

- a compound state is a cluster with rounded borders; a **parallel** state is a cluster whose
  regions (its children) are clusters with **dashed** borders;
- an atomic state is a rounded box; a **final** state has a double border (``peripheries=2``);
  a **history** state is a small circle labelled ``H`` (shallow) or ``H*`` (deep);
- each compound state's initial child gets an arrow from a point node;
- a transition is an edge labelled with its event (``always``, ``after 1000ms``,
  ``done: kb``/``error: kb`` for invoke completions) and ``[guard]``;
- a transition whose target is only known at run time (XState 6 function transitions,
  ``TransitionInfo.dynamic``) is a dashed edge to a ``?`` marker, labelled ``… → ?``;
- a targetless transition is a dotted self-loop;
- *observed* edges, i.e. (source, target, event) moves seen in a replayed log that no static edge
  draws, are added bold and blue.

Every drawn element carries a stable SVG ``id`` derived from the state id or the transition's
index (see :func:`state_element_id`), so a frame only has to restyle elements by id.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import graphviz

from agentscope.engines.base import Graph, StateNodeInfo, TransitionInfo

__all__ = [
    "DotPlan",
    "ObservedEdge",
    "edge_label",
    "observed_element_id",
    "plan_dot",
    "short_event",
    "state_element_id",
    "to_dot",
    "transition_element_id",
]

_UNSAFE_ID = re.compile(r"[^A-Za-z0-9]+")
_CTRL = re.compile(r"[\x00-\x1f\x7f]+")
_MAX_LABEL = 48


@dataclass(frozen=True, slots=True)
class ObservedEdge:
    """A move seen in a replayed log: ``event`` took the chart from ``source`` into ``target``.

    ``source`` and ``target`` are full state ids of the graph. ``event`` is the event type.
    """

    source: str
    target: str
    event: str


def _h(text: str) -> str:
    return hashlib.blake2s(text.encode("utf-8"), digest_size=4).hexdigest()


def _slug(text: str) -> str:
    return _UNSAFE_ID.sub("_", text).strip("_")[-40:]


def state_element_id(state_id: str, prefix: str = "as") -> str:
    """Return the SVG element id of the state ``state_id``: ``<prefix>_s_<slug>_<hash8>``.

    Only ``[A-Za-z0-9_]`` characters appear, so the id is usable as-is in CSS and
    ``getElementById``; the hash keeps ids distinct when two state ids slug alike.
    """
    return f"{prefix}_s_{_slug(state_id)}_{_h(state_id)}"


def transition_element_id(index: int, target_index: int = 0, prefix: str = "as") -> str:
    """Return the SVG element id of the edge for ``graph.transitions[index]`` and its k-th target."""
    return f"{prefix}_t{index}_{target_index}"


def observed_element_id(edge: ObservedEdge, prefix: str = "as") -> str:
    """Return the SVG element id of an observed edge (hash of source, target and event)."""
    return f"{prefix}_o_{_h(edge.source + chr(0) + edge.target + chr(0) + edge.event)}"


def _label(text: str) -> str:
    text = _CTRL.sub(" ", text)
    if len(text) > _MAX_LABEL:
        text = text[: _MAX_LABEL - 1] + "…"
    return str(graphviz.escape(text))


_AFTER = re.compile(r"^xstate\.after\.(\d+)\.")


def short_event(descriptor: str) -> str:
    """Return a short label for an event descriptor (``xstate.done.actor.kb`` → ``done: kb``)."""
    for stem, word in (("xstate.done.actor.", "done: "), ("xstate.error.actor.", "error: ")):
        if descriptor.startswith(stem):
            return word + descriptor[len(stem) :]
    m = _AFTER.match(descriptor)
    if m:
        return f"after {m.group(1)}ms"
    if descriptor.startswith("xstate.done.state."):
        return "done"
    return descriptor or "always"


def edge_label(t: TransitionInfo) -> str:
    """Return the plain-text label of a transition: its event (shortened) and ``[guard]``."""
    ev = t.event
    if t.kind == "always" or ev == "":
        text = "always"
    elif t.kind == "after" or _AFTER.match(ev):
        m = _AFTER.match(ev)
        text = f"after {m.group(1)}ms" if m else f"after {ev}"
    elif t.kind == "invoke.onDone":
        text = "done: " + ev.removeprefix("xstate.done.actor.")
    elif t.kind == "invoke.onError":
        text = "error: " + ev.removeprefix("xstate.error.actor.")
    elif t.kind == "onDone":
        text = "done"
    else:
        text = ev
    if t.guard:
        g = t.guard if len(t.guard) <= 24 else t.guard[:23] + "…"
        text += f" [{g}]"
    if t.dynamic:
        text += " → ?"
    return text


@dataclass(frozen=True)
class DotPlan:
    """The DOT source and the element ids it declares, by role.

    ``states`` maps state id → element id (clusters and nodes alike), ``transitions`` maps a
    transition's index → its edge element ids (one per target, or the dynamic/self-loop edge),
    ``observed`` maps an :class:`ObservedEdge` that no static edge draws → its element id, and
    ``initials`` maps a compound state id → the element id of its initial arrow.
    """

    source: str
    states: Mapping[str, str]
    transitions: Mapping[int, tuple[str, ...]]
    observed: Mapping[ObservedEdge, str]
    initials: Mapping[str, str] = field(default_factory=dict)


def _is_cluster(node: StateNodeInfo) -> bool:
    return node.kind in ("compound", "parallel") and bool(node.children)


def _inside(graph: Graph, node_id: str, ancestor: str) -> bool:
    cur: str | None = node_id
    while cur is not None:
        if cur == ancestor:
            return True
        n = graph.nodes.get(cur)
        cur = n.parent if n is not None else None
    return False


def plan_dot(graph: Graph, *, observed_edges: Iterable[ObservedEdge] = (), prefix: str = "as") -> DotPlan:
    """Build the DOT source of ``graph`` and record every element id (pure).

    Parameters
    ----------
    graph : Graph
        Any engine's statechart structure.
    observed_edges : iterable of ObservedEdge
        Moves taken in a replayed log. Those not already drawn by a static transition (same
        source and event, target among its targets) are added in the observed style; ids not in
        ``graph.nodes`` are skipped.
    prefix : str
        Prefix of every element id (``[A-Za-z0-9]``), so two charts can share one page.
    """
    if not re.fullmatch(r"[A-Za-z][A-Za-z0-9]*", prefix):
        raise ValueError(f"prefix must match [A-Za-z][A-Za-z0-9]*, got {prefix!r}")
    nodes = graph.nodes
    sid = {s: state_element_id(s, prefix) for s in nodes}
    anchor = {s: f"{sid[s]}_a" for s, n in nodes.items() if _is_cluster(n)}
    dot = graphviz.Digraph(name=_slug(graph.machine_id) or "machine")
    dot.attr(
        compound="true",
        rankdir="TB",
        newrank="true",
        fontname="Helvetica",
        fontsize="11",
        label=_label(graph.machine_id),
        labelloc="t",
        id=f"{prefix}_graph",
        nodesep="0.3",
        ranksep="0.35",
    )
    dot.attr(
        "node",
        fontname="Helvetica",
        fontsize="11",
        shape="box",
        style="rounded,filled",
        fillcolor="white",
        color="#546e7a",
        height="0.3",
    )
    dot.attr(
        "edge", fontname="Helvetica", fontsize="9", color="#78909c", fontcolor="#37474f", arrowsize="0.6"
    )
    initials: dict[str, str] = {}

    def emit(container: Any, node_id: str) -> None:
        node = nodes[node_id]
        if _is_cluster(node):
            name = f"cluster_{sid[node_id]}"
            with container.subgraph(name=name) as c:
                parent = nodes.get(node.parent) if node.parent else None
                region = parent is not None and parent.kind == "parallel"
                style = "dashed,rounded" if region else "rounded"
                label = node.key + (" (parallel)" if node.kind == "parallel" else "")
                c.attr(
                    label=_label(label),
                    id=sid[node_id],
                    style=style,
                    color="#546e7a",
                    fontsize="11",
                    labeljust="l",
                    **{"class": "as-state as-" + node.kind},
                )
                c.node(
                    anchor[node_id],
                    label="",
                    shape="point",
                    style="invis",
                    width="0.01",
                    height="0.01",
                    id=f"{anchor[node_id]}x",
                )
                _emit_initial(c, node_id)
                for child in node.children:
                    if child in nodes:
                        emit(c, child)
                _emit_markers(c, node_id)
            return
        attrs: dict[str, str] = {"id": sid[node_id], "class": "as-state as-" + node.kind}
        if node.kind == "final":
            attrs.update(peripheries="2")
        if node.kind == "history":
            attrs.update(
                shape="circle",
                label="H*" if node.history == "deep" else "H",
                width="0.3",
                height="0.3",
                fixedsize="true",
                fontsize="9",
            )
        else:
            attrs["label"] = _label(node.key or graph.machine_id)
        container.node(sid[node_id], **attrs)

    def _emit_markers(container: Any, container_id: str) -> None:
        for i in markers.get(container_id, ()):
            q = f"{prefix}_q{i}"
            container.node(
                q,
                label="?",
                shape="circle",
                style="dashed",
                width="0.22",
                height="0.22",
                fixedsize="true",
                fontsize="9",
                id=q,
                **{"class": "as-dynamic-target"},
            )

    def _emit_initial(container: Any, node_id: str) -> None:
        node = nodes[node_id]
        if node.kind == "parallel" or node.initial is None or node.initial not in nodes:
            return
        pt = f"{sid[node_id]}_i"
        container.node(
            pt,
            label="",
            shape="point",
            width="0.08",
            height="0.08",
            color="#263238",
            id=pt,
            **{"class": "as-initial"},
        )
        head, extra = endpoint(node.initial, pt, as_head=True)
        initials[node_id] = f"{pt}_e"
        container.edge(pt, head, id=f"{pt}_e", **extra, **{"class": "as-initial"})

    def endpoint(state: str, other: str, *, as_head: bool) -> tuple[str, dict[str, str]]:
        """DOT node to connect for ``state`` and the lhead/ltail needed (clusters use anchors)."""
        if state not in anchor:
            return sid[state], {}
        other_state = other_of.get(other, other)
        if other_state in nodes and _inside(graph, other_state, state):
            return anchor[state], {}
        key = "lhead" if as_head else "ltail"
        return anchor[state], {key: f"cluster_{sid[state]}"}

    # A dynamic transition's "?" marker sits in the cluster that holds its source.
    markers: dict[str, list[int]] = {}
    for i, t in enumerate(graph.transitions):
        if t.dynamic and t.source in nodes:
            holder = t.source if t.source in anchor else (nodes[t.source].parent or graph.root)
            markers.setdefault(holder, []).append(i)
    other_of = {v: k for k, v in sid.items()}
    other_of.update({v: k for k, v in anchor.items()})
    root = nodes.get(graph.root)
    top: list[str] = list(root.children) if root is not None and _is_cluster(root) else [graph.root]
    if root is not None and _is_cluster(root) and root.initial in nodes and root.kind != "parallel":
        pt = f"{sid[graph.root]}_i"
        dot.node(
            pt,
            label="",
            shape="point",
            width="0.08",
            height="0.08",
            color="#263238",
            id=pt,
            **{"class": "as-initial"},
        )
        head, extra = endpoint(str(root.initial), pt, as_head=True)
        initials[graph.root] = f"{pt}_e"
        dot.edge(pt, head, id=f"{pt}_e", **extra, **{"class": "as-initial"})
    for child in top:
        if child in nodes:
            emit(dot, child)
    if root is not None and _is_cluster(root):
        _emit_markers(dot, graph.root)
    elif root is not None:
        for i in markers.get(graph.root, ()):
            markers.setdefault("", []).append(i)
        _emit_markers(dot, "")

    transitions: dict[int, tuple[str, ...]] = {}
    for i, t in enumerate(graph.transitions):
        if t.source not in nodes:
            continue
        label = _label(edge_label(t))
        cls = "as-edge as-" + t.kind.replace(".", "-")
        ids: list[str] = []
        if t.dynamic or not t.targets:
            eid = transition_element_id(i, 0, prefix)
            if t.dynamic:
                q = f"{prefix}_q{i}"
                tail, extra = anchor.get(t.source, sid[t.source]), {}  # the marker is inside
                dot.edge(
                    tail, q, label=label, style="dashed", id=eid, **extra, **{"class": cls + " as-dynamic"}
                )
            else:
                tail = anchor.get(t.source, sid[t.source])
                dot.edge(tail, tail, label=label, style="dotted", id=eid, **{"class": cls + " as-targetless"})
            ids.append(eid)
        else:
            for k, target in enumerate(t.targets):
                if target not in nodes:
                    continue
                eid = transition_element_id(i, k, prefix)
                tail, e1 = endpoint(t.source, sid[target], as_head=False)
                head, e2 = endpoint(target, sid[t.source], as_head=True)
                dot.edge(tail, head, label=label, id=eid, **e1, **e2, **{"class": cls})
                ids.append(eid)
        transitions[i] = tuple(ids)

    observed: dict[ObservedEdge, str] = {}
    for ob in observed_edges:
        if ob in observed or ob.source not in nodes or ob.target not in nodes:
            continue
        same = [t for t in graph.transitions if t.source == ob.source and t.event == ob.event]
        if any(ob.target in t.targets for t in same):
            continue
        if ob.source == ob.target and same:  # a targetless/dynamic reaction: its own edge shows it
            continue
        eid = observed_element_id(ob, prefix)
        tail, e1 = endpoint(ob.source, sid[ob.target], as_head=False)
        head, e2 = endpoint(ob.target, sid[ob.source], as_head=True)
        dot.edge(
            tail,
            head,
            label=_label(short_event(ob.event)),
            id=eid,
            color="#1565c0",
            fontcolor="#1565c0",
            style="bold",
            **e1,
            **e2,
            **{"class": "as-edge as-observed"},
        )
        observed[ob] = eid
    return DotPlan(
        source=dot.source, states=sid, transitions=transitions, observed=observed, initials=initials
    )


def to_dot(graph: Graph, *, observed_edges: Iterable[ObservedEdge] = (), prefix: str = "as") -> str:
    """Return the DOT source of ``graph`` (pure; see the module docstring for the conventions).

    Parameters
    ----------
    graph : Graph
        The statechart structure from any engine (``machine.graph``).
    observed_edges : iterable of ObservedEdge
        Moves seen in a replayed log, drawn bold blue when no static edge covers them.
    prefix : str
        Element-id prefix.

    Returns
    -------
    str
        DOT text for ``dot -Tsvg`` (compound=true; clusters named ``cluster_<element id>``).
    """
    return plan_dot(graph, observed_edges=observed_edges, prefix=prefix).source

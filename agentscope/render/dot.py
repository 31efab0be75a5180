"""Statechart → DOT: a pure function of an engine's :class:`~agentscope.engines.base.Graph`.

Drawing conventions (one per statechart feature):

- a compound state is a cluster with rounded borders; a **parallel** state is a cluster whose
  regions (its children) are clusters with **dashed** borders;
- an atomic state is a rounded box; a **final** state has a double border (``peripheries=2``);
  a **history** state is a small circle labelled ``H`` (shallow) or ``H*`` (deep);
- each compound state's initial child gets an arrow from a point node;
- a transition is an edge labelled with its event (``always``, ``after 1000ms``,
  ``done: kb``/``error: kb`` for invoke completions) and ``[guard]``;
- the transitions of one state whose target is only known at run time (XState 6 function
  transitions, ``TransitionInfo.dynamic``) share **one** dashed edge to that state's ``?`` marker,
  labelled with their events and ``→ ?``; its targetless transitions share one dotted self-loop;
- when the root has transitions of its own (root-level ``on``), the root is drawn as a cluster so
  their edges have a declared anchor (no phantom node);
- *observed* edges, i.e. (source, target, event) moves seen in a replayed log that no static edge
  draws, are never part of the DOT (the layout depends on the machine alone): the chart draws
  them over the fixed layout, bold and blue.
- every label is a quoted DOT string drawn literally (:func:`dot_label`).

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
    "dot_label",
    "edge_label",
    "observed_element_id",
    "observed_ids",
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
    return hashlib.blake2s(text.encode("utf-8", "surrogatepass"), digest_size=4).hexdigest()


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


_SURROGATE = re.compile("[\ud800-\udfff]")


def dot_label(text: str, limit: int = _MAX_LABEL) -> str:
    """Return ``text`` as a DOT label that Graphviz draws literally, whatever it contains.

    The result is a ``graphviz.nohtml`` string, so python-graphviz writes it as a double-quoted
    DOT string (never an HTML-like ``<…>`` label): ``\\`` is doubled (no ``\\N``/``\\l``
    escapes), ``"`` is escaped by python-graphviz, ``&`` becomes ``&amp;`` (Graphviz decodes
    entities in plain labels, so ``&amp;`` shows as typed), control characters become spaces and
    lone UTF-16 surrogates (not encodable as UTF-8) become U+FFFD. DOT keywords (``node``,
    ``edge``, ``subgraph``), ``cluster_0``, ``{x|y}`` and emoji need nothing more inside quotes.
    Text longer than ``limit`` is cut and ends with ``…``.
    """
    text = _SURROGATE.sub("\ufffd", _CTRL.sub(" ", text))
    if len(text) > limit:
        text = text[: limit - 1] + "…"
    text = text.replace("\\", "\\\\").replace("&", "&amp;")
    return graphviz.nohtml(text)  # type: ignore[no-any-return]


_label = dot_label


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
        # xstate.after.<delay key>.<source id>: a key may be "PT1S", "1.5s" or a delays= name
        key = ev.removeprefix("xstate.after.").removesuffix("." + t.source)
        m = _AFTER.match(ev)
        if key != ev and key:
            text = f"after {key}ms" if key.isascii() and key.isdigit() else f"after {key}"
        else:
            text = f"after {m.group(1)}ms" if m else f"after {ev}"
    elif t.kind == "invoke.onDone":
        text = "done: " + ev.removeprefix("xstate.done.actor.")
    elif t.kind == "invoke.onError":
        text = "error: " + ev.removeprefix("xstate.error.actor.")
    elif t.kind == "onDone":
        text = "done"
    else:
        text = ev
    if t.guard and t.guard not in INLINE_GUARDS:  # an anonymous guard: on hover, not in the label
        g = t.guard if len(t.guard) <= 24 else t.guard[:23] + "…"
        text += f" [{g}]"
    if t.dynamic:
        text += " → ?"
    return text


INLINE_GUARDS = frozenset({"<inline>", "(inline)"})
"""The names engines give a guard written as an anonymous function (the Node runner, the Python
engine): not worth a label, said on hover by :func:`edge_title`."""


def edge_title(t: TransitionInfo) -> str:
    """The hover text of a transition's edge: source, event, the guard in full (an anonymous one
    as such) and the targets."""
    guard = ""
    if t.guard:
        guard = " [guard: an inline function]" if t.guard in INLINE_GUARDS else f" [guard: {t.guard}]"
    targets = ", ".join(t.targets) if t.targets else ("?" if t.dynamic else "(no target)")
    return f"{t.source}: {edge_label(t).removesuffix(' → ?')}{guard} → {targets}"


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
    collapsed: frozenset[str] = frozenset()


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


def observed_ids(graph: Graph, edges: Iterable[ObservedEdge], prefix: str = "as") -> dict[ObservedEdge, str]:
    """Return the element id of each observed move that no static edge of ``graph`` draws.

    A move along a static transition (same source and event, target among its targets) and a
    targetless/dynamic reaction of a state to itself are left out; so are unknown state ids.
    """
    by_key: dict[tuple[str, str], list[TransitionInfo]] = {}
    for t in graph.transitions:
        by_key.setdefault((t.source, t.event), []).append(t)
    observed: dict[ObservedEdge, str] = {}
    for ob in edges:
        if ob in observed or ob.source not in graph.nodes or ob.target not in graph.nodes:
            continue
        same = by_key.get((ob.source, ob.event), [])
        if any(ob.target in t.targets for t in same):
            continue
        if ob.source == ob.target and same:  # a targetless/dynamic reaction: its own edge shows it
            continue
        observed[ob] = observed_element_id(ob, prefix)
    return observed


def _shared_moves(graph: Graph, clusters: set[str]) -> dict[int, tuple[tuple[Any, ...], str, int]]:
    """Transitions that every non-final child of a cluster has alike (same event, guard, kind and
    single target outside the cluster), for clusters with at least 3 such children: index →
    (group key, the cluster, how many children)."""
    by_key: dict[tuple[Any, ...], list[int]] = {}
    for i, t in enumerate(graph.transitions):
        node = graph.nodes.get(t.source)
        if node is None or t.dynamic or len(t.targets) != 1 or node.parent not in clusters:
            continue
        if _inside(graph, t.targets[0], node.parent):
            continue
        by_key.setdefault((node.parent, t.event, t.guard, t.kind, t.targets[0]), []).append(i)
    out: dict[int, tuple[tuple[Any, ...], str, int]] = {}
    for key, idxs in by_key.items():
        parent = str(key[0])
        kids = [
            c
            for c in graph.nodes[parent].children
            if c in graph.nodes and graph.nodes[c].kind not in ("final", "history")
        ]
        sources = {graph.transitions[i].source for i in idxs}
        if len(kids) >= 3 and sources == set(kids) and len(idxs) == len(kids):
            for i in idxs:
                out[i] = (key, parent, len(kids))
    return out


def _group_key(t: TransitionInfo) -> str:
    return "dynamic" if t.dynamic else "targetless"


def plan_dot(
    graph: Graph,
    *,
    observed_edges: Iterable[ObservedEdge] = (),
    prefix: str = "as",
    collapse: Iterable[str] = (),
) -> DotPlan:
    """Build the DOT source of ``graph`` and record every element id (pure).

    The DOT depends on the machine alone (its :class:`Graph`): observed moves never change the
    layout, they are drawn over it by :mod:`agentscope.render.chart`.

    Parameters
    ----------
    graph : Graph
        Any engine's statechart structure.
    observed_edges : iterable of ObservedEdge
        Moves taken in a replayed log. Those not already drawn by a static transition (same
        source and event, target among its targets) get an element id in ``DotPlan.observed``
        (the chart draws them over the fixed layout); ids not in ``graph.nodes`` are skipped.
    prefix : str
        Prefix of every element id (``[A-Za-z0-9]``), so two charts can share one page.
    collapse : iterable of str
        Compound states drawn as one summary box (``name (N states)``): every state inside maps
        to the box's element id, and transitions between boxes are merged into one edge per pair.
    """
    if not re.fullmatch(r"[A-Za-z][A-Za-z0-9]*", prefix):
        raise ValueError(f"prefix must match [A-Za-z][A-Za-z0-9]*, got {prefix!r}")
    nodes = graph.nodes
    folded = {c for c in collapse if c in nodes and c != graph.root}

    def rep(state: str) -> str:
        """The drawn state standing for ``state`` (its outermost collapsed ancestor, or itself)."""
        out, cur = state, nodes[state].parent
        while cur is not None:
            if cur in folded:
                out = cur
            cur = nodes[cur].parent if cur in nodes else None
        return state if state in folded else out

    drawn_of = {s: rep(s) for s in nodes} if folded else {s: s for s in nodes}
    sid = {s: state_element_id(s, prefix) for s in nodes}
    root = nodes.get(graph.root)
    root_refs = any(t.source == graph.root or graph.root in t.targets for t in graph.transitions)
    root_is_cluster = root is not None and _is_cluster(root) and root_refs

    def clustered(s: str) -> bool:
        if s == graph.root:
            return root_is_cluster
        return _is_cluster(nodes[s]) and s not in folded

    anchor = {s: f"{sid[s]}_a" for s in nodes if drawn_of[s] == s and clustered(s)}
    dot = graphviz.Digraph(name=_slug(graph.machine_id) or "machine")
    dot.attr(
        compound="true",
        rankdir="TB",
        newrank="true",
        fontname="Helvetica",
        fontsize="12",
        labelloc="t",
        id=f"{prefix}_graph",
        nodesep="0.25",
        ranksep="0.3",
    )
    if not root_is_cluster:
        dot.attr(label=_label(graph.machine_id))
    dot.attr(
        "node",
        fontname="Helvetica",
        fontsize="12",
        shape="box",
        style="rounded,filled",
        fillcolor="white",
        color="#546e7a",
        height="0.3",
        margin="0.08,0.03",
    )
    dot.attr(
        "edge", fontname="Helvetica", fontsize="10", color="#78909c", fontcolor="#37474f", arrowsize="0.6"
    )
    initials: dict[str, str] = {}

    def count_inside(node_id: str) -> int:
        return sum(1 for s in nodes if s != node_id and _inside(graph, s, node_id))

    def emit(container: Any, node_id: str) -> None:
        node = nodes[node_id]
        if clustered(node_id):
            name = f"cluster_{sid[node_id]}"
            with container.subgraph(name=name) as c:
                parent = nodes.get(node.parent) if node.parent else None
                region = parent is not None and parent.kind == "parallel"
                style = "dashed,rounded" if region else "rounded"
                label = (node.key or graph.machine_id) + (" (parallel)" if node.kind == "parallel" else "")
                c.attr(
                    label=_label(label),
                    id=sid[node_id],
                    style=style,
                    color="#546e7a",
                    fontsize="12",
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
        if node_id in folded:
            n_in = count_inside(node_id)
            attrs.update(
                label=_label(f"{node.key} ({n_in:,} states)", 64),
                style="rounded,filled,dashed",
                fillcolor="#f5f5f5",
            )
            attrs["class"] += " as-collapsed"
        elif node.kind == "history":
            attrs.update(
                shape="circle",
                label="H*" if node.history == "deep" else "H",
                width="0.3",
                height="0.3",
                fixedsize="true",
                fontsize="10",
            )
        else:
            attrs["label"] = _label(node.key or graph.machine_id)
        container.node(sid[node_id], **attrs)

    def _emit_markers(container: Any, container_id: str) -> None:
        for src in markers.get(container_id, ()):
            q = f"{sid[src]}_q"
            container.node(
                q,
                label="?",
                shape="circle",
                style="dashed",
                width="0.22",
                height="0.22",
                fixedsize="true",
                fontsize="10",
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
        state = drawn_of[state]
        if state not in anchor:
            return sid[state], {}
        other_state = other_of.get(other, other)
        if other_state in nodes and _inside(graph, other_state, state):
            return anchor[state], {}
        key = "lhead" if as_head else "ltail"
        return anchor[state], {key: f"cluster_{sid[state]}"}

    # One "?" marker per source with dynamic transitions, in the cluster that holds the source;
    # each source's dynamic transitions share one edge to it, its targetless ones one self-loop.
    groups: dict[tuple[str, str], list[int]] = {}
    for i, t in enumerate(graph.transitions):
        if t.source in nodes and (t.dynamic or not t.targets):
            groups.setdefault((drawn_of[t.source], _group_key(t)), []).append(i)
    markers: dict[str, list[str]] = {}
    for src, kind in groups:
        if kind == "dynamic":
            holder = src if src in anchor else (nodes[src].parent or graph.root)
            while holder not in anchor and holder != graph.root and nodes[holder].parent is not None:
                holder = nodes[holder].parent or graph.root
            markers.setdefault(holder if holder in anchor else "", []).append(src)
    other_of = {v: k for k, v in sid.items()}
    other_of.update({v: k for k, v in anchor.items()})
    if root_is_cluster:
        emit(dot, graph.root)
    else:
        top: list[str] = list(root.children) if root is not None and _is_cluster(root) else [graph.root]
        if root is not None and _is_cluster(root) and root.initial in nodes and root.kind != "parallel":
            _emit_initial(dot, graph.root)
        for child in top:
            if child in nodes:
                emit(dot, child)
    _emit_markers(dot, "")

    transitions: dict[int, tuple[str, ...]] = {}
    for (src, kind), idxs in groups.items():
        eid = f"{sid[src]}_{'dyn' if kind == 'dynamic' else 'self'}"
        labels = list(dict.fromkeys(edge_label(graph.transitions[i]).removesuffix(" → ?") for i in idxs))
        shown = labels[:6] + ([f"+{len(labels) - 6} more"] if len(labels) > 6 else [])
        text = "\\n".join(dot_label(x, 40) for x in shown)  # DOT's centred line break
        cls = "as-edge as-" + ("dynamic" if kind == "dynamic" else "targetless")
        tail = anchor.get(src, sid[src])
        if kind == "dynamic":
            dot.edge(
                tail,
                f"{sid[src]}_q",
                label=graphviz.nohtml(text + (" → ?" if len(shown) == 1 else "\\n→ ?")),
                style="dashed",
                id=eid,
                **{"class": cls},
            )
        else:
            dot.edge(tail, tail, label=graphviz.nohtml(text), style="dotted", id=eid, **{"class": cls})
        for i in idxs:
            transitions[i] = (eid,)

    # The same move from every (non-final) child of a compound state (say FAIL → failed from each
    # step) is drawn once, from the compound's border, labelled "FAIL (from any of 8)".
    shared = _shared_moves(graph, {s for s in nodes if s in anchor})
    shared_drawn: dict[tuple[Any, ...], str] = {}
    merged: dict[tuple[str, str], tuple[str, list[str]]] = {}
    for i, t in enumerate(graph.transitions):
        if t.source not in nodes or t.dynamic or not t.targets:
            continue
        label = _label(edge_label(t))
        cls = "as-edge as-" + t.kind.replace(".", "-")
        ids: list[str] = []
        if i in shared:
            key, parent, count = shared[i]
            if key not in shared_drawn:
                eid = transition_element_id(i, 0, prefix)
                target = t.targets[0]
                tail, e1 = endpoint(parent, sid[target], as_head=False)
                head, e2 = endpoint(target, sid[parent], as_head=True)
                text = _label(f"{edge_label(t)} (from any of {count})", _MAX_LABEL + 16)
                dot.edge(tail, head, label=text, id=eid, **e1, **e2, **{"class": cls + " as-shared"})
                shared_drawn[key] = eid
            transitions[i] = (shared_drawn[key],)
            continue
        for k, target in enumerate(t.targets):
            if target not in nodes:
                continue
            a, b = drawn_of[t.source], drawn_of[target]
            if folded and (a != t.source or b != target):
                if a == b:
                    continue
                key = (a, b)
                if key not in merged:
                    merged[key] = (transition_element_id(i, k, prefix), [])
                merged[key][1].append(edge_label(t))
                ids.append(merged[key][0])
                continue
            eid = transition_element_id(i, k, prefix)
            tail, e1 = endpoint(t.source, sid[target], as_head=False)
            head, e2 = endpoint(target, sid[t.source], as_head=True)
            dot.edge(tail, head, label=label, id=eid, **e1, **e2, **{"class": cls})
            ids.append(eid)
        transitions[i] = tuple(dict.fromkeys(ids))
    for (a, b), (eid, labels) in merged.items():
        tail, e1 = endpoint(a, sid[b], as_head=False)
        head, e2 = endpoint(b, sid[a], as_head=True)
        uniq = list(dict.fromkeys(labels))
        if len(uniq) == 1:
            text = _label(uniq[0] + (f" ×{len(labels)}" if len(labels) > 1 else ""))
        else:
            text = _label(f"{len(labels)} transitions")
        dot.edge(tail, head, label=text, id=eid, **e1, **e2, **{"class": "as-edge as-merged"})

    observed = observed_ids(graph, observed_edges, prefix)
    states = {s: sid[drawn_of[s]] for s in nodes}
    return DotPlan(
        source=dot.source,
        states=states,
        transitions=transitions,
        observed=observed,
        initials=initials,
        collapsed=frozenset(folded),
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

"""Lay a statechart out once; restyle it per frame.

:func:`layout` runs a Graphviz engine exactly once per chart and keeps the SVG. :func:`frame_svg`
then only adds CSS classes (``as-active``, ``as-entered``, ``as-exited``, ``as-taken``) to the
elements whose ids :mod:`agentscope.render.dot` derived from state ids and transition indices: the
SVG geometry bytes are the same for every frame, and the cost per frame is one string join.

Engines, tried in order when none is named: the ``graphviz-pure`` binary (a wheel dependency;
looked up in this interpreter's scripts directory first, because a venv's ``bin`` is not on a
kernel's ``PATH``), then ``pygraphviz`` if importable, then a system ``dot``. With none, a warning
is issued once per process and the layout is an escaped, indented text tree of the states (its
lines carry the same element ids, so restyling works the same way).
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sysconfig
import warnings
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from agentscope.engines.base import Graph, active_state_ids
from agentscope.render._escape import esc
from agentscope.render.dot import DotPlan, ObservedEdge, edge_label, plan_dot, transition_element_id

__all__ = [
    "CHART_CSS",
    "Engine",
    "Layout",
    "LayoutError",
    "available_engines",
    "event_descriptors",
    "frame_svg",
    "layout",
    "taken_edges",
    "text_tree",
]

Engine = Literal["graphviz-pure", "pygraphviz", "dot", "text"]

CHART_CSS = """
.as-chart{overflow:auto;max-width:100%}
.as-chart svg{max-width:100%;height:auto}
.as-chart .as-active>path,.as-chart .as-active>polygon:first-of-type,
.as-chart .as-active>ellipse{fill:#fff3c4;stroke:#f9a825;stroke-width:2.5}
.as-chart g.cluster.as-active>path,.as-chart g.cluster.as-active>polygon{fill:#fffdf3}
.as-chart .as-active>text{font-weight:bold}
.as-chart .as-entered>path,.as-chart .as-entered>polygon:first-of-type,
.as-chart .as-entered>ellipse{stroke:#2e7d32;stroke-width:3}
.as-chart .as-exited>path,.as-chart .as-exited>polygon:first-of-type,
.as-chart .as-exited>ellipse{stroke:#9e9e9e;stroke-dasharray:4 2}
.as-chart .as-taken>path{stroke:#d84315;stroke-width:3}
.as-chart .as-taken>polygon{fill:#d84315;stroke:#d84315}
.as-chart .as-taken>text{fill:#d84315;font-weight:bold}
.as-tree{font:12px/1.4 monospace;margin:0}
.as-tree .as-active{background:#fff3c4;font-weight:bold}
.as-tree .as-entered{color:#2e7d32}
.as-tree .as-exited{color:#9e9e9e}
"""
"""The stylesheet of the restyling classes (scoped to ``.as-chart``); views embed it once."""


class LayoutError(RuntimeError):
    """A Graphviz engine failed on the DOT source (the message carries its stderr)."""


_warned_no_engine = False
_G_ID_CLASS = re.compile(r'<(?:g|span) id="([A-Za-z0-9_]+)" class="([^"]*)"')


def _graphviz_pure() -> str | None:
    return shutil.which("graphviz-pure", path=sysconfig.get_path("scripts")) or shutil.which("graphviz-pure")


def _has_pygraphviz() -> bool:
    try:
        import pygraphviz  # type: ignore[import-not-found,unused-ignore]  # noqa: F401
    except ImportError:
        return False
    return True


def available_engines() -> list[Engine]:
    """Return the layout engines usable here, in preference order (``"text"`` always last)."""
    out: list[Engine] = []
    if _graphviz_pure():
        out.append("graphviz-pure")
    if _has_pygraphviz():
        out.append("pygraphviz")
    if shutil.which("dot"):
        out.append("dot")
    out.append("text")
    return out


def _run_binary(binary: str, source: str) -> str:
    proc = subprocess.run(
        [binary, "-Tsvg"], input=source.encode("utf-8"), capture_output=True, timeout=60, check=False
    )
    if proc.returncode != 0 or b"<svg" not in proc.stdout:
        raise LayoutError(
            f"{binary} -Tsvg failed (exit {proc.returncode}): {proc.stderr.decode('utf-8', 'replace')[:2000]}"
        )
    return proc.stdout.decode("utf-8")


def _run_pygraphviz(source: str) -> str:
    import pygraphviz

    svg = pygraphviz.AGraph(string=source).draw(format="svg", prog="dot")
    return bytes(svg).decode("utf-8")


def _runner(engine: Engine) -> Callable[[str], str]:
    if engine == "graphviz-pure":
        binary = _graphviz_pure()
        if binary is None:
            raise LayoutError("graphviz-pure is not installed (pip install graphviz-pure)")
        found = binary
        return lambda src: _run_binary(found, src)
    if engine == "pygraphviz":
        return _run_pygraphviz
    if engine == "dot":
        binary = shutil.which("dot")
        if binary is None:
            raise LayoutError("no `dot` binary on PATH")
        return lambda src: _run_binary(binary, src)
    raise LayoutError(f"unknown layout engine {engine!r}")


def text_tree(graph: Graph, *, prefix: str = "as") -> str:
    """Return the states of ``graph`` as an escaped, indented ``<pre>`` tree (no Graphviz needed).

    One line per state, indented by depth, with its kind and outgoing transitions; each line is a
    ``<span>`` carrying the state's element id so :func:`frame_svg` can restyle it.
    """
    plan_ids = plan_dot(graph, prefix=prefix).states
    by_source: dict[str, list[str]] = {}
    for t in graph.transitions:
        tg = ", ".join(graph.nodes[x].key for x in t.targets if x in graph.nodes)
        by_source.setdefault(t.source, []).append(
            edge_label(t) if t.dynamic else f"{edge_label(t)} → {tg or '·'}"
        )
    lines: list[str] = []

    def walk(node_id: str, depth: int) -> None:
        node = graph.nodes[node_id]
        mark = {
            "final": "◎",
            "history": "H*" if node.history == "deep" else "H",
            "parallel": "∥",
            "compound": "▸",
            "atomic": "○",
            "choice": "◇",
        }[node.kind]
        name = node.key or graph.machine_id
        init = ""
        parent = graph.nodes.get(node.parent) if node.parent else None
        if parent is not None and parent.initial == node_id:
            init = " (initial)"
        trans = by_source.get(node_id, [])
        tail = ("  — " + "; ".join(trans)) if trans else ""
        lines.append(
            f'<span id="{plan_ids[node_id]}" class="as-node">{"  " * depth}{esc(mark)} '
            f"{esc(name)}{esc(init)}{esc(tail)}</span>"
        )
        for c in node.children:
            if c in graph.nodes:
                walk(c, depth + 1)

    if graph.root in graph.nodes:
        walk(graph.root, 0)
    return '<pre class="as-tree">' + "\n".join(lines) + "</pre>"


@dataclass(frozen=True)
class Layout:
    """A statechart laid out once.

    Attributes
    ----------
    graph : Graph
        The structure drawn.
    engine : str
        Which engine ran: ``"graphviz-pure"``, ``"pygraphviz"``, ``"dot"`` or ``"text"``.
    svg : str
        The drawing: an ``<svg>`` element (prolog and comments removed), or for ``"text"`` a
        ``<pre>`` tree. Never changes after layout.
    dot : str
        The DOT source laid out.
    plan : DotPlan
        Element ids by role (states, transitions, observed edges, initial arrows).
    prefix : str
        Element-id prefix.
    """

    graph: Graph
    engine: Engine
    svg: str
    dot: str
    plan: DotPlan
    prefix: str = "as"
    _slots: tuple[tuple[int, str], ...] = field(default=(), repr=False)
    _pieces: tuple[str, ...] = field(default=(), repr=False)

    @property
    def element_ids(self) -> frozenset[str]:
        """Every element id :func:`frame_svg` can restyle."""
        return frozenset(eid for _, eid in self._slots)

    def state_element(self, state_id: str) -> str:
        """Element id of ``state_id`` (``KeyError`` for an unknown state)."""
        return self.plan.states[state_id]

    def edge_elements(self, edge: ObservedEdge | int) -> tuple[str, ...]:
        """Element ids drawing ``edge``: a transition index, or an observed (source, target, event).

        An observed edge maps to the static transition(s) with that source, event and target when
        one exists, else to its own observed edge (when it was laid out), else to ``()``.
        """
        if isinstance(edge, int):
            return self.plan.transitions.get(edge, ())
        out: list[str] = []
        for i, t in enumerate(self.graph.transitions):
            if t.source != edge.source or t.event != edge.event:
                continue
            ids = self.plan.transitions.get(i, ())
            if edge.target in t.targets:
                want = transition_element_id(i, t.targets.index(edge.target), self.prefix)
                out.extend(x for x in ids if x == want)
            elif t.dynamic:
                out.extend(ids)
        if edge in self.plan.observed:
            out.append(self.plan.observed[edge])
        return tuple(dict.fromkeys(x for x in out if x))

    def with_prefix(self, prefix: str) -> Layout:
        """Return the same drawing with element ids under another prefix (no re-layout)."""
        if prefix == self.prefix:
            return self
        if not re.fullmatch(r"[A-Za-z][A-Za-z0-9]*", prefix):
            raise ValueError(f"prefix must match [A-Za-z][A-Za-z0-9]*, got {prefix!r}")
        old = self.prefix + "_"
        pat = re.compile(r'(id="|cluster_)' + re.escape(old))
        svg = pat.sub(lambda m: m.group(1) + prefix + "_", self.svg)
        plan = plan_dot(self.graph, observed_edges=tuple(self.plan.observed), prefix=prefix)
        return _assemble(self.graph, self.engine, svg, plan.source, plan, prefix)

    def __repr__(self) -> str:
        return (
            f"Layout({self.graph.machine_id!r}, engine={self.engine!r}, states={len(self.plan.states)}, "
            f"svg={len(self.svg)} chars)"
        )


def _strip_svg(svg: str) -> str:
    start = svg.find("<svg")
    svg = svg[start:] if start >= 0 else svg
    return re.sub(r"<!--.*?-->\n?", "", svg, flags=re.S).rstrip()


def _assemble(graph: Graph, engine: Engine, svg: str, dot: str, plan: DotPlan, prefix: str) -> Layout:
    known: set[str] = set(plan.states.values()) | set(plan.observed.values()) | set(plan.initials.values())
    for ids in plan.transitions.values():
        known.update(ids)
    slots: list[tuple[int, str]] = []
    for m in _G_ID_CLASS.finditer(svg):
        if m.group(1) in known:
            slots.append((m.end(2), m.group(1)))
    pieces: list[str] = []
    last = 0
    for pos, _ in slots:
        pieces.append(svg[last:pos])
        last = pos
    pieces.append(svg[last:])
    return Layout(
        graph=graph,
        engine=engine,
        svg=svg,
        dot=dot,
        plan=plan,
        prefix=prefix,
        _slots=tuple(slots),
        _pieces=tuple(pieces),
    )


def layout(
    graph: Graph,
    *,
    observed_edges: Iterable[ObservedEdge] = (),
    engine: Engine | None = None,
    prefix: str = "as",
) -> Layout:
    """Lay ``graph`` out once and return the :class:`Layout` that frames restyle.

    Parameters
    ----------
    graph : Graph
        Any engine's ``machine.graph``.
    observed_edges : iterable of ObservedEdge
        Moves seen in a replayed log, drawn in the observed style (see :func:`taken_edges`).
    engine : {"graphviz-pure", "pygraphviz", "dot", "text"}, optional
        Force an engine. By default the first of :func:`available_engines`; an engine that fails
        falls through to the next one with a warning.
    prefix : str
        Element-id prefix.

    Raises
    ------
    LayoutError
        When the forced ``engine`` is unavailable or fails.
    """
    global _warned_no_engine
    plan = plan_dot(graph, observed_edges=observed_edges, prefix=prefix)
    chain: list[Engine] = [engine] if engine is not None else available_engines()
    for name in chain:
        if name == "text":
            if engine is None and not _warned_no_engine:
                _warned_no_engine = True
                warnings.warn(
                    "agentscope: no Graphviz engine found (graphviz-pure, pygraphviz or a system `dot`); "
                    "statecharts are shown as text trees. `pip install graphviz-pure` fixes this.",
                    RuntimeWarning,
                    stacklevel=2,
                )
            return _assemble(graph, "text", text_tree(graph, prefix=prefix), plan.source, plan, prefix)
        try:
            svg = _runner(name)(plan.source)
        except (LayoutError, OSError, subprocess.SubprocessError) as exc:
            if engine is not None:
                raise LayoutError(str(exc)) from exc
            warnings.warn(
                f"agentscope: layout engine {name} failed, trying the next: {exc}",
                RuntimeWarning,
                stacklevel=2,
            )
            continue
        return _assemble(graph, name, _strip_svg(svg), plan.source, plan, prefix)
    raise LayoutError("no layout engine succeeded")  # pragma: no cover - "text" always succeeds


def event_descriptors(event: Mapping[str, Any] | str) -> tuple[str, ...]:
    """Return the transition descriptors an event can match, most specific first.

    A journaled completion ``{"type": "xstate.done.actor", "actorId": "kb"}`` is handled by the
    descriptor ``xstate.done.actor.kb`` (likewise ``xstate.error.actor.<id>``); a timer firing
    ``{"type": "xstate.timer", "id": "xstate.after.1000.m.wait"}`` by its timer id (spec §1.5).
    """
    if isinstance(event, str):
        return (event,)
    etype = str(event.get("type", ""))
    out = []
    actor = event.get("actorId")
    if etype in ("xstate.done.actor", "xstate.error.actor") and isinstance(actor, str):
        out.append(f"{etype}.{actor}")
    tid = event.get("id")
    if etype == "xstate.timer" and isinstance(tid, str):
        out.append(tid)
    out.append(etype)
    return tuple(out)


def _matches(descriptor: str, names: tuple[str, ...]) -> bool:
    if descriptor == "*":
        return True
    if descriptor.endswith(".*"):
        stem = descriptor[:-1]
        return any(n.startswith(stem) for n in names)
    return descriptor in names


def taken_edges(
    graph: Graph, before: Collection[str], after: Collection[str], event: Mapping[str, Any] | str
) -> list[ObservedEdge]:
    """Infer which moves ``event`` made between two sets of active state ids (pure).

    A move is (source, target, descriptor): the source is the deepest state active before with a
    transition matching the event (:func:`event_descriptors`; wildcards ``*`` and ``x.*``
    included), the target each outermost state entered, and the descriptor that transition's
    event, so a move along a drawn edge maps back to it. With no state entered, a matching
    transition that targets an active state (a re-entry) or is dynamic/targetless gives a move
    from its source to its own target (or itself). Eventless (``always``) steps that follow the
    event are attributed to it when no handler of the event explains an entered state.
    """
    names = event_descriptors(event)
    before_s, after_s = set(before), set(after)
    entered = after_s - before_s
    depth = {s: len(graph.nodes[s].path) for s in graph.nodes}
    handlers = [t for t in graph.transitions if t.event and t.source in before_s and _matches(t.event, names)]
    if not entered:
        out = []
        for t in handlers:
            tgt = next((x for x in t.targets if x in after_s), None)
            if tgt is not None or t.dynamic or not t.targets:
                out.append(ObservedEdge(source=t.source, target=tgt or t.source, event=t.event))
        return out[:1]
    top_entered = [s for s in entered if s in graph.nodes and graph.nodes[s].parent not in entered]
    always = [t for t in graph.transitions if t.event == "" and t.source in before_s]
    out = []
    for target in sorted(top_entered, key=lambda s: depth.get(s, 0)):
        direct = [t for t in handlers if target in t.targets]
        pool = (
            direct
            or [t for t in handlers if t.dynamic]
            or handlers
            or [t for t in always if target in t.targets]
        )
        if not pool:
            continue
        best = max(pool, key=lambda t: depth.get(t.source, 0))
        out.append(ObservedEdge(source=best.source, target=target, event=best.event))
    return out


def frame_svg(
    layout: Layout,
    frame_or_active_ids: Any,
    *,
    taken_edge: ObservedEdge | int | Iterable[ObservedEdge | int] | None = None,
    entered: Iterable[str] = (),
    exited: Iterable[str] = (),
    scope_class: str = "",
) -> str:
    """Return the laid-out chart with this frame's classes applied (no re-layout).

    Parameters
    ----------
    layout : Layout
        From :func:`layout`.
    frame_or_active_ids : Frame | Mapping | str | Collection[str]
        A :class:`~agentscope.frames.Frame` (its ``value``), a state value (string or nested
        dict), or the active state ids themselves.
    taken_edge : ObservedEdge | int | iterable of those, optional
        The move(s) of this step, classed ``as-taken``.
    entered, exited : iterable of str
        State ids entered / exited by this step (classes ``as-entered`` / ``as-exited``).
    scope_class : str
        Extra class on the wrapping ``<div class="as-chart">``.

    Returns
    -------
    str
        ``<div class="as-chart">`` + the SVG (or text tree) with ``class`` attributes extended.
        Removing the added classes gives back ``layout.svg`` byte for byte.
    """
    active = _active_ids(layout.graph, frame_or_active_ids)
    classes: dict[str, list[str]] = {}
    for cls, state_ids in (("as-active", active), ("as-entered", entered), ("as-exited", exited)):
        for s in state_ids:
            eid = layout.plan.states.get(s)
            if eid is not None:
                classes.setdefault(eid, []).append(cls)
    if taken_edge is not None:
        edges = [taken_edge] if isinstance(taken_edge, ObservedEdge | int) else list(taken_edge)
        for e in edges:
            for eid in layout.edge_elements(e):
                classes.setdefault(eid, []).append("as-taken")
    return f'<div class="as-chart {esc(scope_class)}">' + apply_classes(layout, classes) + "</div>"


def apply_classes(layout: Layout, classes: Mapping[str, list[str]]) -> str:
    """Return ``layout.svg`` with `` cls…`` appended to the class attribute of each element id."""
    if not classes:
        return layout.svg
    out: list[str] = []
    for piece, (_, eid) in zip(layout._pieces, layout._slots, strict=False):
        out.append(piece)
        extra = classes.get(eid)
        if extra:
            out.append(" " + " ".join(extra))
    out.append(layout._pieces[-1])
    return "".join(out)


def _active_ids(graph: Graph, x: Any) -> set[str]:
    from agentscope.frames import Frame

    if isinstance(x, Frame):
        return active_state_ids(graph, x.value) if x.persisted is not None else set()
    if x is None:
        return set()
    if isinstance(x, str | Mapping):
        return active_state_ids(graph, x)
    return {str(s) for s in x}

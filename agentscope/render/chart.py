"""Lay a statechart out once; restyle it per frame.

:func:`layout` runs a Graphviz engine exactly once per chart and keeps the SVG. :func:`frame_svg`
then only adds CSS classes (``as-active``, ``as-entered``, ``as-exited``, ``as-taken``) to the
elements whose ids :mod:`agentscope.render.dot` derived from state ids and transition indices: the
SVG geometry bytes are the same for every frame, and the cost per frame is one string join.

The layout is a function of the machine alone (its :class:`~agentscope.engines.base.Graph`) and is
cached per machine structure, so two views of one machine draw the same node positions and
``to_html`` reuses the widget's layout. Moves seen in a log that no static edge draws (the targets
of function transitions) are an overlay appended to that drawing (:meth:`Layout.with_observed`).
A layout gets :data:`LAYOUT_BUDGET_S` seconds in total; a chart that does not lay out in time is
drawn with its compound states summarised as boxes (:attr:`Layout.note` says so, the active path
is listed above it, and a box opens on click into a chart of its own: :func:`expansion` lays out
that box's subtree once per machine, the transitions crossing its border summarised).

:func:`frame_classes` / :func:`frame_styling` give one frame as the element ids to class, for a
front end that holds the drawing already (the widgets send that instead of the SVG).

Engines, tried in order when none is named: the ``graphviz-pure`` binary (a wheel dependency;
looked up in this interpreter's scripts directory first, because a venv's ``bin`` is not on a
kernel's ``PATH``), then ``pygraphviz`` if importable, then a system ``dot``. With none, a warning
is issued once per process and the layout is an escaped, indented text tree of the states (its
lines carry the same element ids, so restyling works the same way).
"""

from __future__ import annotations

import hashlib
import re
import shutil
import subprocess
import sysconfig
import time
import warnings
from collections import OrderedDict
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from agentscope.engines.base import Graph, active_state_ids
from agentscope.render._escape import esc
from agentscope.render.dot import (
    DotPlan,
    ObservedEdge,
    _inside,
    edge_label,
    edge_title,
    observed_ids,
    plan_dot,
    short_event,
    state_element_id,
    transition_element_id,
)

__all__ = [
    "CHART_CSS",
    "EXPAND_BUDGET_S",
    "EXPAND_MAX_STATES",
    "LAYOUT_BUDGET_S",
    "Engine",
    "Layout",
    "LayoutError",
    "active_path_lines",
    "available_engines",
    "event_descriptors",
    "expand_html",
    "expansion",
    "frame_classes",
    "frame_styling",
    "frame_svg",
    "layout",
    "legend_html",
    "moves_from_taken",
    "subgraph",
    "taken_edges",
    "text_tree",
]

Engine = Literal["graphviz-pure", "pygraphviz", "dot", "text"]

CHART_CSS = """
.as-chart{overflow:auto;max-width:100%}
.as-chart svg{max-width:100%;height:auto}
.as-chart.as-zoomed svg{max-width:none}
.as-zoom{font-size:11px;margin:2px 0;cursor:pointer}
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
.as-chart .as-active-b>path,.as-chart .as-active-b>polygon:first-of-type,
.as-chart .as-active-b>ellipse{fill:#e3f2fd;stroke:#1565c0;stroke-width:2.5}
.as-chart g.cluster.as-active-b>path,.as-chart g.cluster.as-active-b>polygon{fill:#f5faff}
.as-chart .as-active.as-active-b>path,.as-chart .as-active.as-active-b>polygon:first-of-type,
.as-chart .as-active.as-active-b>ellipse{fill:#e8f5e9;stroke:#00897b;stroke-width:2.5}
.as-chart g.cluster.as-active.as-active-b>path,.as-chart g.cluster.as-active.as-active-b>polygon{fill:#f6fbf6}
.as-chart .as-active-b>text{font-weight:bold}
.as-chart .as-observed{opacity:.55}
.as-chart .as-observed>path{stroke:#1565c0;stroke-width:1.3}
.as-chart .as-observed>polygon{fill:#1565c0;stroke:#1565c0}
.as-chart .as-observed>text{display:none}
.as-chart .as-observed:hover{opacity:1}
.as-chart .as-observed:hover>text,.as-chart .as-observed.as-taken>text,
.as-chart .as-observed.as-taken-b>text{display:inline}
.as-chart .as-observed.as-taken,.as-chart .as-observed.as-taken-b{opacity:1}
.as-chart .as-observed.as-taken>path{stroke:#d84315;stroke-width:3}
.as-chart .as-observed.as-taken>polygon{fill:#d84315;stroke:#d84315}
.as-chart .as-observed.as-taken>text{fill:#d84315;font-weight:bold}
.as-chart .as-taken-b>path{stroke:#1565c0;stroke-width:3}
.as-chart .as-taken-b>polygon{fill:#1565c0;stroke:#1565c0}
.as-chart .as-taken-b>text{fill:#1565c0;font-weight:bold}
.as-chart-note{margin:2px 0}
.as-active-path{font:12px monospace;margin:2px 0}
.as-legend{display:flex;flex-wrap:wrap;gap:4px 12px;font-size:11px;color:#455a64;margin:2px 0 4px}
.as-legend span{display:inline-flex;align-items:center;gap:4px;white-space:nowrap}
.as-legend svg{flex:0 0 auto}
.as-tree{font:12px/1.4 monospace;margin:0}
.as-tree .as-active{background:#fff3c4;font-weight:bold}
.as-tree .as-active-b{background:#e3f2fd;font-weight:bold}
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


LAYOUT_BUDGET_S = 10.0
"""Seconds a chart's layout may take in total; past it the chart is drawn collapsed."""


class LayoutTimeout(LayoutError):
    """The layout engine did not finish within the time budget."""


def _run_binary(binary: str, source: str, timeout: float = LAYOUT_BUDGET_S) -> str:
    try:
        proc = subprocess.run(
            [binary, "-Tsvg"],
            input=source.encode("utf-8"),
            capture_output=True,
            timeout=max(timeout, 0.1),
            check=False,
        )
    except subprocess.TimeoutExpired as exc:
        raise LayoutTimeout(f"{binary} -Tsvg did not finish within {timeout:.1f} s") from exc
    if proc.returncode != 0 or b"<svg" not in proc.stdout:
        raise LayoutError(
            f"{binary} -Tsvg failed (exit {proc.returncode}): {proc.stderr.decode('utf-8', 'replace')[:2000]}"
        )
    return proc.stdout.decode("utf-8")


def _run_pygraphviz(source: str) -> str:
    import pygraphviz

    svg = pygraphviz.AGraph(string=source).draw(format="svg", prog="dot")
    return bytes(svg).decode("utf-8")


def _runner(engine: Engine) -> Callable[[str, float], str]:
    if engine == "graphviz-pure":
        binary = _graphviz_pure()
        if binary is None:
            raise LayoutError("graphviz-pure is not installed (pip install graphviz-pure)")
        found = binary
        return lambda src, t: _run_binary(found, src, t)
    if engine == "pygraphviz":
        return lambda src, t: _run_pygraphviz(src)
    if engine == "dot":
        binary = shutil.which("dot")
        if binary is None:
            raise LayoutError("no `dot` binary on PATH")
        return lambda src, t: _run_binary(binary, src, t)
    raise LayoutError(f"unknown layout engine {engine!r}")


def text_tree(graph: Graph, *, prefix: str = "as") -> str:
    """Return the states of ``graph`` as an escaped, indented ``<pre>`` tree (no Graphviz needed).

    One line per state, indented by depth, with its kind and outgoing transitions; each line is a
    ``<span>`` carrying the state's element id so :func:`frame_svg` can restyle it.
    """
    plan_ids = {sid: state_element_id(sid, prefix) for sid in graph.nodes}
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
    """A statechart laid out once (from the machine alone; see :func:`layout`).

    Attributes
    ----------
    graph : Graph
        The structure drawn.
    engine : str
        Which engine ran: ``"graphviz-pure"``, ``"pygraphviz"``, ``"dot"`` or ``"text"``.
    svg : str
        The drawing: an ``<svg>`` element (prolog and comments removed), or for ``"text"`` a
        ``<pre>`` tree. Never changes after layout; observed moves are drawn in an overlay group
        appended to it (:meth:`with_observed`), which does not move any node.
    dot : str
        The DOT source laid out.
    plan : DotPlan
        Element ids by role (states, transitions, observed edges, initial arrows).
    prefix : str
        Element-id prefix.
    note : str or None
        Why the chart is not the full drawing (collapsed after the time budget, or text), shown
        above it by :func:`frame_svg`.
    seconds : float
        Wall time of the engine run (0 when the layout came from the cache).
    """

    graph: Graph
    engine: Engine
    svg: str
    dot: str
    plan: DotPlan
    prefix: str = "as"
    note: str | None = None
    seconds: float = 0.0
    _slots: tuple[tuple[int, str], ...] = field(default=(), repr=False)
    _pieces: tuple[str, ...] = field(default=(), repr=False)

    @property
    def element_ids(self) -> frozenset[str]:
        """Every element id :func:`frame_svg` can restyle."""
        return frozenset(eid for _, eid in self._slots)

    @property
    def collapsed(self) -> frozenset[str]:
        """Compound states drawn as one summary box (empty for a full drawing)."""
        return self.plan.collapsed

    def state_element(self, state_id: str) -> str:
        """Element id of ``state_id`` (``KeyError`` for an unknown state)."""
        return self.plan.states[state_id]

    def edge_elements(self, edge: ObservedEdge | int) -> tuple[str, ...]:
        """Element ids drawing ``edge``: a transition index, or an observed (source, target, event).

        Exactly the edge that fired: the static transition with that source, event and target
        when one exists; else the move's own observed edge when it is drawn; else the source's
        dynamic (``→ ?``) or targetless edge for that event; else ``()``.
        """
        if isinstance(edge, int):
            return self.plan.transitions.get(edge, ())
        fallback: list[str] = []
        for i, t in enumerate(self.graph.transitions):
            if t.source != edge.source or t.event != edge.event:
                continue
            ids = self.plan.transitions.get(i, ())
            if edge.target in t.targets:
                want = transition_element_id(i, t.targets.index(edge.target), self.prefix)
                hit = [x for x in ids if x == want] or list(ids[:1])
                if hit:
                    return tuple(hit)
            elif t.dynamic or not t.targets:
                fallback.extend(ids)
        if edge in self.plan.observed:
            return (self.plan.observed[edge],)
        return tuple(dict.fromkeys(fallback))[:1]

    def with_observed(self, edges: Iterable[ObservedEdge]) -> Layout:
        """Return this drawing plus the observed moves no static edge draws, in an overlay.

        Node and cluster geometry stay byte-identical: each observed edge is a curved path from
        the source's box to the target's box, appended to the SVG (class ``as-observed``; drawn
        faint, its label shown when it is the step's taken edge or on hover).
        """
        obs = dict(self.plan.observed)
        obs.update(observed_ids(self.graph, edges, self.prefix))
        new = {e: i for e, i in obs.items() if e not in self.plan.observed}
        if not new:
            return self
        plan = replace(self.plan, observed=obs)
        svg = self.svg
        if self.engine != "text":
            svg = _add_overlay(svg, plan, new)
        return _assemble(self.graph, self.engine, svg, self.dot, plan, self.prefix, self.note, self.seconds)

    def with_prefix(self, prefix: str) -> Layout:
        """Return the same drawing with element ids under another prefix (no re-layout)."""
        if prefix == self.prefix:
            return self
        if not re.fullmatch(r"[A-Za-z][A-Za-z0-9]*", prefix):
            raise ValueError(f"prefix must match [A-Za-z][A-Za-z0-9]*, got {prefix!r}")
        old = self.prefix + "_"
        pat = re.compile(r'(id="|cluster_)' + re.escape(old))
        svg = pat.sub(lambda m: m.group(1) + prefix + "_", self.svg)
        plan = plan_dot(
            self.graph, observed_edges=tuple(self.plan.observed), prefix=prefix, collapse=self.plan.collapsed
        )
        return _assemble(self.graph, self.engine, svg, plan.source, plan, prefix, self.note, self.seconds)

    def __repr__(self) -> str:
        return (
            f"Layout({self.graph.machine_id!r}, engine={self.engine!r}, states={len(self.plan.states)}, "
            f"svg={len(self.svg)} chars{', collapsed' if self.collapsed else ''})"
        )


def _strip_svg(svg: str) -> str:
    start = svg.find("<svg")
    svg = svg[start:] if start >= 0 else svg
    return re.sub(r"<!--.*?-->\n?", "", svg, flags=re.S).rstrip()


_NUM = re.compile(r"-?\d+(?:\.\d+)?")
_GROUP = re.compile(r'<g id="([A-Za-z0-9_]+)" class="(node|cluster)[^"]*">(.*?)</g>', re.S)
_SHAPE = re.compile(
    r"<(?:path|polygon|ellipse)\b[^>]*?"
    r'(?: d="([^"]*)"| points="([^"]*)"| cx="([-\d.]+)" cy="([-\d.]+)" rx="([-\d.]+)" ry="([-\d.]+)")'
)
_TEXT = re.compile(
    r'(<text\b[^>]*?text-anchor="(\w+)" x=")([-\d.]+)(" y=")([-\d.]+)'
    r'("[^>]*?font-size="([\d.]+)"[^>]*>)([^<]*)(</text>)'
)
_MIN_SCALE = 0.72  # 12 pt labels stay >= 11 px and 10 pt edge labels >= 9 px on screen


def geometry(svg: str) -> dict[str, tuple[float, float, float, float]]:
    """Return the bounding box ``(x0, y0, x1, y1)`` (SVG user units) of every node and cluster id."""
    out: dict[str, tuple[float, float, float, float]] = {}
    for m in _GROUP.finditer(svg):
        sh = _SHAPE.search(m.group(3))
        if sh is None:
            continue
        if sh.group(3) is not None:
            cx, cy, rx, ry = (float(sh.group(k)) for k in (3, 4, 5, 6))
            out[m.group(1)] = (cx - rx, cy - ry, cx + rx, cy + ry)
            continue
        nums = [float(x) for x in _NUM.findall(sh.group(1) or sh.group(2) or "")]
        xs, ys = nums[0::2], nums[1::2]
        if xs and ys:
            out[m.group(1)] = (min(xs), min(ys), max(xs), max(ys))
    return out


def _clip(box: tuple[float, float, float, float], x: float, y: float) -> tuple[float, float]:
    """Point where the segment from the box centre towards (x, y) leaves the box."""
    cx, cy = (box[0] + box[2]) / 2, (box[1] + box[3]) / 2
    dx, dy = x - cx, y - cy
    if dx == 0 and dy == 0:
        return cx, cy
    hw, hh = (box[2] - box[0]) / 2, (box[3] - box[1]) / 2
    t = min(hw / abs(dx) if dx else 1e9, hh / abs(dy) if dy else 1e9)
    return cx + dx * t, cy + dy * t


def _overlaps(b: Sequence[float], boxes: Iterable[Sequence[float]]) -> bool:
    return any(b[0] < o[2] and o[0] < b[2] and b[1] < o[3] and o[1] < b[3] for o in boxes)


def _free_spot(
    boxes: list[list[float]], chars: int, spots: Sequence[tuple[float, float]], fs: float = 10.0
) -> tuple[float, float]:
    """The first of ``spots`` where a centred label of ``chars`` characters overlaps no text box
    (else the first); the chosen box is added to ``boxes``."""
    w = chars * fs * 0.56
    for x, y in spots:
        box = [x - w / 2, y - fs * 0.85, x + w / 2, y + fs * 0.2]
        if not _overlaps(box, boxes):
            boxes.append(box)
            return x, y
    x, y = spots[0]
    boxes.append([x - w / 2, y - fs * 0.85, x + w / 2, y + fs * 0.2])
    return x, y


def _text_boxes(svg: str) -> tuple[list[list[float]], list[re.Match[str]]]:
    """Estimated boxes ``[x0, y0, x1, y1]`` of every ``<text>`` (and the matches, in order)."""
    import html as _html

    boxes: list[list[float]] = []
    matches = list(_TEXT.finditer(svg))
    for m in matches:
        x, y, fs = float(m.group(3)), float(m.group(5)), float(m.group(7))
        w = len(_html.unescape(m.group(8))) * fs * 0.56
        anchor = m.group(2)
        x0 = x - w / 2 if anchor == "middle" else (x if anchor == "start" else x - w)
        boxes.append([x0, y - fs * 0.85, x0 + w, y + fs * 0.2])
    return boxes, matches


def _add_overlay(svg: str, plan: DotPlan, new: Mapping[ObservedEdge, str]) -> str:
    """Append observed edges as curved paths between the drawn boxes (no node moves)."""
    geo = geometry(svg)
    taken_boxes = [b[:4] for b in _text_boxes(svg)[0]]
    parts: list[str] = []
    for k, (ob, eid) in enumerate(new.items()):
        a, b = geo.get(plan.states.get(ob.source, "")), geo.get(plan.states.get(ob.target, ""))
        if a is None or b is None:
            continue
        acx, acy = (a[0] + a[2]) / 2, (a[1] + a[3]) / 2
        bcx, bcy = (b[0] + b[2]) / 2, (b[1] + b[3]) / 2
        if a == b:  # a move into a state inside a collapsed box, or a self-reaction
            x0, y0 = a[2], acy - 4
            d = (
                f"M{x0:.1f},{y0:.1f}C{x0 + 26:.1f},{y0 - 18:.1f} "
                f"{x0 + 26:.1f},{y0 + 26:.1f} {x0 + 2:.1f},{y0 + 9:.1f}"
            )
            tip, base = (x0 + 2, y0 + 9), (x0 + 12, y0 + 15)
            lx, ly = x0 + 28, y0 + 6
        else:
            sx, sy = _clip(a, bcx, bcy)
            tx, ty = _clip(b, acx, acy)
            mx, my = (sx + tx) / 2, (sy + ty) / 2
            dx, dy = tx - sx, ty - sy
            ln = max((dx * dx + dy * dy) ** 0.5, 1e-6)
            bend = min(40.0, 0.18 * ln) * (1 if k % 2 == 0 else -1)
            qx, qy = mx - dy / ln * bend, my + dx / ln * bend
            d = f"M{sx:.1f},{sy:.1f}Q{qx:.1f},{qy:.1f} {tx:.1f},{ty:.1f}"
            tip, base = (tx, ty), (qx, qy)
            lx, ly = _free_spot(
                taken_boxes,
                len(short_event(ob.event)),
                [
                    (
                        (1 - t) ** 2 * sx + 2 * (1 - t) * t * qx + t * t * tx + dx0,
                        (1 - t) ** 2 * sy + 2 * (1 - t) * t * qy + t * t * ty + dy0,
                    )
                    for t in (0.5, 0.4, 0.6, 0.3, 0.7, 0.2, 0.8, 0.1, 0.9)
                    for dx0, dy0 in ((0, 0), (0, -11), (0, 11), (0, -22), (0, 22), (-30, 0), (30, 0))
                ],
            )
        ux, uy = tip[0] - base[0], tip[1] - base[1]
        ul = max((ux * ux + uy * uy) ** 0.5, 1e-6)
        ux, uy = ux / ul, uy / ul
        p1 = (tip[0] - 7 * ux - 3 * uy, tip[1] - 7 * uy + 3 * ux)
        p2 = (tip[0] - 7 * ux + 3 * uy, tip[1] - 7 * uy - 3 * ux)
        label = esc(short_event(ob.event))
        parts.append(
            f'<g id="{eid}" class="edge as-edge as-observed"><title>{label}</title>'
            f'<path fill="none" stroke="#1565c0" stroke-width="1.6" d="{d}"/>'
            f'<polygon fill="#1565c0" stroke="#1565c0" points="{tip[0]:.1f},{tip[1]:.1f} '
            f'{p1[0]:.1f},{p1[1]:.1f} {p2[0]:.1f},{p2[1]:.1f}"/>'
            f'<text text-anchor="middle" x="{lx:.1f}" y="{ly:.1f}" font-family="Helvetica,sans-Serif" '
            f'font-size="10.00" fill="#1565c0" paint-order="stroke" stroke="white" stroke-width="3">'
            f"{label}</text></g>"
        )
    if not parts:
        return svg
    cut = svg.rfind("</g>")
    overlay = '<g class="as-overlay">' + "".join(parts) + "</g>\n"
    return svg[:cut] + overlay + svg[cut:]


def _declutter(svg: str) -> str:
    """Move edge labels that overlap another text down (then up) until they do not (once)."""
    import bisect

    boxes, matches = _text_boxes(svg)
    edge_starts = {m.start() for m in re.finditer(r'<g id="[^"]*" class="edge', svg)}
    group_starts = [m.start() for m in re.finditer(r"<g id=", svg)]
    in_edge: list[bool] = []
    for m in matches:
        g = bisect.bisect_right(group_starts, m.start()) - 1
        in_edge.append(g >= 0 and group_starts[g] in edge_starts)
    moved: dict[int, float] = {}

    def hits(i: int) -> bool:
        return _overlaps(boxes[i], (b for j, b in enumerate(boxes) if j != i))

    for i, m in enumerate(matches):
        if not in_edge[i] or not hits(i):
            continue
        fs = float(m.group(7))
        orig = list(boxes[i])
        for dy in (fs * 1.1, -fs * 1.1, fs * 2.2, -fs * 2.2):
            boxes[i] = [orig[0], orig[1] + dy, orig[2], orig[3] + dy]
            if not hits(i):
                moved[i] = dy
                break
        else:
            boxes[i] = orig
    if not moved:
        return svg
    out: list[str] = []
    last = 0
    for i, m in enumerate(matches):
        if i not in moved:
            continue
        out.append(svg[last : m.start()])
        y = float(m.group(5)) + moved[i]
        out.append(m.group(1) + m.group(3) + m.group(4) + f"{y:.2f}" + m.group(6) + m.group(8) + m.group(9))
        last = m.end()
    out.append(svg[last:])
    return "".join(out)


_SVG_W = re.compile(r'<svg width="([\d.]+)pt"')


def _edge_titles(svg: str, graph: Graph, plan: DotPlan) -> str:
    """Each edge's ``<title>`` (its hover text) says what it draws (:func:`edge_title`: the guard
    in full, an anonymous one as such) instead of Graphviz's ``a->b``."""
    titles: dict[str, list[str]] = {}
    for i, eids in plan.transitions.items():
        for eid in eids:
            titles.setdefault(eid, []).append(edge_title(graph.transitions[i]))

    def sub(m: re.Match[str]) -> str:
        got = titles.get(m.group(2))
        if not got:
            return m.group(0)
        text = "\n".join(dict.fromkeys(got[:8])) + (f"\n+{len(got) - 8} more" if len(got) > 8 else "")
        return f"{m.group(1)}{esc(text)}</title>"

    return re.sub(r'(<g id="([A-Za-z0-9_]+)" class="edge[^"]*">\s*<title>)[^<]*</title>', sub, svg)


def _min_width(svg: str) -> str:
    """Give the ``<svg>`` its readable width, ``data-readable-width`` (px): the chart fits its
    container by default (scaled down, CSS ``max-width:100%``); the zoom control of
    ``render/frame.js`` shows it at this width (labels >= 9 px) and the container pans."""
    m = _SVG_W.match(svg)
    if m is None:
        return svg
    px = float(m.group(1)) * 4 / 3 * _MIN_SCALE
    return svg[: m.end()] + f' data-readable-width="{px:.0f}"' + svg[m.end() :]


def _assemble(
    graph: Graph,
    engine: Engine,
    svg: str,
    dot: str,
    plan: DotPlan,
    prefix: str,
    note: str | None = None,
    seconds: float = 0.0,
) -> Layout:
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
        note=note,
        seconds=seconds,
        _slots=tuple(slots),
        _pieces=tuple(pieces),
    )


_CACHE: OrderedDict[tuple[str, str, float], Layout] = OrderedDict()
_CACHE_SIZE = 32


def _drawn(graph: Graph, folded: Iterable[str]) -> int:
    """How many states a drawing with the compound states ``folded`` summarised shows."""
    boxes = set(folded)
    out = 0
    for n in graph.nodes.values():
        cur = n.parent
        while cur is not None and cur not in boxes:
            cur = graph.nodes[cur].parent if cur in graph.nodes else None
        out += cur is None
    return out


def _collapse_set(graph: Graph, depth: int) -> set[str]:
    """Compound states at ``depth`` (root = 0) that contain other states."""
    return {
        s
        for s, n in graph.nodes.items()
        if len(n.path) == depth and n.kind in ("compound", "parallel") and n.children
    }


def layout(
    graph: Graph,
    *,
    observed_edges: Iterable[ObservedEdge] = (),
    engine: Engine | None = None,
    prefix: str = "as",
    budget: float = LAYOUT_BUDGET_S,
) -> Layout:
    """Lay ``graph`` out once (cached per machine structure) and return the :class:`Layout`.

    The layout depends on the machine alone: the same graph gives the same drawing (node
    positions byte for byte) whatever log is shown. ``observed_edges`` are drawn over it
    (:meth:`Layout.with_observed`).

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
    budget : float
        Seconds the whole layout may take (default :data:`LAYOUT_BUDGET_S`). When the full
        drawing does not finish in time, compound states are drawn as summary boxes (one level,
        then the top level) and :attr:`Layout.note` says so; as a last resort a text tree.

    Raises
    ------
    LayoutError
        When the forced ``engine`` is unavailable or fails.
    """
    # how to draw is decided by the chart's size, never by how fast this machine lays it out: a
    # chart of more than EXPAND_MAX_STATES states is drawn collapsed on every machine
    base = _base_layout(graph, engine, prefix, budget, skip_full=len(graph.nodes) > EXPAND_MAX_STATES)
    return base.with_observed(observed_edges)


def _base_layout(
    graph: Graph, engine: Engine | None, prefix: str, budget: float, *, skip_full: bool = False
) -> Layout:
    global _warned_no_engine
    plan = plan_dot(graph, prefix=prefix)
    digest = hashlib.blake2b(plan.source.encode("utf-8", "replace"), digest_size=16).hexdigest()
    chain: list[Engine] = [engine] if engine is not None else available_engines()
    key = (digest, ",".join(chain), budget if not skip_full else -budget)
    hit = _CACHE.get(key)
    if hit is not None:
        _CACHE.move_to_end(key)
        return hit
    deadline = time.monotonic() + budget
    attempts: list[tuple[DotPlan, str | None]] = [] if skip_full else [(plan, None)]
    n_states, n_trans = len(graph.nodes), len(graph.transitions)
    for depth in (2, 1):
        folded = _collapse_set(graph, depth)
        if skip_full and attempts and _drawn(graph, attempts[-1][0].collapsed) <= EXPAND_MAX_STATES:
            break  # the deepest folding small enough is the drawing: one attempt, no race
        if folded:
            attempts.append(
                (
                    plan_dot(graph, prefix=prefix, collapse=folded),
                    (
                        f"{n_states:,} states: more than {EXPAND_MAX_STATES:,} to draw at once"
                        if skip_full
                        else f"{n_states:,} states and {n_trans:,} transitions did not lay out "
                        f"within {budget:g} s"
                    )
                    + f": compound states below level {depth} are summarised as dashed boxes (the active "
                    "path is listed above the chart; a box holding an active state opens on click).",
                )
            )
    result: Layout | None = None
    timed_out = skip_full and not attempts  # nothing to summarise: the text tree
    for name in chain:
        if name == "text":
            if engine is None and not _warned_no_engine and not timed_out:
                _warned_no_engine = True
                warnings.warn(
                    "agentscope: no Graphviz engine found (graphviz-pure, pygraphviz or a system `dot`); "
                    "statecharts are shown as text trees. `pip install graphviz-pure` fixes this.",
                    RuntimeWarning,
                    stacklevel=3,
                )
            note = (
                f"{n_states:,} states did not lay out within {budget:g} s: shown as a text tree."
                if timed_out
                else None
            )
            tree = text_tree(graph, prefix=prefix)
            result = _assemble(graph, "text", tree, plan.source, plan, prefix, note)
            break
        try:
            run = _runner(name)
        except LayoutError:
            if engine is not None:
                raise
            continue
        for k, (p, note) in enumerate(attempts):
            left = deadline - time.monotonic()
            if k + 1 < len(attempts) and not skip_full:  # leave time for the collapsed drawings after it
                left *= 0.6
            if left <= 0:
                timed_out = True
                break
            t0 = time.monotonic()
            try:
                svg = run(p.source, left)
            except LayoutTimeout:
                timed_out = True
                continue
            except (LayoutError, OSError, subprocess.SubprocessError) as exc:
                if engine is not None:
                    raise LayoutError(str(exc)) from exc
                warnings.warn(
                    f"agentscope: layout engine {name} failed, trying the next: {exc}",
                    RuntimeWarning,
                    stacklevel=3,
                )
                break
            svg = _min_width(_declutter(_edge_titles(_strip_svg(svg), graph, p)))
            result = _assemble(graph, name, svg, p.source, p, prefix, note, time.monotonic() - t0)
            break
        if result is not None:
            break
        if timed_out:
            if engine is not None:
                raise LayoutTimeout(f"layout with {name} did not finish within {budget:g} s")
            if time.monotonic() >= deadline:
                warnings.warn(
                    f"agentscope: the statechart ({n_states:,} states) did not lay out within {budget:g} s; "
                    "showing it as a text tree.",
                    RuntimeWarning,
                    stacklevel=3,
                )
                result = _assemble(
                    graph,
                    "text",
                    text_tree(graph, prefix=prefix),
                    plan.source,
                    plan,
                    prefix,
                    f"{n_states:,} states did not lay out within {budget:g} s: shown as a text tree.",
                )
                break
    if result is None:  # pragma: no cover - "text" always succeeds
        raise LayoutError("no layout engine succeeded")
    _CACHE[key] = result
    if len(_CACHE) > _CACHE_SIZE:
        _CACHE.popitem(last=False)
    return result


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


def moves_from_taken(graph: Graph, taken: Iterable[Any]) -> tuple[ObservedEdge, ...]:
    """The moves an engine reported it took (``Snapshot.transitions``: objects with ``edge``,
    ``source``, ``targets``), as (source, target, descriptor) moves that map onto drawn edges.

    The descriptor is the drawn transition's own event (``graph.transitions[edge].event``), so a
    move lights exactly that edge; a targetless transition is a move of its source to itself; the
    initial entry (``edge is None``) is no move.
    """
    out: list[ObservedEdge] = []
    for t in taken:
        edge = getattr(t, "edge", None)
        if edge is None or not 0 <= edge < len(graph.transitions):
            continue
        desc = graph.transitions[edge].event
        source = str(getattr(t, "source", graph.transitions[edge].source))
        targets = tuple(getattr(t, "targets", ()) or ()) or (source,)
        out.extend(ObservedEdge(source, str(x), desc) for x in targets)
    return tuple(dict.fromkeys(out))


def frame_classes(
    layout: Layout,
    active: Collection[str],
    *,
    taken_edge: ObservedEdge | int | Iterable[ObservedEdge | int] | None = None,
    entered: Iterable[str] = (),
    exited: Iterable[str] = (),
    also_active: Iterable[str] | None = None,
    taken_b: Iterable[ObservedEdge | int] = (),
) -> dict[str, list[str]]:
    """The restyling classes of one frame: element id → classes to add (see :func:`frame_svg`).

    Only ids the drawing has are returned, so the mapping is what a front end needs to restyle a
    chart it already holds (the widget sends it instead of the SVG).
    """
    classes: dict[str, list[str]] = {}
    groups: list[tuple[str, Iterable[str]]] = [
        ("as-active", active),
        ("as-entered", entered),
        ("as-exited", exited),
    ]
    if also_active is not None:
        groups.append(("as-active-b", also_active))
    for cls, state_ids in groups:
        for s in state_ids:
            eid = layout.plan.states.get(s)
            if eid is not None and cls not in classes.get(eid, ()):
                classes.setdefault(eid, []).append(cls)
    edge_groups: list[tuple[str, Iterable[ObservedEdge | int]]] = [("as-taken-b", taken_b)]
    if taken_edge is not None:
        edges = [taken_edge] if isinstance(taken_edge, ObservedEdge | int) else list(taken_edge)
        edge_groups.insert(0, ("as-taken", edges))
    for cls, edge_list in edge_groups:
        for e in edge_list:
            for eid in layout.edge_elements(e):
                if cls not in classes.get(eid, ()):
                    classes.setdefault(eid, []).append(cls)
    drawn = layout.element_ids
    return {eid: c for eid, c in classes.items() if eid in drawn}


def frame_svg(
    layout: Layout,
    frame_or_active_ids: Any,
    *,
    taken_edge: ObservedEdge | int | Iterable[ObservedEdge | int] | None = None,
    entered: Iterable[str] = (),
    exited: Iterable[str] = (),
    scope_class: str = "",
    also_active: Iterable[str] | None = None,
    legend: bool = True,
    names: tuple[str, str] = ("a", "b"),
    taken_b: Iterable[ObservedEdge | int] = (),
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
        The move(s) of this step, classed ``as-taken`` (exactly one drawn edge per move).
    entered, exited : iterable of str
        State ids entered / exited by this step (classes ``as-entered`` / ``as-exited``).
    scope_class : str
        Extra class on the wrapping ``<div class="as-chart">``.
    also_active : iterable of str, optional
        The other side's active state ids in a fork view (class ``as-active-b``; a state active
        on both sides carries both classes and is drawn in a third colour).
    legend : bool
        Append :func:`legend_html` under the chart.
    names : (str, str)
        The two sides' names in the fork legend (with ``also_active``).
    taken_b : iterable of ObservedEdge | int
        The other side's move(s) in a fork view (class ``as-taken-b``).

    Returns
    -------
    str
        ``<div class="as-chart">`` + the SVG (or text tree) with ``class`` attributes extended.
        Removing the added classes gives back ``layout.svg`` byte for byte. For a collapsed
        chart, the note, the active path and the boxes holding an active state (each opening
        on click into its own chart, :func:`expand_html`) come first.
    """
    active = _active_ids(layout.graph, frame_or_active_ids)
    entered, exited = list(entered), list(exited)
    moves: list[ObservedEdge | int] = []
    if taken_edge is not None:
        moves = [taken_edge] if isinstance(taken_edge, ObservedEdge | int) else list(taken_edge)
    classes = frame_classes(
        layout, active, taken_edge=moves, entered=entered, exited=exited, also_active=also_active,
        taken_b=taken_b,
    )
    head = chart_head_html(layout, active, also_active)
    if layout.collapsed:
        head += expand_html(
            layout, active, entered=entered, exited=exited,
            moves=[m for m in moves if isinstance(m, ObservedEdge)],
        )
    tail = legend_html(fork=also_active is not None, names=names) if legend else ""
    return (
        f'{head}<div class="as-chart {esc(scope_class)}">' + apply_classes(layout, classes) + f"</div>{tail}"
    )


def chart_head_html(layout: Layout, active: Collection[str], also_active: Iterable[str] | None = None) -> str:
    """The note above a chart that is not the full drawing, and (collapsed) the active path."""
    if not layout.note:
        return ""
    head = f'<div class="as-note as-chart-note">{esc(layout.note)}</div>'
    if layout.collapsed:
        head += active_path_html(layout.graph, active, also_active)
    return head


EXPAND_BUDGET_S = 4.0
"""Seconds the layout of one expanded box may take (past it the box's chart is itself collapsed)."""
EXPAND_MAX_STATES = 600
"""An expanded box with more states than this is drawn with its own compound states summarised."""


def subgraph(graph: Graph, box: str) -> tuple[Graph, int, int]:
    """The statechart of ``box``'s subtree: its states (``box`` as the root) and the transitions
    among them; also how many transitions leave the subtree and how many enter it (pure).

    Paths are made relative to ``box`` so depth-based collapsing works the same as for a machine.
    """
    nodes = graph.nodes
    base = len(nodes[box].path)
    inside = {s for s in nodes if _inside(graph, s, box)}
    sub_nodes = {}
    for s in nodes:
        if s not in inside:
            continue
        n = nodes[s]
        sub_nodes[s] = replace(n, path=n.path[base:], parent=None if s == box else n.parent)
    trans = []
    leaving = entering = 0
    for t in graph.transitions:
        src_in = t.source in inside
        tin = tuple(x for x in t.targets if x in inside)
        if src_in:
            if len(tin) < len(t.targets):
                leaving += 1
            if tin or t.dynamic or not t.targets:
                trans.append(replace(t, targets=tin))
        elif tin:
            entering += 1
    return Graph(machine_id=box, root=box, nodes=sub_nodes, transitions=tuple(trans)), leaving, entering


def expansion(layout: Layout, box: str, *, observed_edges: Iterable[ObservedEdge] = ()) -> Layout:
    """The chart of one summary box of a collapsed ``layout``, laid out on its own (pure function
    of the machine: cached like :func:`layout`, one engine run per box and machine version).

    Its element ids use the prefix ``<layout.prefix>x<k>`` (``k``: the box's rank among the
    collapsed boxes), so it can sit on the page next to the main chart. The layout gets
    :data:`EXPAND_BUDGET_S` seconds; a box that does not lay out in time (or has more than
    :data:`EXPAND_MAX_STATES` states) is drawn with its own compound states summarised, as
    :func:`layout` does. ``observed_edges`` (moves inside the box) are drawn over it.

    Raises
    ------
    KeyError
        ``box`` is not one of ``layout.collapsed``.
    """
    return _expanded(layout, box, observed_edges)[0]


_EXPANDED: OrderedDict[tuple[str, str, str, frozenset[ObservedEdge]], tuple[Layout, int, int]] = OrderedDict()


def _expanded(
    layout: Layout, box: str, observed_edges: Iterable[ObservedEdge] = ()
) -> tuple[Layout, int, int]:
    """:func:`expansion` and the box's leaving/entering transition counts, memoised per chart
    (a frame switch asks again at every step)."""
    obs = frozenset(observed_edges)
    key = (layout.dot, layout.prefix, box, obs)
    hit = _EXPANDED.get(key)
    if hit is not None:
        _EXPANDED.move_to_end(key)
        return hit
    if box not in layout.collapsed:
        raise KeyError(f"{box!r} is not a summarised box of this chart")
    k = sorted(layout.collapsed).index(box)
    sub, leaving, entering = subgraph(layout.graph, box)
    inside = [e for e in observed_edges if e.source in sub.nodes and e.target in sub.nodes]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # the note on the expansion says it
        base = _base_layout(
            sub, None, f"{layout.prefix}x{k}", EXPAND_BUDGET_S, skip_full=len(sub.nodes) > EXPAND_MAX_STATES
        )
    out = (base.with_observed(inside), leaving, entering)
    _EXPANDED[key] = out
    if len(_EXPANDED) > 4 * _CACHE_SIZE:
        _EXPANDED.popitem(last=False)
    return out


def expand_html(
    layout: Layout,
    active: Collection[str],
    *,
    entered: Iterable[str] = (),
    exited: Iterable[str] = (),
    moves: Iterable[ObservedEdge] = (),
    boxes: Iterable[str] | None = None,
    open_: bool = False,
) -> str:
    """For a collapsed chart: each summary box holding an active state (or each of ``boxes``) as a
    ``<details>`` that opens on click into the box's own chart (:func:`expansion`), lit for this
    frame (active, entered, exited states and the moves inside the box); the transitions that
    leave or enter the box are summarised in its title. Escaped; sizes bounded as in
    :func:`expansion`."""
    g = layout.graph
    chosen = (
        sorted(c for c in layout.collapsed if any(_inside(g, s, c) for s in active))
        if boxes is None
        else [b for b in boxes if b in layout.collapsed]
    )
    entered, exited, moves = list(entered), list(exited), list(moves)
    out = []
    for box in chosen:
        sub, leaving, entering = _expanded(layout, box, layout.plan.observed)
        classes = _box_classes(sub, active, moves=moves, entered=entered, exited=exited)
        out.append(expansion_details(layout, box, sub, leaving, entering, apply_classes(sub, classes), open_))
    return "".join(out)


def _box_classes(
    sub: Layout,
    active: Collection[str],
    *,
    moves: Iterable[ObservedEdge],
    entered: Iterable[str],
    exited: Iterable[str],
    also_active: Iterable[str] | None = None,
    taken_b: Iterable[ObservedEdge] = (),
) -> dict[str, list[str]]:
    """:func:`frame_classes` of one expanded box: the frame's states and moves that lie inside it."""
    inner = sub.graph.nodes

    def within(edges: Iterable[ObservedEdge]) -> list[ObservedEdge]:
        return [m for m in edges if m.source in inner and m.target in inner]

    return frame_classes(
        sub,
        [s for s in active if s in inner],
        taken_edge=within(moves),
        entered=entered,
        exited=exited,
        also_active=[s for s in also_active if s in inner] if also_active is not None else None,
        taken_b=within(taken_b),
    )


def frame_styling(
    layout: Layout,
    active: Collection[str],
    *,
    taken_edge: Iterable[ObservedEdge | int] = (),
    entered: Iterable[str] = (),
    exited: Iterable[str] = (),
    also_active: Iterable[str] | None = None,
    taken_b: Iterable[ObservedEdge | int] = (),
) -> tuple[str, str, list[list[str]]]:
    """One frame for a front end that already holds ``layout.svg``: ``(head, boxes, lit)``.

    ``head`` is the HTML above the chart (note and active path), ``boxes`` (collapsed charts) the
    *unstyled* expanded boxes holding an active state (unchanged while the active box is), and
    ``lit`` the ``[element id, "cls cls"]`` pairs to class, the boxes' elements included.
    Applying ``lit`` to ``head + boxes + layout.svg`` gives the classes of :func:`frame_svg`.
    """
    moves, entered, exited, taken_b = list(taken_edge), list(entered), list(exited), list(taken_b)
    also = list(also_active) if also_active is not None else None
    classes = frame_classes(
        layout, active, taken_edge=moves, entered=entered, exited=exited, also_active=also, taken_b=taken_b
    )
    head, boxes = chart_head_html(layout, active, also), ""
    if layout.collapsed:
        on = set(active) | set(also or ())
        moved = [m for m in moves if isinstance(m, ObservedEdge)]
        moved_b = [m for m in taken_b if isinstance(m, ObservedEdge)]
        for box in sorted(c for c in layout.collapsed if c in on):
            sub, leaving, entering = _expanded(layout, box, layout.plan.observed)
            boxes += expansion_details(layout, box, sub, leaving, entering, sub.svg)
            for eid, cls in _box_classes(
                sub, active, moves=moved, entered=entered, exited=exited, also_active=also, taken_b=moved_b
            ).items():
                classes.setdefault(eid, []).extend(c for c in cls if c not in classes.get(eid, ()))
    return head, boxes, [[eid, " ".join(cls)] for eid, cls in classes.items()]


def expansion_details(
    layout: Layout, box: str, sub: Layout, leaving: int, entering: int, body: str, open_: bool = False
) -> str:
    """The ``<details>`` element of one expanded box (``body``: its restyled SVG)."""
    n = len(sub.graph.nodes) - 1
    plural = "s leave" if leaving != 1 else " leaves"
    ext = f"; {leaving:,} transition{plural} it, {entering:,} enter it from outside"
    note = f'<div class="as-note as-chart-note">{esc(sub.note)}</div>' if sub.note else ""
    return (
        f'<details class="as-expand" data-box="{esc(layout.plan.states[box])}"{" open" if open_ else ""}>'
        f"<summary>expand {esc(layout.graph.nodes[box].key)} ({n:,} states)</summary>"
        f'<div class="as-meta">{esc(layout.graph.nodes[box].key)}: {n:,} states{esc(ext)}</div>'
        f'{note}<div class="as-chart as-xchart">{body}</div></details>'
    )


def active_path_lines(
    graph: Graph, active: Collection[str], also_active: Iterable[str] | None = None
) -> list[str]:
    """The deepest active states as ``active: a › b › c`` lines (plain text; at most 8 per side)."""
    lines = []
    for cls, ids in (("", active), (" (b)", also_active)):
        if ids is None:
            continue
        ids = set(ids)
        leaves = sorted(
            s for s in ids if s in graph.nodes and not any(c in ids for c in graph.nodes[s].children)
        )
        for s in leaves[:8]:
            path = " › ".join(graph.nodes[s].path) or graph.machine_id
            lines.append(f"active{cls}: {path}")
    return lines


def active_path_html(graph: Graph, active: Collection[str], also_active: Iterable[str] | None = None) -> str:
    """:func:`active_path_lines` as ``<div class="as-active-path">`` lines, escaped."""
    return "".join(
        f'<div class="as-active-path">{esc(x)}</div>' for x in active_path_lines(graph, active, also_active)
    )


_LEGEND_BOX = (
    '<svg width="26" height="14" viewBox="0 0 26 14"><rect x="1" y="1" width="24" height="12" rx="4" '
    'fill="{fill}" stroke="{stroke}" stroke-width="{sw}"{extra}/></svg>'
)
_LEGEND_EDGE = (
    '<svg width="30" height="14" viewBox="0 0 30 14"><path d="M1,7 L22,7" stroke="{c}" stroke-width="{w}"'
    '{extra} fill="none"/><polygon points="29,7 21,3 21,11" fill="{c}"/></svg>'
)


def legend_html(*, fork: bool = False, names: tuple[str, str] = ("a", "b")) -> str:
    """Return the chart legend: active, entered, exited, taken edge, observed edge, dynamic target,
    history, final (and, for a fork view, active in a / b / both). Static markup (no log data)."""
    box = _LEGEND_BOX.format
    edge = _LEGEND_EDGE.format
    items = [
        ("active", box(fill="#fff3c4", stroke="#f9a825", sw="2.5", extra="")),
        ("entered", box(fill="white", stroke="#2e7d32", sw="3", extra="")),
        ("exited", box(fill="white", stroke="#9e9e9e", sw="1.5", extra=' stroke-dasharray="4 2"')),
        ("taken edge", edge(c="#d84315", w="3", extra="")),
        ("observed edge", edge(c="#1565c0", w="1.6", extra="")),
        (
            "dynamic target",
            '<svg width="16" height="16" viewBox="0 0 16 16"><circle cx="8" cy="8" r="6.5" fill="none" '
            'stroke="#546e7a" stroke-dasharray="3 1.5"/><text x="8" y="11.5" font-size="9" '
            'text-anchor="middle" fill="#263238">?</text></svg>',
        ),
        (
            "history",
            '<svg width="16" height="16" viewBox="0 0 16 16"><circle cx="8" cy="8" r="6.5" fill="white" '
            'stroke="#546e7a"/><text x="8" y="11.5" font-size="9" text-anchor="middle" '
            'fill="#263238">H</text></svg>',
        ),
        (
            "final",
            '<svg width="26" height="14" viewBox="0 0 26 14"><rect x="1" y="1" width="24" height="12" '
            'rx="4" fill="white" stroke="#546e7a"/><rect x="3.5" y="3.5" width="19" height="7" rx="3" '
            'fill="none" stroke="#546e7a"/></svg>',
        ),
    ]
    if fork:
        items[0:1] = [
            (f"active in {names[0]}", box(fill="#fff3c4", stroke="#f9a825", sw="2.5", extra="")),
            (f"active in {names[1]}", box(fill="#e3f2fd", stroke="#1565c0", sw="2.5", extra="")),
            ("active in both", box(fill="#e8f5e9", stroke="#00897b", sw="2.5", extra="")),
        ]
    body = "".join(f'<span data-legend="{esc(name)}">{icon}{esc(name)}</span>' for name, icon in items)
    if fork:
        body += (
            f'<span data-legend="taken edge of {esc(names[1])}">{edge(c="#1565c0", w="3", extra="")}'
            f"taken edge of {esc(names[1])}</span>"
        )
    return f'<div class="as-legend" role="list" aria-label="chart legend">{body}</div>'


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

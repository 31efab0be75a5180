"""The coverage heat map: the statechart laid out once, states filled by how often they were visited.

A styling of :func:`agentscope.render.chart.layout`'s drawing, like :func:`frame_svg`: only CSS
classes are added. Visited states get ``as-heat-1`` … ``as-heat-5`` (five buckets on a log scale
of the visit count, darker = more; compound and parallel states show it in their outline),
never-visited states ``as-unvisited`` (grey fill, dashed outline). The counts come from
:func:`agentscope.coverage` (views draw values, they never fold).
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from agentscope.engines.base import Graph
from agentscope.render._escape import esc
from agentscope.render.chart import CHART_CSS, Layout, apply_classes, layout

__all__ = ["COVERAGE_CSS", "coverage_classes", "coverage_legend_html", "coverage_svg", "heat_bucket"]

_FILLS = ("#fff3e0", "#ffcc80", "#ffa726", "#f57c00", "#bf360c")

COVERAGE_CSS = "\n".join(
    [
        *(
            f".as-chart .as-heat-{k + 1}>path,.as-chart .as-heat-{k + 1}>polygon:first-of-type,"
            f".as-chart .as-heat-{k + 1}>ellipse{{fill:{c};stroke:#6d4c41}}"
            for k, c in enumerate(_FILLS)
        ),
        ".as-chart .as-heat-4>text,.as-chart .as-heat-5>text{fill:#fff}",
        # compound and parallel states (clusters) keep a light fill so their children stay
        # readable: the heat shows in their outline
        *(
            f".as-chart g.cluster.as-heat-{k + 1}>path,.as-chart g.cluster.as-heat-{k + 1}>polygon"
            f"{{fill:#fffaf5;stroke:{c};stroke-width:{1.5 + k * 0.5:g}}}"
            for k, c in enumerate(_FILLS)
        ),
        ".as-chart g.cluster.as-heat-4>text,.as-chart g.cluster.as-heat-5>text{fill:#000}",
        ".as-chart .as-unvisited>path,.as-chart .as-unvisited>polygon:first-of-type,"
        ".as-chart .as-unvisited>ellipse{fill:#eeeeee;stroke:#9e9e9e;stroke-dasharray:4 3}",
        ".as-chart .as-unvisited>text{fill:#9e9e9e}",
        ".as-tree .as-unvisited{color:#9e9e9e;text-decoration:line-through}",
        ".as-tree .as-heat-3,.as-tree .as-heat-4,.as-tree .as-heat-5{font-weight:bold}",
    ]
)
"""CSS for the heat-map classes (add it with :data:`~agentscope.render.chart.CHART_CSS`)."""


def heat_bucket(visits: int, most: int) -> int:
    """The heat class (0 = never visited, else 1..5) of ``visits`` when the most visited state
    has ``most``: buckets of equal width on ``log(1 + visits)``."""
    if visits <= 0:
        return 0
    if most <= 1:
        return 5
    return 1 + min(4, int(4 * math.log1p(visits) / math.log1p(most) + 1e-9))


def coverage_classes(
    lay: Layout, graph: Graph, visits: Mapping[str, int]
) -> tuple[dict[str, list[str]], int]:
    """The heat-map classes of ``lay``'s state elements and the largest visit count.

    Returns ``({element id: ["as-heat-<1..5>" or "as-unvisited"]}, most)``: every state of
    ``graph`` that ``lay`` draws gets one class (a state missing from ``visits`` counts as
    never visited); ``most`` is the largest count of a state other than the root (the top of
    the scale, see :func:`heat_bucket`).
    """
    counts = {s: int(visits.get(s, 0)) for s in graph.nodes}
    most = max((v for s, v in counts.items() if s != graph.root), default=0)
    classes: dict[str, list[str]] = {}
    for sid, v in counts.items():
        eid = lay.plan.states.get(sid)
        if eid is None:
            continue
        b = heat_bucket(v, most)
        classes.setdefault(eid, []).append("as-unvisited" if b == 0 else f"as-heat-{b}")
    return classes, most


def coverage_legend_html(most: int) -> str:
    """The heat map's legend: the five fills from 1 to ``most`` visits, and "never visited"."""
    return (
        '<div class="as-coverage-legend" style="font:12px sans-serif;margin:4px 0">'
        + "".join(
            f'<span style="display:inline-block;width:14px;height:10px;background:{c};'
            f'margin:0 2px 0 8px;border:1px solid #6d4c41"></span>'
            for c in _FILLS
        )
        + f" visits 1 … {esc(most)}"
        + '<span style="display:inline-block;width:14px;height:10px;background:#eee;'
        'margin:0 2px 0 12px;border:1px dashed #9e9e9e"></span> never visited</div>'
    )


def coverage_svg(
    graph: Graph,
    visits: Mapping[str, int],
    *,
    chart: Layout | None = None,
    style: bool = True,
) -> str:
    """The statechart as a coverage heat map.

    Parameters
    ----------
    graph : Graph
        The machine's structure (``machine.graph``).
    visits : mapping of state id to int
        Visit counts (:attr:`agentscope.coverage_map.Coverage.visits`); a state missing from it
        counts as never visited.
    chart : Layout, optional
        A layout of ``graph`` to restyle (default: :func:`layout` of it, which runs Graphviz
        once).
    style : bool
        Prefix a ``<style>`` element with the chart and heat-map CSS.

    Returns
    -------
    str
        ``<div class="as-chart as-coverage">`` + the SVG, each state's element classed
        ``as-heat-<1..5>`` or ``as-unvisited``; a ``<title>`` per state is not added (the
        geometry is the layout's, byte for byte, once the classes are removed).
    """
    lay = chart if chart is not None else layout(graph)
    classes, most = coverage_classes(lay, graph, visits)
    css = f"<style>{CHART_CSS}\n{COVERAGE_CSS}</style>" if style else ""
    legend = coverage_legend_html(most)
    return (f'{css}<div class="as-chart as-coverage">' + apply_classes(lay, classes)
            + f"</div>{legend}")

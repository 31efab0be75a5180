"""Drawing statecharts and frames (no widgets here).

- :func:`to_dot` / :func:`plan_dot`: a :class:`~agentscope.engines.base.Graph` as DOT (pure).
- :func:`layout`: run Graphviz once → :class:`Layout`; :func:`frame_svg`: restyle per frame.
- :func:`context_html`: a context value as an escaped, bounded, collapsible tree.
- :mod:`agentscope.render.html`: fragments for ``_repr_html_`` of frames, logs, reports, forks.
- :func:`graph_from_config`: a Graph from a JSON machine config, without an engine.
"""

from __future__ import annotations

from agentscope.render._config_graph import graph_from_config
from agentscope.render._escape import esc, json_for_script
from agentscope.render.chart import (
    Layout,
    LayoutError,
    available_engines,
    frame_svg,
    layout,
    taken_edges,
    text_tree,
)
from agentscope.render.context import context_html
from agentscope.render.dot import ObservedEdge, plan_dot, state_element_id, to_dot
from agentscope.render.html import badge_html, frame_html

__all__ = [
    "Layout",
    "LayoutError",
    "ObservedEdge",
    "available_engines",
    "badge_html",
    "context_html",
    "esc",
    "frame_html",
    "frame_svg",
    "graph_from_config",
    "json_for_script",
    "layout",
    "plan_dot",
    "state_element_id",
    "taken_edges",
    "text_tree",
    "to_dot",
]

"""The static player's old address: it lives in :mod:`agentscope.render.player` (building a page
imports neither ipywidgets nor anywidget). Importing this module loads :mod:`agentscope.widgets`
(and so ipywidgets); new code imports :mod:`agentscope.render.player`."""

from __future__ import annotations

from agentscope.render.player import bound, fork_page, pane_data, timeline_page

__all__ = ["bound", "fork_page", "pane_data", "timeline_page"]

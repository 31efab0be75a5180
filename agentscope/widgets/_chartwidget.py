"""The statechart of a widget: laid out once, sent to the front end once, restyled there per step.

An `anywidget <https://anywidget.dev>`_ whose ``svg`` trait (the drawing and its legend) changes
only when the layout does; per step the kernel sends ``lit``, the element ids to class (a few
hundred bytes instead of the whole SVG), and ``head`` (the note, active path and expanded boxes of
a collapsed chart; unchanged while the active box is). The classes are those of
:func:`agentscope.render.chart.frame_classes`, so the DOM equals :func:`~agentscope.render.chart.frame_svg`'s.
"""

from __future__ import annotations

import re
from importlib.resources import files

import anywidget
import traitlets

__all__ = ["ChartWidget"]

_ID_CLASS = re.compile(r'id="([A-Za-z0-9_]+)" class="([^"]*)"')


class ChartWidget(anywidget.AnyWidget):  # type: ignore[misc,unused-ignore]
    """Front-end restyled chart (traits: ``svg``, ``head``, ``lit``, ``step``)."""

    _esm = files("agentscope.widgets").joinpath("chart.js").read_text(encoding="utf-8")
    svg = traitlets.Unicode("", help="The chart HTML (SVG and legend), sent once.").tag(sync=True)
    head = traitlets.Unicode("", help="Note, active path and expanded boxes above the chart.").tag(sync=True)
    lit = traitlets.List(traitlets.List(), help="[element id, classes] of this step.").tag(sync=True)
    step = traitlets.Int(-1, help="The step the classes are for (the front end's data-step).").tag(sync=True)

    def show(self, lit: list[list[str]], head: str, step: int) -> None:
        """Send one step's styling (only the traits that changed go over the wire)."""
        with self.hold_sync():
            if head != self.head:
                self.head = head
            self.lit = lit
            self.step = step

    @property
    def value(self) -> str:
        """The chart as the front end shows it, as HTML: ``head`` + ``svg`` with ``lit`` applied
        (what the widget's JS does to the DOM, for tests and for the static fallback's parity)."""
        add = {eid: cls for eid, cls in self.lit}

        def sub(m: re.Match[str]) -> str:
            extra = [c for c in add.get(m.group(1), "").split() if c not in m.group(2).split()]
            return f'id="{m.group(1)}" class="{m.group(2)} {" ".join(extra)}"' if extra else m.group(0)

        return _ID_CLASS.sub(sub, self.head + self.svg)

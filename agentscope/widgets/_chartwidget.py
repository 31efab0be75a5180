"""The statechart of a widget: laid out once, sent to the front end once, restyled there per step.

An `anywidget <https://anywidget.dev>`_ whose ``svg`` trait (the drawing and its legend) changes
only when the layout does; per step the kernel sends ``lit``, the element ids to class (a few
hundred bytes instead of the whole SVG), ``head`` (the note and active path of a chart that is not
the full drawing) and ``boxes`` (the expanded boxes of a collapsed chart: sent again only when the
active box changes; traitlets send a trait only when its value changed). The classes are those of
:func:`agentscope.render.chart.frame_classes`, so the DOM equals :func:`~agentscope.render.chart.frame_svg`'s.
"""

from __future__ import annotations

import re
from importlib.resources import files

import anywidget
import traitlets

from agentscope.render.player import frame_js

__all__ = ["ChartWidget"]

_ID_CLASS = re.compile(r'id="([A-Za-z0-9_]+)" class="([^"]*)"')


class ChartWidget(anywidget.AnyWidget):  # type: ignore[misc,unused-ignore]
    """Front-end restyled chart (traits: ``svg``, ``head``, ``boxes``, ``lit``, ``step``)."""

    _esm = frame_js() + "\n" + files("agentscope.widgets").joinpath("chart.js").read_text(encoding="utf-8")
    svg = traitlets.Unicode("", help="The chart HTML (SVG and legend), sent once.").tag(sync=True)
    head = traitlets.Unicode("", help="Note and active path above the chart.").tag(sync=True)
    boxes = traitlets.Unicode("", help="The expanded boxes of a collapsed chart (unstyled).").tag(sync=True)
    lit = traitlets.List(traitlets.List(), help="[element id, classes] of this step.").tag(sync=True)
    step = traitlets.Int(-1, help="The step the classes are for (the front end's data-step).").tag(sync=True)

    def show(self, head: str, boxes: str, lit: list[list[str]], *, step: int) -> None:
        """Send one step's styling (only the traits that changed go over the wire)."""
        with self.hold_sync():
            self.head = head
            self.boxes = boxes
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

        return _ID_CLASS.sub(sub, self.head + self.boxes + self.svg)

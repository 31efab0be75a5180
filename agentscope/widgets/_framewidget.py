"""A step's panels in a widget (badge, event, actors and timers, ...), drawn by the one frame
renderer (``render/frame.js``) the static player inlines.

An `anywidget <https://anywidget.dev>`_: the kernel sends the frame data of
:func:`agentscope.render.player.frame_fields` (bounded values, no markup) and the entry index; the
front end draws the panels of ``frame.js``'s ``PANELS`` (all of them, or those named in ``only``,
minus those in ``skip``). Python writes no markup for them.
"""

from __future__ import annotations

from importlib.resources import files
from typing import Any

import anywidget
import traitlets

from agentscope.frames import Frame
from agentscope.render.html import widget_safe
from agentscope.render.player import frame_fields, frame_js

__all__ = ["FrameWidget"]


class FrameWidget(anywidget.AnyWidget):  # type: ignore[misc,unused-ignore]
    """Front-end drawn panels of one step (traits: ``frame``, ``index``, ``only``, ``skip``)."""

    _esm = frame_js() + "\n" + files("agentscope.widgets").joinpath("frame.js").read_text(encoding="utf-8")
    frame = traitlets.Dict({}, help="The frame data (frame_fields) of the step shown.").tag(sync=True)
    index = traitlets.Int(-1, help="The entry index of the step shown.").tag(sync=True)
    only = traitlets.List(traitlets.Unicode(), [], help="Slots to draw (empty: every panel).").tag(sync=True)
    skip = traitlets.List(traitlets.Unicode(), [], help="Slots drawn elsewhere.").tag(sync=True)
    title = traitlets.Unicode("", help="A heading above the panels (a fork side's name).").tag(sync=True)
    note = traitlets.Unicode("", help="Shown when there is no frame (a side that has ended).").tag(sync=True)

    def show(self, frame: Frame | None, index: int, *, note: str = "") -> None:
        """Send one step's frame data (``None``: nothing to show, ``note`` says why)."""
        data: dict[str, Any] = frame_fields(frame, first=index == 0) if frame is not None else {}
        with self.hold_sync():
            self.frame = widget_safe(data)  # UTF-8 JSON on the wire: no lone surrogate
            self.index = index
            self.note = note if frame is None else ""

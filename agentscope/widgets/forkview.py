"""``ForkView``: two logs of one machine side by side on one slider over aligned indices."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import ipywidgets
import traitlets

from agentscope.frames import Frame
from agentscope.render._escape import esc
from agentscope.render.chart import Layout, frame_svg, layout
from agentscope.render.context import context_html, pointer_join
from agentscope.render.html import MarkerStrip, badge_html, event_html, style_block
from agentscope.widgets._source import FrameCache, FrameSource, as_entries, make_fork_timelines, step_info

__all__ = ["ForkView", "common_prefix", "differing_paths"]


def common_prefix(a: Any, b: Any) -> int:
    """Return the number of leading entries ``a`` and ``b`` share under the spec §6.1 rule.

    Delegates to :func:`agentscope.forks.compare` (no machine: a linear scan, no replay).
    """
    from agentscope.forks import compare

    return int(compare(a, b).common_prefix)


def differing_paths(left: Any, right: Any, base: str = "/context", *, limit: int = 500) -> list[str]:
    """Return JSON Pointers (under ``base``) where ``left`` and ``right`` differ, leaves first-found.

    A key present on one side only, a changed scalar, or a type change each give one path; at
    most ``limit`` paths are returned.
    """
    out: list[str] = []

    def walk(x: Any, y: Any, path: str, depth: int) -> None:
        if len(out) >= limit:
            return
        if isinstance(x, Mapping) and isinstance(y, Mapping) and depth < 64:
            for k in list(x.keys()) + [k for k in y if k not in x]:
                if k not in x or k not in y:
                    out.append(pointer_join(path, str(k)))
                else:
                    walk(x[k], y[k], pointer_join(path, str(k)), depth + 1)
        elif isinstance(x, list) and isinstance(y, list) and depth < 64:
            for i in range(max(len(x), len(y))):
                if i >= len(x) or i >= len(y):
                    out.append(pointer_join(path, i))
                else:
                    walk(x[i], y[i], pointer_join(path, i), depth + 1)
        elif type(x) is not type(y) or x != y:
            out.append(path)

    walk(left, right, base, 0)
    return out


def _paths(fa: Frame | None, fb: Frame | None) -> list[str]:
    """Context paths where two frames differ (none when a side is missing or not replayed)."""
    if fa is None or fb is None or fa.persisted is None or fb.persisted is None:
        return []
    return differing_paths(fa.context, fb.context)


class ForkView(ipywidgets.VBox):  # type: ignore[misc]
    """Compare two logs of one machine (a thread and its fork) step by step.

    One slider runs over aligned indices ``0 … max(len(a), len(b)) - 1``; each side shows its
    statechart (laid out once, restyled per step) and context, with the context paths where the
    two sides differ highlighted. The divergence (first index past the shared prefix, spec §6.1)
    is marked on the track and has a jump button.

    Parameters
    ----------
    machine : Machine
    a, b : EventLog | Sequence[Mapping]
    names : (str, str)
        Labels of the two sides.
    timelines : (FrameSource, FrameSource), optional
        Ready timelines to use instead of building ``Timeline(machine, a)`` and ``(machine, b)``.
    engine : str, optional
        Force a layout engine for both charts (see :func:`agentscope.render.chart`).
    divergence, kind : optional
        Mark this index as the divergence, labelled ``kind``, instead of where the two logs'
        entries part (e.g. one log under two machines: :meth:`agentscope.whatif.WhatIf.view`).

    Examples
    --------
    >>> import agentscope as asc
    >>> from agentscope.examples import example_path
    >>> from agentscope.examples.python_machines import triage_machine
    >>> store = example_path("g_triage.sqlite")
    >>> main = asc.read_log(store, thread="main")
    >>> fork = asc.read_log(store, thread="fork")
    >>> fv = asc.ForkView(triage_machine(), main, fork, names=("main", "fork"))
    >>> fv.jump_to_divergence()  # returns the index it jumped to
    18
    >>> fv.step, [frame.event_type for frame in fv.frames()]
    (18, ['APPROVE', 'REJECT'])
    >>> fv.diff_paths()[0]
    '/context/queue/0/id'

    In a notebook, ``fv`` as the last expression of a cell shows the two charts side by side;
    ``fv.to_html(path)`` writes them as one self-contained page.
    """

    step = traitlets.Int(0, help="Aligned entry index shown on both sides.")

    def __init__(
        self,
        machine: Any,
        a: Any,
        b: Any,
        *,
        names: tuple[str, str] = ("a", "b"),
        timelines: tuple[FrameSource, FrameSource] | None = None,
        engine: Any = None,
        divergence: int | None = None,
        kind: str | None = None,
    ) -> None:
        self.machine = machine
        self.logs = (a, b)
        self.names = names
        self.entries = (as_entries(a), as_entries(b))
        from agentscope.forks import compare

        self.diff = compare(a, b)
        """The :class:`~agentscope.forks.ForkDiff` of the two logs (no replay)."""
        if timelines is None:  # the shared prefix is folded once
            timelines = make_fork_timelines(machine, a, b, int(self.diff.common_prefix))
        self.timelines = timelines
        self._frames = (FrameCache(timelines[0]), FrameCache(timelines[1]))
        self.lengths = (len(timelines[0]), len(timelines[1]))
        self.n = max(self.lengths)
        if self.n == 0:
            raise ValueError("ForkView needs at least one non-empty log")
        self.common = int(self.diff.common_prefix)
        self.divergence: int | None = self.diff.divergence if divergence is None else divergence
        self.kind: str = self.diff.kind if kind is None else kind
        if divergence is not None:
            self.common = divergence  # the two sides agree up to the given divergence
        self._strip_svg = MarkerStrip(
            self.n, {self.divergence: "divergence"} if self.divergence is not None else {}, width=520
        )
        base = layout(machine.graph, engine=engine)
        self.layouts: tuple[Layout, Layout] = (base, base.with_prefix("bs"))

        self._play = ipywidgets.Play(min=0, max=self.n - 1, interval=500)
        self._slider = ipywidgets.IntSlider(
            min=0, max=self.n - 1, description="step", layout=ipywidgets.Layout(width="520px")
        )
        # slider first: a jslink copies source to target when the front end builds it, and a front
        # end that builds the widgets after steps were set in the kernel (Voila, a re-opened
        # notebook) would otherwise reset the step to the Play widget's stale 0
        ipywidgets.jslink((self._slider, "value"), (self._play, "value"))
        traitlets.link((self._slider, "value"), (self, "step"))
        auto = ipywidgets.Layout(width="auto")
        self._prev = ipywidgets.Button(description="◀", layout=auto)
        self._next = ipywidgets.Button(description="▶", layout=auto)
        self._div = ipywidgets.Button(
            description="jump to divergence",
            layout=auto,
            disabled=self.divergence is None,
            tooltip="jump to the first entry the two logs do not share",
        )
        self._prev.on_click(lambda _: self.go(self.step - 1))
        self._next.on_click(lambda _: self.go(self.step + 1))
        self._div.on_click(lambda _: self.jump_to_divergence())
        self._strip = ipywidgets.HTML()
        self._summary = ipywidgets.HTML()
        self._sides = tuple(
            ipywidgets.HTML(layout=ipywidgets.Layout(flex="1 1 50%", min_width="0", overflow="auto"))
            for _ in range(2)
        )
        super().__init__(
            children=(
                ipywidgets.HTML(style_block()),
                ipywidgets.HBox([self._prev, self._play, self._slider, self._next, self._div]),
                self._strip,
                self._summary,
                ipywidgets.HBox(list(self._sides), layout=ipywidgets.Layout(width="100%")),
            )
        )
        self.add_class("agentscope-forkview")
        self._render()

    def go(self, n: int) -> None:
        """Show aligned index ``n`` (clamped)."""
        self.step = max(0, min(self.n - 1, int(n)))

    def jump_to_divergence(self) -> int | None:
        """Jump to the divergence; return its index (``None`` when the logs do not diverge)."""
        if self.divergence is not None:
            self.go(self.divergence)
        return self.divergence

    def frames(self) -> tuple[Frame | None, Frame | None]:
        """The two frames at :attr:`step` (``None`` past the end of a side)."""
        i = self.step
        for k in (0, 1):  # the previous step first, so each timeline continues its fold by one
            if 0 < i <= self.lengths[k]:
                self._frames[k].at(i - 1)
        fa = self._frames[0].at(i) if i < self.lengths[0] else None
        fb = self._frames[1].at(i) if i < self.lengths[1] else None
        return fa, fb

    @traitlets.validate("step")
    def _clamp(self, proposal: Any) -> int:
        return max(0, min(self.n - 1, int(proposal["value"])))

    @traitlets.observe("step")
    def _on_step(self, change: Any) -> None:
        self._render()

    def diff_paths(self) -> list[str]:
        """Context paths where the two sides differ at :attr:`step`."""
        return _paths(*self.frames())

    def side_html(self, k: int, frame: Frame | None, paths: Sequence[str]) -> str:
        """HTML of one side at the current step."""
        name = esc(self.names[k])
        if frame is None:
            ended = f'<span class="as-note">(log ended at {self.lengths[k]})</span>'
            return f'<div class="as-root"><b>{name}</b> {ended}</div>'
        prev = self._frames[k].at(frame.index - 1) if frame.index > 0 else None
        info = step_info(self.layouts[k].graph, prev, frame)
        chart = (
            frame_svg(
                self.layouts[k], info.active, taken_edge=info.moves, entered=info.entered, exited=info.exited
            )
            if frame.persisted is not None
            else ""
        )
        ctx = context_html(frame.context, changed_paths=paths) if frame.persisted is not None else ""
        return (
            f'<div class="as-root as-side" data-side="{k}"><b>{name}</b> {badge_html(frame)}'
            f"{event_html(frame)}{chart}<div class='as-sec'>context</div>{ctx}</div>"
        )

    def _render(self) -> None:
        i = self.step
        fa, fb = self.frames()
        paths = _paths(fa, fb)
        if self.divergence is None:
            where = f"{esc(self.kind)}: the logs agree on all {self.common} shared entries"
        elif i < self.divergence:
            where = f"shared entry (prefix of {self.common}); divergence at {self.divergence}"
        else:
            kind = esc(self.kind)
            where = f'<span class="as-diverge">past the divergence ({kind}) at {self.divergence}</span>'
        with self.hold_sync():
            self._strip.value = self._strip_svg.svg(i)
            self._summary.value = (
                f'<div class="as-root">step {i}: {where}; {len(paths)} differing context path(s)</div>'
            )
            self._sides[0].value = self.side_html(0, fa, paths)
            self._sides[1].value = self.side_html(1, fb, paths)

    def to_html(self, path: Any = None, *, keyframe_every: int = 200) -> str:
        """Write (when ``path`` is given) and return a self-contained static player of both logs."""
        from agentscope.widgets.player import forkview_page

        page = forkview_page(self, keyframe_every=keyframe_every)
        if path is not None:
            from pathlib import Path

            Path(path).write_text(page, encoding="utf-8")
        return page

    def __repr__(self) -> str:
        return (
            f"ForkView({self.names[0]}: {self.lengths[0]}, {self.names[1]}: {self.lengths[1]} entries, "
            f"divergence={self.divergence}, step={self.step})"
        )

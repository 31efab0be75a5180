"""``ForkView``: two logs of one machine side by side on one slider over aligned indices."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import ipywidgets
import traitlets

from agentscope.frames import Frame
from agentscope.render._escape import esc
from agentscope.render.chart import Layout, frame_styling, frame_svg, layout, legend_html
from agentscope.render.context import context_diff_html, context_html, diff_rows
from agentscope.render.dot import ObservedEdge
from agentscope.render.html import WIDGET_CSS, MarkerStrip, badge_html, event_html, style_block
from agentscope.widgets._chartwidget import ChartWidget
from agentscope.widgets._framewidget import FrameWidget
from agentscope.widgets._source import (
    OBSERVE_UP_TO,
    FrameCache,
    FrameSource,
    StepInfo,
    as_entries,
    make_fork_timelines,
    observed_moves,
    step_info,
)
from agentscope.widgets._treewidget import TreeWidget

__all__ = ["ForkView", "common_prefix", "differing_paths"]


def common_prefix(a: Any, b: Any) -> int:
    """Return the number of leading entries ``a`` and ``b`` share under the spec §6.1 rule.

    Delegates to :func:`agentscope.forks.compare` (no machine: a linear scan, no replay).
    """
    from agentscope.forks import compare

    return int(compare(a, b).common_prefix)


def differing_paths(left: Any, right: Any, base: str = "/context", *, limit: int = 500) -> list[str]:
    """Return JSON Pointers (under ``base``) where ``left`` and ``right`` differ, at most ``limit``.

    :func:`agentscope.jsondiff.differing_paths`, the definition ``agentscope diff`` lists too.
    """
    from agentscope.jsondiff import differing_paths as paths

    return paths(left, right, base)[:limit]


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
        Force a layout engine for the chart (see :func:`agentscope.render.chart`).
    observed : bool, optional
        Walk both logs once at construction to draw the moves they made (the targets of dynamic
        transitions) as observed edges, as the fork player does. Default: only when the longer
        log has at most 2,000 entries.
    divergence, kind : optional
        Mark this index as the divergence, labelled ``kind``, instead of where the two logs'
        entries part (e.g. one log under two machines: :meth:`agentscope.counterfactual.WhatIf.view`).

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
    >>> len(fv.diff_paths()), fv.diff_paths()[-3:]  # as many as `agentscope diff` lists there
    (9, ['/context/queue/0', '/context/rejections', '/context/triage'])

    In a notebook, ``fv`` as the last expression of a cell shows both sides on one chart;
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
        observed: bool | None = None,
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
        moves: list[ObservedEdge] = []
        if observed or (observed is None and self.n <= OBSERVE_UP_TO):  # both sides' moves drawn
            moves = [m for t in timelines for m in observed_moves(machine.graph, t)]
        base = layout(machine.graph, observed_edges=dict.fromkeys(moves), engine=engine)
        self.layout_: Layout = base
        """The one chart both sides are drawn on (machine layout; a's states lit in amber, b's in
        blue, states active on both in green)."""
        self.layouts: tuple[Layout, Layout] = (base, base)

        self._play = ipywidgets.Play(min=0, max=self.n - 1, interval=500, show_repeat=False)
        self._play.add_class("as-play")
        # slider and marker strip in one column, as in TimeTravel (WIDGET_CSS .as-track)
        self._slider = ipywidgets.IntSlider(
            min=0, max=self.n - 1, description="", readout=False, layout=ipywidgets.Layout(width="100%")
        )
        # the slider is the step; Play's ticks move it, each frame sets Play's value back (one
        # kernel request per key press, as in TimeTravel)
        traitlets.link((self._slider, "value"), (self, "step"))
        self._play.observe(lambda ch: self.go(int(ch["new"])), names="value")
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
        # the drawing goes to the front end once; a step sends only the classes to move
        self._chart = ChartWidget(
            svg=f'<div class="as-chart">{self.layout_.svg}</div>{legend_html(fork=True, names=self.names)}',
            layout=ipywidgets.Layout(width="100%", overflow="auto"),
        )
        # each side's name, badge and event, drawn by render/frame.js as in the static player
        self._sides = tuple(
            FrameWidget(
                skip=["as-actors"],
                title=str(name),
                layout=ipywidgets.Layout(flex="1 1 360px", min_width="0", overflow="auto"),
            ).add_class(f"as-side-{k}")
            for k, name in enumerate(self.names)
        )
        self._mode = ipywidgets.ToggleButtons(
            options=[("auto", "auto"), ("only differences", "diff"), ("both in full", "all")],
            value="auto",
            tooltips=[
                "only the differences from the divergence on, the full context before it",
                "only the paths where the two contexts differ",
                "both contexts in full, side by side",
            ],
            style={"button_width": "auto"},
        )
        self._mode.observe(lambda _: self._render(), names="value")
        self._context = TreeWidget(layout=ipywidgets.Layout(width="100%"))  # patched per step
        self._entries = ipywidgets.HTML(layout=ipywidgets.Layout(width="100%"))
        super().__init__(
            children=(
                ipywidgets.HTML(style_block() + WIDGET_CSS),
                ipywidgets.HBox(
                    [
                        self._prev,
                        self._play,
                        ipywidgets.VBox(
                            [self._slider, self._strip],
                            layout=ipywidgets.Layout(flex="1 1 320px", min_width="220px", max_width="560px"),
                        ).add_class("as-track"),
                        self._next,
                        self._div,
                    ],
                    layout=ipywidgets.Layout(flex_flow="row wrap", align_items="center", width="100%"),
                ),
                self._summary,
                self._chart,
                ipywidgets.HBox(
                    list(self._sides), layout=ipywidgets.Layout(width="100%", flex_flow="row wrap")
                ),
                ipywidgets.HBox(
                    [ipywidgets.HTML('<div class="as-sec">context</div>'), self._mode],
                    layout=ipywidgets.Layout(flex_flow="row wrap", align_items="center"),
                ),
                self._context,
                ipywidgets.HTML('<div class="as-sec">entries, aligned by index</div>'),
                self._entries,
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

    def side_html(self, k: int, frame: Frame | None, paths: Sequence[str] = ()) -> str:
        """HTML of one side's header at the current step: name, badge and event (or that it ended)."""
        name = esc(self.names[k])
        if frame is None:
            ended = (
                f'<span class="as-ended">{name} ended at entry {self.lengths[k] - 1} '
                f"({self.lengths[k]} entries)</span>"
            )
            return f'<div class="as-root as-side" data-side="{k}"><b>{name}</b> {ended}</div>'
        return (
            f'<div class="as-root as-side" data-side="{k}"><b>{name}</b> {badge_html(frame)}'
            f"{event_html(frame)}</div>"
        )

    def chart_html(self, fa: Frame | None, fb: Frame | None) -> str:
        """The one chart: a's active states (amber), b's (blue), both (green); each side's move lit."""
        lay = self.layout_
        a, b = self._infos(fa, fb)
        if a is None and b is None:
            return ""
        return frame_svg(
            lay,
            a.active if a else (),
            taken_edge=a.moves if a else (),
            taken_b=b.moves if b else (),
            entered=a.entered if a else (),
            exited=a.exited if a else (),
            also_active=b.active if b else (),
            names=self.names,
        )

    def chart_styling(self, fa: Frame | None, fb: Frame | None) -> tuple[str, str, list[list[str]]]:
        """The chart of this step as the widget's front end gets it (see :meth:`chart_html`): the
        HTML above the drawing, the expanded boxes and the ``[element id, classes]`` pairs."""
        a, b = self._infos(fa, fb)
        if a is None and b is None:
            return "", "", []
        return frame_styling(
            self.layout_,
            a.active if a else (),
            taken_edge=a.moves if a else (),
            taken_b=b.moves if b else (),
            entered=a.entered if a else (),
            exited=a.exited if a else (),
            also_active=b.active if b else (),
        )

    def _infos(self, fa: Frame | None, fb: Frame | None) -> tuple[StepInfo | None, StepInfo | None]:
        infos: list[StepInfo | None] = []
        for k, f in ((0, fa), (1, fb)):
            if f is None or f.persisted is None:
                infos.append(None)
                continue
            prev = self._frames[k].at(f.index - 1) if f.index > 0 else None
            infos.append(step_info(self.layout_.graph, prev, f))
        return infos[0], infos[1]

    def context_view(self, fa: Frame | None, fb: Frame | None) -> str:
        """The context at this step: the aligned diff, or the full tree(s), per the mode."""
        i = self.step
        mode = self._mode.value
        shared = self.divergence is not None and i < self.divergence
        if mode == "auto":
            mode = "all" if self.divergence is None or shared else "diff"
        if mode == "diff":
            if fa is None or fb is None or fa.persisted is None or fb.persisted is None:
                return '<div class="as-note">one side has ended: nothing to compare</div>'
            return context_diff_html(diff_rows(fa.context, fb.context), names=self.names)
        paths = _paths(fa, fb)
        if shared and not paths and fa is not None and fa.persisted is not None:
            return '<div class="as-meta">both sides (identical before the divergence)</div>' + context_html(
                fa.context, changed_paths=fa.changed_paths
            )
        cols = []
        for k, f in ((0, fa), (1, fb)):
            name = esc(self.names[k])
            if f is None:
                body = f'<div class="as-note">{name} ended at entry {self.lengths[k] - 1}</div>'
            elif f.persisted is None:
                body = '<div class="as-note">replay needs a machine</div>'
            else:
                body = context_html(f.context, changed_paths=paths or f.changed_paths)
            cols.append(f'<div class="as-col"><div class="as-meta">{name}</div>{body}</div>')
        return f'<div class="as-root as-cols">{"".join(cols)}</div>'

    def entries_html(self) -> str:
        """The entries of both logs around the step, aligned by index (differing rows marked)."""
        i = self.step
        lo, hi = max(0, i - 8), min(self.n, i + 9)

        def cell(e: Mapping[str, Any] | None, side: str) -> str:
            if e is None:
                return f'<td class="as-al-{side} as-al-none">(ended)</td>'
            ev = e.get("event")
            t = str(ev.get("type", "")) if isinstance(ev, Mapping) else ""
            return f'<td class="as-al-{side}">{esc(t)}</td>'

        rows = []
        for k in range(lo, hi):
            ea = self.entries[0][k] if k < self.lengths[0] else None
            eb = self.entries[1][k] if k < self.lengths[1] else None
            differ = ea is None or eb is None or ea.get("id") != eb.get("id")
            cls = " ".join(c for c in ("as-current" if k == i else "", "as-differ" if differ else "") if c)
            rows.append(f'<tr class="{cls}" data-index="{k}"><td>{k}</td>{cell(ea, "a")}{cell(eb, "b")}</tr>')
        head = f"<tr><th>#</th><th>{esc(self.names[0])}</th><th>{esc(self.names[1])}</th></tr>"
        return f'<div class="as-root"><table class="as-aligned">{head}{"".join(rows)}</table></div>'

    def _diverging_events(self) -> str:
        """``main APPROVE vs fork REJECT``: each side's event at the divergence (escaped)."""
        d = self.divergence
        parts = []
        for k in (0, 1):
            if d is None or d >= self.lengths[k]:
                parts.append(f"{esc(self.names[k])} (ended)")
                continue
            ev = self.entries[k][d].get("event")
            t = str(ev.get("type", "")) if isinstance(ev, Mapping) else ""
            parts.append(f"{esc(self.names[k])} {esc(t)}")
        return " vs ".join(parts)

    def summary_html(self, fa: Frame | None, fb: Frame | None) -> str:
        """Where this step is relative to the divergence, and how the two sides compare."""
        i = self.step
        kind = esc(self.kind)
        if self.divergence is None:
            where = f"{kind}: the logs agree on all {self.common} shared entries"
        elif i < self.divergence:
            where = f"shared entry (prefix of {self.common}); divergence at {self.divergence}"
        elif i == self.divergence:
            where = (
                f'<span class="as-diverge">at the divergence ({kind}, entry {self.divergence}: '
                f"{self._diverging_events()})</span>"
            )
        else:
            where = f'<span class="as-diverge">past the divergence ({kind}) at {self.divergence}</span>'
        if fa is None or fb is None:
            ended, other = (0, 1) if fa is None else (1, 0)
            tail = (
                f'<span class="as-ended">{esc(self.names[ended])} ended at entry '
                f"{self.lengths[ended] - 1}; {esc(self.names[other])} continues</span>"
            )
        else:
            tail = f"{len(_paths(fa, fb))} differing context path(s)"
        return f'<div class="as-root">step {i}: {where}; {tail}</div>'

    def _render(self) -> None:
        fa, fb = self.frames()
        with self.hold_sync():
            self._strip.value = self._strip_svg.svg(self.step)
            self._summary.value = self.summary_html(fa, fb)
            self._chart.show(*self.chart_styling(fa, fb), step=self.step)
            for k, f in enumerate((fa, fb)):
                ended = f"{self.names[k]} ended at entry {self.lengths[k] - 1} ({self.lengths[k]} entries)"
                self._sides[k].show(f, self.step, note=ended)
            self._context.value = self.context_view(fa, fb)
            self._entries.value = self.entries_html()
            if self._play.value != self.step:
                self._play.value = self.step

    def static_html(self) -> str:
        """The current step as static HTML (style, summary, the one chart, both sides, context,
        aligned entries; no widgets).

        Sent as the ``text/html`` fallback of the widget's output, so nbconvert HTML and front
        ends without the widget manager still show the step.
        """
        fa, fb = self.frames()
        return (
            f'{style_block()}<div class="as-root as-fallback" data-index="{self.step}">'
            f'<div class="as-meta">agentscope ForkView: step {self.step} of {self.n - 1} (static view; '
            "run the notebook to scrub)</div>"
            f"{self.summary_html(fa, fb)}{self.chart_html(fa, fb)}"
            f'<div class="as-cols">{self.side_html(0, fa)}{self.side_html(1, fb)}</div>'
            f"{self.context_view(fa, fb)}{self.entries_html()}</div>"
        )

    def _repr_mimebundle_(self, **kwargs: Any) -> dict[str, Any]:
        bundle = dict(super()._repr_mimebundle_(**kwargs) or {})
        bundle["text/html"] = self.static_html()
        return bundle

    def to_html(self, path: Any = None, *, keyframe_every: int = 200, redact: Any = ()) -> str:
        """Write (when ``path`` is given) and return a self-contained static player of both logs.

        ``fork.html#divergence`` opens at the divergence, ``#45`` at step 45; ``redact`` as in
        :meth:`agentscope.widgets.TimeTravel.to_html`. Built from the timelines and
        :attr:`diff` (:func:`agentscope.render.player.fork_page`, no fold).
        """
        from agentscope.render.player import fork_page

        paths = [redact] if isinstance(redact, str) else list(redact)
        page = fork_page(
            self.timelines,
            self.diff,
            self.machine.graph,
            names=self.names,
            logs=self.logs,
            keyframe_every=keyframe_every,
            redact=paths,
            divergence=self.divergence,
            kind=self.kind,
        )
        if path is not None:
            from pathlib import Path

            Path(path).write_text(page, encoding="utf-8")
        return page

    def __repr__(self) -> str:
        return (
            f"ForkView({self.names[0]}: {self.lengths[0]}, {self.names[1]}: {self.lengths[1]} entries, "
            f"divergence={self.divergence}, step={self.step})"
        )

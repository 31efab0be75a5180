"""``TimeTravel``: scrub a log step by step in Jupyter (ipywidgets).

The Python side holds state (``step``) and renders HTML strings; playback's clock runs in the
browser (``Play``), and each of its ticks moves the step in the kernel. The statechart is laid out
once; each step only restyles it.
"""

from __future__ import annotations

import time
from collections import deque
from typing import TYPE_CHECKING, Any

import ipywidgets
import traitlets

from agentscope.frames import Frame, Verdict
from agentscope.render._escape import esc
from agentscope.render.chart import Layout, frame_styling, frame_svg, layout, legend_html
from agentscope.render.context import context_html
from agentscope.render.dot import ObservedEdge
from agentscope.render.html import (
    WIDGET_CSS,
    MarkerStrip,
    Sparkline,
    badge_html,
    event_html,
    style_block,
)
from agentscope.widgets._chartwidget import ChartWidget
from agentscope.widgets._framewidget import FrameWidget
from agentscope.widgets._source import (
    OBSERVE_UP_TO,
    EntriesOnly,
    FrameCache,
    FrameSource,
    as_entries,
    entries_frame,
    iter_frames,
    make_timeline,
    observed_moves,
    step_info,
    usage_series,
)
from agentscope.widgets._treewidget import TreeWidget

if TYPE_CHECKING:  # pragma: no cover
    from agentscope.follow import Follower
    from agentscope.pipeline import Timeline

__all__ = ["TimeTravel"]

_WINDOW = 8
_ROW_MARKS = {"mismatch": "✗", "explained": "≈"}


def _cell(v: Any) -> str:
    """One cell of the entries window: timestamps whole (ms, UTC), other values cut at 28 chars."""
    iso = getattr(v, "isoformat", None)
    if callable(iso) and hasattr(v, "tzinfo"):
        try:
            text = str(iso(timespec="milliseconds"))
        except TypeError:
            text = str(iso())
        return text.replace("+00:00", "Z")
    if v is None or (isinstance(v, float) and v != v):
        return "—"
    text = str(v)
    return text if len(text) <= 28 else text[:27] + "…"


def _make_timeline(machine: Any, log: Any, checkpoint_every: int | None) -> FrameSource:
    # default: every state kept in the Timeline's byte-budgeted store, so the widget, its steps
    # and to_html() read the one pass and never fold again
    return make_timeline(machine, log, checkpoint_every)


def _ignored(source: Any) -> set[int]:
    """Entries the state did not react to, from the timeline's report (empty without one)."""
    df = getattr(getattr(source, "report", None), "df", None)
    if df is None or "ignored" not in getattr(df, "columns", ()):
        return set()
    return {int(i) for i, ig in zip(range(len(df)), df["ignored"].tolist(), strict=True) if ig}


def _marks(source: Any, n: int) -> dict[int, str]:
    """Verdict marks per index from the timeline's report (mismatch / explained / missing)."""
    marks: dict[int, str] = {}
    report = getattr(source, "report", None)
    df = getattr(report, "df", None)
    if df is not None and "verdict" in getattr(df, "columns", ()):
        for i, v in zip(range(len(df)), df["verdict"].tolist(), strict=True):
            if v in (Verdict.MISMATCH.value, Verdict.EXPLAINED.value):
                marks[int(i)] = str(v)
        return marks
    for i in getattr(source, "mismatch_indices", ()) or ():
        marks[int(i)] = Verdict.MISMATCH.value
    return marks


class TimeTravel(ipywidgets.VBox):  # type: ignore[misc]
    """Step through a log: chart with the active states lit, context, event, hash badge.

    ``TimeTravel(machine, log)`` replays with :class:`agentscope.pipeline.Timeline`;
    ``TimeTravel(log)`` shows entries and recorded hashes only (replay needs a machine).

    Parameters
    ----------
    machine_or_log : Machine | EventLog | Sequence[Mapping]
        The machine, or (no machine) the log itself.
    log : EventLog | Sequence[Mapping], optional
        The log, when a machine is given first.
    timeline : FrameSource, optional
        A ready :class:`~agentscope.pipeline.Timeline` (or anything with ``len`` and ``at``) to
        use instead of building one.
    checkpoint_every : int, optional
        Passed to ``Timeline`` (default: every state kept in its byte-budgeted store; the log is
        folded once for the widget, its steps and :meth:`to_html`).
    engine : str, optional
        Force a layout engine (see :func:`agentscope.render.chart`).
    observed : bool, optional
        Walk the whole log once at construction to add the moves it made (the targets of
        dynamic transitions) to the chart as observed edges. Default: only for logs of at most
        2,000 entries.
    follow : bool
        Live follow (:func:`agentscope.follow.follow`): ``log`` is then a path (a JSONL file, or
        ``STORE#THREAD``) being appended to. :meth:`poll` (or the background :meth:`watch`) reads
        and verifies the new entries; the slider's range grows, and the "follow tail" toggle
        keeps the newest entry shown. Scrubbing back turns it off until re-enabled.

    Attributes
    ----------
    step : int
        The entry index shown (traitlet; set it to move).
    frame : Frame
        The frame at ``step``.

    Examples
    --------
    >>> import agentscope as asc
    >>> from agentscope.examples import example_path
    >>> from agentscope.examples.python_machines import triage_machine
    >>> log = asc.read_log(example_path("g_triage.sqlite"), thread="main")
    >>> tt = asc.TimeTravel(triage_machine(), log)
    >>> tt.go(45)  # or tt.step = 45, or tt.first_mismatch()
    >>> tt.step, tt.frame.event_type, tt.frame.verdict.value
    (45, 'APPROVE', 'verified')

    In a notebook, ``tt`` as the last expression of a cell shows the widget;
    ``tt.to_html(path)`` writes the self-contained player.
    """

    step = traitlets.Int(0, help="Index of the log entry shown.")
    context_filter = traitlets.Unicode("", help="Show only context rows whose path or value contains this.")

    def __init__(
        self,
        machine_or_log: Any,
        log: Any = None,
        *,
        timeline: FrameSource | None = None,
        checkpoint_every: int | None = None,
        engine: Any = None,
        observed: bool | None = None,
        follow: bool = False,
    ) -> None:
        self.follower: Follower[Timeline] | None = None
        if follow:
            from agentscope.follow import follow as open_follow

            self.follower = open_follow(machine_or_log, log)
            timeline, log = self.follower.timeline, None
        if log is None and timeline is None:
            machine, log = None, machine_or_log
        else:
            machine = machine_or_log
        self.machine = machine
        self.event_log = log if log is not None else getattr(timeline, "log", None)
        self.entries = as_entries(self.event_log) if self.event_log is not None else []
        if timeline is None:
            timeline = (
                EntriesOnly(self.event_log)
                if machine is None
                else _make_timeline(machine, self.event_log, checkpoint_every)
            )
        self.timeline = timeline
        self._frames = FrameCache(timeline)
        n = len(timeline)
        if n == 0:
            raise ValueError("TimeTravel needs a log with at least one entry")
        self.n = n
        self.layout_: Layout | None = None
        if machine is not None:
            moves: list[ObservedEdge] = []
            if observed or (observed is None and n <= OBSERVE_UP_TO):
                moves = observed_moves(machine.graph, self.timeline)
            self.layout_ = layout(machine.graph, observed_edges=moves, engine=engine)
        self.marks = _marks(timeline, n)
        self.ignored = _ignored(timeline)
        self.mismatch_indices = sorted(i for i, k in self.marks.items() if k == Verdict.MISMATCH.value)
        self.violation_indices: list[int] = []
        """Entries where an invariant fails (set by :meth:`QuestionBox.check`; the static player's
        "first violation" button)."""
        if self.follower is not None:  # the entries grow: rows and marks come from the frames
            self.entries = self.timeline.entries  # type: ignore[attr-defined]
        self.table = entries_frame(self.event_log, self.entries) if self.entries and not follow else None
        self.usage = usage_series(self.entries) if self.entries and not follow else None
        # drawn once: a step only moves their cursors
        self._strip_svg = MarkerStrip(n, self.marks, width=520)
        self._spark_svg = (
            Sparkline(self.usage.tolist(), label="cumulative tokens") if self.usage is not None else None
        )

        self._play = ipywidgets.Play(min=0, max=n - 1, interval=400, description="play", show_repeat=False)
        # ipywidgets' Play "stop" button resets the value to ``min``; only play/pause are shown
        self._play.add_class("as-play")
        # the slider and the marker strip share one column, the strip inset like the slider's
        # track (WIDGET_CSS .as-track): a tick sits under the handle at its entry. No description
        # and no readout beside the track (the "go to" box shows the step).
        self._slider = ipywidgets.IntSlider(
            min=0,
            max=n - 1,
            value=0,
            description="",
            readout=False,
            continuous_update=True,
            layout=ipywidgets.Layout(width="100%"),
        )
        # The slider is the step; Play's ticks move it and each frame sets Play's value back (see
        # _render_step). No jslink between the two: a key press on a jslinked slider makes the
        # front end send two updates (slider, Play), each a kernel request with its own echo and
        # busy/idle status, all on the wire before the new step's first byte.
        traitlets.link((self._slider, "value"), (self, "step"))
        self._play.observe(lambda ch: self.go(int(ch["new"])), names="value")
        btn = ipywidgets.Layout(width="auto", flex="0 0 auto")
        self._first = ipywidgets.Button(description="|◀ first", layout=btn, tooltip="jump to entry 0")
        self._prev = ipywidgets.Button(description="◀", layout=btn, tooltip="previous entry")
        self._next = ipywidgets.Button(description="▶", layout=btn, tooltip="next entry")
        hashes = self.table["state_hash"] if self.table is not None and "state_hash" in self.table else None
        # no entries table (a ready timeline without its log): assume there is something to verify
        self.verifiable = machine is not None and (hashes is None or bool(hashes.notna().any()))
        """Whether there is anything to verify (a machine and at least one recorded hash)."""
        mm_tip = (
            "jump to the next mismatching entry"
            if self.mismatch_indices
            else "every recorded hash verified: no mismatch to jump to"
        )
        mm_layout = ipywidgets.Layout(
            width="auto", flex="0 0 auto", display=None if self.verifiable else "none"
        )
        self._next_mm = ipywidgets.Button(
            description="next mismatch ⚠",
            layout=mm_layout,
            tooltip=mm_tip,
            disabled=not self.mismatch_indices,
        )
        self._first_mm = ipywidgets.Button(
            description="first mismatch",
            layout=mm_layout,
            tooltip=mm_tip,
            disabled=not self.mismatch_indices,
        )
        self._jump = ipywidgets.BoundedIntText(
            min=0, max=n - 1, value=0, description="go to", layout=ipywidgets.Layout(width="150px")
        )
        self._first.on_click(lambda _: self.go(0))
        self._prev.on_click(lambda _: self.go(self.step - 1))
        self._next.on_click(lambda _: self.go(self.step + 1))
        self._next_mm.on_click(lambda _: self.next_mismatch())
        self._first_mm.on_click(lambda _: self.first_mismatch())
        self._jump.observe(lambda ch: self.go(int(ch["new"])), names="value")

        self._style = ipywidgets.HTML(style_block() + WIDGET_CSS)
        self._strip = ipywidgets.HTML()
        # the step's panels (badge, event, ...; actors and timers beside the context) are drawn in
        # the browser by render/frame.js from the frame data, as in the static player
        self._header = FrameWidget(skip=["as-actors"])
        # the drawing goes to the front end once; a step sends only the classes to move
        self._chart = ChartWidget(
            svg=(
                f'<div class="as-chart">{self.layout_.svg}</div>{legend_html()}'
                if self.layout_ is not None
                else ""
            ),
            layout=ipywidgets.Layout(width="100%", overflow="auto"),
        )
        self._search = ipywidgets.Text(
            placeholder="filter context by path or value", layout=ipywidgets.Layout(width="98%")
        )
        traitlets.link((self._search, "value"), (self, "context_filter"))
        self._context = TreeWidget()  # a step sends the rows that changed, not the tree
        self._actors = FrameWidget(only=["as-actors"])
        self._spark = ipywidgets.HTML()
        self._rows = ipywidgets.Select(
            options=[], rows=2 * _WINDOW + 1, layout=ipywidgets.Layout(width="98%")
        )
        self._rows.add_class("as-rows-select")
        self._rows.observe(self._on_row, names="value")
        self._syncing = False
        self._note = ipywidgets.HTML(
            ""
            if machine is not None
            else '<div class="as-note">No machine: showing entries and recorded hashes only. Replay (states, '
            "context, verification) needs a machine: <code>TimeTravel(machine, log)</code>.</div>"
        )

        self._tail = ipywidgets.ToggleButton(
            value=follow, description="follow tail", layout=btn, disabled=not follow,
            tooltip="keep the newest entry shown while the log grows",
        )
        self._to_tail = False
        self._poller: Any = None
        controls = ipywidgets.HBox(
            [
                *([self._tail] if follow else []),  # not following: no toggle at all
                self._first,
                self._prev,
                self._play,
                ipywidgets.VBox(
                    [self._slider, self._strip],
                    layout=ipywidgets.Layout(flex="1 1 320px", min_width="220px", max_width="560px"),
                ).add_class("as-track"),
                self._next,
                self._first_mm,
                self._next_mm,
                self._jump,
            ],
            layout=ipywidgets.Layout(flex_flow="row wrap", align_items="center", width="100%"),
        )
        right = ipywidgets.VBox(
            [ipywidgets.HTML('<div class="as-sec">context</div>'), self._search, self._context],
            layout=ipywidgets.Layout(flex="1 1 360px", min_width="0"),
        )
        side = ipywidgets.VBox(
            [self._actors, self._spark], layout=ipywidgets.Layout(flex="1 1 260px", min_width="0")
        )
        super().__init__(
            children=(
                self._style,
                controls,
                self._note,
                self._header,
                self._chart,
                ipywidgets.HBox([right, side], layout=ipywidgets.Layout(width="100%", flex_flow="row wrap")),
                ipywidgets.HTML('<div class="as-sec">entries</div>'),
                self._rows,
            )
        )
        self.add_class("agentscope-timetravel")
        self.render_ms: deque[float] = deque(maxlen=200)
        """Kernel-side milliseconds of the last (up to 200) frame switches (read, HTML, widgets)."""
        self._render()

    # navigation -----------------------------------------------------------------------------
    def go(self, n: int) -> None:
        """Show entry ``n`` (clamped to the log)."""
        self.step = max(0, min(self.n - 1, int(n)))

    def next_mismatch(self) -> int | None:
        """Jump to the first mismatching entry after the current one (wraps); return it."""
        after = [i for i in self.mismatch_indices if i > self.step] or self.mismatch_indices
        if not after:
            return None
        self.go(after[0])
        return after[0]

    def first_mismatch(self) -> int | None:
        """Jump to the first mismatching entry; return it (``None`` when the log verifies)."""
        if not self.mismatch_indices:
            return None
        self.go(self.mismatch_indices[0])
        return self.mismatch_indices[0]

    @property
    def frame(self) -> Frame:
        """The frame at :attr:`step`."""
        return self._frames.at(self.step)

    # rendering --------------------------------------------------------------------------------
    @traitlets.validate("step")
    def _clamp(self, proposal: Any) -> int:
        return max(0, min(self.n - 1, int(proposal["value"])))

    @traitlets.observe("step")
    def _on_step(self, change: Any) -> None:
        if self.follower is not None and not self._to_tail and change["new"] < self.n - 1:
            self._tail.value = False  # scrubbing back stops following the tail
        self._request_render()

    def _request_render(self) -> None:
        """Render the latest step once: in a kernel, steps that arrive while a render is queued are
        coalesced (only the newest one is drawn); outside an event loop, render now."""
        import asyncio

        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            loop = None
        if loop is None or not getattr(self, "_coalesce", True):
            self._render()
            return
        if not self._render_queued:
            self._render_queued = True
            loop.call_soon(self._flush)

    def _flush(self) -> None:
        self._render_queued = False
        if self._rendered_step != self.step:
            self._render()

    # live follow ------------------------------------------------------------------------------
    def poll(self) -> range:
        """Read and verify what was appended to the followed log; return the new indices.

        The slider's range grows; with "follow tail" on, the newest entry is shown. Raises
        ``ValueError`` unless the widget was built with ``follow=True``.
        """
        if self.follower is None:
            raise ValueError("poll() needs TimeTravel(machine, path, follow=True)")
        new = self.follower.poll()
        problem = self.follower.problem
        if problem is not None:
            self._note.value = f'<div class="as-note">following stopped: {esc(str(problem))}</div>'
            self._tail.value = False
        if not len(new):
            return new
        for i in new:  # marks from the new frames only: O(new entries)
            f = self._frames.at(i)
            if f.verdict in (Verdict.MISMATCH, Verdict.EXPLAINED):
                self.marks[i] = f.verdict.value
                if f.verdict is Verdict.MISMATCH:
                    self.mismatch_indices.append(i)
            if f.ignored:
                self.ignored.add(i)
        self.n = len(self.timeline)
        self._strip_svg = MarkerStrip(self.n, self.marks, width=520)
        with self.hold_sync():
            for w in (self._play, self._slider, self._jump):
                w.max = self.n - 1
            self._next_mm.disabled = self._first_mm.disabled = not self.mismatch_indices
        if self._tail.value:
            self._to_tail = True
            try:
                self.step = self.n - 1
            finally:
                self._to_tail = False
        else:
            self._strip.value = self._strip_svg.svg(self.step)
        return new

    def watch(self, interval: float = 0.5) -> None:
        """Poll in a background thread every ``interval`` seconds until :meth:`unwatch` or a
        follow problem."""
        import threading

        if self._poller is not None:
            return
        stop = threading.Event()

        follower = self.follower

        def run() -> None:
            while not stop.wait(interval):
                self.poll()
                if follower is None or follower.problem is not None:
                    return

        self._poller = (stop, threading.Thread(target=run, daemon=True, name="agentscope-follow"))
        self._poller[1].start()

    def unwatch(self) -> None:
        """Stop the background polling of :meth:`watch`."""
        if self._poller is not None:
            self._poller[0].set()
            self._poller[1].join(timeout=5)
            self._poller = None

    @traitlets.observe("context_filter")
    def _on_filter(self, change: Any) -> None:
        self._context.value = self.context_view(self.frame)

    def _on_row(self, change: Any) -> None:
        if self._syncing or change["new"] is None:
            return
        self.go(int(change["new"]))

    def context_view(self, frame: Frame) -> str:
        """HTML of ``frame``'s context (filtered by :attr:`context_filter`)."""
        if frame.persisted is None:
            return '<div class="as-note">replay needs a machine</div>'
        return context_html(
            frame.context, changed_paths=frame.changed_paths, filter=self.context_filter or None
        )

    def chart_view(self, frame: Frame, previous: Frame | None) -> str:
        """HTML of the statechart restyled for ``frame`` (empty without a machine)."""
        if self.layout_ is None or frame.persisted is None:
            return ""
        info = step_info(self.layout_.graph, previous, frame)
        return frame_svg(
            self.layout_, info.active, taken_edge=info.moves, entered=info.entered, exited=info.exited
        )

    def chart_styling(self, frame: Frame, previous: Frame | None) -> tuple[str, str, list[list[str]]]:
        """The chart of ``frame`` as the widget's front end gets it: the HTML above the drawing
        and the ``[element id, classes]`` pairs (see :func:`agentscope.render.chart.frame_styling`)."""
        if self.layout_ is None or frame.persisted is None:
            return "", "", []
        info = step_info(self.layout_.graph, previous, frame)
        return frame_styling(
            self.layout_, info.active, taken_edge=info.moves, entered=info.entered, exited=info.exited
        )

    _render_queued = False
    _rendered_step = -1

    def _render(self) -> None:
        t0 = time.perf_counter()
        try:
            self._render_step()
        finally:
            self.render_ms.append((time.perf_counter() - t0) * 1000)

    def _render_step(self) -> None:
        i = self.step
        self._rendered_step = i
        # the previous frame first: the timeline then continues its fold by one entry for ``i``
        previous = self._frames.at(i - 1) if i > 0 and self.machine is not None else None
        frame = self.frame
        with self.hold_sync():
            self._header.show(frame, i)
            self._chart.show(*self.chart_styling(frame, previous), step=i)
            self._context.value = self.context_view(frame)
            self._actors.show(frame, i)
            self._strip.value = self._strip_svg.svg(i)
            if self._spark_svg is not None:
                self._spark.value = self._spark_svg.svg(i)
            self._sync_rows(i)
            if self._jump.value != i:
                self._jump.value = i
            if self._play.value != i:  # last: it only keeps Play's next tick from here
                self._play.value = i

    def _sync_rows(self, i: int) -> None:
        lo, hi = max(0, i - _WINDOW), min(self.n, i + _WINDOW + 1)
        if self.table is not None:  # one slice for the window, not a Series per row
            rows = self.table.iloc[lo:hi].itertuples(index=False, name=None)
            cells = ["  ".join(_cell(v) for v in row) for row in rows]
        else:
            cells = [self._frames.at(k).event_type for k in range(lo, hi)]
        opts = []
        for k, text in zip(range(lo, hi), cells, strict=True):
            mark = _ROW_MARKS.get(self.marks.get(k, ""), " ")
            mark += "∅" if k in self.ignored else " "
            opts.append((f"{mark} {k:>6}  {text}", k))
        self._syncing = True
        try:
            with self._rows.hold_sync():  # the window and the selection in one message
                self._rows.options = opts
                self._rows.value = i
        finally:
            self._syncing = False

    def static_html(self) -> str:
        """The current step as static HTML (style, badge, event, chart, context; no widgets).

        Sent as the ``text/html`` fallback of the widget's output, so nbconvert HTML and front
        ends without the widget manager still show the step.
        """
        i = self.step
        previous = self._frames.at(i - 1) if i > 0 and self.machine is not None else None
        frame = self.frame
        ctx = (
            '<div class="as-sec">context</div>' + self.context_view(frame)
            if frame.persisted is not None
            else ""
        )
        return (
            f'{style_block()}<div class="as-root as-fallback" data-index="{i}">'
            f'<div class="as-meta">agentscope TimeTravel: step {i} of {self.n - 1} (static view; '
            "run the notebook to scrub)</div>"
            f"<div>{badge_html(frame)}</div>{event_html(frame)}{self.chart_view(frame, previous)}{ctx}</div>"
        )

    def _repr_mimebundle_(self, **kwargs: Any) -> dict[str, Any]:
        bundle = dict(super()._repr_mimebundle_(**kwargs) or {})
        bundle["text/html"] = self.static_html()
        return bundle

    # export -----------------------------------------------------------------------------------
    def to_html(
        self,
        path: Any = None,
        *,
        keyframe_every: int = 200,
        redact: Any = (),
        coverage: Any = False,
        violations: Any = None,
    ) -> str:
        """Write (when ``path`` is given) and return a self-contained static player page.

        ``player.html#45`` (or ``?step=45``) opens at step 45 and the address follows the slider.
        ``redact`` lists paths (JSON Pointer ``/event/tickets/*/subject`` or dotted
        ``event.email``; ``*`` any key or index; into the entry or the persisted snapshot, e.g.
        ``/context/customer/*``) whose values are replaced by ``[redacted]`` everywhere in the
        page; hashes and verdicts stay those of the original log. See
        :func:`agentscope.render.player.timeline_page` (built from the timeline, no fold) and
        :mod:`agentscope.render.redact`.

        ``coverage=True`` adds a heat-map toggle to the chart: the visits per state of this log,
        counted by :func:`agentscope.coverage` from the view's timeline (its one pass, no fold
        again); a :class:`~agentscope.coverage_map.Coverage` (e.g. of a whole store) is drawn
        as given. ``violations`` (entry indices, or :func:`agentscope.check`'s DataFrame;
        default: :attr:`violation_indices`, set by :meth:`QuestionBox.check
        <agentscope.widgets.QuestionBox.check>`, plus any ``"violation"`` mark) gives the page a
        "first violation" button.

        Raises
        ------
        ValueError
            ``coverage=True`` without a machine, or on a view whose timeline is not a
            :class:`~agentscope.pipeline.Timeline` (pass a ``Coverage`` then); a ``Coverage`` of
            another machine.
        """
        from agentscope.render.player import timeline_page

        paths = [redact] if isinstance(redact, str) else list(redact)
        page = timeline_page(
            self.timeline,
            self.machine.graph if self.machine is not None else None,
            log=self.event_log,
            n=self.n,
            marks=self.marks,
            usage=self.usage,
            keyframe_every=keyframe_every,
            redact=paths,
            coverage=self._coverage(coverage),
            violations=self._violations(violations),
        )
        if path is not None:
            from pathlib import Path

            Path(path).write_text(page, encoding="utf-8")
        return page

    def _coverage(self, coverage: Any) -> Any:
        """``to_html``'s ``coverage`` argument as a Coverage (or ``None``)."""
        if coverage is None or coverage is False:
            return None
        if coverage is not True:
            return coverage
        from agentscope.pipeline import Timeline

        if self.machine is None:
            raise ValueError("to_html(coverage=True) needs a machine: coverage counts replayed states")
        if not isinstance(self.timeline, Timeline):
            raise ValueError(
                "to_html(coverage=True) reads the view's Timeline; this view has a "
                f"{type(self.timeline).__name__}: pass coverage=agentscope.coverage(...) instead"
            )
        from agentscope.coverage_map import coverage as count

        return count(self.timeline, self.machine)

    def _violations(self, violations: Any) -> list[int]:
        """``to_html``'s ``violations`` argument as entry indices."""
        if violations is None:
            got = set(self.violation_indices)
            got.update(i for i, k in self.marks.items() if k == "violation")
            return sorted(got)
        if hasattr(violations, "columns"):  # check()'s DataFrame
            return sorted({int(i) for i in violations["index"]})
        return sorted({int(i) for i in violations})

    def frames(self) -> Any:
        """Iterate over every frame in order (sequential replay)."""
        return iter_frames(self.timeline)

    def __repr__(self) -> str:
        mode = "replay" if self.machine is not None else "entries only"
        return f"TimeTravel({self.n} entries, step={self.step}, {mode})"

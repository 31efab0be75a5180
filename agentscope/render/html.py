"""HTML fragments for frames, logs, reports and forks (all escaped, all bounded).

These are the render functions the data classes' ``_repr_html_`` and the widgets call:
:func:`frame_html` (event, hash badge, statechart, context, actors and timers of one step),
:func:`badge_html`, :func:`event_html`, :func:`actors_html`, :func:`sparkline_svg`,
:func:`marker_strip_svg`, :func:`log_html`, :func:`verify_report_html`, :func:`fork_diff_html`.
Every string from a log passes :func:`agentscope.render._escape.esc`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from agentscope.frames import Frame, Verdict, set_html_view
from agentscope.log.entry import event_of, event_type, recorded_hash
from agentscope.render._escape import esc, truncate, widget_safe
from agentscope.render.chart import CHART_CSS, Layout, frame_svg
from agentscope.render.context import CONTEXT_CSS, context_html

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "BASE_CSS",
    "WIDGET_CSS",
    "MarkerStrip",
    "Sparkline",
    "actors_html",
    "badge_html",
    "event_html",
    "fork_diff_html",
    "frame_html",
    "log_html",
    "marker_strip_svg",
    "page_css",
    "short",
    "sparkline_svg",
    "style_block",
    "table_html",
    "verify_report_html",
    "widget_safe",
]

BASE_CSS = """
.as-root{font-family:system-ui,-apple-system,Segoe UI,Helvetica,Arial,sans-serif;font-size:13px;color:#263238}
.as-badge{display:inline-block;padding:2px 8px;border-radius:10px;font-weight:600;font-size:12px}
.as-badge-verified{background:#e8f5e9;color:#1b5e20;border:1px solid #66bb6a}
.as-badge-mismatch{background:#ffebee;color:#b71c1c;border:1px solid #e53935}
.as-badge-explained{background:#fff8e1;color:#8d6e00;border:1px solid #ffca28}
.as-badge-missing,.as-badge-unchecked{background:#eceff1;color:#455a64;border:1px solid #b0bec5}
.as-hash{font-family:monospace}
.as-event{margin:4px 0}
.as-event-type{font-weight:700;font-family:monospace}
.as-ignored{display:inline-block;margin-left:6px;padding:0 6px;border-radius:8px;
  background:#eceff1;color:#546e7a;font-size:11px}
.as-table{border-collapse:collapse;font-size:12px}
.as-table td,.as-table th{border-bottom:1px solid #eceff1;padding:1px 6px;text-align:left;vertical-align:top;
  line-height:1.35}
.as-table tr.as-current{background:#fff3c4}
.as-actors .as-table{max-width:100%}
.as-actors .as-table td{overflow-wrap:anywhere}
.as-table tr.as-row-mismatch td:first-child{border-left:3px solid #e53935}
.as-sec{margin:6px 0 2px;font-weight:600;color:#455a64}
.as-cols{display:flex;gap:12px;align-items:flex-start;flex-wrap:wrap}
.as-col{flex:1 1 380px;min-width:0}
.as-note{color:#546e7a;font-style:italic}
.as-rows-select select{font-family:monospace;font-size:12px}
.as-diverge{color:#b71c1c;font-weight:700}
.as-ended{color:#6a1b9a;font-weight:600}
.as-cdiff{border-collapse:collapse;font:12px/1.4 monospace;width:100%;table-layout:fixed}
.as-cdiff td,.as-cdiff th{border-bottom:1px solid #eceff1;padding:1px 6px;text-align:left;vertical-align:top;
  overflow-wrap:anywhere}
.as-cdiff th{font-family:system-ui,sans-serif}
.as-cdiff td:first-child{width:34%;color:#6a1b9a}
.as-cdiff tr.as-d-changed td{background:#fff3e0}
.as-cdiff tr.as-d-only-a td.as-d-a,.as-cdiff tr.as-d-only-b td.as-d-b{background:#e8f5e9}
.as-cdiff tr.as-d-only-a td.as-d-b,.as-cdiff tr.as-d-only-b td.as-d-a{color:#9e9e9e;font-style:italic}
.as-aligned{border-collapse:collapse;font-size:12px;width:100%}
.as-aligned td,.as-aligned th{border-bottom:1px solid #eceff1;padding:1px 6px;text-align:left}
.as-aligned tr.as-current{background:#fff3c4}
.as-aligned tr.as-differ td.as-al-b{color:#b71c1c}
.as-aligned td.as-al-none{color:#9e9e9e;font-style:italic}
/* JupyterLab and nbconvert right-align every cell of an HTML output (two classes and a tag); the
   views' tables read left to right, so their cells keep left alignment at the same weight */
.as-root .as-table td,.as-root .as-table th,.as-root .as-cdiff td,.as-root .as-cdiff th,
.as-root .as-aligned td,.as-root .as-aligned th{text-align:left}
"""


WIDGET_CSS = (
    "<style>.as-play button:nth-of-type(2){display:none}"  # Play's stop resets to 0; pause keeps it
    ".agentscope-timetravel .as-rows-select select{font-family:monospace;font-size:12px}"
    # the chart scrolls inside its own box (.as-chart), so the legend and the rest wrap to the page
    ".agentscope-timetravel .widget-html,.agentscope-forkview .widget-html,"
    ".agentscope-timetravel .widget-html-content,.agentscope-forkview .widget-html-content"
    "{min-width:0;max-width:100%}"
    ".as-treew{min-width:0;max-width:100%}"  # the context tree (an anywidget, not a widget-html)
    # the marker strip under the slider, inset as ipywidgets insets the slider's track (the
    # handle's centre travels the track): a tick sits under the handle at its entry
    ".as-track{gap:0}.as-track .widget-html{margin-top:0;margin-bottom:0}"
    ".as-track .widget-html-content{line-height:0;height:8px;padding:0 var(--as-track-inset,8px)}"
    ".as-track .widget-html-content svg{width:100%;height:8px}"
    ".agentscope-timetravel .widget-html-content>.as-chart,"
    ".agentscope-forkview .widget-html-content>.as-chart{overflow:auto;max-width:100%}</style>"
)
"""Extra ``<style>`` of the ipywidgets views (Play shows play/pause only: its stop resets to 0)."""


def page_css() -> str:
    """Return the whole stylesheet the fragments need (base, chart, context)."""
    return BASE_CSS + CHART_CSS + CONTEXT_CSS


def style_block() -> str:
    """Return ``<style>`` with :func:`page_css` (embed once per output)."""
    return "<style>" + page_css() + "</style>"


def short(value: Any, limit: int = 80) -> str:
    """Return a compact one-line JSON-ish text of ``value``, cut at ``limit`` chars (not escaped)."""
    import orjson

    try:
        text = orjson.dumps(value, default=str, option=orjson.OPT_NON_STR_KEYS).decode()
    except TypeError:
        text = repr(value)
    shown, cut = truncate(text, limit)
    return shown + ("…" if cut else "")


def _plain(v: Any, limit: int) -> str:
    """Escaped text of ``v``: strings as they are (cut at ``limit``), anything else as short JSON."""
    return esc(truncate(v, limit)[0] if isinstance(v, str) else short(v, limit))


def badge_html(frame: Frame) -> str:
    """Return the hash badge of ``frame``: verified / mismatch (expected vs actual) / missing /
    explained-benign / unchecked. The element has ``data-verdict`` for tests and scripts."""
    v = frame.verdict
    rec, comp = frame.recorded_hash, frame.computed_hash
    if v is Verdict.VERIFIED:
        text = f'✓ verified <span class="as-hash">{esc(rec)}</span>'
    elif v is Verdict.MISMATCH:
        text = (
            f'✗ mismatch: recorded <span class="as-hash">{esc(rec)}</span>, '
            f'replayed <span class="as-hash">{esc(comp)}</span>'
        )
    elif v is Verdict.EXPLAINED:
        text = (
            f'≈ explained: recorded <span class="as-hash">{esc(rec)}</span>, replayed '
            f'<span class="as-hash">{esc(comp)}</span> — {esc(short(frame.explanation or "", 160))}'
        )
    elif v is Verdict.MISSING:
        text = f'no hash recorded (replayed <span class="as-hash">{esc(comp)}</span>)'
    else:
        text = f'unchecked (recorded <span class="as-hash">{esc(rec or "—")}</span>)'
    title = esc(frame.explanation or "")
    return f'<span class="as-badge as-badge-{v.value}" data-verdict="{v.value}" title="{title}">{text}</span>'


def event_html(frame: Frame, *, max_string: int = 120) -> str:
    """Return the step's event: index, type, id, causation, ignored mark and payload tree."""
    e = frame.entry
    payload = {k: v for k, v in frame.event.items() if k != "type"}
    bits = [
        f'<span class="as-meta">#{frame.index}</span> '
        f'<span class="as-event-type">{esc(frame.event_type)}</span>'
    ]
    if frame.ignored:
        bits.append('<span class="as-ignored" title="the state did not react to this event">ignored</span>')
    plain = _plain
    meta = [f"id {plain(e.get('id', ''), 60)}"]
    if "causationId" in e:
        meta.append(f"caused by {plain(e.get('causationId'), 60)}")
    if "recordedAt" in e:
        meta.append(plain(e.get("recordedAt"), 40))
    tree = (
        context_html(
            payload,
            root_path="/event",
            root_label="payload",
            max_string=max_string,
            open_depth=1,
            max_items=50,
            max_depth=6,
            max_nodes=300,
        )
        if payload
        else ' <span class="as-meta">(no payload)</span>'
    )
    return (
        f'<div class="as-event">{"".join(bits)} <span class="as-meta">{" · ".join(meta)}</span>{tree}</div>'
    )


def actors_html(frame: Frame) -> str:
    """Return the in-flight actors (``children``) and pending timers of ``frame`` as small tables."""
    rows = []
    for aid, child in list(frame.children.items())[:50]:
        c = child if isinstance(child, Mapping) else {}
        snap_raw = c.get("snapshot")
        snap: Mapping[str, Any] = snap_raw if isinstance(snap_raw, Mapping) else {}
        rows.append(
            f"<tr><td>{_plain(aid, 40)}</td><td>{_plain(c.get('src', ''), 40)}</td>"
            f"<td>{_plain(snap.get('status', ''), 20)}</td>"
            f"<td>{esc(short(snap.get('input'), 100))}</td></tr>"
        )
    actors = (
        (
            '<table class="as-table"><tr><th>actor</th><th>src</th><th>status</th><th>input</th></tr>'
            + "".join(rows)
            + "</table>"
        )
        if rows
        else '<div class="as-meta">no actors in flight</div>'
    )
    trows = []
    for tid, timer in list(frame.timers.items())[:50]:
        t = timer if isinstance(timer, Mapping) else {}
        trows.append(
            f"<tr><td>{_plain(tid, 60)}</td><td>{esc(short(t.get('delay'), 20))}</td>"
            f"<td>{esc(short(t.get('event'), 80))}</td></tr>"
        )
    timers = (
        (
            '<table class="as-table"><tr><th>timer</th><th>delay</th><th>event</th></tr>'
            + "".join(trows)
            + "</table>"
        )
        if trows
        else '<div class="as-meta">no pending timers</div>'
    )
    return f'<div class="as-actors">{actors}{timers}</div>'


def frame_html(
    frame: Frame,
    graph_layout: Layout | None = None,
    *,
    previous: Frame | None = None,
    taken_edge: Any = None,
    with_style: bool = True,
    max_string: int = 200,
) -> str:
    """Return one step as HTML: event, badge, statechart (restyled, never re-laid out), context.

    Parameters
    ----------
    frame : Frame
    graph_layout : Layout, optional
        The machine's layout; without it no chart is drawn.
    previous : Frame, optional
        The frame before, to mark states entered and exited.
    taken_edge : ObservedEdge | int | iterable, optional
        The move(s) this step made, highlighted on the chart.
    with_style : bool
        Prepend the ``<style>`` block (leave out when the page has it already).
    """
    parts = [style_block()] if with_style else []
    parts.append(f'<div class="as-root as-frame" data-index="{frame.index}">')
    parts.append(f"<div>{badge_html(frame)}</div>{event_html(frame)}")
    if graph_layout is not None and frame.persisted is not None:
        active = graph_layout.graph.active_ids(frame.value)
        entered: Iterable[str] = ()
        exited: Iterable[str] = ()
        if previous is not None and previous.persisted is not None:
            before = graph_layout.graph.active_ids(previous.value)
            entered, exited = active - before, before - active
        parts.append(frame_svg(graph_layout, active, taken_edge=taken_edge, entered=entered, exited=exited))
    if frame.persisted is None:
        parts.append('<div class="as-note">replay needs a machine: pass one to see states and context</div>')
    else:
        parts.append('<div class="as-sec">context</div>')
        parts.append(context_html(frame.context, changed_paths=frame.changed_paths, max_string=max_string))
        parts.append('<div class="as-sec">actors and timers</div>' + actors_html(frame))
    parts.append("</div>")
    return "".join(parts)


class Sparkline:
    """A small inline SVG line of ``values`` (e.g. cumulative tokens per step), drawn once.

    The line is computed at construction; :meth:`svg` only adds the cursor, so a widget moving
    its step does not walk the values again. Points are decimated to at most ``2 * width`` so the
    SVG size does not grow with the log.

    Parameters
    ----------
    values : Sequence[float]
        One value per step.
    width, height : int
        SVG size in pixels.
    label : str
        Shown (escaped) after the line with the value at the cursor.
    """

    def __init__(
        self, values: Sequence[float], *, width: int = 240, height: int = 36, label: str = "tokens"
    ) -> None:
        self.values = list(values)
        self.width, self.height, self.label = width, height, label
        n = len(self.values)
        self._vmax = max(max(self.values), 1e-9) if n else 1e-9
        step = max(1, n // (2 * width))
        idx = list(range(0, n, step))
        if idx and idx[-1] != n - 1:
            idx.append(n - 1)
        self._pts = " ".join(f"{x:.1f},{y:.1f}" for x, y in map(self._xy, idx))

    def _xy(self, i: int) -> tuple[float, float]:
        n, w, h = len(self.values), self.width, self.height
        return 2 + (w - 4) * (i / max(n - 1, 1)), h - 2 - (h - 4) * (self.values[i] / self._vmax)

    def svg(self, current: int | None = None) -> str:
        """The SVG (and label); ``current`` marks one index with a dot and a vertical rule.

        Returns ``""`` for no values; an index out of range gets no mark and the last value.
        """
        n, width, height = len(self.values), self.width, self.height
        if n == 0:
            return ""
        mark = ""
        if current is not None and 0 <= current < n:
            cx, cy = self._xy(current)
            mark = (
                f'<line x1="{cx:.1f}" x2="{cx:.1f}" y1="0" y2="{height}" stroke="#f9a825"/>'
                f'<circle class="as-spark-cur" cx="{cx:.1f}" cy="{cy:.1f}" r="3" fill="#d84315"/>'
            )
        val = self.values[current] if current is not None and 0 <= current < n else self.values[-1]
        label = esc(self.label)
        return (
            f'<svg class="as-spark" width="{width}" height="{height}" viewBox="0 0 {width} {height}" '
            f'role="img" aria-label="{label}"><polyline fill="none" stroke="#1565c0" stroke-width="1.5" '
            f'points="{self._pts}"/>{mark}</svg> <span class="as-meta">{label}: {val:,.0f}</span>'
        )


def sparkline_svg(
    values: Sequence[float],
    current: int | None = None,
    *,
    width: int = 240,
    height: int = 36,
    label: str = "tokens",
) -> str:
    """Return a small inline SVG line of ``values``; see :class:`Sparkline` (this draws it once).

    ``current`` marks one index with a dot and a vertical rule.
    """
    return Sparkline(values, width=width, height=height, label=label).svg(current)


_STRIP_COLORS = {"mismatch": "#e53935", "explained": "#ffb300", "missing": "#90a4ae", "divergence": "#8e24aa",
                 "violation": "#00897b", "hit": "#1e88e5"}
_STRIP_PRIO = {"mismatch": 3, "divergence": 3, "violation": 3, "explained": 2, "hit": 2, "missing": 1}


class MarkerStrip:
    """A thin SVG strip for under a slider, one tick per marked index, drawn once.

    ``marks`` maps an index to a verdict/kind (``"mismatch"`` red, ``"explained"`` amber,
    ``"missing"`` grey, ``"divergence"`` purple, ``"violation"`` teal (an invariant, see
    :func:`agentscope.check`), ``"hit"`` blue (a ``find_all`` match)). Ticks are merged per
    pixel, so the size is bounded by ``width``. The ticks are computed at construction;
    :meth:`svg` only adds the cursor.
    """

    def __init__(self, n: int, marks: Mapping[int, str], *, width: int = 600, height: int = 8) -> None:
        self.n, self.width, self.height = n, width, height
        by_px: dict[int, str] = {}
        for i, kind in marks.items():
            px = self._px(i)
            if _STRIP_PRIO.get(kind, 0) >= _STRIP_PRIO.get(by_px.get(px, ""), -1):
                by_px[px] = kind
        self._ticks = "".join(
            f'<rect x="{px}" y="0" width="2" height="{height}" fill="{_STRIP_COLORS.get(k, "#e53935")}">'
            f"<title>{esc(k)}</title></rect>"
            for px, k in sorted(by_px.items())
        )

    def _px(self, i: int) -> int:
        return int((self.width - 1) * (i / max(self.n - 1, 1)))

    def svg(self, current: int | None = None) -> str:
        """The strip's SVG with a dark cursor rule at index ``current`` (none when ``None``)."""
        width, height = self.width, self.height
        cur = ""
        if current is not None and self.n > 0:
            cur = f'<rect x="{self._px(current)}" y="0" width="1" height="{height}" fill="#263238"/>'
        return (
            f'<svg class="as-strip" width="{width}" height="{height}" viewBox="0 0 {width} {height}" '
            f'preserveAspectRatio="none"><rect width="{width}" height="{height}" fill="#f5f5f5"/>'
            f"{self._ticks}{cur}</svg>"
        )


def marker_strip_svg(
    n: int, marks: Mapping[int, str], current: int | None = None, *, width: int = 600, height: int = 8
) -> str:
    """Return a thin SVG strip for under a slider; see :class:`MarkerStrip` (this draws it once)."""
    return MarkerStrip(n, marks, width=width, height=height).svg(current)


def table_html(
    df: pd.DataFrame,
    *,
    current: int | None = None,
    marks: Mapping[int, str] | None = None,
    max_cell: int = 60,
) -> str:
    """Return a small escaped HTML table of ``df`` (row index = entry index), the current row lit."""
    marks = marks or {}
    head = "<tr><th>#</th>" + "".join(f"<th>{esc(c)}</th>" for c in df.columns) + "</tr>"
    rows = []
    for idx, row in zip(df.index, df.itertuples(index=False), strict=True):
        cls = []
        if current is not None and idx == current:
            cls.append("as-current")
        if marks.get(int(idx)) == "mismatch":
            cls.append("as-row-mismatch")
        cells = "".join(
            f"<td>{esc(short(v, max_cell) if not isinstance(v, str) else truncate(v, max_cell)[0])}</td>"
            for v in row
        )
        rows.append(f'<tr class="{" ".join(cls)}" data-index="{int(idx)}"><td>{int(idx)}</td>{cells}</tr>')
    return f'<table class="as-table">{head}{"".join(rows)}</table>'


def log_html(entries: Sequence[Mapping[str, Any]], *, head: int = 10, source: str | None = None) -> str:
    """Return a summary of a log (length, first/last entries) for ``EventLog._repr_html_``."""
    n = len(entries)
    rows = []
    show = list(range(min(head, n)))
    if n > head:
        show += list(range(max(head, n - 3), n))
    prev = -1
    for i in show:
        if i != prev + 1:
            rows.append('<tr><td colspan="4" class="as-meta">…</td></tr>')
        e = entries[i]
        ev = event_of(e)
        h = recorded_hash(e)
        rows.append(
            f"<tr><td>{i}</td><td>{esc(short(event_type(e), 50))}</td>"
            f"<td class='as-hash'>{esc(short(h, 12) if h is not None else '—')}</td>"
            f"<td>{esc(short({k: v for k, v in ev.items() if k != 'type'}, 80))}</td></tr>"
        )
        prev = i
    title = f"{n:,} entries" + (f" from {esc(source)}" if source else "")
    return (
        style_block() + f'<div class="as-root"><b>EventLog</b> <span class="as-meta">{title}</span>'
        '<table class="as-table"><tr><th>#</th><th>event</th><th>stateHash</th><th>payload</th></tr>'
        + "".join(rows)
        + "</table></div>"
    )


def verify_report_html(ok: bool, checked: int, mismatches: pd.DataFrame, *, max_rows: int = 20) -> str:
    """Return a verify report: one summary line, then at most ``max_rows`` mismatch rows."""
    if ok:
        head = (
            f'<span class="as-badge as-badge-verified" data-verdict="verified">'
            f"✓ all {checked:,} verified</span>"
        )
        body = ""
    else:
        first = mismatches.iloc[0]
        idx = first["index"] if "index" in mismatches.columns else mismatches.index[0]
        head = (
            f'<span class="as-badge as-badge-mismatch" data-verdict="mismatch">✗ {len(mismatches):,} '
            f"mismatch{'es' if len(mismatches) != 1 else ''} of {checked:,}, first at entry {esc(idx)}</span>"
        )
        body = table_html(mismatches.head(max_rows).reset_index(drop=True))
    return style_block() + f'<div class="as-root">{head}{body}</div>'


def fork_diff_html(
    common_prefix: int,
    divergence: int | None,
    left_suffix: Sequence[Mapping[str, Any]],
    right_suffix: Sequence[Mapping[str, Any]],
    changes: Iterable[tuple[str, Any, Any]],
    *,
    names: tuple[str, str] = ("a", "b"),
    max_rows: int = 30,
) -> str:
    """Return a fork comparison: shared prefix, divergence, both suffixes' event types, changes."""

    def types(entries: Sequence[Mapping[str, Any]]) -> str:
        ts = [event_type(e) for e in entries[:12]]
        more = f" … +{len(entries) - 12}" if len(entries) > 12 else ""
        return esc(", ".join(ts) + more) or '<span class="as-meta">(none)</span>'

    if divergence is None:
        head = f"identical for all {common_prefix:,} shared entries"
    else:
        head = (
            f'<span class="as-diverge">diverge at entry {divergence}</span> '
            f"after {common_prefix:,} shared entries"
        )
    rows = []
    for k, (path, left, right) in enumerate(changes):
        if k >= max_rows:
            rows.append('<tr><td colspan="3" class="as-meta">…</td></tr>')
            break
        rows.append(
            f"<tr><td>{esc(path)}</td><td>{esc(short(left, 60))}</td><td>{esc(short(right, 60))}</td></tr>"
        )
    table = (
        (
            f'<table class="as-table"><tr><th>path</th><th>{esc(names[0])}</th><th>{esc(names[1])}</th></tr>'
            + "".join(rows)
            + "</table>"
        )
        if rows
        else ""
    )
    return (
        style_block() + f'<div class="as-root"><b>ForkDiff</b> {head}'
        f"<div>{esc(names[0])} only: {types(left_suffix)}</div>"
        f"<div>{esc(names[1])} only: {types(right_suffix)}</div>{table}</div>"
    )


set_html_view(frame_html)  # Frame._repr_html_ draws with the rich view once render is loaded

"""The static player: one self-contained HTML file that scrubs a log with no kernel and no network.

Layout of the page: the statechart SVG(s) laid out once (with the edges observed in the log), then
one ``<script type="application/json">`` holding, per step, the event (bounded), the verdict and
hashes, the active-state configuration (an index into a table of distinct configurations), the
element ids entered/exited/taken, the changed paths and the context **delta-encoded**: a full
keyframe every ``keyframe_every`` steps and an RFC 6902 JSON Patch (:func:`agentscope.jsondiff.json_patch`)
from the previous step otherwise. Size grows linearly with the log. A small plain-JS player
renders it with the same controls as the widget; it writes log data with ``textContent`` only,
and the embedded JSON is escaped with :func:`agentscope.render._escape.json_for_script`.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from agentscope.engines.base import Graph
from agentscope.frames import Frame
from agentscope.jsondiff import json_patch
from agentscope.log.entry import recorded_at_text
from agentscope.render._escape import esc, json_for_script
from agentscope.render.chart import (
    Layout,
    active_path_lines,
    expansion,
    expansion_details,
    layout,
    legend_html,
    moves_from_taken,
    subgraph,
)
from agentscope.render.coverage import COVERAGE_CSS, coverage_classes, coverage_legend_html
from agentscope.render.dot import ObservedEdge
from agentscope.render.html import marker_strip_svg, page_css
from agentscope.render.redact import Redaction
from agentscope.render.source import FrameSource, iter_frames, step_info, usage_series

if TYPE_CHECKING:
    from agentscope.coverage_map import Coverage
    from agentscope.forks import ForkDiff

__all__ = ["bound", "fork_page", "frame_fields", "frame_js", "pane_data", "timeline_page"]

MAX_STRING = 10_000
MAX_DEPTH = 32
MAX_ITEMS = 1_000


def bound(
    value: Any,
    *,
    max_string: int = MAX_STRING,
    max_depth: int = MAX_DEPTH,
    max_items: int = MAX_ITEMS,
    _depth: int = 0,
) -> Any:
    """Return a JSON value no larger than the limits, for embedding in a page.

    Strings longer than ``max_string`` are cut and end with ``"… [+N chars]"``; containers deeper
    than ``max_depth`` become ``"[depth limit: N members]"``; containers with more than
    ``max_items`` members keep the first ones plus a marker (``"…": "+N more"`` for objects, a
    trailing ``"… +N more"`` for arrays). Non-finite floats and non-JSON values become strings.
    """
    if isinstance(value, str):
        if len(value) > max_string:
            return value[:max_string] + f"… [+{len(value) - max_string:,} chars]"
        return value
    if value is None or isinstance(value, bool | int):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if isinstance(value, Mapping | list | tuple):
        if _depth >= max_depth:
            return f"[depth limit: {len(value)} members]"
        kw = {"max_string": max_string, "max_depth": max_depth, "max_items": max_items, "_depth": _depth + 1}
        if isinstance(value, Mapping):
            out: dict[str, Any] = {}
            for k, (key, v) in enumerate(value.items()):
                if k >= max_items:
                    out["…"] = f"+{len(value) - max_items:,} more"
                    break
                out[str(key)] = bound(v, **kw)
            return out
        items = [bound(v, **kw) for v in list(value)[:max_items]]
        if len(value) > max_items:
            items.append(f"… +{len(value) - max_items:,} more")
        return items
    return f"<{type(value).__name__}>"


def _children(frame: Frame) -> list[list[Any]]:
    out = []
    for aid, c in list(frame.children.items())[:50]:
        c = c if isinstance(c, Mapping) else {}
        raw = c.get("snapshot")
        snap: Mapping[str, Any] = raw if isinstance(raw, Mapping) else {}
        out.append(
            [
                str(aid)[:200],
                str(c.get("src", ""))[:200],
                str(snap.get("status", ""))[:40],
                bound(snap.get("input"), max_string=300, max_depth=4, max_items=20),
            ]
        )
    return out


def _timers(frame: Frame) -> list[list[Any]]:
    out = []
    for tid, t in list(frame.timers.items())[:50]:
        t = t if isinstance(t, Mapping) else {}
        out.append([str(tid)[:200], bound(t.get("delay"), max_string=40, max_depth=1, max_items=2)])
    return out


def frame_fields(frame: Frame, *, first: bool = False) -> dict[str, Any]:
    """The frame data one step's panels are drawn from (by ``render/frame.js``, in the static player
    and in the widgets alike), every value bounded for a page.

    Keys: ``t`` event type, ``id``, ``c`` causation id (or ``None``), ``at`` recordedAt text, ``p``
    the event payload (without ``type``), ``v`` verdict, ``r`` recorded and ``h`` replayed hash,
    ``x`` explanation (or ``None``), ``ig`` ignored, ``ch`` changed paths (empty for the first
    step, ``first=True``); replayed frames add ``ac`` actors ``[id, src, status, input]``, ``tm``
    timers ``[id, delay]`` and ``st`` status; a step of several microsteps adds ``mi``: per
    microstep ``[event type, [[kind, source, [targets], guard], ...]]`` (state ids without the
    root's, at most :data:`MAX_SUBSTEPS`). A new panel adds its field here and its
    renderer to ``frame.js``'s ``PANELS`` (docs/pipeline.md, "A new panel").
    """
    ev = frame.event
    row: dict[str, Any] = {
        "t": frame.event_type[:500],
        "id": str(frame.entry.get("id", ""))[:200],
        "c": (str(frame.entry["causationId"])[:200] if "causationId" in frame.entry else None),
        "at": (recorded_at_text(frame.entry) or "")[:60],
        "p": bound(
            {kk: vv for kk, vv in ev.items() if kk != "type"},
            max_string=2_000,
            max_depth=12,
            max_items=100,
        ),
        "v": frame.verdict.value,
        "r": frame.recorded_hash,
        "h": frame.computed_hash,
        "x": (frame.explanation or "")[:500] or None,
        "ig": bool(frame.ignored),
        "ch": [] if first else [p[:300] for p in frame.changed_paths[:100]],  # nothing before step 0
    }
    if frame.persisted is not None:
        row["ac"] = _children(frame)
        row["tm"] = _timers(frame)
        row["st"] = str(frame.status)[:40]
    groups = frame.microsteps
    if len(groups) > 1:  # a step of several microsteps: the eventless chain / raised events after it
        row["mi"] = [
            [
                g[0].event[:200],
                [[t.kind, _short_id(t.source), [_short_id(x) for x in t.targets[:8]], (t.guard or "")[:100]]
                 for t in g[:20]],
            ]
            for g in groups[:MAX_SUBSTEPS]
        ]
    return row


def _short_id(state_id: str) -> str:
    """A state id as a person reads it on the chart: without the machine's root id."""
    return (state_id.partition(".")[2] or state_id)[:200]


@dataclass
class _Collected:
    rows: list[dict[str, Any]]
    infos: list[tuple[frozenset[str], frozenset[str], frozenset[str]]]
    moves: list[tuple[ObservedEdge, ...]]

    def observed(self) -> list[ObservedEdge]:
        return list(dict.fromkeys(m for ms in self.moves for m in ms))


def pane_data(
    frames: Iterable[Frame],
    graph: Graph | None,
    *,
    name: str,
    keyframe_every: int = 200,
    prefix: str = "as",
    engine: Any = None,
    redact: Sequence[str] = (),
) -> tuple[dict[str, Any], Layout | None]:
    """Collect one log's per-step data (one pass over ``frames``) and lay its chart out once.

    Returns the pane's JSON-ready dict and the :class:`Layout` (with the observed edges) whose
    SVG the page embeds (``None`` without a graph). ``redact``: paths of
    :class:`~agentscope.render.redact.Redaction`, applied to the frames before anything reads them.
    """
    pane, lay, _ = _pane(Redaction(redact).frames(frames), graph, name, keyframe_every, prefix, engine)
    return pane, lay


def _pane(
    frames: Iterable[Frame],
    graph: Graph | None,
    name: str,
    keyframe_every: int,
    prefix: str = "as",
    engine: Any = None,
) -> tuple[dict[str, Any], Layout | None, list[Layout]]:
    got = _collect(frames, graph, keyframe_every)
    lay = layout(graph, observed_edges=got.observed(), prefix=prefix, engine=engine) if graph else None
    subs = expansions(lay, [got]) if lay is not None else []
    return _finish(got, lay, name, subs), lay, subs


def _collect(frames: Iterable[Frame], graph: Graph | None, keyframe_every: int) -> _Collected:
    if keyframe_every < 1:
        raise ValueError(f"keyframe_every must be >= 1, got {keyframe_every}")
    rows: list[dict[str, Any]] = []
    moves_per: list[tuple[ObservedEdge, ...]] = []
    infos: list[tuple[frozenset[str], frozenset[str], frozenset[str]]] = []
    prev: Frame | None = None
    prev_ctx: Any = None
    for k, frame in enumerate(frames):
        row = frame_fields(frame, first=not k)
        patch: list[dict[str, Any]] | None = None
        if frame.persisted is not None:
            ctx = bound(frame.context)
            if prev_ctx is not None and (k % keyframe_every != 0 or not frame.changed_paths):
                patch = json_patch(prev_ctx, ctx)
            if k % keyframe_every == 0 or patch is None:
                row["k"] = ctx
            else:
                row["d"] = patch
            if not frame.changed_paths and patch:  # folded frames: derive from the context patch
                row["ch"] = list(dict.fromkeys("/context" + op["path"] for op in patch))[:100]
            prev_ctx = ctx
        if graph is not None and frame.persisted is not None:
            info = step_info(graph, prev, frame)
            moves_per.append(info.moves)
            infos.append((info.active, info.entered, info.exited))
            chain = _substeps(graph, frame)
            if chain:
                row["_ms"] = chain
        else:
            moves_per.append(())
            infos.append((frozenset(), frozenset(), frozenset()))
        rows.append(row)
        prev = frame
    return _Collected(rows, infos, moves_per)


MAX_SUBSTEPS = 50
"""At most this many microsteps of one step go into the page (a longer eventless chain is cut)."""


def _substeps(graph: Graph, frame: Frame) -> list[tuple[str, tuple[ObservedEdge, ...], frozenset[str]]]:
    """The microsteps of a step that took several (an eventless chain, raised events): per
    microstep, the type of the event it processed, the moves it made and the state ids active
    after it (from :attr:`Frame.microstep_values`). Empty for a step of one microstep or none."""
    groups = frame.microsteps
    values = frame.microstep_values or ()
    if len(groups) < 2:
        return []
    out = []
    for k, group in enumerate(groups[:MAX_SUBSTEPS]):
        active = frozenset(graph.active_ids(values[k])) if k < len(values) else frozenset()
        out.append((group[0].event, moves_from_taken(graph, group), active))
    return out


MAX_EXPANSIONS = 8
"""At most this many summary boxes of a collapsed chart are laid out for the player (the boxes
the log's active states visit most; each within :data:`agentscope.render.chart.EXPAND_BUDGET_S`)."""


def expansions(lay: Layout, got: Sequence[_Collected]) -> list[Layout]:
    """For a collapsed chart: the expanded charts of the summary boxes the logs' active states
    visit (at most :data:`MAX_EXPANSIONS`, the most visited first), observed moves drawn."""
    if not lay.collapsed:
        return []
    visits: dict[str, int] = {}
    for g in got:
        for active, _, _ in g.infos:
            for box in lay.collapsed & active:
                visits[box] = visits.get(box, 0) + 1
    chosen = sorted(visits, key=lambda b: (-visits[b], b))[:MAX_EXPANSIONS]
    return [expansion(lay, box, observed_edges=lay.plan.observed) for box in sorted(chosen)]


def expansions_html(lay: Layout, subs: Sequence[Layout]) -> str:
    """The ``<details>`` of each expanded box (unstyled; the player lights them per step)."""
    out = []
    for sub in subs:
        box = sub.graph.root
        _, leaving, entering = subgraph(lay.graph, box)
        out.append(expansion_details(lay, box, sub, leaving, entering, sub.svg))
    return "".join(out)


def _lit(charts: Sequence[Layout], lay: Layout, moves: Iterable[ObservedEdge]) -> list[str]:
    """The element ids drawing ``moves`` in the chart and its expanded boxes, sorted."""
    return sorted(
        {
            e
            for c in charts
            for m in moves
            if c is lay or (m.source in c.graph.nodes and m.target in c.graph.nodes)
            for e in c.edge_elements(m)
        }
    )


def _finish(
    got: _Collected, lay: Layout | None, name: str, subs: Sequence[Layout] = ()
) -> dict[str, Any]:
    rows, infos, moves_per = got.rows, got.infos, got.moves
    paths: list[list[str]] = []
    if lay is not None:
        configs: dict[tuple[str, ...], int] = {}
        charts = [lay, *subs]
        for row, (active, entered, exited), moves in zip(rows, infos, moves_per, strict=True):
            if not active:
                row["a"] = -1
                continue
            key = tuple(
                sorted({e for c in charts for s in active if (e := c.plan.states.get(s)) in c.element_ids})
            )
            k = row["a"] = configs.setdefault(key, len(configs))
            if lay.collapsed and k == len(paths):  # the active path of a new configuration
                paths.append(active_path_lines(lay.graph, active))
            row["en"] = sorted({c.plan.states[s] for c in charts for s in entered if s in c.plan.states})
            row["ex"] = sorted({c.plan.states[s] for c in charts for s in exited if s in c.plan.states})
            row["tk"] = _lit(charts, lay, moves)
            # the microsteps (frame field "ms"): per sub-step [event type, lit edge ids, index of
            # the configuration active after it (-1: unknown)]
            chain = row.pop("_ms", None)
            if chain:
                ms = []
                for ev, sub_moves, sub_active in chain:
                    sub_key = tuple(sorted({e for c in charts for s in sub_active
                                            if (e := c.plan.states.get(s)) in c.element_ids}))
                    a = configs.setdefault(sub_key, len(configs)) if sub_active else -1
                    if lay.collapsed and a == len(paths):
                        paths.append(active_path_lines(lay.graph, sub_active))
                    ms.append([ev[:200], _lit(charts, lay, sub_moves), a])
                row["ms"] = ms
        config_list = [list(c) for c in configs]
    else:
        config_list = []
    for row in rows:  # leave out defaults to keep the page small (the player reads them as absent)
        row.pop("_ms", None)
        for fld in ("c", "x", "ig", "ch", "en", "ex", "tk"):
            if row.get(fld) in (None, False, []):
                row.pop(fld, None)
        if row.get("h") == row.get("r") and row.get("h") is not None:
            row.pop("h")
    return {
        "name": name,
        "n": len(rows),
        "frames": rows,
        "configs": config_list,
        "paths": paths,
        "engine": lay.engine if lay is not None else None,
    }


def _page(
    title: str,
    heading: str,
    data: dict[str, Any],
    svg: str,
    strip: str,
    *,
    fork: bool,
    names: Sequence[str],
    heat_legend: str = "",
    xcharts: str = "",
) -> str:
    n_panes = len(data["panes"])
    heads = "".join(
        f'<div class="as-col as-pane" data-pane="{k}"><div class="as-pane-head"><b class="as-pane-name"></b> '
        f'<span class="as-badge-slot"></span></div><div class="as-event-slot"></div>'
        f'<div class="as-sec as-microsteps-slot-title">microsteps</div><div class="as-microsteps-slot"></div>'
        f'<div class="as-sec as-actors-title">actors and timers</div><div class="as-actors"></div></div>'
        for k in range(n_panes)
    )
    ctxs = "".join(
        f'<div class="as-col as-ctx-pane" data-pane="{k}"><div class="as-ctx-name as-meta"></div>'
        f'<div class="as-ctx"></div></div>'
        for k in range(n_panes)
    )
    mode = (
        '<label class="as-meta">show <select id="as-cmode" aria-label="context view">'
        '<option value="auto">auto (differences from the divergence on)</option>'
        '<option value="diff">only differences</option><option value="all">both contexts in full</option>'
        "</select></label>"
        if fork
        else ""
    )
    rows_head = (
        f"<tr><th>#</th><th>{esc(names[0])}</th><th>{esc(names[1])}</th><th>verdicts</th></tr>"
        if fork
        else "<tr><th>#</th><th>event</th><th>id</th><th>recorded at</th><th>hash</th><th>verdict</th></tr>"
    )
    heat = (
        '<label id="as-heat-toggle" class="as-meta" title="switch the chart between the current '
        'step and the coverage heat map (visits per state)"><input type="checkbox" id="as-heat"> '
        "heat map</label>"
        if heat_legend and svg
        else ""
    )
    heat_css = COVERAGE_CSS if heat else ""
    heat_box = (
        f'<div id="as-heat-legend" hidden>{heat_legend}<div id="as-heat-summary" class="as-meta"></div></div>'
        if heat
        else ""
    )
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{esc(title)}</title>
<style>{page_css()}
{heat_css}
body{{margin:12px}}
.as-controls{{display:flex;gap:6px;align-items:center;flex-wrap:wrap}}
.as-track{{display:inline-flex;flex-direction:column;flex:1 1 320px;min-width:200px;max-width:520px}}
.as-track input[type=range]{{width:100%;margin:0}}
#as-strip{{display:block;padding:0 {THUMB_HALF}px;line-height:0}}
#as-strip svg{{display:block;width:100%;height:8px}}
.as-rows tr{{cursor:pointer}}
.as-table tr.as-row-violation td:first-child{{border-left:3px solid #00897b}}
#as-first-vio{{color:#00695c}}
.as-pane-head{{margin:4px 0}}
#as-status{{margin:4px 0}}
.as-status-badge{{display:inline-block;padding:1px 6px;border-radius:8px;font-size:12px;font-weight:600}}
button{{cursor:pointer}}
</style></head>
<body class="as-root">
<h3 style="margin:4px 0" id="as-title">{esc(heading)}</h3>
<div class="as-controls">
<button id="as-first" title="jump to entry 0">|◀ first</button>
<button id="as-prev" title="previous entry">◀</button>
<button id="as-play" title="play / pause">▶ play</button>
<span class="as-track"><input id="as-slider" type="range" min="0" value="0" aria-label="step">
<span id="as-strip" title="each tick sits under its entry's position">{strip}</span></span>
<button id="as-next" title="next entry">▶</button>
<button id="as-first-mm">first mismatch</button>
<button id="as-next-mm">next mismatch ⚠</button>
<button id="as-first-vio" title="jump to the first entry that breaks an invariant">first violation</button>
<button id="as-div">jump to divergence</button>
<label>go to <input id="as-goto" type="number" min="0" value="0" style="width:7em"></label>
<span id="as-pos" class="as-meta"></span>
<a id="as-link" class="as-meta" href="#0" title="link to this step">link to this step</a>
{heat}
</div>
<div id="as-status" class="as-meta" aria-live="polite"></div>
<div id="as-note" class="as-note"></div>
<div id="as-summary"></div>
<div id="as-chart-note"></div>
<div id="as-active-path"></div>
<div id="as-xcharts">{xcharts}</div>
<div class="as-chart" id="as-chart">{svg}</div>
{heat_box}
{legend_html(fork=fork, names=(names[0], names[-1])) if svg else ""}
<div class="as-cols" id="as-heads">{heads}</div>
<div class="as-sec">context {mode}</div>
<input class="as-ctx-search" type="search" placeholder="filter by path or value"
 aria-label="filter the context">
<div id="as-cdiff"></div>
<div class="as-cols" id="as-ctxs">{ctxs}</div>
<div id="as-spark"></div>
<div class="as-sec">entries</div>
<table class="as-table as-rows{" as-aligned" if fork else ""}"><thead>
{rows_head}</thead>
<tbody id="as-rows"></tbody></table>
<script type="application/json" id="as-data">{json_for_script(data)}</script>
<script>{frame_js()}
{_player_js()}</script>
</body></html>
"""


THUMB_HALF = 8
"""Half the width of Chromium's range thumb (16 px): the strip is inset by it on both sides, so a
tick sits under the thumb's centre at its entry (the thumb travels the track minus its width)."""


def _player_js() -> str:
    from importlib.resources import files

    return files("agentscope.render").joinpath("player.js").read_text(encoding="utf-8")


def frame_js() -> str:
    """The frame renderer (``render/frame.js``): how one step's panels (badge, event, actors and
    timers, ...) and chart classes are drawn from the frame data of :func:`frame_fields`. The same
    text is inlined into the static player and bundled into the widgets' anywidget front end."""
    from importlib.resources import files

    return files("agentscope.render").joinpath("frame.js").read_text(encoding="utf-8")


def _tap(frames: Iterable[Frame], entries: list[Mapping[str, Any]] | None) -> Iterator[Frame]:
    """``frames`` as they pass, their entries appended to ``entries`` (when given)."""
    for f in frames:
        if entries is not None:
            entries.append(f.entry)
        yield f


def source_label(log: Any) -> str:
    """The file name and thread of a log's source (never the absolute local path)."""
    from pathlib import PurePath

    src = getattr(log, "source", None)
    thread = getattr(log, "thread", None)
    name = PurePath(str(src)).name if src else "log"
    return f"{name} · thread {thread}" if thread else name


def _verifiable(frames: Sequence[Mapping[str, Any]]) -> bool:
    return any(f.get("r") is not None and f.get("v") not in ("unchecked",) for f in frames)


def timeline_page(
    source: FrameSource,
    graph: Graph | None,
    *,
    log: Any = None,
    n: int | None = None,
    marks: Mapping[int, str] | None = None,
    usage: Any = None,
    keyframe_every: int = 200,
    redact: Sequence[str] = (),
    coverage: Coverage | None = None,
    violations: Iterable[int] = (),
) -> str:
    """Return the static player page of one log, built from its timeline (one read of its frames).

    Parameters
    ----------
    source : FrameSource
        A :class:`~agentscope.pipeline.Timeline` (its one pass is read in order, no fold) or any
        object with ``len`` and ``at``.
    graph : Graph or None
        The statechart to draw (``None``: entries and hashes only).
    log : optional
        The log, for the title and pane name (``source``, ``thread``).
    n : int, optional
        Steps (default ``len(source)``).
    marks : Mapping[int, str], optional
        Verdict marks for the track; every mismatch the frames show is added.
    usage : array-like, optional
        Cumulative tokens after each entry (a sparkline).
    keyframe_every : int, optional
        A full context every this many steps, JSON patches in between.
    redact : Sequence[str], optional
        Paths (see :mod:`agentscope.render.redact`) replaced by a marker in everything the page
        contains; hashes and verdicts are those of the original log.
    coverage : Coverage, optional
        Visit counts (:func:`agentscope.coverage`, read from the same pass) drawn as a heat map
        on the same layout: a "heat map" toggle switches the chart between the current step and
        the coverage styling of :mod:`agentscope.render.coverage` (``as-heat-<1..5>`` fills,
        ``as-unvisited`` dashed grey). Ignored without a graph.
    violations : Iterable[int], optional
        Entry indices where an invariant fails (:func:`agentscope.check`'s ``index`` column);
        with any, a "first violation" button jumps to the earliest.

    Raises
    ------
    ValueError
        ``coverage`` counts another machine than ``graph``'s.
    """
    n = len(source) if n is None else n
    label = source_label(log)
    red = Redaction(redact)  # the one redacted copy every part of the page reads
    entries: list[Mapping[str, Any]] = []
    pane, lay, subs = _pane(
        _tap(iter_frames(red.source(source)), entries if red and usage is not None else None),
        graph,
        str(getattr(log, "thread", None) or "log"),
        keyframe_every,
    )
    if red and usage is not None:  # the sparkline counts the redacted entries' tokens
        usage = usage_series(entries)
    marks = dict(marks or {})
    for i, f in enumerate(pane["frames"]):  # the walk saw every verdict: mark them all
        if f["v"] in ("mismatch", "explained") and i not in marks:
            marks[i] = f["v"]
    broken = sorted({int(i) for i in violations if 0 <= int(i) < n})
    if broken:  # the first violation on the track, like a mismatch (teal; a verdict mark wins)
        marks.setdefault(broken[0], "violation")
    data = {
        "kind": "timetravel",
        "n": n,
        "K": keyframe_every,
        "panes": [pane],
        "marks": {str(i): k for i, k in marks.items()},
        "divergence": None,
        "verifiable": graph is not None and _verifiable(pane["frames"]),
        "chartNote": lay.note if lay is not None else None,
        "usage": [round(float(x), 3) for x in usage.tolist()] if usage is not None else None,
        "note": None
        if graph is not None
        else "No machine: entries and recorded hashes only. "
        "Replay (states, context, verification) needs a machine.",
        "violations": broken,
        "coverage": None,
    }
    heat_legend = ""
    if coverage is not None and lay is not None and graph is not None:
        data["coverage"], heat_legend = _coverage_data(coverage, graph, lay)
    heading = f"agentscope — {label} ({n} entries)"
    svg = lay.svg if lay is not None else ""
    return _page(
        heading,
        heading,
        data,
        svg,
        marker_strip_svg(n, marks, None, width=520),
        fork=False,
        names=["log"],
        heat_legend=heat_legend,
        xcharts=expansions_html(lay, subs) if lay is not None else "",
    )


def _coverage_data(cov: Coverage, graph: Graph, lay: Layout) -> tuple[dict[str, Any], str]:
    """The page's heat-map data (class, visits and state id per drawn state element) and legend."""
    if cov.graph is not graph and cov.machine_id != graph.machine_id:
        raise ValueError(f"coverage of machine {cov.machine_id!r} cannot be drawn on this chart")
    visits = cov.visits
    classes, most = coverage_classes(lay, graph, visits)
    states = [
        [eid, sid[:300], int(visits.get(sid, 0)), classes[eid][0]]
        for sid, eid in lay.plan.states.items()
        if eid in classes and eid in lay.element_ids
    ]
    shown = [s for s in graph.nodes if s != graph.root]
    data = {
        "states": states,
        "most": most,
        "visited": sum(1 for s in shown if visits.get(s, 0) > 0),
        "total": len(shown),
        "logs": len(cov.logs),
    }
    return data, coverage_legend_html(most)


def fork_page(
    timelines: tuple[FrameSource, FrameSource],
    diff: ForkDiff,
    graph: Graph,
    *,
    names: tuple[str, str] = ("a", "b"),
    logs: tuple[Any, Any] = (None, None),
    keyframe_every: int = 200,
    redact: Sequence[str] = (),
    divergence: int | None = None,
    kind: str | None = None,
) -> str:
    """Return the static player page of two forks, from their timelines and
    :class:`~agentscope.forks.ForkDiff` (each timeline's frames are read once, in order): one
    chart with both sides' active states in two colours, both events, an aligned context diff
    and entries.

    ``logs`` (optional) give the sides' ``source``/``thread`` for the title; ``redact`` as in
    :func:`timeline_page`; ``divergence`` and ``kind`` mark another index than ``diff``'s (as
    ``ForkView`` does for one log under two machines).
    """
    from agentscope.render.context import diff_rows

    red = Redaction(redact)  # the one redacted copy every part of the page reads
    frames_a = list(iter_frames(red.source(timelines[0])))
    frames_b = list(iter_frames(red.source(timelines[1])))
    n = max(len(frames_a), len(frames_b))
    overridden = divergence is not None and divergence != diff.divergence
    common = divergence if overridden and divergence is not None else int(diff.common_prefix)
    divergence = diff.divergence if divergence is None else divergence
    got_a = _collect(frames_a, graph, keyframe_every)
    got_b = _collect(frames_b, graph, keyframe_every)
    # one chart (machine layout, both sides' observed moves drawn over it)
    la = layout(graph, observed_edges=dict.fromkeys(got_a.observed() + got_b.observed()), prefix="as")
    subs = expansions(la, [got_a, got_b])
    pa, pb = _finish(got_a, la, names[0], subs), _finish(got_b, la, names[1], subs)
    diffs: list[list[list[Any]] | None] = []
    counts: list[int | None] = []  # differing context paths per step (the rows are the first 100)
    for i in range(n):
        fa = frames_a[i] if i < len(frames_a) else None
        fb = frames_b[i] if i < len(frames_b) else None
        if fa is not None and fb is not None and fa.persisted is not None and fb.persisted is not None:
            every = diff_rows(fa.context, fb.context, limit=sys.maxsize)
            rows = every[:100]
            counts.append(len(every))
            diffs.append(
                [
                    [
                        p,
                        st,
                        bound(a, max_string=300, max_depth=3, max_items=20),
                        bound(b, max_string=300, max_depth=3, max_items=20),
                    ]
                    for p, st, a, b in rows
                ]
            )
        else:
            diffs.append(None)  # a side has ended (or was not replayed): nothing to compare
            counts.append(None)
    marks = {divergence: "divergence"} if divergence is not None else {}
    data = {
        "kind": "fork",
        "n": n,
        "K": keyframe_every,
        "panes": [pa, pb],
        "marks": {str(k): v for k, v in marks.items()},
        "divergence": divergence,
        "divKind": str(diff.kind if kind is None else kind),
        "common": common,
        "diffs": diffs,
        "diffCounts": counts,
        "verifiable": _verifiable(pa["frames"]) or _verifiable(pb["frames"]),
        "chartNote": la.note,
        "usage": None,
        "note": None,
    }
    labels = [source_label(x) if getattr(x, "source", None) else s for x, s in zip(logs, names, strict=True)]
    heading = f"agentscope — fork: {names[0]} vs {names[1]}"
    title = f"{heading} ({labels[0]} / {labels[1]})"
    return _page(
        title,
        heading,
        data,
        la.svg,
        marker_strip_svg(n, marks, None, width=520),
        fork=True,
        names=names,
        xcharts=expansions_html(la, subs),
    )

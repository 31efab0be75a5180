"""The static player: one self-contained HTML file that scrubs a log with no kernel and no network.

Layout of the page: the statechart SVG(s) laid out once (with the edges observed in the log), then
one ``<script type="application/json">`` holding, per step, the event (bounded), the verdict and
hashes, the active-state configuration (an index into a table of distinct configurations), the
element ids entered/exited/taken, the changed paths and the context **delta-encoded**: a full
keyframe every ``keyframe_every`` steps and an RFC 6902 JSON Patch (``jsonpatch.make_patch``)
from the previous step otherwise. Size grows linearly with the log. A small plain-JS player
renders it with the same controls as the widget; it writes log data with ``textContent`` only,
and the embedded JSON is escaped with :func:`agentscope.render._escape.json_for_script`.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import jsonpatch

from agentscope.engines.base import Graph
from agentscope.frames import Frame
from agentscope.render._escape import esc, json_for_script
from agentscope.render.chart import Layout, layout
from agentscope.render.dot import ObservedEdge
from agentscope.render.html import marker_strip_svg, page_css
from agentscope.widgets._source import iter_frames, step_info

if TYPE_CHECKING:
    from agentscope.widgets.forkview import ForkView
    from agentscope.widgets.timetravel import TimeTravel

__all__ = ["bound", "forkview_page", "pane_data", "timetravel_page"]

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
) -> tuple[dict[str, Any], Layout | None]:
    """Collect one log's per-step data (one pass over ``frames``) and lay its chart out once.

    Returns the pane's JSON-ready dict and the :class:`Layout` (with the observed edges) whose
    SVG the page embeds (``None`` without a graph).
    """
    got = _collect(frames, graph, keyframe_every)
    lay = layout(graph, observed_edges=got.observed(), prefix=prefix, engine=engine) if graph else None
    return _finish(got, lay, name), lay


def _collect(frames: Iterable[Frame], graph: Graph | None, keyframe_every: int) -> _Collected:
    if keyframe_every < 1:
        raise ValueError(f"keyframe_every must be >= 1, got {keyframe_every}")
    rows: list[dict[str, Any]] = []
    moves_per: list[tuple[ObservedEdge, ...]] = []
    infos: list[tuple[frozenset[str], frozenset[str], frozenset[str]]] = []
    prev: Frame | None = None
    prev_ctx: Any = None
    for k, frame in enumerate(frames):
        ev = frame.event
        row: dict[str, Any] = {
            "t": frame.event_type[:500],
            "id": str(frame.entry.get("id", ""))[:200],
            "c": (str(frame.entry["causationId"])[:200] if "causationId" in frame.entry else None),
            "at": str(frame.entry.get("recordedAt", ""))[:60],
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
            "ch": [p[:300] for p in frame.changed_paths[:100]] if k else [],  # nothing before step 0
        }
        patch: list[dict[str, Any]] | None = None
        if frame.persisted is not None:
            ctx = bound(frame.context)
            if prev_ctx is not None and (k % keyframe_every != 0 or not frame.changed_paths):
                patch = jsonpatch.make_patch(prev_ctx, ctx).patch
            if k % keyframe_every == 0 or patch is None:
                row["k"] = ctx
            else:
                row["d"] = patch
            if not frame.changed_paths and patch:  # folded frames: derive from the context patch
                row["ch"] = list(dict.fromkeys("/context" + op["path"] for op in patch))[:100]
            prev_ctx = ctx
            row["ac"] = _children(frame)
            row["tm"] = _timers(frame)
            row["st"] = str(frame.status)[:40]
        if graph is not None and frame.persisted is not None:
            info = step_info(graph, prev, frame)
            moves_per.append(info.moves)
            infos.append((info.active, info.entered, info.exited))
        else:
            moves_per.append(())
            infos.append((frozenset(), frozenset(), frozenset()))
        rows.append(row)
        prev = frame
    return _Collected(rows, infos, moves_per)


def _finish(got: _Collected, lay: Layout | None, name: str) -> dict[str, Any]:
    rows, infos, moves_per = got.rows, got.infos, got.moves
    if lay is not None:
        configs: dict[tuple[str, ...], int] = {}
        drawn = lay.element_ids
        for row, (active, entered, exited), moves in zip(rows, infos, moves_per, strict=True):
            if not active:
                row["a"] = -1
                continue
            key = tuple(sorted(e for s in active if (e := lay.plan.states.get(s)) in drawn))
            row["a"] = configs.setdefault(key, len(configs))
            row["en"] = sorted(lay.plan.states[s] for s in entered if s in lay.plan.states)
            row["ex"] = sorted(lay.plan.states[s] for s in exited if s in lay.plan.states)
            row["tk"] = sorted({e for m in moves for e in lay.edge_elements(m)})
        config_list = [list(c) for c in configs]
    else:
        config_list = []
    for row in rows:  # leave out defaults to keep the page small (the player reads them as absent)
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
        "engine": lay.engine if lay is not None else None,
    }


def _page(title: str, data: dict[str, Any], svgs: Sequence[str], strip: str) -> str:
    panes_html = []
    for k, svg in enumerate(svgs):
        panes_html.append(
            f'<div class="as-col as-pane" data-pane="{k}">'
            f'<div class="as-pane-head"><b class="as-pane-name"></b> '
            f'<span class="as-badge-slot"></span></div><div class="as-event-slot"></div>'
            f'<div class="as-chart">{svg}</div>'
            f'<div class="as-sec">context</div><input class="as-ctx-search" type="search" '
            f'placeholder="filter by path or value" aria-label="filter the context">'
            f'<div class="as-ctx"></div><div class="as-sec">actors and timers</div>'
            f'<div class="as-actors"></div></div>'
        )
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{esc(title)}</title>
<style>{page_css()}
body{{margin:12px}}
.as-controls{{display:flex;gap:6px;align-items:center;flex-wrap:wrap}}
.as-controls input[type=range]{{width:520px}}
.as-rows tr{{cursor:pointer}}
.as-pane-head{{margin:4px 0}}
button{{cursor:pointer}}
</style></head>
<body class="as-root">
<h3 style="margin:4px 0">{esc(title)}</h3>
<div class="as-controls">
<button id="as-first" title="jump to entry 0">|◀ first</button>
<button id="as-prev" title="previous entry">◀</button>
<button id="as-play" title="play / pause">▶ play</button>
<input id="as-slider" type="range" min="0" value="0" aria-label="step">
<button id="as-next" title="next entry">▶</button>
<button id="as-first-mm">first mismatch</button>
<button id="as-next-mm">next mismatch ⚠</button>
<button id="as-div">jump to divergence</button>
<label>go to <input id="as-goto" type="number" min="0" value="0" style="width:7em"></label>
<span id="as-pos" class="as-meta"></span>
</div>
<div id="as-strip">{strip}</div>
<div id="as-note" class="as-note"></div>
<div id="as-summary"></div>
<div class="as-cols">{"".join(panes_html)}</div>
<div id="as-spark"></div>
<div class="as-sec">entries</div>
<table class="as-table as-rows"><thead>
<tr><th>#</th><th>event</th><th>id</th><th>hash</th><th>verdict</th></tr></thead>
<tbody id="as-rows"></tbody></table>
<script type="application/json" id="as-data">{json_for_script(data)}</script>
<script>{_player_js()}</script>
</body></html>
"""


def _player_js() -> str:
    from importlib.resources import files

    return files("agentscope.widgets").joinpath("player.js").read_text(encoding="utf-8")


def timetravel_page(tt: TimeTravel, *, keyframe_every: int = 200) -> str:
    """Return the static player page of a :class:`~agentscope.widgets.TimeTravel`."""
    graph = tt.machine.graph if tt.machine is not None else None
    pane, lay = pane_data(
        iter_frames(tt.timeline),
        graph,
        name=str(getattr(tt.event_log, "thread", None) or "log"),
        keyframe_every=keyframe_every,
    )
    usage = tt.usage
    marks = dict(tt.marks)
    for i, f in enumerate(pane["frames"]):  # the walk saw every verdict: mark them all
        if f["v"] in ("mismatch", "explained") and i not in marks:
            marks[i] = f["v"]
    data = {
        "kind": "timetravel",
        "n": tt.n,
        "K": keyframe_every,
        "panes": [pane],
        "marks": {str(i): k for i, k in marks.items()},
        "divergence": None,
        "usage": [round(float(x), 3) for x in usage.tolist()] if usage is not None else None,
        "note": None
        if tt.machine is not None
        else "No machine: entries and recorded hashes only. "
        "Replay (states, context, verification) needs a machine.",
    }
    title = f"agentscope — {getattr(tt.event_log, 'source', None) or 'log'} ({tt.n} entries)"
    svg = lay.svg if lay is not None else ""
    return _page(title, data, [svg], marker_strip_svg(tt.n, marks, None, width=520))


def forkview_page(fv: ForkView, *, keyframe_every: int = 200) -> str:
    """Return the static player page of a :class:`~agentscope.widgets.ForkView` (two panes)."""
    from agentscope.widgets.forkview import differing_paths

    graph = fv.machine.graph
    frames_a = list(iter_frames(fv.timelines[0]))
    frames_b = list(iter_frames(fv.timelines[1]))
    got_a = _collect(frames_a, graph, keyframe_every)
    got_b = _collect(frames_b, graph, keyframe_every)
    # one layout for both sides (the union of their observed moves), so the charts line up
    la = layout(graph, observed_edges=dict.fromkeys(got_a.observed() + got_b.observed()), prefix="as")
    lb = la.with_prefix("bs")
    pa, pb = _finish(got_a, la, fv.names[0]), _finish(got_b, lb, fv.names[1])
    diffs = []
    for i in range(fv.n):
        fa = frames_a[i] if i < len(frames_a) else None
        fb = frames_b[i] if i < len(frames_b) else None
        if fa is not None and fb is not None and fa.persisted is not None and fb.persisted is not None:
            diffs.append(differing_paths(fa.context, fb.context, limit=100))
        else:
            diffs.append([])
    marks = {fv.divergence: "divergence"} if fv.divergence is not None else {}
    data = {
        "kind": "fork",
        "n": fv.n,
        "K": keyframe_every,
        "panes": [pa, pb],
        "marks": {str(k): v for k, v in marks.items()},
        "divergence": fv.divergence,
        "common": fv.common,
        "diffs": diffs,
        "usage": None,
        "note": None,
    }
    title = f"agentscope — fork: {fv.names[0]} vs {fv.names[1]}"
    return _page(
        title,
        data,
        [la.svg if la else "", lb.svg if lb else ""],
        marker_strip_svg(fv.n, marks, None, width=520),
    )

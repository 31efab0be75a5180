"""Widget state without a browser: moving the slider changes the frame, chart classes and badge.

The frames here are built from the library's own replay outputs in the real fixtures
(``g_triage.main.replay.json``: persisted snapshots and hashes at n = 1, 18, 45, 91), so the
widgets are exercised on real states without depending on the replay module.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

import pytest

from agentscope.engines.base import Graph
from agentscope.frames import Frame, Verdict
from agentscope.render import graph_from_config, state_element_id
from agentscope.render.player import bound
from agentscope.widgets import ForkView, TimeTravel
from agentscope.widgets._source import usage_series
from agentscope.widgets.forkview import common_prefix, differing_paths
from tests.conftest import load_json, requires_node

TRIAGE = "supportTriage"


class ListTimeline:
    """A frame source over ready frames (what ``Timeline`` gives the views: ``len`` and ``at``)."""

    def __init__(self, frames: Sequence[Frame], log: Any = None) -> None:
        self.frames = list(frames)
        self.log = log

    def __len__(self) -> int:
        return len(self.frames)

    def at(self, n: int) -> Frame:
        return self.frames[n]


class GraphOnly:
    """A machine stand-in that only carries the statechart structure (the views draw ``graph``)."""

    def __init__(self, graph: Graph) -> None:
        self.graph = graph


@pytest.fixture(scope="module")
def triage_graph() -> Graph:
    return graph_from_config(load_json("g_triage.machine.json")["serializeMachine"])


def prefix_frames(tamper_at: int | None = None) -> list[Frame]:
    log = load_json("g_triage.main.log.json")
    rp = load_json("g_triage.main.replay.json")
    frames = []
    for k, p in enumerate(rp["prefixes"]):
        rec, comp = p["recordedStateHash"], p["getSnapshotStateHash"]
        verdict = Verdict.VERIFIED if rec == comp else Verdict.MISMATCH
        if k == tamper_at:
            rec, verdict = "deadbeef", Verdict.MISMATCH
        frames.append(
            Frame(
                index=k,
                entry=log[p["n"] - 1],
                persisted=p["persistedSnapshot"],
                recorded_hash=rec,
                computed_hash=comp,
                verdict=verdict,
                changed_paths=("/context/queue",),
            )
        )
    return frames


def lit_states(html: str) -> set[str]:
    return set(re.findall(r'<g id="([^"]+)" class="[^"]*as-active', html))


def test_slider_moves_frame_chart_and_badge(triage_graph: Graph) -> None:
    frames = prefix_frames(tamper_at=2)
    tt = TimeTravel(GraphOnly(triage_graph), timeline=ListTimeline(frames))
    assert tt.n == 4 and tt.step == 0
    assert lit_states(tt._chart.value) == {state_element_id(f"{TRIAGE}.standby")}
    assert tt._header.frame["v"] == "verified" and tt._header.frame["r"] == "d9dc92dc"
    svg_before = tt.layout_.svg
    tt._slider.value = 1  # what the browser does
    assert tt.step == 1 and tt.frame is frames[1]
    assert lit_states(tt._chart.value) == {
        state_element_id(f"{TRIAGE}.working"),
        state_element_id(f"{TRIAGE}.working.awaitingAgent"),
        state_element_id(f"{TRIAGE}.working.awaitingAgent.reviewing"),
    }
    assert tt._header.frame["r"] == "f9b4cc6c" and tt._header.frame["t"] == "DRAFT_READY"
    assert tt.layout_.svg is svg_before  # laid out once
    # the tampered step: mismatch badge with both hashes; the jump buttons find it
    tt.step = 2
    assert tt._header.frame["v"] == "mismatch"
    assert {tt._header.frame["r"], tt._header.frame["h"]} == {"deadbeef", "3bbc8ce3"}
    tt.step = 3
    assert lit_states(tt._chart.value) == {state_element_id(f"{TRIAGE}.closed")}
    assert "as-changed" in tt._context.value  # changed paths highlighted


def test_a_step_sends_the_chart_classes_not_the_chart(triage_graph: Graph) -> None:
    """The drawing goes to the front end once; a step sends only the element ids to class, and
    those give the same classes as the static frame_svg of that step."""
    frames = prefix_frames()
    tt = TimeTravel(GraphOnly(triage_graph), timeline=ListTimeline(frames))
    sent: list[str] = []
    tt._chart.observe(lambda ch: sent.append(ch["name"]), names=["svg", "head", "lit"])
    svg = tt._chart.svg
    assert tt.layout_ is not None and tt.layout_.svg in svg and 'class="as-legend"' in svg
    for k in (1, 2, 3, 0):
        tt.step = k
        assert tt._chart.svg is svg and tt._chart.step == k
        previous = frames[k - 1] if k else None
        static = tt.chart_view(frames[k], previous)
        for cls in ("as-active", "as-entered", "as-exited", "as-taken"):
            pat = rf'<g id="([^"]+)" class="[^"]*{cls}'
            assert set(re.findall(pat, tt._chart.value)) == set(re.findall(pat, static)), (k, cls)
        assert len(str(tt._chart.lit)) < 1_000 < len(svg) // 20
    assert "svg" not in sent and "head" not in sent and sent.count("lit") == 4


def test_mismatch_marks_from_report_and_jumps(triage_graph: Graph) -> None:
    import pandas as pd

    frames = prefix_frames(tamper_at=2)
    tl = ListTimeline(frames)
    df = pd.DataFrame(
        {
            "index": [0, 1, 2, 3],
            "verdict": [f.verdict.value for f in frames],
            "ignored": [False, True, False, False],
        }
    )
    tl.report = type("R", (), {"df": df})()  # type: ignore[attr-defined]
    tt = TimeTravel(GraphOnly(triage_graph), timeline=tl)
    assert tt.mismatch_indices == [2]
    labels = [label for label, _ in tt._rows.options]
    assert labels[1].startswith(" ∅") and labels[2].startswith("✗ ")  # ignored entry, mismatch
    assert 'fill="#e53935"' in tt._strip.value  # a red tick on the slider track
    assert tt.next_mismatch() == 2 and tt.step == 2
    tt.go(0)
    tt._first_mm.click()
    assert tt.step == 2


def test_rows_sync_both_ways_and_filter(triage_graph: Graph) -> None:
    tt = TimeTravel(GraphOnly(triage_graph), timeline=ListTimeline(prefix_frames()))
    tt.step = 2
    assert tt._rows.value == 2
    tt._rows.value = 1  # click a row
    assert tt.step == 1
    tt._search.value = "T-004"
    assert "T-004" in tt._context.value and "tier1" not in tt._context.value
    tt._search.value = ""
    assert "tier1" in tt._context.value
    tt._jump.value = 3
    assert tt.step == 3
    assert repr(tt) == "TimeTravel(4 entries, step=3, replay)"


def test_no_machine_mode_shows_entries_and_says_replay_needs_a_machine() -> None:
    log = load_json("g_triage.main.log.json")
    tt = TimeTravel(log)
    assert tt.n == 91 and tt.machine is None and tt.layout_ is None
    assert "needs a machine" in tt._note.value
    tt.step = 17
    assert tt._header.frame["v"] == "unchecked" and tt._header.frame["r"] == "f9b4cc6c"
    assert tt._chart.value == ""
    labels = [label for label, _ in tt._rows.options]
    assert len(labels) == 17 and any(" 17 " in lab and "DRAFT_READY" in lab for lab in labels)
    tt.step = 500
    assert tt.step == 90  # clamped


def test_usage_sparkline_counts_usage_events() -> None:
    entries = [
        {"event": {"type": "@agent.init"}},
        {"event": {"type": "@agent.usage", "usage": {"totalTokens": 100}}},
        {"event": {"type": "X"}},
        {"event": {"type": "@agent.usage", "usage": {"inputTokens": 30, "outputTokens": 12}}},
        {"event": {"type": "@agent.usage", "usage": {"totalTokens": float("nan"), "inputTokens": 5}}},
    ]
    series = usage_series(entries)
    assert series is not None and series.tolist() == [0, 100, 100, 142, 147]
    assert usage_series(entries[:1]) is None


def test_static_player_embeds_everything_escaped(triage_graph: Graph, tmp_path: Any) -> None:
    frames = prefix_frames(tamper_at=2)
    hostile = dict(frames[1].entry)
    hostile["event"] = {"type": "</script><script>alert(1)</script>", "text": "</svg><!--" + "y" * 1_000_000}
    deep: Any = 1
    for _ in range(200):
        deep = [deep]
    persisted = dict(frames[1].persisted or {})
    persisted["context"] = {"evil": "<script>alert(2)</script>", "deep": deep, "big": "z" * 1_000_000}
    frames[1] = Frame(
        index=1,
        entry=hostile,
        persisted=persisted,
        recorded_hash="x",
        computed_hash="y",
        verdict=Verdict.MISMATCH,
    )
    tt = TimeTravel(GraphOnly(triage_graph), timeline=ListTimeline(frames))
    path = tmp_path / "player.html"
    page = tt.to_html(path)
    assert path.read_text(encoding="utf-8") == page
    assert page.count("</script>") == 2 and page.count("<script") == 2  # data + player only
    assert "<!--" not in page and "alert(1)</script>" not in page
    assert len(page) < 400_000  # 2 MB of hostile strings are cut to bounded previews
    # the chart (once), the marker strip and the legend's 8 swatches (static markup)
    assert page.count("<svg") == 10 and page.count('<svg width="') - page.count('<svg width="2') >= 1
    assert page.count('id="as_graph"') == 1
    data = json.loads(
        re.search(r'<script type="application/json" id="as-data">(.*?)</script>', page, re.S).group(1)
    )
    pane = data["panes"][0]
    assert pane["configs"][pane["frames"][0]["a"]] == [state_element_id(f"{TRIAGE}.standby")]
    f1 = pane["frames"][1]
    assert f1["t"] == "</script><script>alert(1)</script>"  # round-trips as data
    assert f1["v"] == "mismatch"
    # contexts: keyframe at 0, JSON Patch deltas after; the hostile context is bounded
    assert "k" in data["panes"][0]["frames"][0] and "d" in f1
    ops = {op["path"]: op for op in f1["d"]}
    assert ops["/big"]["value"].endswith("… [+990,000 chars]")


def test_bound_limits_depth_strings_and_items() -> None:
    deep: Any = "x"
    for _ in range(200):
        deep = {"a": deep}
    b = bound({"deep": deep, "s": "q" * 20_000, "l": list(range(5000))})
    text = json.dumps(b)
    assert "depth limit: 1 members" in text and len(text) < 30_000
    assert b["l"][-1] == "… +4,000 more" and len(b["l"]) == 1001


def test_common_prefix_of_real_fork_threads() -> None:
    main = load_json("g_triage.main.log.json")
    fork = load_json("g_triage.fork.log.json")
    second = load_json("g_triage.second.log.json")
    assert common_prefix(main, fork) == 18  # README: fork shares entries 0-17
    assert common_prefix(main, second) == 0  # independent run: own ids? same ids, other events
    assert common_prefix(main, main) == 91


def test_differing_paths() -> None:
    a = {"q": [1, 2], "n": 1, "o": {"x": 1}}
    b = {"q": [1, 3, 4], "n": 1, "o": {"y": 1}}
    # diff_json's paths, in document (UTF-16 key) order
    assert differing_paths(a, b) == ["/context/o/x", "/context/o/y", "/context/q/1", "/context/q/2"]
    assert differing_paths(a, a) == []


def test_forkview_marks_and_jumps_to_divergence(triage_graph: Graph) -> None:
    main = load_json("g_triage.main.log.json")
    fork = load_json("g_triage.fork.log.json")
    fa = prefix_frames()
    rp = load_json("g_triage.fork.replay.json")
    fb = [
        Frame(
            index=k,
            entry=fork[p["n"] - 1],
            persisted=p["persistedSnapshot"],
            recorded_hash=p["recordedStateHash"],
            computed_hash=p["getSnapshotStateHash"],
            verdict=Verdict.VERIFIED,
        )
        for k, p in enumerate(rp["prefixes"])
    ]
    fv = ForkView(
        GraphOnly(triage_graph),
        main,
        fork,
        names=("main", "fork"),
        timelines=(ListTimeline(fa), ListTimeline(fb)),
    )
    assert fv.common == 18 and fv.divergence == 18
    fv.step = 1
    assert fv.diff_paths() == []  # n=18 on both sides: the shared prefix state
    fv.step = 3
    paths = fv.diff_paths()
    assert paths and all(p.startswith("/context/") for p in paths)
    fv._mode.value = "all"  # before the divergence "auto" shows one tree; ask for both
    assert fv._context.value.count("as-changed") >= 2  # the differing paths lit on both sides
    fv._mode.value = "diff"
    assert all(f'data-path="{p}"' in fv._context.value for p in paths)  # the aligned diff table
    assert fv._sides[1].title == "fork" and fv._sides[1].frame["t"] == fv.frames()[1].event_type
    chart = fv._chart.value  # one full-width chart: a's states and b's states in two colours
    assert (
        chart.count('id="as_graph"') == 1
        and "as-active-b" in chart
        and 'data-legend="active in fork"' in chart
    )
    assert "ForkView(main: 4, fork:" in repr(fv)
    page = fv.to_html()
    assert page.count('id="as_graph"') == 1 and 'id="bs_' not in page  # one chart in the player too
    data = json.loads(re.search(r'id="as-data">(.*?)</script>', page, re.S).group(1))
    assert [p["name"] for p in data["panes"]] == ["main", "fork"] and data["divergence"] == 18


def test_static_player_size_grows_linearly_and_keyframes(triage_graph: Graph) -> None:
    base = prefix_frames()

    def frames(n: int) -> list[Frame]:
        out = []
        for i in range(n):
            src = base[1 + i % 3]
            ctx = dict(src.persisted["context"])  # type: ignore[index]
            ctx["batches"] = i
            out.append(
                Frame(
                    index=i,
                    entry={**src.entry, "index": i, "id": f"evt_{i:08d}"},
                    persisted={**src.persisted, "context": ctx},
                    recorded_hash=src.recorded_hash,
                    computed_hash=src.computed_hash,
                    verdict=Verdict.VERIFIED,
                )
            )
        return out

    sizes = {}
    for n in (200, 400, 800):
        page = TimeTravel(GraphOnly(triage_graph), timeline=ListTimeline(frames(n))).to_html(
            keyframe_every=50
        )
        sizes[n] = len(page.encode())
        data = json.loads(re.search(r'id="as-data">(.*?)</script>', page, re.S).group(1))
        rows = data["panes"][0]["frames"]
        assert [i for i, r in enumerate(rows) if "k" in r] == list(range(0, n, 50))
        assert all(("k" in r) != ("d" in r) for r in rows)
    per = {n: (sizes[n] - sizes[200]) / (n - 200) for n in (400, 800)}
    assert 0.9 < per[800] / per[400] < 1.1  # constant bytes per extra entry


def test_static_player_without_machine() -> None:
    log = load_json("g_triage.main.log.json")
    page = TimeTravel(log).to_html()
    data = json.loads(re.search(r'id="as-data">(.*?)</script>', page, re.S).group(1))
    assert "needs a machine" in data["note"]
    rows = data["panes"][0]["frames"]
    assert len(rows) == 91 and rows[17]["r"] == "f9b4cc6c" and rows[17]["v"] == "unchecked"
    assert "k" not in rows[0] and "a" not in rows[0]


def test_widget_views_escape_hostile_content(triage_graph: Graph) -> None:
    xss = "<script>alert(1)</script></svg><!--"
    frames = prefix_frames()
    deep: Any = xss
    for _ in range(200):
        deep = {"d": deep}
    persisted = {**frames[1].persisted, "context": {xss: xss, "big": xss * 100_000, "deep": deep}}  # type: ignore[dict-item]
    entry = {
        **frames[1].entry,
        "id": xss,
        "causationId": xss,
        "event": {"type": xss, "payload": xss * 50_000},
    }
    frames[1] = Frame(
        index=1,
        entry=entry,
        persisted=persisted,
        recorded_hash=xss,
        computed_hash="0",
        verdict=Verdict.MISMATCH,
        explanation=xss,
    )
    tt = TimeTravel(GraphOnly(triage_graph), timeline=ListTimeline(frames))
    tt.step = 1
    tt._search.value = "script"
    for w in (tt._chart, tt._context, tt._strip):
        assert "<script" not in w.value and "<!--" not in w.value
        assert len(w.value) < 300_000
    assert "&lt;script&gt;" in tt._context.value
    # the panels get bounded data, drawn as text by render/frame.js (tests/browser: shown inert)
    sent = json.dumps(tt._header.frame)
    assert len(sent) < 300_000 and tt._header.frame["t"] == xss and tt._header.frame["x"] == xss


def test_forkview_strip_ticks_the_divergence_and_follows_the_step() -> None:
    # the pure-Python triage machine reproduces both real logs (tests/test_statechart.py)
    from agentscope.examples.python_machines import triage_machine

    main = load_json("g_triage.main.log.json")
    fork = load_json("g_triage.fork.log.json")
    fv = ForkView(triage_machine(), main, fork, names=("main", "fork"))
    assert (fv.n, fv.divergence) == (max(len(main), len(fork)), 18)
    tick = f'<rect x="{int(519 * 18 / (fv.n - 1))}" y="0" width="2" height="8" fill="#8e24aa">'
    assert fv._strip.value.count('fill="#8e24aa"') == 1 and tick in fv._strip.value
    assert '<rect x="0" y="0" width="1" height="8" fill="#263238"/>' in fv._strip.value  # cursor at 0
    assert fv.jump_to_divergence() == 18 and fv.step == 18
    assert tick in fv._strip.value
    assert (
        f'<rect x="{int(519 * 18 / (fv.n - 1))}" y="0" width="1" height="8" fill="#263238"/>'
        in fv._strip.value
    )
    assert "at the divergence (fork, entry 18: main APPROVE vs fork REJECT)" in fv._summary.value
    fv.go(19)
    assert "past the divergence" in fv._summary.value


def test_widget_output_carries_a_static_html_fallback(triage_graph: Graph) -> None:
    tt = TimeTravel(GraphOnly(triage_graph), timeline=ListTimeline(prefix_frames()))
    tt.go(1)
    bundle = tt._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" in bundle
    page = bundle["text/html"]
    assert 'class="as-root as-fallback" data-index="1"' in page and "<style>" in page
    assert 'data-verdict="verified"' in page and 'class="as-legend"' in page
    assert lit_states(page) == lit_states(tt._chart.value) != set()
    assert 'data-path="/context/queue"' in page  # the context tree


def test_forkview_output_carries_a_static_html_fallback() -> None:
    from agentscope.examples.python_machines import triage_machine

    main = load_json("g_triage.main.log.json")
    fork = load_json("g_triage.fork.log.json")
    fv = ForkView(triage_machine(), main, fork, names=("main", "fork"))
    fv.jump_to_divergence()
    bundle = fv._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" in bundle
    page = bundle["text/html"]
    assert 'class="as-root as-fallback" data-index="18"' in page and "<style>" in page
    assert "at the divergence (fork, entry 18: main APPROVE vs fork REJECT)" in page
    assert page.count('id="as_graph"') == 1 and 'data-legend="active in fork"' in page
    assert lit_states(page) == lit_states(fv._chart.value) != set()
    assert re.search(r'class="[^"]*as-active-b', page)
    assert page.count('data-verdict="verified"') == 2  # both sides' badges


def test_steps_arriving_together_render_once(triage_graph: Graph) -> None:
    import asyncio

    tt = TimeTravel(GraphOnly(triage_graph), timeline=ListTimeline(prefix_frames()))
    drawn: list[int] = []
    render = tt._render

    def spy() -> None:
        drawn.append(tt.step)
        render()

    tt._render = spy  # type: ignore[method-assign]

    async def drag() -> None:
        for k in (1, 2, 3, 2):  # a fast drag: four steps before the kernel gets to draw
            tt.step = k
        await asyncio.sleep(0)
        await asyncio.sleep(0)

    asyncio.run(drag())
    assert drawn == [2]  # only the latest requested step is drawn
    assert tt._jump.value == 2 and tt._header.index == 2


def test_play_and_slider_drive_one_step_through_the_kernel(triage_graph: Graph) -> None:
    """A key press on the slider is one front-end update: no jslink ties Play to the slider (it
    would send a second, Play's). Play's ticks move the step; every frame sets Play back to it."""
    import ipywidgets
    from ipywidgets.widgets.widget_link import Link

    tt = TimeTravel(GraphOnly(triage_graph), timeline=ListTimeline(prefix_frames()))
    main = load_json("g_triage.main.log.json")
    frames = ListTimeline(prefix_frames())
    fv = ForkView(GraphOnly(triage_graph), main, main, names=("a", "b"), timelines=(frames, frames))
    for view in (tt, fv):
        ends = [
            {id(w.source[0]), id(w.target[0])}
            for w in list(ipywidgets.Widget.widgets.values())
            if isinstance(w, Link)  # jslink and jsdlink both
        ]
        assert not any(id(view._slider) in e or id(view._play) in e for e in ends)
        view._play.value = 2  # a tick of Play
        assert view.step == 2 and view._slider.value == 2
        view._slider.value = 3  # the slider (a key press)
        assert view.step == 3 and view._play.value == 3
        view.go(1)
        assert view._slider.value == 1 and view._play.value == 1


def test_entries_window_keeps_whole_timestamps_and_payload_spacing(triage_graph: Graph) -> None:
    import agentscope as asc
    from agentscope.render.html import event_html
    from tests.conftest import FIXTURES

    log = asc.read_log(FIXTURES / "g_triage.sqlite", thread="main")
    tt = TimeTravel(log)  # no machine: nothing to verify
    tt.go(18)
    labels = [label for label, _ in tt._rows.options]
    row = next(x for x in labels if x.split()[0] == "18")
    assert re.search(r"2026-11-30T10:25:08\.314Z", row), row
    assert tt._first_mm.layout.display == "none" and tt._next_mm.layout.display == "none"
    unhashed = [{k: v for k, v in e.items() if k != "verification"} for e in log.entries]
    replayed = TimeTravel(GraphOnly(triage_graph), unhashed, timeline=ListTimeline(prefix_frames()))
    assert not replayed.verifiable and replayed._first_mm.layout.display == "none"  # no hash to check
    hashed = TimeTravel(GraphOnly(triage_graph), log.entries, timeline=ListTimeline(prefix_frames()))
    assert hashed.verifiable and hashed._first_mm.layout.display is None
    # not following: no "follow tail" toggle among the controls at all (as nothing to verify hides
    # the mismatch buttons)
    for view in (tt, replayed, hashed):
        assert not [w for w in view.children[1].children if getattr(w, "description", "") == "follow tail"]
    f = Frame(index=3, entry={"id": "e3", "event": {"type": "PING"}})
    assert '</span> <span class="as-meta">(no payload)</span>' in event_html(f)


def test_forkview_says_when_a_side_has_ended(triage_graph: Graph) -> None:
    fa = prefix_frames()
    fb = fa[:2]
    entries = [f.entry for f in fa]
    fv = ForkView(
        GraphOnly(triage_graph),
        entries,
        entries[:2],
        names=("long", "short"),
        timelines=(ListTimeline(fa), ListTimeline(fb)),
    )
    fv.go(3)
    assert "short ended at entry 1; long continues" in fv._summary.value
    assert "differing context path" not in fv._summary.value
    assert fv._sides[1].frame == {} and fv._sides[1].note == "short ended at entry 1 (2 entries)"
    assert "(ended)" in fv._entries.value
    fv._mode.value = "diff"
    assert "one side has ended" in fv._context.value


def test_redaction_paths_parse_and_replace() -> None:
    from agentscope.render.redact import REDACTED, parse_path, redact

    assert parse_path("/event/tickets/*/subject") == ("event", "tickets", "*", "subject")
    assert parse_path("event.email") == ("event", "email")
    assert parse_path("/a~1b/c~0d") == ("a/b", "c~d")
    doc = {"event": {"email": "x@y", "tickets": [{"subject": "s1"}, {"subject": "s2", "n": 1}]}}
    out = redact(doc, ["event.email", "/event/tickets/*/subject", "/missing/*"])
    assert out == {
        "event": {"email": REDACTED, "tickets": [{"subject": REDACTED}, {"subject": REDACTED, "n": 1}]}
    }
    assert doc["event"]["email"] == "x@y"  # a copy
    with pytest.raises(ValueError, match="names no value"):
        parse_path("")


@requires_node
def test_redacted_player_holds_no_redacted_value(tmp_path: Any) -> None:
    import agentscope as asc
    from agentscope.engines.xstate import load_machine
    from agentscope.render.redact import REDACTED
    from agentscope.widgets._source import iter_frames
    from tests.conftest import FIXTURES, MACHINES

    paths = [
        "/event/tickets/*/subject",
        "/event/input/tickets/*/subject",
        "/context/queue/*/subject",
        "/context/current/subject",
        "/context/outcomes/*/subject",
        "/children/*/snapshot/input/subject",
        "event.email",
    ]
    main = asc.read_log(FIXTURES / "g_triage.sqlite", thread="main")
    fork = asc.read_log(FIXTURES / "g_triage.sqlite", thread="fork")
    with load_machine(MACHINES / "triage.mjs", export="triageMachine") as m:
        tt = TimeTravel(m, main)
        frames = list(iter_frames(tt.timeline))
        plain = tt.to_html(tmp_path / "plain.html")
        page = tt.to_html(tmp_path / "player.html", redact=paths)
        fork_page = ForkView(m, main, fork, names=("main", "fork")).to_html(redact=paths)
    subjects = {
        t["subject"]
        for f in frames
        for t in [*(f.context or {}).get("queue", []), (f.context or {}).get("current") or {}]
        if isinstance(t, dict) and "subject" in t
    }
    assert len(subjects) >= 5
    written = (tmp_path / "player.html").read_text(encoding="utf-8")
    assert written == page
    for s in subjects:
        assert s in plain  # the unredacted player has them
        assert s not in written and s not in fork_page
    assert REDACTED in written and REDACTED in fork_page

    def verdicts(p: str) -> list[tuple[str, str]]:
        data = json.loads(re.search(r'id="as-data">(.*?)</script>', p, re.S).group(1))  # type: ignore[union-attr]
        return [(f["v"], f.get("r")) for f in data["panes"][0]["frames"]]

    assert verdicts(written) == verdicts(plain)  # what the original verified to
    assert all(v == "verified" for v, _ in verdicts(written))


def test_a_collapsed_chart_in_the_widget_opens_the_active_box() -> None:
    """The widget of a machine too big to lay out: the box holding the active state comes with its
    own chart (sent when the active box changes), lit per step like the main chart."""
    import agentscope as asc
    from agentscope.engines.statechart import StatechartMachine
    from agentscope.render import ObservedEdge
    from agentscope.render.chart import expansion
    from tests._charts import huge_config

    m = StatechartMachine(huge_config())
    stream = [{"type": "@agent.init"}] + [{"type": e} for e in ("NEXT", "JUMP", "NEXT")]
    log = [
        {"schemaVersion": 1, "id": f"e{k}", "index": k, "recordedAt": "2026-01-01T00:00:00.000Z",
         "machineId": "huge", "event": ev}
        for k, ev in enumerate(stream)
    ]
    tt = asc.TimeTravel(m, log)
    assert tt.layout_ is not None and tt.layout_.collapsed
    sent: list[str] = []
    tt._chart.observe(lambda ch: sent.append(ch["name"]), names=["svg", "boxes"])
    heads = []
    for k, (box, state) in enumerate([("g0", "s0"), ("g0", "s1"), ("g1", "s1"), ("g1", "s2")]):
        tt.step = k
        sub = expansion(tt.layout_, f"huge.{box}")
        head = tt._chart.boxes
        assert head.count('<details class="as-expand"') == 1
        assert f'data-box="{state_element_id(f"huge.{box}")}"' in head and sub.svg in head
        assert f"active: {box} › {state}" in tt._chart.head
        lit = dict(tt._chart.lit)
        assert "as-active" in lit[sub.plan.states[f"huge.{box}.{state}"]]
        taken = [e for e, c in lit.items() if "as-taken" in c]
        if k in (1, 3):  # NEXT inside the box: its edge in the box's chart
            move = ObservedEdge(f"huge.{box}.s{k // 2}", f"huge.{box}.{state}", "NEXT")
            assert taken == list(sub.edge_elements(move))
        heads.append(head)
    assert heads[0] == heads[1] != heads[2] == heads[3]
    assert sent == ["boxes"]  # sent again only when the active box changed (g0 → g1)


def test_a_step_sends_the_context_rows_that_changed(triage_graph: Graph) -> None:
    """The context tree goes over the wire as ``base`` + an RFC 6902 patch of escaped rows: a step
    that changes one value sends that row, not the tree, and base + patch is the tree shown."""
    import dataclasses

    import jsonpatch

    from agentscope.widgets._treewidget import split_rows

    frames = prefix_frames()
    big = {f"k{i:03}": {"n": i, "s": f"value {i}"} for i in range(120)}
    hostile = "<script>alert(1)</script>\udc00"
    ctxs = [dict(big), {**big, "k005": {"n": 2**60 + 1, "s": hostile}}, dict(big), {**big, "new": [1]}]
    changed = ((), ("/context/k005",), ("/context/k005",), ("/context/new",))
    frames = [
        dataclasses.replace(f, persisted={**(f.persisted or {}), "context": ctx}, changed_paths=paths)
        for f, ctx, paths in zip(frames, ctxs, changed, strict=True)
    ]
    tt = TimeTravel(GraphOnly(triage_graph), timeline=ListTimeline(frames))
    sent: list[str] = []
    tt._context.observe(lambda ch: sent.append(ch["name"]), names=["base", "patch"])
    tree = len(tt._context.value)
    for k in (1, 2, 3, 2, 0):
        tt.step = k
        shown = tt.context_view(frames[k])
        rows = jsonpatch.apply_patch(list(tt._context.base), list(tt._context.patch))
        assert "".join(rows) == tt._context.value == shown and rows == split_rows(shown)
        assert len(json.dumps(tt._context.patch)) < tree // 10  # a few rows, not the tree
        assert "<script" not in json.dumps(tt._context.patch)
    assert "base" not in sent and sent.count("patch") == 5
    tt.step = 1
    assert "&lt;script&gt;" in tt._context.value and "1152921504606846977" in tt._context.value
    assert "\\udc00" in tt._context.value  # the lone surrogate shown as its escape, as the tree does


@requires_node
def test_the_front_end_applies_the_context_patch_as_python_does(triage_graph: Graph, tmp_path: Any) -> None:
    """tree.js (the widget's ESM, run in Node) rebuilds from ``base`` + ``patch`` the same rows."""
    import subprocess
    from importlib.resources import files

    from agentscope.widgets._treewidget import TreeWidget

    w = TreeWidget()
    states = []
    for html in ('<div class="as-ctx"><div class="as-leaf" data-path="/a">a</div></div>',
                 '<div class="as-ctx"><div class="as-leaf as-changed" data-path="/a">b</div>'
                 '<div class="as-leaf" data-path="/c">c</div></div>',
                 '<div class="as-ctx"><div class="as-leaf" data-path="/c">c</div></div>'):
        w.value = html
        states.append({"base": list(w.base), "patch": list(w.patch), "want": w.value})
    js = files("agentscope.widgets").joinpath("tree.js")
    script = (
        f"import {{ rowsOf }} from {json.dumps('file://' + str(js))};\n"
        f"const states = {json.dumps(states)};\n"
        "console.log(JSON.stringify(states.map((s) => rowsOf({ get: (k) => s[k] }).join('') === s.want)));\n"
    )
    out = subprocess.run(["node", "--input-type=module", "-e", script], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout) == [True, True, True]


def test_the_player_and_the_widget_draw_a_frame_through_the_same_javascript(triage_graph: Graph) -> None:
    """One frame renderer (``render/frame.js``): the static page inlines it and the widget's
    anywidget module bundles it, byte for byte; neither keeps a second copy of the panels or of
    the chart's class painting."""
    from importlib.resources import files

    from agentscope.render.player import frame_js
    from agentscope.widgets._chartwidget import ChartWidget

    source = frame_js()
    assert "var AS_FRAME" in source and "PANELS" in source
    tt = TimeTravel(GraphOnly(triage_graph), timeline=ListTimeline(prefix_frames()))
    page = tt.to_html()
    assert page.count(source) == 1
    assert ChartWidget._esm.count(source) == 1
    glue = {
        "player.js": files("agentscope.render").joinpath("player.js").read_text(encoding="utf-8"),
        "chart.js": files("agentscope.widgets").joinpath("chart.js").read_text(encoding="utf-8"),
    }
    for name, js in glue.items():
        for own in ("'as-badge as-badge-'", "'as-active'", "as-taken", "no actors in flight", "function badge"):
            assert own not in js, (name, own)
        assert "AS_FRAME" in js or "var F = AS_FRAME" in js, name

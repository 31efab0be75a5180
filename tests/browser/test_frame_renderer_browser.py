"""The one frame renderer (``render/frame.js``) in Chromium, as the widget's front end runs it: the
panels module the kernel feeds (``FrameWidget``) draws a real step's badge, event and actors from
the frame data, with hostile log text shown inert, exactly as the static player draws them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agentscope.frames import Frame, Verdict
from agentscope.render import graph_from_config
from agentscope.render._escape import json_for_script
from agentscope.render.html import style_block
from tests.browser.conftest import ARTIFACTS
from tests.browser.test_views_browser import FAKE_MODEL
from tests.conftest import load_json
from tests.test_widgets import GraphOnly, ListTimeline, prefix_frames

XSS = "<img src=x onerror=alert(1)></script><script>alert(2)</script>"


def _widget_page(tmp_path: Path, name: str, esm: str, traits: dict[str, Any]) -> Path:
    path = tmp_path / f"{name}.html"
    path.write_text(
        f"<!DOCTYPE html><meta charset=utf-8>{style_block()}<div id='w'></div>"
        f"<script type='application/json' id='traits'>{json_for_script(traits)}</script>"
        f"<script type='text/plain' id='esm'>{esm}</script>{FAKE_MODEL}",
        encoding="utf-8",
    )
    return path


def test_the_widget_panels_are_the_players_panels(browser_context: Any, tmp_path: Path) -> None:
    from agentscope.widgets import TimeTravel

    graph = graph_from_config(load_json("g_triage.machine.json")["serializeMachine"])
    frames = prefix_frames(tamper_at=2)
    hostile = {**frames[1].entry, "event": {"type": "DRAFT_READY", "text": XSS}}
    frames[1] = Frame(index=1, entry=hostile, persisted=frames[1].persisted,
                      recorded_hash=frames[1].recorded_hash, computed_hash=frames[1].computed_hash,
                      verdict=Verdict.VERIFIED, changed_paths=("/context/draft",))
    tt = TimeTravel(GraphOnly(graph), timeline=ListTimeline(frames))
    tt._coalesce = False
    tt.step = 1
    head, side = tt._header, tt._actors
    names = ("frame", "index", "only", "skip")
    assert head.frame["p"] == {"text": XSS}  # data, not markup: frame.js writes it as text
    player = tmp_path / "player.html"
    tt.to_html(player)

    page = browser_context.new_page()
    errors: list[str] = []
    dialogs: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    for w, name in ((head, "head"), (side, "side")):
        url = _widget_page(tmp_path, name, str(w._esm), {k: getattr(w, k) for k in names}).as_uri()
        page.goto(url)
        page.wait_for_function("() => window.ready === true")
        if w is head:
            assert page.get_attribute("#w .as-badge", "data-verdict") == "verified"
            assert page.inner_text("#w .as-event-type") == "DRAFT_READY"
            assert XSS in page.inner_text("#w .as-event-slot")  # shown as text, inert
            assert page.locator("#w .as-actors").count() == 0  # drawn beside the context instead
            widget_event = page.inner_text("#w .as-event")
            tt.step = 2  # the kernel sends the next step's data: the same element redraws
            page.evaluate("(t) => { window.model.set('frame', t.frame); window.model.set('index', t.index); }",
                          {"frame": head.frame, "index": head.index})
            assert page.get_attribute("#w .as-badge", "data-verdict") == "mismatch"
            assert "deadbeef" in page.inner_text("#w .as-badge")
            page.screenshot(path=str(ARTIFACTS / "widget-panels.png"))
            tt.step = 1
        else:
            assert page.locator("#w .as-badge").count() == 0
            assert page.inner_text("#w .as-actors-title") == "actors and timers"
            widget_actors = page.inner_text("#w .as-actors")
    # the static player's pane at the same step: the same text, drawn by the same function
    page.goto(player.as_uri() + "#1")
    page.wait_for_selector(".as-badge")
    assert page.inner_text(".as-pane .as-event") == widget_event
    assert page.inner_text(".as-pane .as-actors") == widget_actors
    assert errors == [] and dialogs == []


def test_the_actors_input_column_wraps_in_a_narrow_side_column(browser_context: Any, tmp_path: Path) -> None:
    """The widget's actors panel sits in a side column (260 px and up): an actor's input wraps
    inside it, no horizontal scroll (the real triage log at entry 3, the kb search in flight)."""
    import agentscope as asc
    from agentscope.examples.python_machines import triage_machine

    tt = asc.TimeTravel(triage_machine(), load_json("g_triage.main.log.json"))
    tt._coalesce = False
    tt.step = 3
    side = tt._actors
    assert side.frame["ac"] and side.frame["ac"][0][1] == "searchKnowledgeBase"
    names = ("frame", "index", "only", "skip")
    path = _widget_page(tmp_path, "actors", str(side._esm), {k: getattr(side, k) for k in names})
    html = path.read_text(encoding="utf-8").replace("<div id='w'></div>", "<div id='w' style='width:260px'></div>")
    path.write_text(html, encoding="utf-8")
    page = browser_context.new_page()
    page.set_viewport_size({"width": 600, "height": 600})
    page.goto(path.as_uri())
    page.wait_for_function("() => window.ready === true")
    table = page.locator("#w .as-actors table")
    sizes = table.evaluate("t => [t.scrollWidth, t.getBoundingClientRect().width, t.parentElement.clientWidth]")
    assert sizes[0] <= sizes[2] and sizes[1] <= sizes[2] + 0.5, sizes
    assert "Dashboard down" in table.inner_text()
    page.screenshot(path=str(ARTIFACTS / "widget-actors-260.png"))


def test_a_fork_sides_panels_and_its_end_are_drawn_by_the_frame_renderer(
    browser_context: Any, tmp_path: Path
) -> None:
    """ForkView's two sides: each its name, badge and event through ``render/frame.js``; a side
    that has ended says so instead."""
    from agentscope.widgets import ForkView

    graph = graph_from_config(load_json("g_triage.machine.json")["serializeMachine"])
    fa = prefix_frames()
    entries = [f.entry for f in fa]
    fv = ForkView(GraphOnly(graph), entries, entries[:2], names=("long", "short"),
                  timelines=(ListTimeline(fa), ListTimeline(fa[:2])))
    fv.go(3)
    names = ("frame", "index", "only", "skip", "title", "note")
    page = browser_context.new_page()
    texts = []
    for k, side in enumerate(fv._sides):
        url = _widget_page(tmp_path, f"side{k}", str(side._esm), {n: getattr(side, n) for n in names}).as_uri()
        page.goto(url)
        page.wait_for_function("() => window.ready === true")
        texts.append(page.inner_text("#w"))
    assert texts[0].startswith("long") and page.locator("#w .as-badge").count() == 0
    assert "#3 " in texts[0] and fa[3].event_type in texts[0]
    assert texts[1].splitlines() == ["short", "short ended at entry 1 (2 entries)"]

"""The static player opened offline (file://) in Chromium and stepped."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agentscope.frames import Frame, Verdict
from agentscope.render import graph_from_config, state_element_id
from agentscope.widgets import TimeTravel
from tests.browser.conftest import ARTIFACTS
from tests.conftest import load_json, requires_node
from tests.test_widgets import GraphOnly, ListTimeline, prefix_frames

T = "supportTriage"


def _lit(page: Any) -> set[str]:
    ids: list[str] = page.eval_on_selector_all("#as-chart .as-active", "els => els.map(e => e.id)")
    return set(ids)


def test_static_player_steps_offline(browser_context: Any, tmp_path: Path) -> None:
    graph = graph_from_config(load_json("g_triage.machine.json")["serializeMachine"])
    frames = prefix_frames(tamper_at=2)
    hostile = dict(frames[1].entry)
    hostile["event"] = {
        "type": "DRAFT_READY",
        "text": "<img src=x onerror=alert(1)></script><script>alert(2)</script>",
    }
    frames[1] = Frame(
        index=1,
        entry=hostile,
        persisted=frames[1].persisted,
        recorded_hash=frames[1].recorded_hash,
        computed_hash=frames[1].computed_hash,
        verdict=Verdict.VERIFIED,
        changed_paths=("/context/draft",),
    )
    path = tmp_path / "player.html"
    TimeTravel(GraphOnly(graph), timeline=ListTimeline(frames)).to_html(path)

    page = browser_context.new_page()
    errors: list[str] = []
    dialogs: list[str] = []
    requests: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    page.on("request", lambda r: requests.append(r.url))
    page.goto(path.as_uri())
    page.wait_for_selector(".as-badge")
    assert _lit(page) == {state_element_id(f"{T}.standby")}
    assert page.get_attribute(".as-badge", "data-verdict") == "verified"

    page.click("#as-next")
    want = {state_element_id(f"{T}.working{s}") for s in ("", ".awaitingAgent", ".awaitingAgent.reviewing")}
    assert _lit(page) == want
    assert page.inner_text(".as-event-type") == "DRAFT_READY"
    assert "<img src=x onerror=alert(1)>" in page.inner_text(".as-event-slot")  # shown as text, inert
    assert page.locator(".as-ctx .as-changed").count() == 1

    page.click("#as-first-mm")
    assert page.input_value("#as-slider") == "2"
    badge = page.locator(".as-badge")
    assert badge.get_attribute("data-verdict") == "mismatch"
    assert "deadbeef" in badge.inner_text() and "3bbc8ce3" in badge.inner_text()

    page.fill(".as-ctx-search", "T-009")  # filter the context tree
    assert "T-009" in page.inner_text(".as-ctx") and "tier1" not in page.inner_text(".as-ctx")
    page.fill(".as-ctx-search", "")

    page.locator("#as-slider").fill("3")  # drag the range input to the end
    assert _lit(page) == {state_element_id(f"{T}.closed")}
    page.click("#as-rows tr[data-index='0']")  # click a table row to jump
    assert _lit(page) == {state_element_id(f"{T}.standby")}
    page.click("#as-goto")
    page.fill("#as-goto", "1")
    page.press("#as-goto", "Enter")
    assert _lit(page) == want
    page.screenshot(path=str(ARTIFACTS / "static-player.png"), full_page=True)
    assert errors == [] and dialogs == []
    assert all(u.startswith("file://") for u in requests), requests  # offline: no network at all


@requires_node
def test_fork_player_jumps_to_the_divergence(browser_context: Any, tmp_path: Path) -> None:
    import agentscope as asc
    from agentscope.engines.xstate import load_machine
    from tests.conftest import FIXTURES, MACHINES

    main = asc.read_log(FIXTURES / "g_triage.sqlite", thread="main")
    fork = asc.read_log(FIXTURES / "g_triage.sqlite", thread="fork")
    path = tmp_path / "fork.html"
    with load_machine(MACHINES / "triage.mjs", export="triageMachine") as m:
        asc.ForkView(m, main, fork, names=("main", "fork")).to_html(path)
    page = browser_context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(path.as_uri())
    page.wait_for_selector(".as-badge")
    page.click("#as-div")
    assert page.input_value("#as-slider") == "18"
    panes = page.locator(".as-pane")
    assert panes.nth(0).locator(".as-event-type").inner_text() == "APPROVE"
    assert panes.nth(1).locator(".as-event-type").inner_text() == "REJECT"
    lit_a = set(page.locator("#as-chart .as-active").evaluate_all("els => els.map(e => e.id)"))
    lit_b = set(page.locator("#as-chart .as-active-b").evaluate_all("els => els.map(e => e.id)"))
    assert state_element_id(f"{T}.working.analyzing") in lit_a - lit_b
    assert state_element_id(f"{T}.working.awaitingAgent.drafting") in lit_b - lit_a
    assert "at the divergence" in page.inner_text("#as-summary")
    assert page.locator("#as-cdiff tr.as-d-changed").count() > 0  # the aligned diff of the contexts
    page.click("#as-prev")
    assert "shared entry" in page.inner_text("#as-summary")
    page.screenshot(path=str(ARTIFACTS / "fork-player.png"), full_page=False)
    assert errors == []

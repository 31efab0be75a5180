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


# the heat map and the invariants: the Python engine on the real triage log -----------------------

HEAT_FILLS = ("#fff3e0", "#ffcc80", "#ffa726", "#f57c00", "#bf360c")  # render/coverage.py's scale
STYLED = (
    "(ids) => Object.fromEntries(ids.map(id => { const g = document.getElementById(id);"
    " const s = getComputedStyle(g.querySelector(':scope > path, :scope > polygon, :scope > ellipse'));"
    " return [id, [s.fill, s.strokeDasharray]]; }))"
)


def _rgb(hex_colour: str) -> str:
    r, g, b = (int(hex_colour[k : k + 2], 16) for k in (1, 3, 5))
    return f"rgb({r}, {g}, {b})"


def _classes(page: Any, selector: str) -> dict[str, str]:
    got: dict[str, str] = page.eval_on_selector_all(
        selector, "els => Object.fromEntries(els.map(e => [e.id, e.getAttribute('class')]))"
    )
    return got


def test_static_player_heat_map_toggle_and_first_violation(browser_context: Any, tmp_path: Path) -> None:
    import agentscope as asc
    from agentscope.examples.python_machines import triage_machine
    from agentscope.render.coverage import heat_bucket

    log = load_json("g_triage.main.log.json")
    m = triage_machine()
    tt = TimeTravel(m, log)
    rules = {"no rejection": "context.rejections < 1"}
    violations = asc.check(tt.timeline, rules)
    # brute force: the first entry whose replayed context has a rejection
    first = next(i for i in range(len(log)) if tt.timeline[i].context["rejections"] >= 1)
    assert int(violations["index"].iloc[0]) == first and first > 0
    path = tmp_path / "heat.html"
    tt.to_html(path, coverage=True, violations=violations)
    cov = asc.coverage(tt.timeline, m)
    visits = cov.visits
    most = max(v for s, v in visits.items() if s != m.graph.root)
    drawn = {s: state_element_id(s) for s in m.graph.nodes if s != m.graph.root}
    never = {drawn[s] for s in cov.never_visited if s in drawn}
    assert never  # the log leaves states unvisited (else the test could not fail)

    page = browser_context.new_page()
    page.set_viewport_size({"width": 1300, "height": 1100})
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(path.as_uri() + "#5")
    page.wait_for_selector(".as-badge")
    step_lit = _lit(page)
    assert step_lit and not _classes(page, "#as-chart .as-unvisited")
    assert page.is_visible("#as-first-vio") and not page.is_visible("#as-heat-legend")

    page.check("#as-heat")  # the heat map: every drawn state classed by its visits
    assert _lit(page) == set()  # the step's styling is gone
    unvisited = set(_classes(page, "#as-chart .as-unvisited"))
    assert unvisited == never
    for sid, eid in drawn.items():
        cls = _classes(page, f"#{eid}")[eid].split()
        b = heat_bucket(visits[sid], most)
        assert (f"as-heat-{b}" if b else "as-unvisited") in cls, (sid, cls)
        if b:
            assert page.get_attribute(f"#{eid}", "data-visits") == str(visits[sid])
    styles = page.evaluate(STYLED, sorted(drawn.values()))
    for sid, eid in drawn.items():
        fill, dash = styles[eid]
        if eid in never:
            assert fill == "rgb(238, 238, 238)" and dash not in ("none", ""), (sid, fill, dash)
        elif m.graph.nodes[sid].kind not in ("compound", "parallel"):  # clusters show heat in outline
            assert fill == _rgb(HEAT_FILLS[heat_bucket(visits[sid], most) - 1]), (sid, fill)
            assert dash in ("none", ""), (sid, dash)
    assert page.is_visible("#as-heat-legend") and not page.is_visible(".as-legend")
    summary = page.inner_text("#as-heat-summary")
    assert f"{len(drawn) - len(never)} of {len(drawn)} states visited" in summary
    page.screenshot(path=str(ARTIFACTS / "static-player-heat.png"), full_page=False)

    page.click("#as-next")  # stepping keeps the heat map (the panes below follow the slider)
    assert page.input_value("#as-slider") == "6" and set(_classes(page, "#as-chart .as-unvisited")) == never
    assert _lit(page) == set()

    page.uncheck("#as-heat")  # back to the current step
    assert not _classes(page, "#as-chart .as-unvisited")
    assert not _classes(page, "#as-chart [class*='as-heat-']")
    assert _lit(page)
    page.click("#as-prev")
    assert _lit(page) == step_lit  # the step's styling is back, as before the heat map

    page.click("#as-first-vio")
    assert page.input_value("#as-slider") == str(first)
    assert "as-row-violation" in (
        page.locator(f"#as-rows tr[data-index='{first}']").get_attribute("class") or ""
    )
    page.screenshot(path=str(ARTIFACTS / "static-player-violation.png"), full_page=False)
    assert errors == []


def test_static_player_hides_first_violation_and_heat_map_without_them(
    browser_context: Any, tmp_path: Path
) -> None:
    from agentscope.examples.python_machines import triage_machine

    path = tmp_path / "plain.html"
    TimeTravel(triage_machine(), load_json("g_triage.main.log.json")).to_html(path)
    page = browser_context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(path.as_uri())
    page.wait_for_selector(".as-badge")
    assert page.locator("#as-first-vio").count() == 1 and not page.is_visible("#as-first-vio")
    assert page.locator("#as-heat").count() == 0
    assert errors == []


def test_heat_map_shows_hostile_state_names_as_text(browser_context: Any, tmp_path: Path) -> None:
    from agentscope.engines.statechart import setup
    from tests.test_replay_support import write_log

    bad, never = "</script><img src=x onerror=alert(1)>", "never &amp; <i>x</i>"
    m = setup().create_machine(
        {
            "id": "h<b>",
            "initial": "idle",
            "states": {"idle": {"on": {"GO": bad}}, bad: {"on": {"BACK": "idle"}}, never: {}},
        }
    )
    log = write_log(m, [{"type": "GO"}, {"type": "BACK"}, {"type": "GO"}])
    path = tmp_path / "hostile.html"
    page_text = TimeTravel(m, log).to_html(path, coverage=True)
    assert page_text.count("</script>") == 2  # the data and the player, nothing from the log
    page = browser_context.new_page()
    errors: list[str] = []
    dialogs: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    page.goto(path.as_uri())
    page.wait_for_selector(".as-badge")
    page.check("#as-heat")
    bad_id, never_id = state_element_id(f"h<b>.{bad}"), state_element_id(f"h<b>.{never}")
    assert "as-heat-5" in (page.get_attribute(f"#{bad_id}", "class") or "")
    assert page.get_attribute(f"#{bad_id}", "data-visits") == "2"
    assert "as-unvisited" in (page.get_attribute(f"#{never_id}", "class") or "")
    title = page.locator(f"#{bad_id} > title").evaluate("t => t.textContent")
    assert title == f"h<b>.{bad}: 2 visits"  # the state id shown as text in the tooltip
    assert page.locator("#as-chart img").count() == 0 and page.locator("#as-chart i").count() == 0
    page.uncheck("#as-heat")
    assert page.locator(f"#{bad_id} > title").evaluate("t => t.textContent") == bad_id  # restored
    assert errors == [] and dialogs == []


# share links are untrusted text ------------------------------------------------------------------

MALFORMED_LINKS = {
    "#5%": "0",  # a lone percent: decodeURIComponent throws URIError
    "#%E0%A4%A": "0",  # a truncated UTF-8 escape
    "?step=%": "0",
    "?step=%E0%A4%A": "0",
    "#-2": "0",
    "#99999999999999999999": "3",  # past the end: the last step, the nearest valid one
    "#2": "2",  # a good link still works
    "?step=1": "1",
}


def test_malformed_share_link_opens_at_a_valid_step(browser_context: Any, tmp_path: Path) -> None:
    graph = graph_from_config(load_json("g_triage.machine.json")["serializeMachine"])
    path = tmp_path / "player.html"
    TimeTravel(GraphOnly(graph), timeline=ListTimeline(prefix_frames())).to_html(path)
    page = browser_context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    for suffix, want in MALFORMED_LINKS.items():
        page.goto(path.as_uri() + suffix)
        page.wait_for_selector(".as-badge")
        assert page.input_value("#as-slider") == want, suffix
        assert page.locator(".as-badge").count() >= 1, suffix
    assert errors == []
    page.close()


@requires_node
def test_static_player_lights_the_edges_the_engine_took(browser_context: Any, tmp_path: Path) -> None:
    """The triage player (real XState through Node) at 900 px: at the kb retry (entry 3) the
    ``error: kb`` self-loop on ``searching`` is lit, alone; after the kb answer (entry 4) the three
    edges of the chain (kb done, the parallel state's done, ``always`` to escalating) are lit."""
    import agentscope as asc
    from agentscope.engines.xstate import load_machine
    from agentscope.examples import example_path
    from agentscope.widgets._source import iter_frames, step_info
    from tests.conftest import MACHINES

    log = asc.read_log(example_path("g_triage.sqlite"), thread="main")
    path = tmp_path / "triage.html"
    with load_machine(MACHINES / "triage.mjs", "triageMachine") as m:
        tt = TimeTravel(m, log)
        tt.to_html(path)
        frames = list(iter_frames(tt.timeline))
    g, lay = tt.layout_.graph, tt.layout_
    retry = next(i for i, t in enumerate(g.transitions) if t.kind == "invoke.onError" and t.reenter)

    def expected(k: int) -> set[str]:
        info = step_info(g, frames[k - 1], frames[k])
        return {eid for mv in info.moves for eid in lay.edge_elements(mv)}

    assert expected(3) == set(lay.edge_elements(retry))
    assert len(expected(4)) == 3
    page = browser_context.new_page()
    page.set_viewport_size({"width": 900, "height": 1100})
    for k in (3, 4):
        page.goto(path.as_uri() + f"#{k}")
        page.wait_for_function(f"document.querySelector('#as-slider').value === '{k}'")
        lit = set(page.eval_on_selector_all("#as-chart .as-taken", "els => els.map(e => e.id)"))
        page.locator("#as-chart").screenshot(path=str(ARTIFACTS / f"triage_lit_edges_{k}.png"))
        assert lit == expected(k), k
        # the microsteps panel: none for the one-microstep retry; the chain at entry 4 as sub-steps
        steps = page.eval_on_selector_all(".as-microsteps > li", "els => els.map(e => e.textContent)")
        if k == 3:
            assert steps == [] and not page.is_visible(".as-microsteps-slot-title")
        else:
            assert len(steps) == len(frames[4].microsteps) >= 2, steps
            assert "always: working.routing → working.escalating" in steps[-1], steps
            assert page.is_visible(".as-microsteps-slot-title")
            page.locator(".as-microsteps").screenshot(path=str(ARTIFACTS / "triage_microsteps_4.png"))
    page.close()

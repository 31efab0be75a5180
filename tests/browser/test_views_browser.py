"""The views as a person sees them, in headless Chromium: the static player of two real logs of one
machine and of the counter machine, the fork player, a 50-state chart at notebook width and a huge
chart. Each is stepped through at least three steps with DOM assertions, and a screenshot of each
step is saved in ``test-artifacts/`` (look at them: a chart a person cannot read is a bug).

The real logs are the fixtures' triage store (threads ``main``, ``second`` and ``fork``) and the
counter log, replayed by the Node engine (``machines/*.mjs``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from agentscope.render import state_element_id
from tests.browser.conftest import ARTIFACTS
from tests.conftest import FIXTURES, MACHINES, requires_node

T = "supportTriage"
LEGEND = ("active", "entered", "exited", "taken edge", "observed edge", "dynamic target", "history", "final")

# JS: every drawn node's id, the state label text heights, the lit edges
NODE_IDS = "() => [...document.querySelectorAll('#as-chart g.node')].map(g => g.id)"
LABEL_HEIGHTS = (
    "() => [...document.querySelectorAll('#as-chart g.node.as-state text, #as-chart g.cluster text')]"
    ".map(t => t.getBoundingClientRect().height)"
)
POSITIONS = (
    "() => Object.fromEntries([...document.querySelectorAll('#as-chart g.as-state')].map(g => "
    "{ const r = g.getBoundingClientRect(); return [g.id, [r.x, r.y, r.width, r.height].map(Math.round)]; }))"
)
TAKEN = "(c) => [...document.querySelectorAll('#as-chart .' + c)].map(e => e.id)"


@pytest.fixture(scope="module")
def players(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Players of real logs: triage main, triage second (same machine), counter, main vs fork."""
    import agentscope as asc
    from agentscope.engines.xstate import load_machine

    out = tmp_path_factory.mktemp("players")
    store = FIXTURES / "g_triage.sqlite"
    main = asc.read_log(store, thread="main")
    second = asc.read_log(store, thread="second")
    fork = asc.read_log(store, thread="fork")
    paths = {k: out / f"{k}.html" for k in ("main", "second", "counter", "fork")}
    with load_machine(MACHINES / "triage.mjs", export="triageMachine") as m:
        asc.TimeTravel(m, main).to_html(paths["main"])
        asc.TimeTravel(m, second).to_html(paths["second"])
        asc.ForkView(m, main, fork, names=("main", "fork")).to_html(paths["fork"])
    with load_machine(MACHINES / "counter.mjs", export="counterMachine") as m:
        asc.TimeTravel(m, asc.read_log(FIXTURES / "a_counter.log.json")).to_html(paths["counter"])
    return paths


def _open(ctx: Any, url: str, width: int = 1000) -> tuple[Any, list[str]]:
    page = ctx.new_page()
    page.set_viewport_size({"width": width, "height": 1000})
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(url)
    page.wait_for_selector(".as-badge")
    return page, errors


def _common_checks(page: Any) -> None:
    """No phantom node, the legend, readable state labels."""
    declared = page.evaluate(
        "() => [...document.querySelectorAll('#as-chart g.node')].every(g => "
        "!/^as_s_/.test(g.querySelector('text') ? g.querySelector('text').textContent : ''))"
    )
    assert declared, "a node is labelled with an internal id (phantom node)"
    assert not [i for i in page.evaluate(NODE_IDS) if i.endswith("_a")]  # anchors are only declared points
    legend = page.locator(".as-legend [data-legend]").evaluate_all("els => els.map(e => e.dataset.legend)")
    for item in LEGEND:
        assert any(item == x or x.startswith(item + " ") or x == f"{item} in both" for x in legend), (
            item,
            legend,
        )
    heights = page.evaluate(LABEL_HEIGHTS)
    assert heights and min(heights) >= 9, heights


@requires_node
def test_player_lights_the_edges_each_step_took_and_follows_the_url(
    browser_context: Any, players: dict[str, Path]
) -> None:
    page, errors = _open(browser_context, players["main"].as_uri() + "#18")
    assert page.input_value("#as-slider") == "18"  # started at the step the link names
    title = page.inner_text("#as-title")
    assert "g_triage.sqlite · thread main" in title and str(FIXTURES) not in page.title() + title
    _common_checks(page)
    seen = []
    for step in (18, 19, 22):
        if step != 18:
            page.locator("#as-slider").fill(str(step))
        assert page.evaluate("() => location.hash") == f"#{step}"  # the URL follows the slider
        lit = page.evaluate(TAKEN, "as-taken")
        # exactly the edges the engine reports: step 18 is APPROVE and the eventless `always`
        # (selecting -> analyzing, edge 5) it led to; 19 and 22 one edge each
        assert len(lit) == {18: 2, 19: 1, 22: 1}[step], (step, lit)
        assert ("as_t5_0" in lit) == (step == 18), (step, lit)
        seen.extend(lit)
        page.screenshot(path=str(ARTIFACTS / f"player-main-step{step}.png"), full_page=True)
    assert len(set(seen)) >= 2
    # nothing to verify is hidden; here every hash verifies, so the buttons are there but disabled
    assert page.is_visible("#as-first-mm") and page.is_disabled("#as-first-mm")
    page.goto(players["main"].as_uri() + "?step=45")
    page.wait_for_selector(".as-badge")
    assert page.input_value("#as-slider") == "45"
    assert errors == []


@requires_node
def test_two_logs_of_one_machine_have_the_same_layout(browser_context: Any, players: dict[str, Path]) -> None:
    pa, ea = _open(browser_context, players["main"].as_uri())
    pb, eb = _open(browser_context, players["second"].as_uri())
    a, b = pa.evaluate(POSITIONS), pb.evaluate(POSITIONS)
    assert len(a) >= 15 and a == b  # every state box at the same place
    pb.screenshot(path=str(ARTIFACTS / "player-second-step0.png"), full_page=True)
    assert ea == eb == []


@requires_node
def test_counter_player_has_no_phantom_node(browser_context: Any, players: dict[str, Path]) -> None:
    page, errors = _open(browser_context, players["counter"].as_uri())
    _common_checks(page)
    ids = set(page.evaluate(NODE_IDS))
    states = {state_element_id(f"counter.{s}") for s in ("off", "on", "done")}
    assert states <= ids
    root = state_element_id("counter")
    assert page.locator(f"#{root}.cluster").count() == 1  # root-level `on` hangs off the root box
    for step in (1, 2, 3):
        page.locator("#as-slider").fill(str(step))
        assert len(page.evaluate(TAKEN, "as-taken")) <= 1
        page.screenshot(path=str(ARTIFACTS / f"player-counter-step{step}.png"), full_page=True)
    assert errors == []


@requires_node
def test_fork_player_compares_on_one_chart(browser_context: Any, players: dict[str, Path]) -> None:
    page, errors = _open(browser_context, players["fork"].as_uri() + "#divergence")
    assert page.input_value("#as-slider") == "18"
    assert "at the divergence (fork, entry 18: main APPROVE vs fork REJECT)" in page.inner_text("#as-summary")
    # the count Python computed (jsondiff: the paths `agentscope diff` lists), one row per path
    assert "· 9 differing context path(s)" in page.inner_text("#as-summary")
    assert page.locator("#as-cdiff tr[data-path]").count() == 9
    assert page.locator('#as-cdiff tr[data-path="/context/queue/0"]').count() == 1
    assert page.evaluate("() => location.hash") == "#divergence"
    assert page.locator("#as-chart svg").count() == 1  # one full-width chart
    _common_checks(page)
    a = set(page.evaluate(TAKEN, "as-active"))
    b = set(page.evaluate(TAKEN, "as-active-b"))
    assert state_element_id(f"{T}.working.analyzing") in a - b
    assert state_element_id(f"{T}.working.awaitingAgent.drafting") in b - a
    # main: APPROVE and its eventless `always` (edge 5); fork: REJECT
    taken_a = page.evaluate(TAKEN, "as-taken")
    assert len(taken_a) == 2 and "as_t5_0" in taken_a and len(page.evaluate(TAKEN, "as-taken-b")) == 1
    # only the differences by default from the divergence on, one-side-only paths marked
    assert page.locator("#as-cdiff tr.as-d-changed").count() > 0
    assert page.locator("#as-cdiff tr.as-d-only-a, #as-cdiff tr.as-d-only-b").count() > 0
    assert not page.is_visible("#as-ctxs .as-ctx")
    rows = page.locator("#as-rows tr.as-current td")
    assert rows.nth(1).inner_text() == "APPROVE" and rows.nth(2).inner_text() == "REJECT"
    page.screenshot(path=str(ARTIFACTS / "fork-player-divergence.png"), full_page=True)

    page.click("#as-prev")  # before the divergence: shared, one context
    assert "shared entry" in page.inner_text("#as-summary")
    assert page.locator("#as-cdiff tr").count() == 0 and page.is_visible("#as-ctxs .as-ctx")
    page.screenshot(path=str(ARTIFACTS / "fork-player-shared.png"), full_page=True)

    page.locator("#as-slider").fill("70")  # the fork log (52 entries) has ended
    summary = page.inner_text("#as-summary")
    assert "fork ended at entry 51; main continues" in summary and "differing context" not in summary
    assert "(ended)" in page.inner_text("#as-rows")
    page.screenshot(path=str(ARTIFACTS / "fork-player-ended.png"), full_page=True)
    page.select_option("#as-cmode", "all")
    assert page.is_visible("#as-ctxs .as-ctx")
    assert errors == []


def test_fifty_state_chart_is_legible_at_notebook_width(browser_context: Any, tmp_path: Path) -> None:
    from agentscope.render import frame_svg, graph_from_config, layout
    from agentscope.render.html import style_block
    from tests._charts import fifty_config

    g = graph_from_config(fifty_config())
    lay = layout(g)
    path = tmp_path / "fifty.html"
    chart = frame_svg(lay, {"phase2": "step3"})
    path.write_text(f"<!DOCTYPE html><meta charset=utf-8>{style_block()}<div id='as-chart'>{chart}</div>")
    page = browser_context.new_page()
    page.set_viewport_size({"width": 900, "height": 900})
    page.goto(path.as_uri())
    heights = page.evaluate(LABEL_HEIGHTS)
    assert len(heights) >= 50 and min(heights) >= 9, min(heights)
    page.screenshot(path=str(ARTIFACTS / "chart-fifty-900px.png"), full_page=False)


def test_huge_chart_is_collapsed_with_a_visible_note(browser_context: Any, tmp_path: Path) -> None:
    from agentscope.render import frame_svg, graph_from_config, layout
    from agentscope.render.chart import expansion
    from agentscope.render.html import style_block
    from tests._charts import huge_config

    lay = layout(graph_from_config(huge_config()))
    path = tmp_path / "huge.html"
    chart = frame_svg(lay, {"g4": "s17"})
    path.write_text(f"<!DOCTYPE html><meta charset=utf-8>{style_block()}<div id='as-chart'>{chart}</div>")
    page = browser_context.new_page()
    page.set_viewport_size({"width": 900, "height": 900})
    page.goto(path.as_uri())
    assert page.is_visible(".as-chart-note") and "summarised" in page.inner_text(".as-chart-note")
    assert page.inner_text(".as-active-path") == "active: g4 › s17"
    assert page.locator(f"#{state_element_id('huge.g4')}.as-active").count() == 1
    page.screenshot(path=str(ARTIFACTS / "chart-huge-collapsed.png"), full_page=False)
    # the box opens on click as a chart of its own, the active state lit, labels readable
    details = page.locator("details.as-expand")
    assert details.count() == 1 and not page.is_visible("details.as-expand svg")
    details.locator("summary").click()
    sub = expansion(lay, "huge.g4")
    inner = details.locator("svg g.node.as-state")
    assert inner.count() == 60
    lit = details.locator(".as-active").evaluate_all("els => els.map(e => e.id)")
    assert set(lit) == {sub.plan.states["huge.g4"], sub.plan.states["huge.g4.s17"]}
    heights = details.evaluate(
        "d => [...d.querySelectorAll('g.node.as-state text')].map(t => t.getBoundingClientRect().height)"
    )
    assert len(heights) == 60 and min(heights) >= 9, min(heights)
    page.screenshot(path=str(ARTIFACTS / "chart-huge-expanded.png"), full_page=False)


@pytest.fixture(scope="module")
def huge_player(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[Any], Any]:
    """The player of a log of the 1,831-state machine (the pure-Python engine), its frames and the
    TimeTravel widget it was written from."""
    import agentscope as asc
    from agentscope.engines.statechart import StatechartMachine
    from tests._charts import huge_config

    m = StatechartMachine(huge_config())
    events = ["NEXT", "NEXT", "SKIP", "JUMP", "NEXT", "RESET", "JUMP", "SKIP", "NEXT", "JUMP"]
    stream = [{"type": "@agent.init"}] + [{"type": e} for e in events]
    log = [
        {
            "schemaVersion": 1,
            "id": f"evt_{k:04d}",
            "index": k,
            "recordedAt": "2026-01-01T00:00:00.000Z",
            "machineId": m.machine_id,
            "event": ev,
        }
        for k, ev in enumerate(stream)
    ]
    tt = asc.TimeTravel(m, log)
    assert tt.layout_ is not None and tt.layout_.collapsed
    path = tmp_path_factory.mktemp("huge") / "huge-player.html"
    tt.to_html(path)
    return path, [tt.timeline.at(k) for k in range(tt.n)], tt


def test_huge_player_opens_the_active_box_as_a_chart(
    browser_context: Any, huge_player: tuple[Path, list[Any], Any]
) -> None:
    path, frames, _ = huge_player
    # the states the log visits, computed from the pure-Python engine's values
    assert [f.value for f in frames[:6]] == [
        {"g0": "s0"}, {"g0": "s1"}, {"g0": "s2"}, {"g0": "s4"}, {"g1": "s4"}, {"g1": "s5"}
    ]
    page, errors = _open(browser_context, path.as_uri() + "#4")
    assert "summarised" in page.inner_text("#as-chart-note")
    steps = {4: ("g1", "s4", False), 5: ("g1", "s5", True), 2: ("g0", "s2", True)}
    for step, (box, state, taken) in steps.items():
        if step != 4:
            page.locator("#as-slider").fill(str(step))
        assert page.inner_text("#as-active-path") == f"active: {box} › {state}"
        box_id = state_element_id(f"huge.{box}")
        assert page.locator(f"#as-chart #{box_id}.as-active").count() == 1
        shown = page.locator("#as-xcharts details.as-expand:visible")
        assert shown.count() == 1 and shown.get_attribute("data-box") == box_id
        if step == 4:  # closed until a click on the summary box opens it
            assert not shown.evaluate("d => d.open") and not shown.locator("svg").is_visible()
            page.locator(f"#as-chart #{box_id}").click()
        assert shown.evaluate("d => d.open")  # and then it follows the active path
        lit = shown.locator("g.node.as-active").evaluate_all(
            "els => els.map(e => e.querySelector('text').textContent)"
        )
        assert lit == [state], (step, lit)
        moved = shown.locator("g.edge.as-taken").count()
        assert moved == (1 if taken else 0), (step, moved)  # the move inside the box, lit there
        assert shown.locator("svg g.node.as-state").count() == 60
        page.screenshot(path=str(ARTIFACTS / f"player-huge-step{step}.png"), full_page=False)
    assert errors == []


FAKE_MODEL = """
<script type="module">
const traits = JSON.parse(document.getElementById('traits').textContent);
const handlers = {};
window.model = {
  get: (k) => traits[k],
  on: (ev, f) => { (handlers[ev] = handlers[ev] || []).push(f); },
  set: (k, v) => { traits[k] = v; (handlers['change:' + k] || []).forEach((f) => f()); },
};
const src = document.getElementById('esm').textContent;
const mod = await import(URL.createObjectURL(new Blob([src], {type: 'text/javascript'})));
mod.default.render({model: window.model, el: document.getElementById('w')});
window.ready = true;
</script>
"""


def test_widget_chart_front_end_restyles_and_follows_the_active_box(
    browser_context: Any, huge_player: tuple[Path, list[Any], Any], tmp_path: Path
) -> None:
    """The widget's chart module (anywidget ESM) in Chromium, fed the traits the kernel sends at
    each step of the huge machine's log: one drawing, classes moved per step, the expanded box
    opened on a click on its summary box and following the active path."""
    import json

    from agentscope.render._escape import json_for_script
    from agentscope.render.chart import expansion
    from agentscope.render.html import style_block

    _, _, tt = huge_player
    tt._coalesce = False  # Playwright's loop runs in this thread: render each step now
    w = tt._chart
    names = ("svg", "head", "boxes", "lit", "step")
    tt.step = 4
    path = tmp_path / "widget.html"
    esm = str(w._esm)  # the module the widget ships: render/frame.js, then widgets/chart.js
    assert "</" not in esm  # embeddable in a <script> as is
    traits = json_for_script({k: getattr(w, k) for k in names})
    path.write_text(
        f"<!DOCTYPE html><meta charset=utf-8>{style_block()}<div id='w'></div>"
        f"<script type='application/json' id='traits'>{traits}</script>"
        f"<script type='text/plain' id='esm'>{esm}</script>{FAKE_MODEL}",
        encoding="utf-8",
    )
    page = browser_context.new_page()
    page.set_viewport_size({"width": 900, "height": 900})
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(path.as_uri())
    page.wait_for_function("() => window.ready === true")
    page.evaluate("() => { window.drawing = document.querySelector('#w > div:last-child > .as-chart > svg'); }")
    for step, (box, state) in {4: ("g1", "s4"), 5: ("g1", "s5"), 2: ("g0", "s2")}.items():
        tt.step = step
        page.evaluate(
            "(t) => { for (const k of ['head', 'boxes', 'lit', 'step']) window.model.set(k, t[k]); }",
            json.loads(json.dumps({k: getattr(w, k) for k in names})),
        )
        assert page.get_attribute("#w", "data-step") == str(step)
        sub = expansion(tt.layout_, f"huge.{box}")
        box_id = state_element_id(f"huge.{box}")
        assert page.locator(f"#w .as-chart #{box_id}.as-active").count() == 1
        assert page.inner_text("#w .as-active-path") == f"active: {box} › {state}"
        details = page.locator("#w details.as-expand")
        assert details.count() == 1 and details.get_attribute("data-box") == box_id
        if step == 4:
            assert not details.evaluate("d => d.open")
            page.locator(f"#w .as-chart #{box_id}").click()  # a click on the summary box opens it
        assert details.evaluate("d => d.open")  # and it follows the active path
        lit = set(page.evaluate("() => [...document.querySelectorAll('#w .as-active')].map(e => e.id)"))
        want = {box_id, sub.plan.states[f"huge.{box}"], sub.plan.states[f"huge.{box}.{state}"]}
        assert lit == want, (step, lit)  # the box in the chart, the box and its state in the expansion
        taken = page.locator("#w details .as-taken").count()
        assert taken == (1 if step in (5, 2) else 0), (step, taken)
        page.screenshot(path=str(ARTIFACTS / f"widget-huge-step{step}.png"), full_page=False)
    # the drawing itself was never replaced
    assert page.evaluate("() => document.querySelector('#w > div:last-child > .as-chart > svg') === window.drawing")
    assert errors == []


def test_tables_read_left_to_right_inside_a_notebook_output(browser_context: Any, tmp_path: Path) -> None:
    """JupyterLab and nbconvert right-align every cell of an HTML output
    (``:not(.jp-RenderedMarkdown).jp-RenderedHTMLCommon td``); the fork view's context diff and
    aligned entries keep their left alignment in its ``text/html`` copy."""
    import agentscope as asc
    from agentscope.examples.python_machines import triage_machine

    store = FIXTURES / "g_triage.sqlite"
    main, fork = asc.read_log(store, thread="main"), asc.read_log(store, thread="fork")
    view = asc.ForkView(triage_machine(), main, fork, names=("main", "fork"))
    view.step = 18  # at the divergence: the context diff and the aligned entries both show
    html = view.static_html()  # the output's text/html copy, as nbconvert publishes it
    page_html = (
        "<style>:not(.jp-RenderedMarkdown).jp-RenderedHTMLCommon td,"
        ":not(.jp-RenderedMarkdown).jp-RenderedHTMLCommon th{text-align:right}</style>"
        f'<div class="jp-RenderedHTMLCommon jp-RenderedHTML">{html}</div>'
    )
    page = browser_context.new_page()
    page.set_content(page_html)
    aligns = page.evaluate(
        "() => [...document.querySelectorAll('.as-root td, .as-root th')]"
        ".map(e => getComputedStyle(e).textAlign)"
    )
    assert len(aligns) >= 10 and set(aligns) == {"left"}, sorted(set(aligns))
    page.close()


def test_widget_context_tree_keeps_the_folders_the_reader_opened(browser_context: Any, tmp_path: Path) -> None:
    """The widget's context-tree module (anywidget ESM) in Chromium, fed the traits the kernel sends
    at each step of the real triage log: a folder the reader opened stays open and one they closed
    stays closed across steps; every other folder keeps the kernel's default."""
    import json
    from importlib.resources import files

    import jsonpatch

    import agentscope as asc
    from agentscope.examples.python_machines import triage_machine
    from agentscope.render._escape import json_for_script
    from agentscope.render.html import style_block

    tt = asc.TimeTravel(triage_machine(), asc.read_log(FIXTURES / "g_triage.sqlite", thread="main"))
    tt._coalesce = False  # Playwright's loop runs in this thread: render each step now
    w = tt._context
    tt.step = 5
    esm = files("agentscope.widgets").joinpath("tree.js").read_text(encoding="utf-8")
    assert "</" not in esm  # embeddable in a <script> as is
    path = tmp_path / "tree.html"
    path.write_text(
        f"<!DOCTYPE html><meta charset=utf-8>{style_block()}<div id='w'></div>"
        f"<script type='application/json' id='traits'>{json_for_script({'base': w.base, 'patch': w.patch})}</script>"
        f"<script type='text/plain' id='esm'>{esm}</script>{FAKE_MODEL}",
        encoding="utf-8",
    )
    page = browser_context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(path.as_uri())
    page.wait_for_function("() => window.ready === true")

    def is_open(pointer: str) -> bool:
        return bool(page.locator(f"#w details.as-node[data-path='{pointer}']").first.evaluate("d => d.open"))

    # step 5 changed outcomes and current (open by default), not kbErrors (closed by default)
    assert not is_open("/context/kbErrors") and is_open("/context/outcomes") and is_open("/context/current")
    page.locator("#w details.as-node[data-path='/context/kbErrors'] > summary").first.click()
    page.locator("#w details.as-node[data-path='/context/outcomes'] > summary").first.click()
    assert is_open("/context/kbErrors") and not is_open("/context/outcomes")
    for step in (6, 7, 12):
        tt.step = step
        sent = json.loads(json.dumps({"base": w.base, "patch": w.patch}))
        page.evaluate("(t) => { window.model.set('base', t.base); window.model.set('patch', t.patch); }", sent)
        shown = "".join(jsonpatch.apply_patch(w.base, w.patch))  # the rows the kernel meant
        assert is_open("/context/kbErrors") and not is_open("/context/outcomes"), step
        default = 'data-path="/context/current" open' in shown
        assert is_open("/context/current") == default, step  # untouched: the kernel's default
    assert errors == []
    page.close()

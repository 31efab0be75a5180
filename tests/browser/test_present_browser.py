"""What a person sees, measured in Chromium at 600, 900 and 1,400 px wide: the marker strip lines
up with the slider, the chart fits its box (a zoom button shows it at a readable size), the
actors table needs no horizontal scroll, edge labels do not overlap and say no ``[<inline>]``,
and a huge chart is drawn collapsed because of its size with the active box and the badge in
view. Screenshots of each width go to ``test-artifacts/`` (look at them)."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from tests.browser.conftest import ARTIFACTS
from tests.conftest import load_json

WIDTHS = (600, 900, 1400)
TAMPERED = (45, 88)  # recorded hashes changed: two mismatch ticks, one mid-track, one near the end

GEOMETRY = """() => {
  const r = e => { const b = e.getBoundingClientRect(); return {x: b.x, y: b.y, w: b.width, h: b.height}; };
  const box = document.getElementById('as-chart'), svg = box.querySelector('svg');
  const ticks = [...document.querySelectorAll('#as-strip svg rect')]
    .filter(t => t.getAttribute('fill') === '#e53935').map(t => { const b = r(t); return b.x + b.w / 2; });
  const act = document.querySelector('.as-pane .as-actors table');
  return {slider: r(document.getElementById('as-slider')), ticks, box: r(box), svg: r(svg),
          page: [document.documentElement.scrollWidth, window.innerWidth],
          actors: act ? [act.scrollWidth, act.parentElement.clientWidth, act.getBoundingClientRect().right] : null};
}"""

OVERLAPS = """() => {
  const shown = t => t.getBoundingClientRect().width > 0 && getComputedStyle(t).display !== 'none';
  const boxes = sel => [...document.querySelectorAll(sel)].filter(shown).map(t => [t.textContent, t.getBoundingClientRect()]);
  const labels = boxes('#as-chart g.edge text'), names = boxes('#as-chart g.node text, #as-chart g.cluster text');
  const hit = (a, b) => a.x < b.right - 0.5 && b.x < a.right - 0.5 && a.y < b.bottom - 0.5 && b.y < a.bottom - 0.5;
  const out = [];
  labels.forEach(([t, a], i) => {
    labels.slice(i + 1).forEach(([u, b]) => { if (hit(a, b)) out.push(t + ' / ' + u); });
    names.forEach(([u, b]) => { if (hit(a, b)) out.push(t + ' / state ' + u); });
  });
  return out;
}"""


@pytest.fixture(scope="module")
def triage_page(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The bundled triage machine's player of the real main log, two recorded hashes tampered."""
    import agentscope as asc
    from agentscope.examples.python_machines import triage_machine

    log = copy.deepcopy(load_json("g_triage.main.log.json"))
    for i in TAMPERED:
        log[i]["verification"]["stateHash"] = "deadbeef"
    path = tmp_path_factory.mktemp("present") / "triage.html"
    asc.TimeTravel(triage_machine(), log).to_html(path)
    return path


def _open(ctx: Any, url: str, width: int) -> tuple[Any, list[str]]:
    page = ctx.new_page()
    page.set_viewport_size({"width": width, "height": 900})
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(url)
    page.wait_for_selector(".as-badge")
    return page, errors


@pytest.mark.parametrize("width", WIDTHS)
def test_the_player_fits_and_its_strip_lines_up_with_the_slider(
    browser_context: Any, triage_page: Path, width: int
) -> None:
    page, errors = _open(browser_context, triage_page.as_uri() + "#3", width)  # kb in flight
    g = page.evaluate(GEOMETRY)
    s, n = g["slider"], 90
    # a tick sits under the thumb's centre at its entry: the thumb (16 px) travels the track
    assert len(g["ticks"]) == len(TAMPERED)
    for x, i in zip(sorted(g["ticks"]), TAMPERED, strict=True):
        want = s["x"] + 8 + (s["w"] - 16) * i / n
        assert abs(x - want) <= 1.5, (width, i, x, want)
    # clicking the track right above a tick moves the slider to that tick's entry
    for x, i in zip(sorted(g["ticks"]), TAMPERED, strict=True):
        page.mouse.click(x, s["y"] + s["h"] / 2)
        assert page.input_value("#as-slider") == str(i), (width, i)
    # the chart fits its box, the page does not scroll sideways, the actors table fits
    page.evaluate("() => { location.hash = '#3'; }")
    page.wait_for_function("() => document.getElementById('as-slider').value === '3'")
    g = page.evaluate(GEOMETRY)
    box, svg = g["box"], g["svg"]
    assert svg["x"] >= box["x"] - 0.5 and svg["x"] + svg["w"] <= box["x"] + box["w"] + 0.5, (width, box, svg)
    assert g["page"][0] <= g["page"][1], (width, g["page"])
    assert g["actors"] is not None and g["actors"][0] <= g["actors"][1], (width, g["actors"])
    # the edge labels: none overlaps another or a state's name, none says [<inline>]
    assert page.evaluate(OVERLAPS) == [], width
    labels = page.eval_on_selector_all("#as-chart g.edge text", "ts => ts.map(t => t.textContent)")
    assert labels and not [t for t in labels if "inline" in t]
    titles = page.eval_on_selector_all("#as-chart g.edge > title", "ts => ts.map(t => t.textContent)")
    assert any("[guard: an inline function]" in t for t in titles)  # said on hover instead
    page.screenshot(path=str(ARTIFACTS / f"present-triage-{width}.png"), full_page=True)
    # zoom: the chart at its readable width, panned inside its box; then fitted again
    natural = page.evaluate("() => { const w = document.querySelector('#as-chart svg').getAttribute('width');"
                            " return parseFloat(w) * (w.endsWith('pt') ? 4 / 3 : 1); }")
    page.click("button.as-zoom")
    z = page.evaluate(GEOMETRY)
    assert abs(z["svg"]["w"] - natural) <= 1 and z["page"][0] <= z["page"][1]  # pans inside its box
    if natural > box["w"]:
        assert page.evaluate("() => { const b = document.getElementById('as-chart'); return b.scrollWidth > b.clientWidth; }")
    page.click("button.as-zoom")
    assert page.evaluate(GEOMETRY)["svg"]["w"] <= page.evaluate(GEOMETRY)["box"]["w"] + 0.5
    assert errors == []


def test_no_edge_labels_overlap_at_any_step(browser_context: Any, triage_page: Path) -> None:
    """Observed and taken edges show their labels when lit: at no step of the log do two labels
    (or a label and a state's name) overlap."""
    page, errors = _open(browser_context, triage_page.as_uri(), 900)
    seen: dict[str, int] = {}
    for i in range(91):
        page.evaluate(f"() => {{ location.hash = '#{i}'; }}")
        page.wait_for_function(f"() => document.getElementById('as-slider').value === '{i}'")
        for hit in page.evaluate(OVERLAPS):
            seen.setdefault(hit, i)
    assert seen == {}
    assert errors == []


@pytest.mark.parametrize("width", WIDTHS)
def test_a_huge_chart_is_collapsed_by_size_with_the_active_box_and_badge_in_view(
    browser_context: Any, tmp_path: Path, width: int
) -> None:
    import agentscope as asc
    from agentscope.engines.statechart import StatechartMachine
    from agentscope.render import state_element_id
    from agentscope.render.chart import EXPAND_MAX_STATES
    from tests._charts import huge_config

    m = StatechartMachine(huge_config())
    stream = [{"type": "@agent.init"}] + [{"type": e} for e in ("NEXT", "JUMP", "SKIP", "JUMP")]
    log = [{"schemaVersion": 1, "id": f"evt_{k:04d}", "index": k, "recordedAt": "2026-01-01T00:00:00.000Z",
            "machineId": m.machine_id, "event": ev} for k, ev in enumerate(stream)]
    tt = asc.TimeTravel(m, log)
    assert tt.layout_ is not None and tt.layout_.note is not None
    assert f"more than {EXPAND_MAX_STATES:,}" in tt.layout_.note  # decided by size, not by a clock
    path = tmp_path / "huge.html"
    tt.to_html(path)
    page, errors = _open(browser_context, path.as_uri() + "#4", width)
    box = state_element_id(str(tt.timeline.at(4).value and "huge." + next(iter(tt.timeline.at(4).value))))
    in_view = """(sel) => { const b = document.querySelector(sel).getBoundingClientRect();
      return b.width > 0 && b.top >= 0 && b.bottom <= window.innerHeight && b.left >= 0 && b.right <= window.innerWidth; }"""
    assert page.evaluate(in_view, f"#as-chart #{box}.as-active"), width
    assert page.evaluate(in_view, ".as-status-badge"), width  # the verdict, above the chart
    page.screenshot(path=str(ARTIFACTS / f"present-huge-{width}.png"), full_page=False)
    assert errors == []

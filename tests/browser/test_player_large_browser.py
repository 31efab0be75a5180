"""The static player of the 10^4-entry loop log, opened offline (file://) in Chromium and stepped.

The log is real: the fixtures' ``machines/loop.mjs`` folded by the Node engine over 10,000
recorded ``xstate.done.actor`` completions (session ids rebound, spec §4.1), each entry with its
envelope (§1.2) and ``verification.stateHash`` of the folded snapshot (§6), plus the
``@agent.init`` entry: 10,001 entries. The expected DOM at each visited step is computed here in
Python from the log and from the loop's own arithmetic (``i``, ``sum``), not read from the page.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from agentscope.render import state_element_id
from tests.browser.conftest import ARTIFACTS
from tests.conftest import MACHINES, requires_node

pytestmark = requires_node

N = 10_000  # completions; the log has N + 1 entries
BYTES_PER_ENTRY_BOUND = 1_000


def _delta(i: int) -> int:
    return (i * 7) % 13  # the `tick` actor's output for input i (loop.mjs)


@pytest.fixture(scope="module")
def loop_player(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[dict[str, Any]]]:
    """Write the player of a real 10,001-entry loop log; return its path and the log."""
    from agentscope.engines.xstate import load_machine
    from agentscope.hashing import state_hash
    from agentscope.widgets import TimeTravel

    t0 = time.perf_counter()
    with load_machine(MACHINES / "loop.mjs", export="loopMachine") as m:
        seed = m.initial({"limit": N})
        events = [
            {
                "type": "xstate.done.actor",
                "actorId": "tick",
                "sessionId": f"rec:{i}",
                "output": {"delta": _delta(i)},
            }
            for i in range(N)
        ]
        snaps = m.fold(seed, events)
        persisted = [m.persist(seed)] + [m.persist(s) for s in snaps]
        stream = [{"type": "@agent.init", "input": {"limit": N}}, *events]
        log = [
            {
                "schemaVersion": 1,
                "id": f"evt_{k:08d}",
                "index": k,
                "recordedAt": "2026-01-01T00:00:00.000Z",
                "machineId": m.machine_id,
                "machineVersion": m.version,
                "event": ev,
                "verification": {"stateHash": state_hash(p)},
            }
            for k, (ev, p) in enumerate(zip(stream, persisted, strict=True))
        ]
        for k in (0, 1, 5000, N):  # the fold did what the loop's code says
            assert persisted[k]["context"] == {"limit": N, "i": k, "sum": sum(map(_delta, range(k)))}
            assert persisted[k]["value"] == ("done" if k == N else "running")
        t1 = time.perf_counter()
        path = tmp_path_factory.mktemp("loop") / "loop-player.html"
        TimeTravel(m, log).to_html(path)
        t2 = time.perf_counter()
    size = path.stat().st_size
    print(
        f"\nloop log: {len(log):,} entries generated in {t1 - t0:.1f} s; TimeTravel + to_html "
        f"{t2 - t1:.1f} s; player {size:,} bytes ({size / len(log):,.0f} B/entry)"
    )
    return path, log


def test_loop_player_size_is_linear(loop_player: tuple[Path, list[dict[str, Any]]]) -> None:
    path, log = loop_player
    assert len(log) == N + 1
    size = path.stat().st_size
    assert size < BYTES_PER_ENTRY_BOUND * len(log), f"{size:,} bytes for {len(log):,} entries"
    page = path.read_text(encoding="utf-8").replace("http://www.w3.org/", "")  # SVG namespaces
    assert "<script src" not in page and "http://" not in page and "https://" not in page  # no CDN


def _expect(page: Any, log: list[dict[str, Any]], k: int) -> None:
    """Assert the DOM shows entry ``k`` of the loop log."""
    entry = log[k]
    assert page.input_value("#as-slider") == str(k)
    assert page.input_value("#as-goto") == str(k)
    assert page.inner_text("#as-pos") == f"{k} / {N}"
    assert page.inner_text(".as-event-type") == entry["event"]["type"]
    assert f"id {entry['id']}" in page.inner_text(".as-event-slot")
    badge = page.locator(".as-badge")
    assert badge.get_attribute("data-verdict") == "verified"
    assert badge.inner_text() == f"✓ verified {entry['verification']['stateHash']}"
    state = "done" if k == N else "running"
    lit = set(page.eval_on_selector_all("#as-chart .as-active", "els => els.map(e => e.id)"))
    assert lit == {state_element_id(f"loop.{state}")}
    ctx = page.locator(".as-ctx")
    assert ctx.locator(".as-leaf[data-path='/context/i']").inner_text() == f"i: {k}"
    assert (
        ctx.locator(".as-leaf[data-path='/context/sum']").inner_text() == f"sum: {sum(map(_delta, range(k)))}"
    )
    changed = set(ctx.locator(".as-changed").evaluate_all("els => els.map(e => e.dataset.path)"))
    want = set() if k == 0 else {"/context/i"} | ({"/context/sum"} if _delta(k - 1) else set())
    assert changed == want, f"step {k}: highlighted {changed}, changed {want}"
    current = page.locator("#as-rows tr.as-current td")
    assert current.nth(0).inner_text() == str(k)
    assert current.nth(2).inner_text() == entry["id"] and current.nth(3).inner_text() == entry["recordedAt"]
    assert current.nth(4).inner_text() == entry["verification"]["stateHash"]


def test_loop_player_steps_offline(
    loop_player: tuple[Path, list[dict[str, Any]]], browser_context: Any
) -> None:
    path, log = loop_player
    assert len({e["verification"]["stateHash"] for e in log[4990:5010]}) == 20  # steps are told apart
    browser_context.set_offline(True)
    page = browser_context.new_page()
    errors: list[str] = []
    requests: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("request", lambda r: requests.append(r.url))
    try:
        t0 = time.perf_counter()
        page.goto(path.as_uri(), wait_until="load")
        page.wait_for_selector(".as-badge")
        print(f"\nloop player opened in Chromium in {time.perf_counter() - t0:.1f} s")
        _expect(page, log, 0)
        assert page.get_attribute("#as-slider", "max") == str(N)

        page.click("#as-next")  # the next button
        _expect(page, log, 1)
        page.locator("#as-slider").fill("5000")  # the slider
        _expect(page, log, 5000)
        page.click("#as-prev")
        _expect(page, log, 4999)
        page.keyboard.press("ArrowRight")  # the keyboard (focus is on a button, not an input)
        _expect(page, log, 5000)
        page.fill("#as-goto", str(N))  # go to the last entry: the loop is done
        page.press("#as-goto", "Enter")
        _expect(page, log, N)
        page.click("#as-next")  # clamped at the end
        _expect(page, log, N)
        page.fill("#as-goto", "5000")  # and back, across the context keyframes
        page.press("#as-goto", "Enter")
        _expect(page, log, 5000)
        page.click("#as-rows tr[data-index='5003']")  # a row of the entry table
        _expect(page, log, 5003)
        assert page.locator("#as-first-mm").is_disabled()  # nothing to jump to: all verified
        page.screenshot(path=str(ARTIFACTS / "static-player-loop10k.png"), full_page=False)
    finally:
        page.close()
        browser_context.set_offline(False)
    assert errors == []
    assert requests and all(u.startswith("file://") for u in requests), requests

"""The quickstart notebook served by Voila, driven from Chromium (issue 6: "works in Voila").

Starts ``voila`` on 127.0.0.1 with a token and fresh config/runtime/IPython dirs on a copy of
``notebooks/01_quickstart.ipynb`` (the kernel imports ``agentscope`` from this checkout through
``PYTHONPATH``). Voila runs every cell on the server, then the page builds the widgets from the
kernel's state. The test checks the widgets show the steps the notebook left them on, moves the
slider from the keyboard and through the "go to" box, and asserts from the DOM that the step,
the event type, the hash badge and the lit state nodes are those of the right entry. Expected
values come from the bundled log (event types, recorded hashes) and from the state values the
live JS run recorded (``g_triage.main.replay.json``), not from agentscope. Saves a screenshot in
``test-artifacts/``. The server is torn down by process group, also on failure.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from agentscope.render import state_element_id
from tests.browser.conftest import (
    ARTIFACTS,
    QUICKSTART,
    QUICKSTART_MARKS,
    free_port,
    quickstart_sandbox,
    wait_until_serving,
)
from tests.conftest import load_json

NOTEBOOK = QUICKSTART
T = "supportTriage"
LOG = load_json("g_triage.main.log.json")
LIVE = {p["n"] - 1: p for p in load_json("g_triage.main.replay.json")["prefixes"]}  # index -> live state

pytestmark = QUICKSTART_MARKS


def _stop(proc: subprocess.Popen[bytes]) -> None:
    """Stop Voila: SIGTERM to its process group (Voila then shuts its kernels down), SIGKILL after
    a grace period to the group and to every descendant seen before (kernels run in their own
    sessions, their Node runners under them)."""
    try:
        import psutil

        family = [p.pid for p in psutil.Process(proc.pid).children(recursive=True)]
    except Exception:  # psutil missing or the server already gone
        family = []
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
    deadline = time.monotonic() + 10
    for pid in family:
        while time.monotonic() < deadline:
            try:
                os.kill(pid, 0)
            except (ProcessLookupError, PermissionError):
                break
            time.sleep(0.1)
        else:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


@pytest.fixture(scope="module")
def voila_url() -> Iterator[str]:
    voila = Path(sys.executable).with_name("voila")
    if not voila.exists():
        pytest.skip("voila is not installed next to this Python (pip install 'voila>=0.5,<0.6')")
    tmp, nbdir, env = quickstart_sandbox("as-voila-")
    token, port = secrets.token_hex(16), free_port()
    log = (tmp / "voila.log").open("wb")
    proc = subprocess.Popen(
        [
            str(voila),
            NOTEBOOK.name,
            "--no-browser",
            f"--port={port}",
            "--Voila.ip=127.0.0.1",
            f"--Voila.token={token}",
            "--ServerApp.allow_root=True",
        ],
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        cwd=nbdir,
        start_new_session=True,  # its own process group, killed as a whole
    )
    url = f"http://127.0.0.1:{port}"
    try:
        def ready() -> bool:  # no /api/status on a single-notebook Voila; GET / would run it
            socket.create_connection(("127.0.0.1", port), timeout=2).close()
            return True

        wait_until_serving(proc, ready, log, tmp / "voila.log", "Voila")
        yield f"{url}/?token={token}"
    finally:
        _stop(proc)
        log.close()
        shutil.rmtree(tmp, ignore_errors=True)


def _lit_ids(value: Any) -> set[str]:
    """Element ids of the states a state value makes active (root excluded: it is the chart)."""
    out: set[str] = set()

    def walk(prefix: str, v: Any) -> None:
        if isinstance(v, str):
            out.add(state_element_id(f"{prefix}.{v}"))
        elif isinstance(v, Mapping):
            for k, sub in v.items():
                out.add(state_element_id(f"{prefix}.{k}"))
                walk(f"{prefix}.{k}", sub)

    walk(T, value)
    return out


def _shows(widget: Any, k: int) -> None:
    """Wait until ``widget`` shows entry ``k`` of the main log, then check it from the DOM."""
    widget.locator(".as-event").filter(has_text=f"#{k} ").wait_for(timeout=30_000)
    widget.locator(f".widget-slider .noUi-handle[aria-valuenow='{k}.0']").wait_for(timeout=30_000)
    entry = LOG[k]
    assert widget.locator(".as-event-type").inner_text() == entry["event"]["type"]
    assert entry["id"] in widget.locator(".as-event").inner_text()
    badge = widget.locator(".as-badge")
    assert badge.get_attribute("data-verdict") == "verified"
    assert entry["verification"]["stateHash"] in badge.inner_text()
    if k in LIVE:  # the state the live run recorded after entry k
        assert LIVE[k]["recordedStateHash"] == entry["verification"]["stateHash"]
        # the chart and the context are widgets of their own: their updates for step k follow the
        # header's over the wire, so wait for them to arrive (30 s), then compare
        want = _lit_ids(LIVE[k]["value"])
        current = LIVE[k]["persistedSnapshot"]["context"]["current"]
        needle = current["subject"] if current else "current: null"
        ctx_box = widget.locator(".as-treew > .as-ctx")  # the context widget, not the payload tree
        # the actors panel is a widget of its own too: with no children recorded it must settle on
        # the two "none" lines (one line each, not run together)
        idle = ["no actors in flight", "no pending timers"]
        want_actors = idle if not LIVE[k]["persistedSnapshot"]["children"] else None
        deadline = time.monotonic() + 30
        while True:
            lit = set(widget.locator(".as-chart .as-active").evaluate_all("els => els.map(e => e.id)"))
            ctx = ctx_box.evaluate("e => e.textContent")  # collapsed members too
            actors = widget.locator(".as-actors").inner_text().splitlines()
            settled = want_actors is None or actors == want_actors
            if (lit == want and needle in ctx and settled) or time.monotonic() > deadline:
                break
            time.sleep(0.1)
        assert lit == want, (k, LIVE[k]["value"])
        assert needle in ctx, ctx[:500]
        if want_actors is not None:
            assert actors == want_actors, actors


def test_quickstart_in_voila(voila_url: str, browser_context: Any) -> None:
    page = browser_context.new_page()
    errors: list[str] = []
    external: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on(
        "request",
        lambda r: (
            None
            # blob: URLs are the chart widget's ES module, loaded from memory (anywidget)
            if r.url.startswith(("http://127.0.0.1", "ws://127.0.0.1", "data:", "blob:http://127.0.0.1"))
            else external.append(r.url)
        ),
    )
    try:
        page.goto(voila_url, timeout=180_000)  # Voila answers once the notebook has run
        widgets = page.locator(".agentscope-timetravel")
        widgets.nth(1).locator(".as-badge").wait_for(timeout=180_000)
        assert widgets.count() == 2
        tt, bad = widgets.nth(0), widgets.nth(1)
        for w in (tt, bad):  # neither view follows a growing log: no "follow tail" toggle at all
            assert w.locator("button", has_text="follow tail").count() == 0
            assert w.locator("button", has_text="first mismatch").count() == 1

        # the notebook left `tt` on step 1 (TICKETS_RECEIVED started the parallel analysis)
        _shows(tt, 1)
        analyzing = {
            state_element_id(f"{T}.working.analyzing.classification.running"),
            state_element_id(f"{T}.working.analyzing.knowledge.searching"),
        }
        assert analyzing <= set(tt.locator(".as-chart .as-active").evaluate_all("els => els.map(e => e.id)"))

        # and the tampered log's widget on its first mismatch: the first APPROVE after entry 20
        k = next(i for i, e in enumerate(LOG) if i > 20 and e["event"]["type"] == "APPROVE")
        bad.locator(".as-event").filter(has_text=f"#{k} ").wait_for(timeout=30_000)
        assert bad.locator(".as-event-type").inner_text() == "APPROVE"
        assert bad.locator(".as-badge").get_attribute("data-verdict") == "mismatch"
        assert LOG[k]["verification"]["stateHash"] in bad.locator(".as-badge").inner_text()
        # the marker strip is aligned with the slider: the mismatch's red tick sits under the
        # handle, which stands on that entry
        tick = bad.locator(".as-track svg rect[fill='#e53935']").first.bounding_box()
        handle = bad.locator(".noUi-handle").first.bounding_box()
        assert tick is not None and handle is not None
        centre = handle["x"] + handle["width"] / 2
        assert abs(tick["x"] + tick["width"] / 2 - centre) <= 2, (tick, handle)

        # the slider from the keyboard: one step left is the init entry, the machine in standby
        tt.locator(".noUi-handle").first.focus()
        page.keyboard.press("ArrowLeft")
        _shows(tt, 0)
        page.keyboard.press("ArrowRight")
        _shows(tt, 1)

        # the "go to" box: entry 17, where the live run was reviewing a draft
        box = tt.locator(".widget-text input").first

        def settled(k: int) -> None:  # the kernel's echo of the step reached the box: type now
            page.wait_for_function("([e, k]) => e.value === String(k)", arg=[box.element_handle(), k],
                                   timeout=30_000)

        settled(1)
        box.fill("17")
        box.press("Enter")
        _shows(tt, 17)
        tt.locator(".noUi-handle").first.focus()
        page.keyboard.press("ArrowRight")
        _shows(tt, 18)
        page.keyboard.press("End")  # the last entry: the shift closed
        _shows(tt, len(LOG) - 1)
        settled(len(LOG) - 1)
        box.fill("44")
        box.press("Enter")
        _shows(tt, 44)

        tt.scroll_into_view_if_needed()
        ARTIFACTS.mkdir(exist_ok=True)
        tt.screenshot(path=str(ARTIFACTS / "voila-timetravel.png"))
    finally:
        page.close()
    assert not [e for e in errors if "agentscope" in e or "as-" in e], errors
    # the only requests leaving the machine are Voila's own icon font stylesheet (its template)
    assert all("fontawesome" in u for u in external), external

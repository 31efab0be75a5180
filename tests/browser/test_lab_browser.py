"""The quickstart notebook run in a real JupyterLab, driven from Chromium (tech-eval §3).

Starts JupyterLab on 127.0.0.1 with a token and fresh config/runtime/IPython dirs, opens a copy
of ``notebooks/01_quickstart.ipynb``, runs all cells, moves the TimeTravel slider from the
keyboard and checks from the DOM that the lit state node and the hash badge change, and that
the tampered log's widget shows the mismatch badge. Saves a screenshot in ``test-artifacts/``.
"""

from __future__ import annotations

import secrets
import shutil
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
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

NOTEBOOK = QUICKSTART
T = "supportTriage"

pytestmark = QUICKSTART_MARKS


@pytest.fixture(scope="module")
def lab() -> Iterator[tuple[str, str]]:
    jupyter = Path(sys.executable).with_name("jupyter")
    if not jupyter.exists():
        pytest.skip("jupyter is not installed next to this Python")
    tmp, nbdir, env = quickstart_sandbox("as-lab-")
    # user settings: no news / update toasts over the widget
    settings = tmp / "lab-settings" / "@jupyterlab" / "apputils-extension"
    settings.mkdir(parents=True)
    (settings / "notification.jupyterlab-settings").write_text(
        '{"fetchNews": "false", "checkForUpdates": false}', encoding="utf-8"
    )
    env["JUPYTERLAB_SETTINGS_DIR"] = str(tmp / "lab-settings")
    token, port = secrets.token_hex(16), free_port()
    log = (tmp / "lab.log").open("wb")
    proc = subprocess.Popen(
        [
            str(jupyter),
            "lab",
            "--no-browser",
            "--ip=127.0.0.1",
            f"--port={port}",
            "--allow-root",
            f"--IdentityProvider.token={token}",
            f"--ServerApp.root_dir={nbdir}",
            "--LabApp.expose_app_in_browser=True",
            "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
            "--LabApp.news_url=",
            "--ServerApp.open_browser=False",
        ],
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        cwd=nbdir,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        def ready() -> bool:
            with urllib.request.urlopen(f"{url}/api/status?token={token}", timeout=2) as r:
                return bool(r.status == 200)

        wait_until_serving(proc, ready, log, tmp / "lab.log", "JupyterLab")
        yield url, token
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()
        shutil.rmtree(tmp, ignore_errors=True)


def _lit(widget: Any) -> set[str]:
    ids: list[str] = widget.locator(".as-chart .as-active").evaluate_all("els => els.map(e => e.id)")
    return set(ids)


def test_quickstart_in_jupyterlab(lab: tuple[str, str], browser_context: Any) -> None:
    url, token = lab
    page = browser_context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(f"{url}/lab/tree/{NOTEBOOK.name}?token={token}")
    page.wait_for_function(
        "() => window.jupyterapp && window.jupyterapp.shell.currentWidget && "
        "window.jupyterapp.shell.currentWidget.sessionContext.session && "
        "window.jupyterapp.shell.currentWidget.sessionContext.session.kernel.status === 'idle'",
        timeout=90_000,
    )
    page.evaluate("window.jupyterapp.commands.execute('notebook:run-all-cells')")
    widgets = page.locator(".agentscope-timetravel")
    widgets.nth(1).locator(".as-badge").wait_for(timeout=180_000)  # the tampered log's widget
    page.wait_for_function(
        "() => window.jupyterapp.shell.currentWidget.sessionContext.session.kernel.status === 'idle'",
        timeout=180_000,
    )
    tt, bad = widgets.nth(0), widgets.nth(1)

    # the notebook left the widget on step 1: TICKETS_RECEIVED started the parallel analysis
    analyzing = {
        state_element_id(f"{T}.working.analyzing.classification.running"),
        state_element_id(f"{T}.working.analyzing.knowledge.searching"),
    }
    assert analyzing <= _lit(tt)
    assert state_element_id(f"{T}.standby") not in _lit(tt)
    assert "TICKETS_RECEIVED" in tt.locator(".as-event-type").inner_text()
    assert tt.locator(".as-badge").get_attribute("data-verdict") == "verified"
    badge1 = tt.locator(".as-badge").inner_text()

    # one step left from the keyboard: the init entry, machine in standby
    tt.locator(".noUi-handle").first.focus()
    page.keyboard.press("ArrowLeft")
    page.wait_for_function(
        "(id) => !!document.querySelectorAll('.agentscope-timetravel')[0].querySelector('#' + id + '.as-active')",
        arg=state_element_id(f"{T}.standby"),
        timeout=30_000,
    )
    assert _lit(tt) == {state_element_id(f"{T}.standby")}
    assert tt.locator(".as-badge").get_attribute("data-verdict") == "verified"
    assert tt.locator(".as-badge").inner_text() != badge1
    assert "@agent.init" in tt.locator(".as-event-type").inner_text()

    # and right again
    page.keyboard.press("ArrowRight")
    page.wait_for_function(
        "(id) => !!document.querySelectorAll('.agentscope-timetravel')[0].querySelector('#' + id + '.as-active')",
        arg=state_element_id(f"{T}.working.analyzing"),
        timeout=30_000,
    )
    assert analyzing <= _lit(tt)
    assert tt.locator(".as-badge").inner_text() == badge1

    # the tampered log's widget sits on the first mismatch
    assert bad.locator(".as-badge").get_attribute("data-verdict") == "mismatch"
    assert "mismatch" in bad.locator(".as-badge").inner_text()
    tt.scroll_into_view_if_needed()
    ARTIFACTS.mkdir(exist_ok=True)
    tt.screenshot(path=str(ARTIFACTS / "lab-timetravel.png"))
    bad.screenshot(path=str(ARTIFACTS / "lab-timetravel-mismatch.png"))
    assert not [e for e in errors if "agentscope" in e or "as-" in e], errors

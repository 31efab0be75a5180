"""A notebook's TimeTravel and ForkView outputs, executed, saved and converted by ``jupyter
nbconvert --to html`` (the page has no kernel, and here no network), still scrub: each widget's
``text/html`` fallback is the self-contained steppable player ``to_html()`` writes. Real
nbconvert, real Chromium stepping the converted page."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import nbformat
import pytest

from tests.browser.conftest import ARTIFACTS
from tests.conftest import REPO, load_json

MAIN = load_json("g_triage.main.log.json")

SETUP = """\
import agentscope as asc
from agentscope.examples import example_path
from agentscope.examples.python_machines import triage_machine
store = example_path("g_triage.sqlite")
main = asc.read_log(store, thread="main")
fork = asc.read_log(store, thread="fork")"""


@pytest.fixture(scope="module")
def converted(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("nbconvert")
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_code_cell(SETUP),
        nbformat.v4.new_code_cell("tt = asc.TimeTravel(triage_machine(), main)\ntt.go(1)\ntt"),
        nbformat.v4.new_code_cell('fv = asc.ForkView(triage_machine(), main, fork, names=("main", "fork"))\nfv'),
    ]
    src = tmp / "views.ipynb"
    nbformat.write(nb, src)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    for var in ("JUPYTER_CONFIG_DIR", "JUPYTER_RUNTIME_DIR", "IPYTHONDIR"):
        (tmp / var).mkdir()
        env[var] = str(tmp / var)
    # run as JupyterLab saves a notebook by default: outputs kept, no widget state (with a
    # widget state nbconvert draws the live widget through the widget manager from a CDN)
    subprocess.run(
        [sys.executable, "-m", "jupyter", "nbconvert", "--to", "notebook", "--execute", str(src),
         "--ExecutePreprocessor.store_widget_state=False", "--output", "executed.ipynb"],
        check=True, cwd=tmp, env=env, timeout=600, capture_output=True,
    )
    # then convert with no kernel
    subprocess.run(
        [sys.executable, "-m", "jupyter", "nbconvert", "--to", "html", str(tmp / "executed.ipynb")],
        check=True, cwd=tmp, env=env, timeout=600, capture_output=True,
    )
    return tmp / "executed.html"


def _player(page: Any, title: str) -> Any:
    """The frame of the converted page holding the player whose heading contains ``title``."""
    for frame in page.frames:
        if frame is page.main_frame:
            continue
        frame.wait_for_selector("#as-pos")
        if title in frame.inner_text("h1, h2, header, body")[:400]:
            return frame
    raise AssertionError(f"no player titled {title!r} in the converted page")


def test_converted_notebook_steps_both_views_offline(browser_context: Any, converted: Path) -> None:
    browser_context.set_offline(True)
    page = browser_context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    try:
        page.goto(converted.as_uri())
        tt = _player(page, "agentscope —")
        fv = _player(page, "fork: main vs fork")
        assert tt != fv
        # the TimeTravel player opens where the notebook left the widget (step 1), and steps
        assert tt.inner_text("#as-pos") == "1 / 90"
        assert tt.inner_text(".as-event-type") == "TICKETS_RECEIVED"
        tt.click("#as-next")
        assert tt.inner_text("#as-pos") == "2 / 90"
        assert tt.inner_text(".as-event-type") == MAIN[2]["event"]["type"]
        tt.locator("#as-slider").fill("18")
        assert tt.inner_text("#as-pos") == "18 / 90"
        # the ForkView player scrubs to the divergence and shows both sides there
        fv.click("#as-div")
        assert fv.input_value("#as-slider") == "18"
        assert "at the divergence (fork, entry 18: main APPROVE vs fork REJECT)" in fv.inner_text("#as-summary")
        assert "9 differing context path(s)" in fv.inner_text("#as-summary")
        fv.click("#as-next")
        assert fv.input_value("#as-slider") == "19"
        page.screenshot(path=str(ARTIFACTS / "nbconvert-players.png"), full_page=True)
        assert errors == []
    finally:
        browser_context.set_offline(False)
        page.close()

"""``agentscope demo --lab`` starts the real JupyterLab on the quickstart notebook without the
traitlets ``ServerApp.token`` DeprecationWarning (issue 26)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

AGENTSCOPE = Path(sys.executable).with_name("agentscope")


@pytest.mark.skipif(subprocess.run([sys.executable, "-c", "import jupyterlab"], check=False).returncode != 0,
                    reason="needs jupyterlab")
def test_demo_lab_starts_without_a_deprecation_warning(tmp_path: Path) -> None:
    env = dict(os.environ, BROWSER="true",  # `true` is the browser: nothing opens
               JUPYTER_RUNTIME_DIR=str(tmp_path / "runtime"), JUPYTER_DATA_DIR=str(tmp_path / "data"))
    err = tmp_path / "lab.err"
    with err.open("wb") as sink:
        lab = subprocess.Popen([str(AGENTSCOPE), "demo", "--lab"], stdout=subprocess.DEVNULL, stderr=sink,
                               env=env, start_new_session=True)
        try:
            deadline = time.monotonic() + 120
            while "/lab" not in err.read_text(errors="replace") or "token=" not in err.read_text(errors="replace"):
                assert lab.poll() is None, err.read_text(errors="replace")
                assert time.monotonic() < deadline, "JupyterLab did not start"
                time.sleep(0.2)
        finally:
            os.killpg(lab.pid, signal.SIGTERM)  # the session we started: agentscope and its lab
            lab.wait(timeout=60)
    text = err.read_text(errors="replace")
    assert "opening" in text and "01_quickstart.ipynb" in text
    assert "DeprecationWarning" not in text and "ServerApp.token" not in text, text

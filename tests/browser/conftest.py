"""Real-browser fixtures: Debian's headless Chromium driven by Playwright (tech-eval §3)."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any

import pytest

from tests.conftest import REPO, node_ready

CHROMIUM = Path("/usr/bin/chromium")
ARTIFACTS = REPO / "test-artifacts"
QUICKSTART = REPO / "notebooks" / "01_quickstart.ipynb"
QUICKSTART_MARKS = [
    pytest.mark.skipif(not QUICKSTART.exists(), reason="notebooks/01_quickstart.ipynb is not there"),
    pytest.mark.skipif(
        not node_ready(), reason="the quickstart replays with the Node engine (node + xstate)"
    ),
]
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "tests/browser" in str(item.fspath):
            item.add_marker(pytest.mark.browser)
            if not CHROMIUM.exists():
                item.add_marker(
                    pytest.mark.skip(reason="needs /usr/bin/chromium (apt-get install -y chromium)")
                )


@pytest.fixture(scope="module")
def browser_context() -> Iterator[Any]:
    sync_api = pytest.importorskip("playwright.sync_api")
    ARTIFACTS.mkdir(exist_ok=True)
    with sync_api.sync_playwright() as p, tempfile.TemporaryDirectory() as profile:
        ctx = p.chromium.launch_persistent_context(
            profile,
            executable_path=str(CHROMIUM),
            headless=True,
            args=FLAGS,
            viewport={"width": 1400, "height": 1800},
        )
        try:
            yield ctx
        finally:
            ctx.close()


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def quickstart_sandbox(prefix: str) -> tuple[Path, Path, dict[str, str]]:
    """A fresh temp dir holding a copy of the quickstart notebook, for a Jupyter server.

    Returns ``(tmp, nbdir, env)``: the dir (the caller removes it), the notebook's dir inside it,
    and an environment with fresh Jupyter config/runtime/IPython dirs under ``tmp`` and this
    checkout first on ``PYTHONPATH`` (the kernel imports ``agentscope`` from here).
    """
    tmp = Path(tempfile.mkdtemp(prefix=prefix))
    nbdir = tmp / "nb"
    nbdir.mkdir()
    shutil.copy(QUICKSTART, nbdir / QUICKSTART.name)
    env = dict(os.environ)
    for var in ("JUPYTER_CONFIG_DIR", "JUPYTER_RUNTIME_DIR", "IPYTHONDIR"):
        (tmp / var).mkdir()
        env[var] = str(tmp / var)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    return tmp, nbdir, env


def wait_until_serving(
    proc: subprocess.Popen[bytes], ready: Callable[[], bool], log: IO[bytes], log_path: Path, name: str
) -> None:
    """Poll ``ready()`` until it is true; fail with the server's log if it exits or takes > 60 s."""
    deadline = time.monotonic() + 60
    while True:
        try:
            if ready():
                return
        except OSError:
            pass
        if proc.poll() is not None or time.monotonic() > deadline:
            log.flush()
            pytest.fail(f"{name} did not start:\n" + log_path.read_text(errors="replace")[-3000:])
        time.sleep(0.3)

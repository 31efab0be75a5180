"""Helpers shared by the Node-runner process tests (``test_xstate_faults``, ``test_review_xstate``)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from tests.conftest import REPO


def gone(pid: int | None, *, zombie_ok: bool = False) -> bool:
    """True when no process ``pid`` exists any more (reaped; or, with ``zombie_ok``, exited)."""
    assert pid is not None
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    if zombie_ok:  # an orphan is reaped by whatever init the machine has, not by us
        try:
            return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
        except OSError:
            return True
    return False  # still running, or an unreaped zombie of ours


def wait_gone(pid: int, *, zombie_ok: bool = False) -> bool:
    """Poll :func:`gone` for up to ~15 s (polling only; no timing is asserted)."""
    for _ in range(300):
        if gone(pid, zombie_ok=zombie_ok):
            return True
        time.sleep(0.05)
    return gone(pid, zombie_ok=zombie_ok)


def cpu_seconds(pid: int) -> float:
    """User + system CPU time ``pid`` has used so far (``/proc/PID/stat``), in seconds."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def wait_spinning(pid: int, *, cpu: float = 0.3, timeout: float = 120.0) -> None:
    """Return once ``pid`` has burnt ``cpu`` more seconds of CPU than when called: a process
    stuck in a busy loop (a guard that never returns) is in it, however loaded the machine is
    (a condition, not a guess of how long the request takes to arrive)."""
    start = cpu_seconds(pid)
    deadline = time.monotonic() + timeout
    while cpu_seconds(pid) - start < cpu:
        assert time.monotonic() < deadline, f"process {pid} never started spinning"
        time.sleep(0.05)


def run_python(script: Path, *, check: bool) -> subprocess.CompletedProcess[str]:
    """Run ``script`` in a child interpreter that imports this checkout's ``agentscope``."""
    return subprocess.run(
        [sys.executable, str(script)],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        timeout=120,
        check=check,
    )

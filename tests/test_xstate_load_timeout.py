"""The Node engine's load timeout, and interruption always ending the runner (issue 11).

A module that never finishes importing (a top-level ``await`` that never settles, a loop at
import) must not make :func:`load_machine` wait forever: past ``load_timeout`` (argument, else
``AGENTSCOPE_LOAD_TIMEOUT``, else 30 s) it raises :class:`MachineLoadError` naming the module and
the timeout, and the runner process is gone. Ctrl-C during a load, or twice during a stuck fold,
must end the runner too.
"""

from __future__ import annotations

import os
import signal
import threading
from pathlib import Path

import pytest

from agentscope.engines import xstate
from agentscope.engines.xstate import DEFAULT_LOAD_TIMEOUT, load_machine
from agentscope.errors import MachineLoadError
from tests._helpers import gone, wait_gone
from tests.conftest import MACHINES, REPO, requires_node

pytestmark = [requires_node, pytest.mark.node]

NEVER = REPO / "tests" / "xstate_machines" / "never_loads.mjs"
SPINS_AT_IMPORT = REPO / "tests" / "xstate_machines" / "spins_at_import.mjs"
SPINS = REPO / "tests" / "xstate_machines" / "spins.mjs"


def _runner_children() -> set[int]:
    """Pids of this interpreter's live children running the shipped runner."""
    me = os.getpid()
    found: set[int] = set()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if int(stat[1]) == me and stat[0] != "Z" and str(xstate.RUNNER_PATH).encode() in cmdline:
            found.add(int(entry.name))
    return found


class _Watch:
    """Records every runner child that appears while a block runs (the load never returns it)."""

    def __init__(self) -> None:
        self.seen: set[int] = set()
        self._before = _runner_children()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._poll, daemon=True)

    def _poll(self) -> None:
        while not self._stop.wait(0.05):
            self.seen |= _runner_children() - self._before

    def __enter__(self) -> _Watch:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def _expected(path: Path, seconds: str) -> str:
    return (
        f"Loading the machine module {path} ({path.name}) did not finish within {seconds} s "
        f"(load_timeout; AGENTSCOPE_LOAD_TIMEOUT); the module never finished importing (a "
        "top-level await that never settles, or a loop at import?). The runner was stopped."
    )


def test_the_default_load_timeout_is_stated() -> None:
    assert DEFAULT_LOAD_TIMEOUT == 30.0
    assert "load_timeout" in (load_machine.__doc__ or "")


@pytest.mark.parametrize("module", [NEVER, SPINS_AT_IMPORT], ids=["await-never-settles", "loop-at-import"])
def test_a_module_that_never_finishes_importing_times_out_and_leaves_no_runner(module: Path) -> None:
    with _Watch() as watch, pytest.raises(MachineLoadError) as info:
        load_machine(module, load_timeout=1.5)
    assert str(info.value) == _expected(module, "1.5")
    assert watch.seen, "the runner was never seen starting"
    assert all(wait_gone(pid) for pid in watch.seen)
    assert not _runner_children() - watch._before


def test_the_environment_variable_sets_the_load_timeout(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENTSCOPE_LOAD_TIMEOUT", "1")
    with _Watch() as watch, pytest.raises(MachineLoadError) as info:
        load_machine(NEVER)
    assert str(info.value) == _expected(NEVER, "1")
    assert all(wait_gone(pid) for pid in watch.seen)


def test_a_bad_load_timeout_is_a_load_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENTSCOPE_LOAD_TIMEOUT", "soon")
    with pytest.raises(MachineLoadError, match=r"AGENTSCOPE_LOAD_TIMEOUT='soon' is not a number of seconds"):
        load_machine(NEVER)
    with pytest.raises(MachineLoadError, match=r"load_timeout must be >= 0 seconds"):
        load_machine(NEVER, load_timeout=-1)


def test_a_loading_module_within_the_timeout_loads() -> None:
    with load_machine(MACHINES / "counter.mjs", load_timeout=60) as m:
        assert m.machine_id


def test_ctrl_c_during_a_load_without_bound_ends_the_runner() -> None:
    timer = threading.Timer(1.5, os.kill, (os.getpid(), signal.SIGINT))
    with _Watch() as watch:
        timer.start()
        with pytest.raises(KeyboardInterrupt):
            load_machine(SPINS_AT_IMPORT, load_timeout=0)  # 0: no bound, only Ctrl-C ends it
        timer.join()
    assert watch.seen
    assert all(wait_gone(pid) for pid in watch.seen)


def test_ctrl_c_twice_during_a_stuck_fold_still_ends_the_runner() -> None:
    # The second Ctrl-C lands while the first one waits for the runner to exit politely.
    with load_machine(SPINS) as m:
        s = m.initial()
        pid = m.pid
        assert pid is not None
        timers = [threading.Timer(t, os.kill, (os.getpid(), signal.SIGINT)) for t in (1.0, 1.6)]
        for t in timers:
            t.start()
        with pytest.raises(KeyboardInterrupt):
            try:
                m.fold(s, [{"type": "SPIN"}])
            finally:
                timers[1].join()  # the second interrupt arrives inside the first one's clean-up
        try:
            assert wait_gone(pid)
        finally:
            if not gone(pid):
                os.killpg(pid, signal.SIGKILL)

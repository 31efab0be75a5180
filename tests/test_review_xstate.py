"""Review findings on the Node engine: a machine stuck in user code (a guard looping forever).

The runner then never reads its stdin again, so neither EOF nor a polite close reaches it:
interrupting the call, closing the machine from another thread, and the Python process dying
must each still end the runner. Each test failed before its fix.
"""

from __future__ import annotations

import os
import signal
import threading
from pathlib import Path

import pytest

from agentscope.engines.xstate import load_machine
from agentscope.errors import EngineError
from tests._helpers import gone, run_python, wait_gone, wait_spinning
from tests.conftest import REPO, requires_node

pytestmark = [requires_node, pytest.mark.node]

SPINS = REPO / "tests" / "xstate_machines" / "spins.mjs"


def test_interrupting_a_stuck_call_stops_the_runner_and_the_next_call_works() -> None:
    with load_machine(SPINS) as m:
        s = m.initial()
        pid = m.pid
        assert pid is not None
        # Ctrl-C in a notebook, once the runner is stuck in the guard (not before it got the call)
        def ctrl_c() -> None:
            try:
                wait_spinning(pid)
            finally:  # never leave the call below stuck
                os.kill(os.getpid(), signal.SIGINT)

        timer = threading.Thread(target=ctrl_c)
        timer.start()
        with pytest.raises(KeyboardInterrupt):
            m.transition(s, {"type": "SPIN"})
        timer.join()
        assert wait_gone(pid)
        # the next call restarts the runner instead of waiting for the stuck reply
        assert m.transition(m.initial(), {"type": "PING"}).persisted["value"] == "idle"
        assert m.pid != pid


def test_close_from_another_thread_ends_a_stuck_runner() -> None:
    m = load_machine(SPINS)
    s = m.initial()
    pid = m.pid
    assert pid is not None
    errors: list[BaseException] = []

    def stuck() -> None:
        try:
            m.transition(s, {"type": "SPIN"})
        except BaseException as exc:  # recorded for the assertion below
            errors.append(exc)

    worker = threading.Thread(target=stuck, daemon=True)
    worker.start()
    wait_spinning(pid)  # the worker's call reached the runner, which is stuck in the guard
    m.close()  # what atexit does at interpreter exit: must not wait for the stuck thread
    assert wait_gone(pid)
    worker.join(30)
    assert not worker.is_alive()
    assert len(errors) == 1 and isinstance(errors[0], EngineError)


def test_a_stuck_runner_exits_when_python_is_killed(tmp_path: Path) -> None:
    script = tmp_path / "crash.py"
    script.write_text(
        "import os, signal, threading, time\n"
        "from agentscope.engines.xstate import load_machine\n"
        f"m = load_machine({str(SPINS)!r})\n"
        "s = m.initial()\n"
        "threading.Thread(target=m.transition, args=(s, {'type': 'SPIN'}), daemon=True).start()\n"
        "print(m.pid, flush=True)\n"
        "time.sleep(1.0)\n"
        "os.kill(os.getpid(), signal.SIGKILL)\n"
    )
    out = run_python(script, check=False)
    assert out.returncode == -9
    pid = int(out.stdout.strip())
    try:
        assert wait_gone(pid, zombie_ok=True)
    finally:
        if not gone(pid, zombie_ok=True):
            os.killpg(pid, signal.SIGKILL)  # do not leave a spinning orphan behind a failure


def test_payloads_nested_deeper_than_orjson_allows_still_replay() -> None:
    # read_log accepts them (JSON.parse does): the engine must send and receive them too
    from agentscope.pipeline import verify
    from tests.conftest import MACHINES, load_json

    deep: object = 1
    for _ in range(400):
        deep = {"a": deep}
    log = load_json("a_counter.log.json")
    log[3]["event"]["deep"] = deep  # ignored by the machine: the recorded hashes still hold
    log[0]["event"]["input"]["deep"] = deep
    with load_machine(MACHINES / "counter.mjs") as m:
        report = verify(m, log)
        assert report.ok, report.summary()



def test_a_runner_restarted_after_close_is_still_closed_at_exit() -> None:
    from agentscope.engines import xstate
    from tests.conftest import MACHINES

    m = load_machine(MACHINES / "counter.mjs")
    m.close()
    m.initial()  # a closed machine restarts its runner on use
    pid = m.pid
    assert pid is not None
    xstate._close_all_runners()  # what atexit runs
    assert wait_gone(pid)

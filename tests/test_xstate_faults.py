"""Fault handling of the Node engine: each fault is a typed error, and no Node process is left."""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from agentscope.engines.base import Snapshot
from agentscope.engines.xstate import XStateMachine, _Runner, load_machine
from agentscope.errors import EngineError, MachineExecutionError, MachineLoadError
from agentscope.hashing import state_hash
from tests._helpers import gone, run_python, wait_gone
from tests.conftest import MACHINES, REPO, requires_node

pytestmark = [requires_node, pytest.mark.node]

TEST_MACHINES = REPO / "tests" / "xstate_machines"
FAULTY = TEST_MACHINES / "faulty.mjs"


def spawned_pids(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Record the pid of every runner process started while the test runs."""
    pids: list[int] = []
    original = _Runner._spawn

    def spy(self: _Runner) -> None:
        original(self)
        assert self.proc is not None
        pids.append(self.proc.pid)

    monkeypatch.setattr(_Runner, "_spawn", spy)
    return pids


def test_close_kills_the_process_and_is_idempotent() -> None:
    m = load_machine(MACHINES / "counter.mjs")
    pid = m.pid
    assert pid is not None and not gone(pid)
    m.close()
    assert gone(pid)
    m.close()


def test_context_manager_closes() -> None:
    with load_machine(MACHINES / "counter.mjs") as m:
        pid = m.pid
        m.initial({"start": 1})
    assert gone(pid)


def test_atexit_closes_runners(tmp_path: Path) -> None:
    # A child interpreter loads a machine and exits without close(): the atexit hook stops Node.
    script = tmp_path / "leak.py"
    script.write_text(
        "from agentscope.engines.xstate import load_machine\n"
        f"m = load_machine({str(MACHINES / 'counter.mjs')!r})\n"
        "print(m.pid, flush=True)\n"
    )
    out = run_python(script, check=True)
    pid = int(out.stdout.strip())
    assert gone(pid)


def test_node_not_installed() -> None:
    with pytest.raises(MachineLoadError, match=r"/nonexistent/node.*not found"):
        load_machine(MACHINES / "counter.mjs", node="/nonexistent/node")


def test_module_not_found(tmp_path: Path) -> None:
    with pytest.raises(MachineLoadError, match="not found"):
        load_machine(tmp_path / "missing.mjs")


def test_unsupported_extension(tmp_path: Path) -> None:
    p = tmp_path / "machine.py"
    p.write_text("")
    with pytest.raises(MachineLoadError, match="extension"):
        load_machine(p)


def test_export_not_found_lists_exports(monkeypatch: pytest.MonkeyPatch) -> None:
    pids = spawned_pids(monkeypatch)
    with pytest.raises(MachineLoadError, match=r"no export 'nope'; its exports are: faultyMachine, notAMachine"):
        load_machine(FAULTY, "nope")
    assert pids and all(gone(p) for p in pids)


def test_export_not_a_machine(monkeypatch: pytest.MonkeyPatch) -> None:
    pids = spawned_pids(monkeypatch)
    with pytest.raises(MachineLoadError, match=r"'notAMachine'.*is not an XState machine"):
        load_machine(FAULTY, "notAMachine")
    assert pids and all(gone(p) for p in pids)


def test_no_machine_exported(tmp_path: Path) -> None:
    p = tmp_path / "plain.mjs"
    p.write_text("export const answer = 42;\n")
    # resolving xstate comes first; make it resolvable from tmp_path
    (tmp_path / "node_modules").symlink_to(REPO / "node_modules")
    with pytest.raises(MachineLoadError, match="exports no XState machine"):
        load_machine(p)


def test_ambiguous_export() -> None:
    with pytest.raises(MachineLoadError, match=r"several machines \(first, second\)"):
        load_machine(TEST_MACHINES / "two_machines.mjs")
    with load_machine(TEST_MACHINES / "two_machines.mjs", "second") as m:
        assert m.machine_id == "second"


def test_module_throws_at_import(monkeypatch: pytest.MonkeyPatch) -> None:
    pids = spawned_pids(monkeypatch)
    with pytest.raises(MachineLoadError, match="exploded while importing") as info:
        load_machine(TEST_MACHINES / "throws_at_import.mjs")
    assert "throws_at_import.mjs" in str(info.value)
    assert pids and all(gone(p) for p in pids)


def test_missing_xstate_says_what_to_install(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pids = spawned_pids(monkeypatch)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "empty-cache"))  # no setup-node cache
    monkeypatch.delenv("AGENTSCOPE_NODE_PATH", raising=False)
    copy = tmp_path / "counter.mjs"
    shutil.copy(MACHINES / "counter.mjs", copy)
    with pytest.raises(MachineLoadError) as info:
        load_machine(copy)
    msg = str(info.value)
    assert "npm install xstate@6.0.0-alpha.48" in msg
    assert str(tmp_path) in msg
    assert pids and all(gone(p) for p in pids)


def test_xstate_resolved_from_the_module_location(tmp_path: Path) -> None:
    # The same module copied next to its own node_modules loads; xstate comes from there.
    (tmp_path / "node_modules").symlink_to(REPO / "node_modules")
    copy = tmp_path / "counter.mjs"
    shutil.copy(MACHINES / "counter.mjs", copy)
    with load_machine(copy) as m:
        assert m.version == "adb004a6"
        assert m.xstate_version == "6.0.0-alpha.48"


def test_typescript_module() -> None:
    # tsx (pinned in package.json, next to the module's project) transpiles on any Node >= 20.6
    with load_machine(MACHINES / "counter.ts") as m:
        assert m.version == "adb004a6"
        assert state_hash(m.initial({"start": 2}).persisted) == "26c7a83f"


@pytest.fixture
def faulty() -> Iterator[XStateMachine]:
    m = load_machine(FAULTY, "faultyMachine")
    yield m
    pid = m.pid
    m.close()
    if pid is not None:
        assert gone(pid)


def test_machine_throws_during_fold(faulty: XStateMachine) -> None:
    s = faulty.initial()
    events = [{"type": "STORE", "payload": "a"}, {"type": "STORE", "payload": "b"}, {"type": "BOOM"}]
    with pytest.raises(MachineExecutionError, match="boom from the machine") as info:
        faulty.fold(s, events)
    assert info.value.index == 2
    assert info.value.event_type == "BOOM"
    assert info.value.kind == "machine-error"
    # the runner survived and the seed is still usable
    assert faulty.fold(s, events[:2])[-1].context["stored"] == "b"


def test_snapshot_not_json(faulty: XStateMachine) -> None:
    with pytest.raises(MachineExecutionError, match=r"not JSON.*BigInt") as info:
        faulty.fold(faulty.initial(), [{"type": "BIGINT"}])
    assert info.value.kind == "not-serializable"
    assert info.value.index == 0


def test_snapshot_not_json_in_a_sparse_fold(faulty: XStateMachine) -> None:
    # a middle step of a sparse fold is hashed but not sent: it must fail as a sent one does
    events = [{"type": "STORE", "payload": "a"}, {"type": "BIGINT"}, {"type": "STORE", "payload": "b"}]
    with pytest.raises(MachineExecutionError, match=r"not JSON.*BigInt") as info:
        list(faulty.fold_iter(faulty.initial(), events, sessions={}, expected=[None] * 3))
    assert info.value.kind == "not-serializable"
    assert info.value.index == 1


def test_console_output_does_not_corrupt_the_protocol(faulty: XStateMachine) -> None:
    s = faulty.fold(faulty.initial(), [{"type": "CHATTY"}] * 3)[-1]
    assert s.value == "idle"
    # stderr is drained by a reader thread, so the reply can arrive before the console text does.
    deadline = time.monotonic() + 10
    while "hello from a guard" not in faulty._runner.stderr_text() and time.monotonic() < deadline:
        time.sleep(0.02)
    assert "hello from a guard" in faulty._runner.stderr_text()


def test_runner_killed_mid_fold_then_restarts(faulty: XStateMachine) -> None:
    s0 = faulty.initial({"label": "x"})
    stored = faulty.fold(s0, [{"type": "STORE", "payload": "kept"}])[-1]
    pid = faulty.pid
    with pytest.raises(EngineError, match=r"killed by signal 9 during 'fold'.*restarts"):
        faulty.fold(stored, [{"type": "STORE", "payload": "y"}, {"type": "DIE"}])
    assert gone(pid)
    # next call restarts the process; the old live handle is re-seeded from its persisted form
    nxt = faulty.fold(stored, [{"type": "STORE", "payload": "z"}])[-1]
    assert faulty.pid != pid
    assert nxt.context == {"size": 1, "stored": "z", "label": "x"}


def test_malformed_runner_output(faulty: XStateMachine) -> None:
    s0 = faulty.initial()
    pid = faulty.pid
    with pytest.raises(EngineError, match=r"Malformed output.*this is not json"):
        faulty.fold(s0, [{"type": "JUNK"}])
    assert gone(pid)
    assert faulty.fold(s0, [{"type": "STORE", "payload": 1}])[-1].context["stored"] == 1
    assert faulty.pid != pid


def test_fifty_megabyte_payload(faulty: XStateMachine) -> None:
    # astral characters across the runner's 1 MiB write chunks, at both parities
    emoji = "\U0001F600" * (1 << 20)
    big = emoji + "a" + emoji + "x" * (46 * 1024 * 1024) + "é\u2028end"
    s = faulty.fold(faulty.initial(), [{"type": "STORE", "payload": big}])[-1]
    assert s.context["stored"] == big
    assert s.context["size"] == len(big.encode("utf-16-le")) // 2  # JS length: UTF-16 units
    # and back in as a seed (a 50 MB request line) through restore
    again = faulty.restore(s.persisted)
    assert again.context["stored"] == big
    assert state_hash(again.persisted) == state_hash(s.persisted)


def test_snapshot_without_handle_is_restored(faulty: XStateMachine) -> None:
    s = faulty.fold(faulty.initial(), [{"type": "STORE", "payload": "p"}])[-1]
    bare = Snapshot(dict(s.persisted))
    assert faulty.fold(bare, [{"type": "STORE", "payload": "q"}])[-1].context["stored"] == "q"
    assert faulty.child_session(bare, "none") is None


def test_js_module_in_a_type_module_package(tmp_path: Path) -> None:
    (tmp_path / "node_modules").symlink_to(REPO / "node_modules")
    (tmp_path / "package.json").write_text('{"type": "module"}')
    shutil.copy(MACHINES / "counter.mjs", tmp_path / "counter.js")
    with load_machine(tmp_path / "counter.js") as m:
        assert m.version == "adb004a6"
        assert state_hash(m.initial({"start": 2}).persisted) == "26c7a83f"


def test_released_handles_do_not_accumulate(faulty: XStateMachine) -> None:
    import gc

    s = faulty.initial()
    for i in range(200):
        s = faulty.fold(s, [{"type": "STORE", "payload": i}])[-1]
    gc.collect()
    # handles of dropped snapshots are released with the next request
    faulty.ping()
    assert faulty.ping()["handles"] <= 3


@pytest.mark.skipif(not os.environ.get("AGENTSCOPE_TEST_NODE22"), reason="set AGENTSCOPE_TEST_NODE22=/path/to/node>=22.6")
@pytest.mark.parametrize(("module", "export", "log"), [("counter.ts", None, "a_counter"), ("triage.ts", None, "g_triage.main"), ("ticket.ts", "ticketV2", "e_bridge.v2")])
def test_typescript_modules_on_node22(module: str, export: str | None, log: str) -> None:
    import json

    from agentscope.engines.base import NO_INPUT

    node = os.environ["AGENTSCOPE_TEST_NODE22"]
    entries = json.loads((MACHINES.parent / f"{log}.log.json").read_text())
    with load_machine(MACHINES / module, export, node=node) as m:
        ev = entries[0]["event"]
        s0 = m.restore(ev["snapshot"]) if "snapshot" in ev else m.initial(ev.get("input", NO_INPUT))
        snaps = [s0, *m.fold(s0, [e["event"] for e in entries[1:]], sessions={})]
        assert [state_hash(s.persisted) for s in snaps] == [e["verification"]["stateHash"] for e in entries]


def test_module_exits_at_import(monkeypatch: pytest.MonkeyPatch) -> None:
    pids = spawned_pids(monkeypatch)
    with pytest.raises(MachineLoadError, match=r"exited with code 3 during 'load'(.|\n)*leaving now"):
        load_machine(TEST_MACHINES / "exits_at_import.mjs")
    assert pids and all(gone(p) for p in pids)


def test_fold_iter_errors_carry_the_global_index(faulty: XStateMachine) -> None:
    events = [{"type": "STORE", "payload": i} for i in range(10)] + [{"type": "BOOM"}]
    seen = []
    with pytest.raises(MachineExecutionError) as info:
        for snap in faulty.fold_iter(faulty.initial(), events, chunk=4):
            seen.append(snap.context["stored"])
    assert info.value.index == 10
    assert seen == list(range(10))  # every snapshot before the failing event was delivered


def test_fold_iter_runner_killed_in_a_later_chunk(faulty: XStateMachine) -> None:
    events = [{"type": "STORE", "payload": i} for i in range(6)] + [{"type": "DIE"}]
    pid = faulty.pid
    seen = []
    with pytest.raises(EngineError, match="killed by signal 9"):
        for snap in faulty.fold_iter(faulty.initial(), events, chunk=3):
            seen.append(snap.context["stored"])
    assert seen == [0, 1, 2, 3, 4, 5]
    assert gone(pid)
    assert faulty.initial({"label": "back"}).context["label"] == "back"


def test_initial_and_restore_errors_are_typed() -> None:
    with load_machine(MACHINES / "triage.mjs") as m:
        with pytest.raises(MachineExecutionError, match=r"initialTransition threw: TypeError"):
            m.initial()  # the context factory reads input.team
        assert m.initial({"team": "t"}).value == "standby"
    with load_machine(MACHINES / "ticket.mjs", "ticketV1") as v1:
        bridge = __import__("json").loads((MACHINES.parent / "e_bridge.v2.log.json").read_text())[0]
        with pytest.raises(MachineExecutionError, match=r"restoreSnapshot threw.*version"):
            v1.restore(bridge["event"]["snapshot"])  # a v2 snapshot; v1 has no migrate


def test_module_changed_on_disk_before_a_restart(tmp_path: Path) -> None:
    (tmp_path / "node_modules").symlink_to(REPO / "node_modules")
    mod = tmp_path / "counter.mjs"
    shutil.copy(MACHINES / "counter.mjs", mod)
    with load_machine(mod) as m:
        s = m.initial({"start": 1})
        mod.write_text(mod.read_text().replace('id: "counter"', 'id: "counter2"'))
        proc = m._runner.proc
        assert proc is not None
        proc.kill()
        proc.wait()
        with pytest.raises(EngineError, match="changed on disk"):
            m.fold(s, [{"type": "INC"}])


def test_runner_exits_when_python_is_killed(tmp_path: Path) -> None:
    # No atexit here (SIGKILL): the runner sees EOF on its stdin and exits by itself.
    script = tmp_path / "crash.py"
    script.write_text(
        "import os, signal\n"
        "from agentscope.engines.xstate import load_machine\n"
        f"m = load_machine({str(MACHINES / 'counter.mjs')!r})\n"
        "print(m.pid, flush=True)\n"
        "os.kill(os.getpid(), signal.SIGKILL)\n"
    )
    out = run_python(script, check=False)
    assert out.returncode == -9
    pid = int(out.stdout.strip())
    assert wait_gone(pid, zombie_ok=True)  # the orphan is reaped by init once it exits

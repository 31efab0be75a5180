"""verify_store: every thread of a real store, on a Dask LocalCluster and on local pools."""

from __future__ import annotations

import importlib
import json
import pickle
import shutil
import sqlite3
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from agentscope.bulk import ROW_COLUMNS, MachineSpec, as_spec, verify_store
from agentscope.errors import MachineLoadError, ThreadNotFoundError
from tests.conftest import FIXTURES, MACHINES, node_ready

TRIAGE_LENGTHS = {"main": 91, "fork": 52, "second": 40}
FORK_LENGTHS = {"main": 9, "branch": 8}


def _python_machine(name: str) -> str | None:
    try:
        mod = importlib.import_module("agentscope.examples.python_machines")
    except ImportError:
        return None
    return f"py:agentscope.examples.python_machines:{name}" if hasattr(mod, name) else None


def _engines(node_spec: str, py_name: str) -> list[Any]:
    params = []
    node_mark = pytest.mark.skipif(not node_ready(), reason="needs node and `npm ci` (xstate)")
    params.append(pytest.param(node_spec, id="node", marks=node_mark))
    py = _python_machine(py_name)
    params.append(
        pytest.param(
            py or "",
            id="python",
            marks=pytest.mark.skipif(py is None, reason=f"no Python {py_name} machine yet"),
        )
    )
    return params


TRIAGE_SPECS = _engines(f"{MACHINES / 'triage.mjs'}:triageMachine", "triage_machine")
COUNTER_SPECS = _engines(f"{MACHINES / 'counter.mjs'}:counterMachine", "counter_machine")


# ---------------------------------------------------------------------------------------------
# MachineSpec


def test_spec_parses_a_node_module_with_export(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    spec = MachineSpec.parse(f"{MACHINES / 'triage.mjs'}:triageMachine")
    assert spec == MachineSpec("node", str((MACHINES / "triage.mjs").resolve()), "triageMachine")
    monkeypatch.chdir(MACHINES)
    rel = MachineSpec.parse("counter.mjs")
    assert rel.kind == "node" and rel.export is None
    assert rel.module == str((MACHINES / "counter.mjs").resolve())
    assert MachineSpec.parse(str(rel)) == rel


def test_spec_parses_python_forms() -> None:
    a = MachineSpec.parse("py:agentscope.examples.python_machines:counter_machine")
    b = MachineSpec.parse("agentscope.examples.python_machines:counter_machine")
    assert a == b == MachineSpec("python", "agentscope.examples.python_machines", "counter_machine")
    assert str(a) == "py:agentscope.examples.python_machines:counter_machine"


def test_spec_pickles() -> None:
    spec = MachineSpec.parse(f"{MACHINES / 'counter.mjs'}:counterMachine")
    assert pickle.loads(pickle.dumps(spec)) == spec


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("", "empty machine spec"),
        ("py:nodots", "expected 'py:package.module:attr'"),
        ("machines/nope.mjs", "machine module not found"),
        ("some/file.txt", "cannot read machine spec"),
    ],
)
def test_spec_rejects_bad_text(text: str, needle: str) -> None:
    with pytest.raises(MachineLoadError, match=needle):
        MachineSpec.parse(text)


def test_spec_load_reports_missing_module_and_attribute() -> None:
    with pytest.raises(MachineLoadError, match="cannot import module 'no_such_mod_xyz'"):
        MachineSpec("python", "no_such_mod_xyz", "m").load()
    with pytest.raises(MachineLoadError, match="has no attribute 'nothing_here'"):
        MachineSpec("python", "agentscope.hashing", "nothing_here").load()
    with pytest.raises(MachineLoadError, match="not a machine"):
        MachineSpec("python", "agentscope.hashing", "HASH_VARIANTS").load()


def test_a_live_machine_object_is_refused() -> None:
    with pytest.raises(TypeError, match="loaded on each worker"):
        as_spec(object())  # type: ignore[arg-type]


# ---------------------------------------------------------------------------------------------
# verify_store on a Dask LocalCluster (two worker processes)


@pytest.fixture(scope="module")
def dask_client() -> Any:
    distributed = pytest.importorskip("distributed")
    cluster = distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
    )
    client = distributed.Client(cluster)
    try:
        yield client
    finally:
        client.close()
        cluster.close()


def _assert_all_verified(df: Any, lengths: dict[str, int]) -> None:
    assert list(df.columns) == list(ROW_COLUMNS)
    assert list(df["thread"]) == list(lengths)
    assert dict(zip(df["thread"], df["length"], strict=True)) == lengths
    assert df["verified"].all(), df.to_dict("records")
    assert (df["mismatches"] == 0).all() and (df["unexplained"] == 0).all()
    assert (df["missing"] == 0).all()
    assert df["first_mismatch"].isna().all()
    assert df["error"].isna().all()
    assert (df["seconds"] > 0).all()


@pytest.mark.parametrize("spec", TRIAGE_SPECS)
def test_dask_verifies_every_triage_thread(dask_client: Any, spec: str) -> None:
    df = verify_store(
        FIXTURES / "g_triage.sqlite", spec, threads=["main", "fork", "second"],
        executor=dask_client.get_executor(), chunk_size=1,
    )
    _assert_all_verified(df, TRIAGE_LENGTHS)


@pytest.mark.parametrize("spec", COUNTER_SPECS)
def test_dask_verifies_every_fork_thread(dask_client: Any, spec: str) -> None:
    df = verify_store(FIXTURES / "c_fork.sqlite", spec, executor=dask_client.get_executor())
    assert sorted(df["thread"]) == sorted(FORK_LENGTHS)
    _assert_all_verified(df.set_index("thread").loc[list(FORK_LENGTHS)].reset_index(), FORK_LENGTHS)


def _tamper(src: Path, dst: Path, thread: str, idx: int, edit: Any) -> None:
    shutil.copyfile(src, dst)
    con = sqlite3.connect(dst)
    try:
        (text,) = con.execute(
            "SELECT entry FROM agent_event_log WHERE thread_id=? AND idx=?", (thread, idx)
        ).fetchone()
        entry = json.loads(text)
        edit(entry)
        con.execute(
            "UPDATE agent_event_log SET entry=? WHERE thread_id=? AND idx=?",
            (json.dumps(entry, separators=(",", ":")), thread, idx),
        )
        con.commit()
    finally:
        con.close()


@pytest.mark.parametrize("spec", TRIAGE_SPECS)
def test_dask_finds_a_tampered_hash_at_its_index(dask_client: Any, spec: str, tmp_path: Path) -> None:
    store = tmp_path / "tampered.sqlite"
    _tamper(FIXTURES / "g_triage.sqlite", store, "second", 30,
            lambda e: e["verification"].update(stateHash="deadbeef"))
    df = verify_store(store, spec, executor=dask_client.get_executor()).set_index("thread")
    assert df.loc["second", "first_mismatch"] == 30
    assert df.loc["second", "unexplained"] == 1
    assert not df.loc["second", "verified"]
    assert df.loc["main", "verified"] and df.loc["fork", "verified"]
    # the original fixture is untouched
    assert verify_store(FIXTURES / "g_triage.sqlite", spec, threads=["second"],
                        executor=dask_client.get_executor())["verified"].all()


@pytest.mark.parametrize("spec", TRIAGE_SPECS)
def test_dask_finds_a_tampered_event_at_its_index(dask_client: Any, spec: str, tmp_path: Path) -> None:
    # entry 5 of "second" is the KB answer for T-101 (confidence 0.7 -> awaitingAgent); 0.95 routes
    # the ticket to auto-resolve instead, so the state after entry 5 and later differs
    store = tmp_path / "tampered.sqlite"

    def edit(entry: dict[str, Any]) -> None:
        assert entry["event"]["output"]["confidence"] == 0.7
        entry["event"]["output"]["confidence"] = 0.95

    _tamper(FIXTURES / "g_triage.sqlite", store, "second", 5, edit)
    df = verify_store(store, spec, threads=["second"], executor=dask_client.get_executor())
    row = df.iloc[0]
    assert row["first_mismatch"] == 5
    assert row["unexplained"] >= 1
    assert not row["verified"]


# ---------------------------------------------------------------------------------------------
# Other executors and input errors


@pytest.mark.parametrize("spec", COUNTER_SPECS)
def test_default_process_pool(spec: str) -> None:
    seen: list[tuple[int, int]] = []
    df = verify_store(FIXTURES / "c_fork.sqlite", spec, max_workers=2, chunk_size=1, tree=False,
                      progress=lambda d, t: seen.append((d, t)))
    assert df["verified"].all()
    assert seen[-1] == (2, 2) and len(seen) == 2


@pytest.mark.parametrize("spec", COUNTER_SPECS)
def test_thread_pool_and_shipped_entries(spec: str) -> None:
    with ThreadPoolExecutor(2) as pool:
        df = verify_store(FIXTURES / "c_fork.sqlite", spec, executor=pool, ship_entries=True)
    assert df["verified"].all() and sorted(df["length"]) == [8, 9]


@pytest.mark.parametrize("spec", COUNTER_SPECS)
def test_wrong_machine_is_a_row_error_not_a_crash(spec: str) -> None:
    # the counter machine cannot replay triage threads: entry 0 targets supportTriage
    with ThreadPoolExecutor(1) as pool:
        df = verify_store(FIXTURES / "g_triage.sqlite", spec, threads=["second"], executor=pool)
    row = df.iloc[0]
    assert not row["verified"]
    assert "supportTriage" in row["error"]


def test_unknown_thread_and_missing_store(tmp_path: Path) -> None:
    spec = f"{MACHINES / 'counter.mjs'}:counterMachine"
    with pytest.raises(ThreadNotFoundError, match="'nope'"):
        verify_store(FIXTURES / "c_fork.sqlite", spec, threads=["main", "nope"])
    with pytest.raises(Exception, match="no such file"):
        verify_store(tmp_path / "missing.sqlite", spec)


def test_unloadable_machine_fails_fast() -> None:
    with ThreadPoolExecutor(1) as pool, pytest.raises(MachineLoadError, match="no_such_mod_xyz"):
        verify_store(FIXTURES / "c_fork.sqlite", "py:no_such_mod_xyz:m", executor=pool)


@pytest.mark.parametrize("spec", COUNTER_SPECS)
def test_thread_pool_machines_are_closed_after_their_threads_end(spec: str) -> None:
    import agentscope.bulk as bulk

    for _ in range(3):
        with ThreadPoolExecutor(2) as pool:
            assert verify_store(FIXTURES / "c_fork.sqlite", spec, executor=pool, chunk_size=1)["verified"].all()
    # the machines of the first two pools were closed when the third pool loaded its own
    with bulk._opened_lock:
        owners = [t for t, _ in bulk._opened]
    assert len(owners) <= 2

"""verify_store's workers: they open the store themselves, and a worker that dies loses only
its own chunk (retried once, then an error row)."""

from __future__ import annotations

import pickle
from pathlib import Path
from typing import Any

import pytest

from agentscope.bulk import _Chunk, _tree_chunks, as_spec, verify_store
from agentscope.examples.python_machines import counter_machine
from agentscope.recorder import ManualClock, Recorder

DYING = "py:tests.dying_machines:counter_dying_on_input"


def _store(tmp_path: Path) -> Path:
    store = tmp_path / "store.sqlite"
    for name, die in (("a", False), ("b", False), ("boom", True), ("c", False), ("d", False)):
        start: dict[str, object] = {"start": 1}
        if die:
            start["die"] = True
        rec = Recorder(counter_machine(), start, clock=ManualClock(), execution_id=f"exec-{name}")
        for _ in range(3):
            rec.clock.advance(10)
            rec.send({"type": "INC"})
        rec.to_sqlite(store, name)
    return store


@pytest.mark.parametrize("tree", [True, False])
def test_a_worker_that_dies_loses_only_its_own_chunk(tmp_path: Path, tree: bool) -> None:
    store = _store(tmp_path)
    df = verify_store(store, DYING, max_workers=2, chunk_size=1, tree=tree).set_index("thread")
    assert df.loc["boom", "error"].startswith("WorkerLost: the worker running it died twice")
    assert not df.loc["boom", "verified"]
    others = df.drop(index="boom")
    assert others["verified"].all() and others["error"].isna().all()
    assert others["length"].tolist() == [4, 4, 4, 4]


def test_a_task_carries_the_store_address_and_thread_ids_never_entries(tmp_path: Path) -> None:
    store = _store(tmp_path)
    spec = as_spec(DYING)
    for chunk in _tree_chunks(str(store), ["a", "b", "c"], spec, (), False, 1, None, False):
        assert chunk.store == str(store) and chunk.entries is None
        assert set(chunk.threads) <= {"a", "b", "c"}
        assert len(pickle.dumps(chunk)) < 1000  # the address and the ids, not the log
    assert isinstance(chunk, _Chunk)


def test_workers_open_a_postgresql_store_by_its_url(postgres: Any, tmp_path: Path) -> None:
    from concurrent.futures import ThreadPoolExecutor

    import pandas as pd

    from tests.conftest import FIXTURES

    triage = "py:agentscope.examples.python_machines:triage_machine"
    url = postgres.url()
    with ThreadPoolExecutor(2) as pool:
        on_pg = verify_store(url, triage, executor=pool)
        from_file = verify_store(FIXTURES / "g_triage.sqlite", triage, executor=pool)
        cold = verify_store(url, triage, executor=pool, cache=tmp_path / "verdicts.sqlite")
        warm = verify_store(url, triage, executor=pool, cache=tmp_path / "verdicts.sqlite")
    timing = ["seconds", "folded"]
    pd.testing.assert_frame_equal(on_pg.drop(columns=timing), from_file.drop(columns=timing))
    assert on_pg["verified"].all() and int(on_pg["folded"].sum()) == 91 + 52 + 40 - 18
    pd.testing.assert_frame_equal(warm.drop(columns=timing), cold.drop(columns=timing))
    assert sorted(warm.attrs["cache"]["reused"]) == ["fork", "main", "second"]

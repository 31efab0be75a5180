"""verify_store's verdict cache: the same table as without it, content-keyed reuse, a grown and a
rewritten thread told apart, a corrupt or foreign file never trusted."""

from __future__ import annotations

import os
import shutil
import sqlite3
import threading
import warnings
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentscope.bulk import verify_store
from agentscope.cli import main
from agentscope.errors import CacheWarning, StoreError
from agentscope.examples.python_machines import counter_machine
from agentscope.recorder import ManualClock, Recorder
from tests.conftest import FIXTURES, REPO, requires_node
from tests.test_bulk_tree import _EVENTS, COUNTER, TIMING, TRIAGE, _forests, _tamper

STORES = ((FIXTURES / "g_triage.sqlite", TRIAGE), (FIXTURES / "c_fork.sqlite", COUNTER))


def _run(store: Path, spec: str, cache: Path | None = None, **kw: Any) -> pd.DataFrame:
    with ThreadPoolExecutor(1) as pool:
        return verify_store(store, spec, executor=pool, cache=cache, **kw)


def _same(a: pd.DataFrame, b: pd.DataFrame) -> None:
    pd.testing.assert_frame_equal(a.drop(columns=TIMING), b.drop(columns=TIMING))


def test_fixture_stores_give_the_same_table_with_a_cold_and_a_warm_cache(tmp_path: Path) -> None:
    for n, (store, spec) in enumerate(STORES):
        cache = tmp_path / f"verdicts{n}.sqlite"
        plain = _run(store, spec)
        cold = _run(store, spec, cache)
        warm = _run(store, spec, cache)
        _same(cold, plain)
        _same(warm, plain)
        assert cold.attrs["cache"]["reused"] == []
        assert sorted(warm.attrs["cache"]["reused"]) == sorted(plain["thread"])
        assert (warm["folded"] == 0).all()  # nothing read past the content keys, nothing folded
        untreed = _run(store, spec, cache, tree=False)  # a row is a row: the tree does not matter
        _same(untreed, plain)


def test_a_cache_of_another_machine_or_mode_is_not_used(tmp_path: Path) -> None:
    cache = tmp_path / "verdicts.sqlite"
    store, spec = STORES[1]
    _run(store, spec, cache)
    strict = _run(store, spec, cache, strict=True)
    assert strict.attrs["cache"]["reused"] == []
    _same(strict, _run(store, spec, strict=True))


def test_a_tampered_prefix_is_reported_at_its_first_changed_entry_and_verified_again(tmp_path: Path) -> None:
    store, cache = tmp_path / "store.sqlite", tmp_path / "verdicts.sqlite"
    shutil.copyfile(FIXTURES / "g_triage.sqlite", store)
    first = _run(store, TRIAGE, cache)
    assert first["verified"].all()
    _tamper(store, store, ["main"], 5)
    with pytest.warns(CacheWarning, match=r"thread 'main': entry 5 changed since it was verified"):
        again = _run(store, TRIAGE, cache)
    _same(again, _run(store, TRIAGE))
    status = again.attrs["cache"]
    assert status["rewritten"] == {"main": 5}
    assert sorted(status["reused"]) == ["fork", "second"]  # their bytes did not change
    rows = again.set_index("thread")
    assert not rows.loc["main", "verified"] and rows.loc["main", "first_mismatch"] == 5


def test_a_grown_thread_is_told_apart_and_verified_with_its_new_entries(tmp_path: Path) -> None:
    store, cache = tmp_path / "live.sqlite", tmp_path / "verdicts.sqlite"
    rec = Recorder(counter_machine(), {"count": 0}, clock=ManualClock(), execution_id="exec-live")
    for _ in range(5):
        rec.clock.advance(10)
        rec.send({"type": "INC"})
    rec.to_sqlite(store, "live", live=True)
    try:
        first = _run(store, COUNTER, cache)
        assert first["length"].tolist() == [6]
        for _ in range(4):
            rec.clock.advance(10)
            rec.send({"type": "TOGGLE"})
    finally:
        rec.close()
    grown = _run(store, COUNTER, cache)
    assert grown.attrs["cache"]["grown"] == {"live": 6}
    assert grown["length"].tolist() == [10] and grown["verified"].all()
    assert grown["folded"].tolist() == [4]  # resumed from its saved pass: the new entries only
    _same(grown, _run(store, COUNTER))
    assert _run(store, COUNTER, cache).attrs["cache"]["reused"] == ["live"]


@pytest.mark.parametrize("content", [b"not a database at all" * 40, b"SQLite format 3\x00" + b"\x07" * 900])
def test_a_corrupt_cache_file_is_ignored_with_a_warning_and_left_as_it_is(tmp_path: Path, content: bytes) -> None:
    cache = tmp_path / "verdicts.sqlite"
    cache.write_bytes(content)
    store, spec = STORES[0]
    with pytest.warns(CacheWarning, match="ignored"):
        df = _run(store, spec, cache)
    _same(df, _run(store, spec))
    assert df.attrs["cache"]["reused"] == []
    assert cache.read_bytes() == content


def test_a_foreign_database_as_cache_is_never_trusted_nor_written(tmp_path: Path) -> None:
    foreign = tmp_path / "other.sqlite"
    shutil.copyfile(FIXTURES / "c_fork.sqlite", foreign)
    before = foreign.read_bytes()
    store, spec = STORES[0]
    with pytest.warns(CacheWarning, match="not a verdict cache"):
        df = _run(store, spec, foreign)
    _same(df, _run(store, spec))
    assert foreign.read_bytes() == before


def test_damaged_rows_of_a_cache_are_verified_again(tmp_path: Path) -> None:
    cache = tmp_path / "verdicts.sqlite"
    store, spec = STORES[0]
    _run(store, spec, cache)
    con = sqlite3.connect(cache)
    con.execute("UPDATE verdicts SET row = '{\"verified\": true}' WHERE thread = 'main'")
    con.execute("UPDATE verdicts SET digests = x'00' WHERE thread = 'fork'")
    con.commit()
    con.close()
    with pytest.warns(CacheWarning, match="damaged row"):
        df = _run(store, spec, cache)
    assert df.attrs["cache"]["reused"] == ["second"]
    _same(df, _run(store, spec))


def test_the_cache_is_never_the_store(tmp_path: Path) -> None:
    store = tmp_path / "store.sqlite"
    shutil.copyfile(FIXTURES / "c_fork.sqlite", store)
    (tmp_path / "linked.sqlite").symlink_to(store)
    os.link(store, tmp_path / "hard.sqlite")
    for bad in (store, Path(f"{store}-wal"), tmp_path / "linked.sqlite", tmp_path / "hard.sqlite"):
        with pytest.raises(StoreError, match="would overwrite the log or store it reads"):
            _run(store, COUNTER, bad)
    assert store.read_bytes() == (FIXTURES / "c_fork.sqlite").read_bytes()


def test_cli_verify_with_a_cache(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    store, cache = FIXTURES / "g_triage.sqlite", tmp_path / "verdicts.sqlite"
    for _ in range(2):
        assert main(["verify", str(store), "--machine", TRIAGE, "--cache", str(cache), "--workers", "1"]) == 0
        assert "3/3 threads verified" in capsys.readouterr().out
    assert main(["verify", str(store), "--machine", TRIAGE, "--cache", str(store)]) == 2
    assert "would overwrite the log or store it reads" in capsys.readouterr().err


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(forest=_forests())
def test_generated_forests_give_the_same_table_with_and_without_the_cache(
    forest: list[tuple[int, int, list[dict[str, Any]]]], tmp_path_factory: Any
) -> None:
    tmp = tmp_path_factory.mktemp("forest")
    store, cache = tmp / "store.sqlite", tmp / "verdicts.sqlite"
    recs: list[Recorder] = []
    for i, (parent, at, events) in enumerate(forest):
        if parent < 0:
            rec = Recorder(counter_machine(), {"count": 0}, clock=ManualClock(), execution_id=f"exec-{i}")
        else:
            rec = recs[parent].fork(min(at, len(recs[parent].entries)))
        for ev in events:
            rec.clock.advance(10)
            rec.send(ev)
        recs.append(rec)
    for i, rec in enumerate(recs):
        rec.to_sqlite(store, f"t{i}")
    plain = _run(store, COUNTER)
    _same(_run(store, COUNTER, cache), plain)
    late = recs[-1].fork(len(recs[-1].entries))
    late.clock.advance(10)
    late.send({"type": "TOGGLE"})
    late.to_sqlite(store, "late")  # a new thread: verified, the rest reused
    with warnings.catch_warnings():
        warnings.simplefilter("error", CacheWarning)
        warm = _run(store, COUNTER, cache)
    _same(warm, _run(store, COUNTER))
    assert sorted(warm.attrs["cache"]["reused"]) == sorted(plain["thread"])


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(forest=_forests(), data=st.data())
def test_grown_threads_resume_from_their_saved_pass_and_fold_their_new_entries_only(
    forest: list[tuple[int, int, list[dict[str, Any]]]], data: Any, tmp_path_factory: Any
) -> None:
    tmp = tmp_path_factory.mktemp("grown")
    store, cache = tmp / "store.sqlite", tmp / "verdicts.sqlite"
    recs: list[Recorder] = []
    for i, (parent, at, events) in enumerate(forest):
        if parent < 0:
            rec = Recorder(counter_machine(), {"count": 0}, clock=ManualClock(), execution_id=f"exec-{i}")
        else:
            rec = recs[parent].fork(min(at, len(recs[parent].entries)))
        for ev in events:
            rec.clock.advance(10)
            rec.send(ev)
        recs.append(rec)
    try:
        for i, rec in enumerate(recs):
            rec.to_sqlite(store, f"t{i}", live=True)
        _run(store, COUNTER, cache)
        added: dict[str, int] = {}
        for i, rec in enumerate(recs):
            events = data.draw(st.lists(_EVENTS, max_size=5), label=f"t{i} grows by")
            for ev in events:
                rec.clock.advance(10)
                rec.send(ev)
            if events:
                added[f"t{i}"] = len(events)
    finally:
        for rec in recs:
            rec.close()
    with warnings.catch_warnings():
        warnings.simplefilter("error", CacheWarning)
        warm = _run(store, COUNTER, cache)
    _same(warm, _run(store, COUNTER))
    assert set(warm.attrs["cache"]["grown"]) == set(added)
    folded = dict(zip(warm["thread"], warm["folded"], strict=True))
    assert {t: folded[t] for t in added} == added  # each grown thread: its new entries only
    assert all(folded[t] == 0 for t in folded if t not in added)
    _same(_run(store, COUNTER, cache), warm)  # and its new saved pass resumes again


@pytest.mark.parametrize("change", ["duplicate-id", "mismatch"])
def test_a_grown_thread_whose_new_entry_has_a_problem_gets_the_row_a_refold_gives(
    tmp_path: Path, change: str
) -> None:
    from agentscope.log.writers import write_jsonl

    store, cache = tmp_path / "logs", tmp_path / "verdicts.sqlite"
    store.mkdir()
    rec = Recorder(counter_machine(), {"count": 0}, clock=ManualClock(), execution_id="exec-grown")
    for i in range(60):
        rec.clock.advance(10)
        rec.send([{"type": "INC"}, {"type": "TOGGLE"}, {"type": "DEC"}][i % 3])
    main = [dict(e) for e in rec.entries]
    write_jsonl(main[:60], store / "main.jsonl")
    _run(store, COUNTER, cache)
    con = sqlite3.connect(cache)
    assert con.execute("SELECT thread, n FROM resume").fetchall() == [("main", 60)]  # a saved pass
    con.close()
    grown = main[:61]
    if change == "duplicate-id":  # the id of an entry before the resume point: only its key is saved
        grown[60] = {**grown[60], "id": grown[3]["id"]}
    else:
        grown[60] = {**grown[60], "verification": {**grown[60]["verification"], "stateHash": "00000000"}}
    write_jsonl(grown, store / "main.jsonl", overwrite=True)
    again = _run(store, COUNTER, cache)
    assert again.attrs["cache"]["grown"] == {"main": 60}
    _same(again, _run(store, COUNTER))
    row = again.set_index("thread").loc["main"]
    assert not row["verified"]
    if change == "duplicate-id":
        assert "duplicate entry id" in str(row["error"])
    else:
        assert row["first_mismatch"] == 60 and row["folded"] == 61  # folded whole, as a refold


def test_an_unchanged_store_file_is_known_by_the_key_of_its_bytes(tmp_path: Path) -> None:
    import hashlib

    from agentscope.verify_cache import file_digest

    store, cache = tmp_path / "store.sqlite", tmp_path / "verdicts.sqlite"
    shutil.copyfile(FIXTURES / "g_triage.sqlite", store)
    plain = _run(store, TRIAGE)

    def recorded() -> list[bytes]:
        con = sqlite3.connect(cache)
        try:
            return [d for (d,) in con.execute("SELECT digest FROM files")]
        finally:
            con.close()

    _run(store, TRIAGE, cache)
    assert file_digest(str(store)) == hashlib.sha256(store.read_bytes()).digest()
    assert recorded() == [file_digest(str(store))]  # rows of every thread, read from these bytes
    warm = _run(store, TRIAGE, cache)
    _same(warm, plain)
    assert sorted(warm.attrs["cache"]["reused"]) == ["fork", "main", "second"]
    _same(_run(store, TRIAGE, cache, threads=["main"]), plain.iloc[[1]].reset_index(drop=True))
    _tamper(store, store, ["second"], 3)
    with pytest.warns(CacheWarning, match=r"thread 'second': entry 3 changed"):
        _run(store, TRIAGE, cache, threads=["second"])
    assert recorded() == []  # rows of some threads only: not the file's
    again = _run(store, TRIAGE, cache)
    _same(again, _run(store, TRIAGE))
    assert sorted(again.attrs["cache"]["reused"]) == ["fork", "main", "second"]
    assert recorded() == [file_digest(str(store))]
    assert file_digest(str(tmp_path)) is None and file_digest("postgresql://u@h/db") is None


@requires_node
def test_a_change_in_a_module_the_machine_imports_is_a_new_machine(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The cache key covers the files the machine module's relative imports reach: the real
    counter machine with its increment moved to ``./step.mjs``; doubling it there makes the
    fixture store's threads mismatch, and the cached "verified" rows are not reused."""
    monkeypatch.setenv("AGENTSCOPE_NODE_PATH", str(REPO / "node_modules"))
    src = (REPO / "agentscope" / "examples" / "machines" / "counter.mjs").read_text(encoding="utf-8")
    moved = src.replace('import { createMachine } from "xstate";',
                        'import { createMachine } from "xstate";\nimport { step } from "./lib/step.mjs";')
    moved = moved.replace("count: context.count + (event.by ?? 1)", "count: step(context.count, event.by ?? 1)")
    assert moved.count("step(") == 1
    (tmp_path / "m" / "lib").mkdir(parents=True)
    (tmp_path / "m" / "counter.mjs").write_text(moved, encoding="utf-8")
    step = tmp_path / "m" / "lib" / "step.mjs"
    step.write_text("export const step = (c, by) => c + by;\n", encoding="utf-8")
    store, spec, cache = FIXTURES / "c_fork.sqlite", str(tmp_path / "m" / "counter.mjs"), tmp_path / "v.sqlite"
    assert _run(store, spec, cache)["verified"].all()
    step.write_text("export const step = (c, by) => c + 2 * by;\n", encoding="utf-8")
    again = _run(store, spec, cache)
    assert again.attrs["cache"]["reused"] == []
    assert not again["verified"].any()
    _same(again, _run(store, spec))


def _open_together(path: Path, start: threading.Barrier, usable: list[bool]) -> None:
    from agentscope.verify_cache import VerdictCache

    start.wait()
    cache = VerdictCache.open(path)
    usable.append(cache.usable)
    cache.close()


def test_verifies_creating_one_cache_at_once_all_use_it(tmp_path: Path) -> None:
    """Six openers released together on a path that does not exist yet: each gets a usable
    cache and no warning (the file is made in one idempotent transaction)."""
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        for trial in range(5):
            start, usable = threading.Barrier(6), []
            openers = [threading.Thread(target=_open_together,
                                        args=(tmp_path / f"verdicts{trial}.sqlite", start, usable))
                       for _ in range(6)]
            for t in openers:
                t.start()
            for t in openers:
                t.join()
            assert usable == [True] * 6
    assert [str(w.message) for w in seen] == []

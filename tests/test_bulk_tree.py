"""verify_store with the fork tree: each shared prefix folded once, the same table as a refold."""

from __future__ import annotations

import json
import shutil
import sqlite3
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pandas as pd
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentscope.bulk import verify_store
from agentscope.examples.python_machines import counter_machine
from agentscope.recorder import ManualClock, Recorder
from tests.conftest import FIXTURES

TRIAGE = "py:agentscope.examples.python_machines:triage_machine"
COUNTER = "py:agentscope.examples.python_machines:counter_machine"
TIMING = ["seconds", "folded"]


def _both(store: Path, spec: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    with ThreadPoolExecutor(1) as pool:
        tree = verify_store(store, spec, executor=pool)
        full = verify_store(store, spec, executor=pool, tree=False)
    return tree, full


def _same_table(tree: pd.DataFrame, full: pd.DataFrame) -> None:
    pd.testing.assert_frame_equal(tree.drop(columns=TIMING), full.drop(columns=TIMING))
    assert (full["folded"] == full["length"]).all()


def _tamper(src: Path, dst: Path, threads: list[str], idx: int) -> None:
    if src != dst:
        shutil.copyfile(src, dst)
    con = sqlite3.connect(dst)
    try:
        for thread in threads:
            (text,) = con.execute(
                "SELECT entry FROM agent_event_log WHERE thread_id=? AND idx=?", (thread, idx)
            ).fetchone()
            entry = json.loads(text)
            entry["verification"]["stateHash"] = "00000000"
            con.execute("UPDATE agent_event_log SET entry=? WHERE thread_id=? AND idx=?",
                        (json.dumps(entry, separators=(",", ":")), thread, idx))
        con.commit()
    finally:
        con.close()


def test_fixture_stores_verify_identically_with_and_without_the_tree() -> None:
    for store, spec in ((FIXTURES / "g_triage.sqlite", TRIAGE), (FIXTURES / "c_fork.sqlite", COUNTER)):
        tree, full = _both(store, spec)
        _same_table(tree, full)
    # g_triage: 'fork' copies main's first 18 entries (fork_tree), so only its own are folded
    tree, _ = _both(FIXTURES / "g_triage.sqlite", TRIAGE)
    assert tree["folded"].sum() == 91 + 52 + 40 - 18


def test_a_tampered_entry_in_a_shared_prefix_is_reported_in_every_thread_that_copied_it(tmp_path: Path) -> None:
    store = tmp_path / "tampered.sqlite"
    _tamper(FIXTURES / "g_triage.sqlite", store, ["main", "fork"], 5)
    tree, full = _both(store, TRIAGE)
    _same_table(tree, full)
    rows = tree.set_index("thread")
    assert rows.loc["main", "first_mismatch"] == 5 and rows.loc["fork", "first_mismatch"] == 5
    assert not rows.loc["main", "verified"] and not rows.loc["fork", "verified"]
    assert tree["folded"].sum() == 91 + 52 + 40 - 18  # the copy is byte-identical: still shared


def test_a_copy_that_differs_from_its_parent_resumes_from_the_first_different_entry(tmp_path: Path) -> None:
    store = tmp_path / "tampered.sqlite"
    _tamper(FIXTURES / "g_triage.sqlite", store, ["main"], 5)  # the parent only
    tree, full = _both(store, TRIAGE)
    _same_table(tree, full)
    rows = tree.set_index("thread")
    assert rows.loc["main", "first_mismatch"] == 5 and rows.loc["fork", "verified"]
    # the two now share 5 entries
    assert tree["folded"].sum() == 91 + 52 + 40 - 5


_EVENTS = st.sampled_from([{"type": "TOGGLE"}, {"type": "INC", "by": 2}, {"type": "DEC"}, {"type": "RESET"}])


@st.composite
def _forests(draw: Any) -> list[tuple[int, int, list[dict[str, Any]]]]:
    """(parent position or -1, fork point, events after it) per thread; parents come first."""
    out = [(-1, 0, draw(st.lists(_EVENTS, min_size=0, max_size=8)))]
    for i in range(1, draw(st.integers(1, 5))):
        parent = draw(st.integers(-1, i - 1))
        out.append((parent, draw(st.integers(1, 9)), draw(st.lists(_EVENTS, max_size=6))))
    return out


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(forest=_forests())
def test_generated_forests_verify_identically_with_and_without_the_tree(
    forest: list[tuple[int, int, list[dict[str, Any]]]], tmp_path_factory: Any
) -> None:
    store = tmp_path_factory.mktemp("forest") / "store.sqlite"
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
    tree, full = _both(store, COUNTER)
    _same_table(tree, full)
    assert tree["verified"].all()
    assert tree["folded"].sum() <= full["folded"].sum()


def test_a_fork_point_before_its_chain_neighbours_own_fork_point_links_to_the_ancestor() -> None:
    from agentscope.bulk import fold_links

    # b is a full copy of a (resumes at 4); c shares 3 entries: b's fold starts past them
    assert fold_links({"a": [1, 2, 3, 4], "b": [1, 2, 3, 4], "c": [1, 2, 3, 9], "d": [7]}) == {
        "b": ("a", 4), "c": ("a", 3),
    }


def _rewrite(store: Path, thread: str, idx: int, text: str) -> None:
    con = sqlite3.connect(store)
    try:
        con.execute("UPDATE agent_event_log SET entry=? WHERE thread_id=? AND idx=?", (text, thread, idx))
        con.commit()
    finally:
        con.close()


def test_a_fork_whose_own_entries_are_broken_gets_the_row_a_refold_gives(tmp_path: Path) -> None:
    # 'fork' shares main's first 18 entries; only its own records are read on the tree's fast
    # path, and a broken one sends it back to the whole read, which names the problem as a refold
    for n, (idx, text) in enumerate([(30, "{not json"), (25, '{"index": 25}')]):
        store = tmp_path / f"broken{n}.sqlite"
        shutil.copyfile(FIXTURES / "g_triage.sqlite", store)
        _rewrite(store, "fork", idx, text)
        tree, full = _both(store, TRIAGE)
        _same_table(tree, full)
        row = tree.set_index("thread").loc["fork"]
        assert not row["verified"] and f"idx {idx}" in str(row["error"])
        assert tree.set_index("thread").loc["main", "verified"]


def test_content_keys_and_thread_ids_are_those_of_the_records_read(tmp_path: Path) -> None:
    from agentscope.stores import open_store
    from agentscope.stores.protocol import RowStore, entry_digest

    store = tmp_path / "store.sqlite"
    shutil.copyfile(FIXTURES / "g_triage.sqlite", store)
    _rewrite(store, "fork", 30, "{not json")  # keys are of the stored bytes, never parsed
    with open_store(store) as src:
        assert isinstance(src, RowStore)
        assert src.thread_ids() == [t.thread_id for t in src.threads()] == ["fork", "main", "second"]
        keys = dict(src.digests(src.thread_ids()))
        assert list(keys) == ["fork", "main", "second"]
        for t, got in keys.items():
            by_read = [entry_digest(r.text) for batch in src.read(t) for r in batch]
            assert got == by_read and len(set(map(len, by_read))) == 1
            assert got == next(RowStore.digests(src, [t]))[1]  # the protocol's default agrees
        assert entry_digest(b"\xff") != entry_digest("\ufffd")  # a row that is not UTF-8 keeps its bytes
        main, fork = keys["main"], keys["fork"]
    assert main[:18] == fork[:18] and main[18] != fork[18]


def test_a_fork_whose_own_part_breaks_the_log_rules_gets_the_row_a_refold_gives(tmp_path: Path) -> None:
    # each record is plainly right on its own (JSON, envelope, idx/entry_id columns), but the
    # log is not: a second init after the fork point; the whole read refuses it, so must the tree
    store = tmp_path / "second_init.sqlite"
    shutil.copyfile(FIXTURES / "g_triage.sqlite", store)
    con = sqlite3.connect(store)
    (text,) = con.execute("SELECT entry FROM agent_event_log WHERE thread_id='fork' AND idx=30").fetchone()
    con.close()
    entry = json.loads(text)
    entry["event"] = {"type": "@agent.init", "input": {}}
    _rewrite(store, "fork", 30, json.dumps(entry, separators=(",", ":")))
    tree, full = _both(store, TRIAGE)
    _same_table(tree, full)
    row = tree.set_index("thread").loc["fork"]
    assert not row["verified"] and "second '@agent.init'" in str(row["error"])


def test_a_duplicate_id_across_the_fork_point_in_a_directory_store_is_named_as_a_refold_names_it(
    tmp_path: Path,
) -> None:
    from agentscope.log.writers import write_jsonl

    store = tmp_path / "logs"
    store.mkdir()
    main = json.loads((FIXTURES / "g_triage.main.log.json").read_text(encoding="utf-8"))
    fork = json.loads((FIXTURES / "g_triage.fork.log.json").read_text(encoding="utf-8"))
    fork[30]["id"] = fork[3]["id"]  # its own entry reuses an id of the copied prefix
    write_jsonl(main, store / "main.jsonl")
    write_jsonl(fork, store / "fork.jsonl")
    tree, full = _both(store, TRIAGE)
    _same_table(tree, full)
    row = tree.set_index("thread").loc["fork"]
    assert not row["verified"] and "duplicate entry id" in str(row["error"])

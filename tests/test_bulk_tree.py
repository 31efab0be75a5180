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
    assert dict(zip(tree["thread"], tree["folded"], strict=True)) == {"fork": 52 - 18, "main": 91, "second": 40}


def test_a_tampered_entry_in_a_shared_prefix_is_reported_in_every_thread_that_copied_it(tmp_path: Path) -> None:
    store = tmp_path / "tampered.sqlite"
    _tamper(FIXTURES / "g_triage.sqlite", store, ["main", "fork"], 5)
    tree, full = _both(store, TRIAGE)
    _same_table(tree, full)
    rows = tree.set_index("thread")
    assert rows.loc["main", "first_mismatch"] == 5 and rows.loc["fork", "first_mismatch"] == 5
    assert not rows.loc["main", "verified"] and not rows.loc["fork", "verified"]
    assert rows.loc["fork", "folded"] == 52 - 18  # the copy is byte-identical: still shared


def test_a_copy_that_differs_from_its_parent_resumes_from_the_first_different_entry(tmp_path: Path) -> None:
    store = tmp_path / "tampered.sqlite"
    _tamper(FIXTURES / "g_triage.sqlite", store, ["main"], 5)  # the parent only
    tree, full = _both(store, TRIAGE)
    _same_table(tree, full)
    rows = tree.set_index("thread")
    assert rows.loc["main", "first_mismatch"] == 5 and rows.loc["fork", "verified"]
    # the two now share 5 entries (fork_tree makes the first listed, 'fork', the parent)
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

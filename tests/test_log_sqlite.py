"""The §5.2 SQLite store: threads, read-only opening, WAL consistency, custom tables, snapshots."""

from __future__ import annotations

import hashlib
import json
import shutil
import sqlite3
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from agentscope.errors import LogFormatError, ThreadNotFoundError
from agentscope.log import read_log, read_threads
from tests.conftest import FIXTURES, load_json

THREADS = [
    ("c_fork.sqlite", "main", "c_fork_sqlite.parent.log.json"),
    ("c_fork.sqlite", "branch", "c_fork_sqlite.fork.log.json"),
    ("g_triage.sqlite", "main", "g_triage.main.log.json"),
    ("g_triage.sqlite", "fork", "g_triage.fork.log.json"),
    ("g_triage.sqlite", "second", "g_triage.second.log.json"),
]

SCHEMA = """
CREATE TABLE IF NOT EXISTS "{t}" (
  thread_id TEXT NOT NULL, idx INTEGER NOT NULL, entry_id TEXT NOT NULL, entry TEXT NOT NULL,
  PRIMARY KEY (thread_id, idx)
);
CREATE UNIQUE INDEX IF NOT EXISTS "{t}_thread_entry_id" ON "{t}" (thread_id, entry_id);
"""


def make_store(path: Path, threads: dict[str, list[dict[str, Any]]], table: str = "agent_event_log") -> None:
    conn = sqlite3.connect(path)
    conn.executescript(SCHEMA.format(t=table))
    for thread, entries in threads.items():
        conn.executemany(
            f'INSERT INTO "{table}" VALUES (?, ?, ?, ?)',
            [(thread, e["index"], e["id"], json.dumps(e, separators=(",", ":"))) for e in entries],
        )
    conn.commit()
    conn.close()


@pytest.mark.parametrize(("store", "thread", "log_file"), THREADS)
def test_every_thread_equals_its_json_log(store: str, thread: str, log_file: str) -> None:
    log = read_log(FIXTURES / store, thread=thread)
    assert log.entries == load_json(log_file)
    assert log.thread == thread and log.source == str(FIXTURES / store)


def test_read_threads() -> None:
    df = read_threads(FIXTURES / "g_triage.sqlite")
    assert list(df.columns) == [
        "thread_id", "length", "first_recorded_at", "last_recorded_at",
        "machine_id", "machine_version", "machine_versions", "execution_id", "readable", "error",
    ]
    rows = {r.thread_id: r for r in df.itertuples()}
    assert {t: (r.readable, r.error) for t, r in rows.items()} == {
        "main": (91, None), "fork": (52, None), "second": (40, None),
    }
    assert {t: r.length for t, r in rows.items()} == {"main": 91, "fork": 52, "second": 40}
    main = load_json("g_triage.main.log.json")
    assert rows["main"].first_recorded_at == pd.Timestamp(main[0]["recordedAt"])
    assert rows["main"].last_recorded_at == pd.Timestamp(main[-1]["recordedAt"])
    assert rows["main"].machine_id == "supportTriage" and rows["main"].machine_version == "efe50ed5"
    assert rows["main"].machine_versions == ("efe50ed5",)
    assert rows["main"].execution_id == main[0]["metadata"]["executionId"]
    assert rows["fork"].execution_id == rows["main"].execution_id
    assert rows["second"].execution_id != rows["main"].execution_id
    assert str(df["length"].dtype) == "int64"


def test_thread_selection() -> None:
    with pytest.raises(ThreadNotFoundError) as info:
        read_log(FIXTURES / "g_triage.sqlite", thread="nope")
    assert "'fork', 'main', 'second'" in str(info.value)
    assert isinstance(info.value, KeyError)
    with pytest.raises(ThreadNotFoundError, match="pass thread="):
        read_log(FIXTURES / "g_triage.sqlite")


def test_single_thread_store_needs_no_thread(tmp_path: Path) -> None:
    entries = load_json("a_counter.log.json")
    p = tmp_path / "one.db"
    make_store(p, {"only": entries})
    log = read_log(p)
    assert log.thread == "only" and log.entries == entries


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.mark.parametrize("store", ["c_fork.sqlite", "g_triage.sqlite"])
def test_reading_leaves_file_and_directory_untouched(store: str, tmp_path: Path) -> None:
    copy = tmp_path / store
    shutil.copy2(FIXTURES / store, copy)
    before = _digest(copy)
    stat = copy.stat()
    listing = sorted(p.name for p in tmp_path.iterdir())
    threads = read_threads(copy)
    for thread in threads["thread_id"]:
        read_log(copy, thread=thread)
        read_log(copy, thread=thread, errors="collect")
    with copy.open("rb") as fh:
        read_log(fh, thread="main")
    assert _digest(copy) == before
    assert copy.stat().st_mtime_ns == stat.st_mtime_ns
    assert sorted(p.name for p in tmp_path.iterdir()) == listing  # no -journal/-wal/-shm


def test_wal_store_without_writer_creates_no_files(tmp_path: Path) -> None:
    p = tmp_path / "wal.db"
    make_store(p, {"main": load_json("a_counter.log.json")})
    conn = sqlite3.connect(p)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.close()  # checkpoints and removes -wal/-shm
    assert sorted(x.name for x in tmp_path.iterdir()) == ["wal.db"]
    before = _digest(p)
    assert len(read_log(p)) == 17
    assert sorted(x.name for x in tmp_path.iterdir()) == ["wal.db"]
    assert _digest(p) == before


def test_read_while_a_wal_writer_appends_gives_a_consistent_prefix(tmp_path: Path) -> None:
    entries = load_json("g_triage.main.log.json")
    p = tmp_path / "live.db"
    make_store(p, {"main": entries[:10]})
    writer = sqlite3.connect(p, isolation_level=None)
    writer.execute("PRAGMA journal_mode=WAL")
    try:
        # an open write transaction with uncommitted rows: the reader must not see them
        writer.execute("BEGIN IMMEDIATE")
        for e in entries[10:20]:
            writer.execute('INSERT INTO "agent_event_log" VALUES (?,?,?,?)', ("main", e["index"], e["id"], json.dumps(e)))
        log = read_log(p, thread="main")
        assert log.entries == entries[:10]
        writer.execute("COMMIT")
        assert read_log(p, thread="main").entries == entries[:20]
        # appends committed one at a time, interleaved with reads: always a contiguous prefix
        for e in entries[20:40]:
            writer.execute('INSERT INTO "agent_event_log" VALUES (?,?,?,?)', ("main", e["index"], e["id"], json.dumps(e)))
            got = read_log(p, thread="main").entries
            assert got == entries[: len(got)] and len(got) == e["index"] + 1
    finally:
        writer.close()


def test_custom_table_name_and_snapshot_table(tmp_path: Path) -> None:
    entries = load_json("a_counter.log.json")
    p = tmp_path / "custom.db"
    make_store(p, {"t1": entries}, table="my_log")
    persisted = {"status": "done", "value": "done", "agentMeta": {"machineId": "counter", "version": "adb004a6", "logId": entries[0]["metadata"]["executionId"], "logIndex": 17}}
    other = {"status": "active", "agentMeta": {"machineId": "counter", "version": "x", "logId": "someone-else", "logIndex": 1}}
    conn = sqlite3.connect(p)
    conn.execute('CREATE TABLE "agent_snapshots" (id TEXT PRIMARY KEY, snapshot TEXT NOT NULL)')
    conn.execute("INSERT INTO agent_snapshots VALUES (?, ?)", ("t1", json.dumps(persisted)))
    conn.execute("INSERT INTO agent_snapshots VALUES (?, ?)", ("t2", json.dumps(other)))
    conn.commit()
    conn.close()
    log = read_log(p, thread="t1")
    assert log.entries == entries and log.cached_snapshot == persisted
    assert read_threads(p)["thread_id"].tolist() == ["t1"]
    # a second event table makes the choice explicit
    make_store(p, {"x": entries}, table="other_log")
    with pytest.raises(LogFormatError, match="several event-log tables"):
        read_log(p, thread="t1")
    assert read_log(p, thread="x", table="other_log").entries == entries


def test_bad_rows(tmp_path: Path) -> None:
    entries = load_json("a_counter.log.json")
    p = tmp_path / "bad.db"
    make_store(p, {"main": entries})
    conn = sqlite3.connect(p)
    conn.execute("UPDATE agent_event_log SET entry = '{\"broken' WHERE idx = 3")
    conn.commit()
    conn.close()
    with pytest.raises(LogFormatError) as info:
        read_log(p)
    assert info.value.index == 3 and "idx 3" in str(info.value)
    log = read_log(p, errors="collect")
    assert len(log) == 16 and list(log.problems["index"]) == [3]


def test_not_a_store(tmp_path: Path) -> None:
    p = tmp_path / "empty.db"
    sqlite3.connect(p).close()
    p.write_bytes(b"SQLite format 3\x00" + b"\x00" * 200)
    with pytest.raises(LogFormatError):
        read_log(p)


def test_a_row_that_is_not_utf8_is_named_among_rows_read_by_sqlites_own_decoding(tmp_path: Path) -> None:
    # rows are decoded by SQLite (fast); a text that is not UTF-8 sends the read back to the
    # marking text factory, so the bad row is still named and its neighbours still read
    from agentscope.stores import open_store

    store = tmp_path / "store.sqlite"
    shutil.copyfile(FIXTURES / "c_fork.sqlite", store)
    con = sqlite3.connect(store)
    con.execute("UPDATE agent_event_log SET entry = CAST(x'7b22ff' AS TEXT) "
                "WHERE thread_id = 'branch' AND idx = 2")
    con.commit()
    con.close()
    with open_store(store) as src:
        texts = [r.text for batch in src.read("branch") for r in batch]
    assert texts[2] == b'{"\xff' and all(isinstance(t, str) for i, t in enumerate(texts) if i != 2)
    with pytest.raises(LogFormatError, match=r"thread 'branch' idx 2\]: entry 2: row's entry text is not UTF-8"):
        read_log(store, thread="branch")

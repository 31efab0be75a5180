"""Review findings on reading logs: number literals JSON.parse turns into ±Infinity, and nesting
deeper than Python's recursion limit (spec §1.2 step 2). Each case failed before its fix."""

from __future__ import annotations

import copy
import json
import shutil
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from agentscope.errors import LogFormatError, NonSerializableError
from agentscope.log import read_log, read_threads
from agentscope.log.fast import FAST_MIN_BYTES
from agentscope.log.validate import validate_entry
from tests.conftest import FIXTURES
from tests.test_log_fast import big_log
from tests.test_log_validate import COUNTER

BIG_INT = "1" + "0" * 400  # JSON.parse reads it as Infinity (> Number.MAX_VALUE)
HUGE_INT = "1" + "0" * 5000  # also beyond Python's int-from-text digit limit


def _with_literal(entries: list[Any], at: int, literal: str) -> list[str]:
    entries = copy.deepcopy(entries)
    entries[at]["event"]["x"] = "@@X@@"
    lines = [json.dumps(e) for e in entries]
    lines[at] = lines[at].replace('"@@X@@"', literal)
    return lines


@pytest.mark.parametrize(
    ("literal", "value_type"),
    [(BIG_INT, "Infinity"), ("-" + BIG_INT, "-Infinity"), (HUGE_INT, "Infinity"), ("1.0e309", "Infinity")],
)
@pytest.mark.parametrize("kind", ["json", "jsonl", "big-jsonl"])
def test_overflowing_number_literals_are_not_json_safe(tmp_path: Path, kind: str, literal: str, value_type: str) -> None:
    entries = big_log() if kind == "big-jsonl" else copy.deepcopy(COUNTER)
    lines = _with_literal(entries, 1, literal)
    path = tmp_path / ("log.json" if kind == "json" else "log.jsonl")
    path.write_text("[" + ",\n".join(lines) + "]" if kind == "json" else "\n".join(lines) + "\n")
    if kind == "big-jsonl":
        assert path.stat().st_size > FAST_MIN_BYTES
    with pytest.raises(NonSerializableError) as info:
        read_log(path)
    assert (info.value.index, info.value.field, info.value.value_type) == (1, "event.x", value_type)


def test_python_int_beyond_double_range_is_not_json_safe() -> None:
    e = copy.deepcopy(COUNTER[1])
    e["event"]["amount"] = 10**400
    with pytest.raises(NonSerializableError) as info:
        validate_entry(e, index=1)
    assert (info.value.field, info.value.value_type) == ("event.amount", "Infinity")
    e["event"]["amount"] = 2**1023  # large but finite: fine
    validate_entry(e, index=1)


@pytest.mark.parametrize("kind", ["json", "jsonl", "big-jsonl"])
def test_deep_nesting_is_a_typed_error_naming_the_place(tmp_path: Path, kind: str) -> None:
    entries = big_log() if kind == "big-jsonl" else copy.deepcopy(COUNTER)
    lines = _with_literal(entries, 1, "[" * 10_000 + "]" * 10_000)
    path = tmp_path / ("log.json" if kind == "json" else "log.jsonl")
    path.write_text("[" + ",\n".join(lines) + "]" if kind == "json" else "\n".join(lines) + "\n")
    with pytest.raises(LogFormatError, match="nest") as info:
        # the fast path (big JSONL) parses payloads lazily: the error comes on first use
        len(read_log(path).entries)
    assert info.value.source == str(path)
    if kind != "json":
        assert (info.value.index, info.value.line) == (1, 2)


def test_deep_nesting_in_memory_is_a_typed_error() -> None:
    deep: Any = 1
    for _ in range(10_000):
        deep = {"a": deep}
    entries = copy.deepcopy(COUNTER)
    entries[1]["event"]["amount"] = deep
    with pytest.raises(LogFormatError, match="nest") as info:
        read_log(entries)
    assert info.value.index == 1


def test_wal_left_without_shm_is_read_with_its_commits_and_creates_no_files(tmp_path: Path) -> None:
    # A WAL store copied while its host ran (or left by a crash): "-wal" holds commits, no "-shm".
    live = tmp_path / "live"
    live.mkdir()
    src = live / "store.sqlite"
    shutil.copy(FIXTURES / "g_triage.sqlite", src)
    conn = sqlite3.connect(src, isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA wal_autocheckpoint=0")
    conn.execute("DELETE FROM agent_event_log WHERE thread_id='second'")  # committed, in -wal only
    user = tmp_path / "user"
    user.mkdir()
    shutil.copy(src, user / "store.sqlite")
    shutil.copy(live / "store.sqlite-wal", user / "store.sqlite-wal")
    conn.close()
    before = {p.name: (p.read_bytes(), p.stat().st_mtime_ns) for p in user.iterdir()}
    assert sorted(read_threads(user / "store.sqlite")["thread_id"]) == ["fork", "main"]
    assert len(read_log(user / "store.sqlite", thread="main")) == 91
    after = {p.name: (p.read_bytes(), p.stat().st_mtime_ns) for p in user.iterdir()}
    assert after == before  # no "-shm" created, nothing touched


def test_read_threads_on_a_json_log_says_it_is_not_a_sqlite_store() -> None:
    with pytest.raises(LogFormatError, match="not a SQLite database") as info:
        read_threads(FIXTURES / "a_counter.log.json")
    assert info.value.source == str(FIXTURES / "a_counter.log.json")
    assert "SQLite error" not in str(info.value)

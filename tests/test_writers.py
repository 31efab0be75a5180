"""One writer module (``agentscope.log.writers``): JSON, JSONL, a §5.2 SQLite store, CSV and
Parquet, used by the Recorder and by ``agentscope export``; every format reads back through
``read_log`` to the entries written (real fixture logs, spec §1.1, §5.2)."""

from __future__ import annotations

import ast
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from agentscope.errors import RecorderError
from agentscope.log import read_log
from agentscope.log.writers import FORMATS, SQLiteStoreWriter, export_table, log_bytes
from tests.conftest import FIXTURES

PKG = Path(__file__).resolve().parent.parent / "agentscope"
LOGS = ["a_counter.log.json", "g_triage.main.log.json", "e_bridge.v2.log.json", "c_fork_memory.fork.log.json"]


@pytest.mark.parametrize("name", LOGS)
@pytest.mark.parametrize("fmt", FORMATS)
def test_every_format_reads_back_to_the_entries_written(tmp_path: Path, name: str, fmt: str) -> None:
    original = read_log(FIXTURES / name)
    path = tmp_path / f"log.{fmt}"
    path.write_bytes(log_bytes(original.entries, fmt))
    back = read_log(path)
    assert len(back.problems) == 0
    assert back.entries == original.entries


@pytest.mark.parametrize("name", LOGS)
def test_a_sqlite_store_reads_back_thread_by_thread(tmp_path: Path, name: str) -> None:
    original = read_log(FIXTURES / name)
    path = tmp_path / "store.sqlite"
    with SQLiteStoreWriter(path) as store:
        store.write_thread("main", original.entries)
        store.write_thread("copy", original.entries[:3])
        for entry in original.entries[3:]:
            store.append("copy", entry)
    assert read_log(path, thread="main").entries == original.entries
    assert read_log(path, thread="copy").entries == original.entries


def test_the_sqlite_writer_never_touches_an_existing_thread_or_file(tmp_path: Path) -> None:
    entries = read_log(FIXTURES / "a_counter.log.json").entries
    path = tmp_path / "store.sqlite"
    with SQLiteStoreWriter(path) as store:
        store.write_thread("main", entries[:5])
        with pytest.raises(RecorderError, match="already exists"):
            store.write_thread("main", entries)
        with pytest.raises(RecorderError, match="index conflict"):
            store.append("main", entries[7])
    assert read_log(path, thread="main").entries == entries[:5]
    text = tmp_path / "notes.txt"
    text.write_text("not a database")
    with pytest.raises(RecorderError, match="not a SQLite store"):
        SQLiteStoreWriter(text)
    assert text.read_text() == "not a database"


def test_export_table_columns_are_the_table_readers_defaults() -> None:
    log = read_log(FIXTURES / "g_triage.main.log.json")
    table = export_table(log.entries)
    assert list(table.columns) == ["index", "id", "timestamp", "machine_id", "machine_version", "type",
                                   "event", "causation_id", "metadata", "state_hash"]
    assert table["state_hash"].tolist() == [e.get("verification", {}).get("stateHash") for e in log.entries]


def test_recorder_to_sqlite_writes_what_the_writer_writes(tmp_path: Path) -> None:
    from agentscope.examples import python_machines as pm
    from agentscope.recorder import Recorder

    rec = Recorder(pm.counter_machine())
    rec.send({"type": "INC"})
    rec.send({"type": "INC"})
    a, b = tmp_path / "a.sqlite", tmp_path / "b.sqlite"
    rec.to_sqlite(a, "t")
    with SQLiteStoreWriter(b) as store:
        store.write_thread("t", rec.entries)

    def rows(p: Path) -> list[Any]:
        with sqlite3.connect(p) as con:
            return con.execute("SELECT * FROM agent_event_log ORDER BY idx").fetchall()

    assert rows(a) == rows(b) and len(rows(a)) == 3


def _writes_logs(tree: ast.Module) -> list[str]:
    """What writes a log or store by hand: SQL inserts, DataFrame.to_csv/to_parquet calls."""
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and "INSERT INTO" in node.value:
            out.append(f"{node.lineno}: INSERT INTO")
        elif isinstance(node, ast.Attribute) and node.attr in ("to_csv", "to_parquet"):
            out.append(f"{node.lineno}: {node.attr}")
    return out


# Files of the package that write SQLite tables that are not logs: the verdict cache writes its
# own file (named by the user, never inside a store).
NOT_LOGS = {"agentscope/verify_cache.py"}


def test_only_the_writer_module_writes_logs() -> None:
    """The Recorder and ``agentscope export`` call ``log/writers.py``; no other module of the
    package inserts entries into a store or writes a CSV/Parquet table itself."""
    found = {}
    for path in sorted(PKG.rglob("*.py")):
        rel = path.relative_to(PKG.parent).as_posix()
        if rel == "agentscope/log/writers.py" or rel in NOT_LOGS:
            continue
        hits = _writes_logs(ast.parse(path.read_text(encoding="utf-8")))
        if hits:
            found[rel] = hits
    assert found == {}
    assert _writes_logs(ast.parse((PKG / "log" / "writers.py").read_text(encoding="utf-8")))

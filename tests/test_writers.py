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


def test_no_player_page_nor_export_is_written_over_a_log_it_reads(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``show --html``, ``diff --html``, ``TimeTravel.to_html``, ``ForkView.to_html`` and
    ``export --force`` aimed at their own input (the file, a SQLite store's ``-wal``, a symbolic
    or a hard link to it) are refused before anything is written: one line, exit 2 in the CLI,
    the user's files byte for byte as they were."""
    import shutil

    import agentscope as asc
    from agentscope.cli import main
    from agentscope.errors import StoreError
    from agentscope.examples.python_machines import counter_machine

    machine = "py:agentscope.examples.python_machines:counter_machine"
    log, other, store = tmp_path / "a.json", tmp_path / "b.json", tmp_path / "s.sqlite"
    shutil.copyfile(FIXTURES / "a_counter.log.json", log)
    shutil.copyfile(FIXTURES / "a_counter.log.json", other)
    shutil.copyfile(FIXTURES / "c_fork.sqlite", store)
    (tmp_path / "link.json").symlink_to(log)
    (tmp_path / "hard.json").hardlink_to(log)
    before = {p: p.read_bytes() for p in (log, other, store)}
    runs = [
        ["show", str(log), "--html", str(log)],
        ["show", str(log), "--html", str(tmp_path / "link.json")],
        ["show", str(log), "--machine", machine, "--html", str(tmp_path / "hard.json")],
        ["show", f"{store}#main", "--html", str(store)],
        ["show", f"{store}#main", "--html", f"{store}-wal"],
        ["diff", str(log), str(other), "--machine", machine, "--html", str(other)],
        ["export", str(log), "--to", "jsonl", "-o", str(tmp_path / "link.json"), "--force"],
    ]
    for argv in runs:
        assert main(argv) == 2, argv
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "would overwrite the log or store it reads" in err, (argv, err)
    read = asc.read_log(log)
    with pytest.raises(StoreError, match=r"the player .* would overwrite the log or store it reads"):
        asc.TimeTravel(counter_machine(), read).to_html(tmp_path / "hard.json")
    with pytest.raises(StoreError, match=r"the player .* would overwrite the log or store it reads"):
        asc.ForkView(counter_machine(), read, asc.read_log(other)).to_html(other)
    assert {p: p.read_bytes() for p in (log, other, store)} == before
    assert not Path(f"{store}-wal").exists()


def test_a_lone_surrogate_a_sqlite_store_cannot_hold_is_one_recorder_error(tmp_path: Path) -> None:
    """A thread name or an entry id with a lone surrogate (JSON escapes it, a TEXT column cannot
    hold it) is a RecorderError naming the store, the entry and the field; nothing is written.
    Lone surrogates inside the entry's JSON are kept (escaped) and read back."""
    from agentscope.examples import python_machines as pm
    from agentscope.recorder import Recorder

    rec = Recorder(pm.counter_machine())
    rec.send({"type": "INC", "note": "\ud800x", "by": 1})
    path = tmp_path / "store.sqlite"
    with pytest.raises(RecorderError, match=r"store\.sqlite: field 'thread': 't\\ud800' holds a lone surrogate"):
        rec.to_sqlite(path, "t\ud800")
    entries = [dict(e) for e in rec.entries]
    entries[1]["id"] = "evt\udc00"
    with SQLiteStoreWriter(path) as store, pytest.raises(
        RecorderError, match=r"store\.sqlite: entry 1: field 'id': 'evt\\udc00' holds a lone surrogate"
    ):
        store.write_thread("main", entries)
    with sqlite3.connect(path) as con:
        assert con.execute("SELECT count(*) FROM agent_event_log").fetchone() == (0,)
    rec.to_sqlite(path, "main")
    assert read_log(path, thread="main").entries == rec.entries

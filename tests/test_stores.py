"""Every store implementation passes the store contract (``tests/store_contract.py``), with
sources written the way hosts write them: a §5.2 SQLite store (WAL and rollback journal), a JSON
Lines file, a directory of JSON Lines files, a JSON document. Plus what only the registry does:
``open_store`` by URL scheme and by content."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any

import pytest

from agentscope.errors import LogReadWarning, StoreError
from agentscope.stores import display_address, open_store, split_thread
from tests.store_contract import MAIN, REPO, StoreContract
from tests.test_log_damaged import leaf_rows

TABLE = (
    'CREATE TABLE "agent_event_log" (thread_id TEXT NOT NULL, idx INTEGER NOT NULL, '
    "entry_id TEXT NOT NULL, entry TEXT NOT NULL, PRIMARY KEY (thread_id, idx))"
)


def _line(entry: dict[str, Any]) -> bytes:
    return json.dumps(entry, ensure_ascii=False, separators=(",", ":")).encode() + b"\n"


class SqliteContract(StoreContract):
    """A §5.2 store written as the reference's SQLite store writes it (§5.2 ``append``:
    ``BEGIN IMMEDIATE`` … ``INSERT`` … ``COMMIT``)."""

    journal = "wal"

    def _connect(self, source: str) -> sqlite3.Connection:
        con = sqlite3.connect(source, isolation_level=None, timeout=60)
        con.execute(f"PRAGMA journal_mode={self.journal}")
        return con

    def make(self, root: Path, threads: dict[str, list[dict[str, Any]]]) -> str:
        path = root / "store.sqlite"
        con = self._connect(str(path))
        con.execute(TABLE)
        con.close()
        for thread, entries in threads.items():
            self.append(str(path), thread, entries)
        return str(path)

    def append(self, source: str, thread: str, entries: list[dict[str, Any]]) -> None:
        con = self._connect(source)
        con.execute("BEGIN IMMEDIATE")
        for e in entries:
            con.execute("INSERT INTO agent_event_log VALUES (?,?,?,?)",
                        (thread, e["index"], e["id"], json.dumps(e, separators=(",", ":"))))
        con.execute("COMMIT")
        con.close()

    def rewrite(self, source: str, thread: str, entries: list[dict[str, Any]]) -> None:
        con = self._connect(source)
        con.execute("BEGIN IMMEDIATE")
        con.execute("DELETE FROM agent_event_log WHERE thread_id = ?", (thread,))
        for e in entries:
            con.execute("INSERT INTO agent_event_log VALUES (?,?,?,?)",
                        (thread, e["index"], e["id"], json.dumps(e, separators=(",", ":"))))
        con.execute("COMMIT")
        con.close()

    def tear(self, source: str, thread: str, entry: dict[str, Any]) -> None:
        """A writer killed mid-transaction (``os._exit`` before ``COMMIT``), its page cache
        spilled to the file: a hot rollback journal (or uncommitted WAL frames)."""
        code = (
            "import json, os, sqlite3, sys\n"
            "con = sqlite3.connect(sys.argv[1], isolation_level=None)\n"
            f"con.execute('PRAGMA journal_mode={self.journal}')\n"
            "con.execute('PRAGMA cache_size=1')\n"
            "con.execute('BEGIN IMMEDIATE')\n"
            "e = json.loads(sys.argv[3])\n"
            "con.execute('INSERT INTO agent_event_log VALUES (?,?,?,?)', "
            "(sys.argv[2], e['index'], e['id'], json.dumps(e)))\n"
            "for i in range(400):\n"
            "    con.execute('INSERT INTO agent_event_log VALUES (?,?,?,?)', "
            "('pad', i, str(i), 'x' * 500))\n"
            "os._exit(0)\n"
        )
        subprocess.run([sys.executable, "-c", code, source, thread, json.dumps(entry)], check=True)

    def damage(self, source: str, thread: str) -> None:
        path = Path(source)
        page = next(p for p, rows in leaf_rows(path) if (thread, 20) in rows)
        assert page > 1
        data = bytearray(path.read_bytes())
        size = int.from_bytes(data[16:18], "big")
        data[(page - 1) * size : page * size] = bytes(size)
        with path.open("r+b") as fh:
            fh.write(bytes(data))

    def replace_with(self, root: Path, source: str, threads: dict[str, list[dict[str, Any]]]) -> None:
        other = root / "other"
        other.mkdir()
        new = self.make(other, threads)
        for f in Path(source).parent.glob("store.sqlite-*"):
            f.unlink()
        os.replace(new, source)


class TestSqliteWal(SqliteContract):
    journal = "wal"


class TestSqliteRollbackJournal(SqliteContract):
    journal = "delete"

    def test_a_hot_journal_reads_the_committed_entries_everywhere(self, source: str) -> None:
        """A writer killed mid-transaction leaves a hot journal: every reader reads the
        committed entries from a private copy (mode=ro cannot roll back), bytes unchanged."""
        from tests.store_contract import Cursor, follow_all, sha256_of

        self.tear(source, "main", MAIN[30])
        journal = Path(source + "-journal")
        assert journal.stat().st_size > 0
        before = sha256_of(self.files(source))
        with open_store(source) as store:
            assert [t.length for t in store.threads()] == [20, 30]
            assert store.log("main").entries == MAIN[:30]
            assert follow_all(store, "main", Cursor()).entries == MAIN[:30]
        assert sha256_of(self.files(source)) == before


class JsonlFileContract(StoreContract):
    """One JSON Lines file, appended to with ``open(…, "ab")`` as a host's JSONL writer does."""

    multi_thread = False
    text = True

    def path_of(self, source: str, thread: str) -> Path:
        return Path(source)

    def make(self, root: Path, threads: dict[str, list[dict[str, Any]]]) -> str:
        path = root / "main.jsonl"
        path.write_bytes(b"".join(_line(e) for e in threads["main"]))
        return str(path)

    def append(self, source: str, thread: str, entries: list[dict[str, Any]]) -> None:
        with self.path_of(source, thread).open("ab") as fh:
            fh.write(b"".join(_line(e) for e in entries))

    def rewrite(self, source: str, thread: str, entries: list[dict[str, Any]]) -> None:
        with self.path_of(source, thread).open("r+b") as fh:  # in place: the same inode
            fh.truncate(0)
            fh.write(b"".join(_line(e) for e in entries))

    def tear(self, source: str, thread: str, entry: dict[str, Any]) -> None:
        with self.path_of(source, thread).open("ab") as fh:
            fh.write(_line(entry)[:40])

    def damage(self, source: str, thread: str) -> None:
        path = self.path_of(source, thread)
        lines = path.read_bytes().splitlines(keepends=True)
        lines[20] = b'{"schemaVersion":1,"id":\x00garbage\n'
        path.write_bytes(b"".join(lines))

    def add_bom(self, source: str) -> None:
        path = self.path_of(source, "main")
        path.write_bytes(b"\xef\xbb\xbf" + path.read_bytes())

    def test_damage_reads_what_is_before_it_and_is_typed(self, source: str) -> None:
        self.damage(source, "main")
        with open_store(source) as store:
            with pytest.raises(Exception, match=r"line 21") as err:
                store.log("main")
            assert str(source) in str(err.value)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", LogReadWarning)
                log = store.log("main", errors="collect")
            assert log.entries[:20] == MAIN[:20] and len(log) == 29 and len(log.problems) >= 1


class TestJsonlFile(JsonlFileContract):
    pass


class TestDirectoryOfJsonlFiles(JsonlFileContract):
    """A directory of log files: one thread per file."""

    multi_thread = True

    def path_of(self, source: str, thread: str) -> Path:
        return Path(source) / f"{thread}.jsonl"

    def make(self, root: Path, threads: dict[str, list[dict[str, Any]]]) -> str:
        d = root / "logs"
        d.mkdir()
        for thread, entries in threads.items():
            (d / f"{thread}.jsonl").write_bytes(b"".join(_line(e) for e in entries))
        return str(d)

    def remove(self, source: str) -> None:
        self.path_of(source, "main").unlink()


class TestJsonDocument(StoreContract):
    """A JSON document (an entry array): rewritten whole, never appended to."""

    multi_thread = False
    appendable = False
    text = True

    def make(self, root: Path, threads: dict[str, list[dict[str, Any]]]) -> str:
        path = root / "main.json"
        path.write_text(json.dumps(threads["main"]), encoding="utf-8")
        return str(path)

    def rewrite(self, source: str, thread: str, entries: list[dict[str, Any]]) -> None:
        with open(source, "r+", encoding="utf-8") as fh:
            fh.truncate(0)
            fh.write(json.dumps(entries))

    def tear(self, source: str, thread: str, entry: dict[str, Any]) -> None:
        pytest.skip("a JSON document has no last record to tear (it is rewritten whole)")

    def damage(self, source: str, thread: str) -> None:
        pytest.skip("a damaged JSON document has no readable part (one parse)")

    def add_bom(self, source: str) -> None:
        path = Path(source)
        path.write_bytes(b"\xef\xbb\xbf" + path.read_bytes())


# -- the registry ------------------------------------------------------------------------------


def test_an_unknown_url_scheme_is_a_store_error_without_the_password() -> None:
    with pytest.raises(StoreError) as err:
        open_store("mysql://ann:s3cret@db/logs")
    assert "s3cret" not in str(err.value) and "'mysql'" in str(err.value)
    assert "postgresql" in str(err.value)


def test_display_address_removes_passwords() -> None:
    assert display_address("postgresql://ann:s3cret@db:5432/x?table=t&password=p") == (
        "postgresql://ann@db:5432/x?table=t")
    assert display_address("/tmp/a#b.sqlite") == "/tmp/a#b.sqlite"


def test_split_thread_takes_a_url_fragment_and_a_path_tail(tmp_path: Path) -> None:
    odd = tmp_path / "a#b.jsonl"
    odd.write_bytes(_line(MAIN[0]))
    assert split_thread("postgresql://h/db?table=t#main") == ("postgresql://h/db?table=t", "main")
    assert split_thread(str(tmp_path / "s.sqlite#fork")) == (str(tmp_path / "s.sqlite"), "fork")
    assert split_thread(str(odd)) == (str(odd), None)


def test_a_sqlite_named_file_holding_json_says_what_it_was_sniffed_as(tmp_path: Path) -> None:
    path = tmp_path / "looks.sqlite"
    path.write_bytes(b"".join(_line(e) for e in MAIN[:5]))
    with pytest.warns(LogReadWarning, match=r"named \.sqlite but its content is jsonl"):
        store = open_store(path)
    assert store.kind == "jsonl" and store.log().entries == MAIN[:5]


def test_the_bundled_store_opens_as_sqlite() -> None:
    from agentscope.examples import example_path

    with open_store(example_path("g_triage.sqlite")) as store:
        assert store.kind == "sqlite"
        assert {t.thread_id: t.length for t in store.threads()} == {
            "fork": 52, "main": 91, "second": 40}
        assert store.log("main").entries == MAIN
    assert REPO.is_dir()

"""The PostgreSQL store passes the store contract (tests/store_contract.py) against a real,
throwaway server (tests/pg_server.py): each test gets its own schema holding a §5.2 table that a
host's writer fills (``INSERT`` … ``COMMIT``); the source is the reader's URL."""

from __future__ import annotations

import itertools
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agentscope.errors import UnreadableSourceError
from agentscope.log.writers import js_json
from agentscope.stores import open_store
from tests import pg_server
from tests.store_contract import StoreContract

_SCHEMAS = itertools.count()


def _where(source: str) -> str:
    from urllib.parse import parse_qsl, urlsplit

    q = dict(parse_qsl(urlsplit(source).query))
    return f'"{q["schema"]}"."{q.get("table", "agent_event_log")}"'


def _insert(conn: Any, table: str, thread: str, entries: list[dict[str, Any]]) -> None:
    with conn.cursor() as cur:
        cur.executemany(f"INSERT INTO {table} VALUES (%s, %s, %s, %s)",
                        [(thread, e["index"], e["id"], js_json(e)) for e in entries])


class TestPostgresContract(StoreContract):
    """A §5.2 table in PostgreSQL, written the way a host's store writes it (one transaction per
    append); a torn last record is a writer's transaction not yet committed; damage is rows whose
    text was cut short (a text column holds whatever the host wrote)."""

    multi_thread = True
    appendable = True
    text = False

    @pytest.fixture
    def source(self, postgres: Any, tmp_path: Path) -> Iterator[str]:
        self.server = postgres
        self.torn: list[Any] = []
        src = self.make(tmp_path, self.threads_())
        yield src
        for conn in self.torn:  # a writer that never committed: rolled back
            conn.close()
        with postgres.admin() as conn:
            conn.execute(f'DROP SCHEMA IF EXISTS "{self.schema}" CASCADE')

    def make(self, root: Path, threads: dict[str, list[dict[str, Any]]]) -> str:
        self.schema = f"contract_{os.getpid()}_{next(_SCHEMAS)}"
        with self.server.admin() as conn:
            pg_server.create_table(conn, "agent_event_log", schema=self.schema)
            for thread, entries in threads.items():
                _insert(conn, f'"{self.schema}".agent_event_log', thread, entries)
        return str(self.server.socket_url(query=f"schema={self.schema}&table=agent_event_log"))

    def append(self, source: str, thread: str, entries: list[dict[str, Any]]) -> None:
        with pg_server.admin_connection(source) as conn, conn.transaction():
            _insert(conn, _where(source), thread, entries)

    def rewrite(self, source: str, thread: str, entries: list[dict[str, Any]]) -> None:
        with pg_server.admin_connection(source) as conn, conn.transaction():
            conn.execute(f"DELETE FROM {_where(source)} WHERE thread_id = %s", (thread,))
            _insert(conn, _where(source), thread, entries)

    def tear(self, source: str, thread: str, entry: dict[str, Any]) -> None:
        conn = pg_server.admin_connection(source)
        conn.autocommit = False
        _insert(conn, _where(source), thread, [entry])  # inserted, not committed: a write in progress
        self.torn.append(conn)

    def damage(self, source: str, thread: str) -> None:
        with pg_server.admin_connection(source) as conn:
            conn.execute(f"UPDATE {_where(source)} SET entry = left(entry, 40) WHERE thread_id = %s AND idx >= 20",
                         (thread,))

    def files(self, source: str) -> list[Path]:
        return []

    def remove(self, source: str) -> None:
        with pg_server.admin_connection(source) as conn:
            conn.execute(f"DROP TABLE {_where(source)}")

    def replace_with(self, root: Path, source: str, threads: dict[str, list[dict[str, Any]]]) -> None:
        with pg_server.admin_connection(source) as conn, conn.transaction():
            conn.execute(f"DROP TABLE {_where(source)}")
            pg_server.create_table(conn, "agent_event_log", schema=self.schema)
            for thread, entries in threads.items():
                _insert(conn, _where(source), thread, entries)

    # -- the cases whose check is about files, for a database ------------------------------

    def test_bytes_unchanged_afterwards(self, source: str) -> None:
        """No write reaches the server: the table's rows (an md5 of every column) and its
        statistics (tuples inserted, updated, deleted) are unchanged after every call."""
        def state() -> tuple[Any, ...]:
            with pg_server.admin_connection(source) as conn:
                conn.execute("SELECT pg_stat_force_next_flush()")
                conn.execute("SELECT pg_stat_clear_snapshot()")
                rows = conn.execute(
                    f"SELECT md5(string_agg(concat_ws('/', thread_id, idx, entry_id, entry), '|'"
                    f" ORDER BY thread_id, idx)) FROM {_where(source)}").fetchone()
                stats = conn.execute(
                    "SELECT n_tup_ins, n_tup_upd, n_tup_del FROM pg_stat_user_tables"
                    " WHERE schemaname = %s AND relname = 'agent_event_log'", (self.schema,)).fetchone()
                return rows, stats

        before = state()
        self.read_every_way(source)
        assert state() == before
        assert before[1] is not None and before[1][0] == 50  # the 30 + 20 rows inserted by make

    def test_permission_denied_reads_the_same_everywhere(self, source: str) -> None:
        with pg_server.admin_connection(source) as conn:
            conn.execute(f"REVOKE SELECT ON {_where(source)} FROM {pg_server.READER}")
        with pytest.raises(UnreadableSourceError) as err:
            open_store(source)
        assert str(err.value).startswith(f"{source}: ")
        assert str(err.value).endswith("Permission denied")

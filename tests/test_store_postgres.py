"""The PostgreSQL store against a real, throwaway server (tests/pg_server.py): the bundled triage
store and the fixture logs copied into text, json and jsonb tables read back exactly; the column
mapping; read-only by construction; bad input as one typed error that never prints the password."""

from __future__ import annotations

import itertools
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest

from agentscope.errors import LogFormatError, StoreError, ThreadNotFoundError
from agentscope.log.validate import loads
from agentscope.stores import Cursor, open_store
from agentscope.stores.postgres import PostgresStore, parse_url
from tests import pg_server
from tests.pg_server import READER_PASSWORD

_SCHEMAS = itertools.count()


def _rows_by_thread(rows: list[tuple[str, int, str, str]]) -> dict[str, list[tuple[int, str, str]]]:
    out: dict[str, list[tuple[int, str, str]]] = {}
    for thread, idx, entry_id, entry in rows:
        out.setdefault(thread, []).append((idx, entry, entry_id))
    return out


def _read_all(store: Any, thread: str, from_: int = 0) -> list[tuple[int, Any, Any]]:
    return [(r.idx, r.text, r.entry_id) for batch in store.read(thread, from_) for r in batch]


@pytest.fixture
def scratch(postgres: Any) -> Iterator[tuple[Any, str]]:
    """A fresh schema (its own name per test) the reader may read; dropped afterwards."""
    schema = f"scratch_{next(_SCHEMAS)}"
    with postgres.admin() as conn:
        conn.execute(f"CREATE SCHEMA {schema}")
        conn.execute(f"GRANT USAGE ON SCHEMA {schema} TO {pg_server.READER}")
        conn.execute(f"ALTER DEFAULT PRIVILEGES IN SCHEMA {schema} GRANT SELECT ON TABLES TO {pg_server.READER}")
        yield conn, schema
        conn.execute(f"DROP SCHEMA {schema} CASCADE")


# --- the bundled store, read back -------------------------------------------------------------

@pytest.mark.parametrize("schema", ["public", "json_store"])
def test_text_and_json_columns_keep_every_byte_of_the_triage_store(postgres: Any, schema: str) -> None:
    want = _rows_by_thread(pg_server.triage_rows())
    with open_store(postgres.url(query=f"schema={schema}")) as store:
        assert store.kind == "postgresql"
        assert store.entry_type == ("text" if schema == "public" else "json")
        assert [t.thread_id for t in store.threads()] == ["fork", "main", "second"]
        for thread, rows in want.items():
            assert _read_all(store, thread) == rows
            assert store.length(thread) == len(rows)


def test_threads_lists_counts_and_recorded_at_of_both_ends(postgres: Any) -> None:
    want = _rows_by_thread(pg_server.triage_rows())
    with open_store(postgres.url()) as store:
        infos = {t.thread_id: t for t in store.threads()}
    for thread, rows in want.items():
        info = infos[thread]
        assert info.length == len(rows)
        assert info.first_recorded_at == loads(rows[0][1])["recordedAt"]
        assert info.last_recorded_at == loads(rows[-1][1])["recordedAt"]
        assert info.error is None


def test_jsonb_column_holds_the_same_values_in_its_own_text(postgres: Any) -> None:
    want = _rows_by_thread(pg_server.triage_rows())
    with open_store(postgres.url(query="schema=jsonb_store")) as store:
        assert store.entry_type == "jsonb"
        got = _read_all(store, "main")
    assert [(i, loads(t), e) for i, t, e in got] == [(i, loads(t), e) for i, t, e in want["main"]]
    # jsonb prints its own form (", " and ": "): not the bytes the host wrote
    assert got[0][1] != want["main"][0][1]


def test_fixture_logs_read_as_threads_of_their_own(postgres: Any) -> None:
    want = _rows_by_thread(pg_server.fixture_rows())
    with open_store(postgres.url(query="table=fixture_logs")) as store:
        assert [t.thread_id for t in store.threads()] == sorted(want)
        for thread, rows in want.items():
            log = store.log(thread)
            assert len(log) == len(rows)
            assert [e["id"] for e in log.entries] == [r[2] for r in rows]


def test_read_from_an_offset_and_in_batches_of_a_server_side_cursor(postgres: Any, scratch: tuple[Any, str]) -> None:
    from agentscope.stores.protocol import BATCH

    conn, schema = scratch
    pg_server.create_table(conn, "agent_event_log", schema=schema)
    n = 2 * BATCH + 17
    rows = [("long", i, f"e{i}", f'{{"index":{i},"id":"e{i}"}}') for i in range(n)]
    pg_server.copy_rows(conn, "agent_event_log", rows, schema=schema)
    with open_store(postgres.url(query=f"schema={schema}")) as store:
        batches = store.read("long", 5)
        first = next(batches)
        # the rows come from a named (server-side) cursor, FETCHed a batch at a time
        (query,) = conn.execute(
            "SELECT query FROM pg_stat_activity WHERE application_name = 'agentscope' AND state <> 'idle'"
        ).fetchone() or ("",)
        sizes = [len(first)] + [len(b) for b in batches]
    assert sizes == [BATCH, BATCH, n - 5 - 2 * BATCH]
    assert first[0].idx == 5 and first[0].entry_id == "e5"
    assert query.startswith("FETCH FORWARD") or "agentscope_read" in query, query


def test_unknown_thread_lists_the_threads(postgres: Any) -> None:
    with open_store(postgres.url()) as store:
        for call in (lambda: store.length("nope"), lambda: _read_all(store, "nope"), lambda: store.log("nope")):
            with pytest.raises(ThreadNotFoundError, match=r"no thread 'nope'.*\['fork', 'main', 'second'\]"):
                call()
        assert _read_all(store, "main", 91) == []  # past the end of a known thread: nothing, no error


# --- the column mapping -----------------------------------------------------------------------

def test_column_mapping_from_the_url_and_from_columns(postgres: Any) -> None:
    want = _rows_by_thread(pg_server.triage_rows())
    by_url = postgres.url(query="table=host_events&thread_col=conversation&idx_col=seq&entry_col=payload")
    mapping = {"thread_id": "conversation", "idx": "seq", "entry": "payload"}
    for store in (open_store(by_url), open_store(postgres.url(), table="host_events", columns=mapping)):
        with store:
            assert store.entry_type == "json"
            assert [t.thread_id for t in store.threads()] == ["fork", "main", "second"]
            # no entry_id column: read without that check
            assert _read_all(store, "second") == [(i, t, None) for i, t, _ in want["second"]]


# --- read-only --------------------------------------------------------------------------------

def _table_state(conn: Any) -> tuple[Any, ...]:
    conn.execute("SELECT pg_stat_clear_snapshot()")
    digest = conn.execute(
        "SELECT md5(string_agg(thread_id || '/' || idx || '/' || entry_id || '/' || entry, '|' ORDER BY thread_id, idx))"
        " FROM agent_event_log").fetchone()
    stats = conn.execute(
        "SELECT n_tup_ins, n_tup_upd, n_tup_del, n_tup_hot_upd FROM pg_stat_user_tables"
        " WHERE schemaname = 'public' AND relname = 'agent_event_log'").fetchone()
    return digest, stats


def test_reading_writes_nothing_rows_and_server_statistics_unchanged(postgres: Any) -> None:
    with postgres.admin() as admin:
        before = _table_state(admin)
        with open_store(postgres.url()) as store:
            for info in store.threads():
                store.log(info.thread_id)
                store.changes(info.thread_id, store.changes(info.thread_id, Cursor()).cursor)
        admin.execute("SELECT pg_stat_force_next_flush()")
        after = _table_state(admin)
    assert after == before


# --- what jsonb cannot hold -------------------------------------------------------------------

def test_text_column_keeps_what_jsonb_rejects_and_jsonb_collapses_duplicate_keys(
        postgres: Any, scratch: tuple[Any, str]) -> None:
    import psycopg

    conn, schema = scratch
    lone = '{"index":0,"id":"a","event":{"type":"x","s":"\\ud800","z":"\\u0000"}}'
    dup = '{"index":1,"id":"b","event":{"type":"x","k":1,"k":2}}'
    pg_server.create_table(conn, "t_text", schema=schema)
    pg_server.create_table(conn, "t_jsonb", schema=schema, entry_type="jsonb")
    pg_server.copy_rows(conn, "t_text", [("x", 0, "a", lone), ("x", 1, "b", dup)], schema=schema)
    # a lone surrogate or \u0000: jsonb refuses the host's insert, so no jsonb store holds them
    for bad, error, message in (
            (lone.replace(',"z":"\\u0000"', ""), psycopg.errors.InvalidTextRepresentation, "surrogate"),
            (lone.replace('"s":"\\ud800",', ""), psycopg.errors.UntranslatableCharacter, "unsupported Unicode escape")):
        with pytest.raises(error, match=message):
            conn.execute(f"INSERT INTO {schema}.t_jsonb VALUES ('x', 0, 'a', %s::jsonb)", (bad,))
    conn.execute(f"INSERT INTO {schema}.t_jsonb VALUES ('x', 1, 'b', %s::jsonb)", (dup,))
    with open_store(postgres.url(query=f"schema={schema}&table=t_text")) as store:
        got = _read_all(store, "x")
        assert [t for _, t, _ in got] == [lone, dup]
        assert loads(got[0][1])["event"]["s"] == "\ud800"
    with open_store(postgres.url(query=f"schema={schema}&table=t_jsonb")) as store:
        (row,) = _read_all(store, "x", 1)
    assert loads(row[1])["event"] == {"type": "x", "k": 2} == loads(dup)["event"]  # as JSON.parse: last wins


# --- bad input: one typed error, the password never printed --------------------------------------

def _assert_no_secret(err: BaseException) -> None:
    for text in (str(err), repr(err), str(getattr(err, "source", ""))):
        assert READER_PASSWORD not in text and "s3cret" not in text, text


def test_refused_connection_is_a_store_error_without_the_password(postgres: Any) -> None:
    port = pg_server.free_port()
    url = postgres.url().replace(f":{postgres.port}/", f":{port}/")
    with pytest.raises(StoreError, match=r"cannot connect to the PostgreSQL server.*refused") as err:
        open_store(url)
    _assert_no_secret(err.value)
    assert err.value.source == f"postgresql://{pg_server.READER}@127.0.0.1:{port}/agentscope"


def test_wrong_password_and_missing_database_name_the_problem_not_the_password(postgres: Any) -> None:
    with pytest.raises(StoreError, match="password authentication failed") as err:
        open_store(postgres.url(password=READER_PASSWORD + "x"))
    _assert_no_secret(err.value)
    with pytest.raises(StoreError, match='database "nodb" does not exist') as err:
        open_store(postgres.url(db="nodb"))
    _assert_no_secret(err.value)


@pytest.mark.parametrize("url, match", [
    ("postgresql://u:pw-s3cret-Zq9!x@127.0.0.1:notaport/db", "not a usable postgresql:// URL"),
    ("postgresql://u:pw-s3cret-Zq9!x@127.0.0.1:5432/db?thread_col=", "column mapping thread_col is empty"),
    ("postgresql://u:pw-s3cret-Zq9!x@127.0.0.1:1/db?bogus_option=1", "cannot connect"),
])
def test_malformed_urls(url: str, match: str) -> None:
    with pytest.raises(StoreError, match=match) as err:
        open_store(url)
    _assert_no_secret(err.value)


def test_missing_table_lists_the_tables_found(postgres: Any) -> None:
    with pytest.raises(StoreError, match=r"no table events in the database; tables found: \['agent_event_log', "
                       r"'fixture_logs', 'host_events', 'json_store.agent_event_log', 'json_store.fixture_logs', "
                       r"'jsonb_store.agent_event_log', 'jsonb_store.fixture_logs'\]") as err:
        open_store(postgres.url(query="table=events"))
    _assert_no_secret(err.value)


def test_missing_column_names_the_mapping(postgres: Any) -> None:
    with pytest.raises(StoreError, match=r"no column 'thread_id' \(the column mapping thread_col=thread_id\); "
                       r"its columns: \['conversation', 'seq', 'payload'\]"):
        open_store(postgres.url(query="table=host_events"))
    with pytest.raises(StoreError, match=r"no column 'eid' \(the column mapping entry_id_col=eid\)"):
        open_store(postgres.url(query="entry_id_col=eid"))
    with pytest.raises(StoreError, match="entry column must be text, varchar, json or jsonb"):
        open_store(postgres.url(query="entry_col=idx"))


def test_a_row_that_does_not_parse_names_thread_and_idx(postgres: Any, scratch: tuple[Any, str]) -> None:
    conn, schema = scratch
    pg_server.create_table(conn, "agent_event_log", schema=schema)
    rows = pg_server.triage_rows()[:3]
    broken = [(t, i, e, text if i != 2 else text[:-7]) for t, i, e, text in rows]
    pg_server.copy_rows(conn, "agent_event_log", broken, schema=schema)
    with open_store(postgres.url(query=f"schema={schema}")) as store, \
            pytest.raises(LogFormatError, match=r"thread 'fork' idx 2.*invalid JSON") as err:
        store.log("fork")
    _assert_no_secret(err.value)


def test_password_never_in_address_repr_or_source() -> None:
    url = "postgresql://ann:pw-s3cret-Zq9!x@db.example:5432/logs?table=t&password=pw-s3cret-Zq9!x#main"
    src = parse_url(url)
    for text in (src.address, repr(src)):
        assert "s3cret" not in text
    assert src.address == "postgresql://ann@db.example:5432/logs?table=t"
    assert src.thread == "main"


def test_store_repr_and_address_hide_the_password(postgres: Any) -> None:
    with open_store(postgres.url()) as store:
        assert isinstance(store, PostgresStore)
        assert READER_PASSWORD not in repr(store) + store.address + str(store.__dict__.get("address"))
        assert store.address == f"postgresql://{pg_server.READER}@127.0.0.1:{postgres.port}/agentscope"


def test_missing_driver_names_the_extra() -> None:
    code = ("import sys; sys.modules['psycopg'] = None\n"
            "from agentscope.stores import Cursor, open_store\n"
            "from agentscope.errors import StoreError\n"
            "try:\n    open_store('postgresql://u:pw-s3cret-Zq9!x@127.0.0.1:1/db')\n"
            "except StoreError as e:\n    print(e)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         cwd=pg_server.REPO).stdout
    assert "pip install 'agentscope-timetravel[postgres]'" in out and "psycopg" in out
    assert "s3cret" not in out


# --- follow: polling idx ----------------------------------------------------------------------

_WRITER = """
import sys, time, psycopg
host, port, schema, n = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
with psycopg.connect(host=host, port=port, user="postgres", dbname="agentscope", autocommit=True) as conn:
    for i in range(n):  # one committed append per entry, as a host's runAgent journals
        conn.execute(f"INSERT INTO {schema}.agent_event_log VALUES ('live', %s, %s, %s)",
                     (i, f"e{i}", '{"index":%d,"id":"e%d"}' % (i, i)))
        time.sleep(0.01)
"""


def test_follow_sees_a_writer_process_append_and_reports_a_rewound_thread(
        postgres: Any, scratch: tuple[Any, str]) -> None:
    import time

    conn, schema = scratch
    pg_server.create_table(conn, "agent_event_log", schema=schema)
    n = 40
    writer = subprocess.Popen([sys.executable, "-c", _WRITER, str(postgres.root), str(postgres.port), schema, str(n)])
    seen: list[dict[str, Any]] = []
    with open_store(postgres.url(query=f"schema={schema}")) as store:
        cursor = Cursor()
        deadline = time.monotonic() + 120
        while cursor.position < n and time.monotonic() < deadline:  # a condition, not a speed
            change = store.changes("live", cursor)
            assert change.problem is None, change.problem
            seen += change.entries
            cursor = change.cursor
            time.sleep(0.02)
        assert writer.wait(timeout=120) == 0
        assert [e["index"] for e in seen] == list(range(n))
        assert store.changes("live", cursor).entries == []  # nothing new: nothing read twice
        # a fork written over the followed thread: rows from 30 on replaced by other entries
        conn.execute(f"DELETE FROM {schema}.agent_event_log WHERE thread_id = 'live' AND idx >= 30")
        pg_server.copy_rows(conn, "agent_event_log", [
            ("live", i, f"f{i}", f'{{"index":{i},"id":"f{i}"}}') for i in range(30, n)], schema=schema)
        problem = store.changes("live", cursor).problem
        assert problem is not None and problem.kind == "rewritten" and problem.index == n - 1
        conn.execute(f"DELETE FROM {schema}.agent_event_log WHERE thread_id = 'live' AND idx >= 10")
        problem = store.changes("live", cursor).problem
        assert problem is not None and problem.kind == "truncated"


# --- the key columns and the content keys, from the server --------------------------------------

@pytest.mark.parametrize("schema", ["public", "json_store", "jsonb_store"])
def test_thread_ids_and_digests_come_from_one_query_and_equal_the_records(postgres: Any, schema: str) -> None:
    from agentscope.stores.protocol import RowStore, entry_digest

    with open_store(postgres.url(query=f"schema={schema}")) as store:
        assert store.thread_ids() == [t.thread_id for t in store.threads()] == ["fork", "main", "second"]
        got = dict(store.digests(["second", "main", "fork"]))
        # the generic RowStore.digests: one read() per thread, its text hashed
        want = dict(RowStore.digests(store, ["second", "main", "fork"]))
        records = {t: [entry_digest(r.text) for batch in store.read(t) for r in batch] for t in got}
    assert list(got) == ["second", "main", "fork"]
    assert got == want == records
    assert [len(got[t]) for t in ("fork", "main", "second")] == [52, 91, 40]


def test_digests_of_an_unknown_thread_list_the_threads(postgres: Any) -> None:
    with open_store(postgres.url()) as store, pytest.raises(ThreadNotFoundError, match=r"'nope'.*fork"):
        dict(store.digests(["main", "nope"]))


def test_digests_keep_non_ascii_text_as_its_utf8_bytes(postgres: Any, scratch: tuple[Any, str]) -> None:
    from agentscope.stores.protocol import entry_digest

    conn, schema = scratch
    texts = ['{"a":"\u00e9\u4e2d\U0001f600"}', '{"b":"\\ud800"}']
    conn.execute(f"CREATE TABLE {schema}.agent_event_log (thread_id text, idx int, entry text)")
    for i, text in enumerate(texts):
        conn.execute(f"INSERT INTO {schema}.agent_event_log VALUES ('t', %s, %s)", (i, text))
    with open_store(postgres.url(query=f"schema={schema}")) as store:
        assert dict(store.digests(["t"])) == {"t": [entry_digest(t) for t in texts]}

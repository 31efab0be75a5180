"""The throwaway PostgreSQL server the PostgreSQL tests run against (tests/pg_server.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests import pg_server


def test_server_holds_the_triage_store_byte_for_byte(postgres: Any) -> None:
    with postgres.admin() as conn:
        rows = conn.execute(
            "SELECT thread_id, idx, entry_id, entry FROM agent_event_log ORDER BY thread_id, idx").fetchall()
    assert [tuple(r) for r in rows] == pg_server.triage_rows()
    assert {r[0] for r in rows} == {"main", "fork", "second"}


def test_jsonb_and_json_copies_hold_the_same_values(postgres: Any) -> None:
    with postgres.admin() as conn:
        counts = conn.execute(
            "SELECT (SELECT count(*) FROM jsonb_store.fixture_logs), (SELECT count(*) FROM json_store.fixture_logs),"
            " (SELECT count(*) FROM public.fixture_logs), (SELECT count(*) FROM host_events)").fetchone()
        differ = conn.execute(
            "SELECT count(*) FROM public.agent_event_log t JOIN jsonb_store.agent_event_log b USING (thread_id, idx)"
            " WHERE t.entry::jsonb <> b.entry").fetchone()
    assert counts[0] == counts[1] == counts[2] == len(pg_server.fixture_rows())
    assert counts[3] == 91 + 52 + 40
    assert differ == (0,)


def test_reader_role_logs_in_with_its_password_over_tcp(postgres: Any) -> None:
    import psycopg

    with psycopg.connect(postgres.url()) as conn:
        assert conn.execute("SELECT current_user").fetchone() == (pg_server.READER,)
    try:
        psycopg.connect(postgres.url(password="wrong"))
    except psycopg.OperationalError as exc:
        assert "password authentication failed" in str(exc)
    else:
        raise AssertionError("a wrong password was accepted")


def test_two_servers_run_side_by_side(postgres: Any) -> None:
    """A second copy of the suite (or another xdist worker) gets its own directory and port."""
    other = pg_server.start_server()
    try:
        assert other.port != postgres.port and other.root != postgres.root
        with other.admin("postgres") as conn:
            assert conn.execute("SELECT 1").fetchone() == (1,)
    finally:
        other.stop()
    assert not other.root.exists()


def _run_pytest_without_binaries(require: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, pg_server.BINDIR_ENV: "/nonexistent/pg/bin", pg_server.REQUIRE_ENV: require}
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:randomly", "-p", "no:cacheprovider", "-n0", "-q", "-rs",
         f"{Path(__file__)}::test_reader_role_logs_in_with_its_password_over_tcp"],
        cwd=pg_server.REPO, env=env, capture_output=True, text=True, timeout=300, check=False)


def test_missing_server_binaries_skip_with_a_one_line_reason() -> None:
    run = _run_pytest_without_binaries("")
    assert run.returncode == 0, run.stdout + run.stderr
    assert "1 skipped" in run.stdout
    assert "SKIPPED [1]" in run.stdout and "not found in /nonexistent/pg/bin: apt-get install postgresql" in run.stdout


def test_ci_fails_instead_of_skipping_when_postgres_is_required() -> None:
    run = _run_pytest_without_binaries("1")
    assert run.returncode == 1, run.stdout + run.stderr
    assert "AGENTSCOPE_REQUIRE_POSTGRES=1 but PostgreSQL server binaries" in run.stdout
    assert "skipped" not in run.stdout

"""A throwaway PostgreSQL server for the tests: a real server, never a mock.

Debian's ``postgresql`` package puts the server binaries in ``/usr/lib/postgresql/<major>/bin``
(not on ``PATH``). :func:`start_server` runs ``initdb`` into a fresh temporary directory, starts
``postgres`` on a free port of 127.0.0.1 with its Unix socket inside that directory, and
:meth:`PgServer.stop` shuts it down and removes the directory. Nothing is shared with a system
service or with another copy of the suite: each call has its own directory, port and socket, so
pytest-xdist workers (one server each) and a second checkout's suite run side by side.

``initdb`` refuses to run as root; as root the server runs as the ``postgres`` account (or
``nobody``) and owns its directory. Authentication: the Unix socket trusts everyone (the fixtures
connect through it as the superuser to load data); TCP on 127.0.0.1 asks for a password
(SCRAM), so the tests use a real password in a ``postgresql://`` URL.

:func:`load_fixtures` copies the bundled triage store and the fixture logs into the database
``agentscope`` (see :data:`TABLES`).
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import pwd
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

REQUIRE_ENV = "AGENTSCOPE_REQUIRE_POSTGRES"
"""Set to ``1`` (``.ci/run`` does) and a missing server or driver fails the tests instead of
skipping them."""

BINDIR_ENV = "AGENTSCOPE_PG_BINDIR"
"""Optional: the directory holding ``initdb`` and ``postgres`` (else Debian's layout, then PATH)."""

DATABASE = "agentscope"
READER = "agentscope_reader"
SUPERUSER_PASSWORD = "superuser-pw-4tests"
"""The bootstrap superuser's password (SCRAM over TCP; the Unix socket trusts)."""
READER_PASSWORD = "pw-s3cret-Zq9!x"  # a real password, checked by the server (SCRAM over TCP)
"""The read-only role the tests connect as; its password must never be printed back."""

REPO = Path(__file__).resolve().parent.parent
FIXTURES = REPO / "tests" / "fixtures" / "real"
TRIAGE_STORE = REPO / "agentscope" / "examples" / "g_triage.sqlite"

TABLES = {
    "agent_event_log": "the bundled triage store's rows (threads main, fork, second), §5.2 layout",
    "fixture_logs": "every fixture log: c_fork.sqlite's threads, and each *.log.json as thread <stem>",
}
"""The tables :func:`load_fixtures` fills, each in schema ``public`` (``entry text``, every byte as
the source holds it), ``jsonb_store`` (``entry jsonb``) and ``json_store`` (``entry json``), plus
``public.host_events(conversation, seq, payload json)``: the triage rows under other column names."""

STARTUP_SECONDS = 120.0
"""How long a start may take before it is given up (a condition wait; the machine may be busy)."""


def _version(path: Path) -> tuple[int, ...]:
    return tuple(int(p) for p in re.findall(r"\d+", path.parent.name)) or (0,)


def find_bindir() -> Path | None:
    """The directory with ``initdb`` and ``postgres``: ``$AGENTSCOPE_PG_BINDIR`` when set (only
    that one), else the newest ``/usr/lib/postgresql/*/bin`` (Debian, Ubuntu), then the directory
    of ``initdb`` on PATH."""
    candidates: list[Path] = []
    if os.environ.get(BINDIR_ENV):
        candidates.append(Path(os.environ[BINDIR_ENV]))
    else:
        candidates += sorted(Path("/usr/lib/postgresql").glob("*/bin"), key=_version, reverse=True)
        on_path = shutil.which("initdb")
        if on_path:
            candidates.append(Path(on_path).resolve().parent)
    for d in candidates:
        if all(os.access(d / name, os.X_OK) for name in ("initdb", "postgres")):
            return d
    return None


def missing_reason() -> str | None:
    """``None`` when a server can be started here; else one line saying what is missing."""
    if find_bindir() is None:
        where = os.environ.get(BINDIR_ENV) or "/usr/lib/postgresql/*/bin"
        return f"PostgreSQL server binaries (initdb, postgres) not found in {where}: apt-get install postgresql"
    try:
        import psycopg  # noqa: F401
    except ImportError:
        return "psycopg is not installed: pip install 'agentscope-timetravel[postgres]'"
    return None


def _account() -> tuple[int, int] | None:
    """The (uid, gid) to run the server as when we are root: ``postgres``, else ``nobody``."""
    if os.geteuid() != 0:
        return None
    for name in ("postgres", "nobody"):
        with contextlib.suppress(KeyError):
            pw = pwd.getpwnam(name)
            return pw.pw_uid, pw.pw_gid
    raise RuntimeError("running as root and neither a 'postgres' nor a 'nobody' account exists")


def _die_with_parent() -> None:  # pragma: no cover - runs in the child before exec
    """An orphaned server shuts down (immediate mode) when the test process dies."""
    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGQUIT)  # PR_SET_PDEATHSIG


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class PgServer:
    """One running throwaway server. ``root`` holds ``data/`` and the Unix socket."""

    bindir: Path
    root: Path
    port: int
    proc: subprocess.Popen[bytes] | None = None
    superuser: str = "postgres"
    log: Path = field(init=False)

    def __post_init__(self) -> None:
        self.log = self.root / "server.log"

    def url(self, *, db: str = DATABASE, user: str = READER, password: str | None = READER_PASSWORD,
            query: str = "", fragment: str = "") -> str:
        """A ``postgresql://`` URL to this server over TCP (127.0.0.1), the way a user writes one."""
        cred = quote(user, safe="") + (":" + quote(password, safe="") if password is not None else "")
        tail = ("?" + query if query else "") + ("#" + fragment if fragment else "")
        return f"postgresql://{cred}@127.0.0.1:{self.port}/{db}{tail}"

    def socket_url(self, *, db: str = DATABASE, user: str = READER, query: str = "") -> str:
        """A URL through the Unix socket (trusted: no password), ``host=`` the socket directory."""
        q = f"host={quote(str(self.root), safe='')}&port={self.port}" + ("&" + query if query else "")
        return f"postgresql://{quote(user, safe='')}@/{db}?{q}"

    def admin(self, db: str = DATABASE) -> Any:
        """A superuser connection through the Unix socket (autocommit), for setting up tests."""
        import psycopg

        return psycopg.connect(host=str(self.root), port=self.port, user=self.superuser,
                               dbname=db, autocommit=True)

    def server_log(self) -> str:
        try:
            return self.log.read_text(errors="replace")
        except OSError:
            return ""

    def stop(self) -> None:
        """Fast shutdown (SIGINT), then remove the directory. Safe to call twice."""
        proc, self.proc = self.proc, None
        if proc is not None and proc.poll() is None:
            proc.send_signal(signal.SIGINT)
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                proc.send_signal(signal.SIGQUIT)
                proc.wait(timeout=30)
        shutil.rmtree(self.root, ignore_errors=True)


def _run(cmd: list[str], account: tuple[int, int] | None, log: Path) -> None:
    kw: dict[str, Any] = {"user": account[0], "group": account[1], "extra_groups": []} if account else {}
    with log.open("ab") as out:
        done = subprocess.run(cmd, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                              check=False, **kw)
    if done.returncode != 0:
        raise RuntimeError(f"{cmd[0]} failed ({done.returncode}): {log.read_text(errors='replace')[-2000:]}")


def start_server(bindir: Path | None = None, *, attempts: int = 5) -> PgServer:
    """``initdb`` a temporary cluster and start it; returns when it accepts connections.

    A port taken between choosing it and binding it (another copy of the suite) is retried with
    another port, ``attempts`` times. Raises ``RuntimeError`` with the server's log on failure.
    """
    import psycopg

    bindir = bindir or find_bindir()
    if bindir is None:
        raise RuntimeError(missing_reason() or "no PostgreSQL binaries")
    account = _account()
    root = Path(tempfile.mkdtemp(prefix="agentscope-pg-"))
    server = PgServer(bindir=bindir, root=root, port=0)
    try:
        if account:
            os.chown(root, *account)
        root.chmod(0o700)
        pwfile = root / "superuser.pw"  # initdb wants a password for SCRAM host auth
        pwfile.write_text(SUPERUSER_PASSWORD + "\n")
        if account:
            os.chown(pwfile, *account)
        _run([str(bindir / "initdb"), "-D", str(root / "data"), "-U", server.superuser,
              "--pwfile", str(pwfile), "--auth-local=trust", "--auth-host=scram-sha-256",
              "--encoding=UTF8", "--locale=C", "--no-sync"], account, server.log)
        for _ in range(attempts):
            server.port = free_port()
            kw: dict[str, Any] = {"user": account[0], "group": account[1], "extra_groups": []} if account else {}
            with server.log.open("ab") as out:
                server.proc = subprocess.Popen(
                    [str(bindir / "postgres"), "-D", str(root / "data"), "-p", str(server.port),
                     "-k", str(root), "-c", "listen_addresses=127.0.0.1",
                     "-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off",
                     "-c", "max_connections=40", "-c", "shared_buffers=32MB",
                     "-c", "track_counts=on", "-c", "log_min_messages=warning"],
                    stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                    preexec_fn=_die_with_parent, **kw)
            deadline = time.monotonic() + STARTUP_SECONDS
            while server.proc.poll() is None and time.monotonic() < deadline:
                try:
                    psycopg.connect(host=str(root), port=server.port, user=server.superuser,
                                    dbname="postgres", connect_timeout=5).close()
                    break
                except psycopg.OperationalError:
                    time.sleep(0.1)
            if server.proc.poll() is None:
                break
            if "already in use" not in server.server_log():
                raise RuntimeError(f"postgres exited at start: {server.server_log()[-2000:]}")
            server.proc = None
        else:
            raise RuntimeError(f"no free port after {attempts} tries: {server.server_log()[-2000:]}")
        if server.proc is None or server.proc.poll() is not None:  # pragma: no cover
            raise RuntimeError(f"postgres did not start: {server.server_log()[-2000:]}")
        return server
    except BaseException:
        server.stop()
        raise


def admin_connection(url: str) -> Any:
    """A superuser connection (autocommit) to the server and database of ``url`` (a reader's
    URL as the tests write it): how a test's writer process reaches the same server."""
    from urllib.parse import parse_qsl, urlsplit

    import psycopg

    parts = urlsplit(url)
    q = dict(parse_qsl(parts.query))
    if "host" in q:
        return psycopg.connect(host=q["host"], port=int(q["port"]), user="postgres",
                               dbname=parts.path.lstrip("/"), autocommit=True)
    return psycopg.connect(host=parts.hostname, port=parts.port, user="postgres", password=SUPERUSER_PASSWORD,
                           dbname=parts.path.lstrip("/"), autocommit=True)


# --- the data -------------------------------------------------------------------------------

def _sqlite_rows(path: Path) -> list[tuple[str, int, str, str]]:
    """Every row of a §5.2 SQLite store, the entry text exactly as stored."""
    import sqlite3

    conn = sqlite3.connect(f"file:{path}?mode=ro&immutable=1", uri=True)
    try:
        return [tuple(r) for r in conn.execute(  # type: ignore[misc]
            "SELECT thread_id, idx, entry_id, entry FROM agent_event_log ORDER BY thread_id, idx")]
    finally:
        conn.close()


def _log_file_rows() -> list[tuple[str, int, str, str]]:
    """Each ``*.log.json`` fixture as thread ``<stem>``, one row per entry written the way a JS
    host writes it (``JSON.stringify(entry)``)."""
    import json

    from agentscope.log.writers import js_json

    rows: list[tuple[str, int, str, str]] = []
    for path in sorted(FIXTURES.glob("*.log.json")):
        thread = path.name[: -len(".log.json")]
        for i, entry in enumerate(json.loads(path.read_text(encoding="utf-8"))):
            rows.append((thread, i, str(entry["id"]), js_json(entry)))
    return rows


def triage_rows() -> list[tuple[str, int, str, str]]:
    """The bundled triage store's rows: ``(thread_id, idx, entry_id, entry)``."""
    return _sqlite_rows(TRIAGE_STORE)


def fixture_rows() -> list[tuple[str, int, str, str]]:
    """The rows of table ``fixture_logs``: c_fork.sqlite's threads and every ``*.log.json``."""
    return _sqlite_rows(FIXTURES / "c_fork.sqlite") + _log_file_rows()


def create_table(conn: Any, table: str, *, schema: str = "public", entry_type: str = "text") -> None:
    """A §5.2 event-log table (``entry`` of ``entry_type``: text, json or jsonb)."""
    from psycopg import sql

    t = sql.Identifier(schema, table)
    conn.execute(sql.SQL("CREATE SCHEMA IF NOT EXISTS {}").format(sql.Identifier(schema)))
    conn.execute(sql.SQL(
        "CREATE TABLE {} (thread_id TEXT NOT NULL, idx INTEGER NOT NULL, entry_id TEXT NOT NULL, "
        "entry {} NOT NULL, PRIMARY KEY (thread_id, idx))").format(t, sql.SQL(entry_type)))
    conn.execute(sql.SQL("CREATE UNIQUE INDEX {} ON {} (thread_id, entry_id)").format(
        sql.Identifier(f"{table}_thread_entry_id"), t))
    conn.execute(sql.SQL("GRANT USAGE ON SCHEMA {} TO {}").format(sql.Identifier(schema), sql.Identifier(READER)))
    conn.execute(sql.SQL("GRANT SELECT ON {} TO {}").format(t, sql.Identifier(READER)))


def copy_rows(conn: Any, table: str, rows: list[tuple[str, int, str, str]], *, schema: str = "public") -> None:
    """``COPY`` rows ``(thread_id, idx, entry_id, entry)`` into a table (text goes in as is)."""
    from psycopg import sql

    with conn.cursor() as cur, cur.copy(sql.SQL("COPY {} (thread_id, idx, entry_id, entry) FROM STDIN").format(
            sql.Identifier(schema, table))) as copy:
        for row in rows:
            copy.write_row(row)


def load_fixtures(server: PgServer) -> None:
    """Create database ``agentscope``, the read-only role and the tables of :data:`TABLES`."""
    from psycopg import sql

    with server.admin("postgres") as conn:
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(DATABASE)))
        conn.execute(sql.SQL("CREATE ROLE {} LOGIN PASSWORD {}").format(
            sql.Identifier(READER), sql.Literal(READER_PASSWORD)))
    data = {"agent_event_log": triage_rows(), "fixture_logs": fixture_rows()}
    with server.admin() as conn:
        for schema, entry_type in (("public", "text"), ("jsonb_store", "jsonb"), ("json_store", "json")):
            for table, rows in data.items():
                create_table(conn, table, schema=schema, entry_type=entry_type)
                copy_rows(conn, table, rows, schema=schema)
        conn.execute("CREATE TABLE host_events (conversation TEXT NOT NULL, seq BIGINT NOT NULL, "
                     "payload JSON NOT NULL, PRIMARY KEY (conversation, seq))")
        conn.execute("INSERT INTO host_events SELECT thread_id, idx, entry::json FROM agent_event_log")
        conn.execute(sql.SQL("GRANT SELECT ON host_events TO {}").format(sql.Identifier(READER)))
        conn.execute("ANALYZE")


@contextlib.contextmanager
def running_server() -> Iterator[PgServer]:
    """A started, loaded server for the length of the ``with`` block."""
    server = start_server()
    try:
        load_fixtures(server)
        yield server
    finally:
        server.stop()

"""The ``agentscope`` command on a PostgreSQL store: the bundled triage store copied into a real
server (tests/pg_server.py; ``entry`` as ``text`` and as ``jsonb``) gives the output and exit
code the SQLite file gives, command by command, the source's name aside; bad input is one line,
exit 2, and the password is never printed."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from agentscope.cli import main
from agentscope.stores import display_address
from tests import pg_server

SQLITE = pg_server.TRIAGE_STORE
PY = "py:agentscope.examples.python_machines:triage_machine"
SECRET = "s3cret"  # a part of pg_server.READER_PASSWORD, quoted or not
SCHEMAS = {"text": "public", "jsonb": "jsonb_store"}
_TIMING_JSON = re.compile(r'"(seconds|folded)": [-+0-9.e]+')
_TIMING_CELL = re.compile(r"\d+\.\d\d( │)$")


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def _same_modulo_source(capsys: pytest.CaptureFixture[str], url: str, argv: list[str]) -> tuple[int, str]:
    """Run ``argv`` with ``{src}`` standing for the SQLite file and for the URL; assert the same
    exit code, and the same stdout and stderr once each source is written ``SRC``."""
    got = []
    for src, names in ((str(SQLITE), [str(SQLITE), SQLITE.name]), (url, [display_address(url)])):
        code, out, err = run(capsys, *[a.replace("{src}", src) for a in argv])
        assert SECRET not in out + err
        for name in names:
            out, err = out.replace(name, "SRC"), err.replace(name, "SRC")
        # a grid's columns are as wide as its widest cell (the source): trailing blanks aside;
        # the seconds each thread took (verify's `s` column, JSON `seconds`) and the entries a
        # worker folded (JSON `folded`: verify_store's plan, not a verdict) aside
        out, err = ("\n".join(_TIMING_CELL.sub(r"S\1", ln.rstrip()) for ln in
                              _TIMING_JSON.sub(r'"\1": N', t).splitlines()) for t in (out, err))
        got.append((code, out, err))
    assert got[0] == got[1], argv
    return got[0][0], got[0][1]


@pytest.fixture(params=sorted(SCHEMAS))
def url(request: pytest.FixtureRequest, postgres: Any) -> str:
    """The triage store's URL on the server, ``entry`` as ``text`` or as ``jsonb``."""
    return str(postgres.url(query=f"schema={SCHEMAS[request.param]}"))


@pytest.mark.parametrize("argv, exit_code", [
    (["threads", "{src}"], 0),
    (["threads", "{src}", "--json"], 0),
    (["verify", "{src}#main", "--machine", PY], 0),
    (["verify", "{src}#fork", "--machine", PY, "--json"], 0),
    (["verify", "{src}", "--thread", "second", "--machine", PY], 0),
    (["verify", "{src}", "--machine", PY, "--workers", "1"], 0),
    (["verify", "{src}", "--machine", PY, "--workers", "1", "--json"], 0),
    (["show", "{src}#fork"], 0),
    (["show", "{src}#main", "--json", "--machine", PY], 0),
    (["whatif", "{src}", "--machine", PY, "--workers", "1"], 0),
    (["whatif", "{src}#fork", "--machine", PY, "--json"], 0),
    (["watch", "{src}#second", "--idle-exit", "0", "--machine", PY], 0),
    (["watch", "{src}#main", "--idle-exit", "0", "--json"], 0),
    (["query", "{src}#main", "index > 85", "--machine", PY], 0),
    (["query", "{src}#fork", "event.type == 'NO_SUCH_EVENT'", "--machine", PY], 1),
    (["diff", "{src}#main", "{src}#fork"], 1),
    (["show", "{src}#nope"], 2),
    (["show", "{src}"], 2),
])
def test_each_command_reads_postgres_as_it_reads_the_sqlite_file(
    capsys: pytest.CaptureFixture[str], url: str, argv: list[str], exit_code: int
) -> None:
    code, out = _same_modulo_source(capsys, url, argv)
    assert code == exit_code
    if argv[0] == "threads" and "--json" in argv:
        lengths = {t["thread_id"]: t["length"] for t in json.loads(out)["threads"]}
        assert lengths == {"fork": 52, "main": 91, "second": 40}


@pytest.mark.parametrize("fmt", ["jsonl", "csv"])
def test_export_writes_the_entries_the_sqlite_file_holds(
    capsys: pytest.CaptureFixture[str], url: str, fmt: str
) -> None:
    """``export -o -``: the same entries; a ``jsonb`` column gives its own key order back (the
    documented loss, harmless for the hash), so those are compared as values."""
    outs = []
    for src in (str(SQLITE), url):
        code, out, err = run(capsys, "export", f"{src}#main", "--to", fmt, "-o", "-")
        assert code == 0 and err == "wrote 91 entries to standard output\n"
        assert SECRET not in out + err
        outs.append(out)
    if "schema=public" in url:
        assert outs[0] == outs[1]
    elif fmt == "jsonl":
        assert [json.loads(line) for line in outs[0].splitlines()] == [
            json.loads(line) for line in outs[1].splitlines()]
    else:
        assert len(outs[0].splitlines()) == len(outs[1].splitlines()) == 92


# --- bad input: one line, exit 2, never the password -----------------------------------------------

def _bad(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    code, out, err = run(capsys, *argv)
    assert code == 2, (out, err)
    assert SECRET not in out + err
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("agentscope: error: "), err
    assert "Traceback" not in err
    return lines[0]


@pytest.mark.parametrize("command", [["threads"], ["show"], ["verify", "--machine", PY],
                                     ["whatif", "--machine", PY], ["export", "--to", "jsonl", "-o", "-"],
                                     ["query", "--machine", PY, "index > 1"]])
def test_a_refused_connection_is_one_line_without_the_password(
    capsys: pytest.CaptureFixture[str], postgres: Any, command: list[str]
) -> None:
    port = pg_server.free_port()
    url = postgres.url().replace(f":{postgres.port}/", f":{port}/") + "#main"
    line = _bad(capsys, command[0], url, *command[1:])
    assert "cannot connect to the PostgreSQL server" in line
    assert f"postgresql://{pg_server.READER}@127.0.0.1:{port}/agentscope" in line


def test_a_wrong_url_a_missing_table_and_a_missing_column_name_the_problem(
    capsys: pytest.CaptureFixture[str], postgres: Any
) -> None:
    line = _bad(capsys, "threads", f"postgresql://u:pw-{SECRET}@127.0.0.1:notaport/db")
    assert "not a usable postgresql:// URL" in line
    line = _bad(capsys, "verify", postgres.url(query="table=events"), "--machine", PY)
    assert "no table events in the database; tables found: ['agent_event_log', 'fixture_logs'" in line
    line = _bad(capsys, "show", postgres.url(query="table=host_events") + "#main")
    assert "no column 'thread_id' (the column mapping thread_col=thread_id)" in line
    line = _bad(capsys, "threads", postgres.url(password=pg_server.READER_PASSWORD + "x"))
    assert "password authentication failed" in line


@pytest.fixture
def broken_schema(postgres: Any) -> Any:
    """A schema whose triage thread ``fork`` has a row (idx 2) that does not parse."""
    schema = "cli_broken"
    with postgres.admin() as conn:
        conn.execute(f"CREATE SCHEMA {schema}")
        pg_server.create_table(conn, "agent_event_log", schema=schema)
        rows = [r for r in pg_server.triage_rows() if r[0] == "fork"][:5]
        broken = [(t, i, e, text if i != 2 else text[:-7]) for t, i, e, text in rows]
        pg_server.copy_rows(conn, "agent_event_log", broken, schema=schema)
        yield schema
        conn.execute(f"DROP SCHEMA {schema} CASCADE")


@pytest.mark.parametrize("command", [["show"], ["verify", "--machine", PY],
                                     ["export", "--to", "jsonl", "-o", "-"]])
def test_an_entry_row_that_does_not_parse_names_thread_and_idx(
    capsys: pytest.CaptureFixture[str], postgres: Any, broken_schema: str, command: list[str]
) -> None:
    url = postgres.url(query=f"schema={broken_schema}") + "#fork"
    line = _bad(capsys, command[0], url, *command[1:])
    assert "thread 'fork' idx 2" in line and "invalid JSON" in line


def test_no_line_the_command_writes_holds_the_password(capsys: pytest.CaptureFixture[str], postgres: Any) -> None:
    """Whatever a message quotes (a library error that repeats the raw source, a table cell),
    the command writes each URL of its command line in its display form: ``verify URL`` of every
    thread, its per-thread table and its JSON."""
    for extra in ([], ["--json"]):
        code, out, err = run(capsys, "verify", postgres.url(), "--machine", PY, "--workers", "1", *extra)
        assert code in (0, 2)
        assert SECRET not in out + err and pg_server.READER_PASSWORD not in out + err
        assert display_address(postgres.url()) in out + err


def test_read_log_and_compare_take_a_url_with_a_thread(url: str) -> None:
    """``read_log("URL#THREAD")`` is the thread, as ``STORE#THREAD`` is for the file; ``compare``
    of two such URLs streams their rows and finds the fork the file's threads show."""
    from agentscope.forks import compare
    from agentscope.stores import read_log

    assert read_log(f"{url}#fork").entries == read_log(f"{SQLITE}#fork").entries
    diff = compare(f"{url}#main", f"{url}#fork")
    assert (diff.kind, diff.common_prefix, diff.left_length, diff.right_length) == ("fork", 18, 91, 52)
    assert diff.names == ("main", "fork")


def test_coverage_fork_tree_and_whatif_read_postgres_as_the_file(url: str) -> None:
    """The library's store-wide questions take the URL where they take the file, with the same
    answers: coverage (through verify_store's workers and with a live machine), the fork tree
    found from the copied prefixes, what-if."""
    import agentscope as asc
    from agentscope.examples.python_machines import triage_machine

    for machine in (PY, triage_machine()):
        db, file = asc.coverage(url, machine, max_workers=1), asc.coverage(str(SQLITE), machine, max_workers=1)
        assert db.states.equals(file.states) and db.transitions.equals(file.transitions)
    assert asc.fork_tree(url).equals(asc.fork_tree(str(SQLITE)))
    db_w, file_w = asc.whatif(url, PY, max_workers=1), asc.whatif(str(SQLITE), PY, max_workers=1)
    assert db_w.df.equals(file_w.df) and db_w.identical

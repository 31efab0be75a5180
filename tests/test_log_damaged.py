"""Damaged and odd inputs: era sniffing, torn JSONL, threads on single logs, unreadable sources.

Every input is built here, and every test asserts the exact error (class, file, entry, line,
field) or the exact entries kept.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agentscope.cli import main
from agentscope.errors import (
    DamagedStoreError,
    EntryValidationError,
    IncompleteRecordError,
    LogFormatError,
    LogReadWarning,
    ThreadNotFoundError,
    UnreadableSourceError,
)
from agentscope.log import read_log, read_threads
from tests.conftest import MACHINES, REPO

COUNTER = f"{MACHINES / 'counter.mjs'}:counterMachine"


def entries(n: int, *, init: bool = True, **extra_at: dict[str, Any]) -> list[dict[str, Any]]:
    """``n`` Era-C entries of machine ``m``; ``extra_at={"3": {...}}`` merges keys into entry 3."""
    out = []
    for i in range(n):
        event_type = "@agent.init" if i == 0 and init else "INC"
        out.append({
            "schemaVersion": 1,
            "id": f"evt_{i:08d}",
            "index": i,
            "recordedAt": f"2026-01-01T00:00:{i % 60:02d}.000Z",
            "machineId": "m",
            "machineVersion": "v1",
            "event": {"type": event_type},
            **extra_at.get(str(i), {}),
        })
    return out


def jsonl(items: list[dict[str, Any]]) -> list[str]:
    return [json.dumps(e, separators=(",", ":")) for e in items]


# -- era sniffing (spec §0, §1.1, §1.3) --------------------------------------------------------------


@pytest.mark.parametrize("extra", [
    {"correlationId": "c-1"},
    {"verification": {"stateHash": "abc", "effectsHash": "def"}},
])
def test_era_b_keys_on_one_entry_do_not_make_an_era_c_log_legacy(extra: dict[str, Any]) -> None:
    items = entries(5, **{"3": extra})
    log = read_log(items)
    assert log.era == "C" and log.entries == items
    collected = read_log(items, errors="collect")
    assert len(collected) == 5 and len(collected.problems) == 0


def test_a_log_missing_its_init_entry_gets_the_section_1_3_error() -> None:
    items = entries(4, init=False)
    with pytest.raises(EntryValidationError) as info:
        read_log(items)
    err = info.value
    assert (err.index, err.field) == (0, "event.type")
    assert err.detail == "Event log must start with the reserved '@agent.init' entry; found 'INC'."
    log = read_log(items, errors="collect")
    assert log.era == "C" and len(log) == 4  # nothing dropped
    assert list(log.problems["message"].str.contains("found 'INC'")) == [True]


def test_a_log_missing_its_init_with_one_correlation_id_is_still_not_read_as_era_b_elsewhere() -> None:
    # an Era-C log (init present) with Era-B keys everywhere stays Era C
    items = entries(3, **{str(i): {"correlationId": "x", "verification": {"stateHash": "h", "effectsHash": "e"}}
                          for i in range(3)})
    assert read_log(items).era == "C"


def test_a_real_era_b_log_is_still_era_b() -> None:
    items = entries(3, init=False, **{str(i): {"verification": {"stateHash": "h", "effectsHash": "e"}}
                                      for i in range(3)})
    assert read_log(items).era == "B"


def test_era_c_jsonl_with_correlation_id_through_the_file_reader(tmp_path: Path) -> None:
    p = tmp_path / "log.jsonl"
    p.write_text("\n".join(jsonl(entries(6, **{"5": {"correlationId": "c"}}))) + "\n")
    log = read_log(p)
    assert log.era == "C" and len(log) == 6


# -- torn JSONL ---------------------------------------------------------------------------------------


def torn_tail(n: int = 17, cut: int = 30) -> bytes:
    lines = jsonl(entries(n))
    return ("\n".join(lines[:-1]) + "\n" + lines[-1][:cut]).encode()


def test_torn_final_record_raises_with_its_line(tmp_path: Path) -> None:
    p = tmp_path / "log.jsonl"
    p.write_bytes(torn_tail())
    with pytest.raises(IncompleteRecordError) as info:
        read_log(p)
    err = info.value
    assert "incomplete final record (line 17, no trailing newline)" in str(err)
    assert (err.source, err.index, err.line) == (str(p), 16, 17)


def test_torn_final_record_collect_keeps_the_entries_before_it_and_warns(tmp_path: Path) -> None:
    p = tmp_path / "log.jsonl"
    p.write_bytes(torn_tail())
    with pytest.warns(LogReadWarning, match=r"incomplete final record \(line 17, no trailing newline\)"):
        log = read_log(p, errors="collect")
    assert log.entries == entries(17)[:16]
    (row,) = log.problems.to_dict("records")
    assert (row["index"], row["line"], row["kind"]) == (16, 17, "incomplete-record")


def test_a_complete_final_record_without_newline_is_fine() -> None:
    data = "\n".join(jsonl(entries(5))).encode()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert len(read_log(data)) == 5


def test_torn_line_then_a_full_copy_never_loses_the_entry() -> None:
    lines = jsonl(entries(10))
    torn = [*lines[:4], lines[4][:41], *lines[4:]]  # crash mid-append of entry 4, then a rewrite
    data = ("\n".join(torn) + "\n").encode()
    with pytest.raises(IncompleteRecordError) as info:
        read_log(data)
    assert (info.value.index, info.value.line) == (4, 5)
    assert "line 6 repeats it in full" in str(info.value)
    log = read_log(data, errors="collect")
    assert log.entries == entries(10)  # the full copy is entry 4; nothing is missing
    assert list(log.problems["kind"]) == ["incomplete-record"] and list(log.problems["line"]) == [5]


def test_torn_record_glued_to_its_rewrite_on_one_line() -> None:
    lines = jsonl(entries(10))
    glued = [*lines[:4], lines[4][:41] + lines[4], *lines[5:]]
    data = ("\n".join(glued) + "\n").encode()
    with pytest.raises(IncompleteRecordError, match="complete record at column 42"):
        read_log(data)
    log = read_log(data, errors="collect")
    assert log.entries == entries(10)
    assert list(log.problems["line"]) == [5]


def test_a_lost_middle_entry_is_reported_and_the_rest_keep_their_positions() -> None:
    lines = jsonl(entries(10))
    lost = [*lines[:4], lines[4][:41], *lines[5:]]
    log = read_log(("\n".join(lost) + "\n").encode(), errors="collect")
    assert [e["index"] for e in log.entries] == [0, 1, 2, 3, 5, 6, 7, 8, 9]
    # one row for the broken line at entry 4; no cascade of contiguity errors after it
    assert list(log.problems["index"]) == [4] and list(log.problems["line"]) == [5]


def test_torn_final_record_of_a_large_log_goes_through_the_exact_reader(tmp_path: Path) -> None:
    from agentscope.log.fast import FAST_MIN_BYTES

    n = FAST_MIN_BYTES // 150 + 20
    p = tmp_path / "big.jsonl"
    p.write_bytes(torn_tail(n, 50))
    assert p.stat().st_size > FAST_MIN_BYTES
    with pytest.raises(IncompleteRecordError, match=rf"incomplete final record \(line {n}, no trailing newline\)"):
        read_log(p)
    with pytest.warns(LogReadWarning):
        assert len(read_log(p, errors="collect")) == n - 1


# -- thread= on single logs ------------------------------------------------------------------------------


def test_thread_on_a_json_log_is_thread_not_found(tmp_path: Path) -> None:
    p = tmp_path / "a.json"
    p.write_text(json.dumps(entries(3)))
    for source in (p, str(p), p.read_bytes(), entries(3)):
        with pytest.raises(ThreadNotFoundError, match="no thread 'nope'"):
            read_log(source, thread="nope")
    q = tmp_path / "a.jsonl"
    q.write_text("\n".join(jsonl(entries(3))) + "\n")
    with pytest.raises(ThreadNotFoundError) as info:
        read_log(q, thread="main")
    assert info.value.source == str(q)
    assert len(read_log(p)) == 3  # no thread: fine


def test_cli_thread_on_a_json_log_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    p = tmp_path / "a.json"
    p.write_text(json.dumps(entries(3)))
    for argv in (["verify", str(p), "--thread", "nope", "--machine", COUNTER],
                 ["show", str(p), "--thread", "nope"], ["show", f"{p}#nope"],
                 ["export", str(p), "--thread", "nope", "--to", "jsonl", "-o", str(tmp_path / "o.jsonl")]):
        assert main(argv) == 2, argv
        err = capsys.readouterr().err.strip().splitlines()
        assert err[-1].startswith("agentscope: error: ") and "no thread 'nope'" in err[-1], err
        assert "store" not in err[-1].split("no thread")[0]


# -- a str that is not a path ------------------------------------------------------------------------------


def test_json_text_as_str_gets_a_typed_error() -> None:
    text = json.dumps(entries(40))
    assert len(text) > 4096
    with pytest.raises(UnreadableSourceError, match="looks like JSON text"):
        read_log(text)
    short = json.dumps(entries(1))  # short enough to be a file name, but no such file
    with pytest.raises(LogFormatError, match="looks like JSON text"):
        read_log(short)
    with pytest.raises(UnreadableSourceError):
        read_log("x" * 300)  # one name component longer than NAME_MAX
    with pytest.raises(UnreadableSourceError):
        read_log("bad\x00name.json")
    assert len(read_log(text.encode())) == 40  # the documented way


# -- unreadable inputs and unwritable outputs --------------------------------------------------------------

needs_setpriv = pytest.mark.skipif(
    os.name != "posix" or (os.geteuid() == 0 and shutil.which("setpriv") is None),
    reason="needs a non-root user to be denied",
)


@pytest.fixture
def shared_dir() -> Iterator[Path]:
    """A world-readable directory (pytest's tmp_path is private to its user)."""
    d = Path(tempfile.mkdtemp(prefix="agentscope-perm-"))
    d.chmod(0o755)
    try:
        yield d
    finally:
        for p in d.rglob("*"):
            p.chmod(0o755)
        shutil.rmtree(d)


def run_unprivileged(code: str, *args: str) -> subprocess.CompletedProcess[str]:
    """Run Python ``code`` as ``nobody`` when we are root (root ignores file modes)."""
    prefix = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"] if os.geteuid() == 0 else []
    env = {**os.environ, "PYTHONPATH": str(REPO), "HOME": "/tmp"}
    return subprocess.run([*prefix, sys.executable, "-c", code, *args], capture_output=True, text=True,
                          env=env, cwd="/tmp", timeout=120)


@needs_setpriv
def test_unreadable_input_is_one_line_exit_2(shared_dir: Path) -> None:
    p = shared_dir / "secret.json"
    p.write_text(json.dumps(entries(3)))
    p.chmod(0o000)
    probe = run_unprivileged(
        "import sys\nfrom agentscope.errors import UnreadableSourceError\nfrom agentscope.log import read_log\n"
        "try:\n    read_log(sys.argv[1])\nexcept UnreadableSourceError as e:\n    print(type(e).__name__, e)\n",
        str(p),
    )
    assert probe.returncode == 0, probe.stderr
    assert probe.stdout.strip() == f"UnreadableSourceError {p}: cannot read the file: Permission denied"
    cli = run_unprivileged("import sys\nfrom agentscope.cli import main\nsys.exit(main(sys.argv[1:]))",
                           "show", str(p))
    assert cli.returncode == 2, cli.stderr
    assert "Traceback" not in cli.stderr
    assert cli.stderr.strip() == f"agentscope: error: {p}: cannot read the file: Permission denied"


@needs_setpriv
def test_unwritable_outputs_are_one_line_exit_2(shared_dir: Path) -> None:
    p = shared_dir / "log.json"
    p.write_text(json.dumps(entries(3)))
    locked = shared_dir / "locked"
    locked.mkdir()
    locked.chmod(0o555)
    main_py = "import sys\nfrom agentscope.cli import main\nsys.exit(main(sys.argv[1:]))"
    for argv in (["export", str(p), "--to", "jsonl", "-o", str(locked / "out.jsonl")],
                 ["export", str(p), "--to", "csv", "-o", str(locked / "out.csv")],
                 ["show", str(p), "--html", str(locked / "out.html")]):
        cli = run_unprivileged(main_py, *argv)
        assert cli.returncode == 2, (argv, cli.stderr)
        assert "Traceback" not in cli.stderr
        lines = cli.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("agentscope: error: ") and "Permission denied" in lines[0]
        assert str(locked) in lines[0]


# -- damaged SQLite stores (spec §5.2) ---------------------------------------------------------------------


def build_store(path: Path, threads: tuple[str, ...] = ("a", "b", "c"), n: int = 120) -> None:
    """A §5.2 store: ``n`` entries per thread, each ~300 bytes, so a thread spans many pages."""
    con = sqlite3.connect(path)
    con.execute('CREATE TABLE "agent_event_log" (thread_id TEXT NOT NULL, idx INTEGER NOT NULL, '
                "entry_id TEXT NOT NULL, entry TEXT NOT NULL, PRIMARY KEY (thread_id, idx))")
    con.execute('CREATE UNIQUE INDEX "agent_event_log_thread_entry_id" ON "agent_event_log" (thread_id, entry_id)')
    for t in threads:
        for e in entries(n):
            e["event"]["note"] = f"{t}-{e['index']:05d}-" + "x" * 200
            con.execute("INSERT INTO agent_event_log VALUES (?,?,?,?)",
                        (t, e["index"], e["id"], json.dumps(e, separators=(",", ":"))))
    con.commit()
    con.close()


def leaf_rows(src: Path) -> list[tuple[int, list[tuple[str, int]]]]:
    """The table's leaf pages in b-tree order, each with the ``(thread_id, idx)`` rows it holds.

    From SQLite's own ``dbstat`` (the rows of a rowid table are spread over its leaves in
    rowid order, ``ncell`` per leaf): the oracle for what a zeroed page takes away.
    """
    con = sqlite3.connect(src)
    leaves = con.execute("SELECT pageno, ncell FROM dbstat WHERE name='agent_event_log' AND "
                         "pagetype='leaf' ORDER BY path").fetchall()
    rows = con.execute("SELECT thread_id, idx FROM agent_event_log ORDER BY rowid").fetchall()
    con.close()
    out, pos = [], 0
    for page, n in leaves:
        out.append((page, rows[pos : pos + n]))
        pos += n
    assert pos == len(rows)
    return out


def zero_leaf_holding(src: Path, dst: Path, thread: str, idx: int) -> int:
    """Copy ``src`` to ``dst`` with the leaf page holding row ``(thread, idx)`` zeroed; return
    the last idx of ``thread`` before the first row of that thread the page held."""
    page, held = next((p, r) for p, r in leaf_rows(src) if (thread, idx) in r)
    assert page > 1  # never page 1 (the header and schema)
    data = bytearray(src.read_bytes())
    size = int.from_bytes(data[16:18], "big")
    data[(page - 1) * size : page * size] = bytes(size)
    dst.write_bytes(bytes(data))
    return min(i for t, i in held if t == thread) - 1


def files_next_to(path: Path) -> list[str]:
    return sorted(p.name for p in path.parent.iterdir())


@pytest.fixture
def damaged_store(tmp_path: Path) -> tuple[Path, int]:
    good = tmp_path / "good.sqlite"
    build_store(good)
    bad = tmp_path / "damaged.sqlite"
    return bad, zero_leaf_holding(good, bad, "b", 60)


def test_read_threads_lists_every_thread_and_marks_the_damaged_one(damaged_store: tuple[Path, int]) -> None:
    path, last = damaged_store
    assert 0 < last < 119
    before, names = path.read_bytes(), files_next_to(path)
    df = read_threads(path)
    assert list(df["thread_id"]) == ["a", "b", "c"]
    assert list(df["length"]) == [120, 120, 120]  # the index still counts every row
    assert list(df["readable"]) == [120, last + 1, 120]
    assert df["error"].iloc[0] is None and df["error"].iloc[2] is None
    assert f"thread 'b' stops after idx {last}" in df["error"].iloc[1]
    assert "database disk image is malformed" in df["error"].iloc[1]
    assert path.read_bytes() == before and files_next_to(path) == names  # read-only


def test_read_log_of_the_damaged_thread(damaged_store: tuple[Path, int]) -> None:
    path, last = damaged_store
    before, names = path.read_bytes(), files_next_to(path)
    with pytest.raises(DamagedStoreError) as info:
        read_log(path, thread="b")
    err = info.value
    assert (err.thread, err.last_idx, err.index, err.source) == ("b", last, last + 1, str(path))
    assert f"stops after idx {last}; {last + 1} of 120 rows are readable" in str(err)
    with pytest.warns(LogReadWarning, match=f"stops after idx {last}"):
        log = read_log(path, thread="b", errors="collect")
    assert [e["index"] for e in log.entries] == list(range(last + 1))
    (row,) = log.problems.to_dict("records")
    assert (row["kind"], row["index"]) == ("damaged-store", last + 1)
    # the other threads are whole
    assert len(read_log(path, thread="a")) == 120 and len(read_log(path, thread="c")) == 120
    assert path.read_bytes() == before and files_next_to(path) == names


def test_a_database_without_the_layout_lists_its_tables(tmp_path: Path) -> None:
    path = tmp_path / "other.sqlite"
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE users (id INTEGER, name TEXT)")
    con.execute("CREATE TABLE events (thread TEXT, payload TEXT)")
    con.commit()
    con.close()
    for call in (lambda: read_log(path), lambda: read_threads(path)):
        with pytest.raises(LogFormatError, match=r"tables found: events, users$"):
            call()
    empty = tmp_path / "empty.sqlite"
    sqlite3.connect(empty).execute("CREATE TABLE t (x)").connection.close()
    with pytest.raises(LogFormatError, match="tables found: t"):
        read_log(empty)


TRIAGE_PY = "py:agentscope.examples.python_machines:triage_machine"


def test_cli_verify_store_reports_the_damaged_thread_and_checks_the_rest(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from tests.conftest import FIXTURES

    src = FIXTURES / "g_triage.sqlite"
    bad = tmp_path / "triage.sqlite"
    last = zero_leaf_holding(src, bad, "second", 20)
    assert 0 < last < 39
    before = bad.read_bytes()
    code = main(["verify", str(bad), "--machine", TRIAGE_PY, "--workers", "1", "--json"])
    out = json.loads(capsys.readouterr().out)
    assert code == 2
    rows = {r["thread"]: r for r in out["results"]}
    assert set(rows) == {"fork", "main", "second"}
    assert rows["main"]["verified"] and rows["fork"]["verified"] and rows["main"]["error"] is None
    err = rows["second"]["error"]
    assert err.startswith("DamagedStoreError: ") and not rows["second"]["verified"]
    assert f"thread 'second' stops after idx {last}" in err
    assert bad.read_bytes() == before and files_next_to(bad) == ["triage.sqlite"]
    # the table form says the same, one line per thread, exit 2
    assert main(["verify", str(bad), "--machine", TRIAGE_PY, "--workers", "1"]) == 2
    text_out = capsys.readouterr().out
    assert "DamagedStoreError" in text_out and "2/3 threads verified" in text_out


def test_a_text_stream_with_a_lone_surrogate_reads_losslessly() -> None:
    import io

    items = entries(2, **{"1": {"event": {"type": "INC", "note": "half \ud83d"}}})
    text = json.dumps(items, ensure_ascii=False)  # the raw lone surrogate, not an escape
    log = read_log(io.StringIO(text))
    assert log.entries == items and log.entries[1]["event"]["note"] == "half \ud83d"


def test_cli_threads_marks_the_damaged_thread(
    damaged_store: tuple[Path, int], capsys: pytest.CaptureFixture[str]
) -> None:
    path, last = damaged_store
    assert main(["threads", str(path)]) == 0
    out = capsys.readouterr().out
    assert f"stops after idx {last}" in out and "readable" in out
    assert main(["threads", str(path), "--json"]) == 0
    rows = {r["thread_id"]: r for r in json.loads(capsys.readouterr().out)["threads"]}
    assert rows["a"]["error"] is None and rows["b"]["readable"] == last + 1
    assert f"thread 'b' stops after idx {last}" in rows["b"]["error"]

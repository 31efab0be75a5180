"""Live follow: a timeline kept up to date with a store or file a real writer appends to.

Writers are separate processes: the Recorder's live SQLite writer (WAL and rollback-journal
modes) and a plain file append for JSON Lines that writes each line in two pieces. The follower
runs in a bounded loop that stops by itself (idle timeout plus an overall deadline).
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

import agentscope
from agentscope.cli import main
from agentscope.examples.python_machines import counter_machine
from agentscope.follow import follow

N = 120

WRITER = """
import sys, time
from agentscope import Recorder
from agentscope.examples.python_machines import counter_machine
db, n, mode = sys.argv[1], int(sys.argv[2]), sys.argv[3]
r = Recorder(counter_machine(), {"start": 0}, execution_id="exec-live")
r.to_sqlite(db, "main", live=True, wal=mode == "wal")
for i in range(n - 1):
    r.send({"type": "TOGGLE"} if i % 5 == 4 else {"type": "INC", "by": i})
    time.sleep(0.004)
r.close()
"""

JSONL_WRITER = """
import json, sys, time
from agentscope import Recorder
from agentscope.examples.python_machines import counter_machine
path, n = sys.argv[1], int(sys.argv[2])
r = Recorder(counter_machine(), {"start": 0}, execution_id="exec-live")
for i in range(n - 1):
    r.send({"type": "TOGGLE"} if i % 5 == 4 else {"type": "INC", "by": i})
with open(path, "ab", buffering=0) as fh:
    for e in r.entries:
        line = json.dumps(e, ensure_ascii=False, separators=(",", ":")).encode() + b"\\n"
        cut = len(line) // 2
        fh.write(line[:cut])  # half a line: a write in progress the follower must wait on
        time.sleep(0.003)
        fh.write(line[cut:])
        time.sleep(0.002)
"""


def _spawn(tmp_path: Path, source: str, *args: str) -> subprocess.Popen[bytes]:
    script = tmp_path / "writer.py"
    script.write_text(source, encoding="utf-8")
    return subprocess.Popen([sys.executable, str(script), *args])


def _follow_all(follower: Any, writer: subprocess.Popen[bytes], n: int = N) -> list[Any]:
    """Every frame until ``n`` were seen: a condition, never an idle bound (a writer started
    late on a loaded machine is still seen); the deadline only keeps a broken run finite."""
    deadline = time.monotonic() + 300
    frames: list[Any] = []
    stop = lambda: len(frames) >= n or time.monotonic() > deadline  # noqa: E731
    for fr in follower.frames(interval=0.01, stop=stop):
        frames.append(fr)
    assert writer.wait(timeout=300) == 0
    return frames


def _recorded(tmp_path: Path) -> list[dict[str, Any]]:
    r = agentscope.Recorder(counter_machine(), {"start": 0}, execution_id="exec-live")
    for i in range(N - 1):
        r.send({"type": "TOGGLE"} if i % 5 == 4 else {"type": "INC", "by": i})
    return r.entries


@pytest.mark.parametrize("mode", ["wal", "rollback"])
def test_follower_sees_every_entry_of_a_real_sqlite_writer_once_in_order(tmp_path: Path, mode: str) -> None:
    db = tmp_path / "store.sqlite"
    writer = _spawn(tmp_path, WRITER, str(db), str(N), mode)
    m = counter_machine()
    # start while the writer runs (the store may not even exist yet)
    follower = follow(m, db, thread="main")
    first_read = len(follower.timeline)
    frames = _follow_all(follower, writer)
    assert follower.problem is None
    assert [f.index for f in frames] == list(range(N))  # every entry exactly once, in order
    assert {f.verdict.value for f in frames} == {"verified"}
    assert first_read < N and follower.polls > 1  # it really followed a growing store
    # the same entries and states as reading and replaying the finished store from scratch
    final = agentscope.read_log(db, thread="main")
    assert [f.entry for f in frames] == final.entries
    again = agentscope.Timeline(m, final)
    assert [f.value for f in frames] == [again[i].value for i in range(N)]
    assert [f.context for f in frames] == [again[i].context for i in range(N)]


def test_follower_of_a_jsonl_file_waits_on_half_written_lines(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    writer = _spawn(tmp_path, JSONL_WRITER, str(path), str(N))
    follower = follow(counter_machine(), path)
    frames = _follow_all(follower, writer)
    assert follower.problem is None
    assert [f.index for f in frames] == list(range(N))
    assert {f.verdict.value for f in frames} == {"verified"}
    assert [f.entry for f in frames] == _recorded(tmp_path)


def _digest(d: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(d.iterdir())}


def _make_store(d: Path, *, wal: bool) -> Path:
    db = d / "store.sqlite"
    r = agentscope.Recorder(counter_machine(), {"start": 0}, execution_id="exec-live")
    for i in range(10):
        r.send({"type": "INC", "by": i})
    r.to_sqlite(db, "main", wal=wal)
    return db


@pytest.mark.parametrize("layout", ["rollback", "wal-clean", "wal-live-files", "wal-without-shm"])
def test_following_never_writes_beside_the_store(tmp_path: Path, layout: str) -> None:
    d = tmp_path / "store"
    d.mkdir()
    db = _make_store(d, wal=layout != "rollback")
    holder = None
    if layout in ("wal-live-files", "wal-without-shm"):
        # a host that keeps its connection open has -wal and -shm beside the file
        holder = sqlite3.connect(str(db))
        holder.execute("PRAGMA wal_autocheckpoint=0")
        holder.execute("INSERT INTO agent_event_log SELECT 'other', idx, entry_id, entry "
                       "FROM agent_event_log WHERE thread_id = 'main'")
        holder.commit()
        assert (d / "store.sqlite-wal").exists() and (d / "store.sqlite-shm").exists()
        if layout == "wal-without-shm":
            (d / "store.sqlite-shm").unlink()  # e.g. copied from a running host
            holder.close()
            holder = None
            assert not (d / "store.sqlite-shm").exists()
    before = _digest(d)
    follower = follow(counter_machine(), db, thread="main")
    for _ in range(3):
        assert len(follower.poll()) == 0
        time.sleep(0.02)
    assert len(follower.timeline) == 11
    assert follower.timeline.report.ok
    after = _digest(d)
    assert sorted(after) == sorted(before)  # no file created beside the store
    if layout == "wal-live-files":
        # a live host's -shm is SQLite's shared-memory index, not data: every WAL reader must
        # take a read mark in it (the host's own readers too), so only it may change
        before.pop("store.sqlite-shm")
        after.pop("store.sqlite-shm")
    assert after == before  # the store and its -wal: SHA-256 unchanged
    if holder is not None:
        holder.close()


def test_a_thread_rewritten_or_truncated_under_the_follower_is_reported(tmp_path: Path) -> None:
    d = tmp_path / "s"
    d.mkdir()
    db = _make_store(d, wal=False)
    follower = follow(counter_machine(), db, thread="main")
    assert len(follower.timeline) == 11
    con = sqlite3.connect(str(db))
    # a fork written in place: the entry at index 10 changes (same id, another event)
    row = json.loads(con.execute("SELECT entry FROM agent_event_log WHERE idx=10").fetchone()[0])
    row["event"] = {"type": "DEC", "by": 1}
    con.execute("UPDATE agent_event_log SET entry=? WHERE idx=10", (json.dumps(row),))
    con.commit()
    assert len(follower.poll()) == 0
    assert follower.problem is not None and follower.problem.kind == "rewritten"
    assert follower.problem.index == 10
    assert len(follower.timeline) == 11  # nothing merged
    # truncation: a new follower, then the thread's tail is deleted
    follower = follow(counter_machine(), db, thread="main")
    con.execute("DELETE FROM agent_event_log WHERE idx >= 5")
    con.commit()
    con.close()
    follower.poll()
    assert follower.problem is not None and follower.problem.kind == "truncated"


def test_a_jsonl_file_truncated_or_rewritten_is_reported(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    entries = _recorded(tmp_path)[:6]
    text = "".join(json.dumps(e) + "\n" for e in entries)
    path.write_text(text, encoding="utf-8")
    follower = follow(counter_machine(), path)
    assert len(follower.timeline) == 6
    path.write_text(text[: len(text) // 2], encoding="utf-8")
    follower.poll()
    assert follower.problem is not None and follower.problem.kind == "truncated"
    path.write_text(text, encoding="utf-8")
    follower = follow(counter_machine(), path)
    edited = dict(entries[5], event={"type": "DEC", "by": 3})
    path.write_text("".join(json.dumps(e) + "\n" for e in [*entries[:5], edited, entries[5]]),
                    encoding="utf-8")
    follower.poll()
    assert follower.problem is not None and follower.problem.kind == "rewritten"


def test_timeline_follow_continues_an_open_timeline(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    entries = _recorded(tmp_path)[:20]
    path.write_text("".join(json.dumps(e) + "\n" for e in entries[:8]), encoding="utf-8")
    tl = agentscope.Timeline(counter_machine(), agentscope.read_log(path))
    follower = tl.follow()
    assert len(follower.poll()) == 0
    with path.open("a", encoding="utf-8") as fh:
        fh.write("".join(json.dumps(e) + "\n" for e in entries[8:15]))
        fh.write(json.dumps(entries[15])[:30])  # incomplete: waited on
    assert follower.poll() == range(8, 15)
    assert follower.pending
    with path.open("a", encoding="utf-8") as fh:
        fh.write(json.dumps(entries[15])[30:] + "\n")
    assert follower.poll() == range(15, 16)
    assert len(tl) == 16 and tl[15].verdict.value == "verified"


def test_watch_prints_one_json_object_per_entry_and_exits_1_on_a_mismatch(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "run.jsonl"
    entries = _recorded(tmp_path)[:12]
    path.write_text("".join(json.dumps(e) + "\n" for e in entries), encoding="utf-8")
    spec = "py:agentscope.examples.python_machines:counter_machine"
    code = main(["watch", str(path), "--machine", spec, "--json", "--idle-exit", "0.2",
                 "--interval", "0.05"])
    out = capsys.readouterr()
    assert code == 0
    rows = [json.loads(line) for line in out.out.splitlines()]
    assert [r["index"] for r in rows] == list(range(12))
    assert [r["id"] for r in rows] == [e["id"] for e in entries]
    assert [r["event_type"] for r in rows] == [e["event"]["type"] for e in entries]
    assert {r["verdict"] for r in rows} == {"verified"}
    assert rows[-1]["value"] == agentscope.Timeline(counter_machine(), entries)[11].value
    assert "12 entries (12 verified); stopped: idle" in out.err
    tampered = [dict(e) for e in entries]
    tampered[7] = {**tampered[7], "verification": {"stateHash": "deadbeef"}}
    path.write_text("".join(json.dumps(e) + "\n" for e in tampered), encoding="utf-8")
    assert main(["watch", str(path), "--machine", spec, "--idle-exit", "0.2"]) == 1
    text = capsys.readouterr().out
    assert "1 mismatch" in text and "      7  INC" in text
    assert main(["watch", str(tmp_path / "store.sqlite"), "--idle-exit", "0"]) == 0  # nothing yet
    capsys.readouterr()
    db = _make_store(tmp_path, wal=True)
    assert main(["watch", str(db), "--idle-exit", "0"]) == 0  # one thread: as read_log, no #THREAD
    capsys.readouterr()
    con = sqlite3.connect(db)
    con.execute("INSERT INTO agent_event_log SELECT 'other', idx, entry_id, entry FROM agent_event_log")
    con.commit()
    con.close()
    assert main(["watch", str(db), "--idle-exit", "0"]) == 2  # several threads: name one
    assert "#THREAD" in capsys.readouterr().err


def test_timetravel_follow_grows_the_slider_and_scrubbing_back_stops_following(tmp_path: Path) -> None:
    pytest.importorskip("ipywidgets")
    path = tmp_path / "run.jsonl"
    entries = _recorded(tmp_path)[:30]
    path.write_text("".join(json.dumps(e) + "\n" for e in entries[:10]), encoding="utf-8")
    view = agentscope.TimeTravel(counter_machine(), str(path), follow=True)
    assert view.n == 10 and view._slider.max == 9 and view._tail.value
    assert view._tail in view.children[1].children  # following: the toggle is among the controls
    with path.open("a", encoding="utf-8") as fh:
        fh.write("".join(json.dumps(e) + "\n" for e in entries[10:20]))
    assert view.poll() == range(10, 20)
    assert (view.n, view._slider.max, view.step) == (20, 19, 19)  # follows the tail
    assert view.frame.entry == entries[19] and view.frame.verdict.value == "verified"
    view.go(5)  # scrub back: following stops
    assert not view._tail.value
    with path.open("a", encoding="utf-8") as fh:
        fh.write("".join(json.dumps(e) + "\n" for e in entries[20:25]))
    assert view.poll() == range(20, 25)
    assert (view.n, view._slider.max, view.step) == (25, 24, 5)
    view._tail.value = True  # re-enabled: the next entries are shown as they come
    with path.open("a", encoding="utf-8") as fh:
        fh.write("".join(json.dumps(e) + "\n" for e in entries[25:30]))
    view.poll()
    assert view.step == 29
    tampered = dict(entries[29], id="evt_x", index=30, verification={"stateHash": "00000000"})
    with path.open("a", encoding="utf-8") as fh:
        fh.write(json.dumps(tampered) + "\n")
    view.poll()
    assert view.mismatch_indices == [30] and view.marks[30] == "mismatch"


def test_timeline_follow_continues_from_a_store_read_with_read_log(tmp_path: Path) -> None:
    db = tmp_path / "store.sqlite"
    r = agentscope.Recorder(counter_machine(), {"start": 0}, execution_id="exec-live")
    r.send({"type": "INC", "by": 1})
    r.to_sqlite(db, "main", live=True, wal=True)
    tl = agentscope.Timeline(counter_machine(), agentscope.read_log(db, thread="main"))
    follower = tl.follow()
    for i in range(5):
        r.send({"type": "INC", "by": 10 + i})
    assert follower.poll() == range(2, 7)
    assert [tl[i].context["count"] for i in range(7)] == [0, 1, 11, 22, 34, 47, 61]
    assert {tl[i].verdict.value for i in range(7)} == {"verified"}
    r.close()


# -- one follow for every source: the follow defects of the hardening issue ------------------------


def test_a_bom_jsonl_log_is_read_alike_by_verify_and_watch(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "bom.jsonl"
    entries = _recorded(tmp_path)[:6]
    path.write_bytes(b"\xef\xbb\xbf" + "".join(json.dumps(e) + "\n" for e in entries).encode())
    spec = "py:agentscope.examples.python_machines:counter_machine"
    assert main(["verify", str(path), "--machine", spec]) == 0
    capsys.readouterr()
    assert main(["watch", str(path), "--machine", spec, "--idle-exit", "0"]) == 0
    out = capsys.readouterr()
    assert "6 entries" in out.out and "BOM" not in out.out + out.err
    follower = follow(counter_machine(), path)
    assert [dict(e) for e in follower.timeline.entries] == entries and follower.problem is None
    with path.open("ab") as fh:
        fh.write((json.dumps(_recorded(tmp_path)[6]) + "\n").encode())
    assert follower.poll() == range(6, 7)


@pytest.mark.parametrize("how", ["deleted", "replaced"])
def test_a_followed_store_deleted_or_replaced_is_a_problem_and_watch_exits_non_zero(
    tmp_path: Path, how: str, capsys: pytest.CaptureFixture[str]
) -> None:
    d = tmp_path / "s"
    d.mkdir()
    db = _make_store(d, wal=False)
    follower = follow(counter_machine(), db, thread="main")
    assert len(follower.timeline) == 11 and len(follower.poll()) == 0
    if how == "deleted":
        db.unlink()
    else:
        other = tmp_path / "other"
        other.mkdir()
        os.replace(_make_store(other, wal=False), db)
    deadline = time.monotonic() + 60
    while follower.problem is None and time.monotonic() < deadline:
        follower.poll()
        time.sleep(0.01)
    assert follower.problem is not None
    assert follower.problem.kind == ("removed" if how == "deleted" else "replaced")
    assert str(db) in str(follower.problem)
    assert len(follower.timeline) == 11  # nothing merged
    # watch: the store read, then gone, is not "does not exist yet" with exit 0
    (tmp_path / "w").mkdir()
    db2 = _make_store(tmp_path / "w", wal=False)
    watch = subprocess.Popen(
        [sys.executable, "-m", "agentscope", "watch", str(db2), "--interval", "0.05",
         "--idle-exit", "600"], stdout=subprocess.PIPE, text=True,
        cwd=str(Path(__file__).resolve().parents[1]))
    assert watch.stdout is not None
    timer = __import__("threading").Timer(300, watch.kill)  # only keeps a broken run finite
    timer.start()
    lines = [watch.stdout.readline() for _ in range(11)]  # a condition: all 11 entries printed
    assert lines[-1].split()[0] == "10", lines
    db2.unlink()
    rest = watch.stdout.read()
    timer.cancel()
    assert watch.wait(timeout=120) == 1, rest
    run = subprocess.CompletedProcess(watch.args, 1, rest, "")
    assert "removed" in run.stdout and "does not exist yet" not in run.stdout


def test_a_hot_journal_gets_the_same_answer_from_every_command(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    d = tmp_path / "s"
    d.mkdir()
    db = _make_store(d, wal=False)
    killed = (
        "import os, sqlite3, sys\ncon = sqlite3.connect(sys.argv[1], isolation_level=None)\n"
        "con.execute('PRAGMA cache_size=1')\ncon.execute('BEGIN IMMEDIATE')\n"
        "for i in range(300):\n"
        "    con.execute('INSERT INTO agent_event_log VALUES (?,?,?,?)', ('pad', i, str(i), 'x' * 500))\n"
        "os._exit(0)\n"
    )
    subprocess.run([sys.executable, "-c", killed, str(db)], check=True)
    assert (d / "store.sqlite-journal").stat().st_size > 0  # a hot journal: a writer killed
    before = _digest(d)
    assert main(["threads", str(db)]) == 0
    assert "main" in capsys.readouterr().out
    assert main(["verify", f"{db}#main", "--machine", "py:agentscope.examples.python_machines:counter_machine"]) == 0
    capsys.readouterr()
    assert main(["watch", f"{db}#main", "--idle-exit", "0"]) == 0
    assert "11 entries" in capsys.readouterr().out
    assert _digest(d) == before  # not a byte changed, the journal kept


def test_watch_applies_verify_s_envelope_rules(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "hello.json"
    path.write_text('{"hello":"world"}', encoding="utf-8")
    assert main(["verify", str(path), "--machine",
                 "py:agentscope.examples.python_machines:counter_machine"]) == 2
    verify_err = capsys.readouterr().err.strip()
    assert main(["watch", str(path), "--idle-exit", "0"]) == 2
    out = capsys.readouterr()
    assert out.err.strip() == verify_err and "entries" not in out.out


def test_watch_of_random_bytes_errs_on_stderr_like_every_command(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "noise.bin"
    path.write_bytes(bytes(range(256)) * 4)
    errors = []
    spec = "py:agentscope.examples.python_machines:counter_machine"
    for argv in (["verify", str(path), "--machine", spec], ["show", str(path)],
                 ["watch", str(path), "--idle-exit", "0"]):
        assert main(argv) == 2, argv
        out = capsys.readouterr()
        assert out.out == "", argv
        errors.append(out.err.strip())
    assert len(set(errors)) == 1 and errors[0].startswith("agentscope: error: "), errors

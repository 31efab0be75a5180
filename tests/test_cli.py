"""The ``agentscope`` command end to end on the real fixtures: results, exit codes, JSON, errors."""

from __future__ import annotations

import importlib
import json
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from agentscope.cli import main
from tests.conftest import FIXTURES, MACHINES, REPO, load_json, node_ready

STORE = FIXTURES / "g_triage.sqlite"
FORK_STORE = FIXTURES / "c_fork.sqlite"
COUNTER_LOG = FIXTURES / "a_counter.log.json"
TRIAGE = f"{MACHINES / 'triage.mjs'}:triageMachine"
COUNTER = f"{MACHINES / 'counter.mjs'}:counterMachine"
TICKET = MACHINES / "ticket.mjs"
DEMO_PY = "py:agentscope.examples.python_machines:triage_machine"

needs_node = pytest.mark.skipif(not node_ready(), reason="needs node and `npm ci` (xstate)")


def _has_python_machine(name: str) -> bool:
    try:
        mod = importlib.import_module("agentscope.examples.python_machines")
    except ImportError:
        return False
    return hasattr(mod, name)


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def run_json(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, Any]:
    code, out, _ = run(capsys, *argv, "--json")
    return code, json.loads(out)


def one_line_error(err: str, *needles: str) -> None:
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert lines and lines[-1].startswith("agentscope: error: "), err
    assert "Traceback" not in err
    for needle in needles:
        assert needle in lines[-1], (needle, lines[-1])


@pytest.fixture
def tampered_counter(tmp_path: Path) -> Path:
    entries = load_json("a_counter.log.json")
    assert entries[5]["verification"]["stateHash"] != "deadbeef"
    entries[5]["verification"]["stateHash"] = "deadbeef"
    path = tmp_path / "tampered.log.json"
    path.write_text(json.dumps(entries), encoding="utf-8")
    return path


@pytest.fixture
def tampered_store(tmp_path: Path) -> Path:
    path = tmp_path / "tampered.sqlite"
    shutil.copyfile(STORE, path)
    con = sqlite3.connect(path)
    (text,) = con.execute("SELECT entry FROM agent_event_log WHERE thread_id='second' AND idx=30").fetchone()
    entry = json.loads(text)
    entry["verification"]["stateHash"] = "deadbeef"
    con.execute("UPDATE agent_event_log SET entry=? WHERE thread_id='second' AND idx=30",
                (json.dumps(entry, separators=(",", ":")),))
    con.commit()
    con.close()
    return path


# ---------------------------------------------------------------------------------------------
# threads


def test_threads_json(capsys: pytest.CaptureFixture[str]) -> None:
    code, data = run_json(capsys, "threads", STORE)
    assert code == 0
    got = {t["thread_id"]: t["length"] for t in data["threads"]}
    assert got == {"main": 91, "fork": 52, "second": 40}
    assert {t["machine_id"] for t in data["threads"]} == {"supportTriage"}


def test_threads_human(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "threads", FORK_STORE)
    assert code == 0
    assert "2 thread(s)" in out and "branch" in out and "main" in out
    assert max(len(line) for line in out.splitlines()) <= 120


def test_threads_on_a_json_log_is_bad_input(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "threads", COUNTER_LOG)
    assert code == 2
    one_line_error(err, "a_counter.log.json")


# ---------------------------------------------------------------------------------------------
# verify


@needs_node
def test_verify_log_json(capsys: pytest.CaptureFixture[str]) -> None:
    code, data = run_json(capsys, "verify", COUNTER_LOG, "--machine", COUNTER)
    assert code == 0
    assert data["ok"] is True and data["entries"] == 17
    assert data["counts"]["verified"] == 17 and data["first_mismatch"] is None
    assert data["problems"] == [] and data["mismatches"] == []


@needs_node
def test_verify_tampered_log_names_the_entry(capsys: pytest.CaptureFixture[str], tampered_counter: Path) -> None:
    code, out, _ = run(capsys, "verify", tampered_counter, "--machine", COUNTER)
    assert code == 1
    assert "FAILED" in out
    assert "entry 5 (evt_00000005, DEC)" in out and "deadbeef" in out
    code, data = run_json(capsys, "verify", tampered_counter, "--machine", COUNTER)
    assert code == 1
    assert data["ok"] is False and data["first_mismatch"] == 5 and data["first_mismatch_id"] == "evt_00000005"
    assert [p["index"] for p in data["mismatches"]] == [5]
    assert data["mismatches"][0]["recorded_hash"] == "deadbeef"
    assert data["mismatches"][0]["kind"] == "state-mismatch"
    # the one problems table: the entry's position and id, the recorded hash as `expected`
    assert [(p["index"], p["id"], p["kind"], p["expected"]) for p in data["problems"]] == [
        (5, "evt_00000005", "state-mismatch", "deadbeef")]
    assert data["counts"]["mismatch"] == 1 and data["counts"]["verified"] == 16


@needs_node
def test_verify_strict_passes_on_fully_hashed_log(capsys: pytest.CaptureFixture[str]) -> None:
    code, data = run_json(capsys, "verify", COUNTER_LOG, "--machine", COUNTER, "--strict")
    assert code == 0 and data["ok"]


@needs_node
def test_verify_whole_store(capsys: pytest.CaptureFixture[str]) -> None:
    code, data = run_json(capsys, "verify", STORE, "--machine", TRIAGE, "--workers", "2")
    assert code == 0
    assert data["ok"] is True and data["threads"] == 3 and data["failed"] == 0
    assert {r["thread"]: r["length"] for r in data["results"]} == {"main": 91, "fork": 52, "second": 40}
    assert all(r["verified"] and r["first_mismatch"] is None for r in data["results"])


@needs_node
def test_verify_tampered_store(capsys: pytest.CaptureFixture[str], tampered_store: Path) -> None:
    code, out, _ = run(capsys, "verify", tampered_store, "--machine", TRIAGE, "--workers", "1")
    assert code == 1
    assert "2/3 threads verified" in out
    code, data = run_json(capsys, "verify", tampered_store, "--machine", TRIAGE, "--workers", "1")
    rows = {r["thread"]: r for r in data["results"]}
    assert rows["second"]["first_mismatch"] == 30 and rows["second"]["unexplained"] == 1
    assert rows["main"]["verified"] and rows["fork"]["verified"]
    # one thread of the store, two spellings
    code, data = run_json(capsys, "verify", tampered_store, "--thread", "second", "--machine", TRIAGE)
    assert code == 1 and data["first_mismatch"] == 30 and data["thread"] == "second"
    code, data = run_json(capsys, "verify", f"{tampered_store}#main", "--machine", TRIAGE)
    assert code == 0 and data["thread"] == "main" and data["entries"] == 91


@needs_node
def test_verify_version_bridge_with_machines(capsys: pytest.CaptureFixture[str]) -> None:
    machines = f"1={TICKET}:ticketV1,2={TICKET}:ticketV2"
    code, data = run_json(capsys, "verify", FIXTURES / "e_bridge.v2.log.json", "--machines", machines)
    assert code == 0 and data["ok"] and data["counts"]["verified"] == 7
    code, data = run_json(capsys, "verify", FIXTURES / "e_bridge.v1.log.json", "--machines", machines)
    assert code == 0 and data["counts"]["verified"] == 5


@needs_node
def test_verify_with_another_machine_fails(capsys: pytest.CaptureFixture[str]) -> None:
    code, data = run_json(capsys, "verify", COUNTER_LOG, "--machine", TRIAGE)
    assert code == 1 and not data["ok"] and data["first_mismatch"] == 0
    assert data["mismatches"][0]["kind"] == "machine-mismatch"
    assert "machine" in data["problems"][0]["message"] and data["problems"][0]["index"] == 0


@pytest.mark.skipif(not _has_python_machine("counter_machine"), reason="no Python counter machine yet")
def test_verify_with_python_machine(capsys: pytest.CaptureFixture[str]) -> None:
    code, data = run_json(capsys, "verify", COUNTER_LOG, "--machine", "py:agentscope.examples.python_machines:counter_machine")
    assert code == 0 and data["counts"]["verified"] == 17


# ---------------------------------------------------------------------------------------------
# bad input and usage: one clear line on stderr, exit 2


@pytest.mark.parametrize(
    ("argv", "needles"),
    [
        (["verify", "{tmp}/missing.json", "--machine", COUNTER], ["missing.json", "no such file"]),
        (["verify", "{truncated}", "--machine", COUNTER], ["truncated.json", "line"]),
        (["verify", str(STORE), "--thread", "nope", "--machine", TRIAGE], ["'nope'"]),
        (["verify", f"{STORE}#nope", "--machine", TRIAGE], ["'nope'"]),
        (["verify", str(COUNTER_LOG)], ["--machine"]),
        (["verify", str(COUNTER_LOG), "--machine", "{tmp}/nope.mjs"], ["nope.mjs", "not found"]),
        (["verify", str(COUNTER_LOG), "--machine", "py:agentscope_no_such_module:m"], ["agentscope_no_such_module"]),
        (["verify", str(COUNTER_LOG), "--machine", COUNTER, "--machines", f"1={COUNTER}"], ["not both"]),
        (["verify", str(COUNTER_LOG), "--machines", "no-equals-sign"], ["VERSION=MACHINE"]),
        (["verify", "{tmp}", "--machine", COUNTER], ["directory"]),
        (["show", "{truncated}"], ["truncated.json", "line"]),
        (["show", "{bad_entry}"], ["bad_entry.json", "entry 3"]),
        (["show", f"{STORE}#nope"], ["'nope'"]),
        (["show", str(STORE)], ["thread"]),
        (["diff", str(COUNTER_LOG), "{tmp}/missing.json"], ["missing.json"]),
        (["export", "{truncated}", "--to", "jsonl"], ["truncated.json"]),
        (["threads", "{tmp}/missing.sqlite"], ["missing.sqlite"]),
    ],
)
def test_bad_input_is_one_line_and_exit_2(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, argv: list[str], needles: list[str]
) -> None:
    truncated = tmp_path / "truncated.json"
    truncated.write_text(COUNTER_LOG.read_text(encoding="utf-8")[:700], encoding="utf-8")
    entries = load_json("a_counter.log.json")
    entries[3]["recordedAt"] = "yesterday"
    bad_entry = tmp_path / "bad_entry.json"
    bad_entry.write_text(json.dumps(entries), encoding="utf-8")
    subst = {"{tmp}": str(tmp_path), "{truncated}": str(truncated), "{bad_entry}": str(bad_entry)}
    real = []
    for a in argv:
        for k, v in subst.items():
            a = a.replace(k, v)
        real.append(a)
    code, out, err = run(capsys, *real)
    assert code == 2, (out, err)
    one_line_error(err, *needles)


@pytest.mark.parametrize(
    "argv",
    [
        [],
        ["frobnicate"],
        ["verify"],
        ["export", str(COUNTER_LOG)],
        ["export", str(COUNTER_LOG), "--to", "xml"],
        ["show", str(COUNTER_LOG), "--limit", "many"],
    ],
)
def test_usage_errors_exit_2(capsys: pytest.CaptureFixture[str], argv: list[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "usage: agentscope" in err and "error:" in err


def test_debug_shows_the_exception(tmp_path: Path) -> None:
    with pytest.raises(Exception, match="no such file"):
        main(["show", str(tmp_path / "missing.json"), "--debug"])


def test_console_script_exit_codes_and_no_traceback(tmp_path: Path) -> None:
    env = dict(os.environ, PYTHONPATH=str(REPO))
    proc = subprocess.run(
        [sys.executable, "-m", "agentscope.cli", "show", str(tmp_path / "nope.json")],
        capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120,
    )
    assert proc.returncode == 2
    assert proc.stdout == "" and "Traceback" not in proc.stderr
    assert proc.stderr.strip().splitlines() == [f"agentscope: error: {tmp_path / 'nope.json'}: no such file"]
    proc = subprocess.run(
        [sys.executable, "-m", "agentscope.cli", "threads", str(STORE)],
        capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120,
    )
    assert proc.returncode == 0 and "second" in proc.stdout
    assert "\x1b[" not in proc.stdout  # no colour codes when stdout is not a terminal


# ---------------------------------------------------------------------------------------------
# show


def test_show_json_without_machine(capsys: pytest.CaptureFixture[str]) -> None:
    summary = load_json("g_triage.summary.json")
    code, data = run_json(capsys, "show", STORE, "--thread", "main")
    assert code == 0
    assert data["entries"] == 91 and data["thread"] == "main" and data["era"] == "C"
    assert data["machine_id"] == "supportTriage" and data["machine_versions"] == ["efe50ed5"]
    assert data["event_types"] == summary["main"]["eventTypes"]
    assert data["hashes"] == 91
    assert "verification" not in data


def test_show_a_lone_surrogate_event_type_as_its_escape(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    from agentscope.examples.python_machines import counter_machine
    from agentscope.recorder import Recorder

    rec = Recorder(counter_machine())
    rec.send({"type": "\udc00"})  # a legal JS string; stdout takes only well-formed text
    path = rec.to_jsonl(tmp_path / "s.jsonl")
    code, out, _ = run(capsys, "show", path)
    assert code == 0 and "\\udc00" in out and "\udc00" not in out
    code, data = run_json(capsys, "show", path)
    assert code == 0 and data["event_types"] == {"@agent.init": 1, "\udc00": 1}  # JSON: the escape


_BOX_COLUMNS = "┏┳┓┃┡╇┩│└┴┘"


def _table_blocks(out: str) -> list[list[str]]:
    """The rich tables of ``out``: runs of lines drawn with box characters."""
    blocks: list[list[str]] = []
    run_: list[str] = []
    for line in [*out.splitlines(), ""]:
        if line and line[0] in _BOX_COLUMNS:
            run_.append(line)
        elif run_:
            blocks.append(run_)
            run_ = []
    return blocks


def _assert_aligned(out: str, *cells: str) -> None:
    """Every table of ``out`` has its column rules at the same positions on every line, and each
    of ``cells`` (escaped text) sits in some table between two rules."""
    blocks = _table_blocks(out)
    assert blocks, out
    for block in blocks:
        rules = [[i for i, ch in enumerate(ln) if ch in _BOX_COLUMNS] for ln in block]
        assert all(r == rules[0] for r in rules), "\n".join(block)
        assert {len(ln) for ln in block} == {rules[0][-1] + 1}
    body = [c.strip() for b in blocks for ln in b for c in ln.strip("│").split("│")]
    for cell in cells:
        assert cell in body, (cell, out)


def test_tables_align_rows_holding_lone_surrogates(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A lone surrogate (legal in a JS string) is written as its six-character escape; the columns
    are sized for that escape, not for the one code point rich would measure."""
    import agentscope.examples.python_machines as pm
    from agentscope.engines.statechart import StatechartMachine
    from agentscope.recorder import Recorder

    def odd() -> StatechartMachine:
        return StatechartMachine({"id": "odd", "initial": "\ud800a", "states": {
            "\ud800a": {"on": {"\udc00GO": "b\udc00"}}, "b\udc00": {"on": {"x\udc00y\ud800z": "\ud800a"}}}})

    monkeypatch.setattr(pm, "odd_machine", odd, raising=False)
    monkeypatch.setenv("COLUMNS", "100")
    rec = Recorder(odd())
    for t in ("\udc00GO", "x\udc00y\ud800z", "INC", "\udc00GO"):
        rec.send({"type": t})
    path = rec.to_jsonl(tmp_path / "odd.jsonl")
    code, out, _ = run(capsys, "show", path)
    assert code == 0 and "\udc00" not in out and "\ud800" not in out
    _assert_aligned(out, "\\udc00GO", "x\\udc00y\\ud800z", "INC")
    code, out, _ = run(capsys, "query", path, "index >= 0", "--machine", "py:agentscope.examples.python_machines:odd_machine")
    assert code == 0
    _assert_aligned(out, "\\ud800a", "b\\udc00", "\\udc00GO", "x\\udc00y\\ud800z")
    code, out, _ = run(capsys, "verify", path, "--machine", "py:agentscope.examples.python_machines:counter_machine")
    assert code == 1
    _assert_aligned(out, "\\udc00GO", "x\\udc00y\\ud800z", "INC")


def test_show_human_fits_a_terminal(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "show", f"{STORE}#second", "--limit", "5")
    assert code == 0
    assert "TICKETS_RECEIVED" in out and "entries (first 5 of 40)" in out
    assert max(len(line) for line in out.splitlines()) <= 120


@needs_node
def test_show_with_machine_writes_player(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    out_html = tmp_path / "player" / "fork.html"
    code, data = run_json(capsys, "show", STORE, "--thread", "fork", "--machine", TRIAGE, "--html", out_html)
    assert code == 0
    assert data["ok"] is True and "52 verified" in data["verification"]
    assert Path(data["html"]) == out_html.resolve()
    page = out_html.read_text(encoding="utf-8")
    assert page.lstrip().lower().startswith("<!doctype html") and "supportTriage" in page


_WITHOUT_WIDGETS = """
import sys
from importlib.abc import MetaPathFinder

class NoWidgets(MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("ipywidgets", "anywidget", "traitlets"):
            raise ImportError(f"{name} is not installed (blocked by the test)")
        return None

sys.meta_path.insert(0, NoWidgets())
from agentscope.cli import main
code = main(sys.argv[1:])
loaded = [m for m in ("ipywidgets", "anywidget") if m in sys.modules]
assert not loaded, loaded
sys.exit(code)
"""


def test_show_html_runs_in_an_install_without_the_widget_libraries(tmp_path: Path) -> None:
    """``agentscope show --html`` and ``diff --html`` build the static player with ipywidgets,
    anywidget and traitlets unimportable (the player lives in ``render/``, not ``widgets/``)."""
    page = tmp_path / "main.html"
    fork = tmp_path / "fork.html"
    for argv, out in (
        (["show", f"{STORE}#main", "--machine", DEMO_PY, "--html", str(page), "--coverage"], page),
        (["diff", f"{STORE}#main", f"{STORE}#fork", "--machine", DEMO_PY, "--html", str(fork)], fork),
    ):
        done = subprocess.run([sys.executable, "-c", _WITHOUT_WIDGETS, *argv], capture_output=True,
                              text=True, cwd=REPO)
        assert done.returncode in (0, 1), done.stderr  # diff exits 1: the forks differ
        assert "Traceback" not in done.stderr, done.stderr
        html = out.read_text(encoding="utf-8")
        assert html.lstrip().lower().startswith("<!doctype html") and 'id="as-data"' in html
    assert "supportTriage" in page.read_text(encoding="utf-8")
    code = "import sys, agentscope.render.player; print(sorted({'ipywidgets', 'anywidget'} & set(sys.modules)))"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO,
                          check=True).stdout.strip() == "[]"


@needs_node
def test_show_coverage_adds_the_heat_map_to_the_player(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    import re

    import agentscope as asc
    from agentscope.engines.xstate import load_machine
    from agentscope.render import state_element_id

    out_html = tmp_path / "main.html"
    code, data = run_json(capsys, "show", f"{STORE}#main", "--machine", TRIAGE, "--html", out_html, "--coverage")
    assert code == 0 and Path(data["html"]) == out_html.resolve()
    page = out_html.read_text(encoding="utf-8")
    assert 'id="as-heat"' in page and "as-unvisited" in page  # the toggle and the heat-map CSS
    found = re.search(r'id="as-data">(.*?)</script>', page, re.S)
    assert found is not None
    heat = json.loads(found.group(1))["coverage"]
    with load_machine(MACHINES / "triage.mjs", export="triageMachine") as m:
        want = asc.coverage(asc.read_log(STORE, thread="main"), m).visits
    assert {eid: v for eid, _, v, _ in heat["states"]} == {
        state_element_id(s): v for s, v in want.items() if s != "supportTriage"
    }
    code, _, err = run(capsys, "show", f"{STORE}#main", "--coverage")
    assert code == 2 and "--coverage needs --html and --machine" in err  # usage: exit 2


@needs_node
def test_show_tampered_with_machine_exits_1(capsys: pytest.CaptureFixture[str], tampered_counter: Path) -> None:
    code, out, _ = run(capsys, "show", tampered_counter, "--machine", COUNTER)
    assert code == 1 and "first failure      entry 5 (" in out


# ---------------------------------------------------------------------------------------------
# diff


def test_diff_fork_threads(capsys: pytest.CaptureFixture[str]) -> None:
    code, data = run_json(capsys, "diff", f"{STORE}#main", f"{STORE}#fork")
    assert code == 1
    assert data["kind"] == "fork" and data["common_prefix"] == 18 and data["divergence"] == 18
    assert data["a_length"] == 91 and data["b_length"] == 52
    assert data["a_suffix"][0] == "APPROVE" and data["b_suffix"][0] == "REJECT"
    assert len(data["a_suffix"]) == 73 and len(data["b_suffix"]) == 34


def test_diff_html_without_a_machine_is_a_usage_error(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, _, err = run(capsys, "diff", f"{STORE}#main", f"{STORE}#fork", "--html", str(tmp_path / "f.html"))
    assert code == 2 and "--html needs --machine" in err and not (tmp_path / "f.html").exists()


def test_diff_identical_file_and_store_thread(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "diff", FIXTURES / "c_fork_sqlite.parent.log.json", f"{FORK_STORE}#main")
    assert code == 0 and "identical" in out


def test_diff_tampered(capsys: pytest.CaptureFixture[str], tampered_counter: Path) -> None:
    code, data = run_json(capsys, "diff", COUNTER_LOG, tampered_counter)
    assert code == 1
    assert data["kind"] == "tamper" and data["divergence"] == 5 and data["tampered"] == [5]
    assert data["divergence_fields"] == ["verification.stateHash"]


@needs_node
def test_diff_with_machine_shows_state_changes(capsys: pytest.CaptureFixture[str]) -> None:
    code, data = run_json(capsys, "diff", f"{STORE}#main", f"{STORE}#fork", "--machine", TRIAGE)
    assert code == 1
    paths = {c["path"] for c in data["state_changes"]}
    assert "/context/current/id" in paths
    code, out, _ = run(capsys, "diff", f"{STORE}#main", f"{STORE}#fork", "--machine", TRIAGE)
    assert "diverge at entry 18" in out and "/context/current/id" in out


# ---------------------------------------------------------------------------------------------
# export


def test_export_jsonl_round_trips_exactly(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    from agentscope.log import read_log

    target = tmp_path / "second.jsonl"
    code, data = run_json(capsys, "export", f"{STORE}#second", "--to", "jsonl", "-o", target)
    assert code == 0 and data["entries"] == 40 and Path(data["output"]) == target.resolve()
    assert read_log(target).entries == read_log(STORE, thread="second").entries
    assert len(target.read_text(encoding="utf-8").splitlines()) == 40


@pytest.mark.parametrize("fmt", ["parquet", "csv"])
def test_export_table_reads_back(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path, fmt: str
) -> None:
    import pandas as pd

    from agentscope.log import read_log

    original = read_log(COUNTER_LOG)
    monkeypatch.chdir(tmp_path)
    code, out, _ = run(capsys, "export", COUNTER_LOG, "--to", fmt)
    target = tmp_path / f"a_counter.log.{fmt}"
    assert code == 0 and str(target) in out
    table = pd.read_parquet(target) if fmt == "parquet" else pd.read_csv(target)
    assert list(table["index"]) == list(range(17))
    assert list(table["state_hash"]) == [e["verification"]["stateHash"] for e in original.entries]
    back = read_log(target)
    assert [e["event"] for e in back.entries] == [e["event"] for e in original.entries]
    assert [e["id"] for e in back.entries] == [e["id"] for e in original.entries]


def test_export_refuses_to_overwrite_its_input(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    copy = tmp_path / "log.jsonl"
    copy.write_text("".join(json.dumps(e) + "\n" for e in load_json("a_counter.log.json")), encoding="utf-8")
    before = copy.read_bytes()
    code, _, err = run(capsys, "export", copy, "--to", "jsonl", "-o", copy)
    assert code == 2
    one_line_error(err, "overwrite")
    assert copy.read_bytes() == before


# ---------------------------------------------------------------------------------------------
# demo


@needs_node
def test_demo_verifies_and_writes_the_player(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    target = tmp_path / "demo.html"
    code, out, err = run(capsys, "demo", "-o", target)
    assert code == 0, err
    assert "91 verified" in out and "node engine" in out
    assert f"player written to {target.resolve()}" in out
    assert target.read_text(encoding="utf-8").lstrip().lower().startswith("<!doctype html")
    code, data = run_json(capsys, "demo", "-o", target)
    assert code == 0 and data["ok"] and data["engine"] == "node" and data["entries"] == 91


@needs_node
def test_demo_header_and_other_thread(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    main_log = load_json("g_triage.main.log.json")
    code, out, _ = run(capsys, "demo", "-o", tmp_path / "m.html")
    assert code == 0
    assert "91 entries, machine supportTriage @ efe50ed5" in out
    assert main_log[0]["metadata"]["executionId"] in out
    code, data = run_json(capsys, "demo", "--thread", "second", "-o", tmp_path / "s.html")
    assert code == 0 and data["thread"] == "second" and data["counts"]["verified"] == 40


@pytest.mark.skipif(not _has_python_machine("triage_machine"), reason="no Python triage machine yet")
def test_demo_falls_back_to_python_without_node(tmp_path: Path) -> None:
    env = dict(os.environ, PYTHONPATH=str(REPO), PATH=str(tmp_path))  # no node on PATH
    proc = subprocess.run(
        [sys.executable, "-m", "agentscope.cli", "demo", "-o", str(tmp_path / "d.html")],
        capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    assert "Node engine unavailable" in proc.stderr and "Python engine" in proc.stderr
    assert "91 verified" in proc.stdout and (tmp_path / "d.html").is_file()


def test_demo_lab_without_notebook_is_bad_input(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    import agentscope.cli as cli

    monkeypatch.setattr(cli, "_find_quickstart", lambda: None)
    code, _, err = run(capsys, "demo", "--lab")
    assert code == 2
    one_line_error(err, "quickstart")


def test_demo_lab_starts_jupyterlab_on_the_quickstart(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    import agentscope.cli as cli

    nb = tmp_path / "notebooks" / "01_quickstart.ipynb"
    nb.parent.mkdir()
    nb.write_text("{}", encoding="utf-8")
    calls: list[list[str]] = []
    monkeypatch.setattr(cli, "_find_quickstart", lambda: nb)
    monkeypatch.setattr(cli.subprocess, "call", lambda argv, **kw: calls.append(argv) or 0)
    code, _, _ = run(capsys, "demo", "--lab")
    assert code == 0
    root = ["--allow-root"] if os.geteuid() == 0 else []
    assert calls == [[sys.executable, "-c", cli._LAB, str(nb), *root]]


# ---------------------------------------------------------------------------------------------
# progress bar: shown on a terminal, absent otherwise


def test_progress_bar_only_on_a_terminal() -> None:
    import io

    from rich.console import Console

    import agentscope.cli as cli

    out_tty, err_tty = io.StringIO(), io.StringIO()
    o = cli._Out(out_tty, err_tty, as_json=False)
    o.console = Console(file=out_tty, force_terminal=True)
    o.err = Console(file=err_tty, force_terminal=True)
    with o.progress("verifying 3 threads", 3) as update:
        update(1, 3)
        update(3, 3)
    assert "verifying 3 threads" in err_tty.getvalue()
    assert out_tty.getvalue() == ""

    out_pipe, err_pipe = io.StringIO(), io.StringIO()
    o = cli._Out(out_pipe, err_pipe, as_json=False)
    assert not o.interactive
    with o.progress("verifying 3 threads", 3) as update:
        update(3, 3)
    assert err_pipe.getvalue() == "" and out_pipe.getvalue() == ""


@needs_node
def test_verify_store_with_an_unreadable_thread_is_bad_input(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    store = tmp_path / "corrupt.sqlite"
    shutil.copyfile(FORK_STORE, store)
    con = sqlite3.connect(store)
    con.execute("UPDATE agent_event_log SET entry=? WHERE thread_id='branch' AND idx=3", ('{"schemaVersion":1,',))
    con.commit()
    con.close()
    code, data = run_json(capsys, "verify", store, "--machine", COUNTER, "--workers", "1")
    assert code == 2
    rows = {r["thread"]: r for r in data["results"]}
    assert rows["main"]["verified"] and rows["main"]["error"] is None
    assert not rows["branch"]["verified"]
    error = rows["branch"]["error"]
    assert error.startswith("LogFormatError: ") and str(store) in error, error
    assert "thread 'branch' idx 3]: entry 3: row holds invalid JSON" in error, error
    code, out, _ = run(capsys, "verify", store, "--machine", COUNTER, "--workers", "1")
    assert code == 2 and "1/2 threads verified" in out


def test_show_html_without_machine(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    target = tmp_path / "a.html"
    code, data = run_json(capsys, "show", COUNTER_LOG, "--html", target, "--limit", "0")
    assert code == 0 and Path(data["html"]) == target.resolve()
    assert data["entries"] == 17 and data["event_types"]["TOGGLE"] == 5
    page = target.read_text(encoding="utf-8")
    ids = [e["id"] for e in json.loads(COUNTER_LOG.read_text(encoding="utf-8"))]
    assert len(ids) == 17 and all(i in page for i in ids)  # the player embeds every entry


@pytest.mark.parametrize(
    ("argv", "option"),
    [
        (["diff", STORE, STORE], True),
        (["show", STORE], True),
        (["export", STORE, "--to", "csv"], True),
        (["verify", f"{STORE}#nope", "--machine", "py:agentscope.examples.python_machines:triage_machine"],
         True),
    ],
)
def test_thread_errors_speak_cli_not_python(
    capsys: pytest.CaptureFixture[str], argv: list[Any], option: bool
) -> None:
    """A store that needs a thread names the CLI form STORE#THREAD, not ``thread=``."""
    code, out, err = run(capsys, *argv)
    assert code == 2 and out == ""
    one_line_error(err, "STORE#THREAD", "(threads: fork, main, second)")
    assert ("--thread THREAD" in err) is option
    assert "thread=" not in err
    assert ("no thread 'nope'" in err) is ("#nope" in str(argv[1]))
    from agentscope.errors import ThreadNotFoundError
    from agentscope.log import read_log

    with pytest.raises(ThreadNotFoundError, match="pass thread= one of"):  # the library's wording
        read_log(STORE)


def test_piped_tables_keep_rows_whole(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """stdout is not a terminal (capsys): a table wider than 80 columns is not folded cell by
    cell; every row stays on one line with its words and ids whole."""
    monkeypatch.setenv("COLUMNS", "80")
    code, out, _ = run(capsys, "verify", STORE, "--workers", "1",
                       "--machine", "py:agentscope.examples.python_machines:counter_machine")
    assert code == 1
    lines = out.splitlines()
    assert max(len(ln) for ln in lines) > 80  # the table really is wider than 80 columns
    header = next(ln for ln in lines if "thread" in ln and "entries" in ln)
    for word in ("first failure", "explained", "unexplained", "missing", "error"):
        assert word in header
    rows = [ln for ln in lines if ln.startswith("│")]
    assert len(rows) == 3  # one line per thread, no continuation lines
    for thread, length, row in zip(("fork", "main", "second"), (52, 91, 40), rows, strict=True):
        cells = [c.strip() for c in row.strip("│").split("│")]
        assert cells[:3] == [thread, str(length), "NO"]
        assert cells[-1].startswith("machine-mismatch: Event log entry 'evt_00000000' at index 0")


def test_verify_with_another_machine_puts_the_mismatch_first(capsys: pytest.CaptureFixture[str]) -> None:
    """The triage thread verified with the ticket machine: the mismatch line comes right after
    FAILED, and the engine failure it causes is its consequence, never a bare ``KeyError``."""
    code, out, _ = run(capsys, "verify", f"{STORE}#main",
                       "--machine", "py:agentscope.examples.python_machines:ticket_v1")
    assert code == 1
    lines = out.splitlines()
    assert lines[0] == f"{STORE} (thread main): FAILED, 91 entries (machine supportTriage)"
    assert lines[1] == ("  machine mismatch: 91 of 91 entries target 'supportTriage'@'efe50ed5', not the "
                        "machine 'ticket'@'1'; the replay results below follow from it")
    assert lines[2] == "  91 unchecked"
    # what is new after the mismatch line: the entry and what the machine raised, whole (no "…")
    assert lines[3] == ("  first failure: entry 0 (evt_00000000, @agent.init): engine-error: the machine "
                        "'ticket' raised in its context function: KeyError: 'title'")
    assert "engine-error: KeyError" not in out and "…" not in lines[3]
    assert out.count("'supportTriage'@'efe50ed5'") == 1  # the mismatch is said once
    code, out, _ = run(capsys, "show", f"{STORE}#main", "--limit", "0",
                       "--machine", "py:agentscope.examples.python_machines:ticket_v1")
    rows = {ln.split("  ", 1)[0]: ln.split(None, 2)[2].rstrip() for ln in out.splitlines()
            if ln.startswith(("machine mismatch", "first failure"))}
    assert code == 1 and rows == {
        "machine mismatch": "91 of 91 entries target 'supportTriage'@'efe50ed5', not the machine 'ticket'@'1'",
        "first failure": ("entry 0 (evt_00000000, @agent.init): engine-error: the machine 'ticket' raised "
                          "in its context function: KeyError: 'title'"),
    }
    code, data = run_json(capsys, "verify", f"{STORE}#main",
                          "--machine", "py:agentscope.examples.python_machines:ticket_v1")
    assert code == 1 and data["machine_mismatch"] == (
        "91 of 91 entries target 'supportTriage'@'efe50ed5', not the machine 'ticket'@'1'")
    assert data["summary"].startswith(f"{STORE}: FAILED - 91 entries (machine mismatch: 91 of 91")
    code, data = run_json(capsys, "verify", f"{STORE}#main", "--machine", DEMO_PY)
    assert code == 0 and data["machine_mismatch"] is None



def test_verify_only_a_version_mismatch_points_up(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """The right machine, the log's entries stamped with another version: every hash agrees, so
    the first failure has nothing to add to the mismatch line and says so, without repeating it."""
    entries = load_json("g_triage.main.log.json")
    for e in entries:
        e["machineVersion"] = "0ld0ld00"
    path = tmp_path / "restamped.log.json"
    path.write_text(json.dumps(entries), encoding="utf-8")
    code, out, _ = run(capsys, "verify", path, "--machine", DEMO_PY)
    assert code == 1
    assert out.splitlines()[1:4] == [
        "  machine mismatch: 91 of 91 entries target 'supportTriage'@'0ld0ld00', not the machine "
        "'supportTriage'@'efe50ed5'; the replay results below follow from it",
        "  91 verified",
        "  first failure: entry 0 (evt_00000000, @agent.init): machine-mismatch (see above)",
    ]

# ---------------------------------------------------------------------------------------------
# the console script in a subprocess: exit codes and the exact messages a person sees

AGENTSCOPE = Path(sys.executable).with_name("agentscope")
TRIAGE_LOG = FIXTURES / "g_triage.main.log.json"
TRIAGE_MJS = MACHINES / "triage.mjs"


def console(*argv: Any, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """Run the installed ``agentscope`` console script as a person would."""
    assert AGENTSCOPE.is_file(), f"the console script is not installed next to {sys.executable}"
    return subprocess.run([str(AGENTSCOPE), *map(str, argv)], cwd=cwd, capture_output=True, text=True,
                          timeout=300, check=False)


def _without_hashes(tmp_path: Path) -> Path:
    entries = load_json("a_counter.log.json")
    for e in entries:
        e.pop("verification", None)
    path = tmp_path / "nohash.log.json"
    path.write_text(json.dumps(entries), encoding="utf-8")
    return path


def test_console_verify_of_a_log_without_hashes_is_not_green(tmp_path: Path) -> None:
    log = _without_hashes(tmp_path)
    proc = console("verify", log, "--machine", "py:agentscope.examples.python_machines:counter_machine")
    assert proc.returncode == 1, proc.stderr
    assert proc.stdout.splitlines()[:2] == [
        f"{log}: nothing verified: 17 entries carry no hash (machine counter); --allow-missing accepts that",
        "  17 missing",
    ]
    proc = console("verify", log, "--allow-missing",
                   "--machine", "py:agentscope.examples.python_machines:counter_machine")
    assert proc.returncode == 0
    assert proc.stdout.splitlines()[0] == f"{log}: verified, 17 entries (machine counter)"


def test_console_verify_of_a_store_without_hashes_is_not_green(tmp_path: Path) -> None:
    store = tmp_path / "nohash.sqlite"
    shutil.copy(STORE, store)
    with sqlite3.connect(store) as db:
        db.execute("UPDATE agent_event_log SET entry = json_remove(entry, '$.verification')")
    machine = "py:agentscope.examples.python_machines:triage_machine"
    proc = console("verify", store, "--machine", machine, "--workers", "1", "--json")
    assert proc.returncode == 1, proc.stderr
    rows = {r["thread"]: r for r in json.loads(proc.stdout)["results"]}
    assert {t: (r["verified"], r["error"]) for t, r in rows.items()} == {
        "fork": (False, "nothing verified: 52 entries carry no hash"),
        "main": (False, "nothing verified: 91 entries carry no hash"),
        "second": (False, "nothing verified: 40 entries carry no hash"),
    }
    proc = console("verify", store, "--machine", machine, "--workers", "1", "--allow-missing")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.splitlines()[0] == f"{store}: verified - 3/3 threads verified"


@needs_node
@pytest.mark.parametrize("fmt", ["parquet", "csv"])
def test_console_export_round_trip_verifies_every_hash(tmp_path: Path, fmt: str) -> None:
    from agentscope.log import read_log

    proc = console("export", TRIAGE_LOG, "--to", fmt, cwd=tmp_path)
    target = tmp_path / f"g_triage.main.log.{fmt}"
    assert proc.returncode == 0 and proc.stdout == f"wrote 91 entries to {target}\n"
    proc = console("verify", target, "--machine", TRIAGE_MJS)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.splitlines()[:2] == [
        f"{target}: verified, 91 entries (machine supportTriage)", "  91 verified",
    ]
    # lossless for every field export writes
    fields = ("index", "id", "recordedAt", "machineId", "machineVersion", "event", "causationId",
              "metadata", "verification")
    original, back = read_log(TRIAGE_LOG).entries, read_log(target).entries
    assert [{k: e.get(k) for k in fields} for e in back] == [{k: e.get(k) for k in fields} for e in original]


def test_console_export_names_keep_the_stem_and_never_overwrite(tmp_path: Path) -> None:
    for name in ("g_triage.main.log.json", "g_triage.fork.log.json"):
        proc = console("export", FIXTURES / name, "--to", "parquet", cwd=tmp_path)
        assert proc.returncode == 0, proc.stderr
    proc = console("export", f"{STORE}#second", "--to", "csv", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "g_triage.fork.log.parquet", "g_triage.main.log.parquet", "g_triage.second.csv",
    ]
    proc = console("export", FIXTURES / "g_triage.fork.log.json", "--to", "parquet", cwd=tmp_path)
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr == (f"agentscope: error: {tmp_path / 'g_triage.fork.log.parquet'} already exists; "
                           "pass --force to overwrite it, or pick another -o\n")
    proc = console("export", FIXTURES / "g_triage.fork.log.json", "--to", "parquet", "--force", cwd=tmp_path)
    assert proc.returncode == 0


def test_console_empty_log_and_negative_limit_are_bad_input(tmp_path: Path) -> None:
    empty = tmp_path / "empty.json"
    empty.write_text("[]", encoding="utf-8")
    proc = console("verify", empty, "--machine", "py:agentscope.examples.python_machines:counter_machine")
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr == (f"agentscope: error: {empty}: the log has no entries; a log starts with the "
                           "reserved '@agent.init' entry (spec §1.3)\n")
    assert "None" not in proc.stderr
    proc = console("show", COUNTER_LOG, "--limit", "-3")
    assert proc.returncode == 2
    assert proc.stderr.splitlines()[-1] == (
        "agentscope show: error: argument --limit: expected a non-negative integer, got '-3'"
    )


@needs_node
def test_console_ignored_is_a_flag_beside_verdicts_that_add_up() -> None:
    proc = console("verify", TRIAGE_LOG, "--machine", MACHINES / "counter.mjs")
    assert proc.returncode == 1
    lines = proc.stdout.splitlines()
    assert lines[1] == ("  machine mismatch: 91 of 91 entries target 'supportTriage'@'efe50ed5', not the "
                        "machine 'counter'@'adb004a6'; the replay results below follow from it")
    del lines[1]
    assert lines[1] == "  91 mismatch (flag: 81 of these entries were ignored by the machine, the state did not react)"
    # the mismatch line says the machines; the first failure only what is new at entry 0
    assert lines[2] == ("  first failure: entry 0 (evt_00000000, @agent.init): state-mismatch: "
                        "expected 'd9dc92dc', got 'bb67f23d'")
    proc = console("show", TRIAGE_LOG, "--machine", MACHINES / "counter.mjs", "--limit", "0")
    assert proc.returncode == 1 and ".;" not in proc.stdout
    row = next(ln for ln in proc.stdout.splitlines() if ln.startswith("verification"))
    assert row.split(None, 1)[1].rstrip() == (
        "FAILED: 91 mismatch (flag: 81 of these entries were ignored by the machine, the state did not react)"
    )


def test_console_thread_ids_with_hash_and_diff_threads(tmp_path: Path) -> None:
    store = tmp_path / "g#triage.sqlite"
    shutil.copy(STORE, store)
    with sqlite3.connect(store) as db:
        db.execute("UPDATE agent_event_log SET thread_id = 'run#2' WHERE thread_id = 'fork'")
    proc = console("show", f"{store}#run#2", "--limit", "0", "--json")
    assert proc.returncode == 0, proc.stderr
    assert (json.loads(proc.stdout)["thread"], json.loads(proc.stdout)["entries"]) == ("run#2", 52)
    proc = console("diff", store, store, "--thread", "main", "--thread-b", "run#2", "--json")
    assert proc.returncode == 1, proc.stderr
    assert (json.loads(proc.stdout)["kind"], json.loads(proc.stdout)["divergence"]) == ("fork", 18)
    # --thread is A's thread, and B's only when B names none
    proc = console("diff", store, f"{store}#run#2", "--thread", "main", "--json")
    assert (proc.returncode, json.loads(proc.stdout)["divergence"]) == (1, 18)
    proc = console("diff", store, store, "--thread", "main", "--json")
    assert (proc.returncode, json.loads(proc.stdout)["kind"]) == (0, "identical")


@needs_node
def test_console_diff_prints_a_missing_value_as_absent() -> None:
    proc = console("diff", f"{STORE}#main", f"{STORE}#fork", "--machine", TRIAGE_MJS)
    assert proc.returncode == 1
    lines = [ln.strip() for ln in proc.stdout.splitlines()]
    assert "/value/working/awaitingAgent: (absent) -> \"drafting\"" in lines
    assert any(ln.startswith("/context/outcomes/3: {") and ln.endswith("-> (absent)") for ln in lines)
    assert not any(ln.endswith("-> null") or ": null ->" in ln for ln in lines if "/value/" in ln)


def test_python_dash_m_agentscope_is_the_command() -> None:
    proc = subprocess.run([sys.executable, "-m", "agentscope", "--version"], capture_output=True, text=True,
                          timeout=120, check=False)
    assert (proc.returncode, proc.stdout) == (0, "agentscope 0.1.0\n")
    proc = subprocess.run([sys.executable, "-m", "agentscope", "show", "no-such.json"], capture_output=True,
                          text=True, timeout=120, check=False)
    assert (proc.returncode, proc.stderr) == (2, "agentscope: error: no-such.json: no such file\n")


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="needs root")
def test_console_demo_lab_as_root_passes_allow_root(tmp_path: Path) -> None:
    # a stand-in `jupyterlab` module first on the path records how JupyterLab would be started
    fake = tmp_path / "fake" / "jupyterlab"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text("", encoding="utf-8")
    (fake / "__main__.py").write_text(
        "import json, os, sys\nprint(json.dumps(sys.argv[1:]))\n", encoding="utf-8"
    )
    env = dict(os.environ, PYTHONPATH=str(tmp_path / "fake"))
    proc = subprocess.run([str(AGENTSCOPE), "demo", "--lab"], capture_output=True, text=True, env=env,
                          timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr
    notebook = REPO / "notebooks" / "01_quickstart.ipynb"
    assert json.loads(proc.stdout) == [str(notebook), "--allow-root"]
    assert proc.stderr.splitlines() == [
        "running as root: passing --allow-root to JupyterLab (it refuses root otherwise)",
        f"opening {notebook} in JupyterLab (Ctrl-C to stop)",
    ]


def test_a_closed_pipe_stops_quietly_and_is_not_a_pass(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """`agentscope … | head`: the reader goes away; no traceback, exit 141 (never 0), for the
    rich tables and for --json alike."""
    from agentscope import cli

    store = str(REPO / "agentscope" / "examples" / "g_triage.sqlite")
    for argv in (["threads", store], ["threads", store, "--json"]):
        read_end, write_end = os.pipe()
        os.close(read_end)  # the reader has gone
        closed = open(write_end, "w", encoding="utf-8")  # noqa: SIM115
        monkeypatch.setattr(sys, "stdout", closed)
        code = cli.main(argv)
        assert code == cli.EXIT_BROKEN_PIPE == 141, argv
        assert "Traceback" not in capsys.readouterr().err


@pytest.mark.parametrize(("argv", "message"), [
    (["verify", STORE, "--machine", DEMO_PY, "--workers", "-1"],
     "agentscope verify: error: argument --workers: expected a positive integer, got '-1'"),
    (["whatif", STORE, "--machine", DEMO_PY, "--workers", "0"],
     "agentscope whatif: error: argument --workers: expected a positive integer, got '0'"),
    (["watch", f"{STORE}#main", "--interval", "-1", "--idle-exit", "1"],
     "agentscope watch: error: argument --interval: expected a non-negative number of seconds, got '-1'"),
    (["watch", f"{STORE}#main", "--idle-exit", "nan"],
     "agentscope watch: error: argument --idle-exit: expected a non-negative number of seconds, got 'nan'"),
    (["check", f"{STORE}#main", "--machine", DEMO_PY, "--stuck", "inf"],
     "agentscope check: error: argument --stuck: expected a non-negative number of seconds, got 'inf'"),
    (["query", f"{STORE}#main", "index > 85", "--machine", DEMO_PY, "--limit", "-2"],
     "agentscope query: error: argument --limit: expected a non-negative integer, got '-2'"),
])
def test_bad_numbers_are_usage_errors(capsys: pytest.CaptureFixture[str], argv: list[str], message: str) -> None:
    """A count or a duration out of range is refused by the parser (exit 2, one line naming the
    option), never a traceback from the pool or ``time.sleep``, nor a silently cut listing."""
    with pytest.raises(SystemExit) as exc:
        main([str(a) for a in argv])
    err = capsys.readouterr().err
    assert exc.value.code == 2 and "Traceback" not in err
    assert err.splitlines()[-1] == message


def test_watch_that_went_idle_says_what_it_still_waits_for(
        capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """``watch --idle-exit`` on a path that does not exist yet, a store thread that is not there
    (a typo) or a JSONL file whose last line has no newline: the summary says so (exit 0: a
    follower may start before its writer)."""
    missing = tmp_path / "run.jsonl"
    code, out, _ = run(capsys, "watch", missing, "--idle-exit", "0")
    assert code == 0 and out == f"0 entries (none); stopped: idle; {missing} does not exist yet\n"
    code, out, _ = run(capsys, "watch", f"{STORE}#mian", "--idle-exit", "0")
    assert code == 0 and out == (f"0 entries (none); stopped: idle; no thread 'mian' in {STORE} yet "
                                 "(threads: fork, main, second)\n")
    entries = load_json("a_counter.log.json")
    missing.write_text("".join(json.dumps(e) + "\n" for e in entries[:3]) + json.dumps(entries[3])[:20],
                       encoding="utf-8")
    code, out, _ = run(capsys, "watch", missing, "--idle-exit", "0")
    assert code == 0 and out.splitlines()[-1] == (
        f"3 entries (3 unchecked); stopped: idle; line 4 of {missing} is incomplete (no newline yet): not read")


def test_threads_of_a_log_file_points_to_show(capsys: pytest.CaptureFixture[str]) -> None:
    """``threads`` on a JSON log: one line naming the file and the command that reads it."""
    code, out, err = run(capsys, "threads", COUNTER_LOG)
    assert code == 2 and out == ""
    assert err == (f"agentscope: error: {COUNTER_LOG}: not a SQLite store: `threads` lists the threads "
                   "of a §5.2 store; a JSON, JSONL, CSV or Parquet log is one run (`agentscope show` "
                   "summarises it)\n")


def test_console_export_to_standard_output(tmp_path: Path) -> None:
    """``-o -`` writes the log itself to stdout (the note goes to stderr) and no file named ``-``;
    the JSON lines read back as the thread's entries, the CSV as a table that verifies."""
    from agentscope.log import read_log

    proc = console("export", f"{STORE}#second", "--to", "jsonl", "-o", "-", cwd=tmp_path)
    assert proc.returncode == 0 and proc.stderr == "wrote 40 entries to standard output\n"
    assert not (tmp_path / "-").exists()
    back = [json.loads(line) for line in proc.stdout.splitlines()]
    assert back == read_log(STORE, thread="second").entries
    proc = console("export", TRIAGE_LOG, "--to", "csv", "-o", "-", cwd=tmp_path)
    assert proc.returncode == 0 and proc.stdout.splitlines()[0].startswith("index,")
    (tmp_path / "main.csv").write_text(proc.stdout, encoding="utf-8")
    assert read_log(tmp_path / "main.csv").entries == read_log(TRIAGE_LOG).entries
    proc = console("--json", "export", TRIAGE_LOG, "--to", "jsonl", "-o", "-", cwd=tmp_path)
    assert proc.returncode == 2 and "drop --json" in proc.stderr and proc.stdout == ""

"""``agentscope query`` and ``agentscope check``: the matching steps and the violations, as tables
and as JSON, with the exit codes CI relies on (0 ok / match, 1 violation / no match, 2 bad input).
Both engines."""

from __future__ import annotations

import json

import pytest

from agentscope.cli import main
from agentscope.examples import python_machines as pm
from agentscope.pipeline import Timeline
from agentscope.queries import check
from tests.conftest import FIXTURES, MACHINES, load_json, node_ready

LOG = str(FIXTURES / "g_triage.main.log.json")
PY = "py:agentscope.examples.python_machines:triage_machine"
MACHINE_ARGS = ["python", pytest.param("node", marks=pytest.mark.skipif(
    not node_ready(), reason="needs node and `npm ci` (xstate)"))]


def _spec(engine: str) -> str:
    return PY if engine == "python" else f"{MACHINES / 'triage.mjs'}:triageMachine"


@pytest.mark.parametrize("engine", MACHINE_ARGS)
def test_query_json_lists_every_match(engine: str, capsys: pytest.CaptureFixture[str]) -> None:
    rc = main(["query", LOG, "--machine", _spec(engine), "--json", "--column",
               "context.rejections", "event.type == 'REJECT' or in('working.escalating')"])
    assert rc == 0
    doc = json.loads(capsys.readouterr().out)
    log = load_json("g_triage.main.log.json")
    tl = Timeline(pm.triage_machine(), log)
    want = [f.index for f in tl
            if f.event_type == "REJECT" or f.value == {"working": "escalating"}]
    assert [m["index"] for m in doc["matches"]] == want and doc["count"] == len(want)
    first = doc["matches"][0]
    assert first["id"] == log[first["index"]]["id"]
    assert first["event_type"] == log[first["index"]]["event"]["type"]
    assert first["context.rejections"] == tl[first["index"]].context["rejections"]
    assert doc["entries"] == len(log)


def test_query_human_and_no_match_exit_1(capsys: pytest.CaptureFixture[str]) -> None:
    store = f"{FIXTURES / 'g_triage.sqlite'}#main"
    assert main(["query", store, "--machine", PY, "event.type == 'REJECT'"]) == 0
    out = capsys.readouterr().out
    assert "3 of 91 steps match" in out and "#main" in out
    for idx in ("23", "43", "80"):
        assert f" {idx} " in out
    assert main(["query", LOG, "--machine", PY, "context.rejections > 99"]) == 1
    assert "0 of 91 steps match" in capsys.readouterr().out


@pytest.mark.parametrize("argv", [
    ["query", LOG, "--machine", PY, "context.x >"],
    ["query", LOG, "--machine", PY, "in('nowhere')"],
    ["query", LOG, "context.x > 1"],
    ["check", LOG, "--machine", PY],
    ["check", LOG, "--machine", PY, "--rule", "no-name"],
    ["check", LOG, "--machine", PY, "--loop", "1"],
])
def test_bad_questions_exit_2_with_one_line(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("agentscope: error: ") and err.count("\n") == 1


@pytest.mark.parametrize("engine", MACHINE_ARGS)
def test_check_exit_1_on_violation_and_json_rows(engine: str, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["check", LOG, "--machine", _spec(engine), "--rule", "no-rejects=context.rejections == 0",
            "--stuck", "0.004", "--json"]
    assert main(argv) == 1
    doc = json.loads(capsys.readouterr().out)
    want = check(Timeline(pm.triage_machine(), load_json("g_triage.main.log.json")),
                 {"no-rejects": "context.rejections == 0"}, stuck=0.004)
    assert doc["ok"] is False and doc["invariants"] == ["no-rejects", "stuck"]
    assert [(v["index"], v["invariant"]) for v in doc["violations"]] == list(
        zip(want["index"].tolist(), want["invariant"], strict=True))
    assert main(["check", LOG, "--machine", _spec(engine), "--rule",
                 "bounded=context.queue.length <= 12", "--loop", "5"]) == 0
    assert "ok" in capsys.readouterr().out


def test_check_human_names_the_first_violation(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", LOG, "--machine", PY, "--rule", "small=context.queue.length <= 7"]) == 1
    out = capsys.readouterr().out
    assert "violation(s); first at entry 50 (small)" in out

"""The same differential check through the Node engine (``agentscope.engines.xstate.load_machine``).

Each description becomes a standalone ``.mjs`` module loaded by the node helper's engine (one Node
process per module, so fewer cases here); its fold must give the same persisted snapshots as the
Python engine's. This also cross-checks ``driver.mjs`` against the library's own runner.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings

from agentscope.engines.xstate import load_machine
from agentscope.hashing import canonical_json
from tests.conftest import REPO, requires_node
from tests.differential.harness import run_python
from tests.differential.strategies import cases
from tests.differential.test_differential import _regressions
from tests.differential.vocab import mjs_module

pytestmark = [requires_node, pytest.mark.node]


def _node_side(case: dict[str, Any], where: Path) -> dict[str, Any]:
    where.mkdir(parents=True, exist_ok=True)
    link = where / "node_modules"
    if not link.exists():
        os.symlink(REPO / "node_modules", link)
    module = where / "machine.mjs"
    module.write_text(mjs_module(case["desc"]), encoding="utf-8")
    out: dict[str, Any] = {"ok": True, "snapshots": []}
    try:
        with load_machine(module) as machine:
            s = machine.initial()
            out["version"] = machine.version
            if case.get("restoreEach"):
                s = machine.restore(json.loads(json.dumps(s.persisted)))
            out["snapshots"].append(s.persisted)
            sessions: dict[str, str] = {}
            for ev in case["events"]:
                s = machine.fold(s, [ev], sessions=sessions)[0]
                out["snapshots"].append(s.persisted)
                if case.get("restoreEach"):
                    s = machine.restore(json.loads(json.dumps(s.persisted)))
                    sessions.clear()
    except Exception as exc:  # compared as "errored" with the Python side
        out["ok"] = False
        out["error"] = str(exc)
    return out


def _check(case: dict[str, Any], where: Path) -> None:
    js = _node_side(case, where)
    py = run_python(case)
    assert js["ok"] == py["ok"], (js.get("error"), py.get("error"), json.dumps(case))
    if js["ok"]:
        assert js["version"] == py["version"]
        assert [canonical_json(p) for p in js["snapshots"]] == [canonical_json(p) for p in py["snapshots"]], (
            json.dumps(case)
        )


@pytest.mark.parametrize("case", _regressions(), ids=lambda c: str(c.get("name", "case")))
def test_regressions_through_the_node_engine(case: dict[str, Any], tmp_path: Path) -> None:
    _check(case, tmp_path)


@settings(
    max_examples=25,
    deadline=None,
    database=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(case=cases())
def test_generated_cases_through_the_node_engine(case: dict[str, Any], tmp_path: Path) -> None:
    _check(case, tmp_path)

"""Differential testing: the Python engine against real XState (``xstate@6.0.0-alpha.48``).

Hypothesis generates machine descriptions (``vocab.py``) and event sequences (``strategies.py``);
each is rendered as a Python config and as XState JS source; both engines fold the events and every
persisted snapshot must be identical as canonical JSON (hence identical state hashes), and both
must agree on the structural ``machineVersion``. Failures found so far are fixed regression cases
in ``regressions.json``. The normal run checks >= 1,000 generated cases (seeded, derandomized);
``pytest -m slow`` runs >= 10,000.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings

from agentscope.hashing import state_hash
from tests.conftest import requires_node
from tests.differential.harness import NodeDriver, difference, restore_then_step_differences, run_python
from tests.differential.strategies import cases

pytestmark = [requires_node, pytest.mark.node]

REGRESSIONS = Path(__file__).resolve().parent / "regressions.json"


@pytest.fixture(scope="module")
def driver() -> Iterator[NodeDriver]:
    d = NodeDriver()
    try:
        yield d
    finally:
        d.close()


def check(driver: NodeDriver, case: dict[str, Any]) -> None:
    js = driver.run([case])[0]
    py = run_python(case)
    # the Python engine must be deterministic run after run in one process (a cache keyed by
    # object ids once made the second run differ)
    again = run_python(case)
    assert difference(case, py, again) is None, "python engine not deterministic: " + json.dumps(case)
    diff = difference(case, js, py)
    assert diff is None, diff + "\ncase: " + json.dumps(case)
    # restore(persist(s)) then the next event: the same as stepping s (hence as XState)
    assert restore_then_step_differences(case) == [], json.dumps(case)
    if js["ok"]:
        assert [state_hash(p) for p in js["snapshots"]] == [state_hash(p) for p in py["snapshots"]]


def _regressions() -> list[dict[str, Any]]:
    data: list[dict[str, Any]] = json.loads(REGRESSIONS.read_text(encoding="utf-8"))
    return data


@pytest.mark.parametrize("case", _regressions(), ids=lambda c: str(c.get("name", "case")))
def test_regression_cases(driver: NodeDriver, case: dict[str, Any]) -> None:
    """Every difference ever found, fixed: both engines must agree on it."""
    check(driver, case)


COMMON = {
    "deadline": None,
    "database": None,
    "derandomize": True,
    "suppress_health_check": [
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
        HealthCheck.function_scoped_fixture,
    ],
}


@settings(max_examples=1000, **COMMON)  # type: ignore[arg-type]
@given(case=cases())
def test_python_engine_agrees_with_xstate(driver: NodeDriver, case: dict[str, Any]) -> None:
    check(driver, case)


@pytest.mark.slow
@settings(max_examples=10000, **COMMON)  # type: ignore[arg-type]
@given(case=cases())
def test_python_engine_agrees_with_xstate_long(driver: NodeDriver, case: dict[str, Any]) -> None:
    check(driver, case)

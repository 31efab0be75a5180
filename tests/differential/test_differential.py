"""Differential testing: the Python engine against real XState (``xstate@6.0.0-alpha.48``).

Hypothesis generates machine descriptions (``vocab.py``) and event sequences (``strategies.py``);
each is rendered as a Python config and as XState JS source; both engines fold the events and every
persisted snapshot must be identical as canonical JSON (hence identical state hashes), and both
must agree on the structural ``machineVersion``. Every case runs twice: folded straight, and with
``restore(persist(s))`` before each next event. Failures found so far are fixed regression cases
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
from tests.differential.harness import NodeDriver, difference, run_python
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
    # every case twice: folded straight, and with restore(persist(s)) before every next event
    # (XState's restore is not neutral: a restored deep history lists its nodes in document
    # order, a live one in activation order; so each mode is compared with XState's own)
    modes = [case, {**case, "restoreEach": not case.get("restoreEach", False)}]
    driver.submit(modes)  # XState works on them while the Python engine runs them here
    # each mode twice: the Python engine must be deterministic run after run in one process (a
    # cache keyed by object ids once made the second run differ); run_python reports any failure
    # of the engine in its result, so the driver's reply is always read below
    pys = [(run_python(c), run_python(c)) for c in modes]
    results = driver.collect()
    for c, js, (py, again) in zip(modes, results, pys, strict=True):
        assert difference(c, py, again) is None, "python engine not deterministic: " + json.dumps(c)
        diff = difference(c, js, py)
        assert diff is None, diff + "\ncase: " + json.dumps(c)
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

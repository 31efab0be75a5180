"""Shared test fixtures: paths to the bundled real logs and machines."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parent.parent
FIXTURES = Path(__file__).resolve().parent / "fixtures" / "real"
MACHINES = FIXTURES / "machines"


def load_json(name: str) -> Any:
    return json.loads((FIXTURES / name).read_text(encoding="utf-8"))


def node_ready() -> bool:
    return shutil.which("node") is not None and (REPO / "node_modules" / "xstate").is_dir()


requires_node = pytest.mark.skipif(not node_ready(), reason="needs node and `npm ci` (xstate)")


@pytest.fixture
def fixtures_dir() -> Path:
    return FIXTURES


@pytest.fixture(scope="session")
def postgres() -> Any:
    """A throwaway PostgreSQL server loaded with the bundled triage store and the fixture logs
    (tests/pg_server.py), one per pytest-xdist worker, stopped at the end of the session.

    Skipped with a one-line reason when the server binaries or psycopg are missing, unless
    ``AGENTSCOPE_REQUIRE_POSTGRES=1`` (set by ``.ci/run``), where that is a failure instead.
    """
    import os

    from tests import pg_server

    reason = pg_server.missing_reason()
    if reason is not None:
        if os.environ.get(pg_server.REQUIRE_ENV) == "1":
            pytest.fail(f"{pg_server.REQUIRE_ENV}=1 but {reason}", pytrace=False)
        pytest.skip(reason)
    with pg_server.running_server() as server:
        yield server


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """The fuzz figure (tests/test_fuzz_readers.py): cases run and untyped exceptions found,
    summed over the run's fuzz tests (also from pytest-xdist workers: ``user_properties``
    travel with the reports)."""
    cases = untyped = tests = 0
    for reports in terminalreporter.stats.values():
        for rep in reports:
            props = dict(getattr(rep, "user_properties", ()) or ())
            if getattr(rep, "when", None) == "call" and "fuzz_cases" in props:
                tests += 1
                cases += int(props["fuzz_cases"])
                untyped += int(props["fuzz_untyped"])
    if tests:
        terminalreporter.write_line(
            f"fuzz: {cases:,} cases run in {tests} fuzz tests; untyped exceptions found: {untyped}")

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

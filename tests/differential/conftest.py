"""The long differential run (>= 10,000 cases) only runs when selected with ``pytest -m slow``."""

from __future__ import annotations

import pytest


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if "slow" in (config.getoption("markexpr") or ""):
        return
    skip = pytest.mark.skip(reason="long run: select with `pytest -m slow`")
    for item in items:
        if "slow" in item.keywords and "differential" in str(item.fspath):
            item.add_marker(skip)

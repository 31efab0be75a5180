"""The store benchmark at its quick size (``make test-long``): every ratio line is printed and
every verification in it passes (the benchmark exits otherwise)."""

from __future__ import annotations

import pytest


@pytest.mark.slow
def test_bench_store_quick_prints_every_ratio(capsys: pytest.CaptureFixture[str]) -> None:
    from benchmarks.bench_store import main

    assert main(["--quick"]) == 0
    out = capsys.readouterr().out
    for needle in ("refold/tree =", "cached/refold =", "grown/tree =", "2 vs 1 workers:", "dask/pool =", "peak RSS"):
        assert needle in out, out

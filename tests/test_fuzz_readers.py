"""Every reader, the query parser and the follow tail under bytes mutated from the real fixtures.

The harness is :mod:`tests.fuzz_harness`: hypothesis draws a real seed and a few mutations; the
only acceptable outcomes are a correct read or a typed ``AgentscopeError`` naming the place. The
default run holds a few thousand cases in all (:data:`~tests.fuzz_harness.QUICK_CASES`, fixed
examples: the same run every time); ``make test-long`` (``-m slow``) runs 10^5 per target on
fresh random examples. The figure (cases run, untyped exceptions found) is printed at the end of
the session (``tests/conftest.py``) and by ``python -m benchmarks.fuzz_readers``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests import fuzz_harness as fz


@pytest.fixture(scope="module")
def seeds(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[fz.Seed]]:
    return fz.build_seeds(tmp_path_factory.mktemp("fuzz-seeds"))


def _run(target: str, seeds: dict[str, list[fz.Seed]], tmp: Path, long: bool,
         record_property: pytest.RecordProperty) -> None:
    if not seeds[target]:
        pytest.skip(f"no {target} seed (the inspection recording needs node and `npm ci`)")
    tally = fz.Tally()
    try:
        fz.run_target(target, seeds[target], fz.cases_for(target, long), tmp, tally, derandomize=not long)
    finally:
        record_property("fuzz_cases", tally.cases.get(target, 0))
        record_property("fuzz_untyped", sum(len(v) for v in tally.untyped.values()))
    assert tally.cases[target] > 0
    assert not tally.untyped


@pytest.mark.parametrize("target", fz.TARGETS)
def test_fuzzed_input_reads_correctly_or_raises_a_typed_error_naming_the_place(
    target: str, seeds: dict[str, list[fz.Seed]], tmp_path: Path, record_property: pytest.RecordProperty
) -> None:
    _run(target, seeds, tmp_path, False, record_property)


@pytest.mark.slow
@pytest.mark.parametrize("target", fz.TARGETS)
def test_a_hundred_thousand_fuzzed_inputs_per_target(
    target: str, seeds: dict[str, list[fz.Seed]], tmp_path: Path, record_property: pytest.RecordProperty
) -> None:
    _run(target, seeds, tmp_path, True, record_property)


def test_every_seed_reads_back_its_fixture(seeds: dict[str, list[fz.Seed]], tmp_path: Path) -> None:
    """Unmutated, each seed is a correct read of its real fixture (the oracle the fuzz relies on)."""
    for target in fz.READERS:
        for seed in seeds[target]:
            assert seed.threads and all(seed.threads.values()), seed.name
            assert fz.check_reader(seed, seed.data, tmp_path, collect=False) == "read", seed.name
    assert sum(len(e) for e in seeds["json"][0].threads.values()) == 17  # a_counter.log.json


def test_the_mutations_make_mostly_invalid_inputs(seeds: dict[str, list[fz.Seed]], tmp_path: Path) -> None:
    """The generated inputs are mostly not valid logs (else the fuzz would prove little)."""
    tally = fz.Tally()
    for target in ("json", "sqlite", "csv"):
        fz.run_target(target, seeds[target], 60, tmp_path / target, tally)
        assert tally.typed.get(target, 0) >= 0.3 * tally.cases[target], (target, tally)

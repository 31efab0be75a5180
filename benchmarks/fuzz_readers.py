"""The fuzz figure: ``python -m benchmarks.fuzz_readers [--cases N] [--target T ...] [--seed S]``.

Runs N hypothesis-generated cases per target (every reader — JSON, JSONL, SQLite, CSV, Parquet,
XState inspection stream — the query parser and the follow tail; harness:
``tests/fuzz_harness.py``, seeds from the real fixtures) and prints, per target, the cases run,
how many ended in a typed error, and the untyped outcomes found (each listed), then one line:
``fuzz: … cases run …; untyped exceptions found: K``. Exit 1 when K > 0.
Not a ``bench_`` module: ``python -m benchmarks`` does not run it.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from tests import fuzz_harness as fz


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.fuzz_readers", description=__doc__.split("\n")[0])
    ap.add_argument("--cases", type=int, default=1_000, help="cases per target (default 1,000)")
    ap.add_argument("--target", action="append", choices=fz.TARGETS, help="only these targets")
    ap.add_argument("--fixed", action="store_true", help="hypothesis's fixed examples (the test's run)")
    ap.add_argument("--quick", action="store_true", help="100 cases per target")
    args = ap.parse_args(argv)
    cases = 100 if args.quick else args.cases
    tally = fz.Tally()
    with tempfile.TemporaryDirectory() as tmp:
        seeds = fz.build_seeds(Path(tmp) / "seeds")
        for target in args.target or fz.TARGETS:
            if not seeds[target]:
                print(f"{target:<11} skipped: no seed (the inspection recording needs node and `npm ci`)")
                continue
            t0 = time.perf_counter()
            fz.run_target(target, seeds[target], cases, Path(tmp) / target, tally,
                          derandomize=args.fixed, keep_going=True)
            found = tally.untyped.get(target, [])
            print(f"{target:<11} {tally.cases.get(target, 0):>8,} cases  {tally.typed.get(target, 0):>8,} typed "
                  f"errors  {len(found)} untyped  {time.perf_counter() - t0:7.1f} s", flush=True)
            for failure in found[:10]:
                print(f"    {failure}")
    print(tally.line())
    return 1 if tally.untyped else 0


if __name__ == "__main__":
    raise SystemExit(main())

"""``import agentscope`` in a fresh interpreter: its wall time against the bare interpreter's.

Run: ``python -m benchmarks.bench_import`` (or ``--quick``). Each round starts a fresh Python
process that times its own ``import agentscope`` (``time.perf_counter`` around the statement, so
interpreter start-up is not counted), and, as the baseline in the same round, a fresh process
timing ``import json`` (a standard-library package of comparable size). The figures are the
medians over rounds, in seconds, and the heavy modules the import loaded (there must be none: the
flat API loads its names on first use). Target (issue 27): <= 0.15 s, with neither pandas, numpy
nor ipywidgets.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys

HEAVY = ("pandas", "numpy", "ipywidgets", "pyarrow", "orjson")
TARGET_S = 0.15


def one(stmt: str) -> float:
    """Seconds a fresh interpreter spends in ``stmt`` (timed inside the child)."""
    code = f"import time; t = time.perf_counter(); {stmt}; print(time.perf_counter() - t)"
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True)
    return float(out.stdout)


def heavy_loaded() -> list[str]:
    """The heavy modules a fresh ``import agentscope`` leaves in ``sys.modules``."""
    code = ("import sys, agentscope; "
            f"print(','.join(m for m in {HEAVY!r} if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True)
    return [m for m in out.stdout.strip().split(",") if m]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer rounds")
    args = parser.parse_args(argv)
    rounds = 5 if args.quick else 15
    added: list[float] = []
    bare: list[float] = []
    for _ in range(rounds):  # paired rounds: the machine's load moves both sides alike
        bare.append(one("import json"))
        added.append(one("import agentscope"))
    cost = statistics.median(added)
    base = statistics.median(bare)
    heavy = heavy_loaded()
    print(f"import json (baseline): {base:.4f} s (median of {rounds})")
    print(f"import agentscope: {cost:.4f} s = {cost / base:.1f}x the baseline "
          f"(median of {rounds}; target <= {TARGET_S} s)")
    print(f"heavy modules loaded: {', '.join(heavy) or 'none'}")
    print("OK" if cost <= TARGET_S and not heavy else "ABOVE TARGET")


if __name__ == "__main__":
    main()

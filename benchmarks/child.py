"""Run one benchmark method in a fresh subprocess: its own peak RSS, imports not timed.

The child code is executed with a variable named ``name`` (``PATH``, ``URL`` …) holding the
input, and must call ``START()`` once its imports are done and set ``n`` (rows it produced).
The child prints one JSON line: ``seconds`` (wall time after ``START()``), ``cpu`` (process CPU
seconds, all threads), ``peak_bytes`` (peak RSS of the child) and ``rows`` (``n``).
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

RUNNER = textwrap.dedent(
    """
    import json, resource, sys, time
    globals()[sys.argv[1]] = sys.argv[2]
    t0 = c0 = None
    def START():
        global t0, c0
        t0 = time.perf_counter()
        c0 = time.process_time()
    exec(compile(sys.argv[3], "<bench>", "exec"))
    elapsed = time.perf_counter() - t0
    cpu = time.process_time() - c0
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    print(json.dumps({"seconds": elapsed, "cpu": cpu, "peak_bytes": peak, "rows": n}))
    """
)


def run_child(code: str, value: str, *, name: str = "PATH") -> dict[str, float]:
    """Run ``code`` in a fresh interpreter with ``name = value``; return its JSON figures.

    Raises ``subprocess.CalledProcessError`` when the child fails (its stderr attached).
    """
    proc = subprocess.run(
        [sys.executable, "-c", RUNNER, name, value, code],
        capture_output=True, text=True, check=True, cwd=REPO,
        env={"PYTHONPATH": str(REPO), "PATH": ""},
    )
    return json.loads(proc.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


Figures = dict[str, float]


def summarize(runs: dict[str, list[Figures]], rows: int, *, width: int = 20) -> tuple[dict[str, Figures], dict[str, float]]:
    """Each method's best run (least wall time) and best CPU time; print them as a table with
    the ratios to the ``"baseline"`` method (time, CPU, peak RSS). Every run must have produced
    ``rows`` rows."""
    best = {m: min(rs, key=lambda r: r["seconds"]) for m, rs in runs.items()}
    cpu = {m: min(r["cpu"] for r in rs) for m, rs in runs.items()}
    for m, r in best.items():
        assert r["rows"] == rows, (m, r)
    base = best["baseline"]
    print(f"{'method':<{width}}{'seconds':>9}{'cpu s':>8}{'peak MB':>10}{'time x':>9}{'cpu x':>8}{'mem x':>8}")
    for m, r in best.items():
        print(f"{m:<{width}}{r['seconds']:>9.2f}{cpu[m]:>8.2f}{r['peak_bytes'] / 1e6:>10.0f}"
              f"{r['seconds'] / base['seconds']:>9.2f}{cpu[m] / cpu['baseline']:>8.2f}"
              f"{r['peak_bytes'] / base['peak_bytes']:>8.2f}")
    return best, cpu

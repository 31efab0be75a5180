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

"""Run every benchmark module in turn: ``python -m benchmarks [--quick]``."""

from __future__ import annotations

import importlib
import pkgutil
import subprocess
import sys
from pathlib import Path


def main() -> int:
    here = Path(__file__).parent
    names = sorted(m.name for m in pkgutil.iter_modules([str(here)]) if m.name.startswith("bench_"))
    failed = 0
    for name in names:
        print(f"=== benchmarks.{name}", flush=True)
        importlib.invalidate_caches()
        rc = subprocess.call([sys.executable, "-m", f"benchmarks.{name}", *sys.argv[1:]])
        failed += rc != 0
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())

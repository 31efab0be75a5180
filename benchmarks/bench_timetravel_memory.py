"""RSS a ``TimeTravel`` adds over a log of large states, scrubbed from the first step to the last.

Usage: ``python -m benchmarks.bench_timetravel_memory [--quick] [--n N] [--engine python|node|both]``.

The log is the "grow" log of :mod:`benchmarks.bench_timeline` (every ``ADD`` appends 120
characters to ``context.items``: 2,500 entries end with a ~300 KB snapshot). Each case runs in a
fresh child process that builds the log and loads the machine, then measures its RSS
(``/proc/self/statm``) before and after ``TimeTravel(machine, log)`` and after setting ``step`` to
every index in turn (each frame read, drawn and cached as a person scrubbing would), plus its peak
(``VmHWM``) over the same start. Cases, in one run per engine:

- ``default``: ``TimeTravel(machine, log)`` as a user writes it (frame caches bounded by
  :data:`agentscope.pipeline.snapshots.DEFAULT_CACHE_BYTES`);
- ``count-only LRU``: the same with the view's timeline built with ``cache_bytes`` unbounded, so its
  LRU keeps 256 frames whatever their size (the behaviour before the byte budget).

Target (issue 26): the default adds under 100 MB after scrubbing the 2,500 entries. Printed:
figures only, no assertion.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys

_CHILD = r"""
import gc, json, os, sys
import agentscope as asc
from benchmarks.bench_timeline import GROW_MJS, PyGrow, make_log
engine, n, unbounded = sys.argv[1], int(sys.argv[2]), sys.argv[3] == "1"
page = os.sysconf("SC_PAGE_SIZE")
def rss() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * page
log = make_log(n)
if engine == "node":
    from agentscope.engines.xstate import load_machine
    machine = load_machine(GROW_MJS, "growMachine")
else:
    machine = PyGrow()
gc.collect()
before = rss()
if unbounded:
    tt = asc.TimeTravel(machine, timeline=asc.Timeline(machine, log, cache_bytes=1 << 62))
else:
    tt = asc.TimeTravel(machine, log)
gc.collect()
built = rss()
for i in range(tt.n):
    tt.step = i
gc.collect()
after = rss()
with open("/proc/self/status") as f:
    peak = next(int(line.split()[1]) * 1024 for line in f if line.startswith("VmHWM:"))
last = len(json.dumps(tt.timeline.at(tt.n - 1).persisted))
print(json.dumps({"before": before, "built": built, "after": after, "peak": peak, "last": last,
                  "n": tt.n, "ok": tt.timeline.report.ok}))
"""


def run(engine: str, n: int, unbounded: bool) -> dict[str, int]:
    out = subprocess.run([sys.executable, "-c", _CHILD, engine, str(n), "1" if unbounded else "0"],
                         check=True, capture_output=True, text=True)
    result: dict[str, int] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--n", type=int, default=None)
    ap.add_argument("--engine", choices=["python", "node", "both"], default="both")
    args = ap.parse_args()
    n = args.n or (500 if args.quick else 2_500)
    mb = 1e6
    engines = ["python", "node"] if args.engine == "both" else [args.engine]
    for engine in engines:
        try:
            cases = {"default": run(engine, n, False), "count-only LRU": run(engine, n, True)}
        except subprocess.CalledProcessError as exc:  # no node / xstate: say so
            print(f"[{engine}] skipped: {exc.stderr.strip().splitlines()[-1:]}")
            continue
        first = cases["default"]
        print(f"[{engine}] grow log: {first['n']:,} entries, last snapshot {first['last'] / 1e3:.0f} KB "
              f"as JSON, verify ok={first['ok']}")
        for name, r in cases.items():
            print(f"[{engine}]   {name:15} TimeTravel adds {(r['built'] - r['before']) / mb:6.1f} MB built, "
                  f"{(r['after'] - r['before']) / mb:6.1f} MB after scrubbing every step "
                  f"(peak RSS {r['peak'] / mb:.0f} MB, {r['before'] / mb:.0f} MB before)")
        base, old = (cases[k]["after"] - cases[k]["before"] for k in ("default", "count-only LRU"))
        print(f"[{engine}]   count-only / default added RSS: {old / max(base, 1):.1f}x "
              f"(target: default under 100 MB)")


if __name__ == "__main__":
    main()

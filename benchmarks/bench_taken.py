"""The cost of the Node engine reporting the transitions each step took (issue 30, part 1).

Usage: ``python -m benchmarks.bench_taken [--quick] [--n N] [--repeat K] [--seeks S]``.

One generated loop log (``agentscope/examples/machines/loop.mjs``, N entries, default 20,000,
``--quick`` 5,000: one ``xstate.done.actor`` per entry, each taking a re-entering function
transition, the worst case: the smallest step, so the recording is the largest share of it).
Two machines of the same module, each in its own runner: **off** (``report_transitions=False``:
never asks, so the runner never installs its hooks: today's engine) and **on** (the default:
asks wherever a fold keeps snapshots, so its runner's hooks are installed from the first fold).
In each of ``--repeat`` rounds (default 5), each phase runs off then on, back to back:

- ``timeline``: ``Timeline(m, log)`` (every snapshot kept, so the fold sends every step: *on*
  records and sends the transitions);
- ``verify``: ``agentscope.verify(m, log)`` (a sparse fold: *on* asks for nothing, but its
  runner's hooks are installed: the price of a hook that does not record);
- ``seek``: ``S`` random ``timeline[n]`` (default 40) on ``Timeline(m, log,
  checkpoint_every=512, cache_size=0)`` (each folds from a checkpoint: *on* records).

Printed per phase: the median over rounds of the paired ratio on / off of the busier process's
CPU (runner or Python: they overlap; the robust figure on a shared machine) and of wall time, and the peak RSS of Python and of both
runners. No assertion: numbers only.

Measured (2026-12-04, shared 2-core box, ``python -m benchmarks.bench_taken --repeat 5``, 20,000
entries), on/off CPU (wall): transitions only, timeline 1.036 (1.040), verify 1.049 (0.889), seek
1.075 (1.213); with the microstep values too, timeline 1.194 (0.913), verify 1.035 (1.035), seek
1.062 (1.151). Paired-run CPU ratios spread 0.86-1.24 from the box's load: the same Timeline
builds timed alone (10,000 entries, 5 rounds each) took a median 1.45 (off) and 1.41 (on)
runner CPU-s, Python 0.21-0.27 s either way. A same-runner check (one runner,
``fold_iter`` of the 20k events alternating ``report_transitions`` off/on, 6 rounds) gave a
median runner-CPU ratio of 0.96: recording costs less than the noise. Hence the engine reports
them always wherever a fold keeps snapshots (views), and never in a sparse (verifying) fold or
``fold_last``; the Timeline keeps what its one pass got (``LogIndex.taken``), so a frame never
refolds to learn them.
"""

from __future__ import annotations

import argparse
import random
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchmarks.bench_node_verify import LOOP, loop_events, runner_peak_mb, self_peak_mb, write_log
from benchmarks.bench_xstate import runner_cpu_seconds


def measure(m: Any, fn: Callable[[], object]) -> tuple[float, float]:
    """(wall seconds, CPU seconds of the busier of runner and Python) of ``fn()``."""
    c0 = runner_cpu_seconds(m.pid)
    p0 = time.process_time()
    t0 = time.perf_counter()
    fn()
    wall = time.perf_counter() - t0
    return wall, max(runner_cpu_seconds(m.pid) - c0, time.process_time() - p0)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--n", type=int, default=None)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--seeks", type=int, default=40)
    args = ap.parse_args()
    import agentscope as asc
    from agentscope.engines.xstate import load_machine
    from agentscope.pipeline import Timeline

    n = args.n or (5_000 if args.quick else 20_000)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "loop.jsonl"
        write_log(path, LOOP, {"type": "@agent.init", "input": {"limit": n + 5}}, loop_events(n - 1))
        log = asc.read_log(str(path))
        off, on = load_machine(LOOP), load_machine(LOOP)
        off.report_transitions = False
        ratios: dict[str, list[tuple[float, float]]] = {"timeline": [], "verify": [], "seek": []}
        try:
            tls = {name: Timeline(m, log, checkpoint_every=512, cache_size=0) for name, m in (("off", off), ("on", on))}
            for r in range(args.repeat):
                picks = random.Random(r).sample(range(1, n), min(args.seeks, n - 1))
                for key in ratios:  # off then on, back to back: a slow spell hits both alike
                    got: list[tuple[float, float]] = []
                    for name, m in (("off", off), ("on", on)):
                        if key == "timeline":
                            got.append(measure(m, lambda m=m: Timeline(m, log, cache_size=0)))
                        elif key == "verify":
                            got.append(measure(m, lambda m=m: asc.verify(m, log)))
                        else:
                            tl = tls[name]
                            got.append(measure(m, lambda tl=tl, picks=picks: [tl[k] for k in picks]))
                    (w0, c0), (w1, c1) = got
                    ratios[key].append((w1 / w0, c1 / c0))
            print(f"loop log: {n:,} entries, {args.repeat} rounds, {args.seeks} seeks per round")
            for key, rs in ratios.items():
                wall = statistics.median(r[0] for r in rs)
                cpu = statistics.median(r[1] for r in rs)
                print(f"{key:8s}: on/off CPU {cpu:.3f}, wall {wall:.3f} (medians of paired runs; "
                      f"CPU ratios {', '.join(f'{r[1]:.2f}' for r in rs)})")
            print(f"peak RSS: python {self_peak_mb():.0f} MB, runner off {runner_peak_mb(off.pid):.0f} MB, "
                  f"runner on {runner_peak_mb(on.pid):.0f} MB")
        finally:
            off.close()
            on.close()


if __name__ == "__main__":
    main()

"""Fold throughput of the Node engine on a generated loop log (the fixtures' ``loop`` machine).

Run: ``python -m benchmarks.bench_xstate`` (10^5 entries) or ``--quick`` (10^4).

Reports, all measured in this run:

- per-request overhead of the runner (an empty ``ping`` round trip), median of many;
- the re-seed interval sweep (entries/s for each ``reseed_every``);
- fold throughput over the whole log in large batches (engine only, and with ``state_hash``
  on every entry = what verification costs), with the best interval;
- baselines: the naive fold without re-seeding (xstate alpha.48's growing prototype chain) over
  the first N entries, and one request per entry; reported as ratios.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from pathlib import Path
from typing import Any

from agentscope.engines.xstate import DEFAULT_RESEED_EVERY, load_machine
from agentscope.hashing import state_hash

LOOP = Path(__file__).resolve().parent.parent / "agentscope" / "examples" / "machines" / "loop.mjs"


def loop_events(n: int) -> list[dict[str, Any]]:
    """The loop log's events after init: one ``xstate.done.actor`` per tick, recorded session ids."""
    return [
        {"type": "xstate.done.actor", "actorId": "tick", "sessionId": f"rec:{i}", "output": {"delta": (i * 7) % 13}}
        for i in range(n)
    ]


def runner_cpu_seconds(pid: int | None) -> float:
    """User+system CPU seconds of a process (Linux /proc), NaN elsewhere.

    The machine may be shared: CPU time of the runner is the contention-robust figure.
    """
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return float("nan")


def fold_rate(
    reseed_every: int,
    events: list[dict[str, Any]],
    batch: int,
    *,
    hash_each: bool = False,
    pipelined: bool = False,
) -> tuple[float, float]:
    """(entries/s wall, entries per runner-CPU-second) of folding ``events`` in batches of ``batch``."""
    with load_machine(LOOP, reseed_every=reseed_every) as m:
        s = m.initial({"limit": len(events)})
        m.fold(s, events[:100], sessions={})  # warm-up (JIT)
        cache: dict[str, str] = {}
        cpu0 = runner_cpu_seconds(m.pid)
        t0 = time.perf_counter()
        if pipelined:
            for snap in m.fold_iter(s, events, sessions=cache, chunk=batch):
                if hash_each:
                    state_hash(snap.persisted)
            s = snap
        else:
            for i in range(0, len(events), batch):
                out = m.fold(s, events[i : i + batch], sessions=cache)
                if hash_each:
                    for snap in out:
                        state_hash(snap.persisted)
                s = out[-1]
        dt = time.perf_counter() - t0
        cpu = runner_cpu_seconds(m.pid) - cpu0
        expected = sum((i * 7) % 13 for i in range(len(events)))
        assert s.context == {"limit": len(events), "i": len(events), "sum": expected}, s.context
        assert s.status == "done"
    return len(events) / dt, len(events) / cpu if cpu > 0 else float("nan")


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="small sizes (10^4 entries)")
    args = ap.parse_args(argv)
    n = 10_000 if args.quick else 100_000
    sweep_n = 5_000 if args.quick else 20_000
    naive_n = 1_000 if args.quick else 5_000
    batch = 10_000
    events = loop_events(n)

    with load_machine(LOOP) as m:
        for _ in range(50):
            m.ping()
        pings = []
        for _ in range(500 if not args.quick else 100):
            t0 = time.perf_counter()
            m.ping()
            pings.append(time.perf_counter() - t0)
        ping_us = statistics.median(pings) * 1e6
        s = m.initial({"limit": 2_000})
        per_entry = loop_events(1_000 if not args.quick else 300)
        cache: dict[str, str] = {}
        t0 = time.perf_counter()
        for ev in per_entry:
            s = m.fold(s, [ev], sessions=cache)[0]
        one_by_one = len(per_entry) / (time.perf_counter() - t0)
    print(f"runner per-request overhead (empty round trip): median {ping_us:.0f} µs")

    print(f"re-seed interval sweep over {sweep_n} entries (entries/s wall | per runner-CPU-s):")
    sweep: dict[int, float] = {}
    for k in (2, 4, 8, 16, 32, 64, 128, 1000):
        wall, cpu = fold_rate(k, events[:sweep_n], batch)
        sweep[k] = cpu if cpu == cpu else wall
        print(f"  reseed_every={k:>5}: {wall:9.0f} | {cpu:9.0f}")
    best = max(sweep, key=lambda k: sweep[k])
    print(f"  best: {best} (library default {DEFAULT_RESEED_EVERY})")

    engine, engine_cpu = fold_rate(DEFAULT_RESEED_EVERY, events, batch)
    verify, _ = fold_rate(DEFAULT_RESEED_EVERY, events, batch, hash_each=True)
    verify_pipe, _ = fold_rate(DEFAULT_RESEED_EVERY, events, 2048, hash_each=True, pipelined=True)
    naive, naive_cpu = fold_rate(0, events[:naive_n], naive_n)
    print(f"fold of {n} entries, batches of {batch}, reseed_every={DEFAULT_RESEED_EVERY}:")
    print(f"  engine only:              {engine:9.0f} entries/s  (target >= 10000); {engine_cpu:.0f} per runner-CPU-s")
    print(f"  engine + state_hash each: {verify:9.0f} entries/s")
    print(f"  same, fold_iter pipelined (chunks of 2048, hashing overlaps the fold): {verify_pipe:9.0f} entries/s")
    print(f"  load average now: {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    print("baselines (same run):")
    print(
        f"  naive, no re-seed, first {naive_n}: {naive:9.0f} entries/s -> batched re-seeded is {engine / naive:.1f}x "
        f"(CPU: {engine_cpu / naive_cpu:.1f}x)"
    )
    print(f"  one request per entry:          {one_by_one:9.0f} entries/s -> batching is {engine / one_by_one:.1f}x")


if __name__ == "__main__":
    main()

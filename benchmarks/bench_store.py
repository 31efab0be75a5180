"""Benchmark: ``verify_store`` over a forest of forks, with the fold tree and the verdict cache.

The store is generated with the real :class:`~agentscope.recorder.Recorder` and the Python
counter machine: one root thread of N entries and F forks of it, each forked at a point drawn
in ``[N/2, N]`` (the prefix copied verbatim, spec §5.1) and then given about ``OWN`` entries of
its own. Default N = 10^4, F = 100, OWN = 50 (about 7.6·10^5 stored entries, 1.5·10^4 distinct);
``--quick``: N = 10^3, F = 20, OWN = 20.

Reported in one run, each a ratio against a baseline timed in the same run, with the peak RSS
of this process and of the worker processes:

- ``tree``: cold ``verify_store`` (fold tree, the default) against a refold of every thread
  from its init entry (``tree=False``); the goal is >= 10x;
- ``cache``: a second ``verify_store(cache=…)`` of the unchanged store against the cold refold
  (goal <= 0.01x) and against the cold tree;
- ``grown``: about 1% more entries appended to the store (every fork grows), verified with the
  cache, against the cold tree; the entries folded are printed (those of the grown threads);
- ``workers``: ``--threads`` small independent threads (default 10^4 of 100 entries, 10^6
  entries; ``--quick`` 500 of 20) with 2 worker processes against 1 (goal >= 1.8x on two idle cores; this machine is shared, so the
  load average is printed beside it).

Every pool is warmed up first (worker processes started, machine loaded).

Run: ``python -m benchmarks.bench_store [--quick] [--n N] [--forks F] [--own OWN] [--threads T]``.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import random
import resource
import sqlite3
import sys
import tempfile
import time
from concurrent.futures import Executor, ProcessPoolExecutor
from pathlib import Path
from typing import Any

from agentscope.bulk import verify_store
from agentscope.examples.python_machines import counter_machine
from agentscope.log.writers import js_json
from agentscope.recorder import ManualClock, Recorder

SPEC = "py:agentscope.examples.python_machines:counter_machine"
EVENTS: list[dict[str, Any]] = [{"type": "TOGGLE"}, {"type": "INC", "by": 2}, {"type": "DEC"},
                                {"type": "INC"}]
SCHEMA = ('CREATE TABLE "agent_event_log" (thread_id TEXT NOT NULL, idx INTEGER NOT NULL, '
          "entry_id TEXT NOT NULL, entry TEXT NOT NULL, PRIMARY KEY (thread_id, idx))")


def _rows(rec: Recorder, lo: int = 0) -> list[tuple[int, str, str]]:
    return [(e["index"], e["id"], js_json(e)) for e in rec.entries[lo:]]


def _record(n: int, execution_id: str) -> Recorder:
    rec = Recorder(counter_machine(), {"count": 0}, clock=ManualClock(), execution_id=execution_id)
    for i in range(n - 1):
        rec.clock.advance(10)
        rec.send(EVENTS[i % len(EVENTS)])
    return rec


def generate_forest(path: Path, later: Path, n: int, forks: int, own: int, grow: float = 0.01,
                    seed: int = 7) -> None:
    """Write the forest store at ``path``, and at ``later`` the rows that append about ``grow``
    of its entries to its forks (recorded now, one fork in memory at a time: the benchmark's
    peak RSS is verify_store's, not the generator's)."""
    rnd = random.Random(seed)
    points = [rnd.randint(n // 2, n) for _ in range(forks)]
    each = max(1, -(-int(grow * (n + sum(points) + forks * own)) // max(1, forks)))
    root = _record(n, "exec-root")
    root_rows = _rows(root)
    con, side = sqlite3.connect(path), sqlite3.connect(later)
    con.execute(SCHEMA)
    side.execute(SCHEMA)
    con.executemany("INSERT INTO agent_event_log VALUES ('root', ?, ?, ?)", root_rows)
    for f, k in enumerate(points):
        fork = root.fork(k)
        for _ in range(own):
            fork.clock.advance(10)
            fork.send(EVENTS[rnd.randrange(len(EVENTS))])
        name = f"fork{f:04d}"
        con.executemany(f"INSERT INTO agent_event_log VALUES ('{name}', ?, ?, ?)",
                        root_rows[:k] + _rows(fork, k))
        lo = len(fork.entries)
        for _ in range(each):
            fork.clock.advance(10)
            fork.send(EVENTS[rnd.randrange(len(EVENTS))])
        side.executemany(f"INSERT INTO agent_event_log VALUES ('{name}', ?, ?, ?)", _rows(fork, lo))
    con.commit()
    side.commit()
    con.close()
    side.close()


def append(path: Path, later: Path) -> tuple[int, int]:
    """Append the rows recorded at ``later`` to the store; return (entries, threads) added."""
    con = sqlite3.connect(path)
    con.execute("ATTACH DATABASE ? AS later", (str(later),))
    added, threads = con.execute(
        "SELECT COUNT(*), COUNT(DISTINCT thread_id) FROM later.agent_event_log").fetchone()
    con.execute("INSERT INTO main.agent_event_log SELECT * FROM later.agent_event_log")
    con.commit()
    con.close()
    return int(added), int(threads)


def generate_small(path: Path, threads: int, length: int = 20) -> None:
    """``threads`` independent threads of ``length`` entries each (no shared prefix)."""
    con = sqlite3.connect(path)
    con.execute(SCHEMA)
    for t in range(threads):
        rec = _record(length, f"exec-{t}")
        con.executemany(f"INSERT INTO agent_event_log VALUES ('t{t:05d}', ?, ?, ?)", _rows(rec))
    con.commit()
    con.close()


def _pool(workers: int) -> ProcessPoolExecutor:
    return ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn"))


def _warm(pool: Executor, store: Path, workers: int) -> None:
    """Start every worker and load the machine there (one tiny chunk per worker)."""
    from agentscope.stores import open_store

    with open_store(store) as src:
        first = [t.thread_id for t in src.threads()][: workers * 2]
    verify_store(store, SPEC, threads=first, executor=pool, chunk_size=1, tree=False)


def timed(pool: Executor, store: Path, workers: int, **kw: Any) -> tuple[float, Any]:
    t0 = time.perf_counter()
    df = verify_store(store, SPEC, executor=pool, max_workers=workers, **kw)
    elapsed = time.perf_counter() - t0
    if not df["verified"].all():
        raise SystemExit(f"benchmark store did not verify: {df[~df['verified']].head()}")
    return elapsed, df


def _rss() -> str:
    me = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    kids = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    return f"peak RSS: this process {me:.0f} MiB, largest worker {kids:.0f} MiB"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="small sizes (make test-long)")
    parser.add_argument("--n", type=int, default=None, help="entries of the root thread")
    parser.add_argument("--forks", type=int, default=None, help="forks of the root")
    parser.add_argument("--own", type=int, default=None, help="entries of each fork's own")
    parser.add_argument("--threads", type=int, default=None, help="small threads (workers part)")
    parser.add_argument("--length", type=int, default=None, help="entries per small thread")
    parser.add_argument("--workers", type=int, default=1, help="workers of the forest runs")
    args = parser.parse_args(argv)
    n = args.n or (1_000 if args.quick else 10_000)
    forks = args.forks or (20 if args.quick else 100)
    own = args.own or (20 if args.quick else 50)
    small = args.threads or (500 if args.quick else 10_000)
    length = args.length or (20 if args.quick else 100)
    w = args.workers

    with tempfile.TemporaryDirectory() as tmp:
        store, cache = Path(tmp) / "forest.sqlite", Path(tmp) / "verdicts.sqlite"
        later = Path(tmp) / "appended.sqlite"
        t0 = time.perf_counter()
        generate_forest(store, later, n, forks, own)
        print(f"forest: root of {n} entries, {forks} forks with {own} own entries each "
              f"(generated in {time.perf_counter() - t0:.1f} s); {w} worker process(es)")
        with _pool(w) as pool:
            _warm(pool, store, w)
            refold, full = timed(pool, store, w, tree=False)
            tree, treed = timed(pool, store, w)
            cold, _ = timed(pool, store, w, cache=cache)
            warm, again = timed(pool, store, w, cache=cache)
            assert sorted(again.attrs["cache"]["reused"]) == sorted(full["thread"])
            stored = int(full["length"].sum())
            print(f"  refold  {refold:7.2f} s  {int(full['folded'].sum()):>9,} entries folded "
                  f"({stored:,} stored)")
            print(f"  tree    {tree:7.2f} s  {int(treed['folded'].sum()):>9,} entries folded  "
                  f"refold/tree = {refold / tree:.1f}x (goal >= 10x)")
            print(f"  cache   {warm:7.2f} s  {int(again['folded'].sum()):>9,} entries folded  "
                  f"cached/refold = {warm / refold:.4f}x (goal <= 0.01x), "
                  f"cached/tree = {warm / tree:.3f}x (cold run with the cache {cold:.2f} s)")
            added, grew = append(store, later)
            grown, gdf = timed(pool, store, w, cache=cache)
            assert len(gdf.attrs["cache"]["grown"]) == grew
            print(f"  +{added:,} entries ({added / stored:.1%}) in {grew} threads: {grown:7.2f} s  "
                  f"{int(gdf['folded'].sum()):,} entries folded  grown/tree = {grown / tree:.3f}x")
        print(f"  {_rss()}")

        smalls = Path(tmp) / "small.sqlite"
        generate_small(smalls, small, length)
        print(f"small threads: {small} independent threads of {length} entries; load average "
              f"{os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs (others' processes skew this)")
        times: dict[int, float] = {}
        for workers in (1, 2):
            with _pool(workers) as pool:
                _warm(pool, smalls, workers)
                times[workers], _ = timed(pool, smalls, workers)
            print(f"  {workers} worker(s): {times[workers]:7.2f} s  {small / times[workers]:8.0f} threads/s")
        print(f"  2 vs 1 workers: {times[1] / times[2]:.2f}x (goal >= 1.8x on 2 idle cores)")
        print(f"  {_rss()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

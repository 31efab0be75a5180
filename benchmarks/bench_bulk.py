"""Throughput of ``verify_store`` with 1 vs 2 worker processes on a generated store.

The store is generated from the real support-triage threads (``tests/fixtures/real/g_triage.sqlite``):
each generated thread is a verbatim copy of one of ``main`` / ``fork`` / ``second`` under a new
thread id, exactly what the store's ``fork`` does with a full-length copy (spec §5.1), so every
generated thread is a valid log that verifies. The default size is 10^3 threads (about 61,000
entries); ``--quick`` uses 60.

The machine is the real ``triage.mjs`` through Node when Node and xstate are installed, else the
Python engine's triage machine. Each pool is warmed up first (worker processes started, machine
loaded), so the timing is steady-state throughput. Reported: threads/s and entries/s per pool size
and the 2-vs-1 speed-up ratio (ideal 2.0 on two cores).

Run: ``python -m benchmarks.bench_bulk [--quick] [--threads N] [--engine node|python]``.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import shutil
import sqlite3
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SOURCE = REPO / "tests" / "fixtures" / "real" / "g_triage.sqlite"
NODE_SPEC = f"{REPO / 'tests' / 'fixtures' / 'real' / 'machines' / 'triage.mjs'}:triageMachine"
PY_SPEC = "py:agentscope.examples.python_machines:triage_machine"


def generate_store(path: Path, n_threads: int) -> tuple[list[str], int]:
    """Write a store of ``n_threads`` threads copied from the real triage threads.

    Returns the thread ids in order and the total number of entries."""
    src = sqlite3.connect(f"file:{SOURCE}?mode=ro", uri=True)
    rows = src.execute("SELECT thread_id, idx, entry_id, entry FROM agent_event_log ORDER BY thread_id, idx").fetchall()
    src.close()
    by_thread: dict[str, list[tuple[int, str, str]]] = {}
    for thread, idx, entry_id, entry in rows:
        by_thread.setdefault(thread, []).append((idx, entry_id, entry))
    names = sorted(by_thread)
    dst = sqlite3.connect(path)
    dst.executescript(
        'CREATE TABLE "agent_event_log" (thread_id TEXT NOT NULL, idx INTEGER NOT NULL, '
        "entry_id TEXT NOT NULL, entry TEXT NOT NULL, PRIMARY KEY (thread_id, idx));"
        'CREATE UNIQUE INDEX "agent_event_log_thread_entry_id" ON "agent_event_log" (thread_id, entry_id);'
    )
    total = 0
    ids: list[str] = []
    for i in range(n_threads):
        source = by_thread[names[i % len(names)]]
        tid = f"t{i:05d}-{names[i % len(names)]}"
        dst.executemany(
            "INSERT INTO agent_event_log VALUES (?, ?, ?, ?)", [(tid, idx, eid, e) for idx, eid, e in source]
        )
        total += len(source)
        ids.append(tid)
    dst.commit()
    dst.close()
    return ids, total


def pick_engine(choice: str | None) -> str:
    if choice == "python":
        return PY_SPEC
    if choice == "node" or (shutil.which("node") and (REPO / "node_modules" / "xstate").is_dir()):
        return NODE_SPEC
    return PY_SPEC


def run(store: Path, spec: str, workers: int, threads: list[str]) -> tuple[float, float]:
    """Return (wall seconds, summed per-thread worker seconds) of one steady-state run."""
    from agentscope.bulk import verify_store

    with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn")) as pool:
        # warm-up: start every worker and load the machine there (one tiny chunk per worker)
        warm = verify_store(store, spec, threads=threads[: workers * 2], executor=pool, chunk_size=1)
        assert warm["verified"].all(), warm
        t0 = time.perf_counter()
        df = verify_store(store, spec, threads=threads, executor=pool, max_workers=workers)
        elapsed = time.perf_counter() - t0
    if not df["verified"].all():
        raise SystemExit(f"benchmark store did not verify: {df[~df['verified']].head()}")
    return elapsed, float(df["seconds"].sum())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="60 threads instead of 1000")
    parser.add_argument("--threads", type=int, default=None, help="number of generated threads")
    parser.add_argument("--engine", choices=["node", "python"], default=None)
    args = parser.parse_args(argv)
    n = args.threads or (60 if args.quick else 1000)
    spec = pick_engine(args.engine)

    with tempfile.TemporaryDirectory() as tmp:
        store = Path(tmp) / "generated.sqlite"
        threads, entries = generate_store(store, n)
        print(f"store: {n} threads, {entries} entries; machine: {spec}")
        print(f"load average before: {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs "
              "(other processes on the machine skew the ratio)")
        times: dict[int, float] = {}
        for workers in (1, 2):
            times[workers], busy = run(store, spec, workers, threads)
            print(
                f"  {workers} worker(s): {times[workers]:7.2f} s  "
                f"{n / times[workers]:8.1f} threads/s  {entries / times[workers]:9.0f} entries/s  "
                f"(worker time {busy:.2f} s, {busy / times[workers]:.2f} workers busy on average)"
            )
        print(f"  speed-up 2 vs 1 workers: {times[1] / times[2]:.2f}x (ideal 2.00x on 2 idle cores)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

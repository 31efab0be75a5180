"""verify_store over PostgreSQL: 1 vs 2 worker processes, and PostgreSQL vs the same rows in SQLite.

Run: ``python -m benchmarks.bench_verify_pg`` (the bundled triage store's threads copied ``--copies``
times, default 100: 18,300 entries in 300 threads) or ``--quick`` (20 copies). Needs Debian's
``postgresql`` server binaries and psycopg (the ``postgres`` extra); a throwaway server is started
for the run (tests/pg_server.py). The machine is the Python triage statechart, so the figure is the
store and the pass, not Node start-up. Every copy gets its own thread id and the fork tree is off
(``tree=False``): each thread is read and folded by its worker, which opens the store itself from
its URL (issue 28: the executor ships thread ids and the address, never entries).

Printed: wall time of each run (best of ``--repeat``), the ratios 1 worker / 2 workers (goal:
>= 1.8 on an idle 2-core machine) and PostgreSQL / SQLite on 2 workers, and the peak RSS of this
process (workers are separate processes). Every run's table must be identical (checked).
"""

from __future__ import annotations

import argparse
import resource
import sqlite3
import tempfile
import time
from pathlib import Path

MACHINE = "py:agentscope.examples.python_machines:triage_machine"


def _rows(copies: int) -> list[tuple[str, int, str, str]]:
    from tests import pg_server

    base = pg_server.triage_rows()
    return [(f"{t}-{k:04d}", i, e, text) for k in range(copies) for (t, i, e, text) in base]


def _sqlite_store(path: Path, rows: list[tuple[str, int, str, str]]) -> None:
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE agent_event_log (thread_id TEXT NOT NULL, idx INTEGER NOT NULL, "
                 "entry_id TEXT NOT NULL, entry TEXT NOT NULL, PRIMARY KEY (thread_id, idx))")
    conn.executemany("INSERT INTO agent_event_log VALUES (?, ?, ?, ?)", rows)
    conn.commit()
    conn.close()


def _best(store: str, workers: int, repeat: int) -> tuple[float, object]:
    from agentscope.bulk import verify_store

    best, table = float("inf"), None
    for _ in range(repeat):
        t0 = time.perf_counter()
        df = verify_store(store, MACHINE, max_workers=workers, tree=False)
        best = min(best, time.perf_counter() - t0)
        table = df.drop(columns=[c for c in ("seconds",) if c in df.columns]).sort_values("thread")
    return best, table


def main(argv: list[str] | None = None) -> None:
    from tests import pg_server

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="20 copies instead of --copies")
    parser.add_argument("--copies", type=int, default=100)
    parser.add_argument("--repeat", type=int, default=2)
    args = parser.parse_args(argv)
    reason = pg_server.missing_reason()
    if reason is not None:
        print(f"skipped: {reason}")
        return
    copies = 20 if args.quick else args.copies
    rows = _rows(copies)
    threads = len({r[0] for r in rows})
    server = pg_server.start_server()
    try:
        with server.admin("postgres") as conn:
            conn.execute(f"CREATE DATABASE {pg_server.DATABASE}")
            conn.execute(f"CREATE ROLE {pg_server.READER} LOGIN PASSWORD '{pg_server.READER_PASSWORD}'")
        with server.admin() as conn:
            pg_server.create_table(conn, "agent_event_log")
            pg_server.copy_rows(conn, "agent_event_log", rows)
            conn.execute("VACUUM ANALYZE agent_event_log")
        url = server.url()
        with tempfile.TemporaryDirectory(prefix="agentscope-bench-") as tmp:
            lite = Path(tmp) / "store.sqlite"
            _sqlite_store(lite, rows)
            print(f"{len(rows):,} entries in {threads} threads (triage x {copies}), machine {MACHINE}")
            pg1, t_pg1 = _best(url, 1, args.repeat)
            pg2, t_pg2 = _best(url, 2, args.repeat)
            sq2, t_sq2 = _best(str(lite), 2, args.repeat)
        for name, t in (("postgres, 2 workers", t_pg2), ("sqlite, 2 workers", t_sq2)):
            assert t.reset_index(drop=True).equals(t_pg1.reset_index(drop=True)), name  # type: ignore[union-attr]
        ok = int(t_pg1["verified"].sum())  # type: ignore[index]
        print(f"postgres 1 worker : {pg1:7.2f} s  ({ok}/{threads} threads verified)")
        print(f"postgres 2 workers: {pg2:7.2f} s  -> 1 vs 2 workers: {pg1 / pg2:.2f}x (goal >= 1.8x)")
        print(f"sqlite   2 workers: {sq2:7.2f} s  -> postgres / sqlite: {pg2 / sq2:.2f}x")
        print(f"peak RSS of this process: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB")
    finally:
        server.stop()


if __name__ == "__main__":
    main()

"""Load one 10^6-entry thread from PostgreSQL: the store against the bare driver into pyarrow.

Run: ``python -m benchmarks.bench_store_pg`` (10^6 entries, ~300 B each) or ``--quick`` (10^5).
Needs Debian's ``postgresql`` server binaries and psycopg (the ``postgres`` extra); a throwaway
server is started for the run (tests/pg_server.py) and the log of benchmarks/bench_load.py is
copied into one thread of a §5.2 ``text`` table. Each method runs in its own fresh subprocess
over TCP (peak RSS is its own; imports count in memory, not in time), ``--repeat`` times,
interleaved; the best wall time, the best CPU time of the process and the peak RSS are reported.

- baseline: psycopg 3, a server-side cursor fetching the same query in batches of
  :data:`agentscope.stores.protocol.BATCH` rows, each batch turned into a pyarrow record batch
  (``idx``, ``entry`` text, ``entry_id``), then one ``pyarrow.Table``.
- adbc: ADBC's PostgreSQL driver (``adbc-driver-postgresql``, when installed), the same query,
  ``fetch_arrow_table()`` (COPY in binary, Arrow batches built in C).
- agentscope read: ``open_store(url).read(thread)``, every batch's records kept in a list (what
  ``RowStore.log`` collects before validating).
- agentscope stream: the same, batches dropped as they come (bounded memory: a batch at a time).
- agentscope log: ``store.log(thread)`` (every entry parsed and validated; informative).

Target (issue 28): agentscope read <= 1.3x the baseline's time; stream's peak RSS flat in n.
"""

from __future__ import annotations

import argparse
import tempfile
import textwrap
from pathlib import Path

from benchmarks.child import run_child, summarize

THREAD = "long"
QUERY = "SELECT idx, entry::text, entry_id FROM agent_event_log WHERE thread_id = 'long' AND idx >= 0 ORDER BY idx"

CHILD = {
    "baseline": textwrap.dedent(
        f"""
        import psycopg, pyarrow as pa
        from agentscope.stores.protocol import BATCH
        START()
        schema = pa.schema([("idx", pa.int64()), ("entry", pa.string()), ("entry_id", pa.string())])
        batches = []
        with psycopg.connect(URL) as conn, conn.transaction(), conn.cursor(name="bench") as cur:
            cur.execute({QUERY!r})
            while rows := cur.fetchmany(BATCH):
                i, t, e = zip(*rows)
                batches.append(pa.record_batch([pa.array(i, pa.int64()), pa.array(t, pa.string()),
                                                pa.array(e, pa.string())], schema=schema))
        table = pa.Table.from_batches(batches, schema)
        n = table.num_rows
        """
    ),
    "adbc": textwrap.dedent(
        f"""
        import pyarrow
        from adbc_driver_postgresql import dbapi
        START()
        with dbapi.connect(URL) as conn, conn.cursor() as cur:
            cur.execute({QUERY!r})
            table = cur.fetch_arrow_table()
        n = table.num_rows
        """
    ),
    "agentscope read": textwrap.dedent(
        """
        from agentscope.stores import open_store
        import psycopg
        START()
        with open_store(URL) as store:
            records = [r for batch in store.read("long") for r in batch]
        n = len(records)
        """
    ),
    "agentscope stream": textwrap.dedent(
        """
        from agentscope.stores import open_store
        import psycopg
        START()
        n = 0
        with open_store(URL) as store:
            for batch in store.read("long"):
                n += len(batch)
        """
    ),
    "agentscope log": textwrap.dedent(
        """
        from agentscope.stores import open_store
        import psycopg, pandas, orjson
        START()
        with open_store(URL) as store:
            log = store.log("long")
        n = len(log)
        """
    ),
}



def has_adbc() -> bool:
    try:
        import adbc_driver_postgresql  # noqa: F401
    except ImportError:
        return False
    return True


def run(method: str, url: str) -> dict[str, float]:
    return run_child(CHILD[method], url, name="URL")


def load(server: object, path: Path) -> None:
    """Copy the JSONL log into thread ``long`` of a §5.2 text table, each line one entry as is."""
    from tests import pg_server

    with server.admin() as conn:  # type: ignore[attr-defined]
        pg_server.create_table(conn, "agent_event_log")
        with conn.cursor() as cur, cur.copy(
                "COPY agent_event_log (thread_id, idx, entry_id, entry) FROM STDIN") as copy, path.open("rb") as fh:
            for i, line in enumerate(fh):
                copy.write_row((THREAD, i, f"evt_{i:08d}", line.rstrip(b"\n").decode()))
        conn.execute("VACUUM ANALYZE agent_event_log")


def main(argv: list[str] | None = None) -> None:
    from benchmarks.bench_load import generate
    from tests import pg_server

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="10^5 entries instead of 10^6")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)
    reason = pg_server.missing_reason()
    if reason is not None:
        print(f"skipped: {reason}")
        return
    n = 100_000 if args.quick else 1_000_000
    methods = [m for m in CHILD if m != "adbc" or has_adbc()]
    if "adbc" not in methods:
        print("adbc: not measured (pip install adbc-driver-postgresql)")
    server = pg_server.start_server()
    try:
        with server.admin("postgres") as conn:
            conn.execute(f"CREATE DATABASE {pg_server.DATABASE}")
            conn.execute(f"CREATE ROLE {pg_server.READER} LOGIN PASSWORD '{pg_server.READER_PASSWORD}'")
        with tempfile.TemporaryDirectory(prefix="agentscope-bench-") as tmp:
            path = Path(tmp) / "log.jsonl"
            size = generate(path, n)
            load(server, path)
        print(f"loaded {n:,} entries, {size / 1e6:.1f} MB ({size / n:.0f} B/entry) into PostgreSQL")
        url = server.url()
        runs: dict[str, list[dict[str, float]]] = {m: [] for m in methods}
        for _ in range(args.repeat):  # interleaved, so background load hits every method alike
            for method in methods:
                runs[method].append(run(method, url))
    finally:
        server.stop()
    best, cpu = summarize(runs, n)
    base = best["baseline"]
    t_ratio = best["agentscope read"]["seconds"] / base["seconds"]
    c_ratio = cpu["agentscope read"] / cpu["baseline"]
    print(f"target agentscope read <= 1.3x the bare driver into pyarrow: time {t_ratio:.2f}x, cpu {c_ratio:.2f}x "
          f"({'met' if max(t_ratio, c_ratio) <= 1.3 else 'NOT met'}); stream peak "
          f"{best['agentscope stream']['peak_bytes'] / 1e6:.0f} MB for {n:,} entries")


if __name__ == "__main__":
    main()

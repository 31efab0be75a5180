"""Live follow cost per appended entry, and ``whatif`` throughput against ``verify_store``.

Part 1, follow. A counter-machine log of N entries (Python engine; default 10^4, ``--quick``
2,000) is written by the ``Recorder``. The follower starts on the first 500 entries; the rest is
appended in chunks of B entries (to a JSONL file, and to a SQLite store by plain inserts), and
after each chunk one ``Follower.poll()`` reads, verifies and frames the new entries. Reported
per source and chunk size: microseconds per appended entry over the first and the last tenth of
the appends (flat = O(1) amortised: no re-read, no re-fold), against the baseline in the same
process of building a ``Timeline`` over the whole log once (the one-pass cost per entry), and
against the naive alternative of re-reading and re-folding the whole log after each chunk
(measured on the last few chunks only). Peak Python memory (tracemalloc) of the follow run.

Part 2, whatif. A store of T threads copied from the real triage threads (as
``bench_bulk``; default 120, ``--quick`` 30) is checked by ``verify_store`` and by ``whatif``
(no baseline; and with ``baseline=`` the same machine, i.e. two replays per thread) with the
same 2-process pool size. Reported: threads/s, entries/s and the whatif/verify time ratio.
The machine is the real ``triage.mjs`` through Node when available, else the Python engine.

Run: ``python -m benchmarks.bench_live [--quick] [--entries N] [--threads T]``.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sqlite3
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

from benchmarks.bench_bulk import NODE_SPEC, PY_SPEC, generate_store


def _log(n: int) -> list[dict[str, object]]:
    from agentscope import Recorder
    from agentscope.examples.python_machines import counter_machine

    r = Recorder(counter_machine(), {"start": 0}, execution_id="bench")
    for i in range(n - 1):
        r.send({"type": "TOGGLE"} if i % 7 == 6 else {"type": "INC", "by": i % 13})
    return r.entries


def _append_jsonl(path: Path, chunk: list[dict[str, object]]) -> None:
    with path.open("a", encoding="utf-8") as fh:
        fh.write("".join(json.dumps(e, separators=(",", ":")) + "\n" for e in chunk))


def _append_sqlite(path: Path, chunk: list[dict[str, object]]) -> None:
    con = sqlite3.connect(path)
    with con:
        con.executemany("INSERT INTO agent_event_log VALUES ('main', ?, ?, ?)",
                        [(e["index"], e["id"], json.dumps(e, separators=(",", ":"))) for e in chunk])
    con.close()


def bench_follow(n: int, tmp: Path) -> None:
    from agentscope import Timeline, read_log
    from agentscope.examples.python_machines import counter_machine
    from agentscope.follow import follow

    entries = _log(n)
    m = counter_machine()
    t0 = time.perf_counter()
    Timeline(m, entries)
    one_pass = (time.perf_counter() - t0) / n * 1e6
    print(f"follow: {n} entries; baseline one-pass Timeline build: {one_pass:.1f} us/entry")
    head = 500
    for kind in ("jsonl", "sqlite"):
        for chunk_size in (1, 10, 100):
            d = tmp / f"{kind}-{chunk_size}"
            d.mkdir()
            if kind == "jsonl":
                src = d / "run.jsonl"
                _append_jsonl(src, entries[:head])
                append = _append_jsonl
                target: str = str(src)
            else:
                src = d / "store.sqlite"
                con = sqlite3.connect(src)
                con.execute('CREATE TABLE "agent_event_log" (thread_id TEXT NOT NULL, idx INTEGER '
                            "NOT NULL, entry_id TEXT NOT NULL, entry TEXT NOT NULL, "
                            "PRIMARY KEY (thread_id, idx))")
                con.commit()
                con.close()
                _append_sqlite(src, entries[:head])
                append = _append_sqlite
                target = str(src)
            f = follow(m, target, thread="main" if kind == "sqlite" else None)
            assert len(f.timeline) == head
            costs: list[float] = []
            rest = entries[head:]
            if chunk_size == 1:
                rest = rest[: min(len(rest), 2000)]  # one poll per entry: keep the run short
            for i in range(0, len(rest), chunk_size):
                chunk = rest[i : i + chunk_size]
                append(src, chunk)
                t0 = time.perf_counter()
                got = f.poll()
                for j in got:
                    f.timeline[j]  # the frame a watcher prints (verdict, value)
                costs.append((time.perf_counter() - t0) / max(len(got), 1))
                assert len(got) == len(chunk), (kind, chunk_size, i, len(got))
            tenth = max(1, len(costs) // 10)
            early = sum(costs[:tenth]) / tenth * 1e6
            late = sum(costs[-tenth:]) / tenth * 1e6
            assert f.timeline.report.ok
            # the naive alternative: re-read the whole source and re-fold it after a chunk
            t0 = time.perf_counter()
            reps = 3
            for _ in range(reps):
                log = read_log(target, thread="main") if kind == "sqlite" else read_log(target)
                Timeline(m, log)
            naive = (time.perf_counter() - t0) / reps / chunk_size * 1e6
            print(f"  {kind:6} chunk={chunk_size:>3}: {early:7.1f} us/entry (first tenth) "
                  f"{late:7.1f} us/entry (last tenth), late/early {late / early:4.2f}; "
                  f"vs one-pass {late / one_pass:4.2f}x; naive re-read+re-fold "
                  f"{naive:9.1f} us/entry ({naive / late:6.0f}x follow); "
                  f"{len(f.timeline)} entries")
    # peak Python memory of one follow run (chunks of 10), measured apart: tracemalloc slows code
    d = tmp / "peak"
    d.mkdir()
    src = d / "run.jsonl"
    _append_jsonl(src, entries[:head])
    tracemalloc.start()
    f = follow(m, str(src))
    for i in range(head, n, 10):
        _append_jsonl(src, entries[i : i + 10])
        f.poll()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    print(f"  peak Python memory following {n} entries (JSONL, chunks of 10): {peak / 1e6:.1f} MB "
          f"({peak / n:.0f} bytes/entry; the snapshot store keeps every state)")


def bench_whatif(n_threads: int, tmp: Path, engine: str) -> None:
    from agentscope import verify_store, whatif

    store = tmp / "store.sqlite"
    _, total = generate_store(store, n_threads)
    spec = NODE_SPEC if engine == "node" else PY_SPEC
    print(f"whatif: {n_threads} threads, {total} entries, engine {engine}, 2 worker processes")
    t0 = time.perf_counter()
    df = verify_store(store, spec, max_workers=2)
    t_verify = time.perf_counter() - t0
    assert bool(df["verified"].all())
    t0 = time.perf_counter()
    w = whatif(store, spec, max_workers=2)
    t_whatif = time.perf_counter() - t0
    assert w.identical
    t0 = time.perf_counter()
    wb = whatif(store, spec, baseline=spec, max_workers=2)
    t_base = time.perf_counter() - t0
    assert wb.identical
    for name, t in (("verify_store", t_verify), ("whatif", t_whatif), ("whatif+baseline", t_base)):
        print(f"  {name:16} {t:6.2f} s  {n_threads / t:7.1f} threads/s  {total / t:8.0f} entries/s  "
              f"ratio to verify {t / t_verify:4.2f}")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--entries", type=int, default=None)
    ap.add_argument("--threads", type=int, default=None)
    ap.add_argument("--engine", choices=["node", "python"], default=None)
    args = ap.parse_args()
    n = args.entries or (2_000 if args.quick else 10_000)
    threads = args.threads or (30 if args.quick else 120)
    engine = args.engine or ("node" if shutil.which("node") else "python")
    with tempfile.TemporaryDirectory(prefix="agentscope-bench-") as tmp:
        bench_follow(n, Path(tmp))
        bench_whatif(threads, Path(tmp), engine)
    return 0


if __name__ == "__main__":
    sys.exit(main())

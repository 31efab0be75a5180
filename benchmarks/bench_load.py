"""Load a generated JSONL log into ``EventLog`` + ``.df``, against pyarrow's JSON reader.

Run: ``python -m benchmarks.bench_load`` (10^6 entries, ~300 B each) or ``--quick`` (10^5).

The log is written to a temporary directory; payload fields change type between entries
(``qty`` is a number, a string, a list, an object or null), which breaks type inference in
Arrow/polars readers. Each method runs in its own fresh subprocess (so peak RSS is its own, imports included in
memory but not in time), ``--repeat`` times, interleaved; the best time and its peak RSS are reported,
and the best CPU time of the process (all threads; steadier than wall time on a loaded machine).

- baseline: ``pyarrow.json.read_json`` with a fixed top-level schema (the envelope fields,
  ``unexpected_field_behavior="ignore"``) and ``.to_pandas()`` — tech-eval §5's fastest reader.
- agentscope: ``read_log(path)`` then ``.df`` (full §1.2/§1.3 validation; payloads kept raw).
- agentscope + entries: the same, then ``.entries`` (every payload parsed to dicts).

Targets (issue 10): agentscope <= 1.2x the baseline's time and <= 1.0x its peak memory.
"""

from __future__ import annotations

import argparse
import tempfile
import textwrap
from pathlib import Path

from benchmarks.child import run_child, summarize

CHILD = {
    "baseline": textwrap.dedent(
        """
        import pyarrow as pa, pyarrow.json as pj
        import pandas
        START()
        schema = pa.schema([
            ("schemaVersion", pa.float64()), ("id", pa.string()), ("index", pa.float64()),
            ("recordedAt", pa.string()), ("machineId", pa.string()), ("machineVersion", pa.string()),
            ("event", pa.struct([("type", pa.string())])), ("causationId", pa.string()),
            ("metadata", pa.struct([])), ("verification", pa.struct([("stateHash", pa.string())])),
        ])
        table = pj.read_json(PATH, parse_options=pj.ParseOptions(explicit_schema=schema, unexpected_field_behavior="ignore"))
        df = table.to_pandas()
        n = len(df)
        """
    ),
    "agentscope": textwrap.dedent(
        """
        import pyarrow, pyarrow.json, pyarrow.compute, pandas, orjson
        from agentscope.log import read_log
        import agentscope.log.fast
        START()
        log = read_log(PATH)
        df = log.df
        n = len(df)
        assert log._entries is None, "the fast path was not taken"
        """
    ),
    "agentscope+entries": textwrap.dedent(
        """
        import pyarrow, pyarrow.json, pyarrow.compute, pandas, orjson
        from agentscope.log import read_log
        import agentscope.log.fast
        START()
        log = read_log(PATH)
        df = log.df
        n = len(log.entries)
        """
    ),
}



def generate(path: Path, n: int) -> int:
    """Write an n-entry Era-C JSONL log (valid, machine 'bench'); return its size in bytes."""
    import orjson

    kinds = ["ADD", "SCALE", "NOTE", "xstate.done.actor", "@agent.usage"]
    qty_values = [
        lambda i: i % 97,
        lambda i: f"q{i % 13}",
        lambda i: [i % 5, i % 7],
        lambda i: {"n": i % 11, "unit": "kg"},
        lambda i: None,
        lambda i: (i % 1000) / 7,
    ]
    with path.open("wb") as fh:
        buf = []
        for i in range(n):
            if i == 0:
                event: dict[str, object] = {"type": "@agent.init", "input": {"start": 1}}
            else:
                event = {
                    "type": kinds[i % len(kinds)],
                    "qty": qty_values[i % len(qty_values)](i),
                    "note": "lorem ipsum dolor sit amet " * (1 + i % 2),
                    "seq": i,
                }
            ms = i
            entry: dict[str, object] = {
                "schemaVersion": 1,
                "id": f"evt_{i:08d}",
                "index": i,
                "recordedAt": f"2026-01-01T{(ms // 3_600_000) % 24:02d}:{(ms // 60_000) % 60:02d}:{(ms // 1000) % 60:02d}.{ms % 1000:03d}Z",
                "machineId": "bench",
                "machineVersion": "a1b2c3d4",
                "event": event,
            }
            if i == 0:
                entry["metadata"] = {"executionId": "00000000-0000-4000-8000-000000000000"}
            entry["verification"] = {"stateHash": f"{(i * 2654435761) & 0xFFFFFFFF:08x}"}
            buf.append(orjson.dumps(entry))
            if len(buf) >= 10000:
                fh.write(b"\n".join(buf) + b"\n")
                buf = []
        if buf:
            fh.write(b"\n".join(buf) + b"\n")
    return path.stat().st_size


def run(method: str, path: Path) -> dict[str, float]:
    return run_child(CHILD[method], str(path), name="PATH")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="10^5 entries instead of 10^6")
    parser.add_argument("--repeat", type=int, default=2)
    args = parser.parse_args(argv)
    n = 100_000 if args.quick else 1_000_000
    with tempfile.TemporaryDirectory(prefix="agentscope-bench-") as tmp:
        path = Path(tmp) / "log.jsonl"
        size = generate(path, n)
        print(f"generated {n:,} entries, {size / 1e6:.1f} MB ({size / n:.0f} B/entry)")
        runs: dict[str, list[dict[str, float]]] = {m: [] for m in CHILD}
        for _ in range(args.repeat):  # interleaved, so background load hits every method alike
            for method in CHILD:
                runs[method].append(run(method, path))
        results, cpu = summarize(runs, n, width=22)
        base = results["baseline"]
        ours = results["agentscope"]
        t_ratio = ours["seconds"] / base["seconds"]
        c_ratio = cpu["agentscope"] / cpu["baseline"]
        m_ratio = ours["peak_bytes"] / base["peak_bytes"]
        print(
            f"target read_log+.df <= 1.2x time, <= 1.0x memory: time {t_ratio:.2f}x, cpu {c_ratio:.2f}x "
            f"({'met' if max(t_ratio, c_ratio) <= 1.2 else 'NOT met'}), memory {m_ratio:.2f}x "
            f"({'met' if m_ratio <= 1.0 else 'NOT met'})"
        )


if __name__ == "__main__":
    main()

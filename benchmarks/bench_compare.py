"""``compare`` of two stored logs against a raw-line scan of the same two files.

Run: ``python -m benchmarks.bench_compare`` (two 10^6-entry JSONL logs sharing their first
5x10^5 entries, ~300 B each) or ``--quick`` (10^5 sharing 5x10^4). The first log is
benchmarks/bench_load.py's; the second is its first half, then the same entries with another
event type (a fork). Each method runs in its own fresh subprocess (so peak RSS is its own; both
import ``agentscope.forks`` before the clock starts, so the memory ratio compares the work, not
the imports), ``--repeat`` times, interleaved; the best wall time, the best CPU time and the
peak RSS are reported, and each peak above the RSS right after the imports.

- baseline: the two files read line by line side by side in binary, the first differing line
  found and both files counted to the end (the least any comparison must do).
- agentscope: ``compare(path_a, path_b)`` (raw records side by side, the divergent pair parsed;
  the result's kind, prefix and lengths checked).

Target (issue 29): agentscope <= 2x the baseline's time and peak memory.
"""

from __future__ import annotations

import argparse
import tempfile
import textwrap
from pathlib import Path

from benchmarks.bench_load import generate
from benchmarks.child import run_child, summarize

CHILD = {
    "baseline": textwrap.dedent(
        """
        import agentscope.forks
        from itertools import zip_longest
        A, B = PATHS.split("|")
        START()
        common = la = lb = 0
        same = True
        with open(A, "rb") as fa, open(B, "rb") as fb:
            for x, y in zip_longest(fa, fb):
                la += x is not None
                lb += y is not None
                if same and x == y:
                    common += 1
                else:
                    same = False
        n = la
        assert (common, lb) == (la // 2, la), (common, lb)
        """
    ),
    "agentscope": textwrap.dedent(
        """
        from agentscope.forks import compare
        A, B = PATHS.split("|")
        START()
        d = compare(A, B)
        n = d.left_length
        assert (d.kind, d.common_prefix, d.right_length) == ("fork", n // 2, n), d
        """
    ),
}


def fork_of(source: Path, target: Path, shared: int) -> None:
    """Write ``target``: the first ``shared`` lines of ``source``, then each later entry with
    another event type (same ids and indices: a fork at ``shared``)."""
    with source.open("rb") as fin, target.open("wb") as fout:
        for i, line in enumerate(fin):
            fout.write(line if i < shared else line.replace(b'"type":"', b'"type":"X', 1))


def run(method: str, a: Path, b: Path) -> dict[str, float]:
    return run_child(CHILD[method], f"{a}|{b}", name="PATHS")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="10^5 entries instead of 10^6")
    parser.add_argument("--repeat", type=int, default=2)
    args = parser.parse_args(argv)
    n = 100_000 if args.quick else 1_000_000
    shared = n // 2
    with tempfile.TemporaryDirectory(prefix="agentscope-bench-") as tmp:
        a, b = Path(tmp) / "a.jsonl", Path(tmp) / "b.jsonl"
        size = generate(a, n)
        fork_of(a, b, shared)
        print(f"two logs of {n:,} entries sharing {shared:,}, {size / 1e6:.1f} MB each")
        runs: dict[str, list[dict[str, float]]] = {m: [] for m in CHILD}
        for _ in range(args.repeat):  # interleaved, so background load hits every method alike
            for method in CHILD:
                runs[method].append(run(method, a, b))
        best, cpu = summarize(runs, n, width=12)
        base = best["baseline"]
        t = best["agentscope"]["seconds"] / base["seconds"]
        c = cpu["agentscope"] / cpu["baseline"]
        m = best["agentscope"]["peak_bytes"] / base["peak_bytes"]
        print(f"target compare <= 2x time and peak memory: time {t:.2f}x, cpu {c:.2f}x, memory "
              f"{m:.2f}x ({'met' if max(t, c, m) <= 2.0 else 'NOT met'})")


if __name__ == "__main__":
    main()

"""Peak and retained RSS of a Python-engine ``verify`` over a log holding one very long string.

Usage: ``python -m benchmarks.bench_memory [--quick] [--mb N]``.

The log: the counter machine's log of :func:`benchmarks.bench_python_verify.make_log` (5 entries),
written as JSONL; in the long case entry 0 starts from a snapshot whose context carries a ``note``
string of N MB (default 18, ``--quick`` 4) of mixed ASCII, accented and astral characters, so one
JSONL line is that long and every state hash runs djb2 over it. Each case runs in a fresh child process (``read_log`` + ``verify``), which reports its
peak RSS (``VmHWM``) and its RSS after the log and report are dropped (``/proc/self/statm``).
The baseline is the same log without the long string, in the same run. Targets (issue 26): the
long-line peak under 1 GiB, and the RSS retained after the drop within a few MB of the baseline's
(nothing sized to the longest string stays resident, e.g. no power table in ``hashing``).
Printed: figures only, no assertion.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

from agentscope.examples.python_machines import counter_machine
from agentscope.hashing import state_hash
from benchmarks.bench_python_verify import make_log

_CHILD = r"""
import gc, json, os, sys
import agentscope
from agentscope.examples.python_machines import counter_machine
page = os.sysconf("SC_PAGE_SIZE")
def rss() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * page
before = rss()
log = agentscope.read_log(sys.argv[1])
report = agentscope.verify(counter_machine(), log)
ok = report.ok
del log, report
gc.collect()
after = rss()
with open("/proc/self/status") as f:  # VmHWM: this process image's peak (ru_maxrss keeps the forking parent's)
    peak = next(int(line.split()[1]) * 1024 for line in f if line.startswith("VmHWM:"))
print(json.dumps({"ok": ok, "before": before, "after": after, "peak": peak}))
"""


def write_log(path: Path, long_mb: float, n: int) -> int:
    """Write the counter log; with ``long_mb``, entry 0 starts from a snapshot whose context holds
    a ``note`` of that many MB, so every state hash runs djb2 over it (hashes stamped by a fold)."""
    entries = make_log(n)
    if long_mb:
        piece = "abcdefé😀 xyz"  # ASCII, a BMP non-ASCII and an astral character (two UTF-16 units)
        note = piece * int(long_mb * 1e6 / len(piece.encode()))
        m = counter_machine()
        first = m.initial({"start": 1}).persisted
        s = m.restore({**first, "context": {**first["context"], "note": note}})
        entries[0]["event"] = {"type": "@agent.init", "snapshot": s.persisted}
        entries[0]["verification"] = {"stateHash": state_hash(s.persisted)}
        for e in entries[1:]:
            s = m.transition(s, e["event"])
            e["verification"] = {"stateHash": state_hash(s.persisted)}
    with path.open("w", encoding="utf-8") as f:
        for e in entries:
            f.write(json.dumps(e, ensure_ascii=False) + "\n")
    return path.stat().st_size


def run(path: Path) -> dict[str, int]:
    out = subprocess.run([sys.executable, "-c", _CHILD, str(path)], check=True, capture_output=True, text=True)
    result: dict[str, int] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--mb", type=float, default=None)
    args = ap.parse_args()
    mb = args.mb or (4.0 if args.quick else 18.0)
    mib = 1 << 20
    with tempfile.TemporaryDirectory() as tmp:
        base_path, long_path = Path(tmp) / "base.jsonl", Path(tmp) / "long.jsonl"
        base_size, long_size = write_log(base_path, 0, 5), write_log(long_path, mb, 5)
        base, long = run(base_path), run(long_path)
    print(f"log with one {mb:g} MB string: {long_size / mib:.1f} MiB JSONL; baseline {base_size / 1024:.0f} KiB")
    for name, r in (("baseline", base), ("long line", long)):
        print(f"  {name:9}  verify ok={r['ok']}  peak RSS {r['peak'] / mib:7.1f} MiB  "
              f"after drop {r['after'] / mib:7.1f} MiB (at start {r['before'] / mib:.1f} MiB)")
    print(f"  long-line peak / 1 GiB target: {long['peak'] / (1 << 30):.2f}")
    print(f"  retained beyond baseline after drop: {(long['after'] - base['after']) / mib:.1f} MiB")


if __name__ == "__main__":
    main()

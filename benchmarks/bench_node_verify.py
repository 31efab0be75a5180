"""Node ``verify`` against the pure Node fold of the same log, and its peak memory (issue 10).

Usage: ``python -m benchmarks.bench_node_verify [--quick] [--n N] [--grow N] [--repeat K]``.

Two generated logs (written to a temporary directory as JSONL, hashes stamped by a first fold):

- the **loop** log (``agentscope/examples/machines/loop.mjs``, N entries, default 10^5, ``--quick``
  10^4): one ``xstate.done.actor`` per entry with a recorded session id;
- the **grow** log (``benchmarks/machines/grow.mjs``, default 2,500 entries): every ``ADD``
  appends 120 characters to ``context.items`` so the persisted snapshot grows to ~300 KB.

Measured in one run, each phase in its own subprocess (so each peak RSS is its own); on the loop
log the three run in turn ``--repeat`` times (default 5). A shared machine's slow spells move one
run by up to ±20%, so the ratios are given two ways: the **median of the rounds' paired ratios**
(each round's verify against the pure fold run just before it: the robust figure) and each one's
best round against the other's best:

- ``node``: the pure Node fold (``benchmarks/node_fold.mjs``): XState ``transition`` with
  session rebinding (spec §4.1: the cache is never cleared) and the runner's re-seed interval,
  ``getPersistedSnapshot`` and the spec §2 hash in JS, compared with the recorded hash; no IPC.
  The limit.
- ``verify``: ``agentscope.verify(load_machine(...), read_log(path))`` (the public path; the
  machine load and the log read are not timed).
- ``engine``: the Node engine's share of a verify pass: ``XStateMachine.fold_iter`` (streamed,
  pipelined, sparse as in ``verify``: ``expected=`` the recorded hashes) and ``snapshot_hash``
  (the runner's JS hash) compared with each recorded hash. ``--whole`` folds without
  ``expected`` (every snapshot crosses the pipe, as for a ``Timeline``).

Printed: entries/s of each, the ratios ``verify / node`` and ``engine / node`` (goal >= 0.9) by
wall clock and by CPU (the pure fold's CPU-s over the busier of runner and Python: the two
overlap, so the busier one is the critical path), and
the peak RSS of Python (``ru_maxrss``) and of the Node runner (``VmHWM``) for the loop and the
grow log (goal for the grow log: < 300 MB), with where it starts from: Python's RSS after its
imports (pandas, numpy) and the runner's once the machine is loaded. No assertion: numbers only.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
LOOP = REPO / "agentscope" / "examples" / "machines" / "loop.mjs"
GROW = REPO / "benchmarks" / "machines" / "grow.mjs"
NODE_FOLD = REPO / "benchmarks" / "node_fold.mjs"
TEXT = 120


def loop_events(n: int) -> list[dict[str, Any]]:
    return [
        {"type": "xstate.done.actor", "actorId": "tick", "sessionId": f"rec:{i}",
         "output": {"delta": (i * 7) % 13}}
        for i in range(n)
    ]


def grow_events(n: int) -> list[dict[str, Any]]:
    return [{"type": "ADD", "text": f"{i:06d}" + "x" * (TEXT - 6)} for i in range(n)]


def write_log(path: Path, machine_path: Path, init_event: dict[str, Any], events: list[dict[str, Any]]) -> None:
    """Stamp every entry's hash with one fold (the JS hash; Python's checked on a sample)."""
    from agentscope.engines.xstate import load_machine
    from agentscope.hashing import state_hash

    with load_machine(machine_path) as m:
        s0 = m.initial(init_event.get("input")) if "input" in init_event else m.initial()
        hashes = [s0.state_hash]
        for k, snap in enumerate(m.fold_iter(s0, events, sessions={})):
            if k % 997 == 0:
                assert snap.state_hash == state_hash(snap.persisted)
            hashes.append(snap.state_hash)
        mid, version = m.machine_id, m.version
    with path.open("w", encoding="utf-8") as f:
        for i, (ev, h) in enumerate(zip([init_event, *events], hashes, strict=True)):
            entry = {
                "schemaVersion": 1, "id": f"evt_{i:08d}", "index": i,
                "recordedAt": f"2026-11-30T10:{(i // 60000) % 60:02d}:{(i // 1000) % 60:02d}.{i % 1000:03d}Z",
                "machineId": mid, "machineVersion": version, "event": ev,
                "verification": {"stateHash": h},
            }
            f.write(json.dumps(entry, separators=(",", ":")) + "\n")


def runner_peak_mb(pid: int | None) -> float:
    """Peak RSS (VmHWM) of the Node runner, MB; NaN when unavailable."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except (OSError, ValueError):
        pass
    return float("nan")


def self_peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def phase(name: str, log: str, machine: str) -> dict[str, Any]:
    """Run one measured phase in this (fresh) process."""
    from agentscope import read_log, verify
    from agentscope.engines.base import snapshot_hash
    from agentscope.engines.xstate import load_machine
    from benchmarks.bench_xstate import runner_cpu_seconds

    imports_mb = self_peak_mb()
    entries = read_log(log)
    with load_machine(machine) as m:
        runner_idle = runner_peak_mb(m.pid)
        c0 = runner_cpu_seconds(m.pid)
        p0 = time.process_time()
        t0 = time.perf_counter()
        if name == "verify":
            report = verify(m, entries)
            bad = int(getattr(report, "n_failed", 0) or 0) if not getattr(report, "ok", True) else 0
        else:
            ents = entries.entries
            init = ents[0]["event"]
            s0 = m.initial(init["input"]) if "input" in init else m.initial()
            bad = int(snapshot_hash(s0) != ents[0]["verification"]["stateHash"])
            expected = None if name == "whole" else [e["verification"]["stateHash"] for e in ents[1:]]
            steps = m.fold_iter(s0, [e["event"] for e in ents[1:]], sessions={}, expected=expected)
            for i, snap in enumerate(steps, 1):
                bad += snapshot_hash(snap) != ents[i]["verification"]["stateHash"]
        dt = time.perf_counter() - t0
        py_cpu = time.process_time() - p0
        runner_cpu = runner_cpu_seconds(m.pid) - c0
        runner = runner_peak_mb(m.pid)
    return {"entries": len(entries), "seconds": dt, "rate": len(entries) / dt, "bad": bad,
            "python_cpu": py_cpu, "runner_cpu": runner_cpu,
            "python_peak_mb": self_peak_mb(), "runner_peak_mb": runner,
            "python_imports_mb": imports_mb, "runner_idle_mb": runner_idle}


def critical_cpu(r: dict[str, Any]) -> float:
    """CPU-s on a verify's critical path: the runner and Python overlap, so the busier one."""
    return max(float(r["runner_cpu"]), float(r["python_cpu"]))


def run_phase(name: str, log: Path, machine: Path) -> dict[str, Any]:
    out = subprocess.run(
        [sys.executable, "-m", "benchmarks.bench_node_verify", "--phase", name, "--log", str(log),
         "--machine", str(machine)],
        capture_output=True, text=True, check=True, cwd=REPO,
    )
    return dict(json.loads(out.stdout.strip().splitlines()[-1]))


def run_node(log: Path, machine: Path) -> dict[str, Any]:
    out = subprocess.run(["node", "--stack-size=4000", str(NODE_FOLD), str(log), str(machine)],
                         capture_output=True, text=True, check=True, cwd=REPO)
    return dict(json.loads(out.stdout.strip().splitlines()[-1]))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--n", type=int, default=None)
    ap.add_argument("--grow", type=int, default=2500)
    ap.add_argument("--repeat", type=int, default=5, help="rounds of the loop log's three runs")
    ap.add_argument("--whole", action="store_true", help="the engine phase folds without expected=")
    ap.add_argument("--phase", choices=["verify", "engine", "whole"])
    ap.add_argument("--log")
    ap.add_argument("--machine")
    args = ap.parse_args()
    if args.phase:
        print(json.dumps(phase(args.phase, args.log, args.machine)))
        return
    n = args.n or (10_000 if args.quick else 100_000)
    with tempfile.TemporaryDirectory() as tmp:
        loop_log = Path(tmp) / "loop.jsonl"
        grow_log = Path(tmp) / "grow.jsonl"
        write_log(loop_log, LOOP, {"type": "@agent.init", "input": {"limit": n + 5}}, loop_events(n - 1))
        write_log(grow_log, GROW, {"type": "@agent.init"}, grow_events(args.grow - 1))
        print(f"loop log: {n:,} entries ({loop_log.stat().st_size / 1e6:.1f} MB); grow log: "
              f"{args.grow:,} entries ({grow_log.stat().st_size / 1e6:.1f} MB); cpus={os.cpu_count()}")
        # the three run in turn, --repeat rounds: a slow spell of a shared machine falls on a
        # round's three runs alike, so each round's paired ratios are the robust figures
        runs: dict[str, list[dict[str, Any]]] = {"node": [], "verify": [], "engine": []}
        for _ in range(args.repeat):
            runs["node"].append(run_node(loop_log, LOOP))
            runs["verify"].append(run_phase("verify", loop_log, LOOP))
            runs["engine"].append(run_phase("whole" if args.whole else "engine", loop_log, LOOP))
        node = min(runs["node"], key=lambda r: r["cpuSeconds"])
        print(f"pure Node fold : {node['rate']:9,.0f} entries/s wall, {node['cpuSeconds']:.2f} CPU-s "
              f"(best of {args.repeat}), mismatches={node['mismatches']}, node peak "
              f"{node['rssPeakMb']:.0f} MB")
        label_of = {"verify": "Node verify   ", "engine": "engine pass   " if not args.whole else "whole pass    "}
        for key in ("verify", "engine"):
            wall = [r["rate"] / a["rate"] for a, r in zip(runs["node"], runs[key], strict=True)]
            cpu = [a["cpuSeconds"] / critical_cpu(r) for a, r in zip(runs["node"], runs[key], strict=True)]
            best = min(runs[key], key=critical_cpu)
            fastest = max(r["rate"] for r in runs[key])
            print(f"{label_of[key]} : median of {args.repeat} paired rounds {statistics.median(wall):.2f}x "
                  f"wall, {statistics.median(cpu):.2f}x by CPU (rounds: wall "
                  + " ".join(f"{x:.2f}" for x in wall) + "; CPU " + " ".join(f"{x:.2f}" for x in cpu) + ")")
            print(f"{'':15}   best vs best {fastest:,.0f} entries/s wall, "
                  f"{fastest / max(r['rate'] for r in runs['node']):.2f}x wall, "
                  f"{node['cpuSeconds'] / critical_cpu(best):.2f}x by CPU (runner {best['runner_cpu']:.2f} "
                  f"CPU-s, python {best['python_cpu']:.2f} CPU-s); failed={best['bad']}; python peak "
                  f"{best['python_peak_mb']:.0f} MB, runner peak {best['runner_peak_mb']:.0f} MB")
        gnode = run_node(grow_log, GROW)
        gverify = run_phase("verify", grow_log, GROW)
        print(f"grow log ({args.grow:,} entries, ~{TEXT * args.grow / 1e3:.0f} KB last snapshot): "
              f"pure Node {gnode['rate']:,.0f}/s, Node verify {gverify['rate']:,.0f}/s "
              f"({gverify['rate'] / gnode['rate']:.2f}x); Node verify peak RSS: python "
              f"{gverify['python_peak_mb']:.0f} MB + runner {gverify['runner_peak_mb']:.0f} MB = "
              f"{gverify['python_peak_mb'] + gverify['runner_peak_mb']:.0f} MB (goal < 300; python "
              f"{gverify['python_imports_mb']:.0f} MB after its imports, runner "
              f"{gverify['runner_idle_mb']:.0f} MB once loaded; pure Node fold peak "
              f"{gnode['rssPeakMb']:.0f} MB)")


if __name__ == "__main__":
    main()

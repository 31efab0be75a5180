"""Seek speed of ``Timeline[n]`` against naive ``replay(machine, log[:n])``, in the same run.

Usage: ``python -m benchmarks.bench_replay [--quick] [--n N] [--engine python|node]``.

The log is the fixtures' "loop" machine (``agentscope/examples/machines/loop.mjs``: one invoked
``tick`` actor per step, each completion journaled as ``xstate.done.actor`` with a session id),
generated to N entries. The ``python`` engine is a faithful-in-shape Python port of that machine
(a ``MachineBase``); ``node`` uses :func:`agentscope.engines.xstate.load_machine` on the real
module when that engine is installed (default: node when available).

Reported: indexing time (one verifying pass, entries/s), then for random n the median and p95 of
``timeline[n]`` (LRU disabled, so every call is a checkpoint restore plus a fold of < k
entries), and of naive ``replay(machine, log[:n], verify=False)`` on fewer samples; the ratio of
medians is the speed-up. No assertion: numbers only.
"""

from __future__ import annotations

import argparse
import copy
import importlib
import random
import statistics
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from agentscope.engines.base import NO_INPUT, Graph, Machine, MachineBase, Snapshot, StateNodeInfo
from agentscope.hashing import canonical_json, state_hash
from agentscope.pipeline import Timeline, replay

LOOP_MJS = Path(__file__).resolve().parent.parent / "agentscope" / "examples" / "machines" / "loop.mjs"


class PyLoop(MachineBase):
    """The loop machine in Python: ``running`` re-enters on each ``tick`` completion."""

    machine_id = "loop"
    version = "a230273a"

    def __init__(self, prefix: str = "fold") -> None:
        self.prefix = prefix

    @property
    def graph(self) -> Graph:
        nodes = {
            "loop": StateNodeInfo("loop", "loop", (), "compound", None,
                                  ("loop.running", "loop.done"), "loop.running"),
            "loop.running": StateNodeInfo("loop.running", "running", ("running",), "atomic",
                                          "loop", invoke=(("tick", "tick"),)),
            "loop.done": StateNodeInfo("loop.done", "done", ("done",), "final", "loop"),
        }
        return Graph("loop", "loop", nodes)

    def _child(self, i: int, n: int) -> dict[str, Any]:
        return {"address": "loop/tick", "sessionId": f"{self.prefix}:{n}",
                "snapshot": {"status": "active", "input": {"i": i},
                             "effects": {"async": {"status": "active"}}},
                "src": "tick", "syncSnapshot": False}

    def initial(self, input: Any = NO_INPUT) -> Snapshot:
        limit = input["limit"] if isinstance(input, Mapping) else 0
        return Snapshot({"status": "active", "value": "running", "historyValue": {},
                         "_nextActorIds": {"tick": 1},
                         "context": {"limit": limit, "i": 0, "sum": 0},
                         "children": {"tick": self._child(0, 1)}, "timers": {}})

    def restore(self, persisted: Mapping[str, Any]) -> Snapshot:
        return Snapshot(copy.deepcopy(dict(persisted)))

    def child_session(self, snapshot: Snapshot, actor_id: str) -> str | None:
        c = snapshot.persisted.get("children", {}).get(actor_id)
        return c.get("sessionId") if isinstance(c, Mapping) else None

    def transition(self, snapshot: Snapshot, event: Mapping[str, Any]) -> Snapshot:
        p = snapshot.persisted
        child = p["children"].get("tick")
        if (p["status"] != "active" or event.get("type") != "xstate.done.actor"
                or child is None or event.get("sessionId") != child["sessionId"]):
            return snapshot
        ctx = p["context"]
        i, s = ctx["i"] + 1, ctx["sum"] + event["output"]["delta"]
        out = dict(p)
        out["context"] = {"limit": ctx["limit"], "i": i, "sum": s}
        if i < ctx["limit"]:
            n = p["_nextActorIds"]["tick"] + 1
            out["_nextActorIds"] = {"tick": n}
            out["children"] = {"tick": self._child(i, n)}
        else:
            out.update(status="done", value="done", children={},
                       output={"i": i, "sum": s})
        return Snapshot(out)


def make_log(n: int, *, hashes: bool) -> list[dict[str, Any]]:
    """A loop log of ``n`` entries (init + n-1 completions), hashes from the Python port (they
    equal real XState's: the node engine verifies them with zero mismatches)."""
    live = PyLoop("live")
    s = live.initial({"limit": n})
    base = {"schemaVersion": 1, "machineId": "loop", "machineVersion": "a230273a"}
    out: list[dict[str, Any]] = []
    for k in range(n):
        if k == 0:
            ev: dict[str, Any] = {"type": "@agent.init", "input": {"limit": n}}
        else:
            i = s.persisted["context"]["i"]
            ev = {"type": "xstate.done.actor", "actorId": "tick",
                  "sessionId": live.child_session(s, "tick"), "output": {"delta": (i * 7) % 13}}
            s = live.transition(s, ev)
        e = dict(base, id=f"evt_{k:08d}", index=k,
                 recordedAt=f"2026-01-01T00:00:{k % 60:02d}.000Z", event=ev)
        if hashes:
            e["verification"] = {"stateHash": state_hash(s.persisted)}
        out.append(e)
    return out


def _pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))]


def run(
    machine: Machine, n: int, k: int | Literal["auto"], seeks: int, naive: int, hashes: bool
) -> None:
    log = make_log(n, hashes=hashes)
    t0 = time.perf_counter()
    tl = Timeline(machine, log, checkpoint_every=k, cache_size=0)
    t_index = time.perf_counter() - t0
    idx = tl._index  # a benchmark may look inside
    arrays = sum(a.nbytes for a in (idx.computed, idx.has_computed, idx.recorded,
                                    idx.has_recorded, idx.verdict, idx.ignored))
    ckpt = sum(len(canonical_json(p)) for p in idx.checkpoints.values())
    print(f"entries={n} checkpoint_every={tl.checkpoint_every} ({k}) index: {t_index:.2f} s "
          f"({n / t_index:,.0f} entries/s), report ok={tl.report.ok}, "
          f"checkpoints={len(tl.checkpoint_indices)}; index memory: arrays {arrays / 1e6:.1f} MB "
          f"+ checkpoints {ckpt / 1e6:.2f} MB as JSON")
    rng = random.Random(0)
    hi = n - 1
    lo = max(1, n // 2)
    seek_t: list[float] = []
    for _ in range(seeks):
        target = rng.randint(lo, hi)
        tl.clear_cache()  # a cold seek every time
        t = time.perf_counter()
        tl[target]
        seek_t.append(time.perf_counter() - t)
    naive_t: list[float] = []
    for _ in range(naive):
        target = rng.randint(lo, hi)
        t = time.perf_counter()
        replay(machine, log[: target + 1], verify=False)
        naive_t.append(time.perf_counter() - t)
    sm, sp = statistics.median(seek_t), _pct(seek_t, 0.95)
    nm, np_ = statistics.median(naive_t), _pct(naive_t, 0.95)
    print(f"seek  timeline[n], n in [{lo}, {hi}]: median {sm * 1e3:.2f} ms, "
          f"p95 {sp * 1e3:.2f} ms ({seeks} seeks, fallbacks={tl.seek_fallbacks})")
    print(f"naive replay(log[:n]):            median {nm * 1e3:.1f} ms, "
          f"p95 {np_ * 1e3:.1f} ms ({naive} runs)")
    print(f"speed-up (median naive / median seek): {nm / sm:,.0f}x")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="small sizes (seconds)")
    ap.add_argument("--n", type=int, default=None, help="log length")
    ap.add_argument("--k", default="auto", help="checkpoint_every: an int or 'auto' (default)")
    ap.add_argument("--engine", choices=["auto", "python", "node"], default="auto")
    ap.add_argument("--seeks", type=int, default=None, help="number of timed seeks")
    ap.add_argument("--naive", type=int, default=None, help="number of timed naive replays")
    args = ap.parse_args()
    n = args.n or (20_000 if args.quick else 200_000)
    seeks, naive = (50, 3) if args.quick else (200, 5)
    seeks = args.seeks or seeks
    naive = args.naive or naive
    engine = args.engine
    machine: Machine | None = None
    if engine in ("auto", "node"):
        try:
            xstate = importlib.import_module("agentscope.engines.xstate")
            machine = xstate.load_machine(LOOP_MJS, "loopMachine")
            print("engine: node (loop.mjs, real XState)")
        except Exception as exc:  # engine not installed in this tree, or no node
            if engine == "node":
                raise
            print(f"engine: python port (node engine unavailable: {type(exc).__name__})")
    if machine is None:
        machine = PyLoop()
        print("engine: python (PyLoop)")
    try:
        k: int | Literal["auto"] = "auto" if args.k == "auto" else int(args.k)
        run(machine, n, k, seeks, naive, hashes=True)
    finally:
        machine.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""The one pass with default settings: fold count, seek median, store bytes and peak RSS.

Usage: ``python -m benchmarks.bench_timeline [--quick] [--n N] [--engine python|node|both]``.

The log is the "grow" machine (``benchmarks/machines/grow.mjs``; a Python twin below): every
``ADD`` appends a 120-character text to ``context.items``, so the persisted snapshot grows to
~300 KB over 2,500 entries, the case where count-based checkpoints (``checkpoint_every=1024``)
made a seek fold hundreds of 300 KB states. Reported, in one run per engine:

- ``Timeline(machine, log)`` (defaults) build time and **fold count** (entries applied, through a
  counting proxy; must equal the log length), then ``TimeTravel``-style reading: every frame in
  order (``iter_frames``) with the fold count again (must not grow);
- the snapshot store's bytes (keyframes plus deltas) against "every snapshot as JSON";
- the seek median / p95 of ``timeline[n]`` for random n with the LRU disabled, and the same for
  the old default (``checkpoint_every=1024``) on fewer samples; the ratio of medians;
- peak RSS of this process (``ru_maxrss``).

No assertion: numbers only (``tests/test_fold.py`` pins the counts).
"""

from __future__ import annotations

import argparse
import random
import resource
import statistics
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from agentscope.engines.base import NO_INPUT, Graph, Machine, MachineBase, Snapshot, StateNodeInfo
from agentscope.hashing import canonical_json, state_hash
from agentscope.pipeline import Timeline

GROW_MJS = Path(__file__).resolve().parent / "machines" / "grow.mjs"
TEXT = 120


class PyGrow(MachineBase):
    """The grow machine in Python (the persisted shape of XState 6's, for the hash)."""

    machine_id = "grow"
    version = "1"

    @property
    def graph(self) -> Graph:
        nodes = {
            "grow": StateNodeInfo("grow", "grow", (), "compound", None, ("grow.open",), "grow.open"),
            "grow.open": StateNodeInfo("grow.open", "open", ("open",), "atomic", "grow"),
        }
        return Graph("grow", "grow", nodes)

    def initial(self, input: Any = NO_INPUT) -> Snapshot:
        return Snapshot({"status": "active", "value": "open", "historyValue": {}, "_nextTimerId": 0,
                         "context": {"items": [], "n": 0}, "children": {}, "timers": {},
                         "machine": {"id": "grow", "version": "1"}, "version": "1"})

    def restore(self, persisted: Mapping[str, Any]) -> Snapshot:
        return Snapshot(dict(persisted))

    def child_session(self, snapshot: Snapshot, actor_id: str) -> str | None:
        return None

    def transition(self, snapshot: Snapshot, event: Mapping[str, Any]) -> Snapshot:
        p = snapshot.persisted
        if event.get("type") != "ADD":
            return snapshot
        ctx = p["context"]
        out = dict(p)
        out["context"] = {"items": [*ctx["items"], event["text"]], "n": ctx["n"] + 1}
        return Snapshot(out)


class Counting:
    """Counts the entries a machine is asked to apply (seeds and events)."""

    def __init__(self, inner: Any) -> None:
        self.inner, self.applied = inner, 0
        self.machine_id, self.version = inner.machine_id, inner.version
        if callable(getattr(inner, "fold_iter", None)):  # the Node engine streams its folds
            def fold_iter(seed: Snapshot, events: Sequence[Mapping[str, Any]], **kw: Any) -> Any:
                events = list(events)
                self.applied += len(events)
                return inner.fold_iter(seed, events, **kw)

            self.fold_iter = fold_iter

    def __getattr__(self, name: str) -> Any:
        if name == "fold_iter":
            raise AttributeError(name)  # set in __init__ when the engine has it
        return getattr(self.inner, name)

    def initial(self, input: Any = NO_INPUT) -> Snapshot:
        self.applied += 1
        return self.inner.initial(input)  # type: ignore[no-any-return]

    def restore(self, persisted: Mapping[str, Any]) -> Snapshot:
        self.applied += 1
        return self.inner.restore(persisted)  # type: ignore[no-any-return]

    def transition(self, snapshot: Snapshot, event: Mapping[str, Any]) -> Snapshot:
        self.applied += 1
        return self.inner.transition(snapshot, event)  # type: ignore[no-any-return]

    def fold(self, seed: Snapshot, events: Sequence[Mapping[str, Any]], *,
             sessions: dict[str, str] | None = None) -> list[Snapshot]:
        self.applied += len(events)
        return self.inner.fold(seed, events, sessions=sessions)  # type: ignore[no-any-return]


def make_log(n: int) -> list[dict[str, Any]]:
    """A grow log of ``n`` entries with the Python twin's hashes."""
    m = PyGrow()
    s = m.initial()
    rng = random.Random(1)
    out: list[dict[str, Any]] = []
    for k in range(n):
        if k == 0:
            ev: dict[str, Any] = {"type": "@agent.init"}
        else:
            text = "".join(rng.choice("abcdefghijklmnopqrstuvwxyz ") for _ in range(TEXT))
            ev = {"type": "ADD", "text": text}
            s = m.transition(s, ev)
        out.append({"schemaVersion": 1, "id": f"evt_{k:08d}", "index": k, "machineId": "grow",
                    "machineVersion": "1", "recordedAt": f"2026-01-01T00:00:{k % 60:02d}.000Z",
                    "event": ev, "verification": {"stateHash": state_hash(s.persisted)}})
    return out


def _seek_ms(tl: Timeline, samples: int, rng: random.Random) -> list[float]:
    out = []
    for _ in range(samples):
        n = rng.randrange(len(tl))
        tl.clear_cache()
        t0 = time.perf_counter()
        tl.at(n)
        out.append((time.perf_counter() - t0) * 1000)
    return out


def _pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))]


def run(name: str, machine: Machine, n: int, seeks: int, old_seeks: int) -> None:
    log = make_log(n)
    m = Counting(machine)
    t0 = time.perf_counter()
    tl = Timeline(m, log, cache_size=0)
    t_build = time.perf_counter() - t0
    built = m.applied
    t0 = time.perf_counter()
    for _ in tl.iter_frames():
        pass
    t_iter = time.perf_counter() - t0
    last = tl.at(n - 1).persisted
    assert last is not None
    whole = len(canonical_json(last))
    all_json = sum(len(canonical_json(p)) for _, p in tl._index.stores[0].iter_from(0)) if n <= 5000 else 0
    med = _seek_ms(tl, seeks, random.Random(0))
    print(f"[{name}] n={n:,}: build {t_build:.2f} s ({n / t_build:,.0f} entries/s), report "
          f"ok={tl.report.ok}; fold count after build = {built:,} (entries {n:,}), after reading "
          f"every frame ({t_iter:.2f} s) = {m.applied:,}; last snapshot {whole / 1e3:.0f} KB; store "
          f"{tl.memory_bytes / 1e6:.2f} MB in {len(tl.checkpoint_indices)} keyframes "
          f"(every snapshot as JSON: {all_json / 1e6:.1f} MB)")
    print(f"[{name}] default seek: median {statistics.median(med):.2f} ms, p95 {_pct(med, 0.95):.2f} ms "
          f"({seeks} random seeks, LRU off, fallbacks {tl.seek_fallbacks})")
    if old_seeks:
        old = Timeline(machine, log, checkpoint_every=1024, cache_size=0)
        om = _seek_ms(old, old_seeks, random.Random(0))
        print(f"[{name}] checkpoint_every=1024 seek: median {statistics.median(om):.1f} ms, p95 "
              f"{_pct(om, 0.95):.1f} ms ({old_seeks} seeks); default is "
              f"{statistics.median(om) / statistics.median(med):.0f}x faster")
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"[{name}] peak RSS of this process so far: {rss:.0f} MB")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--n", type=int, default=2_500)
    ap.add_argument("--engine", choices=["python", "node", "both"], default="both")
    args = ap.parse_args()
    n = 500 if args.quick else args.n
    seeks, old = (50, 5) if args.quick else (200, 20)
    if args.engine in ("python", "both"):
        run("python", PyGrow(), n, seeks, old)
    if args.engine in ("node", "both"):
        try:
            from agentscope.engines.xstate import load_machine

            nm = load_machine(GROW_MJS, "growMachine")
        except Exception as exc:  # no node / xstate: say so
            print(f"[node] skipped: {type(exc).__name__}: {exc}")
            return
        with nm:
            run("node", nm, n, seeks, old)


if __name__ == "__main__":
    main()

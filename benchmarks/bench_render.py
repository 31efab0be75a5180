"""Kernel-side cost of a frame switch in TimeTravel on a 50-state chart, and static-player size.

Run: ``python -m benchmarks.bench_render [--quick]``.

Reported (wall-clock medians, same process):
- layout of the 50-state chart (once per view);
- one frame switch of ``TimeTravel`` (set ``step``; badge, event, restyled chart, context tree,
  actors, strip, table window), stepping forward and jumping at random, with frames ready
  (the replay's own cost is ``bench_replay``'s business) and, when ``agentscope.pipeline`` and the
  Python engine are importable, with a real ``Timeline`` over a Recorder-made log;
- as a ratio against a baseline done in the same process: ``html.escape(json.dumps(context))``
  of the same frame (the cheapest possible "show the context" a view could do);
- static-player bytes per entry for growing logs (size must grow linearly);
- what a widget step sends for the chart (the classes) against the restyled SVG it used to send;
- a 1,831-state chart: its layout within the budget (collapsed), each expanded box's layout
  (once per machine), and a frame switch that moves the expanded box.

Target: a frame switch <= 50 ms.
"""

from __future__ import annotations

import argparse
import html
import json
import random
import statistics
import time
from typing import Any

from agentscope.engines.base import Graph
from agentscope.frames import Frame, Verdict
from agentscope.render import graph_from_config, layout
from agentscope.widgets import TimeTravel


def fifty_state_config() -> dict[str, Any]:
    """A 50-state machine: 4 compound groups of 8 leaves, one parallel state of 3 regions x 4."""
    states: dict[str, Any] = {}
    for g in range(4):
        leaves = {
            f"s{k}": {"on": {"NEXT": f"s{(k + 1) % 8}", "JUMP": f"#m.g{(g + 1) % 4}"}} for k in range(8)
        }
        leaves["s7"]["type"] = "final" if g == 3 else None
        leaves["s7"] = {k: v for k, v in leaves["s7"].items() if v is not None}
        states[f"g{g}"] = {"id": f"g{g}", "initial": "s0", "states": leaves, "on": {"PAR": "#m.par"}}
    regions = {
        f"r{r}": {
            "initial": "a",
            "states": {x: {"on": {"TICK": y}} for x, y in zip("abcd", "bcda", strict=True)},
        }
        for r in range(3)
    }
    states["par"] = {"type": "parallel", "states": regions, "on": {"BACK": "#m.g0"}}
    return {"id": "m", "initial": "g0", "states": states}


def frames_for(graph: Graph, n: int, ctx_keys: int) -> list[Frame]:
    rng = random.Random(7)
    leaves = [s for s, node in graph.nodes.items() if node.kind in ("atomic", "final") and ".par." not in s]
    out = []
    for i in range(n):
        if i % 5 == 4:
            value: Any = {"par": {f"r{r}": "abcd"[(i + r) % 4] for r in range(3)}}
        else:
            leaf = rng.choice(leaves).split(".")
            value = {leaf[1]: leaf[2]}
        ctx = {f"k{j}": {"n": i * j, "s": f"value {i}-{j}", "l": list(range(j % 7))} for j in range(ctx_keys)}
        persisted = {
            "status": "active",
            "value": value,
            "historyValue": {},
            "context": ctx,
            "children": {},
            "timers": {},
        }
        entry = {
            "schemaVersion": 1,
            "id": f"evt_{i:08d}",
            "index": i,
            "recordedAt": "2026-01-01T00:00:00.000Z",
            "machineId": "m",
            "machineVersion": "v1",
            "event": {"type": "NEXT", "i": i},
            "verification": {"stateHash": f"{i:08x}"},
        }
        out.append(
            Frame(
                index=i,
                entry=entry,
                persisted=persisted,
                recorded_hash=f"{i:08x}",
                computed_hash=f"{i:08x}",
                verdict=Verdict.VERIFIED,
                changed_paths=(f"/context/k{i % ctx_keys}",),
            )
        )
    return out


class _Frames:
    def __init__(self, frames: list[Frame]) -> None:
        self.frames = frames

    def __len__(self) -> int:
        return len(self.frames)

    def at(self, n: int) -> Frame:
        return self.frames[n]


class _GraphOnly:
    def __init__(self, graph: Graph) -> None:
        self.graph = graph


def median_ms(fn: Any, reps: int) -> float:
    times = []
    for _ in range(reps):
        t = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t) * 1000)
    return statistics.median(times)


def context_bytes_section(graph: Graph, frames: list[Frame]) -> None:
    """What a step sends for the context tree (the patch of changed rows, and the rows now and
    then when the patch would reach half the tree) against the whole tree it used to send."""
    tt = TimeTravel(_GraphOnly(graph), timeline=_Frames(frames))
    sent = [0]
    tt._context.observe(lambda ch: sent.__setitem__(0, sent[0] + len(json.dumps(ch["new"]))),
                        names=["base", "patch"])
    whole = 0
    steps = range(1, min(len(frames), 100))
    for k in steps:
        tt.step = k
        whole += len(json.dumps(tt._context.value))
    print(
        f"context bytes sent per step: {sent[0] / len(steps):,.0f} (patched rows) instead of "
        f"{whole / len(steps):,.0f} (whole tree): {whole / max(sent[0], 1):.1f}x less"
    )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    n = 200 if args.quick else 2000
    graph = graph_from_config(fifty_state_config())
    states = len(graph.nodes) - 1
    from agentscope.render.chart import _CACHE

    _CACHE.clear()
    t0 = time.perf_counter()
    lay = layout(graph)
    lay_ms = (time.perf_counter() - t0) * 1000
    print(f"chart: {states} states, {len(graph.transitions)} transitions; layout once: {lay_ms:.1f} ms")
    frames = frames_for(graph, n, ctx_keys=40)
    tt = TimeTravel(_GraphOnly(graph), timeline=_Frames(frames))
    rng = random.Random(1)
    steps = iter(range(1, n))
    fwd = median_ms(lambda: setattr(tt, "step", next(steps)), min(n - 1, 300))
    jump = median_ms(lambda: setattr(tt, "step", rng.randrange(n)), 300)
    base = median_ms(lambda: html.escape(json.dumps(frames[rng.randrange(n)].context)), 300)
    print(
        f"frame switch, step forward: {fwd:.2f} ms  ({fwd / base:.1f}x the json.dumps+escape baseline "
        f"of {base:.3f} ms)"
    )
    print(f"frame switch, random jump:  {jump:.2f} ms  ({jump / base:.1f}x baseline)")
    print(f"target <= 50 ms: {'OK' if max(fwd, jump) <= 50 else 'MISSED'}")
    styling = len(json.dumps(tt._chart.lit)) + len(tt._chart.head) + len(tt._chart.boxes)
    whole = len(tt.chart_view(tt.frame, tt._frames.at(tt.step - 1) if tt.step else None))
    print(
        f"chart bytes sent per step: {styling:,} (classes) instead of {whole:,} (restyled SVG): "
        f"{whole / max(styling, 1):.0f}x less; the {len(lay.svg):,}-char SVG is sent once"
    )
    context_bytes_section(graph, frames)
    sizes = []
    for m in (100, 200) if args.quick else (500, 1000, 2000):
        t = TimeTravel(_GraphOnly(graph), timeline=_Frames(frames[:m]))
        page = t.to_html()
        sizes.append((m, len(page.encode("utf-8"))))
    for m, b in sizes:
        print(f"static player: {m:>6} entries -> {b:>10,} bytes ({b / m:,.0f} B/entry)")
    (m0, b0), (m1, b1) = sizes[0], sizes[-1]
    print(f"size growth {m0}->{m1} entries: x{b1 / b0:.2f} for x{m1 / m0:.0f} entries")
    python_engine_section(args.quick)
    real_engine_section(args.quick)
    huge_section()


def huge_section() -> None:
    """The 1,831-state chart (tests/_charts.py's shape): collapsed within the budget, its boxes
    expanded once each, and a frame switch on the Python engine that moves between boxes."""
    from agentscope.engines.statechart import StatechartMachine
    from agentscope.render.chart import LAYOUT_BUDGET_S, expansion

    groups, per = 30, 60
    states: dict[str, Any] = {}
    for g in range(groups):
        inner = {
            f"s{k}": {"on": {"NEXT": f"s{(k + 1) % per}", "SKIP": f"s{(k + 2) % per}",
                             "JUMP": f"#huge.g{(g + 1) % groups}.s{k}"}}
            for k in range(per)
        }
        states[f"g{g}"] = {"initial": "s0", "states": inner, "on": {"RESET": ".s0"}}
    m = StatechartMachine({"id": "huge", "initial": "g0", "states": states})
    g = m.graph
    t0 = time.perf_counter()
    lay = layout(g)
    t1 = time.perf_counter()
    print(
        f"huge chart: {len(g.nodes):,} states, {len(g.transitions):,} transitions: laid out in "
        f"{t1 - t0:.1f} s (budget {LAYOUT_BUDGET_S:g} s), {len(lay.collapsed)} boxes summarised"
    )
    t0 = time.perf_counter()
    sub = expansion(lay, "huge.g3")
    t1 = time.perf_counter()
    again = median_ms(lambda: expansion(lay, "huge.g3"), 20)
    print(
        f"one expanded box ({len(sub.graph.nodes) - 1} states): {1000 * (t1 - t0):.0f} ms once, "
        f"{again * 1000:.1f} µs when cached"
    )
    stream = [{"type": "@agent.init"}] + [{"type": e} for e in ["NEXT", "JUMP"] * 20]
    log = [
        {"schemaVersion": 1, "id": f"e{k}", "index": k, "recordedAt": "2026-01-01T00:00:00.000Z",
         "machineId": "huge", "event": ev}
        for k, ev in enumerate(stream)
    ]
    tt = TimeTravel(m, log)
    for k in range(len(log)):  # every box on the way laid out once
        tt.step = k
    steps = iter(list(range(len(log))) * 3)
    switch = median_ms(lambda: setattr(tt, "step", next(steps)), 3 * len(log) - 1)
    print(f"huge chart frame switch (box changes every other step, boxes cached): {switch:.2f} ms")


def loop_log(n: int) -> tuple[Any, list[dict[str, Any]]]:
    """A real n-entry log of ``machines/loop.mjs``: the Node engine folds n recorded completions
    (spec §4.1 rebinding maps the recorded session ids) and each entry gets the state hash."""
    from pathlib import Path

    import agentscope
    from agentscope.engines.xstate import load_machine
    from agentscope.hashing import state_hash

    m = load_machine(
        Path(agentscope.__file__).parent / "examples" / "machines" / "loop.mjs", export="loopMachine"
    )
    seed = m.initial({"limit": n})
    events = [
        {
            "type": "xstate.done.actor",
            "actorId": "tick",
            "sessionId": f"rec:{i}",
            "output": {"delta": (i * 7) % 13},
        }
        for i in range(n)
    ]
    snaps = m.fold(seed, events)

    def entry(i: int, ev: dict[str, Any], persisted: Any) -> dict[str, Any]:
        return {
            "schemaVersion": 1,
            "id": f"evt_{i:08d}",
            "index": i,
            "recordedAt": "2026-01-01T00:00:00.000Z",
            "machineId": m.machine_id,
            "machineVersion": m.version,
            "event": ev,
            "verification": {"stateHash": state_hash(persisted)},
        }

    log = [entry(0, {"type": "@agent.init", "input": {"limit": n}}, m.persist(seed))]
    log += [entry(i, ev, m.persist(s)) for i, (ev, s) in enumerate(zip(events, snaps, strict=True), start=1)]
    return m, log


def python_engine_section(quick: bool) -> None:
    """The 50-state chart on the Python engine with a real Timeline: a frame switch end to end."""
    try:
        from agentscope.engines.statechart import StatechartMachine
        from agentscope.hashing import state_hash
        from agentscope.pipeline import Timeline  # noqa: F401
    except ImportError as exc:
        print(f"(python-engine section skipped: {exc})")
        return
    m = StatechartMachine(fifty_state_config())
    rng = random.Random(11)
    n = 500 if quick else 5_000
    s = m.initial()
    log = [
        {
            "schemaVersion": 1,
            "id": "evt_00000000",
            "index": 0,
            "recordedAt": "2026-01-01T00:00:00.000Z",
            "machineId": m.machine_id,
            "machineVersion": m.version,
            "event": {"type": "@agent.init"},
            "verification": {"stateHash": state_hash(m.persist(s))},
        }
    ]
    for i in range(1, n):
        ev = {"type": rng.choice(["NEXT", "NEXT", "JUMP", "PAR", "TICK", "TICK", "BACK"]), "seq": i}
        s = m.transition(s, ev)
        log.append(
            {
                **log[0],
                "id": f"evt_{i:08d}",
                "index": i,
                "event": ev,
                "verification": {"stateHash": state_hash(m.persist(s))},
            }
        )
    t = time.perf_counter()
    tt = TimeTravel(m, log)
    build = (time.perf_counter() - t) * 1000
    steps = iter(range(1, n))
    fwd = median_ms(lambda: setattr(tt, "step", next(steps)), min(n - 1, 300))
    jump = median_ms(lambda: setattr(tt, "step", rng.randrange(n)), 100)
    print(
        f"50-state chart, Python engine, real Timeline ({n:,} entries, k={tt.timeline.checkpoint_every}): "
        f"build {build:.0f} ms; switch forward {fwd:.1f} ms, random jump {jump:.1f} ms "
        f"(target <= 50 ms: {'OK' if max(fwd, jump) <= 50 else 'MISSED'})"
    )


def real_engine_section(quick: bool) -> None:
    """Frame switches with a real Timeline (Node engine) and the loop log's static player size."""
    try:
        from agentscope.engines.xstate import load_machine
        from agentscope.pipeline import Timeline  # noqa: F401
    except ImportError as exc:
        print(f"(real-engine section skipped: {exc})")
        return
    import shutil
    from pathlib import Path

    import agentscope

    if shutil.which("node") is None:
        print("(real-engine section skipped: no node)")
        return
    ex = Path(agentscope.__file__).parent / "examples"
    log = agentscope.read_log(ex / "g_triage.sqlite", thread="main")
    with load_machine(ex / "machines" / "triage.mjs", export="triageMachine") as m:
        t = time.perf_counter()
        tt = TimeTravel(m, log)
        build = (time.perf_counter() - t) * 1000
        rng = random.Random(3)
        steps = iter(range(1, len(log)))
        fwd = median_ms(lambda: setattr(tt, "step", next(steps)), len(log) - 1)
        tt.timeline.clear_cache()  # type: ignore[attr-defined]
        tt._frames._d.clear()
        jump = median_ms(lambda: setattr(tt, "step", rng.randrange(len(log))), 40)
        print(
            f"triage (19 states, Node engine, real Timeline): build {build:.0f} ms; "
            f"switch forward {fwd:.1f} ms, random jump {jump:.1f} ms"
        )
    n = 1_000 if quick else 10_000
    t = time.perf_counter()
    m, loop = loop_log(n)
    gen = time.perf_counter() - t
    with m:
        t = time.perf_counter()
        tt = TimeTravel(m, loop)
        page = tt.to_html()
        took = time.perf_counter() - t
    size = len(page.encode("utf-8"))
    print(
        f"loop log of {len(loop):,} entries (generated in {gen:.1f} s): static player {size:,} bytes "
        f"({size / len(loop):,.0f} B/entry), built in {took:.1f} s"
    )


if __name__ == "__main__":
    main()

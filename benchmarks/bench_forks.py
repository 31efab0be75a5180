"""Benchmark: compare() on two long logs sharing a long prefix, against a naive comparison.

Two generated logs of N entries (default 10^6; ``--quick``: 10^5) share their first N/2 entries
(a fork copied verbatim, spec §5.1) and differ after. Each log is parsed from its own JSON lines,
so the two sides hold distinct but equal dicts, as two reads of a store do. Reported in the same
process:

- ``compare``: :func:`agentscope.forks.compare` on the lists of dicts;
- ``compare+raw``: the same when the reader exposes each entry's raw JSON text (``raw_entries``);
- ``naive``: the §6.1 rule computed the obvious way, canonicalizing every event
  (``canonical_event_json``) on both sides until the first difference;
- ``naive whole``: the legacy whole-entry rule (``canonical_json`` of every entry), which
  ``compare`` also reports (``whole_entry_prefix``).

Run: ``python -m benchmarks.bench_forks [--quick] [--n N]``.
"""

from __future__ import annotations

import argparse
import gc
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import orjson

from agentscope.forks import compare
from agentscope.hashing import canonical_event_json, canonical_json


def make_lines(n: int, shared: int, side: str) -> list[bytes]:
    """JSON lines of one log: the shared prefix, then entries only this side has."""
    lines: list[bytes] = []
    for i in range(n):
        own = i >= shared
        ev: dict[str, Any]
        if i == 0:
            ev = {"type": "@agent.init", "input": {"team": "tier1", "maxKbAttempts": 2}}
        elif i % 3 == 0:
            ev = {"type": "TICKETS_RECEIVED", "tickets": [{"id": f"T-{i}", "n": i, "plan": "pro"}]}
        elif i % 3 == 1:
            ev = {"type": "xstate.done.actor", "actorId": "kb", "sessionId": f"x:{i}",
                  "output": {"article": f"KB-{i % 97}", "confidence": (i % 100) / 100}}
        else:
            ev = {"type": "DRAFT_READY", "text": f"Reply to T-{i} (rev {i % 5})", "ok": i % 2 == 0}
        if own:
            ev = {**ev, "branch": side}
        entry: dict[str, Any] = {
            "schemaVersion": 1,
            "id": f"evt_{i:08d}",
            "index": i,
            "recordedAt": f"2026-11-30T10:{(i // 60000) % 60:02d}:{(i // 1000) % 60:02d}.{i % 1000:03d}Z"
            if not own
            else f"2026-11-30T{11 if side == 'a' else 12}:00:00.{i % 1000:03d}Z",
            "machineId": "supportTriage",
            "machineVersion": "efe50ed5",
            "event": ev,
        }
        if i == 0:
            entry["metadata"] = {"executionId": "26f6e978-a4ce-4960-9286-82ea9e40d605"}
        entry["verification"] = {"stateHash": f"{(i * 2654435761 + (7 if own and side == 'b' else 0)) & 0xFFFFFFFF:08x}"}
        lines.append(orjson.dumps(entry))
    return lines


@dataclass
class RawLog:
    """The shape of a reader that keeps each entry's raw JSON text next to the parsed dict."""

    entries: list[dict[str, Any]]
    raw_entries: list[bytes]


def naive_prefix(a: Sequence[Mapping[str, Any]], b: Sequence[Mapping[str, Any]]) -> int:
    """§6.1 by canonicalizing every event on both sides (the baseline)."""
    n = min(len(a), len(b))
    for i in range(n):
        x, y = a[i], b[i]
        if x["id"] != y["id"] or x["index"] != y["index"]:
            return i
        if canonical_event_json(x["event"]) != canonical_event_json(y["event"]):
            return i
        hx = x.get("verification", {}).get("stateHash")
        hy = y.get("verification", {}).get("stateHash")
        if hx is not None and hy is not None and hx != hy:
            return i
    return n


def naive_whole_prefix(a: Sequence[Mapping[str, Any]], b: Sequence[Mapping[str, Any]]) -> int:
    """The legacy whole-entry rule (§6.2 ``stableJson`` of every entry) the obvious way."""
    n = min(len(a), len(b))
    for i in range(n):
        if canonical_json(a[i]) != canonical_json(b[i]):
            return i
    return n


def timed(fn: Any) -> tuple[float, Any]:
    t = time.perf_counter()
    out = fn()
    return time.perf_counter() - t, out


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="10^5 entries instead of 10^6")
    ap.add_argument("--n", type=int, default=None, help="entries per log")
    args = ap.parse_args(argv)
    n = args.n or (100_000 if args.quick else 1_000_000)
    shared = n // 2

    gc.disable()
    t_gen, (la, lb) = timed(lambda: (make_lines(n, shared, "a"), make_lines(n, shared, "b")))
    t_parse, (ea, eb) = timed(lambda: ([orjson.loads(x) for x in la], [orjson.loads(x) for x in lb]))
    gc.freeze()
    gc.enable()
    print(f"logs: 2 x {n:,} entries, shared prefix {shared:,} (generate {t_gen:.1f}s, parse {t_parse:.1f}s)")

    t_cmp, d = timed(lambda: compare(ea, eb))
    t_raw, d_raw = timed(lambda: compare(RawLog(ea, la), RawLog(eb, lb)))
    t_naive, k = timed(lambda: naive_prefix(ea, eb))
    t_whole, kw = timed(lambda: naive_whole_prefix(ea, eb))
    assert d.divergence == shared == k == d_raw.divergence, (d, k)
    assert d.whole_entry_prefix == kw == shared
    assert d.kind == d_raw.kind == "fork"
    print(f"compare      {t_cmp:8.3f} s   {d!r}")
    print(f"compare+raw  {t_raw:8.3f} s")
    print(f"naive        {t_naive:8.3f} s   (canonical JSON of every event up to the divergence)")
    print(f"naive whole  {t_whole:8.3f} s   (canonical JSON of every whole entry, the legacy rule)")
    print(f"ratio naive/compare     = {t_naive / t_cmp:6.1f}x")
    print(f"ratio naive/compare+raw = {t_naive / t_raw:6.1f}x")
    print(f"ratio (naive + naive whole)/compare = {(t_naive + t_whole) / t_cmp:6.1f}x  (compare gives both)")


if __name__ == "__main__":
    main()

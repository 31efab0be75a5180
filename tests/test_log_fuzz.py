"""Fuzzing every reader with generated malformed inputs: only typed errors, never a hang.

Seeds are small valid sources built here (a JSON log, the same as JSONL, a SQLite store, CSV,
Parquet, an XState inspection recording); each input is a seed put through a few random
mutations (byte flips, truncation, splices, inserted tokens, structural edits of the JSON
values: deep nesting, huge or non-finite numbers, lone surrogates, nulls, wrong types, removed
keys). Every input is read with ``errors="raise"`` and ``"collect"``, sniffed and with the format
forced, and the result's views (``entries``, ``df``, ``problems``) are touched. The only
acceptable exceptions are :class:`~agentscope.errors.AgentscopeError` subclasses; an input that
takes longer than :data:`PER_INPUT_SECONDS` counts as a hang.

The default suite runs :data:`QUICK` inputs; the ``slow`` test runs :data:`FULL` (10^5).
"""

from __future__ import annotations

import io
import json
import random
import signal
import sqlite3
import tempfile
import time
import traceback
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from agentscope.errors import AgentscopeError
from agentscope.log import read_log

QUICK = 2_000
FULL = 100_000
PER_INPUT_SECONDS = 10.0


def _entries(n: int = 4) -> list[dict[str, Any]]:
    out = []
    for i in range(n):
        out.append({
            "schemaVersion": 1, "id": f"evt_{i:08d}", "index": i,
            "recordedAt": f"2026-01-01T00:00:0{i}.123456789Z", "machineId": "m", "machineVersion": "v1",
            "event": {"type": "@agent.init", "input": {"a": [1, 2.5, "x"]}} if i == 0 else {"type": "INC", "by": i},
            **({"metadata": {"executionId": "exec_1"}} if i == 0 else {}),
            **({"verification": {"stateHash": "0123abcd"}} if i % 2 else {}),
        })
    return out


def _sqlite_bytes(entries: list[dict[str, Any]]) -> bytes:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "s.sqlite"
        con = sqlite3.connect(path)
        con.execute('CREATE TABLE "agent_event_log" (thread_id TEXT NOT NULL, idx INTEGER NOT NULL, '
                    "entry_id TEXT NOT NULL, entry TEXT NOT NULL, PRIMARY KEY (thread_id, idx))")
        con.execute('CREATE TABLE "agent_snapshots" (id TEXT PRIMARY KEY, snapshot TEXT NOT NULL)')
        for t in ("main", "other"):
            for e in entries:
                con.execute("INSERT INTO agent_event_log VALUES (?,?,?,?)", (t, e["index"], e["id"], json.dumps(e)))
        con.execute("INSERT INTO agent_snapshots VALUES ('main', ?)",
                    (json.dumps({"status": "active", "agentMeta": {"logIndex": 3}}),))
        con.commit()
        con.close()
        return path.read_bytes()


def _csv_bytes() -> bytes:
    rows = ["type,payload,timestamp,id", 'INC,"{""by"": 1}",2026-01-01T00:00:00Z,a',
            'DEC,"{""by"": 2}",1767225600000,b', "RESET,,2026-01-01 10:00,c"]
    return ("\n".join(rows) + "\n").encode()


def _parquet_bytes() -> bytes:
    import pandas as pd

    buf = io.BytesIO()
    pd.DataFrame({"type": ["INC", "DEC"], "payload": ['{"by": 1}', '{"by": 2}'],
                  "timestamp": ["2026-01-01T00:00:00Z", "2026-01-01T00:00:01Z"]}).to_parquet(buf)
    return buf.getvalue()


def _inspection_bytes() -> bytes:
    root, child = "r:0", "r:1"
    snap = {"status": "active", "value": "idle", "historyValue": {}, "context": {"n": 1}, "children": {}, "timers": {}}
    recs = [
        {"type": "@xstate.actor", "rootId": root, "sessionId": root, "actorId": "m", "snapshot": snap,
         "definition": json.dumps({"id": "m", "initial": "idle", "states": {"idle": {}}})},
        {"type": "@xstate.snapshot", "rootId": root, "sessionId": root, "event": {"type": "@xstate.init"}, "snapshot": snap},
        {"type": "@xstate.actor", "rootId": root, "sessionId": child, "parentId": root, "actorId": "c", "src": "c"},
        {"type": "@xstate.event", "rootId": root, "sessionId": root, "sourceId": child, "event": {"type": "GO"}},
        {"type": "@xstate.transition", "rootId": root, "sessionId": root, "event": {"type": "GO"},
         "snapshot": {**snap, "value": "busy"}, "createdAt": 1767225600000},
    ]
    return "".join(json.dumps(r) + "\n" for r in recs).encode()


def seeds() -> list[tuple[str, bytes]]:
    entries = _entries()
    return [
        ("json", json.dumps(entries).encode()),
        ("json", json.dumps({"events": entries, "snapshot": {"agentMeta": {"logIndex": 3}}}).encode()),
        ("jsonl", "".join(json.dumps(e) + "\n" for e in entries).encode()),
        ("sqlite", _sqlite_bytes(entries)),
        ("csv", _csv_bytes()),
        ("parquet", _parquet_bytes()),
        ("jsonl", _inspection_bytes()),
    ]


# -- mutations ---------------------------------------------------------------------------------------

_TOKENS = [b"NaN", b"-0", b"1e400", b"-1e400", b"\\ud83d", b'"\\udc00"', b"null", b"[]", b"{}", b"\x00", b"\xff",
           b"\n", b"\r\n", b'"', b"{", b"}", b"[", b"]", b",", b":", b"123456789012345678901234567890",
           b"\xef\xbb\xbf", b"Infinity", b"true", b'"@agent.init"', b'"@xstate.actor"', b'"schemaVersion":1',
           b"\xe2\x80\xa8", b"0000-01-01T00:00:00Z", b"SQLite format 3\x00", b"PAR1"]

_WEIRD: list[Callable[[random.Random], Any]] = [
    lambda r: None, lambda r: True, lambda r: -0.0, lambda r: 2**64 + r.randrange(9), lambda r: 1e308 * 10,
    lambda r: r.random() * 1e-320, lambda r: "\ud800", lambda r: "x" * r.randrange(0, 300), lambda r: [],
    lambda r: {}, lambda r: nested(r.randrange(1, 3000)), lambda r: {"type": r.choice(["", None, 3, "@agent.init"])},
    lambda r: "2026-02-30T24:00:00+23:59", lambda r: "0000-01-01T00:00:00Z", lambda r: "9999-12-31T23:59:59Z",
    lambda r: -1, lambda r: 1.5, lambda r: "", lambda r: {"__proto__": {"a": 1}},
]


def nested(depth: int) -> Any:
    value: Any = 0
    for _ in range(depth):
        value = [value]
    return value


def _mutate_json(value: Any, r: random.Random) -> Any:
    """Replace, delete or retype one random place in a parsed JSON value."""
    if isinstance(value, dict) and value and r.random() < 0.8:
        key = r.choice(list(value))
        roll = r.random()
        if roll < 0.25:
            return {k: v for k, v in value.items() if k != key}
        if roll < 0.6:
            return {**value, key: r.choice(_WEIRD)(r)}
        return {**value, key: _mutate_json(value[key], r)}
    if isinstance(value, list) and value and r.random() < 0.8:
        i = r.randrange(len(value))
        roll = r.random()
        if roll < 0.2:
            return value[:i] + value[i + 1 :]
        if roll < 0.35:
            return value[: i + 1] + value[i:]  # duplicate an item
        if roll < 0.6:
            return [*value[:i], r.choice(_WEIRD)(r), *value[i + 1:]]
        return [*value[:i], _mutate_json(value[i], r), *value[i + 1:]]
    return r.choice(_WEIRD)(r)


def _dumps(value: Any) -> bytes:
    return json.dumps(value, allow_nan=True).encode("utf-8", "surrogatepass")


def mutate(kind: str, data: bytes, r: random.Random) -> bytes:
    if kind in ("json", "jsonl") and r.random() < 0.4:
        try:
            if kind == "json":
                data = _dumps(_mutate_json(json.loads(data), r))
            else:
                lines = [json.loads(x) for x in data.splitlines() if x.strip()]
                mutated = _mutate_json(lines, r)
                items = mutated if isinstance(mutated, list) else [mutated]
                data = b"\n".join(_dumps(v) for v in items) + b"\n"
        except (ValueError, RecursionError):
            pass
    buf = bytearray(data)
    for _ in range(r.randrange(1, 4)):
        roll = r.random()
        pos = r.randrange(len(buf) + 1)
        if roll < 0.25 and buf:
            buf[min(pos, len(buf) - 1)] = r.randrange(256)
        elif roll < 0.4:
            del buf[pos:]
        elif roll < 0.55:
            buf[pos:pos] = r.choice(_TOKENS)
        elif roll < 0.7 and buf:
            end = min(len(buf), pos + r.randrange(1, 64))
            del buf[pos:end]
        elif roll < 0.8 and buf:
            start = r.randrange(len(buf))
            buf[pos:pos] = buf[start : start + r.randrange(1, 200)]
        elif roll < 0.9 and kind == "sqlite" and len(buf) >= 2 * 4096:
            page = r.randrange(1, len(buf) // 4096)  # zero or scramble a whole page, not page 1
            buf[page * 4096 : (page + 1) * 4096] = bytes(4096) if r.random() < 0.5 else r.randbytes(4096)
        else:
            buf[pos:pos] = r.randbytes(r.randrange(1, 16))
    return bytes(buf)


def inputs(n: int, seed: int = 20261201) -> Iterator[tuple[int, str, bytes]]:
    r = random.Random(seed)
    base = seeds()
    for i in range(n):
        kind, data = base[i % len(base)]
        yield i, kind, mutate(kind, data, r)


# -- running ------------------------------------------------------------------------------------------


class Hang(Exception):
    pass


@contextmanager
def deadline(seconds: float) -> Iterator[None]:
    def on_alarm(signum: int, frame: Any) -> None:
        raise Hang(f"still running after {seconds} s")

    old = signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def read_everything(data: bytes, kind: str, i: int, tmp: Path) -> None:
    """Read ``data`` the ways a user would; touch the results' views."""
    mode = "collect" if i % 2 else "raise"
    attempts: list[Callable[[], Any]] = [lambda: read_log(data, errors=mode)]
    fmt = {"json": "json", "jsonl": "jsonl", "sqlite": "sqlite", "csv": "csv", "parquet": "parquet"}[kind]
    attempts.append(lambda: read_log(data, format=fmt, errors=mode))  # type: ignore[arg-type]
    if i % 7 == 0:
        path = tmp / f"in{i % 3}.{ {'sqlite': 'sqlite', 'csv': 'csv', 'parquet': 'parquet'}.get(kind, 'jsonl') }"
        path.write_bytes(data)
        attempts.append(lambda: read_log(path, errors=mode))
        if kind == "sqlite":
            from agentscope.log import read_threads

            attempts.append(lambda: read_threads(path))
    if i % 11 == 0:
        attempts.append(lambda: read_log(io.StringIO(data.decode("utf-8", "surrogateescape")), errors=mode))
    for attempt in attempts:
        try:
            log = attempt()
        except AgentscopeError:
            continue
        if hasattr(log, "entries"):
            _ = log.entries, log.df, log.problems, repr(log), log.segments, log.execution_id


def run_fuzz(n: int, tmp: Path) -> None:
    failures: list[str] = []
    hangs: list[str] = []
    slowest = 0.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for i, kind, data in inputs(n):
            t0 = time.perf_counter()
            try:
                with deadline(PER_INPUT_SECONDS):
                    read_everything(data, kind, i, tmp)
            except Hang:
                hangs.append(f"#{i} {kind} {data[:80]!r}")
            except Exception as exc:  # the thing under test: anything untyped is a failure
                tb = traceback.format_exception_only(type(exc), exc)[-1].strip()
                failures.append(f"#{i} {kind}: {tb[:300]} :: {data[:120]!r}")
            slowest = max(slowest, time.perf_counter() - t0)
            if len(failures) > 20:
                break
    assert not hangs, f"{len(hangs)} inputs hung:\n" + "\n".join(hangs[:10])
    assert not failures, f"{len(failures)} untyped exceptions:\n" + "\n".join(failures[:20])


def test_every_reader_survives_malformed_inputs(tmp_path: Path) -> None:
    run_fuzz(QUICK, tmp_path)


@pytest.mark.slow
def test_every_reader_survives_a_hundred_thousand_malformed_inputs(tmp_path: Path) -> None:
    run_fuzz(FULL, tmp_path)


def test_the_generator_makes_malformed_inputs_of_every_kind() -> None:
    """The fuzz inputs are mostly not valid logs (else the test would prove little)."""
    kinds: dict[str, int] = {}
    rejected: dict[str, int] = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for _i, kind, data in inputs(350):
            kinds[kind] = kinds.get(kind, 0) + 1
            try:
                read_log(data)
            except AgentscopeError:
                rejected[kind] = rejected.get(kind, 0) + 1
    assert set(kinds) == {"json", "jsonl", "sqlite", "csv", "parquet"}
    for kind, count in kinds.items():
        assert rejected.get(kind, 0) >= count * 0.3, (kind, rejected.get(kind, 0), count)

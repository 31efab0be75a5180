"""Fuzzing every reader, the query parser and the follow tail with bytes mutated from the real
fixtures (issue 26, "Fuzzing, as the trusted systems do").

Seeds are real: the recorded logs of ``tests/fixtures/real`` and the bundled store of
``agentscope/examples`` (JSON, SQLite), the same logs exported by ``agentscope export`` (JSONL,
CSV, Parquet), an XState inspection stream recorded by real XState through Node
(``tests/xstate_machines/record_inspection.mjs``), the query expressions the docs show, a JSONL
log being appended (the follow tail), and the counter logs given to the command line
(``agentscope show`` / ``verify``, :func:`check_cli`). Hypothesis draws a seed and a few mutations (byte
flips, truncation, deletions, splices, inserted tokens such as ``NaN``, a BOM, lone surrogates,
deep nesting; structural edits of one JSON value or of one SQLite row; whole SQLite pages zeroed)
and shrinks any failure to a small input.

Every input is read the ways a user reads it: :func:`agentscope.stores.open_store` (each
thread's ``Store.log``) and :func:`agentscope.read_log`, sniffed and with the format forced,
``errors="raise"`` and ``"collect"``, and the views touched (``entries``, ``df``, ``problems``).
The only acceptable outcomes (:func:`check_reader`, :func:`check_query`, :func:`check_follow`):

- a correct read: an input that is the seed (or, for JSON, parses to the seed's value) reads to
  the seed's entries; a followed file's entries are its complete lines; the source's bytes are
  unchanged (read-only);
- a typed :class:`~agentscope.errors.AgentscopeError` naming the place: a ``LogFormatError``
  names its source, a ``QueryError`` its column, a ``FollowProblem`` its source and kind.

Anything else — an untyped exception, an error that names no place, an input that runs longer
than :data:`PER_CASE_SECONDS` — is a failure. :class:`Tally` counts the cases run and the
failures; the test suite and ``python -m benchmarks.fuzz_readers`` print it.
"""

from __future__ import annotations

import itertools
import json
import math
import os
import shutil
import signal
import sqlite3
import subprocess
import tempfile
import warnings
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentscope.errors import AgentscopeError, FollowProblem, LogFormatError, QueryError

REPO = Path(__file__).resolve().parent.parent
FIXTURES = REPO / "tests" / "fixtures" / "real"

READERS = ("json", "jsonl", "sqlite", "csv", "parquet", "inspection")
"""The reader targets; with ``query``, ``follow`` and ``cli``, :data:`TARGETS`."""
TARGETS = (*READERS, "query", "follow", "cli")

PER_CASE_SECONDS = 10.0
"""A case running longer than this counts as a hang (a failure)."""

QUICK_CASES = {"json": 450, "jsonl": 400, "sqlite": 250, "csv": 300, "parquet": 250,
               "inspection": 300, "query": 1200, "follow": 200, "cli": 150}
"""Cases per target in ``make test`` (3,500 in all, well under a minute on one core)."""

LONG_CASES = 100_000
"""Cases per target behind ``make test-long`` (``pytest -m slow``)."""

CASES_ENV = "AGENTSCOPE_FUZZ_CASES"
"""Set to a number to run that many cases per target in the quick test too."""


# -- seeds --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Seed:
    """One real input: ``data`` as a file named ``*{suffix}``; ``threads`` each thread's entries
    as the seed reads (what an unmutated input must read back; a single log file's one thread
    is named after the file)."""

    name: str
    data: bytes
    suffix: str
    threads: dict[str, list[dict[str, Any]]] = field(default_factory=dict)

    def __repr__(self) -> str:  # hypothesis shows the seed of a failing case: its name is enough
        return f"Seed({self.name!r})"


def _export(log_path: Path, to: str, tmp: Path) -> bytes:
    """``agentscope export LOG --to TO`` (the public exporter), as bytes."""
    from agentscope.cli import main

    out = tmp / f"{log_path.stem}.{to}"
    if out.exists():
        out.unlink()
    rc = main(["export", str(log_path), "--to", to, "-o", str(out)])
    assert rc == 0, (log_path, to, rc)
    return out.read_bytes()


def _threads(path: Path) -> dict[str, list[dict[str, Any]]]:
    from agentscope.stores import open_store

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with open_store(path) as store:
            return {t.thread_id: list(store.log(t.thread_id).entries) for t in store.threads()}


def node_ready() -> bool:
    return shutil.which("node") is not None and (REPO / "node_modules" / "xstate").is_dir()


def _inspection_recording(tmp: Path) -> bytes | None:
    """A recording of real XState (lampMachine with an inspector), or ``None`` without Node."""
    if not node_ready():
        return None
    out = tmp / "inspection.jsonl"
    script = REPO / "tests" / "xstate_machines" / "record_inspection.mjs"
    subprocess.run(["node", str(script), str(out), "statelyai", "1"], check=True, cwd=REPO,
                   timeout=120, capture_output=True)
    return out.read_bytes()


QUERY_SEEDS = (
    "context.count >= 3",
    "event.type == 'INC' and context.count > 2",
    "in('active') or status == 'done'",
    "!(context.count < 0) && index >= 1",
    "context.rejections <= 1",
    "context.queue.length <= 7",
    "event.by != undefined && entry.index === 3",
    "verdict == 'ok' || value == \"idle\"",
    "context['count'] == 9007199254740993",
    "context.a.b[0].c != null",
    "not (event.type in ['INC', 'DEC'])",
    "index < -1.5e3 or context.count == 'x\\u0041\\n'",
)
"""Expressions in the forms the docs and tests show (``docs/``, ``tests/test_queries.py``)."""


def build_seeds(tmp: Path) -> dict[str, list[Seed]]:
    """Every target's seeds, built from the real fixtures into ``tmp`` (exports, a recording)."""
    tmp.mkdir(parents=True, exist_ok=True)
    json_logs = [FIXTURES / n for n in ("a_counter.log.json", "e_bridge.v1.log.json",
                                         "c_fork_memory.parent.log.json", "g_triage.second.log.json")]
    seeds: dict[str, list[Seed]] = {t: [] for t in TARGETS}
    for p in json_logs:
        seeds["json"].append(Seed(p.name, p.read_bytes(), ".json", _threads(p)))
    compact = FIXTURES / "e_bridge.v2.log.json"
    data = json.dumps(json.loads(compact.read_bytes()), separators=(",", ":")).encode()
    seeds["json"].append(Seed("e_bridge.v2 (compact)", data, ".json", _threads(compact)))
    for p in (FIXTURES / "c_fork.sqlite", REPO / "agentscope" / "examples" / "g_triage.sqlite"):
        seeds["sqlite"].append(Seed(p.name, p.read_bytes(), ".sqlite", _threads(p)))
    for to, suffix in (("jsonl", ".jsonl"), ("csv", ".csv"), ("parquet", ".parquet")):
        for p in (json_logs[0], json_logs[3]):
            data = _export(p, to, tmp)
            out = tmp / f"seed-{p.stem}{suffix}"
            out.write_bytes(data)
            seeds[to].append(Seed(f"{p.stem} as {to}", data, suffix, _threads(out)))
    seeds["follow"] = list(seeds["jsonl"])
    recording = _inspection_recording(tmp)
    if recording is not None:
        out = tmp / "seed-inspection.jsonl"
        out.write_bytes(recording)
        seeds["inspection"].append(Seed("lamp inspection (statelyai)", recording, ".jsonl", _threads(out)))
    seeds["query"] = [Seed(q, q.encode(), "") for q in QUERY_SEEDS]
    counter = [x for x in (*seeds["json"], *seeds["jsonl"], *seeds["sqlite"])
               if x.name.startswith(("a_counter", "c_fork"))]
    seeds["cli"] = counter  # logs of the counter machine: `verify` folds them with its Python twin
    return seeds


# -- mutations ----------------------------------------------------------------------------------

TOKENS = (b"NaN", b"-0", b"1e400", b"-1e400", b"\\ud83d", b'"\\udc00"', b"null", b"[]", b"{}", b"\x00",
          b"\xff", b"\n", b"\r\n", b'"', b"{", b"}", b"[", b"]", b",", b":", b"123456789012345678901234567890",
          b"\xef\xbb\xbf", b"Infinity", b"true", b'"@agent.init"', b'"@xstate.actor"', b'"schemaVersion":1',
          b"\xe2\x80\xa8", b"0000-01-01T00:00:00Z", b"SQLite format 3\x00", b"PAR1", b"[" * 3000,
          b"{\"a\":" * 1500, b",\"index\":99", b'"index":-1', b"9007199254740993", b"1" * 5000)
"""Byte strings inserted by the ``insert`` mutation (JSON and file-format edge cases)."""

QUERY_TOKENS = ("(" * 3000, ")" * 50, "!" * 3000, "not " * 1200, ".a" * 5000, "9" * 5000, "1e999",
                "9007199254740993", "[", "]", "'", '"', "\\", "\\u", "\\ud800", "in(", "==", "===", "&&",
                "||", "!", "-", "undefined", "null", "context", "event", ".", "[0]", "['x']", " ", "\x00",
                "\U0001F600", "\ud800", "(" * 100 + "1" + ")" * 100)
"""Strings inserted into query expressions (deep nesting, long chains, huge literals)."""

WEIRD: tuple[Any, ...] = (None, True, -0.0, 2**64 + 1, math.inf, 5e-324, "\ud800", "x" * 300, [], {},
                          "2026-02-30T24:00:00+23:59", "0000-01-01T00:00:00Z", -1, 1.5, "",
                          {"type": "@agent.init"}, {"type": 3}, {"__proto__": {"a": 1}}, math.nan)
"""Values put in place of one JSON value by the ``json`` mutation."""

_POS = st.integers(0, 2**31)

BYTE_OPS = st.one_of(
    st.tuples(st.just("flip"), _POS, st.integers(0, 255)),
    st.tuples(st.just("cut"), _POS),
    st.tuples(st.just("insert"), _POS, st.one_of(st.sampled_from(TOKENS), st.binary(min_size=1, max_size=16))),
    st.tuples(st.just("delete"), _POS, st.integers(1, 64)),
    st.tuples(st.just("copy"), _POS, _POS, st.integers(1, 200)),
)
"""Byte-level mutations: ``(op, position, argument…)``; positions are taken modulo the length."""

JSON_OP = st.tuples(st.just("json"), st.lists(_POS, min_size=1, max_size=6),
                    st.integers(0, len(WEIRD) + 2))
"""Replace (or delete, or duplicate) the value at a drawn path of the parsed JSON (or of one row
of a SQLite store)."""

PAGE_OP = st.tuples(st.just("page"), _POS, st.booleans())
"""Zero (or fill with a pattern) one whole SQLite page other than page 1."""


def mutation_ops(target: str) -> st.SearchStrategy[list[tuple[Any, ...]]]:
    ops: list[st.SearchStrategy[tuple[Any, ...]]] = [BYTE_OPS]
    if target in ("json", "jsonl", "inspection", "sqlite", "follow"):
        ops.append(JSON_OP)
    if target == "sqlite":
        ops.append(PAGE_OP)
    return st.lists(st.one_of(*ops), min_size=1, max_size=4)


def _edit_json(value: Any, path: Sequence[int], choice: int) -> Any:
    """``value`` with the place at ``path`` (each step picks a key or item modulo the size)
    replaced by ``WEIRD[choice]``, deleted (``choice == len(WEIRD)``) or duplicated."""
    if not path or not isinstance(value, dict | list) or not value:
        return WEIRD[choice % len(WEIRD)]
    step, rest = path[0], path[1:]
    if isinstance(value, dict):
        key = list(value)[step % len(value)]
        if not rest and choice == len(WEIRD):
            return {k: v for k, v in value.items() if k != key}
        return {**value, key: _edit_json(value[key], rest, choice)}
    i = step % len(value)
    if not rest and choice == len(WEIRD):
        return value[:i] + value[i + 1:]
    if not rest and choice > len(WEIRD):
        return value[: i + 1] + value[i:]
    return [*value[:i], _edit_json(value[i], rest, choice), *value[i + 1:]]


def _dumps(value: Any) -> bytes:
    return json.dumps(value, allow_nan=True).encode("utf-8", "surrogatepass")


def _json_op(data: bytes, suffix: str, path: Sequence[int], choice: int) -> bytes:
    try:
        if suffix == ".json":
            return _dumps(_edit_json(json.loads(data), path, choice))
        lines = [json.loads(x) for x in data.splitlines() if x.strip()]
        edited = _edit_json(lines, path, choice)
        items = edited if isinstance(edited, list) else [edited]
        return b"".join(_dumps(v) + b"\n" for v in items)
    except (ValueError, RecursionError):
        return data  # not JSON any more (an earlier byte mutation): a no-op


def _sqlite_row_op(data: bytes, path: Sequence[int], choice: int) -> bytes:
    """Edit the JSON of one row's ``entry`` (rows picked by ``path[0]``), through SQLite."""
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "s.sqlite"
        db.write_bytes(data)
        try:
            con = sqlite3.connect(db)
            try:
                rows = con.execute("SELECT rowid, entry FROM agent_event_log ORDER BY rowid").fetchall()
                if not rows:
                    return data
                rowid, text = rows[path[0] % len(rows)]
                edited = _edit_json(json.loads(text), path[1:], choice)
                con.execute("UPDATE agent_event_log SET entry = ? WHERE rowid = ?",
                            (_dumps(edited).decode("utf-8", "surrogatepass").encode("utf-8", "replace")
                             .decode(), rowid))
                con.commit()
            finally:
                con.close()
        except (sqlite3.Error, ValueError, TypeError, RecursionError):
            return data  # an earlier byte mutation broke the file: a no-op
        return db.read_bytes()


def mutate(data: bytes, suffix: str, ops: Sequence[tuple[Any, ...]]) -> bytes:
    """Apply ``ops`` (from :func:`mutation_ops`) to ``data`` in order."""
    buf = bytearray(data)
    for op in ops:
        n = len(buf)
        kind = op[0]
        if kind == "json":
            if suffix == ".sqlite":
                buf = bytearray(_sqlite_row_op(bytes(buf), op[1], op[2]))
            else:
                buf = bytearray(_json_op(bytes(buf), suffix, op[1], op[2]))
        elif kind == "page":
            pages = n // 4096
            if pages >= 2:
                page = 1 + op[1] % (pages - 1)
                buf[page * 4096:(page + 1) * 4096] = bytes(4096) if op[2] else b"\xa5" * 4096
        elif kind == "flip" and n:
            buf[op[1] % n] = op[2]
        elif kind == "cut":
            del buf[op[1] % (n + 1):]
        elif kind == "insert":
            pos = op[1] % (n + 1)
            buf[pos:pos] = op[2]
        elif kind == "delete" and n:
            pos = op[1] % n
            del buf[pos:pos + op[2]]
        elif kind == "copy" and n:
            pos, start = op[1] % (n + 1), op[2] % n
            buf[pos:pos] = buf[start:start + op[3]]
    return bytes(buf)


def mutate_query(text: str, ops: Sequence[tuple[str, int, str]]) -> str:
    """Insert, delete or replace characters of an expression (``ops`` from :data:`QUERY_OPS`)."""
    for kind, pos, piece in ops:
        i = pos % (len(text) + 1)
        if kind == "insert":
            text = text[:i] + piece + text[i:]
        elif kind == "delete":
            text = text[:i] + text[i + len(piece):]
        else:
            text = text[:i] + piece + text[i + len(piece):]
    return text


QUERY_OPS = st.lists(st.tuples(st.sampled_from(("insert", "delete", "replace")), _POS,
                               st.one_of(st.sampled_from(QUERY_TOKENS), st.text(min_size=1, max_size=8))),
                     min_size=0, max_size=4)


# -- running ------------------------------------------------------------------------------------


class Hang(Exception):
    """A case ran longer than :data:`PER_CASE_SECONDS`."""


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


class Untyped(AssertionError):
    """An outcome that is neither a correct read nor a typed error naming the place."""


def _named(exc: AgentscopeError, where: str) -> None:
    """A typed error must name the place: a log error its source, a query error its column."""
    if isinstance(exc, LogFormatError) and not (exc.source or where in str(exc)):
        raise Untyped(f"{type(exc).__name__} names no source: {exc}")
    if isinstance(exc, QueryError) and exc.position is None and exc.expression is None:
        raise Untyped(f"QueryError names no column: {exc}")
    if not str(exc).strip():
        raise Untyped(f"{type(exc).__name__} with an empty message")


def _touch(log: Any) -> int:
    _ = log.df, log.problems, repr(log), log.segments
    entries = log.entries
    if len(log.df) != len(entries):
        raise Untyped(f"df has {len(log.df)} rows for {len(entries)} entries")
    return len(entries)


def strict(value: Any) -> Any:
    """``value`` in a form whose ``==`` is JSON equality as JS sees it: ``true`` is not ``1``,
    ``-0`` is not ``0`` (Python's ``True == 1`` and ``-0.0 == 0`` would hide a mutation); ``NaN``
    equals ``NaN`` (a reader keeps what the text says; the envelope rules then reject it)."""
    if isinstance(value, bool) or value is None:
        return ("lit", value)
    if hasattr(value, "literal") and hasattr(value, "value_type"):  # the JSON parser's marker
        value = float(value.literal)  # of -0, NaN, ±Infinity (agentscope.log.validate)
    if isinstance(value, float) and math.isnan(value):
        return ("nan",)
    if isinstance(value, int | float):
        return ("num", float(value) if abs(value) < 2**1023 else value, math.copysign(1, value) < 0)
    if isinstance(value, dict):
        return ("obj", tuple((k, strict(v)) for k, v in value.items()))
    if isinstance(value, list):
        return ("arr", tuple(strict(v) for v in value))
    return ("str", value)


def _same_json(a: bytes, b: bytes, suffix: str) -> bool:
    """Whether two inputs parse to the same JSON values (a mutation that changed nothing)."""
    if a == b:
        return True
    if suffix not in (".json", ".jsonl"):
        return False
    try:
        if suffix == ".json":
            return bool(strict(json.loads(a)) == strict(json.loads(b)))
        # line by line, blank lines kept: a record's line number is part of what is read
        # (an inspection record's metadata.inspection.line)
        la = [json.loads(x) if x.strip() else None for x in a.split(b"\n")]
        lb = [json.loads(x) if x.strip() else None for x in b.split(b"\n")]
        return strict(la) == strict(lb) and a.endswith(b"\n") == b.endswith(b"\n")
    except (ValueError, RecursionError):
        return False


def check_reader(seed: Seed, data: bytes, tmp: Path, collect: bool) -> str:
    """Read ``data`` every way a user would; return ``"read"`` or ``"typed"``.

    Raises :class:`Untyped` (or lets an untyped exception through) on a wrong outcome.
    """
    from agentscope.log import read_log
    from agentscope.stores import open_store

    mode = "collect" if collect else "raise"
    tmp.mkdir(parents=True, exist_ok=True)
    path = tmp / f"input{seed.suffix}"
    for side in tmp.glob("input*"):
        side.unlink()
    path.write_bytes(data)
    fmt = {".json": "json", ".jsonl": "jsonl", ".sqlite": "sqlite", ".csv": "csv", ".parquet": "parquet"}
    read: dict[str, list[Any]] = {}
    outcome = "read"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            with open_store(path) as store:
                for info in store.threads():
                    try:
                        log = store.log(info.thread_id, errors=mode)  # type: ignore[arg-type]
                    except AgentscopeError as exc:
                        _named(exc, path.name)
                        outcome = "typed"
                        continue
                    _touch(log)
                    read[info.thread_id] = list(log.entries)
        except AgentscopeError as exc:
            _named(exc, path.name)
            outcome = "typed"
        attempts: list[Callable[[], Any]] = [lambda: read_log(path, errors=mode),
                                             lambda: read_log(data, format=fmt[seed.suffix], errors=mode)]
        for attempt in attempts:
            try:
                _touch(attempt())
            except AgentscopeError as exc:
                _named(exc, path.name if attempt is attempts[0] else "<bytes>")
    if path.read_bytes() != data:
        raise Untyped("reading changed the source's bytes")
    left = sorted(p.name for p in tmp.glob("input*") if p != path)
    if left:
        raise Untyped(f"reading left files beside the source: {left}")
    same = (strict(read) == strict(seed.threads) if seed.suffix == ".sqlite"
            else strict(list(read.values())) == strict(list(seed.threads.values())))
    if _same_json(data, seed.data, seed.suffix) and (outcome != "read" or not same):
        raise Untyped("an input equal to the seed did not read back the seed's entries")
    return outcome


_TIMELINE: Any = None


def query_timeline() -> Any:
    """The real counter log (``a_counter.log.json``) folded by the counter machine (Python engine)."""
    global _TIMELINE
    if _TIMELINE is None:
        from agentscope.examples.python_machines import counter_machine
        from agentscope.log import read_log
        from agentscope.pipeline import Timeline

        _TIMELINE = Timeline(counter_machine(), read_log(FIXTURES / "a_counter.log.json"))
    return _TIMELINE


def check_query(text: str) -> str:
    """Parse ``text`` and evaluate it on every step of the real counter timeline."""
    from agentscope._query_lang import compile_expression

    try:
        compile_expression(text)
        hits = query_timeline().find_all(text)
    except QueryError as exc:
        _named(exc, "")
        return "typed"
    if not all(isinstance(i, int) for i in hits):
        raise Untyped(f"find_all returned {hits!r}")
    return "read"


def check_follow(seed: Seed, keep: int, tail: bytes, chunks: Sequence[int], tmp: Path) -> str:
    """Follow a JSONL file holding the seed's first ``keep`` lines while ``tail`` (mutated bytes)
    is appended in pieces; poll after each. The follower's entries must be the file's complete
    lines (JSON) in order, or following stops with a typed problem naming the source."""
    from agentscope.follow import follow

    lines = seed.data.splitlines(keepends=True)
    keep = keep % (len(lines) + 1)
    path = tmp / "followed.jsonl"
    for side in tmp.glob("followed*"):
        side.unlink()
    path.write_bytes(b"".join(lines[:keep]))
    cuts = sorted({c % (len(tail) + 1) for c in chunks} | {0, len(tail)})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            follower = follow(None, path)
            for a, b in itertools.pairwise(cuts):
                with path.open("ab") as fh:
                    fh.write(tail[a:b])
                follower.poll()
                if follower.problem is not None:
                    break
        except AgentscopeError as exc:
            _named(exc, path.name)
            return "typed"
    problem = follower.problem
    if problem is not None and (
        not isinstance(problem, FollowProblem) or not problem.source or not problem.message
    ):
        raise Untyped(f"a follow problem that names no source: {problem!r}")
    got = list(follower.timeline.entries)
    if strict(got[:keep]) != strict([json.loads(x) for x in lines[:keep]]):
        raise Untyped("the follower's first entries are not the file's first lines")
    complete = [x for x in path.read_bytes().split(b"\n")[:-1] if x.strip()]  # blank lines: none
    for i in range(keep, len(got)):
        try:
            want = json.loads(complete[i])
        except (ValueError, IndexError, RecursionError):
            raise Untyped(f"the follower read entry {i}, which is not a complete JSON line") from None
        if strict(got[i]) != strict(want):
            raise Untyped(f"the follower's entry {i} is not the file's line {i + 1}")
    # an appended line that breaks the envelope rules is kept and reported as the log's problem
    # (the timeline's report names the entry), as every reader of the same source does
    if problem is not None or len(follower.timeline.report.problems):
        return "typed"
    return "read"


COUNTER = "py:agentscope.examples.python_machines:counter_machine"


def check_cli(seed: Seed, data: bytes, tmp: Path) -> str:
    """``agentscope show --json`` and ``agentscope verify --machine`` (the counter machine's
    Python twin folds what was read) on the input: exit 0 or 1 with a result, or exit 2 with one
    line ``agentscope: error: …`` on stderr; never a traceback, never another code."""
    import contextlib
    import io

    from agentscope.cli import main

    tmp.mkdir(parents=True, exist_ok=True)
    path = tmp / f"cli{seed.suffix}"
    path.write_bytes(data)
    target = f"{path}#main" if seed.suffix == ".sqlite" else str(path)
    outcome = "read"
    for argv in (["show", target, "--json"], ["verify", target, "--machine", COUNTER]):
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            rc = main(argv)
        lines = err.getvalue().splitlines()
        if rc == 2:
            outcome = "typed"
            if len(lines) != 1 or not lines[0].startswith("agentscope: error: "):
                raise Untyped(f"{argv[0]} exit 2 without one error line: {err.getvalue()[:300]!r}")
        elif rc not in (0, 1):
            raise Untyped(f"{argv[0]} exit {rc}")
        elif argv[0] == "show":
            json.loads(out.getvalue())  # the result, as JSON
    if path.read_bytes() != data:
        raise Untyped("the command changed the source's bytes")
    return outcome


@dataclass
class Tally:
    """Cases run and untyped outcomes found, per target."""

    cases: dict[str, int] = field(default_factory=dict)
    typed: dict[str, int] = field(default_factory=dict)
    untyped: dict[str, list[str]] = field(default_factory=dict)

    def add(self, target: str, outcome: str | None, failure: str | None = None) -> None:
        self.cases[target] = self.cases.get(target, 0) + 1
        if outcome == "typed":
            self.typed[target] = self.typed.get(target, 0) + 1
        if failure is not None:
            self.untyped.setdefault(target, []).append(failure)

    def line(self) -> str:
        n = sum(self.cases.values())
        bad = sum(len(v) for v in self.untyped.values())
        per = ", ".join(f"{t} {self.cases[t]:,}" for t in self.cases)
        return f"fuzz: {n:,} cases run ({per}); untyped exceptions found: {bad}"


def run_target(target: str, seeds: Sequence[Seed], cases: int, tmp: Path, tally: Tally, *,
               derandomize: bool = True, keep_going: bool = False) -> None:
    """Run ``cases`` hypothesis-generated cases of ``target``; count them in ``tally``.

    ``keep_going=False`` (the tests): the first untyped outcome fails (after hypothesis shrank
    it). ``keep_going=True`` (the script): every one is counted and listed.
    """
    if not seeds:
        return
    cfg = settings(max_examples=cases, deadline=None, database=None, derandomize=derandomize,
                   suppress_health_check=list(HealthCheck), report_multiple_bugs=False)
    tmp.mkdir(parents=True, exist_ok=True)

    def once(run: Callable[[], str], shown: str) -> None:
        try:
            with deadline(PER_CASE_SECONDS):
                outcome = run()
        except Exception as exc:  # the thing under test: anything untyped is a failure
            if not keep_going:
                tally.add(target, None, f"{type(exc).__name__}: {exc}"[:300])
                raise
            tally.add(target, None, f"{type(exc).__name__}: {str(exc)[:200]} :: {shown[:160]}")
            return
        tally.add(target, outcome)

    if target == "query":
        @cfg
        @given(seed=st.sampled_from(list(seeds)), ops=QUERY_OPS,
               free=st.one_of(st.none(), st.text(max_size=40)))
        def case_q(seed: Seed, ops: list[tuple[str, int, str]], free: str | None) -> None:
            text = free if free is not None else mutate_query(seed.name, ops)
            once(lambda: check_query(text), repr(text))

        case_q()
    elif target == "follow":
        @cfg
        @given(seed=st.sampled_from(list(seeds)), keep=st.integers(0, 40), ops=mutation_ops("jsonl"),
               chunks=st.lists(_POS, max_size=3))
        def case_f(seed: Seed, keep: int, ops: list[tuple[Any, ...]], chunks: list[int]) -> None:
            lines = seed.data.splitlines(keepends=True)
            tail = mutate(b"".join(lines[keep % (len(lines) + 1):]), ".jsonl", ops)
            once(lambda: check_follow(seed, keep, tail, chunks, tmp), repr(tail[:160]))

        case_f()
    elif target == "cli":
        @cfg
        @given(seed=st.sampled_from(list(seeds)), ops=mutation_ops("json"))
        def case_c(seed: Seed, ops: list[tuple[Any, ...]]) -> None:
            data = mutate(seed.data, seed.suffix, ops)
            once(lambda: check_cli(seed, data, tmp), f"{seed.name}: {data[:160]!r}")

        case_c()
    else:
        @cfg
        @given(seed=st.sampled_from(list(seeds)), ops=mutation_ops(target), collect=st.booleans())
        def case_r(seed: Seed, ops: list[tuple[Any, ...]], collect: bool) -> None:
            data = mutate(seed.data, seed.suffix, ops)
            once(lambda: check_reader(seed, data, tmp, collect), f"{seed.name}: {data[:160]!r}")

        case_r()


def cases_for(target: str, long: bool) -> int:
    override = os.environ.get(CASES_ENV)
    if override:
        return int(override)
    return LONG_CASES if long else QUICK_CASES[target]

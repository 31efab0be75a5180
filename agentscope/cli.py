"""The ``agentscope`` command: verify, inspect, compare and export event logs from a terminal or CI.

A thin layer over the library: every subcommand opens its source with
:func:`agentscope.stores.open_store` (a file or a ``postgresql://`` URL),
replays with :mod:`agentscope.pipeline` (or :func:`agentscope.bulk.verify_store` for a whole
store), compares with :func:`agentscope.forks.compare`, and prints the result as a table for
people or as JSON (``--json``) for programs.

Exit codes (for CI):

- ``0``: verified / identical / done;
- ``1``: a mismatch (``verify``), a divergence (``diff``), a violated invariant (``check``), or
  no step matching (``query``, as ``grep``);
- ``2``: bad input or usage: a missing or unreadable file, a malformed entry, an unknown thread,
  a machine that cannot load, wrong arguments. The message is one line on stderr, without a
  traceback (``--debug`` shows it).

Machines are given as ``path/to/machine.mjs[:export]`` (the Node engine; also ``.js``, ``.cjs``,
and TypeScript ``.ts``/``.mts`` through tsx) or ``py:package.module:attr`` (the Python engine), see
:class:`agentscope.bulk.MachineSpec`. ``agentscope setup-node`` installs the pinned xstate and tsx
where machines outside a Node project find them (:mod:`agentscope.engines.nodepath`).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn, TextIO, TypeVar

from agentscope import __version__
from agentscope.errors import (
    AgentscopeError,
    EngineError,
    LogFormatError,
    MachineLoadError,
    ThreadNotFoundError,
)
from agentscope.log.problems import FAILS_THE_LOG, ProblemKind

if TYPE_CHECKING:  # pragma: no cover
    from agentscope.bulk import MachineSpec
    from agentscope.engines.base import Machine
    from agentscope.log import EventLog
    from agentscope.stores import Store

__all__ = ["EXIT_BAD_INPUT", "EXIT_FAILED", "EXIT_OK", "build_parser", "main", "verdict_exit"]

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_BAD_INPUT = 2
EXIT_BROKEN_PIPE = 141
"""The reader of our output closed the pipe (128 + SIGPIPE, as a shell reports it): not a pass."""

_PACKAGE = Path(__file__).resolve().parent
DEMO_STORE = _PACKAGE / "examples" / "g_triage.sqlite"
DEMO_THREAD = "main"
DEMO_NODE_MACHINE = _PACKAGE / "examples" / "machines" / "triage.mjs"
DEMO_NODE_EXPORT = "triageMachine"
DEMO_PY_MACHINE = "py:agentscope.examples.python_machines:triage_machine"
_PROBLEM_ROWS = 10


class UsageError(AgentscopeError, ValueError):
    """Arguments that parse but make no sense together (exit code 2)."""

    code = "usage"


# ---------------------------------------------------------------------------------------------
# Output helpers


_PIPE_WIDTH = 240
"""Columns assumed when stdout is not a terminal (the widest table row fits without folding)."""


class _Writer:
    """The one path from a command to standard output (and error): every write is checked.

    Text is written with each lone UTF-16 surrogate (legal in log data) as its ``\\udxxx`` escape
    (``hashing.escape_lone_surrogates``: a terminal, pipe or file takes only well-formed text);
    bytes (``export -o -``) as they are. On a real file descriptor, the bytes go out through
    ``os.write`` in a loop until all are written (CPython's buffered stdout returns a short
    write's count without an error, so a reader that went away mid-write would go unnoticed); a
    closed pipe raises :class:`BrokenPipeError`, which :func:`main` answers with exit 141 and no
    word. A stream without a descriptor (a notebook's, a test's capture) takes the text itself.
    rich's console and the JSON printers write through here; other attributes (``isatty``,
    ``encoding``, ``fileno``, …) are the stream's.
    """

    def __init__(self, stream: TextIO, scrub: Callable[[str], str] | None = None) -> None:
        self._stream = stream
        self._scrub = scrub
        try:
            self._fd: int | None = stream.fileno()
        except (AttributeError, OSError, ValueError):  # io.UnsupportedOperation is an OSError
            self._fd = None

    @property
    def takes_bytes(self) -> bool:
        """Whether :meth:`write_bytes` can write any bytes (a real descriptor)."""
        return self._fd is not None

    def write(self, text: str) -> int:
        from agentscope.hashing import escape_lone_surrogates

        text = escape_lone_surrogates(text)
        if self._scrub is not None:
            text = self._scrub(text)
        if self._fd is None:
            return self._stream.write(text)
        encoding = getattr(self._stream, "encoding", None) or "utf-8"
        errors = getattr(self._stream, "errors", None) or "strict"
        self.write_bytes(text.encode(encoding, errors))
        return len(text)

    def write_bytes(self, data: bytes) -> None:
        """Write all of ``data``; raises BrokenPipeError when the reader went away."""
        if self._fd is None:  # a text-only stream: only text formats come here
            self._stream.write(data.decode("utf-8"))
            self._stream.flush()
            return
        self._stream.flush()  # anything the text layer still holds goes first
        view = memoryview(data)
        while view:
            written = os.write(self._fd, view)
            view = view[written:]

    def flush(self) -> None:
        self._stream.flush()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


class _Out:
    """Where results go: stdout for results, stderr for notes; rich when it is a terminal."""

    def __init__(self, stdout: TextIO, stderr: TextIO, *, as_json: bool,
                 scrub: Callable[[str], str] | None = None) -> None:
        from rich.console import Console as _Console

        from agentscope.hashing import escape_lone_surrogates

        class Console(_Console):
            def render_str(self, text: str, **kwargs: Any) -> Any:
                # every string rich lays out (a table cell, a title, a printed line) goes through
                # here before it is measured: a lone surrogate takes its six-character
                # ``\udxxx`` escape now, so the columns are sized for the text the stream
                # writes (_Writer would otherwise widen a measured cell afterwards)
                return super().render_str(escape_lone_surrogates(text), **kwargs)

            def on_broken_pipe(self) -> None:
                # rich would exit 1 by itself; let main() answer a closed pipe the same way
                # for tables and JSON (exit 141)
                self.quiet = True
                raise BrokenPipeError(32, "Broken pipe")

        self.as_json = as_json
        self.stdout = _Writer(stdout, scrub)
        self.console = Console(file=self.stdout, highlight=False, soft_wrap=True)  # type: ignore[arg-type]
        if not self.console.is_terminal:
            # piped or redirected: rich would assume 80 columns and fold cells letter by letter;
            # tables take only their natural width, so a wide console just keeps rows whole
            self.console = Console(
                file=self.stdout, highlight=False, soft_wrap=True,  # type: ignore[arg-type]
                width=max(self.console.width, _PIPE_WIDTH),
            )
        self.err = Console(file=_Writer(stderr, scrub), highlight=False, soft_wrap=True)  # type: ignore[arg-type]

    @property
    def interactive(self) -> bool:
        return bool(self.console.is_terminal)

    def json(self, data: Any) -> None:
        self.stdout.write(json.dumps(data, indent=2, ensure_ascii=False, default=_json_default) + "\n")
        self.stdout.flush()

    def print(self, *objects: Any, **kwargs: Any) -> None:
        self.console.print(*objects, **kwargs)

    def note(self, text: str) -> None:
        self.err.print(text, markup=False)

    @contextmanager
    def progress(self, description: str, total: int) -> Iterator[Callable[[int, int], None]]:
        """A transient progress bar on stderr, shown only when stdout is a terminal."""
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        show = self.interactive and not self.as_json
        if not show:
            yield lambda done, total: None
            return
        with Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=self.err,
            transient=True,
        ) as bar:
            task = bar.add_task(description, total=total)

            def update(done: int, total: int) -> None:
                bar.update(task, completed=done, total=total)

            yield update


def _json_default(value: Any) -> Any:
    if hasattr(value, "isoformat"):
        return value.isoformat()
    if hasattr(value, "item"):  # numpy scalars
        return value.item()
    if isinstance(value, tuple | set | frozenset):
        return list(value)
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    return str(value)


def _cell(value: Any) -> Any:
    """A JSON-friendly scalar from a pandas cell (NA -> None, numpy -> Python)."""
    try:
        import pandas as pd

        if value is None or (not isinstance(value, list | tuple | dict) and pd.isna(value)):
            return None
    except (TypeError, ValueError):
        pass
    if hasattr(value, "item"):
        return value.item()
    return value


def _records(df: Any) -> list[dict[str, Any]]:
    return [{str(k): _cell(v) for k, v in row.items()} for row in df.to_dict("records")]


# ---------------------------------------------------------------------------------------------
# Inputs


_MANY_THREADS = ("sqlite", "postgresql")
"""Store kinds that hold threads (``STORE#THREAD``); any other source is one log."""


def _open(source: str) -> Store:
    """``source`` (a path or a ``postgresql://`` URL) opened as a read-only store: the one way a
    command reaches a source (:func:`agentscope.stores.open_store`). A directory is not taken
    here (every command reads one log or a store's threads)."""
    from agentscope.stores import open_store

    if "://" not in source:
        from agentscope.log.readers import existing_path

        existing_path(Path(source).expanduser())  # "no such file", "is a directory, not a log file"
        source = os.fspath(Path(source).expanduser())
    return open_store(source)


def _name(store: Store) -> str:
    """How a store is named in a table title: a file's name, a URL's display form."""
    return store.address if "://" in store.address else Path(store.address).name


def _split_thread(text: str) -> tuple[str, str | None]:
    """``STORE#THREAD`` -> (STORE, THREAD): :func:`agentscope.stores.split_thread`."""
    from agentscope.stores import split_thread

    return split_thread(text)


def _read(source: str, thread: str | None, *, option: bool = True) -> EventLog:
    """Read ``source`` (a thread of it for a store); ``option``: the command has ``--thread``.

    A missing or unnamed thread is re-raised as :class:`ThreadNotFoundError` phrased for the
    command line (``STORE#THREAD``) instead of the library's ``thread=`` wording.
    """
    with _open(source) as store:
        try:
            log = store.log(thread)
        except ThreadNotFoundError as exc:
            if store.kind not in _MANY_THREADS:
                raise  # a JSON/JSONL/CSV log has no threads: the library's message says so
            raise _cli_thread_error(source, store, thread, option) from exc
    if len(log) == 0:
        raise LogFormatError(
            "the log has no entries; a log starts with the reserved '@agent.init' entry (spec §1.3)",
            source=source,
        )
    return log


def _cli_thread_error(source: str, store: Store, thread: str | None, option: bool) -> ThreadNotFoundError:
    from agentscope.stores import display_address

    try:
        names = [t.thread_id for t in store.threads()]
    except AgentscopeError:
        names = []
    listed = ", ".join(names) or "none"
    how = "STORE#THREAD" + (" or --thread THREAD" if option else "")
    if thread is None:
        text = f"the store holds {len(names)} threads; name one as {how} (threads: {listed})"
    else:
        text = f"no thread {thread!r} in the store; name one as {how} (threads: {listed})"
    return ThreadNotFoundError(text, source=display_address(source))


def _spec(text: str) -> MachineSpec:
    from agentscope.bulk import MachineSpec

    return MachineSpec.parse(text)


def _machines_option(text: str) -> dict[str, MachineSpec]:
    """Parse ``v1=M1,v2=M2``."""
    out: dict[str, MachineSpec] = {}
    for part in [p for p in text.split(",") if p.strip()]:
        version, sep, spec = part.partition("=")
        if not sep or not version.strip() or not spec.strip():
            raise UsageError(f"--machines expects VERSION=MACHINE[,VERSION=MACHINE...], got {part!r}")
        out[version.strip()] = _spec(spec.strip())
    if not out:
        raise UsageError("--machines is empty")
    return out


class _Machines:
    """The machines a command replays with: loaded on demand, closed on exit."""

    def __init__(self, machine: str | None, machines: str | None) -> None:
        if machine is not None and machines is not None:
            raise UsageError("give either --machine or --machines, not both")
        self.spec = _spec(machine) if machine is not None else None
        self.by_version = _machines_option(machines) if machines is not None else {}
        self._open: list[Machine] = []

    @property
    def given(self) -> bool:
        return self.spec is not None or bool(self.by_version)

    def _load(self, spec: MachineSpec) -> Machine:
        m = spec.load()
        self._open.append(m)
        return m

    def load(self) -> tuple[Machine | None, dict[str, Machine] | None]:
        primary = self._load(self.spec) if self.spec is not None else None
        extra = {v: self._load(s) for v, s in self.by_version.items()} or None
        return primary, extra

    def close(self) -> None:
        for m in self._open:
            with suppress(AgentscopeError):
                m.close()
        self._open.clear()

    def __enter__(self) -> _Machines:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


# ---------------------------------------------------------------------------------------------
# Subcommands


def _cmd_threads(args: argparse.Namespace, out: _Out) -> int:
    from agentscope.stores import read_threads

    if "://" not in args.store and Path(args.store).is_file() and Path(args.store).stat().st_size == 0:
        raise LogFormatError("the file is empty: `threads` lists the threads of a §5.2 SQLite store",
                             source=args.store)
    with _open(args.store) as store:
        if store.kind not in _MANY_THREADS:
            raise LogFormatError("not a SQLite store: `threads` lists the threads of a §5.2 store; a "
                                 "JSON, JSONL, CSV or Parquet log is one run (`agentscope show` "
                                 "summarises it)", source=store.address)
        df = read_threads(store)
    records = _records(df)
    if out.as_json:
        out.json({"store": store.address, "threads": records})
        return EXIT_OK
    from rich.table import Table

    table = Table(title=f"{_name(store)}: {len(records)} thread(s)", title_justify="left")
    cols = [("thread_id", "thread"), ("length", "entries"), ("machine_id", "machine"),
            ("machine_version", "version"), ("first_recorded_at", "first entry (UTC)"),
            ("last_recorded_at", "last entry (UTC)")]
    if "error" in df.columns and df["error"].notna().any():  # a damaged store: say which thread
        cols += [("readable", "readable"), ("error", "error")]
    cols = [(c, h) for c, h in cols if c in df.columns]
    for c, h in cols:
        table.add_column(h, justify="right" if c == "length" else "left", overflow="fold")
    for rec in records:
        table.add_row(*[_short(rec.get(c), 200 if c == "error" else 40) for c, _ in cols])
    out.print(table)
    return EXIT_OK


def _short(value: Any, limit: int = 40) -> str:
    if value is None:
        return ""
    text = str(value.strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]) if hasattr(value, "strftime") else str(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _first_line(text: Any, limit: int | None = 240) -> str:
    """The first line of a message, shortened to ``limit`` characters (``None``: whole): engine
    errors can carry a whole JS stack."""
    if text is None:
        return ""
    line = str(text).strip().splitlines()[0] if str(text).strip() else ""
    return line if limit is None else _short(line, limit)


def _first_failure(report: Any) -> str | None:
    """The first failing entry as the ``first failure`` line shows it: ``entry <i> (<id>, <event
    type>): <kind>: <detail>; …``, from the report's problems at that entry (``None`` when no
    entry failed). When the report has a :attr:`~agentscope.pipeline.VerifyReport.machine_mismatch`
    (printed on its own line above), the entry's ``machine-mismatch`` problem is left out and an
    ``engine-error`` shows what the machine raised (its ``MachineExecutionError.raised``), so the
    line says only what is new. Each detail keeps its first line (an engine error's JS stack
    follows it) and is never shortened."""
    from agentscope.errors import MachineExecutionError

    first = report.first_mismatch
    if first is None:
        return None
    i = first["index"]
    raised = next((e.raised for e in report.errors
                   if isinstance(e, MachineExecutionError) and e.index == i and e.raised), None)
    mismatch_shown = report.machine_mismatch is not None
    probs = report.problems
    items: list[str] = []
    for rec in _records(probs[probs["index"] == i][["kind", "message"]]):
        kind = rec["kind"]
        if kind == ProblemKind.MACHINE_MISMATCH and mismatch_shown:
            continue
        detail = raised if kind == ProblemKind.ENGINE_ERROR and raised else rec["message"]
        items.append(f"{kind}: {_first_line(detail, limit=None).rstrip('.')}")
    if not items:  # only the machine mismatch: said above
        items.append("machine-mismatch (see above)")
    return f"entry {i} ({first['id']}, {first['event_type']}): " + "; ".join(items)


def _verify_one(log: EventLog, ms: _Machines, strict: bool) -> Any:
    from agentscope.pipeline import verify

    primary, extra = ms.load()
    return verify(primary, log, machines=extra, strict=strict)


def _report_json(report: Any, log: EventLog, machine: str | None) -> dict[str, Any]:
    counts = report.counts()
    first = report.first_mismatch
    mismatches = _records(report.mismatches[[
        "index", "id", "event_type", "recorded_hash", "computed_hash", "verdict", "kind", "explanation",
    ]])
    table = report.problems
    return {
        "source": log.source,
        "thread": log.thread,
        "machine": machine,
        "entries": len(log),
        "ok": bool(report.ok),
        "machine_mismatch": report.machine_mismatch,
        "counts": counts,
        "first_mismatch": None if first is None else _cell(first["index"]),
        "first_mismatch_id": None if first is None else first["id"],
        "mismatches": mismatches,
        "problems": _records(table[["index", "id", "field", "kind", "message", "expected", "actual"]]),
        "summary": report.summary(),
    }


_VERDICTS = ("verified", "explained", "mismatch", "missing", "unchecked")


def _checked(counts: Mapping[str, int]) -> int:
    """Entries whose recorded hash was compared with the replayed state."""
    return int(counts.get("verified", 0) + counts.get("explained", 0) + counts.get("mismatch", 0))


def _nothing_checked(counts: Mapping[str, int], allow_missing: bool) -> bool:
    """Entries were replayed but none carried a hash to check (and ``--allow-missing`` was not
    given): "nothing verified"."""
    entries = sum(counts.get(k, 0) for k in _VERDICTS)
    return not allow_missing and entries > 0 and _checked(counts) == 0


def verdict_exit(counts: Mapping[str, int], *, failed: bool, allow_missing: bool) -> int:
    """The one verdict -> exit-code rule of every command that verifies (``verify``, ``show
    --machine``, ``demo``, ``watch``).

    ``counts`` maps verdicts (``verified``, ``explained``, ``mismatch``, ``missing``,
    ``unchecked``) to entries; ``failed`` is a failure beyond the counts (a report that is not
    ok, a followed source that went wrong). :data:`EXIT_FAILED` on a failure or a mismatch, and
    when entries were replayed but none carried a hash ("nothing verified", docs/cli.md) unless
    ``allow_missing``; else :data:`EXIT_OK`.
    """
    if failed or counts.get("mismatch", 0) or _nothing_checked(counts, allow_missing):
        return EXIT_FAILED
    return EXIT_OK


def _nothing_verified(report: Any, log: EventLog, allow_missing: bool) -> bool:
    """True when no entry carried a hash to check (and ``--allow-missing`` was not given)."""
    return bool(report.ok) and _nothing_checked(report.counts(), allow_missing)


def _verdict_line(report: Any) -> str:
    """The verdict counts (they add up to the entries), then the ``ignored`` flag apart."""
    counts = report.counts()
    line = ", ".join(f"{counts[k]} {k}" for k in _VERDICTS if counts.get(k))
    if counts.get("ignored"):
        line += (f" (flag: {counts['ignored']} of these entries were ignored by the machine, "
                 "the state did not react)")
    return line


def _print_report(out: _Out, report: Any, log: EventLog, *, allow_missing: bool = True) -> None:
    from rich.table import Table

    from agentscope.log.validate import ANONYMOUS_MACHINE

    where = log.source or "log"
    if log.thread is not None:
        where += f" (thread {log.thread})"
    named = log.machine_id and log.machine_id != ANONYMOUS_MACHINE
    machine = f" (machine {log.machine_id})" if named else ""
    if _nothing_verified(report, log, allow_missing):
        out.print(f"{where}: [red]nothing verified[/red]: {len(log)} entries carry no hash{machine}; "
                  "--allow-missing accepts that")
    else:
        status = "[green]verified[/green]" if report.ok else "[red]FAILED[/red]"
        out.print(f"{where}: {status}, {len(log)} entries{machine}")
    if report.machine_mismatch is not None:  # foremost: every result below follows from it
        out.print(f"  machine mismatch: {report.machine_mismatch}; the replay results below "
                  "follow from it", markup=False)
    parts = _verdict_line(report)
    if parts:
        out.print("  " + parts, markup=False)
    first = _first_failure(report)
    if first is not None:
        out.print(f"  first failure: {first}", markup=False)
    whole = report.problems[report.problems["index"].isna()]
    for kind, detail in zip(whole["kind"], whole["message"], strict=True):
        out.print(f"  {'error' if kind in FAILS_THE_LOG else 'note'}: {kind}: {detail}", markup=False)
    probs = report.mismatches
    if len(probs):
        shown = probs.head(_PROBLEM_ROWS)
        table = Table(title="entries with problems", title_justify="left")
        for c in ("index", "id", "event", "recorded", "computed", "verdict"):
            table.add_column(c, justify="right" if c == "index" else "left", overflow="fold")
        for rec in _records(shown):
            table.add_row(
                str(rec["index"]), _short(rec["id"], 24), _short(rec["event_type"], 28),
                _short(rec["recorded_hash"]), _short(rec["computed_hash"]), _short(rec["verdict"]),
            )
        out.print(table)
        if len(probs) > _PROBLEM_ROWS:
            out.print(f"  … {len(probs) - _PROBLEM_ROWS} more (--json lists them all)", markup=False)


def _cmd_verify(args: argparse.Namespace, out: _Out) -> int:
    source, thread = _split_thread(args.log)
    thread = args.thread or thread
    with _open(source) as store:
        kind = store.kind
    with _Machines(args.machine, args.machines) as ms:
        if not ms.given:
            raise UsageError("verify needs a machine: --machine M or --machines v1=M1,v2=M2")
        if kind in _MANY_THREADS and thread is None:
            return _verify_store(source, ms, args, out)
        if args.cache is not None:
            raise UsageError("--cache applies to a whole store (a SQLite store, no #THREAD)")
        log = _read(source, thread)
        report = _verify_one(log, ms, args.strict)
        nothing = _nothing_verified(report, log, args.allow_missing)
        if out.as_json:
            data = _report_json(report, log, args.machine or args.machines)
            if nothing:
                where = log.source or "log"
                data.update(ok=False, nothing_verified=True,
                            summary=f"{where}: nothing verified: {len(log)} entries carry no hash")
            out.json(data)
        else:
            _print_report(out, report, log, allow_missing=args.allow_missing)
        return verdict_exit(report.counts(), failed=not report.ok, allow_missing=args.allow_missing)


def _verify_store(source: str, ms: _Machines, args: argparse.Namespace, out: _Out) -> int:
    from agentscope.bulk import store_threads, verify_store

    with _open(source) as store:
        where = store.address
    threads = store_threads(source, None)  # the key column only: no entry parsed to list them
    primary = ms.spec
    extra = dict(ms.by_version)
    if primary is None:
        # --machines only: the primary machine is the last one listed (the newest version)
        primary = list(extra.values())[-1]
    with out.progress(f"verifying {len(threads)} threads", len(threads)) as progress:
        df = verify_store(
            source, primary, threads=threads, machines=extra or None, strict=args.strict,
            max_workers=args.workers, progress=progress, cache=args.cache,
        )
    rows = _records(df)
    if not args.allow_missing:
        for r in rows:
            if r["verified"] and r.get("length") and r.get("missing") == r["length"]:
                r["verified"] = False
                r["error"] = r.get("error") or f"nothing verified: {r['length']} entries carry no hash"
    errors = [r for r in rows if _is_bad_input(r)]
    failed = [r for r in rows if not r["verified"]]
    ok = not failed
    if out.as_json:
        out.json({"store": where, "machine": args.machine or args.machines, "ok": ok,
                  "threads": len(rows), "failed": len(failed), "results": rows})
    else:
        from rich.table import Table

        status = "[green]verified[/green]" if ok else "[red]FAILED[/red]"
        out.print(f"{where}: {status} - {len(rows) - len(failed)}/{len(rows)} threads verified")
        table = Table(title_justify="left")
        show_error = any(r["error"] for r in rows)
        heads = [("thread", "left"), ("entries", "right"), ("ok", "left"), ("first failure", "right"),
                 ("explained", "right"), ("unexplained", "right"), ("missing", "right"), ("s", "right")]
        if show_error:
            heads.append(("error", "left"))
        for c, j in heads:
            table.add_column(c, justify=j, overflow="fold")  # type: ignore[arg-type]
        for r in rows:
            cells = [
                _short(r["thread"]), str(r["length"]), "yes" if r["verified"] else "NO",
                "" if r["first_mismatch"] is None else str(r["first_mismatch"]),
                str(r["explained"]), str(r["unexplained"]), str(r["missing"]), f"{r['seconds']:.2f}",
            ]
            if show_error:
                cells.append(_short(r["error"], 80))
            table.add_row(*cells)
        out.print(table)
    if errors:
        return EXIT_BAD_INPUT
    return EXIT_OK if ok else EXIT_FAILED


_BAD_INPUT_ERRORS = (ProblemKind.INVALID_ENTRY, "LogFormatError", "EntryValidationError",
                     "NonSerializableError", "ThreadNotFoundError", "MachineLoadError",
                     "DamagedStoreError", "IncompleteRecordError", "UnreadableSourceError")


def _is_bad_input(row: Mapping[str, Any]) -> bool:
    """A row whose thread could not be checked because its input is broken (exit code 2)."""
    error = row.get("error")
    return isinstance(error, str) and error.startswith(_BAD_INPUT_ERRORS)


def _html_player(machine: Machine | None, log: EventLog, path: Path, redact: Sequence[str] = (),
                 coverage: bool = False) -> Path:
    """Write the static player of ``log``: built from its one Timeline pass (no widget)."""
    from agentscope.pipeline import Timeline
    from agentscope.render.player import timeline_page
    from agentscope.render.source import EntriesOnly, FrameSource, usage_series

    source: FrameSource = Timeline(machine, log) if machine is not None else EntriesOnly(log)
    heat = None
    if coverage:
        if machine is None:
            raise ValueError("to_html(coverage=True) needs a machine: coverage counts replayed states")
        from agentscope.coverage_map import coverage as count

        heat = count(source, machine)
    page = timeline_page(
        source,
        machine.graph if machine is not None else None,
        log=log,
        usage=usage_series(log.entries) if len(log) else None,
        redact=list(redact),
        coverage=heat,
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(page, encoding="utf-8")
    return path.resolve()


def _html_fork_player(timelines: tuple[Any, Any], diff: Any, machine: Machine, logs: tuple[Any, Any],
                      names: tuple[str, str], path: Path, redact: Sequence[str] = ()) -> Path:
    """Write the fork player from the timelines ``diff`` was computed from (no widget, no fold)."""
    from agentscope.render.player import fork_page

    page = fork_page(timelines, diff, machine.graph, names=names, logs=logs, redact=list(redact))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(page, encoding="utf-8")
    return path.resolve()


def _log_summary(log: EventLog) -> dict[str, Any]:
    from agentscope.log.model import text_series  # lossless for a lone surrogate

    df = log.df
    counts = text_series(df["event_type"].astype(object).tolist()).value_counts()
    recorded = df["recorded_at"].dropna()
    hashes = df["state_hash"].notna().sum() if "state_hash" in df.columns else 0
    return {
        "source": log.source,
        "thread": log.thread,
        "entries": len(log),
        "era": log.era,
        "machine_id": log.machine_id,
        "machine_versions": list(log.machine_versions),
        "execution_id": log.execution_id,
        "first_recorded_at": recorded.iloc[0] if len(recorded) else None,
        "last_recorded_at": recorded.iloc[-1] if len(recorded) else None,
        "hashes": int(hashes),
        "event_types": {str(k): int(v) for k, v in counts.items() if v},
    }


def _cmd_show(args: argparse.Namespace, out: _Out) -> int:
    source, thread = _split_thread(args.log)
    log = _read(source, args.thread or thread)
    summary = _log_summary(log)
    report = None
    with _Machines(args.machine, None) as ms:
        machine = None
        if ms.given:
            machine, _ = ms.load()
            from agentscope.pipeline import verify

            report = verify(machine, log)
            summary["verification"] = report.summary()
            code = verdict_exit(report.counts(), failed=not report.ok, allow_missing=args.allow_missing)
            summary["ok"] = code == EXIT_OK
            if _nothing_verified(report, log, args.allow_missing):
                summary["nothing_verified"] = True
        if args.coverage and (args.html is None or machine is None):
            raise UsageError("show: --coverage needs --html and --machine (the heat map "
                             "counts replayed states)")
        if args.html is not None:
            summary["html"] = str(_html_player(machine, log, Path(args.html), args.redact or (),
                                               coverage=args.coverage))
    code = EXIT_OK if report is None else verdict_exit(
        report.counts(), failed=not report.ok, allow_missing=args.allow_missing)
    if out.as_json:
        out.json(summary)
        return code
    from rich.table import Table

    head = Table.grid(padding=(0, 2))
    head.add_column(style="bold")
    head.add_column(overflow="fold")
    for key in ("source", "thread", "entries", "era", "machine_id", "machine_versions", "execution_id",
                "first_recorded_at", "last_recorded_at", "hashes"):
        value = summary[key]
        if key == "machine_versions":
            value = ", ".join(value)
        if key == "hashes":
            value = f"{value} of {summary['entries']} entries carry verification.stateHash"
        if value is not None:
            head.add_row(key.replace("_", " "), _short(value, 200))
    if report is not None:
        status = "OK" if code == EXIT_OK else "FAILED"
        if _nothing_verified(report, log, args.allow_missing):
            status = "nothing verified (no entry carries a hash; --allow-missing accepts that)"
        line = _verdict_line(report)
        head.add_row("verification", f"{status}: {line}" if line else status)
        if report.machine_mismatch is not None:
            head.add_row("machine mismatch", report.machine_mismatch)
        first = _first_failure(report)
        if first is not None:
            head.add_row("first failure", first)
    out.print(head)
    types = Table(title="event types", title_justify="left")
    types.add_column("type")
    types.add_column("count", justify="right")
    for t, n in summary["event_types"].items():
        types.add_row(t, str(n))
    out.print(types)
    if args.limit:
        df = log.df
        rows = Table(title=f"entries (first {min(args.limit, len(df))} of {len(df)})", title_justify="left")
        for c in ("index", "recorded_at", "event_type", "state_hash"):
            rows.add_column(c.replace("_", " "), justify="right" if c == "index" else "left")
        for rec in _records(df[["index", "recorded_at", "event_type", "state_hash"]].head(args.limit)):
            rows.add_row(str(rec["index"]), _short(rec["recorded_at"]), _short(rec["event_type"]),
                         _short(rec["state_hash"]))
        out.print(rows)
    if "html" in summary:
        out.print(f"player written to {summary['html']}", markup=False)
    return code


def _cmd_diff(args: argparse.Namespace, out: _Out) -> int:
    from agentscope.forks import compare
    from agentscope.jsondiff import differing_paths

    a_src, a_thread = _split_thread(args.a)
    b_src, b_thread = _split_thread(args.b)
    a_thread = args.thread or a_thread
    b_thread = args.thread_b or b_thread or args.thread
    left = _read(a_src, a_thread)
    right = _read(b_src, b_thread)
    if args.html is not None and not args.machine:
        raise UsageError("diff: --html needs --machine (the fork player replays both logs)")
    html_path: Path | None = None
    with _Machines(args.machine, None) as ms:
        machine = ms.load()[0] if ms.given else None
        if args.html is not None and machine is not None:
            from agentscope.pipeline.timeline import fork_timelines

            # one pass: the shared prefix folded once, both the diff and the player read it
            shared = int(compare(left, right).common_prefix)  # entry scan only, no fold
            timelines = fork_timelines(machine, left, right, shared=shared)
            diff = compare(left, right, machine=machine, timelines=timelines)
            names = (a_thread or Path(a_src).name, b_thread or Path(b_src).name)
            if names[0] == names[1]:
                names = ("a", "b")
            html_path = _html_fork_player(
                timelines, diff, machine, (left, right), names, Path(args.html), args.redact or ()
            )
        else:
            diff = compare(left, right, machine=machine)
    same = diff.kind in ("identical", "prefix")
    from agentscope.stores import display_address

    data: dict[str, Any] = {
        "a": display_address(args.a),
        "b": display_address(args.b),
        "kind": diff.kind,
        "identical": diff.kind == "identical",
        "common_prefix": diff.common_prefix,
        "through_event_id": diff.through_event_id,
        "divergence": diff.divergence,
        "divergence_fields": list(diff.divergence_fields),
        "a_length": diff.left_length,
        "b_length": diff.right_length,
        "tampered": list(diff.tampered),
        "a_suffix": [_cell(t) for t in diff.left_suffix["event_type"]] if len(diff.left_suffix) else [],
        "b_suffix": [_cell(t) for t in diff.right_suffix["event_type"]] if len(diff.right_suffix) else [],
    }
    if diff.machine_used:
        data["reconverged_at"] = diff.reconverged_at
        fa, fb = diff.left_at, diff.right_at  # the frames at the divergence
        data["context_paths"] = (  # the paths the fork player counts at this step
            differing_paths(fa.context, fb.context)
            if fa is not None and fb is not None and fa.persisted is not None and fb.persisted is not None
            else []
        )
        data["state_changes"] = (
            [
                {
                    "path": c.path,
                    "op": c.op,
                    "left": None if c.op == "add" else c.left,
                    "right": None if c.op == "remove" else c.right,
                }
                for c in diff.state_diffs[0].changes
            ]
            if diff.state_diffs
            else []
        )
    if html_path is not None:
        data["html"] = str(html_path)
    if out.as_json:
        out.json(data)
        return EXIT_OK if same else EXIT_FAILED
    out.print(f"{data['a']} vs {data['b']}: [bold]{diff.kind}[/bold]")
    if html_path is not None:
        out.print(f"  fork player written to {html_path}", markup=False)
    out.print(f"  common prefix: {diff.common_prefix} entries"
              + (f" (through {diff.through_event_id})" if diff.through_event_id else ""), markup=False)
    if diff.divergence is not None:
        fields = ", ".join(diff.divergence_fields)
        out.print(f"  diverge at entry {diff.divergence}" + (f" ({fields} differ)" if fields else ""),
                  markup=False)
    if diff.tampered:
        out.print(f"  altered entries: {', '.join(map(str, diff.tampered[:20]))}", markup=False)
    out.print(f"  lengths: {diff.left_length} vs {diff.right_length}", markup=False)
    for label, suffix in (("a", data["a_suffix"]), ("b", data["b_suffix"])):
        if suffix:
            shown = ", ".join(str(t) for t in suffix[:8]) + (" …" if len(suffix) > 8 else "")
            out.print(f"  {label} continues with {len(suffix)}: {shown}", markup=False)
    if diff.machine_used and data.get("state_changes"):
        out.print(f"  state at entry {diff.state_diffs[0].index} differs in "
                  f"({len(data['context_paths'])} differing context path(s)):", markup=False)
        for c in data["state_changes"][:12]:
            was = "(absent)" if c["op"] == "add" else _short(json.dumps(c["left"], default=str), 40)
            now = "(absent)" if c["op"] == "remove" else _short(json.dumps(c["right"], default=str), 40)
            out.print(f"    {c['path']}: {was} -> {now}", markup=False)
    return EXIT_OK if same else EXIT_FAILED


def _cmd_whatif(args: argparse.Namespace, out: _Out) -> int:
    """Replay a log or every thread of a store under a changed machine (a CI gate for changes)."""
    from agentscope.counterfactual import whatif

    source, thread = _split_thread(args.log)
    thread = args.thread or thread
    with _open(source) as store:
        kind, where = store.kind, store.address
    new = _spec(args.machine)
    base = _spec(args.baseline) if args.baseline else None
    extra = _machines_option(args.machines) if args.machines else None
    if kind in _MANY_THREADS:
        threads = [thread] if thread is not None else None
        result = whatif(source, new, baseline=base, machines=extra, threads=threads,
                        max_workers=args.workers)
    else:
        with _Machines(args.machine, None) as ms, _Machines(args.baseline, None) as bs, \
                _Machines(None, args.machines) as xs:
            result = whatif(_read(source, thread), ms.load()[0] or new,
                            baseline=bs.load()[0] if bs.given else None,
                            machines=xs.load()[1] if xs.given else None)
    rows = _records(result.df)
    bad = [t for t in result.threads if t.kind in ("error", "unchecked")]
    changed = result.diverged
    if out.as_json:
        out.json({
            "source": where, "machine": args.machine, "baseline": args.baseline or None,
            "identical": result.identical, "threads": len(rows), "diverged": len(changed),
            "results": [dict(r, event_id=t.event_id, event_type=t.event_type,
                             recorded_hash=t.recorded_hash, new_hash=t.new_hash,
                             ignored=list(t.ignored), newly_handled=list(t.newly_handled),
                             changes=[{"path": c.path, "recorded": None if c.op == "add" else c.left,
                                       "new": None if c.op == "remove" else c.right}
                                      for c in t.changes[:50]])
                        for r, t in zip(rows, result.threads, strict=True)],
        })
    else:
        from rich.table import Table

        status = "[green]identical[/green]" if result.identical else "[red]DIVERGES[/red]"
        out.print(f"{where}: {status} - {len(rows) - len(changed)}/{len(rows)} threads replay the "
                  f"same under {args.machine} (vs {args.baseline or 'the recorded hashes'})")
        table = Table(title_justify="left")
        for col, j in (("thread", "left"), ("entries", "right"), ("first divergence", "right"),
                       ("kind", "left"), ("detail", "left")):
            table.add_column(col, justify=j, overflow="fold")  # type: ignore[arg-type]
        for r in rows:
            table.add_row(_short(r["thread"]), str(r["entries"]),
                          "" if r["first_divergence"] is None else str(r["first_divergence"]),
                          str(r["kind"]), _short(r["detail"], 160))
        out.print(table)
        for t in changed[:5]:
            for c in t.changes[:8]:
                out.print(f"    {t.thread} @{t.first_divergence} {c.path}: "
                          f"{_short(json.dumps(c.left, default=str), 40)} -> "
                          f"{_short(json.dumps(c.right, default=str), 40)}", markup=False)
    if bad:
        for t in bad:
            out.note(f"agentscope: {t.thread}: {t.kind}: {t.detail}")
        return EXIT_BAD_INPUT
    return EXIT_OK if result.identical else EXIT_FAILED


def _cmd_watch(args: argparse.Namespace, out: _Out) -> int:
    """Follow a store's thread or a JSONL file as it is appended to: one line per entry."""
    from agentscope.follow import follow

    source, thread = _split_thread(args.log)
    thread = args.thread or thread
    counts: dict[str, int] = {}
    seen = 0
    stopped = "idle" if args.idle_exit is not None else "end"
    with _Machines(args.machine, args.machines) as ms:
        machine, extra = ms.load() if ms.given else (None, None)
        follower = follow(machine, source, thread=thread, machines=extra)
        try:
            for frame in follower.frames(interval=args.interval, idle_exit=args.idle_exit):
                seen += 1
                verdict = frame.verdict.value
                counts[verdict] = counts.get(verdict, 0) + 1
                if out.as_json:
                    out.stdout.write(json.dumps(
                        {"index": frame.index, "id": frame.event_id, "event_type": frame.event_type,
                         "verdict": verdict, "value": frame.value},
                        ensure_ascii=False, default=_json_default) + "\n")
                    out.stdout.flush()
                else:
                    out.print(f"{frame.index:>7}  {_short(frame.event_type, 32):<32}  {verdict:<9}  "
                              f"{_short(json.dumps(frame.value, default=str), 80)}", markup=False)
                    out.stdout.flush()
        except KeyboardInterrupt:
            stopped = "interrupted"
    problem = follower.problem
    if problem is not None:
        stopped = f"{problem.kind}: {problem}"
    elif stopped == "idle":
        waiting = follower.waiting_for()
        if waiting:
            stopped += f"; {waiting}"
    parts = ", ".join(f"{v} {k}" for k, v in sorted(counts.items()))
    if machine is not None and _nothing_checked(counts, args.allow_missing):
        parts += "; nothing verified: no entry carries a hash"
    summary = f"{seen} entries ({parts or 'none'}); stopped: {stopped}"
    if out.as_json:
        out.note(summary)
    else:
        out.print(summary, markup=False)
    if problem is not None and problem.kind == "invalid":
        return EXIT_BAD_INPUT
    return verdict_exit(counts, failed=problem is not None,
                        allow_missing=args.allow_missing or machine is None)


_EXPORT_SUFFIX = {"jsonl": ".jsonl", "parquet": ".parquet", "csv": ".csv"}


def _cmd_export(args: argparse.Namespace, out: _Out) -> int:
    source, thread = _split_thread(args.log)
    if args.output == "-":  # standard output: the log's bytes only, the note on stderr
        if out.as_json:
            raise UsageError("-o - writes the log itself to standard output; drop --json")
        if args.to == "parquet" and out.interactive:
            raise UsageError("Parquet is binary: redirect standard output to a file, or pick -o FILE")
    log = _read(source, args.thread or thread)
    if args.output == "-":
        if args.to == "parquet" and not out.stdout.takes_bytes:  # a notebook's or a test's stdout
            raise UsageError("Parquet is binary and this standard output takes text; pick -o FILE")
        out.stdout.write_bytes(_export_bytes(log, args.to))  # all of it, or exit 141 and no note
        out.note(f"wrote {len(log)} entries to standard output")
        return EXIT_OK
    url = "://" in source
    src_path = Path(source).resolve() if not url else None
    if args.output is None:
        thread_part = "" if log.thread is None else "." + log.thread.replace("/", "_").replace("\\", "_")
        from urllib.parse import urlsplit

        stem = src_path.stem if src_path is not None else (  # a URL: its database's name
            urlsplit(source).path.strip("/").replace("/", "_") or "log")
        target = Path.cwd() / (stem + thread_part + _EXPORT_SUFFIX[args.to])
    else:
        target = Path(args.output)
    if target.resolve() == src_path:
        raise UsageError(f"refusing to overwrite the input log {src_path}; pick another -o")
    if target.exists() and not args.force:
        raise UsageError(f"{target} already exists; pass --force to overwrite it, or pick another -o")
    target.parent.mkdir(parents=True, exist_ok=True)
    data = _export_bytes(log, args.to)  # before the file opens
    target.write_bytes(data)
    if out.as_json:
        out.json({"output": str(target.resolve()), "format": args.to, "entries": len(log)})
    else:
        out.print(f"wrote {len(log)} entries to {target.resolve()}", markup=False)
    return EXIT_OK


def _export_bytes(log: Any, to: str) -> bytes:
    """The bytes of ``log`` exported as ``to`` (:func:`agentscope.log.writers.log_bytes`:
    ``jsonl`` one entry per line, exact integers; ``parquet``/``csv``
    :func:`agentscope.log.writers.export_table`)."""
    from agentscope.log.writers import log_bytes

    return log_bytes(log.entries, to)


def _cmd_demo(args: argparse.Namespace, out: _Out) -> int:
    if args.lab:
        return _open_lab(out)
    from agentscope.bulk import MachineSpec
    from agentscope.pipeline import verify
    from agentscope.stores import read_log

    log = read_log(DEMO_STORE, thread=args.thread)
    engine = "python" if args.engine == "python" else "node"
    machine: Machine | None = None
    if engine == "node":
        try:
            machine = MachineSpec("node", str(DEMO_NODE_MACHINE), DEMO_NODE_EXPORT).load()
        except (MachineLoadError, EngineError) as exc:
            if args.engine == "node":
                raise
            reason = " ".join(str(exc).split())
            out.note(f"Node engine unavailable ({_short(reason, 160)}); falling back to the Python "
                     "engine's version of the triage machine (agentscope.examples.python_machines).")
            engine = "python"
    if machine is None:
        machine = MachineSpec.parse(DEMO_PY_MACHINE).load()
    try:
        report = verify(machine, log)
        target = Path(args.output) if args.output else Path.cwd() / "agentscope-demo.html"
        html = _html_player(machine, log, target)
    finally:
        machine.close()
    if out.as_json:
        data = _report_json(report, log, str(DEMO_NODE_MACHINE) if engine == "node" else DEMO_PY_MACHINE)
        data.update(engine=engine, html=str(html))
        out.json(data)
    else:
        out.print(f"agentscope demo: a real support-triage agent run (@statelyai/agent 2.0, XState 6), "
                  f"thread {log.thread!r} of the bundled store {DEMO_STORE.name}", markup=False)
        out.print(f"  {len(log)} entries, machine {log.machine_id} @ {', '.join(log.machine_versions)}, "
                  f"execution {log.execution_id}; replayed with the {engine} engine", markup=False)
        df = log.df
        span = df["recorded_at"].iloc[-1] - df["recorded_at"].iloc[0]
        out.print(f"  recorded {df['recorded_at'].iloc[0]:%Y-%m-%d %H:%M:%S} UTC over "
                  f"{span.total_seconds():.3f} s; event types: "
                  + ", ".join(f"{t} {n}" for t, n in df["event_type"].value_counts().items() if n),
                  markup=False)
        _print_report(out, report, log)
        out.print(f"player written to {html}", markup=False)
        command, activate = _invocation()
        out.print(f"open it in a browser; `{command} demo --lab` opens the quickstart notebook instead",
                  markup=False)
        if activate is not None:
            out.print(f"(`source {activate}` puts the agentscope command on your PATH)", markup=False)
    return verdict_exit(report.counts(), failed=not report.ok, allow_missing=False)


def _invocation() -> tuple[str, str | None]:
    """How to type this command again, runnable as shown; and the venv's ``activate`` script when
    ``agentscope`` is not on ``PATH`` (``make demo`` runs ``.venv/bin/agentscope``)."""
    import shutil

    argv0 = sys.argv[0] if sys.argv and sys.argv[0] else ""
    if not argv0 or Path(argv0).name == "__main__.py":
        return "python -m agentscope", None
    on_path = shutil.which("agentscope")
    with suppress(OSError):
        if on_path is not None and Path(on_path).samefile(argv0):
            return "agentscope", None
    command = argv0 if os.sep in argv0 else str(Path(argv0).resolve())
    activate = Path(argv0).parent / "activate"
    return command, (str(activate) if activate.is_file() else None)


def _cmd_setup_node(args: argparse.Namespace, out: _Out) -> int:
    from agentscope.engines.nodepath import TSX_PIN, XSTATE_PIN, setup_node

    target = Path(args.dir).expanduser() if args.dir else None
    out.note(f"installing xstate@{XSTATE_PIN} and tsx@{TSX_PIN} with npm …")
    folder = setup_node(target)
    if out.as_json:
        out.json({"folder": str(folder.resolve()), "xstate": XSTATE_PIN, "tsx": TSX_PIN})
    else:
        out.print(f"installed xstate@{XSTATE_PIN} and tsx@{TSX_PIN} in {folder.resolve() / 'node_modules'}",
                  markup=False)
        if target is not None:
            out.print(f"machines find them with AGENTSCOPE_NODE_PATH={folder.resolve()}", markup=False)
    return EXIT_OK


def _find_quickstart() -> Path | None:
    for root in (_PACKAGE.parent / "notebooks", Path.cwd() / "notebooks"):
        if root.is_dir():
            found = sorted(root.glob("01*.ipynb"))
            if found:
                return found[0]
    return None


_LAB = (
    "import runpy, sys, warnings\n"
    "show = warnings.showwarning\n"
    "def quiet(message, *args, **kwargs):\n"
    "    if not str(message).startswith('ServerApp.token config is deprecated'):\n"
    "        show(message, *args, **kwargs)\n"
    "warnings.showwarning = quiet\n"
    "sys.argv[0] = 'jupyterlab'\n"
    "runpy.run_module('jupyterlab', run_name='__main__', alter_sys=True)\n"
)
"""``python -c _LAB NOTEBOOK …`` is ``python -m jupyterlab NOTEBOOK …`` without the
``ServerApp.token`` DeprecationWarning. notebook_shim lists every ServerApp trait, which computes
the deprecated trait's default on every start, whatever token is configured
(``--IdentityProvider.token`` included); and installed extensions (voila) put a "default" filter
for traitlets' DeprecationWarnings in front of ``-W``/``PYTHONWARNINGS``. So that one warning is
dropped where warnings are shown; every other warning still shows."""


def _open_lab(out: _Out) -> int:
    notebook = _find_quickstart()
    if notebook is None:
        raise UsageError("the quickstart notebook (notebooks/01_*.ipynb) is not here; --lab needs a "
                         "source checkout of agentscope")
    argv = [sys.executable, "-c", _LAB, str(notebook)]
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        argv.append("--allow-root")
        out.note("running as root: passing --allow-root to JupyterLab (it refuses root otherwise)")
    out.note(f"opening {notebook} in JupyterLab (Ctrl-C to stop)")
    try:
        return subprocess.call(argv, cwd=notebook.parent.parent)
    except KeyboardInterrupt:
        return EXIT_OK


def _question_timeline(args: argparse.Namespace, ms: _Machines) -> tuple[Any, EventLog]:
    """The log of ``query``/``check`` (a file or STORE#THREAD) and its Timeline."""
    from agentscope.pipeline import Timeline

    if not ms.given:
        raise UsageError(f"{args.command} needs a machine: --machine M or --machines v1=M1,v2=M2")
    source, thread = _split_thread(args.log)
    log = _read(source, args.thread or thread)
    primary, extra = ms.load()
    return Timeline(primary, log, machines=extra, checkpoint_every="auto"), log


def _cmd_query(args: argparse.Namespace, out: _Out) -> int:
    """``agentscope query LOG --machine M EXPR``: the steps where EXPR holds (exit 1: none)."""
    from agentscope.errors import QueryError

    with _Machines(args.machine, args.machines) as ms:
        tl, log = _question_timeline(args, ms)
        try:
            hits = tl.find_all(args.expression)
            shown = hits if args.limit == 0 else hits[: args.limit]
            columns = list(args.column or ())
            df = tl.states(columns) if shown else None
        except QueryError as exc:
            raise UsageError(str(exc).replace("\n", " ")) from exc
        rows = []
        for i in shown:
            assert df is not None
            rec = {"index": i, "id": str(log.entries[i].get("id", "")),
                   "event_type": str(df["event_type"].iloc[i]),
                   "value": _cell(df["value"].iloc[i]), "status": _cell(df["status"].iloc[i])}
            rec.update({c: _cell(df[c].iloc[i]) for c in columns})
            rows.append(rec)
        if out.as_json:
            out.json({"source": log.source, "thread": log.thread, "expression": args.expression,
                      "entries": len(tl), "count": len(hits), "matches": rows})
            return EXIT_OK if hits else EXIT_FAILED
        from rich.table import Table

        where = (log.source or "log") + (f"#{log.thread}" if log.thread else "")
        out.print(f"{where}: {len(hits)} of {len(tl)} steps match {args.expression!r}",
                  markup=False)
        if rows:
            table = Table(title_justify="left")
            for c in ("index", "id", "event", "value", *columns):
                table.add_column(c, justify="right" if c == "index" else "left", overflow="fold")
            for r in rows:
                table.add_row(str(r["index"]), _short(r["id"], 24), _short(r["event_type"], 28),
                              _short(r["value"], 60), *[_short(r[c], 40) for c in columns])
            out.print(table)
            if len(hits) > len(shown):
                out.print(f"  … {len(hits) - len(shown)} more (--limit 0 lists them all)",
                          markup=False)
        return EXIT_OK if hits else EXIT_FAILED


def _rules(texts: Sequence[str]) -> dict[str, str]:
    rules: dict[str, str] = {}
    for text in texts:
        name, sep, expr = text.partition("=")
        if not sep or not name.strip() or not expr.strip() or expr.startswith("="):
            raise UsageError(f"--rule expects NAME=EXPRESSION, got {text!r}")
        rules[name.strip()] = expr.strip()
    return rules


def _cmd_check(args: argparse.Namespace, out: _Out) -> int:
    """``agentscope check LOG --machine M --rule NAME=EXPR``: exit 1 on any violation."""
    from agentscope.errors import QueryError
    from agentscope.queries import check

    rules = _rules(args.rule or ())
    if not rules and args.loop is None and args.stuck is None:
        raise UsageError("check needs at least one --rule NAME=EXPR, --loop N or --stuck SECONDS")
    with _Machines(args.machine, args.machines) as ms:
        tl, log = _question_timeline(args, ms)
        try:
            df = check(tl, rules, loop=args.loop, stuck=args.stuck)
        except QueryError as exc:
            raise UsageError(str(exc).replace("\n", " ")) from exc
        except ValueError as exc:
            raise UsageError(str(exc)) from exc
        records = _records(df)
        names = [*rules, *(["loop"] if args.loop is not None else []),
                 *(["stuck"] if args.stuck is not None else [])]
        if out.as_json:
            out.json({"source": log.source, "thread": log.thread, "entries": len(tl),
                      "ok": not records, "invariants": names, "violations": records})
            return EXIT_FAILED if records else EXIT_OK
        where = (log.source or "log") + (f"#{log.thread}" if log.thread else "")
        if not records:
            out.print(f"{where}: [green]ok[/green], {len(names)} invariant(s) hold over "
                      f"{len(tl)} entries")
            return EXIT_OK
        from rich.table import Table

        out.print(f"{where}: [red]{len(records)} violation(s)[/red]; first at entry "
                  f"{records[0]['index']} ({records[0]['invariant']})")
        table = Table(title_justify="left")
        for c in ("index", "invariant", "value", "message"):
            table.add_column(c, justify="right" if c == "index" else "left", overflow="fold")
        for rec in records[:_PROBLEM_ROWS]:
            table.add_row(str(rec["index"]), _short(rec["invariant"]), _short(rec["value"], 50),
                          _first_line(rec["message"], 120))
        out.print(table)
        if len(records) > _PROBLEM_ROWS:
            out.print(f"  … {len(records) - _PROBLEM_ROWS} more (--json lists them all)",
                      markup=False)
        return EXIT_FAILED


# ---------------------------------------------------------------------------------------------
# Parser and entry point


class _Parser(argparse.ArgumentParser):
    """argparse with our prefix on errors (exit code 2, as argparse does)."""

    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        self.exit(EXIT_BAD_INPUT, f"{self.prog}: error: {message}\n")


_N = TypeVar("_N", int, float)


def _argument_type(
    convert: Callable[[str], _N], ok: Callable[[_N], bool], expected: str
) -> Callable[[str], _N]:
    """An argparse type: ``convert`` the text, refused unless ``ok``; the error says ``expected``."""

    def parse(text: str) -> _N:
        try:
            value = convert(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {expected}, got {text!r}") from None
        if not ok(value):
            raise argparse.ArgumentTypeError(f"expected {expected}, got {text!r}")
        return value

    return parse


_count = _argument_type(int, lambda v: v >= 0, "a non-negative integer")
_workers = _argument_type(int, lambda v: v >= 1, "a positive integer")  # a process count
_seconds = _argument_type(float, lambda v: math.isfinite(v) and v >= 0, "a non-negative number of seconds")


def _redaction_path(text: str) -> str:
    """An argparse type: a redaction path (:func:`agentscope.render.redact.parse_path`), kept as
    text; a path that names no value is refused before any log is read (exit 2)."""
    from agentscope.render.redact import parse_path

    try:
        parse_path(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None
    return text


def build_parser() -> argparse.ArgumentParser:
    """Return the ``agentscope`` argument parser."""
    machine_help = (
        "machine: path/to/machine.mjs[:export] (Node engine) or py:module:attr (Python engine)"
    )
    top = argparse.ArgumentParser(add_help=False)
    top.add_argument("--json", action="store_true", help="print machine-readable JSON")
    top.add_argument("--debug", action="store_true", help="show tracebacks instead of one-line errors")
    # the same options after the subcommand; SUPPRESS keeps a subparser from resetting them
    common = _Parser(add_help=False)
    common.add_argument("--json", action="store_true", default=argparse.SUPPRESS,
                        help="print machine-readable JSON")
    common.add_argument("--debug", action="store_true", default=argparse.SUPPRESS,
                        help="show tracebacks instead of one-line errors")

    parser = _Parser(
        prog="agentscope",
        description="Time-travel debugging for statechart agent event logs "
        "(@statelyai/agent 2.0 / XState 6).",
        epilog="Exit codes: 0 verified/ok, 1 mismatch or divergence, 2 bad input or usage.",
        parents=[top],
    )
    parser.add_argument("--version", action="version", version=f"agentscope {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND", parser_class=_Parser)

    p = sub.add_parser(
        "demo", parents=[common], help="verify the bundled real agent log and write a player",
        description="Replay the bundled support-triage agent log (thread main) with its real machine, "
        "print the verification summary and write the static time-travel player.",
    )
    p.add_argument("--lab", action="store_true", help="open the quickstart notebook in JupyterLab instead")
    p.add_argument("--thread", default=DEMO_THREAD, choices=["main", "fork", "second"],
                   help="thread of the bundled store (default main)")
    p.add_argument("-o", "--output", help="where to write the player (default ./agentscope-demo.html)")
    p.add_argument("--engine", choices=["auto", "node", "python"], default="auto",
                   help="auto (default): real XState through Node, else the Python engine")
    p.set_defaults(func=_cmd_demo)

    p = sub.add_parser("threads", parents=[common], help="list the threads of a SQLite store")
    p.add_argument("store", metavar="STORE")
    p.set_defaults(func=_cmd_threads)

    allow_missing_help = "exit 0 even when no entry carries a hash (default: 'nothing verified', exit 1)"
    redact_help = ("replace the values at these paths with a marker in the player (JSON Pointer or "
                   "dotted, * for any key or index; into the entry or the persisted snapshot)")
    p = sub.add_parser("show", parents=[common], help="summarise a log; optionally write a static player")
    p.add_argument("log", metavar="LOG", help="a log file, or STORE[#THREAD]")
    p.add_argument("--thread", help="thread of a store")
    p.add_argument("--machine", metavar="M", help=machine_help)
    p.add_argument("--html", metavar="OUT", help="write the self-contained time-travel player to OUT")
    p.add_argument("--redact", nargs="+", metavar="PATH", type=_redaction_path, help=redact_help)
    p.add_argument("--limit", type=_count, default=10, help="entries to list (default 10; 0: none)")
    p.add_argument("--coverage", action="store_true",
                   help="with --html: add a heat-map toggle (visits per state) to the player")
    p.add_argument("--allow-missing", action="store_true", help=allow_missing_help)
    p.set_defaults(func=_cmd_show)

    p = sub.add_parser("verify", parents=[common],
                       help="replay a log or every thread of a store and check hashes")
    p.add_argument("log", metavar="LOG|STORE", help="a log file, a store (every thread), or STORE#THREAD")
    p.add_argument("--thread", help="verify only this thread of a store")
    p.add_argument("--machine", metavar="M", help=machine_help)
    p.add_argument("--machines", metavar="V=M,...", help="machines by machineVersion, for version bridges")
    p.add_argument("--strict", action="store_true", help="entries without a recorded hash fail")
    p.add_argument("--allow-missing", action="store_true", help=allow_missing_help)
    p.add_argument("--workers", type=_workers, default=None,
                   help="processes for a store (default: CPU count)")
    p.add_argument("--cache", metavar="PATH", default=None,
                   help="a store: verdict cache file (SQLite, created when missing, never inside "
                   "the store); threads unchanged since they were verified are not folded again")
    p.set_defaults(func=_cmd_verify)

    p = sub.add_parser("diff", parents=[common],
                       help="compare two logs or forks: common prefix and divergence")
    p.add_argument("a", metavar="A", help="a log file or STORE#THREAD")
    p.add_argument("b", metavar="B", help="a log file or STORE#THREAD")
    p.add_argument("--machine", metavar="M", help=machine_help + "; also compares the states")
    p.add_argument("--thread", help="thread of A when it is a store (and of B when B names none)")
    p.add_argument("--thread-b", help="thread of B when it is a store")
    p.add_argument("--html", metavar="OUT", help="write the fork player (both logs on one slider) to OUT")
    p.add_argument("--redact", nargs="+", metavar="PATH", type=_redaction_path, help=redact_help)
    p.set_defaults(func=_cmd_diff)

    p = sub.add_parser("export", parents=[common], help="convert a log to JSON lines, Parquet or CSV")
    p.add_argument("log", metavar="LOG", help="a log file or STORE#THREAD")
    p.add_argument("--thread", help="thread of a store")
    p.add_argument("--to", required=True, choices=sorted(_EXPORT_SUFFIX), help="output format")
    p.add_argument("-o", "--output", metavar="OUT",
                   help="output file, - for standard output (default: ./<name>[.<thread>].<format>)")
    p.add_argument("--force", action="store_true", help="overwrite OUT if it exists")
    p.set_defaults(func=_cmd_export)

    p = sub.add_parser(
        "setup-node", parents=[common],
        help="install the pinned xstate and tsx (npm) where machines outside a Node project find them",
        description="npm-install the pinned xstate (and tsx, for TypeScript machines) into the per-user "
        "cache (~/.cache/agentscope/node), the last place machine modules look after their own "
        "node_modules and AGENTSCOPE_NODE_PATH.",
    )
    p.add_argument("--dir", help="install here instead of the per-user cache (then set AGENTSCOPE_NODE_PATH)")
    p.set_defaults(func=_cmd_setup_node)

    p = sub.add_parser("whatif", parents=[common],
                       help="replay a log or every thread of a store under a changed machine")
    p.add_argument("log", metavar="LOG|STORE", help="a log file, a store (every thread), or STORE#THREAD")
    p.add_argument("--thread", help="only this thread of a store")
    p.add_argument("--machine", metavar="M", required=True, help="the changed machine; " + machine_help)
    p.add_argument("--baseline", metavar="M",
                   help="compare with this machine's replay instead of the recorded hashes")
    p.add_argument("--machines", metavar="V=M,...",
                   help="machines by machineVersion for the segments of version-bridged logs")
    p.add_argument("--workers", type=_workers, default=None,
                   help="processes for a store (default: CPU count)")
    p.set_defaults(func=_cmd_whatif)

    p = sub.add_parser("watch", parents=[common],
                       help="follow a store's thread or a JSONL file as it grows, verifying each entry")
    p.add_argument("log", metavar="STORE#THREAD|LOG.jsonl", help="a store's thread or a JSON Lines file")
    p.add_argument("--thread", help="thread of a store")
    p.add_argument("--machine", metavar="M", help=machine_help)
    p.add_argument("--machines", metavar="V=M,...", help="machines by machineVersion, for version bridges")
    p.add_argument("--idle-exit", type=_seconds, default=None, metavar="SECONDS",
                   help="stop after SECONDS without a new entry (default: follow until Ctrl-C)")
    p.add_argument("--interval", type=_seconds, default=0.2, metavar="SECONDS",
                   help="seconds between polls (default 0.2)")
    p.add_argument("--allow-missing", action="store_true", help=allow_missing_help)
    p.set_defaults(func=_cmd_watch)

    p = sub.add_parser("query", parents=[common],
                       help="list the steps where an expression over the replayed state holds",
                       description="Replay LOG and print every step where EXPR holds, e.g. "
                       "\"context.retries > 3\", \"in('working.escalating')\", \"event.type == "
                       "'APPROVE' and context.rejections >= 2\". Exit 0 when some step matches, "
                       "1 when none does.")
    p.add_argument("log", metavar="LOG", help="a log file or STORE#THREAD")
    p.add_argument("expression", metavar="EXPR", help="a query expression (quote it)")
    p.add_argument("--thread", help="thread of a store")
    p.add_argument("--machine", metavar="M", help=machine_help)
    p.add_argument("--machines", metavar="V=M,...", help="machines by machineVersion, for version bridges")
    p.add_argument("--column", action="append", metavar="PATH",
                   help="also show this path per match, e.g. context.queue.length (repeatable)")
    p.add_argument("--limit", type=_count, default=50, help="matches to list (default 50; 0: all)")
    p.set_defaults(func=_cmd_query)

    p = sub.add_parser("check", parents=[common],
                       help="check invariants at every step of a log (exit 1 on a violation)")
    p.add_argument("log", metavar="LOG", help="a log file or STORE#THREAD")
    p.add_argument("--thread", help="thread of a store")
    p.add_argument("--machine", metavar="M", help=machine_help)
    p.add_argument("--machines", metavar="V=M,...", help="machines by machineVersion, for version bridges")
    p.add_argument("--rule", action="append", metavar="NAME=EXPR",
                   help="an invariant that must hold after every entry (repeatable)")
    p.add_argument("--loop", type=int, metavar="N",
                   help="flag the same state and context recurring N times without progress")
    p.add_argument("--stuck", type=_seconds, metavar="SECONDS",
                   help="flag staying in one state longer than SECONDS of recorded time")
    p.set_defaults(func=_cmd_check)
    return parser


def _secret_scrubber(argv: Sequence[str]) -> Callable[[str], str]:
    """What every line the command writes goes through: each URL of the command line written
    with a password (``postgresql://ann:pw@host/db``) becomes its display form
    (:func:`agentscope.stores.display_address`), and the password itself (as typed, and
    URL-decoded) ``***`` wherever else it would show (a message that quotes the raw source)."""
    from urllib.parse import unquote, urlsplit

    from agentscope.stores import display_address

    pairs: list[tuple[str, str]] = []
    for arg in argv:
        if "://" not in arg:
            continue
        for url in {arg, arg.partition("#")[0]}:
            shown = display_address(url)
            if shown != url:
                pairs.append((url, shown))
        try:
            parts = urlsplit(arg)
            words = [parts.password, *(q.partition("=")[2] for q in parts.query.split("&")
                                       if q.lower().startswith("password="))]
        except ValueError:  # not a URL urllib can split: display_address did what it could
            words = []
        for word in words:
            if word:
                pairs += [(word, "***"), (unquote(word), "***")]
    pairs.sort(key=lambda p: -len(p[0]))

    def scrub(text: str) -> str:
        for secret, shown in pairs:
            text = text.replace(secret, shown)
        return text

    return scrub


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``agentscope`` command; return its exit code (0 ok, 1 failed check, 2 bad input)."""
    parser = build_parser()
    args = parser.parse_args(argv)
    scrub = _secret_scrubber(sys.argv[1:] if argv is None else argv)
    out = _Out(sys.stdout, sys.stderr, as_json=bool(args.json), scrub=scrub)
    try:
        code: int = args.func(args, out)
        return code
    except AgentscopeError as exc:
        if args.debug:
            raise
        message = " ".join(str(exc).split("\n")[0].split())
        print(scrub(f"agentscope: error: {message}"), file=sys.stderr)
        return EXIT_BAD_INPUT
    except BrokenPipeError:
        # the reader went away (`agentscope watch --json | head`): stop quietly, never a false
        # green; point stdout at devnull so the interpreter's final flush cannot raise again
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
        except (OSError, ValueError):  # stdout is not a real file (tests, notebooks)
            pass
        return EXIT_BROKEN_PIPE
    except OSError as exc:  # e.g. an unwritable --html/-o target: bad input, one line
        if args.debug:
            raise
        where = f"{exc.filename}: " if exc.filename else ""
        print(scrub(f"agentscope: error: {where}{exc.strerror or exc}"), file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        print("agentscope: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())

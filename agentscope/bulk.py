"""Bulk verification: check every thread of a store, split across any ``concurrent.futures.Executor``.

A store (spec §5.2) holds many threads; checking them one by one in a notebook is slow and
serial. :func:`verify_store` splits the threads into chunks and submits each chunk to an
executor: a local :class:`~concurrent.futures.ProcessPoolExecutor` by default, or anything that
implements the :class:`~concurrent.futures.Executor` interface, such as a Dask ``distributed``
client's ``client.get_executor()`` or Ray's ``ray.util.ThreadPoolExecutor``-style pools. The
function run on the workers is a plain module-level function, so nothing but picklable data
crosses the process boundary.

Machines are live objects (the Node engine holds a subprocess), so they are never shipped.
What is shipped is a :class:`MachineSpec`: *where* to load the machine from. Each worker thread
loads it once, on first use, and keeps it for every later chunk. A task carries the store's
address and thread ids (never entries); the worker opens the store itself
(:func:`agentscope.stores.open_store`).

Work follows the store's fork tree (spec §5.1): the content key of every stored entry (a digest
of its bytes, :meth:`agentscope.stores.RowStore.digests`) links each fork to the thread it
shares its longest prefix with (:func:`fold_links`); a fork's worker reads only its own records
and continues its parent's fold. With ``cache=`` the rows of unchanged threads come from a
verdict cache keyed by the same content keys (:mod:`agentscope.verify_cache`).
"""

from __future__ import annotations

import atexit
import contextlib
import importlib
import itertools
import math
import multiprocessing
import os
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import Executor, Future, ProcessPoolExecutor, as_completed
from dataclasses import dataclass
from itertools import compress, count
from operator import ne
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from agentscope.errors import AgentscopeError, EngineError, MachineLoadError
from agentscope.log.problems import ProblemKind

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

    from agentscope.engines.base import Machine

__all__ = [
    "ROW_COLUMNS", "ChunkFailure", "MachineSpec", "StoreChunk", "as_spec", "default_workers", "map_chunks",
    "run_chunks", "store_threads", "verify_store", "worker_machine",
]

ROW_COLUMNS: tuple[str, ...] = (
    "thread",
    "length",
    "verified",
    "mismatches",
    "first_mismatch",
    "explained",
    "unexplained",
    "missing",
    "seconds",
    "error",
    "folded",
)
"""Columns of the DataFrame :func:`verify_store` returns, in order."""

_JS_SUFFIXES = (".mjs", ".js", ".cjs", ".ts", ".mts", ".cts")


# ---------------------------------------------------------------------------------------------
# Machine specs


@dataclass(frozen=True, slots=True)
class MachineSpec:
    """Where to load a machine from: a picklable recipe each worker turns into a live machine.

    Two kinds exist, one per engine:

    - ``kind="node"``: a JavaScript/TypeScript module run by real XState in Node
      (:func:`agentscope.engines.xstate.load_machine`). ``module`` is the absolute path of the
      ``.mjs``/``.js``/``.ts`` file and ``export`` the export name (``None``: let the engine pick
      the module's only machine export).
    - ``kind="python"``: a Python object. ``module`` is a dotted module name and ``export`` an
      attribute path in it. The attribute is either a machine (anything implementing
      :class:`~agentscope.engines.base.Machine`) or a zero-argument factory returning one, e.g.
      ``agentscope.examples.python_machines:counter_machine``.

    Build one with :meth:`parse` from the text form the CLI accepts, or directly.

    Attributes
    ----------
    kind : {"node", "python"}
    module : str
        Absolute file path (node) or dotted module name (python).
    export : str | None
        Export (node) or attribute path (python; required).
    node : str
        The Node executable, for ``kind="node"``.
    """

    kind: Literal["node", "python"]
    module: str
    export: str | None = None
    node: str = "node"

    @classmethod
    def parse(cls, text: str, *, base: str | os.PathLike[str] | None = None) -> MachineSpec:
        """Parse the text form of a machine spec.

        Accepted forms:

        - ``path/to/machine.mjs`` or ``path/to/machine.mjs:exportName`` (any of ``.mjs``, ``.js``,
          ``.cjs``, ``.ts``, ``.mts``, ``.cts``): the Node engine. Relative paths are resolved
          against ``base`` (default: the current directory) and made absolute, so the spec means
          the same file on every worker.
        - ``py:package.module:attr``: the Python engine.
        - ``package.module:attr`` (no path separator, no JS suffix): also the Python engine.

        Raises
        ------
        MachineLoadError
            The text matches none of the forms, or a Node module file does not exist.
        """
        raw = text.strip()
        if not raw:
            raise MachineLoadError(
                "empty machine spec; expected 'path/to/machine.mjs[:export]' or 'py:module:attr'"
            )
        if raw.startswith("py:"):
            return cls._python(raw[3:], raw)
        path_part, export = raw, None
        head, sep, tail = raw.rpartition(":")
        if sep and head and not tail.startswith(("/", "\\")) and head.lower().endswith(_JS_SUFFIXES):
            path_part, export = head, tail or None
        if path_part.lower().endswith(_JS_SUFFIXES):
            path = Path(path_part).expanduser()
            if not path.is_absolute():
                path = Path(base or Path.cwd()) / path
            path = path.resolve()
            if not path.is_file():
                raise MachineLoadError(f"machine module not found: {path}")
            return cls("node", str(path), export)
        if ":" in raw and "/" not in raw and "\\" not in raw:
            return cls._python(raw, raw)
        raise MachineLoadError(
            f"cannot read machine spec {raw!r}; expected a .mjs/.js/.ts module path with an optional "
            "':export', or 'py:package.module:attr'"
        )

    @classmethod
    def _python(cls, body: str, raw: str) -> MachineSpec:
        module, sep, attr = body.partition(":")
        if not sep or not module or not attr:
            raise MachineLoadError(
                f"cannot read Python machine spec {raw!r}; expected 'py:package.module:attr'"
            )
        return cls("python", module, attr)

    def __str__(self) -> str:
        if self.kind == "python":
            return f"py:{self.module}:{self.export}"
        return f"{self.module}:{self.export}" if self.export else self.module

    def load(self) -> Machine:
        """Load and return a live machine; the caller owns it (call ``close()`` when done).

        Raises
        ------
        MachineLoadError
            The module cannot be imported or found, the attribute does not exist, or it is not a
            machine (nor a factory returning one).
        EngineError
            The Node engine failed to start.
        """
        if self.kind == "node":
            from agentscope.engines.xstate import load_machine

            return load_machine(self.module, self.export, node=self.node)
        if not self.export:
            raise MachineLoadError(f"Python machine spec {self} names no attribute")
        try:
            obj: Any = importlib.import_module(self.module)
        except ImportError as exc:
            raise MachineLoadError(
                f"cannot import module {self.module!r} for machine spec {self}: {exc}"
            ) from exc
        for part in self.export.split("."):
            try:
                obj = getattr(obj, part)
            except AttributeError:
                raise MachineLoadError(f"module {self.module!r} has no attribute {self.export!r}") from None
        if _looks_like_machine(obj):
            return obj  # type: ignore[no-any-return]
        if callable(obj):
            made = obj()
            if _looks_like_machine(made):
                return made  # type: ignore[no-any-return]
            raise MachineLoadError(
                f"{self} is a factory but returned {type(made).__name__}, not a machine"
            )
        raise MachineLoadError(f"{self} is a {type(obj).__name__}, not a machine or a machine factory")


def _looks_like_machine(obj: Any) -> bool:
    if isinstance(obj, type):
        return False
    needed = ("machine_id", "version", "initial", "transition", "persist", "fold")
    return all(hasattr(obj, name) for name in needed)


def as_spec(machine: MachineSpec | str | os.PathLike[str]) -> MachineSpec:
    """Return ``machine`` as a :class:`MachineSpec` (parsing text and paths with :meth:`MachineSpec.parse`).

    Raises
    ------
    TypeError
        ``machine`` is a live machine object: those cannot be shipped to workers; pass a spec.
    MachineLoadError
        The text is not a valid spec.
    """
    if isinstance(machine, MachineSpec):
        return machine
    if isinstance(machine, str | os.PathLike):
        return MachineSpec.parse(os.fspath(machine))
    raise TypeError(
        f"verify_store needs a MachineSpec or its text form, not a live {type(machine).__name__}: "
        "machines are loaded on each worker. Pass e.g. 'machines/triage.mjs:triageMachine' or "
        "'py:agentscope.examples.python_machines:triage_machine'."
    )


# ---------------------------------------------------------------------------------------------
# Worker side


_local = threading.local()
_opened: list[tuple[threading.Thread, Any]] = []
_opened_lock = threading.Lock()


def _machine_for(spec: MachineSpec) -> Machine:
    """Return this worker thread's machine for ``spec``, loading it on first use.

    Machines are kept per thread (an engine is not shared between threads). Machines of threads
    that have ended (a finished ``ThreadPoolExecutor``) are closed the next time one is loaded,
    so repeated calls in one process do not pile up Node processes.
    """
    cache: dict[MachineSpec, Machine] | None = getattr(_local, "machines", None)
    if cache is None:
        cache = {}
        _local.machines = cache
    machine = cache.get(spec)
    if machine is None:
        _close_machines(dead_only=True)
        machine = spec.load()
        cache[spec] = machine
        with _opened_lock:
            _opened.append((threading.current_thread(), machine))
    return machine


def _close_machines(*, dead_only: bool) -> None:
    with _opened_lock:
        closing = [m for t, m in _opened if not (dead_only and t.is_alive())]
        _opened[:] = [(t, m) for t, m in _opened if dead_only and t.is_alive()]
    for m in closing:
        with contextlib.suppress(Exception):
            m.close()


@atexit.register
def _close_all() -> None:  # pragma: no cover - runs at interpreter exit
    _close_machines(dead_only=False)


@dataclass(frozen=True, slots=True)
class _Chunk:
    """One unit of work: some threads of one store. Plain data, so it pickles."""

    store: str
    threads: tuple[str, ...]
    machine: MachineSpec
    machines: tuple[tuple[str, MachineSpec], ...] = ()
    strict: bool = False
    entries: tuple[Sequence[Mapping[str, Any]], ...] | None = None
    parents: tuple[tuple[str, int], ...] | None = None
    """With the fork tree: ``(parent, fork_index)`` per thread of ``threads`` (``("", 0)`` for a
    root); every parent is in the chunk and listed before its children."""
    resume: tuple[bytes | None, ...] | None = None
    """With the fork tree and a verdict cache: per thread, the saved state of its pass over the
    entries verified before (:meth:`agentscope.pipeline.onepass.Resume.to_bytes`), or ``None``."""
    save: bool = False
    """Return each thread's pass state where it can be saved (row key ``resume``, bytes)."""


@dataclass(slots=True)
class _Failure:
    """An error that stops the whole run (the machine cannot load), carried back as data."""

    kind: str
    message: str


def _empty_row(thread: str) -> dict[str, Any]:
    return {
        "thread": thread,
        "length": 0,
        "verified": False,
        "mismatches": 0,
        "first_mismatch": None,
        "explained": 0,
        "unexplained": 0,
        "missing": 0,
        "seconds": 0.0,
        "error": None,
        "folded": 0,
    }


def _verify_chunk(chunk: _Chunk) -> list[dict[str, Any]] | _Failure:
    """Verify each thread of ``chunk`` on this worker; returns one row per thread.

    The worker opens the store itself (:func:`agentscope.stores.open_store` on ``chunk.store``,
    a path or a URL) unless the chunk carries the entries. Errors about one thread (unreadable
    entries, a thread of another machine) become that row's ``error``. Errors that would hit
    every thread (the machine cannot load) come back as a :class:`_Failure` so the caller can
    stop. Exceptions never cross the process boundary, since some of ours do not survive
    pickling.
    """
    from agentscope.pipeline import verify

    try:
        machine = _machine_for(chunk.machine)
        machines = {v: _machine_for(s) for v, s in chunk.machines} or None
    except AgentscopeError as exc:
        return _Failure(type(exc).__name__, str(exc))
    with _open_source(chunk) as store:
        if chunk.parents is not None:
            return _verify_forest(chunk, store, machine, machines)
        rows: list[dict[str, Any]] = []
        for i, thread in enumerate(chunk.threads):
            row = _empty_row(thread)
            t0 = time.perf_counter()
            try:
                log = _whole_log(chunk, store, i)
                row["length"] = len(log)
                report = verify(machine, log, machines=machines, strict=chunk.strict)
                row.update(_summarize(report))
                row["folded"] = len(log)
            except EngineError as exc:
                return _Failure(type(exc).__name__, f"thread {thread!r}: {exc}")
            except AgentscopeError as exc:
                row["error"] = f"{type(exc).__name__}: {exc}"
            row["seconds"] = time.perf_counter() - t0
            rows.append(row)
        return rows


@contextlib.contextmanager
def _open_source(chunk: _Chunk) -> Iterator[Any]:
    """The chunk's store, opened once for all its threads (``None`` when the chunk carries its
    entries or the store cannot be opened: each thread then reports why)."""
    from agentscope.stores import open_store

    store: Any = None
    if chunk.entries is None:
        with contextlib.suppress(AgentscopeError):
            store = open_store(chunk.store)
    try:
        yield store
    finally:
        if store is not None:
            store.close()


def _whole_log(chunk: _Chunk, store: Any, i: int) -> Any:
    """Thread ``i`` of the chunk read whole and validated (the store's one read path)."""
    if chunk.entries is not None:
        return list(chunk.entries[i])
    if store is None:
        from agentscope.stores import open_store

        open_store(chunk.store).close()  # raises why the store cannot be opened
    return store.log(chunk.threads[i])


def _suffix_entries(store: Any, thread: str, prefix: list[Mapping[str, Any]],
                    era: Any) -> list[Mapping[str, Any]] | None:
    """``prefix`` (a parent's entries ``[:k]``, equal in content to this thread's: the content
    keys) extended with ``thread``'s records from ``k`` on, read raw from the store and parsed
    (``idx``/``entry_id`` columns against the entry, §1.2 per entry); ``None`` when any of them
    is not plainly right, so the caller reads the thread whole and reports it as a refold
    does. The §1.3 log rules across the fork point (contiguity, unique ids, one init) are the
    resumed pass's :class:`~agentscope.log.validate.SegmentChecker`'s."""
    from agentscope.log.validate import entry_problem, loads

    out = prefix
    try:
        for batch in store.read(thread, len(prefix)):
            for rec in batch:
                if isinstance(rec.text, bytes) or rec.idx != len(out):
                    return None
                value = loads(rec.text)
                if (type(value) is not dict or value.get("index") != rec.idx
                        or (rec.entry_id is not None and value.get("id") != rec.entry_id)
                        or entry_problem(value, index=rec.idx, era=era) is not None):
                    return None
                out.append(value)
    except (AgentscopeError, ValueError, TypeError):
        return None
    return out


def _verify_forest(chunk: _Chunk, store: Any, machine: Machine,
                   machines: Mapping[str, Machine] | None) -> list[dict[str, Any]] | _Failure:
    """Verify the threads of ``chunk`` (whole subtrees of the fold tree) folding each shared
    prefix once (spec §5.1: a fork copies its parent's entries verbatim, and the fold is pure).

    A root is read whole (:meth:`~agentscope.stores.Store.log`). A fork shares its first ``k``
    entries with its parent (``chunk.parents``, from the content keys of every entry): only its
    records from ``k`` on are read and parsed, its entries are the parent's ``[:k]`` plus those,
    and its fold is a copy of the parent's :class:`~agentscope.pipeline.onepass.Pass` at ``k``
    (:meth:`Pass.copy`, an exact continuation) fed its own entries only. A fork whose own
    records or rows are not plainly right (a row error, a problem the verdict table names) is
    read whole and verified alone, so its row is the refold's. Each row is the row
    :func:`agentscope.pipeline.verify` of the thread gives, plus ``folded`` (entries fed).
    """
    from agentscope.log.entry import entries_of, source_of
    from agentscope.log.validate import is_validated
    from agentscope.pipeline.onepass import CannotResume, Pass, Resume, check_cache
    from agentscope.pipeline.report import verify

    assert chunk.parents is not None
    position = {t: i for i, t in enumerate(chunk.threads)}
    rows: dict[str, dict[str, Any]] = {t: _empty_row(t) for t in chunk.threads}
    children: dict[str, list[tuple[int, str]]] = {}
    roots: list[str] = []
    saved = {t: b for t, b in zip(chunk.threads, chunk.resume or (), strict=False) if b is not None}
    for thread, (parent, k) in zip(chunk.threads, chunk.parents, strict=True):
        if parent and parent in position and k > 0 and thread not in saved and parent not in saved:
            children.setdefault(parent, []).append((k, thread))
        else:
            roots.append(thread)

    def alone(thread: str) -> None:
        row = rows[thread]
        row.update(_empty_row(thread))  # nothing of a fast attempt stays
        log = _whole_log(chunk, store, position[thread])
        row["length"] = len(log)
        row.update(_summarize(verify(machine, log, machines=machines, strict=chunk.strict)))
        row["folded"] = len(log)

    def resumed(thread: str) -> tuple[str, Pass | None, Any, int]:
        """A thread verified before resumes from its saved pass (its stand-in entries play the
        parent's); one whose saved state does not restore is folded whole."""
        blob = saved.get(thread)
        if blob is None or store is None:
            return thread, None, None, 0
        try:
            state = Resume.from_bytes(blob)
            p = Pass.resumed(state, machine=machine, machines=machines, strict=chunk.strict,
                             validated=True)
        except (CannotResume, ValueError):
            return thread, None, None, 0
        return thread, p, state.stand_in(), state.n

    # (thread, the parent's pass copied at the fork point, the parent's entries, the fork point)
    todo: list[tuple[str, Pass | None, Any, int]] = [(r, None, None, 0) for r in reversed(roots)]
    while todo:
        thread, p, parent_log, start = todo.pop()
        row = rows[thread]
        t0 = time.perf_counter()
        if p is None and thread in saved:
            thread, p, parent_log, start = resumed(thread)
        own_state = p is not None and thread in saved  # resumed from its own saved pass
        try:
            if p is None:
                log = _whole_log(chunk, store, position[thread])
            else:
                parent_ents = entries_of(parent_log)
                log = None
                if store is not None:
                    log = _suffix_entries(store, thread, list(parent_ents[:start]),
                                          getattr(parent_log, "era", "C"))
                if log is None:  # not plainly right: verified alone, as a refold does
                    for _k, child in children.get(thread, []):
                        todo.append((child, None, None, 0))
                    alone(thread)
                    continue
            ents = entries_of(log)
            row["length"] = len(ents)
            if not ents:
                row.update(_summarize(verify(machine, log, machines=machines, strict=chunk.strict)))
                continue
            if p is None:
                p = Pass(machine=machine, machines=machines, strict=chunk.strict,
                         source=source_of(log), validated=is_validated(log))
            for at, child in sorted(children.get(thread, [])):
                at = min(at, len(ents))
                if at < p.index.n:
                    todo.append((child, None, None, 0))  # this fold resumed past the fork point
                    continue
                if at > p.index.n:
                    p.feed(ents[:at])
                todo.append((child, p.copy(), log, at))
            try:
                p.feed(ents)
            except CannotResume:  # an id may repeat one before the resume point: as a refold
                alone(thread)
                continue
            if chunk.save:
                state = p.resume_state(ents)
                if state is not None:
                    row["resume"] = state.to_bytes()
            cached = (getattr(log, "cached_snapshot", None) if start == 0
                      else _stored_snapshot(store, thread, ents))
            if isinstance(cached, Mapping):
                check_cache(p.index, ents, cached)
            idx = p.index
            if own_state and (idx.failures or idx.log_problems or idx.log_failures):
                alone(thread)  # a problem's row names entries the resumed pass does not hold
                continue
            row.update(_summarize_index(idx, ents))
            row["folded"] = len(ents) - start
            if start and row["error"] is not None:  # name it exactly as a refold does
                alone(thread)
        except EngineError as exc:
            return _Failure(type(exc).__name__, f"thread {thread!r}: {exc}")
        except AgentscopeError as exc:
            row["error"] = f"{type(exc).__name__}: {exc}"
        finally:
            row["seconds"] = time.perf_counter() - t0
    return [rows[t] for t in chunk.threads]


def _stored_snapshot(store: Any, thread: str, ents: Sequence[Mapping[str, Any]]) -> Any:
    """The persisted snapshot the store keeps for ``thread`` (§5.2 ``agent_snapshots``), as
    :meth:`~agentscope.stores.Store.log` attaches it to a whole read."""
    from agentscope.log.entry import AGENT_INIT, event_type, execution_id

    getter = getattr(store, "cached_snapshot", None)
    init = next((e for e in ents if event_type(e) == AGENT_INIT), None)
    if getter is None:
        return None
    lineage = execution_id(init) if init is not None else None
    try:
        return getter(thread, lineage if isinstance(lineage, str) else None)
    except AgentscopeError:
        return None


_HASH_REASONS = (ProblemKind.STATE_MISMATCH, ProblemKind.MISSING_VERIFICATION, ProblemKind.EXPLAINED_MISMATCH)


def _summarize_index(index: Any, ents: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """:func:`_summarize` of ``report_from_index(index, ents)`` without building the report when
    no entry failed and the log has no problem as a whole (then nothing but the verdict counts
    is read from it: a numpy count of the verdict codes, O(n) in C rather than a DataFrame)."""
    if index.failures or index.log_problems or index.log_failures:
        from agentscope.pipeline.report import report_from_index

        return _summarize(report_from_index(index, ents))
    import numpy as np

    from agentscope.frames import Verdict
    from agentscope.pipeline.onepass import VERDICTS

    counts = np.bincount(index.verdict[: index.n].astype(np.int64), minlength=len(VERDICTS))
    by = {v: int(c) for v, c in zip(VERDICTS, counts.tolist(), strict=False)}
    unexplained, explained = by[Verdict.MISMATCH], by[Verdict.EXPLAINED]
    return {
        "mismatches": unexplained + explained,
        "unexplained": unexplained,
        "explained": explained,
        "missing": by[Verdict.MISSING],
        "first_mismatch": None,
        "verified": True,
        "error": None,
    }


def _summarize(report: Any) -> dict[str, Any]:
    """Reduce a :class:`~agentscope.pipeline.VerifyReport` to the per-thread counts."""
    df = report.df
    verdicts = [str(v) for v in df["verdict"]]
    failed_idx = [int(i) for i, f in zip(df["index"], df["failed"], strict=True) if bool(f)]
    unexplained = sum(v == "mismatch" for v in verdicts)
    explained = sum(v == "explained" for v in verdicts)
    error: str | None = None
    fatal = report.log_failures
    if len(fatal):
        error = f"{fatal['kind'].iloc[0]}: {fatal['message'].iloc[0]}"
    else:
        for i, kind, failed in zip(df["index"], df["kind"], df["failed"], strict=True):
            if bool(failed) and isinstance(kind, str) and kind not in _HASH_REASONS:
                error = "; ".join(report.problems_of(int(i)))
                break
    return {
        "mismatches": unexplained + explained,
        "unexplained": unexplained,
        "explained": explained,
        "missing": sum(v == "missing" for v in verdicts),
        "first_mismatch": failed_idx[0] if failed_idx else None,
        "verified": bool(report.ok),
        "error": error,
    }


# The executor seam's public names: store-wide work (``verify_store``, ``coverage``, ``whatif``)
# is a module-level task over :class:`StoreChunk`-like plain data, run by :func:`run_chunks`; a
# task loads its machine with :func:`worker_machine` and reports a run-stopping error as a
# :class:`ChunkFailure`.
StoreChunk = _Chunk
ChunkFailure = _Failure
worker_machine = _machine_for


# ---------------------------------------------------------------------------------------------
# Caller side


def _default_workers() -> int:
    return max(1, min(os.cpu_count() or 1, 8))


default_workers = _default_workers
"""The default number of workers of the executor seam: the CPU count, at most 8."""


def _list_threads(store: str) -> list[str]:
    """The store's thread ids, from the key column where the store can
    (:meth:`agentscope.stores.RowStore.thread_ids`), else :meth:`~agentscope.stores.Store.threads`."""
    from agentscope.stores import RowStore, open_store

    src = open_store(store)
    try:
        if isinstance(src, RowStore):
            return src.thread_ids()
        return [info.thread_id for info in src.threads()]
    finally:
        src.close()


def verify_store(
    store: str | os.PathLike[str],
    machine: MachineSpec | str | os.PathLike[str],
    *,
    threads: Iterable[str] | None = None,
    executor: Executor | None = None,
    machines: Mapping[str, MachineSpec | str] | None = None,
    strict: bool = False,
    max_workers: int | None = None,
    chunk_size: int | None = None,
    ship_entries: bool = False,
    progress: Callable[[int, int], None] | None = None,
    tree: bool = True,
    cache: str | os.PathLike[str] | None = None,
) -> pd.DataFrame:
    """Verify every thread of a store against a machine, in parallel (spec §4.1, §5.2).

    Each thread is replayed from its init entry and every recorded
    ``verification.stateHash`` is compared with the recomputed one
    (:func:`agentscope.pipeline.verify`). Threads are grouped into chunks and each chunk is
    submitted to ``executor``; every worker loads the machine from its spec once and reuses it.

    Parameters
    ----------
    store : path or URL
        Anything :func:`agentscope.stores.open_store` opens: a SQLite event-log store (table
        ``agent_event_log``, spec §5.2), a directory of logs, a ``postgresql://`` URL. Each task
        carries this address and its thread ids, never entries: workers open the store
        themselves (read-only), so on a remote cluster it must be reachable from the workers
        (shared storage, the database's address), or pass ``ship_entries=True``.
    machine : MachineSpec | str
        The machine to replay with, as a :class:`MachineSpec` or its text form, e.g.
        ``"path/to/triage.mjs:triageMachine"`` or
        ``"py:agentscope.examples.python_machines:counter_machine"``.
        A live machine object is refused (``TypeError``): it cannot be shipped.
    threads : iterable of str, optional
        Only these threads, in this order. Default: every thread of the store.
    executor : concurrent.futures.Executor, optional
        Where to run. Default: a private ``ProcessPoolExecutor`` (``max_workers`` processes, the
        ``spawn`` start method), shut down on return. A passed executor is left running.
    machines : mapping of version to MachineSpec | str, optional
        Extra machines by ``machineVersion``, for logs that cross a version bridge (spec §4.2).
    strict : bool
        Count entries without a recorded hash as failures (``verify: "strict"``, spec §4.1).
    max_workers : int, optional
        Size of the default pool (default: the CPU count, at most 8).
    chunk_size : int, optional
        Threads per submitted task. Default: enough chunks for about four per worker.
    ship_entries : bool
        Read each thread here and send its entries with the task, instead of letting workers read
        the store themselves. For clusters without a shared file system.
    progress : callable(done, total), optional
        Called after each finished chunk with the number of threads done so far.
    tree : bool
        Fold each shared prefix once (default): the threads' fork tree
        (:func:`agentscope.forks.fork_tree`, spec §5.1) is built first, each task is whole
        subtrees, and a fork's fold resumes from its parent's state at the fork point (the
        entries the two hold byte-identical). The table is the one ``tree=False`` (every thread
        folded from its init entry) gives, but for ``folded`` and ``seconds``.
    cache : path, optional
        A verdict cache file (SQLite, :mod:`agentscope.verify_cache`; created when missing,
        never inside the store). A thread whose stored entries (a digest of each entry's
        bytes), machine module and mode are those of a cached row takes that row without being
        read further or folded (``folded`` 0, ``seconds`` 0.0); every other thread is verified
        and its row stored. A grown thread (its cached entries a prefix of the stored ones)
        continues the pass saved with its row (:class:`~agentscope.pipeline.onepass.Resume`:
        one plain segment, no problem, no pending timer or rebinding key; otherwise it is folded
        whole) and folds its new entries only; a rewritten one is folded whole. The table is
        the one without the cache, but for ``folded`` and ``seconds``; ``df.attrs["cache"]``
        says ``reused`` (threads), ``grown`` (thread: cached length) and ``rewritten`` (thread:
        first changed entry, also a :class:`~agentscope.errors.CacheWarning`). A file that is
        not a verdict cache is ignored with a ``CacheWarning`` and left as it is.

    Returns
    -------
    pandas.DataFrame
        One row per thread, in the order of ``threads`` (or the store), with columns
        ``thread`` (str), ``length`` (int, entries), ``verified`` (bool: no unexplained mismatch,
        and in strict mode no missing hash, and no error), ``mismatches`` (int: hash differences,
        explained or not), ``first_mismatch`` (nullable Int64: index of the first failing entry),
        ``explained`` (int: differences with a known benign cause, e.g. a live
        ``timers[*].startedAt``), ``unexplained`` (int), ``missing`` (int: entries with no recorded
        hash), ``seconds`` (float, wall-clock seconds spent on the thread on its worker) and
        ``error`` (str or None: why the thread could not be checked at all, e.g. a malformed
        entry or an entry for another machine), ``folded`` (int: entries this thread's fold fed,
        its own entries when it resumed from its parent's fold; ``length`` without the tree).

    Raises
    ------
    TypeError
        ``machine`` is a live machine object.
    MachineLoadError
        The spec cannot be parsed, or a worker cannot load the machine.
    EngineError
        The engine failed on a worker.
    ThreadNotFoundError, LogFormatError
        The store cannot be read, or a requested thread is not in it.
    StoreError
        ``cache`` is the store, one of its side files, or inside a directory store.

    Examples
    --------
    >>> from concurrent.futures import ThreadPoolExecutor
    >>> import agentscope as asc
    >>> from agentscope.examples import example_path
    >>> spec = "py:agentscope.examples.python_machines:triage_machine"
    >>> with ThreadPoolExecutor(2) as pool:  # any Executor; default: a process pool
    ...     df = asc.verify_store(example_path("g_triage.sqlite"), spec, executor=pool)
    >>> print(df[["thread", "length", "verified", "mismatches"]])
       thread  length  verified  mismatches
    0    fork      52      True           0
    1    main      91      True           0
    2  second      40      True           0

    With the default process pool, call it under ``if __name__ == "__main__":`` in a script: the
    worker processes re-import the script (the ``spawn`` start method).
    """
    store_path = os.fspath(store)
    spec = as_spec(machine)
    extra = tuple((str(v), as_spec(s)) for v, s in (machines or {}).items())
    wanted = store_threads(store_path, threads)
    cache_path = None
    if cache is not None:
        from agentscope.verify_cache import check_cache_path

        cache_path = check_cache_path(cache, store_path)
    if not wanted:
        return _frame([])
    rows_by_thread: dict[str, dict[str, Any]] = {}
    status: dict[str, Any] = {}
    todo = list(wanted)
    vc: Any = None
    mkey = address = ""
    saved: dict[str, bytes] = {}
    passes: dict[str, bytes] = {}
    whole: bytes | None = None
    signature: Any = None
    keys: dict[str, list[bytes]] | None = None
    if cache_path is not None:
        from agentscope.stores import display_address
        from agentscope.verify_cache import VerdictCache, file_digest, file_signature, machine_key

        vc = VerdictCache.open(cache_path)
        mkey, address = machine_key(spec, extra, strict), display_address(store_path)
        signature = file_signature(store_path)
        whole = file_digest(store_path) if vc.usable else None
        hit = vc.file_rows(mkey, address, whole, wanted) if whole is not None else None
        if hit is not None:  # the store's bytes are those every cached row was verified on
            rows_by_thread = {t: {**_empty_row(t), **hit[t].row, "thread": t} for t in wanted}
            status = {"reused": list(wanted), "grown": {}, "rewritten": {}}
            todo = []
    if todo and (tree or cache_path is not None):
        keys = _entry_keys(store_path, wanted)
    if vc is not None and todo and keys is not None:
        rows_by_thread, status = _cached_rows(vc.get(mkey, address, wanted), keys)
        todo = [t for t in wanted if t not in rows_by_thread]
        if tree:
            saved = vc.saved_passes(mkey, address, status["grown"])
    try:
        with _progress_of(progress, len(wanted), executor) as report:
            done = len(wanted) - len(todo)
            if done:
                report(done, len(wanted))

            def step(n: int, _total: int) -> None:
                report(done + n, len(wanted))

            if todo and tree:
                chunks = _tree_chunks(store_path, todo, spec, extra, strict, max_workers,
                                      chunk_size, ship_entries, keys, saved=saved,
                                      save=vc is not None and vc.usable)
                for _chunk, result in run_chunks(
                    _verify_chunk, chunks, executor=executor, max_workers=max_workers,
                    progress=step, sizes=lambda c: len(c.threads), lost=_lost_rows,
                ):
                    for row in result:
                        state = row.pop("resume", None)
                        if state is not None:
                            passes[row["thread"]] = state
                        rows_by_thread[row["thread"]] = row
            elif todo:
                for result in map_chunks(
                    _verify_chunk, store_path, todo, spec, extra, strict=strict,
                    executor=executor, max_workers=max_workers, chunk_size=chunk_size,
                    ship_entries=ship_entries, progress=step, lost=_lost_rows,
                ):
                    for row in result:
                        rows_by_thread[row["thread"]] = row
        if vc is not None and keys is not None:
            from agentscope.verify_cache import CachedRow

            fresh = {  # a row of what the keys were read from (no race, no death)
                t: CachedRow(b"".join(keys[t]), rows_by_thread[t]) for t in todo
                if t in keys and rows_by_thread[t]["length"] == len(keys[t])
                and not str(rows_by_thread[t]["error"]).startswith(_LOST)
            }
            # the file's key goes with rows of every thread of the store, read from those bytes
            # (the file's size, time and inode the same after the run: no writer in between)
            every = threads is None and len(fresh) == len(todo) and whole is not None
            vc.put(mkey, address, fresh, passes,
                   file=whole if every and file_signature(store_path) == signature else None)
    finally:
        if vc is not None:
            vc.close()
    df = _frame([rows_by_thread[t] for t in wanted])
    if cache_path is not None:
        df.attrs["cache"] = status
    return df


_LOST = "WorkerLost"


def _lost_rows(chunk: _Chunk, why: str) -> list[dict[str, Any]]:
    """The rows of a chunk whose worker died twice: each thread's ``error`` says so."""
    return [{**_empty_row(t), "error": f"{_LOST}: {why}"} for t in chunk.threads]


@contextlib.contextmanager
def _progress_of(progress: Callable[[int, int], None] | None, total: int,
                 executor: Executor | None) -> Iterator[Callable[[int, int], None]]:
    """``progress``, or by default: a transient rich progress bar on stderr when it is a
    terminal; in a notebook with a Dask executor, the Dask dashboard's address is printed
    (its task stream is the progress view); otherwise nothing."""
    import sys

    if progress is not None:
        yield progress
        return
    if type(executor).__module__.startswith("distributed") and "ipykernel" in sys.modules:
        with contextlib.suppress(Exception):
            from distributed import default_client

            client = default_client()  # type: ignore[no-untyped-call]
            print(f"verify_store: {total} threads; Dask dashboard: {client.dashboard_link}")
    if not sys.stderr.isatty():
        yield lambda _done, _total: None
        return
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    with Progress(TextColumn("verifying threads"), BarColumn(), MofNCompleteColumn(),
                  TimeElapsedColumn(), console=Console(stderr=True), transient=True) as bar:
        task = bar.add_task("verify", total=total)
        yield lambda done, _total: bar.update(task, completed=done)


def _cached_rows(cached: Mapping[str, Any], keys: Mapping[str, Sequence[bytes]]
                 ) -> tuple[dict[str, dict[str, Any]], dict[str, Any]]:
    """The rows a verdict cache gives (every entry digest equal to the cached ones) and what it
    found: ``{"reused": [thread...], "grown": {thread: cached length}, "rewritten": {thread:
    first changed entry}}``. A rewritten thread (its stored entries differ from the verified
    ones before their end: rewritten or tampered) is reported with a
    :class:`~agentscope.errors.CacheWarning` naming the first changed entry."""
    import warnings

    from agentscope.errors import CacheWarning
    from agentscope.verify_cache import DIGEST

    rows: dict[str, dict[str, Any]] = {}
    status: dict[str, Any] = {"reused": [], "grown": {}, "rewritten": {}}
    for thread, hit in cached.items():
        now = b"".join(keys[thread])
        if now == hit.digests:
            rows[thread] = {**_empty_row(thread), **hit.row, "thread": thread}
            status["reused"].append(thread)
            continue
        old_n = len(hit.digests) // DIGEST
        new = keys[thread]
        first = next((i for i in range(min(old_n, len(new)))
                      if hit.digests[i * DIGEST:(i + 1) * DIGEST] != new[i]), min(old_n, len(new)))
        if first == old_n:
            status["grown"][thread] = old_n
        else:
            status["rewritten"][thread] = first
            warnings.warn(
                f"thread {thread!r}: entry {first} changed since it was verified (the thread was "
                "rewritten or tampered with); verified again", CacheWarning, stacklevel=3)
    return rows, status


def _entry_keys(store_path: str, wanted: Sequence[str]) -> dict[str, list[bytes]] | None:
    """Per wanted thread, a digest of each stored entry's text in ``idx`` order (the store's raw
    records, never parsed: :meth:`agentscope.stores.Store.read`), or ``None`` when the store
    cannot be read so (the workers then report what is wrong).
    """
    from agentscope.stores import RowStore, open_store
    from agentscope.stores.protocol import entry_digest

    out: dict[str, list[bytes]] = {}
    try:
        src = open_store(store_path)
        try:
            if isinstance(src, RowStore):
                out.update(src.digests(wanted))
            else:
                for t in wanted:
                    out[t] = [entry_digest(r.text) for batch in src.read(t) for r in batch]
        finally:
            src.close()
    except (AgentscopeError, TypeError):  # TypeError: an entry cell that is neither text nor bytes
        return None
    return out


def _common(a: Sequence[Any], b: Sequence[Any]) -> int:
    n = min(len(a), len(b))
    return next(compress(count(), map(ne, a, b)), n) if n else 0


def fold_links(keys: Mapping[str, Sequence[Any]]) -> dict[str, tuple[str, int]]:
    """The fork tree the fold follows: ``{thread: (parent, shared)}`` for every thread that
    shares its first ``shared >= 1`` entries with another (spec §5.1: a fork copies a prefix
    verbatim), from per-entry content keys (equal keys: the same entry).

    Threads sorted by their key sequences form a chain, each linked to the one before it with
    their common prefix: every thread shares its longest prefix with a neighbour in that order,
    and the chain folds exactly the distinct prefixes of the store (the sum over threads of
    length minus shared). Roots (shared 0: another execution) are not keys of the result.
    """
    order = sorted(keys, key=lambda t: (tuple(keys[t]), t))
    links: dict[str, tuple[str, int]] = {}
    for prev, t in itertools.pairwise(order):
        k = _common(keys[prev], keys[t])
        while prev in links and k < links[prev][1]:
            prev = links[prev][0]  # prev resumed past k from its parent, whose fold passes k
        if k >= 1:
            links[t] = (prev, k)
    return links


def _tree_chunks(
    store_path: str, wanted: Sequence[str], spec: MachineSpec, extra: tuple[tuple[str, MachineSpec], ...],
    strict: bool, max_workers: int | None, chunk_size: int | None, ship_entries: bool,
    keys: Mapping[str, Sequence[bytes]] | None = None, *, saved: Mapping[str, bytes] | None = None,
    save: bool = False,
) -> list[_Chunk]:
    """Chunks of whole subtrees of the fold tree (:func:`fold_links`) of ``wanted``, parents
    before children, about four chunks per worker; a subtree is never cut (so a worker never
    needs another's state, and each shared prefix is folded once). A source :func:`_entry_keys` cannot
    read gives one root per thread (the worker reports what is wrong with it)."""
    from agentscope.stores import read_log

    if keys is None:
        keys = _entry_keys(store_path, wanted)
    if keys is not None:
        keys = {t: keys[t] for t in wanted}
    links = fold_links(keys) if keys is not None else {}
    workers = max_workers or _default_workers()
    size = chunk_size or max(1, math.ceil(len(wanted) / (4 * workers)))
    order = sorted(wanted, key=lambda t: (tuple(keys[t]), t)) if keys is not None else list(wanted)
    packed: list[list[str]] = [[]]
    for t in order:  # a chain: a root starts a subtree, its members follow it
        if len(packed[-1]) >= size and t not in links:
            packed.append([])
        packed[-1].append(t)
    chunks: list[_Chunk] = []
    for group in packed:
        members = set(group)
        parents = tuple(links[t] if t in links and links[t][0] in members else ("", 0) for t in group)
        entries = None
        if ship_entries:
            entries = tuple(list(read_log(store_path, thread=t).entries) for t in group)
        resume = tuple((saved or {}).get(t) for t in group) if saved else None
        chunks.append(_Chunk(store_path, tuple(group), spec, extra, strict, entries, parents,
                             resume, save))
    return chunks


def store_threads(store_path: str, threads: Iterable[str] | None) -> list[str]:
    """The threads of the store at ``store_path`` to work on: ``threads`` in its order, checked
    against the store, or every thread of the store.

    Raises
    ------
    LogFormatError
        No such file (or it cannot be read as a store).
    ThreadNotFoundError
        A requested thread is not in the store.
    """
    available = _list_threads(store_path)  # open_store: "no such file", a URL's errors
    if threads is None:
        return available
    wanted = [str(t) for t in threads]
    known = set(available)
    unknown = [t for t in wanted if t not in known]
    if unknown:
        from agentscope.errors import ThreadNotFoundError

        raise ThreadNotFoundError(
            f"thread {unknown[0]!r} is not in the store (threads: {', '.join(available) or 'none'})",
            source=store_path,
        )
    return wanted


def map_chunks(
    worker: Callable[[_Chunk], Any],
    store_path: str,
    wanted: Sequence[str],
    spec: MachineSpec,
    extra: tuple[tuple[str, MachineSpec], ...] = (),
    *,
    strict: bool = False,
    executor: Executor | None = None,
    max_workers: int | None = None,
    chunk_size: int | None = None,
    ship_entries: bool = False,
    progress: Callable[[int, int], None] | None = None,
    lost: Callable[[_Chunk, str], Any] | None = None,
) -> Iterator[Any]:
    """Split ``wanted`` threads of a store into chunks and yield ``worker(chunk)`` for each, as
    the chunks finish on ``executor`` (through :func:`run_chunks`, the one scale-out seam).

    About four chunks per worker, or ``chunk_size`` threads each; with ``ship_entries`` each
    chunk carries its threads' entries (read here) so workers need no access to the store.
    :func:`verify_store` and :func:`agentscope.coverage_map.coverage` run through it.
    """
    workers = max_workers or _default_workers()
    size = chunk_size or max(1, math.ceil(len(wanted) / (4 * workers)))
    groups = [tuple(wanted[i : i + size]) for i in range(0, len(wanted), size)]
    chunks: list[_Chunk] = []
    for group in groups:
        entries = None
        if ship_entries:
            from agentscope.stores import read_log

            entries = tuple(list(read_log(store_path, thread=t).entries) for t in group)
        chunks.append(_Chunk(store_path, group, spec, extra, strict, entries))
    for _chunk, result in run_chunks(
        worker, chunks, executor=executor, max_workers=workers, progress=progress,
        sizes=lambda c: len(c.threads), lost=lost,
    ):
        yield result


_C = TypeVar("_C")
_R = TypeVar("_R")


def run_chunks(
    task: Callable[[_C], _R | _Failure],
    chunks: Sequence[_C],
    *,
    executor: Executor | None = None,
    max_workers: int | None = None,
    progress: Callable[[int, int], None] | None = None,
    sizes: Callable[[_C], int] = lambda _c: 1,
    lost: Callable[[_C, str], _R] | None = None,
) -> Iterator[tuple[_C, _R]]:
    """Submit ``task(chunk)`` for every chunk to an executor and yield ``(chunk, result)`` as
    they finish: the one scale-out seam of bulk work over a store (``verify_store``, ``whatif``,
    ``coverage``).

    ``task`` must be a module-level function (it is pickled by reference) taking and returning
    plain data. A task returning a :class:`_Failure` (an error that would hit every chunk, e.g.
    the machine cannot load) cancels the rest and raises ``MachineLoadError`` or ``EngineError``
    here. Default executor: a private ``ProcessPoolExecutor`` (``max_workers`` processes, the
    ``spawn`` start method), shut down on return; a passed executor is left running.
    ``progress(done, total)`` is called after each chunk with the summed ``sizes`` (default:
    one per chunk).

    With ``lost``, a worker that dies (a broken process pool, Dask's ``KilledWorker``) loses
    only the chunks it was running: every chunk that did not finish is retried once, alone (a
    fresh private pool replaces a broken one), so a second death names its own chunk, whose
    result is then ``lost(chunk, why)``. Without ``lost`` the death is raised.
    """
    own_pool = executor is None

    def fresh() -> Executor:
        return ProcessPoolExecutor(max_workers=max_workers or _default_workers(),
                                   mp_context=multiprocessing.get_context("spawn"))

    pool: Executor = executor if executor is not None else fresh()
    total = sum(sizes(c) for c in chunks)
    done = 0

    def finish(chunk: _C, result: _R | _Failure) -> tuple[_C, _R]:
        nonlocal done
        if isinstance(result, _Failure):
            cls = MachineLoadError if result.kind == "MachineLoadError" else EngineError
            raise cls(result.message)
        done += sizes(chunk)
        if progress is not None:
            progress(done, total)
        return chunk, result

    retry: list[_C] = []
    try:
        futures: dict[Future[_R | _Failure], _C] = {pool.submit(task, c): c for c in chunks}
        try:
            for fut in as_completed(futures):
                try:
                    result = fut.result()
                except Exception as exc:
                    if lost is None or not _worker_lost(exc):
                        raise
                    retry.append(futures[fut])
                    continue
                yield finish(futures[fut], result)
        except BaseException:
            for other in futures:
                other.cancel()
            raise
        broken = bool(retry)
        for chunk in retry:  # one at a time: a death now is this chunk's own
            assert lost is not None
            if own_pool and broken:  # a process pool is unusable once a worker died
                pool.shutdown(wait=True, cancel_futures=True)
                pool = fresh()
            broken = False
            try:
                result = pool.submit(task, chunk).result()
            except Exception as exc:
                if not _worker_lost(exc):
                    raise
                broken = True
                result = lost(chunk, f"the worker running it died twice ({type(exc).__name__}: {exc})")
            yield finish(chunk, result)
    finally:
        if own_pool:
            pool.shutdown(wait=True, cancel_futures=True)


def _worker_lost(exc: BaseException) -> bool:
    """Whether ``exc`` says the worker process died (not that the task raised)."""
    from concurrent.futures import BrokenExecutor

    return isinstance(exc, BrokenExecutor) or type(exc).__name__ == "KilledWorker"


def _frame(rows: list[dict[str, Any]]) -> pd.DataFrame:
    import pandas as pd

    df = pd.DataFrame(rows, columns=list(ROW_COLUMNS))
    return df.astype(
        {
            "thread": "string",
            "length": "int64",
            "verified": "bool",
            "mismatches": "int64",
            "first_mismatch": "Int64",
            "explained": "int64",
            "unexplained": "int64",
            "missing": "int64",
            "seconds": "float64",
            "error": "object",
            "folded": "int64",
        }
    )


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
loads it once, on first use, and keeps it for every later chunk.
"""

from __future__ import annotations

import atexit
import contextlib
import importlib
import math
import multiprocessing
import os
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import Executor, Future, ProcessPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from agentscope.errors import AgentscopeError, EngineError, LogFormatError, MachineLoadError
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

    Errors about one thread (unreadable entries, a thread of another machine) become that row's
    ``error``. Errors that would hit every thread (the machine cannot load) come back as a
    :class:`_Failure` so the caller can stop. Exceptions never cross the process boundary, since
    some of ours do not survive pickling.
    """
    from agentscope.log import read_log
    from agentscope.pipeline import verify

    try:
        machine = _machine_for(chunk.machine)
        machines = {v: _machine_for(s) for v, s in chunk.machines} or None
    except AgentscopeError as exc:
        return _Failure(type(exc).__name__, str(exc))

    if chunk.parents is not None:
        return _verify_forest(chunk, machine, machines)
    rows: list[dict[str, Any]] = []
    for i, thread in enumerate(chunk.threads):
        row = _empty_row(thread)
        t0 = time.perf_counter()
        try:
            log: Any
            if chunk.entries is not None:
                log = list(chunk.entries[i])
            else:
                log = read_log(chunk.store, thread=thread)
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


def _shared_prefix(a: Sequence[Mapping[str, Any]], b: Sequence[Mapping[str, Any]], k: int) -> int:
    """How many of the first ``k`` positions hold byte-identical entries (orjson bytes: ``True``
    is not ``1``); the prefix a fork may take from its parent's fold. 0 when they cannot be
    serialized."""
    import orjson

    n = min(k, len(a), len(b))
    try:
        return next((i for i in range(n) if a[i] is not b[i]
                     and orjson.dumps(a[i]) != orjson.dumps(b[i])), n)
    except TypeError:  # orjson.JSONEncodeError: not plain JSON, let the fork fold alone
        return 0


def _verify_forest(chunk: _Chunk, machine: Machine,
                   machines: Mapping[str, Machine] | None) -> list[dict[str, Any]] | _Failure:
    """Verify the threads of ``chunk`` (whole subtrees of the fork tree) folding each shared
    prefix once (spec §5.1: a fork copies its parent's entries verbatim, and the fold is pure).

    A parent's one :class:`~agentscope.pipeline.onepass.Pass` is fed up to each child's fork
    point and copied there (:meth:`Pass.copy`, an exact continuation: the same engine snapshot
    and rebinding cache), and the child feeds only its own entries. The fork point used is the
    number of leading entries byte-identical to the parent's (at most the tree's
    ``fork_index``): a copy that differs earlier (tampered, re-recorded) resumes from that
    entry, and one that differs at the init entry folds alone. Each row is the row
    :func:`agentscope.pipeline.verify` of the thread gives, plus ``folded`` (entries fed).
    """
    from agentscope.log import read_log
    from agentscope.log.entry import entries_of, event_types, source_of
    from agentscope.log.validate import is_validated
    from agentscope.pipeline.onepass import Pass, check_cache
    from agentscope.pipeline.report import report_from_index, verify

    assert chunk.parents is not None
    rows: dict[str, dict[str, Any]] = {t: _empty_row(t) for t in chunk.threads}
    logs: dict[str, Any] = {}
    for i, thread in enumerate(chunk.threads):
        try:
            logs[thread] = (list(chunk.entries[i]) if chunk.entries is not None
                            else read_log(chunk.store, thread=thread))
        except AgentscopeError as exc:
            rows[thread]["error"] = f"{type(exc).__name__}: {exc}"
    children: dict[str, list[tuple[str, int]]] = {}
    roots: list[str] = []
    for thread, (parent, k) in zip(chunk.threads, chunk.parents, strict=True):
        if thread not in logs:
            continue
        if parent and parent in logs and k > 0:
            children.setdefault(parent, []).append((thread, k))
        else:
            roots.append(thread)

    todo: list[tuple[str, Pass | None, int]] = [(r, None, 0) for r in reversed(roots)]
    while todo:
        thread, p, start = todo.pop()
        row, log = rows[thread], logs[thread]
        t0 = time.perf_counter()
        try:
            ents = entries_of(log)
            row["length"] = len(ents)
            if not ents:
                row.update(_summarize(verify(machine, log, machines=machines, strict=chunk.strict)))
                continue
            if p is None:
                p = Pass(machine=machine, machines=machines, strict=chunk.strict,
                         source=source_of(log), validated=is_validated(log))
            kids = sorted(
                (_shared_prefix(ents, entries_of(logs[c]), k), c) for c, k in children.get(thread, [])
            )
            for at, child in kids:
                if at > p.index.n:
                    p.feed(ents[:at])
                todo.append((child, p.copy() if at > 0 else None, at))
            types = event_types(ents)
            p.feed(ents)
            cached = getattr(log, "cached_snapshot", None)
            if isinstance(cached, Mapping):
                check_cache(p.index, ents, cached)
            row.update(_summarize(report_from_index(p.index, ents, types=types)))
            row["folded"] = len(ents) - start
        except EngineError as exc:
            return _Failure(type(exc).__name__, f"thread {thread!r}: {exc}")
        except AgentscopeError as exc:
            row["error"] = f"{type(exc).__name__}: {exc}"
        finally:
            row["seconds"] = time.perf_counter() - t0
    return [rows[t] for t in chunk.threads]


_HASH_REASONS = (ProblemKind.STATE_MISMATCH, ProblemKind.MISSING_VERIFICATION, ProblemKind.EXPLAINED_MISMATCH)


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
    from agentscope.log import read_threads

    df = read_threads(store)
    return [str(t) for t in df["thread_id"]]


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
) -> pd.DataFrame:
    """Verify every thread of a store against a machine, in parallel (spec §4.1, §5.2).

    Each thread is replayed from its init entry and every recorded
    ``verification.stateHash`` is compared with the recomputed one
    (:func:`agentscope.pipeline.verify`). Threads are grouped into chunks and each chunk is
    submitted to ``executor``; every worker loads the machine from its spec once and reuses it.

    Parameters
    ----------
    store : path
        A SQLite event-log store (table ``agent_event_log``, spec §5.2) or anything else
        :func:`agentscope.log.read_threads` lists threads of. Workers open it by this path
        (read-only), so on a remote cluster it must sit on storage the workers share, or pass
        ``ship_entries=True``.
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
    if not wanted:
        return _frame([])
    rows_by_thread: dict[str, dict[str, Any]] = {}
    if tree:
        chunks = _tree_chunks(store_path, wanted, spec, extra, strict, max_workers, chunk_size,
                              ship_entries)
        for _chunk, result in run_chunks(
            _verify_chunk, chunks, executor=executor, max_workers=max_workers, progress=progress,
            sizes=lambda c: len(c.threads),
        ):
            for row in result:
                rows_by_thread[row["thread"]] = row
        return _frame([rows_by_thread[t] for t in wanted])
    for result in map_chunks(
        _verify_chunk, store_path, wanted, spec, extra, strict=strict, executor=executor,
        max_workers=max_workers, chunk_size=chunk_size, ship_entries=ship_entries,
        progress=progress,
    ):
        for row in result:
            rows_by_thread[row["thread"]] = row
    return _frame([rows_by_thread[t] for t in wanted])


def _tree_chunks(
    store_path: str, wanted: Sequence[str], spec: MachineSpec, extra: tuple[tuple[str, MachineSpec], ...],
    strict: bool, max_workers: int | None, chunk_size: int | None, ship_entries: bool,
) -> list[_Chunk]:
    """Chunks of whole subtrees of the fork tree of ``wanted`` (a parent not wanted makes its
    child a root), parents before children, packed to about four chunks per worker."""
    from agentscope.forks import fork_tree
    from agentscope.log import read_log

    logs: dict[str, Any] = {}
    for t in wanted:
        with contextlib.suppress(AgentscopeError):  # unreadable: a root, its worker says why
            logs[t] = read_log(store_path, thread=t)
    tree = fork_tree(logs)
    link: dict[str, tuple[str, int]] = {}
    for t, parent, k in zip(tree["thread"], tree["parent"], tree["fork_index"], strict=True):
        if isinstance(parent, str) and parent in logs:
            link[str(t)] = (parent, int(k))

    def root_of(t: str) -> tuple[str, int]:
        depth = 0
        while t in link:
            t, depth = link[t][0], depth + 1
        return t, depth

    groups: dict[str, list[tuple[int, int, str]]] = {}
    for pos, t in enumerate(wanted):
        root, depth = root_of(t)
        groups.setdefault(root, []).append((depth, pos, t))
    workers = max_workers or _default_workers()
    size = chunk_size or max(1, math.ceil(len(wanted) / (4 * workers)))
    packed: list[list[str]] = [[]]
    for members in groups.values():
        if packed[-1] and len(packed[-1]) + len(members) > size:
            packed.append([])
        packed[-1].extend(t for _d, _p, t in sorted(members))
    chunks: list[_Chunk] = []
    for group in packed:
        parents = tuple(link.get(t, ("", 0)) for t in group)
        entries = None
        if ship_entries:  # an unreadable thread is read again on the worker, which reports it
            entries = tuple(list(logs[t].entries) if t in logs else read_log(store_path, thread=t).entries
                            for t in group)
        chunks.append(_Chunk(store_path, tuple(group), spec, extra, strict, entries, parents))
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
    if not Path(store_path).exists():
        raise LogFormatError("no such file", source=store_path)
    available = _list_threads(store_path)
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
            from agentscope.log import read_log

            entries = tuple(list(read_log(store_path, thread=t).entries) for t in group)
        chunks.append(_Chunk(store_path, group, spec, extra, strict, entries))
    for _chunk, result in run_chunks(
        worker, chunks, executor=executor, max_workers=workers, progress=progress,
        sizes=lambda c: len(c.threads),
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
    """
    own_pool = executor is None
    pool: Executor = executor if executor is not None else ProcessPoolExecutor(
        max_workers=max_workers or _default_workers(), mp_context=multiprocessing.get_context("spawn")
    )
    total = sum(sizes(c) for c in chunks)
    try:
        futures: dict[Future[_R | _Failure], _C] = {pool.submit(task, c): c for c in chunks}
        done = 0
        for fut in as_completed(futures):
            result = fut.result()
            if isinstance(result, _Failure):
                for other in futures:
                    other.cancel()
                cls = MachineLoadError if result.kind == "MachineLoadError" else EngineError
                raise cls(result.message)
            chunk = futures[fut]
            done += sizes(chunk)
            if progress is not None:
                progress(done, total)
            yield chunk, result
    finally:
        if own_pool:
            pool.shutdown(wait=True, cancel_futures=True)


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


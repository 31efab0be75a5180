"""One verifying pass over a log: per-entry hashes, verdicts and problems, plus checkpoints.

``verify`` builds its report from it and ``Timeline`` keeps it as its index. Storage is compact
so a 10^6-entry log stays small: hashes as ``uint32`` arrays, verdicts as ``uint8`` codes,
``ignored`` as a ``bool`` array, and text (problems, explanations) only for the entries that
have any. Persisted snapshots are kept only at checkpoints (every ``checkpoint_every`` entries
of a segment).

Private module.
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import hashlib
import json
import operator
import re
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from itertools import compress
from typing import Any, cast

import numpy as np

from agentscope.engines.base import Machine, Snapshot, TakenTransition, snapshot_hash
from agentscope.errors import (
    AgentscopeError,
    EngineError,
    LogFormatError,
    MachineExecutionError,
    MachineVersionMismatchError,
    ReplayDivergenceError,
    SnapshotDivergedError,
    SnapshotRestoreError,
)
from agentscope.frames import Verdict
from agentscope.hashing import state_hash, state_hashes
from agentscope.jsondiff import delta
from agentscope.log.entry import (
    AGENT_INIT,
    entry_id,
    event_type,
    execution_id,
    recorded_at_ms,
    recorded_hashes,
    session_key,
)
from agentscope.log.problems import ProblemKind
from agentscope.log.validate import SegmentChecker, identity_problem, no_init_problem, problem_kind
from agentscope.pipeline.explain import explain_mismatch
from agentscope.pipeline.fold import DEFAULT_BATCH, batch_for, fold_segment
from agentscope.pipeline.segments import Segment, segments_of
from agentscope.pipeline.snapshots import SnapshotStore

__all__ = ["ID_KEY", "VERDICTS", "CannotResume", "LogIndex", "Pass", "Resume", "build_index", "id_key",
           "machine_for_segment"]

VERDICTS: tuple[Verdict, ...] = tuple(Verdict)
_CODE = {v: i for i, v in enumerate(VERDICTS)}
_TIMERS_OF = operator.methodcaller("get", "timers")
_HEX8 = re.compile(r"[0-9a-f]{8}")  # used with fullmatch: exactly the hash text, no newline
_VERIFIED, _MISMATCH, _EXPLAINED = _CODE[Verdict.VERIFIED], _CODE[Verdict.MISMATCH], _CODE[Verdict.EXPLAINED]
_CHUNK = 256
"""Most snapshots hashed and judged together (one vectorised hash call, one verdict comparison).
Hashing 256 at a time is as fast per snapshot as 512, and a chunk of small states then stays
under the collector's young-generation threshold (700 objects by default), so a pass over a long
log of them triggers almost no garbage collection."""
_CHUNK_BYTES = 1024 * 1024
"""Most bytes of persisted snapshots (as JSON) one chunk holds: large states come in short chunks."""
_FIRST_CHUNK = 16
"""The first chunk of a run, before the snapshots' size is known."""
_OVERFLOW_EVERY = 256
"""Checkpoint interval past a full snapshot store (a seek there folds at most this many entries)."""


@dataclass
class LogIndex:
    """What one pass learned about every entry (see the module docstring for the layout).

    ``problems[i]`` is a list of ``(kind, detail)``; ``failures[i]`` the typed errors that make
    entry ``i`` fail (``raise_if_failed`` raises the first). ``log_problems`` are log-level
    ``(kind, detail, fatal)`` items (segment without a machine, cached snapshot disagreement),
    ``fatal`` always ``kind in FAILS_THE_LOG``; the report shows them as rows of its one problems
    table.
    """

    n: int
    segments: list[Segment]
    machines: list[Machine | None]
    computed: np.ndarray[Any, np.dtype[np.uint32]]
    has_computed: np.ndarray[Any, np.dtype[np.bool_]]
    recorded: np.ndarray[Any, np.dtype[np.uint32]]
    has_recorded: np.ndarray[Any, np.dtype[np.bool_]]
    verdict: np.ndarray[Any, np.dtype[np.uint8]]
    ignored: np.ndarray[Any, np.dtype[np.bool_]]
    odd_recorded: dict[int, str] = field(default_factory=dict)
    problems: dict[int, list[tuple[str, str]]] = field(default_factory=dict)
    failures: dict[int, list[AgentscopeError]] = field(default_factory=dict)
    explanations: dict[int, str] = field(default_factory=dict)
    log_problems: list[tuple[str, str, bool]] = field(default_factory=list)
    log_failures: list[AgentscopeError] = field(default_factory=list)
    checkpoints: dict[int, Mapping[str, Any]] = field(default_factory=dict)
    checkpoint_sessions: dict[int, list[tuple[str, str, bool]]] = field(default_factory=dict)
    replayed_upto: list[int] = field(default_factory=list)
    strict: bool = False
    source: str | None = None
    stores: dict[int, SnapshotStore] = field(default_factory=dict)
    """Per segment number: every persisted snapshot of the pass (when it kept them)."""
    rows: list[tuple[int, str, str, str | None, str | None, str | None]] = field(default_factory=list)
    """Every entry problem as ``(index, kind, message, field, expected, actual)``, in the order found."""
    taken: list[tuple[TakenTransition, ...] | None] = field(default_factory=list)
    """Per entry (``n`` long): the transitions the engine reported the entry's step took
    (:attr:`Snapshot.transitions`; the records are shared, one tuple per distinct step), ``None``
    where it reported none (a restored snapshot, an engine that cannot) or the pass kept no
    snapshots (a verifying pass: nothing there draws an edge)."""
    chains: dict[int, tuple[Any, ...]] = field(default_factory=dict)
    """Per entry whose step took several microsteps: the state value after each
    (:attr:`Snapshot.microstep_values`; a one-microstep step's is the entry's own value)."""

    @classmethod
    def empty(cls, *, strict: bool = False, source: str | None = None) -> LogIndex:
        """An index of no entries; :meth:`grow` makes room."""
        return cls(
            n=0, segments=[], machines=[],
            computed=np.zeros(0, np.uint32), has_computed=np.zeros(0, np.bool_),
            recorded=np.zeros(0, np.uint32), has_recorded=np.zeros(0, np.bool_),
            verdict=np.zeros(0, np.uint8), ignored=np.zeros(0, np.bool_),
            strict=strict, source=source,
        )

    def copy(self) -> LogIndex:
        """An independent copy (arrays, problem lists and stores copied; errors and snapshots
        shared: they are never mutated)."""
        out = LogIndex(
            n=self.n, segments=list(self.segments), machines=list(self.machines),
            computed=self.computed.copy(), has_computed=self.has_computed.copy(),
            recorded=self.recorded.copy(), has_recorded=self.has_recorded.copy(),
            verdict=self.verdict.copy(), ignored=self.ignored.copy(),
            odd_recorded=dict(self.odd_recorded),
            problems={i: list(v) for i, v in self.problems.items()},
            failures={i: list(v) for i, v in self.failures.items()},
            explanations=dict(self.explanations),
            log_problems=list(self.log_problems), log_failures=list(self.log_failures),
            checkpoints=dict(self.checkpoints),
            checkpoint_sessions=dict(self.checkpoint_sessions),
            replayed_upto=list(self.replayed_upto), strict=self.strict, source=self.source,
            stores={k: v.copy() for k, v in self.stores.items()}, rows=list(self.rows),
            taken=list(self.taken), chains=dict(self.chains),
        )
        return out

    def truncated(self, n: int) -> LogIndex:
        """An independent copy holding what the pass learned about positions ``0 .. n - 1`` only,
        for ``n`` inside the last segment (``segments[-1].start < n <= self.n``; ``ValueError``
        otherwise): per-entry arrays, problems, rows, explanations, checkpoints and the last
        segment's store cut at ``n``, that segment ending at ``n``. Log-level problems are the
        pass's own (``no-machine``, ``bridge-link``: about segments that all start before ``n``);
        the cached snapshot's (``cache-*``, checked against the whole log) are dropped."""
        if not self.segments or not self.segments[-1].start < n <= self.n:
            raise ValueError(f"LogIndex.truncated: {n} is not inside the last segment")
        out = self.copy()
        for name in ("computed", "has_computed", "recorded", "has_recorded", "verdict", "ignored"):
            setattr(out, name, getattr(out, name)[:n].copy())
        out.n = n
        del out.taken[n:]
        last = self.segments[-1]
        out.segments[-1] = dataclasses.replace(last, stop=n)
        out.replayed_upto[-1] = min(out.replayed_upto[-1], n)
        for name in ("odd_recorded", "problems", "failures", "explanations", "checkpoints",
                     "checkpoint_sessions", "chains"):
            setattr(out, name, {i: v for i, v in getattr(out, name).items() if i < n})
        out.rows = [r for r in out.rows if r[0] < n]
        out.log_problems = [p for p in out.log_problems if not p[0].startswith("cache-")]
        out.log_failures = [f for f in out.log_failures if type(f) is EngineError]  # no-machine's
        store = out.stores.get(last.number)
        if store is not None:
            out.stores[last.number] = store.truncated(n)
        return out

    def grow(self, n: int) -> None:
        """Make the per-entry arrays ``n`` long (new rows: no hash, ``unchecked``); amortised O(1)
        per entry (the buffers double)."""
        if n <= self.n:
            return
        names = ("computed", "has_computed", "recorded", "has_recorded", "verdict", "ignored")
        bufs: dict[str, Any] = getattr(self, "_bufs", {})
        cap = len(bufs["computed"]) if bufs else 0
        if n > cap:
            new_cap = max(n, 2 * cap, 64)
            for name in names:
                old = getattr(self, name)
                buf = np.zeros(new_cap, old.dtype)
                if name == "verdict":
                    buf[:] = _CODE[Verdict.UNCHECKED]
                buf[: self.n] = old[: self.n]
                bufs[name] = buf
            object.__setattr__(self, "_bufs", bufs)
        for name in names:
            setattr(self, name, bufs[name][:n])
        self.taken.extend([None] * (n - len(self.taken)))
        self.n = n

    def computed_hash(self, i: int) -> str | None:
        return f"{int(self.computed[i]):08x}" if self.has_computed[i] else None

    def recorded_hash(self, i: int) -> str | None:
        if i in self.odd_recorded:
            return self.odd_recorded[i]
        return f"{int(self.recorded[i]):08x}" if self.has_recorded[i] else None

    def verdict_of(self, i: int) -> Verdict:
        return VERDICTS[int(self.verdict[i])]

    def segment_of(self, i: int) -> int:
        lo, hi = 0, len(self.segments) - 1
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if self.segments[mid].start <= i:
                lo = mid
            else:
                hi = mid - 1
        return lo

    def sessions_at(self, c: int, m: Machine, restored: Snapshot) -> dict[str, str]:
        """The rebinding cache a fold resumed from checkpoint ``c`` (restored as ``restored``)
        must start with to behave exactly like the unbroken fold.

        Only keys journaled both at/before ``c`` and after it matter (a key first seen after
        ``c`` resolves the same way in both folds). One that pointed at the child running at
        ``c`` follows that child to its session in ``restored``; a stale one keeps its old,
        never-matching value.
        """
        cache: dict[str, str] = {}
        for key, value, live in self.checkpoint_sessions.get(c, ()):
            if live:
                now = m.child_session(restored, key.split("\u0000", 1)[0])
                cache[key] = value if now is None else now
            else:
                cache[key] = value
        return cache

    def add_problem(self, i: int, kind: ProblemKind, detail: str, error: AgentscopeError | None,
                    *, expected: str | None = None, actual: str | None = None,
                    fails: bool = True) -> None:
        """Record a problem of entry ``i`` (``kind`` a :class:`~agentscope.log.problems.ProblemKind`
        code); ``error`` makes the entry fail unless ``fails=False``. ``expected``/``actual``
        default to the error's own (a hash, a machine identity)."""
        self.problems.setdefault(i, []).append((kind, detail))
        if expected is None and actual is None and error is not None:
            expected, actual = _side(getattr(error, "expected", None)), _side(getattr(error, "actual", None))
        field_ = getattr(error, "field", None)
        self.rows.append((i, kind, detail, field_ if isinstance(field_, str) else None, expected, actual))
        if error is not None and fails:
            self.failures.setdefault(i, []).append(error)


def _side(value: Any) -> str | None:
    """An error's ``expected``/``actual`` as the problems table's string: a hash as is, a machine
    identity as ``id@version``."""
    if value is None:
        return None
    if isinstance(value, Mapping) and "machineId" in value:
        return f"{value.get('machineId')}@{value.get('machineVersion')}"
    return str(value)


def check_machines(machines: Any) -> None:
    """Raise ``TypeError`` unless ``machines`` is ``None`` or a mapping of version -> Machine."""
    if machines is None:
        return
    if not isinstance(machines, Mapping):
        raise TypeError(
            f"machines must be a mapping of machineVersion -> Machine; got {type(machines).__name__}"
        )
    for key, m in machines.items():
        if not isinstance(m, Machine):
            raise TypeError(
                f"machines[{key!r}] must be a Machine (e.g. StatechartMachine or load_machine(...)); "
                f"got {type(m).__name__} {m!r:.80}"
            )


def machine_for_segment(
    seg: Segment,
    machine: Machine | None,
    machines: Mapping[str, Machine] | None,
) -> tuple[Machine | None, str | None]:
    """Pick the machine that replays ``seg`` and the version its entries must carry.

    With ``machines`` (version -> machine) the segment's version selects; ``machine`` is the
    fallback when its own version matches (or when no ``machines`` was given at all, in which
    case entries of another version are reported as identity mismatches).
    """
    if machines:
        m = machines.get(seg.machine_version) if seg.machine_version is not None else None
        if m is not None:
            return m, seg.machine_version
        if machine is not None and machine.version == seg.machine_version:
            return machine, seg.machine_version
        return None, None
    return machine, None


def engine_failure(
    idx: LogIndex, entries: Sequence[Mapping[str, Any]], seg: Segment, m: Machine, at: int,
    exc: BaseException,
) -> tuple[str, AgentscopeError]:
    """The ``engine-error`` problem of a fold of ``seg`` that raised ``exc`` at entry ``at``:
    ``(detail, error)``.

    ``detail`` is one sentence naming the entry (``entry <at> ('<id>', '<event type>')``) and what
    the machine raised. When an entry of ``seg`` up to ``at`` targets another machine (a
    ``machine-mismatch`` problem already recorded), the sentence says the failure is a
    consequence of that mismatch and names both identities, so a wrong machine reads as one story.
    ``error`` is typed: an exception from the machine's own code (a raw ``KeyError`` of a
    ``context`` function, a :class:`~agentscope.errors.MachineExecutionError`) becomes a
    :class:`~agentscope.errors.MachineExecutionError` whose message is ``detail``, whose
    ``index`` is ``at`` (the log position) and whose ``raised`` is what the machine raised (the
    sentence after the entry's place); any other :class:`~agentscope.errors.AgentscopeError` (a
    Node crash, a snapshot the machine cannot restore) is kept as raised.
    """
    e = entries[at] if 0 <= at < len(entries) else {}
    etype = event_type(e)
    where = f"entry {at} ({entry_id(e)!r}, {etype!r})"
    if isinstance(exc, MachineExecutionError):
        what = str(exc)  # the engine's sentence: "the machine 'x' raised on event 'E': KeyError: ..."
    elif isinstance(exc, AgentscopeError):
        what = f"{type(exc).__name__}: {exc}"
    else:
        what = f"the machine {m.machine_id!r} raised {type(exc).__name__}: {exc}"
    mismatch = next(
        (f for i in range(seg.start, min(at, seg.stop - 1) + 1) for f in idx.failures.get(i, ())
         if isinstance(f, MachineVersionMismatchError)),
        None,
    )
    if mismatch is not None:
        ident = MachineVersionMismatchError.identity
        where += (
            f": a consequence of the machine mismatch (the log's entries target "
            f"{ident(mismatch.actual)}, the machine is {ident(mismatch.expected)})"
        )
    detail = f"{where}: {what}"
    if isinstance(exc, AgentscopeError) and not isinstance(exc, MachineExecutionError):
        return detail, exc
    kind = getattr(exc, "kind", "") or "machine-error"
    err = MachineExecutionError(detail, index=at, event_type=etype, kind=kind, raised=what)
    err.__cause__ = exc
    return detail, err


class _Chunk:
    """Snapshots the pass takes from the fold at once: the snapshots themselves (``snaps``, when
    the pass keeps them: checkpoints, a store), else only their persisted forms, the engine-sent
    hashes (``None`` where the engine sent none), the engine's ``unchanged`` findings (``None``
    where it made none) and the last snapshot (the fold's latest)."""

    __slots__ = ("last", "persisted", "same", "sent", "snaps")

    def __init__(self, keep: bool) -> None:
        self.snaps: list[Snapshot] | None = [] if keep else None
        self.persisted: list[Mapping[str, Any]] = []
        self.sent: list[str | None] = []
        self.same: list[bool | None] = []
        self.last: Snapshot | None = None

    def __len__(self) -> int:
        return len(self.snaps) if self.snaps is not None else len(self.persisted)

    def latest(self) -> Snapshot:
        """The snapshot after the chunk's last entry."""
        last = self.snaps[-1] if self.snaps is not None else self.last
        assert last is not None
        return last

    def one(self, j: int) -> _Chunk:
        """The chunk of entry ``j`` alone, to be judged (not made the fold's latest: no ``last``)."""
        out = _Chunk(self.snaps is not None)
        if self.snaps is not None and out.snaps is not None:
            out.snaps.append(self.snaps[j])
        else:
            out.persisted.append(self.persisted[j])
            out.sent.append(self.sent[j])
            out.same.append(self.same[j])
        return out


class _SegmentPass:
    """The pass over one segment, resumable: :meth:`run` folds positions ``lo .. hi - 1`` and
    keeps everything the next call needs (engine snapshot, rebinding cache, explanation state)."""

    def __init__(self, idx: LogIndex, seg: Segment, m: Machine, *, checkpoint_every: int | None,
                 batch: int, explain: bool, store: SnapshotStore | None) -> None:
        self.idx, self.seg, self.m = idx, seg, m
        self.k = checkpoint_every
        self.batch = batch
        self.explain = explain
        self.store = store
        self.k_base = seg.start  # checkpoints sit at k_base + j * k
        self.snap: Snapshot | None = None
        self.cache: dict[str, str] = {}
        self.prev: Mapping[str, Any] | None = None
        self.prev_h = ""
        self.known_starts: dict[str, int] = {}
        self.appeared: dict[str, int] = {}  # timer id -> recordedAt (ms) of the entry it appeared after
        self.failed = False
        self.last = seg.start - 1

    def run(self, entries: Sequence[Mapping[str, Any]], lo: int, hi: int,
            recorded: Sequence[str | None]) -> None:
        """Fold and judge positions ``lo .. hi - 1``; ``recorded`` is their recorded hashes
        (``recorded_hashes(entries, lo, hi)``, read once by :meth:`Pass.feed`)."""
        if self.failed or lo >= hi:
            return
        idx, m = self.idx, self.m
        k = self.k
        # the snapshots themselves are kept only when something needs them past their hash: the
        # checkpoints (a child's session) and the store (a copy of each persisted form, ``persist``).
        # Otherwise a chunk holds just the persisted forms and the engine-sent hashes, so the
        # engine's own per-step objects are freed at once (fewer live objects: less GC work)
        keep = self.store is not None or bool(k)
        pending = _Chunk(keep)
        nxt = lo  # the position of pending's first entry: the fold yields lo, lo + 1, ... in order
        snap: Snapshot | None = None  # the fold's latest
        try:
            spans = _recurring_session_keys(entries, self.seg.start, hi) if k else {}
            # when rebinding keys span checkpoints, every batch ends exactly on a checkpoint so the
            # cache and the engine's snapshot agree there (an engine may move cache entries when it
            # re-seeds); otherwise large batches (fewer engine round trips)
            fold_batch = k if (k and spans) else max(self.batch, k or 0)
            # a pass that keeps no snapshots lets the engine send only those it must judge
            # (sparse: a matching snapshot without timers comes as its hash)
            it = fold_segment(m, entries, lo, hi, batch=fold_batch, sessions=self.cache,
                              seed=self.snap if lo > self.seg.start else None,
                              exact_batches=bool(k and spans),
                              expected=None if keep else recorded)
            # the snapshots are taken in chunks (hashed and judged together); one at a time while
            # a checkpoint must see the rebinding cache as it was right after its entry
            size = 1 if spans else _FIRST_CHUNK
            while True:
                if pending.snaps is not None:
                    held: list[Any] = pending.snaps
                    add = held.append
                    for _i, snap in it:
                        add(snap)
                        if len(held) >= size:
                            break
                else:
                    held = pending.persisted
                    add, add_sent, add_same = held.append, pending.sent.append, pending.same.append
                    for _i, snap in it:
                        add(snap.persisted)
                        add_sent(snap.state_hash)  # the engine's own (JS) hash when it sent one
                        add_same(snap.unchanged)
                        if len(held) >= size:
                            break
                if not held:
                    break
                pending.last = snap
                taken, pending = pending, _Chunk(keep)  # a failure inside _take is not taken again
                nxt = self._take_at(entries, nxt, taken, spans)
                if not spans:  # as many as fit the byte budget at the latest size
                    size = batch_for(_CHUNK, taken.latest(), budget=_CHUNK_BYTES)
        except Exception as exc:  # an engine failure: report it and stop this segment
            if len(pending):  # the fold failed: the entries folded before it are judged as usual
                pending.last = snap
                with contextlib.suppress(Exception):  # the first failure is the one reported
                    self._take_at(entries, nxt, pending, spans)
            if isinstance(exc, SnapshotRestoreError) and self.seg.start == 0:
                # the log's own init snapshot names what the machine lacks: bad input, raised
                # (the CLI exits 2). A later segment's (a version bridge) is a replay result
                # under this machine, reported at the bridge (what-if: cannot-restore).
                raise
            self.failed = True
            at_i = self.last + 1 if self.last + 1 < self.seg.stop else self.last
            detail, err = engine_failure(idx, entries, self.seg, m, at_i, exc)
            idx.add_problem(at_i, ProblemKind.ENGINE_ERROR, detail, err)
        idx.replayed_upto[self.seg.number] = self.last + 1

    def _take_at(self, entries: Sequence[Mapping[str, Any]], first: int, chunk: _Chunk,
                 spans: Mapping[str, tuple[int, int]]) -> int:
        """Make ``chunk`` (the snapshots after entries ``first ..``) the fold's latest, judge it,
        and return the position after it."""
        after = first + len(chunk)
        self.last, self.snap = after - 1, chunk.latest()
        self._take(entries, first, chunk, spans)
        return after

    def _take(self, entries: Sequence[Mapping[str, Any]], first: int, chunk: _Chunk,
              spans: Mapping[str, tuple[int, int]]) -> None:
        """Judge the snapshots after entries ``first .. first + len(chunk) - 1``. What can fail
        (persisting, hashing) runs before anything is recorded; when it fails, the entries are
        taken one at a time so those before the failing one are recorded, and ``last`` is the
        one before it (the failing entry is where the engine error is reported)."""
        try:
            ps, eq, hashes = self._prepare(chunk)
        except Exception as exc:
            self.last = first - 1
            if len(chunk) == 1:
                raise
            for j in range(len(chunk)):
                self._take(entries, first + j, chunk.one(j), spans)
                self.last = first + j
            raise AssertionError(
                f"a chunk failed to hash, but each of its snapshots hashed ({type(exc).__name__}: {exc})"
            ) from exc
        self._record(entries, first, ps, eq, hashes, chunk.snaps, spans)

    def _prepare(
        self, chunk: _Chunk
    ) -> tuple[list[Mapping[str, Any]], list[bool], np.ndarray[Any, np.dtype[np.uint32]]]:
        """Persisted snapshots, "equal to the one before" flags, and the hash of every snapshot
        that differs from the one before it (engine-sent hashes as they are; the rest in one
        :func:`~agentscope.hashing.state_hashes` call). Records nothing."""
        if chunk.snaps is not None:
            m = self.m
            ps: list[Mapping[str, Any]] = [m.persist(sn) for sn in chunk.snaps]
            sent = [sn.state_hash for sn in chunk.snaps]
            same: list[bool | None] = [sn.unchanged for sn in chunk.snaps]
        else:
            # nothing keeps them past the chunk and nothing changes them: the snapshots' own
            # persisted form, which is what ``persist`` copies (spec §7.4's shape)
            ps, sent, same = chunk.persisted, chunk.sent, chunk.same
        n = len(ps)
        prev = self.prev
        # each persisted snapshot against the one before it (the first against the last taken);
        # where the engine said (a sparse fold, whose unsent snapshots are placeholders), its word
        if same.count(None) == n:
            eq: list[bool] = list(map(operator.eq, ps, [prev, *ps[:-1]]))
        else:
            before = [prev, *ps[:-1]]
            eq = [ps[j] == before[j] if s is None else s for j, s in enumerate(same)]
        if prev is None:
            eq[0] = False
        hashes = np.zeros(n, np.uint32)
        differ = compress(range(n), map(operator.not_, eq))
        if sent.count(None) == n:  # the engine sent no hash: hash every snapshot that differs
            todo = list(differ)
        else:
            todo = []
            for j in differ:
                h = sent[j]
                if h is None:
                    todo.append(j)
                else:
                    hashes[j] = int(h, 16)
        if todo:
            hashes[todo] = state_hashes(ps if len(todo) == len(ps) else [ps[j] for j in todo])
        return ps, eq, hashes

    def _record(self, entries: Sequence[Mapping[str, Any]], first: int, ps: list[Mapping[str, Any]],
                eq: list[bool], hashes: np.ndarray[Any, np.dtype[np.uint32]], snaps: list[Snapshot] | None,
                spans: Mapping[str, tuple[int, int]]) -> None:
        idx, m = self.idx, self.m
        n = len(ps)
        end = first + n
        store = self.store
        prev_h = self.prev_h
        same_at = eq
        if store is not None or self.k:
            same_at = []
            prev = self.prev
            for j, p in enumerate(ps):
                i = first + j
                k = self.k
                if store is not None and not store.full:
                    ops = delta(prev, p) if prev is not None else None
                    same = ops is not None and not ops
                    if not store.add(p, ops) and k is None:
                        # over the byte budget: the rest of the segment keeps sparse checkpoints
                        self.k = k = _OVERFLOW_EVERY
                        self.k_base = i
                else:
                    same = eq[j]
                same_at.append(same)
                if k and (i - self.k_base) % k == 0 and not (store is not None and store.covers(i)):
                    idx.checkpoints[i] = p
                    assert snaps is not None  # kept whenever there are checkpoints
                    snap = snaps[j]
                    kept = [
                        (key, self.cache[key],
                         self.cache[key] == m.child_session(snap, key.split("\u0000")[0]))
                        for key, (first_at, last_at) in spans.items()
                        if first_at <= i < last_at and key in self.cache
                    ]
                    if kept:
                        idx.checkpoint_sessions[i] = kept
                prev = p
        # an entry equal to the one before has its hash (a run of them: the last differing one's)
        same_arr = np.fromiter(same_at, dtype=np.bool_, count=n)
        if same_arr.any():
            pos = np.where(same_arr, -1, np.arange(n))
            np.maximum.accumulate(pos, out=pos)
            h0 = np.uint32(int(prev_h, 16)) if prev_h else np.uint32(0)
            hashes = np.where(pos < 0, h0, hashes[np.maximum(pos, 0)]).astype(np.uint32)
        idx.computed[first:end] = hashes
        idx.has_computed[first:end] = True
        if snaps is not None:
            idx.taken[first:end] = [sn.transitions for sn in snaps]
            for j, sn in enumerate(snaps):
                v = sn.microstep_values
                if v is not None and len(v) > 1:
                    idx.chains[first + j] = v
        idx.ignored[first:end] |= same_arr
        rec_ok = idx.has_recorded[first:end]
        match = rec_ok & (idx.recorded[first:end] == hashes)
        idx.verdict[first:end][match] = _VERIFIED
        wrong = set((np.flatnonzero(rec_ok & ~match)).tolist())
        if idx.odd_recorded:  # a recorded text that is not 8 lowercase hex digits never matches
            wrong.update(j for j in range(n) if first + j in idx.odd_recorded)
        known, appeared = self.known_starts, self.appeared
        # one entry at a time only where something is pending or wrong (no timer, no mismatch: none)
        visit = bool(wrong or known or appeared) or any(map(_TIMERS_OF, ps))
        for j, p in enumerate(ps if visit else ()):
            timers = p.get("timers")
            if not timers and not known and not appeared and (not wrong or j not in wrong):
                continue
            timers = timers if type(timers) is dict or isinstance(timers, Mapping) else {}
            i = first + j
            e = entries[i]
            h = f"{int(hashes[j]):08x}"
            rec = idx.recorded_hash(i)
            # recordedAt matters only for pending timers and for explaining a mismatch
            at = recorded_at_ms(e) if timers or (rec is not None and rec != h) else None
            if known:
                for tid in list(known):
                    if tid not in timers:
                        del known[tid]
            if appeared:
                for tid in list(appeared):
                    if tid not in timers:
                        del appeared[tid]
            for tid in timers:
                if tid not in appeared and at is not None:
                    appeared[tid] = at
            if j in wrong and rec is not None:
                self._mismatch(entries, i, p, rec, h, at)
        self.prev = ps[-1]
        self.prev_h = f"{int(hashes[-1]):08x}"

    def _mismatch(self, entries: Sequence[Mapping[str, Any]], i: int, p: Mapping[str, Any],
                  rec: str, h: str, at: int | None) -> None:
        """Entry ``i``'s recorded hash ``rec`` is not the recomputed ``h``: explain it or report it."""
        idx = self.idx
        e = entries[i]
        err: AgentscopeError = ReplayDivergenceError(entry_id(e), i, "state", rec, h)
        if self.explain:
            before = entries[i - 1] if i > self.seg.start else None
            ex = explain_mismatch(
                p, rec, recorded_at=at,
                previous_recorded_at=recorded_at_ms(before) if before is not None else None,
                known_timer_starts=self.known_starts,
                timer_appeared_at=min(self.appeared.values()) if self.appeared else None,
            )
            idx.explanations[i] = ex.text
            if ex.confirmed:
                self.known_starts.update(ex.timer_starts)
                idx.verdict[i] = _EXPLAINED
                idx.add_problem(i, ProblemKind.EXPLAINED_MISMATCH,
                                f"expected {rec!r}, got {h!r} ({ex.cause})", None,
                                expected=rec, actual=h)
                return
        idx.verdict[i] = _MISMATCH
        idx.add_problem(i, ProblemKind.STATE_MISMATCH, f"expected {rec!r}, got {h!r}", err)


_HEX_RUN = re.compile(r"[0-9a-f]*")


def _read_recorded(idx: LogIndex, lo: int, hashes: list[str | None]) -> None:
    """Store ``hashes``, the recorded hashes of the entries from ``lo`` on: 8 lowercase hex
    digits as ``uint32`` (parsed together), any other text as is in ``odd_recorded``."""
    hi = lo + len(hashes)
    if set(map(type, hashes)) == {str} and set(map(len, cast(list[str], hashes))) == {8}:
        # every entry has one of 8 characters
        at: list[int] = list(range(lo, hi))
        texts = cast(list[str], hashes)
    else:
        at, texts = [], []
        for i, h in enumerate(hashes, lo):
            if h is None:
                continue
            if len(h) == 8:
                at.append(i)
                texts.append(h)
            else:
                idx.odd_recorded[i] = h
    if not at:
        return
    joined = "".join(texts)
    if _HEX_RUN.fullmatch(joined) is None:  # some are not lowercase hex: sort them one by one
        keep_at: list[int] = []
        keep: list[str] = []
        for i, h in zip(at, texts, strict=True):
            if _HEX8.fullmatch(h):
                keep_at.append(i)
                keep.append(h)
            else:
                idx.odd_recorded[i] = h
        at, joined = keep_at, "".join(keep)
        if not at:
            return
    values = np.frombuffer(bytes.fromhex(joined), dtype=">u4")
    if len(at) == hi - lo:  # every entry has one: the positions are lo .. hi - 1
        idx.recorded[lo:hi] = values
        idx.has_recorded[lo:hi] = True
    else:
        idx.recorded[at] = values
        idx.has_recorded[at] = True


ID_KEY = 8
"""Bytes of an entry id's key (:func:`id_key`)."""
_RESUME_ARRAYS = ("computed", "has_computed", "recorded", "has_recorded", "verdict", "ignored")


def id_key(eid: str) -> bytes:
    """An entry id's key in a :class:`Resume`: BLAKE2b-64 of its UTF-8 text. Two ids with one key
    only make a resumed pass fold again (:class:`CannotResume`), never miss a duplicate."""
    return hashlib.blake2b(eid.encode("utf-8", "surrogatepass"), digest_size=ID_KEY).digest()


class CannotResume(Exception):
    """A saved pass state cannot be continued exactly: fold the log whole."""


@dataclass(frozen=True)
class Resume:
    """A :class:`Pass` over one plain segment of ``n`` entries, saved to be continued later
    (:meth:`Pass.resume_state`, :meth:`Pass.resumed`): the segment's identity, the last persisted
    snapshot (spec §7.4) and its hash text, the explanations' timer state (``known_starts``,
    ``appeared``: timer id to milliseconds), the numbering (``offset``, ``base``, §1.3), the
    per-entry arrays (``computed`` u32, ``has_computed``, ``recorded`` u32, ``has_recorded``,
    ``verdict`` u8, ``ignored``; native byte order, concatenated) and the sorted id keys
    (:func:`id_key`, :data:`ID_KEY` bytes each). :meth:`to_bytes` / :meth:`from_bytes` give its
    stored form (JSON and the raw bytes, never code)."""

    n: int
    machine_id: str | None
    machine_version: str | None
    persisted: Mapping[str, Any]
    prev_h: str
    known_starts: dict[str, int]
    appeared: dict[str, int]
    offset: int
    base: int
    arrays: bytes
    ids: bytes
    init: Mapping[str, Any]
    """Entry 0, the segment's ``@agent.init`` (a cached snapshot's lineage, §4.2)."""
    last: Mapping[str, Any]
    """Entry ``n - 1`` (a mismatch explanation reads the entry before it)."""

    def stand_in(self) -> list[Mapping[str, Any]]:
        """``n`` entries standing for those fed, for :meth:`Pass.feed`'s ``entries[:n]``: entry
        ``0`` and ``n - 1`` are the real ones, the others repeat ``n - 1`` (a resumed pass never
        reads them)."""
        return [self.init, *([self.last] * (self.n - 1))] if self.n > 1 else [self.init]

    def to_bytes(self) -> bytes:
        """The stored form: a 4-byte big-endian header length, the JSON header, the arrays, the
        id keys; zlib-compressed."""
        head = json.dumps({
            "n": self.n, "machine_id": self.machine_id, "machine_version": self.machine_version,
            "persisted": self.persisted, "prev_h": self.prev_h, "known_starts": self.known_starts,
            "appeared": self.appeared, "offset": self.offset, "base": self.base,
            "arrays": len(self.arrays), "init": self.init, "last": self.last,
        }, separators=(",", ":")).encode()
        return zlib.compress(len(head).to_bytes(4, "big") + head + self.arrays + self.ids, 1)

    @classmethod
    def from_bytes(cls, data: bytes) -> Resume:
        """Decode :meth:`to_bytes`' form. Raises ``ValueError`` for anything else."""
        try:
            raw = zlib.decompress(data)
            size = int.from_bytes(raw[:4], "big")
            head = json.loads(raw[4:4 + size])
        except (zlib.error, ValueError, TypeError) as exc:
            raise ValueError(f"not a saved pass state ({exc})") from None
        rest = raw[4 + size:]
        try:
            n, cut = head["n"], head["arrays"]
            ok = (type(n) is int and n > 0 and cut == n * _RESUME_BYTES
                  and len(rest) >= cut and (len(rest) - cut) % ID_KEY == 0
                  and all(type(head[k]) is int for k in ("offset", "base"))
                  and all(isinstance(head[k], dict) for k in ("persisted", "init", "last"))
                  and isinstance(head["prev_h"], str)
                  and all(isinstance(head[k], dict) and all(
                      type(v) is int for v in head[k].values()) for k in ("known_starts", "appeared"))
                  and all(head[k] is None or isinstance(head[k], str)
                          for k in ("machine_id", "machine_version")))
        except (KeyError, TypeError):
            ok = False
        if not ok:
            raise ValueError("not a saved pass state (its header does not fit)")
        return cls(n=n, machine_id=head["machine_id"], machine_version=head["machine_version"],
                   persisted=head["persisted"], prev_h=head["prev_h"],
                   known_starts=head["known_starts"], appeared=head["appeared"],
                   offset=head["offset"], base=head["base"], arrays=rest[:cut], ids=rest[cut:],
                   init=head["init"], last=head["last"])


_RESUME_BYTES = 4 + 1 + 4 + 1 + 1 + 1
"""Bytes per entry of :attr:`Resume.arrays`."""


def _copy_segment_pass(sp: _SegmentPass, idx: LogIndex) -> _SegmentPass:
    out = copy.copy(sp)
    out.idx = idx
    out.cache = dict(sp.cache)
    out.known_starts = dict(sp.known_starts)
    out.appeared = dict(sp.appeared)
    out.store = idx.stores.get(sp.seg.number)
    return out


class Pass:
    """The one pass over a log, resumable: :meth:`feed` processes new positions only.

    Folds every segment once (:func:`~agentscope.pipeline.fold.fold_segment`), recording per entry
    the recomputed hash, verdict, ``ignored`` flag and problems into :attr:`index`, and, with
    ``store_budget``, every persisted snapshot in a byte-budgeted
    :class:`~agentscope.pipeline.snapshots.SnapshotStore` per segment (so views never fold again).
    Never raises for problems in the log: they are recorded. Work is O(new entries) per call.
    """

    def __init__(
        self,
        *,
        machine: Machine | None,
        machines: Mapping[str, Machine] | None = None,
        machine_version: str | None = None,
        strict: bool = False,
        checkpoint_every: int | None = None,
        batch: int = DEFAULT_BATCH,
        explain: bool = True,
        source: str | None = None,
        store_budget: int | None = None,
        validated: bool = False,
        findings: Mapping[int, Sequence[LogFormatError]] | None = None,
    ) -> None:
        check_machines(machines)
        self.validated = validated  # a validating reader checked §1.2/§1.3: not checked again
        self.findings: dict[int, list[LogFormatError]] | None = (
            None if findings is None else {k: list(v) for k, v in findings.items()})
        """What that reader found (:func:`~agentscope.log.validate.read_findings`), by position.
        ``None`` (not given): the pass checks the structure rules itself (the envelope too unless
        ``validated``)."""
        self.machine, self.machines = machine, machines
        self.machine_version = machine_version
        self.checkpoint_every = checkpoint_every
        self.batch, self.explain = batch, explain
        self.store_budget = store_budget
        self.index = LogIndex.empty(strict=strict, source=source)
        self._seg_pass: _SegmentPass | None = None
        self._check: SegmentChecker | None = None
        self._prior_ids: frozenset[bytes] = frozenset()
        """Of a pass resumed from a :class:`Resume`: the id keys (:func:`id_key`) of the entries
        before the resume point, which it does not hold."""

    def copy(self) -> Pass:
        """An independent continuation of this pass (e.g. two forks of one shared prefix): the
        engine snapshot is shared (folds are pure), everything mutable is copied."""
        out = copy.copy(self)
        out.index = self.index.copy()
        if self._seg_pass is not None:
            out._seg_pass = _copy_segment_pass(self._seg_pass, out.index)
        if self._check is not None:
            out._check = copy.copy(self._check)
            out._check.seen = dict(self._check.seen)
            out._check.invalid = set(self._check.invalid)
        return out

    def truncated(self, entries: Sequence[Mapping[str, Any]], n: int,
                  persisted: Mapping[str, Any] | None) -> Pass | None:
        """An independent pass in the state this one had after feeding ``entries[:n]`` only, or
        ``None`` when that state cannot be rebuilt exactly without folding again.

        ``entries`` are the entries fed (their first ``n`` unchanged); ``persisted`` the persisted
        snapshot after entry ``n - 1`` (needed when the last segment was replayed past it; a
        store holds it). Feeding the result more entries gives what a fresh pass over
        ``entries[:n]`` plus those entries gives, except for rebinding keys (spec §4.1) journaled
        before ``n`` and again after it: the resumed fold starts with an empty rebinding cache
        (the caller checks that no such key recurs). The engine snapshot after ``n - 1`` is
        ``machine.restore(persisted)``, checked against the indexed hash (as a checkpoint seek).

        ``None`` when ``n`` is not inside the last segment, the pass is strict, or a timer is
        pending after ``n - 1`` (the mismatch explanations' timer state is not kept per entry).
        """
        idx = self.index
        if idx.strict or not idx.segments or not idx.segments[-1].start < n <= idx.n:
            return None
        if n == idx.n:
            return self.copy()
        out = copy.copy(self)
        out.index = idx.truncated(n)
        if self._check is not None:
            out._check = self._check.truncated(entries, n)
        kept = out.index.checkpoint_sessions
        if kept:  # keys kept at a checkpoint because they recur after it, counted up to n only
            spans = _recurring_session_keys(entries, idx.segments[-1].start, n)
            out.index.checkpoint_sessions = {
                i: ks for i, ks in (
                    (i, [t for t in v if t[0] in spans and spans[t[0]][0] <= i < spans[t[0]][1]])
                    for i, v in kept.items()
                ) if ks
            }
        sp = self._seg_pass
        if sp is None:
            return out
        if out.index.replayed_upto[-1] < n:
            # the fold ended before n (an engine failure or an entry it cannot pass): its state
            # then is already that of a pass over entries[:n]
            out._seg_pass = _copy_segment_pass(sp, out.index)
            return out
        if persisted is None:
            return None
        timers = persisted.get("timers")
        if isinstance(timers, Mapping) and timers:
            return None
        snap = sp.m.restore(persisted)
        h = idx.computed_hash(n - 1)
        if h is None or snapshot_hash(snap) != h:
            return None
        new = _copy_segment_pass(sp, out.index)
        new.snap, new.cache, new.prev, new.prev_h = snap, {}, persisted, h
        new.last, new.failed = n - 1, False
        new.known_starts, new.appeared = {}, {}
        if not (sp.k != self.checkpoint_every and sp.k_base < n):  # no store overflow before n
            new.k, new.k_base = self.checkpoint_every, sp.seg.start
        new.seg = out.index.segments[-1]
        out._seg_pass = new
        return out

    def _check_prior_ids(self, entries: Sequence[Mapping[str, Any]], lo: int, hi: int) -> None:
        prior = self._prior_ids
        for i in range(lo, hi):
            e = entries[i]
            eid = e.get("id") if isinstance(e, Mapping) else None
            if isinstance(eid, str) and id_key(eid) in prior:
                raise CannotResume(f"entry {i}'s id may repeat one before the resume point")

    def resume_state(self, entries: Sequence[Mapping[str, Any]]) -> Resume | None:
        """What :meth:`resumed` needs to continue this pass without ``entries`` (those fed so far), or
        ``None`` when it cannot be continued so exactly: anything but one plain segment from
        position 0 (a version bridge), any problem recorded (a resumed pass's report is only its
        verdict counts), a fold that stopped early, a snapshot store or checkpoints, a rebinding
        cache or a pending timer (the restored engine snapshot would not reproduce them), or an
        entry id that is not a string."""
        idx, sp, chk = self.index, self._seg_pass, self._check
        n = idx.n
        if (n == 0 or len(idx.segments) != 1 or sp is None or chk is None or self._read_checked
                or idx.problems or idx.failures or idx.log_problems or idx.log_failures
                or idx.odd_recorded or sp.failed or sp.store is not None or sp.k or sp.cache
                or sp.prev is None or chk.stopped_at is not None or chk.invalid
                or chk.offset is None or idx.replayed_upto != [n] or not idx.has_computed[n - 1]):
            return None
        seg = idx.segments[0]
        timers = sp.prev.get("timers")
        if (seg.start != 0 or seg.bridge or seg.migrated_from is not None or timers
                or len(entries) != n or type(entries[0]) is not dict or type(entries[n - 1]) is not dict):
            return None
        if not all(isinstance(k, str) for k in chk.seen):
            return None
        ids = sorted(self._prior_ids.union(map(id_key, chk.seen)))
        arrays = b"".join(np.ascontiguousarray(getattr(idx, name)[:n]).tobytes()
                          for name in _RESUME_ARRAYS)
        return Resume(
            n=n, machine_id=seg.machine_id, machine_version=seg.machine_version,
            persisted=sp.prev, prev_h=sp.prev_h, known_starts=dict(sp.known_starts),
            appeared=dict(sp.appeared), offset=chk.offset, base=chk.base,
            arrays=arrays, ids=b"".join(ids), init=entries[0], last=entries[n - 1],
        )

    @classmethod
    def resumed(cls, state: Resume, *, machine: Machine, machines: Mapping[str, Machine] | None = None,
                strict: bool = False, source: str | None = None, validated: bool = False) -> Pass:
        """A pass in the state :meth:`resume_state` saved (``state.n`` entries fed), with the
        per-entry arrays of those entries and none of them: :meth:`feed` takes the log from
        ``state.n`` on (a sequence whose earlier positions are never read but ``0``, the init
        entry, and ``n - 1``, the last one). The restored engine snapshot is checked against the
        saved hash of entry ``n - 1``; a new entry whose id's key is one of the saved ids makes
        :meth:`feed` raise :class:`CannotResume` (the caller then folds the log whole, which
        names the duplicate exactly).

        Raises
        ------
        CannotResume
            The machine does not take the segment, or its restored snapshot does not hash to
            the saved hash.
        """
        out = cls(machine=machine, machines=machines, strict=strict, source=source,
                  validated=validated)
        n = state.n
        idx = out.index
        idx.grow(n)
        at = 0
        for name in _RESUME_ARRAYS:
            arr = getattr(idx, name)
            size = n * arr.dtype.itemsize
            arr[:] = np.frombuffer(state.arrays[at:at + size], dtype=arr.dtype)
            at += size
        seg = Segment(start=0, stop=n, machine_id=state.machine_id,
                      machine_version=state.machine_version, bridge=False, migrated_from=None,
                      number=0)
        m, seg_version = machine_for_segment(seg, machine, machines)
        if m is None:
            raise CannotResume("no machine for the saved segment")
        try:
            snap = m.restore(state.persisted)
            same = snapshot_hash(snap) == idx.computed_hash(n - 1)
        except Exception as exc:
            raise CannotResume(f"the saved snapshot does not restore ({exc})") from None
        if not same:
            raise CannotResume("the restored snapshot does not hash to the saved hash")
        idx.segments, idx.machines, idx.replayed_upto = [seg], [m], [n]
        out._version = seg_version or out.machine_version or m.version
        chk = SegmentChecker(0, source=source, envelope=not validated)
        chk.offset, chk.base = state.offset, state.base
        out._check = chk
        sp = _SegmentPass(idx, seg, m, checkpoint_every=None, batch=out.batch, explain=out.explain,
                          store=None)
        sp.snap, sp.prev, sp.prev_h, sp.last = snap, state.persisted, state.prev_h, n - 1
        sp.known_starts, sp.appeared = dict(state.known_starts), dict(state.appeared)
        out._seg_pass = sp
        out._prior_ids = frozenset(state.ids[j:j + ID_KEY] for j in range(0, len(state.ids), ID_KEY))
        return out

    def feed(self, entries: Sequence[Mapping[str, Any]], lo: int | None = None, *,
             types: Sequence[str] | None = None) -> range:
        """Process ``entries[lo:]`` (``lo`` defaults to what was processed so far); return the
        new positions. ``entries`` is the whole log so far (earlier positions are not re-read);
        ``types``, when the caller has read them, is ``event_types(entries, lo)``."""
        idx = self.index
        lo = idx.n if lo is None else lo
        hi = len(entries)
        if hi <= lo:
            return range(lo, lo)
        if self._prior_ids:
            self._check_prior_ids(entries, lo, hi)
        idx.grow(hi)
        recorded = recorded_hashes(entries, lo, hi)
        _read_recorded(idx, lo, recorded)
        first = lo
        if idx.segments and not (entries[lo] is not None and event_type(entries[lo]) == AGENT_INIT):
            # the new entries continue the last segment
            last = idx.segments[-1]
            cont = segments_of(entries, lo)
            head = cont[0]
            idx.segments[-1] = dataclasses.replace(last, stop=head.stop)
            self._run_segment(entries, idx.segments[-1], lo, head.stop, recorded[: head.stop - lo],
                              fresh=False)
            first = head.stop
        if types is not None and first > lo:
            types = types[first - lo :]
        for seg in segments_of(entries, first, types=types) if first < hi else []:
            seg = dataclasses.replace(seg, number=len(idx.segments))
            if idx.segments:
                _check_bridge_link(idx, entries, idx.segments[-1], seg)
            idx.segments.append(seg)
            self._run_segment(entries, seg, seg.start, seg.stop,
                              recorded[seg.start - lo : seg.stop - lo], fresh=True)
        no_hash = ~idx.has_recorded[lo:hi]
        for i in idx.odd_recorded:
            if lo <= i < hi:
                no_hash[i - lo] = False
        idx.verdict[lo:hi][no_hash] = _CODE[Verdict.MISSING]
        if idx.strict:
            for j in np.flatnonzero(no_hash).tolist():
                i = lo + j
                idx.add_problem(
                    i, ProblemKind.MISSING_VERIFICATION, "no recorded verification hash",
                    ReplayDivergenceError(entry_id(entries[i]), i, ProblemKind.MISSING_VERIFICATION),
                )
        return range(lo, hi)

    def _run_segment(self, entries: Sequence[Mapping[str, Any]], seg: Segment, lo: int, hi: int,
                     recorded: list[str | None], *, fresh: bool) -> None:
        """Check and fold positions ``lo .. hi - 1`` of ``seg``; ``recorded`` is their recorded hashes."""
        idx = self.index
        if fresh:
            m, seg_version = machine_for_segment(seg, self.machine, self.machines)
            idx.machines.append(m)
            idx.replayed_upto.append(seg.start)
            self._check = (None if self._read_checked else
                           SegmentChecker(seg.start, source=idx.source, envelope=not self.validated))
            self._seg_pass = None
            if m is not None:
                self._version = seg_version or self.machine_version or m.version
            else:
                have = ", ".join(sorted(self.machines)) if self.machines else "none"
                detail = (
                    f"segment {seg.number} (entries {seg.start}..{seg.stop - 1}, machineVersion "
                    f"{seg.machine_version!r}) has no machine: pass "
                    f"machines={{{seg.machine_version!r}: ...}} "
                    f"(given: {have})"
                )
                if self.machines is not None:  # no machine at all given: entries only, no problem
                    idx.log_problems.append((ProblemKind.NO_MACHINE, detail, True))
                    idx.log_failures.append(EngineError(detail))
        m = idx.machines[seg.number]
        if self._read_checked:  # checked when read: take what the reader found
            found, fold_stop, stopped = self._read_found(entries, seg, lo, hi)
        else:
            if self._check is None:  # entries before ``lo`` were validated when read
                self._check = SegmentChecker.resumed(entries, seg.start, lo, source=idx.source)
            self._check.envelope = not self.validated
            found, fold_stop = self._check.check(entries, lo, hi)
            stopped = self._check.stopped_at
        for kind, err in found:
            at = err.index if isinstance(err.index, int) else seg.start
            idx.add_problem(at, kind, str(err) if kind == ProblemKind.INVALID_ENTRY else err.detail, err)
        if m is None:
            return
        mid, version = m.machine_id, self._version
        for i in range(lo, hi):
            e = entries[i]
            if type(e) is dict and e.get("machineId") == mid and e.get("machineVersion") == version:
                continue  # targets this machine (what identity_problem concludes first)
            if not isinstance(e, Mapping):
                continue
            bad = identity_problem(e, i - seg.start, mid, version)
            if bad is not None:
                bad.index = i
                bad.source = idx.source
                idx.add_problem(i, ProblemKind.MACHINE_MISMATCH, str(bad), bad)
        if stopped is not None and stopped <= lo:
            return
        if self._seg_pass is None:
            store = (SnapshotStore(seg.start, budget=self.store_budget)
                     if self.store_budget is not None else None)
            if store is not None:
                idx.stores[seg.number] = store
            self._seg_pass = _SegmentPass(idx, seg, m, checkpoint_every=self.checkpoint_every,
                                          batch=self.batch, explain=self.explain, store=store)
        self._seg_pass.seg = seg
        self._seg_pass.run(entries, lo, fold_stop, recorded[: fold_stop - lo])


    @property
    def _read_checked(self) -> bool:
        """Whether the entries being fed were checked by a validating reader whose findings the
        pass holds (then no rule is checked again)."""
        return self.validated and self.findings is not None

    def _read_found(self, entries: Sequence[Mapping[str, Any]], seg: Segment, lo: int, hi: int
                    ) -> tuple[list[tuple[ProblemKind, LogFormatError]], int, int | None]:
        """For entries a validating reader checked: ``(problems, fold_stop, stopped_at)`` as
        :meth:`SegmentChecker.check` gives them, from :attr:`findings` (no rule checked again)
        and the fold's own precondition, a segment that starts with ``@agent.init``."""
        findings = self.findings or {}
        found = [(problem_kind(err), err) for i in sorted(k for k in findings if lo <= k < hi)
                 for err in findings[i]]
        no_init = no_init_problem(entries[seg.start], seg.start, source=self.index.source)
        if no_init is None:
            return found, hi, None
        read = findings.get(seg.start, ())
        if lo == seg.start and not any(problem_kind(e) == ProblemKind.NO_INIT for e in read):
            found.insert(0, (ProblemKind.NO_INIT, no_init))
        return found, min(hi, seg.start), seg.start


def build_index(
    entries: Sequence[Mapping[str, Any]],
    *,
    machine: Machine | None,
    machines: Mapping[str, Machine] | None = None,
    machine_version: str | None = None,
    strict: bool = False,
    checkpoint_every: int | None = None,
    batch: int = DEFAULT_BATCH,
    explain: bool = True,
    cached_snapshot: Mapping[str, Any] | None = None,
    source: str | None = None,
    store_budget: int | None = None,
    validated: bool = False,
    findings: Mapping[int, Sequence[LogFormatError]] | None = None,
    types: Sequence[str] | None = None,
) -> LogIndex:
    """Run the one :class:`Pass` over a whole log and return its :class:`LogIndex`.

    ``cached_snapshot`` (an ``agentMeta``-stamped persisted snapshot, §4.2) is checked against
    the log at the end. ``types``, when the caller has read them, is ``event_types(entries)``.
    """
    p = Pass(machine=machine, machines=machines, machine_version=machine_version, strict=strict,
             checkpoint_every=checkpoint_every, batch=batch, explain=explain, source=source,
             store_budget=store_budget, validated=validated, findings=findings)
    idx = p.index
    if not entries:
        idx.log_problems.append(
            (ProblemKind.EMPTY_LOG, "Cannot replay an empty event log; it must start with a "
             "'@agent.init' entry.", True)
        )
        idx.log_failures.append(
            LogFormatError(
                "Cannot replay an empty event log; it must start with a '@agent.init' entry.",
                source=source,
            )
        )
        return idx
    p.feed(entries, types=types)
    if cached_snapshot is not None:
        check_cache(idx, entries, cached_snapshot)
    return idx


def _recurring_session_keys(
    entries: Sequence[Mapping[str, Any]], start: int, stop: int
) -> dict[str, tuple[int, int]]:
    """Rebinding keys (spec §4.1: ``actorId + "\\0" + sessionId``) journaled more than once in
    ``entries[start:stop]``, with their first and last positions. Counted through 64-bit hashes
    in a numpy array so a 10^6-entry log needs ~8 MB, not a dict of every key."""
    hashes: list[int] = []
    for i in range(start, stop):
        key = session_key(entries[i])
        if key is not None:
            hashes.append(hash(key))
    if not hashes:
        return {}
    values, counts = np.unique(np.asarray(hashes, dtype=np.int64), return_counts=True)
    repeated = set(values[counts > 1].tolist())
    if not repeated:
        return {}
    spans: dict[str, tuple[int, int]] = {}
    for i in range(start, stop):
        key = session_key(entries[i])
        if key is not None and hash(key) in repeated:
            first = spans[key][0] if key in spans else i
            spans[key] = (first, i)
    return {k: v for k, v in spans.items() if v[0] != v[1]}


def _check_bridge_link(
    idx: LogIndex, entries: Sequence[Mapping[str, Any]], prev: Segment, seg: Segment
) -> None:
    """Spec §1.5: a later segment of a concatenation should be a version bridge that names the
    segment before it (``migratedFrom {machineVersion, logIndex}``, inherited ``executionId``).
    Not fatal: each segment still replays on its own."""
    where = f"segment {seg.number} (entry {seg.start})"
    if not seg.bridge:
        idx.log_problems.append(
            (ProblemKind.BRIDGE_LINK, f"{where} starts a fresh run (its init has no snapshot), not a "
             "version bridge from the previous segment", False)
        )
        return
    mig = seg.migrated_from
    if mig is None:
        idx.log_problems.append(
            (ProblemKind.BRIDGE_LINK, f"{where}: the bridge init has no metadata.migratedFrom", False)
        )
        return
    if mig.get("logIndex") != len(prev) or mig.get("machineVersion") != prev.machine_version:
        idx.log_problems.append(
            (ProblemKind.BRIDGE_LINK,
             f"{where}: migratedFrom {dict(mig)!r} does not name the previous segment "
             f"(machineVersion {prev.machine_version!r}, {len(prev)} entries)", False)
        )

    def exec_id(i: int) -> Any:
        return execution_id(entries[i])

    if exec_id(seg.start) != exec_id(prev.start):
        idx.log_problems.append(
            (ProblemKind.BRIDGE_LINK,
             f"{where}: executionId {exec_id(seg.start)!r} is not inherited from the previous "
             f"segment ({exec_id(prev.start)!r})", False)
        )


def check_cache(
    idx: LogIndex, entries: Sequence[Mapping[str, Any]], cached: Mapping[str, Any]
) -> None:
    """Spec §4.2: does the cached snapshot (with ``agentMeta``) agree with the log?"""
    meta = cached.get("agentMeta")
    seg = idx.segments[-1]
    m = idx.machines[-1] if idx.machines else None
    if not isinstance(meta, Mapping):
        idx.log_problems.append(
            (ProblemKind.CACHE_UNSTAMPED, "the cached snapshot has no agentMeta; the log wins", False)
        )
        return
    k = meta.get("logIndex")
    seg_len = len(seg)
    if not isinstance(k, int) or isinstance(k, bool) or not 1 <= k <= seg_len:
        idx.log_problems.append(
            (ProblemKind.CACHE_BAD_INDEX,
             f"cached snapshot agentMeta.logIndex {k!r} is not within 1..{seg_len}", True)
        )
        idx.log_failures.append(
            LogFormatError(f"cached snapshot agentMeta.logIndex {k!r} is not within "
                           f"1..{seg_len}", source=idx.source, field="agentMeta.logIndex")
        )
        return
    if m is not None and meta.get("machineId") not in (None, m.machine_id):
        idx.log_problems.append(
            (ProblemKind.CACHE_MACHINE,
             f"cached snapshot is for machine {meta.get('machineId')!r}, not {m.machine_id!r}",
             True)
        )
    init_meta = entries[seg.start].get("metadata")
    exec_id = init_meta.get("executionId") if isinstance(init_meta, Mapping) else None
    if "logId" in meta and exec_id is not None and meta.get("logId") != exec_id:
        idx.log_problems.append(
            (ProblemKind.CACHE_LINEAGE,
             f"cached snapshot agentMeta.logId {meta.get('logId')!r} is not this log's "
             f"executionId {exec_id!r}", True)
        )
    pos = seg.start + k - 1
    snap_hash = state_hash(cached)
    log_hash = idx.computed_hash(pos) or idx.recorded_hash(pos)
    if log_hash is None:
        idx.log_problems.append(
            (ProblemKind.CACHE_UNCHECKED, f"entry {pos} was not replayed and has no hash; the cached "
             "snapshot cannot be checked", False)
        )
    elif log_hash != snap_hash:
        diverged = SnapshotDivergedError(log_hash, snap_hash, k)
        idx.log_problems.append((ProblemKind.CACHE_DIVERGED, str(diverged), True))
        idx.log_failures.append(diverged)
    if k < seg_len:
        idx.log_problems.append(
            (ProblemKind.CACHE_STALE,
             f"the cached snapshot is stale: agentMeta.logIndex {k}, the log has {seg_len} "
             "entries (a resume replays the log)", False)
        )

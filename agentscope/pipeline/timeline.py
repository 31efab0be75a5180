"""``Timeline``: random access to every step of a log through checkpoints (spec §4.1).

Private module: the public name is :class:`agentscope.pipeline.Timeline`.
"""

from __future__ import annotations

import copy
import time
from bisect import bisect_right
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any, Literal, overload

import numpy as np
import pandas as pd

from agentscope.engines.base import Machine, Snapshot
from agentscope.frames import Frame, Verdict
from agentscope.hashing import canonical_json, state_hash
from agentscope.jsondiff import ABSENT as _ABSENT
from agentscope.jsondiff import changed_paths, resolve_pointer
from agentscope.log.entry import entries_of, event_type, session_key, source_of
from agentscope.log.problems import ProblemKind
from agentscope.log.validate import is_validated, read_findings, set_aside
from agentscope.pipeline.fold import DEFAULT_BATCH, fold_segment
from agentscope.pipeline.onepass import _CODE, LogIndex, Pass, build_index, check_cache, check_machines
from agentscope.pipeline.report import VerifyReport, report_from_index
from agentscope.pipeline.segments import as_log
from agentscope.pipeline.snapshots import DEFAULT_BUDGET, DEFAULT_CACHE_BYTES, FrameLRU, SnapshotStore
from agentscope.step import Step  # re-exported: the pass as a value

__all__ = ["Step", "Timeline", "choose_checkpoint_every", "fork_timelines"]


def choose_checkpoint_every(
    machine: Machine,
    entries: Sequence[Mapping[str, Any]],
    *,
    start: int = 0,
    stop: int | None = None,
    target_ms: float = 10.0,
    memory_budget: float = 256e6,
    probe: int = 512,
) -> int:
    """Pick a checkpoint interval k for ``machine`` from a short timed probe fold.

    Folds up to ``probe`` entries of the segment starting at ``start`` (one ``fold`` call) to
    measure the engine's rate r (entries/s, round trips included), then takes the largest power
    of two k in [16, 1024] with ``k / (2 r) <= target_ms`` (a seek folds k/2 entries on
    average), doubled while ``len(log) / k`` checkpoints of the probe's final snapshot size
    (x8 for Python object overhead) would exceed ``memory_budget`` bytes. Returns 1024 for a
    log too short to measure.
    """
    stop = len(entries) if stop is None else stop
    end = min(stop, start + 1 + probe)
    if end - start < 32:
        return 1024
    t0 = time.perf_counter()
    last: Snapshot | None = None
    for _, snap in fold_segment(machine, entries, start, end, batch=probe):
        last = snap
    elapsed = max(time.perf_counter() - t0, 1e-9)
    rate = (end - start) / elapsed
    k = 16
    while k < 1024 and (2 * k) / (2 * rate) * 1000 <= target_ms:
        k *= 2
    assert last is not None
    size = 8 * len(canonical_json(machine.persist(last)))
    while k < 1024 and len(entries) / k * size > memory_budget:
        k *= 2
    return k


def _first_stop(entries: Sequence[Mapping[str, Any]]) -> int:
    for i in range(1, len(entries)):
        if event_type(entries[i]) == "@agent.init":
            return i
    return len(entries)


class Timeline:
    """Random access to every step of a log: ``timeline[n] -> Frame``, from one pass.

    Construction runs the one pass (:class:`~agentscope.pipeline.onepass.Pass`): every segment is
    folded once with ``machine.fold`` in large batches; each entry's recomputed hash, verdict and
    ``ignored`` flag are kept in compact arrays. What is kept of the states depends on
    ``checkpoint_every``:

    - **default** (``None``): every persisted snapshot, in a byte-budgeted
      :class:`~agentscope.pipeline.snapshots.SnapshotStore` (keyframes plus deltas, ``memory_budget``
      bytes per segment). A seek decodes the nearest keyframe and the deltas after it: no engine
      call, so a log is folded **exactly once** whoever reads it (``TimeTravel``, ``to_html``,
      ``changes``, ``compare``). Past the budget the rest of the segment keeps sparse checkpoints
      (every 256 entries) and seeks there fold again.
    - an ``int`` k or ``"auto"``: the persisted snapshot every k entries only; a seek restores the
      nearest checkpoint at or before ``n - 1`` (``machine.restore``) and folds forward.

    Why a checkpoint seek equals the unbroken fold (spec §4.1):

    - the fixtures README observed that re-seeding from the persisted snapshot
      (``restore(persist(S))``) changes no hash, and the tests check every position of
      generated and real logs;
    - session rebinding starts from a *fresh* cache, which is exact for every rebinding key
      first journaled after the checkpoint (a miss maps it to the running child's session, as
      in the full fold). Keys journaled both before and after the checkpoint (rare: a repeated
      or stale completion) are stored with the checkpoint: one that pointed at the child running
      there follows it to its session in the restored snapshot; a stale one keeps its
      never-matching value;
    - and every seek is checked: the frame's hash must equal the pass's hash for that entry,
      else the seek re-folds the segment from its start (counted in :attr:`seek_fallbacks`;
      expected 0).

    :meth:`extend` adds entries with work proportional to the new entries only (live follow).
    Recent frames are kept in an LRU of ``cache_size``.

    Parameters
    ----------
    machine : Machine or None
        The engine; ``None`` gives frames with entries only (verdict ``missing``/``unchecked``).
    log : EventLog or Sequence[Mapping]
    checkpoint_every : None, int or "auto"
        ``None`` (default): keep every state in the snapshot store. An int k: a checkpoint every
        k entries (a seek folds at most k). ``"auto"``: k from a short timed probe fold
        (:func:`choose_checkpoint_every`).
    memory_budget : int
        Bytes the snapshot store of one segment may hold (default 256 MiB).
    machines : Mapping[str, Machine], optional
        Machines by ``machineVersion`` for version-bridged logs (spec §1.5).
    cache_size : int
        Frames kept in the LRU.
    cache_bytes : int
        Bytes the LRU may hold, each frame counted as its persisted snapshot's compact JSON
        (default 16 MiB, :class:`~agentscope.pipeline.snapshots.FrameLRU`): a log of large states
        keeps fewer frames.
    strict, machine_version, explain
        As for :func:`agentscope.pipeline.verify`.
    batch_size : int
        Entries per ``Machine.fold`` call (one engine round trip each); a seek folds at least
        ``checkpoint_every`` entries in one call.

    Examples
    --------
    >>> import agentscope as asc
    >>> from agentscope.examples import example_path
    >>> from agentscope.examples.python_machines import triage_machine
    >>> log = asc.read_log(example_path("g_triage.sqlite"), thread="main")
    >>> tl = asc.Timeline(triage_machine(), log)
    >>> len(tl), tl.report.ok
    (91, True)
    >>> frame = tl[45]  # the state right after entry 45
    >>> frame.event_type, frame.verdict.value, frame.value["working"]["analyzing"]
    ('APPROVE', 'verified', {'classification': 'running', 'knowledge': 'searching'})
    >>> tl[-1].value
    'closed'
    """

    def __init__(
        self,
        machine: Machine | None,
        log: Any,
        *,
        checkpoint_every: int | Literal["auto"] | None = None,
        memory_budget: int = DEFAULT_BUDGET,
        machines: Mapping[str, Machine] | None = None,
        cache_size: int = 256,
        cache_bytes: int = DEFAULT_CACHE_BYTES,
        strict: bool = False,
        machine_version: str | None = None,
        explain: bool = True,
        batch_size: int = DEFAULT_BATCH,
    ) -> None:
        check_machines(machines)
        log = as_log(log)
        self._log = log
        self._entries: Sequence[Mapping[str, Any]] = entries_of(log)
        self._own_entries = False
        if checkpoint_every == "auto":
            probe_m = machine if machine is not None else next(iter((machines or {}).values()), None)
            checkpoint_every = (
                1024 if probe_m is None or not self._entries
                else choose_checkpoint_every(probe_m, self._entries, stop=_first_stop(self._entries))
            )
        if checkpoint_every is not None and (
                isinstance(checkpoint_every, bool) or not isinstance(checkpoint_every, int)
                or checkpoint_every < 1):
            raise ValueError(f"checkpoint_every must be None, an int >= 1 or 'auto'; got "
                             f"{checkpoint_every!r}")
        self._machine = machine
        self._machines = dict(machines) if machines else None
        self._k: int | None = checkpoint_every
        self._cache_size = max(0, cache_size)
        self._cache_bytes = max(0, cache_bytes)
        self._batch = max(batch_size, checkpoint_every or 0)  # seeks fold <= k entries: one call
        cached = getattr(log, "cached_snapshot", None)
        self._pass = Pass(
            machine=machine,
            machines=self._machines,
            machine_version=machine_version,
            strict=strict,
            checkpoint_every=checkpoint_every,
            batch=self._batch,
            explain=explain,
            source=source_of(log),
            store_budget=memory_budget if checkpoint_every is None else None,
            validated=is_validated(log),
            findings=read_findings(log),
        )
        self._index: LogIndex = self._pass.index
        if self._entries:
            self._pass.feed(self._entries)
            if isinstance(cached, Mapping):
                check_cache(self._index, self._entries, cached)
        else:
            self._index = build_index(self._entries, machine=machine, machines=self._machines,
                                      source=source_of(log))
            self._pass.index = self._index
        self._lru = FrameLRU(self._cache_size, self._cache_bytes)
        # (segment, position, snapshot, sessions, persisted, previous persisted)
        self._cursor: tuple[int, int, Snapshot, dict[str, str], Mapping[str, Any],
                            Mapping[str, Any] | None] | None = None
        self._report: VerifyReport | None = None
        self._ckpts: list[int] | None = None
        self.seek_fallbacks = 0
        """Seeks whose checkpoint fold did not reproduce the indexed hash (expected: 0)."""
        self._prefix_keys: frozenset[str] = frozenset()
        """Rebinding keys journaled before a fork point whose pass was reused (:meth:`fork_at`)."""

    def extend(self, entries: Iterable[Mapping[str, Any]]) -> range:
        """Append entries to the log and run the pass over them only; return their positions.

        Work is proportional to the new entries (the last segment's fold resumes from its last
        engine snapshot and rebinding cache; a new ``@agent.init`` starts a new segment). The
        entries are appended to the timeline's own list: the log object given at construction is
        not modified. Problems in the new entries are recorded like the rest (validation of the
        new entries included); the cached snapshot is not re-checked.
        """
        new = list(entries)
        if not new:
            n = len(self)
            return range(n, n)
        if not self._own_entries:
            self._entries = list(self._entries)
            self._own_entries = True
        assert isinstance(self._entries, list)
        probs = self._index.log_problems
        if self._index.n == 0 and probs[:1] and probs[0][0] == ProblemKind.EMPTY_LOG:
            self._index.log_problems.pop(0)
            if self._index.log_failures:
                self._index.log_failures.pop(0)
        if self._prefix_keys and any(session_key(e) in self._prefix_keys for e in new):
            # a fork resumed without the rebinding cache (fork_at) meets a key journaled before
            # its fork point: fold the whole log again, as a fresh timeline would (exact)
            lo = len(self._entries)
            fresh = Timeline(self._machine, [*self._entries, *new], **self._options())
            self.__dict__.update(fresh.__dict__)
            return range(lo, len(self._entries))
        self._entries.extend(new)
        self._pass.validated = False  # the new entries were not read by a validating reader
        added = self._pass.feed(self._entries)
        self._report = None
        self._ckpts = None
        return added

    def fork(self, log: Any) -> Timeline:
        """A timeline of ``log``, a log that starts with this timeline's entries: the shared
        prefix is not folded again (its pass state is copied), only ``log``'s remaining entries.

        ``log[:len(self)]`` must equal this timeline's entries (``ValueError`` otherwise). Use
        :func:`fork_timelines` for two logs that share a prefix.
        """
        log = as_log(log)
        entries = entries_of(log)
        k = len(self)
        if len(entries) < k or any(
            x is not y and x != y for x, y in zip(entries[:k], self._entries, strict=True)
        ):
            raise ValueError(f"Timeline.fork: the log does not start with this timeline's {k} entries")
        out = copy.copy(self)
        out._log = log
        out._entries = entries
        out._own_entries = False
        out._pass = self._pass.copy()
        out._index = out._pass.index
        out._lru = FrameLRU(self._cache_size, self._cache_bytes)
        out._cursor = None
        out._report = None
        out._ckpts = None
        out.seek_fallbacks = 0
        if len(entries) > k:
            out._pass.feed(entries)
        cached = getattr(log, "cached_snapshot", None)
        if isinstance(cached, Mapping) and entries:
            check_cache(out._index, entries, cached)
        return out

    def iter_frames(self, start: int = 0, stop: int | None = None) -> Iterator[Frame]:
        """Yield the frames ``start .. stop - 1`` in order.

        From the snapshot store where it holds the states (decoding deltas one by one: O(changes)
        per frame, no engine call), else by seeking (:meth:`at`).
        """
        n = len(self)
        stop = n if stop is None else min(stop, n)
        i = max(0, start)
        idx = self._index
        while i < stop:
            seg_no = idx.segment_of(i)
            seg = idx.segments[seg_no]
            st = self._store(seg_no, i)
            m = idx.machines[seg_no] if seg_no < len(idx.machines) else None
            if st is None or m is None:
                yield self.at(i)
                i += 1
                continue
            hi = min(stop, st.stop, idx.replayed_upto[seg_no])
            if hi <= i:
                yield self.at(i)
                i += 1
                continue
            prev: Mapping[str, Any] | None = st.get(i - 1) if i > seg.start else None
            for j, p in st.iter_from(i, hi):
                yield self._frame(j, p, prev)
                prev = p
            i = hi

    def steps(self, start: int = 0, stop: int | None = None) -> Iterator[Step]:
        """Yield the :class:`Step` of every position ``start .. stop - 1``, in order: the one
        walk of the pass every question reads (``states``, ``find``, ``check``, ``coverage``).

        Each segment's replayed range comes from the pass's snapshot store where it keeps the
        states (no engine call), else from one continuous fold, in large batches, from the
        nearest checkpoint at or before ``start - 1``. Entries the pass did not replay come
        with ``after=None``.
        """
        idx = self._index
        stop = idx.n if stop is None else min(stop, idx.n)
        start = max(0, start)
        entries = self._entries
        for seg_no, seg in enumerate(idx.segments):
            lo, hi = max(start, seg.start), min(stop, seg.stop)
            if lo >= hi:
                continue
            m = idx.machines[seg_no] if seg_no < len(idx.machines) else None
            upto = idx.replayed_upto[seg_no] if m is not None else seg.start
            r_hi = min(hi, upto)
            if m is not None and lo < r_hi:
                first = lo - 1 if lo > seg.start else lo
                prev: Mapping[str, Any] | None = None
                for i, p in self._persisted_from(seg_no, m, first, r_hi):
                    if i >= lo:
                        yield Step(i, seg_no, entries[i], m, prev, p, idx.verdict_of(i),
                                   bool(idx.ignored[i]), idx.taken[i] if i < len(idx.taken) else None)
                    prev = p
            for i in range(max(lo, r_hi), hi):
                yield Step(i, seg_no, entries[i], None, None, None, idx.verdict_of(i),
                           bool(idx.ignored[i]))

    def frame_of(self, step: Step) -> Frame:
        """The :class:`Frame` of ``step`` (equal to ``timeline[step.index]``), built from the
        step's states without a seek."""
        if step.after is None:  # not replayed: the frame needs no fold
            return self._make_frame(step.index)
        return self._frame(step.index, step.after, step.before)

    @property
    def segment_machines(self) -> tuple[Machine, ...]:
        """The distinct machines that replayed the log's segments, in segment order."""
        out: list[Machine] = []
        for m in self._index.machines:
            if m is not None and all(m is not o for o in out):
                out.append(m)
        return tuple(out)

    def follow(self, source: Any = None, *, thread: str | None = None) -> Any:
        """Keep this timeline up to date with its source as entries are appended (live follow).

        Returns an :class:`agentscope.follow.Follower` continuing from the last entry: each
        ``poll()`` reads only what is new (read-only) and extends the timeline (:meth:`extend`).
        ``source``/``thread`` default to the log's (a log from :func:`agentscope.read_log`).
        """
        from agentscope.stores.follow import follow_timeline  # the reading half; no import upward

        return follow_timeline(self, source, thread=thread)

    def fork_at(self, k: int, event: Mapping[str, Any], *, insert: bool = False,
                keep_rest: bool = True) -> Timeline:
        """An in-memory fork of this timeline's log with one event edited: what if entry ``k`` had
        been ``event``?

        Parameters
        ----------
        k : int
            The entry to replace (``1 <= k < len``; the init entry stays), or with ``insert=True`` the
            entry after which ``event`` is inserted (``0 <= k < len``).
        event : Mapping
            The event payload (``{"type": ..., ...}``); ``@agent.*`` types are reserved.
        insert : bool
            Insert after ``k`` instead of replacing ``k``.
        keep_rest : bool
            Re-apply the recorded events after ``k`` to the fork (default), or end the fork at the
            edited entry.

        Returns
        -------
        Timeline
            Over the fork's entries (``.log``, a new list): entries before the edit verbatim (spec
            §5.1: a fork copies the prefix), the edited entry with id ``<id>~whatif``, then the rest
            renumbered after an insert. Entries from the edit on carry no ``verification`` (they were
            never recorded). Replay is pure (no side effects); compare with the original in
            ``ForkView(machine, self.log, fork.log, timelines=(self, fork))`` or
            :func:`agentscope.compare`. The original log is not touched. It has this timeline's
            settings (``checkpoint_every``, ``memory_budget``, ``machines``, ``explain``, batch
            size), never ``strict``.

        Notes
        -----
        Work: the prefix is not folded again. The fork starts from this timeline's pass cut at the
        edit (the hashes, verdicts, problems and stored snapshots of the entries before it) and
        the engine snapshot before the edit
        (``machine.restore`` of the stored one, checked against its hash), then folds the edited
        entry and the rest only: one restore plus ``len(fork) - edit`` entries (plus at most
        ``checkpoint_every`` to seek the snapshot before the edit in checkpoint mode). The result
        equals a fresh ``Timeline`` of the fork's entries (hashes, verdicts, problems, frames).
        The whole fork is folded instead when that state cannot be rebuilt exactly: this timeline
        is ``strict``, the edit lies before the last ``@agent.init`` segment, a timer is pending
        before the edit (the mismatch explanations' timer state is not kept per entry), or a child
        completion journaled before the edit (a rebinding key, spec §4.1) is journaled again after
        it, in the fork or in a later :meth:`extend` of it.

        Raises
        ------
        IndexError
            ``k`` out of range.
        ValueError, TypeError
            ``event`` is not an object with a non-reserved string ``type``.
        """
        entries = list(self._entries)
        n = len(entries)
        lo = 0 if insert else 1
        if isinstance(k, bool) or not isinstance(k, int) or not lo <= k < n:
            how = "insert after" if insert else "replace"
            raise IndexError(f"fork_at: k must be an int in [{lo}, {n - 1}] ({how}); got {k!r}")
        if not isinstance(event, Mapping):
            raise TypeError(f"fork_at: event must be a mapping with a 'type'; got {type(event).__name__}")
        etype = event.get("type")
        if not isinstance(etype, str) or not etype:
            raise ValueError("fork_at: event needs a non-empty string 'type'")
        if etype.startswith("@agent."):
            raise ValueError(f"fork_at: {etype!r} is a reserved @agent. type (spec §1.5)")

        def unverified(e: Mapping[str, Any], index: int) -> dict[str, Any]:
            out = {key: v for key, v in e.items() if key != "verification"}
            out["index"] = index
            return out

        base = entries[k]
        at = k + 1 if insert else k
        edited = unverified(base, at)
        edited["id"] = f"{base.get('id')}~whatif"
        edited["event"] = dict(event)
        edited.pop("causationId", None)
        head = entries[: k + 1] if insert else entries[:k]
        rest = entries[k + 1 :] if keep_rest else []
        shift = 1 if insert else 0
        fork = [*head, edited, *(unverified(e, int(e.get("index", i + k + 1)) + shift)
                                 for i, e in enumerate(rest))]
        out = self._resumed(fork, at)
        return out if out is not None else Timeline(self._machine, fork, **self._options())

    def _options(self) -> dict[str, Any]:
        """This timeline's settings, for a fresh timeline of a fork (never ``strict``: a fork's
        entries from the edit on carry no hash)."""
        p = self._pass
        return {"machines": self._machines, "checkpoint_every": self._k,
                "memory_budget": p.store_budget if p.store_budget is not None else DEFAULT_BUDGET,
                "cache_size": self._cache_size, "cache_bytes": self._cache_bytes,
                "machine_version": p.machine_version,
                "explain": p.explain, "batch_size": self._batch}

    def _resumed(self, fork: list[Mapping[str, Any]], n: int) -> Timeline | None:
        """A timeline of ``fork`` (whose first ``n`` entries are this timeline's) that reuses this
        pass up to ``n`` and folds only ``fork[n:]``; ``None`` when the pass state at ``n`` cannot
        be rebuilt exactly (:meth:`Pass.truncated`), or a rebinding key journaled before ``n`` in
        its segment is journaled again in ``fork[n:]`` (the resumed fold starts with no cache)."""
        idx = self._index
        if not idx.segments or not idx.segments[-1].start < n <= idx.n:
            return None
        seg = idx.segments[-1]
        before = {key for e in self._entries[seg.start:n] if (key := session_key(e)) is not None}
        if any(session_key(e) in before for e in fork[n:]):
            return None
        m = idx.machines[seg.number]
        persisted: Mapping[str, Any] | None = None
        if m is not None and n - 1 < idx.replayed_upto[seg.number]:
            persisted = self._states(n - 1, seg.number, m)[1]
        p = self._pass.truncated(self._entries, n, persisted)
        if p is None:
            return None
        out = copy.copy(self)
        out._log = fork
        out._entries = fork
        out._own_entries = False  # as Timeline(machine, fork): extend copies the list first
        out._pass = p
        out._index = p.index
        out._lru = FrameLRU(self._cache_size, self._cache_bytes)
        out._cursor = None
        out._report = None
        out._ckpts = None
        out.seek_fallbacks = 0
        out._prefix_keys = frozenset(before)
        p.validated = False  # the fork's own entries were not read by a validating reader
        p.feed(fork)
        return out

    @property
    def entries(self) -> Sequence[Mapping[str, Any]]:
        """The entries (those of the log given, then any :meth:`extend` added)."""
        return self._entries

    # -- sequence protocol -------------------------------------------------------------------
    def __len__(self) -> int:
        return self._index.n

    @overload
    def __getitem__(self, n: int) -> Frame: ...

    @overload
    def __getitem__(self, n: slice) -> list[Frame]: ...

    def __getitem__(self, n: int | slice) -> Frame | list[Frame]:
        if isinstance(n, slice):
            return [self.at(i) for i in range(*n.indices(len(self)))]
        return self.at(n)

    def __iter__(self) -> Iterator[Frame]:
        for i in range(len(self)):
            yield self.at(i)

    def __repr__(self) -> str:
        return (
            f"<Timeline {len(self)} entries, {len(self._index.segments)} segment(s), "
            + (f"{len(self._index.checkpoints)} checkpoints every {self._k}>" if self._k else
               f"every state kept ({self.memory_bytes:,} bytes)>")
        )

    # -- public data -------------------------------------------------------------------------
    @property
    def log(self) -> Any:
        """The log as given."""
        return self._log

    @property
    def machine(self) -> Machine | None:
        """The machine as given (``None`` for an entries-only timeline)."""
        return self._machine

    @property
    def machines(self) -> Mapping[str, Machine] | None:
        """Machines by version, as given."""
        return self._machines

    @property
    def checkpoint_every(self) -> int | None:
        """Entries between checkpoints, or ``None`` when every state is kept in the store."""
        return self._k

    @property
    def checkpoint_indices(self) -> list[int]:
        """Positions whose persisted snapshot is kept whole (checkpoints and store keyframes)."""
        keys = [k for st in self._index.stores.values() for k in st.keyframes]
        return sorted(set(self._index.checkpoints) | set(keys))

    @property
    def memory_bytes(self) -> int:
        """Bytes held by the snapshot stores (pickled keyframes and deltas)."""
        return sum(st.nbytes for st in self._index.stores.values())

    def _store(self, seg_no: int, n: int) -> SnapshotStore | None:
        st = self._index.stores.get(seg_no)
        return st if st is not None and st.covers(n) else None

    def _checkpoint_before(self, seg_start: int, n: int) -> int:
        """The largest checkpoint position in ``seg_start + 1 .. n`` (``seg_start`` if none)."""
        if self._ckpts is None:
            self._ckpts = sorted(self._index.checkpoints)
        j = bisect_right(self._ckpts, n) - 1
        c = self._ckpts[j] if j >= 0 else seg_start
        return c if c > seg_start else seg_start

    @property
    def report(self) -> VerifyReport:
        """The :class:`VerifyReport` of the indexing pass (no extra replay)."""
        if self._report is None:
            self._report = report_from_index(self._index, self._entries,
                                             positions=getattr(self._log, "positions", None),
                                             set_aside=set_aside(self._log))
        return self._report

    @property
    def mismatch_indices(self) -> list[int]:
        """Positions whose verdict is ``mismatch`` (unexplained hash differences)."""
        return [int(i) for i in np.flatnonzero(self._index.verdict == _CODE[Verdict.MISMATCH])]

    @property
    def computed_hashes(self) -> list[str | None]:
        """The recomputed hash of every entry (``None`` where not replayed)."""
        return [self._index.computed_hash(i) for i in range(self._index.n)]

    def clear_cache(self) -> None:
        """Forget the cached frames and the last fold position (the next access seeks cold)."""
        self._lru.clear()
        self._cursor = None

    # -- frames ------------------------------------------------------------------------------
    def at(self, n: int) -> Frame:
        """Return the :class:`Frame` at position ``n`` (negative counts from the end).

        Raises ``IndexError`` outside ``-len .. len-1``.
        """
        size = self._index.n
        if isinstance(n, (bool, np.bool_)) or not isinstance(n, (int, np.integer)):
            raise TypeError(f"timeline index must be an int; got {type(n).__name__}")
        asked = n = int(n)
        if n < 0:
            n += size
        if not 0 <= n < size:
            raise IndexError(f"timeline index {asked} out of range for {size} entries")
        hit = self._lru.get(n)
        if hit is not None:
            return hit
        frame = self._make_frame(n)
        self._lru.put(n, frame)
        return frame

    def _explanation(self, n: int) -> str | None:
        idx = self._index
        text = idx.explanations.get(n)
        probs = [f"{k}: {d}" for k, d in idx.problems.get(n, []) if k != ProblemKind.EXPLAINED_MISMATCH]
        if probs:
            extra = "; ".join(probs)
            return extra if text is None else f"{text}; {extra}"
        return text

    def _make_frame(self, n: int) -> Frame:
        idx = self._index
        seg_no = idx.segment_of(n)
        m = idx.machines[seg_no] if seg_no < len(idx.machines) else None
        entry = self._entries[n]
        rec = idx.recorded_hash(n)
        if m is None or n >= idx.replayed_upto[seg_no]:
            why = self._explanation(n)
            if m is None:
                why = why or (
                    "no machine to replay with"
                    if self._machine is None and not self._machines
                    else f"no machine for machineVersion {idx.segments[seg_no].machine_version!r}"
                )
            return Frame(
                index=n,
                entry=entry,
                persisted=None,
                recorded_hash=rec,
                computed_hash=None,
                verdict=Verdict.MISSING if rec is None else Verdict.UNCHECKED,
                explanation=why,
            )
        prev_p, p = self._states(n, seg_no, m)
        return self._frame(n, p, prev_p)

    def _frame(self, n: int, p: Mapping[str, Any], prev_p: Mapping[str, Any] | None) -> Frame:
        idx = self._index
        taken = idx.taken[n] if n < len(idx.taken) else None
        return Frame(
            index=n,
            entry=self._entries[n],
            persisted=p,
            recorded_hash=idx.recorded_hash(n),
            computed_hash=idx.computed_hash(n),
            verdict=idx.verdict_of(n),
            explanation=self._explanation(n),
            changed_paths=changed_paths(prev_p, p),
            ignored=bool(idx.ignored[n]),
            transitions=taken,
            microstep_values=None if taken is None else idx.chains.get(n, (p.get("value"),) if taken else ()),
        )

    def _states(
        self, n: int, seg_no: int, m: Machine
    ) -> tuple[Mapping[str, Any] | None, Mapping[str, Any]]:
        """Persisted snapshots after ``n - 1`` (``None`` at a segment start) and after ``n``."""
        st = self._store(seg_no, n)
        if st is not None:
            return st.pair(n)
        cur = self._cursor
        if cur is not None and cur[0] == seg_no:
            if cur[1] == n:
                return cur[5], cur[4]
            if cur[1] == n - 1:
                sessions = dict(cur[3])
                snap = next(
                    s for _, s in fold_segment(
                        m, self._entries, n, n + 1, seed=cur[2], sessions=sessions
                    )
                )
                p = m.persist(snap)
                if self._hash_ok(n, p):
                    self._cursor = (seg_no, n, snap, sessions, p, cur[4])
                    return cur[4], p
        out = self._fold_to(n, seg_no, m, from_checkpoint=True)
        if not self._hash_ok(n, out[1]):
            self.seek_fallbacks += 1
            out = self._fold_to(n, seg_no, m, from_checkpoint=False)
        return out

    def _hash_ok(self, n: int, p: Mapping[str, Any]) -> bool:
        want = self._index.computed_hash(n)
        return want is None or state_hash(p) == want

    def _fold_to(
        self, n: int, seg_no: int, m: Machine, *, from_checkpoint: bool
    ) -> tuple[Mapping[str, Any] | None, Mapping[str, Any]]:
        seg = self._index.segments[seg_no]
        start = seg.start
        if from_checkpoint and n > seg.start:
            start = self._checkpoint_before(seg.start, n - 1)
        sessions: dict[str, str] = {}
        ckpt: Mapping[str, Any] | None = None
        if start == seg.start:
            it = fold_segment(m, self._entries, seg.start, n + 1, batch=self._batch,
                              sessions=sessions)
        else:
            ckpt = self._index.checkpoints[start]
            seed = m.restore(ckpt)
            sessions = self._index.sessions_at(start, m, seed)
            it = fold_segment(m, self._entries, start + 1, n + 1, seed=seed,
                              batch=self._batch, sessions=sessions)
        before: Snapshot | None = None
        last: Snapshot | None = None
        for _, snap in it:
            before, last = last, snap
        assert last is not None
        p = m.persist(last)
        prev_p: Mapping[str, Any] | None
        if n == seg.start:
            prev_p = None
        elif before is not None:
            prev_p = m.persist(before)
        else:
            prev_p = ckpt
        self._cursor = (seg_no, n, last, sessions, p, prev_p)
        return prev_p, p

    # -- queries -----------------------------------------------------------------------------
    def changes(self, path: str, *, start: int = 0, stop: int | None = None) -> pd.DataFrame:
        """The steps where the value at JSON Pointer ``path`` changed.

        Parameters
        ----------
        path : str
            An RFC 6901 pointer into the persisted snapshot, e.g. ``"/context/queue"``,
            ``"/value"``, ``"/children/job"``.
        start, stop : int
            Only steps ``start <= index < stop`` (default: the whole log).

        Returns
        -------
        pandas.DataFrame
            Columns ``index``, ``id``, ``event_type`` (the event that changed it), ``op``
            (``"add"``, ``"replace"``, ``"remove"``), ``before``, ``after`` (``None`` for an
            absent value). A segment's first step is compared with "absent". Folds the range
            again from the nearest checkpoint in large batches (O(stop - start) engine work, no
            hashing).

        Raises
        ------
        ValueError
            Without a machine, or for a malformed pointer.
        """
        resolve_pointer({}, path)  # validate early
        if self._machine is None and not self._machines:
            raise ValueError("Timeline.changes needs a machine to replay with")
        idx = self._index
        stop = idx.n if stop is None else min(stop, idx.n)
        rows: list[dict[str, Any]] = []
        for seg_no, seg in enumerate(idx.segments):
            m = idx.machines[seg_no]
            lo = max(start, seg.start)
            hi = min(stop, idx.replayed_upto[seg_no])
            if m is None or lo >= hi:
                continue
            prev: Any = _ABSENT
            first = lo - 1 if lo > seg.start else lo  # the step before lo is the baseline
            for i, p in self._persisted_from(seg_no, m, first, hi):
                cur = resolve_pointer(p, path)
                if i < lo:
                    prev = cur
                    continue
                if cur is _ABSENT and prev is _ABSENT:
                    continue
                if cur is _ABSENT or prev is _ABSENT or cur != prev:
                    e = self._entries[i]
                    rows.append(
                        {
                            "index": i,
                            "id": str(e.get("id", "")),
                            "event_type": event_type(e),
                            "op": "add" if prev is _ABSENT else (
                                "remove" if cur is _ABSENT else "replace"),
                            "before": None if prev is _ABSENT else prev,
                            "after": None if cur is _ABSENT else cur,
                        }
                    )
                prev = cur
        cols = ["index", "id", "event_type", "op", "before", "after"]
        return pd.DataFrame(
            {c: pd.Series([r[c] for r in rows], dtype="int64" if c == "index" else object)
             for c in cols},
            columns=cols,
        )

    # -- questions (agentscope.queries: states as data, "jump to when…") -------------------
    def states(self, paths: Sequence[str] | str | None = None, *, value: bool = True) -> pd.DataFrame:
        """The replayed state after every entry as a DataFrame; see :func:`agentscope.queries.states`."""
        from agentscope import queries

        return queries.states(self, paths, value=value)

    def find(self, predicate: Any, *, start: int = 0) -> int | None:
        """First position ``>= start`` where ``predicate`` (an expression such as
        ``"context.retries > 3"`` or a callable on a :class:`Frame`) holds, else ``None``;
        see :func:`agentscope.queries.find`."""
        from agentscope import queries

        return queries.find(self, predicate, start=start)

    def find_all(self, predicate: Any, *, start: int = 0, stop: int | None = None) -> list[int]:
        """Every position where ``predicate`` holds; see :func:`agentscope.queries.find_all`."""
        from agentscope import queries

        return queries.find_all(self, predicate, start=start, stop=stop)

    def next_change(self, path: str, *, after: int = -1) -> int | None:
        """First position after ``after`` where the value at ``path`` changed; see
        :func:`agentscope.queries.next_change`."""
        from agentscope import queries

        return queries.next_change(self, path, after=after)

    def last_change(self, path: str, *, before: int | None = None) -> int | None:
        """Last position before ``before`` where the value at ``path`` changed; see
        :func:`agentscope.queries.last_change`."""
        from agentscope import queries

        return queries.last_change(self, path, before=before)

    def _persisted_from(
        self, seg_no: int, m: Machine, lo: int, hi: int
    ) -> Iterator[tuple[int, Mapping[str, Any]]]:
        """Persisted snapshots for positions ``lo..hi-1`` of one segment: one continuous fold in
        large batches from the nearest checkpoint at or before ``lo`` (as a seek starts)."""
        seg = self._index.segments[seg_no]
        st = self._index.stores.get(seg_no)
        if st is not None and st.covers(lo):
            yield from st.iter_from(lo, hi)
            if hi <= st.stop:
                return
            lo = st.stop
        c = self._checkpoint_before(seg.start, lo)
        if c == seg.start:
            it = fold_segment(m, self._entries, seg.start, hi, batch=self._batch)
        else:
            p0 = self._index.checkpoints[c]
            if c >= lo:
                yield c, p0
            seed = m.restore(p0)
            it = fold_segment(m, self._entries, c + 1, hi, seed=seed, batch=self._batch,
                              sessions=self._index.sessions_at(c, m, seed))
        for i, snap in it:
            if i >= lo:
                yield i, m.persist(snap)


def fork_timelines(
    machine: Machine | None, a: Any, b: Any, *, shared: int | None = None, **options: Any
) -> tuple[Timeline, Timeline]:
    """Timelines of two logs that share a prefix, folding that prefix **once**.

    Parameters
    ----------
    machine : Machine or None
    a, b : EventLog or Sequence[Mapping] or path
    shared : int, optional
        At most this many leading entries are shared (e.g. ``compare(a, b).common_prefix``); the
        entries actually shared are the leading ones equal on both sides (``==``), so a prefix
        that differs in ``recordedAt`` or a hash is verified on each side separately.
    **options
        Passed to :class:`Timeline` (``checkpoint_every``, ``machines``, ``strict``, …).

    Returns
    -------
    (Timeline, Timeline)
        Folding work: ``shared + (len(a) - shared) + (len(b) - shared)`` entries.
    """
    a, b = as_log(a), as_log(b)
    ea, eb = entries_of(a), entries_of(b)
    limit = min(len(ea), len(eb)) if shared is None else min(shared, len(ea), len(eb))
    k = 0
    while k < limit and (ea[k] is eb[k] or ea[k] == eb[k]):
        k += 1
    if k == 0:
        return Timeline(machine, a, **options), Timeline(machine, b, **options)
    base = Timeline(machine, list(ea[:k]), **options)
    return base.fork(a), base.fork(b)

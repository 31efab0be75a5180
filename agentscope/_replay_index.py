"""One verifying pass over a log: per-entry hashes, verdicts and problems, plus checkpoints.

``verify`` builds its report from it and ``Timeline`` keeps it as its index. Storage is compact
so a 10^6-entry log stays small: hashes as ``uint32`` arrays, verdicts as ``uint8`` codes,
``ignored`` as a ``bool`` array, and text (problems, explanations) only for the entries that
have any. Persisted snapshots are kept only at checkpoints (every ``checkpoint_every`` entries
of a segment).

Private module.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from agentscope._replay_core import (
    AGENT_INIT,
    DEFAULT_BATCH,
    Segment,
    fold_segment,
    identity_problem,
    load_validators,
    recorded_at_ms,
    recorded_hash,
    segments_of,
)
from agentscope._replay_explain import explain_mismatch
from agentscope.engines.base import Machine, Snapshot
from agentscope.errors import (
    AgentscopeError,
    EngineError,
    EntryValidationError,
    LogFormatError,
    ReplayDivergenceError,
    SnapshotDivergedError,
    SnapshotRestoreError,
)
from agentscope.frames import Verdict
from agentscope.hashing import state_hash

__all__ = ["VERDICTS", "LogIndex", "build_index", "machine_for_segment"]

VERDICTS: tuple[Verdict, ...] = tuple(Verdict)
_CODE = {v: i for i, v in enumerate(VERDICTS)}
_HEX8 = re.compile(r"^[0-9a-f]{8}$")


@dataclass
class LogIndex:
    """What one pass learned about every entry (see the module docstring for the layout).

    ``problems[i]`` is a list of ``(kind, detail)``; ``failures[i]`` the typed errors that make
    entry ``i`` fail (``raise_if_failed`` raises the first). ``log_problems`` are log-level
    ``(kind, detail, fatal)`` items (segment without a machine, cached snapshot disagreement).
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

    def add_problem(self, i: int, kind: str, detail: str, error: AgentscopeError | None) -> None:
        self.problems.setdefault(i, []).append((kind, detail))
        if error is not None:
            self.failures.setdefault(i, []).append(error)


def _is_bridge_init(entry: Mapping[str, Any]) -> bool:
    """An ``@agent.init`` entry carrying ``snapshot`` and ``metadata.migratedFrom`` (spec §1.5)."""
    ev = entry.get("event")
    md = entry.get("metadata")
    return (
        isinstance(ev, Mapping)
        and "snapshot" in ev
        and isinstance(md, Mapping)
        and isinstance(md.get("migratedFrom"), Mapping)
    )


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
        m = machines.get(seg.version) if seg.version is not None else None
        if m is not None:
            return m, seg.version
        if machine is not None and machine.version == seg.version:
            return machine, seg.version
        return None, None
    return machine, None


def _structure_problems(
    idx: LogIndex,
    entries: Sequence[Mapping[str, Any]],
    seg: Segment,
    validate_entry: Any,
) -> int:
    """Record envelope / log-level problems of one segment; return the first position the fold
    cannot pass (an entry without an event object), or ``seg.stop``."""
    seen: dict[Any, int] = {}
    prev_index: int | None = None
    stop = seg.stop
    src = idx.source
    for i in range(seg.start, seg.stop):
        e = entries[i]
        if not isinstance(e, Mapping):
            err = EntryValidationError("Agent event entry must be an object.", source=src, index=i)
            idx.add_problem(i, "invalid-entry", str(err.detail), err)
            return min(stop, i)
        if validate_entry is not None:
            try:
                validate_entry(e, index=i, source=src)
            except LogFormatError as exc:
                idx.add_problem(i, "invalid-entry", str(exc), exc)
        # §1.3: one log is numbered 0..n-1 across all its segments, so a later segment that
        # restarts at 0 (a concatenation of separate logs) breaks the numbering, as read_log says
        want = i if i == seg.start else (
            prev_index + 1 if isinstance(prev_index, int) else i)
        got = e.get("index")
        # ... except at a version-bridge init (§1.5, §4.2 step 3): the bridged run starts a new log
        # whose own indices restart at 0, so a concatenation of bridged segments is a lineage
        if i == seg.start and i > 0 and got == 0 and _is_bridge_init(e):
            want = 0
        if got != want:  # reported where the numbering breaks, not at every later entry
            err = EntryValidationError(
                f"Event log must be contiguous from index 0; found entry.index "
                f"{got} at position {i} (expected {want}).",
                source=src, index=i, field="index",
            )
            idx.add_problem(i, "non-contiguous", err.detail, err)
        prev_index = got if isinstance(got, int) and not isinstance(got, bool) else None
        eid = e.get("id")
        if isinstance(eid, str) and eid in seen:
            err = EntryValidationError(
                f"Event log contains duplicate entry id '{eid}' (first at {seen[eid]}).",
                source=src, index=i, field="id",
            )
            idx.add_problem(i, "duplicate-id", err.detail, err)
        elif isinstance(eid, str):
            seen[eid] = i
        ev = e.get("event")
        if not isinstance(ev, Mapping) or not isinstance(ev.get("type"), str) or not ev["type"]:
            if validate_entry is None:
                err = EntryValidationError(
                    "Agent event entry.event requires a non-empty string type.",
                    source=src, index=i, field="event.type",
                )
                idx.add_problem(i, "invalid-entry", err.detail, err)
            stop = min(stop, i)
        elif i == seg.start and ev["type"] != AGENT_INIT:
            err = EntryValidationError(
                "Event log must start with the reserved '@agent.init' entry; found "
                f"'{ev['type']}'.",
                source=src, index=i, field="event.type",
            )
            idx.add_problem(i, "no-init", err.detail, err)
            stop = min(stop, i)
    return stop


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
) -> LogIndex:
    """Fold every segment of ``entries`` once and record what each entry verified to.

    Never raises for problems in the log: they are recorded (``LogIndex.problems``). Engine
    failures stop that segment's fold at the failing entry and are recorded too.
    """
    check_machines(machines)
    n = len(entries)
    segs = segments_of(entries) if n else []
    idx = LogIndex(
        n=n,
        segments=segs,
        machines=[],
        computed=np.zeros(n, np.uint32),
        has_computed=np.zeros(n, np.bool_),
        recorded=np.zeros(n, np.uint32),
        has_recorded=np.zeros(n, np.bool_),
        verdict=np.full(n, _CODE[Verdict.UNCHECKED], np.uint8),
        ignored=np.zeros(n, np.bool_),
        strict=strict,
        source=source,
    )
    if n == 0:
        idx.log_problems.append(
            ("empty-log", "Cannot replay an empty event log; it must start with a "
             "'@agent.init' entry.", True)
        )
        idx.log_failures.append(
            LogFormatError(
                "Cannot replay an empty event log; it must start with a '@agent.init' entry.",
                source=source,
            )
        )
        return idx
    for i, e in enumerate(entries):
        h = recorded_hash(e) if isinstance(e, Mapping) else None
        if h is None:
            continue
        if _HEX8.match(h):
            idx.recorded[i] = int(h, 16)
            idx.has_recorded[i] = True
        else:
            idx.odd_recorded[i] = h
    _, validate_entry = load_validators()
    for seg in segs:
        if seg.number > 0:
            _check_bridge_link(idx, entries, segs[seg.number - 1], seg)
        m, seg_version = machine_for_segment(seg, machine, machines)
        idx.machines.append(m)
        fold_stop = _structure_problems(idx, entries, seg, validate_entry)
        if m is not None:
            version = seg_version or machine_version or m.version
            for i in range(seg.start, seg.stop):
                e = entries[i]
                if not isinstance(e, Mapping):
                    continue
                err = identity_problem(e, i - seg.start, m.machine_id, version)
                if err is not None:
                    err.index = i
                    err.source = source
                    idx.add_problem(i, "machine-mismatch", str(err), err)
        else:
            have = ", ".join(sorted(machines)) if machines else "none"
            detail = (
                f"segment {seg.number} (entries {seg.start}..{seg.stop - 1}, machineVersion "
                f"{seg.version!r}) has no machine: pass machines={{{seg.version!r}: ...}} "
                f"(given: {have})"
            )
            idx.log_problems.append(("no-machine", detail, machines is not None))
            if machines is not None:
                idx.log_failures.append(EngineError(detail))
        idx.replayed_upto.append(seg.start)
        if m is None or fold_stop <= seg.start:
            continue
        _fold_into(idx, entries, seg, m, fold_stop, checkpoint_every, batch, explain)
    no_hash = ~idx.has_recorded
    if idx.odd_recorded:
        no_hash[np.fromiter(idx.odd_recorded, dtype=np.int64)] = False
    idx.verdict[no_hash] = _CODE[Verdict.MISSING]
    if strict:
        for i in np.flatnonzero(no_hash).tolist():
            e = entries[i]
            eid = str(e.get("id", "")) if isinstance(e, Mapping) else ""
            idx.add_problem(
                i, "missing-verification", "no recorded verification hash",
                ReplayDivergenceError(eid, i, "missing-verification"),
            )
    if cached_snapshot is not None:
        _check_cache(idx, entries, cached_snapshot)
    return idx


def _fold_into(
    idx: LogIndex,
    entries: Sequence[Mapping[str, Any]],
    seg: Segment,
    m: Machine,
    stop: int,
    checkpoint_every: int | None,
    batch: int,
    explain: bool,
) -> None:
    prev: Mapping[str, Any] | None = None
    prev_h = ""
    known_starts: dict[str, int] = {}
    appeared: dict[str, int] = {}  # timer id -> recordedAt (ms) of the entry it appeared after
    prev_at: int | None = None
    k = checkpoint_every
    last = seg.start - 1
    try:
        spans = _recurring_session_keys(entries, seg.start, stop) if k else {}
        # when rebinding keys span checkpoints, every batch ends exactly on a checkpoint so the
        # cache and the engine's snapshot agree there (an engine may move cache entries when it
        # re-seeds); otherwise large batches (fewer engine round trips)
        fold_batch = k if (k and spans) else max(batch, k or 0)
        cache: dict[str, str] = {}
        for i, snap in fold_segment(m, entries, seg.start, stop, batch=fold_batch,
                                    sessions=cache):
            last = i
            p = m.persist(snap)
            same = prev is not None and p == prev  # the state did not react ("ignored")
            h = prev_h if same else state_hash(p)
            idx.computed[i] = int(h, 16)
            idx.has_computed[i] = True
            if k and (i - seg.start) % k == 0:
                idx.checkpoints[i] = p
                kept = [
                    (key, cache[key], cache[key] == m.child_session(snap, key.split("\u0000")[0]))
                    for key, (first_at, last_at) in spans.items()
                    if first_at <= i < last_at and key in cache
                ]
                if kept:
                    idx.checkpoint_sessions[i] = kept
            if same:
                idx.ignored[i] = True
            e = entries[i]
            at = recorded_at_ms(e)
            rec = idx.recorded_hash(i)
            timers = p.get("timers")
            timers = timers if isinstance(timers, Mapping) else {}
            for tid in list(known_starts):
                if tid not in timers:
                    del known_starts[tid]
            for tid in list(appeared):
                if tid not in timers:
                    del appeared[tid]
            for tid in timers:
                if tid not in appeared and at is not None:
                    appeared[tid] = at
            if rec is None:
                pass
            elif rec == h:
                idx.verdict[i] = _CODE[Verdict.VERIFIED]
            else:
                err: AgentscopeError = ReplayDivergenceError(
                    str(e.get("id", "")), i, "state", rec, h
                )
                if explain:
                    ex = explain_mismatch(
                        p, rec, recorded_at=at, previous_recorded_at=prev_at,
                        known_timer_starts=known_starts,
                        timer_appeared_at=min(appeared.values()) if appeared else None,
                    )
                    idx.explanations[i] = ex.text
                    if ex.confirmed:
                        known_starts.update(ex.timer_starts)
                        idx.verdict[i] = _CODE[Verdict.EXPLAINED]
                        idx.problems.setdefault(i, []).append(
                            ("explained-mismatch", f"expected {rec!r}, got {h!r} ({ex.cause})")
                        )
                    else:
                        idx.verdict[i] = _CODE[Verdict.MISMATCH]
                        idx.add_problem(i, "state-mismatch", f"expected {rec!r}, got {h!r}", err)
                else:
                    idx.verdict[i] = _CODE[Verdict.MISMATCH]
                    idx.add_problem(i, "state-mismatch", f"expected {rec!r}, got {h!r}", err)
            prev, prev_h = p, h
            prev_at = at
    except SnapshotRestoreError:  # bad input (a log's snapshot the machine cannot take), not a replay result
        raise
    except Exception as exc:  # an engine failure: report it and stop this segment
        at_i = last + 1 if last + 1 < seg.stop else last
        detail = f"{type(exc).__name__}: {exc}"
        err = exc if isinstance(exc, AgentscopeError) else EngineError(detail)
        idx.add_problem(at_i, "engine-error", detail, err)
    idx.replayed_upto[-1] = last + 1


def _session_key(entry: Any) -> str | None:
    ev = entry.get("event") if isinstance(entry, Mapping) else None
    if not isinstance(ev, Mapping):
        return None
    a, sid = ev.get("actorId"), ev.get("sessionId")
    if isinstance(a, str) and isinstance(sid, str):
        return a + "\u0000" + sid
    return None


def _recurring_session_keys(
    entries: Sequence[Mapping[str, Any]], start: int, stop: int
) -> dict[str, tuple[int, int]]:
    """Rebinding keys (spec §4.1: ``actorId + "\\0" + sessionId``) journaled more than once in
    ``entries[start:stop]``, with their first and last positions. Counted through 64-bit hashes
    in a numpy array so a 10^6-entry log needs ~8 MB, not a dict of every key."""
    hashes: list[int] = []
    for i in range(start, stop):
        key = _session_key(entries[i])
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
        key = _session_key(entries[i])
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
            ("bridge-link", f"{where} starts a fresh run (its init has no snapshot), not a "
             "version bridge from the previous segment", False)
        )
        return
    mig = seg.migrated_from
    if mig is None:
        idx.log_problems.append(
            ("bridge-link", f"{where}: the bridge init has no metadata.migratedFrom", False)
        )
        return
    if mig.get("logIndex") != len(prev) or mig.get("machineVersion") != prev.version:
        idx.log_problems.append(
            ("bridge-link",
             f"{where}: migratedFrom {dict(mig)!r} does not name the previous segment "
             f"(machineVersion {prev.version!r}, {len(prev)} entries)", False)
        )

    def exec_id(i: int) -> Any:
        meta = entries[i].get("metadata")
        return meta.get("executionId") if isinstance(meta, Mapping) else None

    if exec_id(seg.start) != exec_id(prev.start):
        idx.log_problems.append(
            ("bridge-link",
             f"{where}: executionId {exec_id(seg.start)!r} is not inherited from the previous "
             f"segment ({exec_id(prev.start)!r})", False)
        )


def _check_cache(
    idx: LogIndex, entries: Sequence[Mapping[str, Any]], cached: Mapping[str, Any]
) -> None:
    """Spec §4.2: does the cached snapshot (with ``agentMeta``) agree with the log?"""
    meta = cached.get("agentMeta")
    seg = idx.segments[-1]
    m = idx.machines[-1] if idx.machines else None
    if not isinstance(meta, Mapping):
        idx.log_problems.append(
            ("cache-unstamped", "the cached snapshot has no agentMeta; the log wins", False)
        )
        return
    k = meta.get("logIndex")
    seg_len = len(seg)
    if not isinstance(k, int) or isinstance(k, bool) or not 1 <= k <= seg_len:
        idx.log_problems.append(
            ("cache-bad-index",
             f"cached snapshot agentMeta.logIndex {k!r} is not within 1..{seg_len}", True)
        )
        idx.log_failures.append(
            LogFormatError(f"cached snapshot agentMeta.logIndex {k!r} is not within "
                           f"1..{seg_len}", source=idx.source, field="agentMeta.logIndex")
        )
        return
    if m is not None and meta.get("machineId") not in (None, m.machine_id):
        idx.log_problems.append(
            ("cache-machine",
             f"cached snapshot is for machine {meta.get('machineId')!r}, not {m.machine_id!r}",
             True)
        )
    init_meta = entries[seg.start].get("metadata")
    exec_id = init_meta.get("executionId") if isinstance(init_meta, Mapping) else None
    if "logId" in meta and exec_id is not None and meta.get("logId") != exec_id:
        idx.log_problems.append(
            ("cache-lineage",
             f"cached snapshot agentMeta.logId {meta.get('logId')!r} is not this log's "
             f"executionId {exec_id!r}", True)
        )
    pos = seg.start + k - 1
    snap_hash = state_hash(cached)
    log_hash = idx.computed_hash(pos) or idx.recorded_hash(pos)
    if log_hash is None:
        idx.log_problems.append(
            ("cache-unchecked", f"entry {pos} was not replayed and has no hash; the cached "
             "snapshot cannot be checked", False)
        )
    elif log_hash != snap_hash:
        diverged = SnapshotDivergedError(log_hash, snap_hash, k)
        idx.log_problems.append(("cache-diverged", str(diverged), True))
        idx.log_failures.append(diverged)
    if k < seg_len:
        idx.log_problems.append(
            ("cache-stale",
             f"the cached snapshot is stale: agentMeta.logIndex {k}, the log has {seg_len} "
             "entries (a resume replays the log)", False)
        )

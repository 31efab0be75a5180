"""The fold: the only loop that applies log entries to a machine (spec §4.1).

- :func:`seed_snapshot` is step 3 (restore a continuation, else ``initial(input)``);
- :func:`fold_segment` folds one segment in batches through ``Machine.fold`` (one engine round
  trip per batch) with one actor-session rebinding cache, and names the failing entry when the
  engine fails;
- :func:`apply_entry` is the named single step: :func:`fold_segment` takes it entry by entry
  when a batch fails (to name the failing entry), and a batch is that step over many events in
  one ``Machine.fold`` call (same rebinding cache, same results);
- :func:`replay` is the reference ``replay(machine, entries, {verify})``: validate, fold, raise at
  the first divergence.

Everything here uses only the :class:`~agentscope.engines.base.Machine` protocol, so the Node/XState
engine and the Python statechart engine replay the same way. Cheap to import (no pandas).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import count
from typing import Any, Literal

from agentscope.engines.base import NO_INPUT, Machine, Snapshot
from agentscope.errors import (
    EngineError,
    EntryValidationError,
    LogFormatError,
    ReplayDivergenceError,
    SnapshotRestoreError,
)
from agentscope.log.entry import (
    AGENT_INIT,
    entries_of,
    entry_id,
    event_of,
    event_type,
    events_of,
    recorded_hash,
    source_of,
)
from agentscope.log.problems import ProblemKind
from agentscope.log.validate import identity_problem, log_problems, no_init_problem, read_findings
from agentscope.pipeline.segments import as_log

__all__ = [
    "DEFAULT_BATCH",
    "ReplayResult",
    "VerifyMode",
    "apply_entry",
    "batch_for",
    "fold_segment",
    "json_size",
    "replay",
    "seed_snapshot",
]

DEFAULT_BATCH = 4096
"""Entries per ``Machine.fold`` call: one engine round trip per batch (the Node engine)."""
BATCH_BYTES = 16 * 1024 * 1024
"""Most bytes of persisted snapshots one batch should carry (about ``batch x snapshot size``):
a batch shrinks when the snapshots grow, so a log of large states never holds thousands of them
at once (one Node reply per batch)."""


def json_size(value: Any) -> int:
    """Bytes of ``value`` as compact JSON (an estimate where JSON cannot hold it): the one measure
    of how large a snapshot is when bounding how many are held at once (fold batches, the pass's
    chunks, the frame caches of :class:`agentscope.pipeline.snapshots.FrameLRU`)."""
    try:
        import orjson

        return len(orjson.dumps(value))
    except Exception:  # lone surrogates, big integers, deep nesting, non-JSON values: the slow way
        import json

        from agentscope._deep import call_deep

        return len(call_deep(json.dumps, value, default=repr))


_FIRST_STEP = 64
"""The first batch of a fold: snapshot sizes are measured before batches grow."""


def batch_for(batch: int, snapshot: Snapshot, budget: int = BATCH_BYTES) -> int:
    """``batch`` halved until ``batch x size(snapshot)`` fits ``budget`` bytes (at least 1).
    Halving keeps a power-of-two batch a divisor of itself, so batches still end on checkpoints.
    The one rule for how many snapshots of a size may be held at once (fold batches, the pass's
    chunks)."""
    persisted = getattr(snapshot, "persisted", None)
    if not isinstance(persisted, Mapping) or batch <= 1:
        return max(1, batch)
    size = max(1, json_size(persisted))
    b = batch
    while b > 1 and b * size > budget:
        b = b // 2 if b % 2 == 0 else max(1, budget // size)
    return max(1, b)

VerifyMode = bool | Literal["strict"]


def seed_snapshot(machine: Machine, init: Mapping[str, Any]) -> Snapshot:
    """Return the fold's seed for an init entry (spec §4.1 step 3).

    ``restore(event.snapshot)`` for a continuation (the engine runs the machine's ``migrate``),
    else ``initial(event.input)``; an absent ``input`` is :data:`NO_INPUT` (JS ``undefined``),
    distinct from ``input: null``.
    """
    ev = event_of(init)
    if "snapshot" in ev:
        snap = ev["snapshot"]
        if not isinstance(snap, Mapping):
            raise EntryValidationError(
                "an '@agent.init' snapshot must be a persisted snapshot object",
                index=0,
                field="event.snapshot",
            )
        try:
            return machine.restore(snap)
        except SnapshotRestoreError as exc:  # name the place: the init entry's snapshot
            raise exc.in_init_entry() from None
    return machine.initial(ev.get("input", NO_INPUT))


def apply_entry(
    machine: Machine,
    snapshot: Snapshot | None,
    entry: Mapping[str, Any],
    sessions: dict[str, str],
) -> Snapshot:
    """Apply one log entry: the fold's named step (spec §4.1 steps 3 and 5).

    An ``@agent.init`` entry seeds (``snapshot`` is then ignored, and ``sessions`` should be a
    fresh cache). Any other entry's event goes through ``machine.fold`` for one step, i.e.
    ``transition`` after actor-session rebinding with the per-fold cache ``sessions`` (updated
    in place). No event type gets special handling.

    Raises ``ValueError`` when a non-init entry is applied without a snapshot.
    """
    if event_type(entry) == AGENT_INIT:
        return seed_snapshot(machine, entry)
    if snapshot is None:
        raise ValueError("apply_entry needs the previous snapshot for a non-init entry")
    out = machine.fold(snapshot, [event_of(entry)], sessions=sessions)
    if len(out) != 1:
        raise EngineError(f"engine fold returned {len(out)} snapshots for 1 event")
    return out[0]


def _note(exc: BaseException, entries: Sequence[Mapping[str, Any]], i: int) -> None:
    e = entries[i]
    exc.add_note(
        f"while replaying entry {i} (id {e.get('id')!r}, event {event_type(e)!r})"
    )


def fold_segment(
    machine: Machine,
    entries: Sequence[Mapping[str, Any]],
    start: int,
    stop: int,
    *,
    batch: int = DEFAULT_BATCH,
    seed: Snapshot | None = None,
    sessions: dict[str, str] | None = None,
    exact_batches: bool = False,
    expected: Sequence[str | None] | None = None,
) -> Iterator[tuple[int, Snapshot]]:
    """Yield ``(position, snapshot after that entry)`` for positions ``start .. stop-1``.

    Without ``seed``, ``entries[start]`` is the init entry and is seeded from (it is yielded
    too). With ``seed`` (the snapshot after ``entries[start - 1]``, e.g. a restored checkpoint),
    folding starts at ``start``. Events go to ``machine.fold`` in batches of ``batch`` with one
    rebinding cache (``sessions``, fresh by default); a batch shrinks while ``batch`` snapshots
    of the current size would exceed :data:`BATCH_BYTES` (bounded memory for large states);
    ``exact_batches=True`` keeps every batch exactly ``batch`` long (batches that end on
    checkpoints).
    ``expected`` (the recorded hash or ``None`` of each entry ``start .. stop-1``) lets a
    streaming engine fold sparsely (``fold_iter(..., expected=...)``: snapshots that match and
    hold no timers arrive as their hash alone); only for a pass that keeps no snapshots.
    When a batch fold raises, the batch is re-folded one step at a time so the earlier entries
    are still yielded and the exception names the failing entry (added as a note).
    """
    cache: dict[str, str] = {} if sessions is None else sessions
    i = start
    if seed is None:
        try:
            s = seed_snapshot(machine, entries[start])
        except Exception as exc:
            _note(exc, entries, start)
            raise
        yield start, s
        i = start + 1
    else:
        s = seed
    step = max(1, batch) if exact_batches else min(batch_for(batch, s), _FIRST_STEP)
    # the Node engine streams: two requests in flight, replies capped by bytes (the runner's
    # parts), so the batch size only sets the request granularity, not what is held at once
    stream = None if exact_batches else getattr(machine, "fold_iter", None)
    if stream is not None and i < stop:
        step = batch_for(batch, s)
        positions = count(i)  # zip draws each position before it asks the stream for that step
        try:
            events_all = events_of(entries, i, stop)
            sparse = {} if expected is None else {"expected": expected[i - start : stop - start]}
            steps = stream(s, events_all, sessions=cache, chunk=step, **sparse)
            yield from zip(positions, steps, strict=False)
        except Exception as exc:
            bad = getattr(exc, "index", None)  # counts from ``i`` (fold_iter's contract)
            failing = max(i, next(positions) - 1)  # the position drawn for the step that raised
            at = i + bad if isinstance(bad, int) and not isinstance(bad, bool) else failing
            _note(exc, entries, at)
            raise
        return
    while i < stop:
        j = min(stop, i + step)
        events = events_of(entries, i, j)
        saved = dict(cache)
        try:
            snaps = machine.fold(s, events, sessions=cache)
            if len(snaps) != len(events):
                raise EngineError(
                    f"engine fold returned {len(snaps)} snapshots for {len(events)} events"
                )
        except Exception as batch_exc:
            cache.clear()
            cache.update(saved)
            cur = s
            bad = getattr(batch_exc, "index", None)  # an engine that names the failing event
            if isinstance(bad, int) and not isinstance(bad, bool) and 0 <= bad < len(events):
                ok = machine.fold(s, events[:bad], sessions=cache) if bad else []
                for k, sn in enumerate(ok):
                    yield i + k, sn
                _note(batch_exc, entries, i + bad)
                raise
            for k in range(j - i):  # the named step, one entry at a time
                try:
                    cur = apply_entry(machine, cur, entries[i + k], cache)
                except Exception as exc:
                    _note(exc, entries, i + k)
                    raise
                yield i + k, cur
            s = cur  # the batch failed but every single step succeeded
            i = j
            continue
        for k, sn in enumerate(snaps):
            yield i + k, sn
        s = snaps[-1]
        del snaps, events
        i = j
        # grow the batch (doubling) while batch x snapshot size stays within BATCH_BYTES; shrink
        # it as soon as the snapshots get larger (a growing context)
        if not exact_batches:
            step = min(batch_for(batch, s), 2 * step)


@dataclass(frozen=True)
class ReplayResult:
    """The outcome of :func:`replay`.

    Attributes
    ----------
    snapshot : Snapshot
        The engine's snapshot after the last entry (feed it to ``machine.transition``).
    persisted : dict
        Its persisted snapshot (XState 6's shape, spec §7.4).
    state_hash : str
        ``state_hash(persisted)`` (spec §2), 8 hex digits.
    length : int
        Number of entries folded (the init entry included).
    """

    snapshot: Snapshot = field(repr=False)
    persisted: Mapping[str, Any] = field(repr=False)
    state_hash: str
    length: int

    def __repr__(self) -> str:
        value = self.persisted.get("value")
        return (
            f"ReplayResult(length={self.length}, state_hash={self.state_hash!r}, "
            f"status={self.persisted.get('status')!r}, value={value!r:.120})"
        )


def replay(
    machine: Machine,
    entries: Any,
    *,
    verify: VerifyMode = True,
    machine_version: str | None = None,
    batch_size: int = DEFAULT_BATCH,
) -> ReplayResult:
    """Replay a log with ``machine`` exactly as spec §4.1 does, and return the final state.

    Parameters
    ----------
    machine : Machine
        Any engine (:func:`agentscope.load_machine`, :class:`agentscope.StatechartMachine`).
    entries : EventLog or Sequence[Mapping]
        One log (one ``@agent.init`` segment). ``log[:n]`` replays the first ``n`` entries:
        time travel. Entries are never modified.
    verify : True, "strict" or False
        ``True``: every entry that carries ``verification.stateHash`` must match the replayed
        state. ``"strict"``: the same, and an entry without a hash fails. ``False``: no checks.
    machine_version : str, optional
        Expected ``machineVersion`` (default ``machine.version``), spec §1.3.
    batch_size : int
        Entries per ``Machine.fold`` call (one engine round trip each).

    Returns
    -------
    ReplayResult

    Raises
    ------
    EntryValidationError
        The log breaks §1.2/§1.3 (validated by :func:`agentscope.log.validate.validate_entries`),
        or it is empty ("Cannot replay an empty event log; …").
    MachineVersionMismatchError
        An entry targets another machine id or version (the bridge init is exempt).
    ReplayDivergenceError
        At the **first** entry whose recomputed hash differs (``kind="state"``, with
        ``expected``/``actual``) or, in strict mode, that has no hash
        (``kind="missing-verification"``).
    EngineError
        The engine failed; the exception's notes name the entry.

    Examples
    --------
    >>> import agentscope as asc
    >>> from agentscope.examples import example_path
    >>> from agentscope.examples.python_machines import triage_machine
    >>> log = asc.read_log(example_path("g_triage.sqlite"), thread="main")
    >>> asc.replay(triage_machine(), log)
    ReplayResult(length=91, state_hash='5b6a2cd9', status='done', value='closed')
    >>> asc.replay(triage_machine(), log[:46]).state_hash  # the state after entry 45
    '0d9e8cde'
    """
    from agentscope.hashing import state_hash  # here: ``import agentscope`` binds replay, cheaply

    if verify not in (True, False, "strict"):
        raise ValueError(f"verify must be True, False or 'strict'; got {verify!r}")
    entries = as_log(entries)
    ents = entries_of(entries)
    source = source_of(entries)
    version = machine_version or machine.version
    # validate once: a validated EventLog is checked for the machine's identity only
    found = read_findings(entries)
    if found is None:
        for problem in log_problems(ents, machine_id=machine.machine_id, machine_version=version,
                                    source=source):
            raise problem
    elif ents:
        no_init = no_init_problem(ents[0], 0, source=source)  # e.g. a slice log[a:b], a > 0
        for i, entry in enumerate(ents):
            if i in found:
                raise found[i][0]
            if i == 0 and no_init is not None:
                raise no_init
            if entry.get("machineId") == machine.machine_id and entry.get("machineVersion") == version:
                continue  # targets this machine (what identity_problem concludes first)
            bad = identity_problem(entry, i, machine.machine_id, version)
            if bad is not None:
                bad.source = source
                raise bad
    if not ents:
        raise LogFormatError(
            "Cannot replay an empty event log; it must start with a '@agent.init' entry.",
            source=source,
        )
    last: Snapshot | None = None
    last_i = -1
    for i, snap in fold_segment(machine, ents, 0, len(ents), batch=batch_size):
        last, last_i = snap, i
        if verify is False:
            continue
        entry = ents[i]
        rec = recorded_hash(entry)
        if rec is None:
            if verify == "strict":
                raise ReplayDivergenceError(entry_id(entry), i, ProblemKind.MISSING_VERIFICATION)
            continue
        actual = state_hash(machine.persist(snap))
        if actual != rec:
            raise ReplayDivergenceError(entry_id(entry), i, "state", rec, actual)
    assert last is not None
    persisted = machine.persist(last)
    return ReplayResult(last, persisted, state_hash(persisted), last_i + 1)



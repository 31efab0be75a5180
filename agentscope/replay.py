"""Replay an event log as a pure fold, verify it, and seek anywhere in it (spec §4).

- :func:`replay` is the reference fold of spec §4.1, raising at the first divergence;
  ``replay(machine, log[:n])`` is time travel.
- :func:`verify` folds once and reports **every** problem (a :class:`VerifyReport`), with the
  known benign causes of a hash mismatch tried and named.
- :class:`Timeline` gives random access to any step (``timeline[n] -> Frame``) through
  checkpoints, without replaying from 0.
- :func:`apply_entry` is the fold's step.

Everything here is engine-agnostic: it uses only the :class:`~agentscope.engines.base.Machine`
protocol (``initial``, ``restore``, ``fold``, ``persist``), so the Node/XState engine and the
Python statechart engine replay the same way.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from agentscope._replay_core import (
    DEFAULT_BATCH,
    as_log,
    basic_validate,
    entries_of,
    fold_segment,
    load_validators,
    recorded_hash,
    source_of,
)
from agentscope._replay_core import apply_entry as apply_entry
from agentscope._replay_index import build_index, check_machines
from agentscope._replay_report import VerifyReport, report_from_index
from agentscope._replay_timeline import Timeline
from agentscope.engines.base import Machine, Snapshot
from agentscope.errors import LogFormatError, ReplayDivergenceError
from agentscope.hashing import state_hash

__all__ = ["ReplayResult", "Timeline", "VerifyReport", "apply_entry", "replay", "verify"]

VerifyMode = bool | Literal["strict"]


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
    """
    if verify not in (True, False, "strict"):
        raise ValueError(f"verify must be True, False or 'strict'; got {verify!r}")
    entries = as_log(entries)
    ents = entries_of(entries)
    source = source_of(entries)
    version = machine_version or machine.version
    validate_entries, _ = load_validators()
    if validate_entries is not None:
        validate_entries(
            ents, machine_id=machine.machine_id, machine_version=version, source=source
        )
    else:
        basic_validate(ents, machine_id=machine.machine_id, machine_version=version, source=source)
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
                raise ReplayDivergenceError(str(entry.get("id", "")), i, "missing-verification")
            continue
        actual = state_hash(machine.persist(snap))
        if actual != rec:
            raise ReplayDivergenceError(str(entry.get("id", "")), i, "state", rec, actual)
    assert last is not None
    persisted = machine.persist(last)
    return ReplayResult(last, persisted, state_hash(persisted), last_i + 1)


def verify(
    machine: Machine | None,
    log: Any,
    *,
    machines: Mapping[str, Machine] | None = None,
    strict: bool = False,
    machine_version: str | None = None,
    explain: bool = True,
    batch_size: int = DEFAULT_BATCH,
) -> VerifyReport:
    """Fold a log once and report every problem, not only the first (spec §4.1, §4.2).

    Parameters
    ----------
    machine : Machine or None
        The engine for the log; may be ``None`` when ``machines`` covers every segment.
    log : EventLog or Sequence[Mapping]
        A log, possibly several ``@agent.init`` segments (a version bridge, spec §1.5: a v2 log
        starts with a bridge init carrying ``snapshot`` and ``metadata.migratedFrom``; the lineage
        v1 + v2 is replayed segment by segment, and the bridge may restart its indices at 0).
        ``log.cached_snapshot`` (an ``agentMeta``-stamped persisted snapshot,
        §4.2), when present, is checked against the log.
    machines : Mapping[str, Machine], optional
        Machines by ``machineVersion``: each segment replays with the machine for its version.
        A segment with no machine is reported (``log_problems`` kind ``no-machine``).
    strict : bool
        Count entries without ``verification.stateHash`` as failures.
    machine_version : str, optional
        Expected version for ``machine`` (default ``machine.version``).
    explain : bool
        Try the benign causes of each hash mismatch (older hash variant 8b7f21a0, a pending
        ``after`` timer's live ``startedAt``, a live ``Error``); a confirmed one gives verdict
        ``explained``, anything else stays ``mismatch`` with what was tried.
    batch_size : int
        Entries per ``Machine.fold`` call.

    Returns
    -------
    VerifyReport
        ``.df`` one row per entry, ``.mismatches``, ``.first_mismatch``, ``.ok``,
        ``.summary()``, ``.raise_if_failed()``. Never raises for problems in the log; a later
        segment that restarts its indices at 0 without being a version bridge (a concatenation
        of unrelated logs) is such a problem (§1.3, ``non-contiguous``), though it still replays.

    Raises
    ------
    TypeError
        ``machines`` is not a mapping of version -> :class:`Machine` (names the bad key).
    """
    check_machines(machines)
    if machine is None and not machines:
        raise ValueError("verify needs a machine, or machines={version: machine}")
    log = as_log(log)
    ents = entries_of(log)
    cached = getattr(log, "cached_snapshot", None)
    idx = build_index(
        ents,
        machine=machine,
        machines=machines,
        machine_version=machine_version,
        strict=strict,
        checkpoint_every=None,
        batch=batch_size,
        explain=explain,
        cached_snapshot=cached if isinstance(cached, Mapping) else None,
        source=source_of(log),
    )
    return report_from_index(idx, ents)

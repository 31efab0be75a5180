"""What-if replay: the recorded history under a **changed** machine, and where behaviour changes.

A consumer of the one verifying pass (:class:`agentscope.pipeline.Timeline`, spec §4.1): it folds
nothing itself. Each thread is replayed with the new machine and compared, entry by entry, with

- the recorded ``verification.stateHash`` (no ``baseline``), with the benign explanations
  :func:`agentscope.pipeline.verify` applies (a live-only timer ``startedAt``, the older hash
  variant, a live ``Error``): a mismatch verify explains is what the recorded run itself already
  shows, not a behaviour change; or
- the ``baseline`` machine's replay of the same entries (for logs without hashes, or to see the
  recorded side's state at the divergence).

Version-bridged logs (spec §1.5) replay each segment with the machine for its version; a bridge
init whose snapshot the new machine cannot restore is reported (``kind="cannot-restore"``).

:func:`whatif` returns a :class:`WhatIf` value (``.df``, ``_repr_html_``, ``.view()`` for a
``ForkView`` of recorded vs new at the divergence). Over a store it uses the same
``concurrent.futures.Executor`` seam as :func:`agentscope.bulk.verify_store`.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import Executor
from dataclasses import dataclass, field, replace
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from agentscope.engines.base import Machine
from agentscope.errors import (
    AgentscopeError,
    EngineError,
    LogFormatError,
    MachineLoadError,
    SnapshotRestoreError,
)
from agentscope.frames import Frame
from agentscope.jsondiff import Change, diff_json
from agentscope.log.problems import ProblemKind

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

    from agentscope.bulk import ChunkFailure, MachineSpec
    from agentscope.pipeline import Timeline, VerifyReport
    from agentscope.widgets import ForkView

__all__ = ["WHATIF_COLUMNS", "ThreadWhatIf", "WhatIf", "WhatIfKind", "fork_at", "whatif"]

WhatIfKind = Literal["identical", "diverges", "cannot-restore", "unchecked", "error"]
"""Per-thread outcome: ``identical`` (every compared entry replays the same), ``diverges`` (a
behaviour change at :attr:`ThreadWhatIf.first_divergence`), ``cannot-restore`` (the new machine
fails to restore a version-bridge snapshot, spec §1.5), ``unchecked`` (nothing to compare with: no
recorded hashes and no baseline), ``error`` (the thread cannot be read, or is for another machine
id)."""

WHATIF_COLUMNS: tuple[str, ...] = ("thread", "entries", "first_divergence", "kind", "detail")
"""Columns of :attr:`WhatIf.df`."""

_BEHAVIOUR_KEYS = ("status", "value", "context", "children", "timers", "output", "error",
                   "historyValue")
_HTML_ROWS = 50
_CELL = 100

MachineLike = Any
"""A live :class:`Machine`, a :class:`~agentscope.bulk.MachineSpec` or its text form."""


def _behaviour(p: Mapping[str, Any] | None) -> dict[str, Any]:
    """The persisted-snapshot members that are behaviour (not bookkeeping or version stamps)."""
    if p is None:
        return {}
    return {k: p[k] for k in _BEHAVIOUR_KEYS if k in p}


def _short(value: Any, limit: int = _CELL) -> str:
    import orjson

    try:
        text = orjson.dumps(value).decode()
    except (TypeError, orjson.JSONEncodeError):
        text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


# ---------------------------------------------------------------------------------------------
# Results


@dataclass(frozen=True)
class ThreadWhatIf:
    """What-if outcome for one log (one thread of a store).

    Attributes
    ----------
    thread : str | None
        The thread id (``None`` for a single log).
    entries : int
        Entries in the log.
    kind : WhatIfKind
    first_divergence : int | None
        Index of the first entry whose state under the new machine differs from the recorded
        hash (or from the baseline's replay), or where the new machine fails.
    detail : str
        One human line: what differs there, or why the thread is identical / unchecked.
    event_id, event_type : str | None
        The entry at the divergence.
    recorded_hash, new_hash : str | None
        The recorded (or baseline-replayed) and the new state hash at the divergence (spec §2).
    before : Frame | None
        The new machine's frame just before the divergence (where both sides still agree).
    recorded : Frame | None
        The recorded side at the divergence: the baseline's frame; without a baseline, the
        recorded state is known only by its hash unless the recorded run ignored the event (its
        hash repeats the previous one), in which case it is ``before``'s state.
    new : Frame | None
        The new machine's frame at the divergence.
    changes : tuple[Change, ...]
        Structural diff recorded -> new at the divergence over ``value``, ``context``,
        ``children``, ``timers``, ``status``, ``output``, ``error`` (JSON Pointer paths), when the
        recorded state is known; else the new machine's own changes there (``before -> new``).
    changes_vs : {"recorded", "before"}
        What :attr:`changes` compares the new state with.
    ignored : tuple[int, ...]
        Entries from the divergence on that the recorded run reacted to and the new machine
        ignores (its state does not change).
    newly_handled : tuple[int, ...]
        Entries from the divergence on that the recorded run ignored and the new machine reacts to.
    explained : int
        Recorded-hash differences that verify explains as benign (not behaviour changes).
    compared : int
        Entries compared (with a recorded hash, or replayed by both machines).
    problems : tuple[str, ...]
        Segment-level notes (a segment the new machine cannot restore, a log problem).
    timelines : (Timeline | None, Timeline) | None
        The baseline's (``None`` without one) and the new machine's timelines of this log, kept
        for the thread :meth:`WhatIf.view` opens by default when the what-if ran in this process
        (so the view folds nothing again); ``None`` otherwise (a worker's result, another thread).
    """

    thread: str | None
    entries: int
    kind: WhatIfKind
    first_divergence: int | None = None
    detail: str = ""
    event_id: str | None = None
    event_type: str | None = None
    recorded_hash: str | None = None
    new_hash: str | None = None
    before: Frame | None = field(default=None, repr=False)
    recorded: Frame | None = field(default=None, repr=False)
    new: Frame | None = field(default=None, repr=False)
    changes: tuple[Change, ...] = field(default=(), repr=False)
    changes_vs: Literal["recorded", "before"] = "recorded"
    ignored: tuple[int, ...] = ()
    newly_handled: tuple[int, ...] = ()
    explained: int = 0
    compared: int = 0
    problems: tuple[str, ...] = ()
    timelines: tuple[Any, Any] | None = field(default=None, repr=False, compare=False)

    @property
    def diverges(self) -> bool:
        return self.kind in ("diverges", "cannot-restore")


@dataclass(frozen=True, eq=False)
class WhatIf:
    """The what-if replay of one log or every thread of a store under a changed machine.

    Attributes
    ----------
    threads : tuple[ThreadWhatIf, ...]
        One result per log, in store order.
    machine : str
        Name of the new machine (its spec, or file, id and version).
    baseline : str
        Name of the baseline machine, ``"recorded hashes"`` without one.
    _source : Any
        Internal: what was replayed (a store path, a mapping or a log), for :meth:`view`.
    _machines : tuple
        Internal: ``(machine, machines, baseline, baseline_machines)`` as given, for :meth:`view`.

    Examples
    --------
    >>> import agentscope as asc
    >>> from agentscope.examples import example_path
    >>> from agentscope.examples.python_machines import triage_machine
    >>> result = asc.whatif(example_path("g_triage.sqlite"), triage_machine())
    >>> result.identical, len(result), result.baseline
    (True, 3, 'recorded hashes')
    >>> result["fork"].kind, result["fork"].entries, result["fork"].first_divergence
    ('identical', 52, None)
    """

    threads: tuple[ThreadWhatIf, ...]
    machine: str
    baseline: str = "recorded hashes"
    _source: Any = field(default=None, repr=False)
    _machines: tuple[Any, Any, Any, Any] = field(default=(None, None, None, None), repr=False)

    @property
    def identical(self) -> bool:
        """Whether every thread replays identically (``unchecked`` threads are not identical)."""
        return all(t.kind == "identical" for t in self.threads)

    @property
    def diverged(self) -> tuple[ThreadWhatIf, ...]:
        """The threads whose behaviour changes."""
        return tuple(t for t in self.threads if t.diverges)

    @cached_property
    def df(self) -> pd.DataFrame:
        """One row per thread: ``thread`` (str), ``entries`` (int), ``first_divergence``
        (nullable Int64), ``kind`` (str), ``detail`` (str)."""
        import pandas as pd

        rows = [(t.thread, t.entries, t.first_divergence, t.kind, t.detail) for t in self.threads]
        df = pd.DataFrame(rows, columns=list(WHATIF_COLUMNS))
        return df.astype({"thread": "string", "entries": "int64", "first_divergence": "Int64",
                          "kind": "string", "detail": "string"})

    def __getitem__(self, thread: str | int) -> ThreadWhatIf:
        if isinstance(thread, int):
            return self.threads[thread]
        for t in self.threads:
            if t.thread == thread:
                return t
        raise KeyError(f"no thread {thread!r}; threads: {[t.thread for t in self.threads]}")

    def __len__(self) -> int:
        return len(self.threads)

    def summary(self) -> str:
        """One line: identical or how many threads diverge, and the first divergence."""
        n = len(self.threads)
        kinds: dict[str, int] = {}
        for t in self.threads:
            kinds[t.kind] = kinds.get(t.kind, 0) + 1
        counts = ", ".join(f"{v} {k}" for k, v in kinds.items())
        head = "identical" if self.identical else "behaviour changes"
        line = f"{head}: {n} thread(s) under {self.machine} vs {self.baseline} ({counts})"
        first = next((t for t in self.threads if t.diverges), None)
        if first is not None:
            where = f"thread {first.thread!r} " if first.thread is not None else ""
            line += f"; first: {where}at entry {first.first_divergence}: {first.detail}"
        return line

    def __repr__(self) -> str:
        return f"<WhatIf {self.summary()}>"

    def _repr_html_(self) -> str:
        """The summary, one row per thread and each diverging thread's changed paths, drawn
        (escaped and bounded) by :func:`agentscope.render.reprs.repr_html`."""
        from agentscope.render.reprs import Bold, Para, Table, guarded

        def build() -> list[Any]:
            blocks: list[Any] = [Para(Bold(self.summary()))]
            blocks.append(Table.of(self.df, limit=_HTML_ROWS, noun="threads"))
            for t in self.threads[:_HTML_ROWS]:
                if not t.changes:
                    continue
                name = str(t.thread) if t.thread is not None else "log"
                other = "recorded" if t.changes_vs == "recorded" else "before"
                blocks.append(f"{name}, entry {t.first_divergence} ({t.event_type}): state {other} → new")
                blocks.append(Table(
                    ["path", other, "new"],
                    [[c.path or "(root)", _short(c.left), _short(c.right)] for c in t.changes[:20]],
                    more=max(len(t.changes) - 20, 0), noun="changed paths",
                ))
            return blocks

        return guarded(self, "whatif", build)

    # -- the side-by-side view ----------------------------------------------------------------

    def view(self, thread: str | int | None = None) -> ForkView:
        """A :class:`~agentscope.widgets.ForkView` of the recorded run (the baseline's replay, or
        the recorded hashes only) and the new machine's replay of the same entries, with the
        slider at the first divergence.

        ``thread`` defaults to the first thread that diverges (else the first). The what-if's own
        timelines of that thread are reused when it ran in this process
        (:attr:`ThreadWhatIf.timelines`: no entry is folded again); otherwise both timelines are
        rebuilt here (loading the machines from their specs when the what-if ran on workers).
        """
        from agentscope.pipeline import Timeline
        from agentscope.widgets import ForkView

        if thread is None:
            chosen = next((t for t in self.threads if t.diverges), self.threads[0])
        else:
            chosen = self[thread]
        new_m, new_extra, base_m, base_extra = (_live(x) for x in self._machines)
        assert new_m is not None
        if chosen.timelines is not None:
            kept_base, new_tl = chosen.timelines
            log = new_tl.log
            rec_tl = kept_base if kept_base is not None else Timeline(None, log)
        else:
            log = _load_log(self._source, chosen.thread)
            new_tl = Timeline(new_m, log, machines=_by_version(log, new_m, new_extra))
            rec_tl = (
                Timeline(base_m, log, machines=_by_version(log, base_m, base_extra))
                if base_m is not None else Timeline(None, log)
            )
        view = ForkView(
            base_m or new_m, log, log, names=("recorded", "new"), timelines=(rec_tl, new_tl),
            divergence=chosen.first_divergence, kind="behaviour change",
        )
        if chosen.first_divergence is not None:
            view.go(chosen.first_divergence)
        return view


# ---------------------------------------------------------------------------------------------
# One log


def _by_version(log: Any, machine: Machine, extra: Mapping[str, Machine] | None) -> dict[str, Machine]:
    """Machines by ``machineVersion``: ``machine`` for every version the log names, except those
    ``extra`` names (spec §1.5: each segment replays with the machine for its version)."""
    ents = log.entries if hasattr(log, "entries") else log
    out: dict[str, Machine] = {}
    for e in ents:
        v = e.get("machineVersion") if isinstance(e, Mapping) else None
        if isinstance(v, str) and v not in out:
            out[v] = machine
    if extra:
        out.update(extra)
    return out


def _only_version_stamp(p: Mapping[str, Any] | None, entry: Mapping[str, Any], rec: str | None) -> bool:
    """Whether ``p`` hashes to the recorded ``rec`` once its version stamps (``version`` and
    ``machine.version``, persisted by a machine declared with a ``version``, spec §3) carry the
    entry's recorded ``machineVersion``: a changed machine with a bumped version is not a
    behaviour change by that alone."""
    from agentscope.hashing import state_hash

    v = entry.get("machineVersion")
    if p is None or rec is None or not isinstance(v, str):
        return False
    if "version" not in p and not isinstance(p.get("machine"), Mapping):
        return False
    q = dict(p)
    if "version" in q:
        q["version"] = v
    if isinstance(q.get("machine"), Mapping):
        q["machine"] = {**q["machine"], "version": v}
    return q != p and state_hash(q) == rec


def _recorded_ignored(rec: Sequence[Any], seg: Sequence[Any]) -> list[bool | None]:
    """Whether the recorded run ignored each entry (its hash repeats the previous entry's in the
    same segment); ``None`` when a hash is missing."""
    out: list[bool | None] = [None] * len(rec)
    for i in range(1, len(rec)):
        a, b = rec[i - 1], rec[i]
        if isinstance(a, str) and isinstance(b, str) and seg[i] == seg[i - 1]:
            out[i] = a == b
    return out


def _engine_failure(report: VerifyReport) -> tuple[int, str] | None:
    """The first entry with an ``engine-error`` problem, and all its problems as one line."""
    p = report.problems
    hit = p[p["kind"] == ProblemKind.ENGINE_ERROR]
    if hit.empty:
        return None
    i = int(hit["index"].iloc[0])
    return i, "; ".join(report.problems_of(i))


_IDENTITY = (ProblemKind.MACHINE_MISMATCH, ProblemKind.INVALID_ENTRY, ProblemKind.NO_INIT,
             ProblemKind.NON_CONTIGUOUS)


def _identity_failure(report: VerifyReport) -> tuple[int, str] | None:
    """The first entry whose first problem says it is not this machine's or not a valid entry
    of the log, and all its problems as one line."""
    df = report.df
    for i, kind in zip(df["index"].tolist(), df["kind"].tolist(), strict=True):
        if kind in _IDENTITY:
            return int(i), "; ".join(report.problems_of(int(i)))
    return None


def whatif_log(
    log: Any,
    machine: Machine,
    *,
    baseline: Machine | None = None,
    machines: Mapping[str, Machine] | None = None,
    baseline_machines: Mapping[str, Machine] | None = None,
    thread: str | None = None,
    keep_timelines: bool = False,
) -> ThreadWhatIf:
    """What-if of one log (see :func:`whatif`); ``thread`` only labels the result.

    ``keep_timelines=True`` keeps the baseline's and the new machine's timelines on the result
    (:attr:`ThreadWhatIf.timelines`, for :meth:`WhatIf.view`).
    """
    held: list[Any] = []
    result = _whatif_log(log, machine, baseline, machines, baseline_machines, thread, held)
    if keep_timelines and len(held) == 2:
        return replace(result, timelines=(held[0], held[1]))
    return result


def _whatif_log(
    log: Any,
    machine: Machine,
    baseline: Machine | None,
    machines: Mapping[str, Machine] | None,
    baseline_machines: Mapping[str, Machine] | None,
    thread: str | None,
    held: list[Any],
) -> ThreadWhatIf:
    """:func:`whatif_log`'s work; ``held`` gets the baseline's timeline (or ``None``) and the new
    machine's once both replays ran."""
    from agentscope.pipeline import Timeline

    n = len(log)
    if n == 0:
        return ThreadWhatIf(thread, 0, "error", detail="empty log")
    try:
        new_tl = Timeline(machine, log, machines=_by_version(log, machine, machines))
    except SnapshotRestoreError as exc:  # the log's first snapshot names what the machine lacks
        return _cannot_restore(log, thread, exc)
    new_df = new_tl.report.df
    base_tl: Timeline | None = None
    if baseline is not None:
        try:
            base_tl = Timeline(baseline, log, machines=_by_version(log, baseline, baseline_machines))
        except SnapshotRestoreError as exc:
            return ThreadWhatIf(thread, n, "error", detail=(
                f"the baseline cannot restore the snapshot of entry {exc.index or 0}: {exc.detail}"))
    held.extend((base_tl, new_tl))
    bad = _identity_failure(new_tl.report)
    if bad is not None:
        return ThreadWhatIf(thread, n, "error", detail=f"entry {bad[0]}: {bad[1]}")
    whole = new_tl.report.problems
    whole = whole[whole["index"].isna() & (whole["kind"] != ProblemKind.CACHE_STALE)]
    problems = tuple(f"{k}: {d}" for k, d in zip(whole["kind"], whole["message"], strict=True))
    seg = new_df["segment"].tolist()
    new_hash: list[str | None] = new_df["computed_hash"].tolist()
    new_ign = [bool(x) for x in new_df["ignored"].tolist()]
    verdicts = [str(v) for v in new_df["verdict"].tolist()]
    explained = sum(v == "explained" for v in verdicts)

    if base_tl is None:
        rec_hash: list[str | None] = new_df["recorded_hash"].tolist()
        rec_ign = _recorded_ignored(rec_hash, seg)
        differs = [v == "mismatch" for v in verdicts]
        compared = sum(v in ("verified", "explained", "mismatch") for v in verdicts)
    else:
        base_df = base_tl.report.df
        bfail = _identity_failure(base_tl.report) or _engine_failure(base_tl.report)
        if bfail is not None:
            return ThreadWhatIf(thread, n, "error",
                                detail=f"the baseline cannot replay entry {bfail[0]}: {bfail[1]}")
        rec_hash = base_df["computed_hash"].tolist()
        rec_ign = [bool(x) for x in base_df["ignored"].tolist()]
        differs = [a is not None and b is not None and a != b for a, b in zip(rec_hash, new_hash,
                                                                              strict=True)]
        compared = sum(a is not None and b is not None for a, b in zip(rec_hash, new_hash,
                                                                        strict=True))
        explained = 0

    fail = _engine_failure(new_tl.report)
    k: int | None = None
    stamped = 0
    changes: tuple[Change, ...] = ()
    for i in (i for i, d in enumerate(differs) if d):
        if fail is not None and i >= fail[0]:
            break
        if base_tl is not None:
            # two replays can differ only in version stamps (a machine with an explicit
            # ``version`` persists it, spec §3): the first index whose behaviour differs counts
            changes = tuple(diff_json(_behaviour(base_tl[i].persisted),
                                      _behaviour(new_tl[i].persisted)))
            if changes:
                k = i
                break
        elif not _only_version_stamp(new_tl[i].persisted, _entry(log, i), rec_hash[i]):
            k = i
            break
        stamped += 1
    if fail is not None and (k is None or fail[0] <= k):
        i, reason = fail
        at_seg_start = i == 0 or seg[i] != seg[i - 1]
        kind: WhatIfKind = "cannot-restore" if at_seg_start and i > 0 else "diverges"
        if i == 0 and _is_snapshot_init(log, 0):
            kind = "cannot-restore"
        what = ("the new machine cannot restore segment "
                f"{seg[i]}'s snapshot" if kind == "cannot-restore" else "the new machine fails")
        e = _entry(log, i)
        return ThreadWhatIf(
            thread, n, kind, i, f"{what} at entry {i}: {reason}", str(e.get("id", "")),
            _etype(e), rec_hash[i], None, new_tl[i - 1] if i > 0 and seg[i] == seg[i - 1] else None,
            base_tl[i] if base_tl is not None else None, None, (), "recorded", (), (),
            explained, compared, (*problems, f"{what} at entry {i}"),
        )
    if k is None:
        if compared == 0:
            return ThreadWhatIf(thread, n, "unchecked", detail=(
                "nothing to compare: no entry has a recorded verification hash; pass a baseline "
                "machine"), compared=0, problems=problems)
        text = f"{compared} entries replay the same"
        if stamped:
            text += f" ({stamped} differ only in the machine's version stamp)"
        if explained:
            text += f" ({explained} recorded-hash differences are benign: {_first_explanation(new_df)})"
        return ThreadWhatIf(thread, n, "identical", detail=text, explained=explained,
                            compared=compared, problems=problems)

    before = new_tl[k - 1] if k > 0 and seg[k] == seg[k - 1] else None
    new_f = new_tl[k]
    recorded: Frame | None = base_tl[k] if base_tl is not None else None
    vs: Literal["recorded", "before"] = "recorded"
    if base_tl is None:
        if rec_ign[k] and before is not None:
            recorded = Frame(index=k, entry=new_f.entry, persisted=before.persisted,
                             recorded_hash=rec_hash[k], computed_hash=rec_hash[k])
        if recorded is not None and recorded.persisted is not None:
            changes = tuple(diff_json(_behaviour(recorded.persisted), _behaviour(new_f.persisted)))
        else:
            vs = "before"
            changes = tuple(diff_json(_behaviour(before.persisted if before else None),
                                      _behaviour(new_f.persisted)))
    ignored = tuple(i for i in range(k, n) if new_ign[i] and rec_ign[i] is False)
    newly = tuple(i for i in range(k, n) if rec_ign[i] is True and not new_ign[i]
                  and new_hash[i] is not None)
    e = new_f.entry
    detail = _divergence_detail(k, e, rec_hash[k], new_hash[k], changes, vs, rec_ign[k],
                                new_ign[k], ignored, newly,
                                against="recorded" if base_tl is None else "baseline")
    return ThreadWhatIf(
        thread, n, "diverges", k, detail, str(e.get("id", "")), _etype(e), rec_hash[k],
        new_hash[k], before, recorded, new_f, changes, vs, ignored, newly, explained, compared,
        problems,
    )


def _cannot_restore(log: Any, thread: str | None, exc: SnapshotRestoreError) -> ThreadWhatIf:
    """The result of a log whose snapshot init (entry ``exc.index``, 0 for a log's own init) the
    new machine cannot restore: ``kind="cannot-restore"`` there, with the engine's reason."""
    from agentscope.log.entry import entry_id, recorded_hash

    i = exc.index or 0
    e = _entry(log, i)
    what = f"the new machine cannot restore the snapshot of entry {i}"
    return ThreadWhatIf(thread, len(log), "cannot-restore", i, f"{what}: {exc.detail}",
                        entry_id(e), _etype(e), recorded_hash(e), problems=(what,))


def _entry(log: Any, i: int) -> Mapping[str, Any]:
    e = log[i]
    return e if isinstance(e, Mapping) else {}


def _etype(e: Mapping[str, Any]) -> str | None:
    ev = e.get("event")
    t = ev.get("type") if isinstance(ev, Mapping) else None
    return t if isinstance(t, str) else None


def _is_snapshot_init(log: Any, i: int) -> bool:
    ev = _entry(log, i).get("event")
    return isinstance(ev, Mapping) and "snapshot" in ev


def _first_explanation(df: Any) -> str:
    for v, ex in zip(df["verdict"].tolist(), df["explanation"].tolist(), strict=True):
        if str(v) == "explained" and isinstance(ex, str):
            return ex.split(";")[0]
    return ""


def _divergence_detail(
    k: int,
    e: Mapping[str, Any],
    rec: str | None,
    new: str | None,
    changes: Sequence[Change],
    vs: str,
    recorded_ignored: bool | None,
    new_ignored: bool,
    ignored: Sequence[int],
    newly: Sequence[int],
    *,
    against: Literal["recorded", "baseline"],
) -> str:
    """One line on the divergence at ``k``; ``against`` names the side the new machine is compared
    with: the recorded run (its hashes) or the baseline machine's replay."""
    what = f"{_etype(e)!r} ({e.get('id')})"
    if new_ignored and recorded_ignored is False:
        how = "the new machine ignores it"
    elif recorded_ignored and not new_ignored:
        how = "the recorded run ignored it, the new machine reacts"
    else:
        how = "handled differently"
    text = f"{what}: {how}; state {rec} -> {new}"
    paths = [c.path for c in changes[:4]]
    if paths:
        label = f"vs {against}" if vs == "recorded" else "(new machine's own changes)"
        text += f"; {label}: " + ", ".join(paths) + (f" (+{len(changes) - 4})" if len(changes) > 4 else "")
    if ignored:
        text += f"; {len(ignored)} event(s) from here on ignored by the new machine"
    if newly:
        text += f"; {len(newly)} event(s) newly handled"
    return text


# ---------------------------------------------------------------------------------------------
# Sources: one log, a mapping of logs, or a store


def _load_log(source: Any, thread: str | None) -> Any:
    if isinstance(source, Mapping):
        return source[thread]
    if isinstance(source, str | os.PathLike):
        from agentscope.stores import read_log

        return read_log(source, thread=thread)
    return source


def _live(m: Any) -> Any:
    """A live machine from a machine, a spec, or a mapping of either (loaded in this process)."""
    from agentscope.bulk import as_spec, worker_machine

    if m is None or isinstance(m, Machine):
        return m
    if isinstance(m, Mapping):
        return {str(v): _live(x) for v, x in m.items()}
    return worker_machine(as_spec(m))


def _name(m: Any) -> str:
    from agentscope.bulk import as_spec

    if m is None:
        return "recorded hashes"
    if isinstance(m, Machine):
        where = getattr(m, "path", None)
        label = Path(str(where)).name if where else type(m).__name__
        return f"{label} ({m.machine_id!r}, version {m.version!r})"
    return str(as_spec(m))


@dataclass(frozen=True, slots=True)
class _Chunk:
    """Some threads of one store for one worker (plain, picklable data)."""

    store: str
    threads: tuple[str, ...]
    machine: MachineSpec
    machines: tuple[tuple[str, MachineSpec], ...]
    baseline: MachineSpec | None
    baseline_machines: tuple[tuple[str, MachineSpec], ...]


def _whatif_chunk(chunk: _Chunk) -> list[ThreadWhatIf] | ChunkFailure:
    """Worker side: the what-if of each thread of ``chunk`` (machines loaded once per worker)."""
    from agentscope.bulk import ChunkFailure, worker_machine
    from agentscope.stores import read_log

    try:
        new = worker_machine(chunk.machine)
        extra = {v: worker_machine(s) for v, s in chunk.machines} or None
        base = worker_machine(chunk.baseline) if chunk.baseline is not None else None
        bextra = {v: worker_machine(s) for v, s in chunk.baseline_machines} or None
    except AgentscopeError as exc:
        return ChunkFailure(type(exc).__name__, str(exc))
    out: list[ThreadWhatIf] = []
    for thread in chunk.threads:
        try:
            log = read_log(chunk.store, thread=thread)
            out.append(whatif_log(log, new, baseline=base, machines=extra, baseline_machines=bextra,
                                  thread=thread))
        except EngineError as exc:
            return ChunkFailure(type(exc).__name__, f"thread {thread!r}: {exc}")
        except AgentscopeError as exc:
            out.append(ThreadWhatIf(thread, 0, "error", detail=f"{type(exc).__name__}: {exc}"))
    return out


def _specs(m: Mapping[str, Any] | None) -> tuple[tuple[str, MachineSpec], ...]:
    from agentscope.bulk import as_spec

    return tuple((str(v), as_spec(s)) for v, s in (m or {}).items())


def whatif(
    log: Any,
    machine: MachineLike,
    *,
    baseline: MachineLike | None = None,
    machines: Mapping[str, Any] | None = None,
    baseline_machines: Mapping[str, Any] | None = None,
    threads: Iterable[str] | None = None,
    executor: Executor | None = None,
    max_workers: int | None = None,
    chunk_size: int | None = None,
) -> WhatIf:
    """Replay recorded history under a changed machine and report where behaviour changes.

    Parameters
    ----------
    log : EventLog | Sequence[Mapping] | Mapping[str, log] | path
        One log (an ``EventLog``, a list of entries, a JSON/JSONL path), a mapping of thread id
        to log, or a SQLite store path (spec §5.2): every thread (or ``threads``) is replayed.
        Nothing is written; entries are never modified.
    machine : Machine | MachineSpec | str
        The changed machine: a live engine (:func:`agentscope.load_machine` of the new
        ``.mjs``/``.ts``, a :class:`agentscope.StatechartMachine` of a Python config) or a spec
        (``"new/triage.mjs:triageMachine"``, ``"py:module:attr"``). It replays every segment
        whatever its recorded ``machineVersion`` (a changed machine usually has a new one),
        except those ``machines`` names. Its ``machineId`` must match the log's.
    baseline : Machine | MachineSpec | str, optional
        Compare with this machine's replay of the same entries instead of the recorded hashes
        (for logs without hashes, and to see the recorded side's state at the divergence).
    machines, baseline_machines : Mapping[str, Machine | spec], optional
        Machines by ``machineVersion`` for version-bridged logs (spec §1.5): a segment of such a
        version replays with that machine instead of ``machine`` (or ``baseline``).
    threads : iterable of str, optional
        For a store: only these threads.
    executor : concurrent.futures.Executor, optional
        For a store given machine *specs*: where to run (as :func:`agentscope.bulk.verify_store`;
        default a private process pool). With live machines a store is replayed in this process.
    max_workers, chunk_size : int, optional
        Pool size and threads per task, for a store.

    Returns
    -------
    WhatIf
        ``.df`` (one row per thread: ``thread``, ``entries``, ``first_divergence``, ``kind``,
        ``detail``), ``.identical``, ``[thread]`` -> :class:`ThreadWhatIf` (frames and
        structural diff at the divergence, events ignored / newly handled), ``.view()``.

    Raises
    ------
    TypeError
        ``machine`` is neither a machine nor a spec.
    MachineLoadError, EngineError
        A machine spec cannot load, or the engine fails outside the replay.
    LogFormatError, ThreadNotFoundError
        The log or store cannot be read.

    Notes
    -----
    Without a baseline a thread diverges at the first entry whose replayed hash differs from the
    recorded one and that :func:`agentscope.pipeline.verify` does not explain as benign (spec §4.1
    verdict ``mismatch``); ``explained`` entries are counted, not reported. A log that already
    fails verification with the machine that wrote it diverges there too: pass that machine as
    ``baseline`` to see only what the change does.

    Examples
    --------
    A changed machine: the triage twin where a draft may be rejected only once (the recorded one
    allows two rejections). Thread ``fork``, where a reviewer rejects twice, now diverges:

    >>> import copy
    >>> import agentscope as asc
    >>> from agentscope.examples import example_path
    >>> from agentscope.examples.python_machines import triage_machine
    >>> recorded = triage_machine()
    >>> config = copy.deepcopy(recorded.config)
    >>> review = config["states"]["working"]["states"]["awaitingAgent"]["states"]["reviewing"]
    >>> review["on"]["REJECT"]["guard"] = lambda context, event: context["rejections"] < 1
    >>> new = asc.StatechartMachine(config, actors=recorded.actors)
    >>> result = asc.whatif(example_path("g_triage.sqlite"), new)
    >>> result.df["kind"].tolist()
    ['diverges', 'identical', 'identical']
    >>> t = result["fork"]
    >>> t.first_divergence, t.event_type, t.ignored
    (20, 'REJECT', (20, 21, 29, 30, 42, 43))
    """
    from agentscope.bulk import MachineSpec

    if not isinstance(machine, Machine | MachineSpec | str | os.PathLike):
        raise TypeError(f"machine must be a Machine or a machine spec; got {type(machine).__name__}")
    holder = (machine, machines, baseline, baseline_machines)
    from agentscope.stores import holds_threads, open_store

    if holds_threads(log):
        store = os.fspath(log)
        with open_store(store) as opened:
            available = [t.thread_id for t in opened.threads()]
        wanted = available if threads is None else [str(t) for t in threads]
        missing = [t for t in wanted if t not in available]
        if missing:
            from agentscope.errors import ThreadNotFoundError

            raise ThreadNotFoundError(
                f"thread {missing[0]!r} is not in the store (threads: {', '.join(available) or 'none'})",
                source=store)
        live = any(isinstance(m, Machine) for m in (machine, baseline)) or any(
            isinstance(m, Machine) for mm in (machines, baseline_machines) for m in (mm or {}).values())
        if live:
            results = _serial(store, wanted, holder)
        else:
            results = _pooled(store, wanted, holder, executor, max_workers, chunk_size)
        return WhatIf(tuple(results), _name(machine), _name(baseline) if baseline else
                      "recorded hashes", store, holder)
    if isinstance(log, Mapping) and not _looks_like_entry(log):
        logs = {str(k): v for k, v in log.items()}
        results = _serial(logs, list(logs), holder)
        return WhatIf(tuple(results), _name(machine), _name(baseline) if baseline else
                      "recorded hashes", logs, holder)
    if isinstance(log, str | os.PathLike):
        from agentscope.stores import read_log

        log = read_log(log)
    new_m, extra, base_m, bextra = (_live(x) for x in holder)
    one = whatif_log(log, new_m, baseline=base_m, machines=extra, baseline_machines=bextra,
                     thread=getattr(log, "thread", None), keep_timelines=True)
    return WhatIf((one,), _name(machine), _name(baseline) if baseline else "recorded hashes",
                  log, holder)


def _looks_like_entry(m: Mapping[str, Any]) -> bool:
    return "event" in m and "index" in m


def _serial(source: Any, threads: Sequence[str], holder: tuple[Any, Any, Any, Any]) -> list[ThreadWhatIf]:
    """Each thread in this process. The timelines of the thread :meth:`WhatIf.view` opens by
    default (the first that diverges, else the first) are kept; the others' are let go (memory
    stays that of one thread's replay)."""
    new_m, extra, base_m, bextra = (_live(x) for x in holder)
    out: list[ThreadWhatIf] = []
    for t in threads:
        try:
            log = _load_log(source, t)
        except (LogFormatError, MachineLoadError) as exc:
            out.append(ThreadWhatIf(t, 0, "error", detail=f"{type(exc).__name__}: {exc}"))
            continue
        one = whatif_log(log, new_m, baseline=base_m, machines=extra, baseline_machines=bextra,
                         thread=t, keep_timelines=True)
        if one.timelines is not None:
            kept = [i for i, r in enumerate(out) if r.timelines is not None]
            if kept and (out[kept[0]].diverges or not one.diverges):
                one = replace(one, timelines=None)  # the default view is an earlier thread
            else:
                for i in kept:
                    out[i] = replace(out[i], timelines=None)
        out.append(one)
    return out


def _pooled(
    store: str,
    threads: Sequence[str],
    holder: tuple[Any, Any, Any, Any],
    executor: Executor | None,
    max_workers: int | None,
    chunk_size: int | None,
) -> list[ThreadWhatIf]:
    import math

    from agentscope.bulk import as_spec, default_workers, run_chunks

    machine, machines, baseline, baseline_machines = holder
    spec = as_spec(machine)
    base = as_spec(baseline) if baseline is not None else None
    workers = max_workers or default_workers()
    size = chunk_size or max(1, math.ceil(len(threads) / (4 * workers)))
    chunks = [
        _Chunk(store, tuple(threads[i : i + size]), spec, _specs(machines), base,
               _specs(baseline_machines))
        for i in range(0, len(threads), size)
    ]
    by_thread: dict[str | None, ThreadWhatIf] = {}
    for _chunk, result in run_chunks(_whatif_chunk, chunks, executor=executor, max_workers=workers,
                                     sizes=lambda c: len(c.threads)):
        for r in result:
            by_thread[r.thread] = r
    return [by_thread[t] for t in threads]


# ---------------------------------------------------------------------------------------------
# Edited-event what-if


def fork_at(
    timeline: Timeline,
    k: int,
    event: Mapping[str, Any],
    *,
    insert: bool = False,
    keep_rest: bool = True,
) -> Timeline:
    """Edited-event what-if: ``timeline.fork_at(k, event, ...)`` (see
    :meth:`agentscope.pipeline.Timeline.fork_at`): an in-memory fork with entry ``k``'s event
    replaced (or ``event`` inserted after ``k``), folded by the same machine(s)."""
    return timeline.fork_at(k, event, insert=insert, keep_rest=keep_rest)

"""``VerifyReport``: every problem one verifying pass found, as a DataFrame (spec §4.1, §4.2).

Private module: the public name is :class:`agentscope.pipeline.VerifyReport`.
"""

from __future__ import annotations

import heapq
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from agentscope.engines.base import Machine
from agentscope.errors import AgentscopeError, MachineVersionMismatchError
from agentscope.frames import Verdict
from agentscope.log.entry import entries_of, entry_ids, event_types, source_of
from agentscope.log.problems import FAILS_THE_LOG, problems_frame
from agentscope.log.validate import is_validated, read_findings, set_aside
from agentscope.pipeline.fold import DEFAULT_BATCH
from agentscope.pipeline.onepass import VERDICTS, LogIndex, build_index, check_machines
from agentscope.pipeline.segments import as_log

__all__ = ["COLUMNS", "VerifyReport", "report_from_index", "source_positions", "verify"]

COLUMNS = (
    "index",
    "segment",
    "id",
    "event_type",
    "recorded_hash",
    "computed_hash",
    "verdict",
    "kind",
    "explanation",
    "ignored",
    "failed",
)
_HTML_ROWS = 20


@dataclass(frozen=True)
class VerifyReport:
    """Everything one verifying fold found, one row per entry.

    Attributes
    ----------
    df : pandas.DataFrame
        One row per entry, in log order (the frame's own index: the position in the given
        sequence), columns ``index`` (the entry's position in the source,
        :attr:`EventLog.positions`: the same number as in every problems table),
        ``segment`` (0-based ``@agent.init`` segment), ``id``, ``event_type``,
        ``recorded_hash`` / ``computed_hash`` (8 hex digits or ``None``), ``verdict`` (a
        :class:`~agentscope.frames.Verdict` value), ``kind`` (the
        :class:`~agentscope.log.problems.ProblemKind` code of the entry's first problem, or
        ``None``; every problem of the entry is a row of :attr:`problems`), ``explanation`` (for a
        hash mismatch: the benign cause confirmed,
        or every cause tried), ``ignored`` (the state did not react: the persisted snapshot
        equals the previous one) and ``failed`` (the row makes the log fail).
    problems : pandas.DataFrame
        **The** problems list: the shared problems table
        (:data:`~agentscope.log.problems.PROBLEM_COLUMNS`: ``index``, ``id``, ``field``,
        ``kind``, ``message``, ``expected``, ``actual``, ``source``): one row per problem, entry
        problems in log order (e.g. ``state-mismatch`` with the recorded hash as ``expected`` and
        the recomputed one as ``actual``; ``machine-mismatch`` with ``id@version`` on both sides;
        ``missing-verification`` (strict), ``invalid-entry``, ``engine-error``,
        ``explained-mismatch``), then the problems of the log as a whole (``index`` ``<NA>``): a
        segment the ``machines`` have no machine for (``no-machine``), a cached snapshot that
        disagrees with the log (``cache-diverged``) or is stale (``cache-stale``), a bridge that
        does not link (``bridge-link``), an empty log. Those in
        :data:`~agentscope.log.problems.FAILS_THE_LOG` make the log fail; the others are notes.
        The same columns and kinds as :attr:`agentscope.EventLog.problems`.
    errors : tuple of AgentscopeError
        The typed error of every failure, in log order, then the log-level ones.
    strict : bool
        Whether a missing verification hash counted as a failure.
    source : str or None
        Where the log came from.

    Examples
    --------
    >>> import agentscope as asc
    >>> from agentscope.examples import example_path
    >>> from agentscope.examples.python_machines import triage_machine
    >>> log = asc.read_log(example_path("g_triage.sqlite"), thread="main")
    >>> report = asc.verify(triage_machine(), log)
    >>> report.ok, len(report.df), len(report.mismatches)
    (True, 91, 0)
    >>> report.counts()
    {'verified': 91, 'mismatch': 0, 'explained': 0, 'missing': 0, 'unchecked': 0, 'ignored': 0, 'failed': 0}
    >>> report.raise_if_failed()  # raises the first typed error when the log fails
    """

    df: pd.DataFrame
    problems: pd.DataFrame = field(default_factory=lambda: problems_frame([]), repr=False)
    errors: tuple[AgentscopeError, ...] = field(default=(), repr=False)
    strict: bool = False
    source: str | None = None

    @property
    def ok(self) -> bool:
        """True when no entry failed and no problem of the log as a whole fails it
        (:data:`~agentscope.log.problems.FAILS_THE_LOG`)."""
        return not bool(self.df["failed"].any()) and self.log_failures.empty

    @property
    def log_failures(self) -> pd.DataFrame:
        """The rows of :attr:`problems` about the log as a whole (``index`` ``<NA>``) that make
        it fail (kinds in :data:`~agentscope.log.problems.FAILS_THE_LOG`)."""
        p = self.problems
        return p[p["index"].isna() & p["kind"].isin([str(k) for k in FAILS_THE_LOG])]

    def problems_of(self, index: int) -> list[str]:
        """The problems of the entry at source position ``index`` (the ``index`` column) as
        ``"<kind>: <message>"`` lines, in the order found."""
        p = self.problems
        rows = p[p["index"] == index]
        return [f"{k}: {str(m).rstrip('.')}" for k, m in zip(rows["kind"], rows["message"], strict=True)]

    @property
    def mismatches(self) -> pd.DataFrame:
        """Rows with any problem: failures, explained (benign) mismatches, identity mismatches."""
        df = self.df
        mask = df["kind"].notna() | df["verdict"].isin(
            [Verdict.MISMATCH.value, Verdict.EXPLAINED.value]
        )
        return df[mask]

    @property
    def first_mismatch(self) -> dict[str, Any] | None:
        """The first failing row as a dict, or ``None`` when no entry failed."""
        failed = self.df[self.df["failed"]]
        if failed.empty:
            return None
        return {
            str(k): v.item() if isinstance(v, np.generic) else v
            for k, v in failed.iloc[0].to_dict().items()
        }

    @property
    def machine_mismatch(self) -> str | None:
        """One sentence when entries target another machine than the one replaying them
        (``machine-mismatch`` rows, spec §1.3), else ``None``: how many entries, the identity most
        of them target and the machine's, e.g. ``"91 of 91 entries target 'supportTriage'@'efe50ed5',
        not the machine 'ticket'@'1'"``. :meth:`summary` and the CLI put it first: every other
        result of such a replay (state mismatches, an engine error) follows from it."""
        found: dict[tuple[str, str], set[int]] = {}
        for err in self.errors:
            if isinstance(err, MachineVersionMismatchError):
                key = (err.identity(err.actual), err.identity(err.expected))
                found.setdefault(key, set()).add(err.index)
        if not found:
            return None
        (actual, expected), where = max(found.items(), key=lambda kv: len(kv[1]))
        n = len(set().union(*found.values()))
        others = "" if len(found) == 1 else f" ({n - len(where)} more target other machines)"
        return (f"{len(where)} of {len(self.df)} entries target {actual}, not the machine "
                f"{expected}{others}")

    def counts(self) -> dict[str, int]:
        """Entries per verdict, plus ``ignored`` and ``failed``."""
        vc = self.df["verdict"].value_counts()
        out = {v.value: int(vc.get(v.value, 0)) for v in Verdict}
        out["ignored"] = int(self.df["ignored"].sum())
        out["failed"] = int(self.df["failed"].sum())
        return out

    def summary(self) -> str:
        """One line: OK/FAILED, counts, the first problem."""
        c = self.counts()
        n = len(self.df)
        parts = [f"{c[v.value]} {v.value}" for v in Verdict if c[v.value]]
        if c["ignored"]:
            parts.append(f"{c['ignored']} ignored")
        head = f"{self.source or 'log'}: {'OK' if self.ok else 'FAILED'} - {n} entries"
        mismatch = self.machine_mismatch
        if mismatch is not None:  # first: the rest of such a replay follows from it
            head += f" (machine mismatch: {mismatch})"
        line = head + (": " + ", ".join(parts) if parts else "")
        first = self.first_mismatch
        if first is not None:
            line += (
                f"; first failure at entry {first['index']} ({first['id']} "
                f"{first['event_type']!r}): {'; '.join(self.problems_of(first['index']))}"
            )
        fatal = self.log_failures["message"].tolist()
        if fatal:
            line += f"; {len(fatal)} log problem(s): {fatal[0]}"
        return line

    def raise_if_failed(self) -> None:
        """Raise the first failure's typed error (``ReplayDivergenceError``,
        ``MachineVersionMismatchError``, ``SnapshotDivergedError``, ``EntryValidationError``,
        ``EngineError``); do nothing when :attr:`ok`."""
        if self.ok:
            return
        if self.errors:
            err = self.errors[0]
            err.add_note(self.summary())
            raise err
        raise AgentscopeError(self.summary())

    def __repr__(self) -> str:
        return f"<VerifyReport {self.summary()}>"

    def _repr_html_(self) -> str:
        """The summary, the whole-log problems and the first mismatching rows, drawn (escaped and
        bounded) by :func:`agentscope.render.reprs.repr_html`."""
        from agentscope.render.reprs import Bold, Items, Para, Table, guarded

        def build() -> list[Any]:
            blocks: list[Any] = [Para(Bold(self.summary()))]
            p = self.problems
            whole = p[p["index"].isna()]
            if len(whole):
                blocks.append(Items([
                    f"{'error' if kind in FAILS_THE_LOG else 'note'}: {kind}: {detail}"
                    for kind, detail in zip(whole["kind"], whole["message"], strict=True)
                ]))
            probs = self.mismatches
            if not probs.empty:
                cols = ["index", "id", "event_type", "recorded_hash", "computed_hash", "verdict",
                        "kind", "explanation"]
                blocks.append(Table.of(probs[cols], limit=_HTML_ROWS, where=".mismatches"))
            return blocks

        return guarded(self, "verify", build)


def _hex(values: np.ndarray[Any, Any], present: np.ndarray[Any, Any]) -> list[str | None]:
    """``uint32`` hashes as 8 lowercase hex digits (``None`` where not ``present``), cut from one
    hex text of the big-endian bytes."""
    text = values.astype(">u4").tobytes().hex()
    out: list[str | None] = [text[i : i + 8] for i in range(0, len(text), 8)]
    for i in np.flatnonzero(~present).tolist():
        out[i] = None
    return out


def _computed_hex(idx: LogIndex, recorded: list[str | None]) -> list[str | None]:
    """The computed hashes as :func:`_hex` writes them, taking the recorded text (``recorded``,
    the recorded-hash column) where the two hashes are equal: a log that verifies needs no hex
    text of its own."""
    same = idx.has_computed & idx.has_recorded & (idx.computed == idx.recorded)
    for i in idx.odd_recorded:
        same[i] = False
    differ = np.flatnonzero(~same)
    if len(differ) * 4 > idx.n:
        return _hex(idx.computed, idx.has_computed)
    out = list(recorded)
    computed, has = idx.computed, idx.has_computed
    for i in differ.tolist():
        out[i] = f"{int(computed[i]):08x}" if has[i] else None
    return out


def _str_column(values: Sequence[Any]) -> pd.Series:
    """``values`` as pandas infers them (``str``), in the ``"python"`` storage when one holds a
    lone UTF-16 surrogate (legal in a JS string; Arrow's storage holds only valid UTF-8)."""
    try:
        return pd.Series(values)
    except UnicodeEncodeError:
        return pd.Series(values, dtype=pd.StringDtype("python", na_value=np.nan))


def source_positions(positions: Sequence[int] | None, n: int) -> np.ndarray[Any, np.dtype[np.int64]]:
    """The source position of each of ``n`` entries: ``positions`` (an
    :attr:`~agentscope.log.model.EventLog.positions`), continued one by one past its end
    (entries a :class:`~agentscope.pipeline.Timeline` appended); ``0 .. n - 1`` without."""
    if positions is None:
        return np.arange(n, dtype=np.int64)
    k = min(len(positions), n)
    out = np.empty(n, np.int64)
    if isinstance(positions, range):
        out[:k] = np.arange(positions.start, positions.start + k, dtype=np.int64)
    else:
        out[:k] = np.asarray(positions[:k], dtype=np.int64)
    last = int(out[k - 1]) if k else -1
    out[k:] = np.arange(last + 1, last + 1 + n - k, dtype=np.int64)
    return out


def report_from_index(idx: LogIndex, entries: Sequence[Mapping[str, Any]], *,
                      types: Sequence[str] | None = None, positions: Sequence[int] | None = None,
                      set_aside: Sequence[Mapping[str, Any]] = ()) -> VerifyReport:
    """Build the :class:`VerifyReport` of a :class:`LogIndex` (O(n), no replay). ``types``, when
    the caller has read them, is ``event_types(entries)``; ``positions`` the entries' source
    positions (:attr:`EventLog.positions`: the ``index`` of the report's rows and problems);
    ``set_aside`` the reader's problem rows about entries not in the log
    (:func:`~agentscope.log.validate.set_aside`), listed among the entries' in source order."""
    n = idx.n
    where = source_positions(positions, n)
    seg_col = np.zeros(n, np.int32)
    for s in idx.segments:
        seg_col[s.start : s.stop] = s.number
    recorded = _hex(idx.recorded, idx.has_recorded)
    for i, h in idx.odd_recorded.items():
        recorded[i] = h
    kinds: list[str | None] = [None] * n
    for i, items in idx.problems.items():
        kinds[i] = str(items[0][0])
    expl: list[str | None] = [None] * n
    for i, t in idx.explanations.items():
        expl[i] = t
    failed = np.zeros(n, np.bool_)
    for i in idx.failures:
        failed[i] = True
    ids = entry_ids(entries)
    df = pd.DataFrame(
        {
            "index": where,
            "segment": seg_col,
            "id": _str_column(ids),
            "event_type": _str_column(event_types(entries) if types is None else types),
            "recorded_hash": pd.Series(recorded, dtype=object),
            "computed_hash": pd.Series(_computed_hex(idx, recorded), dtype=object),
            "verdict": pd.Categorical.from_codes(  # the codes index VERDICTS, i.e. Verdict's order
                idx.verdict.astype(np.int8), categories=pd.Index([v.value for v in VERDICTS]),
            ),
            "kind": pd.Series(kinds, dtype=object),
            "explanation": pd.Series(expl, dtype=object),
            "ignored": idx.ignored.copy(),
            "failed": failed,
        },
        columns=list(COLUMNS),
    )
    errors: list[AgentscopeError] = []
    for i in sorted(idx.failures):
        errors.extend(idx.failures[i])
    errors.extend(idx.log_failures)
    src = idx.source or "<memory>"
    rows: list[dict[str, Any]] = [
        {"index": int(where[i]) if 0 <= i < n else i, "id": ids[i] if 0 <= i < n else None,
         "field": fld, "kind": kind, "message": msg, "expected": exp, "actual": act, "source": src}
        for i, kind, msg, fld, exp, act in sorted(idx.rows, key=lambda r: r[0])
    ]
    if set_aside:  # the reader's rows about entries it set aside, in source order among them
        rows = list(heapq.merge(rows, [dict(r) for r in set_aside if r.get("index") is not None],
                                key=lambda r: r["index"]))
        rows += [dict(r) for r in set_aside if r.get("index") is None]
    for kind, detail, _fatal in idx.log_problems:
        exp = act = None
        for err in idx.log_failures:
            if str(err) == detail and hasattr(err, "expected"):
                exp, act = str(getattr(err, "expected", None)), str(getattr(err, "actual", None))
        rows.append({"index": None, "id": None, "field": None, "kind": kind, "message": detail,
                     "expected": exp, "actual": act, "source": src})
    return VerifyReport(
        df=df,
        problems=problems_frame(rows),
        errors=tuple(errors),
        strict=idx.strict,
        source=idx.source,
    )


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
        A segment with no machine is reported (a ``no-machine`` row of ``problems``).
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

    Notes
    -----
    A machine of another id or version than the log's entries (the wrong machine, or the right
    one at another version) gives one ``machine-mismatch`` problem per such entry, and the log
    fails. The segment is still replayed with it (its hashes show where the two agree), so the
    report reads as one story: :attr:`VerifyReport.machine_mismatch` (put first by
    :meth:`~VerifyReport.summary` and the CLI) says how many entries target which machine, and
    any state mismatch or engine failure follows from it. An engine failure stops that segment's
    replay (later entries stay ``unchecked``) and is one ``engine-error`` problem at the failing
    entry: ``"entry <i> ('<id>', '<event type>'): <what the machine raised>"``, with
    ``"a consequence of the machine mismatch (the log's entries target ..., the machine is ...)"``
    after the entry when an entry up to it targets another machine. Its error is a
    :class:`~agentscope.errors.MachineExecutionError` (``index`` the entry's position) when the
    machine's own code raised (e.g. a ``KeyError`` on a context key the log's machine never
    had), else the engine's typed error (a Node crash, a snapshot it cannot restore); it comes
    after the mismatch's error in :attr:`VerifyReport.errors`, so ``raise_if_failed`` raises the
    :class:`~agentscope.errors.MachineVersionMismatchError`.

    Raises
    ------
    TypeError
        ``machines`` is not a mapping of version -> :class:`Machine` (names the bad key).

    Examples
    --------
    >>> import agentscope as asc
    >>> from agentscope.examples import example_path
    >>> from agentscope.examples.python_machines import triage_machine
    >>> log = asc.read_log(example_path("g_triage.sqlite"), thread="main")
    >>> report = asc.verify(triage_machine(), log)
    >>> report.ok, report.counts()["verified"], report.first_mismatch
    (True, 91, None)
    >>> report.df.loc[45, ["event_type", "recorded_hash", "computed_hash", "verdict"]].tolist()
    ['APPROVE', '0d9e8cde', '0d9e8cde', 'verified']
    """
    check_machines(machines)
    if machine is None and not machines:
        raise ValueError("verify needs a machine, or machines={version: machine}")
    log = as_log(log)
    ents = entries_of(log)
    cached = getattr(log, "cached_snapshot", None)
    types = event_types(ents)  # read once: the segments and the report's column
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
        validated=is_validated(log),
        findings=read_findings(log),
        types=types,
    )
    return report_from_index(idx, ents, types=types, positions=getattr(log, "positions", None),
                             set_aside=set_aside(log))

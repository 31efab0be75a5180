"""Validate parsed items and wrap them in an :class:`~agentscope.log.model.EventLog`.

The last step of every reader (JSON, JSONL, SQLite, tables, inspection streams): decide the era
(spec §0), run the one validation (:mod:`agentscope.log.validate`, §1.2, §1.3) and, with
``errors="collect"``, turn each problem into a row of the shared problems table. It sits below
the readers, which all import it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from agentscope.errors import LogFormatError, MachineVersionMismatchError
from agentscope.log.model import ErrorsMode, EventLog
from agentscope.log.problems import problems_frame
from agentscope.log.validate import (
    AGENT_INIT_EVENT_TYPE,
    Era,
    entry_problem,
    log_problems,
)

__all__ = ["build_log", "detect_era"]


def detect_era(entries: Sequence[Any]) -> Era:
    """The format era of parsed entries (spec §0), decided by the init entry.

    - ``"A"`` when no entry has an envelope (no ``schemaVersion``, ``id``, ``machineId``);
    - ``"C"`` when the first entry is the reserved ``@agent.init`` entry (Era C requires it,
      §1.3; Era B had none). Era-B keys on later entries (``correlationId``,
      ``verification.effectsHash``) do not change that: Era C tolerates both (§1.1);
    - ``"B"`` when there is no init entry **and** some entry carries an Era-B key
      (``correlationId`` or ``verification.effectsHash``);
    - ``"C"`` otherwise (an empty log, or a log missing its init entry, which validation then
      reports with §1.3's "must start with the reserved '@agent.init' entry" error).
    """
    dicts = [e for e in entries if isinstance(e, dict)]
    if not dicts:
        return "C"
    if all("schemaVersion" not in e and "machineId" not in e and "id" not in e for e in dicts):
        return "A"
    event = dicts[0].get("event")
    if isinstance(event, dict) and event.get("type") == AGENT_INIT_EVENT_TYPE:
        return "C"
    for e in dicts:
        ver = e.get("verification")
        if "correlationId" in e or (isinstance(ver, dict) and "effectsHash" in ver):
            return "B"
    return "C"


def _problem_row(err: LogFormatError | MachineVersionMismatchError, source: str | None) -> dict[str, Any]:
    """One row of the shared problems table (:data:`~agentscope.log.problems.PROBLEM_COLUMNS`)."""
    from agentscope.log.validate import problem_kind

    if isinstance(err, MachineVersionMismatchError):
        same_id = err.expected.get("machineId") == err.actual.get("machineId")
        field = "machineVersion" if same_id else "machineId"
        return {
            "index": err.index,
            "id": err.event_id,
            "field": field,
            "kind": problem_kind(err),
            "message": str(err),
            "expected": err.expected.get(field),
            "actual": err.actual.get(field),
            "source": source,
        }
    kind = problem_kind(err)
    return {
        "index": err.index,
        "field": err.field,
        "kind": kind,
        "message": str(err),
        "source": err.source if err.source is not None else source,
        "line": err.line,
    }


def build_log(
    items: Sequence[Any],
    *,
    source: str | None,
    errors: ErrorsMode = "raise",
    era: Era | None = None,
    lines: Sequence[int | None] | None = None,
    positions: Sequence[int] | None = None,
    thread: str | None = None,
    cached_snapshot: dict[str, Any] | None = None,
    early_problems: Sequence[LogFormatError] = (),
) -> EventLog:
    """Validate parsed items (§1.2, §1.3) and wrap them in an :class:`EventLog`.

    ``errors="raise"`` raises the first problem; ``"collect"`` keeps every entry that passes
    §1.2 (log-level problems such as a gap or a duplicate id are recorded, the entries kept)
    and lists every problem, including ``early_problems`` (e.g. unparsable JSONL lines), in
    :attr:`EventLog.problems`.
    """
    if errors not in ("raise", "collect"):
        raise ValueError(f"errors must be 'raise' or 'collect', not {errors!r}")
    if early_problems and errors == "raise":
        raise early_problems[0]
    era = era or detect_era(items)
    pos = list(range(len(items))) if positions is None else list(positions)
    line_of: list[int | None] = [None] * len(items) if lines is None else list(lines)
    if errors == "raise":
        for problem in log_problems(items, source=source, era=era, positions=pos, lines=line_of):
            raise problem
        # every entry passed §1.2 and the log §1.3 (without a machine): replay never re-checks them
        return EventLog(list(items), source=source, thread=thread, era=era,
                        cached_snapshot=cached_snapshot, validated=True,
                        positions=None if positions is None or pos == list(range(len(pos))) else pos)
    rows = [_problem_row(p, source) for p in early_problems]
    kept: list[dict[str, Any]] = []
    kept_pos: list[int] = []
    kept_lines: list[int | None] = []
    for i, item in enumerate(items):
        bad = entry_problem(item, index=pos[i], source=source, line=line_of[i], era=era)
        if bad is not None:
            rows.append(_problem_row(bad, source))
            continue
        kept.append(item)
        kept_pos.append(pos[i])
        kept_lines.append(line_of[i])
    for problem in log_problems(
        kept, source=source, era=era, positions=kept_pos, lines=kept_lines, check_entries=False
    ):
        rows.append(_problem_row(problem, source))
    ids = {p: item.get("id") for p, item in zip(pos, items, strict=True) if isinstance(item, dict)}
    for row in rows:
        if row.get("id") is None and row.get("index") is not None:
            found = ids.get(row["index"])
            row["id"] = found if isinstance(found, str) else None
    rows.sort(key=lambda r: (r["index"] if r["index"] is not None else -1, r.get("line") or 0))
    return EventLog(
        kept,
        source=source,
        thread=thread,
        era=era,
        cached_snapshot=cached_snapshot,
        problems=problems_frame(rows),
        validated=True,  # every entry kept passed §1.2; what §1.3 found is in ``problems``
        positions=None if kept_pos == list(range(len(kept))) else kept_pos,
    )


# ---------------------------------------------------------------------------------------------
# JSON and JSONL

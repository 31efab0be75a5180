"""Explaining a state-hash mismatch by the known benign causes (spec §2.1, §9.3; fixtures README,
"Notes for replaying").

A recorded hash is stamped from the *live* snapshot; a pure replay can differ for reasons that
do not mean the log is wrong. Each cause is tried by rebuilding what the live snapshot would
have held and hashing it; a cause is reported as **confirmed** only when that reproduces the
recorded hash exactly:

- ``variant``: the older Era C hash (8b7f21a0, which strips volatile keys at every depth).
- ``era-b``: the legacy Era B logical-projection hash (spec §2.5).
- ``timer``: a pending ``after`` timer. A live actor persists ``timers[id].startedAt``
  (epoch ms, its due time minus the delay); a pure fold has none. The search tries start times
  within ``±window_ms`` of the entry's ``recordedAt`` and of the previous entry's, with one
  shared value for all timers whose start is not yet known; starts confirmed at earlier entries
  are carried forward by timer id. Candidates are hashed incrementally (djb2 is affine in its
  state), so the ~8,000-candidate search costs milliseconds.
- ``error``: a live ``Error`` in ``error`` (status ``"error"``), hashed live as
  ``{errorName, message[, cause]}`` where the journal holds ``{name, message[, cause]}``.

Private module: :func:`agentscope.pipeline.verify` and :class:`agentscope.pipeline.Timeline` use it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from agentscope.hashing import canonical_snapshot_json, djb2_hex, state_hash

__all__ = ["Explanation", "explain_mismatch"]

_MASK = 0xFFFFFFFF
_PLACEHOLDER = "\ue000agentscope:startedAt\ue000"
_QUOTED = '"' + _PLACEHOLDER + '"'  # js_string leaves private-use characters literal


@dataclass(frozen=True, slots=True)
class Explanation:
    """The outcome of trying the benign causes on one mismatching entry.

    ``cause`` is ``"variant"``, ``"era-b"``, ``"timer"``, ``"error"`` or ``None`` (unexplained). ``text`` is a
    one-line human explanation (what was confirmed, or everything tried). ``timer_starts`` maps
    timer id to the confirmed ``startedAt`` (epoch ms) for a timer explanation.
    """

    cause: str | None
    text: str
    timer_starts: Mapping[str, int] = field(default_factory=dict)

    @property
    def confirmed(self) -> bool:
        return self.cause is not None


def _units(s: str) -> int:
    return len(s.encode("utf-16-le", "surrogatepass")) // 2


class _Template:
    """A canonical string with holes; hashes each filling in O(len(filling))."""

    def __init__(self, canonical: str) -> None:
        parts = canonical.split(_QUOTED)
        self.holes = len(parts) - 1
        self.head = int(djb2_hex(parts[0]), 16)
        self.tails: list[tuple[int, int]] = []
        for p in parts[1:]:
            mul = pow(33, _units(p), 1 << 32)
            # djb2 from state 0 over p: djb2(p) - 5381 * 33^len(p)
            d = (int(djb2_hex(p), 16) - 5381 * mul) & _MASK
            self.tails.append((mul, d))

    def hash_with(self, filling: str) -> str:
        h = self.head
        for mul, d in self.tails:
            for ch in filling:  # ASCII digits only
                h = (h * 33 + ord(ch)) & _MASK
            h = (h * mul + d) & _MASK
        return f"{h:08x}"


def _with_timer_starts(
    persisted: Mapping[str, Any], starts: Mapping[str, Any]
) -> dict[str, Any]:
    timers = persisted.get("timers")
    assert isinstance(timers, Mapping)
    new_timers: dict[str, Any] = {}
    for tid, t in timers.items():
        if tid in starts and isinstance(t, Mapping):
            nt = dict(t)
            nt["startedAt"] = starts[tid]
            new_timers[tid] = nt
        else:
            new_timers[tid] = t
    out = dict(persisted)
    out["timers"] = new_timers
    return out


def _candidates(centres: Iterable[int | None], window_ms: int) -> list[int]:
    seen: set[int] = set()
    out: list[int] = []
    cs = [c for c in centres if c is not None]
    for off in range(window_ms + 1):  # nearest first, around every centre
        for c in cs:
            for t in (c - off, c + off):
                if t not in seen:
                    seen.add(t)
                    out.append(t)
    return out


def _try_timers(
    persisted: Mapping[str, Any],
    recorded: str,
    known: Mapping[str, int],
    centres: tuple[int | None, ...],
    window_ms: int,
) -> tuple[dict[str, int] | None, str]:
    timers = persisted.get("timers")
    if not isinstance(timers, Mapping) or not timers:
        return None, ""
    ids = [tid for tid, t in timers.items() if isinstance(t, Mapping)]
    fresh = [tid for tid in ids if "startedAt" not in timers[tid]]
    if not fresh:
        return None, ""
    attempts: list[tuple[dict[str, int], list[str]]] = []
    carried = {tid: known[tid] for tid in fresh if tid in known}
    unknown = [tid for tid in fresh if tid not in known]
    if carried:
        attempts.append((carried, unknown))
    attempts.append(({}, fresh))
    cands = _candidates(centres, window_ms)
    for fixed, holes in attempts:
        starts: dict[str, Any] = dict(fixed)
        if not holes:
            if state_hash(_with_timer_starts(persisted, starts)) == recorded:
                return dict(fixed), ""
            continue
        for tid in holes:
            starts[tid] = _PLACEHOLDER
        tpl = _Template(canonical_snapshot_json(_with_timer_starts(persisted, starts)))
        if tpl.holes != len(holes):
            continue  # a placeholder-looking string elsewhere: do not guess
        for t in cands:
            if tpl.hash_with(str(t)) == recorded:
                found = dict(fixed)
                found.update({tid: t for tid in holes})
                return found, ""
    labels = ("recordedAt", "previous recordedAt", "recordedAt where the timer appeared")
    where = " and ".join(
        f"{label} {c} ms" for label, c in zip(labels, centres, strict=False) if c is not None
    )
    if not where:
        return None, f"pending after timer(s) {', '.join(ids)}: no recordedAt to search around"
    return None, (
        f"pending after timer(s) {', '.join(ids)}: no startedAt within ±{window_ms} ms of "
        f"{where} reproduces it"
    )


def _live_error(err: Any, *, deep: bool) -> Any:
    if not isinstance(err, Mapping) or "name" not in err:
        return err
    out: dict[str, Any] = {"errorName": err.get("name"), "message": err.get("message")}
    if "cause" in err:
        out["cause"] = _live_error(err["cause"], deep=True) if deep else err["cause"]
    return out


def _try_error(persisted: Mapping[str, Any], recorded: str) -> tuple[bool, str]:
    if persisted.get("status") != "error":
        return False, ""
    err = persisted.get("error")
    if not isinstance(err, Mapping) or "name" not in err:
        return False, "status is error but `error` is not a {name, message} object"
    for deep in (False, True):
        cand = dict(persisted)
        cand["error"] = _live_error(err, deep=deep)
        if state_hash(cand) == recorded:
            return True, ""
    return False, "a live Error hashed as {errorName, message[, cause]} does not reproduce it"


def explain_mismatch(
    persisted: Mapping[str, Any],
    recorded: str,
    *,
    recorded_at: int | None = None,
    previous_recorded_at: int | None = None,
    known_timer_starts: Mapping[str, int] | None = None,
    timer_appeared_at: int | None = None,
    window_ms: int = 2000,
) -> Explanation:
    """Try the benign causes for ``state_hash(persisted) != recorded`` and say which one holds.

    Parameters
    ----------
    persisted : Mapping
        The replayed persisted snapshot after the entry.
    recorded : str
        The entry's recorded ``verification.stateHash``.
    recorded_at, previous_recorded_at : int | None
        Epoch milliseconds of the entry's and the previous entry's ``recordedAt``: the centres of
        the ``startedAt`` search.
    known_timer_starts : Mapping[str, int] | None
        ``startedAt`` values confirmed at earlier entries, by timer id.
    timer_appeared_at : int | None
        Epoch ms of the ``recordedAt`` of the entry after which the oldest pending timer first
        appeared: a third search centre, for timers started long before this entry.
    window_ms : int
        Half-width of each search window, in milliseconds.

    Returns
    -------
    Explanation
        ``cause`` set only when a cause reproduces ``recorded`` exactly.
    """
    tried: list[str] = []
    if state_hash(persisted, "8b7f21a0") == recorded:
        return Explanation(
            "variant",
            "confirmed: the older hash variant 8b7f21a0 (spec §2.1: volatile keys stripped at "
            "every depth) reproduces the recorded hash",
        )
    tried.append("hash variant 8b7f21a0 does not reproduce it")
    if state_hash(persisted, "era-b") == recorded:
        return Explanation(
            "era-b",
            "confirmed: the Era-B logical-projection hash (spec §2.5) reproduces the recorded "
            "hash; this entry was written by the legacy (Era B) library",
        )
    starts, why = _try_timers(
        persisted,
        recorded,
        known_timer_starts or {},
        (recorded_at, previous_recorded_at, timer_appeared_at),
        window_ms,
    )
    if starts is not None:
        shown = ", ".join(f"{tid} startedAt={t}" for tid, t in starts.items())
        return Explanation(
            "timer",
            "confirmed: a pending after timer's live-only wall-clock startedAt; the replayed "
            f"snapshot with {shown} reproduces the recorded hash",
            starts,
        )
    if why:
        tried.append(why)
    ok, why = _try_error(persisted, recorded)
    if ok:
        return Explanation(
            "error",
            "confirmed: a live Error in `error`; hashing it as {errorName, message[, cause]} "
            "reproduces the recorded hash",
        )
    if why:
        tried.append(why)
    return Explanation(None, "unexplained: " + "; ".join(tried))

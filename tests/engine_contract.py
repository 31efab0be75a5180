"""The engine contract: what every :class:`~agentscope.engines.base.Machine` must do for the fold.

An abstract test case (one subclass per engine, see ``tests/test_engine_contract.py``): the
subclass provides a machine, a real log for it (whose completions carry *recorded* session ids the
fold must rebind, spec §4.1) and a machine plus events that make ``transition`` fail. Every
engine, and any test double, passes the same checks:

- ``initial`` / ``persist`` / ``restore`` round trip (the persisted snapshot is plain JSON and
  restoring it changes no hash, at every step of the log);
- ``transition`` and ``fold`` leave their inputs (snapshot, event, persisted dict) alone;
- ``fold`` equals ``transition`` step by step with :func:`rebind_session`, and the rebinding cache
  maps recorded sessions to the ones this fold minted;
- folds of different states interleaved give the same results as run apart (no hidden per-call
  state on the engine);
- a failing step raises :class:`~agentscope.errors.MachineExecutionError` with ``index`` (the
  event's position in the batch), and the one fold names the failing entry.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping, Sequence
from typing import Any

import pytest

from agentscope.engines.base import NO_INPUT, Machine, Snapshot, rebind_session
from agentscope.errors import MachineExecutionError
from agentscope.hashing import state_hash
from agentscope.pipeline.fold import fold_segment, seed_snapshot


def _events(entries: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    return [e["event"] for e in entries[1:]]


class EngineContract:
    """Subclass and implement the three hooks; pytest collects the ``test_*`` methods."""

    def machine(self) -> Machine:
        raise NotImplementedError

    def log(self) -> list[dict[str, Any]]:
        """A real log for :meth:`machine` with at least one child completion to rebind."""
        raise NotImplementedError

    def failing(self) -> tuple[Machine, Any, list[Mapping[str, Any]], int]:
        """``(machine, input, events, k)``: ``events[k]`` makes ``transition`` fail."""
        raise NotImplementedError

    # -- helpers -------------------------------------------------------------------------------
    def _seed(self, m: Machine, log: Sequence[Mapping[str, Any]]) -> Snapshot:
        return seed_snapshot(m, log[0])

    # -- the contract --------------------------------------------------------------------------
    def test_initial_persist_restore_round_trip(self) -> None:
        m, log = self.machine(), self.log()
        init = log[0]["event"]
        s0 = m.initial(init.get("input", NO_INPUT))
        p = m.persist(s0)
        assert json.loads(json.dumps(p)) == p  # plain JSON
        again = m.persist(m.restore(p))
        assert state_hash(again) == state_hash(p)
        assert m.persist(s0) == p  # persisting twice gives the same value

    def test_restore_round_trips_at_every_step(self) -> None:
        m, log = self.machine(), self.log()
        snaps = [s for _, s in fold_segment(m, log, 0, len(log))]
        assert len(snaps) == len(log)
        hashes = [state_hash(m.persist(s)) for s in snaps]
        recorded = [e.get("verification", {}).get("stateHash") for e in log]
        assert sum(h == r for h, r in zip(hashes, recorded, strict=True)) >= len(log) // 2
        for s, h in zip(snaps, hashes, strict=True):
            assert state_hash(m.persist(m.restore(m.persist(s)))) == h

    def test_transition_and_fold_leave_their_inputs_alone(self) -> None:
        m, log = self.machine(), self.log()
        s = self._seed(m, log)
        sessions: dict[str, str] = {}
        for ev in _events(log):
            p_before = copy.deepcopy(m.persist(s))
            ev_before = copy.deepcopy(ev)
            nxt = m.transition(s, rebind_session(m, s, ev, sessions))
            assert m.persist(s) == p_before and ev == ev_before
            folded = m.fold(s, [ev], sessions=dict(sessions))
            assert m.persist(s) == p_before and ev == ev_before
            assert state_hash(m.persist(folded[0])) == state_hash(m.persist(nxt))
            s = nxt

    def test_fold_equals_transitions_with_session_rebinding(self) -> None:
        m, log = self.machine(), self.log()
        seed = self._seed(m, log)
        events = _events(log)
        cache: dict[str, str] = {}
        folded = m.fold(seed, events, sessions=cache)
        assert len(folded) == len(events)
        s, by_step, cache2 = seed, [], {}
        for ev in events:
            s = m.transition(s, rebind_session(m, s, ev, cache2))
            by_step.append(state_hash(m.persist(s)))
        assert [state_hash(m.persist(x)) for x in folded] == by_step
        assert set(cache) == set(cache2)  # the same completions rebound (minted ids may differ
        # between folds: the Node runner mints from a process-wide counter; the hash strips them)
        recorded = {ev["actorId"] + "\u0000" + ev["sessionId"] for ev in events
                    if isinstance(ev.get("actorId"), str) and isinstance(ev.get("sessionId"), str)}
        assert recorded and set(cache) <= recorded and cache  # completions were rebound
        # without rebinding the completions would be dropped: the fold would reach another state
        raw, s = [], seed
        for ev in events:
            s = m.transition(s, ev)
            raw.append(state_hash(m.persist(s)))
        minted_differs = any(cache[k] != k.split("\u0000", 1)[1] for k in cache)
        if minted_differs:
            assert raw != by_step

    def test_interleaved_folds_are_independent(self) -> None:
        m, log = self.machine(), self.log()
        seed = self._seed(m, log)
        events = _events(log)
        half = len(events) // 2
        apart_a = [state_hash(m.persist(x)) for x in m.fold(seed, events[:half], sessions={})]
        mid = m.fold(seed, events[:half], sessions={})[-1]
        apart_b = [state_hash(m.persist(x)) for x in m.fold(mid, events[half:], sessions={})]
        # now interleave single steps of the two folds
        ca: dict[str, str] = {}
        cb: dict[str, str] = {}
        sa, sb = seed, mid
        got_a, got_b = [], []
        for k in range(max(half, len(events) - half)):
            if k < half:
                sa = m.fold(sa, [events[k]], sessions=ca)[0]
                got_a.append(state_hash(m.persist(sa)))
            if half + k < len(events):
                sb = m.fold(sb, [events[half + k]], sessions=cb)[0]
                got_b.append(state_hash(m.persist(sb)))
        assert got_a == apart_a and got_b == apart_b

    def test_a_failing_step_is_typed_with_its_index(self) -> None:
        m, input_, events, k = self.failing()
        s = m.initial(input_)
        with pytest.raises(MachineExecutionError) as info:
            m.fold(s, events)
        assert info.value.index == k
        # the one fold names the failing entry of the log
        init: dict[str, Any] = {"type": "@agent.init"}
        if input_ is not NO_INPUT:
            init["input"] = input_
        entries = [{"id": "e0", "event": init}] + [
            {"id": f"e{i + 1}", "event": ev} for i, ev in enumerate(events)]
        done: list[int] = []
        with pytest.raises(MachineExecutionError) as info2:
            for i, _ in fold_segment(m, entries, 0, len(entries)):
                done.append(i)
        assert done == list(range(k + 1))  # every entry before the failing one was folded
        notes = " ".join(getattr(info2.value, "__notes__", []))
        assert f"entry {k + 1} (id 'e{k + 1}'" in notes

"""replay / verify / Timeline on small real Python machines and the bundled real logs."""

from __future__ import annotations

import copy
import json
import random
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentscope.errors import (
    EntryValidationError,
    LogFormatError,
    MachineVersionMismatchError,
    ReplayDivergenceError,
    SnapshotDivergedError,
)
from agentscope.frames import Verdict
from agentscope.hashing import state_hash
from agentscope.log import read_log
from agentscope.pipeline import ReplayResult, Timeline, apply_entry, replay, verify
from tests.conftest import FIXTURES, load_json
from tests.test_replay_support import FixtureCounter, Jobber, SpecCounter, iso, write_log

SPEC_72 = [
    {"schemaVersion": 1, "id": "evt_00000000", "index": 0, "recordedAt": "2026-01-01T00:00:00.000Z", "machineId": "counter", "machineVersion": "v1", "event": {"type": "@agent.init"}, "metadata": {"executionId": "00000000-0000-4000-8000-000000000000"}, "verification": {"stateHash": "7a6a6b48"}},
    {"schemaVersion": 1, "id": "evt_00000001", "index": 1, "recordedAt": "2026-01-01T00:00:01.000Z", "machineId": "counter", "machineVersion": "v1", "event": {"type": "ADD", "amount": 5}, "verification": {"stateHash": "344e8c4e"}},
    {"schemaVersion": 1, "id": "evt_00000002", "index": 2, "recordedAt": "2026-01-01T00:00:02.000Z", "machineId": "counter", "machineVersion": "v1", "event": {"type": "SCALE", "factor": 3}, "verification": {"stateHash": "feb93e40"}},
    {"schemaVersion": 1, "id": "evt_00000003", "index": 3, "recordedAt": "2026-01-01T00:00:03.000Z", "machineId": "counter", "machineVersion": "v1", "event": {"type": "ADD", "amount": 2}, "verification": {"stateHash": "0fb60983"}},
    {"schemaVersion": 1, "id": "evt_00000004", "index": 4, "recordedAt": "2026-01-01T00:00:04.000Z", "machineId": "counter", "machineVersion": "v1", "event": {"type": "DONE"}, "verification": {"stateHash": "76e9d64c"}},
]
SPEC_72_HASHES = ["7a6a6b48", "344e8c4e", "feb93e40", "0fb60983", "76e9d64c"]

SPEC_73 = [
    {"schemaVersion": 1, "id": "evt_00000000", "index": 0, "recordedAt": "2026-01-01T00:00:00.000Z", "machineId": "jobber", "machineVersion": "74198848", "event": {"type": "@agent.init", "input": {"attempt": 1}}, "metadata": {"executionId": "exec_1"}, "verification": {"stateHash": "25dcd2f3"}},
    {"schemaVersion": 1, "id": "evt_00000001", "index": 1, "recordedAt": "2026-01-01T00:00:01.000Z", "machineId": "jobber", "machineVersion": "74198848", "event": {"type": "GO"}, "verification": {"stateHash": "ddbee5ac"}},
    {"schemaVersion": 1, "id": "evt_00000002", "index": 2, "recordedAt": "2026-01-01T00:00:02.000Z", "machineId": "jobber", "machineVersion": "74198848", "event": {"type": "xstate.done.actor", "actorId": "job", "sessionId": "0h4roa21hqrpn50qz42dr1bctjco:0:1", "output": "shipped"}, "verification": {"stateHash": "7c71fc5b"}},
]


class Log:
    """A minimal EventLog stand-in (duck-typed ``.entries``/``.source``/``.cached_snapshot``)."""

    def __init__(self, entries: list[dict[str, Any]], cached: dict[str, Any] | None = None):
        self.entries = entries
        self.source = "test.log.json"
        self.cached_snapshot = cached


# -- replay: spec §4.1 --------------------------------------------------------------------------

def test_spec_72_counter_hashes_every_prefix() -> None:
    m = SpecCounter()
    for n in range(1, 6):
        r = replay(m, SPEC_72[:n], verify="strict")
        assert isinstance(r, ReplayResult)
        assert r.state_hash == SPEC_72_HASHES[n - 1]
        assert r.length == n
    assert r.persisted["context"] == {"total": 17, "ops": 3}
    assert r.persisted["status"] == "done"


def test_spec_72_verify_zero_mismatches() -> None:
    rep = verify(SpecCounter(), SPEC_72, strict=True)
    assert rep.ok, rep.summary()
    assert rep.mismatches.empty
    assert rep.first_mismatch is None
    assert list(rep.df["computed_hash"]) == SPEC_72_HASHES
    assert set(rep.df["verdict"]) == {Verdict.VERIFIED.value}
    assert rep.summary().startswith("log: OK - 5 entries: 5 verified")


def test_spec_73_jobber_session_rebinding() -> None:
    m = Jobber(prefix="fold")
    r = replay(m, SPEC_73, verify="strict")
    assert r.state_hash == "7c71fc5b"
    assert r.persisted["context"]["result"] == "shipped"
    # without rebinding the recorded session would not match and the completion would be dropped
    assert m.transition(m.transition(m.initial({"attempt": 1}), {"type": "GO"}),
                        SPEC_73[2]["event"]).persisted["value"] == "working"


def test_tampered_payload_fails_at_exactly_that_index() -> None:
    log = copy.deepcopy(SPEC_72)
    log[2]["event"]["factor"] = 4
    with pytest.raises(ReplayDivergenceError) as ei:
        replay(SpecCounter(), log)
    err = ei.value
    assert (err.index, err.event_id, err.kind) == (2, "evt_00000002", "state")
    assert err.expected == "feb93e40"
    tampered = {"children": {}, "context": {"ops": 2, "total": 20}, "historyValue": {},
                "status": "active", "timers": {}, "value": "counting"}
    assert err.actual == state_hash(tampered)
    assert err.code == "replay-diverged"
    # verify reports it too, and every later entry as well (they all carry the wrong total)
    rep = verify(SpecCounter(), log)
    assert not rep.ok
    assert rep.first_mismatch is not None and rep.first_mismatch["index"] == 2
    assert rep.first_mismatch["recorded_hash"] == "feb93e40"
    assert rep.first_mismatch["computed_hash"] == err.actual
    assert list(rep.mismatches["index"]) == [2, 3, 4]  # later states carry the wrong total
    with pytest.raises(ReplayDivergenceError) as e2:
        rep.raise_if_failed()
    assert e2.value.index == 2


def test_tampered_hash_deadbeef() -> None:
    log = copy.deepcopy(SPEC_72)
    log[2]["verification"]["stateHash"] = "deadbeef"
    with pytest.raises(ReplayDivergenceError) as ei:
        replay(SpecCounter(), log)
    assert (ei.value.index, ei.value.expected, ei.value.actual) == (2, "deadbeef", "feb93e40")
    assert replay(SpecCounter(), log, verify=False).state_hash == "76e9d64c"
    rep = verify(SpecCounter(), log)
    assert list(rep.mismatches["index"]) == [2]  # later entries verify again


def test_a_recorded_hash_is_compared_as_its_exact_text() -> None:
    """``"feb93e40\n"`` (the right digits and a newline) is not the hash ``feb93e40``: verify
    reports a mismatch, as replay does, and shows the recorded text as it is."""
    log = copy.deepcopy(SPEC_72)
    log[2]["verification"]["stateHash"] = "feb93e40\n"
    with pytest.raises(ReplayDivergenceError):
        replay(SpecCounter(), log)
    rep = verify(SpecCounter(), log, explain=False)
    assert list(rep.mismatches["index"]) == [2]
    assert rep.df.loc[2, "recorded_hash"] == "feb93e40\n" and rep.df.loc[2, "computed_hash"] == "feb93e40"


def test_strict_mode_missing_verification() -> None:
    log = copy.deepcopy(SPEC_72)
    del log[3]["verification"]
    assert replay(SpecCounter(), log).state_hash == "76e9d64c"
    with pytest.raises(ReplayDivergenceError) as ei:
        replay(SpecCounter(), log, verify="strict")
    assert (ei.value.kind, ei.value.index, ei.value.expected) == ("missing-verification", 3, None)
    assert "has no recorded verification hash" in str(ei.value)
    lax = verify(SpecCounter(), log)
    assert lax.ok and lax.df.loc[3, "verdict"] == Verdict.MISSING.value
    strict = verify(SpecCounter(), log, strict=True)
    assert not strict.ok and strict.first_mismatch is not None
    assert strict.first_mismatch["index"] == 3
    assert strict.first_mismatch["kind"] == "missing-verification"


def test_empty_log_and_bad_verify_mode() -> None:
    with pytest.raises(LogFormatError, match="Cannot replay an empty event log"):
        replay(SpecCounter(), [])
    with pytest.raises(ValueError, match="verify must be"):
        replay(SpecCounter(), SPEC_72, verify="yes")  # type: ignore[arg-type]
    rep = verify(SpecCounter(), [])
    assert not rep.ok and "empty" in rep.summary()


def test_an_event_type_holding_a_lone_surrogate_is_reported_as_is() -> None:
    from agentscope.examples.python_machines import counter_machine
    from agentscope.recorder import Recorder

    rec = Recorder(counter_machine())
    rec.send({"type": "\udc00"})  # legal JSON and a legal JS string; nothing takes it
    rec.send({"type": "INC", "by": 2})
    report = verify(counter_machine(), rec.entries)
    assert report.ok and list(report.df["event_type"]) == ["@agent.init", "\udc00", "INC"]
    assert str(report.df["event_type"].dtype) == str(report.df["id"].dtype) == "str"  # as for any log


def test_machine_version_mismatch() -> None:
    log = copy.deepcopy(SPEC_72)
    log[1]["machineVersion"] = "v2"
    log[3]["machineId"] = "other"
    with pytest.raises(MachineVersionMismatchError) as ei:
        replay(SpecCounter(), log)
    assert ei.value.index == 1
    assert ei.value.actual["machineVersion"] == "v2"
    # override: a log written for another version, replayed on purpose
    with pytest.raises(MachineVersionMismatchError):
        replay(SpecCounter(), SPEC_72, machine_version="v9")
    rep = verify(SpecCounter(), log)
    bad = rep.mismatches
    assert list(bad["index"]) == [1, 3]  # both reported, not only the first
    assert list(bad["kind"]) == ["machine-mismatch"] * 2
    assert not rep.ok


def test_apply_entry_is_the_fold_step() -> None:
    m = SpecCounter()
    sessions: dict[str, str] = {}
    s = apply_entry(m, None, SPEC_72[0], sessions)
    hashes = [state_hash(m.persist(s))]
    for e in SPEC_72[1:]:
        s = apply_entry(m, s, e, sessions)
        hashes.append(state_hash(m.persist(s)))
    assert hashes == SPEC_72_HASHES
    with pytest.raises(ValueError):
        apply_entry(m, None, SPEC_72[1], sessions)


def test_accepts_eventlog_like_object_and_does_not_modify() -> None:
    log = Log(copy.deepcopy(SPEC_72))
    before = json.dumps(log.entries, sort_keys=True)
    assert replay(SpecCounter(), log).state_hash == "76e9d64c"
    rep = verify(SpecCounter(), log)
    assert rep.source == "test.log.json" and rep.ok
    assert json.dumps(log.entries, sort_keys=True) == before


# -- real fixtures with a Python port of counter.mjs ---------------------------------------------

@pytest.mark.parametrize(
    "name",
    ["a_counter.log.json", "c_fork_memory.parent.log.json", "c_fork_memory.fork.log.json",
     "c_fork_sqlite.parent.log.json", "c_fork_sqlite.fork.log.json"],
)
def test_fixture_counter_logs_verify(name: str) -> None:
    log = load_json(name)
    rep = verify(FixtureCounter(), log, strict=True)
    assert rep.ok, rep.summary()
    assert (rep.df["verdict"] == Verdict.VERIFIED.value).all()
    assert replay(FixtureCounter(), log, verify="strict").length == len(log)


def test_fixture_counter_prefixes_match_readme() -> None:
    log = load_json("a_counter.log.json")
    ref = load_json("a_counter.replay.json")
    tl = Timeline(FixtureCounter(), log, checkpoint_every=3)
    for p in ref["prefixes"]:
        n = p["n"]
        assert replay(FixtureCounter(), log[:n]).state_hash == p["getSnapshotStateHash"]
        f = tl[n - 1]
        assert f.computed_hash == p["recordedStateHash"]
        assert dict(f.persisted or {}) == p["persistedSnapshot"]
    assert tl[0].computed_hash == "26c7a83f" and tl[7].computed_hash == "bd5badab"
    assert tl[-1].computed_hash == "89cb3948" and tl[-1].status == "done"


# -- explanations of benign mismatches -----------------------------------------------------------

def test_timer_startedat_explained_and_carried_forward() -> None:
    live = Jobber(prefix="live", loop=True)
    log = write_log(live, [{"type": "WAIT"}, {"type": "NOOP"},
                           {"type": "xstate.timer", "id": "xstate.after.1000.jobber.waiting"}],
                    input={"attempt": 1})
    # the live snapshots carried startedAt = dueAt - delay; stamp hashes as the host would
    started = 1767225601000 + 137  # 137 ms after the WAIT entry's recordedAt (epoch ms)
    assert iso(started - 137) == log[1]["recordedAt"]
    for i in (1, 2):
        p = write_log(live, [{"type": "WAIT"}, {"type": "NOOP"}][:i], input={"attempt": 1})
        snap = Jobber(prefix="live", loop=True).initial({"attempt": 1})
        for e in p[1:]:
            snap = live.transition(snap, e["event"])
        persisted = copy.deepcopy(dict(snap.persisted))
        for t in persisted["timers"].values():
            t["startedAt"] = started
        log[i]["verification"]["stateHash"] = state_hash(persisted)
    m = Jobber(prefix="fold", loop=True)
    with pytest.raises(ReplayDivergenceError) as ei:
        replay(m, log)
    assert ei.value.index == 1
    rep = verify(m, log)
    assert rep.ok, rep.summary()
    assert list(rep.df["verdict"]) == ["verified", "explained", "explained", "verified"]
    assert f"startedAt={started}" in rep.df.loc[1, "explanation"]
    assert "confirmed" in rep.df.loc[2, "explanation"]
    assert bool(rep.df.loc[2, "ignored"])  # NOOP: the state did not react
    assert rep.first_mismatch is None
    assert list(rep.mismatches["index"]) == [1, 2]
    frame = Timeline(m, log)[1]
    assert frame.verdict is Verdict.EXPLAINED and "startedAt" in (frame.explanation or "")


def test_timer_far_from_recordedat_is_unexplained() -> None:
    live = Jobber(prefix="live", loop=True)
    log = write_log(live, [{"type": "WAIT"}], input={"attempt": 1})
    snap = live.transition(live.initial({"attempt": 1}), {"type": "WAIT"})
    persisted = copy.deepcopy(dict(snap.persisted))
    for t in persisted["timers"].values():
        t["startedAt"] = 1767225601000 + 60_000  # a minute away: outside the search window
    log[1]["verification"]["stateHash"] = state_hash(persisted)
    rep = verify(Jobber(loop=True), log)
    assert not rep.ok
    row = rep.first_mismatch
    assert row is not None and row["index"] == 1 and row["verdict"] == "mismatch"
    assert row["explanation"].startswith("unexplained")
    assert "no startedAt within ±2000 ms" in row["explanation"]


def test_live_error_explained() -> None:
    live = Jobber(prefix="live")
    err = {"name": "TypeError", "message": "boom"}
    log = write_log(live, [{"type": "CRASH", "error": err}], input={"attempt": 1})
    crashed = live.transition(live.initial({"attempt": 1}), {"type": "CRASH", "error": err})
    live_p = copy.deepcopy(dict(crashed.persisted))
    live_p["error"] = {"errorName": "TypeError", "message": "boom"}
    log[1]["verification"]["stateHash"] = state_hash(live_p)
    assert state_hash(live_p) != state_hash(crashed.persisted)
    rep = verify(Jobber(), log)
    assert rep.ok, rep.summary()
    assert rep.df.loc[1, "verdict"] == "explained"
    assert "live Error" in rep.df.loc[1, "explanation"]


def test_old_hash_variant_explained() -> None:
    live = Jobber(prefix="live")
    log = write_log(live, [], input={"attempt": 1, "sessionId": "abc"})
    log[0]["event"]["input"] = {"attempt": {"sessionId": "abc"}}
    p = Jobber().initial({"attempt": {"sessionId": "abc"}}).persisted
    log[0]["verification"]["stateHash"] = state_hash(p, "8b7f21a0")
    assert state_hash(p, "8b7f21a0") != state_hash(p)
    rep = verify(Jobber(), log)
    assert rep.df.loc[0, "verdict"] == "explained" and "8b7f21a0" in rep.df.loc[0, "explanation"]


# -- cached snapshot (§4.2) ----------------------------------------------------------------------

def _cached(k: int, *, hash_of: int | None = None) -> dict[str, Any]:
    r = replay(SpecCounter(), SPEC_72[: (hash_of or k)], verify=False)
    out = dict(r.persisted)
    out["agentMeta"] = {"machineId": "counter", "version": "v1",
                        "logId": "00000000-0000-4000-8000-000000000000", "logIndex": k}
    return out


def _whole(rep: Any) -> list[str]:
    """The kinds of the problems about the log as a whole (``index`` <NA>), in order."""
    return list(rep.problems[rep.problems["index"].isna()]["kind"])


def test_cached_snapshot_agrees_disagrees_stale() -> None:
    assert verify(SpecCounter(), Log(SPEC_72, _cached(5))).problems.empty
    stale = verify(SpecCounter(), Log(SPEC_72, _cached(3)))
    assert stale.ok and _whole(stale) == ["cache-stale"] and stale.log_failures.empty
    bad = verify(SpecCounter(), Log(SPEC_72, _cached(5, hash_of=4)))
    assert not bad.ok
    assert list(bad.log_failures["kind"]) == ["cache-diverged"]
    with pytest.raises(SnapshotDivergedError) as ei:
        bad.raise_if_failed()
    assert (ei.value.expected, ei.value.actual, ei.value.log_index) == (
        "76e9d64c", "0fb60983", 5)


# -- version bridges (§1.5) with the e_bridge logs' shape ----------------------------------------

def _bridge_logs() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    v1m = Jobber(prefix="live", loop=True, version="1")
    v1 = write_log(v1m, [{"type": "GO"}, {"type": "xstate.done.actor", "actorId": "job",
                                          "output": 1}], input={"attempt": 1})
    last = replay(v1m, v1).persisted
    v2m = Jobber(prefix="live", loop=True, version="2")
    v2 = write_log(v2m, [{"type": "GO"}, {"type": "NOOP"}], input={"attempt": 1})
    bridge = copy.deepcopy(v2[0])
    bridge["event"] = {"type": "@agent.init", "snapshot": last}
    bridge["machineVersion"] = "2"
    bridge["metadata"]["migratedFrom"] = {"machineVersion": "1", "logIndex": len(v1)}
    bridge["verification"] = {"stateHash": state_hash(last)}
    s = v2m.restore(last)
    v2 = [bridge]
    for i, ev in enumerate([{"type": "GO"}, {"type": "NOOP"}], start=1):
        s = v2m.transition(s, ev)
        e = copy.deepcopy(v1[1])
        e.update(id=f"evt_{i:08d}", index=i, machineVersion="2", event=ev,
                 verification={"stateHash": state_hash(s.persisted)})
        v2.append(e)
    return v1, v2


def _assert_index_restart_only(rep: Any, at: int) -> None:
    """The report fails exactly at the restarted index, with read_log's message."""
    assert not rep.ok
    assert list(rep.df.index[rep.df["failed"]]) == [at]
    (reason,) = rep.problems_of(at)
    assert reason.startswith("non-contiguous: Event log must be contiguous from index 0; "
                             f"found entry.index 0 at position {at}")


def test_bridge_segments_with_machines_per_version() -> None:
    v1, v2 = _bridge_logs()
    m1, m2 = Jobber(loop=True, version="1"), Jobber(loop=True, version="2")
    assert replay(m2, v2, verify="strict").length == 3
    both = v1 + v2
    rep = verify(None, both, machines={"1": m1, "2": m2}, strict=True)
    assert list(rep.df["segment"]) == [0, 0, 0, 1, 1, 1]
    assert list(rep.df["computed_hash"]) == list(rep.df["recorded_hash"])  # each segment replays
    # the v2 segment's bridge init restarts its own numbering at 0 (§1.5, §4.2 step 3)
    assert rep.ok, rep.summary()
    assert _whole(rep) == []  # migratedFrom names segment 0, executionId inherited
    twice = verify(m1, v1 + v1)
    _assert_index_restart_only(twice, 3)
    assert _whole(twice) == ["bridge-link"]  # ... and it is no bridge (a note: not a failure)
    assert twice.log_failures.empty
    bad_link = copy.deepcopy(both)
    bad_link[3]["metadata"]["migratedFrom"]["logIndex"] = 9
    notes = verify(None, bad_link, machines={"1": m1, "2": m2})
    assert _whole(notes) == ["bridge-link"] and "logIndex" in notes.problems["message"].iloc[-1]
    missing = verify(None, both, machines={"1": m1})
    assert not missing.ok
    (kind, detail), = missing.log_failures[["kind", "message"]].itertuples(index=False)
    assert kind == "no-machine" and "segment 1" in detail and "'2'" in detail
    assert (missing.df["verdict"][3:] == "unchecked").all()
    tl = Timeline(None, both, machines={"1": m1, "2": m2}, checkpoint_every=2)
    assert [f.computed_hash for f in tl] == [e["verification"]["stateHash"] for e in both]
    assert tl[3].changed_paths  # a segment start lists every member


# -- Timeline ------------------------------------------------------------------------------------

def _long_log(n_runs: int, seed: int = 7) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    events: list[dict[str, Any]] = []
    for r in range(n_runs):
        events.append({"type": "GO"})
        if rng.random() < 0.3:
            events.append({"type": "NOOP"})
        events.append({"type": "xstate.done.actor", "actorId": "job", "output": r})
    return write_log(Jobber(prefix="live", loop=True), events, input={"attempt": 1})


def test_checkpoint_seek_equals_full_fold_for_every_n() -> None:
    log = _long_log(1200)
    assert len(log) > 2400
    m = Jobber(prefix="fold", loop=True)
    full = [state_hash(m.persist(s)) for s in
            [m.initial({"attempt": 1}), *m.fold(m.initial({"attempt": 1}),
                                                [e["event"] for e in log[1:]])]]
    assert full == [e["verification"]["stateHash"] for e in log]
    tl = Timeline(m, log, checkpoint_every=97, cache_size=8)
    assert tl.report.ok
    order = list(range(len(log)))
    random.Random(1).shuffle(order)
    for n in order:  # random seeks: each restores a checkpoint and folds forward
        f = tl[n]
        assert f.index == n
        assert state_hash(f.persisted) == full[n]
    assert tl.seek_fallbacks == 0
    for n in range(len(log)):  # sequential steps continue the last fold
        assert state_hash(tl.at(n).persisted) == full[n]
    assert tl.seek_fallbacks == 0
    assert len(tl.checkpoint_indices) == (len(log) + 96) // 97


def test_stale_session_after_checkpoint_is_kept_with_the_checkpoint() -> None:
    # A completion for an old session arrives after a checkpoint: a fresh rebinding cache would
    # bind it to the new child; the checkpoint keeps that stale key, so the seek drops it too.
    events: list[dict[str, Any]] = [
        {"type": "GO"}, {"type": "xstate.done.actor", "actorId": "job", "output": 1},
        {"type": "GO"}, {"type": "NOOP"}, {"type": "NOOP"},
        {"type": "xstate.done.actor", "actorId": "job", "sessionId": "live:1", "output": "stale"},
        {"type": "xstate.done.actor", "actorId": "job", "output": 2},
    ]
    log = write_log(Jobber(prefix="live", loop=True), events, input={"attempt": 1})
    m = Jobber(prefix="fold", loop=True)
    assert verify(m, log, strict=True).ok
    tl = Timeline(m, log, checkpoint_every=4, cache_size=0)
    f = tl[6]
    assert f.context["result"] == 1 and f.ignored  # the stale completion was dropped
    assert state_hash(f.persisted) == log[6]["verification"]["stateHash"]
    assert tl.seek_fallbacks == 0
    assert [len(tl._index.checkpoint_sessions.get(c, [])) for c in (0, 4)] == [0, 1]
    assert [state_hash(x.persisted) for x in tl] == [e["verification"]["stateHash"] for e in log]
    assert list(tl.changes("/context/result")["after"]) == [None, 1, 2]


class _LossyRestore(Jobber):
    """``restore`` loses ``runs``: a broken engine the seek check must not trust."""

    def restore(self, persisted: Any) -> Any:
        s = super().restore(persisted)
        s.persisted["context"]["runs"] = -1
        return s


def test_seek_hash_check_falls_back_to_a_full_fold() -> None:
    log = _long_log(20)
    m = _LossyRestore(prefix="fold", loop=True)
    tl = Timeline(m, log, checkpoint_every=8, cache_size=0)
    assert tl.report.ok  # the indexing pass never restores
    f = tl[30]
    assert state_hash(f.persisted) == log[30]["verification"]["stateHash"]
    assert f.context["runs"] >= 0
    assert tl.seek_fallbacks == 1


def test_frame_fields_changed_paths_and_changes() -> None:
    log = _long_log(5)
    m = Jobber(prefix="fold", loop=True)
    tl = Timeline(m, log, checkpoint_every=3)
    assert len(tl) == len(log) and tl.log is log and tl.machine is m
    f = tl[1]  # GO
    assert f.event_type == "GO" and f.value == "working" and "job" in f.children
    assert set(f.changed_paths) >= {"/value", "/children/job"}
    assert f.verdict is Verdict.VERIFIED and f.recorded_hash == f.computed_hash
    done = next(x for x in tl if x.event_type == "xstate.done.actor")
    assert "/context/runs" in done.changed_paths and "/context/result" in done.changed_paths
    ch = tl.changes("/context/runs")
    assert list(ch["after"]) == list(range(6))
    assert list(ch["op"]) == ["add"] + ["replace"] * 5
    assert (ch["event_type"][1:] == "xstate.done.actor").all()
    assert list(ch["before"][1:]) == list(range(5))
    with pytest.raises(ValueError):
        tl.changes("context/runs")
    with pytest.raises(IndexError):
        tl[len(log)]


def test_timeline_without_machine() -> None:
    tl = Timeline(None, SPEC_72)
    f = tl[2]
    assert f.persisted is None and f.verdict is Verdict.UNCHECKED
    assert f.recorded_hash == "feb93e40" and f.event_type == "SCALE"
    with pytest.raises(ValueError):
        tl.changes("/context")


def test_timeline_report_and_mismatch_indices() -> None:
    log = copy.deepcopy(SPEC_72)
    log[1]["verification"]["stateHash"] = "deadbeef"
    tl = Timeline(SpecCounter(), log, checkpoint_every=2)
    assert tl.mismatch_indices == [1]
    assert tl[1].verdict is Verdict.MISMATCH
    assert tl.report.first_mismatch is not None
    html = tl.report._repr_html_()
    assert "deadbeef" in html and "<table>" in html


def test_report_html_escapes_log_content() -> None:
    log = copy.deepcopy(SPEC_72)
    log[1]["id"] = "<script>alert(1)</script>"
    log[1]["verification"]["stateHash"] = "<b>x</b>"
    rep = verify(SpecCounter(), log)
    html = rep._repr_html_()
    assert "<script>" not in html and "&lt;script&gt;" in html
    assert "<b>x</b>" not in html
    assert repr(rep).startswith("<VerifyReport log: FAILED")


def test_fixture_files_are_repo_copies() -> None:
    assert FIXTURES.is_dir() and "tests" in FIXTURES.parts


def test_timer_started_long_before_is_found_from_where_it_appeared() -> None:
    live = Jobber(prefix="live", loop=True)
    log = write_log(live, [{"type": "WAIT"}, {"type": "NOOP"}, {"type": "NOOP"}],
                    input={"attempt": 1}, step_ms=10_000)
    started = 1767225600000 + 10_000 + 42  # 42 ms after entry 1 (WAIT) was recorded
    del log[1]["verification"], log[2]["verification"]  # nothing to confirm it earlier
    snap = live.initial({"attempt": 1})
    for e in log[1:]:
        snap = live.transition(snap, e["event"])
    persisted = copy.deepcopy(dict(snap.persisted))
    for t in persisted["timers"].values():
        t["startedAt"] = started
    log[3]["verification"]["stateHash"] = state_hash(persisted)
    rep = verify(Jobber(loop=True), log)
    assert rep.ok, rep.summary()
    assert rep.df.loc[3, "verdict"] == "explained"
    assert f"startedAt={started}" in rep.df.loc[3, "explanation"]


class _Exploding(SpecCounter):
    """Raises on a BOOM event; in batch mode it names the failing event like the Node engine."""

    def __init__(self, *, name_index: bool) -> None:
        self.name_index = name_index

    def fold(self, seed: Any, events: Any, *, sessions: Any = None) -> Any:
        events = list(events)
        for k, ev in enumerate(events):
            if ev.get("type") == "BOOM":
                err = RuntimeError("machine threw")
                if self.name_index and len(events) > 1:
                    err.index = k  # type: ignore[attr-defined]
                raise err
        return super().fold(seed, events, sessions=sessions)


@pytest.mark.parametrize("name_index", [True, False])
def test_engine_failure_mid_batch(name_index: bool) -> None:
    log = copy.deepcopy(SPEC_72)
    log[3]["event"] = {"type": "BOOM"}
    m = _Exploding(name_index=name_index)
    with pytest.raises(RuntimeError) as ei:
        replay(m, log)
    assert "while replaying entry 3" in "".join(ei.value.__notes__)
    tampered = copy.deepcopy(log)
    tampered[1]["verification"]["stateHash"] = "deadbeef"
    with pytest.raises(ReplayDivergenceError) as e2:  # the earlier divergence is reported first
        replay(m, tampered)
    assert e2.value.index == 1
    rep = verify(m, log)
    assert not rep.ok
    row = rep.first_mismatch
    assert row is not None and row["index"] == 3 and row["kind"] == "engine-error"
    assert list(rep.df["verdict"]) == ["verified"] * 3 + ["unchecked"] * 2  # not replayed


def test_engine_failure_names_the_entry_and_is_typed() -> None:
    """A raw exception from the machine's own code is an engine-error row naming the entry, typed
    MachineExecutionError (index = the log position), the original as its cause."""
    from agentscope.errors import MachineExecutionError

    log = copy.deepcopy(SPEC_72)
    log[3]["event"] = {"type": "BOOM"}
    rep = verify(_Exploding(name_index=False), log)
    (row,) = rep.problems[rep.problems["kind"] == "engine-error"].to_dict("records")
    assert (row["index"], row["message"]) == (
        3, "entry 3 ('evt_00000003', 'BOOM'): the machine 'counter' raised RuntimeError: machine threw")
    (err,) = rep.errors
    assert type(err) is MachineExecutionError and (err.index, err.event_type) == (3, "BOOM")
    assert isinstance(err.__cause__, RuntimeError) and rep.machine_mismatch is None


def test_verify_with_another_machine_tells_one_story() -> None:
    """The wrong machine (another id, the bundled triage log verified with the ticket machine):
    the machine mismatch comes first everywhere, and the engine failure it causes (the ticket
    machine's context function reads an input key the triage log never had) is one typed
    engine-error row worded as its consequence, not a raw ``KeyError: 'title'``."""
    from agentscope.errors import MachineExecutionError
    from agentscope.examples import example_path
    from agentscope.examples.python_machines import ticket_v1

    log = read_log(example_path("g_triage.sqlite"), thread="main")
    rep = verify(ticket_v1(), log)
    assert rep.machine_mismatch == "91 of 91 entries target 'supportTriage'@'efe50ed5', not the machine 'ticket'@'1'"
    assert rep.problems["kind"].value_counts().to_dict() == {"machine-mismatch": 91, "engine-error": 1}
    (row,) = rep.problems[rep.problems["kind"] == "engine-error"].to_dict("records")
    assert (row["index"], row["message"]) == (0, (
        "entry 0 ('evt_00000000', '@agent.init'): a consequence of the machine mismatch (the log's "
        "entries target 'supportTriage'@'efe50ed5', the machine is 'ticket'@'1'): the machine "
        "'ticket' raised in its context function: KeyError: 'title'"))
    assert list(rep.problems["kind"][:2]) == ["machine-mismatch", "engine-error"]  # mismatch first
    assert [type(e).__name__ for e in rep.errors[:2]] == ["MachineVersionMismatchError", "MachineExecutionError"]
    assert isinstance(rep.errors[1], MachineExecutionError) and rep.errors[1].index == 0
    assert rep.summary().startswith(
        f"{log.source}: FAILED - 91 entries (machine mismatch: 91 of 91 entries target "
        "'supportTriage'@'efe50ed5', not the machine 'ticket'@'1'): 91 unchecked; first failure at entry 0")
    with pytest.raises(MachineVersionMismatchError):
        rep.raise_if_failed()


def test_engine_failure_after_a_version_mismatch_is_its_consequence() -> None:
    """Same machine id, another version whose INC reads a context key the log's machine never
    had: entry 0 still replays (a state mismatch), entry 1 fails, worded as the consequence."""
    from agentscope.engines.statechart import StatechartMachine

    m = StatechartMachine({"id": "counter", "version": "9", "initial": "off", "states": {"off": {}},
                           "context": {"other": 0},
                           "on": {"INC": lambda c, e: {"context": {"n": c["n"] + 1}}}})
    rep = verify(m, read_log(FIXTURES / "a_counter.log.json"))
    assert rep.machine_mismatch == "17 of 17 entries target 'counter'@'adb004a6', not the machine 'counter'@'9'"
    (row,) = rep.problems[rep.problems["kind"] == "engine-error"].to_dict("records")
    assert (row["index"], row["message"]) == (1, (
        "entry 1 ('evt_00000001', 'INC'): a consequence of the machine mismatch (the log's entries "
        "target 'counter'@'adb004a6', the machine is 'counter'@'9'): the machine 'counter' raised "
        "on event 'INC': KeyError: 'n'"))
    assert list(rep.df["verdict"]) == ["mismatch"] + ["unchecked"] * 16


def test_verify_reports_structure_problems_once_each() -> None:
    log = copy.deepcopy(SPEC_72)
    del log[2]  # a gap: entries 3 and 4 are contiguous with each other
    log[3]["id"] = log[1]["id"]
    rep = verify(SpecCounter(), log)
    reasons = {i: "; ".join(rep.problems_of(i)) for i in rep.mismatches["index"]}
    assert reasons[2].startswith("non-contiguous") and "found entry.index 3 at position 2" in reasons[2]
    assert "duplicate-id" in reasons[3] and "non-contiguous" not in reasons[3]
    assert not rep.ok
    with pytest.raises(LogFormatError):
        replay(SpecCounter(), log)


def test_auto_checkpoint_interval() -> None:
    log = _long_log(300)
    m = Jobber(prefix="fold", loop=True)
    tl = Timeline(m, log, checkpoint_every="auto")
    k = tl.checkpoint_every
    assert 16 <= k <= 1024 and k & (k - 1) == 0  # a power of two
    assert tl.checkpoint_indices == list(range(0, len(log), k))
    for n in (len(log) - 1, 5, min(k + 1, len(log) - 2), len(log) // 2):
        tl.clear_cache()
        assert state_hash(tl[n].persisted) == log[n]["verification"]["stateHash"]
    assert Timeline(m, SPEC_73[:2], checkpoint_every="auto").checkpoint_every == 1024  # too short
    with pytest.raises(ValueError, match="checkpoint_every"):
        Timeline(m, log, checkpoint_every=0)


def test_first_mismatch_is_plain_python() -> None:
    log = copy.deepcopy(SPEC_72)
    log[4]["verification"]["stateHash"] = "00000000"
    row = verify(SpecCounter(), log).first_mismatch
    assert row is not None
    assert type(row["index"]) is int and type(row["failed"]) is bool
    assert row == {
        "index": 4, "segment": 0, "id": "evt_00000004", "event_type": "DONE",
        "recorded_hash": "00000000", "computed_hash": "76e9d64c", "verdict": "mismatch",
        "kind": "state-mismatch", "explanation": row["explanation"], "ignored": False, "failed": True,
    }
    assert verify(SpecCounter(), log).problems_of(4) == [
        "state-mismatch: expected '00000000', got '76e9d64c'"]
    assert row["explanation"].startswith("unexplained: hash variant 8b7f21a0 does not")


_EVENTS = st.sampled_from([
    {"type": "GO"}, {"type": "NOOP"}, {"type": "WAIT"},
    {"type": "xstate.timer", "id": "xstate.after.1000.jobber.waiting"},
    {"type": "xstate.done.actor", "actorId": "job", "output": "x"},
    {"type": "xstate.done.actor", "actorId": "job", "sessionId": "live:1", "output": "old"},
])


@settings(max_examples=30, deadline=None)
@given(events=st.lists(_EVENTS, min_size=1, max_size=60), k=st.integers(1, 9),
       order_seed=st.integers(0, 1000))
def test_property_seek_equals_full_fold(events: list[dict[str, Any]], k: int,
                                        order_seed: int) -> None:
    log = write_log(Jobber(prefix="live", loop=True), events, input={"attempt": 1})
    m = Jobber(prefix="fold", loop=True)
    assert verify(m, log, strict=True).ok  # the full fold reproduces every live hash
    tl = Timeline(m, log, checkpoint_every=k, cache_size=0)
    order = list(range(len(log)))
    random.Random(order_seed).shuffle(order)
    for n in order:
        tl.clear_cache()
        assert state_hash(tl[n].persisted) == log[n]["verification"]["stateHash"]
    assert tl.seek_fallbacks == 0


def test_changes_range_equals_the_slice_of_the_whole() -> None:
    log = _long_log(40)
    tl = Timeline(Jobber(prefix="fold", loop=True), log, checkpoint_every=7)
    whole = tl.changes("/context/runs")
    for lo, hi in [(0, 10), (9, 30), (15, 16), (31, len(log)), (50, 40)]:
        part = tl.changes("/context/runs", start=lo, stop=hi)
        want = whole[(whole["index"] >= lo) & (whole["index"] < hi)].reset_index(drop=True)
        assert part.to_dict("list") == want.to_dict("list"), (lo, hi)
    value = tl.changes("/value")
    assert list(value["after"][:3]) == ["idle", "working", "idle"]


def test_era_b_projection_hash_explained() -> None:
    log = copy.deepcopy(SPEC_72)
    era_b = ["8cf55db6", "f62d403c", "5cab314e", "8df08d51", "b4d0931a"]  # spec §7.2
    for e, h in zip(log, era_b, strict=True):
        e["verification"] = {"stateHash": h, "effectsHash": "0059765d"}
    rep = verify(SpecCounter(), log)
    assert rep.ok and set(rep.df["verdict"]) == {"explained"}
    assert "Era-B" in rep.df.loc[0, "explanation"]


def test_replay_verify_and_timeline_accept_a_path() -> None:
    import agentscope as a
    from agentscope.examples.python_machines import counter_machine
    from tests.conftest import FIXTURES

    path = FIXTURES / "a_counter.log.json"
    m = counter_machine()
    result = a.replay(m, path)
    assert result.state_hash == "89cb3948"  # fixtures README: final hash of scenario a
    assert "89cb3948" in repr(result) and "context" not in repr(result)
    assert a.verify(m, str(path)).ok
    assert a.Timeline(m, path)[7].computed_hash == "bd5badab"  # README prefix n=8 -> entry 7


@pytest.mark.parametrize("bad", [42, "counter", dict])
def test_machines_values_must_be_machines(bad: Any) -> None:
    v1, _ = _bridge_logs()
    with pytest.raises(TypeError, match=r"machines\['1'\] must be a Machine.*got (int|str|type)"):
        verify(None, v1, machines={"1": bad})
    with pytest.raises(TypeError, match=r"machines\['1'\]"):
        Timeline(None, v1, machines={"1": bad})
    with pytest.raises(TypeError, match="mapping of machineVersion"):
        verify(None, v1, machines=[Jobber(loop=True, version="1")])  # type: ignore[arg-type]


def test_concatenation_restarting_indices_is_a_problem_like_read_log() -> None:
    """Spec §1.3: positions and indices agree across one log; read_log (one log) rejects the
    restart, and verify reports it too unless the restarting segment is a version bridge (§1.5)."""
    v1, v2 = _bridge_logs()
    with pytest.raises(EntryValidationError, match=r"found entry\.index 0 at position 3"):
        read_log(v1 + v2)
    plain = copy.deepcopy(v1 + v2)
    del plain[3]["metadata"]["migratedFrom"]  # a second init that is no bridge
    rep = verify(None, plain, machines={"1": Jobber(loop=True, version="1"),
                                         "2": Jobber(loop=True, version="2")})
    _assert_index_restart_only(rep, 3)
    assert "FAILED" in rep.summary() and "position 3" in rep.summary()
    renumbered = copy.deepcopy(v1 + v2)
    for i, e in enumerate(renumbered):
        e["index"], e["id"] = i, f"evt_{i:08d}"
    ok = verify(None, renumbered, machines={"1": Jobber(loop=True, version="1"),
                                            "2": Jobber(loop=True, version="2")})
    assert not ok.df["failed"].any(), ok.summary()


def test_verify_report_problems_share_the_log_problems_vocabulary() -> None:
    """VerifyReport.problems has the fixed columns and ProblemKind codes of EventLog.problems."""
    from agentscope.log.problems import PROBLEM_COLUMNS, ProblemKind

    log = copy.deepcopy(SPEC_72)
    log[4]["verification"]["stateHash"] = "00000000"
    log[2]["machineVersion"] = "other"
    rep = verify(SpecCounter(), log, strict=True)
    probs = rep.problems
    assert tuple(probs.columns) == PROBLEM_COLUMNS
    assert set(probs["kind"]) <= {k.value for k in ProblemKind}
    by_kind = {r["kind"]: r for r in probs.to_dict("records")}
    mm = by_kind["state-mismatch"]
    assert (mm["index"], mm["id"], mm["expected"], mm["actual"]) == (4, "evt_00000004", "00000000", "76e9d64c")
    ident = by_kind["machine-mismatch"]
    assert ident["index"] == 2 and ident["actual"] == "counter@other"
    assert ident["expected"] == f"counter@{SpecCounter().version}"
    assert rep.df.loc[4, "kind"] == "state-mismatch" and rep.df.loc[0, "kind"] is None
    assert list(probs["index"]) == sorted(probs["index"])
    assert not verify(SpecCounter(), SPEC_72).problems.shape[0]
    empty = verify(SpecCounter(), []).problems
    assert list(empty["kind"]) == ["empty-log"] and empty["index"].isna().all()


def test_a_log_without_machine_identity_replays_with_the_given_machine() -> None:
    """A table-born log (no machine columns: '(machine)'@'(unversioned)') replays with any machine;
    a log naming another machine still does not."""
    import pandas as pd

    from agentscope import read_log, replay, verify
    from agentscope.errors import MachineVersionMismatchError
    from agentscope.examples.python_machines import counter_machine

    table = pd.DataFrame({"type": ["INC", "TOGGLE", "INC"], "by": [2, None, 3]})
    log = read_log(table, columns={"type": "type", "payload": ["by"]})
    assert {(e["machineId"], e["machineVersion"]) for e in log.entries} == {("(machine)", "(unversioned)")}
    result = replay(counter_machine(), log)
    assert (result.length, result.snapshot.value, result.snapshot.context["count"]) == (4, "on", 5)
    assert verify(counter_machine(), log).counts()["missing"] == 4
    named = read_log(table.assign(m="other"), columns={"type": "type", "machine_id": "m"})
    with pytest.raises(MachineVersionMismatchError, match="targets machine 'other'@'\\(unversioned\\)'"):
        replay(counter_machine(), named)


def test_a_state_that_cannot_be_hashed_mid_chunk_is_one_engine_error() -> None:
    """The pass hashes snapshots in chunks: a snapshot that cannot be hashed (a non-JSON context
    value) inside a chunk stops the segment there as one engine-error row, with every entry
    before it judged once (a mismatch before it is one row, not two) and none after it replayed."""
    from agentscope.engines.statechart import StatechartMachine

    def bump(c: Any, e: Any) -> Any:
        return {"context": {"n": c["n"] + 1, "bad": object() if e.get("poison") else None}}

    m = StatechartMachine({"id": "poison", "initial": "a", "context": {"n": 0, "bad": None},
                           "states": {"a": {"on": {"BUMP": bump}}}})
    n, bad_at = 1200, 700  # the second chunk of 512
    plain = [{"type": "BUMP", "poison": i == bad_at} for i in range(1, n)]
    s = m.initial(None)
    hashes = [state_hash(m.persist(s))]
    for ev in plain[: bad_at - 1]:
        s = m.transition(s, ev)
        hashes.append(state_hash(m.persist(s)))
    log = [
        {"schemaVersion": 1, "id": f"e{i}", "index": i, "recordedAt": iso(i), "machineId": "poison",
         "machineVersion": m.version,
         "event": {"type": "@agent.init"} if i == 0 else plain[i - 1],
         **({"verification": {"stateHash": hashes[i]}} if i < len(hashes) else {})}
        for i in range(n)
    ]
    log[600]["verification"]["stateHash"] = "deadbeef"  # a mismatch in the failing chunk
    rep = verify(m, log, explain=False)
    assert rep.problems["kind"].tolist() == ["state-mismatch", "engine-error"]
    verdicts = rep.df["verdict"].tolist()
    assert verdicts[:bad_at] == ["verified"] * 600 + ["mismatch"] + ["verified"] * (bad_at - 601)
    assert set(verdicts[bad_at:]) <= {"missing", "unchecked"}
    assert rep.problems["index"].tolist() == [600, bad_at]  # the entry whose state cannot be hashed


def test_snapshot_store_truncated_continues_as_the_store_that_stopped_there() -> None:
    """SnapshotStore.truncated(n) and adding the same snapshots again gives the original store
    (keyframes, bytes, chain), and every position reads back the same."""
    from agentscope.pipeline.snapshots import SnapshotStore

    snaps = [{"value": "s", "context": {"n": i // 3, "log": list(range(i % 7))}} for i in range(60)]
    full = SnapshotStore(5, max_chain=4)
    for p in snaps:
        assert full.add(p)
    for n in (5, 6, 9, 23, 64, 65):
        cut = full.truncated(n)
        assert (cut.start, cut.stop, cut.full) == (5, n, False)
        assert [cut.get(i) for i in range(5, n)] == snaps[: n - 5]
        assert cut.keyframes == [k for k in full.keyframes if k < n]
        for p in snaps[n - 5:]:
            assert cut.add(p)
        assert (cut.keyframes, cut.nbytes, cut._since_key, cut._chain) == (
            full.keyframes, full.nbytes, full._since_key, full._chain)
    small = SnapshotStore(0, budget=400)
    stored = sum(small.add(p) for p in snaps)
    assert small.full and 0 < stored < 60
    again = small.truncated(stored - 1)
    assert not again.full and again.add(snaps[stored - 1]) and not again.add(snaps[stored])


def test_the_pass_holds_few_large_states_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """Chunks are budgeted by bytes: with ~600 KB states the pass judges at most a handful at a
    time (not 512), and still verifies every entry."""
    import agentscope.pipeline.onepass as onepass
    from agentscope.engines.statechart import StatechartMachine
    m = StatechartMachine({"id": "big", "initial": "a", "context": {"blob": "x" * 600_000, "n": 0},
                           "states": {"a": {"on": {"BUMP": lambda c, e: {"context": {"n": c["n"] + 1}}}}}})
    s = m.initial(None)
    log = []
    for i in range(120):
        if i:
            s = m.transition(s, {"type": "BUMP"})
        log.append({"schemaVersion": 1, "id": f"e{i}", "index": i, "recordedAt": iso(i), "machineId": "big",
                    "machineVersion": m.version, "event": {"type": "@agent.init" if i == 0 else "BUMP"},
                    "verification": {"stateHash": state_hash(m.persist(s))}})
    sizes: list[int] = []
    real = onepass._SegmentPass._take

    def spy(self: Any, entries: Any, first: int, chunk: Any, spans: Any) -> None:
        sizes.append(len(chunk))
        real(self, entries, first, chunk, spans)

    monkeypatch.setattr(onepass._SegmentPass, "_take", spy)
    rep = verify(m, log)
    assert rep.ok and rep.counts()["verified"] == 120
    assert sum(sizes) == 120 and max(sizes) <= 16 and sizes[-2] <= 8

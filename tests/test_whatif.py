"""What-if replay: recorded history under a changed machine (agentscope.counterfactual, spec §4.1, §1.5).

The planted change is one guard of the real triage machine (REJECT allowed while
``rejections < 2`` becomes ``< 1``); the expected divergence is computed independently from the
original machine's replay: the first REJECT that arrives with ``rejections >= 1``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import agentscope
from agentscope.cli import main
from agentscope.counterfactual import WHATIF_COLUMNS, WhatIf
from agentscope.engines.statechart import StatechartMachine
from agentscope.examples.python_machines import ticket_v1, ticket_v2
from tests.conftest import FIXTURES, REPO, load_json, requires_node

STORE = REPO / "agentscope" / "examples" / "g_triage.sqlite"
TRIAGE = REPO / "agentscope" / "examples" / "machines" / "triage.mjs"
GUARD = "context.rejections < 2"


def _copy_machine(tmp: Path, name: str, old: str | None = None, new: str | None = None) -> Path:
    text = TRIAGE.read_text(encoding="utf-8")
    if old is not None and new is not None:
        assert text.count(old) == 1
        text = text.replace(old, new)
    target = tmp / name
    target.write_text(text, encoding="utf-8")
    if not (tmp / "node_modules").exists():
        (tmp / "node_modules").symlink_to(REPO / "node_modules")
    return target


@pytest.fixture(scope="module")
def machines(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    tmp = tmp_path_factory.mktemp("whatif")
    changed = _copy_machine(tmp, "changed.mjs", GUARD, "context.rejections < 1")
    same = _copy_machine(tmp, "same.mjs")
    live = {
        "old": agentscope.load_machine(str(TRIAGE), "triageMachine"),
        "changed": agentscope.load_machine(str(changed), "triageMachine"),
        "same": agentscope.load_machine(str(same), "triageMachine"),
    }
    yield {"dir": tmp, "changed_path": changed, "same_path": same, **live}
    for m in live.values():
        m.close()


def _expected_divergence(old: Any, thread: str) -> int | None:
    """Oracle: the first REJECT arriving with rejections >= 1 under the original machine."""
    tl = agentscope.Timeline(old, agentscope.read_log(STORE, thread=thread))
    for i in range(1, len(tl)):
        if tl[i].event_type == "REJECT" and tl[i - 1].context["rejections"] >= 1:
            return i
    return None


@requires_node
def test_planted_guard_change_found_at_exactly_the_right_entry(machines: dict[str, Any]) -> None:
    result = agentscope.whatif(STORE, machines["changed"])
    assert isinstance(result, WhatIf)
    assert list(result.df.columns) == list(WHATIF_COLUMNS)
    assert result.df.set_index("thread")["first_divergence"].to_dict()["fork"] == 20
    expected = {t: _expected_divergence(machines["old"], t) for t in ("fork", "main", "second")}
    assert expected == {"fork": 20, "main": None, "second": None}  # the store has one double reject
    got = {t.thread: t.first_divergence for t in result.threads}
    assert got == expected
    fork = result["fork"]
    assert fork.kind == "diverges" and fork.event_type == "REJECT" and fork.event_id == "evt_00000020"
    # the new machine ignores the second REJECT: its state stays the one before
    assert fork.new is not None and fork.before is not None
    assert fork.new.persisted == fork.before.persisted
    assert fork.recorded_hash == agentscope.read_log(STORE, thread="fork")[20]["verification"]["stateHash"]
    assert fork.new_hash != fork.recorded_hash
    assert fork.ignored[0] == 20
    assert "ignores it" in fork.detail
    assert [result[t].kind for t in ("main", "second")] == ["identical", "identical"]
    assert not result.identical and [t.thread for t in result.diverged] == ["fork"]


@requires_node
def test_unchanged_copy_is_identical(machines: dict[str, Any]) -> None:
    result = agentscope.whatif(STORE, machines["same"])
    assert result.identical
    assert result.df["kind"].tolist() == ["identical"] * 3
    assert result.df["first_divergence"].isna().all()
    assert result.df["entries"].tolist() == [52, 91, 40]


@requires_node
def test_baseline_gives_both_states_and_the_structural_diff(machines: dict[str, Any]) -> None:
    result = agentscope.whatif(STORE, machines["changed"], baseline=machines["old"], threads=["fork"])
    fork = result["fork"]
    assert fork.first_divergence == 20 and fork.changes_vs == "recorded"
    assert fork.recorded is not None and fork.new is not None
    assert fork.recorded.context["rejections"] == 2 and fork.new.context["rejections"] == 1
    by_path = {c.path: (c.left, c.right) for c in fork.changes}
    assert by_path["/context/rejections"] == (2, 1)
    assert by_path["/value/working/awaitingAgent"] == ("drafting", "reviewing")
    # the detail names the side compared with: the baseline's replay, not the recorded run
    assert "; vs baseline: /context/draft, /context/rejections" in fork.detail
    assert "vs recorded" not in fork.detail
    # later REJECT/APPROVE pairs also meet a machine in another state
    assert set(fork.ignored) >= {20}
    html = result._repr_html_()
    assert "/context/rejections" in html and "fork" in html


@requires_node
def test_whatif_over_a_process_pool_matches_in_process(machines: dict[str, Any]) -> None:
    spec = f"{machines['changed_path']}:triageMachine"
    pooled = agentscope.whatif(STORE, spec, max_workers=2)
    serial = agentscope.whatif(STORE, machines["changed"])
    assert pooled.df.drop(columns="detail").equals(serial.df.drop(columns="detail"))
    assert pooled["fork"].ignored == serial["fork"].ignored


@requires_node
def test_view_is_a_forkview_at_the_divergence(machines: dict[str, Any]) -> None:
    pytest.importorskip("ipywidgets")
    result = agentscope.whatif(STORE, machines["changed"], baseline=machines["old"], threads=["fork"])
    view = result.view()
    assert view.divergence == 20 and view.step == 20
    a, b = view.frames()
    assert a is not None and b is not None
    assert a.context["rejections"] == 2 and b.context["rejections"] == 1
    assert "/context/rejections" in view.diff_paths()


@requires_node
def test_cli_whatif_exit_codes(machines: dict[str, Any], capsys: pytest.CaptureFixture[str]) -> None:
    changed, same = str(machines["changed_path"]), str(machines["same_path"])
    assert main(["whatif", str(STORE), "--machine", same, "--workers", "1"]) == 0
    assert "identical" in capsys.readouterr().out
    assert main(["whatif", f"{STORE}#fork", "--machine", changed, "--json"]) == 1
    data = json.loads(capsys.readouterr().out)
    assert data["diverged"] == 1
    row = data["results"][0]
    assert (row["thread"], row["first_divergence"], row["event_type"]) == ("fork", 20, "REJECT")
    assert main(["whatif", f"{STORE}#fork", "--machine", changed, "--baseline", str(TRIAGE)]) == 1
    out = capsys.readouterr().out
    assert "fork @20 /context/rejections: 2 -> 1" in out
    # another machine id is bad input, as is a missing store
    counter = FIXTURES / "machines" / "counter.mjs"
    assert main(["whatif", f"{STORE}#main", "--machine", str(counter)]) == 2
    assert "machine-mismatch" in capsys.readouterr().err
    assert main(["whatif", str(machines["dir"] / "nope.sqlite"), "--machine", same]) == 2


# ---------------------------------------------------------------------------------------------
# Python configs and version bridges (no Node needed)


def _lineage() -> list[dict[str, Any]]:
    return list(load_json("e_bridge.v1.log.json")) + list(load_json("e_bridge.v2.log.json"))


def _ticket_v2_variant(**changes: Any) -> StatechartMachine:
    cfg = ticket_v2().config
    cfg = {**cfg, **changes}
    return StatechartMachine(cfg)


def test_bridged_lineage_replays_each_segment_with_its_machine() -> None:
    lineage = _lineage()
    same = agentscope.whatif(lineage, ticket_v2(), machines={"1": ticket_v1()})
    assert same.identical and same[0].compared == len(lineage)
    # ESCALATE no longer raises the priority: the first v2 ESCALATE (entry 6 of the lineage)
    states = dict(ticket_v2().config["states"])
    in_progress = {**states["inProgress"], "on": {**states["inProgress"]["on"], "ESCALATE": {}}}
    changed = _ticket_v2_variant(states={**states, "inProgress": in_progress})
    out = agentscope.whatif(lineage, changed, machines={"1": ticket_v1()})
    t = out[0]
    escalate = next(i for i, e in enumerate(lineage) if e["event"]["type"] == "ESCALATE")
    assert (t.kind, t.first_divergence) == ("diverges", escalate)
    assert escalate == 6 and t.ignored[0] == escalate


def test_a_bridge_snapshot_the_new_machine_cannot_restore_is_reported() -> None:
    # the new v2 renames state inProgress to working: the bridge snapshot (value "inProgress")
    # cannot be restored by it
    states = dict(ticket_v2().config["states"])
    states["working"] = states.pop("inProgress")
    states["open"] = {"on": {**states["open"]["on"], "START": {"target": "working"}}}
    states["review"] = {"on": {**states["review"]["on"], "REOPEN": {"target": "working"}}}
    changed = _ticket_v2_variant(states=states)
    lineage = _lineage()
    out = agentscope.whatif(lineage, changed, machines={"1": ticket_v1()})
    t = out[0]
    assert t.kind == "cannot-restore" and t.first_divergence == 5  # the v2 bridge init
    assert "cannot restore segment 1" in t.detail and "inProgress" in t.detail
    assert not out.identical


def test_a_bumped_version_stamp_alone_is_not_a_behaviour_change() -> None:
    v1_log = list(load_json("e_bridge.v1.log.json"))
    bumped = StatechartMachine({**ticket_v1().config, "version": "1.1"})
    out = agentscope.whatif(v1_log, bumped)
    assert out.identical, out.summary()
    assert "version stamp" in out[0].detail


def test_no_hashes_and_no_baseline_is_unchecked_and_a_baseline_decides() -> None:
    bare = [{k: v for k, v in e.items() if k != "verification"} for e in load_json("e_bridge.v1.log.json")]
    out = agentscope.whatif(bare, ticket_v1())
    assert out[0].kind == "unchecked" and not out.identical
    assert agentscope.whatif(bare, ticket_v1(), baseline=ticket_v1()).identical


@requires_node
def test_benign_recorded_mismatches_are_not_behaviour_changes(tmp_path: Path) -> None:
    # a real live recording with a pending `after` timer: its hashes carry a wall-clock
    # timers[*].startedAt that a pure replay cannot have; verify explains them (benign)
    from tests.test_replay_node import WAITER, _live_log

    m, log, _ = _live_log(tmp_path, WAITER, "waiter", [
        {"event": {"type": "WAIT"}}, {"sleep": 30}, {"event": {"type": "NOOP"}}])
    try:
        assert agentscope.verify(m, log).counts()["explained"] == 2
        out = agentscope.whatif(log, m)
        assert out.identical, out.summary()
        assert out[0].explained == 2 and "benign" in out[0].detail
    finally:
        m.close()


# ---------------------------------------------------------------------------------------------
# Edited-event what-if: Timeline.fork_at


def test_fork_at_replaces_an_event_in_memory_and_compares_as_a_fork() -> None:
    from agentscope.examples.python_machines import counter_machine

    rec = agentscope.Recorder(counter_machine(), {"start": 0}, execution_id="exec-1")
    for ev in ({"type": "INC", "by": 2}, {"type": "TOGGLE"}, {"type": "INC", "by": 3},
               {"type": "TOGGLE"}, {"type": "INC", "by": 1}):
        rec.send(ev)
    original = [json.loads(json.dumps(e)) for e in rec.entries]
    snapshot_of_log = json.dumps(original)
    tl = agentscope.Timeline(counter_machine(), original)
    fork = tl.fork_at(3, {"type": "DEC", "by": 10})
    assert json.dumps(original) == snapshot_of_log  # the user's log is untouched
    assert len(fork) == len(tl)
    assert [fork[i].context["count"] for i in range(len(fork))] == [0, 2, 2, -8, -8, -7]
    assert fork[3].entry["id"] == "evt_00000003~whatif" and "verification" not in fork[3].entry
    assert [f.entry for f in fork[:3]] == original[:3]  # the prefix is copied verbatim (§5.1)
    diff = agentscope.compare(original, fork.log, machine=counter_machine())
    assert (diff.kind, diff.divergence) == ("fork", 3)
    assert {c.path: (c.left, c.right) for c in diff.changes}["/context/count"] == (5, -8)
    # insert after k: the rest shifts by one and is renumbered
    ins = tl.fork_at(1, {"type": "RESET"}, insert=True)
    assert len(ins) == len(tl) + 1
    assert [e["index"] for e in ins.log] == list(range(len(tl) + 1))
    assert ins[2].context["count"] == 0 and ins[-1].context["count"] == 4
    # end the fork at the edit
    short = tl.fork_at(2, {"type": "INC", "by": 100}, keep_rest=False)
    assert len(short) == 3 and short[2].context["count"] == 102
    with pytest.raises(IndexError):
        tl.fork_at(0, {"type": "INC"})
    with pytest.raises(ValueError, match="reserved"):
        tl.fork_at(2, {"type": "@agent.usage"})


def _same_timeline(a: agentscope.Timeline, b: agentscope.Timeline) -> None:
    assert a.entries == b.entries
    assert a.computed_hashes == b.computed_hashes
    assert list(a.report.df["verdict"]) == list(b.report.df["verdict"])
    assert a.report.df.equals(b.report.df) and a.report.problems.equals(b.report.problems)
    assert [a[i] for i in range(len(a))] == [b[i] for i in range(len(b))]


def _triage_main() -> list[dict[str, Any]]:
    return [json.loads(json.dumps(e)) for e in load_json("g_triage.main.log.json")]


@pytest.mark.parametrize(("k", "insert"), [(1, False), (30, False), (45, True), (89, False), (89, True)])
def test_fork_at_folds_only_the_entries_from_the_edit_on(k: int, insert: bool) -> None:
    """The fork reuses this timeline's pass up to the edit: one restore of the snapshot before
    it, then only the fork's own entries; the result is the fresh timeline of the fork's entries,
    and stays so when both are extended."""
    from agentscope.examples.python_machines import triage_machine
    from tests.test_fold import Counting

    main = _triage_main()
    c = Counting(triage_machine())
    tl = agentscope.Timeline(c, main)
    c.applied = 0
    fork = tl.fork_at(k, {"type": "PAUSE"}, insert=insert)
    at = k + 1 if insert else k
    assert c.applied == len(fork) - at + 1  # restore(entry at - 1's snapshot) + the new entries
    fresh = agentscope.Timeline(triage_machine(), list(fork.entries))
    _same_timeline(fork, fresh)
    assert fork.report.counts()["verified"] == at and fork.report.counts()["missing"] == len(fork) - at
    more = [dict(e, index=len(fork) + j, id=f"more_{j}") for j, e in enumerate(main[9:12])]
    c.applied = 0
    fork.extend(more)
    assert c.applied == len(more)
    fresh.extend(more)
    _same_timeline(fork, fresh)


def test_fork_at_with_checkpoints_folds_at_most_one_interval_again() -> None:
    from agentscope.examples.python_machines import triage_machine
    from tests.test_fold import Counting

    c = Counting(triage_machine())
    tl = agentscope.Timeline(c, _triage_main(), checkpoint_every=16)
    c.applied = 0
    fork = tl.fork_at(40, {"type": "PAUSE"})
    assert len(fork) - 40 < c.applied <= len(fork) - 40 + 16 + 1  # a seek to entry 39, then the fork
    _same_timeline(fork, agentscope.Timeline(triage_machine(), fork.entries, checkpoint_every=16))


def test_fork_at_folds_again_when_a_rebinding_key_recurs() -> None:
    """A child completion journaled before the edit and again after it (the resumed fold has no
    rebinding cache): the fork is folded whole, in fork_at or in a later extend; same result."""
    from agentscope.examples.python_machines import triage_machine
    from agentscope.log.entry import session_key
    from tests.test_fold import Counting

    main = _triage_main()
    j = next(i for i, e in enumerate(main) if session_key(e) is not None)
    c = Counting(triage_machine())
    tl = agentscope.Timeline(c, main)
    c.applied = 0
    fork = tl.fork_at(j + 5, dict(main[j]["event"]))  # the edit repeats entry j's completion
    assert c.applied == len(fork)  # no reuse: folded from the init
    _same_timeline(fork, agentscope.Timeline(triage_machine(), fork.entries))
    c.applied = 0
    reused = tl.fork_at(j + 5, {"type": "PAUSE"}, keep_rest=False)
    assert c.applied == 2
    late = [dict(main[j], index=len(reused), id="again")]
    reused.extend(late)
    assert c.applied == 2 + len(reused)  # the key recurs: the whole fork folded again
    _same_timeline(reused, agentscope.Timeline(triage_machine(), [*reused.entries]))


def test_fork_at_shows_in_forkview_against_the_original() -> None:
    pytest.importorskip("ipywidgets")
    from agentscope.examples.python_machines import counter_machine

    rec = agentscope.Recorder(counter_machine(), {"start": 0})
    for i in range(6):
        rec.send({"type": "INC", "by": i})
    m = counter_machine()
    tl = agentscope.Timeline(m, rec.entries)
    fork = tl.fork_at(4, {"type": "RESET"})
    view = agentscope.ForkView(m, tl.log, fork.log, names=("recorded", "what-if"),
                               timelines=(tl, fork))
    assert view.divergence == 4
    view.jump_to_divergence()
    a, b = view.frames()
    assert a is not None and b is not None
    assert (a.context["count"], b.context["count"]) == (0 + 1 + 2 + 3, 0)
    assert "/context/count" in view.diff_paths()


def test_view_reuses_the_whatif_timelines_and_folds_nothing_again() -> None:
    """``WhatIf.view()`` shows the what-if's own replays: counting every entry the engines apply
    (``initial``/``restore``/``transition``), opening the view, stepping it and writing its player
    apply none. The planted change is the lineage's ESCALATE (entry 6) made a no-op."""
    pytest.importorskip("ipywidgets")
    from tests.test_fold import Counting

    lineage = _lineage()
    states = dict(ticket_v2().config["states"])
    in_progress = {**states["inProgress"], "on": {**states["inProgress"]["on"], "ESCALATE": {}}}
    new = Counting(_ticket_v2_variant(states={**states, "inProgress": in_progress}))
    new_v1, base, base_v1 = Counting(ticket_v1()), Counting(ticket_v2()), Counting(ticket_v1())
    engines = (new, new_v1, base, base_v1)
    out = agentscope.whatif(lineage, new, machines={"1": new_v1}, baseline=base,
                            baseline_machines={"1": base_v1})
    assert (out[0].kind, out[0].first_divergence) == ("diverges", 6)
    folded = [m.applied for m in engines]
    assert folded[0] + folded[1] == len(lineage) == folded[2] + folded[3]  # each side once
    view = out.view()
    assert view.divergence == 6 and view.step == 6
    a, b = view.frames()
    assert a is not None and b is not None and a.context != b.context  # recorded escalates, new does not
    assert (a.verdict.value, b.verdict.value) == ("verified", "mismatch")
    for step in (0, 5, 7, len(lineage) - 1):
        view.go(step)
    view.to_html()
    assert [m.applied for m in engines] == folded  # nothing applied again
    assert view.timelines[1] is out[0].timelines[1]  # the what-if's own timeline


def test_view_of_a_store_keeps_only_the_default_threads_timelines() -> None:
    """Over several logs, the what-if keeps the timelines of the thread ``view()`` opens by
    default (the first that diverges) and lets the others go."""
    lineage = _lineage()
    states = dict(ticket_v2().config["states"])
    in_progress = {**states["inProgress"], "on": {**states["inProgress"]["on"], "ESCALATE": {}}}
    changed = _ticket_v2_variant(states={**states, "inProgress": in_progress})
    v1_only = list(load_json("e_bridge.v1.log.json"))
    out = agentscope.whatif({"same": v1_only, "changed": lineage}, changed, machines={"1": ticket_v1()})
    assert [t.kind for t in out.threads] == ["identical", "diverges"]
    assert out["same"].timelines is None and out["changed"].timelines is not None

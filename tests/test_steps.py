"""The pass as a value: ``Timeline.steps()`` yields one frozen ``Step`` per entry, the one walk
every question reads (``states``, ``find``, ``check``, ``coverage``). Real fixture logs, the
Python engine's ports of their real machines."""

from __future__ import annotations

import dataclasses

import pytest

from agentscope.examples import python_machines as pm
from agentscope.frames import Verdict
from agentscope.jsondiff import changed_paths
from agentscope.log.entry import event_type
from agentscope.pipeline import Step, Timeline
from tests.conftest import load_json


@pytest.mark.parametrize("checkpoint_every", [None, 7])
def test_every_step_is_the_frame_at_its_index(checkpoint_every: int | None) -> None:
    """Kept states or sparse checkpoints, each step carries what ``timeline[i]`` shows: the
    entry, the persisted state, verdict, ``ignored`` and the changed paths."""
    log = load_json("g_triage.main.log.json")
    tl = Timeline(pm.triage_machine(), log, checkpoint_every=checkpoint_every)
    steps = list(tl.steps())
    assert [s.index for s in steps] == list(range(len(log)))
    prev = None
    for s in steps:
        frame = tl[s.index]
        assert s.entry is log[s.index] or s.entry == log[s.index]
        assert s.after == frame.persisted and s.verdict == frame.verdict == Verdict.VERIFIED
        assert s.ignored == frame.ignored and s.event_type == event_type(log[s.index])
        assert s.value == frame.persisted["value"] and s.context == frame.persisted["context"]
        assert list(s.changed_paths) == list(frame.changed_paths) == list(changed_paths(prev, s.after))
        assert tl.frame_of(s) == frame
        prev = s.after
    assert isinstance(steps[0], Step)
    with pytest.raises(dataclasses.FrozenInstanceError):
        steps[0].index = 3  # type: ignore[misc]


def test_a_window_of_steps_starts_with_the_state_before_it() -> None:
    log = load_json("g_triage.main.log.json")
    tl = Timeline(pm.triage_machine(), log, checkpoint_every=10)
    window = list(tl.steps(25, 31))
    assert [s.index for s in window] == list(range(25, 31))
    assert window[0].before == tl[24].persisted and window[-1].after == tl[30].persisted


def test_an_entry_the_pass_did_not_replay_is_a_step_without_states() -> None:
    """Entries of a segment with no machine come as steps with ``after=None``: not replayed."""
    log = load_json("g_triage.main.log.json")
    tl = Timeline(None, log)
    steps = list(tl.steps())
    assert len(steps) == len(log)
    assert all(not s.replayed and s.after is None and s.machine is None for s in steps)
    assert all(s.verdict == Verdict.UNCHECKED and s.changed_paths == () for s in steps)
    assert tl.frame_of(steps[3]) == tl[3]


def test_changed_paths_are_the_one_diffs_paths() -> None:
    """``Frame.changed_paths`` is :func:`agentscope.jsondiff.diff_json`'s definition (as the fork
    views and ``agentscope diff``): a ticket taken from the head of the queue is the one path
    ``/context/queue/0``, not the whole queue; tickets appended are one path each."""
    from agentscope.jsondiff import diff_json

    tl = Timeline(pm.triage_machine(), load_json("g_triage.main.log.json"))
    taken = tl[5]  # xstate.done.actor: the first of 7 tickets leaves the queue
    assert len(tl[4].context["queue"]) == 7 and len(taken.context["queue"]) == 6
    assert [p for p in taken.changed_paths if p.startswith("/context/queue")] == ["/context/queue/0"]
    assert [p for p in tl[50].changed_paths if p.startswith("/context/queue")] == [
        f"/context/queue/{i}" for i in range(4, 10)]  # 6 tickets received behind 4 waiting
    want = [c.path for c in diff_json(tl[4].context, taken.context, "/context")]
    assert [p for p in taken.changed_paths if p.startswith("/context/")] == want


def test_a_step_carries_the_actors_the_log_owes() -> None:
    """``Step.owed_actors``: the children running after the entry, whose completion
    (``xstate.done.actor`` / ``xstate.error.actor``) the log still owes; a later entry that
    completes one no longer lists it (the triage log: classify and kb run after the tickets)."""
    log = load_json("g_triage.main.log.json")
    steps = list(Timeline(pm.triage_machine(), log).steps(0, 4))
    assert [s.owed_actors for s in steps] == [(), ("classify", "kb"), ("kb",), ("kb",)]
    assert log[2]["event"]["type"] == "xstate.done.actor" and log[2]["event"]["actorId"] == "classify"


def test_questions_read_steps_not_the_timeline() -> None:
    """``agentscope.queries`` needs only what ``StepSource`` names (steps, a step's frame, the
    segments' machines): the import graph runs one way, Timeline -> queries -> step."""
    import ast
    from pathlib import Path

    src = Path(__file__).resolve().parent.parent / "agentscope" / "queries.py"
    names = {a.module for a in ast.walk(ast.parse(src.read_text(encoding="utf-8")))
             if isinstance(a, ast.ImportFrom)}
    assert "agentscope.pipeline.timeline" not in names and "agentscope.step" in names
    assert Step.__module__ == "agentscope.step"

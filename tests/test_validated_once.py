"""A log is validated once: ``EventLog.validated`` is a declared field a reader sets, slices keep
it, and ``read_log``, ``verify``, ``replay`` and ``Timeline`` take what the reader found instead of
running the §1.2/§1.3 rules again (spec §1.2, §1.3)."""

from __future__ import annotations

import inspect
from collections.abc import Iterator
from typing import Any

import pytest

import agentscope.log.validate as validate
import agentscope.pipeline.fold as fold
from agentscope.errors import EntryValidationError
from agentscope.examples import python_machines as pm
from agentscope.log import EventLog, read_log
from agentscope.pipeline import Timeline, replay, verify
from tests.conftest import FIXTURES, load_json


@pytest.fixture
def rule_calls(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """Every run of a §1.2/§1.3 rule: the entry rules, the log rules, the segment checker."""
    calls: list[str] = []
    real_entry, real_log, real_check = validate.entry_problem, validate.log_problems, validate.SegmentChecker.check

    def entry_problem(*a: Any, **kw: Any) -> Any:
        calls.append("entry_problem")
        return real_entry(*a, **kw)

    def log_problems(*a: Any, **kw: Any) -> Any:
        calls.append("log_problems")
        return real_log(*a, **kw)

    def check(self: validate.SegmentChecker, *a: Any, **kw: Any) -> Any:
        calls.append("SegmentChecker.check")
        return real_check(self, *a, **kw)

    monkeypatch.setattr(validate, "entry_problem", entry_problem)
    monkeypatch.setattr(fold, "log_problems", log_problems)
    monkeypatch.setattr(validate.SegmentChecker, "check", check)
    yield calls


def counter_log() -> EventLog:
    return read_log(FIXTURES / "a_counter.log.json")


def test_validated_is_a_declared_field_of_event_log() -> None:
    assert "validated" in inspect.signature(EventLog).parameters
    assert EventLog([]).validated is False
    assert counter_log().validated is True


def test_every_reader_marks_its_log_validated(tmp_path: Any) -> None:
    entries = load_json("a_counter.log.json")
    assert read_log(list(entries)).validated
    assert read_log(list(entries), errors="collect").validated
    assert read_log(FIXTURES / "g_triage.sqlite", thread="main").validated


def test_a_slice_of_a_validated_log_stays_validated() -> None:
    log = counter_log()
    head, middle = log[:10], log[5:12]
    assert head.validated and middle.validated
    assert list(head.positions) == list(range(10)) and list(middle.positions) == list(range(5, 12))
    assert list(middle[:3].positions) == [5, 6, 7] and middle[:3].validated


def test_verify_and_replay_do_not_run_the_rules_again_on_a_validated_log(rule_calls: list[str]) -> None:
    log = counter_log()
    m = pm.counter_machine()
    rule_calls.clear()  # reading checked it, once
    assert verify(m, log).ok and verify(m, log[:10]).ok
    assert replay(m, log[:10]).length == 10
    assert Timeline(m, log).report.ok
    assert rule_calls == []
    verify(m, list(log.entries))  # a plain list was never validated: checked here
    assert "SegmentChecker.check" in rule_calls


def test_read_log_of_a_validated_log_does_not_validate_it_again(rule_calls: list[str]) -> None:
    log = counter_log()
    rule_calls.clear()
    assert read_log(log) is log and read_log(log, errors="collect") is log
    assert rule_calls == []


def test_a_slice_that_does_not_start_at_the_init_cannot_be_folded() -> None:
    log, m = counter_log(), pm.counter_machine()
    report = verify(m, log[5:12])
    assert not report.ok
    assert report.problems["kind"].tolist() == ["no-init"]
    assert set(report.df["verdict"]) == {"unchecked"}
    with pytest.raises(EntryValidationError, match=r"must start with the reserved '@agent\.init'"):
        replay(m, log[5:12])


def with_duplicate_id() -> list[dict[str, Any]]:
    entries = [dict(e) for e in load_json("a_counter.log.json")]
    entries[7]["id"] = entries[3]["id"]
    return entries


def test_a_collected_log_is_not_validated_again_at_verify(rule_calls: list[str]) -> None:
    log = read_log(with_duplicate_id(), errors="collect")
    assert log.validated
    read = [(r.index, r.id, r.kind) for r in log.problems.itertuples()]
    assert read == [(7, log[3]["id"], "duplicate-id")]
    rule_calls.clear()
    report = verify(pm.counter_machine(), log)
    assert rule_calls == []
    assert [(r.index, r.id, r.kind) for r in report.problems.itertuples()] == read
    assert not report.ok and report.df.loc[7, "failed"] and report.df.loc[7, "kind"] == "duplicate-id"
    with pytest.raises(EntryValidationError, match="duplicate entry id"):
        replay(pm.counter_machine(), log)
    assert rule_calls == []


def test_the_same_duplicate_id_is_found_checking_a_plain_list() -> None:
    report = verify(pm.counter_machine(), with_duplicate_id())
    assert [(r.index, r.kind) for r in report.problems.itertuples()] == [(7, "duplicate-id")]


def test_extending_a_validated_timeline_checks_new_entries_against_the_read_ones() -> None:
    log = counter_log()
    tl = Timeline(pm.counter_machine(), log)
    again = dict(log[-1], index=len(log), id=log[3]["id"])
    tl.extend([again])
    assert tl.report.df.loc[len(log), "kind"] == "duplicate-id"
    nxt = dict(log[-1], index=len(log) + 5, id="fresh")
    tl.extend([nxt])
    assert tl.report.df.loc[len(log) + 1, "kind"] == "non-contiguous"


def test_a_pass_told_only_validated_still_checks_the_structure() -> None:
    """A caller that says ``validated=True`` without the reader's findings (e.g. a store-wide
    run) gets the structure rules checked by the pass, so a problem the reader recorded is not
    lost; only the envelope is taken as checked."""
    from agentscope.pipeline.onepass import build_index
    from agentscope.pipeline.report import report_from_index

    log = read_log(with_duplicate_id(), errors="collect")
    idx = build_index(log.entries, machine=pm.counter_machine(), validated=True)
    report = report_from_index(idx, log.entries)
    assert [(r.index, r.kind) for r in report.problems.itertuples()] == [(7, "duplicate-id")]

"""The §1.2 envelope and §1.3 structure rules are stated once (``agentscope.log.validate``:
``entry_problem`` per entry, ``SegmentChecker`` for the log), so reading and verifying find the
same problems, and every problems table numbers an entry by its position in the source with its
id beside it. The shortcuts that remain (the checker's column-by-column chunks, the pyarrow
JSONL reader) only ever accept: on any doubt they defer to the one statement, and property tests
check that both say the same on every generated log."""

from __future__ import annotations

import copy
import io
import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import agentscope.log.fast as fast
from agentscope.errors import EntryValidationError
from agentscope.examples import python_machines as pm
from agentscope.log import read_log
from agentscope.log.validate import SegmentChecker
from agentscope.pipeline import verify
from tests.conftest import load_json

STRUCTURE = {"invalid-entry", "non-serializable-event", "non-contiguous", "duplicate-id", "no-init"}


def rows(table: Any) -> list[tuple[int, str | None, str]]:
    """``(index, id, kind)`` of a problems table's structure rows."""
    return [(int(r.index), r.id, r.kind) for r in table.itertuples() if r.kind in STRUCTURE]


def triage() -> list[dict[str, Any]]:
    return copy.deepcopy(load_json("g_triage.main.log.json"))


def test_an_index_99_at_position_70_is_one_problem_everywhere() -> None:
    entries = triage()
    entries[70]["index"] = 99
    want = [(70, entries[70]["id"], "non-contiguous")]
    with pytest.raises(EntryValidationError, match=r"found entry\.index 99 at position 70\.") as info:
        read_log(entries)
    assert (info.value.index, info.value.field) == (70, "index")
    collected = read_log(entries, errors="collect")
    assert rows(collected.problems) == want
    m = pm.triage_machine()
    assert rows(verify(m, entries).problems) == want  # the pass checks a plain list
    assert rows(verify(m, collected).problems) == want  # ... and takes a read log's findings


def test_a_gap_is_one_problem_where_the_numbering_breaks() -> None:
    entries = triage()
    del entries[40]
    want = [(40, entries[40]["id"], "non-contiguous")]
    assert rows(read_log(entries, errors="collect").problems) == want
    assert rows(verify(pm.triage_machine(), entries).problems) == want


def test_every_problems_table_numbers_entries_by_source_position() -> None:
    """An entry set aside by the reader keeps its place: the entries after it, the problems
    about them and the report's ``index`` column all use source positions, ids beside."""
    entries = triage()
    entries[5]["schemaVersion"] = 2  # set aside by errors="collect"
    entries[9]["id"] = entries[8]["id"]
    log = read_log(entries, errors="collect")
    assert len(log) == 90 and list(log.positions[4:7]) == [4, 6, 7]
    read = [(5, entries[5]["id"], "invalid-entry"), (9, entries[8]["id"], "duplicate-id")]
    assert rows(log.problems) == read
    report = verify(pm.triage_machine(), log)
    assert rows(report.problems) == read
    assert report.df["index"].tolist()[4:9] == [4, 6, 7, 8, 9]
    assert report.df.loc[8, "kind"] == "duplicate-id" and report.problems_of(9)[0].startswith("duplicate-id")
    part = log[6:20]  # a slice keeps the source positions too
    assert list(part.positions)[:2] == [7, 8] and rows(part.problems) == read[1:]


# -- property tests: one statement, shortcuts that agree ---------------------------------------

COUNTER = load_json("a_counter.log.json")

_MUTATION = st.one_of(
    st.tuples(st.just("index"), st.integers(1, 16), st.integers(-2, 40)),
    st.tuples(st.just("dup-id"), st.integers(1, 16), st.integers(0, 16)),
    st.tuples(st.just("delete"), st.integers(1, 16), st.just(0)),
    st.tuples(st.just("swap"), st.integers(1, 15), st.just(0)),
    st.tuples(st.just("type"), st.integers(0, 16), st.sampled_from(["INC", "DEC"])),
    st.tuples(st.just("envelope"), st.integers(0, 16),
              st.sampled_from(["schemaVersion", "recordedAt", "machineId", "causationId"])),
)


def mutated(base: list[dict[str, Any]], mutations: list[tuple[str, int, Any]]) -> list[dict[str, Any]]:
    entries = copy.deepcopy(base)
    for what, at, arg in mutations:
        if at >= len(entries):
            continue
        if what == "index":
            entries[at]["index"] = arg
        elif what == "dup-id":
            entries[at]["id"] = entries[min(arg, len(entries) - 1)]["id"]
        elif what == "delete":
            del entries[at]
        elif what == "swap" and at + 1 < len(entries):
            entries[at], entries[at + 1] = entries[at + 1], entries[at]
        elif what == "type":
            entries[at]["event"] = {"type": arg}
        elif what == "envelope":
            entries[at][arg] = {"schemaVersion": 2, "recordedAt": "2026-13-01T00:00:00Z",
                                "machineId": "", "causationId": None}[arg]
    return entries


@settings(max_examples=60, deadline=None)
@given(st.lists(_MUTATION, max_size=4))
def test_read_and_verify_find_the_same_problems(mutations: list[tuple[str, int, Any]]) -> None:
    """A log of one ``@agent.init``: ``read_log(errors="collect")`` and ``verify`` of the same
    entries (a plain list: the pass checks them itself) report the same §1.2/§1.3 problems at the
    same source positions, except that the reader sets an entry failing §1.2 aside first."""
    entries = mutated(COUNTER, mutations)
    read = read_log(entries, errors="collect")
    if len(read) == len(entries):  # nothing set aside: the same entries on both sides
        assert rows(verify(pm.counter_machine(), entries).problems) == rows(read.problems)
    assert rows(verify(pm.counter_machine(), read).problems) == rows(read.problems)


def _long(n: int) -> list[dict[str, Any]]:
    out = []
    for i in range(n):
        e = copy.deepcopy(COUNTER[0] if i == 0 else COUNTER[1 + i % 16])
        e.update(index=i, id=f"evt_{i:08d}")
        out.append(e)
    return out


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(70, 300), st.lists(st.tuples(st.sampled_from(["index", "dup-id", "delete", "type",
                                                                  "envelope"]),
                                                st.integers(1, 299), st.integers(0, 40)), max_size=3))
def test_the_column_by_column_checker_agrees_with_the_rules_entry_by_entry(
        n: int, mutations: list[tuple[str, int, Any]]) -> None:
    """``SegmentChecker``'s chunk path (a whole chunk judged column by column, ``recordedAt``
    matched in bulk) finds exactly what its entry-by-entry rules find, with the same stops."""
    fixed = [(w, at, {"type": "INC", "envelope": "recordedAt"}.get(w, arg)) for w, at, arg in mutations]
    entries = mutated(_long(n), fixed)

    def run(chunks: bool) -> Any:
        checker = SegmentChecker(0)
        if not chunks:
            checker._plain_chunk = lambda *a: False  # type: ignore[method-assign]
        found, stop = checker.check(entries, 0, len(entries))
        return [(k, e.index, e.field, str(e)) for k, e in found], stop, checker.offset, checker.seen

    assert run(True) == run(False)


_LINE_MUTATION = st.sampled_from([
    ("index", 3.0), ("index", 2.5), ("index", -1), ("id", ""), ("id", 7), ("schemaVersion", 1.0),
    ("schemaVersion", 2), ("recordedAt", "2026-02-30T24:00:00Z"), ("recordedAt", "2026-02-30T24:00:01Z"),
    ("machineVersion", "other"), ("machineId", None), ("causationId", None), ("causationId", ""),
    ("metadata", None), ("metadata", []), ("verification", {}), ("verification", {"stateHash": ""}),
    ("event", {"type": "@agent.init"}), ("event", {"type": ""}), ("event", {"type": "INC", "metadata": None}),
])


@settings(max_examples=80, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 16), _LINE_MUTATION), max_size=3),
       st.sampled_from(["", "-0", "1e400", "NaN"]))
def test_the_fast_jsonl_reader_accepts_only_what_the_exact_reader_accepts(
        mutations: list[tuple[int, tuple[str, Any]]], literal: str) -> None:
    """The pyarrow reader (``log/fast.py``) is an accept-only shortcut: whenever it returns a log,
    the exact reader reads the same entries with no problem; on any doubt it returns ``None``."""
    entries = copy.deepcopy(COUNTER)
    for at, (key, value) in mutations:
        entries[at][key] = value
    lines = [json.dumps(e, ensure_ascii=False) for e in entries]
    if literal:
        lines[5] = lines[5][:-1] + f', "x": {literal}}}'
    data = ("\n".join(lines) + "\n").encode()
    exact = read_log(io.BytesIO(data), format="jsonl", errors="collect")
    saved = fast.FAST_MIN_BYTES
    fast.FAST_MIN_BYTES = 0  # the shortcut for a small log too
    try:
        quick = fast.try_fast_jsonl(data, source="<bytes>")
    finally:
        fast.FAST_MIN_BYTES = saved
    if not mutations and not literal:
        assert quick is not None  # a valid log takes the shortcut
    if quick is not None:
        assert len(exact.read_problems) == 0 and exact.validated and quick.validated
        assert quick.entries == exact.entries
        assert quick.segments == exact.segments and quick.machine_id == exact.machine_id


def test_one_segment_split_for_the_log_and_the_fold() -> None:
    """``EventLog.segments`` and the verifying pass split a log the same way: at each
    ``@agent.init`` (a fresh run after a log is a second segment; a change of
    ``machineVersion`` without an init is no split, but an identity problem)."""
    from agentscope.log import EventLog

    def spans(report: Any) -> list[tuple[int, int]]:
        seg = report.df["segment"].tolist()
        return [(seg.index(k), len(seg) - seg[::-1].index(k)) for k in sorted(set(seg))]

    twice = copy.deepcopy(COUNTER) + copy.deepcopy(COUNTER)
    changed = copy.deepcopy(COUNTER)
    for e in changed[8:]:
        e["machineVersion"] = "other"
    for entries in (twice, changed):
        log = EventLog(entries)
        report = verify(pm.counter_machine(), entries)
        assert [(s.start, s.stop) for s in log.segments] == spans(report)
    assert [(s.start, s.stop) for s in EventLog(twice).segments] == [(0, 17), (17, 34)]
    assert len(EventLog(changed).segments) == 1


_VALUE = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(-(2**1030), 2**1030), st.floats(allow_nan=True),
              st.text(max_size=4), st.just(-0.0)),
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=3), inner, max_size=3)),
    max_leaves=8,
)


@settings(max_examples=300, deadline=None)
@given(st.integers(0, 16), st.dictionaries(
    st.sampled_from(["schemaVersion", "index", "id", "machineId", "machineVersion", "recordedAt", "event",
                     "causationId", "metadata", "verification", "extra"]), _VALUE, max_size=3))
def test_the_plain_envelope_shortcut_only_accepts_what_entry_problem_accepts(
        at: int, changes: dict[str, Any]) -> None:
    """``_plain_envelope`` (the per-entry shortcut the checker takes before ``entry_problem``,
    the one statement of §1.2) says yes only to entries ``entry_problem`` accepts."""
    from agentscope.log.validate import _plain_envelope, entry_problem, is_recorded_at

    entry = {**copy.deepcopy(COUNTER[at]), **changes}
    if _plain_envelope(entry) and is_recorded_at(entry["recordedAt"]):
        assert entry_problem(entry) is None


def test_one_builder_of_the_entries_frame(tmp_path: Any) -> None:
    """``EventLog.df`` of the exact reader, of the pyarrow JSONL reader and a ``ForkDiff``
    suffix of plain lists all come from ``build_entries_frame``: one layout, equal values."""
    import pandas as pd

    from agentscope.forks import compare
    from agentscope.log.model import DF_COLUMNS, build_entries_frame

    entries = triage()
    exact = read_log(entries).df
    assert list(exact.columns) == list(DF_COLUMNS)
    pd.testing.assert_frame_equal(build_entries_frame(entries), exact)
    data = ("\n".join(json.dumps(e) for e in entries) + "\n").encode()
    saved = fast.FAST_MIN_BYTES
    fast.FAST_MIN_BYTES = 0
    try:
        quick = fast.try_fast_jsonl(data, source="<bytes>")
    finally:
        fast.FAST_MIN_BYTES = saved
    assert quick is not None
    frame = quick.df.copy()
    for c in ("event", "metadata"):  # lazy payload cells: compare them as the dicts they stand for
        frame[c] = [None if v is None else dict(v) for v in frame[c]]
    assert frame.dtypes.astype(str).tolist() == exact.dtypes.astype(str).tolist()
    pd.testing.assert_frame_equal(frame, exact, check_categorical=False)
    other = copy.deepcopy(entries[:60])
    other[50]["event"] = {"type": "CLOSE"}
    suffix = compare(entries, other).left_suffix
    want = exact.iloc[50:].reset_index(drop=True)  # the categories: those of the suffix
    pd.testing.assert_frame_equal(suffix.reset_index(drop=True), want, check_categorical=False)
    assert suffix.dtypes.astype(str).tolist() == exact.dtypes.astype(str).tolist()
    with pytest.raises(TypeError, match="columns missing"):
        build_entries_frame(columns={"index": [0]})


def test_a_timeline_of_a_collected_log_positions_and_source_positions() -> None:
    """The frame index (``tl[i]``, ``mismatch_indices``, the report's own row labels) counts the
    entries held; the ``index`` column and every problems table count the source."""
    from agentscope.pipeline import Timeline

    entries = triage()
    entries[30]["verification"] = {"stateHash": "00000000"}  # a tampered hash
    entries.insert(5, dict(entries[4], schemaVersion=2, id="stray"))  # set aside when read
    log = read_log(entries, errors="collect")
    tl = Timeline(pm.triage_machine(), log)
    assert tl.mismatch_indices == [30] and tl[30].entry is log[30]
    df = tl.report.df
    assert df.loc[30, "index"] == 31 and df.loc[30, "verdict"] == "mismatch"
    assert tl.report.problems_of(31)[0].startswith("state-mismatch")
    # the entries after the stray one keep their own numbering: one break, where it starts
    assert rows(tl.report.problems) == [(5, "stray", "invalid-entry"), (6, entries[6]["id"], "non-contiguous")]
    assert rows(tl.report.problems) == rows(log.problems)


def test_verify_lists_what_the_reader_set_aside(tmp_path: Any) -> None:
    """A line a JSONL reader could not parse, and an entry it set aside, are rows of the report's
    problems too (at their source positions), beside the pass's own findings."""
    entries = triage()
    lines = [json.dumps(e) for e in entries]
    lines[10] = lines[10][:25]  # a torn line
    path = tmp_path / "torn.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    log = read_log(path, errors="collect")
    read = [(r.index, r.kind) for r in log.problems.itertuples()]
    assert read[0][1] in STRUCTURE | {"incomplete-record"} and len(log) == 90
    report = verify(pm.triage_machine(), log)
    got = [(r.index, r.kind) for r in report.problems.itertuples() if (r.index, r.kind) in set(read)]
    assert got == read
    from agentscope.log import EventLog
    from agentscope.log.problems import problems_frame

    damaged = EventLog(list(log.entries), source="s", validated=True, positions=list(log.positions),
                       problems=problems_frame([*log.problems.to_dict("records"),
                                                {"kind": "damaged-store", "message": "rows after 90 unreadable"}]))
    whole = verify(pm.triage_machine(), damaged).problems
    assert whole[whole["index"].isna()]["kind"].tolist() == ["damaged-store"]


def test_the_chunk_shortcut_asks_no_value_whether_it_is_absent() -> None:
    """A value whose ``==`` says yes to anything (not JSON: a Python object in a list of dicts)
    is still judged by the rules, not taken for an absent optional field."""

    class Agreeable:
        def __eq__(self, other: object) -> bool:
            return True

        __hash__ = object.__hash__

    entries = _long(200)
    for e in entries:
        e["causationId"] = Agreeable()
    found, _stop = SegmentChecker(0).check(entries, 0, len(entries))
    assert [(e.index, e.field) for _k, e in found][:2] == [(0, "causationId"), (1, "causationId")]
    assert len(found) == 200

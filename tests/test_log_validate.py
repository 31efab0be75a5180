"""Spec §1.2 envelope checks, §1.3 log rules and §1.4 recordedAt, on entries and on text."""

from __future__ import annotations

import copy
import datetime as dt
import itertools
import json
import re
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentscope.errors import (
    EntryValidationError,
    LogFormatError,
    MachineVersionMismatchError,
    NonSerializableError,
)
from agentscope.log import read_log
from agentscope.log.validate import is_recorded_at, loads, validate_entries, validate_entry
from tests.conftest import load_json

# §7.2, the computed "counter" log
COUNTER: list[dict[str, Any]] = [
    {"schemaVersion": 1, "id": "evt_00000000", "index": 0, "recordedAt": "2026-01-01T00:00:00.000Z", "machineId": "counter", "machineVersion": "v1", "event": {"type": "@agent.init"}, "metadata": {"executionId": "00000000-0000-4000-8000-000000000000"}, "verification": {"stateHash": "7a6a6b48"}},
    {"schemaVersion": 1, "id": "evt_00000001", "index": 1, "recordedAt": "2026-01-01T00:00:01.000Z", "machineId": "counter", "machineVersion": "v1", "event": {"type": "ADD", "amount": 5}, "verification": {"stateHash": "344e8c4e"}},
    {"schemaVersion": 1, "id": "evt_00000002", "index": 2, "recordedAt": "2026-01-01T00:00:02.000Z", "machineId": "counter", "machineVersion": "v1", "event": {"type": "SCALE", "factor": 3}, "verification": {"stateHash": "feb93e40"}},
]


def entry(**changes: Any) -> dict[str, Any]:
    e = copy.deepcopy(COUNTER[1])
    for k, v in changes.items():
        if v is _DELETE:
            del e[k]
        else:
            e[k] = v
    return e


_DELETE = object()


def test_valid_entries_pass() -> None:
    for i, e in enumerate(COUNTER):
        validate_entry(e, index=i)
    validate_entries(COUNTER)
    validate_entries([])


# -- §1.2, one case per envelope field, in the spec's order ----------------------------------

ENVELOPE_CASES = [
    # (changes, field, message fragment)
    ({"schemaVersion": 2}, "schemaVersion", "Unsupported agent event schema version '2'; expected '1'."),
    ({"schemaVersion": "1"}, "schemaVersion", "Unsupported agent event schema version '1'"),
    ({"schemaVersion": _DELETE}, "schemaVersion", "Agent event entry.schemaVersion is missing; expected 1."),
    ({"index": _DELETE}, "index", "Agent event entry.index is missing; expected a non-negative integer."),
    ({"recordedAt": _DELETE}, "recordedAt", "entry.recordedAt is missing; expected an RFC 3339 timestamp."),
    ({"index": -1}, "index", "Agent event entry.index must be a non-negative integer; got -1."),
    ({"index": 1.5}, "index", "non-negative integer; got 1.5."),
    ({"index": "1"}, "index", "non-negative integer"),
    ({"index": True}, "index", "non-negative integer; got true."),
    ({"id": ""}, "id", "Agent event entry.id must be a non-empty string."),
    ({"id": 7}, "id", "entry.id must be a non-empty string."),
    ({"machineId": None}, "machineId", "Agent event entry.machineId must be a non-empty string."),
    ({"machineVersion": 1}, "machineVersion", "Agent event entry.machineVersion must be a non-empty string."),
    ({"recordedAt": "yesterday"}, "recordedAt", "Agent event entry.recordedAt is not RFC 3339: 'yesterday'."),
    ({"recordedAt": 1767225600000}, "recordedAt", "is not RFC 3339"),
    ({"event": ["ADD"]}, "event", "Agent event entry.event requires a non-empty string type."),
    ({"event": None}, "event", "requires a non-empty string type."),
    ({"event": {"type": ""}}, "event.type", "requires a non-empty string type."),
    ({"event": {"amount": 5}}, "event.type", "requires a non-empty string type."),
    ({"causationId": None}, "causationId", "Agent event entry.causationId must be a non-empty string when present."),
    ({"causationId": ""}, "causationId", "causationId must be a non-empty string"),
    ({"metadata": None}, "metadata", "Agent event entry.metadata must be an object when present."),
    ({"metadata": ["x"]}, "metadata", "metadata must be an object"),
    ({"verification": None}, "verification", "Agent event entry.verification requires a non-empty stateHash string."),
    ({"verification": {}}, "verification.stateHash", "requires a non-empty stateHash string."),
    ({"verification": {"stateHash": ""}}, "verification.stateHash", "non-empty stateHash"),
]


@pytest.mark.parametrize(("changes", "field", "message"), ENVELOPE_CASES)
def test_envelope_field_errors_name_the_field(changes: dict[str, Any], field: str, message: str) -> None:
    with pytest.raises(EntryValidationError) as info:
        validate_entry(entry(**changes), index=1, source="log.jsonl", line=2)
    err = info.value
    assert err.field == field
    assert err.index == 1 and err.line == 2 and err.source == "log.jsonl"
    assert message in str(err)
    assert str(err).startswith("log.jsonl: entry 1: line 2: field ")
    assert err.code == "invalid-event-log"


def test_not_an_object() -> None:
    for value in ([], "x", 3, None):
        with pytest.raises(EntryValidationError, match=r"Agent event entry must be an object\.") as info:
            validate_entry(value, index=4)
        assert info.value.index == 4 and info.value.field is None


def test_checks_run_in_spec_order() -> None:
    # schemaVersion is checked before index, index before id, JSON safety before everything
    with pytest.raises(EntryValidationError) as info:
        validate_entry(entry(schemaVersion=2, index=-1, id=""))
    assert info.value.field == "schemaVersion"
    with pytest.raises(EntryValidationError) as info:
        validate_entry(entry(index=-1, id=""))
    assert info.value.field == "index"
    with pytest.raises(NonSerializableError):
        validate_entry(entry(schemaVersion=2, event={"type": "X", "v": float("nan")}))


def test_unknown_keys_and_era_b_extras_pass_in_era_c() -> None:
    validate_entry(entry(correlationId="c1", extra={"a": 1}, verification={"stateHash": "x", "effectsHash": "y"}))


def test_era_b_rules() -> None:
    # Era B: verification needs both hashes; correlationId must be a non-empty string
    with pytest.raises(EntryValidationError, match="non-empty stateHash and effectsHash strings") as info:
        validate_entry(entry(), era="B")
    assert info.value.field == "verification.effectsHash"
    validate_entry(entry(verification={"stateHash": "a", "effectsHash": "b"}, correlationId="c"), era="B")
    with pytest.raises(EntryValidationError) as info:
        validate_entry(entry(verification={"stateHash": "a", "effectsHash": "b"}, correlationId=""), era="B")
    assert info.value.field == "correlationId"


def test_era_a_rules() -> None:
    validate_entry({"index": 0, "event": {"type": "start"}}, era="A")
    with pytest.raises(EntryValidationError) as info:
        validate_entry({"index": 0, "event": {}}, era="A")
    assert info.value.field == "event"


# -- JSON safety (§1.2 step 2) ------------------------------------------------------------------

@pytest.mark.parametrize(
    ("value", "value_type"),
    [
        (float("nan"), "NaN"),
        (float("inf"), "Infinity"),
        (float("-inf"), "-Infinity"),
        (-0.0, "-0"),
        (dt.datetime(2026, 1, 1), "datetime"),
        ({1, 2}, "set"),
        (b"x", "bytes"),
    ],
)
def test_in_memory_non_json_values(value: Any, value_type: str) -> None:
    e = entry(event={"type": "X", "output": {"createdAt": value}})
    with pytest.raises(NonSerializableError) as info:
        validate_entry(e, index=3, source="<list>")
    err = info.value
    assert err.value_type == value_type
    assert err.path == "entry.event.output.createdAt"
    assert err.field == "event.output.createdAt"
    assert err.index == 3
    assert f"Agent event field 'entry.event.output.createdAt' is not JSON-serializable ({value_type})." in str(err)
    assert err.code == "non-serializable-event"


def test_array_path_and_cycle() -> None:
    with pytest.raises(NonSerializableError) as info:
        validate_entry(entry(event={"type": "X", "items": [1, 2, float("nan")]}))
    assert info.value.path == "entry.event.items[2]"
    cyclic: dict[str, Any] = {"type": "X"}
    cyclic["self"] = cyclic
    with pytest.raises(NonSerializableError) as info:
        validate_entry(entry(event=cyclic))
    assert info.value.value_type == "circular reference"
    shared = {"a": 1}
    validate_entry(entry(event={"type": "X", "l": shared, "r": shared}))  # a DAG is fine


@pytest.mark.parametrize(
    ("literal", "value_type"),
    [
        ("-0", "-0"),
        ("-0.0", "-0"),
        ("-0e5", "-0"),
        ("-0.000E-3", "-0"),
        ("1e400", "Infinity"),
        ("-1e400", "-Infinity"),
        ("NaN", "NaN"),
        ("Infinity", "Infinity"),
        ("-Infinity", "-Infinity"),
    ],
)
def test_unsafe_literals_in_text(literal: str, value_type: str) -> None:
    text = json.dumps(entry(event={"type": "X", "n": 1})).replace('"n": 1', f'"n": {literal}')
    with pytest.raises(NonSerializableError) as info:
        validate_entry(loads(text), index=1)
    assert info.value.value_type == value_type
    assert info.value.field == "event.n"


def test_safe_literals_in_text() -> None:
    for literal in ("0", "0.0", "-0.5", "1e308", "-1", "1E+2"):
        text = json.dumps(entry(event={"type": "X", "n": 1})).replace('"n": 1', f'"n": {literal}')
        validate_entry(loads(text))


def test_unsafe_literal_in_jsonl_file_names_line(tmp_path: Any) -> None:
    lines = [json.dumps(e) for e in COUNTER]
    lines[2] = lines[2].replace('"factor": 3', '"factor": -0')
    p = tmp_path / "log.jsonl"
    p.write_text("\n".join(lines) + "\n")
    with pytest.raises(NonSerializableError) as info:
        read_log(p)
    assert (info.value.index, info.value.line, info.value.field) == (2, 3, "event.factor")
    assert info.value.value_type == "-0"


# -- §1.4 recordedAt -------------------------------------------------------------------------------

ACCEPTED = [
    "2026-01-01T00:00:00.000Z",
    "2026-02-30T00:00:00Z",
    "2026-04-31T12:00:00Z",
    "2026-01-01T24:00:00Z",
    "2026-01-01T24:00:00.000Z",
    "2026-01-01T00:00:00.123456789Z",
    "2026-01-01T00:00:00+23:59",
    "2026-01-01T00:00:00-00:00",
    "0000-01-01T00:00:00Z",
]
REJECTED = [
    "2026-00-01T00:00:00Z",
    "2026-13-01T00:00:00Z",
    "2026-01-00T00:00:00Z",
    "2026-01-32T00:00:00Z",
    "2026-01-01T25:00:00Z",
    "2026-01-01T24:01:00Z",
    "2026-01-01T24:00:00.001Z",
    "2026-01-01T00:60:00Z",
    "2026-01-01T00:00:60Z",
    "2026-01-01T00:00:00+24:00",
    "2026-01-01T00:00:00+05:60",
    "2026-01-01t00:00:00z",
    "2026-01-01 00:00:00Z",
    "2026-01-01T00:00:00",
    "2026-01-01T00:00Z",
    "2026-01-01T00:00:00.Z",
    "2026-01-01T00:00:00Z\n",
    "２０２６-01-01T00:00:00Z",
]


@pytest.mark.parametrize("value", ACCEPTED)
def test_recorded_at_accepted(value: str) -> None:
    assert is_recorded_at(value)
    validate_entry(entry(recordedAt=value))


@pytest.mark.parametrize("value", REJECTED)
def test_recorded_at_rejected(value: str) -> None:
    assert not is_recorded_at(value)
    with pytest.raises(EntryValidationError) as info:
        validate_entry(entry(recordedAt=value), index=1)
    assert info.value.field == "recordedAt" and info.value.index == 1


# -- §1.3 log-level rules ------------------------------------------------------------------------

def test_gap_in_indices() -> None:
    log = copy.deepcopy(COUNTER)
    log[2]["index"] = 3
    with pytest.raises(EntryValidationError, match=r"contiguous from index 0; found entry\.index 3 at position 2\.") as info:
        validate_entries(log, source="x.json")
    assert (info.value.index, info.value.field, info.value.source) == (2, "index", "x.json")


def test_duplicate_id() -> None:
    log = copy.deepcopy(COUNTER)
    log[2]["id"] = "evt_00000001"
    with pytest.raises(EntryValidationError, match="duplicate entry id 'evt_00000001'") as info:
        validate_entries(log)
    assert (info.value.index, info.value.field) == (2, "id")


def test_init_must_come_first() -> None:
    with pytest.raises(EntryValidationError, match=r"must start with the reserved '@agent\.init' entry; found 'ADD'") as info:
        validate_entries([{**COUNTER[1], "index": 0}])
    assert (info.value.index, info.value.field) == (0, "event.type")


def test_second_init() -> None:
    log = copy.deepcopy(COUNTER)
    log[2]["event"] = {"type": "@agent.init"}
    with pytest.raises(EntryValidationError, match=r"second '@agent\.init' entry at index 2") as info:
        validate_entries(log)
    assert (info.value.index, info.value.field) == (2, "event.type")


def test_machine_mismatch() -> None:
    log = copy.deepcopy(COUNTER)
    log[2]["machineVersion"] = "v2"
    with pytest.raises(MachineVersionMismatchError) as info:
        validate_entries(log)
    err = info.value
    assert (err.index, err.event_id) == (2, "evt_00000002")
    assert err.expected == {"machineId": "counter", "machineVersion": "v1"}
    assert err.actual == {"machineId": "counter", "machineVersion": "v2"}
    assert "targets machine 'counter'@'v2', expected 'counter'@'v1'" in str(err)
    with pytest.raises(MachineVersionMismatchError):
        validate_entries(COUNTER, machine_id="other")
    with pytest.raises(MachineVersionMismatchError):
        validate_entries(COUNTER, machine_version="v9")


def test_version_bridge_exemption_and_reference_entry() -> None:
    # the real v2 log: a snapshot init stamped "2", the rest "2"
    v2 = load_json("e_bridge.v2.log.json")
    validate_entries(v2)
    validate_entries(v2, machine_id="ticket", machine_version="2")
    # a hand-built bridge stamps the OLD version on the init: exempt, and (02a45590) the
    # reference is the first non-snapshot-init entry, so standalone validation passes
    bridged = copy.deepcopy(v2)
    bridged[0]["machineVersion"] = "1"
    validate_entries(bridged)
    # the exemption is only for snapshot inits: an input init with another version fails
    plain = load_json("e_bridge.v1.log.json")
    plain[0]["machineVersion"] = "0"
    with pytest.raises(MachineVersionMismatchError) as info:
        validate_entries(plain)
    # entry 0 is the reference (not a snapshot init), so entry 1 is the one that differs
    assert info.value.index == 1
    assert info.value.expected["machineVersion"] == "0"
    with pytest.raises(MachineVersionMismatchError) as info:
        validate_entries(plain, machine_version="1")
    assert info.value.index == 0
    # the machine id is never exempt
    bridged[0]["machineId"] = "other"
    with pytest.raises(MachineVersionMismatchError) as info:
        validate_entries(bridged)
    assert info.value.index == 0


def test_errors_are_value_errors_with_common_root() -> None:
    from agentscope.errors import AgentscopeError

    assert issubclass(NonSerializableError, EntryValidationError)
    assert issubclass(EntryValidationError, LogFormatError)
    assert issubclass(LogFormatError, AgentscopeError) and issubclass(LogFormatError, ValueError)


def test_every_validation_error_names_its_problem_kind() -> None:
    """The rules in log.validate tag what they raise with a ProblemKind code (one place per rule)."""
    from agentscope.log.problems import ProblemKind
    from agentscope.log.validate import SegmentChecker, log_problems, problem_kind

    base = {"schemaVersion": 1, "machineId": "m", "machineVersion": "1",
            "recordedAt": "2026-01-01T00:00:00.000Z"}
    good = [dict(base, id="a", index=0, event={"type": "@agent.init"}),
            dict(base, id="b", index=1, event={"type": "X"})]
    cases = {
        "non-contiguous": [good[0], dict(good[1], index=5)],
        "duplicate-id": [good[0], dict(good[1], id="a")],
        "no-init": [dict(good[0], event={"type": "X"})],
        "machine-mismatch": [good[0], dict(good[1], machineId="other")],
        "invalid-entry": [good[0], dict(good[1], schemaVersion=2)],
    }
    for kind, entries in cases.items():
        found = [problem_kind(p) for p in log_problems(entries)]
        assert kind in found, (kind, found)
        assert ProblemKind(kind)
        if kind != "machine-mismatch":
            seg = [k for k, _ in SegmentChecker(0).check(entries, 0, len(entries))[0]]
            assert seg == [problem_kind(e) for _, e in SegmentChecker(0).check(entries, 0, len(entries))[0]]
            assert kind in seg


# -- the bulk checker (plain entries first, recordedAt matched for many at once) ---------------

_ODD_VALUES: list[Any] = [float("nan"), -0.0, float("inf"), dt.datetime(2026, 1, 1), {1}, b"x", 2**1100,
                          (1, 2), {3: "non-string key"}, "\ud800", [[[[]]]], None, True, 1.5]


def _long_log(n: int = 100) -> list[dict[str, Any]]:
    out = []
    for i in range(n):
        e = copy.deepcopy(COUNTER[0] if i == 0 else COUNTER[1])
        e.update(index=i, id=f"evt_{i:08d}", recordedAt=f"2026-01-01T00:00:{i % 60:02d}.{i:03d}Z")
        out.append(e)
    return out


def _one_by_one(entries: list[Any]) -> list[tuple[str, int | None, str | None, str]]:
    """What the checker must report, from ``entry_problem`` entry by entry."""
    from agentscope.log.validate import entry_problem, problem_kind

    found = []
    for i, e in enumerate(entries):
        p = entry_problem(e, index=i) if isinstance(e, dict) else None
        if p is not None:
            found.append((str(problem_kind(p)), p.index, p.field, str(p)))
    return found


def _mutations() -> list[dict[str, Any]]:
    cases: list[dict[str, Any]] = [changes for changes, _f, _m in ENVELOPE_CASES]
    cases += [{"recordedAt": v} for v in REJECTED + ACCEPTED]
    cases += [{"event": {"type": "X", "v": v}} for v in _ODD_VALUES]
    cases += [{"extra": v} for v in _ODD_VALUES]
    cases += [{"metadata": {"m": v}} for v in _ODD_VALUES]
    cases += [{"verification": {"stateHash": "344e8c4e", "x": v}} for v in _ODD_VALUES]
    cases += [{"schemaVersion": 1.0}, {"schemaVersion": True}, {"index": 2**1100}, {"causationId": 5},
              {"recordedAt": "2026-01-01T00:00:00Z\ud800"}, {"id": "\udc00"}]
    return cases


def _case_id(changes: dict[str, Any]) -> str:
    """The case's repr without memory addresses (ids must be the same in every process)."""
    return re.sub(r" at 0x[0-9a-f]+", "", repr(changes))


@pytest.mark.parametrize("changes", _mutations(), ids=_case_id)
def test_bulk_checker_reports_what_entry_by_entry_rules_report(changes: dict[str, Any]) -> None:
    """One broken entry among 100 (enough for the bulk recordedAt match): the checker reports
    exactly entry_problem's error for it, in log order before the log-level problems around it."""
    from agentscope.log.validate import SegmentChecker

    log = _long_log()
    for at in (1, 50, 99):
        for k, v in changes.items():
            if v is _DELETE:
                del log[at][k]
            else:
                log[at][k] = copy.deepcopy(v)
    found, _stop = SegmentChecker(0).check(log, 0, len(log))
    invalid = [(str(kind), err.index, err.field, str(err)) for kind, err in found
               if kind in ("invalid-entry", "non-serializable-event")]
    assert invalid == _one_by_one(log)
    assert [err.index for _k, err in found] == sorted(err.index for _k, err in found)


def test_bulk_checker_order_puts_an_entrys_own_problem_first() -> None:
    from agentscope.log.validate import SegmentChecker

    log = _long_log()
    log[40]["recordedAt"] = "yesterday"
    log[40]["index"] = 7  # and out of sequence
    found, _stop = SegmentChecker(0).check(log, 0, len(log))
    assert [(kind, err.index) for kind, err in found][:2] == [("invalid-entry", 40), ("non-contiguous", 40)]
    assert found[0][1].field == "recordedAt"


def test_plain_envelope_implies_no_problem() -> None:
    """The quick predicate is only ever a safe "yes": every mutation it accepts (with a
    recordedAt the pattern accepts) is one entry_problem accepts too."""
    from agentscope.log.validate import _plain_envelope, entry_problem

    for changes in _mutations():
        e = entry(**changes)
        if _plain_envelope(e) and is_recorded_at(e["recordedAt"]):
            assert entry_problem(e) is None, changes


def test_problems_table_columns_dtypes_and_values() -> None:
    """The one problems table: fixed columns in order, nullable Int64 index/line, object text
    (a lone surrogate kept), kind as its string code, and empty tables that do not share data."""
    from agentscope.log.problems import PROBLEM_COLUMNS, ProblemKind, problems_frame

    rows = [
        {"index": 3, "id": "e3", "field": "recordedAt", "kind": ProblemKind("invalid-entry"),
         "message": "bad \ud800", "source": "<memory>", "line": 4},
        {"kind": "bridge-link", "message": "log-level", "expected": "a", "actual": "b"},
    ]
    df = problems_frame(rows)
    assert tuple(df.columns) == PROBLEM_COLUMNS
    assert str(df["index"].dtype) == "Int64" and str(df["line"].dtype) == "Int64"
    assert all(df[c].dtype == object for c in PROBLEM_COLUMNS if c not in ("index", "line"))
    assert df["index"].tolist()[0] == 3 and df["index"].isna().tolist() == [False, True]
    assert df["kind"].tolist() == ["invalid-entry", "bridge-link"]
    assert type(df["kind"].iloc[0]) is str and df["message"].iloc[0] == "bad \ud800"
    assert df["expected"].tolist() == [None, "a"] and df["line"].tolist()[0] == 4
    first = problems_frame([])
    assert tuple(first.columns) == PROBLEM_COLUMNS and len(first) == 0
    assert str(first["index"].dtype) == "Int64" and first["message"].dtype == object
    first["extra"] = []  # a caller's change to one empty table is not seen by the next
    assert tuple(problems_frame([]).columns) == PROBLEM_COLUMNS


def _problems(entries: list[Any], start: int = 0, pieces: tuple[int, ...] = ()) -> list[tuple[Any, ...]]:
    from agentscope.log.validate import SegmentChecker

    checker = SegmentChecker(start)
    found: list[tuple[Any, ...]] = []
    bounds = [start, *pieces, len(entries)]
    stops = []
    for lo, hi in itertools.pairwise(bounds):
        got, stop = checker.check(entries, lo, hi)
        found += [(kind, err.index, err.field, str(err)) for kind, err in got]
        stops.append(stop)
    return [*found, ("stops", tuple(stops), checker.base, checker.offset, len(checker.seen))]


@pytest.mark.parametrize("case", ["plain", "gap", "dup-across", "dup-within", "bad-late", "negative",
                                  "bridge", "pieces", "no-init", "str-subclass", "null-hash"])
def test_chunked_checker_equals_entry_by_entry(case: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Logs spanning several 1024-entry chunks give the same problems, stops and state whether
    chunks are taken column by column or every entry one by one."""
    from agentscope.log.validate import SegmentChecker

    class Text(str):
        pass

    log = _long_log(2600)
    start, pieces = 0, ()
    if case == "gap":
        del log[1500]
    elif case == "dup-across":
        log[2000]["id"] = log[10]["id"]
    elif case == "dup-within":
        log[2001]["id"] = log[2000]["id"]
    elif case == "bad-late":
        log[2500]["recordedAt"] = "2026-02-30T25:00:00Z"
    elif case == "negative":
        for i, e in enumerate(log):
            e["index"] = i - 5
    elif case == "bridge":
        start = 1100
        log[1100]["index"] = 0
        log[1100]["event"] = {"type": "@agent.init", "snapshot": {"status": "active", "value": "a"}}
        log[1100]["metadata"] = {"migratedFrom": {"machineVersion": "v0", "logIndex": 1100}}
        for i in range(1101, len(log)):
            log[i]["index"] = i - 1100
    elif case == "pieces":
        pieces = (1, 700, 2049)
    elif case == "no-init":
        log[0]["event"] = {"type": "ADD"}
    elif case == "str-subclass":
        log[1300]["machineId"] = Text("counter")
    elif case == "null-hash":
        log[1800]["verification"] = None
    real = SegmentChecker._plain_chunk
    taken: list[bool] = []

    def spy(self: Any, *args: Any) -> bool:
        taken.append(real(self, *args))
        return taken[-1]

    monkeypatch.setattr(SegmentChecker, "_plain_chunk", spy)
    chunked = _problems(log, start, pieces)
    assert any(taken)  # some chunk was taken column by column
    monkeypatch.setattr(SegmentChecker, "_plain_chunk", lambda *a, **k: False)
    assert chunked == _problems(log, start, pieces)


_MEMBER = st.one_of(st.none(), st.booleans(), st.text(max_size=3),
                    st.integers(min_value=-(2**1024), max_value=2**1024),
                    st.sampled_from([2**1023 - 1, 2**1023, -(2**1023), -(2**1023) + 1, 1.5, -0.0, float("nan")]),
                    st.lists(st.integers(), max_size=2), st.dictionaries(st.text(max_size=2), st.integers(), max_size=2))


@settings(max_examples=300, deadline=None)
@given(objects=st.lists(st.dictionaries(st.one_of(st.text(max_size=3), st.integers(0, 3)), _MEMBER, max_size=4),
                        max_size=6))
def test_objects_judged_together_as_one_by_one(objects: list[dict[Any, Any]]) -> None:
    """The chunked JSON-safety test of flat objects says what the per-object test says."""
    from agentscope.log.validate import _all_plainly_safe, _plainly_safe

    assert _all_plainly_safe(objects) == all(_plainly_safe(o, 1) for o in objects)

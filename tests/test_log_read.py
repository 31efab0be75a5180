"""read_log on JSON, JSONL, file objects, lists; errors="collect"; legacy eras; EventLog views."""

from __future__ import annotations

import copy
import io
import json
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentscope.errors import (
    EntryValidationError,
    LogFormatError,
    MachineVersionMismatchError,
    NonSerializableError,
)
from agentscope.log import EventLog, read_log
from tests.conftest import FIXTURES, load_json

LOG_FILES = sorted(p.name for p in FIXTURES.glob("*.log.json"))


@pytest.mark.parametrize("name", LOG_FILES)
def test_every_fixture_log_reads_back_equal(name: str) -> None:
    expected = load_json(name)
    log = read_log(FIXTURES / name)
    assert log.entries == expected
    assert [list(e) for e in log.entries] == [list(e) for e in expected]  # key order kept
    assert len(log) == len(expected) and log.era == "C"
    assert log.source == str(FIXTURES / name)
    # the same through str path, file object (binary and text), bytes and a list
    assert read_log(str(FIXTURES / name)).entries == expected
    with (FIXTURES / name).open("rb") as fh:
        assert read_log(fh).entries == expected
    with (FIXTURES / name).open("r", encoding="utf-8") as fh:
        assert read_log(fh).entries == expected
    assert read_log((FIXTURES / name).read_bytes()).entries == expected
    assert read_log(expected).entries == expected


@pytest.mark.parametrize("name", LOG_FILES)
def test_fixture_as_jsonl_reads_back_equal(name: str, tmp_path: Path) -> None:
    expected = load_json(name)
    p = tmp_path / "log.txt"  # no telling extension: sniffed by content
    p.write_text("\n".join(json.dumps(e) for e in expected) + "\n")
    log = read_log(p)
    assert log.entries == expected


def test_identity_and_df_types() -> None:
    log = read_log(FIXTURES / "g_triage.main.log.json")
    assert log.machine_id == "supportTriage"
    assert log.machine_versions == ("efe50ed5",)
    assert log.execution_id == "26f6e978-a4ce-4960-9286-82ea9e40d605"
    df = log.df
    assert len(df) == 91
    assert str(df["index"].dtype) == "int64"
    assert list(df["index"]) == list(range(91))
    assert str(df["recorded_at"].dtype).startswith("datetime64") and str(df["recorded_at"].dt.tz) == "UTC"
    for col in ("machine_id", "machine_version", "event_type"):
        assert isinstance(df[col].dtype, pd.CategoricalDtype)
    assert df["event"].iloc[5] == log.entries[5]["event"]
    assert df["state_hash"].iloc[-1] == "5b6a2cd9"
    assert df["event_type"].iloc[0] == "@agent.init"
    assert df["recorded_at"].iloc[0] == pd.Timestamp(log.entries[0]["recordedAt"])
    assert log.df is df  # cached
    flat = log.frame(flatten=True)
    assert "event.tickets" in flat.columns or any(c.startswith("event.") for c in flat.columns)
    assert "event.type" not in flat.columns
    # a payload field value round-trips into its column
    i = next(i for i, e in enumerate(log.entries) if "actorId" in e["event"])
    assert flat["event.actorId"].iloc[i] == log.entries[i]["event"]["actorId"]


def test_slicing_and_indexing() -> None:
    log = read_log(FIXTURES / "a_counter.log.json")
    head = log[:5]
    assert isinstance(head, EventLog) and len(head) == 5
    assert head.entries == log.entries[:5]
    assert log[3] == log.entries[3] and log[-1] == log.entries[-1]
    assert list(iter(log)) == log.entries
    assert len(log[20:]) == 0
    with pytest.raises(ValueError, match="contiguous"):
        log[::2]


def test_segments_version_bridge() -> None:
    v1 = read_log(FIXTURES / "e_bridge.v1.log.json")
    v2 = read_log(FIXTURES / "e_bridge.v2.log.json")
    (seg1,) = v1.segments
    assert (seg1.start, seg1.stop, seg1.machine_version, seg1.bridge) == (0, 5, "1", False)
    (seg2,) = v2.segments
    assert (seg2.start, seg2.stop, seg2.machine_version, seg2.bridge) == (0, 7, "2", True)
    assert seg2.migrated_from == {"machineVersion": "1", "logIndex": 5}
    assert v1.execution_id == v2.execution_id  # the bridge inherits the lineage id
    # the v1 log followed by the v2 segment: two segments (validation would reject the second
    # init, so build the EventLog directly)
    joined = EventLog(v1.entries + v2.entries)  # split at each init, as the fold splits it
    assert [(s.start, s.stop, s.machine_version, s.bridge) for s in joined.segments] == [
        (0, 5, "1", False),
        (5, 12, "2", True),
    ]
    assert joined.machine_versions == ("1", "2")


def test_repr_and_html_escape() -> None:
    entries = copy.deepcopy(load_json("a_counter.log.json"))[:3]
    entries[1]["event"]["type"] = "<script>alert(1)</script>"
    log = read_log(entries)
    text = repr(log)
    assert text.startswith("<EventLog from '<list>': 3 entries") and len(text) < 200
    html = log._repr_html_()
    assert "<script>" not in html and "&lt;script&gt;" in html
    big = read_log(FIXTURES / "g_triage.main.log.json")._repr_html_()
    assert big.count("<tr>") == 11 and "81 more entries" in big  # bounded: header + 10 rows


# -- JSON shapes ----------------------------------------------------------------------------------

def test_result_object_with_events_and_snapshot(tmp_path: Path) -> None:
    entries = load_json("a_counter.log.json")
    snap = load_json("a_counter.replay.json")
    persisted = {"status": "done", "value": "done", "context": {}, "agentMeta": {"machineId": "counter", "version": "adb004a6", "logId": entries[0]["metadata"]["executionId"], "logIndex": 17}}
    p = tmp_path / "result.json"
    p.write_text(json.dumps({"status": "done", "events": entries, "snapshot": persisted}))
    log = read_log(p)
    assert log.entries == entries and log.cached_snapshot == persisted
    p.write_text(json.dumps({"events": entries}))
    assert read_log(p).cached_snapshot is None
    assert snap  # the replay file exists (used elsewhere)


def test_persisted_snapshot_alone(tmp_path: Path) -> None:
    persisted = {"status": "active", "value": "on", "context": {"n": 1}, "agentMeta": {"machineId": "counter", "version": "v1", "logIndex": 3}}
    p = tmp_path / "snap.json"
    p.write_text(json.dumps(persisted, indent=2))
    log = read_log(p)
    assert len(log) == 0 and log.cached_snapshot == persisted and log.machine_id == "counter"


def test_unrecognised_json(tmp_path: Path) -> None:
    p = tmp_path / "x.json"
    p.write_text('{"hello": 1}')
    with pytest.raises(LogFormatError, match="unrecognised JSON document"):
        read_log(p)


def test_truncated_json(tmp_path: Path) -> None:
    text = (FIXTURES / "a_counter.log.json").read_text()
    p = tmp_path / "trunc.json"
    p.write_text(text[: len(text) // 2])
    with pytest.raises(LogFormatError) as info:
        read_log(p)
    err = info.value
    assert err.source == str(p) and err.line is not None and err.line > 10
    assert "invalid JSON" in str(err)
    # errors="collect" cannot recover entries from a broken document: it still raises
    with pytest.raises(LogFormatError):
        read_log(p, errors="collect")


def test_nan_literal_in_json_array(tmp_path: Path) -> None:
    entries = load_json("a_counter.log.json")
    text = json.dumps(entries).replace("\"by\": 5", "\"by\": NaN")
    assert "NaN" in text
    p = tmp_path / "nan.json"
    p.write_text(text)
    with pytest.raises(NonSerializableError) as info:
        read_log(p)
    i = next(i for i, e in enumerate(entries) if e["event"].get("by") == 5)
    assert (info.value.index, info.value.field, info.value.value_type) == (i, "event.by", "NaN")


def test_infinity_and_overflow_literals_in_jsonl(tmp_path: Path) -> None:
    entries = load_json("a_counter.log.json")
    for literal, value_type in (("Infinity", "Infinity"), ("-Infinity", "-Infinity"), ("1e400", "Infinity")):
        lines = [json.dumps(e) for e in entries]
        lines[4] = lines[4].replace("\"by\": 5", f"\"by\": {literal}")
        p = tmp_path / "inf.jsonl"
        p.write_text("\n".join(lines))
        with pytest.raises(NonSerializableError) as info:
            read_log(p)
        assert (info.value.index, info.value.line, info.value.field, info.value.value_type) == (4, 5, "event.by", value_type)


# -- JSONL -------------------------------------------------------------------------------------------

def _jsonl(entries: list[dict[str, Any]], blank_after: int | None = None) -> str:
    lines = [json.dumps(e) for e in entries]
    if blank_after is not None:
        lines.insert(blank_after + 1, "")
        lines.insert(blank_after + 1, "   ")
    return "\n".join(lines) + "\n"


def test_jsonl_blank_lines_and_line_numbers(tmp_path: Path) -> None:
    entries = load_json("a_counter.log.json")
    p = tmp_path / "log.ndjson"
    p.write_text(_jsonl(entries, blank_after=2))
    assert read_log(p).entries == entries
    bad = copy.deepcopy(entries)
    bad[5]["id"] = ""
    p.write_text(_jsonl(bad, blank_after=2))
    with pytest.raises(EntryValidationError) as info:
        read_log(p)
    # entry 5 sits on line 8: two blank lines were inserted after entry 2
    assert (info.value.index, info.value.line, info.value.field) == (5, 8, "id")


def test_jsonl_bad_line(tmp_path: Path) -> None:
    entries = load_json("a_counter.log.json")
    lines = [json.dumps(e) for e in entries]
    lines[6] = lines[6][:-10]
    p = tmp_path / "log.jsonl"
    p.write_text("\n".join(lines))
    with pytest.raises(LogFormatError) as info:
        read_log(p)
    assert (info.value.index, info.value.line) == (6, 7)
    assert "invalid JSON" in str(info.value)
    # collect: the bad line is a problem; every other entry is kept; the gap it leaves is not
    # reported again because positions count the bad line
    log = read_log(p, errors="collect")
    assert log.entries == entries[:6] + entries[7:]
    probs = log.problems
    assert list(probs.columns) == ["index", "id", "field", "kind", "message", "expected", "actual", "source", "line"]
    assert len(probs) == 1
    row = probs.iloc[0]
    assert (row["index"], row["line"], row["kind"], row["source"]) == (6, 7, "invalid-entry", str(p))


def test_collect_keeps_every_valid_entry(tmp_path: Path) -> None:
    entries = copy.deepcopy(load_json("g_triage.main.log.json"))
    entries[3]["recordedAt"] = "2026-13-01T00:00:00Z"  # envelope problem: dropped
    entries[10]["id"] = entries[9]["id"]  # duplicate id: log-level, kept and reported
    entries[20]["machineVersion"] = "other"  # identity: kept and reported
    entries[30]["event"]["n"] = float("nan")  # not JSON-safe: dropped
    with pytest.raises(EntryValidationError):
        read_log(entries)
    log = read_log(entries, errors="collect")
    assert len(log) == 89
    assert log.entries == [e for i, e in enumerate(entries) if i not in (3, 30)]
    probs = log.problems
    assert list(probs["index"]) == [3, 10, 20, 30]
    assert list(probs["field"]) == ["recordedAt", "id", "machineVersion", "event.n"]
    assert list(probs["kind"]) == ["invalid-entry", "duplicate-id", "machine-mismatch", "non-serializable-event"]
    assert list(probs["id"]) == ["evt_00000003", "evt_00000009", "evt_00000020", "evt_00000030"]
    assert (probs["expected"].iloc[2], probs["actual"].iloc[2]) == ("efe50ed5", "other")
    assert all(probs["source"] == "<list>")
    assert len(read_log(load_json("a_counter.log.json"), errors="collect").problems) == 0


def test_typed_errors_from_lists() -> None:
    entries = load_json("a_counter.log.json")
    gap = copy.deepcopy(entries)
    del gap[4]
    with pytest.raises(EntryValidationError) as info:
        read_log(gap)
    assert (info.value.index, info.value.field) == (4, "index")
    second = copy.deepcopy(entries)
    second[7]["event"] = {"type": "@agent.init"}
    with pytest.raises(EntryValidationError) as info:
        read_log(second)
    assert (info.value.index, info.value.field) == (7, "event.type")
    mixed = copy.deepcopy(entries)
    mixed[2]["machineId"] = "toggle"
    with pytest.raises(MachineVersionMismatchError) as info:
        read_log(mixed)
    assert info.value.index == 2


def test_wrong_type_in_each_field_through_jsonl(tmp_path: Path) -> None:
    entries = load_json("a_counter.log.json")
    cases = {
        "schemaVersion": "1",
        "id": 5,
        "index": "3",
        "recordedAt": 3,
        "machineId": ["counter"],
        "machineVersion": None,
        "event": "INC",
        "causationId": 1,
        "metadata": "m",
        "verification": "abc",
    }
    for field, value in cases.items():
        bad = copy.deepcopy(entries)
        bad[3][field] = value
        p = tmp_path / "log.jsonl"
        p.write_text(_jsonl(bad))
        with pytest.raises(EntryValidationError) as info:
            read_log(p)
        assert (info.value.index, info.value.line, info.value.field) == (3, 4, field), field


def test_format_forcing_and_unknown(tmp_path: Path) -> None:
    entries = load_json("a_counter.log.json")
    p = tmp_path / "log.json"
    p.write_text(_jsonl(entries))  # JSONL content behind a .json name: sniffed as JSONL
    assert read_log(p).entries == entries
    assert read_log(p, format="jsonl").entries == entries
    with pytest.raises(LogFormatError):
        read_log(p, format="json")
    q = tmp_path / "x.bin"
    q.write_bytes(b"\x00\x01garbage")
    with pytest.raises(LogFormatError, match="unrecognised log format"):
        read_log(q)
    b = tmp_path / "run.jsonl"
    b.write_bytes(bytes(range(256)) * 4)  # a first "line" with tabs and commas, but binary
    with pytest.raises(LogFormatError, match=r"^.*run\.jsonl: unrecognised log format") as info:
        read_log(b)
    assert "cannot read as csv" not in str(info.value)
    with pytest.raises(LogFormatError, match="no such file"):
        read_log(tmp_path / "missing.json")
    with pytest.raises(ValueError, match="format must be one of"):
        read_log(p, format="xml")  # type: ignore[arg-type]


def test_single_line_jsonl_and_stream_name() -> None:
    entries = load_json("a_counter.log.json")[:1]
    log = read_log(io.BytesIO(json.dumps(entries[0]).encode()))
    assert log.entries == entries and log.source == "<stream>"


# -- legacy eras -------------------------------------------------------------------------------------

def test_era_a() -> None:
    entries = [{"index": 0, "event": {"type": "start"}}, {"index": 1, "event": {"type": "GO"}, "metadata": {"by": "x"}}]
    log = read_log(entries)
    assert log.era == "A" and log.entries == entries
    assert log.machine_id is None and list(log.df["event_type"]) == ["start", "GO"]
    with pytest.raises(EntryValidationError) as info:
        read_log([entries[0], {"index": 2, "event": {"type": "GO"}}])
    assert info.value.index == 1


def test_era_b() -> None:
    base = {"schemaVersion": 1, "recordedAt": "2026-01-01T00:00:00.000Z", "machineId": "m", "machineVersion": "v1"}
    entries = [
        {**base, "id": "evt_0", "index": 0, "event": {"type": "start"}, "correlationId": "c", "verification": {"stateHash": "8cf55db6", "effectsHash": "0059765d"}},
        {**base, "id": "evt_1", "index": 1, "event": {"type": "GO"}, "verification": {"stateHash": "f62d403c", "effectsHash": "0059765d"}},
    ]
    log = read_log(entries)
    assert log.era == "B" and log.entries == entries
    bad = copy.deepcopy(entries)
    del bad[1]["verification"]["effectsHash"]
    with pytest.raises(EntryValidationError) as info:
        read_log(bad)
    assert (info.value.index, info.value.field) == (1, "verification.effectsHash")
    # an Era C log cannot be forced through Era B rules (no effectsHash)
    with pytest.raises(EntryValidationError):
        read_log(load_json("a_counter.log.json"), era="B")


# -- property: JSONL round trip -----------------------------------------------------------------------

json_scalars = st.one_of(
    st.none(), st.booleans(), st.integers(min_value=-(2**53), max_value=2**53),
    st.floats(allow_nan=False, allow_infinity=False).filter(lambda f: f != 0 or str(f) == "0.0"),
    st.text(max_size=12),
)
json_values = st.recursive(json_scalars, lambda kids: st.lists(kids, max_size=4) | st.dictionaries(st.text(max_size=6), kids, max_size=4), max_leaves=12)


@st.composite
def logs(draw: st.DrawFn) -> list[dict[str, Any]]:
    n = draw(st.integers(min_value=1, max_value=6))
    out = []
    for i in range(n):
        payload = draw(st.dictionaries(st.text(min_size=1, max_size=6).filter(lambda k: k != "type"), json_values, max_size=4))
        event = {"type": "@agent.init" if i == 0 else draw(st.text(min_size=1, max_size=8).filter(lambda t: t != "@agent.init")), **payload}
        e: dict[str, Any] = {"schemaVersion": 1, "id": f"evt_{i:08d}", "index": i, "recordedAt": "2026-01-01T00:00:00.000Z", "machineId": "m", "machineVersion": "v1", "event": event}
        if draw(st.booleans()):
            e["verification"] = {"stateHash": draw(st.from_regex(r"[0-9a-f]{8}", fullmatch=True))}
        out.append(e)
    return out


@settings(max_examples=60, deadline=None)
@given(logs())
def test_jsonl_round_trip_property(entries: list[dict[str, Any]]) -> None:
    text = "\n".join(json.dumps(e) for e in entries) + "\n"
    log = read_log(text.encode("utf-8"), format="jsonl")
    assert log.entries == entries
    assert [list(e["event"]) for e in log.entries] == [list(e["event"]) for e in entries]


def test_jsonl_with_a_first_line_longer_than_the_sniffed_head(tmp_path: Path) -> None:
    entries = copy.deepcopy(load_json("a_counter.log.json"))
    entries[0]["event"]["input"]["blob"] = "x" * 100_000
    p = tmp_path / "long.log"
    p.write_text(_jsonl(entries))
    assert read_log(p).entries == entries


def test_reading_a_collected_log_again_raises_its_first_problem_where_it_was_found(tmp_path: Path) -> None:
    """``read_log(log)`` of a log read with ``errors="collect"`` raises what ``read_log(file)``
    raises (source, source entry index, field), not the numbering gap the dropped entry left."""
    entries = json.loads((FIXTURES / "a_counter.log.json").read_text(encoding="utf-8"))
    entries[3] = {**entries[3], "event": {"type": 5}}
    entries[5] = {**entries[5], "index": "x"}
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(entries), encoding="utf-8")
    with pytest.raises(EntryValidationError) as direct:
        read_log(path)
    collected = read_log(path, errors="collect")
    assert len(collected) == len(entries) - 2 and len(collected.read_problems) == 2
    with pytest.raises(EntryValidationError) as again:
        read_log(collected)
    assert str(again.value) == str(direct.value) == (
        f"{path}: entry 3: field 'event.type': Agent event entry.event requires a non-empty string type.")
    assert (again.value.index, again.value.field) == (3, "event.type")
    assert read_log(collected, errors="collect") is collected

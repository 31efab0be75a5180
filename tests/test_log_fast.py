"""The large-JSONL fast path gives exactly what the exact line-by-line reader gives."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from agentscope.errors import (
    EntryValidationError,
    LogFormatError,
    MachineVersionMismatchError,
    NonSerializableError,
)
from agentscope.log import read_log
from agentscope.log.fast import FAST_MIN_BYTES, LazyPayload
from agentscope.log.model import build_entries_frame
from tests.conftest import load_json

N = 6000


def big_log() -> list[dict[str, Any]]:
    out = []
    drift = [3, "three", [3], {"n": 3}, None, 3.5, True]
    for i in range(N):
        event: dict[str, Any] = {"type": "@agent.init", "input": {"a": 1}} if i == 0 else {"type": f"E{i % 7}", "qty": drift[i % len(drift)], "note": "x" * (i % 40)}
        e: dict[str, Any] = {
            "schemaVersion": 1, "id": f"evt_{i:08d}", "index": i,
            "recordedAt": f"2026-01-01T00:{(i // 60) % 60:02d}:{i % 60:02d}.{i % 1000:03d}Z",
            "machineId": "big", "machineVersion": "v1", "event": event,
        }
        if i == 0:
            e["metadata"] = {"executionId": "exec-1", "other": {"deep": [1, 2]}}
        if i % 3:
            e["verification"] = {"stateHash": f"{i:08x}"}
        if i % 11 == 5:
            e["causationId"] = f"evt_{i - 1:08d}"
        out.append(e)
    return out


def write(path: Path, entries: list[Any], raw_lines: dict[int, str] | None = None) -> Path:
    lines = [json.dumps(e) for e in entries]
    for i, text in (raw_lines or {}).items():
        lines[i] = text
    path.write_text("\n".join(lines) + "\n")
    assert path.stat().st_size > FAST_MIN_BYTES
    return path


def test_fast_path_equals_exact_reader(tmp_path: Path) -> None:
    entries = big_log()
    p = write(tmp_path / "big.jsonl", entries)
    log = read_log(p)
    assert log._entries is None  # the fast path was taken; nothing parsed yet
    assert len(log) == N and log.execution_id == "exec-1" and log.machine_id == "big"
    assert log.machine_versions == ("v1",) and len(log.segments) == 1
    df = log.df
    assert log._entries is None  # .df did not parse payloads
    assert isinstance(df["event"].iloc[7], LazyPayload)
    assert df["event"].iloc[7] == entries[7]["event"]
    assert dict(df["metadata"].iloc[0]) == entries[0]["metadata"]
    expected = build_entries_frame(entries)
    for column in ("index", "id", "recorded_at", "machine_id", "machine_version", "event_type", "causation_id", "state_hash"):
        pd.testing.assert_series_equal(df[column], expected[column], check_categorical=False)
    assert list(df["event"]) == list(expected["event"])
    assert [m == e for m, e in zip(df["metadata"], expected["metadata"], strict=True)] == [True] * N
    assert log.entries == entries
    assert [list(e) for e in log.entries] == [list(e) for e in entries]


def _expect_same(p: Path, exc: type[Exception], index: int, field: str | None) -> None:
    with pytest.raises(exc) as info:
        read_log(p)
    err: Any = info.value
    assert err.index == index
    if field is not None:
        assert err.field == field


@pytest.mark.parametrize(
    ("mutate", "exc", "index", "field"),
    [
        (lambda e: e[100]["event"].update(qty=-0.0), NonSerializableError, 100, "event.qty"),
        (lambda e: e[200].update(causationId=None), EntryValidationError, 200, "causationId"),
        (lambda e: e[300].update(metadata=None), EntryValidationError, 300, "metadata"),
        (lambda e: e[301].update(verification=None), EntryValidationError, 301, "verification"),
        (lambda e: e[302].update(verification={}), EntryValidationError, 302, "verification.stateHash"),
        (lambda e: e[400].update(id=e[399]["id"]), EntryValidationError, 400, "id"),
        (lambda e: e[500].update(id=5), EntryValidationError, 500, "id"),
        (lambda e: e[600].update(index=601), EntryValidationError, 600, "index"),
        (lambda e: e[700].update(recordedAt="2026-01-01T00:00:60Z"), EntryValidationError, 700, "recordedAt"),
        (lambda e: e[800].update(event={"type": "@agent.init"}), EntryValidationError, 800, "event.type"),
        (lambda e: e[900].update(machineVersion="v2"), MachineVersionMismatchError, 900, None),
        (lambda e: e[901].update(schemaVersion=2), EntryValidationError, 901, "schemaVersion"),
        (lambda e: e[902]["event"].update(type=""), EntryValidationError, 902, "event.type"),
    ],
)
def test_fast_path_falls_back_to_the_exact_error(tmp_path: Path, mutate: Any, exc: type[Exception], index: int, field: str | None) -> None:
    entries = copy.deepcopy(big_log())
    mutate(entries)
    _expect_same(write(tmp_path / "big.jsonl", entries), exc, index, field)


@pytest.mark.parametrize("key", ["causationId", "metadata", "verification"])
@pytest.mark.parametrize("spacing", ['"{key}":null', '"{key}" :\t null', '"{key}"\t:  null'])
def test_explicit_null_envelope_field_in_any_spacing(tmp_path: Path, key: str, spacing: str) -> None:
    # Arrow reads an explicit null like an absent key; the byte scan must send it to the exact reader
    entries = big_log()
    line = json.dumps({k: v for k, v in entries[250].items() if k != key}, separators=(",", ":"))
    text = line[:-1] + "," + spacing.format(key=key) + "}"
    _expect_same(write(tmp_path / "big.jsonl", entries, {250: text}), EntryValidationError, 250, key)


def test_literals_and_bad_lines_in_big_files(tmp_path: Path) -> None:
    entries = big_log()
    for literal, value_type in (
        ("NaN", "NaN"), ("-Infinity", "-Infinity"), ("1e999", "Infinity"), ("-0", "-0"),
        # Arrow accepts these; JSON.parse reads -0 (underflow) or Infinity (overflow)
        ("-1e-400", "-0"), ("-2e-324", "-0"), ("-0." + "0" * 400 + "1", "-0"),
        ("1" + "0" * 250 + "e99", "Infinity"), ("1.797693134862315808e308", "Infinity"),
        ("-" + "9" * 309, "-Infinity"),
    ):
        text = json.dumps(entries[1234]).replace('"qty": ', f'"qty": {literal}, "was": ')
        p = write(tmp_path / "big.jsonl", entries, {1234: text})
        with pytest.raises(NonSerializableError) as info:
            read_log(p)
        assert (info.value.index, info.value.line, info.value.value_type) == (1234, 1235, value_type)
    p = write(tmp_path / "big.jsonl", entries, {2000: json.dumps(entries[2000])[:-3]})
    with pytest.raises(LogFormatError) as info2:
        read_log(p)
    assert (info2.value.index, info2.value.line) == (2000, 2001)


def test_payload_keys_named_like_envelope_fields_still_read(tmp_path: Path) -> None:
    # a payload's own "metadata": null looks like an explicit null envelope field: exact reader used
    entries = copy.deepcopy(big_log())
    entries[10]["event"]["metadata"] = None
    p = write(tmp_path / "big.jsonl", entries)
    log = read_log(p)
    assert log.entries == entries


def test_bridge_log_in_fast_path(tmp_path: Path) -> None:
    v2 = load_json("e_bridge.v2.log.json")
    entries = copy.deepcopy(big_log())
    entries[0] = {**entries[0], "machineVersion": "old", "event": v2[0]["event"], "metadata": {"executionId": "exec-1", "migratedFrom": {"machineVersion": "old", "logIndex": 3}}}
    p = write(tmp_path / "big.jsonl", entries)
    log = read_log(p)
    assert log._entries is None
    (seg,) = log.segments
    assert seg.bridge and seg.machine_version == "v1" and seg.migrated_from == {"machineVersion": "old", "logIndex": 3}
    assert log.entries == entries


def test_blank_lines_and_two_objects_on_a_line(tmp_path: Path) -> None:
    entries = big_log()
    p = write(tmp_path / "big.jsonl", entries, {50: "\n  \n" + json.dumps(entries[50])})
    log = read_log(p)
    assert log.entries == entries
    bad = copy.deepcopy(entries)
    p = write(tmp_path / "big.jsonl", bad, {70: json.dumps(bad[70]) + " " + json.dumps(bad[71])})
    with pytest.raises(LogFormatError) as info:
        read_log(p)
    assert info.value.line == 71


def test_blank_line_cannot_hide_two_objects_on_a_line(tmp_path: Path) -> None:
    # entries 70 and 71 on line 71 and line 72 blank: rows, lines, indices and ids all add up
    entries = big_log()
    p = write(tmp_path / "big.jsonl", entries, {70: json.dumps(entries[70]) + " " + json.dumps(entries[71]), 71: ""})
    with pytest.raises(LogFormatError) as info:
        read_log(p)
    assert info.value.line == 71


def test_era_b_keys_in_an_era_c_log_stay_on_the_fast_path(tmp_path: Path) -> None:
    # Era C tolerates correlationId and verification.effectsHash (§1.1): nothing to fall back for
    entries = copy.deepcopy(big_log())
    for e in entries[1:]:
        e["correlationId"] = "corr-1"
        if "verification" in e:
            e["verification"]["effectsHash"] = "0badcafe"
    log = read_log(write(tmp_path / "big.jsonl", entries))
    assert log._entries is None and log.era == "C"
    assert read_log(entries).era == "C"  # the exact reader accepts it too
    assert log.df["state_hash"].iloc[1] == entries[1]["verification"]["stateHash"]
    assert log.entries == entries


def test_every_block_is_checked_and_the_log_is_validated_once(tmp_path: Path) -> None:
    from agentscope.log.fast import BLOCK_BYTES
    from agentscope.log.validate import is_validated

    entries = copy.deepcopy(big_log())
    entries[3000]["event"]["blob"] = "z" * (BLOCK_BYTES + 1000)  # a line longer than a block
    p = write(tmp_path / "big.jsonl", entries)
    assert p.stat().st_size > 2 * BLOCK_BYTES
    log = read_log(p)
    assert log._entries is None and is_validated(log)
    assert log.df["event"].iloc[3000] == entries[3000]["event"]
    assert log.entries == entries
    # a problem in the last block, and a torn final line, are still found
    bad = copy.deepcopy(entries)
    bad[N - 1].update(index=N)
    _expect_same(write(tmp_path / "big.jsonl", bad), EntryValidationError, N - 1, "index")
    p.write_text("\n".join(json.dumps(e) for e in entries)[:-5])
    from agentscope.errors import IncompleteRecordError

    with pytest.raises(IncompleteRecordError) as info:
        read_log(p)
    assert (info.value.index, info.value.line) == (N - 1, N)


def test_metadata_cells_on_many_rows_match_the_exact_frame(tmp_path: Path) -> None:
    entries = copy.deepcopy(big_log())
    for i, e in enumerate(entries[1:], start=1):
        if i % 5 == 0:
            e["metadata"] = {"usage": {"tokens": i}}
    log = read_log(write(tmp_path / "big.jsonl", entries))
    assert log._entries is None
    expected = build_entries_frame(entries)
    assert [None if m is None else dict(m) for m in log.df["metadata"]] == list(expected["metadata"])
    assert isinstance(log.df["metadata"].iloc[5], LazyPayload) and log.df["metadata"].iloc[6] is None
    pd.testing.assert_frame_equal(log.df.drop(columns=["event", "metadata"]), expected.drop(columns=["event", "metadata"]))


@pytest.mark.parametrize("key", ["causationId", "metadata", "verification"])
@pytest.mark.parametrize("escape", [0, 1, -1])
def test_explicit_null_under_an_escaped_envelope_key(tmp_path: Path, key: str, escape: int) -> None:
    # "causation\u0049d" is the key causationId to JSON.parse, orjson and Arrow alike
    entries = big_log()
    written = key.replace(key[escape], f"\\u{ord(key[escape]):04x}", 1)
    line = json.dumps({k: v for k, v in entries[250].items() if k != key}, separators=(",", ":"))
    text = line[:-1] + f',"{written}":null' + "}"
    assert json.loads(text)[key] is None
    _expect_same(write(tmp_path / "big.jsonl", entries, {250: text}), EntryValidationError, 250, key)

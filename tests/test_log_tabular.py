"""Other people's logs: DataFrame, CSV and Parquet with a column mapping."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from agentscope.errors import LogFormatError
from agentscope.log import read_log
from tests.conftest import FIXTURES

MAPPING = {"type": "action", "payload": "data", "timestamp": "ts"}


def frame() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "action": ["ADD", "SCALE", "DONE"],
            "data": [{"amount": 5}, {"factor": 3}, None],
            "ts": pd.to_datetime(["2026-01-01T00:00:01Z", "2026-01-01T00:00:02.5Z", "2026-01-01T00:00:03Z"], format="ISO8601"),
            "who": ["a", "b", "c"],
        }
    )


EXPECTED_EVENTS = [{"type": "@agent.init"}, {"type": "ADD", "amount": 5}, {"type": "SCALE", "factor": 3}, {"type": "DONE"}]


def check(log_entries: list[dict[str, object]]) -> None:
    assert [e["event"] for e in log_entries] == EXPECTED_EVENTS
    assert [e["index"] for e in log_entries] == [0, 1, 2, 3]
    assert [e["id"] for e in log_entries] == ["evt_00000000", "evt_00000001", "evt_00000002", "evt_00000003"]
    assert [e["recordedAt"] for e in log_entries] == [
        "2026-01-01T00:00:01.000Z", "2026-01-01T00:00:01.000Z", "2026-01-01T00:00:02.500Z", "2026-01-01T00:00:03.000Z",
    ]
    for e in log_entries:
        assert "verification" not in e  # no hashes: verification reports "missing"
        assert (e["schemaVersion"], e["machineId"], e["machineVersion"]) == (1, "(machine)", "(unversioned)")


def test_dataframe_with_mapping() -> None:
    log = read_log(frame(), columns=MAPPING)
    check(log.entries)
    assert log.source == "<DataFrame>" and log.era == "C"
    assert list(log.df["event_type"]) == ["@agent.init", "ADD", "SCALE", "DONE"]
    assert log.df["state_hash"].isna().all()


def test_csv_with_mapping(tmp_path: Path) -> None:
    df = frame()
    df["data"] = [json.dumps(d) if d else "" for d in df["data"]]
    df["ts"] = ["2026-01-01T00:00:01.000Z", "2026-01-01T00:00:02.500Z", "2026-01-01T00:00:03.000Z"]
    p = tmp_path / "other.csv"
    df.to_csv(p, index=False)
    check(read_log(p, columns=MAPPING).entries)
    with p.open("rb") as fh:
        check(read_log(fh, columns=MAPPING, format="csv").entries)


def test_parquet_with_mapping(tmp_path: Path) -> None:
    df = frame()
    df["data"] = [json.dumps(d) if d else None for d in df["data"]]
    p = tmp_path / "other.parquet"
    df.to_parquet(p)
    check(read_log(p, columns=MAPPING).entries)
    check(read_log(p.read_bytes(), columns=MAPPING).entries)  # sniffed by magic bytes


def test_payload_as_column_list_and_envelope_columns() -> None:
    df = pd.DataFrame({"kind": ["@agent.init", "GO", "GO"], "n": [None, 1, 2], "eid": ["a", "b", "c"], "m": ["svc", "svc", "svc"], "v": ["7", "7", "7"]})
    log = read_log(df, columns={"type": "kind", "payload": ["n"], "id": "eid", "machine_id": "m", "machine_version": "v"})
    assert [e["event"] for e in log.entries] == [{"type": "@agent.init"}, {"type": "GO", "n": 1}, {"type": "GO", "n": 2}]
    assert [e["id"] for e in log.entries] == ["a", "b", "c"]
    assert log.machine_id == "svc" and log.machine_versions == ("7",)


def test_mapping_errors() -> None:
    with pytest.raises(LogFormatError, match="column 'nope'"):
        read_log(frame(), columns={"type": "nope"})
    with pytest.raises(LogFormatError, match="need columns="):
        read_log(frame())
    with pytest.raises(ValueError, match="unknown column-mapping keys"):
        read_log(frame(), columns={"kind": "action"})
    bad = frame()
    bad.loc[1, "action"] = None
    with pytest.raises(LogFormatError) as info:
        read_log(bad, columns=MAPPING)
    assert (info.value.index, info.value.line, info.value.field) == (2, 2, "event")
    log = read_log(bad, columns=MAPPING, errors="collect")
    assert [e["event"]["type"] for e in log.entries] == ["@agent.init", "ADD", "DONE"]
    assert list(log.problems["line"]) == [2]


def test_csv_text_that_pandas_takes_for_missing_reads_back_as_text(tmp_path: Path) -> None:
    """An exported CSV reads back to the entries written when ids, a causationId and event
    types are spelled "NaN", "null", "N/A", "nan" (pandas' default missing markers): only an
    empty field is missing."""
    from agentscope.log.writers import log_bytes

    entries = json.loads((FIXTURES / "a_counter.log.json").read_text(encoding="utf-8"))
    entries[1]["id"], entries[2]["id"], entries[3]["id"] = "NaN", "null", "N/A"
    entries[6]["causationId"] = "NaN"
    entries[7]["event"]["type"] = "nan"
    assert read_log(entries).entries == entries  # a valid log
    path = tmp_path / "log.csv"
    path.write_bytes(log_bytes(entries, "csv"))
    back = read_log(path)
    assert back.entries == entries
    assert "causationId" not in back.entries[5]  # an empty field is still missing

"""``recordedAt`` (spec §1.4) in ``EventLog.df``: nanoseconds kept, V8's reading, out-of-range years."""

from __future__ import annotations

import json
import subprocess
from typing import Any

import pandas as pd
import pytest

from agentscope.log import read_log
from agentscope.log.model import NS_MAX, NS_MIN, recorded_at_to_ns
from tests.conftest import requires_node


def log_with(stamps: list[str]) -> list[dict[str, Any]]:
    """An Era-C log whose entry ``i`` has ``recordedAt = stamps[i]``."""
    return [
        {
            "schemaVersion": 1,
            "id": f"evt_{i:08d}",
            "index": i,
            "recordedAt": stamp,
            "machineId": "m",
            "machineVersion": "v1",
            "event": {"type": "@agent.init" if i == 0 else "GO"},
        }
        for i, stamp in enumerate(stamps)
    ]


def test_nanosecond_stamps_keep_every_digit() -> None:
    log = read_log(log_with(["2026-01-01T12:30:45.123456789Z", "2026-01-01T12:30:45.1Z", "2026-01-01T12:30:45Z"]))
    col = log.df["recorded_at"]
    assert str(col.dtype) == "datetime64[ns, UTC]"
    assert [t.value for t in col] == [
        1767270645123456789,
        1767270645100000000,
        1767270645000000000,
    ]
    assert col.iloc[0].nanosecond == 789 and col.iloc[0].microsecond == 123456
    assert len(log.problems) == 0


def test_digits_past_nanoseconds_are_truncated() -> None:
    assert recorded_at_to_ns("1970-01-01T00:00:00.0000000019Z") == 1
    assert recorded_at_to_ns("1969-12-31T23:59:59.999999999999Z") == -1


@pytest.mark.parametrize("stamp", ["0000-01-01T00:00:00Z", "1677-09-21T00:12:43.145224192Z",
                                   "2262-04-11T23:47:16.854775808Z", "9999-12-31T23:59:59.999Z"])
def test_out_of_range_years_are_nat_and_a_problem(stamp: str) -> None:
    log = read_log(log_with(["2026-01-01T00:00:00Z", stamp, "2026-01-01T00:00:02Z"]))
    col = log.df["recorded_at"]
    assert pd.isna(col.iloc[1]) and not pd.isna(col.iloc[0]) and not pd.isna(col.iloc[2])
    rows = log.problems.to_dict("records")
    assert len(rows) == 1
    (row,) = rows
    assert (row["index"], row["field"], row["kind"], row["source"]) == (1, "recordedAt", "timestamp-out-of-range", "<list>")
    assert stamp in row["message"] and "NaT" in row["message"]
    # in collect mode too, and a slice keeps exactly the one row
    assert len(read_log(log.entries, errors="collect").problems) == 1
    assert len(log[1:].problems) == 1 and len(log[2:].problems) == 0


def test_range_edges_are_exact() -> None:
    first, last = "1677-09-21T00:12:43.145224193Z", "2262-04-11T23:47:16.854775807Z"
    assert recorded_at_to_ns(first) == NS_MIN and recorded_at_to_ns(last) == NS_MAX
    log = read_log(log_with([first, last]))
    assert [t.value for t in log.df["recorded_at"]] == [NS_MIN, NS_MAX]
    assert len(log.problems) == 0


def test_year_zero_is_exact_outside_pandas() -> None:
    # V8: Date.parse("0000-01-01T00:00:00Z") === -62167219200000
    assert recorded_at_to_ns("0000-01-01T00:00:00Z") == -62167219200000 * 10**6


def test_invalid_stamps_are_validation_errors_not_timestamp_problems() -> None:
    log = read_log(log_with(["2026-01-01T00:00:00Z", "2026-13-01T00:00:00Z"]), errors="collect")
    assert list(log.problems["field"]) == ["recordedAt"]
    assert list(log.problems["kind"]) == ["invalid-entry"]


def test_era_a_logs_have_no_timestamps_and_no_problems() -> None:
    log = read_log([{"index": 0, "event": {"type": "start"}}])
    assert pd.isna(log.df["recorded_at"].iloc[0]) and len(log.problems) == 0


def test_large_jsonl_fast_path_keeps_nanoseconds(tmp_path: Any) -> None:
    from agentscope.log.fast import FAST_MIN_BYTES

    n = FAST_MIN_BYTES // 150 + 10
    stamps = [f"2026-01-01T00:00:{i % 60:02d}.{i:09d}Z" for i in range(n)]
    stamps[7] = "0000-01-01T00:00:00Z"
    path = tmp_path / "big.jsonl"
    path.write_text("".join(json.dumps(e) + "\n" for e in log_with(stamps)))
    assert path.stat().st_size >= FAST_MIN_BYTES
    log = read_log(path)
    assert log._frame_builder is not None  # the pyarrow fast path read it
    col = log.df["recorded_at"]
    assert str(col.dtype) == "datetime64[ns, UTC]"
    assert col.iloc[5].value == 1767225605000000005 and pd.isna(col.iloc[7])
    assert list(log.problems["index"]) == [7]


V8_CASES = [
    "2026-02-30T00:00:00Z",  # day overflow rolls into March
    "2026-04-31T10:00:00.5+02:00",
    "2026-01-31T24:00:00Z",  # 24:00 is the next midnight
    "2024-02-29T23:59:59.999-23:59",
    "0000-03-01T00:00:00+00:00",
    "9999-12-31T23:59:59.999+05:30",
    "1970-01-01T00:00:00.000001Z",
]


@requires_node
def test_reading_matches_v8_date_parse_to_the_millisecond() -> None:
    script = "const xs = JSON.parse(process.argv[1]); console.log(JSON.stringify(xs.map(Date.parse)))"
    out = subprocess.run(["node", "-e", script, json.dumps(V8_CASES)], capture_output=True, text=True, check=True)
    v8 = json.loads(out.stdout)
    ours = [recorded_at_to_ns(s) for s in V8_CASES]
    assert all(isinstance(v, int) for v in ours)
    assert [v // 10**6 for v in ours if v is not None] == v8

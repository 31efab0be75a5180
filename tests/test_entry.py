"""The entry vocabulary (``agentscope.log.entry``): total accessors and ``recordedAt`` read as V8 does (§1.4)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from agentscope.log.entry import (
    entry_id,
    event_of,
    event_type,
    init_has_snapshot,
    is_bridge_init,
    recorded_at_ms,
    recorded_hash,
    session_key,
)
from agentscope.log.validate import is_recorded_at


def _ms(y: int, mo: int, d: int, h: int = 0, mi: int = 0, s: int = 0, ms: int = 0) -> int:
    return int(datetime(y, mo, d, h, mi, s, tzinfo=UTC).timestamp()) * 1000 + ms


@pytest.mark.parametrize(("text", "want"), [
    ("2026-01-01T00:00:00Z", _ms(2026, 1, 1)),
    ("2026-01-01T00:00:00.123456789Z", _ms(2026, 1, 1, ms=123)),  # any fraction, truncated to ms
    ("2026-01-01T00:00:00.5Z", _ms(2026, 1, 1, ms=500)),
    ("2026-02-30T00:00:00Z", _ms(2026, 3, 2)),  # V8 checks day 1-31 only: rolls into March
    ("2026-04-31T12:00:00Z", _ms(2026, 5, 1, 12)),
    ("2026-01-01T24:00:00Z", _ms(2026, 1, 2)),  # exactly 24:00:00 is the next midnight
    ("2026-01-01T05:30:00+05:30", _ms(2026, 1, 1)),
    ("2026-01-01T00:00:00-00:00", _ms(2026, 1, 1)),
    ("2026-01-01T00:00:00+23:59", _ms(2025, 12, 31, 0, 1)),
    ("0000-01-01T00:00:00Z", -62167219200000),  # year 0 (proleptic Gregorian), as Date.parse
    ("1969-12-31T23:59:59.999Z", -1),
])
def test_recorded_at_ms_reads_what_v8_accepts(text: str, want: int) -> None:
    assert is_recorded_at(text)
    assert recorded_at_ms(text) == want
    assert recorded_at_ms({"recordedAt": text}) == want


@pytest.mark.parametrize("text", [
    "2026-00-01T00:00:00Z", "2026-13-01T00:00:00Z", "2026-01-00T00:00:00Z", "2026-01-32T00:00:00Z",
    "2026-01-01T25:00:00Z", "2026-01-01T24:01:00Z", "2026-01-01T24:00:00.001Z",
    "2026-01-01T00:60:00Z", "2026-01-01T00:00:60Z", "2026-01-01T00:00:00+24:00",
    "2026-01-01T00:00:00+05:60", "2026-01-01 00:00:00Z", "2026-01-01T00:00:00", "",
])
def test_recorded_at_ms_rejects_what_v8_rejects(text: str) -> None:
    assert not is_recorded_at(text)
    assert recorded_at_ms(text) is None


def test_accessors_are_total() -> None:
    for bad in (None, 3, "x", [], {}, {"event": "x"}, {"event": {"type": 7}}, {"verification": []}):
        assert event_of(bad) == {} or isinstance(event_of(bad), dict)
        assert event_type(bad) == ""
        assert recorded_hash(bad) is None
        assert session_key(bad) is None
        assert recorded_at_ms(bad) is None
    e = {"id": 5, "event": {"type": "xstate.done.actor", "actorId": "job", "sessionId": "s:1"},
         "verification": {"stateHash": "0badf00d"}}
    assert (entry_id(e), event_type(e), recorded_hash(e)) == ("5", "xstate.done.actor", "0badf00d")
    assert session_key(e) == "job\u0000s:1"
    bridge = {"event": {"type": "@agent.init", "snapshot": {}},
              "metadata": {"migratedFrom": {"machineVersion": "1", "logIndex": 3}}}
    assert init_has_snapshot(bridge) and is_bridge_init(bridge)
    assert not is_bridge_init({"event": {"type": "@agent.init", "snapshot": {}}})


def test_writers_write_json_as_v8_does(tmp_path: object) -> None:
    """log.writers.js_json is JSON.stringify over parsed values: numbers, lone surrogates, key order."""
    import json
    from pathlib import Path

    from agentscope.errors import NonSerializableError
    from agentscope.log.writers import js_json, write_jsonl

    assert js_json({"b": 1.0, "a": -0.0, "2": 5e-7, "10": 1e21, "1": "x"}) == (
        '{"1":"x","2":5e-7,"10":1e+21,"b":1,"a":0}'
    )
    assert js_json(["\ud800", "\ud83d\ude00", "é\u2028", "\x07"]) == '["\\ud800","😀","é\u2028","\\u0007"]'
    assert js_json({"a": [1, {"b": None}]}, indent=2) == '{\n  "a": [\n    1,\n    {\n      "b": null\n    }\n  ]\n}'
    assert js_json({}) == "{}" and js_json([]) == "[]" and js_json(2**53) == "9007199254740992"
    with pytest.raises(NonSerializableError, match=r"entry\.event\.x"):
        js_json({"event": {"x": float("nan")}})
    p = write_jsonl([{"event": {"type": "A", "s": "\udc00"}}], Path(str(tmp_path)) / "x.jsonl")
    assert json.loads(p.read_text(encoding="utf-8")) == {"event": {"type": "A", "s": "\udc00"}}
    with pytest.raises(FileExistsError):
        write_jsonl([], p)


def test_the_one_writer_keeps_integer_digits_or_rounds_as_v8() -> None:
    """js_json's two number modes: a host's JSON.stringify (doubles) or a raw value's digits."""
    import json

    import agentscope.hashing
    from agentscope._deep import MAX_DEPTH, DepthLimitError
    from agentscope.log.writers import js_json

    value = {"by": 9007199254740993, "big": 123456789012345678901234567890, "s": "\ud83d", "f": 1.5}
    assert js_json(value) == (
        '{"by":9007199254740992,"big":1.2345678901234568e+29,"s":"\\ud83d","f":1.5}'
    )
    assert js_json(value, integers="exact") == (
        '{"by":9007199254740993,"big":123456789012345678901234567890,"s":"\\ud83d","f":1.5}'
    )
    deep: object = 1
    for _ in range(5_000):  # beyond Python's recursion limit, within MAX_DEPTH: both modes write it
        deep = [deep]
    for mode in ("double", "exact"):
        text = js_json(deep, integers=mode)  # type: ignore[arg-type]
        assert text == "[" * 5_000 + "1" + "]" * 5_000
    too_deep: object = 1
    for _ in range(MAX_DEPTH + 5):
        too_deep = [too_deep]
    with pytest.raises(DepthLimitError):
        js_json(too_deep, integers="exact")
    assert json.loads(js_json(value, integers="exact"))["by"] == 9007199254740993
    assert not hasattr(agentscope.hashing, "lossless_json")  # one writer module, no duplicate


def test_bulk_accessors_equal_one_call_per_entry() -> None:
    """The bulk forms used by whole-log passes give exactly the per-entry accessors' values,
    on plain entries and on every odd shape (non-dicts, other mappings, missing or mistyped
    fields, ``str`` subclasses, empty hashes)."""
    from collections import OrderedDict

    from agentscope.log.entry import (
        entry_id,
        entry_ids,
        event_of,
        event_type,
        event_types,
        events_of,
        recorded_hash,
        recorded_hashes,
    )

    class Text(str):
        pass

    odd: list[Any] = [
        {"id": "a", "event": {"type": "X"}, "verification": {"stateHash": "0011aabb"}},
        {"id": 7, "event": {"type": 5}, "verification": {"stateHash": ""}},
        {"id": Text("t"), "event": {"type": Text("T")}, "verification": {"stateHash": Text("h")}},
        OrderedDict(id="m", event=OrderedDict(type="M"), verification=OrderedDict(stateHash="ffffffff")),
        {"event": None, "verification": None}, {"event": "X"}, {}, {"id": None},
        {"event": OrderedDict(type="Y")}, {"verification": {"stateHash": None}},
    ]
    assert entry_ids(odd) == [entry_id(e) for e in odd]
    assert event_types(odd) == [event_type(e) for e in odd]
    assert events_of(odd) == [event_of(e) for e in odd]
    assert recorded_hashes(odd) == [recorded_hash(e) for e in odd]
    assert event_types(odd, 2, 5) == [event_type(e) for e in odd[2:5]]
    assert recorded_hashes(odd, 3) == [recorded_hash(e) for e in odd[3:]]

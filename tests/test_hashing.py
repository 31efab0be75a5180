"""Hashing against the spec's vectors (§2.4, §3) and every recorded hash in the real fixtures."""

from __future__ import annotations

import json
import math
import struct
from decimal import ROUND_CEILING, ROUND_FLOOR, Context, Decimal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentscope.hashing import (
    canonical_event_json,
    canonical_json,
    canonical_snapshot_json,
    djb2_hex,
    djb2_hex_reference,
    js_number,
    machine_version,
    state_hash,
    structural_string,
)
from tests.conftest import FIXTURES, load_json

DJB2_VECTORS = [
    ("", "00001505"),
    ("a", "0002b606"),
    ("abc", "0b885c8b"),
    ("{}", "00597a9d"),
    ("null", "7c9b6140"),
    ('{"a":1}', "56391ecd"),
    ("é", "0002b68e"),
    ("😀", "00762822"),
    ("hello world", "3551c8c1"),
]


@pytest.mark.parametrize(("text", "expected"), DJB2_VECTORS, ids=[repr(t) for t, _ in DJB2_VECTORS])
def test_djb2_vectors(text: str, expected: str) -> None:
    assert djb2_hex(text) == expected
    assert djb2_hex_reference(text) == expected


def test_djb2_hand_checked() -> None:
    # §2.3: 5381*33+97 for "a"; the astral character counts as two UTF-16 units.
    assert int(djb2_hex("a"), 16) == 5381 * 33 + 97
    assert int(djb2_hex("😀"), 16) == (((5381 * 33 + 0xD83D) * 33) + 0xDE00) % 2**32


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=3000))
def test_djb2_numpy_equals_reference(text: str) -> None:
    assert djb2_hex(text) == djb2_hex_reference(text)


SNAPSHOT_VECTORS = [
    ("sessionId-1", {"status": "active", "value": "idle", "children": {}, "context": {"sessionId": 1}},
     "7f260c3a", "1c573bda"),
    ("sessionId-2", {"status": "active", "value": "idle", "children": {}, "context": {"sessionId": 2}},
     "8477dc9b", "1c573bda"),
    ("nested-timer-1", {"status": "active", "value": "idle", "children": {},
                        "context": {"nested": {"_nextTimerId": 1}}}, "147d430e", "d628f433"),
    ("nested-timer-9", {"status": "active", "value": "idle", "children": {},
                        "context": {"nested": {"_nextTimerId": 9}}}, "90dc2716", "d628f433"),
    ("output-a", {"status": "active", "value": "idle", "children": {}, "output": {"sessionId": "a"}},
     "baabc7fa", "e5f7f286"),
    ("output-b", {"status": "active", "value": "idle", "children": {}, "output": {"sessionId": "b"}},
     "6a37a47b", "e5f7f286"),
    ("empty", {}, "00597a9d", "00597a9d"),
]


@pytest.mark.parametrize(("name", "snap", "h02", "h8b"), SNAPSHOT_VECTORS,
                         ids=[v[0] for v in SNAPSHOT_VECTORS])
def test_state_hash_vectors(name: str, snap: dict[str, object], h02: str, h8b: str) -> None:
    assert state_hash(snap) == h02
    assert state_hash(snap, "8b7f21a0") == h8b


def _snapshot_with(root: str, child: str, n: int) -> dict[str, object]:
    return {
        "sessionId": root, "_nextTimerId": n, "_nextActorIds": {"job": n},
        "status": "active", "value": "working", "context": {"attempt": 1},
        "children": {"job": {"sessionId": child, "src": "job", "syncSnapshot": False,
                             "snapshot": {"status": "active", "sessionId": child + ":inner",
                                          "context": {}}}},
    }


def test_structural_positions_are_stripped() -> None:
    a, b = _snapshot_with("x:1", "x:2", 0), _snapshot_with("y:1", "y:2", 7)
    expected = ('{"children":{"job":{"snapshot":{"context":{},"status":"active"},"src":"job",'
                '"syncSnapshot":false}},"context":{"attempt":1},"status":"active","value":"working"}')
    assert canonical_snapshot_json(a) == expected
    assert state_hash(a) == state_hash(b) == "58bad3de"


def test_agent_meta_removed_at_top_level_only() -> None:
    snap = {"status": "active", "context": {"agentMeta": 1}}
    cached = dict(snap, agentMeta={"machineId": "m", "logIndex": 3})
    assert state_hash(cached) == state_hash(snap)
    assert "agentMeta" in canonical_snapshot_json(snap)


def test_proto_member_vanishes_from_hash_but_not_from_canonical_json() -> None:
    value = json.loads('{"__proto__":{"a":1},"b":2}')
    assert state_hash(value) == "564b376f" == state_hash({"b": 2})
    assert canonical_json(value) == '{"__proto__":{"a":1},"b":2}'
    assert canonical_event_json(value) == '{"b":2}'


EDGE_VECTORS = [
    ('{"10":1,"2":2,"a":3,"B":4,"4294967295":5,"01":6}',
     '{"2":2,"10":1,"01":6,"4294967295":5,"B":4,"a":3}', "ef83c632"),
    ('{"n":[1.0,0.1,1e21,1e-7,123456789012345680000,-0.0,100,2.5e-7,1e-6]}',
     '{"n":[1,0.1,1e+21,1e-7,123456789012345680000,0,100,2.5e-7,0.000001]}', "9f164417"),
    ('{"s":"é😀\\u2028\\u0007\\"\\\\/"}', '{"s":"é😀\u2028\\u0007\\"\\\\/"}', "b9ebeb7d"),
]


@pytest.mark.parametrize(("source", "canonical", "expected"), EDGE_VECTORS, ids=["keys", "numbers", "strings"])
def test_edge_vectors(source: str, canonical: str, expected: str) -> None:
    value = json.loads(source)
    assert canonical_json(value) == canonical
    assert state_hash(value) == expected


def test_key_order_puts_astral_before_ffff() -> None:
    assert canonical_json({"\uffff": 1, "😀": 2, "é": 3}) == '{"é":3,"😀":2,"\uffff":1}'


def test_js_number_examples() -> None:
    cases = {1.0: "1", 1e21: "1e+21", 1e20: "100000000000000000000", 1e-7: "1e-7",
             1e-6: "0.000001", 2.5e-7: "2.5e-7", 123456789012345680000: "123456789012345680000",
             5e-324: "5e-324", -0.0: "0", 9007199254740993: "9007199254740992"}
    for value, text in cases.items():
        assert js_number(value) == text
    assert js_number(math.nan) == "null"
    assert js_number(math.inf, nonfinite="literal") == "Infinity"


def _reference_js_number(x: float) -> str:
    """An independent formatter: ECMAScript's rules over digits found with ``decimal``.

    For each precision, the decimal neighbours of the exact value (rounded down and up) are tried;
    the shortest that converts back to ``x`` wins, the closer one, then the even one (ECMAScript
    Number::toString).
    """
    if x == 0:
        return "0"
    exact = Decimal(abs(x))
    digits, n = "", 0
    for prec in range(1, 18):
        cands = []
        for rounding in (ROUND_FLOOR, ROUND_CEILING):
            q = Context(prec=prec, rounding=rounding).plus(exact)
            if float(q) == abs(x):
                cands.append(q)
        if cands:
            # closest to the exact value; on a tie the even last digit (ECMAScript Number::toString)
            best = min(cands, key=lambda q: (abs(q - exact), q.as_tuple().digits[-1] % 2))
            _sign, dig, exp = best.as_tuple()
            digits = "".join(map(str, dig)).rstrip("0") or "0"
            n = len(dig) + int(exp)
            break
    k = len(digits)
    if k <= n <= 21:
        body = digits + "0" * (n - k)
    elif 0 < n <= 21:
        body = digits[:n] + "." + digits[n:]
    elif -6 < n <= 0:
        body = "0." + "0" * -n + digits
    else:
        body = digits[0] + ("." + digits[1:] if k > 1 else "") + f"e{'+' if n - 1 >= 0 else '-'}{abs(n - 1)}"
    return ("-" if x < 0 else "") + body


@settings(max_examples=2000, deadline=None)
@given(st.floats(allow_nan=False, allow_infinity=False))
def test_js_number_against_reference_formatter(x: float) -> None:
    assert js_number(x) == _reference_js_number(x)


@given(st.integers(min_value=0, max_value=2**64 - 1))
def test_js_number_bit_patterns(bits: int) -> None:
    x = struct.unpack("<d", struct.pack("<Q", bits))[0]
    if math.isfinite(x):
        assert float(js_number(x)) == x


json_values = st.recursive(
    st.none() | st.booleans() | st.floats(allow_nan=False, allow_infinity=False) | st.integers()
    | st.text(),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=6), children, max_size=4),
    max_leaves=20,
)


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(st.text(max_size=6), json_values, max_size=6))
def test_hash_is_key_order_independent(value: dict[str, object]) -> None:
    reordered = dict(reversed(list(value.items())))
    assert canonical_json(reordered) == canonical_json(value)
    assert state_hash(reordered) == state_hash(value)


@settings(max_examples=300, deadline=None)
@given(json_values)
def test_canonical_json_round_trips(value: object) -> None:
    text = canonical_json(value)
    again = json.loads(text)
    assert canonical_json(again) == text


def test_every_recorded_hash_in_the_fixture_replays_recomputes() -> None:
    count = 0
    for path in sorted(FIXTURES.glob("*.replay.json")):
        data = json.loads(path.read_text())
        for prefix in data["prefixes"]:
            assert state_hash(prefix["persistedSnapshot"]) == prefix["recordedStateHash"], (path.name, prefix["n"])
            count += 1
    assert count >= 20


@pytest.mark.parametrize("name", ["a_counter", "e_bridge.v1", "e_bridge.v2", "g_triage"])
def test_machine_versions_from_fixtures(name: str) -> None:
    meta = load_json(f"{name}.machine.json")
    text = meta["structuralHashInput"]
    assert djb2_hex(text) == meta["structuralHash"]
    config = json.loads(text)
    assert structural_string(config) == text
    if meta["explicitVersion"] is None:
        assert machine_version(config) == meta["machineVersion"]
    else:
        assert machine_version({**config, "version": meta["explicitVersion"]}) == meta["machineVersion"]


def test_spec_structural_examples() -> None:
    toggle = {"id": "toggle", "initial": "off",
              "states": {"off": {"on": {"TOGGLE": "on"}}, "on": {"on": {"TOGGLE": "off"}}}}
    assert machine_version(toggle) == "b37c6aad"
    counter = {"id": "counter", "initial": "counting", "context": {"total": 0, "ops": 0},
               "states": {"counting": {"on": {"ADD": {"actions": lambda: None}, "DONE": {"target": "done"},
                                              "SCALE": {}}}, "done": {"type": "final"}}}
    assert machine_version(counter) == "88b79dac"
    jobber = json.loads('{"actors":{"job":{"config":{}}},"id":"jobber","initial":"idle","states":{"done":{"type":"final"},"failed":{},"idle":{"on":{"GO":{"target":"working"}}},"working":{"invoke":{"id":"job","onError":{"target":"failed"},"src":"job"}}}}')
    assert machine_version(jobber) == "74198848"


def test_jobber_snapshots_from_spec() -> None:
    init = json.loads('{"children":{},"context":{"attempt":1,"result":null},"historyValue":{},"status":"active","timers":{},"value":"idle"}')
    assert state_hash(init) == "25dcd2f3"
    go = json.loads('{"children":{"job":{"address":"jobber/job","snapshot":{"effects":{"async":{"status":"active"}},"input":{"attempt":1},"status":"active"},"src":"job","syncSnapshot":false}},"context":{"attempt":1,"result":null},"historyValue":{},"status":"active","timers":{},"value":"working"}')
    assert state_hash(go) == "ddbee5ac"


def test_era_b_projection() -> None:
    snap = {"status": "active", "value": "counting", "context": {"ops": 0, "total": 0}, "children": {},
            "historyValue": {}, "timers": {}}
    assert canonical_snapshot_json(snap, "era-b") == '{"context":{"ops":0,"total":0},"status":"active","value":"counting"}'
    assert state_hash(snap, "era-b") == "8cf55db6"


def test_counter_log_hashes_from_spec_7_2() -> None:
    states = [({"ops": 0, "total": 0}, "active", "counting", "7a6a6b48"),
              ({"ops": 1, "total": 5}, "active", "counting", "344e8c4e"),
              ({"ops": 2, "total": 15}, "active", "counting", "feb93e40"),
              ({"ops": 3, "total": 17}, "active", "counting", "0fb60983"),
              ({"ops": 3, "total": 17}, "done", "done", "76e9d64c")]
    for ctx, status, value, expected in states:
        snap = {"children": {}, "context": ctx, "historyValue": {}, "status": status, "timers": {}, "value": value}
        assert state_hash(snap) == expected


@pytest.mark.parametrize("length", [49, 4095, 4096, 4097, 70_000])
def test_djb2_long_strings_across_table_growth(length: int) -> None:
    text = "".join(chr(0x20 + (i * 7919) % 0xD000) for i in range(length - 1)) + "😀"
    assert djb2_hex(text) == djb2_hex_reference(text)


def test_non_string_keys_are_js_property_names() -> None:
    # A Python config may write `after: {1000: ...}`; in JS that key is the string "1000".
    config = {"after": {1000: {"target": "b"}}, "id": "m"}
    assert structural_string(config) == '{"after":{"1000":{"target":"b"}},"id":"m"}'
    assert canonical_json({2: "x", "a": 1}) == '{"2":"x","a":1}'


@pytest.mark.parametrize("length", [0, 1, 47, 48, 49, 50, 200, 1000, 4095, 4096, 4097, 9000])
def test_djb2_ascii_bytes_path_equals_reference(length: int) -> None:
    """The ASCII path (one byte per unit, uint64 dot product, cached seed share) on both sides of
    the short-loop threshold and of the power table's growth."""
    from agentscope.hashing import _djb2_ascii, _seed_share

    text = "".join(chr(32 + (i * 7919) % 95) for i in range(length))
    assert _djb2_ascii(text.encode()) == djb2_hex_reference(text)
    assert _seed_share(length) == 5381 * pow(33, length, 2**32) % 2**32


@pytest.mark.parametrize("length", [65_535, 65_536, 65_537, 2 * 65_536, 3 * 65_536 + 17])
def test_djb2_of_long_strings_hashed_in_chunks_is_the_unit_loop(length: int) -> None:
    """Long strings are hashed chunk by chunk (bounded memory): on both sides of every chunk
    boundary, with lone surrogates, astral pairs and ASCII mixed, the result is the per-unit loop
    (spec §2.3); the ASCII byte path agrees too, and the power tables stay one chunk long."""
    import random

    from agentscope import hashing

    rng = random.Random(length)
    pool = ["a", "é", "\ud800", "\udfff", "😀", "\uffff", "\x00", "z"]
    text = "".join(rng.choice(pool) for _ in range(length))
    assert djb2_hex(text) == djb2_hex_reference(text)
    ascii_text = "".join(chr(32 + rng.randrange(95)) for _ in range(length))
    assert hashing._djb2_ascii(ascii_text.encode()) == djb2_hex_reference(ascii_text)
    assert len(hashing._rev_table) <= hashing._CHUNK
    assert len(hashing._lead) <= hashing._CHUNK + 1


@settings(max_examples=60, deadline=None)
@given(st.lists(st.sampled_from(["a", "\ud83d", "\ude00", "😀", "é", "\uffff"]), min_size=0, max_size=40),
       st.integers(min_value=0, max_value=3))
def test_djb2_chunked_equals_unchunked_for_any_chunk_size(parts: list[str], shift: int) -> None:
    """The chunk step ``h * 33**m + sum(u_i * 33**(m-1-i))`` is exactly ``m`` unit steps for any
    chunk length: with a tiny chunk the same strings hash as with none."""
    import numpy as np

    from agentscope import hashing

    text = "".join(parts) * (shift + 1)
    units = np.frombuffer(text.encode("utf-16-le", "surrogatepass"), dtype="<u2")
    whole = int(djb2_hex_reference(text), 16)
    saved = hashing._CHUNK
    try:
        hashing._CHUNK = 3
        assert hashing._djb2_units(units) == whole
    finally:
        hashing._CHUNK = saved

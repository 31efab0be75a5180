"""JS-exact values across the fold, the Node pipe and the hash (issue 11, spec §2.2).

Numbers are IEEE doubles (an integer beyond 2**53 is rounded as ``JSON.parse`` rounds it),
strings are UTF-16 (lone surrogates, U+2028/2029, NUL, U+FFFF legal, in keys too) and nesting is
deep (up to ``MAX_DEPTH``). Each test puts such a value through real XState in Node and through
the Python engine, and checks the exact values and hashes: Python's ``state_hash`` (the
reference), the runner's JS hash of every snapshot and the reference library's own
``JSON.stringify(sortKeys(...))`` way of hashing, run in Node.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentscope._deep import MAX_DEPTH, DepthLimitError
from agentscope.engines.base import Snapshot, snapshot_hash
from agentscope.engines.statechart import StatechartMachine
from agentscope.engines.xstate import XStateMachine, load_machine
from agentscope.errors import EngineError
from agentscope.examples.python_machines import counter_machine
from agentscope.hashing import canonical_json, js_values, state_hash
from tests.conftest import MACHINES, requires_node

pytestmark = [requires_node, pytest.mark.node]

ECHO = Path(__file__).resolve().parent / "xstate_machines" / "echo.mjs"


def python_echo() -> StatechartMachine:
    """The Python twin of ``tests/xstate_machines/echo.mjs``."""
    return StatechartMachine(
        {
            "id": "echo",
            "initial": "idle",
            "context": lambda _input: {"last": None, "n": 0},
            "states": {
                "idle": {
                    "on": {
                        "SET": lambda c, e: {"context": {"last": e["payload"], "n": c["n"] + 1}},
                        "ADD": lambda c, e: {"context": {"n": c["n"] + e["by"]}},
                    }
                }
            },
        }
    )


@pytest.fixture(scope="module")
def node_echo() -> Iterator[XStateMachine]:
    with load_machine(ECHO) as m:
        yield m


@pytest.fixture(scope="module")
def node_counter() -> Iterator[XStateMachine]:
    with load_machine(MACHINES / "counter.mjs") as m:
        yield m


def nested(depth: int, leaf: Any = None) -> Any:
    """``depth`` nested arrays around ``leaf`` (built without recursion)."""
    v: Any = [] if leaf is None else [leaf]
    for _ in range(depth - 1):
        v = [v]
    return v


def js_hashes(m: XStateMachine, value: Any) -> dict[str, Any]:
    """The runner's two JS hashes of ``value`` as ``JSON.parse`` read it, and its JSON text."""
    result = m._runner.request({"op": "hash", "value": value})
    assert isinstance(result, dict)
    return result


def fold_both(node: XStateMachine, events: list[dict[str, Any]]) -> tuple[list[Snapshot], list[Snapshot]]:
    py = python_echo() if node.machine_id == "echo" else counter_machine()
    return node.fold(node.initial(), events), py.fold(py.initial(), events)


# ---------------------------------------------------------------------------------------------
# Integers beyond 2**53 / 2**64


def test_big_integers_fold_as_doubles_on_both_engines(node_counter: XStateMachine) -> None:
    events = [
        {"type": "INC", "by": 9007199254740993},  # JSON.parse: 9007199254740992
        {"type": "DEC", "by": 1},
        {"type": "INC", "by": 1, "traceId": 18446744073709551616},  # unused, beyond 64 bits
        {"type": "INC", "by": 123456789012345678901234567890},
    ]
    node, py = fold_both(node_counter, events)
    counts = [s.persisted["context"]["count"] for s in node]
    assert counts == [9007199254740992, 9007199254740991, 9007199254740992, 9007199254740992.0 + 1.2345678901234568e29]
    assert [s.persisted["context"]["count"] for s in py] == counts
    assert [state_hash(s.persisted) for s in py] == [state_hash(s.persisted) for s in node]
    assert [s.state_hash for s in node] == [state_hash(s.persisted) for s in node]
    # the entries keep their literals: the conversion copies, never mutates
    assert events[0]["by"] == 9007199254740993 and type(events[0]["by"]) is int
    assert events[2]["traceId"] == 18446744073709551616


def test_js_values_rounds_like_json_parse_and_copies_only_what_changes() -> None:
    shallow = {"type": "INC", "by": 2**53, "s": "x"}
    assert js_values(shallow) is shallow
    big = {"a": [1, {"t": 2**64}], "b": {"c": 1}}
    out = js_values(big)
    assert out == {"a": [1, {"t": 18446744073709551616.0}], "b": {"c": 1}}
    assert type(out["a"][1]["t"]) is float and big["a"][1]["t"] == 2**64
    assert js_values(2**53 + 1) == 9007199254740992.0
    assert js_values(-(10**400)) == -math.inf


# ---------------------------------------------------------------------------------------------
# Lone surrogates, U+2028/2029, NUL, U+FFFF in strings and keys

ODD_STRINGS = ["\ud83d", "\udc00", "a\ud83d", "\udc00\ud83d", "\u2028\u2029", "\x00", "\uffff", "😀"]


def same_js_value(a: Any, b: Any) -> bool:
    """``a`` and ``b`` are the same JS value: equal canonical JSON (numbers as doubles, strings
    as UTF-16 code units, so a surrogate pair held as two Python code points equals the astral
    character; works at any depth up to ``MAX_DEPTH``)."""
    return canonical_json(a) == canonical_json(b)


def test_a_surrogate_pair_held_as_two_code_points_is_the_astral_character(node_echo: XStateMachine) -> None:
    pair = "\ud83d\ude00"
    [n] = node_echo.fold(node_echo.initial(), [{"type": "SET", "payload": {pair: pair}}])
    assert n.persisted["context"]["last"] == {"😀": "😀"}
    assert n.state_hash == state_hash(n.persisted) == state_hash({**n.persisted, "context": {"last": {pair: pair}, "n": 1}})


def test_odd_strings_and_keys_cross_the_pipe_losslessly(node_echo: XStateMachine) -> None:
    payload = {s: s + "|" + s for s in ODD_STRINGS} | {"list": ODD_STRINGS}
    node, py = fold_both(node_echo, [{"type": "SET", "payload": payload}])
    assert node[0].persisted["context"]["last"] == payload
    assert py[0].persisted == node[0].persisted
    h = state_hash(node[0].persisted)
    assert node[0].state_hash == h == state_hash(py[0].persisted)
    js = js_hashes(node_echo, node[0].persisted)
    assert js["hash"] == js["reference"] == h


# ---------------------------------------------------------------------------------------------
# Deep nesting


def test_a_2000_deep_payload_folds_and_hashes_on_both_engines(node_echo: XStateMachine) -> None:
    deep = nested(2000, "leaf")
    node, py = fold_both(node_echo, [{"type": "SET", "payload": deep}])
    assert same_js_value(node[0].persisted["context"]["last"], deep)
    assert same_js_value(py[0].persisted, node[0].persisted)
    text = canonical_json(deep)
    assert text == "[" * 2000 + '"leaf"' + "]" * 2000
    assert node[0].state_hash == state_hash(node[0].persisted) == state_hash(py[0].persisted)
    assert js_hashes(node_echo, {"context": deep})["hash"] == state_hash({"context": deep})


def test_nesting_up_to_the_limit_hashes_and_past_it_names_the_place(node_echo: XStateMachine) -> None:
    at_limit = nested(MAX_DEPTH - 1)
    snapshot = {"context": at_limit}  # the root object is level 1
    assert state_hash(snapshot) == js_hashes(node_echo, snapshot)["hash"]
    with pytest.raises(DepthLimitError, match=r"limit of 10,000 levels \(at '/context/0/0/[/0]*/…\(10,000 levels\)…[/0]*'\)"):
        state_hash({"context": nested(MAX_DEPTH)})
    [n] = node_echo.fold(node_echo.initial(), [{"type": "SET", "payload": nested(MAX_DEPTH - 2)}])
    assert n.state_hash == state_hash(n.persisted)  # context.last: levels 3 .. 10,000
    with pytest.raises(EngineError, match=r"Cannot send 'fold'.*limit of 10,000 levels \(at '/events/0/payload/0/0"):
        node_echo.fold(node_echo.initial(), [{"type": "SET", "payload": nested(MAX_DEPTH + 20)}])
    # the runner is still usable
    assert node_echo.fold(node_echo.initial(), [{"type": "ADD", "by": 1}])[0].persisted["context"]["n"] == 1


# ---------------------------------------------------------------------------------------------
# Property: the Python fold, the Node fold and both JS hashes agree on any JSON value

_EDGE_FLOATS = [5e-324, -5e-324, 1.7976931348623157e308, 2.2250738585072014e-308, 1e21, 1e-7,
                1e-6, 0.1, 2.5e-7, 123456789012345680000.0, float(2**53), -0.0, 1e300]
_EDGE_INTS = [2**53, 2**53 + 1, -(2**53) - 1, 2**64, 2**64 + 1, 10**30 + 7, -(10**25), 0]
_ODD_TEXT = st.sampled_from([*ODD_STRINGS, "__proto__", "0", "10", "4294967294", "4294967295",
                             "01", "-1", "B", "a", "é", "sessionId"])
_TEXT = st.one_of(_ODD_TEXT, st.text(st.characters(exclude_categories=()), max_size=6))
_NUMBERS = st.one_of(
    st.floats(allow_nan=False, allow_infinity=False),
    st.sampled_from(_EDGE_FLOATS),
    st.integers(min_value=-(10**30), max_value=10**30),
    st.sampled_from(_EDGE_INTS),
)
_LEAVES = st.one_of(st.none(), st.booleans(), _NUMBERS, _TEXT)
_JSON = st.recursive(
    _LEAVES,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(_TEXT, inner, max_size=4)
    ),
    max_leaves=16,
)
_VALUES = st.one_of(
    _JSON,
    st.builds(nested, st.integers(min_value=1, max_value=3000), _LEAVES),
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(value=_VALUES)
def test_any_json_value_folds_and_hashes_identically_everywhere(node_echo: XStateMachine, value: Any) -> None:
    events = [{"type": "SET", "payload": value}]
    py = python_echo()
    [n] = node_echo.fold(node_echo.initial(), events)
    [p] = py.fold(py.initial(), events)
    expected = js_values(value)  # what JSON.parse holds
    assert same_js_value(n.persisted["context"]["last"], expected)
    assert same_js_value(p.persisted["context"]["last"], expected)
    reference = state_hash(n.persisted)
    assert n.state_hash == reference  # the runner's JS hash
    assert snapshot_hash(n) == reference
    assert state_hash(p.persisted) == reference  # the Python engine
    js = js_hashes(node_echo, n.persisted)
    assert js["hash"] == js["reference"] == reference


# ---------------------------------------------------------------------------------------------
# The other boundaries: HTML, widget state, exports


def odd_log(tmp_path: Path) -> tuple[Path, dict[str, Any]]:
    """The counter fixture with one event carrying odd strings/keys, a big integer, deep arrays."""
    from agentscope.log.writers import js_json
    from tests.conftest import load_json

    entries = load_json("a_counter.log.json")
    note = {"\ud83d": "\udc00\u2028\x00\uffff", "big": 123456789012345678901234567890,
            "deep": nested(2000, 1), "😀": "\ud83d"}
    entries[1]["event"]["note"] = note
    path = tmp_path / "odd.json"
    path.write_text(js_json(entries, integers="exact"), encoding="utf-8")
    return path, entries[1]["event"]


def test_html_escape_shows_lone_surrogates_as_their_json_escape() -> None:
    from agentscope.render._escape import esc, json_for_script

    assert esc("<a\ud83d>\udc00😀") == "&lt;a\\ud83d&gt;\\udc00😀"
    assert esc("\ud83d\ude00") == "😀"  # a pair held as two code points is the astral character
    text = json_for_script({"\ud83d": ["</script>", 123456789012345678901234567890, nested(2000)]})
    assert "\\ud83d" in text and "</script" not in text and "123456789012345678901234567890" in text
    text.encode("utf-8")  # valid Unicode


def test_widget_state_with_odd_strings_packs_as_a_kernel_sends_it(tmp_path: Path) -> None:
    pytest.importorskip("ipywidgets")
    from jupyter_client.session import json_packer

    from agentscope.log import read_log
    from agentscope.widgets import TimeTravel

    path, _ = odd_log(tmp_path)
    tt = TimeTravel(counter_machine(), read_log(str(path)))
    tt.go(1)  # the entry with the odd payload
    html = tt.to_html()
    assert "\\ud83d" in html
    html.encode("utf-8")
    from ipywidgets.widgets import widget as ipyw

    registry = ipyw._instances  # every live widget (ipywidgets 8)
    packed = [json_packer(w.get_state()) for w in list(registry.values())]  # UnicodeEncodeError before
    assert any(b"\\\\ud83d" in p for p in packed)  # the log's lone surrogate, shown as its escape


@pytest.mark.parametrize("fmt", ["jsonl", "csv", "parquet"])
def test_export_round_trips_js_values(tmp_path: Path, fmt: str) -> None:
    from agentscope.cli import main
    from agentscope.log import read_log

    path, event = odd_log(tmp_path)
    out = tmp_path / f"out.{fmt}"
    assert main(["export", str(path), "--to", fmt, "-o", str(out)]) == 0
    back = read_log(str(out)).entries[1]["event"]
    assert same_js_value(back, event)
    assert back["note"]["big"] == 123456789012345678901234567890  # the literal is kept
    assert back["note"]["\ud83d"] == "\udc00\u2028\x00\uffff"


def _jsonl_with(tmp_path: Path, payload_text: str) -> Path:
    """The counter log as JSONL with ``event.deep`` of entry 1 given as JSON text."""
    from agentscope.log.writers import js_json
    from tests.conftest import load_json

    entries = load_json("a_counter.log.json")
    entries[1]["event"]["deep"] = "@@DEEP@@"
    text = "".join(js_json(e, integers="exact") + "\n" for e in entries).replace('"@@DEEP@@"', payload_text)
    path = tmp_path / "deep.jsonl"
    path.write_text(text, encoding="utf-8")
    return path


def test_a_2000_deep_log_reads_and_verifies(tmp_path: Path) -> None:
    from agentscope.log import read_log
    from agentscope.pipeline import verify

    log = read_log(str(_jsonl_with(tmp_path, "[" * 2000 + '"x"' + "]" * 2000)))
    assert same_js_value(log.entries[1]["event"]["deep"], nested(2000, "x"))
    assert verify(counter_machine(), log).ok


def test_reading_past_the_depth_limit_names_file_entry_line_field_and_limit(tmp_path: Path) -> None:
    from agentscope.errors import LogFormatError
    from agentscope.log import read_log

    path = _jsonl_with(tmp_path, "[" * MAX_DEPTH + "]" * MAX_DEPTH)
    with pytest.raises(LogFormatError, match="limit of 10,000 levels") as info:
        len(read_log(str(path)).entries)
    err = info.value
    assert (err.source, err.index, err.line) == (str(path), 1, 2)
    assert err.field is not None and err.field.startswith("event.deep.0.0.")

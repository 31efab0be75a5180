"""The query language at its edges (issue 26): nesting past the stated limit, member chains of
any length, number literals as JS doubles on both engines, and generated expressions that can
only ever be a result or a :class:`QueryError`."""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentscope._query_lang import MAX_NESTING, UNDEFINED, Env, compile_expression
from agentscope.cli import main
from agentscope.errors import QueryError
from agentscope.examples import python_machines as pm
from agentscope.pipeline import Timeline
from tests.conftest import FIXTURES, MACHINES, load_json, node_ready

ENGINES = ["python", pytest.param("node", marks=pytest.mark.skipif(
    not node_ready(), reason="needs node and `npm ci` (xstate)"))]
PY_COUNTER = "py:agentscope.examples.python_machines:counter_machine"


def _env(context: Any) -> Env:
    return Env(0, {"event": {"type": "X"}}, {"status": "active", "value": "a", "context": context},
               "ok", "a")


def _nested(depth: int, leaf: Any) -> dict[str, Any]:
    value: Any = leaf
    for _ in range(depth):
        value = {"a": value}
    return value  # type: ignore[no-any-return]


# ---------------------------------------------------------------------------------------------
# Depth


def test_nesting_up_to_the_limit_parses_and_evaluates() -> None:
    env = _env({"a": 1})
    assert compile_expression("!" * MAX_NESTING + "context.a").holds(env)  # an even count
    assert not compile_expression("!" * (MAX_NESTING - 1) + "context.a").holds(env)
    parens = "(" * MAX_NESTING + "context.a == 1" + ")" * MAX_NESTING
    assert compile_expression(parens).holds(env)


def test_hundred_deep_parentheses_with_operators_work() -> None:
    # a and (a and (a and … (a == 1)…)): every level an operator and a parenthesis
    expr = "context.a and (" * 100 + "context.a == 1" + ")" * 100
    assert compile_expression(expr).holds(_env({"a": 1}))
    assert not compile_expression(expr).holds(_env({"a": 2}))
    assert compile_expression("!(" * 100 + "context.a" + ")" * 100).holds(_env({"a": 1}))


@pytest.mark.parametrize(("expr", "column"), [
    ("!" * 3000 + "context.a", MAX_NESTING + 1),
    ("not " * 3000 + "context.a", 4 * MAX_NESTING + 1),
    ("(" * 3000 + "context.a" + ")" * 3000, MAX_NESTING + 1),
    ("context.a or (" * 3000 + "1" + ")" * 3000, 14 * MAX_NESTING + 14),
])
def test_nesting_past_the_limit_is_a_query_error_naming_the_column(expr: str, column: int) -> None:
    with pytest.raises(QueryError, match=f"deeper than {MAX_NESTING:,} levels") as info:
        compile_expression(expr)
    assert info.value.position == column - 1
    assert f"at column {column}:" in str(info.value)
    # the message shows the expression around the column, not all of it
    assert len(str(info.value)) < 400


def test_a_5000_member_path_evaluates() -> None:
    env = _env(_nested(5000, 7))
    assert compile_expression("context" + ".a" * 5000)(env) == 7
    assert compile_expression("context" + ".a" * 5001)(env) is UNDEFINED
    assert compile_expression("context" + "['a']" * 5000 + " == 7").holds(env)
    # a member chain after parentheses walks in the same loop
    assert compile_expression("(context)" + ".a" * 5000 + " > 6").holds(env)


def test_deep_values_compare_by_content() -> None:
    # values nested far past Python's recursion limit (within _deep.MAX_DEPTH) still compare
    env = _env({"x": _nested(5000, [1]), "y": _nested(5000, [1.0]), "z": _nested(5000, [2])})
    assert compile_expression("context.x == context.y").holds(env)
    assert compile_expression("context.x != context.z").holds(env)


# ---------------------------------------------------------------------------------------------
# Numbers are IEEE doubles


@pytest.mark.parametrize(("expr", "want"), [
    ("9" * 5000, math.inf),
    ("1" + "0" * 400 + " == " + "9" * 5000, True),  # both overflow to Infinity
    ("9007199254740993", 9007199254740992),  # rounds to the nearest double, as JS reads it
    ("9007199254740993 == 9007199254740992", True),
    ("-" + "9" * 5000, -math.inf),
    ("0." + "0" * 5000 + "1", 0),  # underflows to 0 (integral doubles show as ints)
    ("1e999 > 1e308", True),
    ("context.list[" + "9" * 5000 + "]", UNDEFINED),  # a["Infinity"]
    ("context.list[1]", "b"),
    ("context.big[1000000000000000000000]", "js"),  # a["1e+21"], as JS's String(1e21)
])
def test_number_literals_are_js_doubles(expr: str, want: Any) -> None:
    got = compile_expression(expr)(_env({"list": ["a", "b"], "big": {"1e+21": "js"}}))
    assert got == want if want is not UNDEFINED else got is UNDEFINED
    assert type(got) is type(want)


@pytest.fixture(scope="module")
def counter_2_53() -> Iterator[list[dict[str, Any]]]:
    """The real counter log, started at 2**53 and without its hashes (they were for start 2)."""
    entries = [dict(e) for e in load_json("a_counter.log.json")[:4]]
    entries[0]["event"] = {"type": "@agent.init", "input": {"start": 2**53}}
    for e in entries:
        e.pop("verification", None)
    yield entries


def _counter(engine: str) -> Any:
    if engine == "python":
        return pm.counter_machine()
    from agentscope.engines.xstate import load_machine

    return load_machine(MACHINES / "counter.mjs", "counterMachine")


@pytest.mark.parametrize("engine", ENGINES)
def test_numbers_compare_as_doubles_on_both_engines(engine: str, counter_2_53: list[dict[str, Any]]) -> None:
    # the log's INC steps take count past 2**53: JS holds 2**53 (2**53 + 1 is no double), the
    # Python machine an exact int; a query sees the double either way
    assert [e["event"]["type"] for e in counter_2_53] == ["@agent.init", "INC", "INC", "TOGGLE"]
    m = _counter(engine)
    try:
        tl = Timeline(m, counter_2_53)
        everywhere = list(range(len(counter_2_53)))
        assert tl.find_all("context.count == 9007199254740993") == everywhere
        assert tl.find_all("context.count == 9007199254740992") == everywhere
        assert tl.find_all("context.count > 9007199254740992") == []
        assert tl.find_all("context.count >= 9007199254740993") == everywhere
    finally:
        m.close()


# ---------------------------------------------------------------------------------------------
# The CLI: every error of an expression is exit 2 with one line


@pytest.mark.parametrize("expr", [
    "!" * 3000 + "context.count",
    "(" * 3000 + "context.count" + ")" * 3000,
    "context.count ==",
    "context.count == 1 == 1",
])
def test_cli_expression_errors_exit_2_with_one_line(expr: str, capsys: pytest.CaptureFixture[str]) -> None:
    log = str(FIXTURES / "a_counter.log.json")
    for argv in (["query", log, "--machine", PY_COUNTER, expr],
                 ["check", log, "--machine", PY_COUNTER, "--rule", f"r={expr}"],
                 ["query", log, "--machine", PY_COUNTER, "--column", expr, "index == 1"]):
        assert main(argv) == 2, argv[:3]
        err = capsys.readouterr().err
        assert err.startswith("agentscope: error: ") and err.count("\n") == 1, err[:300]
        assert "column" in err and len(err) < 400


def test_cli_query_of_a_5000_member_path_answers(capsys: pytest.CaptureFixture[str]) -> None:
    log = str(FIXTURES / "a_counter.log.json")
    assert main(["query", log, "--machine", PY_COUNTER, "context" + ".a" * 5000 + " == 1"]) == 1
    assert "0 of 17 steps match" in capsys.readouterr().out


# ---------------------------------------------------------------------------------------------
# Generated expressions: a result or a QueryError, nothing else

_PIECES = st.sampled_from([
    "context", "event", "entry", "value", "status", "index", "verdict", "in('a')", "in(", "'x'",
    '"\\u12"', '"\\uD83D"', "'\\", "1", "-", "-1e400", "9" * 400, "9" * 4400, "1.5", ".5", "[0]", "[", "]",
    ".", ".a", ".length", "(", ")", "!", "not", "and", "or", "&&", "||", "==", "!=", "===", "<",
    ">=", "true", "null", "undefined", " ", "\u0663", "\x00", "\ud800", "é", ",",
])


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_PIECES, max_size=30).map("".join) | st.text(max_size=40))
def test_generated_expressions_parse_or_raise_query_error(expr: str) -> None:
    try:
        compiled = compile_expression(expr)
    except QueryError as exc:
        assert exc.expression == expr and isinstance(exc.position, int)
        return
    for context in ({"a": [1, "x"], "length": 2}, None):
        env = _env(context) if context is not None else Env(0, {}, None, "missing")
        compiled.holds(env)  # evaluating never raises either

"""The small, safe expression language of :meth:`Timeline.find`, :func:`agentscope.check` and the
``query``/``check`` commands: predicates and paths over one replayed step.

Nothing here calls ``eval``: an expression is tokenised and parsed by a hand-written
recursive-descent parser into a tree of closures, so log content is only ever data.

Grammar (lowest precedence first)::

    expr    := or
    or      := and (("or" | "||") and)*
    and     := not (("and" | "&&") not)*
    not     := ("not" | "!") not | compare
    compare := postfix (("==" | "!=" | "===" | "!==" | "<" | "<=" | ">" | ">=") postfix)?
    postfix := primary ("." NAME | "[" (NUMBER | STRING) "]")*
    primary := NUMBER | STRING | "true" | "false" | "null" | "undefined" | "-" NUMBER
             | "(" expr ")" | "in" "(" STRING ")" | NAME

Names: ``context``, ``event`` (the entry's event; ``event.type``), ``entry`` (the whole entry,
e.g. ``entry.recordedAt``), ``value`` (the state value as the stable string of
:func:`value_string`), ``status``, ``index``, ``verdict``. ``in('working.escalating')`` is true
when that state (a path of state keys from the root) is active; ``in('#id')`` names a state by
its id.

Semantics follow JavaScript where it matters for logs written by JS:

- a missing member is ``undefined`` (reading through ``undefined``/``null`` also gives
  ``undefined``, like ``?.``), shown as ``<NA>`` in DataFrames;
- ``.length`` of a string counts UTF-16 code units, of an array its elements;
- ``==`` and ``!=`` are JS's *strict* ``===``/``!==`` (no type coercion: ``1 == "1"`` is
  false, ``true == 1`` is false, ``NaN != NaN``), extended to compare arrays and objects by
  content (JS would compare references, which a log does not have);
- ``<``, ``<=``, ``>``, ``>=`` hold only between two numbers or two strings (strings in UTF-16
  code-unit order, as JS); any other pair (``undefined``, ``null``, mixed types) is false, where
  JS would coerce;
- ``and``/``or`` short-circuit and return an operand, as ``&&``/``||``; a predicate holds when its
  result is truthy in JS's sense (``0``, ``""``, ``null``, ``undefined``, ``NaN`` and ``false``
  are falsy; ``[]`` and ``{}`` are truthy).

Private module: the public entry points are on :class:`agentscope.pipeline.Timeline` and in
:mod:`agentscope.queries`.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from agentscope.errors import QueryError

__all__ = [
    "UNDEFINED",
    "Env",
    "Expression",
    "compile_expression",
    "js_equal",
    "js_truthy",
    "value_string",
]


class _Undefined:
    """JS ``undefined``: a member that is not there (distinct from ``null``, which is ``None``)."""

    _instance: _Undefined | None = None

    def __new__(cls) -> _Undefined:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "undefined"

    def __bool__(self) -> bool:
        return False


UNDEFINED: Any = _Undefined()


# ---------------------------------------------------------------------------------------------
# Values


def value_string(value: Any) -> str:
    """The state value as one stable string.

    A string value is itself; ``{"working": {"analyzing": {"classification": "running",
    "knowledge": "searching"}}}`` is ``working.analyzing.{classification:running,knowledge:searching}``:
    one child is joined with ``.``, several (parallel regions) are listed in braces in key order,
    and an empty object (a compound state without an active child yet) ends the path.
    ``None`` (no replay) gives ``""``.
    """
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, Mapping):
        if not value:
            return ""
        if len(value) == 1:
            ((k, sub),) = value.items()
            tail = value_string(sub)
            return f"{k}.{tail}" if tail else str(k)
        parts = []
        for k in sorted(value, key=str):
            tail = value_string(value[k])
            parts.append(f"{k}:{tail}" if tail else str(k))
        return "{" + ",".join(parts) + "}"
    return str(value)


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _utf16(s: str) -> bytes:
    return s.encode("utf-16-be", "surrogatepass")


def js_truthy(v: Any) -> bool:
    """JS ``Boolean(v)`` for JSON values (``UNDEFINED`` and ``None`` are falsy)."""
    if v is UNDEFINED or v is None or v is False:
        return False
    if v is True:
        return True
    if _is_number(v):
        return not (v == 0 or (isinstance(v, float) and math.isnan(v)))
    if isinstance(v, str):
        return v != ""
    return True


def js_equal(a: Any, b: Any) -> bool:
    """JS ``===`` for JSON values, comparing arrays and objects by content (see module doc)."""
    if a is UNDEFINED or b is UNDEFINED:
        return a is b
    if a is None or b is None:
        return a is b
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if _is_number(a) or _is_number(b):
        if not (_is_number(a) and _is_number(b)):
            return False
        if isinstance(a, int) and isinstance(b, int):
            return a == b
        return float(a) == float(b)
    if isinstance(a, str) or isinstance(b, str):
        return isinstance(a, str) and isinstance(b, str) and a == b
    if isinstance(a, list) or isinstance(b, list):
        return (isinstance(a, list) and isinstance(b, list) and len(a) == len(b)
                and all(js_equal(x, y) for x, y in zip(a, b, strict=True)))
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        return bool(a.keys() == b.keys()) and all(js_equal(a[k], b[k]) for k in a)
    return bool(a == b)


def _js_less(a: Any, b: Any, *, equal: bool) -> bool:
    if _is_number(a) and _is_number(b):
        return bool(a <= b) if equal else bool(a < b)
    if isinstance(a, str) and isinstance(b, str):
        ka, kb = _utf16(a), _utf16(b)
        return ka <= kb if equal else ka < kb
    return False


def get_member(base: Any, key: str | int) -> Any:
    """JS member access ``base[key]`` with ``?.`` behaviour (missing -> ``UNDEFINED``)."""
    if isinstance(base, Mapping):
        if isinstance(key, int):
            key = str(key)
        return base.get(key, UNDEFINED) if key in base else UNDEFINED
    if isinstance(base, list):
        if key == "length":
            return len(base)
        if isinstance(key, str) and key.isdigit() and (key == "0" or key[0] != "0"):
            key = int(key)
        if isinstance(key, int) and 0 <= key < len(base):
            return base[key]
        return UNDEFINED
    if isinstance(base, str):
        units = _utf16(base)
        if key == "length":
            return len(units) // 2
        if isinstance(key, str) and key.isdigit() and (key == "0" or key[0] != "0"):
            key = int(key)
        if isinstance(key, int) and 0 <= key < len(units) // 2:
            return units[2 * key: 2 * key + 2].decode("utf-16-be", "surrogatepass")
        return UNDEFINED
    return UNDEFINED


# ---------------------------------------------------------------------------------------------
# What an expression sees


@dataclass(slots=True)
class Env:
    """One step as an expression sees it.

    ``persisted`` is ``None`` when the step was not replayed (then ``context``, ``value``,
    ``status`` and every ``in(...)`` are ``undefined``/false). ``active`` is the set of active
    state ids and ``refs`` maps each ``in(...)`` argument to the state id it names in this
    step's machine (:func:`resolve_state_ref`); both are needed only when the expression uses
    ``in``.
    """

    index: int
    entry: Mapping[str, Any]
    persisted: Mapping[str, Any] | None
    verdict: str
    value: str | None = None
    active: frozenset[str] | None = None
    refs: Mapping[str, str | None] | None = None


_Fn = Callable[[Env], Any]


def _root(name: str) -> _Fn:
    if name == "context":
        return lambda env: UNDEFINED if env.persisted is None else env.persisted.get(
            "context", UNDEFINED)
    if name == "event":
        def event(env: Env) -> Any:
            ev = env.entry.get("event")
            return ev if isinstance(ev, Mapping) else UNDEFINED
        return event
    if name == "entry":
        return lambda env: env.entry
    if name == "value":
        return lambda env: UNDEFINED if env.value is None else env.value
    if name == "status":
        return lambda env: UNDEFINED if env.persisted is None else env.persisted.get(
            "status", UNDEFINED)
    if name == "index":
        return lambda env: env.index
    if name == "verdict":
        return lambda env: env.verdict
    raise KeyError(name)


ROOT_NAMES = ("context", "event", "entry", "value", "status", "index", "verdict")


# ---------------------------------------------------------------------------------------------
# Tokens and parser


_TOKEN = re.compile(
    r"""
    (?P<ws>\s+)
  | (?P<num>(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)
  | (?P<str>'(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*")
  | (?P<name>[A-Za-z_$][A-Za-z0-9_$]*)
  | (?P<op>===|!==|==|!=|<=|>=|&&|\|\||[<>!().\[\],-])
    """,
    re.VERBOSE | re.DOTALL,
)
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "b": "\b", "f": "\f", "v": "\v", "0": "\0",
            "\\": "\\", "'": "'", '"': '"', "/": "/"}


@dataclass(frozen=True, slots=True)
class _Tok:
    kind: str
    text: str
    pos: int


def _unquote(raw: str, pos: int, source: str) -> str:
    body = raw[1:-1]
    out: list[str] = []
    i = 0
    while i < len(body):
        c = body[i]
        if c != "\\":
            out.append(c)
            i += 1
            continue
        nxt = body[i + 1]
        if nxt == "u":
            hexd = body[i + 2:i + 6]
            if not re.fullmatch(r"[0-9a-fA-F]{4}", hexd):
                raise _error(source, pos + i + 1, "a \\u escape needs four hex digits")
            out.append(chr(int(hexd, 16)))
            i += 6
            continue
        out.append(_ESCAPES.get(nxt, nxt))
        i += 2
    # join surrogate pairs written as two \u escapes into one character (as JS reads them)
    return "".join(out).encode("utf-16-be", "surrogatepass").decode("utf-16-be", "surrogatepass")


def _error(source: str, pos: int, message: str) -> QueryError:
    return QueryError(f"{message} at column {pos + 1}:\n  {source}\n  {' ' * pos}^",
                      expression=source, position=pos)


def _tokens(source: str) -> list[_Tok]:
    out: list[_Tok] = []
    pos = 0
    while pos < len(source):
        m = _TOKEN.match(source, pos)
        if m is None:
            raise _error(source, pos, f"unexpected character {source[pos]!r}")
        kind = m.lastgroup or ""
        if kind != "ws":
            out.append(_Tok(kind, m.group(), pos))
        pos = m.end()
    out.append(_Tok("end", "", len(source)))
    return out


_COMPARE = {"==", "!=", "===", "!==", "<", "<=", ">", ">="}
_KEYWORDS = {"and", "or", "not", "true", "false", "null", "undefined", "in"}


@dataclass
class Expression:
    """A compiled expression: call it with an :class:`Env`.

    ``source`` is the text, ``state_refs`` the arguments of its ``in(...)`` calls (checked
    against the machine's states before a scan), ``uses_active`` whether it needs the active
    state ids.
    """

    source: str
    fn: _Fn = field(repr=False)
    state_refs: tuple[str, ...] = ()

    @property
    def uses_active(self) -> bool:
        return bool(self.state_refs)

    def __call__(self, env: Env) -> Any:
        return self.fn(env)

    def holds(self, env: Env) -> bool:
        """Whether the expression is truthy at ``env`` (JS truthiness)."""
        return js_truthy(self.fn(env))


def _member(base: _Fn, key: str | int) -> _Fn:
    return lambda env: get_member(base(env), key)


class _Parser:
    def __init__(self, source: str) -> None:
        self.source = source
        self.toks = _tokens(source)
        self.i = 0
        self.state_refs: list[str] = []

    def peek(self) -> _Tok:
        return self.toks[self.i]

    def take(self) -> _Tok:
        t = self.toks[self.i]
        self.i += 1
        return t

    def accept(self, *texts: str) -> _Tok | None:
        t = self.peek()
        if t.kind in ("op", "name") and t.text in texts:
            self.i += 1
            return t
        return None

    def expect(self, text: str) -> _Tok:
        t = self.accept(text)
        if t is None:
            got = self.peek()
            raise _error(self.source, got.pos,
                         f"expected {text!r}, found {got.text!r}" if got.text else
                         f"expected {text!r} before the end")
        return t

    def parse(self) -> _Fn:
        if self.peek().kind == "end":
            raise _error(self.source, 0, "empty expression")
        fn = self.or_()
        t = self.peek()
        if t.kind != "end":
            raise _error(self.source, t.pos, f"unexpected {t.text!r}")
        return fn

    def or_(self) -> _Fn:
        left = self.and_()
        while self.accept("or", "||"):
            right = self.and_()
            left = (lambda a, b: lambda env: (lambda x: x if js_truthy(x) else b(env))(a(env)))(
                left, right)
        return left

    def and_(self) -> _Fn:
        left = self.not_()
        while self.accept("and", "&&"):
            right = self.not_()
            left = (lambda a, b: lambda env: (lambda x: b(env) if js_truthy(x) else x)(a(env)))(
                left, right)
        return left

    def not_(self) -> _Fn:
        if self.accept("not", "!"):
            inner = self.not_()
            return lambda env: not js_truthy(inner(env))
        return self.compare()

    def compare(self) -> _Fn:
        left = self.postfix()
        t = self.peek()
        if t.kind == "op" and t.text in _COMPARE:
            self.i += 1
            right = self.postfix()
            op = t.text
            nxt = self.peek()
            if nxt.kind == "op" and nxt.text in _COMPARE:
                raise _error(self.source, nxt.pos,
                             "comparisons do not chain; write 'a < b and b < c'")
            if op in ("==", "==="):
                return lambda env: js_equal(left(env), right(env))
            if op in ("!=", "!=="):
                return lambda env: not js_equal(left(env), right(env))
            if op == "<":
                return lambda env: _js_less(left(env), right(env), equal=False)
            if op == "<=":
                return lambda env: _js_less(left(env), right(env), equal=True)
            if op == ">":
                return lambda env: _js_less(right(env), left(env), equal=False)
            return lambda env: _js_less(right(env), left(env), equal=True)
        return left

    def postfix(self) -> _Fn:
        fn = self.primary()
        while True:
            if self.accept("."):
                t = self.take()
                if t.kind != "name":
                    raise _error(self.source, t.pos, "expected a member name after '.'")
                fn = _member(fn, t.text)
            elif self.accept("["):
                t = self.take()
                key: str | int
                if t.kind == "str":
                    key = _unquote(t.text, t.pos, self.source)
                elif t.kind == "num" and t.text.isdigit():
                    key = int(t.text)
                else:
                    raise _error(self.source, t.pos,
                                 "expected a string or a non-negative integer inside [ ]")
                self.expect("]")
                fn = _member(fn, key)
            else:
                return fn

    def primary(self) -> _Fn:
        t = self.take()
        if t.kind == "num":
            num: Any = float(t.text) if any(c in t.text for c in ".eE") else int(t.text)
            return lambda env: num
        if t.kind == "str":
            text = _unquote(t.text, t.pos, self.source)
            return lambda env: text
        if t.kind == "op" and t.text == "-":
            n = self.take()
            if n.kind != "num":
                raise _error(self.source, n.pos, "'-' is only allowed before a number")
            neg: Any = -(float(n.text) if any(c in n.text for c in ".eE") else int(n.text))
            return lambda env: neg
        if t.kind == "op" and t.text == "(":
            inner = self.or_()
            self.expect(")")
            return inner
        if t.kind == "name":
            if t.text == "true":
                return lambda env: True
            if t.text == "false":
                return lambda env: False
            if t.text == "null":
                return lambda env: None
            if t.text == "undefined":
                return lambda env: UNDEFINED
            if t.text == "in":
                self.expect("(")
                arg = self.take()
                if arg.kind != "str":
                    raise _error(self.source, arg.pos,
                                 "in(...) takes one quoted state path, e.g. in('working.escalating')")
                ref = _unquote(arg.text, arg.pos, self.source)
                self.expect(")")
                self.state_refs.append(ref)
                return _in_state(ref)
            if t.text in _KEYWORDS:
                raise _error(self.source, t.pos, f"unexpected {t.text!r}")
            try:
                return _root(t.text)
            except KeyError:
                raise _error(
                    self.source, t.pos,
                    f"unknown name {t.text!r} (names: {', '.join(ROOT_NAMES)}, in('state'))",
                ) from None
        if t.kind == "end":
            raise _error(self.source, t.pos, "unexpected end of expression")
        raise _error(self.source, t.pos, f"unexpected {t.text!r}")


def resolve_state_ref(graph: Any, ref: str) -> str | None:
    """The state id ``ref`` names in ``graph``: ``'#id'`` by id, else a ``.``-joined key path
    from the root (``''`` is the root). ``None`` when the graph has no such state."""
    nodes = graph.nodes
    if ref.startswith("#"):
        return ref[1:] if ref[1:] in nodes else None
    cur = graph.root
    if ref == "":
        return str(cur)
    for key in ref.split("."):
        node = nodes.get(cur)
        if node is None:
            return None
        nxt = next((c for c in node.children if c in nodes and nodes[c].key == key), None)
        if nxt is None:
            return None
        cur = nxt
    return str(cur)


def _in_state(ref: str) -> _Fn:
    def in_state(env: Env) -> bool:
        if env.active is None or env.refs is None:
            return False
        sid = env.refs.get(ref)
        return sid is not None and sid in env.active
    return in_state


def compile_expression(source: str) -> Expression:
    """Parse ``source`` into an :class:`Expression`.

    Raises
    ------
    QueryError
        A syntax error or an unknown name, naming the column with a caret under it.
    """
    if not isinstance(source, str):
        raise TypeError(f"an expression is a string; got {type(source).__name__}")
    p = _Parser(source)
    fn = p.parse()
    return Expression(source, fn, tuple(p.state_refs))

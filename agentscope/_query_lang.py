"""The small, safe expression language of :meth:`Timeline.find`, :func:`agentscope.check` and the
``query``/``check`` commands: predicates and paths over one replayed step.

Nothing here calls ``eval``: an expression is tokenised and parsed by a hand-written
operator-precedence parser into a small postfix program (:func:`_run` evaluates it), so log
content is only ever data. Neither parsing nor evaluating recurses: parentheses and ``not``
prefixes nest up to :data:`MAX_NESTING` levels (past it, :class:`QueryError` naming the
column), member chains have no limit, and values compared by content may nest up to
:data:`agentscope._deep.MAX_DEPTH` levels.

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

- numbers are IEEE doubles: a literal is the nearest double (``9007199254740993`` is ``2**53``;
  overflow is ``Infinity``, for any number of digits), and numbers compare as doubles, so an int
  past ``2**53`` in a Python-engine context compares as the Node engine's double does;

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
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from agentscope._deep import call_deep
from agentscope.errors import QueryError
from agentscope.hashing import js_number, js_values

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


def _double(v: Any) -> Any:
    """A number as the IEEE double JS holds (an int beyond ±2**53 rounds, as ``JSON.parse``)."""
    return js_values(v) if type(v) is int else v


def js_equal(a: Any, b: Any) -> bool:
    """JS ``===`` for JSON values, comparing arrays and objects by content (see module doc).

    Numbers compare as IEEE doubles (``2**53 == 2**53 + 1``, as in JS), whichever engine produced
    them; values nested up to :data:`agentscope._deep.MAX_DEPTH` levels compare."""
    return call_deep(_equal, a, b)


def _equal(a: Any, b: Any) -> bool:
    if a is UNDEFINED or b is UNDEFINED:
        return a is b
    if a is None or b is None:
        return a is b
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if _is_number(a) or _is_number(b):
        if not (_is_number(a) and _is_number(b)):
            return False
        return bool(_double(a) == _double(b))
    if isinstance(a, str) or isinstance(b, str):
        return isinstance(a, str) and isinstance(b, str) and a == b
    if isinstance(a, list) or isinstance(b, list):
        return (isinstance(a, list) and isinstance(b, list) and len(a) == len(b)
                and all(_equal(x, y) for x, y in zip(a, b, strict=True)))
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        return bool(a.keys() == b.keys()) and all(_equal(a[k], b[k]) for k in a)
    return bool(a == b)


def _js_less(a: Any, b: Any, *, equal: bool) -> bool:
    if _is_number(a) and _is_number(b):
        a, b = _double(a), _double(b)
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


def _context(env: Env) -> Any:
    return UNDEFINED if env.persisted is None else env.persisted.get("context", UNDEFINED)


def _event(env: Env) -> Any:
    ev = env.entry.get("event")
    return ev if isinstance(ev, Mapping) else UNDEFINED


def _entry(env: Env) -> Any:
    return env.entry


def _value(env: Env) -> Any:
    return UNDEFINED if env.value is None else env.value


def _status(env: Env) -> Any:
    return UNDEFINED if env.persisted is None else env.persisted.get("status", UNDEFINED)


def _index(env: Env) -> Any:
    return env.index


def _verdict(env: Env) -> Any:
    return env.verdict


_ROOTS: dict[str, _Fn] = {"context": _context, "event": _event, "entry": _entry, "value": _value,
                          "status": _status, "index": _index, "verdict": _verdict}
_ROOT_FNS = frozenset(_ROOTS.values())


def _root(name: str) -> _Fn:
    return _ROOTS[name]


def _path(root: _Fn, keys: tuple[str | int, ...]) -> _Fn:
    """``root`` then its member chain, walked in a loop (a path of any length)."""
    def path(env: Env) -> Any:
        base = root(env)
        for key in keys:
            base = get_member(base, key)
        return base
    return path


ROOT_NAMES = ("context", "event", "entry", "value", "status", "index", "verdict")


# ---------------------------------------------------------------------------------------------
# Tokens and parser


_TOKEN = re.compile(
    r"""
    (?P<ws>\s+)
  | (?P<num>(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?)
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


_SHOWN = 60
"""Characters of the expression shown either side of the caret in an error."""


def _error(source: str, pos: int, message: str) -> QueryError:
    """A :class:`QueryError` at ``pos``: the message, the column, and the expression (around the
    column, for a long one) with a caret under it."""
    start, stop = max(0, pos - _SHOWN), min(len(source), pos + _SHOWN)
    head = "…" if start else ""
    shown = head + source[start:stop] + ("…" if stop < len(source) else "")
    caret = " " * (len(head) + pos - start) + "^"
    return QueryError(f"{message} at column {pos + 1}:\n  {shown}\n  {caret}",
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

MAX_NESTING = 1_000
"""Deepest nesting of an expression: open parentheses plus pending ``not``/``!`` prefixes.

Far above anything a person writes (100-deep parentheses are fine); past it, :class:`QueryError`
naming the column. Parsing and evaluating are loops over an explicit stack, never recursion, so
every expression within the limit, and a member chain of any length, parses and evaluates."""

_SAFE_INT = 1 << 53


def _js_number(text: str) -> Any:
    """A number literal as the IEEE double JS reads (overflow is ``inf``); an integral value
    within ±2**53 as ``int`` (the same double, shown as JS shows it)."""
    x = float(text)  # correctly rounded for any number of digits; no int-digit limit
    return int(x) if x.is_integer() and abs(x) <= _SAFE_INT else x


def _member_key(text: str) -> str | int:
    """The key of ``a[123]``: an index for an integral double within ±2**53, else JS's
    ``String(number)`` (``a[1e21]`` reads the member ``"1e+21"``)."""
    x = _js_number(text)
    return x if isinstance(x, int) else js_number(x, nonfinite="literal")


# instruction codes of a compiled program (see _run)
_CONST, _LOAD, _MEMBER, _NOT, _CMP, _AND, _OR = range(7)
_Instr = tuple[int, Any]


def _run(program: Sequence[_Instr], env: Env) -> Any:
    """Evaluate a compiled program at ``env``: one loop over a value stack (postfix order, with
    jumps for the short-circuits of ``and``/``or``), so no expression can exhaust Python's stack."""
    stack: list[Any] = []
    pc, end = 0, len(program)
    while pc < end:
        op, arg = program[pc]
        pc += 1
        if op == _CONST:
            stack.append(arg)
        elif op == _LOAD:
            stack.append(arg(env))
        elif op == _MEMBER:
            base = stack[-1]
            for key in arg:
                base = get_member(base, key)
            stack[-1] = base
        elif op == _CMP:
            right = stack.pop()
            stack[-1] = arg(stack[-1], right)
        elif op == _NOT:
            stack[-1] = not js_truthy(stack[-1])
        elif op == _AND:  # falsy left operand: it is the result, skip the right one
            if js_truthy(stack[-1]):
                stack.pop()
            else:
                pc = arg
        elif js_truthy(stack[-1]):  # _OR: truthy left operand is the result
            pc = arg
        else:
            stack.pop()
    return stack[0]


_COMPARISONS: dict[str, Callable[[Any, Any], bool]] = {
    "==": js_equal,
    "===": js_equal,
    "!=": lambda a, b: not js_equal(a, b),
    "!==": lambda a, b: not js_equal(a, b),
    "<": lambda a, b: _js_less(a, b, equal=False),
    "<=": lambda a, b: _js_less(a, b, equal=True),
    ">": lambda a, b: _js_less(b, a, equal=False),
    ">=": lambda a, b: _js_less(b, a, equal=True),
}
# binding strength of the operators waiting on the parser's stack ("(" is a barrier)
_PAREN, _OR_PREC, _AND_PREC, _NOT_PREC, _CMP_PREC = range(5)


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


@dataclass(slots=True)
class _Pending:
    """An operator on the parser's stack: its strength, the token and its argument."""

    prec: int
    tok: _Tok
    arg: Any = None


class _Parser:
    """Operator precedence over an explicit stack (no recursion): operands are emitted as they
    are read, operators wait on ``ops`` until a weaker one (or ``)``, or the end) closes them."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.toks = _tokens(source)
        self.i = 0
        self.state_refs: list[str] = []
        self.program: list[_Instr] = []
        self.ops: list[_Pending] = []
        self.nesting = 0

    def fail(self, tok: _Tok, message: str) -> QueryError:
        return _error(self.source, tok.pos, message)

    def take(self) -> _Tok:
        t = self.toks[self.i]
        self.i += 1
        return t

    def is_(self, tok: _Tok, *texts: str) -> bool:
        return tok.kind in ("op", "name") and tok.text in texts

    def push(self, prec: int, tok: _Tok, arg: Any = None) -> None:
        if prec in (_PAREN, _NOT_PREC):
            if self.nesting >= MAX_NESTING:
                raise self.fail(tok, f"the expression nests deeper than {MAX_NESTING:,} levels "
                                     f"(parentheses and not/! prefixes)")
            self.nesting += 1
        self.ops.append(_Pending(prec, tok, arg))

    def close(self, prec: int) -> None:
        """Emit every waiting operator at least as strong as ``prec`` (left-associative)."""
        ops, program = self.ops, self.program
        while ops and ops[-1].prec >= prec and ops[-1].prec != _PAREN:
            p = ops.pop()
            if p.prec == _NOT_PREC:
                self.nesting -= 1
                program.append((_NOT, None))
            elif p.prec == _CMP_PREC:
                program.append((_CMP, p.arg))
            else:  # and/or: the jump over the right operand lands here
                code, _ = program[p.arg]
                program[p.arg] = (code, len(program))

    def parse(self) -> _Fn:
        if self.toks[0].kind == "end":
            raise _error(self.source, 0, "empty expression")
        while True:
            self.operand()
            self.postfix()
            if self.operator():
                break
        program = tuple(self.program)
        if len(program) == 1 and program[0][0] == _LOAD:
            return program[0][1]  # type: ignore[no-any-return]
        return lambda env: _run(program, env)

    def operand(self) -> None:
        """Prefixes and ``(`` (pushed), then one primary (emitted)."""
        while True:
            t = self.take()
            # a comparison's operands are primaries: `a == !b` is refused, `a == (!b)` is not
            after_compare = bool(self.ops) and self.ops[-1].prec == _CMP_PREC
            if self.is_(t, "not", "!") and not after_compare:
                self.push(_NOT_PREC, t)
            elif self.is_(t, "("):
                self.push(_PAREN, t)
            else:
                self.primary(t)
                return

    def primary(self, t: _Tok) -> None:
        emit = self.program.append
        if t.kind == "num":
            emit((_CONST, _js_number(t.text)))
        elif t.kind == "str":
            emit((_CONST, _unquote(t.text, t.pos, self.source)))
        elif self.is_(t, "-"):
            n = self.take()
            if n.kind != "num":
                raise self.fail(n, "'-' is only allowed before a number")
            emit((_CONST, -_js_number(n.text)))
        elif t.kind == "name" and t.text in ("true", "false", "null", "undefined"):
            emit((_CONST, {"true": True, "false": False, "null": None}.get(t.text, UNDEFINED)))
        elif t.kind == "name" and t.text == "in":
            self.expect("(")
            arg = self.take()
            if arg.kind != "str":
                raise self.fail(arg, "in(...) takes one quoted state path, e.g. in('working.escalating')")
            ref = _unquote(arg.text, arg.pos, self.source)
            self.expect(")")
            self.state_refs.append(ref)
            emit((_LOAD, _in_state(ref)))
        elif t.kind == "name" and t.text not in _KEYWORDS:
            try:
                emit((_LOAD, _root(t.text)))
            except KeyError:
                raise self.fail(
                    t, f"unknown name {t.text!r} (names: {', '.join(ROOT_NAMES)}, in('state'))"
                ) from None
        elif t.kind == "end":
            raise self.fail(t, "unexpected end of expression")
        else:
            raise self.fail(t, f"unexpected {t.text!r}")

    def expect(self, text: str) -> None:
        t = self.take()
        if not self.is_(t, text):
            raise self.fail(t, f"expected {text!r}, found {t.text!r}" if t.text else
                            f"expected {text!r} before the end")

    def postfix(self) -> None:
        """``.name`` and ``[key]`` after an operand or ``)``: one instruction for the chain."""
        keys: list[str | int] = []
        while True:
            t = self.toks[self.i]
            if self.is_(t, "."):
                self.i += 1
                name = self.take()
                if name.kind != "name":
                    raise self.fail(name, "expected a member name after '.'")
                keys.append(name.text)
            elif self.is_(t, "["):
                self.i += 1
                k = self.take()
                if k.kind == "str":
                    keys.append(_unquote(k.text, k.pos, self.source))
                elif k.kind == "num" and k.text.isdigit():
                    keys.append(_member_key(k.text))
                else:
                    raise self.fail(k, "expected a string or a non-negative integer inside [ ]")
                self.expect("]")
            else:
                break
        if not keys:
            return
        program = self.program
        last_op, last_arg = program[-1]
        if last_op == _LOAD and last_arg in _ROOT_FNS:
            # a root and its member chain read in one step
            program[-1] = (_LOAD, _path(last_arg, tuple(keys)))
        else:
            program.append((_MEMBER, tuple(keys)))

    def operator(self) -> bool:
        """After an operand: ``)`` (then postfix), a binary operator, or the end (True)."""
        while True:
            t = self.take()
            if t.kind == "end":
                self.close(_OR_PREC)
                if self.ops:
                    raise self.fail(t, "expected ')' before the end")
                return True
            if self.is_(t, ")"):
                self.close(_OR_PREC)
                if not self.ops:
                    raise self.fail(t, "unexpected ')'")
                self.ops.pop()
                self.nesting -= 1
                self.postfix()
                continue
            if t.kind == "op" and t.text in _COMPARE:
                if self.ops and self.ops[-1].prec == _CMP_PREC:
                    raise self.fail(t, "comparisons do not chain; write 'a < b and b < c'")
                self.push(_CMP_PREC, t, _COMPARISONS[t.text])
                return False
            for words, prec, code in ((("and", "&&"), _AND_PREC, _AND), (("or", "||"), _OR_PREC, _OR)):
                if self.is_(t, *words):
                    self.close(prec)
                    self.program.append((code, None))  # its target is set when it closes
                    self.push(prec, t, len(self.program) - 1)
                    return False
            if any(p.prec == _PAREN for p in self.ops):
                raise self.fail(t, f"expected ')', found {t.text!r}")
            raise self.fail(t, f"unexpected {t.text!r}")


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

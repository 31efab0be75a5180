"""Canonical JSON, djb2 and the verification state hash, byte-exact with the reference library.

Pure functions, no I/O. Implements spec §2 (the Era-C state hash at 02a45590, the older
8b7f21a0 variant, the Era-B logical projection) and §3 (the machine structural version).

The JSON subset handled is what ``json.loads``/``orjson.loads`` produce (``dict``, ``list``,
``str``, ``int``, ``float``, ``bool``, ``None``), plus tuples (as arrays). Every number is
formatted as an IEEE double the way ECMAScript's ``Number::toString`` does (spec §2.2), so
integers above 2**53 are rounded exactly as ``JSON.parse`` would round them.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal

import numpy as np
import orjson

from agentscope._deep import call_deep_checked

__all__ = [
    "HASH_VARIANTS",
    "canonical_event_json",
    "canonical_json",
    "canonical_snapshot_json",
    "djb2_hex",
    "djb2_hex_reference",
    "escape_lone_surrogates",
    "fast_canonical_snapshot_bytes",
    "js_number",
    "js_string",
    "js_values",
    "machine_version",
    "state_hash",
    "state_hashes",
    "structural_string",
]

HashVariant = Literal["02a45590", "8b7f21a0", "era-b"]
HASH_VARIANTS: tuple[HashVariant, ...] = ("02a45590", "8b7f21a0", "era-b")

_MASK = 0xFFFFFFFF

# ---------------------------------------------------------------------------------------------
# djb2 over UTF-16 code units (spec §2.3)


def djb2_hex_reference(text: str) -> str:
    """Return djb2 of ``text``'s UTF-16 code units as 8 lowercase hex digits (plain loop).

    The reference implementation kept for tests: ``h = 5381; h = (h*33 + unit) mod 2**32``.
    """
    h = 5381
    data = text.encode("utf-16-le", "surrogatepass")
    for i in range(0, len(data), 2):
        h = (h * 33 + (data[i] | (data[i + 1] << 8))) & _MASK
    return f"{h:08x}"


_rev_table: np.ndarray[Any, np.dtype[np.uint64]] = np.ones(1, dtype=np.uint64)
_lead: list[int] = [5381]
"""``_lead[n] == 5381 * 33**n mod 2**32``: the seed's share of an ``n``-unit djb2 (grown on demand,
never past ``n == _CHUNK``: :func:`_djb2_units` hashes longer strings chunk by chunk)."""


def _reversed_powers(n: int) -> np.ndarray[Any, np.dtype[np.uint64]]:
    """Return ``33**(n-1-i) mod 2**32`` for i in [0, n) as a contiguous uint64 view.

    A cached table holds the powers of the next power of two in descending order, so every
    length is a contiguous tail slice of it (no copy, no reversal per call). The values are
    below 2**32; as uint64, a dot product with code units (< 2**16) wraps modulo 2**64, which
    keeps the sum exact modulo 2**32.
    """
    global _rev_table
    size = len(_rev_table)
    if size < n:
        size = max(4096, 1 << (n - 1).bit_length())
        ascending = np.cumprod(np.full(size, 33, dtype=np.uint32), dtype=np.uint32)
        ascending = np.concatenate([np.ones(1, dtype=np.uint32), ascending[:-1]])
        _rev_table = np.ascontiguousarray(ascending[::-1].astype(np.uint64))
    return _rev_table[size - n :]


def _seed_share(n: int) -> int:
    """``5381 * 33**n mod 2**32`` (cached: ``pow`` per call costs more than the dot product)."""
    lead = _lead
    if n < len(lead):
        return lead[n]
    h = lead[-1]
    for _ in range(len(lead), max(n + 1, min(2 * len(lead), _CHUNK + 1))):
        h = (h * 33) & _MASK
        lead.append(h)
    return lead[n]


_SMALL = 48

_CHUNK = 1 << 16
"""Most UTF-16 code units one vectorised djb2 step takes: the power tables and the dot product's
temporaries stay bounded (about 1 MiB) however long the string, and nothing grows with it."""


def _djb2_units(units: np.ndarray[Any, Any]) -> int:
    """djb2 of ``units`` (a 1-D array of code units, ``uint8`` or ``uint16``) as an ``int``.

    Each chunk of at most :data:`_CHUNK` units ``u_0 … u_{m-1}`` advances the hash as
    ``h = h * 33**m + sum(u_i * 33**(m-1-i))`` modulo 2**32, which is exactly ``m`` steps of
    ``h = h * 33 + u`` (spec §2.3); one chunk alone is ``5381 * 33**m + sum(…)``.
    """
    n = len(units)
    if n <= _CHUNK:
        acc = int(units.dot(_reversed_powers(n)))  # uint64 arithmetic wraps mod 2**64 (exact mod 2**32)
        return (acc + _seed_share(n)) & _MASK
    h = 5381
    full = _reversed_powers(_CHUNK)
    step = pow(33, _CHUNK, 1 << 32)
    for start in range(0, n, _CHUNK):
        part = units[start : start + _CHUNK]
        m = len(part)
        powers, mult = (full, step) if m == _CHUNK else (_reversed_powers(m), pow(33, m, 1 << 32))
        h = (h * mult + int(part.dot(powers))) & _MASK
    return h


def djb2_hex(text: str) -> str:
    """Return djb2 of ``text`` as 8 lowercase hex digits (spec §2.3).

    ``h = 5381``, then ``h = (h * 33 + u) mod 2**32`` for every UTF-16 code unit ``u`` (an astral
    character or a lone surrogate counts as its code units). Long strings are hashed with numpy
    as the polynomial ``5381*33**n + sum(u_i * 33**(n-1-i))`` modulo 2**32, in chunks of at most
    :data:`_CHUNK` units (bounded memory); short ones with a plain loop.
    """
    data = text.encode("utf-16-le", "surrogatepass")
    n = len(data) >> 1
    if n <= _SMALL:
        h = 5381
        for i in range(0, len(data), 2):
            h = (h * 33 + (data[i] | (data[i + 1] << 8))) & _MASK
        return f"{h:08x}"
    return f"{_djb2_units(np.frombuffer(data, dtype='<u2')):08x}"


# ---------------------------------------------------------------------------------------------
# ECMAScript number and string formatting (spec §2.2)


def _digits_exponent(x: float) -> tuple[str, int]:
    """Shortest round-trip digits of ``abs(x)`` and ``n`` with value = 0.d1d2… × 10**n."""
    r = repr(abs(x))
    if "e" in r:
        mant, exp_s = r.split("e")
        exp = int(exp_s)
    else:
        mant, exp = r, 0
    point = mant.find(".")
    if point < 0:
        point = len(mant)
        digits = mant
    else:
        digits = mant[:point] + mant[point + 1 :]
    n = point + exp
    stripped = digits.lstrip("0")
    n -= len(digits) - len(stripped)
    digits = stripped.rstrip("0") or "0"
    return digits, n


def js_number(value: float | int, *, nonfinite: Literal["null", "literal"] = "null") -> str:
    """Return ``value`` formatted as ECMAScript ``Number::toString`` does (JSON.stringify).

    Integers are first converted to IEEE doubles, as ``JSON.parse`` does. Non-finite numbers
    give ``"null"`` (JSON) or, with ``nonfinite="literal"``, ``"NaN"``/``"Infinity"``/``"-Infinity"``
    (``String(x)``, used by the structural hash of spec §3). ``-0`` gives ``"0"``.
    """
    try:
        x = float(value)
    except OverflowError:
        x = math.inf if value > 0 else -math.inf
    if not math.isfinite(x):
        if nonfinite == "null":
            return "null"
        return "NaN" if math.isnan(x) else ("Infinity" if x > 0 else "-Infinity")
    if x == 0:
        return "0"
    if x.is_integer() and abs(x) < 9007199254740992.0:
        return str(int(x))
    digits, n = _digits_exponent(x)
    k = len(digits)
    sign = "-" if x < 0 else ""
    if k <= n <= 21:
        body = digits + "0" * (n - k)
    elif 0 < n <= 21:
        body = digits[:n] + "." + digits[n:]
    elif -6 < n <= 0:
        body = "0." + "0" * (-n) + digits
    else:
        e = n - 1
        esign = "+" if e >= 0 else "-"
        body = digits[0] + ("." + digits[1:] if k > 1 else "") + "e" + esign + str(abs(e))
    return sign + body


_SAFE_INT = 1 << 53


def _js_double(value: int) -> float:
    try:
        return float(value)
    except OverflowError:  # beyond Number.MAX_VALUE: JSON.parse gives ±Infinity
        return math.inf if value > 0 else -math.inf


def _is_unsafe_int(value: Any) -> bool:
    return type(value) is int and not -_SAFE_INT <= value <= _SAFE_INT


def js_values(value: Any) -> Any:
    """Return ``value`` with every number as the IEEE double ``JSON.parse`` would give (spec §2.2).

    Integers beyond ±2**53 become the nearest ``float`` (``9007199254740993`` ->
    ``9007199254740992.0``, correctly rounded as V8 rounds; past ``Number.MAX_VALUE``,
    ``±inf``). Smaller integers are exact doubles already and stay ``int``. The input is never
    mutated: containers holding such an integer are copied, everything else is returned as is
    (the same object when nothing changes). Used at the Python engine's fold boundary (events,
    restored snapshots, inputs, context patches) so it folds with JS number semantics, while the
    log's entries keep their literals. Nesting up to :data:`~agentscope._deep.MAX_DEPTH`.
    """
    t = type(value)
    if t is int:
        return _js_double(value) if _is_unsafe_int(value) else value
    if t is dict:
        # the common case, a flat dict of scalars (an event, a context patch), without the scan
        for item in value.values():
            ti = type(item)
            if ti is str or ti is float or ti is bool or item is None:
                continue
            if ti is int and -_SAFE_INT <= item <= _SAFE_INT:
                continue
            break
        else:
            return value
    if t is dict or t is list or isinstance(value, (Mapping, list, tuple)):
        if not _has_unsafe_int(value):
            return value
        return call_deep_checked("JS number conversion", value, _converted)
    return value


def _has_unsafe_int(value: Any) -> bool:
    """Iterative scan: is there an int beyond ±2**53 anywhere in ``value``?"""
    stack = [value]
    pop, push = stack.pop, stack.append
    while stack:
        v = pop()
        items = v.values() if type(v) is dict or isinstance(v, Mapping) else v
        for item in items:
            t = type(item)
            if t is int:
                if not -_SAFE_INT <= item <= _SAFE_INT:
                    return True
            elif t is dict or t is list or t is tuple or (
                t is not str and isinstance(item, (Mapping, list))
            ):
                push(item)
    return False


def _converted(value: Any) -> Any:
    if type(value) is int:
        return _js_double(value) if _is_unsafe_int(value) else value
    if isinstance(value, Mapping):
        return {k: _converted(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_converted(v) for v in value]
    return value


_ESCAPES = {
    "\b": "\\b",
    "\f": "\\f",
    "\n": "\\n",
    "\r": "\\r",
    "\t": "\\t",
    '"': '\\"',
    "\\": "\\\\",
}
# A well-formed surrogate pair stored as two code points stays literal; a lone surrogate is escaped.
_NEEDS_ESCAPE = re.compile(
    "[\ud800-\udbff][\udc00-\udfff]|[\x00-\x1f\"\\\\\ud800-\udfff]"
)


def _escape_match(m: re.Match[str]) -> str:
    s = m.group(0)
    if len(s) == 2:
        return s
    esc = _ESCAPES.get(s)
    return esc if esc is not None else f"\\u{ord(s):04x}"


def js_string(text: str) -> str:
    """Return ``text`` quoted as ECMAScript ``JSON.stringify`` does (spec §2.2).

    Escapes ``"`` and ``\\``, uses ``\\b \\f \\n \\r \\t``, writes other controls and lone
    surrogates as lowercase ``\\uxxxx``; everything else (``/``, U+2028, non-ASCII) is literal.
    """
    return '"' + _NEEDS_ESCAPE.sub(_escape_match, text) + '"'


_SURROGATE = re.compile("[\ud800-\udfff]")
_PAIR_OR_LONE = re.compile("[\ud800-\udbff][\udc00-\udfff]|[\ud800-\udfff]")


def _pair_or_escape(m: re.Match[str]) -> str:
    s = m.group(0)
    if len(s) == 2:  # a well-formed pair held as two code points: the astral character
        return s.encode("utf-16-le", "surrogatepass").decode("utf-16-le")
    return f"\\u{ord(s):04x}"


def escape_lone_surrogates(text: str) -> str:
    """Return ``text`` as valid Unicode: each lone surrogate becomes the six characters
    ``\\udxxx`` (lowercase, as ``JSON.stringify`` writes it); a surrogate pair held as two code
    points becomes its astral character. Text with no surrogate is returned as is.

    For boundaries that need well-formed text and are not JSON (HTML, CSV cells, widget traits):
    the substitution is visible and says exactly which code unit was there.
    """
    if _SURROGATE.search(text) is None:
        return text
    return _PAIR_OR_LONE.sub(_pair_or_escape, text)


_INDEX_KEY = re.compile(r"0|[1-9][0-9]*")
_MAX_INDEX = 4294967294


def _utf16_key(k: str) -> bytes:
    return k.encode("utf-16-be", "surrogatepass")


def _js_key_order(keys: list[str]) -> list[str]:
    """Order keys as ``JSON.stringify(sortKeys(x))`` enumerates them (spec §2.2).

    Array-index keys (canonical decimals up to 4294967294) first, numerically; then the other
    keys by UTF-16 code unit sequence.
    """
    index_keys: list[str] = []
    other: list[str] = []
    for k in keys:
        if k[:1].isdigit() and _INDEX_KEY.fullmatch(k) and int(k) <= _MAX_INDEX:
            index_keys.append(k)
        else:
            other.append(k)
    if all(k.isascii() for k in other):
        other.sort()
    else:
        other.sort(key=_utf16_key)
    if index_keys:
        index_keys.sort(key=int)
        return index_keys + other
    return other


def _string_keyed(value: Mapping[Any, Any]) -> Mapping[str, Any]:
    """``value`` with its keys as JS property names (``1000`` -> ``"1000"``), as JS objects have."""
    if all(type(k) is str for k in value):
        return value
    return {(js_number(k) if isinstance(k, (int, float)) and not isinstance(k, bool) else str(k)): v
            for k, v in value.items()}


def _utf16_sorted(keys: list[str]) -> list[str]:
    if all(k.isascii() for k in keys):
        return sorted(keys)
    return sorted(keys, key=_utf16_key)


# ---------------------------------------------------------------------------------------------
# Canonical writers (spec §2.1, §2.2, §6.1)

_Position = int
_SNAPSHOT, _CHILDREN, _CHILD, _DATA = 0, 1, 2, 3
_SNAPSHOT_VOLATILE = frozenset({"sessionId", "_nextTimerId", "_nextActorIds"})
_CHILD_VOLATILE = frozenset({"sessionId"})


def _next_position(pos: _Position, key: str) -> _Position:
    if pos == _SNAPSHOT:
        return _CHILDREN if key == "children" else _DATA
    if pos == _CHILDREN:
        return _CHILD
    if pos == _CHILD:
        return _SNAPSHOT if key == "snapshot" else _DATA
    return _DATA


def _write(
    value: Any,
    out: list[str],
    pos: _Position,
    skip: Callable[[_Position, str], bool] | None,
    path: set[int],
) -> None:
    if value is None:
        out.append("null")
    elif value is True:
        out.append("true")
    elif value is False:
        out.append("false")
    elif isinstance(value, str):
        out.append(js_string(value))
    elif isinstance(value, (int, float)):
        out.append(js_number(value))
    elif isinstance(value, Mapping):
        if id(value) in path:
            out.append('"[circular]"')
            return
        path.add(id(value))
        out.append("{")
        first = True
        members = _string_keyed(value)
        for k in _js_key_order(list(members)):
            if skip is not None and skip(pos, k):
                continue
            if not first:
                out.append(",")
            first = False
            out.append(js_string(k))
            out.append(":")
            _write(members[k], out, _next_position(pos, k) if skip is not None else _DATA, skip, path)
        out.append("}")
        path.discard(id(value))
    elif isinstance(value, (list, tuple)):
        if id(value) in path:
            out.append('"[circular]"')
            return
        path.add(id(value))
        out.append("[")
        for i, item in enumerate(value):
            if i:
                out.append(",")
            _write(item, out, _DATA, skip, path)
        out.append("]")
        path.discard(id(value))
    else:
        raise TypeError(
            f"canonical JSON handles only JSON values (dict, list, str, int, float, bool, None); "
            f"got {type(value).__name__}"
        )


def _written(value: Any, pos: _Position, skip: Callable[[_Position, str], bool] | None) -> str:
    """Run the writer; past Python's recursion limit, again on a big stack (up to ``MAX_DEPTH``).

    Raises :class:`~agentscope._deep.DepthLimitError` (a ``RecursionError`` naming the JSON
    Pointer of the first container past the limit) for a value nested deeper than
    :data:`~agentscope._deep.MAX_DEPTH` levels.
    """

    return call_deep_checked("canonical JSON", value, _run_writer, pos, skip)


def _run_writer(value: Any, pos: _Position, skip: Callable[[_Position, str], bool] | None) -> str:
    out: list[str] = []
    _write(value, out, pos, skip, set())
    return "".join(out)


def canonical_json(value: Any) -> str:
    """Return the library's ``stableJson`` of ``value``: key-sorted, compact ``JSON.stringify``.

    Key order: array-index keys numerically, then the rest by UTF-16 code units (spec §2.2).
    JS number formatting and string escaping. Keeps ``__proto__`` members (unlike hashing).
    Pure.

    Parameters
    ----------
    value : Any
        A JSON value: ``dict`` (string keys), ``list``, ``str`` (lone surrogates allowed),
        ``int``, ``float``, ``bool`` or ``None``, nested to any depth.

    Returns
    -------
    str
        The compact JSON text, as ``JSON.stringify`` of the key-sorted value writes it.

    Raises
    ------
    TypeError
        On a value that is not JSON (a ``set``, a ``datetime``, an object …).

    Examples
    --------
    >>> import agentscope as asc
    >>> print(asc.canonical_json({"b": [1, 2.5, None], "a": "x", "10": 1, "2": True}))
    {"2":true,"10":1,"a":"x","b":[1,2.5,null]}
    >>> print(asc.canonical_json(1.0), asc.canonical_json(1e21))
    1 1e+21
    """
    return _written(value, _DATA, None)


def _skip_data_proto(pos: _Position, key: str) -> bool:
    return key == "__proto__"


def canonical_event_json(event: Any) -> str:
    """Return ``canonicalEventJson(event)`` (spec §6.1): §2 canonicalization at a data position.

    No key stripping; ``__proto__`` members vanish as in the hash canonicalizer. Used for the
    entry-equivalence rule when comparing forks. Pure.
    """
    return _written(event, _DATA, _skip_data_proto)


def _skip_02a45590(pos: _Position, key: str) -> bool:
    if key == "__proto__":
        return True
    if pos == _SNAPSHOT:
        return key in _SNAPSHOT_VOLATILE
    if pos == _CHILD:
        return key in _CHILD_VOLATILE
    return False


def _skip_8b7f21a0(pos: _Position, key: str) -> bool:
    return key == "__proto__" or key in _SNAPSHOT_VOLATILE


def _skip_none(pos: _Position, key: str) -> bool:
    return key == "__proto__"


def _without_agent_meta(persisted: Mapping[str, Any]) -> Mapping[str, Any]:
    if "agentMeta" in persisted:
        return {k: v for k, v in persisted.items() if k != "agentMeta"}
    return persisted


def canonical_snapshot_json(persisted: Any, variant: HashVariant = "02a45590") -> str:
    """Return the exact string the state hash of ``variant`` hashes (spec §2.1, §2.5).

    - ``"02a45590"`` (normative, Era C): top-level ``agentMeta`` removed; ``sessionId``,
      ``_nextTimerId``, ``_nextActorIds`` dropped at snapshot positions and ``sessionId`` at child
      positions only; ``__proto__`` members dropped everywhere.
    - ``"8b7f21a0"`` (older Era C): the three volatile keys dropped at every depth.
    - ``"era-b"``: the logical projection ``{status, value, context, output?, error?}``, no
      stripping.
    """
    if isinstance(persisted, Mapping):
        persisted = _without_agent_meta(persisted)
    if variant == "02a45590":
        return _written(persisted, _SNAPSHOT, _skip_02a45590)
    if variant == "8b7f21a0":
        return _written(persisted, _SNAPSHOT, _skip_8b7f21a0)
    if variant == "era-b":
        if not isinstance(persisted, Mapping):
            raise TypeError("the Era-B projection needs a snapshot object")
        proj: dict[str, Any] = {
            "status": persisted.get("status"),
            "value": persisted.get("value"),
            "context": persisted.get("context"),
        }
        for k in ("output", "error"):
            if k in persisted:
                proj[k] = persisted[k]
        return _written(proj, _DATA, _skip_none)
    raise ValueError(f"unknown hash variant {variant!r}; expected one of {HASH_VARIANTS}")


def state_hash(persisted: Any, variant: HashVariant = "02a45590") -> str:
    """Return the verification ``stateHash`` of a persisted snapshot (spec §2).

    ``djb2Hex(JSONStringify(Canon(P)))`` — 8 lowercase hex digits. ``variant`` selects the
    algorithm: ``"02a45590"`` (default, normative Era C), ``"8b7f21a0"`` (older Era C) or
    ``"era-b"`` (the legacy logical projection, §2.5). Pure.

    The default variant first tries :func:`fast_canonical_snapshot_bytes` (orjson with guards)
    and falls back to the exact writer whenever a guard fails; both give the same bytes.

    Parameters
    ----------
    persisted : Mapping
        A persisted snapshot (XState 6's shape, spec §7.4), as ``Machine.persist`` returns it or a
        log's cached snapshot holds it.
    variant : {"02a45590", "8b7f21a0", "era-b"}
        The hash algorithm (see above).

    Returns
    -------
    str
        8 lowercase hex digits, comparable with an entry's ``verification.stateHash``.

    Examples
    --------
    >>> import agentscope as asc
    >>> from agentscope.examples import example_path
    >>> from agentscope.examples.python_machines import triage_machine
    >>> log = asc.read_log(example_path("g_triage.sqlite"), thread="main")
    >>> persisted = asc.replay(triage_machine(), log).persisted
    >>> asc.state_hash(persisted), log[-1]["verification"]["stateHash"]
    ('5b6a2cd9', '5b6a2cd9')
    >>> asc.state_hash({})
    '00597a9d'
    """
    if variant == "02a45590":
        fast = fast_canonical_snapshot_bytes(persisted)
        if fast is not None:
            return _djb2_ascii(fast) if fast.isascii() else djb2_hex(fast.decode("utf-8"))
    return djb2_hex(canonical_snapshot_json(persisted, variant))


# ---------------------------------------------------------------------------------------------
# The guarded fast path of the Era-C canonical JSON (orjson + checks, exact fallback)

# Any match means orjson's bytes may differ from JSONStringify(Canon(P)); the exact writer runs.
# Simple byte patterns, a superset of the risky tokens (false alarms only cost the exact path):
_FAST_GUARD = re.compile(
    rb'[{,]"[0-9]'  # a key starting with a digit: JS orders array-index keys first, numerically
    rb"|[0-9]{16}"  # an integer that may be beyond 2**53 (JS rounds it)
    rb"|[0-9]e[+-][0-9]"  # an exponent: orjson writes 1e+20, JS 100000000000000000000
    rb"|\.0[,\]}]"  # an integral float: orjson writes 1.0 and -0.0, JS 1 and 0
    rb'|"__proto__"'  # vanishes from the hash input (spec §2.1)
)
_DIGITS_AS_ZERO = bytes.maketrans(b"123456789", b"000000000")


_INTEGRAL_FLOAT = re.compile(rb"\.0[,\]}]")
_QUOTED_ZERO = re.compile(rb'"0')
_ZERO_EXPONENT = re.compile(rb"0e[+-]0")


def _guard_hit(out: bytes | bytearray) -> bool:
    """Exactly ``_FAST_GUARD.search(out) is not None``, by simpler searches (several times as
    fast as the one pattern on long text). With every digit written as ``0`` the digit classes of
    the pattern become the literal ``0``; the integral-float test reads the original bytes (its
    ``0`` is literal). A key test is behind a search for its common part, which is usually absent.
    Each search is the form measured fastest for it (a literal-led pattern or a substring); the
    integral-float and exponent tests run only when a byte each of them needs is there at all (a
    ``.``; a ``+`` or ``-``), which one scan for a single byte tells."""
    if b'"__proto__"' in out or (b"." in out and _INTEGRAL_FLOAT.search(out) is not None):
        return True
    z = out.translate(_DIGITS_AS_ZERO)
    if _QUOTED_ZERO.search(z) is not None and (b'{"0' in z or b',"0' in z):
        return True
    if (b"+" in out or b"-" in out) and _ZERO_EXPONENT.search(z) is not None:
        return True
    return b"0000000000000000" in z


# A non-ASCII key (UTF-8 order is not UTF-16 order past U+E000); run only on non-ASCII output.
# A key token is `[{,]"…":` (inside a string every `"` is escaped, so `[{,]"` starts a token).
_NON_ASCII_KEY = re.compile(rb'[{,]"(?:[^"\\]|\\.)*[\x80-\xff](?:[^"\\]|\\.)*":')


# datetime, dataclass instances and subclasses of str/int/dict/list are not JSON to the exact
# writer (or are written by their base type): orjson must refuse them too, so they fall back.
_FAST_OPTIONS = (
    orjson.OPT_SORT_KEYS
    | orjson.OPT_PASSTHROUGH_DATETIME
    | orjson.OPT_PASSTHROUGH_DATACLASS
    | orjson.OPT_PASSTHROUGH_SUBCLASS
)


def _fast_stripped(p: Any) -> Any:
    """``p`` (at a snapshot position) without its structural volatile keys: ``p`` itself when it
    has none, else shallow copies of the structural levels only."""
    if type(p) is not dict:
        return p
    ch = p.get("children")
    kids_to_strip = type(ch) is dict and len(ch) > 0
    if not kids_to_strip and "sessionId" not in p and "_nextTimerId" not in p and "_nextActorIds" not in p:
        return p
    out = p.copy()  # key order does not matter: orjson sorts the keys
    for k in _SNAPSHOT_VOLATILE:
        if k in out:
            del out[k]
    if kids_to_strip and ch is not None:
        kids = {}
        for cid, c in ch.items():
            if type(c) is dict:
                c = {k: v for k, v in c.items() if k != "sessionId"}
                if "snapshot" in c:
                    c["snapshot"] = _fast_stripped(c["snapshot"])
            kids[cid] = c
        out["children"] = kids
    return out


def fast_canonical_snapshot_bytes(persisted: Any) -> bytes | None:
    """The Era-C canonical JSON of ``persisted`` as UTF-8 bytes via orjson, or ``None``.

    ``None`` whenever orjson's output might differ from :func:`canonical_snapshot_json`: a float
    in exponent form or with an integral value (orjson writes a plain fraction with a nonzero
    fractional digit exactly as ``Number::toString`` does: measured on 166k doubles across the
    range), an integer of 16+ digits, an array-index or non-ASCII key, a ``__proto__`` member, a lone
    surrogate, nesting past orjson's limit, a cycle or a non-JSON type (datetime, dataclass,
    subclasses of the JSON types; see ``_FAST_GUARD``). Known difference: orjson writes
    ``uuid.UUID`` and plain ``enum.Enum`` members, which the exact writer refuses (neither can come
    from JSON).
    When it returns bytes they equal ``canonical_snapshot_json(persisted).encode()`` (tested
    with hypothesis against the exact writer).
    """
    out = _fast_unguarded(persisted)
    if out is None or _guard_hit(out):
        return None
    if not out.isascii() and _NON_ASCII_KEY.search(out) is not None:
        return None
    return out


def _fast_unguarded(persisted: Any) -> bytes | None:
    """orjson's canonical bytes of ``persisted`` (volatile keys stripped), before the guard:
    ``None`` when orjson refuses the value."""
    if type(persisted) is not dict:
        return None
    if "agentMeta" in persisted:  # the top level only (spec §2)
        persisted = {k: v for k, v in persisted.items() if k != "agentMeta"}
    try:
        return orjson.dumps(_fast_stripped(persisted), option=_FAST_OPTIONS)
    except (orjson.JSONEncodeError, TypeError):
        return None


def _djb2_ascii(data: bytes) -> str:
    """djb2 of ASCII ``data`` (one UTF-16 unit per byte), as :func:`djb2_hex`."""
    n = len(data)
    if n <= _SMALL:
        h = 5381
        for b in data:
            h = (h * 33 + b) & _MASK
        return f"{h:08x}"
    if n <= _CHUNK and n < len(_rev_table) and n < len(_lead):
        acc = int(np.frombuffer(data, dtype=np.uint8).dot(_rev_table[len(_rev_table) - n :]))
        return f"{(acc + _lead[n]) & _MASK:08x}"
    return f"{_djb2_units(np.frombuffer(data, dtype=np.uint8)):08x}"


_MANY_BYTES = 1 << 18
"""Most bytes of canonical JSON one vectorised djb2 call takes (its temporaries: ~12 bytes per byte)."""
_down_table: np.ndarray[Any, np.dtype[np.uint32]] = np.ones(1, dtype=np.uint32)
_up_table: np.ndarray[Any, np.dtype[np.uint32]] = np.ones(1, dtype=np.uint32)
_inv_table: np.ndarray[Any, np.dtype[np.uint32]] = np.ones(1, dtype=np.uint32)
_INV33 = pow(33, -1, 1 << 32)  # 33 is odd, so it has an inverse modulo 2**32
_U32Array = np.ndarray[Any, np.dtype[np.uint32]]


def _power_tables(n: int) -> tuple[_U32Array, _U32Array, _U32Array]:
    """``(down, up, inv)``, each longer than ``n``: ``up[k] = 33**k``, ``inv[k] = 33**-k`` and
    ``down`` = ``up`` reversed (contiguous), all modulo 2**32 (cached, grown by doubling)."""
    global _down_table, _up_table, _inv_table
    if len(_up_table) <= n:
        size = max(4096, 1 << n.bit_length())

        def powers(base: int) -> _U32Array:
            up = np.cumprod(np.full(size - 1, base, dtype=np.uint32), dtype=np.uint32)  # wraps mod 2**32
            out: _U32Array = np.concatenate([np.ones(1, dtype=np.uint32), up])
            return out

        _up_table, _inv_table = powers(33), powers(_INV33)
        _down_table = np.ascontiguousarray(_up_table[::-1])
    return _down_table, _up_table, _inv_table


def _djb2_ascii_many(
    data: bytes | bytearray,
    starts: Sequence[int] | np.ndarray[Any, np.dtype[np.int64]],
    lens: Sequence[int] | np.ndarray[Any, np.dtype[np.int64]],
    braced: bool = False,
) -> np.ndarray[Any, np.dtype[np.uint32]]:
    """djb2 of each ASCII chunk ``data[starts[i] : starts[i] + lens[i]]`` (one UTF-16 unit per
    byte), as ``uint32``, in a few array operations over all of them. Chunks are in order and
    none is empty; ``braced``: every chunk starts with a ``,`` to be read as ``{``.

    With ``L = len(data)`` and ``W = cumsum(b_j * 33**(L-1-j))``, a chunk ending at ``e`` has
    ``W[e] - W[start] = sum(b_j * 33**(e-1-j)) * 33**(L-e)``; multiplying by the inverse power
    (33 is odd, so invertible modulo 2**32) leaves the chunk's own sum, to which the seed's share
    ``5381 * 33**n`` is added (spec §2.3); a braced chunk adds ``("{" - ",") * 33**(n-1)``. All
    arithmetic is exact modulo 2**32 in wrapping ``uint32``.
    """
    ln = np.asarray(lens, dtype=np.int64)
    st = np.asarray(starts, dtype=np.int64)
    arr = np.frombuffer(data, dtype=np.uint8)
    total = len(arr)
    down, up, inv = _power_tables(total)
    # uint32 arithmetic wraps modulo 2**32, which is all djb2 keeps: two passes over the bytes
    running = np.empty(total + 1, dtype=np.uint32)
    running[0] = 0
    np.cumsum(np.multiply(arr, down[len(down) - total :], dtype=np.uint32), dtype=np.uint32, out=running[1:])
    ends = st + ln
    hashed = (running[ends] - running[st]) * inv[total - ends] + up[ln] * np.uint32(5381)
    if braced:
        hashed += up[ln - 1] * np.uint32(ord("{") - ord(","))
    out: np.ndarray[Any, np.dtype[np.uint32]] = hashed.astype(np.uint32, copy=False)
    return out


_TIMER_ID_MEMBER = b'{"_nextTimerId":'
_STRIPPED_TOP = frozenset({"sessionId", "_nextActorIds", "agentMeta"})
_ALIKE_COUNT = 512
"""Snapshots :func:`state_hashes` takes at a time."""
_ALIKE_LIMIT = _MANY_BYTES // _ALIKE_COUNT
"""A snapshot this large or larger makes its chunk take the one-by-one way (bounded buffers)."""


def _alike_snapshots(
    snapshots: Sequence[Any],
) -> tuple[bytes, np.ndarray[Any, np.dtype[np.int64]], np.ndarray[Any, np.dtype[np.int64]], bool] | None:
    """The common case of :func:`state_hashes`, without per-snapshot branches: plain ``dict``
    snapshots with no child actors and no top-level ``sessionId``/``_nextActorIds``/``agentMeta``,
    each either without ``_nextTimerId`` or with an ``int`` one that sorts first (no other key
    sorts before it) and is not the only member. Returns ``(data, starts, lens, braced)`` for
    :func:`_djb2_ascii_many`: the orjson bytes joined by NUL, where each snapshot's hashed text
    starts (past a ``_nextTimerId`` member, at the comma read as ``{``), its length, and whether
    it is braced; ``None`` when the chunk is not that case."""
    if not snapshots or set(map(type, snapshots)) != {dict}:
        return None
    keys: set[Any] = set().union(*snapshots)
    if set(map(type, keys)) != {str} or keys & _STRIPPED_TOP or any(p.get("children") for p in snapshots):
        return None
    timed = "_nextTimerId" in keys
    ids: list[Any] = []
    if timed:
        if min(keys - {"_nextTimerId"}, default="\uffff") < "_nextTimerId" or min(map(len, snapshots)) < 2:
            return None
        ids = [p.get("_nextTimerId") for p in snapshots]
        if set(map(type, ids)) != {int}:
            return None
    try:
        parts = [orjson.dumps(p, option=_FAST_OPTIONS) for p in snapshots]
    except (orjson.JSONEncodeError, TypeError):
        return None
    lens = np.fromiter(map(len, parts), dtype=np.int64, count=len(parts))
    if int(lens.max()) >= _ALIKE_LIMIT:
        return None
    starts = np.zeros(len(parts), dtype=np.int64)
    np.cumsum(lens[:-1] + 1, out=starts[1:])
    if timed:
        # '{"_nextTimerId":' + the int's decimal text: the comma after it is where the text starts
        distinct = set(ids)
        if len(distinct) == 1:  # the usual chunk: no timer created in it, one id throughout
            skip = np.full(len(ids), len(str(distinct.pop())) + len(_TIMER_ID_MEMBER), dtype=np.int64)
        else:
            skip = np.fromiter(map(len, map(str, ids)), dtype=np.int64, count=len(ids))
            skip += len(_TIMER_ID_MEMBER)
        starts += skip
        lens -= skip
    return b"\x00".join(parts), starts, lens, timed


def state_hashes(snapshots: Sequence[Any]) -> np.ndarray[Any, np.dtype[np.uint32]]:
    """``state_hash`` of every persisted snapshot in ``snapshots``, as ``uint32`` (spec §2).

    The same values as ``[int(state_hash(p), 16) for p in snapshots]``, computed in bulk, up to
    :data:`_ALIKE_COUNT` snapshots at a time: each snapshot's fast canonical bytes (see
    :func:`fast_canonical_snapshot_bytes`) go into one NUL-separated buffer, the guard runs once
    over the buffer, and djb2 runs vectorised over it (:func:`_djb2_ascii_many`). Alike snapshots
    (:func:`_alike_snapshots`) skip the per-snapshot stripping. A buffer the guard fires on, a
    snapshot the fast path refuses and a large one are hashed exactly, one by one.
    """
    out = np.empty(len(snapshots), dtype=np.uint32)
    for lo in range(0, len(snapshots), _ALIKE_COUNT):
        part = snapshots[lo : lo + _ALIKE_COUNT]
        out[lo : lo + len(part)] = _state_hashes_of(part)
    return out


def _state_hashes_of(snapshots: Sequence[Any]) -> np.ndarray[Any, np.dtype[np.uint32]]:
    """:func:`state_hashes` of at most :data:`_ALIKE_COUNT` snapshots."""
    out = np.empty(len(snapshots), dtype=np.uint32)
    alike = _alike_snapshots(snapshots)
    if alike is not None:
        data, first, sizes, timed = alike
        if not _guard_hit(data) and data.isascii():
            out[:] = _djb2_ascii_many(data, first, sizes, timed)
            return out
    buf = bytearray()
    starts: list[int] = []
    where: list[int] = []

    def flush() -> None:
        nonlocal buf
        if not where:
            return
        if not _guard_hit(buf) and buf.isascii():
            ends = [*starts[1:], len(buf)]
            out[where] = _djb2_ascii_many(buf, starts, [e - s - 1 for s, e in zip(starts, ends, strict=True)])
        else:
            for k in where:
                out[k] = int(state_hash(snapshots[k]), 16)
        # A new buffer, never the old one resized: numpy read the old one through an export that
        # lives as long as anything holds that frame (a traceback, a sampling profiler's stack
        # walk, e.g. a Dask worker's), and a bytearray with a live export cannot be resized.
        buf = bytearray()
        starts.clear()
        where.clear()

    for j, p in enumerate(snapshots):
        b = _fast_unguarded(p)
        if b is None or len(b) > _MANY_BYTES:
            out[j] = int(state_hash(p), 16)
            continue
        if len(buf) + len(b) >= _MANY_BYTES:
            flush()
        starts.append(len(buf))
        buf += b
        buf.append(0)  # NUL: in no guard pattern and never raw in JSON text, so no match spans two
        where.append(j)
    flush()
    return out


# ---------------------------------------------------------------------------------------------
# Machine structural version (spec §3)


def structural_string(config: Any) -> str:
    """Return the structural string of a machine config (spec §3), the input of its version hash.

    Unlike :func:`canonical_json`: keys are in plain UTF-16 order (no index keys first),
    non-finite numbers print as ``NaN``/``Infinity``, callables are skipped as object members and
    written as nothing inside arrays, and an object met again on its own ancestor path is
    ``"[circular]"``. Pure.
    """
    out: list[str] = []
    path: list[int] = []

    def walk(v: Any) -> None:
        if v is None:
            out.append("null")
        elif v is True:
            out.append("true")
        elif v is False:
            out.append("false")
        elif isinstance(v, str):
            out.append(js_string(v))
        elif isinstance(v, (int, float)):
            out.append(js_number(v, nonfinite="literal"))
        elif isinstance(v, Mapping):
            if id(v) in path:
                out.append('"[circular]"')
                return
            path.append(id(v))
            out.append("{")
            first = True
            members = _string_keyed(v)
            for k in _utf16_sorted(list(members)):
                item = members[k]
                if callable(item):
                    continue
                if not first:
                    out.append(",")
                first = False
                out.append(js_string(k))
                out.append(":")
                walk(item)
            out.append("}")
            path.pop()
        elif isinstance(v, (list, tuple)):
            if id(v) in path:
                out.append('"[circular]"')
                return
            path.append(id(v))
            out.append("[")
            for i, item in enumerate(v):
                if i:
                    out.append(",")
                if not callable(item):
                    walk(item)
            out.append("]")
            path.pop()
        elif callable(v):
            return
        else:
            raise TypeError(f"structural string: unsupported value of type {type(v).__name__}")

    walk(config)
    return "".join(out)


def machine_version(config: Mapping[str, Any]) -> str:
    """Return a machine's ``machineVersion`` (spec §3): its declared ``version``, else the
    structural hash ``djb2Hex(structural_string(config))`` of the config dict. Pure.

    Callables in the config (guards, actions, function transitions) are invisible to the
    structural hash, exactly as function values are to the reference's serializer.
    """
    declared = config.get("version")
    if declared is not None:
        return str(declared)
    return djb2_hex(structural_string(config))

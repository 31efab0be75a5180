"""Structural JSON diff with RFC 6901 JSON-Pointer paths (private helper of :mod:`agentscope.forks`).

The rule follows the legacy ``diffJson`` of spec §6.2 with two deliberate refinements for a
debugger: arrays are not replaced whole but compared after trimming their equal head and tail
(so one item added to or taken from a queue is one change at ``/queue/<i>``, the rest paired
index by index), and a change records both sides' values. Keys
are visited in plain UTF-16 code-unit order, as ``diffJson`` does. Equality is JSON equality as
JavaScript sees it after ``JSON.parse``: ``1`` equals ``1.0``, but ``true`` never equals ``1``.
Pure functions.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal, NamedTuple

__all__ = ["MISSING", "Change", "diff_json", "json_equal", "pointer_escape", "pointer_join"]


class _Missing:
    """Sentinel for "this side has no value at this path" (distinct from JSON ``null``)."""

    _instance: _Missing | None = None

    def __new__(cls) -> _Missing:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "MISSING"

    def __bool__(self) -> bool:
        return False

    def __reduce__(self) -> str:
        return "MISSING"


MISSING: Any = _Missing()
"""The value of :attr:`Change.left` / :attr:`Change.right` when that side lacks the path."""

ChangeOp = Literal["add", "remove", "replace"]


class Change(NamedTuple):
    """One difference between two JSON values: ``(path, left, right)``.

    ``path`` is an RFC 6901 JSON Pointer (``""`` is the root, ``"/context/queue/0/id"``; ``~`` is
    written ``~0`` and ``/`` is written ``~1`` inside a key). ``left``/``right`` are the values on
    each side, :data:`MISSING` when that side has no such member.
    """

    path: str
    left: Any
    right: Any

    @property
    def op(self) -> ChangeOp:
        """``"add"`` (only right has it), ``"remove"`` (only left has it) or ``"replace"``."""
        if self.left is MISSING:
            return "add"
        if self.right is MISSING:
            return "remove"
        return "replace"


def pointer_escape(key: str) -> str:
    """Return ``key`` escaped for a JSON Pointer token (RFC 6901 §3): ``~``→``~0``, ``/``→``~1``."""
    return key.replace("~", "~0").replace("/", "~1")


def pointer_join(path: str, key: str | int) -> str:
    """Return the pointer of member ``key`` under ``path``."""
    return f"{path}/{pointer_escape(str(key))}"


def _utf16_key(key: str) -> bytes:
    return key.encode("utf-16-be", "surrogatepass")


def _is_number(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool)


def json_equal(a: Any, b: Any) -> bool:
    """Return whether two JSON values are equal as JavaScript values (key order ignored).

    Numbers compare by value (``1 == 1.0``); booleans are never numbers; ``null`` only equals
    ``null``; tuples count as arrays. Pure.
    """
    if a is b:
        return True
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if _is_number(a) or _is_number(b):
        return _is_number(a) and _is_number(b) and float(a) == float(b)
    if isinstance(a, str) or isinstance(b, str):
        return isinstance(a, str) and isinstance(b, str) and a == b
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        if len(a) != len(b):
            return False
        return all(k in b and json_equal(v, b[k]) for k, v in a.items())
    if _is_array(a) and _is_array(b):
        return len(a) == len(b) and all(json_equal(x, y) for x, y in zip(a, b, strict=True))
    return bool(a is None and b is None)


def _is_array(v: Any) -> bool:
    return isinstance(v, list | tuple)


def diff_json(left: Any, right: Any, path: str = "") -> list[Change]:
    """Return the changes that turn ``left`` into ``right``, in document (UTF-16 key) order.

    Parameters
    ----------
    left, right : JSON value
        Either may be :data:`MISSING` (the whole value is absent on that side).
    path : str
        JSON Pointer prefix for the returned paths (``""`` for the root).

    Returns
    -------
    list[Change]
        Empty when the values are JSON-equal. Objects recurse per member; arrays trim their
        equal head and tail, pair the rest by index and report the surplus as removals (left
        index) or insertions (right index); anything else (a type change, a scalar change) is
        one change at ``path``.
    """
    out: list[Change] = []
    _diff(left, right, path, out)
    return out


def _diff(left: Any, right: Any, path: str, out: list[Change]) -> None:
    if left is MISSING or right is MISSING:
        if not (left is MISSING and right is MISSING):
            out.append(Change(path, left, right))
        return
    if json_equal(left, right):
        return
    if isinstance(left, Mapping) and isinstance(right, Mapping):
        keys = sorted(set(left) | set(right), key=lambda k: _utf16_key(str(k)))
        for k in keys:
            _diff(left.get(k, MISSING), right.get(k, MISSING), pointer_join(path, k), out)
        return
    if _is_array(left) and _is_array(right):
        _diff_arrays(left, right, path, out)
        return
    out.append(Change(path, left, right))


def _diff_arrays(la: Sequence[Any], ra: Sequence[Any], path: str, out: list[Change]) -> None:
    """Trim the equal head and tail, then pair the middles index by index.

    Paired elements share an index (the head is common), so their path resolves on both sides.
    Extra elements of the longer middle are removals at their left index or insertions at their
    right index: a queue that lost its first item reads as one removal at ``/queue/0``.
    """
    n_l, n_r = len(la), len(ra)
    head = 0
    while head < min(n_l, n_r) and json_equal(la[head], ra[head]):
        head += 1
    tail = 0
    while tail < min(n_l, n_r) - head and json_equal(la[n_l - 1 - tail], ra[n_r - 1 - tail]):
        tail += 1
    mid_l, mid_r = n_l - head - tail, n_r - head - tail
    paired = min(mid_l, mid_r)
    for k in range(head, head + paired):
        _diff(la[k], ra[k], pointer_join(path, k), out)
    for k in range(head + paired, head + mid_l):
        out.append(Change(pointer_join(path, k), la[k], MISSING))
    for k in range(head + paired, head + mid_r):
        out.append(Change(pointer_join(path, k), MISSING, ra[k]))

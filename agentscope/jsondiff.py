"""The one JSON-diff module: comparing, patching and addressing JSON values (RFC 6901 pointers).

- :func:`diff_json` — the *semantic* diff a person reads, the one definition of where two JSON
  values differ: :mod:`agentscope.forks` (spec §6.2), what-if, the fork views' differing paths
  (:func:`differing_paths`, ``ForkView.diff_paths``, the fork player's count and table,
  ``agentscope diff``) and the static player's context patches (:func:`json_patch`, RFC 6902)
  are all computed by it, and so is :func:`changed_paths`, the pointers a step changed
  (``Frame.changed_paths``, ``Step.changed_paths``, the players' highlighted rows);
- :func:`delta` / :func:`apply_delta` — not a diff a person reads but the snapshot store's
  *encoding* (:mod:`agentscope.pipeline.snapshots`): exact ops that rebuild the next persisted
  snapshot byte for byte, key order included, which a semantic diff deliberately ignores;
- :func:`resolve_pointer` — read a value by pointer.

The semantic diff:

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

import orjson

__all__ = [
    "ABSENT",
    "MISSING",
    "Change",
    "Op",
    "apply_delta",
    "changed_paths",
    "delta",
    "diff_json",
    "differing_paths",
    "json_equal",
    "json_patch",
    "pointer_escape",
    "pointer_join",
    "resolve_pointer",
]


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
    stack = [(a, b)]  # an explicit stack: values nested any depth compare without recursion
    while stack:
        x, y = stack.pop()
        if x is y:
            continue
        if isinstance(x, bool) or isinstance(y, bool):
            if not (isinstance(x, bool) and isinstance(y, bool) and x == y):
                return False
        elif _is_number(x) or _is_number(y):
            if not (_is_number(x) and _is_number(y) and float(x) == float(y)):
                return False
        elif isinstance(x, str) or isinstance(y, str):
            if not (isinstance(x, str) and isinstance(y, str) and x == y):
                return False
        elif isinstance(x, Mapping) and isinstance(y, Mapping):
            if len(x) != len(y) or any(k not in y for k in x):
                return False
            stack.extend((v, y[k]) for k, v in x.items())
        elif _is_array(x) and _is_array(y):
            if len(x) != len(y):
                return False
            stack.extend(zip(x, y, strict=True))
        elif not (x is None and y is None):
            return False
    return True


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
    _diff(left, right, path, out, 0)
    return out


MAX_DIFF_DEPTH = 64
"""Nesting below which :func:`diff_json` stops descending: two different values deeper than this
are one change at their path (the diff of any depth of nesting is bounded, never a
``RecursionError``)."""


def differing_paths(left: Any, right: Any, base: str = "/context") -> list[str]:
    """The JSON Pointers (under ``base``) where two values differ: the paths of :func:`diff_json`.

    The one definition of a "differing context path": the fork player counts them at a step
    (:class:`agentscope.widgets.ForkView`) and ``agentscope diff`` lists them at the divergence,
    so both give the same paths for the same pair of states (an element inserted at the head of
    an array is one path, not one per shifted element).
    """
    return [c.path for c in diff_json(left, right, base)]


def json_patch(left: Any, right: Any) -> list[dict[str, Any]]:
    """The RFC 6902 JSON Patch that turns ``left`` into ``right``: :func:`diff_json`'s changes as
    operations applied in order (``add``/``replace`` in document order, then the ``remove``
    operations from the last to the first, so array indices hold as they are applied).

    Returns ``[]`` for JSON-equal values; ``[{"op": "replace", "path": "", "value": right}]``
    when the root itself changes. The static player sends these between its keyframes.
    """
    changes = diff_json(left, right)
    ops: list[dict[str, Any]] = [
        {"op": c.op, "path": c.path, "value": c.right} for c in changes if c.right is not MISSING
    ]
    ops.extend({"op": "remove", "path": c.path} for c in reversed(changes) if c.right is MISSING)
    return ops


_SORTED = orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS


def _fast_equal(a: Any, b: Any) -> bool:
    """A cheap test that accepts only JSON-equal values (``False`` may still be equal): Python's
    ``==`` (C speed) confirmed by the canonical bytes, which tell ``true`` from ``1``, where
    Python's ``==`` does not."""
    if type(a) is not type(b) or not isinstance(a, dict | list):
        return False
    try:
        if a != b:
            return False
        return orjson.dumps(a, option=_SORTED) == orjson.dumps(b, option=_SORTED)
    except (TypeError, RecursionError, orjson.JSONEncodeError):  # lone surrogates, huge ints,
        return json_equal(a, b)  # deep nesting: the exact way (iterative)


def _diff(left: Any, right: Any, path: str, out: list[Change], depth: int) -> None:
    if left is MISSING or right is MISSING:
        if not (left is MISSING and right is MISSING):
            out.append(Change(path, left, right))
        return
    if left is right or _fast_equal(left, right):
        return
    both_objects = isinstance(left, Mapping) and isinstance(right, Mapping)
    both_arrays = not both_objects and _is_array(left) and _is_array(right)
    if depth >= MAX_DIFF_DEPTH or not (both_objects or both_arrays):
        if not _equal(left, right):  # a leaf, a type change, or too deep to descend
            out.append(Change(path, left, right))
        return
    if both_objects:  # each member compared once, on the way down (no equality pre-pass)
        differ = [k for k, lv in left.items() if (rv := right.get(k, MISSING)) is not lv
                  and not _same_scalar(lv, rv) and not _fast_equal(lv, rv)]
        differ.extend(k for k in right if k not in left)
        for k in sorted(differ, key=lambda k: _utf16_key(str(k))):  # document (UTF-16) order
            _diff(left.get(k, MISSING), right.get(k, MISSING), pointer_join(path, k), out, depth + 1)
        return
    _diff_arrays(left, right, path, out, depth)


_SCALARS = (str, int, float, bool)


def _same_scalar(a: Any, b: Any) -> bool:
    """Two equal scalars of one type (the common case, decided without :func:`json_equal`)."""
    return type(a) is type(b) and type(a) in _SCALARS and a == b


def _equal(a: Any, b: Any) -> bool:
    """:func:`json_equal`, with the cheap accepts first."""
    return a is b or _same_scalar(a, b) or _fast_equal(a, b) or json_equal(a, b)


def _diff_arrays(la: Sequence[Any], ra: Sequence[Any], path: str, out: list[Change], depth: int) -> None:
    """Trim the equal head and tail, then pair the middles index by index.

    Paired elements share an index (the head is common), so their path resolves on both sides.
    Extra elements of the longer middle are removals at their left index or insertions at their
    right index: a queue that lost its first item reads as one removal at ``/queue/0``.
    """
    n_l, n_r = len(la), len(ra)
    head = 0
    while head < min(n_l, n_r) and _equal(la[head], ra[head]):
        head += 1
    tail = 0
    while tail < min(n_l, n_r) - head and _equal(la[n_l - 1 - tail], ra[n_r - 1 - tail]):
        tail += 1
    mid_l, mid_r = n_l - head - tail, n_r - head - tail
    paired = min(mid_l, mid_r)
    for k in range(head, head + paired):
        _diff(la[k], ra[k], pointer_join(path, k), out, depth + 1)
    for k in range(head + paired, head + mid_l):
        out.append(Change(pointer_join(path, k), la[k], MISSING))
    for k in range(head + paired, head + mid_r):
        out.append(Change(pointer_join(path, k), MISSING, ra[k]))


# ---------------------------------------------------------------------------------------------
# Storage deltas: exact, key-order preserving, cheap (the snapshot store, changed paths)

# an op: (path, kind, value); kind "s" set key/index, "d" delete key, "x" extend list, "t" truncate
Op = tuple[tuple[Any, ...], str, Any]


def _delta(a: Any, b: Any, path: tuple[Any, ...], out: list[Op]) -> None:
    if isinstance(a, dict) and isinstance(b, dict):
        ka, kb = list(a), list(b)
        if ka == kb:
            for k in kb:
                va, vb = a[k], b[k]
                if va is not vb and (type(va) is not type(vb) or va != vb):
                    _delta(va, vb, (*path, k), out)
            return
        kept = [k for k in ka if k in b]
        added = [k for k in kb if k not in a]
        if kept + added != kb:  # key order changed: replace the whole object
            out.append((path, "=", b))
            return
        for k in ka:
            if k not in b:
                out.append(((*path, k), "d", None))
        for k in kept:
            va, vb = a[k], b[k]
            if va is not vb and (type(va) is not type(vb) or va != vb):
                _delta(va, vb, (*path, k), out)
        for k in added:
            out.append(((*path, k), "s", b[k]))
        return
    if isinstance(a, list) and isinstance(b, list):
        na, nb = len(a), len(b)
        if nb > na and b[:na] == a:
            out.append((path, "x", b[na:]))
            return
        if nb < na and a[:nb] == b:
            out.append((path, "t", nb))
            return
        if na == nb:
            changed = [i for i in range(na) if type(a[i]) is not type(b[i]) or a[i] != b[i]]
            if len(changed) * 2 <= na:
                for i in changed:
                    _delta(a[i], b[i], (*path, i), out)
                return
    out.append((path, "=", b))


def delta(before: Mapping[str, Any], after: Mapping[str, Any]) -> list[Op]:
    """The ops that turn ``before`` into ``after`` (both JSON values; ``[]`` when equal).

    Exact for key order: objects whose keys keep their relative order get per-key ops, any other
    reordering replaces the object. Arrays that grew or shrank at the end get one extend/truncate
    op; other arrays change element-wise when at most half of them changed, else whole.
    """
    out: list[Op] = []
    if before is not after and (type(before) is not type(after) or before != after):
        _delta(before, after, (), out)
    return out


def _copy(x: Any) -> Any:
    return dict(x) if isinstance(x, dict) else list(x)


def apply_delta(doc: Any, ops: list[Op], *, in_place: bool = False) -> Any:
    """Apply :func:`delta` ops to ``doc`` and return the result.

    With ``in_place=False`` (the default) ``doc`` is left alone: the containers along each changed
    path are copied (shallowly) and everything else is shared with ``doc``, so the result costs
    O(changed paths), not O(size). Treat both as read-only.
    """
    copied: set[int] = set()

    def own(x: Any) -> Any:
        if in_place or id(x) in copied:
            return x
        y = _copy(x)
        copied.add(id(y))
        return y

    for path, kind, value in ops:
        if not path and kind == "=":
            doc = value
            if not in_place:
                copied.clear()
            continue
        root = own(doc)
        doc = root
        cur = root
        steps = path if kind in ("x", "t") else path[:-1]
        for k in steps:
            child = own(cur[k])
            cur[k] = child
            cur = child
        if kind == "x":
            cur.extend(value)
        elif kind == "t":
            del cur[value:]
        elif kind == "d":
            del cur[path[-1]]
        else:  # "s" or "=" below the root
            cur[path[-1]] = value
    return doc



_VOLATILE_TOP = frozenset({"_nextTimerId", "_nextActorIds", "sessionId", "agentMeta"})
ABSENT: Any = object()
"""What :func:`resolve_pointer` returns for a path the document does not have."""


def _project(p: Mapping[str, Any] | None) -> dict[str, Any]:
    if p is None:
        return {}
    return {k: v for k, v in p.items() if k not in _VOLATILE_TOP}


def changed_paths(
    before: Mapping[str, Any] | None, after: Mapping[str, Any] | None
) -> tuple[str, ...]:
    """JSON Pointer paths (RFC 6901) that differ between two persisted snapshots: the paths of
    :func:`diff_json` (the one definition of a differing path), in document order.

    A member only one side has is one path; an item added to or taken from the head or the end
    of an array is one path (``/context/queue/0``), not one per shifted item. The snapshots'
    volatile bookkeeping keys (``_nextTimerId``, ``_nextActorIds``, ``sessionId``,
    ``agentMeta``) are left out, so the paths are under ``/value``, ``/context``,
    ``/children``, ``/timers``, ``/status``, ``/output``, ``/error``, ``/historyValue``.
    ``before=None`` (a segment's first step) lists every top-level member.
    """
    return tuple(c.path for c in diff_json(_project(before), _project(after)))


def resolve_pointer(doc: Any, pointer: str) -> Any:
    """Resolve an RFC 6901 JSON Pointer in ``doc``; return a private sentinel when absent.

    Raises ``ValueError`` for a pointer that is neither ``""`` nor starts with ``"/"``.
    """
    if pointer == "":
        return doc
    if not pointer.startswith("/"):
        raise ValueError(f"a JSON Pointer starts with '/': got {pointer!r} (try '/context/…')")
    cur = doc
    for raw in pointer[1:].split("/"):
        tok = raw.replace("~1", "/").replace("~0", "~")
        if isinstance(cur, Mapping):
            if tok not in cur:
                return ABSENT
            cur = cur[tok]
        elif isinstance(cur, list):
            if not tok.isdigit() or int(tok) >= len(cur) or (tok != "0" and tok[0] == "0"):
                return ABSENT
            cur = cur[int(tok)]
        else:
            return ABSENT
    return cur

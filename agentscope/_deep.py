"""Deeply nested JSON values: the documented depth limit and a big-stack retry for recursive code.

``JSON.parse``/``JSON.stringify`` in V8 nest as deep as memory allows; CPython's ``json``,
orjson (1,024 levels to parse, 255 to write) and every recursive walk in this package stop far
earlier. agentscope's contract (spec §2, issue 11): any value nested up to :data:`MAX_DEPTH`
levels reads, hashes, crosses the Node pipe, compares and renders; deeper values get a typed
error that names the limit.

Strategy (measured: a 2,000-deep array parses, hashes and writes in a few ms): the fast code paths
stay recursive and run as they are; when one raises :class:`RecursionError`, :func:`call_deep`
runs the same pure function again on a worker thread with a large C stack and a recursion limit
sized for :data:`MAX_DEPTH`. Nothing else changes for the common, shallow case.

Bottom of the import graph: no agentscope imports.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable
from typing import Any, TypeVar

__all__ = [
    "MAX_DEPTH",
    "DepthLimitError",
    "call_deep",
    "call_deep_checked",
    "json_depth_path",
    "short_pointer",
]

MAX_DEPTH = 10_000
"""Deepest array/object nesting agentscope handles (levels; the root container is level 1)."""

_STACK_BYTES = 512 * 1024 * 1024
"""C stack of the worker thread: about 10x what ``json``, ``orjson`` and our walks need at
:data:`MAX_DEPTH` (reserved address space; only the pages touched are used)."""

_RECURSION_LIMIT = 8 * MAX_DEPTH + 2_000
"""Python frames allowed on the worker: several frames per level (a walk plus its helpers)."""

_lock = threading.Lock()
T = TypeVar("T")


class DepthLimitError(RecursionError):
    """A value nested deeper than :data:`MAX_DEPTH` (a :class:`RecursionError`, so callers that
    already treat "too deep" errors keep working). ``pointer`` is the JSON Pointer of the first
    container past the limit, when known."""

    def __init__(self, message: str, pointer: str | None = None) -> None:
        super().__init__(message)
        self.pointer = pointer


def call_deep(fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """Return ``fn(*args, **kwargs)``, retried on a big-stack thread if it hits the recursion limit.

    ``fn`` must be pure (it may run twice). Raises :class:`DepthLimitError` when even the worker
    (sized for :data:`MAX_DEPTH` levels) runs out of depth; any other exception of ``fn`` is
    re-raised as is.
    """
    try:
        return fn(*args, **kwargs)
    except RecursionError as exc:
        if isinstance(exc, DepthLimitError):
            raise
    return _on_big_stack(fn, args, kwargs)


def call_deep_checked(
    what: str, value: Any, fn: Callable[..., T], *args: Any, allowance: int = 0
) -> T:
    """Return ``fn(value, *args)``, retried on a big stack only if ``value`` is within the limit.

    For walks over a parsed JSON ``value``: on :class:`RecursionError`, a ``value`` nested deeper
    than :data:`MAX_DEPTH` (+ ``allowance`` levels of envelope around the user's value, e.g. a
    protocol message) raises :class:`DepthLimitError` naming ``what`` and the JSON Pointer of
    the first container past the limit (abbreviated past 120 characters); otherwise ``fn`` runs
    again on the big stack.
    """
    try:
        return fn(value, *args)
    except RecursionError as exc:
        if isinstance(exc, DepthLimitError):
            raise
    where = json_depth_path(value, MAX_DEPTH + allowance)
    if where is not None:
        raise DepthLimitError(
            f"{what}: a value nested deeper than agentscope's limit of {MAX_DEPTH:,} levels "
            f"(at {short_pointer(where)!r})",
            where,
        )
    return _on_big_stack(fn, (value, *args), {})


def short_pointer(pointer: str, keep: int = 120) -> str:
    """``pointer`` itself, or for a long one its head and tail around ``…`` with the level count."""
    if len(pointer) <= keep:
        return pointer
    levels = pointer.count("/")
    return f"{pointer[: keep // 2]}/…({levels:,} levels)…{pointer[-keep // 3 :]}"


def _on_big_stack(fn: Callable[..., T], args: tuple[Any, ...], kwargs: dict[str, Any]) -> T:
    box: dict[str, Any] = {}

    def run() -> None:
        try:
            box["value"] = fn(*args, **kwargs)
        except RecursionError as exc:
            box["error"] = DepthLimitError(
                f"nested deeper than agentscope's limit of {MAX_DEPTH:,} levels ({exc})"
            )
        except BaseException as exc:  # re-raised in the caller's thread
            box["error"] = exc

    with _lock:  # stack_size and the recursion limit are process-wide settings
        old_limit = sys.getrecursionlimit()
        old_size = threading.stack_size()
        try:
            sys.setrecursionlimit(max(old_limit, _RECURSION_LIMIT))
            worker = _start_worker(run)
        finally:
            threading.stack_size(old_size)
        try:
            worker.join()
        finally:
            sys.setrecursionlimit(old_limit)
    if "error" in box:
        raise box["error"]
    return box["value"]  # type: ignore[no-any-return]


def _start_worker(run: Callable[[], None]) -> threading.Thread:
    """Start ``run`` on a thread with the big stack (a smaller one if the OS refuses it)."""
    for size in (_STACK_BYTES, _STACK_BYTES // 4):
        try:
            threading.stack_size(size)
            worker = threading.Thread(target=run, name="agentscope-deep", daemon=True)
            worker.start()
            return worker
        except (RuntimeError, MemoryError, ValueError):
            continue
    raise DepthLimitError("cannot start a thread with a large stack for a deeply nested value")


def json_depth_path(value: Any, limit: int = MAX_DEPTH) -> str | None:
    """Return the JSON Pointer of the first container nested deeper than ``limit``, else ``None``.

    Iterative (never recursive), over ``dict``/``list``/``tuple``; the root container has depth 1.
    """
    stack: list[tuple[Any, str, int]] = [(value, "", 1)]
    while stack:
        v, path, depth = stack.pop()
        if isinstance(v, dict):
            items: Any = v.items()
        elif isinstance(v, (list, tuple)):
            items = enumerate(v)
        else:
            continue
        if depth > limit:
            return path
        for k, child in items:
            if isinstance(child, (dict, list, tuple)):
                key = str(k).replace("~", "~0").replace("/", "~1")
                stack.append((child, f"{path}/{key}", depth + 1))
    return None

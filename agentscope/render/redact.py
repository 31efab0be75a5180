"""Redaction for shared views: replace values at listed paths with a marker before they are written.

A path is a JSON Pointer (``/event/tickets/*/subject``, RFC 6901 escapes ``~0``/``~1``) or dotted
(``event.email``); ``*`` stands for any key or index. Paths address either the log entry
(``/event/…``, ``/id``, ``/causationId``) or the persisted snapshot (``/context/…``,
``/children/*/snapshot/input/subject``); each path is applied to both, a path that does not match
changes nothing. Hashes and verdicts are never recomputed from redacted data: a view shows what the
original verified to.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

__all__ = ["REDACTED", "RedactionPath", "parse_path", "redact"]

REDACTED = "[redacted]"
"""The marker written in place of a redacted value."""

RedactionPath = tuple[str, ...]


def parse_path(path: str) -> RedactionPath:
    """Return the segments of a JSON Pointer (leading ``/``) or dotted path (``*`` kept as is).

    Raises
    ------
    ValueError
        For an empty path (redacting the whole document is not a path).
    """
    if path.startswith("/"):
        parts = [p.replace("~1", "/").replace("~0", "~") for p in path[1:].split("/")]
    else:
        parts = path.split(".")
    if not path or not any(parts):
        raise ValueError(
            f"redaction path {path!r} names no value (use e.g. /context/customer or event.email)"
        )
    return tuple(parts)


def _apply(value: Any, parts: Sequence[str], marker: str) -> tuple[Any, bool]:
    if not parts:
        return marker, True
    head, rest = parts[0], parts[1:]
    if isinstance(value, Mapping):
        keys = list(value.keys()) if head == "*" else ([head] if head in value else [])
        if not keys:
            return value, False
        out = dict(value)
        hit = False
        for k in keys:
            out[k], h = _apply(value[k], rest, marker)
            hit = hit or h
        return (out, True) if hit else (value, False)
    if isinstance(value, list | tuple):
        if head == "*":
            idx = range(len(value))
        elif head.isdigit() and int(head) < len(value):
            idx = range(int(head), int(head) + 1)
        else:
            return value, False
        items = list(value)
        hit = False
        for i in idx:
            items[i], h = _apply(value[i], rest, marker)
            hit = hit or h
        return (items, True) if hit else (value, False)
    return value, False


def redact(doc: Any, paths: Iterable[RedactionPath | str], marker: str = REDACTED) -> Any:
    """Return ``doc`` with the value at every matching path replaced by ``marker`` (a copy;
    ``doc`` itself is not changed; unmatched paths are ignored)."""
    for p in paths:
        parts = parse_path(p) if isinstance(p, str) else p
        doc, _ = _apply(doc, parts, marker)
    return doc

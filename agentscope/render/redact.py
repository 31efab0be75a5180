"""Redaction for shared views: one redacted copy of the data, made before any view reads it.

A path is a JSON Pointer (``/event/tickets/*/subject``, RFC 6901 escapes ``~0``/``~1``) or dotted
(``event.email``); ``*`` stands for any key or index. Paths address either the log entry
(``/event/…``, ``/id``, ``/causationId``, ``/recordedAt``, ``/metadata``) or the persisted snapshot
(``/context/…``, ``/children/*/snapshot/input/subject``, whole sections such as ``/children``,
``/timers``, ``/output``, ``/error``); each path is applied to both, and a path that matches
nothing changes nothing. The value at a matching path is replaced by :data:`REDACTED`, with
everything under it: the keys of a redacted object are gone with it. A ``*`` selects the members
of an object without hiding their keys (``/context/byEmail/*`` hides the records but shows the
addresses they are keyed by; ``/context/byEmail`` hides both).

:class:`Redaction` produces the redacted inputs every view reads, so nothing is redacted twice or
forgotten once: entries, persisted snapshots, whole :class:`~agentscope.frames.Frame` objects (their
changed paths cut at the redacted member, their explanation scrubbed of the hidden text) and a
frame source (:meth:`Redaction.source`) that the static players read instead of the timeline.
Hashes and verdicts are never recomputed from redacted data: a view shows what the original
verified to.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from agentscope.hashing import js_number
from agentscope.log.entry import recorded_at_ms

if TYPE_CHECKING:
    from agentscope.frames import Frame

__all__ = ["REDACTED", "Redaction", "RedactionPath", "parse_path", "redact"]

REDACTED = "[redacted]"
"""The marker written in place of a redacted value."""

RedactionPath = tuple[str, ...]

_EVENT: RedactionPath = ("event",)


def parse_path(path: str) -> RedactionPath:
    """Return the segments of a JSON Pointer (leading ``/``) or dotted path (``*`` kept as is).

    Raises
    ------
    ValueError
        For an empty path (redacting the whole document is not a path) or one that is not text.
    """
    if not isinstance(path, str):
        raise ValueError(f"redaction path {path!r} is not a string (use e.g. /context/customer)")
    if path.startswith("/"):
        parts = [p.replace("~1", "/").replace("~0", "~") for p in path[1:].split("/")]
    else:
        parts = path.split(".")
    if not path or not any(parts):
        raise ValueError(
            f"redaction path {path!r} names no value (use e.g. /context/customer or event.email)"
        )
    return tuple(parts)


_ARRAY_INDEX = re.compile(r"(?:0|[1-9][0-9]*)\Z")
"""An array index of a JSON Pointer (RFC 6901 §4: ASCII digits, no leading zero)."""


def _index(segment: str, length: int) -> int | None:
    """``segment`` as an index into an array of ``length`` items, or ``None`` (not an index:
    ``01``, ``-``, ``²``, ``٣``; or past the end)."""
    if not _ARRAY_INDEX.match(segment):
        return None
    at = int(segment)
    return at if at < length else None


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
        elif (at := _index(head, len(value))) is not None:
            idx = range(at, at + 1)
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


def _hidden(value: Any, parts: Sequence[str], out: set[str]) -> None:
    """Add to ``out`` every key and scalar (as text) that redacting ``parts`` removes from ``value``."""
    if not parts:
        stack = [value]
        while stack:
            v = stack.pop()
            if isinstance(v, Mapping):
                out.update(str(k) for k in v)
                stack.extend(v.values())
            elif isinstance(v, list | tuple):
                stack.extend(v)
            elif isinstance(v, float | int) and not isinstance(v, bool):
                out.update((str(v), js_number(v, nonfinite="literal")))  # Python's and JS's
            elif isinstance(v, str):
                out.add(v)
                out |= _epoch_spellings([v])  # a timestamp is also spelled in epoch ms
            elif v is not None and not isinstance(v, bool):
                out.add(str(v))
        return
    head, rest = parts[0], parts[1:]
    if isinstance(value, Mapping):
        for k in list(value) if head == "*" else ([head] if head in value else []):
            _hidden(value[k], rest, out)
    elif isinstance(value, list | tuple):
        if head == "*":
            for v in value:
                _hidden(v, rest, out)
        elif (at := _index(head, len(value))) is not None:
            _hidden(value[at], rest, out)


def _spellings(h: str) -> set[str]:
    """``h`` raw and as ``repr`` and JSON write it between quotes."""
    return {h, repr(h)[1:-1], json.dumps(h)[1:-1], json.dumps(h, ensure_ascii=False)[1:-1]} - {""}


def _tokens(hidden: Iterable[str]) -> re.Pattern[str] | None:
    """One pattern matching any spelling of any ``hidden`` string as a whole token, longest first
    (``None`` when there is nothing to hide)."""
    forms = sorted({f for h in hidden if h for f in _spellings(h)}, key=lambda f: (-len(f), f))
    if not forms:
        return None
    alts = []
    for f in forms:
        left = r"(?<!\w)(?<!\d\.)" if re.match(r"\w", f) else ""
        right = r"(?!\w)(?!\.\d)" if re.match(r"\w", f[-1]) else ""
        alts.append(left + re.escape(f) + right)
    return re.compile("|".join(alts))


_NUMBER = re.compile(r"(?<![\w.])\d+(?!\w|\.\d)")
"""A whole integer token of free text (as :func:`_tokens` bounds a word)."""


def _moment(text: str) -> int | None:
    """``text`` as epoch ms when it is a full timestamp (``recordedAt``'s form, §1.4)."""
    return recorded_at_ms(text) if len(text) >= 20 and text[4:5] == "-" else None


def _epoch_spellings(hidden: Iterable[str]) -> set[str]:
    """The epoch-ms text of every timestamp among ``hidden``."""
    return {str(ms) for h in hidden if (ms := _moment(h)) is not None}


def _pointer(parts: Sequence[str]) -> str:
    return "".join("/" + p.replace("~", "~0").replace("/", "~1") for p in parts)


class Redaction:
    """Compiled redaction paths: makes the redacted copy that every shared view reads.

    Parameters
    ----------
    paths : Iterable[str] or str
        JSON Pointers or dotted paths (module docstring); one string is one path.

    Raises
    ------
    ValueError
        A path that names no value (``""``, ``"/"``) or is not a string; raised here, before
        any data is read.

    Examples
    --------
    >>> r = Redaction(["/event/email", "/context/byEmail"])
    >>> r.snapshot({"context": {"byEmail": {"a@x.org": 1}, "n": 2}})
    {'context': {'byEmail': '[redacted]', 'n': 2}}
    >>> r.pointer("/context/byEmail/a@x.org/name"), r.pointer("/context/n")
    ('/context/byEmail', '/context/n')
    """

    def __init__(self, paths: Iterable[str] | str = (), marker: str = REDACTED) -> None:
        listed = [paths] if isinstance(paths, str) else list(paths)
        self.paths: tuple[RedactionPath, ...] = tuple(parse_path(p) for p in listed)
        self.marker = marker

    def __bool__(self) -> bool:
        return bool(self.paths)

    def entry(self, entry: Mapping[str, Any]) -> Mapping[str, Any]:
        """A log entry with every listed path replaced (the entry itself is not changed); a
        redacted whole ``event`` keeps an event's shape, ``{"type": marker}``."""
        out: Mapping[str, Any] = redact(entry, self.paths, self.marker)
        if _EVENT in self.paths and _apply(entry, _EVENT, self.marker)[1]:
            out = {**out, _EVENT[0]: {"type": self.marker}}
        return out

    def snapshot(self, persisted: Mapping[str, Any] | None) -> Mapping[str, Any] | None:
        """A persisted snapshot with every listed path replaced (``None`` stays ``None``)."""
        if persisted is None:
            return None
        out: Mapping[str, Any] = redact(persisted, self.paths, self.marker)
        return out

    def pointer(self, path: str) -> str:
        """A JSON Pointer into the entry or snapshot (a changed path, a diff row's path) cut at
        the first redacted member it passes through, so no key under a redacted value shows."""
        if not path.startswith("/"):
            return path
        segs = [p.replace("~1", "/").replace("~0", "~") for p in path[1:].split("/")]
        best: int | None = None
        for parts in self.paths:
            k = len(parts)
            if k <= len(segs) and all(p in ("*", s) for p, s in zip(parts, segs, strict=False)):
                best = k if best is None else min(best, k)
        return path if best is None else _pointer(segs[:best])

    def hidden(self, *docs: Any) -> set[str]:
        """Every key and scalar (as text) the listed paths hide in ``docs`` (for free text)."""
        out: set[str] = set()
        for doc in docs:
            for parts in self.paths:
                _hidden(doc, parts, out)
        out.discard("")
        return out

    def text(self, text: str, hidden: Iterable[str]) -> str:
        """``text`` with every whole occurrence of the ``hidden`` strings replaced by the marker.

        Each hidden string is also matched as Python ``repr`` and JSON spell it inside quotes
        (an error message quoting a value). An occurrence counts only as a whole token: one that
        starts (ends) with a letter, digit or ``_`` is not replaced where it continues a word or
        number (a hidden ``1`` leaves ``1000 ms`` and the hash ``6c21e76b`` as they are, but
        hides ``remind:1``). Longest first; text without any hidden string is returned as is.
        """
        pattern = _tokens(hidden)
        return text if pattern is None else pattern.sub(lambda _: self.marker, text)

    def frame(self, frame: Frame, earlier: set[str] | None = None) -> Frame:
        """``frame`` as a shared view may show it: entry and persisted snapshot redacted, changed
        paths cut at the redacted member (duplicates dropped, order kept), the explanation
        scrubbed of every hidden key and value; index, hashes and verdict unchanged.

        ``earlier`` (kept by :meth:`frames`) gathers the epoch-ms spellings of the timestamps
        hidden in the entries seen so far: an explanation also names the previous entry's
        ``recordedAt`` and the one where a timer appeared, as epoch ms; those are hidden too.
        """
        if not self.paths:
            return frame
        why = frame.explanation
        if earlier is not None:
            earlier.update(_epoch_spellings(self.hidden(frame.entry)))
        if why:
            why = self.text(why, self.hidden(frame.entry, frame.persisted))
            if earlier:
                why = _NUMBER.sub(lambda m: self.marker if m.group(0) in earlier else m.group(0), why)
        return replace(
            frame,
            entry=self.entry(frame.entry),
            persisted=self.snapshot(frame.persisted),
            changed_paths=tuple(dict.fromkeys(self.pointer(p) for p in frame.changed_paths)),
            explanation=why,
        )

    def frames(self, frames: Iterable[Frame]) -> Iterator[Frame]:
        """Each frame of ``frames`` redacted (lazily, in order; the timestamps hidden in earlier
        entries are hidden in later explanations too, see :meth:`frame`)."""
        earlier: set[str] = set()
        for f in frames:
            yield self.frame(f, earlier)

    def source(self, source: Any) -> Any:
        """A frame source (``len``, ``at``, ``iter_frames``) reading ``source`` redacted; ``source``
        itself when there is nothing to redact."""
        return _RedactedSource(source, self) if self.paths else source


class _RedactedSource:
    """A frame source whose every frame is redacted (:meth:`Redaction.source`)."""

    def __init__(self, source: Any, redaction: Redaction) -> None:
        self.source = source
        self.redaction = redaction

    def __len__(self) -> int:
        return len(self.source)

    def at(self, n: int) -> Frame:
        return self.redaction.frame(self.source.at(n))

    def iter_frames(self) -> Iterator[Frame]:
        it = getattr(self.source, "iter_frames", None)
        if callable(it):
            yield from self.redaction.frames(it())
            return
        earlier: set[str] = set()
        for n in range(len(self.source)):
            yield self.redaction.frame(self.source.at(n), earlier)

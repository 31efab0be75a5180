"""The context view: a JSON value as an escaped, bounded, collapsible ``<details>`` tree.

Every key and value is escaped with :func:`agentscope.render._escape.esc`. Output size is bounded
whatever the input: strings are cut at ``max_string`` characters (an expander shows up to
``max_expand`` more and says how many were left out), containers at ``max_items`` members, and
nesting at ``max_depth`` levels. Each row carries ``data-path`` (an RFC 6901 JSON Pointer) and
rows whose path is in ``changed_paths`` are highlighted, their ancestors marked and opened.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import orjson

from agentscope.jsondiff import MISSING, diff_json
from agentscope.render._escape import esc, truncate

__all__ = ["CONTEXT_CSS", "context_diff_html", "context_html", "diff_rows", "pointer", "pointer_join"]

CONTEXT_CSS = """
.as-ctx{font:12px/1.45 monospace;max-height:520px;overflow:auto}
.as-ctx details{margin-left:1em}
.as-ctx summary{cursor:pointer}
.as-ctx .as-leaf{margin-left:2em;white-space:pre-wrap;word-break:break-all}
.as-ctx .as-k{color:#6a1b9a}
.as-ctx .as-str{color:#2e7d32}
.as-ctx .as-num{color:#1565c0}
.as-ctx .as-lit{color:#ad1457}
.as-ctx .as-meta{color:#78909c}
.as-ctx .as-changed>summary,.as-ctx .as-leaf.as-changed{background:#ffe0b2;outline:1px solid #fb8c00}
.as-ctx .as-haschange>summary{border-left:3px solid #fb8c00;padding-left:2px}
.as-ctx .as-trunc{color:#b71c1c}
.as-ctx .as-more{display:inline;margin:0}
.as-ctx .as-more>summary{display:inline;color:#b71c1c}
.as-ctx .as-hidden{display:none}
.as-ctx-search{width:100%;box-sizing:border-box;margin-bottom:4px}
"""
"""Stylesheet of the context tree; views embed it once."""


def pointer_join(base: str, key: str | int) -> str:
    """Return ``base`` + ``/`` + ``key`` escaped per RFC 6901 (``~`` → ``~0``, ``/`` → ``~1``)."""
    return base + "/" + str(key).replace("~", "~0").replace("/", "~1")


def pointer(parts: Iterable[str | int]) -> str:
    """Return the JSON Pointer of a sequence of keys (``""`` for the empty sequence)."""
    out = ""
    for p in parts:
        out = pointer_join(out, p)
    return out


def _scalar(value: Any, max_string: int, max_expand: int) -> tuple[str, str]:
    """HTML for a leaf value and its lower-cased search text (bounded)."""
    if isinstance(value, str):
        shown, cut = truncate(value, max_string)
        text = shown.lower()
        body = f'<span class="as-str">"{esc(shown)}'
        if cut:
            rest, left = truncate(value[max_string:], max_expand)
            body += (
                f'</span><details class="as-more"><summary>… +{cut:,} chars</summary>'
                f'<span class="as-str">{esc(rest)}</span>'
            )
            if left:
                body += f'<span class="as-trunc"> … {left:,} more chars not shown</span>'
            body += '"</details>'
            return body, text
        return body + '"</span>', text
    if value is None:
        return '<span class="as-lit">null</span>', "null"
    if isinstance(value, bool):
        t = "true" if value else "false"
        return f'<span class="as-lit">{t}</span>', t
    if isinstance(value, int | float):
        if isinstance(value, float) and not math.isfinite(value):
            t = str(value)
        else:
            t = orjson.dumps(value).decode() if isinstance(value, float) else str(value)
        return f'<span class="as-num">{esc(t)}</span>', t.lower()
    t = f"<{type(value).__name__}>"
    return f'<span class="as-meta">{esc(t)}</span>', t.lower()


def context_html(
    value: Any,
    *,
    changed_paths: Iterable[str] = (),
    max_string: int = 200,
    max_expand: int = 20_000,
    max_depth: int = 12,
    max_items: int = 200,
    max_nodes: int = 2_000,
    open_depth: int = 1,
    root_path: str = "/context",
    root_label: str = "context",
    filter: str | None = None,
    search_box: bool = False,
) -> str:
    """Return ``value`` as a collapsible, escaped HTML tree.

    Parameters
    ----------
    value : JSON-like
        Usually a frame's ``context``. Mappings, sequences and scalars; anything else is shown
        as ``<TypeName>``.
    changed_paths : iterable of str
        JSON Pointers (under ``root_path``) changed since the previous frame: those rows get the
        class ``as-changed``, their ancestors ``as-haschange`` and are opened.
    max_string : int
        Characters of a string shown inline; the rest sits behind an expander.
    max_expand : int
        Characters the expander shows at most (the count of those left out is printed).
    max_depth : int
        Nesting levels drawn; deeper containers show their size only.
    max_items : int
        Members drawn per container; the count of the others is printed.
    max_nodes : int
        Rows drawn in total; past it, containers print their size only.
    open_depth : int
        Containers up to this depth start open.
    root_path, root_label : str
        JSON Pointer and label of ``value`` itself.
    filter : str, optional
        Keep only rows whose path or value contains this text (case-insensitive), with their
        ancestors (opened). A matching container keeps all its members.
    search_box : bool
        Prepend an ``<input class="as-ctx-search">`` (the static player wires it with plain JS).

    Returns
    -------
    str
        ``<div class="as-ctx">…</div>``; its size is bounded by the limits above, not the input.
    """
    changed = set(changed_paths)
    ancestors: set[str] = set()
    for p in changed:
        parts = p.split("/")
        for k in range(1, len(parts)):
            ancestors.add("/".join(parts[:k]))
    q = filter.lower() if filter else None
    budget = [max_nodes]

    def node(key: str, v: Any, path: str, depth: int, force: bool) -> str | None:
        cls = " as-changed" if path in changed else ""
        if path in ancestors:
            cls += " as-haschange"
        key_html = f'<span class="as-k">{esc(key)}</span>'
        self_match = force or q is None or q in path.lower() or q in key.lower()
        if isinstance(v, Mapping | list | tuple):
            items: Sequence[tuple[str, Any]] = (
                [(str(k), x) for k, x in v.items()]
                if isinstance(v, Mapping)
                else [(str(i), x) for i, x in enumerate(v)]
            )
            size = f"{{{len(items)}}}" if isinstance(v, Mapping) else f"[{len(items)}]"
            budget[0] -= 1
            if depth >= max_depth or budget[0] < 0:
                if not self_match:
                    return None
                why = f"depth limit {max_depth}" if depth >= max_depth else f"{max_nodes:,}-row limit"
                return (
                    f'<div class="as-leaf{cls}" data-path="{esc(path)}">{key_html}: '
                    f'<span class="as-trunc">{size} ({why})</span></div>'
                )
            parts: list[str] = []
            kids_force = force or (q is not None and self_match)
            for k, x in items[:max_items]:
                h = node(k, x, pointer_join(path, k), depth + 1, kids_force)
                if h is not None:
                    parts.append(h)
            if len(items) > max_items:
                parts.append(f'<div class="as-leaf as-trunc">… {len(items) - max_items:,} more members</div>')
            if (
                q is not None
                and not self_match
                and not any(not p.startswith('<div class="as-leaf as-trunc"') for p in parts)
            ):
                return None
            is_open = depth < open_depth or path in ancestors or (q is not None and not force)
            return (
                f'<details class="as-node{cls}" data-path="{esc(path)}"{" open" if is_open else ""}>'
                f'<summary>{key_html} <span class="as-meta">{size}</span></summary>{"".join(parts)}</details>'
            )
        budget[0] -= 1
        body, text = _scalar(v, max_string, max_expand)
        if q is not None and not self_match and q not in text:
            return None
        return f'<div class="as-leaf{cls}" data-path="{esc(path)}">{key_html}: {body}</div>'

    tree = node(root_label, value, root_path, 0, False)
    search = (
        (
            '<input class="as-ctx-search" type="search" placeholder="filter by path or value" '
            'aria-label="filter the context by path or value">'
        )
        if search_box
        else ""
    )
    if tree is None:
        tree = f'<div class="as-meta">no match for {esc(filter)}</div>'
    return f'<div class="as-ctx">{search}{tree}</div>'


def diff_rows(
    left: Any, right: Any, base: str = "/context", *, limit: int = 500
) -> list[tuple[str, str, Any, Any]]:
    """Return where two JSON values differ, as ``(pointer, status, left_value, right_value)`` rows.

    The changes of :func:`agentscope.jsondiff.diff_json` (the one definition of a differing
    path: an element added to or taken from the head of an array is one row), at most
    ``limit``: ``status`` is ``"changed"`` (both sides have the path), ``"only-a"`` (the left
    only) or ``"only-b"``. A missing side's value is ``None``.
    """
    status = {"replace": "changed", "remove": "only-a", "add": "only-b"}
    return [
        (c.path, status[c.op], None if c.left is MISSING else c.left, None if c.right is MISSING else c.right)
        for c in diff_json(left, right, base)[:limit]
    ]


def _short(v: Any, limit: int = 120) -> str:
    try:
        text = orjson.dumps(v, default=str, option=orjson.OPT_NON_STR_KEYS).decode()
    except TypeError:
        text = repr(v)
    shown, cut = truncate(text, limit)
    return shown + ("…" if cut else "")


def context_diff_html(
    rows: Sequence[tuple[str, str, Any, Any]], *, names: tuple[str, str] = ("a", "b"), limit: int = 500
) -> str:
    """Return an aligned side-by-side table of :func:`diff_rows` (escaped; one row per path).

    A path present on one side only is marked (class ``as-d-only-a`` / ``as-d-only-b``, the
    missing side reads "(absent)"); a changed value has class ``as-d-changed``.
    """
    if not rows:
        return '<div class="as-meta as-cdiff-none">the two contexts are identical</div>'
    body = []
    for path, status, a, b in rows[:limit]:
        ta = "(absent)" if status == "only-b" else _short(a)
        tb = "(absent)" if status == "only-a" else _short(b)
        mark = {"only-a": f" (only in {names[0]})", "only-b": f" (only in {names[1]})"}.get(status, "")
        body.append(
            f'<tr class="as-d-{status}" data-path="{esc(path)}"><td>{esc(path)}{esc(mark)}</td>'
            f'<td class="as-d-a">{esc(ta)}</td><td class="as-d-b">{esc(tb)}</td></tr>'
        )
    more = (
        f'<tr><td colspan="3" class="as-meta">… {len(rows) - limit:,} more</td></tr>'
        if len(rows) > limit
        else ""
    )
    return (
        f'<table class="as-cdiff"><tr><th>path</th><th>{esc(names[0])}</th><th>{esc(names[1])}</th></tr>'
        + "".join(body)
        + more
        + "</table>"
    )

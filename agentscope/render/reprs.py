"""The one guarded repr helper: every ``_repr_html_`` of the package hands values to
:func:`repr_html` and writes no markup itself.

A value says *what* to show, as a short sequence of blocks:

- a ``str`` or :class:`Para` (text, :class:`Bold` and :class:`Code` segments): a paragraph;
- :class:`Table`: columns and rows of any values (a ``DataFrame`` through :meth:`Table.of`);
- :class:`Facts`: a two-column table of ``(name, value)`` pairs;
- :class:`Items`: a bulleted list; :class:`Heading`; :class:`Pre`: preformatted text;
- :class:`Markup`: a fragment drawn by another ``agentscope.render`` module (an SVG chart).

:func:`repr_html` escapes every value (:func:`agentscope.render._escape.esc`: entities, lone
surrogates shown as ``\\udxxx``), caps them (:data:`MAX_ROWS` rows per table, :data:`MAX_CELL`
characters per cell, :data:`MAX_TEXT` per paragraph or preformatted block) and says what was left
out (``… 81 more entries``). :func:`guarded` runs the builder and, when it raises, shows the
object's ``repr`` and the error instead: IPython hides an exception raised by ``_repr_html_``.
:func:`page_html` makes a self-contained document of the same blocks.

This module sits low in the module map (with ``log/``) so that the data layer's values (a log, a
frame, a report) can call it; it imports nothing of the package but the escaping helper.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from agentscope.render._escape import esc, truncate

__all__ = [
    "MAX_CELL",
    "MAX_ROWS",
    "MAX_TEXT",
    "Block",
    "Bold",
    "Code",
    "Facts",
    "Heading",
    "Items",
    "Markup",
    "Para",
    "Pre",
    "Table",
    "cell_text",
    "guarded",
    "page_html",
    "repr_html",
]

MAX_ROWS = 50
"""At most this many rows of a table or items of a list are drawn (the rest are counted)."""
MAX_CELL = 200
"""At most this many characters of a cell (then ``…``)."""
MAX_TEXT = 20_000
"""At most this many characters of a paragraph or a preformatted block (then a note)."""


class Markup(str):
    """A fragment already drawn (and escaped) by an ``agentscope.render`` module, placed as is."""

    __slots__ = ()


@dataclass(frozen=True)
class Bold:
    """A bold segment of a paragraph."""

    text: Any


@dataclass(frozen=True)
class Code:
    """A code segment of a paragraph (a path, a hash, a source)."""

    text: Any


class Para:
    """A paragraph: text segments (any value, shown as text), :class:`Bold` and :class:`Code`."""

    __slots__ = ("segments",)

    def __init__(self, *segments: Any) -> None:
        self.segments = segments


@dataclass(frozen=True)
class Table:
    """Rows of values under ``columns``; ``more`` rows were not passed (counted in the note,
    which names ``where`` the rest can be read, e.g. ``".mismatches"``)."""

    columns: Sequence[Any]
    rows: Sequence[Sequence[Any]]
    more: int = 0
    where: str = ""
    noun: str = "rows"
    limit: int = MAX_ROWS

    @classmethod
    def of(cls, df: Any, *, limit: int = MAX_ROWS, where: str = "", noun: str = "rows") -> Table:
        """A ``pandas.DataFrame``'s first ``limit`` rows (its index left out)."""
        head = df.head(limit)
        rows = [list(r) for r in head.itertuples(index=False, name=None)]
        return cls(list(df.columns), rows, more=max(len(df) - len(head), 0), where=where, noun=noun,
                   limit=limit)


@dataclass(frozen=True)
class Facts:
    """``(name, value)`` pairs as a two-column table."""

    pairs: Sequence[tuple[Any, Any]]


@dataclass(frozen=True)
class Items:
    """A bulleted list."""

    items: Sequence[Any]
    more: int = 0
    limit: int = MAX_ROWS


@dataclass(frozen=True)
class Heading:
    """A section heading (``level`` 1 to 4)."""

    text: Any
    level: int = 2


@dataclass(frozen=True)
class Pre:
    """Preformatted text (a JSON dump, a traceback)."""

    text: str


Block = str | Para | Table | Facts | Items | Heading | Pre | Markup


def cell_text(value: Any, limit: int = MAX_CELL) -> str:
    """A value as the text of a table cell: ``—`` for ``None``/NaN/NA, JSON-like text for
    containers, cut at ``limit`` characters with ``…``."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "—"
    if type(value).__name__ in ("NAType", "NaTType"):
        return "—"
    if isinstance(value, str):
        text = value
    elif isinstance(value, Mapping | list | tuple):
        import json

        try:
            text = json.dumps(value, ensure_ascii=False, default=repr)
        except (ValueError, RecursionError):  # circular or too deep: its repr, cut below
            text = repr(value)[: limit + 1]
    else:
        text = str(value)
    cut, more = truncate(text, limit)
    return cut + "…" if more else cut


def _text(value: Any, limit: int = MAX_TEXT) -> str:
    text = value if isinstance(value, str) else str(value)
    cut, more = truncate(text, limit)
    return esc(cut) + (f"… [+{more:,} chars]" if more else "")


def _segment(seg: Any) -> str:
    if isinstance(seg, Bold):
        return f"<b>{_text(seg.text)}</b>"
    if isinstance(seg, Code):
        return f"<code>{_text(seg.text)}</code>"
    return _text(seg)


def _more(n: int, noun: str, where: str) -> str:
    if n <= 0:
        return ""
    return f"<p>… {n:,} more {esc(noun)}" + (f" in {esc(where)}" if where else "") + "</p>"


def _table(t: Table) -> str:
    shown = list(t.rows)[: t.limit]
    more = t.more + max(len(t.rows) - t.limit, 0)
    head = "".join(f"<th>{esc(cell_text(c))}</th>" for c in t.columns)
    body = "".join(
        "<tr>" + "".join(f"<td>{esc(cell_text(v))}</td>" for v in row) + "</tr>" for row in shown
    )
    table = f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"
    return table + _more(more, t.noun, t.where)


def _block(b: Any) -> str:
    if isinstance(b, Markup):
        return str(b)
    if isinstance(b, str):
        return f"<p>{_text(b)}</p>"
    if isinstance(b, Para):
        return "<p>" + "".join(_segment(s) for s in b.segments) + "</p>"
    if isinstance(b, Table):
        return _table(b)
    if isinstance(b, Facts):
        pairs = list(b.pairs)[:MAX_ROWS]
        rows = "".join(f"<tr><th>{esc(cell_text(k))}</th><td>{esc(cell_text(v))}</td></tr>" for k, v in pairs)
        return f"<table><tbody>{rows}</tbody></table>" + _more(len(b.pairs) - len(pairs), "facts", "")
    if isinstance(b, Items):
        items = list(b.items)[: b.limit]
        lis = "".join(f"<li>{_text(i, MAX_CELL * 5)}</li>" for i in items)
        return f"<ul>{lis}</ul>" + _more(b.more + len(b.items) - len(items), "items", "")
    if isinstance(b, Heading):
        level = min(max(int(b.level), 1), 4)
        return f"<h{level}>{_text(b.text, MAX_CELL)}</h{level}>"
    if isinstance(b, Pre):
        return f"<pre>{_text(b.text)}</pre>"
    raise TypeError(f"repr_html: cannot show a {type(b).__name__} (blocks: see agentscope.render.reprs)")


def repr_html(kind: str, blocks: Iterable[Any]) -> str:
    """The HTML of a value for a notebook: ``<div class="agentscope-<kind>">`` holding each block,
    every value escaped and bounded (see the module docstring).

    Raises
    ------
    TypeError
        A block of another type.
    """
    return f'<div class="agentscope-{esc(kind)}">' + "".join(_block(b) for b in blocks) + "</div>"


PAGE_CSS = (
    "body{font:14px sans-serif;margin:16px}table{border-collapse:collapse;font-size:12px}"
    "td,th{border:1px solid #ddd;padding:2px 6px;text-align:left}"
)


def page_html(title: str, blocks: Iterable[Any], *, css: str = PAGE_CSS) -> str:
    """A self-contained HTML document (no script, no network) titled ``title`` whose body is
    ``title`` as a heading and the blocks, as :func:`repr_html` draws them. ``css`` is the
    package's own stylesheet text (never log content)."""
    return (
        f"<!doctype html><html><head><meta charset='utf-8'><title>{_text(title, MAX_CELL)}</title>"
        f"<style>{css}</style></head><body><h1>{_text(title, MAX_CELL)}</h1>"
        + "".join(_block(b) for b in blocks)
        + "</body></html>"
    )


def guarded(obj: object, kind: str, build: Callable[[], Iterable[Any]]) -> str:
    """:func:`repr_html` of the blocks ``build()`` returns; when building or drawing raises, the
    object's ``repr`` and the error as escaped text (IPython would hide the error and show the
    plain repr with no word of what failed)."""
    try:
        return repr_html(kind, list(build()))
    except Exception as err:  # a repr must not raise: say what failed
        try:
            head = repr(obj)
        except Exception:  # the plain repr failed too: name the type
            head = f"<{type(obj).__name__}>"
        return repr_html(kind, [Pre(f"{head}\n{kind} HTML failed: {type(err).__name__}: {err}")])

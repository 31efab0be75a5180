"""The context tree of a widget: rendered and escaped in Python, sent to the front end as patches.

An `anywidget <https://anywidget.dev>`_ holding the HTML of :func:`agentscope.render.context.context_html`
as a list of rows (one per ``<div class="as-leaf">`` / ``<details class="as-node">``, cut before
each: escaped log content contains no ``<``, so the cuts fall between elements only). ``base`` is
a full list sent now and then; per step only ``patch`` goes over the wire: the RFC 6902 operations
(found with :mod:`difflib`) that turn ``base`` into this step's rows. A step changes the few
rows whose value or highlight changed, so a patch is a few hundred bytes where the tree is many
kilobytes; when the patch would reach half the tree, the tree becomes the new ``base``.

``base`` + ``patch`` always describe the whole tree, so a view opened later, a saved widget
state and a re-displayed output show the right step without any message of their own. The rows
are escaped HTML (the same string an ``ipywidgets.HTML`` would carry); the front end only joins
them, never builds markup from log data.
"""

from __future__ import annotations

import difflib
import re
from importlib.resources import files
from typing import Any

import anywidget
import orjson
import traitlets

__all__ = ["TreeWidget", "split_rows"]

_ROW = re.compile(r'(?=<div class="as-leaf|<details class="as-node|<tr )')


def split_rows(html: str) -> list[str]:
    """Cut ``html`` (escaped markup) before each context row; ``"".join`` of the result is ``html``."""
    return [r for r in _ROW.split(html) if r]


def _patch(old: list[str], new: list[str]) -> list[dict[str, Any]]:
    """The RFC 6902 add/remove/replace operations that turn ``old`` into ``new``.

    :class:`difflib.SequenceMatcher` finds the rows kept (each row is one string, compared
    whole); the rest become operations, applied in order (indices as the list is at that
    operation). :func:`jsonpatch.apply_patch` of the result gives ``new``.
    """
    ops: list[dict[str, Any]] = []
    shift = 0  # rows added minus rows removed so far
    matcher = difflib.SequenceMatcher(None, old, new, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        common = min(i2 - i1, j2 - j1) if tag == "replace" else 0
        for k in range(common):
            ops.append({"op": "replace", "path": f"/{i1 + shift + k}", "value": new[j1 + k]})
        for _ in range(i2 - i1 - common):
            ops.append({"op": "remove", "path": f"/{i1 + shift + common}"})
        for k in range(j2 - j1 - common):
            ops.append({"op": "add", "path": f"/{i1 + shift + common + k}", "value": new[j1 + common + k]})
        shift += (j2 - j1) - (i2 - i1)
    return ops


class TreeWidget(anywidget.AnyWidget):  # type: ignore[misc,unused-ignore]
    """Front-end patched HTML rows (traits: ``base``, ``patch``)."""

    _esm = files("agentscope.widgets").joinpath("tree.js").read_text(encoding="utf-8")
    base = traitlets.List(traitlets.Unicode(), help="Rows of escaped HTML, sent now and then.").tag(sync=True)
    patch = traitlets.List(traitlets.Dict(), help="RFC 6902 operations from base to the rows shown.").tag(
        sync=True
    )

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._rows: list[str] = list(self.base)

    @property
    def value(self) -> str:
        """The HTML the front end shows (``base`` with ``patch`` applied, joined)."""
        return "".join(self._rows)

    @value.setter
    def value(self, html: str) -> None:
        rows = split_rows(html)
        if rows == self._rows:
            return
        self._rows = rows
        ops = _patch(list(self.base), rows)
        if len(orjson.dumps(ops)) * 2 > sum(map(len, rows)):
            with self.hold_sync():
                self.patch = []
                self.base = rows
        else:
            self.patch = ops

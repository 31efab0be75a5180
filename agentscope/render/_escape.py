"""The one escaping helper every view uses.

Log content is untrusted data: every string that reaches HTML, SVG or an embedded ``<script>``
goes through :func:`esc` (text and attribute values) or :func:`json_for_script` (JSON placed
inside a ``<script>`` element). Nothing from a log is ever evaluated.
"""

from __future__ import annotations

import html
import json
import re
from typing import Any

import orjson

from agentscope.hashing import escape_lone_surrogates
from agentscope.log.writers import js_json

__all__ = ["esc", "json_for_script", "truncate"]

_SCRIPT_UNSAFE = {
    ord("<"): "\\u003c",
    ord(">"): "\\u003e",
    ord("&"): "\\u0026",
    0x2028: "\\u2028",
    0x2029: "\\u2029",
}


def esc(value: object) -> str:
    """Return ``str(value)`` escaped for HTML text and double- or single-quoted attributes.

    ``&``, ``<``, ``>``, ``"`` and ``'`` become entities (:func:`html.escape` with ``quote=True``),
    so ``</script>``, ``</svg>`` and ``<!--`` in a payload stay inert text. A lone surrogate
    (legal in a JS string, not in HTML) is shown as the text ``\\udxxx``, exactly as
    ``JSON.stringify`` writes it, so the page (and a widget's state) stays valid Unicode.
    """
    text = html.escape(value if isinstance(value, str) else str(value), quote=True)
    return escape_lone_surrogates(text)


def json_for_script(value: Any) -> str:
    """Return ``value`` as JSON that is safe to place verbatim inside a ``<script>`` element.

    ``<``, ``>`` and ``&`` are written as ``\\u003c``, ``\\u003e`` and ``\\u0026`` (so neither
    ``</script`` nor ``<!--`` can appear) and U+2028/U+2029 as escapes; ``JSON.parse`` reads the
    same value back. Lone surrogates are ``\\udxxx`` escapes, integers beyond 64 bits keep their
    digits and nesting may go to ``MAX_DEPTH`` (:func:`agentscope.log.writers.js_json` with
    ``integers="exact"``, used when orjson refuses). Non-JSON values raise ``TypeError``.
    """
    try:
        text = orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS).decode("utf-8")
    except orjson.JSONEncodeError:  # lone surrogate, > 64-bit integer, > 255 levels
        text = js_json(value, integers="exact")
    return text.translate(_SCRIPT_UNSAFE)


_LONE_ESCAPE = re.compile(r"(?<!\\)((?:\\\\)*)\\u(d[89a-f][0-9a-f]{2})", re.IGNORECASE)


def widget_safe(value: Any) -> Any:
    """Return JSON-able ``value`` with every lone surrogate (in keys and strings) replaced by the
    text ``\\udxxx``, as :func:`esc` shows it: a widget's state travels as UTF-8 JSON, which
    cannot carry one. ``value`` itself is returned when it holds none (the common case)."""
    try:
        orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS)
        return value
    except orjson.JSONEncodeError:
        pass
    text = json_for_script(value)  # lone surrogates are \udxxx escapes here, nothing else is
    return json.loads(_LONE_ESCAPE.sub(lambda m: m.group(1) + "\\\\u" + m.group(2), text))


def truncate(text: str, limit: int) -> tuple[str, int]:
    """Return the first ``limit`` characters of ``text`` and how many were cut off (>= 0)."""
    if limit < 0:
        raise ValueError(f"limit must be >= 0, got {limit}")
    if len(text) <= limit:
        return text, 0
    return text[:limit], len(text) - limit

"""Writing JSON: the one place entries and values become JSON text (spec §1.1, §1.4).

:func:`js_json` has two number modes:

- ``integers="double"`` (default): ``JSON.stringify`` as V8 runs it over parsed JSON values, what
  a JavaScript host writes. Numbers as ``Number::toString`` (``1.0`` is ``1``, ``-0`` is ``0``,
  ``5e-7``; an integer beyond 2^53 rounded to its double), strings as ``JSON.stringify`` quotes
  them (lone surrogates escaped ``\\udxxx``, the rest literal), object members in V8's property
  order (integer-like keys first, ascending, then the others in insertion order). The
  :class:`~agentscope.recorder.Recorder` writes its logs so (:func:`write_json`,
  :func:`write_jsonl`, ``to_sqlite``).
- ``integers="exact"``: *raw* entry values as read (``agentscope export``, data embedded in HTML
  pages): integers keep the log's literal digits (``9007199254740993``; ``JSON.parse`` rounds it
  as it rounded the original), floats their shortest round-trip form, keys in the order held;
  compact; lone surrogates as ``\\udxxx`` escapes, so the text is valid UTF-8 and nothing is lost.

Both modes write nesting up to :data:`~agentscope._deep.MAX_DEPTH`.
"""

from __future__ import annotations

import json
import math
import os
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, Literal

from agentscope._deep import call_deep_checked
from agentscope.errors import NonSerializableError
from agentscope.hashing import escape_lone_surrogates, js_number, js_string

__all__ = ["Integers", "js_json", "write_json", "write_jsonl"]

Integers = Literal["double", "exact"]
"""How :func:`js_json` writes numbers: as V8 holds them, or with a raw value's integer digits."""

_MAX_INDEX = 4294967294
_SURROGATE = re.compile("[\ud800-\udfff]")


def _is_index(key: str) -> bool:
    return key.isdigit() and key.isascii() and (key == "0" or key[0] != "0") and int(key) <= _MAX_INDEX


def _v8_keys(keys: Iterable[str]) -> list[str]:
    """Own property order of an object built by ``JSON.parse``: array indices ascending first."""
    keys = list(keys)
    idx = sorted((k for k in keys if _is_index(k)), key=int)
    if not idx:
        return keys
    return idx + [k for k in keys if not _is_index(k)]


def _write(value: Any, out: list[str], indent: str | None, depth: int, path: str) -> None:
    if value is None:
        out.append("null")
    elif value is True:
        out.append("true")
    elif value is False:
        out.append("false")
    elif isinstance(value, str):
        out.append(js_string(value))
    elif isinstance(value, int | float):
        if isinstance(value, float) and not math.isfinite(value):
            raise NonSerializableError(path, "NaN" if math.isnan(value) else (
                "Infinity" if value > 0 else "-Infinity"))
        out.append(js_number(value))
    elif isinstance(value, Mapping):
        keys = _v8_keys(str(k) for k in value)
        if not keys:
            out.append("{}")
            return
        by_str = {str(k): v for k, v in value.items()}
        pad = "\n" + indent * (depth + 1) if indent is not None else ""
        sep = ": " if indent is not None else ":"
        out.append("{")
        for n, k in enumerate(keys):
            if n:
                out.append(",")
            out.append(pad)
            out.append(js_string(k))
            out.append(sep)
            _write(by_str[k], out, indent, depth + 1, f"{path}.{k}")
        out.append(("\n" + indent * depth if indent is not None else "") + "}")
    elif isinstance(value, list | tuple):
        if not value:
            out.append("[]")
            return
        pad = "\n" + indent * (depth + 1) if indent is not None else ""
        out.append("[")
        for n, v in enumerate(value):
            if n:
                out.append(",")
            out.append(pad)
            _write(v, out, indent, depth + 1, f"{path}[{n}]")
        out.append(("\n" + indent * depth if indent is not None else "") + "]")
    else:
        raise NonSerializableError(path, type(value).__name__)


def _double(value: Any, indent: str | None) -> str:
    out: list[str] = []
    _write(value, out, indent, 0, "entry")
    return "".join(out)


def _exact(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def js_json(value: Any, *, indent: int | None = None, integers: Integers = "double") -> str:
    """Return ``value`` as JSON text (see the module docstring for the two modes).

    Parameters
    ----------
    value
        A JSON value (``dict``/``list``/``tuple``/``str``/``int``/``float``/``bool``/``None``),
        nested up to :data:`~agentscope._deep.MAX_DEPTH` levels.
    indent
        ``integers="double"`` only: ``JSON.stringify(value, null, indent)``'s indent; ``None``
        writes compact text.
    integers
        ``"double"``: ``JSON.stringify`` as V8 writes the parsed value. ``"exact"``: a raw value,
        integer digits kept (exports, embedded page data).

    Raises
    ------
    NonSerializableError
        ``"double"``: a value JSON cannot hold (``NaN``, ``Infinity``, a non-JSON Python type);
        ``.path`` names it (``entry.event.output``).
    ValueError, TypeError
        ``"exact"``: NaN/Infinity, resp. a non-JSON value.
    DepthLimitError
        Nesting beyond :data:`~agentscope._deep.MAX_DEPTH`.
    """
    if integers == "exact":
        if indent is not None:
            raise ValueError("js_json(integers='exact') writes compact text only (indent=None)")
        # a raw lone surrogate can only sit inside a string, where "\\udxxx" is its JSON escape
        return escape_lone_surrogates(call_deep_checked("JSON text", value, _exact))
    text = call_deep_checked("JSON text", value, _double, " " * indent if indent else None)
    # lone surrogates are escaped by now; a pair held as two code points becomes the one
    # character it encodes, so the text is valid UTF-8 (what a JS host's UTF-16 string writes)
    if _SURROGATE.search(text):
        text = text.encode("utf-16-le", "surrogatepass").decode("utf-16-le")
    return text


def _target(path: str | os.PathLike[str], overwrite: bool) -> Path:
    p = Path(path)
    if p.exists() and not overwrite:
        raise FileExistsError(f"{p} already exists; pass overwrite=True to replace it")
    return p


def write_json(
    entries: Iterable[Mapping[str, Any]], path: str | os.PathLike[str], *, overwrite: bool = False
) -> Path:
    """Write ``entries`` as one JSON array (UTF-8, two-space indent); return the path.

    Raises ``FileExistsError`` for an existing file unless ``overwrite``.
    """
    p = _target(path, overwrite)
    p.write_text(js_json(list(entries), indent=2) + "\n", encoding="utf-8")
    return p


def write_jsonl(
    entries: Iterable[Mapping[str, Any]], path: str | os.PathLike[str], *, overwrite: bool = False
) -> Path:
    """Write one compact JSON entry per line (UTF-8, JSONL); return the path.

    Raises ``FileExistsError`` for an existing file unless ``overwrite``.
    """
    p = _target(path, overwrite)
    with p.open("w", encoding="utf-8") as fh:
        for e in entries:
            fh.write(js_json(e) + "\n")
    return p

"""Writing logs: the one place entries become JSON text, as a JavaScript host writes them.

:func:`js_json` is ``JSON.stringify`` as V8 runs it over parsed JSON values: numbers as
``Number::toString`` (``1.0`` is ``1``, ``-0`` is ``0``, ``5e-7``), strings as ``JSON.stringify``
quotes them (lone surrogates escaped ``\\udxxx``, the rest literal), object members in V8's
property order (integer-like keys first, ascending, then the others in insertion order). So a log
written here reads back to the same values in Node and in Python, byte for byte what a host
would write. :func:`write_json` and :func:`write_jsonl` write whole logs; the
:class:`~agentscope.engines.recorder.Recorder` uses them.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from agentscope.errors import NonSerializableError
from agentscope.hashing import js_number, js_string

__all__ = ["js_json", "write_json", "write_jsonl"]

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


def js_json(value: Any, *, indent: int | None = None) -> str:
    """Return ``JSON.stringify(value, null, indent)`` as V8 writes it (see the module docstring).

    Raises
    ------
    NonSerializableError
        A value JSON cannot hold (``NaN``, ``Infinity``, a non-JSON Python type); ``.path`` names
        it (``entry.event.output``).
    """
    out: list[str] = []
    _write(value, out, " " * indent if indent else None, 0, "entry")
    text = "".join(out)
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

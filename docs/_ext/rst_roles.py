"""Griffe extension: turn the reST roles in agentscope's docstrings into cross-reference links.

The package's docstrings are NumPy style (mkdocstrings parses them as such) and name other objects
with reST roles (``:func:`read_log```, ``:class:`~agentscope.engines.base.Machine```). Markdown
would print those roles literally; this extension rewrites each one, before the docstring is
parsed, into an ``<autoref>`` element that mkdocs-autorefs resolves to the object's anchor. The
target is resolved the way Sphinx would: the full path, then relative to the documented object,
its class, its module and the flat ``agentscope`` namespace. A target that cannot be resolved (a
private helper) stays as code, never as a literal role and never as a broken link.
"""

from __future__ import annotations

import html
import re
from typing import Any

import griffe

_ROLE = re.compile(r":(?:py:)?(func|class|meth|attr|data|mod|exc|obj|const|type):`([^`]+)`")


def _lookup(collection: Any, path: str) -> Any | None:
    head, _, rest = path.partition(".")
    try:
        obj = collection[head]
    except KeyError:
        return None
    for part in rest.split(".") if rest else ():
        try:
            obj = obj.get_member(part) if hasattr(obj, "get_member") else obj.members[part]
        except (KeyError, ValueError, AttributeError, griffe.AliasResolutionError,
                griffe.CyclicAliasError):
            return None
    return obj


def _canonical(obj: Any) -> str:
    try:
        return str(obj.final_target.path) if obj.is_alias else str(obj.path)
    except (griffe.AliasResolutionError, griffe.CyclicAliasError):
        return str(obj.path)


def _resolve(owner: Any, target: str) -> str | None:
    collection = owner.modules_collection
    scopes: list[str] = []
    node = owner
    while node is not None:
        scopes.append(str(node.path))
        node = node.parent
    candidates = [target] + [f"{s}.{target}" for s in scopes] + [f"agentscope.{target}"]
    for cand in candidates:
        found = _lookup(collection, cand)
        if found is not None:
            return _canonical(found)
    return None


class RstRoles(griffe.Extension):
    """Rewrite ``:role:`target``` in every docstring into an autorefs cross-reference."""

    def on_package(self, *, pkg: griffe.Module, **kwargs: Any) -> None:
        # Run once the whole package is loaded, so every target can be looked up.
        stack: list[griffe.Object] = [pkg]
        while stack:
            obj = stack.pop()
            self._rewrite(obj)
            stack.extend(m for m in obj.members.values() if not m.is_alias)  # type: ignore[misc]

    def _rewrite(self, obj: griffe.Object) -> None:
        if obj.docstring is None or ":" not in obj.docstring.value:
            return
        docstring = obj.docstring

        def link(match: re.Match[str]) -> str:
            raw = match.group(2).strip()
            text, short = raw, raw.startswith("~")
            explicit = re.fullmatch(r"(.*?)\s*<([^>]+)>", raw)
            if explicit:
                text, raw = explicit.group(1), explicit.group(2)
            target = raw.lstrip("~!.")
            if not explicit:
                text = target.rsplit(".", 1)[-1] if short else target
            if match.group(1) in ("func", "meth") and not text.endswith(")"):
                text += "()"
            resolved = _resolve(obj, target.removesuffix("()"))
            code = f"<code>{html.escape(text)}</code>"
            if resolved is None:
                return code
            return f'<autoref identifier="{html.escape(resolved)}" optional>{code}</autoref>'

        docstring.value = _ROLE.sub(link, docstring.value)

"""Ratchets for "one of each": each test reads the package's source with ``ast`` and fails on a
new second statement of something that exists once (a problem kind written as a string, ...)."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from agentscope.hashing import HASH_VARIANTS
from agentscope.log.problems import ProblemKind

PKG = Path(__file__).resolve().parent.parent / "agentscope"


def _sources() -> Iterator[tuple[str, ast.Module]]:
    for path in sorted(PKG.rglob("*.py")):
        rel = path.relative_to(PKG.parent).as_posix()
        yield rel, ast.parse(path.read_text(encoding="utf-8"))


def _error_codes(tree: ast.Module) -> set[int]:
    """Ids of the ``code = "..."`` class attributes of exception classes: the errors' own codes
    (``err.code``), a vocabulary of error types that shares a few names with the problem kinds."""
    out: set[int] = set()
    for cls in ast.walk(tree):
        if isinstance(cls, ast.ClassDef):
            for stmt in cls.body:
                if (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1
                        and isinstance(stmt.targets[0], ast.Name) and stmt.targets[0].id == "code"):
                    out.add(id(stmt.value))
    return out


def string_kinds(rel: str, tree: ast.Module) -> list[str]:
    """``module:line: value`` for each string literal in ``tree`` that spells a ProblemKind code
    (hash-variant names such as ``"era-b"`` and exception ``code`` attributes excepted)."""
    kinds = {k.value for k in ProblemKind} - set(HASH_VARIANTS)
    codes = _error_codes(tree)
    return [f"{rel}:{node.lineno}: {node.value}" for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, str)
            and node.value in kinds and id(node) not in codes]


def test_the_ratchet_sees_a_string_literal_problem_kind() -> None:
    tree = ast.parse('def f(idx):\n    idx.add_problem(3, "state-mismatch", "x", None)\n'
                     'class E(Exception):\n    code = "engine-error"\n'
                     'V = "era-b"\n')
    assert string_kinds("m.py", tree) == ["m.py:2: state-mismatch"]


def test_every_problem_kind_is_spelled_through_the_enum() -> None:
    """Every producer and consumer names a kind as ``ProblemKind.X``; only log/problems.py spells
    the codes (a new ``"state-mismatch"`` literal elsewhere fails here)."""
    found = [hit for rel, tree in _sources() if rel != "agentscope/log/problems.py"
             for hit in string_kinds(rel, tree)]
    assert not found, "problem kinds as string literals (use ProblemKind):\n" + "\n".join(found)


# --- entry accessors: one vocabulary, in agentscope/log/ --------------------------------------

ENTRY_KEYS = ("event", "verification", "stateHash", "recordedAt")
"""Entry fields only :mod:`agentscope.log.entry` (and the rest of ``log/``) read by key: the event,
its recorded hash and ``recordedAt`` (spec §1.1, §1.4)."""

# (module, key) pairs still reading an entry field by hand outside log/. A ratchet: a new pair
# fails, and so does one of these disappearing (then delete it here).
KNOWN_ACCESSOR_COPIES: set[tuple[str, str]] = {
    ("agentscope/_query_lang.py", "event"),
    ("agentscope/counterfactual.py", "event"),
    ("agentscope/forks.py", "event"),
    ("agentscope/forks.py", "recordedAt"),
    ("agentscope/render/html.py", "event"),
    ("agentscope/render/html.py", "recordedAt"),
    ("agentscope/widgets/forkview.py", "event"),
}

# the datetime parsers a second recordedAt reader would use (the one is log/entry.py's)
DATE_PARSERS = ("fromisoformat", "strptime", "to_datetime")


def _is_table(node: ast.expr) -> bool:
    """A DataFrame by its name (``df["event"]`` is a column, not an entry field)."""
    name = node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else ""
    return name == "df" or name.endswith(("_df", "frame"))


def accessor_copies(rel: str, tree: ast.Module) -> set[tuple[str, str]]:
    """``(module, key)`` for each read of an entry field by key (``x["recordedAt"]``,
    ``x.get("event")``) and each date parser called, in a module outside ``log/`` and
    ``engines/`` (an engine's own events are not entries)."""
    out: set[tuple[str, str]] = set()
    for node in ast.walk(tree):
        key = None
        if (isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load)
                and isinstance(node.slice, ast.Constant) and not _is_table(node.value)):
            key = node.slice.value
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
              and node.func.attr == "get" and node.args and isinstance(node.args[0], ast.Constant)):
            key = node.args[0].value
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
              and node.func.attr in DATE_PARSERS):
            key = node.func.attr
        elif isinstance(node, ast.Compare) and isinstance(node.left, ast.Constant):
            key = node.left.value if any(isinstance(o, ast.In) for o in node.ops) else None
        if key in ENTRY_KEYS or key in DATE_PARSERS:
            out.add((rel, str(key)))
    return out


def _outside_log() -> Iterator[tuple[str, ast.Module]]:
    for rel, tree in _sources():
        if not rel.startswith(("agentscope/log/", "agentscope/engines/")):
            yield rel, tree


def test_the_ratchet_sees_an_accessor_copy() -> None:
    tree = ast.parse('def f(e, df):\n    return e.get("event", {}).get("type"), e["recordedAt"], df["event"]\n'
                     'def g(e):\n    e["verification"] = {}\n'
                     'def h(s):\n    import datetime\n    return datetime.datetime.fromisoformat(s)\n')
    assert accessor_copies("m.py", tree) == {("m.py", "event"), ("m.py", "recordedAt"),
                                             ("m.py", "fromisoformat")}


def test_entry_fields_are_read_through_log_entry() -> None:
    """Outside ``log/``, entries are read with :mod:`agentscope.log.entry`'s accessors
    (``event_of``, ``event_type``, ``recorded_hash``, ``recorded_at_ms``...): a new hand-written
    ``entry["event"]["type"]``, ``["verification"]["stateHash"]`` or ``recordedAt`` parser fails."""
    found: set[tuple[str, str]] = set()
    for rel, tree in _outside_log():
        found |= accessor_copies(rel, tree)
    new = found - KNOWN_ACCESSOR_COPIES
    assert not new, f"entry fields read by hand outside log/ (use agentscope.log.entry): {sorted(new)}"
    gone = KNOWN_ACCESSOR_COPIES - found
    assert not gone, f"gone: delete them from KNOWN_ACCESSOR_COPIES: {sorted(gone)}"


# --- private names: no module reaches into another's ``_x`` ------------------------------------

# (module, name) pairs still reaching into another module's private name. A ratchet: a new pair
# fails, and so does one of these disappearing (then delete it here).
KNOWN_PRIVATE_REACH: set[tuple[str, str]] = {
    ("agentscope/engines/_statechart_algo.py", "agentscope.engines._statechart_nodes._to_state_path"),
    ("agentscope/log/fast.py", "_entries"),
    ("agentscope/pipeline/timeline.py", "agentscope.pipeline.onepass._CODE"),
    ("agentscope/recorder.py", "agentscope.engines._statechart_nodes"),
    ("agentscope/render/chart.py", "agentscope.render.dot._inside"),
    ("agentscope/widgets/forkview.py", "agentscope.render._escape"),
    ("agentscope/widgets/questions.py", "agentscope.render._escape"),
    ("agentscope/widgets/timetravel.py", "agentscope.render._escape"),
}


def _defined_here(tree: ast.Module) -> set[str]:
    """Every name a module defines or assigns (functions, classes, attributes it stores)."""
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out.add(node.name)
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
            out.add(node.attr)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            out.add(node.id)
    return out


def _is_module(dotted: str) -> bool:
    path = PKG.parent.joinpath(*dotted.split("."))
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def private_reach(rel: str, tree: ast.Module) -> set[tuple[str, str]]:
    """``(module, name)`` for each private name of another module this one uses: imported from
    another module (``from agentscope.bulk import _Chunk``; a private module of the same package
    is the package's own), or read as an attribute the module does not define itself
    (``tl._index``; ``self._x`` and ``cls._x`` are the object's own)."""
    out: set[tuple[str, str]] = set()
    here = _defined_here(tree)
    module = rel.removesuffix(".py").replace("/", ".")
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").startswith("agentscope"):
            mod = node.module or ""
            for target in [mod] + [f"{mod}.{a.name}" for a in node.names]:
                parts = target.split(".")
                if target != mod and not _is_module(target):
                    if _private(parts[-1]):
                        out.add((rel, target))  # a private name of another module
                    continue
                first = next((k for k, p in enumerate(parts) if _private(p)), None)
                if first is not None and not module.startswith(".".join(parts[:first]) + "."):
                    out.add((rel, target))  # a private module used outside the package holding it
        elif (isinstance(node, ast.Attribute) and _private(node.attr) and node.attr not in here
              and not (isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"))):
            out.add((rel, node.attr))
    return out


def test_the_ratchet_sees_a_private_reach() -> None:
    tree = ast.parse("from agentscope.bulk import _Chunk, verify_store\n"
                     "from agentscope.widgets._source import make_timeline\n"
                     "class T:\n    def __init__(self):\n        self._own = 1\n"
                     "    def f(self, tl):\n        return self._own, tl._index, tl._own\n")
    assert private_reach("agentscope/m.py", tree) == {
        ("agentscope/m.py", "agentscope.bulk._Chunk"), ("agentscope/m.py", "agentscope.widgets._source"),
        ("agentscope/m.py", "_index")}
    # inside its own package a private module is the package's
    inner = ast.parse("from agentscope.widgets._source import make_timeline\n")
    assert private_reach("agentscope/widgets/player.py", inner) == set()


def test_no_module_reaches_into_another_modules_privates() -> None:
    found: set[tuple[str, str]] = set()
    for rel, tree in _sources():
        found |= private_reach(rel, tree)
    new = found - KNOWN_PRIVATE_REACH
    assert not new, "private names used across modules (give them a public name):\n" + "\n".join(
        f"{m}: {n}" for m, n in sorted(new))
    gone = KNOWN_PRIVATE_REACH - found
    assert not gone, f"gone: delete them from KNOWN_PRIVATE_REACH: {sorted(gone)}"


# --- one recordedAt parser ---------------------------------------------------------------------


def test_one_recorded_at_parser() -> None:
    """``EventLog.df``'s reader, the millisecond accessor and the Recorder's clock read a
    ``recordedAt`` through the one V8-rules parser (spec §1.4): a day past the month's end rolls
    over, ``24:00:00`` is the next midnight, and a string V8 rejects is refused by all of them."""
    from agentscope.errors import RecorderError
    from agentscope.log.entry import recorded_at_ms, recorded_at_ns
    from agentscope.log.model import recorded_at_to_ns
    from agentscope.recorder import ManualClock

    march_2 = 1772409600000  # 2026-03-02T00:00:00Z (Date.parse("2026-02-30T00:00:00Z"))
    for text, ms in [("2026-02-30T00:00:00Z", march_2), ("2026-03-01T24:00:00Z", march_2),
                     ("2026-03-02T01:30:00.0009+01:30", march_2), ("1969-12-31T23:59:59.9999Z", -1)]:
        assert recorded_at_ms(text) == ms == recorded_at_ns(text) // 1_000_000  # type: ignore[operator]
        assert recorded_at_to_ns(text) == recorded_at_ns(text)
        assert ManualClock(text).now_ms == ms  # fromisoformat refused Feb 30 with a ValueError
    assert recorded_at_ns("1970-01-01T00:00:00.000000001Z") == 1
    for bad in ("2026-13-01T00:00:00Z", "2026-03-01T00:00:00", "2026-03-01T24:00:00.5Z"):
        assert recorded_at_ms(bad) is None and recorded_at_to_ns(bad) is None
        with pytest.raises(RecorderError, match="recordedAt"):
            ManualClock(bad)


# --- one presentation path: HTML is written in render/ -----------------------------------------

MARKUP = re.compile(
    r"<(?:/?(?:a|b|i|p|br|hr|em|ul|ol|li|tr|td|th|h[1-6]|div|pre|svg|img|code|span|form|html|head|"
    r"body|meta|link|table|thead|tbody|style|title|input|label|button|select|option|script|strong|"
    r"details|summary|iframe)\b|!doctype|!--)",
    re.I,
)

# Modules outside render/ that still write markup (the widgets' own chrome). A ratchet: a new
# module fails, and so does one of these disappearing (then delete it here).
KNOWN_MARKUP: set[str] = {
    "agentscope/widgets/_treewidget.py",
    "agentscope/widgets/forkview.py",
    "agentscope/widgets/questions.py",
    "agentscope/widgets/timetravel.py",
}


def _docstring_ids(tree: ast.Module) -> set[int]:
    out: set[int] = set()
    for node in ast.walk(tree):
        if (isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
                and node.body and isinstance(node.body[0], ast.Expr)
                and isinstance(node.body[0].value, ast.Constant)):
            out.add(id(node.body[0].value))
    return out


def markup_in(tree: ast.AST, docstrings: set[int]) -> list[int]:
    """Lines of string constants (f-string parts included, docstrings not) holding an HTML tag,
    and of calls to a ``to_html(..., escape=...)`` (pandas writing markup)."""
    out = []
    for node in ast.walk(tree):
        text = (isinstance(node, ast.Constant) and isinstance(node.value, str)
                and id(node) not in docstrings and MARKUP.search(node.value))
        pandas = (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                  and node.func.attr == "to_html" and any(k.arg == "escape" for k in node.keywords))
        if text or pandas:
            out.append(node.lineno)
    return out


def test_the_ratchet_sees_markup() -> None:
    tree = ast.parse('def _repr_html_(self):\n    """<b>doc</b>"""\n    return f"<div>{x}</div>"\n'
                     'def f(df):\n    return df.to_html(escape=True)\n'
                     'def g():\n    return "<EventLog: 3 entries>", "a < b"\n')
    assert sorted(markup_in(tree, _docstring_ids(tree))) == [3, 3, 5]


def test_no_repr_html_outside_render_writes_markup() -> None:
    """Every ``_repr_html_`` outside ``render/`` hands values to the one guarded repr helper
    (:func:`agentscope.render.reprs.repr_html`); no module outside ``render/`` holds markup but
    the widgets listed in ``KNOWN_MARKUP``."""
    reprs, modules = [], set()
    for rel, tree in _sources():
        if rel.startswith("agentscope/render/"):
            continue
        docs = _docstring_ids(tree)
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef) and node.name == "_repr_html_" and markup_in(node, docs):
                reprs.append(f"{rel}:{node.lineno}")
        if markup_in(tree, docs):
            modules.add(rel)
    assert not reprs, f"_repr_html_ writing markup (hand values to agentscope.render.reprs): {reprs}"
    new = modules - KNOWN_MARKUP
    assert not new, f"markup outside render/ (use agentscope.render): {sorted(new)}"
    gone = KNOWN_MARKUP - modules
    assert not gone, f"gone: delete them from KNOWN_MARKUP: {sorted(gone)}"

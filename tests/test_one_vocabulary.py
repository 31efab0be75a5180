"""Ratchets for "one of each": each test reads the package's source with ``ast`` and fails on a
new second statement of something that exists once (a problem kind written as a string, ...)."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

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

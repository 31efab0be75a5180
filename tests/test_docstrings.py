"""Every public name documents itself completely: parameters, returns, an example (NumPy style).

The API reference is generated from these docstrings (mkdocstrings, NumPy style), so a missing
section is a hole in the reference. Read with griffe, the parser the site uses.
"""

from __future__ import annotations

import doctest
import inspect

import pytest

import agentscope
from tests.conftest import node_ready

griffe = pytest.importorskip("griffe")

PUBLIC = [n for n in agentscope.__all__ if not n.startswith("__")]


def _sections(obj: object) -> dict[str, object]:
    doc = inspect.getdoc(obj) or ""
    parsed = griffe.Docstring(doc, lineno=1).parse("numpy")
    return {s.kind.value: s for s in parsed}


def _documented_params(sections: dict[str, object]) -> set[str]:
    # a dataclass documents its fields as Attributes; anything else as Parameters
    names: set[str] = set()
    for kind in ("parameters", "attributes"):
        section = sections.get(kind)
        if section is not None:
            names |= {p.name.lstrip("*") for p in section.value}  # type: ignore[attr-defined]
    return names


@pytest.mark.parametrize("name", PUBLIC)
def test_public_name_has_an_example(name: str) -> None:
    obj = getattr(agentscope, name)
    if not (inspect.isclass(obj) or callable(obj)):
        pytest.skip("a constant")
    assert "examples" in _sections(obj), f"agentscope.{name}: no Examples section"


@pytest.mark.parametrize("name", PUBLIC)
def test_public_callable_documents_parameters_and_returns(name: str) -> None:
    obj = getattr(agentscope, name)
    target = obj.__init__ if inspect.isclass(obj) else obj
    if not callable(target) or (inspect.isclass(obj) and issubclass(obj, BaseException)):
        pytest.skip("not a documented callable")
    sig = inspect.signature(target)
    params = {p for p, v in sig.parameters.items() if p not in ("self", "cls")
              and v.kind not in (v.VAR_POSITIONAL, v.VAR_KEYWORD)}
    sections = _sections(obj)
    missing = params - _documented_params(sections)
    assert not missing, f"agentscope.{name}: parameters not documented: {sorted(missing)}"
    if not inspect.isclass(obj) and sig.return_annotation not in (None, "None", inspect.Signature.empty):
        assert "returns" in sections or "yields" in sections, f"agentscope.{name}: no Returns section"


@pytest.mark.parametrize("name", PUBLIC)
def test_public_examples_run(name: str) -> None:
    # the Examples are run as written (doctest, ``...`` wildcards): they show what the code does
    obj = getattr(agentscope, name)
    found = doctest.DocTestFinder(recurse=False).find(obj, f"agentscope.{name}", globs={})
    if not found or not found[0].examples:
        pytest.skip("no examples")
    if "load_machine(" in (inspect.getdoc(obj) or "") and not node_ready():
        pytest.skip("the example loads a JS machine: needs node and `npm ci`")
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    report: list[str] = []
    for test in found:
        runner.run(test, out=report.append)
    assert runner.failures == 0, "".join(report)

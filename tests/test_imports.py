"""Imports point down the pipeline: no cycles among the package's own modules, and a cheap
``import agentscope`` (no pandas, no ipywidgets).

The module graph is read from the source with ``ast``: every ``import``/``from … import`` of an
``agentscope`` module, at module level or inside a function (a lazy import is still an arrow),
except under ``if TYPE_CHECKING:`` (annotations only, never run).
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PKG = ROOT / "agentscope"

# Cycles still in the tree, each as the sorted tuple of its modules. This is a ratchet: a new
# cycle fails, and so does one of these disappearing (then delete it here).
KNOWN_CYCLES: set[tuple[str, ...]] = set()


def _module_name(path: Path) -> str:
    rel = path.relative_to(ROOT).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for p in PKG.rglob("*.py")}


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imports(name: str, path: Path, known: set[str]) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    is_pkg = path.name == "__init__.py"
    out: set[str] = set()

    def resolve(mod: str) -> str | None:
        while mod and mod not in known:
            mod = mod.rpartition(".")[0]
        return mod or None

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("agentscope"):
                    target = resolve(alias.name)
                    if target:
                        out.add(target)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = name if is_pkg else name.rpartition(".")[0]
                for _ in range(node.level - 1):
                    base = base.rpartition(".")[0]
                mod = f"{base}.{node.module}" if node.module else base
            else:
                mod = node.module or ""
            if mod.startswith("agentscope"):
                for alias in node.names:
                    sub = f"{mod}.{alias.name}"
                    target = sub if sub in known else resolve(mod)
                    if target:
                        out.add(target)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    out.discard(name)
    return out


def import_graph() -> dict[str, set[str]]:
    """Module -> the agentscope modules it imports (explicitly; parent packages not implied)."""
    mods = _modules()
    known = set(mods)
    return {name: _imports(name, path, known) for name, path in mods.items()}


def cycles(graph: dict[str, set[str]]) -> set[tuple[str, ...]]:
    """The strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: set[tuple[str, ...]] = set()
    counter = [0]

    def strong(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.add(tuple(sorted(comp)))

    for v in sorted(graph):
        if v not in index:
            strong(v)
    return out


def test_the_graph_reader_sees_lazy_imports_and_skips_type_checking() -> None:
    g = import_graph()
    assert "agentscope.pipeline.fold" in g["agentscope.pipeline.timeline"]
    assert "agentscope.stores" in g["agentscope.pipeline.segments"]  # a lazy import in a function
    assert "agentscope.coverage_map" not in g["agentscope.render.player"]  # TYPE_CHECKING only
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == {("a", "b", "c")}
    assert cycles({"a": {"b"}, "b": set()}) == set()


def test_no_import_cycles() -> None:
    found = cycles(import_graph())
    new = found - KNOWN_CYCLES
    assert not new, f"import cycles: {sorted(new)}"
    gone = KNOWN_CYCLES - found
    assert not gone, f"these cycles are gone: delete them from KNOWN_CYCLES: {sorted(gone)}"


def test_the_pipeline_package_reads_top_to_bottom() -> None:
    """Each stage imports only the stages above it: segments -> fold -> explain -> onepass ->
    report -> timeline (and the snapshot store below the pass)."""
    order = ["segments", "fold", "explain", "snapshots", "onepass", "report", "timeline"]
    g = import_graph()
    for k, stage in enumerate(order):
        deps = {d.rpartition(".")[2] for d in g[f"agentscope.pipeline.{stage}"]
                if d.startswith("agentscope.pipeline.")}
        later = deps & set(order[k:])
        assert not later, f"pipeline.{stage} imports a later stage: {sorted(later)}"


HEAVY = ("pandas", "numpy", "ipywidgets", "jsonpatch", "pyarrow")


@pytest.mark.parametrize(("stmt", "allowed"), [
    ("import agentscope", ()),
    ("import agentscope.pipeline", ()),
    ("from agentscope import errors, AgentscopeError", ()),
    # the fold reads entries (log/, hashing: numpy) but never builds a frame (pandas)
    ("import agentscope.pipeline.fold as fold", ("numpy",)),
    ("from agentscope import replay", ("numpy",)),
])
def test_import_agentscope_is_cheap(stmt: str, allowed: tuple[str, ...]) -> None:
    """``import agentscope`` loads neither pandas, numpy nor ipywidgets: every flat name loads on
    first use (the time it takes is ``benchmarks/bench_import.py``'s figure, not a test's)."""
    code = (
        f"import sys; {stmt}; "
        f"heavy = [m for m in {HEAVY!r} if m in sys.modules]; "
        "print(','.join(heavy))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT,
                         check=True)
    loaded = set(out.stdout.strip().split(",")) - {""}
    assert loaded <= set(allowed), f"{stmt!r} imported {sorted(loaded - set(allowed))}"


def test_replay_is_a_function_and_the_pipeline_a_package() -> None:
    """``agentscope.replay`` and ``agentscope.whatif`` are the functions whatever was imported
    before them: no flat-API name is also a submodule (``import … as`` resolves through the
    attribute, so a module shadowed by a function cannot be imported that way)."""
    code = (
        "import agentscope.pipeline.fold as f; import agentscope.pipeline.onepass as p; "
        "import agentscope.counterfactual as cf; "
        "import agentscope, agentscope.pipeline.timeline; "
        "from agentscope.pipeline import Timeline, VerifyReport, verify; "
        "assert agentscope.replay is f.replay, agentscope.replay; "
        "assert agentscope.verify is verify and agentscope.Timeline is Timeline; "
        "import importlib; assert importlib.import_module('agentscope.pipeline').Timeline is Timeline; "
        "assert hasattr(p, 'Pass'); assert agentscope.whatif is cf.whatif, agentscope.whatif"
    )
    subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True)


# The layers of docs/pipeline.md's module map, bottom first: a module may import its own layer
# and the layers below it, never one above (a lazy import counts; ``TYPE_CHECKING`` does not).
LAYERS: list[tuple[str, ...]] = [
    ("agentscope._deep", "agentscope.errors", "agentscope.hashing", "agentscope.jsondiff",
     "agentscope._query_lang"),
    # the one escaping helper and the one guarded repr helper sit with the log: every value's
    # ``_repr_html_`` (a log, a frame, a report) hands its values to them
    ("agentscope.log", "agentscope.render._escape", "agentscope.render.reprs"),
    ("agentscope.stores",),
    ("agentscope.frames",),
    ("agentscope.engines",),
    ("agentscope.render", "agentscope.queries", "agentscope.examples", "agentscope.step"),
    ("agentscope.pipeline",),
    ("agentscope.forks", "agentscope.bulk", "agentscope.verify_cache", "agentscope.follow",
     "agentscope.recorder", "agentscope.coverage_map"),
]


def _layer(module: str) -> int | None:
    for k, prefixes in enumerate(LAYERS):
        if any(module == p or module.startswith(p + ".") for p in prefixes):
            return k
    return None  # views, what-if, CLI, the package root: the top, may import anything


def test_no_flat_name_is_also_a_submodule() -> None:
    import agentscope

    subs = {p.stem for p in PKG.iterdir() if (p.suffix == ".py" or (p / "__init__.py").exists())}
    assert not (set(agentscope.__all__) & subs), sorted(set(agentscope.__all__) & subs)


def test_imports_point_down_the_layers() -> None:
    up = []
    for module, deps in import_graph().items():
        here = _layer(module)
        if here is None:
            continue
        for dep in deps:
            there = _layer(dep)
            if dep != "agentscope" and (there is None or there > here):
                up.append(f"{module} -> {dep}")
    assert not up, "imports that run back up the pipeline: " + ", ".join(sorted(up))


def test_the_module_map_lists_every_module() -> None:
    """docs/pipeline.md's module map names every module of the package (a new module gets a row,
    or at least a name in one, with its one job)."""
    doc = (ROOT / "docs" / "pipeline.md").read_text(encoding="utf-8")
    start = doc.index("## The module map")
    table = doc[start:doc.index("\n## ", start + 1)]
    missing = sorted(m for m in _modules() if f"`{m}`" not in table)
    assert not missing, f"modules missing from docs/pipeline.md's module map: {missing}"

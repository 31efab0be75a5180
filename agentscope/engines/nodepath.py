"""Where the Node engine finds ``xstate`` (and ``tsx`` for TypeScript machines), in a stated order.

A machine module's ``import "xstate"`` is resolved, in this order:

1. **the module's own project**: Node's resolution from the module's folder (its
   ``node_modules``, then each parent folder's), exactly as ``node`` would;
2. **``AGENTSCOPE_NODE_PATH``**: folders separated by :data:`os.pathsep`, each a ``node_modules``
   folder or a folder that contains one (like ``NODE_PATH``);
3. **the per-user cache** (:func:`node_cache_dir`, ``~/.cache/agentscope/node`` by default,
   ``$XDG_CACHE_HOME/agentscope/node`` when set), which ``agentscope setup-node``
   (:func:`setup_node`) fills with the pinned ``xstate`` and ``tsx`` by npm.

Steps 2 and 3 apply only to what step 1 cannot find, so a project's own ``xstate`` always wins.
They are wired into Node by ``runner/fallback.mjs`` (only when the module's project has no
``xstate``): a module-resolution hook (``module.register``, Node >= 20.6) for ES modules and
``NODE_PATH`` for CommonJS ``require``.

TypeScript machines (``.ts``, ``.mts``, ``.cts``) are loaded through ``tsx`` (the npm TypeScript
loader built on esbuild), found in the same order, on any supported Node (>= 20.6); without
``tsx``, Node >= 22.6 strips the types itself (``--experimental-strip-types``).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import urllib.parse
from pathlib import Path

from agentscope.errors import MachineLoadError

__all__ = [
    "NODE_PATH_ENV",
    "TSX_PIN",
    "XSTATE_PIN",
    "node_argv",
    "node_cache_dir",
    "node_search_path",
    "setup_node",
]

XSTATE_PIN = "6.0.0-alpha.48"
"""The ``xstate`` the bundled machines and ``@statelyai/agent`` 2.0 use (also in ``package.json``)."""
TSX_PIN = "4.23.15"
"""The ``tsx`` (TypeScript loader, esbuild) used for ``.ts`` machines (also in ``package.json``)."""
NODE_PATH_ENV = "AGENTSCOPE_NODE_PATH"

_RUNNER_DIR = Path(__file__).resolve().parent / "runner"
_FALLBACK = _RUNNER_DIR / "fallback.mjs"
TS_SUFFIXES = frozenset({".ts", ".mts", ".cts"})
JS_SUFFIXES = frozenset({".mjs", ".js", ".cjs"})
_STRIP_TYPES = (22, 6, 0)
_STRIP_TYPES_DEFAULT = (23, 6, 0)


def node_cache_dir() -> Path:
    """The per-user folder ``agentscope setup-node`` installs into (it holds ``node_modules``)."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join("~", ".cache")
    return Path(base).expanduser() / "agentscope" / "node"


def node_search_path() -> list[Path]:
    """Steps 2 and 3 of the order: the ``node_modules`` folders tried after the module's own."""
    out: list[Path] = []
    for part in os.environ.get(NODE_PATH_ENV, "").split(os.pathsep):
        if not part.strip():
            continue
        p = Path(part).expanduser().resolve()
        out.append(p if p.name == "node_modules" else p / "node_modules")
    out.append(node_cache_dir() / "node_modules")
    return out


def _find_package(name: str, start: Path, *, project_only: bool = False) -> Path | None:
    """The folder of package ``name`` in the resolution order, starting at folder ``start``
    (``project_only``: step 1 alone, Node's own lookup)."""
    for folder in (start, *start.parents):
        candidate = folder / "node_modules" / name
        if (candidate / "package.json").is_file():
            return candidate
    if project_only:
        return None
    for modules in node_search_path():
        if (modules / name / "package.json").is_file():
            return modules / name
    return None


def _tsx_loader(start: Path) -> str | None:
    """The file URL of tsx's loader (its package ``"."`` export), or ``None`` without tsx."""
    pkg = _find_package("tsx", start)
    if pkg is None:
        return None
    try:
        meta = json.loads((pkg / "package.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    exports = meta.get("exports")
    entry = exports.get(".") if isinstance(exports, dict) else None
    if not isinstance(entry, str):
        return None
    loader = (pkg / entry).resolve()
    return loader.as_uri() if loader.is_file() else None


def node_argv(module: Path, node: str, version: tuple[int, int, int] | None) -> list[str]:
    """The Node options that load ``module`` with ``xstate``/``tsx`` resolved in the stated order.

    Parameters
    ----------
    module
        The machine module (absolute path).
    node
        The Node executable (named in errors).
    version
        Its version, or ``None`` when unknown.

    Raises
    ------
    MachineLoadError
        An unsupported extension; a TypeScript module with no ``tsx`` found on a Node that cannot
        strip types.
    """
    suffix = module.suffix.lower()
    if suffix not in TS_SUFFIXES | JS_SUFFIXES:
        raise MachineLoadError(
            f"Unsupported machine module extension {suffix!r} for {module}; use .mjs, .js, .cjs, .ts, "
            ".mts or .cts."
        )
    # --experimental-import-meta-resolve: lets the runner resolve `xstate` with the module as parent.
    argv = ["--experimental-import-meta-resolve"]
    if _find_package("xstate", module.parent, project_only=True) is None:
        # steps 2 and 3, only when step 1 has no xstate (the hook costs ~60 ms of start-up)
        query = urllib.parse.urlencode({"path": json.dumps([str(p) for p in node_search_path()])})
        argv += ["--import", f"{_FALLBACK.as_uri()}?{query}"]
    if suffix in JS_SUFFIXES:
        return argv
    tsx = _tsx_loader(module.parent)
    if tsx is not None:
        return [*argv, "--import", tsx]
    if version is None or version < _STRIP_TYPES:
        found = "of unknown version" if version is None else "v" + ".".join(map(str, version))
        raise MachineLoadError(
            f"Loading the TypeScript module {module} needs tsx (not found next to the module, in "
            f"{NODE_PATH_ENV} or in {node_cache_dir()}) or Node.js >= 22.6; the Node at {node!r} is "
            f"{found}. Run `agentscope setup-node` (installs tsx@{TSX_PIN} and xstate@{XSTATE_PIN} "
            "for your user), or `npm install tsx` in the module's project."
        )
    if version < _STRIP_TYPES_DEFAULT:
        argv.append("--experimental-strip-types")
    return [*argv, "--disable-warning=ExperimentalWarning"]


def setup_node(target: str | os.PathLike[str] | None = None, *, npm: str = "npm") -> Path:
    """Install the pinned ``xstate`` and ``tsx`` into ``target`` (default :func:`node_cache_dir`).

    Runs ``npm install`` there (network access to the npm registry), writing a ``package.json``
    with exact versions :data:`XSTATE_PIN` and :data:`TSX_PIN`. Returns ``target``.

    Raises
    ------
    MachineLoadError
        npm is not found, or ``npm install`` failed (its last output lines are in the message).
    """
    folder = Path(target).expanduser() if target is not None else node_cache_dir()
    exe = shutil.which(npm)
    if exe is None:
        raise MachineLoadError(f"npm ({npm!r}) not found; install Node.js >= 20 with npm, then run again")
    folder.mkdir(parents=True, exist_ok=True)
    manifest = {
        "name": "agentscope-node-cache",
        "private": True,
        "description": "Written by `agentscope setup-node`: the Node packages agentscope's engine uses.",
        "dependencies": {"tsx": TSX_PIN, "xstate": XSTATE_PIN},
    }
    (folder / "package.json").write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    proc = subprocess.run(
        [exe, "install", "--no-audit", "--no-fund", "--loglevel=error"],
        cwd=folder, capture_output=True, text=True, check=False,
    )
    if proc.returncode != 0:
        tail = " ".join((proc.stderr or proc.stdout).strip().splitlines()[-3:])
        raise MachineLoadError(f"npm install in {folder} failed (exit {proc.returncode}): {tail}")
    return folder

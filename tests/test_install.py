"""Installing agentscope: the built wheel in a bare venv, and where the Node engine finds xstate/tsx.

The wheel test does what the README's install block says, as typed (``make dist``, ``pip install
dist/…whl``, ``agentscope setup-node``) into a fresh venv without dev extras, then runs the README's
notebook snippet there with the Python engine and the Node engine, and a TypeScript machine on this
Node. The resolution tests pin the order of :mod:`agentscope.engines.nodepath`.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import venv
from pathlib import Path

import pytest

from agentscope.engines.nodepath import TSX_PIN, XSTATE_PIN, node_argv
from agentscope.errors import MachineLoadError
from tests.conftest import FIXTURES, MACHINES, REPO, node_ready, requires_node
from tests.test_readme import block_with, python_snippet, run_lines

COUNTER_MJS = REPO / "agentscope" / "examples" / "machines" / "counter.mjs"


def _pip_cache() -> str:
    """pip's cache as it is now, kept when a test moves ``XDG_CACHE_HOME``."""
    proc = subprocess.run([sys.executable, "-m", "pip", "cache", "dir"], capture_output=True, text=True,
                          timeout=60, check=False)
    return proc.stdout.strip() if proc.returncode == 0 and proc.stdout.strip() else ""


def _isolated_node_env(env: dict[str, str], cache_home: Path) -> dict[str, str]:
    out = {k: v for k, v in env.items() if k not in ("AGENTSCOPE_NODE_PATH", "VIRTUAL_ENV", "PYTHONPATH")}
    out["XDG_CACHE_HOME"] = str(cache_home)
    pip_cache = _pip_cache()
    if pip_cache:
        out["PIP_CACHE_DIR"] = pip_cache
    return out


def test_package_json_pins_what_setup_node_installs() -> None:
    deps = json.loads((REPO / "package.json").read_text(encoding="utf-8"))["dependencies"]
    assert deps == {"tsx": TSX_PIN, "xstate": XSTATE_PIN}
    lock = json.loads((REPO / "package-lock.json").read_text(encoding="utf-8"))["packages"]
    assert lock["node_modules/xstate"]["version"] == XSTATE_PIN
    assert lock["node_modules/tsx"]["version"] == TSX_PIN


_SNIPPET_CHECK = """
import json
out = {"file": asc.__file__, "ok": bool(report.ok), "counts": report.counts(),
       "divergence": asc.compare(log, asc.read_log(store, thread="fork")).divergence,
       "engine": type(m).__name__}
m.close()
print("RESULT " + json.dumps(out))
"""


def _run_snippet(python: Path, engine: str, cwd: Path, env: dict[str, str]) -> dict[str, object]:
    script = cwd / f"readme_{engine}.py"
    script.write_text(python_snippet(engine) + _SNIPPET_CHECK, encoding="utf-8")
    proc = subprocess.run([str(python), str(script)], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=300, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    line = next(ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT "))
    result: dict[str, object] = json.loads(line[len("RESULT "):])
    return result


@pytest.mark.skipif(shutil.which("make") is None, reason="needs make")
def test_wheel_in_a_bare_venv_runs_the_readme(tmp_path: Path) -> None:
    pytest.importorskip("build", reason="`build` (a dev extra) makes the distributions")
    home = tmp_path / "venv"
    venv.EnvBuilder(with_pip=True).create(home)
    env = _isolated_node_env(dict(os.environ), tmp_path / "cache")
    env["PATH"] = f"{home / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    env["PIP_NO_COMPILE"] = "1"  # no .pyc for pandas & co: a third of the install time
    install = block_with("make dist")
    if not node_ready():
        install = [ln for ln in install if "setup-node" not in ln]
    outputs = {}
    for line, code, out in run_lines(install, REPO, env, timeout=900):
        assert code == 0, (line, out)
        outputs[line.split(" #")[0].strip()] = out
    if node_ready():
        cache = tmp_path / "cache" / "agentscope" / "node" / "node_modules"
        assert outputs["agentscope setup-node"] == f"installed xstate@{XSTATE_PIN} and tsx@{TSX_PIN} in {cache}"
    assert (REPO / "dist").is_dir() and any((REPO / "dist").glob("*.tar.gz"))  # the sdist too
    python = home / "bin" / "python"
    # no dev extras: the test tools are not there
    proc = subprocess.run([str(python), "-c", "import importlib.util as u; print(u.find_spec('pytest'))"],
                          capture_output=True, text=True, env=env, timeout=120, check=False)
    assert proc.stdout.strip() == "None"
    work = tmp_path / "work"
    work.mkdir()
    # a folder holding something called `agentscope` (a clone) does not shadow the installed package
    (work / "agentscope").symlink_to(REPO)
    result = _run_snippet(python, "python", work, env)
    site = home / "lib" / f"python{sys.version_info.major}.{sys.version_info.minor}" / "site-packages"
    assert result["file"] == str(site / "agentscope" / "__init__.py")
    assert (result["ok"], result["divergence"], result["engine"]) == (True, 18, "StatechartMachine")
    assert result["counts"]["verified"] == 91  # type: ignore[index]
    proc = subprocess.run([str(python), "-m", "agentscope", "--version"], capture_output=True, text=True,
                          env=env, timeout=120, check=False)
    assert (proc.returncode, proc.stdout) == (0, "agentscope 0.1.0\n")
    if not node_ready():
        return
    # Node engine: the bundled triage.mjs sits in site-packages, which has no node_modules; xstate
    # comes from the per-user cache `agentscope setup-node` filled
    assert (tmp_path / "cache" / "agentscope" / "node" / "node_modules" / "xstate").is_dir()
    result = _run_snippet(python, "node", work, env)
    assert (result["ok"], result["divergence"], result["engine"]) == (True, 18, "XStateMachine")
    assert result["counts"]["verified"] == 91  # type: ignore[index]
    # a TypeScript machine outside any Node project, on this Node, through the cached tsx
    ts = tmp_path / "triage.ts"
    shutil.copy(MACHINES / "triage.ts", ts)
    proc = subprocess.run([str(home / "bin" / "agentscope"), "verify", str(FIXTURES / "g_triage.main.log.json"),
                           "--machine", str(ts)], capture_output=True, text=True, env=env, timeout=300,
                          check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.splitlines()[1] == "  91 verified"


def test_setup_node_without_npm_is_bad_input(tmp_path: Path) -> None:
    env = _isolated_node_env(dict(os.environ), tmp_path / "cache")
    env["PATH"] = str(tmp_path / "empty-bin")  # no npm anywhere
    proc = subprocess.run([str(Path(sys.executable).with_name("agentscope")), "setup-node"],
                          capture_output=True, text=True, env=env, timeout=120, check=False)
    assert (proc.returncode, proc.stdout) == (2, "")
    assert proc.stderr.splitlines()[-1] == (
        "agentscope: error: npm ('npm') not found; install Node.js >= 20 with npm, then run again"
    )
    assert not (tmp_path / "cache" / "agentscope").exists()


def test_editable_install_wins_over_the_clone_folder(tmp_path: Path) -> None:
    """A script run from the folder that contains the clone imports the package, not the folder."""
    (tmp_path / "agentscope").symlink_to(REPO)
    script = tmp_path / "script.py"
    script.write_text("import agentscope\nprint(agentscope.__file__)\nprint(agentscope.read_log.__name__)\n",
                      encoding="utf-8")
    proc = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True,
                          timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == [str(REPO / "agentscope" / "__init__.py"), "read_log"]


# ---------------------------------------------------------------------------------------------
# where the Node engine finds xstate and tsx


@pytest.fixture
def lone_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """counter.mjs outside any Node project, with an empty per-user cache and no AGENTSCOPE_NODE_PATH."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.delenv("AGENTSCOPE_NODE_PATH", raising=False)
    (tmp_path / "proj").mkdir()
    module = tmp_path / "proj" / "counter.mjs"
    shutil.copy(COUNTER_MJS, module)
    return module


def _fake_xstate(modules: Path) -> Path:
    """A package called xstate without the pure API: loading it is an `xstate-incompatible` error."""
    pkg = modules / "xstate"
    pkg.mkdir(parents=True)
    (pkg / "package.json").write_text(json.dumps({"name": "xstate", "version": "0.0.0-fake", "type": "module",
                                                  "main": "index.js"}), encoding="utf-8")
    (pkg / "index.js").write_text("export const createMachine = (c) => ({ config: c });\n", encoding="utf-8")
    return pkg


@requires_node
def test_xstate_found_nowhere_names_every_place_and_setup_node(lone_module: Path, tmp_path: Path) -> None:
    from agentscope import load_machine

    with pytest.raises(MachineLoadError) as info:
        load_machine(lone_module)
    msg = str(info.value)
    assert f"Cannot resolve 'xstate' from {lone_module}: it is not installed in the module's project nor in " \
           f"{tmp_path / 'cache' / 'agentscope' / 'node' / 'node_modules'}" in msg
    assert "agentscope setup-node" in msg and "npm install xstate@6.0.0-alpha.48" in msg


@requires_node
@pytest.mark.parametrize("entry", ["node_modules", "project"])
def test_agentscope_node_path_is_searched(lone_module: Path, monkeypatch: pytest.MonkeyPatch, entry: str) -> None:
    from agentscope import load_machine

    monkeypatch.setenv("AGENTSCOPE_NODE_PATH", str(REPO / "node_modules" if entry == "node_modules" else REPO))
    with load_machine(lone_module) as m:
        assert (m.version, m.xstate_version) == ("adb004a6", XSTATE_PIN)


@requires_node
def test_the_per_user_cache_is_searched_last(lone_module: Path, tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    from agentscope import load_machine

    cache_modules = tmp_path / "cache" / "agentscope" / "node" / "node_modules"
    cache_modules.mkdir(parents=True)
    (cache_modules / "xstate").symlink_to(REPO / "node_modules" / "xstate")
    with load_machine(lone_module) as m:  # found in the cache alone
        assert m.xstate_version == XSTATE_PIN
    # AGENTSCOPE_NODE_PATH comes before the cache: a (fake) xstate there is the one loaded
    fake = _fake_xstate(tmp_path / "other" / "node_modules")
    monkeypatch.setenv("AGENTSCOPE_NODE_PATH", str(tmp_path / "other" / "node_modules"))
    with pytest.raises(MachineLoadError, match=r"0\.0\.0-fake") as info:
        load_machine(lone_module)
    assert str(fake) in str(info.value)
    # and the module's own project comes first of all
    (lone_module.parent / "node_modules").mkdir()
    (lone_module.parent / "node_modules" / "xstate").symlink_to(REPO / "node_modules" / "xstate")
    with load_machine(lone_module) as m:
        assert m.xstate_version == XSTATE_PIN


@requires_node
def test_commonjs_machines_use_the_same_order(lone_module: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from agentscope import load_machine

    source = lone_module.read_text(encoding="utf-8")
    cjs = lone_module.with_suffix(".cjs")
    cjs.write_text(
        source.replace('import { createMachine } from "xstate";', 'const { createMachine } = require("xstate");')
        .replace("export const counterMachine =", "const counterMachine = exports.counterMachine =")
        .replace("export default counterMachine;", ""),
        encoding="utf-8",
    )
    with pytest.raises(MachineLoadError, match="Cannot resolve 'xstate'"):
        load_machine(cjs)
    monkeypatch.setenv("AGENTSCOPE_NODE_PATH", str(REPO / "node_modules"))
    with load_machine(cjs) as m:
        assert m.version == "adb004a6"


@requires_node
def test_typescript_without_tsx_on_node_20_says_what_to_install(lone_module: Path) -> None:
    ts = lone_module.parent / "triage.ts"
    shutil.copy(MACHINES / "triage.ts", ts)
    with pytest.raises(MachineLoadError) as info:
        node_argv(ts, "node", (20, 20, 2))
    assert str(info.value) == (
        f"Loading the TypeScript module {ts} needs tsx (not found next to the module, in AGENTSCOPE_NODE_PATH "
        f"or in {lone_module.parent.parent / 'cache' / 'agentscope' / 'node'}) or Node.js >= 22.6; the Node "
        "at 'node' is v20.20.2. Run `agentscope setup-node` (installs tsx@4.23.15 and xstate@6.0.0-alpha.48 "
        "for your user), or `npm install tsx` in the module's project."
    )
    # Node >= 22.6 strips the types itself when there is no tsx
    assert "--experimental-strip-types" in node_argv(ts, "node", (22, 6, 0))
    assert "--experimental-strip-types" not in node_argv(ts, "node", (24, 0, 0))


@requires_node
@pytest.mark.parametrize("suffix", [".ts", ".mts"])
def test_typescript_machine_replays_the_real_log_on_this_node(tmp_path: Path, suffix: str) -> None:
    """The fixtures' triage.ts (tsx from the clone's node_modules) verifies g_triage main: 91/91."""
    module = MACHINES / "triage.ts"
    if suffix == ".mts":
        (tmp_path / "node_modules").symlink_to(REPO / "node_modules")
        module = tmp_path / "triage.mts"
        shutil.copy(MACHINES / "triage.ts", module)
    agentscope = Path(sys.executable).with_name("agentscope")
    proc = subprocess.run([str(agentscope), "verify", str(FIXTURES / "g_triage.main.log.json"), "--machine",
                           str(module)], capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.splitlines() == [
        f"{FIXTURES / 'g_triage.main.log.json'}: verified, 91 entries (machine supportTriage)",
        "  91 verified",
    ]

"""The README's commands run as typed and say what they claim.

Every line of every ```bash block runs (the install block in ``tests/test_install.py``, into a bare
venv; ``make test`` itself is run by ``.ci/run``), each ``make`` target the prose names exists, and
the notebook snippet runs with the Node engine and with the Python engine its comment names.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.conftest import REPO, requires_node

README = (REPO / "README.md").read_text(encoding="utf-8")
BASH_BLOCKS = re.findall(r"```bash\n(.*?)```", README, re.S)
PYTHON_BLOCK = re.findall(r"```python\n(.*?)```", README, re.S)


def python_snippet(engine: str) -> str:
    """The README's snippet; ``engine="python"`` swaps in the line its ``# no Node:`` comment gives."""
    assert len(PYTHON_BLOCK) == 1
    code = PYTHON_BLOCK[0]
    if engine == "node":
        return code
    alt = re.search(r"^# no Node: (m = [\w.]+\(\))", code, re.M)
    assert alt is not None, "the snippet names its Python-engine alternative"
    lines = [alt.group(1) if ln.startswith("m = asc.load_machine(") else ln for ln in code.splitlines()]
    assert lines != code.splitlines()
    return "\n".join(lines) + "\n"


def block_with(first_command: str) -> list[str]:
    for block in BASH_BLOCKS:
        lines = [ln for ln in block.splitlines() if ln.strip()]
        if lines and lines[0].startswith(first_command):
            return lines
    raise AssertionError(f"no bash block starts with {first_command!r}")


def expected_exit(line: str) -> int:
    """0, or the code the line's comment states (``# exit 1: …``)."""
    m = re.search(r"#\s*exit (\d+)", line)
    return int(m.group(1)) if m else 0


def run_lines(lines: list[str], cwd: Path, env: dict[str, str], timeout: int = 600) -> list[tuple[str, int, str]]:
    """Run the lines in one bash (so ``source`` carries over); each line's exit code and output."""
    marker = "__readme_rc__"
    script = "".join(f"{ln}\necho \"{marker} $?\"\n" for ln in lines)
    proc = subprocess.run(["bash", "-c", script], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=timeout, check=False)
    assert proc.returncode == 0, proc.stderr
    results: list[tuple[str, int, str]] = []
    chunk: list[str] = []
    for out_line in proc.stdout.splitlines():
        if out_line.startswith(marker):
            results.append((lines[len(results)], int(out_line.split()[1]), "\n".join(chunk)))
            chunk = []
        else:
            chunk.append(out_line)
    assert len(results) == len(lines), (proc.stdout, proc.stderr)
    return results


def test_readme_starts_with_the_two_commands() -> None:
    first = [ln for ln in BASH_BLOCKS[0].splitlines() if ln.strip()]
    assert [ln.split("#")[0].strip() for ln in first] == ["make demo", "make test"]
    assert README.index("```bash") < README.index("\n## ")  # before any section
    assert "make test" in (REPO / ".ci" / "run").read_text(encoding="utf-8")


def test_readme_make_targets_exist() -> None:
    targets = set(re.findall(r"`make ([a-z][a-z-]*)", README))
    assert {"demo", "test", "dist", "setup", "docs", "bench", "test-long"} <= targets
    for target in sorted(targets):
        proc = subprocess.run(["make", "-n", target], cwd=REPO, capture_output=True, text=True, timeout=60,
                              check=False)
        assert proc.returncode == 0, (target, proc.stderr)


def test_readme_never_claims_a_pypi_install() -> None:
    assert "pip install agentscope-timetravel" not in README
    assert "not published on PyPI" in README
    install = block_with("make dist")
    wheel = re.search(r"pip install (dist/\S+\.whl)", "\n".join(install))
    assert wheel is not None
    from agentscope import __version__

    assert wheel.group(1) == f"dist/agentscope_timetravel-{__version__}-py3-none-any.whl"


@requires_node
def test_readme_command_line_block_runs_as_typed(tmp_path: Path) -> None:
    """From a folder laid out like the clone's root (its package, tests, .venv), line by line."""
    venv = REPO / ".venv"
    if not (venv / "bin" / "activate").is_file():
        pytest.skip("no .venv (make setup)")
    for name in ("agentscope", "tests", ".venv"):
        (tmp_path / name).symlink_to(REPO / name)
    lines = block_with("source .venv/bin/activate")
    env = {k: v for k, v in os.environ.items() if k != "VIRTUAL_ENV"}
    results = run_lines(lines, tmp_path, env)
    for line, code, out in results:
        assert code == expected_exit(line), (line, code, out)
    outputs = {line.split(" # ")[0].strip(): out for line, _, out in results}
    assert "agentscope/examples/g_triage.sqlite: verified - 3/3 threads verified" in outputs[
        "agentscope verify $S --machine $M"
    ]
    assert "diverge at entry 18" in outputs["agentscope diff $S#main $S#fork"]
    assert (tmp_path / "player.html").is_file() and (tmp_path / "g_triage.main.parquet").is_file()
    assert outputs["agentscope verify g_triage.main.parquet --machine $M"] \
        .startswith("g_triage.main.parquet: verified, 91 entries")
    ts = outputs["agentscope verify $T/g_triage.main.log.json --machine $T/machines/triage.ts"]
    assert ts.splitlines() == [
        "tests/fixtures/real/g_triage.main.log.json: verified, 91 entries (machine supportTriage)",
        "  91 verified",
    ]
    assert outputs["python -m agentscope --version"] == "agentscope 0.1.0"
    assert "identical - 3/3 threads replay the same" in outputs["agentscope whatif $S --machine $M"]
    assert outputs["agentscope watch $S#main --machine $M --idle-exit 1"].splitlines()[-1] == (
        "91 entries (91 verified); stopped: idle"
    )


@requires_node
def test_readme_make_demo_runs_as_typed() -> None:
    if shutil.which("make") is None:
        pytest.skip("no make")
    proc = subprocess.run(["make", "-q", "setup"], cwd=REPO, capture_output=True, timeout=60, check=False)
    if proc.returncode != 0:
        pytest.skip("the clone's set-up is out of date (make setup); not re-installing from a test")
    proc = subprocess.run(["make", "demo"], cwd=REPO, capture_output=True, text=True, timeout=600, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "main): verified, 91 entries (machine supportTriage)" in proc.stdout
    assert "player written to " + str(REPO / "agentscope-demo.html") in proc.stdout
    # the commands it shows run as shown: agentscope is not on PATH after `make demo`
    on_path = shutil.which("agentscope")
    if on_path is None or Path(on_path).resolve() != (REPO / ".venv" / "bin" / "agentscope").resolve():
        shown = [ln for ln in proc.stdout.splitlines() if not ln.startswith("make")]  # make's own notes
        assert shown[-2:] == [
            "open it in a browser; `.venv/bin/agentscope demo --lab` opens the quickstart notebook instead",
            "(`source .venv/bin/activate` puts the agentscope command on your PATH)",
        ]


@requires_node
@pytest.mark.parametrize("engine", ["node", "python"])
def test_readme_python_snippet_runs(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, engine: str) -> None:
    monkeypatch.chdir(tmp_path)  # the snippet needs no particular working directory
    ns: dict[str, object] = {}
    exec(compile(python_snippet(engine), "README.md", "exec"), ns)  # our own README, not log content
    report = ns["report"]
    assert report.ok  # type: ignore[attr-defined]
    assert report.counts()["verified"] == 91  # type: ignore[attr-defined]
    asc = ns["asc"]
    diff = asc.compare(ns["log"], asc.read_log(ns["store"], thread="fork"))  # type: ignore[attr-defined]
    assert (diff.kind, diff.divergence) == ("fork", 18)
    ns["m"].close()  # type: ignore[attr-defined]

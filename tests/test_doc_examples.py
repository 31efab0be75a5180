"""Every code block of ``docs/`` and the README runs, and shows the output the page claims.

The pages are read as a notebook would be: a page's ``python`` blocks run in order in one
interpreter (later blocks see earlier names), each ``bash`` block runs on its own with the
package's console script on ``PATH``. Both run in an empty temporary folder that holds only the
package folder, as the root of a clone does (so ``agentscope/examples/...`` paths work), and a
page can use only what a user has.

Directives, as HTML comments on the line before a block (invisible on the site):

- ``<!-- skip: why -->`` — the block is not run (a placeholder path, a long-running server);
- ``<!-- exit-code: N -->`` — the bash block must exit with ``N`` (default 0);
- ``<!-- file: NAME -->`` — the block is the content of the file ``NAME`` the page asks you to
  write: it is saved in the folder (before anything runs), not executed;
- ``<!-- new-script -->`` — this python block and the ones after it run in a fresh interpreter
  (a page that says "save this as a script" shows separate scripts);
- ``<!-- output -->`` before a ``text`` block — that block is the expected standard output of the
  code block just above it; a line ``...`` matches any number of lines.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import REPO, requires_node

FENCE = re.compile(
    r"(?P<directive>(?:<!--[^\n]*-->\n)*)(?P<indent>[ ]*)```(?P<lang>[\w-]*)[^\n]*\n(?P<body>.*?)\n(?P=indent)```",
    re.S,
)
MARK = "@@agentscope-doc-block {}@@"


@dataclass
class Block:
    page: Path
    line: int
    lang: str
    body: str
    directives: dict[str, str]
    expected: str | None = None


def _directives(text: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for m in re.finditer(r"<!--\s*([\w-]+)\s*:?\s*(.*?)\s*-->", text):
        out[m.group(1)] = m.group(2)
    return out


def blocks(page: Path) -> list[Block]:
    text = page.read_text(encoding="utf-8")
    found: list[Block] = []
    for m in FENCE.finditer(text):
        d = _directives(m.group("directive"))
        indent = len(m.group("indent"))
        body = "\n".join(line[indent:] for line in m.group("body").split("\n"))
        line = text.count("\n", 0, m.start("indent")) + 1
        if "output" in d and found:
            found[-1].expected = body
            continue
        found.append(Block(page, line, m.group("lang"), body, d))
    return found


def pages() -> list[Path]:
    docs = sorted(p for p in (REPO / "docs").rglob("*.md")
                  if not p.is_relative_to(REPO / "docs" / "spec")
                  and not p.is_relative_to(REPO / "docs" / "reference"))
    return [REPO / "README.md", *docs]


def _matches(expected: str, actual: str) -> bool:
    exp = [line.rstrip() for line in expected.strip("\n").split("\n")]
    act = [line.rstrip() for line in actual.strip("\n").split("\n")]

    def match(i: int, j: int) -> bool:
        if i == len(exp):
            return j == len(act)
        if exp[i] == "...":
            return any(match(i + 1, k) for k in range(j, len(act) + 1))
        return j < len(act) and exp[i] == act[j] and match(i + 1, j + 1)

    return match(0, 0)


@pytest.fixture
def sandbox(tmp_path: Path) -> Path:
    # like the root of a clone: the package folder (with its bundled examples) and nothing else
    (tmp_path / "agentscope").symlink_to(REPO / "agentscope")
    return tmp_path


def _env(sandbox: Path) -> dict[str, str]:
    # the folder is importable, as the working directory is in a notebook or a REPL
    bin_dir = str(Path(sys.executable).parent)
    return dict(os.environ, PATH=f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}",
                PYTHONPATH=str(sandbox), PYTHONDONTWRITEBYTECODE="1")


def _run_python(page: Path, group: list[Block], sandbox: Path, script: Path) -> None:
    src = []
    for n, b in enumerate(group):
        # (worker processes that re-import the script must not print the markers again)
        src.append(f"if __name__ == '__main__': print({MARK.format(n)!r}, flush=True)")
        src.append(b.body)
    script.write_text("\n".join(src) + "\n", encoding="utf-8")
    proc = subprocess.run([sys.executable, str(script)], cwd=sandbox, env=_env(sandbox),
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, (
        f"{_where(group[0])}: python blocks failed\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    parts = re.split(r"@@agentscope-doc-block (\d+)@@\n", proc.stdout)
    outputs = {int(parts[i]): parts[i + 1] for i in range(1, len(parts) - 1, 2)}
    for n, b in enumerate(group):
        if b.expected is not None:
            assert _matches(b.expected, outputs.get(n, "")), (
                f"{_where(b)}: the page shows\n{b.expected}\nbut the code printed\n{outputs.get(n, '')}")


def _where(b: Block) -> str:
    return f"{b.page.relative_to(REPO)}:{b.line}"


@requires_node
@pytest.mark.parametrize("page", pages(), ids=lambda p: str(p.relative_to(REPO)))
def test_page_code_runs(page: Path, sandbox: Path) -> None:
    found = blocks(page)
    for b in found:
        if "file" in b.directives:
            (sandbox / b.directives["file"]).write_text(b.body + "\n", encoding="utf-8")
    todo = [b for b in found if b.lang in ("python", "py", "bash", "sh")
            and "skip" not in b.directives and "file" not in b.directives]
    if not todo:
        pytest.skip("no runnable code blocks")
    scripts = sandbox.parent / f"{sandbox.name}-scripts"
    scripts.mkdir()
    py = [b for b in todo if b.lang in ("python", "py")]
    scripts_of_page: list[list[Block]] = []
    for b in py:
        if not scripts_of_page or "new-script" in b.directives:
            scripts_of_page.append([])
        scripts_of_page[-1].append(b)
    for k, group in enumerate(scripts_of_page):
        _run_python(page, group, sandbox, scripts / f"page{k}.py")
    for b in (b for b in todo if b.lang in ("bash", "sh")):
        want = int(b.directives.get("exit-code", "0"))
        proc = subprocess.run(["bash", "-eo", "pipefail", "-c", b.body], cwd=sandbox, env=_env(sandbox),
                              capture_output=True, text=True, timeout=600)
        assert proc.returncode == want, (
            f"{_where(b)}: exit {proc.returncode}, expected {want}\n{b.body}\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}")
        if b.expected is not None:
            assert _matches(b.expected, proc.stdout), (
                f"{_where(b)}: the page shows\n{b.expected}\nbut the command printed\n{proc.stdout}")


def test_directive_parser() -> None:
    page = REPO / "tests" / "fixtures" / "doc_page.md"
    assert page.is_file()
    found = blocks(page)
    assert [(b.lang, b.directives, b.expected) for b in found] == [
        ("python", {}, "3"),
        ("bash", {"exit-code": "1"}, None),
        ("bash", {"skip": "placeholder path"}, None),
    ]
    assert _matches("a\n...\nd", "a\nb\nc\nd") and not _matches("a\n...\nd", "a\nb")


WIDTH = 88
"""Longest code line a page may show: wider lines are clipped by the site's code blocks."""


@pytest.mark.parametrize("page", pages(), ids=lambda p: str(p.relative_to(REPO)))
def test_page_code_fits(page: Path) -> None:
    wide = [f"{_where(b)}+{i}: {len(line)} chars"
            for b in blocks(page) for i, line in enumerate(b.body.split("\n")) if len(line) > WIDTH]
    assert not wide, "code lines wider than the page's code block:\n" + "\n".join(wide)

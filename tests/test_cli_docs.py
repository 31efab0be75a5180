"""docs/cli.md's flag tables are the parser's (tools/gen_cli_docs.py writes them): a flag that
``--help`` shows and the page lacks fails here, as does a table edited by hand."""

from __future__ import annotations

import contextlib
import io
import re

import pytest

from agentscope.cli import build_parser
from tests.conftest import REPO
from tools import gen_cli_docs

PAGE = REPO / "docs" / "cli.md"
_FLAG = re.compile(r"(?<![\w-])(--?[A-Za-z][\w-]*)")


def help_text(*argv: str) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), pytest.raises(SystemExit):
        build_parser().parse_args([*argv, "--help"])
    return out.getvalue()


def help_flags(text: str) -> set[str]:
    """Every option ``--help`` shows (usage line and options list; not the prose of help texts)."""
    flags: set[str] = set()
    for line in text.splitlines():
        head = line.strip()
        if head.startswith(("usage:", "-", "[")) or line.startswith(" " * 10 + "["):
            flags.update(_FLAG.findall(head.split("  ")[0] if head.startswith("-") else head))
    return flags


COMMANDS = sorted(gen_cli_docs.subcommands(build_parser()))


@pytest.mark.parametrize("command", COMMANDS)
def test_every_flag_help_shows_is_in_the_commands_table(command: str) -> None:
    blocks = gen_cli_docs.blocks(PAGE.read_text(encoding="utf-8"))
    assert command in blocks, f"docs/cli.md has no <!-- flags: {command} --> table"
    on_page = set(_FLAG.findall(blocks[command] + blocks[gen_cli_docs.TOP]))
    missing = help_flags(help_text(command)) - on_page
    assert not missing, f"`agentscope {command} --help` shows {sorted(missing)}; docs/cli.md lacks them"


def test_the_flags_that_were_missing_are_documented() -> None:
    """The ones issue 26 found absent: ``diff --html``, ``--redact``, ``show --coverage``."""
    blocks = gen_cli_docs.blocks(PAGE.read_text(encoding="utf-8"))
    assert {"--html", "--redact"} <= set(_FLAG.findall(blocks["diff"]))
    assert {"--coverage", "--redact"} <= set(_FLAG.findall(blocks["show"]))


def test_the_tables_are_what_the_parser_gives() -> None:
    page = PAGE.read_text(encoding="utf-8")
    assert gen_cli_docs.render(page) == page, "docs/cli.md is stale: run `python tools/gen_cli_docs.py`"
    assert set(gen_cli_docs.blocks(page)) == {gen_cli_docs.TOP, *COMMANDS}


def test_a_flag_added_to_the_parser_makes_the_page_stale() -> None:
    parser = build_parser()
    show = gen_cli_docs.subcommands(parser)["show"]
    show.add_argument("--brand-new", help="a flag the page does not have")
    assert "--brand-new" in help_flags(show.format_help())
    assert "--brand-new" in gen_cli_docs.table(show, set())
    assert "--brand-new" not in gen_cli_docs.blocks(PAGE.read_text(encoding="utf-8"))["show"]

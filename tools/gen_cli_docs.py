"""Write docs/cli.md's flag tables from the ``agentscope`` argument parser.

``python tools/gen_cli_docs.py`` rewrites, in place, every block between a
``<!-- flags: NAME -->`` line and the next ``<!-- /flags -->`` line of ``docs/cli.md``: ``NAME``
is a subcommand (its arguments and options, from
:func:`agentscope.cli.build_parser`) or ``agentscope`` (the options every command takes).
``--check`` writes nothing and exits 1 when the page is not what the parser gives (the test
suite runs the same comparison: ``tests/test_cli_docs.py``). Nothing else on the page changes.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

from agentscope.cli import build_parser

PAGE = Path(__file__).resolve().parent.parent / "docs" / "cli.md"
TOP = "agentscope"
"""The block name of the options every command takes (``--json``, ``--debug``, ``-h``)."""

_BLOCK = re.compile(r"(?P<open><!-- flags: (?P<name>[\w-]+) .*?-->\n)(?P<body>.*?)(?P<close><!-- /flags -->)",
                    re.DOTALL)


def subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    """Every subcommand's parser, by name, in the order ``--help`` lists them."""
    for action in parser._actions:  # argparse keeps its subcommands nowhere public
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def _common(parser: argparse.ArgumentParser) -> set[str]:
    """Options every subcommand takes (declared on the top parser too): one table for them."""
    top = {s for a in parser._actions for s in a.option_strings}
    return {s for s in top if all(s in p._option_string_actions for p in subcommands(parser).values())}


def _value(action: argparse.Action) -> str:
    """The value an option or argument takes, as ``--help`` shows it ("" for a switch)."""
    if action.nargs == 0:
        return ""
    if action.metavar is not None:
        name = str(action.metavar)
    elif action.choices is not None:
        name = "|".join(str(c) for c in action.choices)
    else:
        name = action.dest.upper() if action.option_strings else action.dest
    if action.nargs in ("+", "*"):
        return f"{name} ..."
    return name


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _meaning(action: argparse.Action) -> str:
    text = " ".join(str(action.help or "").split())
    extras: list[str] = []
    if action.required and action.option_strings:
        extras.append("required")
    if action.choices is not None and action.metavar is not None:
        extras.append("one of " + ", ".join(f"`{c}`" for c in action.choices))
    if isinstance(action, argparse._AppendAction) and "repeatable" not in text:
        extras.append("repeatable")
    if extras:
        text = f"{text} ({'; '.join(extras)})" if text else "; ".join(extras)
    return text


def table(parser: argparse.ArgumentParser, skip: set[str]) -> str:
    """The markdown table of ``parser``'s arguments and options, without the ``skip`` options."""
    rows = ["| argument or option | value | meaning |", "|---|---|---|"]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            continue
        if action.option_strings and set(action.option_strings) <= skip:
            continue
        name = ", ".join(f"`{s}`" for s in action.option_strings) or f"`{_value(action)}`"
        value = _value(action) if action.option_strings else ""
        rows.append(f"| {_cell(name)} | {_cell(f'`{value}`') if value else ''} | {_cell(_meaning(action))} |")
    return "\n".join(rows) + "\n"


def tables() -> dict[str, str]:
    """Every block's table, by block name."""
    parser = build_parser()
    common = _common(parser)
    out = {TOP: table(parser, set())}
    for name, sub in subcommands(parser).items():
        out[name] = table(sub, common)
    return out


def render(page: str) -> str:
    """``page`` with every flags block rewritten from the parser.

    Raises ``KeyError`` for a block naming no subcommand.
    """
    made = tables()

    def fill(m: re.Match[str]) -> str:
        return m.group("open") + made[m.group("name")] + m.group("close")

    return _BLOCK.sub(fill, page)


def blocks(page: str) -> dict[str, str]:
    """The page's flag blocks' bodies, by name."""
    return {m.group("name"): m.group("body") for m in _BLOCK.finditer(page)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python tools/gen_cli_docs.py", description=__doc__.split("\n")[0])
    ap.add_argument("--check", action="store_true", help="write nothing; exit 1 when the page is stale")
    args = ap.parse_args(argv)
    page = PAGE.read_text(encoding="utf-8")
    new = render(page)
    missing = sorted(set(tables()) - set(blocks(page)))
    if args.check:
        stale = new != page or missing
        if stale:
            print(f"{PAGE}: flag tables differ from the parser"
                  + (f"; no block for: {', '.join(missing)}" if missing else ""), file=sys.stderr)
        return 1 if stale else 0
    PAGE.write_text(new, encoding="utf-8")
    print(f"{PAGE}: {len(blocks(new))} flag tables written"
          + (f"; no block for: {', '.join(missing)}" if missing else ""))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Write the API reference pages for the flat ``agentscope`` namespace.

One page per public name (``agentscope.__all__``), grouped the way users meet them (read,
replay, views, forks, questions, bulk, errors), plus an index with each name's one-line summary
and an errors page whose tables (error classes with their stable codes, problem kinds) are read
from the code. The nav block of ``mkdocs.yml`` between the ``reference-nav`` markers is
rewritten to match.

Run ``python docs/_ext/gen_reference.py`` after adding a public name; ``--check`` exits 1 when the
committed pages are stale (the test suite runs it), and names a public name that has no group.
"""

from __future__ import annotations

import inspect
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
REF = REPO / "docs" / "reference"
MKDOCS = REPO / "mkdocs.yml"
BEGIN, END = "  # reference-nav:begin", "  # reference-nav:end"

# group id -> (title, one sentence on what the group is for, names in reading order)
GROUPS: dict[str, tuple[str, str, list[str]]] = {
    "read": ("Read logs", "Every source into an `EventLog` (spec §1, §5.2).",
             ["read_log", "read_threads", "EventLog"]),
    "hashing": ("Hashes", "The verification state hash and canonical JSON (spec §2, §3).",
                ["state_hash", "canonical_json"]),
    "engines": ("Machines", "The engines a log replays with, and the Recorder that writes logs.",
                ["load_machine", "StatechartMachine", "setup", "Recorder", "ManualClock", "UNDEFINED"]),
    "replay": ("Replay and verify", "The one fold over a log and what it yields (spec §4).",
               ["replay", "verify", "Timeline", "VerifyReport", "Frame"]),
    "views": ("Views", "Jupyter widgets and the static players.",
              ["TimeTravel", "ForkView", "history"]),
    "forks": ("Forks", "How two threads relate (spec §5.1, §6).",
              ["compare", "ForkDiff", "fork_tree"]),
    "questions": ("Questions and changes",
                  "Queries over a history, invariants, coverage, what-if, live follow.",
                  ["module:agentscope.queries", "check", "coverage", "Coverage", "whatif", "WhatIf",
                   "module:agentscope.follow"]),
    "bulk": ("Bulk", "Every thread of a store, on any `concurrent.futures.Executor`.",
             ["verify_store"]),
    "errors": ("Errors", "Every error the library raises, with its stable code.",
               ["AgentscopeError"]),
}


def _public() -> dict[str, str]:
    """Map each public name to the dotted path of the object it is."""
    sys.path.insert(0, str(REPO))
    import agentscope

    out: dict[str, str] = {}
    for name in agentscope.__all__:
        if name.startswith("__"):
            continue
        obj = getattr(agentscope, name)
        module = getattr(obj, "__module__", None) or agentscope._EXPORTS[name]
        qual = getattr(obj, "__qualname__", None)
        if qual and inspect.getmodule(obj):
            out[name] = f"{module}.{qual}"
        else:  # a constant: document it where it is exported from
            out[name] = f"{agentscope._EXPORTS[name]}.{name}"
    return out


def _summary(name: str) -> str:
    import agentscope

    doc = inspect.getdoc(getattr(agentscope, name)) or ""
    first = doc.strip().split("\n\n", 1)[0].replace("\n", " ").strip()
    return first.replace("|", "\\|")


STAGES = [("Segments", "segments"), ("The fold", "fold"), ("Explaining mismatches", "explain"),
          ("The snapshot store", "snapshots"), ("The pass", "onepass"), ("The report", "report"),
          ("The timeline", "timeline")]


def _stages_page() -> str:
    out = ["# The pipeline's stages", "",
           "The modules behind `replay`, `verify` and `Timeline`, one per stage, in pipeline order",
           "(see [the pipeline](../pipeline.md) for how they fit together). Users call the flat",
           "names; these pages are for reading the code.", ""]
    for title, module in STAGES:
        # the module's own docstring: its public names have their pages already
        out += [f"## {title}", "", f"::: agentscope.pipeline.{module}",
                "    options:", "      members: false", "      show_root_heading: false", ""]
    return "\n".join(out)


def _module_summary(module: str) -> str:
    import importlib

    doc = inspect.getdoc(importlib.import_module(module)) or ""
    return doc.strip().split("\n\n", 1)[0].replace("\n", " ").replace("|", "\\|")


def _errors_page() -> str:
    import agentscope.errors as errors
    from agentscope.log.problems import ProblemKind

    rows = []
    for _, cls in inspect.getmembers(errors, inspect.isclass):
        if cls.__module__ != errors.__name__ or not issubclass(cls, errors.AgentscopeError):
            continue
        bases = ", ".join(b.__name__ for b in cls.__bases__)
        first = (inspect.getdoc(cls) or "").split("\n\n", 1)[0].replace("\n", " ")
        rows.append(f"| `{cls.__name__}` | `{cls.code}` | {bases} | {first} |")
    kinds = [f"| `{k.value}` | `ProblemKind.{k.name}` |" for k in ProblemKind]
    return "\n".join([
        "# Errors and problem kinds",
        "",
        "Every error is an `AgentscopeError` with a stable `.code`; most also inherit a builtin",
        "(`ValueError`, `KeyError`, `RuntimeError`) so existing `except` clauses keep working. The",
        "command line maps them to exit code 2 (bad input) unless noted.",
        "",
        "| error | code | bases | raised when |",
        "|---|---|---|---|",
        *rows,
        "",
        "## Problem kinds",
        "",
        "Problems that do not stop a read or a replay are rows of one fixed-column table",
        "(`EventLog.problems`, `VerifyReport`), whose `kind` is one of these codes:",
        "",
        "| kind | enum member |",
        "|---|---|",
        *kinds,
        "",
        "::: agentscope.errors",
        "",
        "::: agentscope.log.problems",
        "",
    ])


def pages() -> dict[Path, str]:
    """Return every generated file's path and text (the nav block keyed by ``MKDOCS``)."""
    public = _public()
    grouped = {n for _, _, names in GROUPS.values() for n in names}
    missing = sorted(set(public) - grouped)
    if missing:
        raise SystemExit(f"public names without a reference group (add them to GROUPS): {missing}")
    out: dict[Path, str] = {}
    index = ["# API reference", "",
             "Everything is reached through the flat `agentscope` namespace (`import agentscope as"
             " asc`): one page per public name, grouped the way you meet them. Each page states",
             "shapes, units, the errors raised and the spec section the code implements.", ""]
    nav = [BEGIN, "  - API reference:", "      - reference/index.md"]
    lowered = [n.lower() for n in public]
    for gid, (title, intro, names) in GROUPS.items():
        present = [n for n in names if n in public or n.startswith("module:")]
        if not present:
            continue
        index += [f"## {title}", "", intro, "", "| name | what |", "|---|---|"]
        nav.append(f"      - {title}:")
        for name in present:
            if name.startswith("module:"):
                module = name.removeprefix("module:")
                page = f"{module.rsplit('.', 1)[-1]}.md"
                # a public name with its own page is not documented twice (one URL per name)
                own = sorted(n for n, target in public.items() if target == f"{module}.{n}")
                filters = "".join(f'\n        - "!^{n}$"' for n in own)
                out[REF / page] = (f"# `{module}`\n\n::: {module}\n" + (
                    f'    options:\n      filters:\n        - "!^_[^_]"{filters}\n' if own else ""))
                index.append(f"| [`{module}`]({page}) | {_module_summary(module)} |")
                nav.append(f"          - {module}: reference/{page}")
                continue
            if gid == "errors":
                page = "errors.md"
                out[REF / page] = _errors_page()
            else:
                # lower-case file names (case-insensitive file systems); a class whose name
                # differs from a function's only by case gets a suffix
                clash = lowered.count(name.lower()) > 1 and name[0].isupper()
                page = f"{name.lower()}{'-class' if clash else ''}.md"
                out[REF / page] = (
                    f"# `agentscope.{name}`\n\n::: {public[name]}\n"
                    "    options:\n      show_root_full_path: false\n"
                )
            index.append(f"| [`{name}`]({page}) | {_summary(name)} |")
            nav.append(f"          - {name}: reference/{page}")
        index.append("")
    out[REF / "pipeline-stages.md"] = _stages_page()
    nav.append("      - Pipeline stages: reference/pipeline-stages.md")
    index += ["## Internals", "",
              "[The pipeline's stages](pipeline-stages.md): the modules behind `replay`, `verify` and"
              " `Timeline`.", ""]
    index += ["## Command line", "",
              "The `agentscope` command is documented in [Command line](../cli.md).", ""]
    out[REF / "index.md"] = "\n".join(index)
    nav.append(END)
    out[MKDOCS] = "\n".join(nav)
    return out


def _with_nav(text: str, block: str) -> str:
    head, _, rest = text.partition(BEGIN)
    _, _, tail = rest.partition(END)
    return head + block + tail


def main(argv: list[str]) -> int:
    check = "--check" in argv
    stale: list[str] = []
    wanted = pages()
    for path, text in wanted.items():
        if path == MKDOCS:
            current = path.read_text(encoding="utf-8")
            text = _with_nav(current, text)
        else:
            current = path.read_text(encoding="utf-8") if path.exists() else ""
        if current != text:
            stale.append(str(path.relative_to(REPO)))
            if not check:
                path.write_text(text, encoding="utf-8")
    extra = sorted(p.name for p in REF.glob("*.md") if p not in wanted)
    for name in extra:
        stale.append(f"docs/reference/{name} (no longer generated)")
        if not check:
            (REF / name).unlink()
    if check and stale:
        print("stale API reference (run python docs/_ext/gen_reference.py):", *stale, sep="\n  ")
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))

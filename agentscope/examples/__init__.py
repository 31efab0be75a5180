"""Bundled real examples: the support-triage agent store and the fixtures' machines (JS and Python).

The files ship inside the package, so they are there in a clone and in an installed wheel alike;
:func:`example_path` gives a file's path wherever the package lives. Python ports of the machines
are in :mod:`agentscope.examples.python_machines` (for users without Node).
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["EXAMPLES", "example_path"]

EXAMPLES = Path(__file__).resolve().parent
"""The folder holding the bundled examples (``g_triage.sqlite``, ``machines/*.mjs``)."""


def example_path(name: str) -> Path:
    """Return the path of the bundled example file ``name``.

    Parameters
    ----------
    name : str
        A file name relative to the examples folder, e.g. ``"g_triage.sqlite"`` (the real
        support-triage store: threads ``main``, ``fork``, ``second``) or
        ``"machines/triage.mjs"`` (its XState machine).

    Returns
    -------
    Path
        The absolute path of the file.

    Raises
    ------
    FileNotFoundError
        When no such example is bundled; the message lists the ones that are.

    Examples
    --------
    >>> from agentscope.examples import example_path
    >>> example_path("machines/triage.mjs").name
    'triage.mjs'
    """
    path = (EXAMPLES / name).resolve()
    if EXAMPLES not in path.parents or not path.is_file():
        bundled = sorted(
            str(p.relative_to(EXAMPLES)) for p in EXAMPLES.rglob("*")
            if p.is_file() and p.suffix in {".sqlite", ".mjs", ".json", ".jsonl"}
        )
        msg = f"no bundled example {name!r}; bundled: {', '.join(bundled)}"
        raise FileNotFoundError(msg)
    return path

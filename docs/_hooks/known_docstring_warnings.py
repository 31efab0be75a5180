"""MkDocs hook: let ``mkdocs build --strict`` tolerate listed, known docstring-layout warnings.

griffe's NumPy parser warns "Could not parse line" when free text follows the last item of a
``Parameters`` section in the same docstring. The text still renders (as part of that section),
so such a warning is about layout, not content. Only the (file, message) pairs listed in
``KNOWN`` are demoted to INFO; every other warning still fails the strict build. Remove an entry
as soon as the docstring it names is rearranged (move the free text above ``Parameters`` or into
a ``Notes`` section).
"""

from __future__ import annotations

import logging
from typing import Any

KNOWN: tuple[tuple[str, str], ...] = (
    # load_machine: a paragraph after the Parameters section (owner: the Node engine)
    ("agentscope/engines/xstate.py", "Could not parse line"),
)


class _Demote(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno == logging.WARNING:
            text = record.getMessage()
            if any(path in text and needle in text for path, needle in KNOWN):
                record.levelno, record.levelname = logging.INFO, "INFO"
        return True


_FILTER = _Demote()


def on_startup(**_: Any) -> None:
    for name in ("mkdocs.plugins.griffe", "griffe", "mkdocs.plugins.mkdocstrings_handlers.python"):
        logger = logging.getLogger(name)
        if _FILTER not in logger.filters:
            logger.addFilter(_FILTER)

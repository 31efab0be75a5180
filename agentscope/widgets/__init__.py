"""Jupyter views: :class:`TimeTravel`, :class:`ForkView`, :class:`QuestionBox` ("jump to when…"
for a TimeTravel; ipywidgets) and :func:`history`.

Both views also export a self-contained static player (``.to_html(path)``) that works with no
kernel and no network.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from agentscope.widgets.forkview import ForkView
from agentscope.widgets.questions import QuestionBox
from agentscope.widgets.timetravel import TimeTravel

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["ForkView", "QuestionBox", "TimeTravel", "history"]


def history(log: Any, machine: Any, path: str) -> pd.DataFrame:
    """Return the steps where the context path ``path`` changed ("which events changed this?").

    Delegates to :meth:`agentscope.replay.Timeline.changes` (one row per changing step).

    Parameters
    ----------
    log : EventLog | Sequence[Mapping]
    machine : Machine
    path : str
        A JSON Pointer under the persisted snapshot (``"/context/queue"``) or a context key path
        as ``Timeline.changes`` accepts it.
    """
    from agentscope.replay import Timeline

    result: pd.DataFrame = Timeline(machine, log).changes(path)
    return result

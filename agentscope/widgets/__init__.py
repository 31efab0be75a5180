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

    Delegates to :meth:`agentscope.pipeline.Timeline.changes` (one row per changing step).

    Parameters
    ----------
    log : EventLog | Sequence[Mapping]
    machine : Machine
    path : str
        A JSON Pointer under the persisted snapshot (``"/context/queue"``) or a context key path
        as ``Timeline.changes`` accepts it.

    Returns
    -------
    pandas.DataFrame
        One row per step that changed the value at ``path``: ``index``, ``id``, ``event_type``,
        ``op`` (the JSON Patch operation: ``add``, ``replace``, ``remove``), ``before``,
        ``after``.

    Examples
    --------
    >>> import agentscope as asc
    >>> from agentscope.examples import example_path
    >>> from agentscope.examples.python_machines import triage_machine
    >>> log = asc.read_log(example_path("g_triage.sqlite"), thread="main")
    >>> print(asc.history(log, triage_machine(), "/context/pauses").to_string(index=False))
     index           id  event_type      op before after
         0 evt_00000000 @agent.init     add   None     0
         9 evt_00000009       PAUSE replace      0     1
    """
    from agentscope.pipeline import Timeline

    result: pd.DataFrame = Timeline(machine, log).changes(path)
    return result

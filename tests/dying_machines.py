"""A machine whose worker process dies, for the scale-out tests: importable as
``py:tests.dying_machines:counter_dying_on_input``."""

from __future__ import annotations

import multiprocessing
import os
from typing import Any

from agentscope.engines.base import NO_INPUT
from agentscope.engines.statechart import StatechartMachine
from agentscope.examples.python_machines import counter_machine


def counter_dying_on_input() -> StatechartMachine:
    """``python_machines.counter_machine``, except that in a worker process (never the caller's
    own) starting a log whose init input holds ``"die": true`` ends the process at once
    (``os._exit``), as a crashed or OOM-killed worker does. Logs recorded with the plain counter
    (which ignores the extra input key) verify with it everywhere else."""
    machine = counter_machine()
    initial = machine.initial

    def dying(input: Any = NO_INPUT) -> Any:
        if isinstance(input, dict) and input.get("die") and multiprocessing.parent_process() is not None:
            os._exit(70)
        return initial(input)

    machine.initial = dying  # type: ignore[method-assign]
    return machine

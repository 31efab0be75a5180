"""``Step``: one step of the one pass as a frozen value (what
:meth:`agentscope.pipeline.Timeline.steps` yields), and ``StepSource``, what a question needs of
a timeline. :mod:`agentscope.queries` reads these, so the questions depend on this value, not on
:class:`~agentscope.pipeline.Timeline`, which delegates to them one way (a layer below the
pipeline, beside the questions).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from agentscope.engines.base import Machine, TakenTransition
from agentscope.frames import Frame, Verdict
from agentscope.jsondiff import changed_paths
from agentscope.log.entry import event_of, event_type

__all__ = ["Step", "StepSource"]


@dataclass(frozen=True, slots=True)
class Step:
    """One step of the one pass, as :meth:`Timeline.steps` yields it: the pass as a value.

    Attributes
    ----------
    index : int
        The entry's position in the log (0-based).
    segment : int
        Its ``@agent.init`` segment (0-based, spec §1.5).
    entry : Mapping
        The entry exactly as read.
    machine : Machine or None
        The machine that replayed its segment; ``None`` when the segment had none.
    before, after : Mapping or None
        The persisted snapshots (spec §4.1) after the previous entry and after this one.
        ``after`` is ``None`` for an entry the pass did not replay (no machine, an engine
        failure); ``before`` is ``None`` at a segment's first entry too.
    verdict : Verdict
        The pass's verdict for the entry (recorded vs recomputed hash).
    ignored : bool
        The state did not react: ``after`` equals ``before``.
    transitions : tuple[TakenTransition, ...] or None
        What the engine reported the step took (:attr:`Frame.transitions`); ``None`` where it
        reported nothing (not replayed, restored, an engine that cannot).

    The derived views are properties: :attr:`value` and :attr:`context` (of ``after``),
    :attr:`event` and :attr:`event_type` (of the entry, through :mod:`agentscope.log.entry`),
    :attr:`changed_paths` (RFC 6901 pointers, :func:`agentscope.jsondiff.changed_paths`) and
    :attr:`owed_actors` (the running children whose completion the log owes).
    """

    index: int
    segment: int
    entry: Mapping[str, Any]
    machine: Machine | None
    before: Mapping[str, Any] | None
    after: Mapping[str, Any] | None
    verdict: Verdict
    ignored: bool
    transitions: tuple[TakenTransition, ...] | None = None

    @property
    def replayed(self) -> bool:
        """Whether the pass replayed this entry (``after`` is known)."""
        return self.after is not None

    @property
    def value(self) -> Any:
        """The state value after the entry (``None`` when not replayed)."""
        return None if self.after is None else self.after.get("value")

    @property
    def context(self) -> Any:
        """The context after the entry (``None`` when not replayed)."""
        return None if self.after is None else self.after.get("context")

    @property
    def event(self) -> Mapping[str, Any]:
        """The entry's event (spec §1.1)."""
        return event_of(self.entry)

    @property
    def event_type(self) -> str:
        """The entry's ``event.type``."""
        return event_type(self.entry)

    @property
    def changed_paths(self) -> tuple[str, ...]:
        """RFC 6901 pointers of what the entry changed in the persisted snapshot (empty when not
        replayed)."""
        if self.after is None:
            return ()
        return tuple(changed_paths(self.before, self.after))

    @property
    def owed_actors(self) -> tuple[str, ...]:
        """Ids of the actors running after the entry (``after["children"]`` whose snapshot
        ``status`` is ``"active"``), in the snapshot's order: the completions
        (``xstate.done.actor`` / ``xstate.error.actor``) a host still owes the log (spec §1.5).
        Empty when not replayed."""
        children = self.after.get("children") if self.after is not None else None
        if not isinstance(children, Mapping):
            return ()
        return tuple(
            str(k) for k, child in children.items()
            if isinstance(child, Mapping) and isinstance(child.get("snapshot"), Mapping)
            and child["snapshot"].get("status") == "active"
        )



class StepSource(Protocol):
    """What a question (:mod:`agentscope.queries`) reads of a timeline: its steps, a step's
    :class:`~agentscope.frames.Frame`, and the machines of its segments.
    :class:`~agentscope.pipeline.Timeline` is one."""

    def __len__(self) -> int:
        """The number of entries."""
        ...

    def steps(self, start: int = 0, stop: int | None = None) -> Iterator[Step]:
        """The :class:`Step` of every position ``start .. stop - 1``, in order."""
        ...

    def frame_of(self, step: Step) -> Frame:
        """The :class:`~agentscope.frames.Frame` of ``step``."""
        ...

    @property
    def segment_machines(self) -> tuple[Machine, ...]:
        """The distinct machines that replayed the segments, in segment order."""
        ...

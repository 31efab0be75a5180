"""``Frame``: what the debugger knows about one step of a replayed log.

A frame is plain data: the entry as read, the persisted snapshot after it (XState 6's shape, spec
§7.4), the recorded and recomputed state hashes and the verdict. Views draw frames; they never
compute them. :class:`agentscope.pipeline.Timeline` produces them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING, Any

from agentscope.log.entry import event_of

if TYPE_CHECKING:  # frames sit below the engines (docs/pipeline.md); the records are plain values
    from agentscope.engines.base import TakenTransition

__all__ = ["Frame", "Verdict", "set_html_view"]

_HTML_VIEW: list[Callable[[Frame], str] | None] = [None]


class Verdict(StrEnum):
    """How a step's recorded ``verification.stateHash`` compares with the replayed state."""

    VERIFIED = "verified"
    """The recomputed hash equals the recorded one."""
    MISMATCH = "mismatch"
    """The hashes differ and no known benign cause explains it."""
    EXPLAINED = "explained"
    """The hashes differ for a known benign reason (see ``Frame.explanation``), e.g. a live-only
    ``timers[*].startedAt`` or a live ``Error`` (fixtures README, "Notes for replaying")."""
    MISSING = "missing"
    """The entry carries no ``verification.stateHash``."""
    UNCHECKED = "unchecked"
    """No check was made (no machine, or ``verify=False``)."""


@dataclass(frozen=True, slots=True)
class Frame:
    """One step of a log: the entry at ``index`` and the state right after it.

    Attributes
    ----------
    index : int
        0-based entry index (0 is the ``@agent.init`` entry).
    entry : Mapping
        The log entry exactly as read.
    persisted : Mapping | None
        Persisted snapshot after the entry, or ``None`` when there is no machine to replay with.
    recorded_hash : str | None
        ``entry.verification.stateHash`` (8 hex digits), ``None`` when the entry has none.
    computed_hash : str | None
        ``state_hash(persisted)`` (8 hex digits, spec §2), ``None`` without a machine.
    verdict : Verdict
        How the two hashes compare (``verified``, ``mismatch``, ``explained``, ``missing``,
        ``unchecked``).
    explanation : str | None
        For ``EXPLAINED`` (and for an unexplained ``MISMATCH``, what was tried).
    changed_paths : tuple[str, ...]
        JSON Pointer paths (RFC 6901) under ``/context`` … and the other snapshot members that
        changed since the previous frame, e.g. ``("/context/queue", "/value")``.
    ignored : bool
        The machine did not react to the event: the persisted snapshot equals the previous one.
    transitions : tuple[TakenTransition, ...] | None
        The transitions the engine took for this entry, in order (microsteps numbered from 0,
        each naming its drawn edge ``machine.graph.transitions[t.edge]``); ``()`` when none fired,
        ``None`` when the engine reported none (a restored snapshot, no machine, an engine that
        cannot: views then infer the move from the state change).
    microstep_values : tuple | None
        The state value after each microstep (index = ``microstep``; the last is :attr:`value`):
        an eventless chain's states left within the step; ``()`` when nothing fired, ``None``
        with no reported transitions.

    Examples
    --------
    >>> import agentscope as asc
    >>> from agentscope.examples import example_path
    >>> from agentscope.examples.python_machines import triage_machine
    >>> log = asc.read_log(example_path("g_triage.sqlite"), thread="main")
    >>> frame = asc.Timeline(triage_machine(), log)[45]
    >>> frame.index, frame.event_type, frame.verdict.value, frame.computed_hash
    (45, 'APPROVE', 'verified', '0d9e8cde')
    >>> frame.value
    {'working': {'analyzing': {'classification': 'running', 'knowledge': 'searching'}}}
    >>> [p for p in frame.changed_paths if p.startswith(("/value", "/context/queue"))]
    ['/context/queue/0', '/value/working/analyzing', '/value/working/awaitingAgent']
    """

    index: int
    entry: Mapping[str, Any]
    persisted: Mapping[str, Any] | None = None
    recorded_hash: str | None = None
    computed_hash: str | None = None
    verdict: Verdict = Verdict.UNCHECKED
    explanation: str | None = None
    changed_paths: tuple[str, ...] = field(default=())
    ignored: bool = False
    transitions: tuple[TakenTransition, ...] | None = field(default=None, repr=False)
    microstep_values: tuple[Any, ...] | None = field(default=None, repr=False)

    @property
    def event(self) -> Mapping[str, Any]:
        """The entry's event payload (``{"type": …, …}``)."""
        return event_of(self.entry)

    @property
    def event_type(self) -> str:
        """The event's ``type``."""
        return str(self.event.get("type", ""))

    @property
    def event_id(self) -> str:
        """The entry's ``id``."""
        return str(self.entry.get("id", ""))

    @property
    def microsteps(self) -> tuple[tuple[TakenTransition, ...], ...]:
        """:attr:`transitions` grouped by microstep, in order: the event's own step, then each
        step of the eventless chain and of the raised events after it (parallel regions' moves
        of one microstep together). ``()`` when nothing fired or nothing was reported; the
        initial entry of an init step is its microstep 0."""
        groups: list[list[TakenTransition]] = []
        for t in self.transitions or ():
            if not groups or groups[-1][0].microstep != t.microstep:
                groups.append([t])
            else:
                groups[-1].append(t)
        return tuple(tuple(g) for g in groups)

    @property
    def value(self) -> Any:
        """The state value after this entry (string or nested dict), ``None`` without replay."""
        return None if self.persisted is None else self.persisted.get("value")

    @property
    def status(self) -> str | None:
        """``"active"``, ``"done"``, ``"error"``, ``"stopped"`` or ``None`` without replay."""
        return None if self.persisted is None else self.persisted.get("status")

    @property
    def context(self) -> Any:
        """The context after this entry (``None`` without replay)."""
        return None if self.persisted is None else self.persisted.get("context")

    @property
    def children(self) -> Mapping[str, Any]:
        """In-flight invoked actors by id: ``{id: {"src", "snapshot": {"input", …}, …}}``.

        A ``children`` member that is not an object (a redacted section reads ``"[redacted]"``)
        is returned as one member keyed by its text, so views list it instead of failing."""
        return _section(self.persisted, "children")

    @property
    def timers(self) -> Mapping[str, Any]:
        """Pending ``after`` timers by id (a member that is not an object: as for :attr:`children`)."""
        return _section(self.persisted, "timers")

    @property
    def output(self) -> Any:
        """The machine's output once ``status == "done"``."""
        return None if self.persisted is None else self.persisted.get("output")

    @property
    def error(self) -> Any:
        """The error once ``status == "error"``."""
        return None if self.persisted is None else self.persisted.get("error")

    def _repr_html_(self) -> str:
        """The step as escaped HTML: the rich view when :mod:`agentscope.render` is loaded (it
        registers itself with :func:`set_html_view`), else event, verdict, hashes and context,
        drawn by :func:`agentscope.render.reprs.repr_html`."""
        from agentscope.render.reprs import Bold, Code, Markup, Para, Pre, guarded

        def build() -> list[Any]:
            view = _HTML_VIEW[0]
            if view is not None:
                return [Markup(view(self))]
            import json

            ctx = json.dumps(self.context, indent=1, ensure_ascii=False, default=repr)
            return [
                Para(
                    Bold(f"#{self.index}"), " ", self.event_type, " ", Code(self.verdict.value),
                    " recorded ", Code(str(self.recorded_hash)), " computed ", Code(str(self.computed_hash)),
                ),
                Pre(ctx),
            ]

        return guarded(self, "frame", build)

    def __repr__(self) -> str:
        return (
            f"Frame(index={self.index}, event={self.event_type!r}, value={self.value!r}, "
            f"verdict={self.verdict.value})"
        )


def _section(persisted: Mapping[str, Any] | None, name: str) -> Mapping[str, Any]:
    """The snapshot member ``name`` as a mapping (absent/empty: ``{}``; not an object: one
    member keyed by its text)."""
    value = None if persisted is None else persisted.get(name)
    if isinstance(value, Mapping):
        return value
    return {str(value): value} if value else {}


def set_html_view(view: Callable[[Frame], str] | None) -> None:
    """Register the function that draws a :class:`Frame` as HTML in a notebook.

    :mod:`agentscope.render.html` registers its ``frame_html`` when it is imported, so the data
    layer never imports the views (imports point down the pipeline).
    """
    _HTML_VIEW[0] = view

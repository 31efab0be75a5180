"""The engine contract: what every statechart engine gives the replay fold and the views.

Two engines implement it: :mod:`agentscope.engines.xstate` (the user's real JS/TS machine run by
real XState in Node) and :mod:`agentscope.engines.statechart` (a pure-Python interpreter). Both
produce *persisted snapshots* in XState 6's shape (spec §7.4), so :func:`agentscope.hashing.state_hash`
verifies logs from either.

Every method of :class:`Machine` is pure: none runs an action, starts an actor or does I/O that
the caller can observe (the Node engine talks to its own subprocess, nothing else).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Literal, Protocol, runtime_checkable

from agentscope.errors import MachineExecutionError
from agentscope.hashing import state_hash

__all__ = [
    "NO_INPUT",
    "UNSENT",
    "Graph",
    "Machine",
    "MachineBase",
    "Snapshot",
    "StateNodeInfo",
    "TakenTransition",
    "TransitionInfo",
    "active_state_ids",
    "rebind_session",
    "snapshot_hash",
]


class _NoInput:
    """Sentinel for an absent ``input`` (JS ``undefined``), distinct from ``None`` (JSON ``null``)."""

    _instance: _NoInput | None = None

    def __new__(cls) -> _NoInput:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "NO_INPUT"

    def __bool__(self) -> bool:
        return False


NO_INPUT: Any = _NoInput()
"""Pass as ``input`` to mean "no input at all" (the init event has no ``input`` key)."""

StateKind = Literal["atomic", "compound", "parallel", "final", "history", "choice"]
TransitionKind = Literal[
    "on", "always", "after", "onDone", "onError", "invoke.onDone", "invoke.onError", "choice", "initial"
]


@dataclass(frozen=True, slots=True)
class StateNodeInfo:
    """One state node of a statechart, for drawing and for mapping state values to nodes.

    ``id`` is XState's full id (``"supportTriage.working.analyzing"``; the root's id is the machine
    id). ``path`` is the keys from the root (empty for the root). ``children`` lists child ids in
    document order. ``initial`` is the id of the initial child (compound states), ``history`` is
    ``"shallow"``/``"deep"`` for history nodes, ``invoke`` lists ``(id, src)`` pairs.
    """

    id: str
    key: str
    path: tuple[str, ...]
    kind: StateKind
    parent: str | None
    children: tuple[str, ...] = ()
    initial: str | None = None
    history: Literal["shallow", "deep"] | None = None
    invoke: tuple[tuple[str, str], ...] = ()
    entry: tuple[str, ...] = ()
    exit: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()
    description: str | None = None


@dataclass(frozen=True, slots=True)
class TransitionInfo:
    """One transition of the statechart as drawn.

    ``event`` is the event descriptor (``"ADD"``, ``"*"``, ``"xstate.done.actor.kb"``,
    ``"xstate.after.1000.m.wait"``) or ``""`` for an eventless (``always``) transition.
    ``targets`` are full state ids; empty for a targetless transition. ``dynamic`` is true when the
    target is only known at run time (an XState 6 function transition): ``targets`` then lists
    nothing and the view draws it as such. ``guard`` is the guard's name when it has one.
    ``kind`` says where it was declared (``"choice"``: a candidate of a ``type: "choice"`` state).
    """

    source: str
    event: str
    targets: tuple[str, ...] = ()
    guard: str | None = None
    dynamic: bool = False
    reenter: bool = False
    kind: TransitionKind = "on"
    actions: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Graph:
    """The static structure of a statechart: nodes by id, in document order, and transitions."""

    machine_id: str
    root: str
    nodes: Mapping[str, StateNodeInfo]
    transitions: tuple[TransitionInfo, ...] = ()

    def active_ids(self, value: Any) -> set[str]:
        """Return the ids of every state node active in the state value ``value``."""
        return active_state_ids(self, value)


def active_state_ids(graph: Graph, value: Any) -> set[str]:
    """Return the ids of the state nodes a state value makes active, root included.

    ``value`` is an XState state value: a string (atomic child of the root), or a nested dict
    ``{"working": {"analyzing": {"classification": "running", "knowledge": "searching"}}}``.
    Unknown keys are ignored (a log's value may name states a newer machine dropped).
    """
    active: set[str] = {graph.root}

    def walk(node_id: str, v: Any) -> None:
        node = graph.nodes.get(node_id)
        if node is None:
            return
        by_key = {graph.nodes[c].key: c for c in node.children if c in graph.nodes}
        if isinstance(v, str):
            child = by_key.get(v)
            if child is not None:
                active.add(child)
        elif isinstance(v, Mapping):
            for k, sub in v.items():
                child = by_key.get(str(k))
                if child is not None:
                    active.add(child)
                    walk(child, sub)

    walk(graph.root, value)
    return active


@dataclass(frozen=True, slots=True)
class TakenTransition:
    """One transition an engine took during a ``transition``/``initial`` call (one macrostep).

    ``microstep`` numbers the microsteps of the call from 0 (in an ``initial`` call microstep 0 is
    the initial entry, kind ``"initial"``, from the root); transitions of one microstep (parallel
    regions) share it. ``event`` is the ``type`` of the event that microstep processed: the
    external event, a raised one, ``xstate.after``/``xstate.done.state`` for delayed and done
    events, or the triggering event again for an eventless (``always``/``choice``) step, as in
    XState. ``source`` and ``targets`` are full state ids, ``targets`` as resolved (a function
    transition's actual target; ``()`` when targetless; a history node's id when it targets one).
    ``edge`` is the position of the drawn transition in :attr:`Graph.transitions` (``None`` for the
    initial entry), so a view lights exactly the edge that fired; ``guard`` and ``kind`` repeat
    that edge's, ``reenter`` is the resolved flag.
    """

    microstep: int
    event: str
    source: str
    targets: tuple[str, ...]
    edge: int | None
    guard: str | None = None
    kind: TransitionKind = "on"
    reenter: bool = False


@dataclass(frozen=True, slots=True)
class Snapshot:
    """A machine state as an engine holds it.

    ``persisted`` is the persisted snapshot in XState 6's shape (spec §7.4): plain JSON with
    ``status``, ``value``, ``historyValue``, ``context``, ``children``, ``timers`` and, where they
    apply, ``output``, ``error``, ``machine``/``version``. ``handle`` is engine-private (a live
    object or a reference inside the Node runner) and never compared; neither are
    ``transitions`` and ``actions`` (what the step did, see :class:`TakenTransition`).
    ``state_hash`` is the engine's own verification hash of ``persisted`` (spec §2, 8 hex
    digits) when it computed one (the Node engine does, in JS, byte-exact with
    :func:`agentscope.hashing.state_hash`), else ``None``; read it with :func:`snapshot_hash`.
    """

    persisted: Mapping[str, Any]
    handle: Any = field(default=None, compare=False, repr=False)
    transitions: tuple[TakenTransition, ...] | None = field(default=None, compare=False, repr=False)
    """The transitions the call that produced this snapshot took, in order; ``None`` when the
    engine was not asked for them (the Node engine with ``report_transitions=False``, its sparse
    and last-only folds) or the snapshot was restored; ``()`` when nothing fired. Both engines
    report the same records for the same step (tests/test_transitions_taken.py)."""
    actions: tuple[Any, ...] = field(default=(), compare=False, repr=False)
    """The action data that call produced, in XState's order (Python engine):
    :class:`~agentscope.engines.statechart.Raise` (delayed ones with their resolved timer id,
    ``after`` timers included), ``Cancel``, ``Emit``. Nothing here has run: the engine is pure."""
    state_hash: str | None = field(default=None, compare=False, repr=False)
    unchanged: bool | None = field(default=None, compare=False, repr=False)
    """The engine's own finding that ``persisted`` equals the persisted snapshot before this step
    (as parsed JSON values, what ``==`` says of the two), when it made one; else ``None``. The Node
    engine's sparse fold (``fold_iter(..., expected=...)``) sets it for every step but the first
    of each request."""
    microstep_values: tuple[Any, ...] | None = field(default=None, compare=False, repr=False)
    """The state value after each microstep of :attr:`transitions` (index = ``microstep``; the
    last is :attr:`value`), when they were reported; else ``None``. An eventless chain's
    intermediate states (left within the step) show here and nowhere else."""

    @property
    def value(self) -> Any:
        """The state value: a string or a nested dict."""
        return self.persisted.get("value")

    @property
    def status(self) -> str:
        """``"active"``, ``"done"``, ``"error"`` or ``"stopped"``."""
        return str(self.persisted.get("status"))

    @property
    def context(self) -> Any:
        """The extended state (``context``); ``{}`` when the machine has none."""
        return self.persisted.get("context", {})

    @property
    def children(self) -> Mapping[str, Any]:
        """In-flight invoked/spawned actors by id (their persisted form)."""
        return self.persisted.get("children") or {}

    @property
    def timers(self) -> Mapping[str, Any]:
        """Pending delayed events (``after`` timers) by timer id."""
        return self.persisted.get("timers") or {}


UNSENT: Mapping[str, Any] = MappingProxyType({})
"""The ``persisted`` of a snapshot a sparse fold did not send (its hash and ``unchanged`` did
come): an empty read-only mapping, never a state (``Machine.fold_iter(..., expected=...)``)."""


def snapshot_hash(snapshot: Snapshot) -> str:
    """Return the verification state hash of ``snapshot`` (spec §2, 8 lowercase hex digits).

    The engine's own hash when it sent one (:attr:`Snapshot.state_hash`, no Python work), else
    :func:`agentscope.hashing.state_hash` of ``snapshot.persisted``. Both agree byte for byte
    (tested on every fixture and on generated values).
    """
    h = snapshot.state_hash
    return h if h is not None else state_hash(snapshot.persisted)


@runtime_checkable
class Machine(Protocol):
    """A statechart engine bound to one machine. Every method is pure.

    ``machine_id`` is the machine config's ``id`` (``"(machine)"`` when it has none) and
    ``version`` its resolved version: the declared ``version`` or the structural hash (spec §3).
    """

    machine_id: str
    version: str

    @property
    def graph(self) -> Graph:
        """The statechart structure, for drawing."""
        ...

    def initial(self, input: Any = NO_INPUT) -> Snapshot:
        """Return the initial snapshot for ``input`` (XState ``initialTransition``)."""
        ...

    def restore(self, persisted: Mapping[str, Any]) -> Snapshot:
        """Return the snapshot a persisted snapshot restores to (runs the machine's ``migrate``)."""
        ...

    def transition(self, snapshot: Snapshot, event: Mapping[str, Any]) -> Snapshot:
        """Return the snapshot after ``event``; an unhandled event returns an equal snapshot."""
        ...

    def persist(self, snapshot: Snapshot) -> dict[str, Any]:
        """Return the persisted snapshot (plain JSON) of ``snapshot``."""
        ...

    def child_session(self, snapshot: Snapshot, actor_id: str) -> str | None:
        """Return the session id this fold minted for the child ``actor_id``, if it is running."""
        ...

    def fold(
        self,
        seed: Snapshot,
        events: Sequence[Mapping[str, Any]],
        *,
        sessions: dict[str, str] | None = None,
    ) -> list[Snapshot]:
        """Apply ``events`` in order from ``seed`` with session rebinding (spec §4.1).

        Returns the snapshot after each event (same length as ``events``). ``sessions`` is the
        fold's rebinding cache (``actorId + "\\0" + recordedSessionId -> mintedSessionId``); it is
        updated in place so a caller can fold a long log in batches.
        """
        ...

    def close(self) -> None:
        """Release resources (the Node process); idempotent."""
        ...


def rebind_session(
    machine: Machine, snapshot: Snapshot, event: Mapping[str, Any], sessions: dict[str, str]
) -> Mapping[str, Any]:
    """Return ``event`` with its recorded ``sessionId`` replaced by the one this fold minted.

    Spec §4.1 ``rebindActorSession``: only events carrying both a string ``actorId`` and a string
    ``sessionId`` are touched; the mapping is cached per fold in ``sessions``; with no running
    child of that id the event is returned unchanged (XState then ignores it).
    """
    actor_id = event.get("actorId")
    recorded = event.get("sessionId")
    if not isinstance(actor_id, str) or not isinstance(recorded, str):
        return event
    key = actor_id + "\u0000" + recorded
    minted = sessions.get(key)
    if minted is None:
        minted = machine.child_session(snapshot, actor_id)
        if minted is None:
            return event
        sessions[key] = minted
    out = dict(event)
    out["sessionId"] = minted
    return out


class MachineBase(ABC):
    """Convenience base: implements :meth:`Machine.fold` with :meth:`transition` and rebinding.

    A :class:`~agentscope.errors.MachineExecutionError` raised by ``transition`` leaves ``fold``
    with ``index`` set to the failing event's position in the batch.
    """

    machine_id: str
    version: str

    @property
    @abstractmethod
    def graph(self) -> Graph: ...

    @abstractmethod
    def initial(self, input: Any = NO_INPUT) -> Snapshot: ...

    @abstractmethod
    def restore(self, persisted: Mapping[str, Any]) -> Snapshot: ...

    @abstractmethod
    def transition(self, snapshot: Snapshot, event: Mapping[str, Any]) -> Snapshot: ...

    def persist(self, snapshot: Snapshot) -> dict[str, Any]:
        return dict(snapshot.persisted)

    @abstractmethod
    def child_session(self, snapshot: Snapshot, actor_id: str) -> str | None: ...

    def fold(
        self,
        seed: Snapshot,
        events: Sequence[Mapping[str, Any]] | Iterable[Mapping[str, Any]],
        *,
        sessions: dict[str, str] | None = None,
    ) -> list[Snapshot]:
        cache: dict[str, str] = {} if sessions is None else sessions
        out: list[Snapshot] = []
        s = seed
        for i, ev in enumerate(events):
            try:
                s = self.transition(s, rebind_session(self, s, ev, cache))
            except MachineExecutionError as exc:  # say which event of the batch failed
                exc.index = i
                raise
            out.append(s)
        return out

    def close(self) -> None:
        return None

    def __enter__(self) -> MachineBase:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

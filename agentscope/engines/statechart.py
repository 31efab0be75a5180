"""A pure-Python statechart engine producing XState 6 (alpha.48) persisted snapshots.

:class:`StatechartMachine` interprets an XState-6-style config written as a Python dict and
implements the :class:`~agentscope.engines.base.Machine` protocol, so the replay fold (spec §4.1)
and :func:`agentscope.hashing.state_hash` (spec §2) work on it exactly as on the Node engine. Its
persisted snapshots have XState's keys, nesting and values (spec §7.4) for everything supported.

Config vocabulary (a dict, like XState's; callables replace JS functions)
-------------------------------------------------------------------------
- ``id``, ``version`` (declared ``machineVersion``), ``initial``, ``states``, ``type``
  (``"parallel"``, ``"final"``, ``"history"``; atomic/compound are inferred), ``history``
  (``"shallow"``/``"deep"``) with the required ``target`` of a history state.
- ``context``: a dict, or ``callable(input) -> dict`` (``input`` is
  :data:`~agentscope.engines.base.NO_INPUT` when absent).
- ``on``: event descriptor (exact, ``"*"`` or ``"prefix.*"``) -> a target string, a dict
  ``{"target", "guard", "actions", "reenter", "context"}``, a function transition
  ``callable(context, event) -> {"target"?, "context"?, "reenter"?} | None`` (``None`` declines,
  as ``undefined`` does in XState 6), or a list of those (first enabled candidate wins).
  ``context`` on a transition is a patch dict or ``callable(context, event) -> dict``; patches are
  merged shallowly into the context.
- ``guard``: ``callable(context, event) -> bool`` or the name of a guard given to
  :func:`setup`/``guards=``.
- ``always``: eventless transitions (same forms). ``after``: ``{delay_ms | delay_name: transition}``;
  pending timers appear in ``timers`` keyed ``xstate.after.<delay>.<stateId>`` and fire on the
  event ``{"type": "xstate.timer", "id": <timer id>}``.
- ``entry``/``exit``: ``callable(context, event) -> {"context": patch} | None``.
- ``invoke``: ``{"src": <actor name>, "id", "input" (value or callable(context, event)), "onDone",
  "onError"}``; completions arrive as ``xstate.done.actor``/``xstate.error.actor`` events carrying
  ``actorId`` and ``sessionId`` (the output is ``event["output"]``, the error ``event["error"]``).
- ``onDone`` on compound/parallel states, ``output`` on final states and the root (a value or
  ``callable(context, event)``), and ``migrate(persisted, from_version) -> persisted`` at the root.
- Actions are data: :class:`Raise` (``delay``/``id`` for a delayed one, kept in ``timers``),
  :class:`Cancel` and :class:`Emit`, listed in a dict transition's ``actions`` or returned under
  ``"actions"`` by a function transition or an entry/exit callable; they are reported on
  :attr:`Snapshot.actions`. Other transition ``actions`` (names, callables) are effect-only (as in
  XState 6 they never change the snapshot); they are named in the graph and never run here.
- ``type: "choice"`` states with ``choice`` (a function or a candidate list), :func:`state_in`
  guards, callables taking the state value as a third argument, ``after`` keys as ISO-8601
  durations (``"PT1S"``) or ``"1.5s"``/``"200ms"``, and :data:`UNDEFINED` for JS ``undefined``.
- Every step reports the transitions it took on :attr:`Snapshot.transitions`.

The how-to page "Python machines" (``docs/how-to/python-machines.md``) lists every supported XState
feature with its Python spelling, and the unsupported ones.

Callables must be pure and must not mutate their arguments. Anything else raises
:class:`~agentscope.errors.StatechartConfigError` at construction.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any

from agentscope.engines import _statechart_algo as _algo
from agentscope.engines._statechart_algo import (
    Child,
    Ctx,
    State,
    UndefinedDict,
    get_value,
    handles,
    has_undefined,
    initial_state,
    macrostep,
    nodes_for_value,
    quick_macrostep,
    quick_plan,
    root_address,
    strip_undefined,
)
from agentscope.engines._statechart_nodes import (
    UNDEFINED,
    Cancel,
    Emit,
    Node,
    Raise,
    StateIn,
    Transition,
    compile_machine,
    get_by_id,
)
from agentscope.engines.base import (
    NO_INPUT,
    Graph,
    MachineBase,
    Snapshot,
    StateNodeInfo,
    TakenTransition,
    TransitionInfo,
    rebind_session,
)
from agentscope.errors import (
    AgentscopeError,
    EngineError,
    MachineExecutionError,
    SnapshotRestoreError,
    StatechartConfigError,
)
from agentscope.hashing import djb2_hex, js_number, js_values, structural_string

__all__ = [
    "UNDEFINED",
    "Cancel",
    "Emit",
    "MachineFactory",
    "Raise",
    "StateIn",
    "StatechartMachine",
    "setup",
    "state_in",
    "structural_view",
]


def state_in(state: Any) -> StateIn:
    """Return a guard that passes while the machine is in ``state`` (XState's ``stateIn``).

    ``state`` is a state id (``"#m.b.b2"``: that node is active) or a state value (``"a"``,
    ``"b.b2"``, ``{"b": "b2"}``: the current value matches it, as ``snapshot.matches`` does).
    Use it as a transition's ``guard``; it is evaluated on the snapshot of the microstep.
    """
    return StateIn(state)


def structural_view(config: Mapping[str, Any], extras: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Return the dict whose structural string XState would hash for this machine (spec §3).

    That is ``machine.config``: the authored config, plus what ``setup()`` merges in (``actions``,
    ``actors``, ``guards``, ``delays``). An actor implementation is shown as XState shows an
    async actor logic object, ``{"config": {}}``; callables vanish in the structural string.
    """
    view = dict(config)
    for key, value in (extras or {}).items():
        if value is None:
            continue
        if key == "actors":
            view["actors"] = {name: {"config": {}} for name in value}
        else:
            view[key] = dict(value)
    return view


_TRACE_CACHE_MAX = 4096


class StatechartMachine(MachineBase):
    """A statechart config interpreted in Python, implementing the ``Machine`` protocol.

    Parameters
    ----------
    config : Mapping
        The machine config (see the module docstring for the vocabulary).
    actors : Mapping[str, Callable[[Any], Any]], optional
        Actor implementations by ``src`` name, ``callable(input) -> output`` (raise to fail). The
        pure engine never runs them; :class:`~agentscope.recorder.Recorder` does. When
        given, every ``invoke`` ``src`` must be among them (XState fails on a missing one); when
        omitted, any ``src`` name is accepted (enough for replaying a log).
    guards, actions, delays : Mapping, optional
        Named guards ``callable(context, event) -> bool``, named actions and named delays (ms).
        Like XState's ``createMachine(config).provide(...)``: they do not enter the structural
        version. Use :func:`setup` for XState's ``setup(...).createMachine(config)``, which does.
    structural : Mapping, optional
        The view of the config the structural ``machineVersion`` is hashed from (spec §3);
        default the config itself. :func:`setup` passes the config with its named
        implementations merged in, as XState's ``machine.config`` holds them.

    Raises
    ------
    StatechartConfigError
        On anything outside the supported vocabulary, a bad target or an unknown named guard,
        action or delay.

    Examples
    --------
    >>> import agentscope as asc
    >>> light = asc.StatechartMachine({
    ...     "id": "light", "initial": "off", "context": {"flips": 0},
    ...     "states": {
    ...         "off": {"on": {"FLIP": {"target": "on", "context": lambda c, e: {"flips": c["flips"] + 1}}}},
    ...         "on": {"on": {"FLIP": {"target": "off", "context": lambda c, e: {"flips": c["flips"] + 1}}}},
    ...     },
    ... })
    >>> rec = asc.Recorder(light)
    >>> for _ in range(3):
    ...     _ = rec.send({"type": "FLIP"})
    >>> tl = asc.Timeline(light, rec.entries)
    >>> tl[3].value, tl[3].context, tl.report.ok
    ('on', {'flips': 3}, True)

    The Python twins of the bundled machines reproduce XState's hashes of the bundled store:

    >>> from agentscope.examples import example_path
    >>> from agentscope.examples.python_machines import triage_machine
    >>> log = asc.read_log(example_path("g_triage.sqlite"), thread="main")
    >>> triage_machine().version, asc.verify(triage_machine(), log).ok
    ('efe50ed5', True)
    """

    def __init__(
        self,
        config: Mapping[str, Any],
        *,
        actors: Mapping[str, Callable[[Any], Any]] | None = None,
        guards: Mapping[str, Callable[[Any, Any], Any]] | None = None,
        actions: Mapping[str, Callable[..., Any]] | None = None,
        delays: Mapping[str, Any] | None = None,
        structural: Mapping[str, Any] | None = None,
    ) -> None:
        self.config = config
        self.actors: dict[str, Callable[[Any], Any]] = dict(actors or {})
        self._compiled = compile_machine(config, guards=guards, actions=actions, delays=delays)
        if actors is not None:
            for node in self._compiled.id_map.values():
                for inv in node.invoke:
                    if inv.src not in self.actors:
                        raise StatechartConfigError(
                            f"state {node.id}: invoke src {inv.src!r} is not among the provided actors "
                            f"{sorted(self.actors)!r}"
                        )
        self.machine_id = self._compiled.root.id
        declared = config.get("version")
        if declared is not None and not isinstance(declared, str):
            raise StatechartConfigError("machine 'version' must be a string")
        self.declared_version: str | None = declared
        view = dict(structural) if structural is not None else dict(config)
        self.structural_input = structural_string(_string_keys(view))
        self.structural_hash = djb2_hex(self.structural_input)
        self.version = declared if declared is not None else self.structural_hash
        migrate = config.get("migrate")
        if migrate is not None and not callable(migrate):
            raise StatechartConfigError("'migrate' must be a callable (persisted, from_version) -> persisted")
        self._migrate = migrate
        ctx = config.get("context", UNDEFINED)
        if ctx is not UNDEFINED and not (callable(ctx) or ctx is None or isinstance(ctx, Mapping)):
            raise StatechartConfigError("'context' must be a dict or a callable(input) -> dict")
        self._root_address = root_address(self.machine_id)
        self._graph: Graph | None = None
        self._edges: dict[Transition, int] | None = None
        self._traces: dict[tuple[Any, ...], tuple[TakenTransition, ...]] = {}

    # -- Machine protocol ----------------------------------------------------------------
    def initial(self, input: Any = NO_INPUT) -> Snapshot:
        """Return the initial snapshot (XState ``initialTransition(machine, input)``)."""
        ctx_cfg = self.config.get("context", UNDEFINED)
        input = js_values(input)  # JS number semantics at the fold boundary (spec §2.2)
        if callable(ctx_cfg):
            try:
                context = js_values(ctx_cfg(input))
            except AgentscopeError:
                raise
            except Exception as exc:  # the user's context function (e.g. an input it lacks)
                raise MachineExecutionError(
                    f"the machine '{self.machine_id}' raised in its context function: "
                    f"{type(exc).__name__}: {exc}",
                    kind="machine-error",
                ) from exc
            if context is None:
                context = {}
        elif ctx_cfg:
            context = ctx_cfg
        else:
            context = {}
        if isinstance(context, Mapping) and has_undefined(context):
            context = UndefinedDict(context)
        ev: dict[str, Any] = {"type": "@xstate.init"}
        if input is not NO_INPUT:
            ev["input"] = input
        cx = Ctx(self._compiled, self.machine_id, self._root_address)
        try:
            return self._wrap(initial_state(cx, context, ev), cx)
        except AgentscopeError:
            raise
        except Exception as exc:
            raise MachineExecutionError(
                f"the machine '{self.machine_id}' raised in its initial transition: "
                f"{type(exc).__name__}: {exc}",
                kind="machine-error",
            ) from exc

    def restore(self, persisted: Mapping[str, Any]) -> Snapshot:
        """Restore a persisted snapshot (XState ``restoreSnapshot``; runs ``migrate`` on a version change).

        Raises
        ------
        EngineError
            On a machine id/version conflict with no ``migrate``, or a state, history or child
            the machine cannot take.
        """
        if not isinstance(persisted, Mapping):
            raise EngineError("a persisted snapshot must be a dict")
        persisted = js_values(persisted)  # JS number semantics at the fold boundary (spec §2.2)
        pm = persisted.get("machine")
        legacy = persisted.get("version", UNDEFINED)
        pm_version = pm.get("version", UNDEFINED) if isinstance(pm, Mapping) else UNDEFINED
        pversion = pm_version if isinstance(pm_version, str) else legacy
        if legacy is not UNDEFINED and pm_version is not UNDEFINED and pm_version != legacy:
            raise EngineError(
                f"Persisted snapshot version '{legacy}' conflicts with machine version '{pm_version}'."
            )
        if isinstance(pm, Mapping) and isinstance(pm.get("id"), str) and pm["id"] != self.machine_id:
            raise EngineError(
                f"Machine ID mismatch: persisted snapshot machine '{pm['id']}' "
                f"does not match '{self.machine_id}'."
            )
        mine = self.declared_version if self.declared_version is not None else UNDEFINED
        if pversion != mine:
            if self._migrate is None:
                raise EngineError(
                    f"Persisted snapshot version '{_show(pversion)}' "
                    f"does not match machine version '{_show(mine)}'."
                )
            persisted = self._migrate(persisted, None if pversion is UNDEFINED else pversion)
            if not isinstance(persisted, Mapping):
                raise EngineError("migrate must return a persisted snapshot dict")
        value = persisted.get("value")
        self._validate_value(value, self._compiled.root, [])
        nodes = tuple(nodes_for_value(self._compiled, value))
        children: dict[str, Child] = {}
        seq = 0
        for cid, data in (persisted.get("children") or {}).items():
            if not isinstance(data, Mapping):
                raise EngineError(f"persisted child '{cid}' must be an object")
            src = data.get("src")
            if not isinstance(src, str):
                raise EngineError(f"Unable to restore child actor '{cid}': its 'src' must be a string.")
            snap = data.get("snapshot", UNDEFINED)
            inp = snap.get("input", UNDEFINED) if isinstance(snap, Mapping) else UNDEFINED
            seq += 1
            children[cid] = Child(
                id=cid,
                src=src,
                address=str(data.get("address", f"{self._root_address}/{cid}")),
                session=f"{self.machine_id}:r{seq}",
                input=inp,
                snapshot=snap,
            )
        history: dict[str, tuple[Node, ...]] = {}
        for key, items in (persisted.get("historyValue") or {}).items():
            for item in items or ():
                try:
                    node = get_by_id(self._compiled, "#" + str(item.get("id")))
                except (StatechartConfigError, AttributeError):
                    continue
                history[key] = (*history.get(key, ()), node)
        timers = {str(k): dict(v) for k, v in (persisted.get("timers") or {}).items()}
        state = State(
            status=str(persisted.get("status", "active")),
            nodes=nodes,
            context=persisted.get("context") or {},
            output=persisted.get("output", UNDEFINED),
            error=persisted.get("error", UNDEFINED),
            value=value,
            children=children,
            timers=timers,
            history=history,
            next_timer_id=int(persisted.get("_nextTimerId", 0) or 0),
            seq=seq,
        )
        return self._wrap(state)

    def transition(self, snapshot: Snapshot, event: Mapping[str, Any]) -> Snapshot:
        """Return the snapshot after one macrostep on ``event`` (pure, XState ``transition``)."""
        compiled = self._compiled
        state = snapshot.handle
        if type(state) is not State or compiled.root not in state.nodes:  # Node equality is identity
            state = self._state(snapshot)
        if type(event) is not dict and not isinstance(event, Mapping):
            raise EngineError("an event must be a dict with a non-empty string 'type'")
        etype = event.get("type")
        if not isinstance(etype, str) or not etype:
            raise EngineError("an event must be a dict with a non-empty string 'type'")
        event = js_values(event)  # JS number semantics at the fold boundary (spec §2.2)
        plan = None
        if _algo.FAST_PATHS and not etype.startswith(("xstate.", "@xstate.")):
            if state.status != "done":
                v = state.value
                plan = compiled.quick_cache.get((state.nodes, etype)) if v is None else None
                if plan is None:
                    plan = quick_plan(compiled, state, etype)
                if plan is not None and plan[1] and plan[2]:
                    # no active state takes this type and nothing eventless can follow: the
                    # macrostep selects nothing and returns the same state (what the general
                    # path concludes)
                    return _snapshot(snapshot.persisted, state, (), ())
            elif not compiled.has_eventless and not handles(compiled, state.nodes, etype):
                return _snapshot(snapshot.persisted, state, (), ())
        cx = Ctx(compiled, self.machine_id, self._root_address)
        try:
            nxt = macrostep(cx, state, event, []) if plan is None else quick_macrostep(cx, state, event, plan)
        except AgentscopeError:
            raise
        except Exception as exc:  # a user callable (guard, context function, ...) raised
            raise MachineExecutionError(
                f"the machine '{self.machine_id}' raised on event {event['type']!r}: "
                f"{type(exc).__name__}: {exc}",
                event_type=event["type"],
                kind="machine-error",
            ) from exc
        if nxt is state:
            if not cx.taken and not cx.actions:
                return _snapshot(snapshot.persisted, state, (), ())
            taken, actions = self._trace(cx)
            values = self._values(cx, snapshot.persisted.get("value"))
            return _snapshot(snapshot.persisted, state, taken, actions, values)
        pf = state.persisted_form
        if cx.plain and pf is not None:
            # what _persisted_of builds when only the context (and the configuration) changed,
            # known without comparing members
            p = dict(pf)
            if cx.plain == _algo.NODES_AND_CONTEXT:
                p["value"] = get_value(compiled, nxt)
            ctx = nxt.context
            p["context"] = strip_undefined(ctx) if isinstance(ctx, UndefinedDict) else ctx
            nxt.__dict__["persisted_form"] = p
        else:
            p = self._persisted_of(nxt, state)
        taken, actions = self._trace(cx)
        return _snapshot(p, nxt, taken, actions, self._values(cx, p.get("value")))

    def persist(self, snapshot: Snapshot) -> dict[str, Any]:
        """Return the persisted snapshot in XState 6's shape (a fresh top-level dict)."""
        return dict(snapshot.persisted)

    def fold_iter(
        self,
        seed: Snapshot,
        events: Iterable[Mapping[str, Any]],
        *,
        sessions: dict[str, str] | None = None,
        chunk: int = 4096,
        expected: Sequence[str | None] | None = None,
    ) -> Iterator[Snapshot]:
        """Like :meth:`fold`, but yields each snapshot as soon as it is computed.

        Same results, ``sessions`` updates and errors as :meth:`fold` (a
        :class:`~agentscope.errors.MachineExecutionError` gets ``index``, counted from the start
        of ``events``). Nothing is held between steps, so a long fold keeps no batch of
        snapshots alive (``chunk`` and ``expected`` are accepted for the engines' common
        signature and unused: every snapshot here is whole).
        """
        cache: dict[str, str] = {} if sessions is None else sessions
        s = seed
        for i, ev in enumerate(events):
            try:
                # an event without a sessionId is never rebound (rebind_session returns it as is)
                plain = type(ev) is dict and "sessionId" not in ev
                s = self.transition(s, ev if plain else rebind_session(self, s, ev, cache))
            except MachineExecutionError as exc:  # say which event failed
                exc.index = i
                raise
            yield s

    def child_session(self, snapshot: Snapshot, actor_id: str) -> str | None:
        """Return the session id this engine minted for the running child ``actor_id``."""
        child = self._state(snapshot).children.get(actor_id)
        return child.session if child is not None else None

    @property
    def graph(self) -> Graph:
        """The statechart structure: every node, its kind and initial, and every transition."""
        if self._graph is None:
            self._graph = self._build_graph()
        return self._graph

    # -- helpers -------------------------------------------------------------------------
    def children_pending(self, snapshot: Snapshot) -> list[tuple[str, str, Any, str]]:
        """Return ``(actor_id, src, input, session_id)`` for every in-flight child, in order."""
        st = self._state(snapshot)
        return [
            (c.id, c.src, None if c.input is UNDEFINED else c.input, c.session) for c in st.children.values()
        ]

    def _state(self, snapshot: Snapshot) -> State:
        h = snapshot.handle
        if isinstance(h, State) and self._compiled.root in h.nodes:  # Node equality is identity
            return h
        restored = self.restore(snapshot.persisted).handle
        assert isinstance(restored, State)
        return restored

    def _validate_value(self, value: Any, node: Node, path: list[str]) -> None:
        if isinstance(value, str):
            if value not in node.states:
                raise SnapshotRestoreError(
                    f"Persisted snapshot references state '{'.'.join([*path, value])}' "
                    f"which does not exist on machine '{self.machine_id}'.",
                    field="value",
                )
            return
        if not isinstance(value, Mapping):
            if value is None:
                raise SnapshotRestoreError("a persisted snapshot needs a state 'value'", field="value")
            return
        for k, v in value.items():
            child = node.states.get(str(k))
            if child is None:
                raise SnapshotRestoreError(
                    f"Persisted snapshot references state '{'.'.join([*path, str(k)])}' "
                    f"which does not exist on machine '{self.machine_id}'.",
                    field="value",
                )
            self._validate_value(v, child, [*path, str(k)])

    def _wrap(self, state: State, cx: Ctx | None = None, prev: State | None = None) -> Snapshot:
        p = self._persisted_of(state, prev)
        if cx is None:
            return Snapshot(p, state)
        taken, actions = self._trace(cx)
        return Snapshot(p, state, taken, actions, microstep_values=self._values(cx, p.get("value")))

    def _persisted_of(self, s: State, prev: State | None) -> dict[str, Any]:
        """The persisted snapshot of ``s``, kept on it. From ``prev`` (the state ``s`` was computed
        from), when ``s`` has an ``output`` and an ``error`` exactly where ``prev`` has them (so
        both have the same keys in the same order), it is ``prev``'s persisted snapshot with the
        members whose source differs rebuilt, each as :meth:`_persist_state` builds it; the other
        members are shared, as unchanged context values already are."""
        pf = prev.persisted_form if prev is not None else None
        if (
            pf is None
            or prev is None
            or not _algo.FAST_PATHS
            or (s.output is UNDEFINED) is not (prev.output is UNDEFINED)
            or (s.error is UNDEFINED) is not (prev.error is UNDEFINED)
        ):
            out = self._persist_state(s)
        else:
            out = dict(pf)
            if s.status != prev.status:
                out["status"] = s.status
            if s.output is not prev.output:
                out["output"] = strip_undefined(s.output)
            if s.error is not prev.error:
                out["error"] = strip_undefined(s.error)
            if s.nodes is not prev.nodes or s.value is not prev.value:
                out["value"] = get_value(self._compiled, s)
            if s.history is not prev.history:
                out["historyValue"] = _history_json(s.history)
            if s.next_timer_id != prev.next_timer_id:
                out["_nextTimerId"] = s.next_timer_id
            out["context"] = strip_undefined(s.context) if isinstance(s.context, UndefinedDict) else s.context
            if s.children is not prev.children:
                out["children"] = _children_json(s.children)
            if s.timers is not prev.timers:
                out["timers"] = _timers_json(s.timers)
        object.__setattr__(s, "persisted_form", out)
        return out

    def _trace(self, cx: Ctx) -> tuple[tuple[TakenTransition, ...], tuple[Any, ...]]:
        if not cx.taken:
            return (), tuple(cx.actions)
        # the records are immutable values of what was taken: built once per distinct trace
        key = tuple(cx.taken)
        found = self._traces.get(key)
        if found is not None:
            return found, tuple(cx.actions)
        edges = self._edge_index()
        taken = tuple(
            TakenTransition(
                microstep=step,
                event=ev,
                source=t.source.id,
                targets=tuple(n.id for n in targets),
                edge=edges.get(t),
                guard=t.guard_name,
                kind=t.kind,  # type: ignore[arg-type]
                reenter=reenter,
            )
            for step, ev, t, targets, reenter in cx.taken
        )
        if len(self._traces) < _TRACE_CACHE_MAX:
            self._traces[key] = taken
        return taken, tuple(cx.actions)

    def _values(self, cx: Ctx, final: Any) -> tuple[Any, ...]:
        """The state value after each microstep of the call (``final`` after the last)."""
        k = cx.steps
        if k <= 1:
            return (final,) if k else ()
        mid = [get_value(self._compiled, s) for s in cx.after[: k - 1]]
        return (*mid, *[final] * (k - len(mid)))

    def _edge_index(self) -> dict[Transition, int]:
        if self._edges is None:
            self._graph = self._build_graph()
        assert self._edges is not None
        return self._edges

    def _persist_state(self, s: State) -> dict[str, Any]:
        out: dict[str, Any] = {"status": s.status}
        if s.output is not UNDEFINED:
            out["output"] = strip_undefined(s.output)
        if s.error is not UNDEFINED:
            out["error"] = strip_undefined(s.error)
        out["value"] = get_value(self._compiled, s)
        out["historyValue"] = _history_json(s.history)
        out["_nextTimerId"] = s.next_timer_id
        out["context"] = strip_undefined(s.context) if isinstance(s.context, UndefinedDict) else s.context
        out["children"] = _children_json(s.children)
        out["timers"] = _timers_json(s.timers)
        if self.declared_version is not None:
            out["machine"] = {"id": self.machine_id, "version": self.declared_version}
            out["version"] = self.declared_version
        return out

    def _build_graph(self) -> Graph:
        nodes: dict[str, StateNodeInfo] = {}
        transitions: list[TransitionInfo] = []
        edges: dict[Transition, int] = {}
        for n in sorted(self._compiled.id_map.values(), key=lambda x: x.order):
            kind = n.type
            nodes[n.id] = StateNodeInfo(
                id=n.id,
                key=n.key,
                path=n.path,
                kind=kind,  # type: ignore[arg-type]
                parent=n.parent.id if n.parent else None,
                children=tuple(c.id for c in n.states.values()),
                initial=n.initial_targets[0].id if n.initial_targets else None,
                history=n.history,  # type: ignore[arg-type]
                invoke=tuple((i.id, i.src) for i in n.invoke),
                entry=(_name(n.entry),) if n.entry else (),
                exit=(_name(n.exit),) if n.exit else (),
                tags=tuple(str(t) for t in (n.config.get("tags") or ())),
                description=n.config.get("description"),
            )
            lists = [*n.transitions.values()]
            if n.always:
                lists.append(n.always)
            for lst in lists:
                for t in lst:
                    if t.hidden:
                        continue
                    edges[t] = len(transitions)
                    if t.kind == "after":
                        delay = t.matches["delay"]
                        shown = delay if isinstance(delay, str) else js_number(delay)
                        event = f"xstate.after.{shown}.{n.id}"
                    elif t.kind == "onDone":
                        event = f"xstate.done.state.{n.id}"
                    elif t.kind.startswith("invoke."):
                        event = f"{t.descriptor}.{t.invoke_id}"
                    else:
                        event = t.descriptor
                    transitions.append(
                        TransitionInfo(
                            source=n.id,
                            event=event,
                            targets=tuple(x.id for x in (t.targets or ())),
                            guard=t.guard_name,
                            dynamic=t.to is not None,
                            reenter=t.reenter,
                            kind=t.kind,  # type: ignore[arg-type]
                            actions=t.actions,
                        )
                    )
        self._edges = edges
        return Graph(self.machine_id, self._compiled.root.id, nodes, tuple(transitions))


def _history_json(hv: Mapping[str, tuple[Node, ...]]) -> dict[str, Any]:
    """The persisted ``historyValue``: ``{history state id: [{"id": node id}, ...]}``."""
    return {k: [{"id": n.id} for n in v] for k, v in hv.items()} if hv else {}


def _children_json(kids: Mapping[str, Child]) -> dict[str, Any]:
    """The persisted ``children``: ``{id: {address, snapshot, src, syncSnapshot}}``; a child
    started here shows XState's promise actor snapshot (``status``, ``input``, ``effects``)."""
    children: dict[str, Any] = {}
    for cid, c in kids.items() if kids else ():
        if c.snapshot is not UNDEFINED:
            snap = c.snapshot
        else:
            snap = {"status": "active"}
            if c.input is not UNDEFINED:
                snap["input"] = strip_undefined(c.input)
            snap["effects"] = {"async": {"status": "active"}}
        children[cid] = {"address": c.address, "snapshot": snap, "src": c.src, "syncSnapshot": False}
    return children


def _timers_json(timers: Mapping[str, Any]) -> dict[str, Any]:
    """The persisted ``timers`` (each entry a fresh dict)."""
    return {k: dict(v) for k, v in timers.items()} if timers else {}


_new = object.__new__
_set_persisted = Snapshot.__dict__["persisted"].__set__
_set_handle = Snapshot.__dict__["handle"].__set__
_set_transitions = Snapshot.__dict__["transitions"].__set__
_set_actions = Snapshot.__dict__["actions"].__set__
_set_state_hash = Snapshot.__dict__["state_hash"].__set__
_set_unchanged = Snapshot.__dict__["unchanged"].__set__
_set_values = Snapshot.__dict__["microstep_values"].__set__


def _snapshot(
    persisted: Mapping[str, Any],
    handle: State,
    transitions: tuple[TakenTransition, ...],
    actions: tuple[Any, ...],
    values: tuple[Any, ...] = (),
) -> Snapshot:
    """``Snapshot(persisted, handle, transitions, actions, microstep_values=values)`` (no
    ``state_hash``), built without the frozen dataclass's ``__init__``, which sets each field
    through ``object.__setattr__``; this is on the path of every transition."""
    out: Snapshot = _new(Snapshot)
    _set_persisted(out, persisted)
    _set_handle(out, handle)
    _set_transitions(out, transitions)
    _set_actions(out, actions)
    _set_state_hash(out, None)
    _set_unchanged(out, None)
    _set_values(out, values)
    return out


def _opaque(*_: Any) -> None:
    """Stands for a JS function in the structural view (it vanishes from the structural string)."""


def _string_keys(v: Any) -> Any:
    """Return ``v`` as XState's ``machine.config`` would show it to the structural string: every
    dict key a string (JS object keys are: ``after: {1000: ...}``), and what a JS machine writes as
    a function shown as one (action data and ``state_in`` guards, which XState 6 writes inside
    functions; a choice candidate list, which is XState's ``choice`` function; ``UNDEFINED``)."""
    if isinstance(v, (Raise, Cancel, Emit, StateIn)) or v is UNDEFINED:
        return _opaque
    if isinstance(v, Mapping):
        out = {str(k): _string_keys(x) for k, x in v.items()}
        if out.get("type") == "choice" and isinstance(v.get("choice"), (list, tuple)):
            out["choice"] = _opaque
        return out
    if isinstance(v, (list, tuple)):
        return [_string_keys(x) for x in v]
    return v


def _name(fn: Any) -> str:
    name = getattr(fn, "__name__", "(inline)")
    return "(inline)" if name == "<lambda>" else str(name)


def _show(v: Any) -> str:
    return "undefined" if v is UNDEFINED else str(v)


class MachineFactory:
    """What :func:`setup` returns: ``create_machine(config)`` builds a :class:`StatechartMachine`."""

    def __init__(
        self,
        actors: Mapping[str, Callable[[Any], Any]] | None,
        guards: Mapping[str, Callable[[Any, Any], Any]] | None,
        actions: Mapping[str, Callable[..., Any]] | None,
        delays: Mapping[str, Any] | None,
    ) -> None:
        self.actors = actors
        self.guards = guards
        self.actions = actions
        self.delays = delays

    def create_machine(self, config: Mapping[str, Any]) -> StatechartMachine:
        """Build the machine; like XState's ``setup(...).createMachine(config)``, the named
        implementations are merged into the structural view (``actors`` as ``{"config": {}}``)."""
        extras = {
            "actions": self.actions,
            "actors": self.actors,
            "guards": self.guards,
            "delays": self.delays,
        }
        return StatechartMachine(
            config,
            actors=self.actors,
            guards=self.guards,
            actions=self.actions,
            delays=self.delays,
            structural=structural_view(config, extras),
        )


def setup(
    *,
    actors: Mapping[str, Callable[[Any], Any]] | None = None,
    guards: Mapping[str, Callable[[Any, Any], Any]] | None = None,
    actions: Mapping[str, Callable[..., Any]] | None = None,
    delays: Mapping[str, Any] | None = None,
) -> MachineFactory:
    """Return a factory mirroring XState's ``setup({...})``: ``setup(actors=...).create_machine(config)``.

    The machine's structural version then includes the named implementations exactly as
    XState's ``machine.config`` does (spec §3), e.g. the triage machine's ``efe50ed5``.

    Parameters
    ----------
    actors : Mapping[str, Callable[[Any], Any]], optional
        Actor implementations by ``src`` name, ``callable(input) -> output`` (raise to fail).
    guards : Mapping[str, Callable[[Any, Any], Any]], optional
        Named guards, ``callable(context, event) -> bool``.
    actions : Mapping[str, Callable[..., Any]], optional
        Named actions.
    delays : Mapping[str, Any], optional
        Named delays (milliseconds, or ``callable(context, event) -> ms``).

    Returns
    -------
    MachineFactory
        Its ``create_machine(config)`` returns a :class:`StatechartMachine`.

    Examples
    --------
    >>> import agentscope as asc
    >>> factory = asc.setup(guards={"positive": lambda context, event: event["by"] > 0})
    >>> machine = factory.create_machine({
    ...     "id": "counter", "initial": "on", "context": {"count": 0},
    ...     "states": {"on": {"on": {"INC": {
    ...         "guard": "positive",
    ...         "context": lambda context, event: {"count": context["count"] + event["by"]},
    ...     }}}},
    ... })
    >>> rec = asc.Recorder(machine)
    >>> _ = rec.send({"type": "INC", "by": 2}), rec.send({"type": "INC", "by": -1})
    >>> rec.persisted["context"]
    {'count': 2}
    """
    return MachineFactory(actors, guards, actions, delays)

"""The pure transition algorithm: XState 6 (alpha.48) macrostep/microstep on compiled nodes.

A port of the SCXML-derived algorithm as XState 6 runs it in a pure ``transition``: candidate
selection per active atomic state up its ancestors, conflict removal, exit set (reverse document
order, history recorded first), transition context patches, entry set (document order, invokes
created before the entry callable runs, ``after`` timers scheduled on entry), done events of
compound/parallel states raised internally, then eventless transitions until the state is stable.
Where XState 6 differs from SCXML (function transitions, parallel-domain narrowing, events still
processed in a ``done`` state, an unhandled ``xstate.error.*`` setting ``status: "error"``) this
follows XState.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from agentscope.engines._statechart_nodes import (
    UNDEFINED,
    Action,
    Cancel,
    ChoiceError,
    CompiledMachine,
    Emit,
    Node,
    Raise,
    StateIn,
    Transition,
    _to_state_path,
    check_action,
    get_by_path,
    is_descendant,
    resolve_target,
)
from agentscope.errors import EngineError
from agentscope.hashing import js_values

__all__ = ["Child", "State", "all_state_nodes", "initial_state", "macrostep", "state_value"]


@dataclass(frozen=True, eq=False)
class Child:
    """An invoked actor in flight: persisted as ``{address, snapshot, src, syncSnapshot}``."""

    id: str
    src: str
    address: str
    session: str
    input: Any = UNDEFINED
    snapshot: Any = UNDEFINED  # a restored child's persisted snapshot, kept verbatim


@dataclass(frozen=True, eq=False)
class State:
    """The engine's snapshot. Identity matters: it mirrors XState's "same object" checks."""

    status: str
    nodes: tuple[Node, ...]
    context: Any
    output: Any = UNDEFINED
    error: Any = UNDEFINED
    value: Any = None
    children: Mapping[str, Child] = field(default_factory=dict)
    timers: Mapping[str, Any] = field(default_factory=dict)
    history: Mapping[str, tuple[Node, ...]] = field(default_factory=dict)
    next_timer_id: int = 0
    seq: int = 0
    has_undefined: bool = False  # some context value is UNDEFINED (dropped when persisted)
    # the persisted snapshot the engine built for this state (set once by the engine; a clone
    # starts without one)
    persisted_form: Any = field(default=None, init=False, compare=False, repr=False)


FAST_PATHS = True
"""The engine's shortcuts are on: the selection walk, exit and entry sets and eventless lists
kept per configuration; the targetless microstep; an event nothing takes; the quick macrostep
of an external event (:func:`quick_macrostep`); one walk of a context patch; the persisted
snapshot rebuilt from the previous one member by member. Each gives exactly what the general
path gives; tests turn them off to compare the two on the same inputs."""

_STATE_FIELDS = frozenset(f.name for f in dataclasses.fields(State))


def clone(s: State, **changes: Any) -> State:
    """XState's ``cloneMachineSnapshot``: a new object; the value is recomputed if nodes change.

    What ``dataclasses.replace`` does (same fields, unknown names refused), without re-running
    ``__init__`` for every field: this is on the path of every transition.
    """
    if "nodes" in changes and changes["nodes"] is not s.nodes:
        changes.setdefault("value", None)
    if not _STATE_FIELDS.issuperset(changes):
        raise TypeError(f"State has no field(s) {sorted(set(changes) - _STATE_FIELDS)!r}")
    new = object.__new__(State)
    d = new.__dict__
    d.update(s.__dict__)
    d.update(changes)
    d["persisted_form"] = None
    return new


# --------------------------------------------------------------------------------------------
# configuration helpers


def children_of(node: Node) -> tuple[Node, ...]:
    return node.children_list


def proper_ancestors(node: Node, upto: Node | None) -> list[Node]:
    out: list[Node] = []
    if upto is node:
        return out
    m = node.parent
    while m is not None and m is not upto:
        out.append(m)
        m = m.parent
    return out


def initial_state_nodes(node: Node) -> list[Node]:
    ordered: list[Node] = []
    seen: set[int] = set()

    def it(n: Node) -> None:
        if id(n) in seen:
            return
        seen.add(id(n))
        ordered.append(n)
        if n.type == "compound":
            for t in n.initial_targets or ():
                it(t)
        elif n.type == "parallel":
            for c in children_of(n):
                it(c)

    it(node)
    i = 0
    while i < len(ordered):
        for anc in proper_ancestors(ordered[i], node):
            if id(anc) not in seen:
                seen.add(id(anc))
                ordered.append(anc)
        i += 1
    return ordered


def all_state_nodes(nodes: list[Node]) -> list[Node]:
    """XState's ``getAllStateNodes``: complete a node set, keeping Set insertion order."""
    order: list[Node] = []
    seen: set[int] = set()
    for n in nodes:
        if id(n) not in seen:
            seen.add(id(n))
            order.append(n)
    active_parents = {id(n.parent) for n in order if n.parent is not None}
    i = 0
    while i < len(order):
        s = order[i]
        i += 1
        if s.type == "compound" and id(s) not in active_parents:
            for sn in initial_state_nodes(s):
                if id(sn) not in seen:
                    seen.add(id(sn))
                    order.append(sn)
            continue
        if s.type == "parallel":
            for c in children_of(s):
                if id(c) not in seen:
                    for sn in initial_state_nodes(c):
                        if id(sn) not in seen:
                            seen.add(id(sn))
                            order.append(sn)
    i = 0
    while i < len(order):
        m = order[i].parent
        while m is not None and id(m) not in seen:
            seen.add(id(m))
            order.append(m)
            m = m.parent
        i += 1
    return order


def _is_atomic(n: Node) -> bool:
    return n.type in ("atomic", "final", "choice")


def state_value(root: Node, nodes: tuple[Node, ...]) -> Any:
    """XState's ``getStateValue`` (adjacency in node order)."""
    config = all_state_nodes(list(nodes))
    adj: dict[int, list[Node]] = {}
    for s in config:
        adj.setdefault(id(s), [])
        if s.parent is None:
            continue
        adj.setdefault(id(s.parent), []).append(s)

    def val(base: Node) -> Any:
        kids = adj.get(id(base))
        if kids is None:
            return {}
        if base.type == "compound":
            if not kids:
                return {}
            if _is_atomic(kids[0]):
                return kids[0].key
        return {k.key: val(k) for k in kids}

    return val(root)


def nodes_for_value(m: CompiledMachine, value: Any) -> list[Node]:
    """XState's ``getAllStateNodes(getStateNodes(root, value))``."""

    def get(node: Node, v: Any) -> list[Node]:
        if isinstance(v, str):
            child = node.states.get(v)
            if child is None:
                raise EngineError(f"State '{v}' does not exist on '{node.id}'")
            return [node, child]
        if not isinstance(v, Mapping):
            raise EngineError(f"invalid state value {v!r} at '{node.id}'")
        out = [m.root, node]
        subs: list[tuple[Node, Any]] = []
        for k in v:
            child = node.states.get(str(k))
            if child is None:
                raise EngineError(f"Child state '{k}' does not exist on '{node.id}'")
            out.append(child)
            subs.append((child, v[k]))
        for child, sv in subs:
            out.extend(get(child, sv))
        return out

    return all_state_nodes(get(m.root, value))


def in_final_state(nodes: set[int], node: Node) -> bool:
    if node.type == "compound":
        return any(c.type == "final" and id(c) in nodes for c in children_of(node))
    if node.type == "parallel":
        return all(in_final_state(nodes, c) for c in children_of(node))
    return node.type == "final"


# --------------------------------------------------------------------------------------------
# events


def legacy_type(event: Mapping[str, Any]) -> str | None:
    t = event.get("type")
    if t in ("xstate.done.actor", "xstate.error.actor"):
        return f"{t}.{_s(event.get('actorId'))}"
    if t == "xstate.done.state":
        return f"xstate.done.state.{_s(event.get('stateId'))}"
    if t == "xstate.after":
        return f"xstate.after.{_s(event.get('delay'))}.{_s(event.get('stateId'))}"
    return None


def _s(v: Any) -> str:
    from agentscope.hashing import js_number

    if v is UNDEFINED:
        return "undefined"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return js_number(v)
    if v is None:
        return "null"
    return str(v)


def normalize_event(event: Mapping[str, Any], m: CompiledMachine) -> Mapping[str, Any]:
    t = event["type"]
    if not t.startswith("xstate."):  # every form rewritten below starts so
        return event
    if t in ("xstate.done.actor", "xstate.error.actor", "xstate.done.state", "xstate.after"):
        return event
    for prefix, typ, key in (
        ("xstate.done.actor.", "xstate.done.actor", "actorId"),
        ("xstate.error.actor.", "xstate.error.actor", "actorId"),
        ("xstate.done.state.", "xstate.done.state", "stateId"),
    ):
        if t.startswith(prefix):
            out = dict(event)
            out["type"] = typ
            if event.get(key) is None:
                out[key] = t[len(prefix) :]
            return out
    if t.startswith("xstate.after."):
        for sid in sorted(m.id_map, key=len, reverse=True):
            if t.endswith("." + sid):
                text = t[len("xstate.after.") : -len(sid) - 1]
                out = dict(event)
                out["type"] = "xstate.after"
                try:
                    d: Any = float(text)
                    d = int(d) if d.is_integer() else d
                except ValueError:
                    d = text
                out["delay"] = d
                out["stateId"] = sid
                return out
    return event


def matches_descriptor(event_type: str, desc: str) -> bool:
    if desc == event_type or desc == "*":
        return True
    if not desc.endswith(".*"):
        return False
    pt = desc.split(".")
    et = event_type.split(".")
    for i, tok in enumerate(pt):
        if tok == "*":
            return i == len(pt) - 1
        if i >= len(et) or tok != et[i]:
            return False
    return True


_CANDIDATE_CACHE_MAX = 4096


def candidates(node: Node, event: Mapping[str, Any]) -> tuple[Transition, ...]:
    """The transitions of ``node`` an event may take, in XState's order (exact descriptors first,
    then wildcards, longest first). They depend only on the event type and its legacy form, so
    they are kept per node by that pair."""
    lt = legacy_type(event) or None
    key = (event["type"], lt)
    cache = node.candidate_cache
    found = cache.get(key)
    if found is None:
        found = _candidates(node, key[0], lt)
        if len(cache) < _CANDIDATE_CACHE_MAX:
            cache[key] = found
    return found


def _candidates(node: Node, event_type: str, lt: str | None) -> tuple[Transition, ...]:
    types = [event_type]
    if lt:
        types.append(lt)
    exact: list[Transition] = []
    for t in types:
        exact.extend(node.transitions.get(t, ()))
    wild_keys = [
        k for k in node.transitions if k not in types and any(matches_descriptor(t, k) for t in types)
    ]
    wild_keys.sort(key=len, reverse=True)
    wild = [t for k in wild_keys for t in node.transitions[k]]
    return tuple(exact + wild if exact else wild)


def handles(m: CompiledMachine, nodes: tuple[Node, ...], event_type: str) -> bool:
    """Whether any node of the configuration ``nodes`` has a transition an event of
    ``event_type`` may take (exact or wildcard descriptor; for a type with no legacy form,
    i.e. not ``xstate.*``). A pure function of its arguments, kept per configuration and type.
    ``False`` means the event selects nothing in any microstep's first selection."""
    key = (nodes, event_type)
    cache = m.handles_cache
    found = cache.get(key)
    if found is None:
        ev = {"type": event_type}
        found = any(candidates(n, ev) for n in nodes)
        if len(cache) < _CANDIDATE_CACHE_MAX:
            cache[key] = found
    return found


def _js_is(a: Any, b: Any) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return float(a) == float(b)
    return bool(type(a) is type(b) and a == b)


def session_matches(event: Mapping[str, Any], s: State, actor_id: Any) -> bool:
    child = s.children.get(actor_id) if isinstance(actor_id, str) else None
    if child is None or "sessionId" not in event:
        return True
    return bool(child.session == event["sessionId"])


CONTEXT_ONLY = 1
NODES_AND_CONTEXT = 2


class Ctx:
    """One call's working state (``initial`` or ``transition``): a fresh one per call, so the
    machine object holds no per-call state and is safe to share between threads."""

    __slots__ = ("actions", "after", "explicit_ids", "m", "machine_id", "plain", "root_address",
                 "steps", "stopped_ids", "taken", "working_children")

    def __init__(self, m: CompiledMachine, machine_id: str, address: str | None = None) -> None:
        self.m = m
        self.machine_id = machine_id
        self.root_address = root_address(machine_id) if address is None else address
        # the child-id transaction (working_children, explicit_ids, stopped_ids) is set by
        # begin(), which every path calls before it enters or exits a state
        # what the call did, for Snapshot.transitions / Snapshot.actions
        self.steps = 0
        self.taken: list[tuple[int, str, Transition, tuple[Node, ...], bool]] = []
        self.actions: list[Action] = []
        # the state after each microstep that took transitions, but the last (Snapshot.microstep_values)
        self.after: list[State] = []
        # set by quick_macrostep: the result differs from the state it started from in its
        # context only (CONTEXT_ONLY: every other member shared), or in its context and
        # configuration only (NODES_AND_CONTEXT: a new node tuple, no value; the rest shared)
        self.plain = 0

    def begin(self, working: State | None) -> None:
        """Start one transition's child-id transaction (XState's spawn allocation)."""
        self.working_children: Mapping[str, Child] = working.children if working is not None else {}
        self.explicit_ids: set[str] = set()
        self.stopped_ids: set[str] = set()

    def stopped(self, child_id: str) -> None:
        self.stopped_ids.add(child_id)
        self.explicit_ids.discard(child_id)

    def claim(self, child_id: str) -> None:
        occupied = child_id in self.working_children and child_id not in self.stopped_ids
        if child_id in self.explicit_ids or occupied:
            raise EngineError(f"Child actor id '{child_id}' is already in use")
        self.explicit_ids.add(child_id)


def root_address(machine_id: str) -> str:
    """The root actor's address segment as XState 6 mints it for a pure transition."""
    return "x:0" if machine_id == "(machine)" else _encode(machine_id)


def _encode(seg: str) -> str:
    if "/" in seg or "%" in seg:
        return seg.replace("%", "%25").replace("/", "%2F")
    return seg


def value_of(s: State) -> Any:
    """The state value of ``s`` (computed from its nodes when not cached)."""
    if s.value is not None:
        return s.value
    root = next(n for n in s.nodes if n.parent is None)
    return state_value(root, s.nodes)


def _to_state_value(v: Any) -> Any:
    if isinstance(v, str):
        parts = v.split(".")
        out: Any = parts[-1]
        for p in reversed(parts[:-1]):
            out = {p: out}
        return out
    return v


def matches_state(parent: Any, child: Any) -> bool:
    """XState's ``matchesState(parent, child)``: is the value ``child`` within ``parent``?"""
    pv, cv = _to_state_value(parent), _to_state_value(child)
    if isinstance(cv, str):
        return isinstance(pv, str) and cv == pv
    if not isinstance(cv, Mapping):
        return False
    if isinstance(pv, str):
        return pv in cv
    if not isinstance(pv, Mapping):
        return False
    return all(k in cv and matches_state(pv[k], cv[k]) for k in pv)


def state_in(s: State, state: Any) -> bool:
    """XState's ``checkStateIn``: ``"#id"`` (or ``"#id.child"``, resolved as
    ``getStateNodeById`` does) is an active node; otherwise the value matches.

    Raises
    ------
    LookupError
        ``"#id..."`` names no state node (XState throws the same message).
    """
    if isinstance(state, str) and state.startswith("#"):
        return _node_by_id(s, state) in s.nodes
    return matches_state(state, value_of(s))


def _node_by_id(s: State, state_id: str) -> Node:
    """The node ``getStateNodeById(state_id)`` finds on the machine of ``s``."""
    root = next(n for n in s.nodes if n.parent is None)
    head, *path = _to_state_path(state_id)
    head = head[1:] if head.startswith("#") else head
    stack, node = [root], None
    while stack and node is None:
        n = stack.pop()
        if n.id == head:
            node = n
        stack.extend(n.states.values())
    if node is None:
        raise LookupError(f"Child state node '#{head}' does not exist on machine '{root.id}'")
    for seg in path:
        nxt = node.states.get(seg)
        if nxt is None:
            raise LookupError(f"Child state '{seg}' does not exist on '{node.id}'")
        node = nxt
    return node


def call_to(t: Transition, s: State, event: Mapping[str, Any]) -> Any:
    """Call a function transition (with the state value when it takes one) and check a choice's result."""
    assert t.to is not None
    res = t.to(s.context, event, value_of(s)) if t.to_value else t.to(s.context, event)
    if t.choice_of is not None and (
        not isinstance(res, Mapping) or res.get("target") is None or res.get("actions") is not None
    ):
        if isinstance(res, Mapping) and res.get("actions") is not None:
            raise ChoiceError(f'Choice state "{t.choice_of}" cannot declare `actions` on a choice.')
        raise ChoiceError(f'Choice "{t.choice_of}" has no target')
    return res


def evaluate_candidate(
    t: Transition, event: Mapping[str, Any], s: State, results: dict[Transition, Any] | None
) -> bool:
    if t.matches:
        for k, v in t.matches.items():
            if not _js_is(event.get(k, UNDEFINED), v):
                return False
    if t.invoke_id is not None and not session_matches(event, s, t.invoke_id):
        return False
    g = t.guard
    if g is not None:
        if isinstance(g, StateIn):
            if not state_in(s, g.state):
                return False
        elif not (g(s.context, event, value_of(s)) if t.guard_value else g(s.context, event)):
            return False
    if t.to is not None:
        res = call_to(t, s, event)
        if results is not None:
            results[t] = res
        return res is not None
    return True


def node_next(
    node: Node, s: State, event: Mapping[str, Any], results: dict[Transition, Any] | None
) -> list[Transition] | None:
    for c in candidates(node, event):
        if evaluate_candidate(c, event, s, results):
            return [c]
    return None


def transition_node(
    node: Node, value: Any, s: State, event: Mapping[str, Any], results: dict[Transition, Any] | None
) -> list[Transition] | None:
    if isinstance(value, str):
        child = node.states[value]
        nxt = node_next(child, s, event, results)
        if not nxt:
            return node_next(node, s, event, results)
        return nxt
    keys = list(value)
    if len(keys) == 1:
        child = node.states[keys[0]]
        nxt = transition_node(child, value[keys[0]], s, event, results)
        if not nxt:
            return node_next(node, s, event, results)
        return nxt
    inner: list[Transition] = []
    for k in keys:
        sv = value[k]
        if sv is None or sv is False or (isinstance(sv, (str, int, float)) and not sv):
            continue  # JS falsiness: an empty object {} is truthy
        sub = transition_node(node.states[k], sv, s, event, results)
        if sub:
            inner.extend(sub)
    if not inner:
        return node_next(node, s, event, results)
    return inner


def select_transitions(
    m: CompiledMachine, s: State, event: Mapping[str, Any], results: dict[Transition, Any] | None
) -> list[Transition]:
    """``transition_node(root, value)`` of ``s`` for ``event``, or ``[]``.

    ``transition_node`` walks the state value: in each region it takes the first enabled
    candidate of the first node (leaf first) that has one, and a node's own candidates are tried
    only when its regions selected nothing. Which candidates are tried, in which order, depends
    only on the configuration (its node tuple, or its value when the state carries one as a
    string) and the event type, so that walk is kept as a :data:`SelectionPlan`; every candidate
    is still evaluated (guards, function transitions) in the same order, stopping at the same
    ones. Object values carried by the state (a restored one) take ``transition_node``.
    """
    v = s.value
    if not FAST_PATHS:
        return transition_node(m.root, get_value(m, s), s, event, results) or []
    if v is None:
        vkey: Any = s.nodes
    elif type(v) is str:
        vkey = v
    else:
        return transition_node(m.root, get_value(m, s), s, event, results) or []
    etype = event["type"]
    lt = (legacy_type(event) or None) if etype.startswith("xstate.") else None  # only those have one
    key = (vkey, etype, lt)
    cache = m.plan_cache
    plan = cache.get(key)
    if plan is None:
        plan = _selection_plan(m.root, get_value(m, s), event)
        if len(cache) < _CANDIDATE_CACHE_MAX:
            cache[key] = plan
    return run_plan(plan, event, s, results)


SelectionPlan = tuple[Any, tuple[Transition, ...]]
"""``(regions, candidates)``: ``regions`` is ``None`` (a chain of nodes) or the plans of a parallel
node's regions (tried first, all of them); ``candidates`` are tried in order, only when the
regions selected nothing (the parallel node's own, then its ancestors' up to the next parallel
node, nearest first)."""


def run_plan(
    plan: SelectionPlan, event: Mapping[str, Any], s: State, results: dict[Transition, Any] | None
) -> list[Transition]:
    """The transitions ``plan`` selects for ``event`` in ``s`` (what ``transition_node`` returns)."""
    regions, cands = plan
    if regions is not None:
        inner: list[Transition] = []
        for sub in regions:
            inner.extend(run_plan(sub, event, s, results))
        if inner:
            return inner
    for c in cands:
        if evaluate_candidate(c, event, s, results):
            return [c]
    return []


def _selection_plan(node: Node, value: Any, event: Mapping[str, Any]) -> SelectionPlan:
    """``transition_node(node, value)`` as a :data:`SelectionPlan` (the same candidates, the same
    order, the same fallbacks)."""
    if isinstance(value, str):
        return None, (*candidates(node.states[value], event), *candidates(node, event))
    keys = list(value)
    if len(keys) == 1:
        regions, cands = _selection_plan(node.states[keys[0]], value[keys[0]], event)
        return regions, (*cands, *candidates(node, event))
    subs = []
    for k in keys:
        sv = value[k]
        if sv is None or sv is False or (isinstance(sv, (str, int, float)) and not sv):
            continue  # JS falsiness: an empty object {} is truthy
        subs.append(_selection_plan(node.states[k], sv, event))
    return tuple(subs), candidates(node, event)


_VALUE_CACHE_MAX = 4096


def get_value(m: CompiledMachine, s: State) -> Any:
    """The state value of ``s``: its own, else the one of its configuration (computed once per
    configuration per machine; a caller gets its own copy of an object value)."""
    if s.value is not None:
        return s.value
    cache = m.value_cache
    value = cache.get(s.nodes)
    if value is None:
        value = state_value(m.root, s.nodes)
        if len(cache) < _VALUE_CACHE_MAX:
            cache[s.nodes] = value
    return value if isinstance(value, str) else _copy_value(value)


def _copy_value(v: Any) -> Any:
    return {k: x if isinstance(x, str) else _copy_value(x) for k, x in v.items()}


# --------------------------------------------------------------------------------------------
# transition results


@dataclass(slots=True)
class Result:
    targets: tuple[Node, ...] | None
    context: Any
    reenter: bool
    actions: tuple[Action, ...] = ()


class Resolver:
    """``createTransitionResultResolver``: evaluates (and caches) a transition's result."""

    __slots__ = ("cache", "event", "m", "s", "selection")

    def __init__(
        self, m: CompiledMachine, s: State, event: Mapping[str, Any], selection: dict[Transition, Any]
    ) -> None:
        self.m = m
        self.s = s
        self.event = event
        self.selection = selection
        self.cache: dict[Transition, Result] = {}

    def __call__(self, t: Transition) -> Result:
        r = self.cache.get(t)
        if r is None:
            r = self._compute(t)
            self.cache[t] = r
        return r

    def _compute(self, t: Transition) -> Result:
        return resolve(self.m, t, self.s, self.event, self.selection)


def resolve(
    m: CompiledMachine, t: Transition, s: State, event: Mapping[str, Any], selection: dict[Transition, Any]
) -> Result:
    """A transition's result in ``s`` for ``event``: its targets, context patch, reenter and
    actions (a function transition's result is taken from ``selection`` when selection ran it)."""
    if t.to is not None:
        if t in selection:
            res = selection[t]
        else:
            res = call_to(t, s, event)
            selection[t] = res
        if res is not None and type(res) is not dict and not isinstance(res, Mapping):
            raise EngineError(
                f"function transition of '{t.source.id}' must return a dict or None, "
                f"got {type(res).__name__}"
            )
        res = res or {}
        if not _RESULT_KEYS.issuperset(res):
            extra = [k for k in res if k not in _RESULT_KEYS]
            raise EngineError(
                f"function transition of '{t.source.id}' returned unsupported key(s) {extra!r} "
                f"(supported: target, context, reenter, actions)"
            )
        tgt = res.get("target")
        targets = None
        if tgt:
            tl = (tgt,) if isinstance(tgt, str) else tuple(tgt)
            tkey = (t.source, tl)
            targets = m.target_cache.get(tkey)
            if targets is None:  # resolving is a pure function of the structure: kept
                targets = resolve_target(m, t.source, tl)
                if len(m.target_cache) < _CANDIDATE_CACHE_MAX:
                    m.target_cache[tkey] = targets
        ctx = res.get("context", UNDEFINED)
        if ctx is None:
            ctx = UNDEFINED
        acts = (
            _actions_of(res, f"function transition of '{t.source.id}'")
            if res.get("actions") is not None
            else ()
        )
        return Result(targets, ctx, bool(res.get("reenter", False)), acts)
    ctx = t.context
    if callable(ctx):
        ctx = ctx(s.context, event)
        if ctx is None:
            ctx = UNDEFINED
    return Result(t.targets, ctx, t.reenter, t.action_data)


_RESULT_KEYS = frozenset({"target", "context", "reenter", "actions"})


def _actions_of(res: Mapping[str, Any], where: str) -> tuple[Action, ...]:
    """The ``actions`` a callable returned next to its context patch (validated action data)."""
    acts = res.get("actions")
    if acts is None:
        return ()
    items = tuple(acts) if isinstance(acts, (list, tuple)) else (acts,)
    for a in items:
        try:
            check_action(a, where)
        except Exception as exc:
            raise EngineError(str(exc)) from None
    return items


def history_default(node: Node, m: CompiledMachine) -> Transition:
    """The default transition of a history node: one object per node (results are cached by
    transition identity, so it must not be rebuilt per call)."""
    t = node.history_default
    if t is None:
        assert node.parent is not None and node.history_target is not None
        targets = tuple(get_by_path(m, node.parent, x) for x in node.history_target)
        t = Transition(source=node, descriptor="", kind="history", targets=targets)
        node.history_default = t
    return t


def effective_targets(t: Transition, s: State, rv: Resolver) -> list[Node]:
    targets = rv(t).targets
    if not targets:
        return []
    out: list[Node] = []
    for n in targets:
        if n.type == "history":
            hv = s.history.get(n.id)
            src = list(hv) if hv else effective_targets(history_default(n, rv.m), s, rv)
            for x in src:
                if x not in out:
                    out.append(x)
        elif n not in out:
            out.append(n)
    return out


def narrow_parallel(domain: Node, targets: list[Node]) -> Node:
    narrowed = domain
    while narrowed.type == "parallel":
        region = next(
            (c for c in children_of(narrowed) if all(x is c or is_descendant(x, c) for x in targets)),
            None,
        )
        if region is None:
            break
        narrowed = region
    return narrowed


def transition_domain(t: Transition, s: State, rv: Resolver) -> Node | None:
    tstates = effective_targets(t, s, rv)
    r = rv(t)
    restores_via_history = (
        bool(r.targets)
        and any(x.type == "history" for x in r.targets or ())
        and any(x is t.source for x in tstates)
    )
    if not restores_via_history and all(x is t.source or is_descendant(x, t.source) for x in tstates):
        return t.source if r.reenter else narrow_parallel(t.source, tstates)
    head, *tail = [*tstates, t.source]
    for anc in proper_ancestors(head, None):
        if all(is_descendant(x, anc) for x in tail):
            return anc if r.reenter else narrow_parallel(anc, tstates)
    if r.reenter:
        return None
    root = t.source
    while root.parent is not None:
        root = root.parent
    return narrow_parallel(root, tstates)


def exit_set(ts: list[Transition], nodes: list[Node], s: State, rv: Resolver) -> list[Node]:
    out: list[Node] = []
    for t in ts:
        r = rv(t)
        if r.targets:
            domain = transition_domain(t, s, rv)
            if r.reenter and t.source is domain and domain not in out:
                out.append(domain)
            for n in nodes:
                if is_descendant(n, domain) and n not in out:
                    out.append(n)
    return out


def remove_conflicts(ts: list[Transition], nodes: list[Node], s: State, rv: Resolver) -> list[Transition]:
    filtered: list[Transition] = []
    cache: dict[Transition, set[int]] = {}

    def es(t: Transition) -> set[int]:
        e = cache.get(t)
        if e is None:
            e = {id(n) for n in exit_set([t], nodes, s, rv)}
            cache[t] = e
        return e

    for t1 in ts:
        preempted = False
        remove: list[Transition] = []
        for t2 in filtered:
            if es(t1) & es(t2):
                yields = t2.source.type == "final" and t1.source.type != "final"
                if is_descendant(t1.source, t2.source) or yields:
                    remove.append(t2)
                else:
                    preempted = True
                    break
        if not preempted:
            for t3 in remove:
                filtered.remove(t3)
            filtered.append(t1)
    return filtered


# --------------------------------------------------------------------------------------------
# microstep / macrostep


class UndefinedDict(dict[str, Any]):
    """A context holding :data:`UNDEFINED` somewhere (so persisting it strips those values)."""


_LEAVES = frozenset({str, int, float, bool, type(None)})
_SAFE_INT = 1 << 53  # integers up to this are exact doubles (hashing.js_values leaves them)


def has_undefined(v: Any) -> bool:
    """True when ``v`` contains :data:`UNDEFINED` (JS ``undefined``) at any depth (iterative, so
    deep values are fine; cost: one look at every value, like the hash of it)."""
    stack = [v]
    leaves = _LEAVES
    while stack:
        x = stack.pop()
        if x is UNDEFINED:
            return True
        t = type(x)
        if t in leaves:
            continue
        if t is dict or t is UndefinedDict:
            for y in x.values():
                if y is UNDEFINED:
                    return True
                if type(y) not in leaves:
                    stack.append(y)
        elif t is list or t is tuple:
            for y in x:
                if y is UNDEFINED:
                    return True
                if type(y) not in leaves:
                    stack.append(y)
        elif isinstance(x, Mapping):
            stack.extend(x.values())
        elif isinstance(x, (list, tuple)):
            stack.extend(x)
    return False


def strip_undefined(v: Any) -> Any:
    """``JSON.parse(JSON.stringify(v))`` for :data:`UNDEFINED`: object keys holding it vanish, array
    elements become ``None``; everything else is returned as is (shared, not copied)."""
    if isinstance(v, Mapping):
        if not has_undefined(v):
            return v
        return {k: strip_undefined(x) for k, x in v.items() if x is not UNDEFINED}
    if isinstance(v, (list, tuple)):
        if not has_undefined(v):
            return v
        return [None if x is UNDEFINED else strip_undefined(x) for x in v]
    return v


def _merge(ctx: Any, patch: Any, where: str) -> Any:
    if type(patch) is dict:
        for y in patch.values():  # a flat patch of JSON scalars: no UNDEFINED, no number to convert
            ty = type(y)
            if ty is str or ty is float or ty is bool or y is None:
                continue
            if ty is int and -_SAFE_INT <= y <= _SAFE_INT:
                continue
            break
        else:
            base = ctx if type(ctx) is dict or isinstance(ctx, Mapping) else {}
            flat: dict[str, Any] = UndefinedDict(base) if type(ctx) is UndefinedDict else dict(base)
            flat.update(patch)
            return flat
    elif not isinstance(patch, Mapping):
        raise EngineError(f"{where}: a context patch must be a dict, got {type(patch).__name__}")
    if FAST_PATHS:
        holes, unsafe = _scan_patch(patch)
    else:
        holes, unsafe = has_undefined(patch), True
    undefined = type(ctx) is UndefinedDict or holes
    base = ctx if type(ctx) is dict or isinstance(ctx, Mapping) else {}
    out: dict[str, Any] = (UndefinedDict if undefined else dict)(base)
    # numbers are IEEE doubles, as in XState (js_values returns the patch itself when no integer
    # in it is beyond +-2**53)
    out.update(js_values(patch) if unsafe else patch)
    return out


def _scan_patch(v: Any) -> tuple[bool, bool]:
    """``(has_undefined(v), maybe_unsafe)`` in one walk: ``maybe_unsafe`` is true when ``v`` holds
    an integer beyond +-2**53 where :func:`~agentscope.hashing.js_values` looks for one (it looks
    in fewer containers than this walks), or :data:`UNDEFINED` anywhere (the walk stops there)."""
    unsafe = False
    stack = [v]
    leaves = _LEAVES
    while stack:
        x = stack.pop()
        if x is UNDEFINED:
            return True, True
        t = type(x)
        if t in leaves:
            if t is int and not -_SAFE_INT <= x <= _SAFE_INT:
                unsafe = True
            continue
        if t is dict or t is UndefinedDict:
            items: Any = x.values()
        elif t is list or t is tuple:
            items = x
        elif isinstance(x, Mapping):
            items = x.values()
        elif isinstance(x, (list, tuple)):
            items = x
        else:
            continue
        for y in items:
            if y is UNDEFINED:
                return True, True
            ty = type(y)
            if ty is int:
                if not -_SAFE_INT <= y <= _SAFE_INT:
                    unsafe = True
            elif ty not in leaves:
                stack.append(y)
    return False, unsafe


def _call_hook(
    fn: Callable[[Any, Any], Any], ctx: Any, event: Mapping[str, Any], where: str
) -> tuple[Any, tuple[Action, ...] | None]:
    """Run an entry/exit callable: ``(context patch | UNDEFINED, actions | None)``; ``None`` actions
    means the result had no ``actions`` key (the callable mirrors XState's one-argument form)."""
    res = fn(ctx, event)
    if res is None:
        return UNDEFINED, None
    if not isinstance(res, Mapping):
        raise EngineError(
            f"{where} must return None or a dict like {{'context': {{...}}, 'actions': [...]}}"
        )
    c = res.get("context", UNDEFINED)
    acts = _actions_of(res, where) if "actions" in res else None
    return (UNDEFINED if c is None else c), acts


def apply_actions(cx: Ctx, s: State, actions: tuple[Action, ...], queue: list[Mapping[str, Any]]) -> State:
    """Resolve action data as XState does: a raise without delay joins the internal queue, a
    delayed raise becomes a ``timers`` entry (auto id from ``_nextTimerId``), a cancel removes one;
    an emit changes nothing. Every action is recorded for :attr:`Snapshot.actions`."""
    timers: dict[str, Any] | None = None
    next_id = s.next_timer_id
    for a in actions:
        if isinstance(a, Raise):
            if a.delay is None:
                queue.append(a.event)
                cx.actions.append(a)
                continue
            tid = a.id
            if tid is None:
                tid = f"xstate.timer.auto.{next_id}"
                next_id += 1
            if timers is None:
                timers = dict(s.timers)
            timers[tid] = {
                "id": tid,
                "delay": a.delay,
                "type": "@xstate.raise",
                "event": strip_undefined(a.event),
                "target": "self",
            }
            cx.actions.append(Raise(a.event, a.delay, tid))
        elif isinstance(a, Cancel):
            cx.actions.append(a)
            if a.id in (timers if timers is not None else s.timers):
                if timers is None:
                    timers = dict(s.timers)
                del timers[a.id]
        elif isinstance(a, Emit):
            cx.actions.append(a)
    if timers is None and next_id == s.next_timer_id:
        return s
    changes: dict[str, Any] = {"next_timer_id": next_id}
    if timers is not None:
        changes["timers"] = timers
    return clone(s, **changes)


def _output(mapper: Any, ctx: Any, event: Mapping[str, Any]) -> Any:
    if callable(mapper):
        return js_values(mapper(ctx, event))
    return mapper


def _done_event(state_id: str, output: Any) -> dict[str, Any]:
    ev: dict[str, Any] = {"type": "xstate.done.state", "stateId": state_id}
    if output is not UNDEFINED:
        ev["output"] = output
    return ev


def _targetless_step(
    cx: Ctx,
    filtered: list[Transition],
    cur: State,
    event: Mapping[str, Any],
    queue: list[Mapping[str, Any]],
    rv: Resolver,
) -> State:
    """:func:`microstep` when no transition has targets or re-enters and the state is not done:
    no state is exited or entered, so only the transitions' context patches and actions apply
    (the same steps, in the same order, as the general path takes for this case)."""
    context = cur.context
    step = cx.steps
    cx.steps += 1
    etype = str(event.get("type", ""))
    transition_actions: list[Action] = []
    for t in filtered:
        r = rv(t)
        cx.taken.append((step, etype, t, r.targets or (), bool(r.reenter)))
        if r.context is not UNDEFINED:
            context = _merge(context, r.context, f"transition of '{t.source.id}'")
        if r.actions:
            transition_actions.extend(r.actions)
    nxt = cur
    if transition_actions:
        nxt = apply_actions(cx, nxt, tuple(transition_actions), queue)
    if context is not None and context is not cur.context:
        nxt = clone(nxt, context=context)
    return nxt


def step_key(m: CompiledMachine, cur: State, filtered: list[Transition], rv: Resolver) -> Any:
    """The key of the exit and entry sets of ``filtered`` taken from ``cur`` in ``m.step_cache``."""
    if len(filtered) == 1:
        return _single_key(m, cur, filtered[0], rv(filtered[0]))
    trans = tuple((t, rv(t).targets, bool(rv(t).reenter)) for t in filtered)
    if not m.has_history:
        return cur.nodes, trans
    hv = cur.history
    return cur.nodes, trans, tuple(hv.items()) if hv else ()


def _single_key(m: CompiledMachine, cur: State, t: Transition, r: Result) -> Any:
    """:func:`step_key` of the one transition ``t`` resolved as ``r``."""
    trans = ((t, r.targets, bool(r.reenter)),)
    if not m.has_history:
        return cur.nodes, trans
    hv = cur.history
    return cur.nodes, trans, tuple(hv.items()) if hv else ()


def microstep(
    cx: Ctx,
    ts: list[Transition],
    cur: State,
    event: Mapping[str, Any],
    is_initial: bool,
    queue: list[Mapping[str, Any]],
    selection: dict[Transition, Any],
    rv: Resolver | None = None,
) -> State:
    if not ts:
        return cur
    m = cx.m
    if rv is None:
        rv = Resolver(m, cur, event, selection)
    if len(ts) == 1:
        filtered = ts
        r0 = rv(ts[0])
        changes_state = bool(r0.targets) or r0.reenter
    else:
        filtered = remove_conflicts(ts, list(cur.nodes), cur, rv)
        changes_state = any(bool(rv(t).targets) or rv(t).reenter for t in filtered)
    if not changes_state and not is_initial and cur.status != "done" and FAST_PATHS:
        return _targetless_step(cx, filtered, cur, event, queue, rv)
    mut: list[Node] = list(cur.nodes)
    history = cur.history
    original_context = cur.context
    nxt = cur

    # The exit and entry sets depend only on the configuration, the transitions as resolved
    # (targets, reenter) and the history value: kept per machine; every effect (exit and entry
    # callables, history recorded on exit, timers, invokes, done events) still runs each time
    plan_key: Any = None
    plan: tuple[tuple[Node, ...], tuple[Node, ...]] | None = None
    if changes_state and not is_initial and FAST_PATHS:
        plan_key = step_key(m, cur, filtered, rv)
        plan = m.step_cache.get(plan_key)
    exited: tuple[Node, ...] = ()
    entered: tuple[Node, ...] = ()

    def exit_states() -> None:
        nonlocal nxt, history, mut, exited
        if plan is not None:
            to_exit = list(plan[0])
        else:
            to_exit = exit_set(filtered, mut, cur, rv)
            to_exit.sort(key=lambda n: -n.order)
        exited = tuple(to_exit)
        changed: dict[str, tuple[Node, ...]] | None = None
        current_nodes = list(mut)
        for ex in to_exit:
            for h in ex.states.values():
                if h.type != "history":
                    continue
                if h.history == "deep":
                    sel = tuple(n for n in current_nodes if _is_atomic(n) and is_descendant(n, ex))
                else:
                    sel = tuple(n for n in current_nodes if n.parent is ex)
                if changed is None:
                    changed = dict(history)
                changed[h.id] = sel
        for ex in to_exit:
            # XState wraps exit so the `after` timers are cancelled before the exit callable runs
            if ex.afters:
                timers = dict(nxt.timers)
                hit = False
                for _raw, _d, tid in reversed(ex.afters):
                    if tid in timers:
                        del timers[tid]
                        hit = True
                if hit:
                    nxt = clone(nxt, timers=timers)
            if ex.exit is not None:
                patch, acts = _call_hook(ex.exit, nxt.context, event, f"exit of '{ex.id}'")
                if patch is not UNDEFINED:
                    nxt = clone(nxt, context=_merge(nxt.context, patch, f"exit of '{ex.id}'"))
                if acts:
                    nxt = apply_actions(cx, nxt, acts, queue)
            stop = [inv.id for inv in ex.invoke if inv.id in nxt.children]
            if stop:
                children = dict(nxt.children)
                for cid in stop:
                    del children[cid]
                    cx.stopped(cid)
                nxt = clone(nxt, children=children)
            mut = [n for n in mut if n is not ex]
        if changed is not None:
            history = changed

    if not is_initial and changes_state:
        exit_states()

    context = nxt.context
    step = cx.steps
    cx.steps += 1
    transition_actions: list[Action] = []
    for t in filtered:
        r = rv(t)
        cx.taken.append((step, str(event.get("type", "")), t, r.targets or (), bool(r.reenter)))
        if r.context is not UNDEFINED:
            context = _merge(context, r.context, f"transition of '{t.source.id}'")
        transition_actions.extend(r.actions)
    if transition_actions:
        nxt = apply_actions(cx, nxt, tuple(transition_actions), queue)

    if context is not None and context is not cur.context:
        nxt = clone(nxt, context=context)

    def entry_set() -> tuple[Node, ...]:
        """The states to enter, in document order (a pure function of the configuration, the
        transitions as resolved and the history)."""
        to_enter: list[Node] = []
        default_entry: list[Node] = []

        def add(lst: list[Node], n: Node) -> None:
            if n not in lst:
                lst.append(n)

        def has_desc(states: list[Node], parent: Node) -> bool:
            return any(is_descendant(x, parent) for x in states)

        def add_ancestors(ancs: list[Node], domain: Node | None) -> None:
            for anc in ancs:
                if domain is None or is_descendant(anc, domain):
                    add(to_enter, anc)
                if anc.type == "parallel":
                    for c in children_of(anc):
                        if not has_desc(to_enter, c):
                            add(to_enter, c)
                            add_descendants(c)

        def add_descendants(n: Node) -> None:
            if n.type == "history":
                hv = history.get(n.id)
                if hv:
                    for x in hv:
                        add(to_enter, x)
                        add_descendants(x)
                    for x in hv:
                        add_ancestors(proper_ancestors(x, n.parent), None)
                else:
                    assert n.parent is not None
                    add(default_entry, n.parent)
                    hd = history_default(n, m)
                    for x in hd.targets or ():
                        add(to_enter, x)
                        add_descendants(x)
                    for x in hd.targets or ():
                        add_ancestors(proper_ancestors(x, n.parent), None)
                return
            if n.type == "compound":
                inits = list(n.initial_targets or ())
                for x in inits:
                    if x.type != "history":
                        add(to_enter, x)
                add(default_entry, n)
                for x in inits:
                    add_descendants(x)
                for x in inits:
                    add_ancestors(proper_ancestors(x, n), None)
                return
            if n.type == "parallel":
                for c in children_of(n):
                    if not has_desc(to_enter, c):
                        add(to_enter, c)
                        add(default_entry, c)
                        add_descendants(c)

        for t in filtered:
            domain = transition_domain(t, cur, rv)
            r = rv(t)
            for tn in r.targets or ():
                if tn.type != "history" and (t.source is not tn or t.source is not domain or r.reenter):
                    add(to_enter, tn)
                    add(default_entry, tn)
                add_descendants(tn)
            for x in effective_targets(t, cur, rv):
                ancs = proper_ancestors(x, domain)
                if domain is not None and domain.type == "parallel":
                    ancs.append(domain)
                add_ancestors(ancs, None if (t.source.parent is None and r.reenter) else domain)
            if r.reenter and domain is t.source:
                add(to_enter, t.source)
        return tuple(sorted(to_enter, key=lambda x: x.order))

    def enter_states() -> None:
        nonlocal nxt, mut, entered
        entered = plan[1] if plan is not None else entry_set()
        completed: set[int] = set()
        children = dict(nxt.children)
        for n in entered:
            if n not in mut:  # Node equality is identity
                mut.append(n)
            if n.invoke:
                seq = nxt.seq
                for inv in n.invoke:
                    inp = inv.input
                    if callable(inp):
                        inp = inp(nxt.context, event)
                    cx.claim(inv.id)
                    seq += 1
                    children[inv.id] = Child(
                        id=inv.id,
                        src=inv.src,
                        address=f"{cx.root_address}/{_encode(inv.id)}",
                        session=f"{cx.machine_id}:{seq}",
                        input=inp,
                    )
                nxt = clone(nxt, children=dict(children), seq=seq)
            if n.afters:
                timers = dict(nxt.timers)
                for raw, delay, tid in reversed(n.afters):
                    timers[tid] = {
                        "id": tid,
                        "delay": delay,
                        "type": "@xstate.raise",
                        "event": {"type": "xstate.after", "delay": raw, "stateId": n.id},
                        "target": "self",
                    }
                    cx.actions.append(Raise(timers[tid]["event"], delay, tid))
                ctx_before = nxt.context
                where = f"entry of '{n.id}'"
                patch, acts = _call_hook(n.entry, ctx_before, event, where) if n.entry else (UNDEFINED, None)
                if patch is not UNDEFINED:
                    nxt = dataclasses.replace(nxt, context=_merge(ctx_before, patch, f"entry of '{n.id}'"))
                nxt = clone(nxt, timers=timers)
                if acts:
                    nxt = apply_actions(cx, nxt, acts, queue)
            elif n.entry is not None:
                patch, acts = _call_hook(n.entry, nxt.context, event, f"entry of '{n.id}'")
                if patch is not UNDEFINED:
                    nxt = clone(nxt, context=_merge(nxt.context, patch, f"entry of '{n.id}'"))
                if acts:
                    nxt = apply_actions(cx, nxt, acts, queue)
            if n.type != "final":
                continue
            parent = n.parent
            marker = (
                parent
                if parent is not None and parent.type == "parallel"
                else (parent.parent if parent else None)
            )
            root_completion = marker or n
            if parent is not None and parent.type == "compound":
                out = _output(n.output, nxt.context, event) if n.output is not UNDEFINED else UNDEFINED
                queue.append(_done_event(parent.id, out))
            mutset = {id(x) for x in mut}
            while (
                marker is not None
                and marker.type == "parallel"
                and id(marker) not in completed
                and in_final_state(mutset, marker)
            ):
                completed.add(id(marker))
                region_out: dict[str, Any] = {}
                for region in children_of(marker):
                    if region.type == "final":
                        region_out[region.key] = (
                            _output(region.output, nxt.context, event)
                            if region.output is not UNDEFINED
                            else UNDEFINED
                        )
                        continue
                    if region.type == "parallel":
                        ev = next(
                            (
                                e
                                for e in queue
                                if e.get("type") == "xstate.done.state" and e.get("stateId") == region.id
                            ),
                            None,
                        )
                        region_out[region.key] = ev.get("output", UNDEFINED) if ev else UNDEFINED
                        continue
                    fc = next((c for c in children_of(region) if c.type == "final" and id(c) in mutset), None)
                    region_out[region.key] = (
                        _output(fc.output, nxt.context, event)
                        if fc is not None and fc.output is not UNDEFINED
                        else UNDEFINED
                    )
                queue.append(
                    _done_event(marker.id, {k: v for k, v in region_out.items() if v is not UNDEFINED})
                )
                root_completion = marker
                marker = marker.parent
            if marker is not None:
                continue
            nxt = clone(nxt, status="done", output=_machine_output(m, root_completion, nxt, event, queue))

    if is_initial or changes_state:
        enter_states()
    if plan_key is not None and plan is None and len(m.step_cache) < _CANDIDATE_CACHE_MAX:
        m.step_cache[plan_key] = (exited, entered)

    if nxt.status == "done":
        # XState sorts its node array in place here, so a done snapshot keeps reverse order.
        mut.sort(key=lambda x: -x.order)
        for n in mut:
            if n.exit is not None:
                patch, acts = _call_hook(n.exit, nxt.context, event, f"exit of '{n.id}'")
                # XState keeps this context only from a one-argument exit (not `(args, enq)`, which
                # a state with `after` timers or an exit returning actions corresponds to)
                if patch is not UNDEFINED and not n.afters and acts is None:
                    nxt = clone(nxt, context=_merge(nxt.context, patch, f"exit of '{n.id}'"))
                if acts:
                    nxt = apply_actions(cx, nxt, acts, queue)
        if nxt.children:
            for cid in nxt.children:
                cx.stopped(cid)
            nxt = clone(nxt, children={})
        if nxt.timers:
            nxt = clone(nxt, timers={})

    # the same nodes (Node hashing and equality are identity; neither tuple holds one twice)
    same_nodes = len(cur.nodes) == len(mut) and set(cur.nodes).issubset(mut)
    if history is cur.history and same_nodes:
        if nxt.context is not original_context:
            return clone(nxt) if nxt is cur else nxt
        return nxt
    return clone(nxt, nodes=tuple(mut), history=history, value=None)


def _machine_output(
    m: CompiledMachine, rcn: Node, s: State, event: Mapping[str, Any], queue: list[Mapping[str, Any]]
) -> Any:
    root = m.root
    completion: Any = UNDEFINED
    if rcn.output is not UNDEFINED and rcn.parent is not None:
        ev = next(
            (e for e in queue if e.get("type") == "xstate.done.state" and e.get("stateId") == root.id), None
        )
        if ev is not None and rcn.parent is root:
            completion = ev.get("output", UNDEFINED)
        else:
            completion = _output(rcn.output, s.context, event)
    elif rcn.type == "parallel":
        ev = next(
            (e for e in queue if e.get("type") == "xstate.done.state" and e.get("stateId") == rcn.id), None
        )
        completion = ev.get("output", UNDEFINED) if ev is not None else UNDEFINED
    if root.output is UNDEFINED:
        return completion if rcn.parent is root else UNDEFINED
    return _output(root.output, s.context, _done_event(rcn.id, completion))


def select_eventless(cx: Ctx, s: State, event: Mapping[str, Any]) -> list[Transition]:
    if FAST_PATHS:
        return _select_eventless_cached(cx, s, event)
    enabled: list[Transition] = []
    for atomic in (n for n in s.nodes if _is_atomic(n)):
        node: Node | None = atomic
        found = False
        while node is not None and not found:
            if node.always:
                for t in node.always:
                    if evaluate_candidate(t, event, s, None):
                        if t not in enabled:
                            enabled.append(t)
                        found = True
                        break
            node = node.parent
    rv = Resolver(cx.m, s, event, {})
    return remove_conflicts(enabled, list(s.nodes), s, rv)


def _select_eventless_cached(cx: Ctx, s: State, event: Mapping[str, Any]) -> list[Transition]:
    """:func:`select_eventless` from the configuration's eventless lists, kept per configuration
    (for each atomic node in order, the ``always`` lists of it and its ancestors that have one,
    nearest first); the same guards evaluated in the same order. One enabled transition or none
    has no conflict to remove."""
    m = cx.m
    chains = m.eventless_cache.get(s.nodes)
    if chains is None:
        found: list[tuple[list[Transition], ...]] = []
        for atomic in s.nodes:
            if not _is_atomic(atomic):
                continue
            lists: list[list[Transition]] = []
            node: Node | None = atomic
            while node is not None:
                if node.always:
                    lists.append(node.always)
                node = node.parent
            if lists:
                found.append(tuple(lists))
        chains = tuple(found)
        if len(m.eventless_cache) < _CANDIDATE_CACHE_MAX:
            m.eventless_cache[s.nodes] = chains
    enabled: list[Transition] = []
    for chain in chains:
        for lst in chain:
            hit = False
            for t in lst:
                if evaluate_candidate(t, event, s, None):
                    if t not in enabled:
                        enabled.append(t)
                    hit = True
                    break
            if hit:
                break
    if len(enabled) < 2:
        return enabled
    rv = Resolver(m, s, event, {})
    return remove_conflicts(enabled, list(s.nodes), s, rv)


_TERMINATING = frozenset({"xstate.done.actor", "xstate.error.actor"})


def _remove_terminated(s: State, ev: Mapping[str, Any]) -> State:
    if ev.get("type") not in ("xstate.done.actor", "xstate.error.actor"):
        return s
    aid = ev.get("actorId")
    if not aid or not isinstance(aid, str):
        return s
    child = s.children.get(aid)
    if child is None:
        return s
    if child.session != ev.get("sessionId"):
        return s
    children = dict(s.children)
    del children[aid]
    return clone(s, children=children)


MAX_MICROSTEPS = 1000


def macrostep(
    cx: Ctx, snapshot: State, event: Mapping[str, Any], queue: list[Mapping[str, Any]], initial: bool = False
) -> State:
    if not initial:
        cx.begin(snapshot)
    nxt = snapshot
    m = cx.m
    if not initial and event.get("type") == "@xstate.stop":
        return clone(nxt, children={}, timers={}, status="stopped")
    etype: str = event["type"]  # a non-empty string (checked by the caller)
    next_event: Mapping[str, Any] = (
        event if initial or not etype.startswith("xstate.") else normalize_event(event, m)
    )
    if event.get("type") == "@xstate.init":
        initial = True
    if not initial and event.get("type") == "xstate.timer":
        timer_id = event.get("id")
        timer = nxt.timers.get(timer_id) if isinstance(timer_id, str) else None
        if timer is None:
            return nxt
        timers = dict(nxt.timers)
        del timers[timer["id"]]
        nxt = clone(nxt, timers=timers)
        if timer.get("type") == "@xstate.raise":
            queue.append(timer["event"])
    elif not initial:
        cur_ev = next_event
        is_err = str(cur_ev["type"]).startswith("xstate.error.")
        selection: dict[Transition, Any] = {}
        ts = select_transitions(m, nxt, cur_ev, selection)
        if is_err and not ts:
            if cur_ev["type"] == "xstate.error.actor" and not session_matches(
                cur_ev, nxt, cur_ev.get("actorId")
            ):
                return nxt
            nxt = clone(snapshot, status="error", error=cur_ev.get("error", UNDEFINED))
            return _remove_terminated(nxt, cur_ev)
        nxt = microstep(cx, ts, snapshot, next_event, False, queue, selection)
        if cur_ev["type"] in _TERMINATING:
            nxt = _remove_terminated(nxt, cur_ev)
    if not queue and not m.has_eventless:
        return nxt
    return settle(cx, nxt, next_event, queue)


def settle(cx: Ctx, nxt: State, next_event: Mapping[str, Any], queue: list[Mapping[str, Any]]) -> State:
    """The rest of a macrostep after its first microstep: eventless transitions and the raised
    events of ``queue`` (and theirs) until the state is stable (XState's loop)."""
    m = cx.m
    should_select = True
    count = 0
    after = cx.after
    while nxt.status == "active":
        count += 1
        if count > MAX_MICROSTEPS:
            raise EngineError("Microstep count exceeded 1000 (an eventless loop?)")
        while len(after) < cx.steps:  # the state after the microstep just taken
            after.append(nxt)
        selection: dict[Transition, Any] = {}
        enabled = select_eventless(cx, nxt, next_event) if should_select else []
        previous = nxt if enabled else None
        if not enabled:
            if not queue:
                break
            next_event = queue.pop(0)
            enabled = select_transitions(m, nxt, next_event, selection)
        step = microstep(cx, enabled, nxt, next_event, False, queue, selection)
        should_select = step is not previous
        nxt = _remove_terminated(step, next_event)
    return nxt


QuickPlan = tuple[SelectionPlan, bool, bool, tuple[bool, ...]]
"""``(selection plan, settled, empty, direct)`` of a configuration for an event type: ``settled``
when nothing eventless can be enabled in it (the machine has no eventless transition, or no
active node has one), ``empty`` when no active node has a candidate for the type, ``direct``
(a chain's candidates) which candidates are function transitions with nothing else to check
(no guard, no event match, no state value argument, not a choice)."""


def quick_plan(m: CompiledMachine, s: State, etype: str) -> QuickPlan | None:
    """The :data:`QuickPlan` of ``s`` for events of type ``etype`` (a type outside ``xstate.*``
    and ``@xstate.*``, which have no legacy form), or ``None`` when ``s`` carries an object
    value. A pure function of the configuration and the type, kept per machine."""
    v = s.value
    if v is None:
        vkey: Any = s.nodes
    elif type(v) is str:
        vkey = v
    else:
        return None
    key = (vkey, etype)
    cache = m.quick_cache
    found = cache.get(key)
    if found is None:
        plan = _selection_plan(m.root, get_value(m, s), {"type": etype})
        direct = tuple(
            c.to is not None
            and not c.to_value
            and c.guard is None
            and not c.matches
            and c.invoke_id is None
            and c.choice_of is None
            for c in (plan[1] if plan[0] is None else ())
        )
        found = (plan, is_settled(m, s.nodes), not _plan_has_candidates(plan), direct)
        if len(cache) < _CANDIDATE_CACHE_MAX:
            cache[key] = found
    return found


def _plan_has_candidates(plan: SelectionPlan) -> bool:
    regions, cands = plan
    return bool(cands) or any(_plan_has_candidates(r) for r in regions or ())


def is_settled(m: CompiledMachine, nodes: tuple[Node, ...]) -> bool:
    """True when no eventless transition can be enabled in the configuration ``nodes`` (then the
    macrostep loop, with no raised event queued, stops at once)."""
    if not m.has_eventless:
        return True
    found = m.settled_cache.get(nodes)
    if found is None:
        found = not any(n.always for n in nodes)
        if len(m.settled_cache) < _CANDIDATE_CACHE_MAX:
            m.settled_cache[nodes] = found
    return found


def quick_macrostep(cx: Ctx, s: State, event: Mapping[str, Any], plan: QuickPlan) -> State:
    """:func:`macrostep` for an event whose type is outside ``xstate.*`` and ``@xstate.*`` (no
    stop, timer, error or legacy form) on a state that is not ``done``, from its
    :func:`quick_plan`: the same candidates evaluated in the same order, then, for one selected
    transition that exits and enters only nodes without effects (:func:`_plain_nodes`) or none,
    its context patch and actions applied directly; anything else takes :func:`microstep`. The
    eventless/raised-event loop runs only when something can follow (a raised event queued, or
    an eventless transition in the configuration)."""
    m = cx.m
    selection: dict[Transition, Any] = {}
    sel_plan, settled, _empty, direct = plan
    regions, cands = sel_plan
    ts: list[Transition] = []
    if regions is None:
        for c, call in zip(cands, direct, strict=True):
            if call:  # what evaluate_candidate does for it
                assert c.to is not None
                res = c.to(s.context, event)
                selection[c] = res
                if res is not None:
                    if settled and type(res) is dict and len(res) == 1 and "context" in res:
                        # resolved (resolve()) as no target, no reenter, no actions: only the
                        # context patch applies (_plain_step), and nothing can follow
                        step = cx.steps
                        cx.steps = step + 1
                        cx.taken.append((step, event["type"], c, (), False))
                        patch = res["context"]
                        if patch is None or patch is UNDEFINED:
                            return s
                        # (the place is named only in the error a non-dict patch raises)
                        where = "" if type(patch) is dict else f"transition of '{c.source.id}'"
                        context = _merge(s.context, patch, where)
                        if context is None or context is s.context:
                            return s
                        out = object.__new__(State)  # clone(s, context=context)
                        d = out.__dict__
                        d.update(s.__dict__)
                        d["context"] = context
                        d["persisted_form"] = None
                        cx.plain = CONTEXT_ONLY
                        return out
                    ts = [c]
                    break
            elif evaluate_candidate(c, event, s, selection):
                ts = [c]
                break
    else:
        ts = run_plan(sel_plan, event, s, selection)
    queue: list[Mapping[str, Any]] = []
    if not ts:
        if settled:
            return s
        cx.begin(s)
        return settle(cx, s, event, queue)
    nodes: tuple[Node, ...] | None = None
    if len(ts) == 1:
        t = ts[0]
        r = resolve(m, t, s, event, selection)
        if not r.targets and not r.reenter:
            nodes = s.nodes
        else:
            found = m.plain_cache.get(_single_key(m, s, t, r))
            if found is not None:
                nodes, settled = found
    if nodes is None:
        rv = Resolver(m, s, event, selection)
        if len(ts) == 1:
            rv.cache[t] = r
        cx.begin(s)
        nxt = microstep(cx, ts, s, event, False, queue, selection, rv)
        if len(ts) == 1:
            _learn_plain(m, s, ts, rv)
        if not queue and is_settled(m, nxt.nodes):
            return nxt
        return settle(cx, nxt, event, queue)
    nxt = _plain_step(cx, t, r, s, event, queue, nodes)
    if not queue and settled:
        if not r.actions and nxt is not s:
            cx.plain = CONTEXT_ONLY if nodes is s.nodes else NODES_AND_CONTEXT
        return nxt
    cx.begin(s)
    return settle(cx, nxt, event, queue)


def _plain_step(
    cx: Ctx,
    t: Transition,
    r: Result,
    cur: State,
    event: Mapping[str, Any],
    queue: list[Mapping[str, Any]],
    nodes: tuple[Node, ...],
) -> State:
    """:func:`microstep` for one transition whose exit and entry sets hold only nodes without
    effects (or are empty: a targetless transition), from ``cur`` (not ``done``) to the
    configuration ``nodes``: the transition's context patch and actions, the new nodes (the same
    steps, in the same order, as the general path takes for this case)."""
    step = cx.steps
    cx.steps += 1
    cx.taken.append((step, event["type"], t, r.targets or (), bool(r.reenter)))
    context = cur.context
    if r.context is not UNDEFINED:
        context = _merge(context, r.context, f"transition of '{t.source.id}'")
    nxt = cur
    if r.actions:
        nxt = apply_actions(cx, nxt, r.actions, queue)
    new_context = context is not None and context is not cur.context
    if nodes is cur.nodes and not new_context:
        return nxt
    out = object.__new__(State)  # what clone() makes, without its checks of the field names
    d = out.__dict__
    d.update(nxt.__dict__)
    if new_context:
        d["context"] = context
    if nodes is not cur.nodes:
        d["nodes"] = nodes
        d["history"] = cur.history
        d["value"] = None
    d["persisted_form"] = None
    return out


def _learn_plain(m: CompiledMachine, s: State, ts: list[Transition], rv: Resolver) -> None:
    """Record in ``m.plain_cache`` the configuration one transition from ``s`` leads to when its
    exit and entry sets (just kept in ``m.step_cache``) are :func:`_plain_nodes`; ``None``
    otherwise."""
    key = step_key(m, s, ts, rv)
    if key in m.plain_cache or len(m.plain_cache) >= _CANDIDATE_CACHE_MAX:
        return
    sets = m.step_cache.get(key)
    if sets is None:
        return
    exited, entered = sets
    if not _plain_nodes(exited, entered):
        m.plain_cache[key] = None
        return
    mut = [n for n in s.nodes if n not in exited]  # Node equality is identity
    for n in entered:
        if n not in mut:
            mut.append(n)
    same = len(s.nodes) == len(mut) and set(s.nodes).issubset(mut)
    nodes = s.nodes if same else tuple(mut)
    m.plain_cache[key] = (nodes, is_settled(m, nodes))


def _plain_nodes(exited: tuple[Node, ...], entered: tuple[Node, ...]) -> bool:
    """True when exiting ``exited`` and entering ``entered`` has no effect beyond the change of
    configuration: no exit or entry callable, ``after`` timer, invoke, history state to record
    or final state to complete."""
    for n in exited:
        if n.exit is not None or n.afters or n.invoke or any(h.type == "history" for h in n.states.values()):
            return False
    return all(
        n.entry is None and not n.afters and not n.invoke and n.type != "final" for n in entered
    )


def initial_state(cx: Ctx, context: Any, input_event: Mapping[str, Any]) -> State:
    m = cx.m
    root = m.root
    pre = State(status="active", nodes=(root,), context=context)
    inits = initial_state_nodes(root)
    leaves = [n for n in inits if not any(o is not n and is_descendant(o, n) for o in inits)]
    t = Transition(source=root, descriptor="", kind="initial", targets=tuple(leaves), reenter=True)
    queue: list[Mapping[str, Any]] = []
    cx.begin(None)
    s = microstep(cx, [t], pre, input_event, True, queue, {})
    return macrostep(cx, s, input_event, queue, initial=True)

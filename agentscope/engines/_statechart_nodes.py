"""Compiling a Python statechart config into state nodes (the static half of the engine).

The config vocabulary mirrors XState 6's (``id``, ``version``, ``initial``, ``context``, ``states``,
``type``, ``on``, ``always``, ``after``, ``entry``, ``exit``, ``invoke``, ``onDone``, ``output``,
``history``/``target``, ``migrate``). Anything outside it raises
:class:`~agentscope.errors.StatechartConfigError` at construction. Keys of ``states``, ``on`` and
``after`` are iterated in JavaScript ``Object.keys`` order (integer-like keys first, ascending),
because XState's document order is that order.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from inspect import CO_VARARGS
from types import FunctionType
from typing import Any

from agentscope.errors import StatechartConfigError

__all__ = [
    "UNDEFINED",
    "Cancel",
    "CompiledMachine",
    "Emit",
    "Invoke",
    "Node",
    "Raise",
    "StateIn",
    "Transition",
    "compile_machine",
    "js_keys",
    "parse_duration",
]


class _Undefined:
    """JS ``undefined``: a key whose value is absent from the persisted JSON."""

    def __repr__(self) -> str:
        return "UNDEFINED"

    def __bool__(self) -> bool:
        return False


UNDEFINED: Any = _Undefined()
"""JS ``undefined``. A callable may put it in a context patch or an ``output`` where the XState
machine it mirrors yields ``undefined`` (``context.missing``): like ``JSON.stringify``, the
persisted snapshot then drops that object key (and writes ``null`` for an array element)."""


@dataclass(frozen=True, slots=True)
class Raise:
    """Action data: raise ``event`` to this machine (XState 6 ``enq.raise(event, {delay, id})``).

    Without ``delay`` the event is processed in the same macrostep, after the events raised
    before it and before the next external event. With ``delay`` (milliseconds, or a string XState
    accepts: a ``delays`` name, ``"PT1S"``, ``"1.5s"``, ``"200ms"``) it becomes a ``timers`` entry
    ``{id, delay, type: "@xstate.raise", event, target: "self"}`` keyed ``id`` (default
    ``xstate.timer.auto.<n>``, numbered by the snapshot's ``_nextTimerId``), and is delivered by the
    event ``{"type": "xstate.timer", "id": id}``. ``delay`` is persisted as given, as XState does.
    """

    event: Mapping[str, Any]
    delay: int | float | str | None = None
    id: str | None = None


@dataclass(frozen=True, slots=True)
class Cancel:
    """Action data: remove the pending timer ``id`` (XState 6 ``enq.cancel(id)``); a no-op if absent."""

    id: str


@dataclass(frozen=True, slots=True)
class Emit:
    """Action data: emit ``event`` to the actor's listeners (XState 6 ``enq.emit``). Effect only:
    it never changes the snapshot; it is reported in :attr:`Snapshot.actions`."""

    event: Mapping[str, Any]


Action = Raise | Cancel | Emit


@dataclass(frozen=True, slots=True)
class StateIn:
    """A guard on the state (XState's ``checkStateIn``): ``"#id"`` is true while that state node is
    active; a state value (``"a"``, ``{"b": "b2"}``) is true while the current value matches it."""

    state: Any


_DURATION = re.compile(
    r"^P(?:(?P<weeks>\d+(?:[.,]\d+)?)W)?(?:(?P<days>\d+(?:[.,]\d+)?)D)?"
    r"(?:T(?:(?P<hours>\d+(?:[.,]\d+)?)H)?(?:(?P<minutes>\d+(?:[.,]\d+)?)M)?"
    r"(?:(?P<seconds>\d+(?:[.,]\d+)?)S)?)?$",
    re.IGNORECASE | re.ASCII,
)
# what String.prototype.trim removes (ECMA-262 WhiteSpace and LineTerminator); str.strip differs
# (it also removes U+001C..U+001F and U+0085, and keeps U+FEFF)
_JS_SPACE = (
    "\t\n\x0b\x0c\r \xa0\u1680"
    + "".join(map(chr, range(0x2000, 0x200B)))
    + "\u2028\u2029\u202f\u205f\u3000\ufeff"
)


def parse_duration(text: str) -> int | float | None:
    """Return the milliseconds of a delay string as XState 6 reads it, or ``None``.

    Accepted (XState 6.0.0-alpha.48 ``parseDurationToMilliseconds``): ``"200ms"``, ``"1.5s"``
    (seconds with up to 3 fraction digits) and ISO-8601 durations of weeks, days, hours, minutes
    and seconds (``"PT1S"``, ``"P1DT2H"``, ``"PT0,5S"``); years and months are not accepted.
    """
    t = text.strip(_JS_SPACE)
    m = re.fullmatch(r"(\d+)ms", t, re.IGNORECASE | re.ASCII)
    if m:
        return int(m.group(1))
    m = re.fullmatch(r"(\d*)(\.?)(\d*)s", t, re.IGNORECASE | re.ASCII)
    if m:
        whole = int(m.group(1)) if m.group(1) else 0
        frac = int(m.group(3).ljust(3, "0")[:3]) if m.group(3) else 0
        return whole * 1000 + (frac if m.group(2) else 0)
    m = _DURATION.match(t)
    if not m or not any(m.groupdict().values()):
        return None

    def num(v: str | None) -> float:
        return float(v.replace(",", ".")) if v else 0.0

    g = m.groupdict()
    ms = (
        num(g["weeks"]) * 7 * 24 * 60 * 60 * 1000
        + num(g["days"]) * 24 * 60 * 60 * 1000
        + num(g["hours"]) * 60 * 60 * 1000
        + num(g["minutes"]) * 60 * 1000
        + num(g["seconds"]) * 1000
    )
    return int(ms) if ms.is_integer() else ms


def takes_value(fn: Any) -> bool:
    """True when ``fn`` accepts a third positional argument (the state value, as XState passes it)."""
    if type(fn) is FunctionType and not hasattr(fn, "__wrapped__") and not hasattr(fn, "__signature__"):
        # what inspect.signature reports for a plain function, read from its code object
        code = fn.__code__
        return code.co_argcount >= 3 or bool(code.co_flags & CO_VARARGS)
    import inspect

    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        return False
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    return len(positional) >= 3 or any(p.kind is p.VAR_POSITIONAL for p in params)

_INDEX_KEY = re.compile(r"^(0|[1-9][0-9]*)$")


def js_keys(obj: Mapping[str, Any]) -> list[str]:
    """Return the keys of ``obj`` in ``Object.keys`` order: array-index keys ascending first."""
    keys = [str(k) for k in obj]
    idx = sorted((k for k in keys if _INDEX_KEY.match(k) and int(k) < 2**32 - 1), key=int)
    rest = [k for k in keys if not (_INDEX_KEY.match(k) and int(k) < 2**32 - 1)]
    return idx + rest


def _get(obj: Mapping[str, Any], key: str) -> Any:
    if key in obj:
        return obj[key]
    for k in obj:
        if str(k) == key:
            return obj[k]
    raise KeyError(key)


_STATE_KEYS = {
    "id",
    "type",
    "initial",
    "states",
    "on",
    "always",
    "after",
    "entry",
    "exit",
    "invoke",
    "onDone",
    "output",
    "history",
    "target",
    "description",
    "tags",
    "meta",
    "choice",
}
_ROOT_KEYS = _STATE_KEYS | {"context", "version", "migrate"}
_TRANSITION_KEYS = {"target", "guard", "actions", "reenter", "context", "description"}
# keys a choice state cannot have (XState 6 CHOICE_CONFIG_KEYS)
_CHOICE_FORBIDDEN = (
    "invoke", "after", "on", "entry", "exit", "always", "states", "initial", "onDone", "history", "target",
    "output",
)
_INVOKE_KEYS = {"id", "src", "input", "onDone", "onError"}


@dataclass(eq=False)
class Transition:
    """One formatted transition (XState's ``formatTransition`` output)."""

    source: Node
    descriptor: str
    kind: str
    target_config: tuple[str, ...] | None = None
    targets: tuple[Node, ...] | None = None
    guard: Callable[..., Any] | StateIn | None = None
    guard_name: str | None = None
    guard_value: bool = False  # the guard takes the state value as a third argument
    context: Any = UNDEFINED
    reenter: bool = False
    to: Callable[..., Any] | None = None
    to_value: bool = False  # the function transition takes the state value as a third argument
    actions: tuple[str, ...] = ()
    action_data: tuple[Action, ...] = ()  # Raise/Cancel/Emit listed in a dict transition's actions
    matches: dict[str, Any] = field(default_factory=dict)
    invoke_id: str | None = None
    choice_of: str | None = None  # the choice state's id when this is its routing transition
    hidden: bool = False  # not drawn (a candidate list's "no target" fallback)


@dataclass(eq=False)
class Invoke:
    """One ``invoke`` definition of a state node."""

    id: str
    src: str
    input: Any = UNDEFINED


@dataclass(eq=False)
class Node:
    """A compiled state node; ``order`` is XState's document (pre-)order."""

    id: str
    key: str
    path: tuple[str, ...]
    parent: Node | None
    type: str
    order: int
    config: Mapping[str, Any]
    states: dict[str, Node] = field(default_factory=dict)
    history: str | None = None
    initial_targets: tuple[Node, ...] | None = None
    entry: Callable[[Any, Any], Any] | None = None
    exit: Callable[[Any, Any], Any] | None = None
    output: Any = UNDEFINED
    invoke: tuple[Invoke, ...] = ()
    transitions: dict[str, list[Transition]] = field(default_factory=dict)
    always: list[Transition] | None = None
    afters: tuple[tuple[Any, Any, str], ...] = ()  # (raw delay key, resolved delay ms, timer id)
    history_target: tuple[str, ...] | None = None
    history_default: Transition | None = None
    children_list: tuple[Node, ...] = ()  # non-history children in order
    # candidates(node, event) by (event type, legacy type): the transitions depend on nothing else
    candidate_cache: dict[tuple[str, str | None], tuple[Transition, ...]] = field(default_factory=dict)

    def __repr__(self) -> str:
        return f"Node({self.id!r})"


@dataclass
class CompiledMachine:
    """All nodes of a machine plus lookups."""

    root: Node
    id_map: dict[str, Node]
    has_eventless: bool
    # the state value of each configuration met so far (a pure function of the node tuple)
    value_cache: dict[tuple[Node, ...], Any] = field(default_factory=dict)
    # does any node of a configuration have a transition for an event type (exact or wildcard)?
    handles_cache: dict[tuple[tuple[Node, ...], str], bool] = field(default_factory=dict)
    # the selection walk (candidates in order, per region) of a configuration, by (nodes or value,
    # type, legacy type): a SelectionPlan of the algorithm module
    plan_cache: dict[tuple[Any, str, str | None], Any] = field(default_factory=dict)
    # resolved targets of function transitions by (source, target strings)
    target_cache: dict[tuple[Node, tuple[str, ...]], tuple[Node, ...]] = field(default_factory=dict)
    has_history: bool = True  # some state is a history state (set by the compiler)
    # exit and entry sets (document order) by (configuration, transitions as resolved, history
    # value when the machine has history states): nothing else decides them
    step_cache: dict[Any, tuple[tuple[Node, ...], tuple[Node, ...]]] = field(default_factory=dict)
    # per (nodes or value, event type): (selection plan, settled, empty), a QuickPlan
    quick_cache: dict[tuple[Any, str], Any] = field(default_factory=dict)
    # per configuration: for each atomic node, the `always` lists of it and its ancestors
    eventless_cache: dict[tuple[Node, ...], tuple[tuple[list[Transition], ...], ...]] = field(
        default_factory=dict
    )
    # whether no node of a configuration has an eventless transition
    settled_cache: dict[tuple[Node, ...], bool] = field(default_factory=dict)
    # the configuration a step_cache key leads to when its exit/entry sets have no effect, and
    # whether it is settled (no eventless transition), else None
    plain_cache: dict[Any, tuple[tuple[Node, ...], bool] | None] = field(default_factory=dict)


def _err(where: str, msg: str) -> StatechartConfigError:
    return StatechartConfigError(f"{where}: {msg}")


def _to_state_path(state_id: str) -> list[str]:
    out: list[str] = []
    seg = ""
    i = 0
    while i < len(state_id):
        ch = state_id[i]
        if ch == "\\":
            seg += state_id[i + 1] if i + 1 < len(state_id) else ""
            i += 2
            continue
        if ch == ".":
            out.append(seg)
            seg = ""
        else:
            seg += ch
        i += 1
    out.append(seg)
    return out


class _Builder:
    def __init__(
        self,
        config: Mapping[str, Any],
        machine_id: str,
        guards: Mapping[str, Any],
        actions: Mapping[str, Any],
        delays: Mapping[str, Any],
    ) -> None:
        self.config = config
        self.machine_id = machine_id
        self.guards = guards
        self.actions = actions
        self.delays = delays
        self.id_map: dict[str, Node] = {}

    # -- construction -------------------------------------------------------------------
    def build(self) -> CompiledMachine:
        root = self._node(self.config, self.machine_id, None)
        self._initialize(root)
        has_eventless = any(n.always for n in self.id_map.values())
        has_history = any(n.type == "history" for n in self.id_map.values())
        return CompiledMachine(root, self.id_map, has_eventless, has_history=has_history)

    def _node(self, cfg: Any, key: str, parent: Node | None) -> Node:
        path = (*parent.path, key) if parent else ()
        where = "state " + (".".join((self.machine_id, *path)))
        if not isinstance(cfg, Mapping):
            raise _err(where, f"a state config must be a dict, got {type(cfg).__name__}")
        allowed = _ROOT_KEYS if parent is None else _STATE_KEYS
        unknown = [k for k in cfg if k not in allowed]
        if unknown:
            raise _err(where, f"unsupported key(s) {unknown!r}")
        node_id = self.machine_id if parent is None else cfg.get("id") or ".".join((self.machine_id, *path))
        states_cfg = cfg.get("states")
        if states_cfg is not None and not isinstance(states_cfg, Mapping):
            raise _err(where, "'states' must be a dict")
        first = js_keys(states_cfg)[0] if states_cfg else None
        typ = cfg.get("type") or (
            "compound" if first is not None else "history" if cfg.get("history") else "atomic"
        )
        if typ not in ("atomic", "compound", "parallel", "final", "history", "choice"):
            raise _err(where, f"unsupported state type {typ!r}")
        if typ == "choice":
            bad_keys = [k for k in _CHOICE_FORBIDDEN if cfg.get(k) is not None]
            if bad_keys:
                raise _err(where, f"a choice state cannot declare {bad_keys!r}")
            ch = cfg.get("choice")
            if not (callable(ch) or (isinstance(ch, (list, tuple)) and ch)):
                raise _err(
                    where,
                    "a choice state needs 'choice': a callable (context, event) -> {'target', 'context'?} "
                    "or a non-empty list of candidate transitions",
                )
        elif cfg.get("choice") is not None:
            raise _err(where, "'choice' can only be used with type 'choice'")
        if node_id in self.id_map:
            raise _err(where, f"duplicate state id {node_id!r}")
        node = Node(
            id=node_id,
            key=key,
            path=path,
            parent=parent,
            type=typ,
            order=len(self.id_map),
            config=cfg,
        )
        self.id_map[node_id] = node
        if states_cfg:
            for k in js_keys(states_cfg):
                node.states[k] = self._node(_get(states_cfg, k), k, node)
        node.children_list = tuple(c for c in node.states.values() if c.type != "history")
        if cfg.get("initial") is not None and typ != "compound" and not (typ == "parallel" and states_cfg):
            # XState: `Initial state not found on "#x"` when `initial` names nothing
            raise _err(where, f"initial state {cfg['initial']!r} not found (the state has no child states)")
        if typ == "compound" and not cfg.get("initial"):
            raise _err(where, "a compound state needs 'initial'")
        if typ == "history":
            h = cfg.get("history", "shallow")
            if h is True:
                h = "shallow"
            if h not in ("shallow", "deep"):
                raise _err(where, f"history must be 'shallow' or 'deep', got {h!r}")
            node.history = h
            t = cfg.get("target")
            if isinstance(t, str) and t.strip():
                node.history_target = (t,)
            elif isinstance(t, (list, tuple)) and t and all(isinstance(x, str) for x in t):
                node.history_target = tuple(t)
            else:
                raise _err(where, "a history state needs a 'target' (XState 6 requires one)")
        for name in ("entry", "exit"):
            fn = cfg.get(name)
            if fn is not None:
                if isinstance(fn, str):
                    fn = self._action(where, fn)
                if not callable(fn):
                    raise _err(where, f"'{name}' must be a callable (context, event) -> dict | None")
                setattr(node, name, fn)
        if typ == "final" or parent is None:
            node.output = cfg.get("output", UNDEFINED)
        elif "output" in cfg:
            raise _err(where, "'output' is only allowed on final states and the root")
        inv = cfg.get("invoke")
        if inv is not None:
            items = inv if isinstance(inv, (list, tuple)) else [inv]
            invokes: list[Invoke] = []
            for i, ic in enumerate(items):
                if not isinstance(ic, Mapping):
                    raise _err(where, "an invoke must be a dict")
                bad = [k for k in ic if k not in _INVOKE_KEYS]
                if bad:
                    raise _err(where, f"unsupported invoke key(s) {bad!r}")
                src = ic.get("src")
                if not isinstance(src, str) or not src:
                    raise _err(where, "invoke 'src' must be a non-empty actor name (string)")
                inv_id = ic.get("id", f"{i}.{node_id}")
                if not isinstance(inv_id, str):
                    raise _err(where, "invoke 'id' must be a string")
                invokes.append(Invoke(id=inv_id, src=src, input=ic.get("input", UNDEFINED)))
            node.invoke = tuple(invokes)
        if "after" in cfg and not isinstance(cfg["after"], Mapping):
            raise _err(where, "'after' must be a dict of delay -> transition(s)")
        return node

    def _action(self, where: str, name: str) -> Any:
        if name not in self.actions:
            raise _err(where, f"unknown action {name!r} (provide it via setup(actions=...))")
        return self.actions[name]

    def _initialize(self, node: Node) -> None:
        cfg = node.config
        where = f"state {node.id}"
        if node.type == "compound":
            init = cfg.get("initial")
            if not isinstance(init, str):
                raise _err(where, "'initial' must be a state key string")
            tgt = self.id_map.get(init[1:]) if init.startswith("#") else node.states.get(init)
            if tgt is None:
                raise _err(where, f"initial state {init!r} not found")
            node.initial_targets = (tgt,)
        # delayed transitions (after)
        after_cfg = cfg.get("after") or {}
        afters: list[tuple[Any, Any, str]] = []
        after_transitions: list[Transition] = []
        for k in js_keys(after_cfg):
            delay_raw: Any = _js_plus(k)
            if isinstance(delay_raw, str):
                if delay_raw in self.delays:
                    resolved = self.delays[delay_raw]
                    if callable(resolved) or not isinstance(resolved, (int, float)):
                        raise _err(where, f"delay {delay_raw!r} must be a number of milliseconds")
                else:
                    resolved = parse_duration(delay_raw)
                    if resolved is None:
                        raise _err(
                            where,
                            f"unknown delay {delay_raw!r}: not among delays=... and not a duration "
                            "('PT1S', '1.5s', '200ms')",
                        )
            else:
                resolved = delay_raw
            timer_id = f"xstate.after.{_js_num(delay_raw)}.{node.id}"
            afters.append((delay_raw, resolved, timer_id))
            for tc in self._configs(where, _get(after_cfg, k)):
                t = self._format(node, "xstate.after", tc, "after")
                t.matches = {"delay": delay_raw, "stateId": node.id}
                after_transitions.append(t)
        node.afters = tuple(afters)
        trans: dict[str, list[Transition]] = {}
        on = cfg.get("on") or {}
        if not isinstance(on, Mapping):
            raise _err(where, "'on' must be a dict")
        for desc in js_keys(on):
            if desc == "":
                raise _err(where, "Null event transition key")
            trans[desc] = [self._format(node, desc, tc, "on") for tc in self._configs(where, _get(on, desc))]
        if cfg.get("onDone") is not None:
            if node.type not in ("compound", "parallel"):
                raise _err(where, "'onDone' is only supported on compound and parallel states")
            lst = trans.setdefault("xstate.done.state", [])
            for tc in self._configs(where, cfg["onDone"]):
                t = self._format(node, "xstate.done.state", tc, "onDone")
                t.matches = {"stateId": node.id}
                lst.append(t)
        inv_items = cfg.get("invoke")
        if inv_items is not None:
            items = inv_items if isinstance(inv_items, (list, tuple)) else [inv_items]
            for inv, ic in zip(node.invoke, items, strict=True):
                for key, desc, kind in (
                    ("onDone", "xstate.done.actor", "invoke.onDone"),
                    ("onError", "xstate.error.actor", "invoke.onError"),
                ):
                    if ic.get(key) is None:
                        continue
                    lst = trans.setdefault(desc, [])
                    for tc in self._configs(where, ic[key]):
                        t = self._format(node, desc, tc, kind)
                        t.matches = {"actorId": inv.id}
                        t.invoke_id = inv.id
                        lst.append(t)
        for t in after_transitions:
            trans.setdefault("xstate.after", []).append(t)
        node.transitions = trans
        if node.type == "choice":
            node.always = self._choice(node, where)
        elif cfg.get("always") is not None:
            node.always = [self._format(node, "", tc, "always") for tc in self._configs(where, cfg["always"])]
        for child in node.states.values():
            self._initialize(child)

    def _choice(self, node: Node, where: str) -> list[Transition]:
        """A choice state's routing: XState 6 turns ``choice`` into one eventless function
        transition that must yield a target (else ``Choice "<id>" has no target``). A list of
        candidates is the same as a function returning the first whose guard passes."""
        ch = node.config["choice"]
        if callable(ch):
            t = self._format(node, "", ch, "choice")
            t.choice_of = node.id
            return [t]
        out = []
        for tc in self._configs(where, ch):
            if callable(tc):
                raise _err(where, "choice candidates must be target strings or dicts")
            if tc.get("target") is None:
                raise _err(where, "every choice candidate needs a 'target'")
            if tc.get("actions") is not None:
                raise _err(where, "a choice cannot declare 'actions'")
            t = self._format(node, "", tc, "choice")
            t.choice_of = node.id
            out.append(t)
        # nothing passed: XState's error, raised when the routing is evaluated
        out.append(
            Transition(
                source=node,
                descriptor="",
                kind="choice",
                to=_no_target(node.id),
                choice_of=node.id,
                hidden=True,
            )
        )
        return out

    def _configs(self, where: str, value: Any) -> list[Any]:
        items = list(value) if isinstance(value, (list, tuple)) else [value]
        out: list[Any] = []
        for it in items:
            if it is None or isinstance(it, str):
                out.append({"target": it})
            elif callable(it):
                out.append(it)
            elif isinstance(it, Mapping):
                bad = [k for k in it if k not in _TRANSITION_KEYS]
                if bad:
                    raise _err(where, f"unsupported transition key(s) {bad!r}")
                out.append(it)
            else:
                raise _err(
                    where, f"a transition must be a target string, dict or callable, got {type(it).__name__}"
                )
        return out

    def _format(self, node: Node, desc: str, tc: Any, kind: str) -> Transition:
        where = f"state {node.id}, transition {desc or '(always)'}"
        if callable(tc) and not isinstance(tc, Mapping):
            return Transition(source=node, descriptor=desc, kind=kind, to=tc, to_value=takes_value(tc))
        target = tc.get("target")
        tcfg: tuple[str, ...] | None
        if target is None:
            tcfg = None
        elif isinstance(target, str):
            tcfg = (target,)
        elif isinstance(target, (list, tuple)) and all(isinstance(x, str) for x in target):
            tcfg = tuple(target)
        else:
            raise _err(where, "'target' must be a string or a list of strings")
        guard = tc.get("guard")
        guard_name: str | None = None
        if isinstance(guard, StateIn):
            guard_name = f"stateIn({json.dumps(guard.state, separators=(',', ':'))})"
        elif isinstance(guard, str):
            guard_name = guard
            if guard not in self.guards:
                raise _err(where, f"unknown guard {guard!r} (provide it via guards=...)")
            guard = self.guards[guard]
        elif guard is not None:
            if not callable(guard):
                raise _err(where, "'guard' must be a callable (context, event) -> bool or a name")
            guard_name = getattr(guard, "__name__", None)
            if guard_name == "<lambda>":
                guard_name = "(inline)"
        acts = tc.get("actions")
        names: list[str] = []
        data: list[Action] = []
        if acts is not None:
            for a in acts if isinstance(acts, (list, tuple)) else [acts]:
                if isinstance(a, (Raise, Cancel, Emit)):
                    check_action(a, where)
                    data.append(a)
                    names.append(action_label(a))
                elif isinstance(a, str):
                    self._action(where, a)
                    names.append(a)
                elif callable(a):
                    names.append(getattr(a, "__name__", "(inline)"))
                else:
                    raise _err(where, "'actions' must be callables, action names or Raise/Cancel/Emit")
        ctx = tc.get("context", UNDEFINED)
        if ctx is not UNDEFINED and not (callable(ctx) or isinstance(ctx, Mapping)):
            raise _err(where, "'context' must be a dict patch or a callable (context, event) -> dict")
        reenter = tc.get("reenter", False)
        if not isinstance(reenter, bool):
            raise _err(where, "'reenter' must be a bool")
        return Transition(
            source=node,
            descriptor=desc,
            kind=kind,
            target_config=tcfg,
            guard=guard,
            guard_name=guard_name,
            guard_value=callable(guard) and takes_value(guard),
            context=ctx,
            reenter=reenter,
            actions=tuple(names),
            action_data=tuple(data),
        )


_JS_NUMBER = re.compile(r"[+-]?(?:(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?|Infinity)")


def _js_plus(key: str) -> Any:
    """JS ``Number.isNaN(+key) ? key : +key`` for an ``after`` key (decimal literals)."""
    t = key.strip()
    if t == "":
        return 0
    if not _JS_NUMBER.fullmatch(t):
        return key
    v = float(t.replace("Infinity", "inf"))
    return int(v) if v.is_integer() else v


def check_action(a: Any, where: str) -> None:
    """Raise :class:`StatechartConfigError` (``where`` names the place) unless ``a`` is valid action data."""
    bad_event = not isinstance(getattr(a, "event", None), Mapping) or not isinstance(a.event.get("type"), str)
    if isinstance(a, (Raise, Emit)) and bad_event:
        raise _err(where, f"{type(a).__name__} needs an event dict with a string 'type', got {a.event!r}")
    if isinstance(a, Raise):
        if a.delay is not None and (isinstance(a.delay, bool) or not isinstance(a.delay, (int, float, str))):
            raise _err(where, "Raise 'delay' must be milliseconds or a delay string")
        if a.id is not None and not isinstance(a.id, str):
            raise _err(where, "Raise 'id' must be a string")
    elif isinstance(a, Cancel):
        if not isinstance(a.id, str):
            raise _err(where, "Cancel needs a timer id string")
    elif not isinstance(a, Emit):
        raise _err(where, f"an action must be Raise, Cancel or Emit, got {type(a).__name__}")


def action_label(a: Action) -> str:
    """A short name for drawing: ``raise(DONE)``, ``cancel(t1)``, ``emit(PING)``."""
    if isinstance(a, Cancel):
        return f"cancel({a.id})"
    return f"{'raise' if isinstance(a, Raise) else 'emit'}({a.event.get('type')})"


def _no_target(state_id: str) -> Callable[[Any, Any], Any]:
    def no_target(context: Any, event: Any) -> Any:
        raise ChoiceError(f'Choice "{state_id}" has no target')

    return no_target


class ChoiceError(Exception):
    """XState's error when a choice state resolves to no target (a user-machine failure)."""


def _js_num(v: Any) -> str:
    if isinstance(v, str):
        return v
    from agentscope.hashing import js_number

    return js_number(v)


def resolve_target(machine: CompiledMachine, source: Node, targets: tuple[str, ...]) -> tuple[Node, ...]:
    """Resolve target strings like XState's ``resolveTarget`` (``#id``, ``.child``, sibling paths)."""
    out: list[Node] = []
    for t in targets:
        if t.startswith("#"):
            out.append(get_by_id(machine, t))
            continue
        internal = t.startswith(".")
        if internal and source.parent is None:
            out.append(get_by_path(machine, source, t[1:]))
            continue
        resolved = source.key + t if internal else t
        if source.parent is None:
            raise StatechartConfigError(f"Invalid target: {t!r} (from the root use '.child' or '#id')")
        out.append(get_by_path(machine, source.parent, resolved))
    return tuple(out)


def get_by_id(machine: CompiledMachine, state_id: str) -> Node:
    full = _to_state_path(state_id)
    head = full[0][1:] if full[0].startswith("#") else full[0]
    node = machine.id_map.get(head)
    if node is None:
        raise StatechartConfigError(
            f"Child state node '#{head}' does not exist on machine '{machine.root.id}'"
        )
    return get_by_path(machine, node, full[1:])


def get_by_path(machine: CompiledMachine, node: Node, path: str | list[str]) -> Node:
    if isinstance(path, str):
        if path.startswith("#"):
            try:
                return get_by_id(machine, path)
            except StatechartConfigError:
                pass
        segs = _to_state_path(path)
    else:
        segs = list(path)
    cur = node
    for seg in segs:
        if not seg:
            break
        if seg.startswith("#"):
            cur = get_by_id(machine, seg)
            continue
        nxt = cur.states.get(seg)
        if nxt is None:
            raise StatechartConfigError(f"Child state '{seg}' does not exist on '{cur.id}'")
        cur = nxt
    return cur


def compile_machine(
    config: Mapping[str, Any],
    *,
    guards: Mapping[str, Any] | None = None,
    actions: Mapping[str, Any] | None = None,
    delays: Mapping[str, Any] | None = None,
) -> CompiledMachine:
    """Compile ``config`` into nodes; raise :class:`StatechartConfigError` on anything unsupported."""
    if not isinstance(config, Mapping):
        raise StatechartConfigError("a machine config must be a dict")
    mid = config.get("id", "(machine)")
    if not isinstance(mid, str) or not mid:
        raise StatechartConfigError("machine 'id' must be a non-empty string")
    b = _Builder(config, mid, guards or {}, actions or {}, delays or {})
    m = b.build()
    for node in m.id_map.values():
        for lst in (*node.transitions.values(), node.always or []):
            for t in lst:
                if t.target_config is not None:
                    try:
                        t.targets = resolve_target(m, node, t.target_config)
                    except StatechartConfigError as e:
                        raise _err(f"state {node.id}", f"invalid transition target: {e}") from None
                    _assert_legal_targets(node, t.targets)
        if node.history_target is not None:
            assert node.parent is not None
            try:
                ht = tuple(get_by_path(m, node.parent, x) for x in node.history_target)
            except StatechartConfigError as e:
                raise _err(f"state {node.id}", f"invalid history target: {e}") from None
            _assert_legal_targets(node, ht)
    return m


def is_descendant(child: Node, parent: Node | None) -> bool:
    marker = child
    while marker.parent is not None and marker.parent is not parent:
        marker = marker.parent
    return marker.parent is parent


def _strict_desc(node: Node, ancestor: Node) -> bool:
    cur = node.parent
    while cur is not None:
        if cur is ancestor:
            return True
        cur = cur.parent
    return False


def _lca(a: Node, b: Node) -> Node | None:
    seen: set[int] = set()
    cur: Node | None = a
    while cur is not None:
        seen.add(id(cur))
        cur = cur.parent
    cur = b
    while cur is not None:
        if id(cur) in seen:
            return cur
        cur = cur.parent
    return None


def _assert_legal_targets(source: Node, targets: tuple[Node, ...]) -> None:
    if len(targets) < 2:
        return
    for i, left in enumerate(targets):
        for right in targets[i + 1 :]:
            common = _lca(left, right)
            if (
                left is right
                or _strict_desc(left, right)
                or _strict_desc(right, left)
                or common is None
                or common.type != "parallel"
            ):
                raise StatechartConfigError(f"Invalid target set for '{source.id}'")

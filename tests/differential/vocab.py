# ruff: noqa: UP031  (percent formatting keeps the braces of the generated JS readable)
"""A small machine vocabulary, rendered both as a Python config and as XState 6 JS source.

A *description* is plain JSON::

    {"id": "m", "context": {"n": 0, "log": [], "flag": false},
     "output": true | false,
     "root": {<state>}}

    state = {"type": "atomic" | "compound" | "parallel" | "final" | "history",
             "initial": key, "states": {key: state},          # compound / parallel
             "history": "shallow" | "deep", "target": key,    # history
             "on": {EVENT: [trans, ...]}, "always": [trans, ...], "after": {"100": [trans, ...]},
             "invoke": {"id": str, "onDone": [trans] | None, "onError": [trans] | None},
             "onDone": [trans], "entry": update, "exit": update, "output": bool}  # output: finals

    trans  = {"form": "obj" | "fn" | "str", "target": "#id" | key | None, "guard": name | None,
              "update": update | None, "reenter": bool, "actions": [action, ...]}

    state also: "entryActions"/"exitActions": [action, ...]; "type": "choice" with
    "choice": [{"target", "guard"}, ...] (first passing guard wins, none -> XState's error)

Guards: ``nPositive`` (context.n > 0), ``nEven`` (context.n % 2 === 0), ``eventFlag``
(event.flag === true), ``flagSet`` (context.flag), and ``"in:<state>"``: XState's ``checkStateIn``
(``"in:#m.s1"`` a node is active, ``"in:s1"``/``"in:s1.s3"`` the value matches; in the ``fn`` form
only the value form, through the ``value`` argument). Updates: ``["add", k]``, ``["appendType"]``,
``["appendX"]`` (event.x ?? null), ``["appendOutput"]`` (event.output?.v ?? null),
``["setFlag", bool]``, ``["setMissing"]`` (u: context.missing, JS ``undefined``) and
``["appendMissing"]`` (log: [...log, context.missing]). Actions: ``["raise", type, x]``,
``["raiseDelayed", type, delay, id | None]``, ``["cancel", id]``, ``["emit", type]``. Both
renderings implement exactly these meanings; a transition with actions is a function transition in
JS (``(args, enq) => ...``) and a dict with ``actions`` (``obj``) or a function returning
``actions`` (``fn``) in Python; an entry/exit with actions is XState's two-argument form.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from agentscope.engines._statechart_algo import matches_state
from agentscope.engines.statechart import UNDEFINED, Cancel, Emit, Raise, StatechartMachine, setup, state_in

GUARDS = ["nPositive", "nEven", "eventFlag", "flagSet"]
DELAYS = {"short": 100}

# ---------------------------------------------------------------------------------------------
# Python


def _in_arg(name: str) -> str:
    return name[len("in:") :]


def _py_guard(name: str) -> Any:
    if name.startswith("in:"):
        return state_in(_in_arg(name))
    if name == "nPositive":
        return lambda c, e: bool(c["n"] > 0)
    if name == "nEven":
        return lambda c, e: bool(c["n"] % 2 == 0)
    if name == "eventFlag":
        return lambda c, e: e.get("flag") is True
    if name == "flagSet":
        return lambda c, e: bool(c["flag"])
    raise ValueError(name)


def _output_v(e: Any) -> Any:
    o = e.get("output")
    if isinstance(o, dict):
        v = o.get("v")
        return v
    return None


def _py_patch(update: list[Any]) -> Callable[[Any, Any], dict[str, Any]]:
    kind = update[0]
    if kind == "add":
        k = update[1]
        return lambda c, e: {"n": c["n"] + k}
    if kind == "appendType":
        return lambda c, e: {"log": [*c["log"], e["type"]]}
    if kind == "appendX":
        return lambda c, e: {"log": [*c["log"], e.get("x")]}
    if kind == "appendOutput":
        return lambda c, e: {"log": [*c["log"], _output_v(e)]}
    if kind == "setFlag":
        b = bool(update[1])
        return lambda c, e: {"flag": b}
    if kind == "setMissing":
        return lambda c, e: {"u": c.get("missing", UNDEFINED)}
    if kind == "appendMissing":
        return lambda c, e: {"log": [*c["log"], c.get("missing", UNDEFINED)]}
    raise ValueError(kind)


def _py_action(a: list[Any]) -> Any:
    kind = a[0]
    if kind == "raise":
        ev: dict[str, Any] = {"type": a[1]}
        if len(a) > 2 and a[2] is not None:
            ev["x"] = a[2]
        return Raise(ev)
    if kind == "raiseDelayed":
        return Raise({"type": a[1]}, delay=a[2], id=a[3])
    if kind == "cancel":
        return Cancel(a[1])
    if kind == "emit":
        return Emit({"type": a[1]})
    raise ValueError(kind)


def _py_transition(t: dict[str, Any]) -> Any:
    if t["form"] == "str":
        return t["target"]
    gname = t.get("guard")
    patch = _py_patch(t["update"]) if t.get("update") else None
    actions = [_py_action(a) for a in t.get("actions") or ()]
    if t["form"] == "fn" or actions:
        target, reenter = t.get("target"), t.get("reenter", False)
        in_value = _in_arg(gname) if gname and gname.startswith("in:") else None
        guard = _py_guard(gname) if gname and in_value is None else None

        def result(c: Any, e: Any) -> Any:
            out: dict[str, Any] = {}
            if target is not None:
                out["target"] = target
            if patch is not None:
                out["context"] = patch(c, e)
            if reenter:
                out["reenter"] = True
            if actions:
                out["actions"] = actions
            return out

        if in_value is not None:

            def fn_v(c: Any, e: Any, value: Any) -> Any:  # takes the state value, as XState passes it
                return result(c, e) if matches_state(in_value, value) else None

            return fn_v

        def fn(c: Any, e: Any) -> Any:
            if guard is not None and not guard(c, e):
                return None
            return result(c, e)

        return fn
    out: dict[str, Any] = {}
    if t.get("target") is not None:
        out["target"] = t["target"]
    if gname:
        out["guard"] = _py_guard(gname)
    if patch is not None:
        out["context"] = patch
    if t.get("reenter"):
        out["reenter"] = True
    if actions:
        out["actions"] = actions
    return out


def _py_hook(update: list[Any] | None, actions: list[list[Any]] | None = None) -> Callable[[Any, Any], Any]:
    patch = _py_patch(update) if update else None
    acts = [_py_action(a) for a in actions or ()]

    def hook(c: Any, e: Any) -> Any:
        out: dict[str, Any] = {}
        if patch is not None:
            out["context"] = patch(c, e)
        if acts:
            out["actions"] = acts
        return out

    return hook


def _py_state(s: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    typ = s["type"]
    if typ in ("parallel", "final", "history", "choice"):
        out["type"] = typ
    if typ == "history":
        out["history"] = s["history"]
        out["target"] = s["target"]
        return out
    if typ == "choice":
        out["choice"] = [
            {"target": c["target"], **({"guard": _py_guard(c["guard"])} if c.get("guard") else {})}
            for c in s["choice"]
        ]
        return out
    if typ == "compound":
        out["initial"] = s["initial"]
    if s.get("states"):
        out["states"] = {k: _py_state(v) for k, v in s["states"].items()}
    if s.get("on"):
        out["on"] = {ev: [_py_transition(t) for t in ts] for ev, ts in s["on"].items()}
    if s.get("always"):
        out["always"] = [_py_transition(t) for t in s["always"]]
    if s.get("after"):
        out["after"] = {
            (int(k) if k.isdigit() else k): [_py_transition(t) for t in ts] for k, ts in s["after"].items()
        }
    if s.get("invoke"):
        inv = s["invoke"]
        iv: dict[str, Any] = {"id": inv["id"], "src": "svc", "input": lambda c, e: {"n": c["n"]}}
        if inv.get("onDone"):
            iv["onDone"] = [_py_transition(t) for t in inv["onDone"]]
        if inv.get("onError"):
            iv["onError"] = [_py_transition(t) for t in inv["onError"]]
        out["invoke"] = iv
    if s.get("onDone"):
        out["onDone"] = [_py_transition(t) for t in s["onDone"]]
    if s.get("entry") or s.get("entryActions"):
        out["entry"] = _py_hook(s.get("entry"), s.get("entryActions"))
    if s.get("exit") or s.get("exitActions"):
        out["exit"] = _py_hook(s.get("exit"), s.get("exitActions"))
    if typ == "final" and s.get("output"):
        out["output"] = lambda c, e: {"n": c["n"], "u": c.get("missing", UNDEFINED)}
    return out


def python_machine(desc: dict[str, Any]) -> StatechartMachine:
    """Build the :class:`StatechartMachine` of a description."""
    cfg: dict[str, Any] = {"id": desc["id"]}
    root = _py_state(desc["root"])
    cfg.update(root)
    cfg["context"] = json.loads(json.dumps(desc["context"]))
    if desc.get("output"):
        cfg["output"] = lambda c, e: {"n": c["n"], "sub": e.get("output")}
    return setup(actors={"svc": lambda i: i}, delays=DELAYS).create_machine(cfg)


# ---------------------------------------------------------------------------------------------
# JavaScript (the body of `(createMachine, createAsyncLogic) => machine`)

_JS_GUARD = {
    "nPositive": "context.n > 0",
    "nEven": "context.n % 2 === 0",
    "eventFlag": "event.flag === true",
    "flagSet": "!!context.flag",
}


def _js_guard_fn(name: str) -> str:
    """A guard function (object transitions, choice candidates)."""
    if name.startswith("in:"):
        return "(args) => checkStateIn(args._snapshot, %s)" % json.dumps(_in_arg(name))
    return "({ context, event }) => %s" % _JS_GUARD[name]


def _js_guard_expr(name: str) -> str:
    """A guard expression inside a function transition ``({ context, event, value }) => ...``."""
    if name.startswith("in:"):
        return "matchesState(%s, value)" % json.dumps(_in_arg(name))
    return _JS_GUARD[name]


def _js_action(a: list[Any]) -> str:
    kind = a[0]
    if kind == "raise":
        ev = {"type": a[1]}
        if len(a) > 2 and a[2] is not None:
            ev["x"] = a[2]
        return "enq.raise(%s);" % json.dumps(ev)
    if kind == "raiseDelayed":
        opts: dict[str, Any] = {"delay": a[2]}
        if a[3] is not None:
            opts["id"] = a[3]
        return "enq.raise(%s, %s);" % (json.dumps({"type": a[1]}), json.dumps(opts))
    if kind == "cancel":
        return "enq.cancel(%s);" % json.dumps(a[1])
    if kind == "emit":
        return "enq.emit(%s);" % json.dumps({"type": a[1]})
    raise ValueError(kind)


def _js_patch(update: list[Any]) -> str:
    kind = update[0]
    if kind == "add":
        return "{ n: context.n + (%d) }" % int(update[1])
    if kind == "appendType":
        return "{ log: [...context.log, event.type] }"
    if kind == "appendX":
        return "{ log: [...context.log, event.x ?? null] }"
    if kind == "appendOutput":
        return "{ log: [...context.log, (event.output && typeof event.output === 'object' ? event.output.v : undefined) ?? null] }"
    if kind == "setFlag":
        return "{ flag: %s }" % ("true" if update[1] else "false")
    if kind == "setMissing":
        return "{ u: context.missing }"
    if kind == "appendMissing":
        return "{ log: [...context.log, context.missing] }"
    raise ValueError(kind)


def _js_transition(t: dict[str, Any]) -> str:
    if t["form"] == "str":
        return json.dumps(t["target"])
    if t["form"] == "fn" or t.get("actions"):
        parts = []
        if t.get("target") is not None:
            parts.append("target: %s" % json.dumps(t["target"]))
        if t.get("update"):
            parts.append("context: %s" % _js_patch(t["update"]))
        if t.get("reenter"):
            parts.append("reenter: true")
        body = "({ %s })" % ", ".join(parts)
        acts = " ".join(_js_action(a) for a in t.get("actions") or ())
        cond = "!(%s)" % _js_guard_expr(t["guard"]) if t.get("guard") else "false"
        return "({ context, event, value }, enq) => { if (%s) return undefined; %s return %s; }" % (
            cond,
            acts,
            body,
        )
    parts = []
    if t.get("target") is not None:
        parts.append("target: %s" % json.dumps(t["target"]))
    if t.get("guard"):
        parts.append("guard: %s" % _js_guard_fn(t["guard"]))
    if t.get("update"):
        parts.append("context: ({ context, event }) => (%s)" % _js_patch(t["update"]))
    if t.get("reenter"):
        parts.append("reenter: true")
    return "{ %s }" % ", ".join(parts)


def _js_list(ts: list[dict[str, Any]]) -> str:
    return "[%s]" % ", ".join(_js_transition(t) for t in ts)


def _js_state(s: dict[str, Any]) -> str:
    parts: list[str] = []
    typ = s["type"]
    if typ in ("parallel", "final", "history", "choice"):
        parts.append("type: %s" % json.dumps(typ))
    if typ == "history":
        parts.append("history: %s" % json.dumps(s["history"]))
        parts.append("target: %s" % json.dumps(s["target"]))
        return "{ %s }" % ", ".join(parts)
    if typ == "choice":
        expr = "undefined"
        for c in reversed(s["choice"]):
            pick = "{ target: %s }" % json.dumps(c["target"])
            if c.get("guard"):
                expr = "((%s)(args) ? %s : %s)" % (_js_guard_fn(c["guard"]), pick, expr)
            else:
                expr = pick
        parts.append("choice: (args) => (%s)" % expr)
        return "{ %s }" % ", ".join(parts)
    if typ == "compound":
        parts.append("initial: %s" % json.dumps(s["initial"]))
    if s.get("states"):
        parts.append(
            "states: { %s }"
            % ", ".join("%s: %s" % (json.dumps(k), _js_state(v)) for k, v in s["states"].items())
        )
    if s.get("on"):
        parts.append(
            "on: { %s }" % ", ".join("%s: %s" % (json.dumps(ev), _js_list(ts)) for ev, ts in s["on"].items())
        )
    if s.get("always"):
        parts.append("always: %s" % _js_list(s["always"]))
    if s.get("after"):
        parts.append(
            "after: { %s }"
            % ", ".join("%s: %s" % (json.dumps(str(k)), _js_list(ts)) for k, ts in s["after"].items())
        )
    if s.get("invoke"):
        inv = s["invoke"]
        ip = ["id: %s" % json.dumps(inv["id"]), "src: 'svc'", "input: ({ context }) => ({ n: context.n })"]
        if inv.get("onDone"):
            ip.append("onDone: %s" % _js_list(inv["onDone"]))
        if inv.get("onError"):
            ip.append("onError: %s" % _js_list(inv["onError"]))
        parts.append("invoke: { %s }" % ", ".join(ip))
    if s.get("onDone"):
        parts.append("onDone: %s" % _js_list(s["onDone"]))
    for key in ("entry", "exit"):
        upd, acts = s.get(key), s.get(key + "Actions")
        if acts:
            ret = "return { context: %s };" % _js_patch(upd) if upd else "return undefined;"
            parts.append(
                "%s: ({ context, event }, enq) => { %s %s }" % (key, " ".join(_js_action(a) for a in acts), ret)
            )
        elif upd:
            parts.append("%s: ({ context, event }) => ({ context: %s })" % (key, _js_patch(upd)))
    if typ == "final" and s.get("output"):
        parts.append("output: ({ context }) => ({ n: context.n, u: context.missing })")
    return "{ %s }" % ", ".join(parts)


def js_source(desc: dict[str, Any]) -> str:
    """Return a JS function body building the XState machine of a description.

    The body is evaluated as ``new Function("setup", "createAsyncLogic", "checkStateIn",
    "matchesState", body)`` by the driver.
    """
    root = _js_state(desc["root"])
    extra = ["id: %s" % json.dumps(desc["id"]), "context: %s" % json.dumps(desc["context"])]
    if desc.get("output"):
        extra.append("output: ({ context, event }) => ({ n: context.n, sub: event.output ?? null })")
    return (
        "const svc = createAsyncLogic({ run: async ({ input }) => input });\n"
        "return setup({ actors: { svc }, delays: %s }).createMachine({ %s, ...%s });"
        % (json.dumps(DELAYS), ", ".join(extra), root)
    )


def mjs_module(desc: dict[str, Any]) -> str:
    """Return a standalone ES module (importing only ``xstate``) exporting the machine as default."""
    return (
        'import { setup, createAsyncLogic, checkStateIn, matchesState } from "xstate";\n'
        "const machine = (() => {\n%s\n})();\n"
        "export default machine;\n" % js_source(desc)
    )

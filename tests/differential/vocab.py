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
              "update": update | None, "reenter": bool}

Guards: ``nPositive`` (context.n > 0), ``nEven`` (context.n % 2 === 0), ``eventFlag``
(event.flag === true), ``flagSet`` (context.flag). Updates: ``["add", k]``, ``["appendType"]``,
``["appendX"]`` (event.x ?? null), ``["appendOutput"]`` (event.output?.v ?? null),
``["setFlag", bool]``. Both renderings implement exactly these meanings.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from agentscope.engines.statechart import StatechartMachine, setup

GUARDS = ["nPositive", "nEven", "eventFlag", "flagSet"]

# ---------------------------------------------------------------------------------------------
# Python


def _py_guard(name: str) -> Callable[[Any, Any], bool]:
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
    raise ValueError(kind)


def _py_transition(t: dict[str, Any]) -> Any:
    if t["form"] == "str":
        return t["target"]
    guard = _py_guard(t["guard"]) if t.get("guard") else None
    patch = _py_patch(t["update"]) if t.get("update") else None
    if t["form"] == "fn":
        target, reenter = t.get("target"), t.get("reenter", False)

        def fn(c: Any, e: Any) -> Any:
            if guard is not None and not guard(c, e):
                return None
            out: dict[str, Any] = {}
            if target is not None:
                out["target"] = target
            if patch is not None:
                out["context"] = patch(c, e)
            if reenter:
                out["reenter"] = True
            return out

        return fn
    out: dict[str, Any] = {}
    if t.get("target") is not None:
        out["target"] = t["target"]
    if guard is not None:
        out["guard"] = guard
    if patch is not None:
        out["context"] = patch
    if t.get("reenter"):
        out["reenter"] = True
    return out


def _py_hook(update: list[Any]) -> Callable[[Any, Any], Any]:
    patch = _py_patch(update)
    return lambda c, e: {"context": patch(c, e)}


def _py_state(s: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    typ = s["type"]
    if typ in ("parallel", "final", "history"):
        out["type"] = typ
    if typ == "history":
        out["history"] = s["history"]
        out["target"] = s["target"]
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
        out["after"] = {int(k): [_py_transition(t) for t in ts] for k, ts in s["after"].items()}
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
    if s.get("entry"):
        out["entry"] = _py_hook(s["entry"])
    if s.get("exit"):
        out["exit"] = _py_hook(s["exit"])
    if typ == "final" and s.get("output"):
        out["output"] = lambda c, e: {"n": c["n"]}
    return out


def python_machine(desc: dict[str, Any]) -> StatechartMachine:
    """Build the :class:`StatechartMachine` of a description."""
    cfg: dict[str, Any] = {"id": desc["id"]}
    root = _py_state(desc["root"])
    cfg.update(root)
    cfg["context"] = json.loads(json.dumps(desc["context"]))
    if desc.get("output"):
        cfg["output"] = lambda c, e: {"n": c["n"], "sub": e.get("output")}
    return setup(actors={"svc": lambda i: i}).create_machine(cfg)


# ---------------------------------------------------------------------------------------------
# JavaScript (the body of `(createMachine, createAsyncLogic) => machine`)

_JS_GUARD = {
    "nPositive": "context.n > 0",
    "nEven": "context.n % 2 === 0",
    "eventFlag": "event.flag === true",
    "flagSet": "!!context.flag",
}


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
    raise ValueError(kind)


def _js_transition(t: dict[str, Any]) -> str:
    if t["form"] == "str":
        return json.dumps(t["target"])
    if t["form"] == "fn":
        parts = []
        if t.get("target") is not None:
            parts.append("target: %s" % json.dumps(t["target"]))
        if t.get("update"):
            parts.append("context: %s" % _js_patch(t["update"]))
        if t.get("reenter"):
            parts.append("reenter: true")
        body = "({ %s })" % ", ".join(parts)
        if t.get("guard"):
            return "({ context, event }) => ((%s) ? %s : undefined)" % (_JS_GUARD[t["guard"]], body)
        return "({ context, event }) => %s" % body
    parts = []
    if t.get("target") is not None:
        parts.append("target: %s" % json.dumps(t["target"]))
    if t.get("guard"):
        parts.append("guard: ({ context, event }) => %s" % _JS_GUARD[t["guard"]])
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
    if typ in ("parallel", "final", "history"):
        parts.append("type: %s" % json.dumps(typ))
    if typ == "history":
        parts.append("history: %s" % json.dumps(s["history"]))
        parts.append("target: %s" % json.dumps(s["target"]))
        return "{ %s }" % ", ".join(parts)
    if typ == "compound":
        parts.append("initial: %s" % json.dumps(s["initial"]))
    if s.get("states"):
        parts.append("states: { %s }" % ", ".join("%s: %s" % (json.dumps(k), _js_state(v)) for k, v in s["states"].items()))
    if s.get("on"):
        parts.append("on: { %s }" % ", ".join("%s: %s" % (json.dumps(ev), _js_list(ts)) for ev, ts in s["on"].items()))
    if s.get("always"):
        parts.append("always: %s" % _js_list(s["always"]))
    if s.get("after"):
        parts.append("after: { %s }" % ", ".join("%s: %s" % (json.dumps(str(k)), _js_list(ts)) for k, ts in s["after"].items()))
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
    if s.get("entry"):
        parts.append("entry: ({ context, event }) => ({ context: %s })" % _js_patch(s["entry"]))
    if s.get("exit"):
        parts.append("exit: ({ context, event }) => ({ context: %s })" % _js_patch(s["exit"]))
    if typ == "final" and s.get("output"):
        parts.append("output: ({ context }) => ({ n: context.n })")
    return "{ %s }" % ", ".join(parts)


def js_source(desc: dict[str, Any]) -> str:
    """Return a JS function body building the XState machine of a description.

    The body is evaluated as ``new Function("setup", "createAsyncLogic", body)`` by the driver.
    """
    root = _js_state(desc["root"])
    extra = ["id: %s" % json.dumps(desc["id"]), "context: %s" % json.dumps(desc["context"])]
    if desc.get("output"):
        extra.append("output: ({ context, event }) => ({ n: context.n, sub: event.output ?? null })")
    return (
        "const svc = createAsyncLogic({ run: async ({ input }) => input });\n"
        "return setup({ actors: { svc } }).createMachine({ %s, ...%s });" % (", ".join(extra), root)
    )

"""Hypothesis strategies: machine descriptions (see ``vocab.py``) and event sequences for them."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from tests.differential.vocab import GUARDS

EVENTS = ["A", "B", "C"]
ON_KEYS = [*EVENTS, "*", "R"]
UPDATES: list[list[Any]] = [
    ["add", 1],
    ["add", -2],
    ["add", 3],
    ["appendType"],
    ["appendX"],
    ["appendOutput"],
    ["setFlag", True],
    ["setFlag", False],
    ["setMissing"],
    ["appendMissing"],
]
ACTIONS: list[list[Any]] = [
    ["raise", "R", None],
    ["raise", "R", 1],
    ["raise", "R", 2],
    ["raise", "A", None],
    ["raise", "B", 1],
    ["raiseDelayed", "R", 100, "t1"],
    ["raiseDelayed", "A", "PT2S", None],
    ["raiseDelayed", "R", "short", None],
    ["cancel", "t1"],
    ["cancel", "xstate.timer.auto.0"],
    ["emit", "PING"],
]
AFTER_DELAYS: list[Any] = [100, 1000, "short", "PT1S", "1.5s", "200ms"]
RAISED_TIMERS = ["t1", "xstate.timer.auto.0", "xstate.timer.auto.1"]


def _walk(
    state: dict[str, Any], sid: str, out: list[tuple[str, dict[str, Any], str | None]], parent: str | None
) -> None:
    out.append((sid, state, parent))
    for k, child in (state.get("states") or {}).items():
        _walk(child, f"{sid}.{k}", out, sid)


@st.composite
def machines(draw: st.DrawFn, max_depth: int = 3) -> dict[str, Any]:
    counter = [0]

    def key() -> str:
        counter[0] += 1
        return f"s{counter[0]}"

    def state(depth: int, in_parallel: bool) -> dict[str, Any]:
        kinds = ["atomic", "final", "atomic", "choice"]
        if depth < max_depth and counter[0] < 12:
            kinds += ["compound", "compound", "parallel"]
        if in_parallel:
            kinds = [k for k in kinds if k not in ("final", "choice")] or ["atomic"]
        kind = draw(st.sampled_from(kinds))
        s: dict[str, Any] = {"type": kind}
        if kind in ("compound", "parallel"):
            n = draw(st.integers(min_value=1 if kind == "compound" else 2, max_value=3))
            children: dict[str, Any] = {}
            for _ in range(n):
                children[key()] = state(depth + 1, kind == "parallel")
            real = [k for k, c in children.items() if c["type"] != "choice"] or list(children)
            if draw(st.integers(0, 4)) == 4:
                children[key()] = {
                    "type": "history",
                    "history": draw(st.sampled_from(["shallow", "deep"])),
                    "target": draw(st.sampled_from(real)),
                }
            s["states"] = children
            if kind == "compound":
                s["initial"] = draw(st.sampled_from(real))
        return s

    root: dict[str, Any] = {"type": "compound"}
    n = draw(st.integers(1, 4))
    root["states"] = {key(): state(1, False) for _ in range(n)}
    if draw(st.integers(0, 6)) == 6:
        root = {"type": "parallel", "states": {key(): {**state(1, True)} for _ in range(2)}}
        for v in root["states"].values():
            if v["type"] == "final":
                v["type"] = "atomic"
    if root["type"] == "compound":
        root["initial"] = draw(st.sampled_from(list(root["states"])))

    nodes: list[tuple[str, dict[str, Any], str | None]] = []
    _walk(root, "m", nodes, None)
    targetable = [sid for sid, s, _ in nodes if sid != "m"]
    nodes_by_id = {sid: s for sid, s, _ in nodes}
    invoke_ids: list[str] = []

    regions = {
        sid: [r for r, _, p in nodes if p == sid and nodes_by_id[r]["type"] != "history"]
        for sid, s, _ in nodes
        if s["type"] == "parallel"
    }
    multi = [rs for rs in regions.values() if len(rs) >= 2]

    def leaves_under(rid: str) -> list[str]:
        return [
            t
            for t, _, _ in nodes
            if (t == rid or t.startswith(rid + ".")) and nodes_by_id[t]["type"] != "history"
        ]

    def target(sid: str, parent: str | None) -> Any:
        choice = draw(st.integers(0, 9))
        if choice < 2:
            return None
        if multi and draw(st.integers(0, 7)) == 7:
            rs = draw(st.sampled_from(multi))
            return ["#" + draw(st.sampled_from(leaves_under(r))) for r in rs[:2]]
        if choice < 5 and parent is not None:
            siblings = [t for t, _, p in nodes if p == parent]
            return draw(st.sampled_from(siblings)).rsplit(".", 1)[1]
        return "#" + draw(st.sampled_from(targetable))

    top_keys = list(root["states"])
    value_forms = [f"in:{k}" for k in top_keys] + [
        f"in:{k}.{c}" for k in top_keys for c in (root["states"][k].get("states") or {})
    ]
    id_forms = [f"in:#{t}" for t in targetable if nodes_by_id[t]["type"] != "history"]

    def actions(odds: int = 3, *, immediate: bool = True, hook: bool = False) -> list[list[Any]]:
        if draw(st.integers(0, odds)) != odds:
            return []
        pool = ACTIONS if immediate else [a for a in ACTIONS if a[0] != "raise"]
        if hook:
            pool = [*pool, ["raise", "C", None], ["raise", "R", 3]]
        return draw(st.lists(st.sampled_from(pool), min_size=1, max_size=2))

    def trans(sid: str, parent: str | None, *, eventless: bool = False, key: str = "") -> dict[str, Any]:
        tgt = target(sid, parent)
        guard = (
            draw(st.sampled_from([None, None, *GUARDS])) if not eventless else draw(st.sampled_from(GUARDS))
        )
        update = draw(st.sampled_from([None, *UPDATES]))
        form = draw(st.sampled_from(["obj", "obj", "fn", "str"]))
        # no immediate raise where it would feed itself (a handler of R or *, an eventless one)
        acts = actions(immediate=not eventless and key not in ("R", "*"))
        if draw(st.integers(0, 5)) == 5:
            # stateIn: the id form only in an object transition without actions (JS checkStateIn
            # needs the snapshot), the value form anywhere (a function transition gets `value`)
            pool = value_forms + (id_forms if form == "obj" and not acts else [])
            guard = draw(st.sampled_from(pool))
        if form == "str" and (tgt is None or guard or update or isinstance(tgt, list) or acts):
            form = "obj"
        reenter = bool(tgt) and draw(st.integers(0, 5)) == 5
        if form == "str":
            reenter = False
        out = {"form": form, "target": tgt, "guard": guard, "update": update, "reenter": reenter}
        if acts:
            out["actions"] = acts
        return out

    def tlist(sid: str, parent: str | None, *, eventless: bool = False, key: str = "") -> list[dict[str, Any]]:
        return [trans(sid, parent, eventless=eventless, key=key) for _ in range(draw(st.integers(1, 2)))]

    for sid, s, parent in nodes:
        if s["type"] == "history":
            continue
        options = [
            t
            for t in targetable
            if t != sid and not t.startswith(sid + ".") and nodes_by_id[t]["type"] != "choice"
        ]
        if s["type"] == "choice" and not options:
            s["type"] = "atomic"
        if s["type"] == "choice":
            siblings = [t for t, _, p in nodes if p == parent and t != sid and nodes_by_id[t]["type"] != "choice"]
            cands = []
            for _ in range(draw(st.integers(1, 3))):
                if siblings and draw(st.booleans()):
                    tgt = draw(st.sampled_from(siblings)).rsplit(".", 1)[1]
                else:
                    tgt = "#" + draw(st.sampled_from(options))
                cands.append({"target": tgt, "guard": draw(st.sampled_from([None, *GUARDS]))})
            s["choice"] = cands
            continue
        if s["type"] == "final" and draw(st.integers(0, 5)) == 5:
            # transitions declared on a final state (XState lets a live state's conflicting
            # transition win over them)
            fk = draw(st.sampled_from(ON_KEYS))
            s["on"] = {fk: tlist(sid, parent, key=fk)}
        if s["type"] != "final":
            on: dict[str, Any] = {}
            for ev in draw(st.lists(st.sampled_from(ON_KEYS), max_size=3, unique=True)):
                on[ev] = tlist(sid, parent, key=ev)
            if on:
                s["on"] = on
            if draw(st.integers(0, 7)) == 7:
                s["always"] = tlist(sid, parent, eventless=True)
            if draw(st.integers(0, 6)) == 6:
                s["after"] = {
                    str(d): tlist(sid, parent)
                    for d in draw(
                        st.lists(st.sampled_from(AFTER_DELAYS), min_size=1, max_size=2, unique=True)
                    )
                }
            if draw(st.integers(0, 4)) == 4:
                iid = f"inv{len(invoke_ids)}"
                invoke_ids.append(iid)
                s["invoke"] = {
                    "id": iid,
                    "onDone": tlist(sid, parent) if draw(st.booleans()) else None,
                    "onError": tlist(sid, parent) if draw(st.booleans()) else None,
                }
            if s["type"] in ("compound", "parallel") and draw(st.integers(0, 2)) == 2:
                s["onDone"] = tlist(sid, parent)
        if draw(st.integers(0, 4)) == 4:
            s["entry"] = draw(st.sampled_from(UPDATES))
        if draw(st.integers(0, 5)) == 5:
            s["exit"] = draw(st.sampled_from(UPDATES))
        for key in ("entryActions", "exitActions"):
            acts = actions(7, immediate=False, hook=True)
            if acts:
                s[key] = acts
        if s["type"] == "final" and draw(st.booleans()):
            s["output"] = True
    if draw(st.booleans()):
        # a root handler logging raised R events (their `x`), so the order of raised events shows
        root.setdefault("on", {}).setdefault(
            "R", [{"form": "obj", "target": None, "guard": None, "update": ["appendX"], "reenter": False}]
        )
    return {
        "id": "m",
        "context": {"n": draw(st.integers(-1, 2)), "log": [], "flag": draw(st.booleans())},
        "output": draw(st.booleans()),
        "root": root,
    }


def timer_ids(desc: dict[str, Any]) -> list[str]:
    out: list[str] = []
    nodes: list[tuple[str, dict[str, Any], str | None]] = []
    _walk(desc["root"], "m", nodes, None)
    for sid, s, _ in nodes:
        for d in s.get("after") or {}:
            out.append(f"xstate.after.{d}.{sid}")
    return out


def invoke_ids(desc: dict[str, Any]) -> list[str]:
    nodes: list[tuple[str, dict[str, Any], str | None]] = []
    _walk(desc["root"], "m", nodes, None)
    return [s["invoke"]["id"] for _, s, _ in nodes if s.get("invoke")]


@st.composite
def cases(draw: st.DrawFn) -> dict[str, Any]:
    """A machine description plus an event sequence that exercises it."""
    desc = draw(machines())
    timers = [*timer_ids(desc), *RAISED_TIMERS]
    invokes = invoke_ids(desc)
    n = draw(st.integers(0, 12))
    events: list[dict[str, Any]] = []
    for i in range(n):
        kind = draw(st.sampled_from(["plain", "plain", "plain", "timer", "done", "error", "unknown"]))
        if kind == "timer" and timers:
            events.append(
                {"type": "xstate.timer", "id": draw(st.sampled_from([*timers, "xstate.after.5.m"]))}
            )
        elif kind in ("done", "error") and invokes:
            ev: dict[str, Any] = {
                "type": f"xstate.{kind}.actor",
                "actorId": draw(st.sampled_from(invokes)),
                "sessionId": f"s{i}",
            }
            if kind == "done":
                ev["output"] = {"v": draw(st.integers(0, 9))}
            else:
                ev["error"] = {"name": "Error", "message": f"boom {i}"}
            events.append(ev)
        elif kind == "unknown":
            events.append({"type": "Z"})
        else:
            ev = {"type": draw(st.sampled_from([*EVENTS, "R"]))}
            if draw(st.booleans()):
                ev["x"] = draw(st.integers(0, 3))
            if draw(st.booleans()):
                ev["flag"] = draw(st.booleans())
            events.append(ev)
    return {"desc": desc, "events": events, "restoreEach": draw(st.integers(0, 4)) == 4}

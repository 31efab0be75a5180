"""Synthetic statecharts for view tests: a huge machine and a 50-state machine (XState config shape)."""

from __future__ import annotations

from typing import Any


def huge_config(groups: int = 30, per: int = 60) -> dict[str, Any]:
    """``groups`` compound states of ``per`` atomic states each; ~3.1 transitions per state.

    With the defaults: 1,831 states and 5,580 transitions (chain, skip, and a jump into the
    next group for every state; a RESET per group).
    """
    states: dict[str, Any] = {}
    for g in range(groups):
        inner: dict[str, Any] = {}
        for k in range(per):
            on: dict[str, Any] = {
                "NEXT": f"s{(k + 1) % per}",
                "SKIP": f"s{(k + 2) % per}",
                "JUMP": f"#huge.g{(g + 1) % groups}.s{k}",
            }
            inner[f"s{k}"] = {"on": on}
        states[f"g{g}"] = {"initial": "s0", "states": inner, "on": {"RESET": ".s0"}}
    return {"id": "huge", "initial": "g0", "states": states}


def fifty_config() -> dict[str, Any]:
    """A 50-state machine: 5 compound phases of 9 steps each (plus idle, failed, done...)."""
    states: dict[str, Any] = {"idle": {"on": {"START": "phase0"}}}
    for p in range(5):
        inner: dict[str, Any] = {}
        for k in range(8):
            inner[f"step{k}"] = {"on": {"OK": f"step{k + 1}", "FAIL": "#fifty.failed"}}
        inner["step8"] = {"type": "final"}
        states[f"phase{p}"] = {
            "initial": "step0",
            "states": inner,
            "onDone": f"phase{p + 1}" if p < 4 else "done",
        }
    states["failed"] = {"on": {"RETRY": "idle"}}
    states["done"] = {"type": "final"}
    return {"id": "fifty", "initial": "idle", "states": states}

"""Run one description on both engines and compare persisted snapshots as canonical JSON."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from agentscope.hashing import canonical_json
from tests.differential.vocab import js_source, python_machine

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent


class NodeDriver:
    """A long-lived ``node driver.mjs`` process (real xstate from the repo's node_modules)."""

    def __init__(self) -> None:
        self.proc = subprocess.Popen(
            ["node", str(HERE / "driver.mjs")],
            cwd=str(REPO),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            encoding="utf-8",
        )

    def run(self, cases: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Run ``cases`` on real XState; return one result per case."""
        self.submit(cases)
        return self.collect()

    def submit(self, cases: list[dict[str, Any]]) -> None:
        """Send ``cases`` to the driver without waiting: the caller works while XState does (one
        request in flight; :meth:`collect` reads its reply)."""
        assert self.proc.stdin is not None
        payload = [
            {
                "source": js_source(c["desc"]),
                "events": c["events"],
                "restoreEach": c.get("restoreEach", False),
            }
            for c in cases
        ]
        self.proc.stdin.write(json.dumps({"cases": payload}) + "\n")
        self.proc.stdin.flush()

    def collect(self) -> list[dict[str, Any]]:
        """The results of the request :meth:`submit` sent."""
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError("the node driver exited")
        results: list[dict[str, Any]] = json.loads(line)["results"]
        return results

    def close(self) -> None:
        if self.proc.poll() is None:
            assert self.proc.stdin is not None
            self.proc.stdin.close()
            self.proc.wait(timeout=10)


def run_python(case: dict[str, Any]) -> dict[str, Any]:
    """The Python twin of the driver's ``runCase``."""
    out: dict[str, Any] = {"ok": True, "snapshots": []}
    try:
        machine = python_machine(case["desc"])
        out["version"] = machine.version
        s = machine.initial()
        restore_each = case.get("restoreEach", False)
        if restore_each:
            s = machine.restore(json.loads(json.dumps(machine.persist(s))))
        out["snapshots"].append(json.loads(json.dumps(machine.persist(s))))
        sessions: dict[str, str] = {}
        for ev in case["events"]:
            s = machine.fold(s, [ev], sessions=sessions)[0]
            p = json.loads(json.dumps(machine.persist(s)))
            out["snapshots"].append(p)
            if restore_each:
                s = machine.restore(p)
                sessions.clear()
    except Exception as exc:  # both sides report any failure; compared as "errored"
        out["ok"] = False
        out["error"] = f"{type(exc).__name__}: {exc}"
    return out


def difference(case: dict[str, Any], js: dict[str, Any], py: dict[str, Any]) -> str | None:
    """Return a description of the first difference, or ``None`` when the engines agree."""
    if js["ok"] != py["ok"]:
        return f"js ok={js['ok']} ({js.get('error')}) vs python ok={py['ok']} ({py.get('error')})"
    if js.get("version") != py.get("version"):
        return f"version js={js.get('version')} python={py.get('version')}"
    a, b = js["snapshots"], py["snapshots"]
    if len(a) != len(b):
        return f"snapshot count js={len(a)} python={len(b)} (js error {js.get('error')!r}, python {py.get('error')!r})"
    for i, (x, y) in enumerate(zip(a, b, strict=True)):
        if canonical_json(x) != canonical_json(y) or json.dumps(x) != json.dumps(y):
            # canonical equality is what hashes need; equal key order too means the persisted
            # JSON text (what a store writes) is byte-identical as well
            ev = case["events"][i - 1] if i else {"type": "(init)"}
            return f"step {i} after {json.dumps(ev)}:\n  js     {json.dumps(x)}\n  python {json.dumps(y)}"
    return None


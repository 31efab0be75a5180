"""XState inspection recordings read as the root actor's EventLog (agentscope.log.inspection).

Every recording here is made by running a real XState machine in Node
(tests/xstate_machines/record_inspection.mjs, the repo's pinned xstate) with an inspector
(``createActor(machine, {inspect})``) that writes one JSON line per inspection event.
"""

from __future__ import annotations

import copy
import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agentscope.errors import IncompleteRecordError, LogFormatError, LogReadWarning, ThreadNotFoundError
from agentscope.hashing import state_hash
from agentscope.log import read_log
from agentscope.log.inspection import ACTOR_COLUMNS, is_inspection_stream, read_inspection
from tests.conftest import REPO, requires_node

pytestmark = requires_node

HERE = REPO / "tests" / "xstate_machines"
LAMP = f"{HERE / 'inspected.mjs'}:lampMachine"
EVENT_TYPES = ["@agent.init", "GO", "xstate.done.actor", "NOTE", "xstate.timer"]


def record(tmp: Path, style: str, roots: int = 1) -> Path:
    out = tmp / f"{style}-{roots}.jsonl"
    subprocess.run(["node", str(HERE / "record_inspection.mjs"), str(out), style, str(roots)],
                   check=True, cwd=REPO, timeout=60, capture_output=True)
    return out


@pytest.fixture(scope="module")
def recordings(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    tmp = tmp_path_factory.mktemp("inspection")
    return {"statelyai": record(tmp, "statelyai"), "v6": record(tmp, "v6"), "two": record(tmp, "statelyai", 2)}


@pytest.fixture(scope="module")
def lamp() -> Iterator[Any]:
    from agentscope.bulk import MachineSpec

    machine = MachineSpec.parse(LAMP).load()
    yield machine
    machine.close()


def records(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def without_started_at(snapshot: dict[str, Any]) -> dict[str, Any]:
    """A live timer's ``startedAt`` (wall clock) is not part of what a fold reproduces."""
    snap = copy.deepcopy(snapshot)
    for timer in snap.get("timers", {}).values():
        timer.pop("startedAt", None)
    return snap


@pytest.mark.parametrize("style", ["statelyai", "v6"])
def test_recording_reads_as_the_root_actors_log(recordings: dict[str, Path], style: str) -> None:
    path = recordings[style]
    assert is_inspection_stream(path.read_bytes())
    recs = records(path)
    root = recs[0]["sessionId"]
    log = read_log(path)
    assert log.era == "C" and log.thread == root and log.source == str(path)
    assert [e["event"]["type"] for e in log.entries] == EVENT_TYPES
    assert log.entries[0]["event"] == {"type": "@agent.init", "input": {"start": 1}}
    assert log.entries[1]["event"] == {"type": "GO", "by": 2}
    assert log.entries[3]["event"] == {"type": "NOTE", "text": "warm \u2603"}
    done = log.entries[2]["event"]
    assert (done["actorId"], done["output"]) == ("doubler", {"n": 6})
    assert log.machine_id == "lamp" and log.execution_id == root
    assert [e["index"] for e in log.entries] == list(range(5)) and len(log.problems) == 0
    # the recorded snapshot of each step is kept, and its §2 hash is the entry's stateHash
    step_recs = [r for r in recs if r["type"] in ("@xstate.snapshot", "@xstate.transition") and r["sessionId"] == root]
    for entry, rec in zip(log.entries, step_recs, strict=True):
        assert entry["metadata"]["inspection"]["snapshot"] == rec["snapshot"]
        assert entry["verification"]["stateHash"] == state_hash(rec["snapshot"])
    # child actors are listed
    actors = log.actors
    assert actors is not None and list(actors.columns) == list(ACTOR_COLUMNS)
    assert list(actors["actor_id"]) == ["lamp", "doubler"]
    assert list(actors["is_root"]) == [True, False]
    assert actors["parent_id"].iloc[1] == root and list(actors["src"]) == ["lamp", "double"]
    assert list(actors["status"]) == ["done", "done"]
    assert list(actors["steps"]) == [5, 2]
    # recordedAt from createdAt, in order
    stamps = list(log.df["recorded_at"])
    assert stamps == sorted(stamps) and stamps[0].year >= 2024


def test_both_styles_give_the_same_log(recordings: dict[str, Path]) -> None:
    a, b = read_log(recordings["statelyai"]), read_log(recordings["v6"])

    def hashes(log: Any) -> list[str]:  # the two runs' timers started at different wall times
        return [state_hash(without_started_at(e["metadata"]["inspection"]["snapshot"])) for e in log.entries]

    assert hashes(a) == hashes(b) and len(set(hashes(a))) == 5
    assert [e["event"] for e in a.entries][:2] == [e["event"] for e in b.entries][:2]
    assert [e["machineVersion"] for e in a.entries] == [e["machineVersion"] for e in b.entries]


def test_version_is_the_structural_hash_of_the_recorded_definition(
    recordings: dict[str, Path], lamp: Any
) -> None:
    log = read_log(recordings["statelyai"])
    assert log.machine_versions == (lamp.version,)
    assert lamp.machine_id == "lamp"


def test_replay_compares_every_step_with_the_recorded_snapshot(recordings: dict[str, Path], lamp: Any) -> None:
    from agentscope.pipeline import verify

    log = read_log(recordings["statelyai"])
    report = verify(lamp, log)
    assert report.ok
    counts = report.counts()
    assert counts.get("mismatch", 0) == 0 and counts.get("missing", 0) == 0
    # field by field: the fold's persisted snapshots equal the recorded ones, except the live
    # timers' startedAt (which verify explains as a benign difference)
    seed = lamp.initial({"start": 1})
    folded = [seed, *lamp.fold(seed, [e["event"] for e in log.entries[1:]], sessions={})]
    for entry, snap in zip(log.entries, folded, strict=True):
        recorded = entry["metadata"]["inspection"]["snapshot"]
        assert without_started_at(lamp.persist(snap)) == without_started_at(recorded), entry["index"]
    explained = report.df[report.df["verdict"].astype(str) == "explained"]["index"].tolist()
    assert explained == [i for i, e in enumerate(log.entries)
                         if any("startedAt" in t for t in e["metadata"]["inspection"]["snapshot"]["timers"].values())]


def test_a_tampered_recording_fails_at_the_tampered_step(
    recordings: dict[str, Path], lamp: Any, tmp_path: Path
) -> None:
    from agentscope.pipeline import verify

    recs = records(recordings["statelyai"])
    root = recs[0]["sessionId"]
    note = next(r for r in recs if r["type"] == "@xstate.snapshot" and r["sessionId"] == root
                and r["event"]["type"] == "NOTE")
    note["snapshot"]["context"]["notes"] = ["cold"]
    bad = tmp_path / "tampered.jsonl"
    bad.write_text("".join(json.dumps(r) + "\n" for r in recs))
    report = verify(lamp, read_log(bad))
    assert not report.ok
    assert int(report.first_mismatch["index"]) == 3
    verdicts = report.df["verdict"].astype(str).tolist()
    assert verdicts[3] == "mismatch" and "mismatch" not in verdicts[:3] and verdicts[:2] == ["verified", "verified"]


def test_views_work_on_it(recordings: dict[str, Path], lamp: Any, tmp_path: Path) -> None:
    from agentscope.cli import main

    path = recordings["v6"]
    html = tmp_path / "player.html"
    assert main(["show", str(path), "--machine", LAMP, "--html", str(html), "--json"]) == 0
    text = html.read_text()
    assert "xstate.done.actor" in text and "lamp" in text
    assert main(["verify", str(path), "--machine", LAMP]) == 0


def test_several_roots_need_a_thread(recordings: dict[str, Path]) -> None:
    path = recordings["two"]
    recs = records(path)
    roots = [r["sessionId"] for r in recs if r["type"] == "@xstate.actor" and not r.get("parentId")]
    assert len(roots) == 2
    with pytest.raises(ThreadNotFoundError, match="2 root actors") as info:
        read_log(path)
    assert all(r in str(info.value) for r in roots)
    second = read_log(path, thread=roots[1])
    assert second.thread == roots[1]
    assert second.entries[0]["event"] == {"type": "@agent.init", "input": {"start": 2}}
    assert list(second.actors["actor_id"]) == ["lamp", "doubler"]
    assert second.actors["session_id"].iloc[0] == roots[1]
    with pytest.raises(ThreadNotFoundError, match="no root actor 'nope'"):
        read_log(path, thread="nope")


def test_machine_stamps_its_version(recordings: dict[str, Path], lamp: Any) -> None:
    data = recordings["statelyai"].read_bytes()
    no_definition = "".join(
        json.dumps({k: v for k, v in r.items() if k != "definition"}) + "\n" for r in records(recordings["statelyai"])
    )
    assert read_inspection(no_definition).machine_versions == ("(unversioned)",)
    assert read_inspection(no_definition, machine=lamp).machine_versions == (lamp.version,)
    assert read_inspection(data).machine_versions == (lamp.version,)


def test_damaged_recordings_name_the_line(recordings: dict[str, Path], tmp_path: Path) -> None:
    lines = recordings["statelyai"].read_text().splitlines()
    torn = tmp_path / "torn.jsonl"
    torn.write_text("\n".join(lines[:-1]) + "\n" + lines[-1][:25])
    with pytest.raises(IncompleteRecordError, match=rf"incomplete final record \(line {len(lines)}, no trailing newline\)"):
        read_log(torn)
    with pytest.warns(LogReadWarning, match="incomplete final record"):
        log = read_log(torn, errors="collect")
    assert [e["event"]["type"] for e in log.entries] == EVENT_TYPES[:4]  # the torn line was the last step
    assert list(log.problems["line"]) == [len(lines)]
    odd = tmp_path / "odd.jsonl"
    bad = json.loads(lines[6])
    bad["type"] = "@xstate.bogus"
    odd.write_text("\n".join([*lines[:6], json.dumps(bad), *lines[7:]]) + "\n")
    with pytest.raises(LogFormatError) as info:
        read_log(odd)
    assert (info.value.line, info.value.field) == (7, "type")
    no_snap = json.loads(lines[2])
    del no_snap["snapshot"]
    odd.write_text("\n".join([*lines[:2], json.dumps(no_snap), *lines[3:]]) + "\n")
    with pytest.raises(LogFormatError) as info:
        read_log(odd)
    assert (info.value.line, info.value.field) == (3, "snapshot")


def test_a_json_array_of_records_reads_the_same(recordings: dict[str, Path], tmp_path: Path) -> None:
    recs = records(recordings["v6"])
    array = tmp_path / "recording.json"
    array.write_text(json.dumps(recs))
    a, b = read_log(array), read_log(recordings["v6"])
    assert [e["event"] for e in a.entries] == [e["event"] for e in b.entries]
    assert [e["verification"] for e in a.entries] == [e["verification"] for e in b.entries]
    assert not is_inspection_stream(json.dumps([{"schemaVersion": 1, "type": "@xstate.actor"}]).encode())

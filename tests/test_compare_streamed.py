"""``compare`` of two stored logs (JSON Lines files, SQLite threads) reads their raw records side
by side and gives the result that comparing the two logs read whole gives (spec §6.1): the real
triage threads, a prefix, a tampered copy, a bridge pair, a copy in another key order."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

from agentscope.forks import ForkDiff, compare
from agentscope.stores import read_log
from tests.conftest import FIXTURES, load_json

STORE = FIXTURES / "g_triage.sqlite"
FIELDS = [f.name for f in dataclasses.fields(ForkDiff) if not f.name.startswith("_")]


def _jsonl(path: Path, entries: list[Any], *, sort_keys: bool = False) -> str:
    path.write_text("".join(json.dumps(e, separators=(",", ":"), sort_keys=sort_keys) + "\n"
                            for e in entries), encoding="utf-8")
    return str(path)


def _same_as_whole(a: str, b: str) -> ForkDiff:
    streamed = compare(a, b)
    whole = compare(_whole(a), _whole(b))
    for name in FIELDS:
        assert getattr(streamed, name) == getattr(whole, name), name
    assert streamed.left_suffix["id"].tolist() == whole.left_suffix["id"].tolist()
    return streamed


def _whole(source: str) -> Any:
    head, _, thread = source.partition("#")
    return read_log(head, thread=thread or None)


@pytest.mark.parametrize("a, b, kind", [
    ("main", "fork", "fork"), ("fork", "main", "fork"), ("main", "second", "unrelated"),
    ("main", "main", "identical"),
])
def test_store_threads_compare_as_their_logs_do(a: str, b: str, kind: str) -> None:
    diff = _same_as_whole(f"{STORE}#{a}", f"{STORE}#{b}")
    assert diff.kind == kind
    if kind == "fork":
        assert diff.common_prefix == 18 and diff.through_event_id == "evt_00000017"


def test_jsonl_files_prefix_fork_and_tamper(tmp_path: Path) -> None:
    main = load_json("g_triage.main.log.json")
    fork = load_json("g_triage.fork.log.json")
    a = _jsonl(tmp_path / "main.jsonl", main)
    assert _same_as_whole(a, _jsonl(tmp_path / "head.jsonl", main[:40])).kind == "prefix"
    diff = _same_as_whole(a, _jsonl(tmp_path / "fork.jsonl", fork))
    assert (diff.kind, diff.divergence, diff.left_length, diff.right_length) == ("fork", 18, 91, 52)
    tampered = json.loads(json.dumps(main))
    for i in (30, 33):
        tampered[i]["verification"]["stateHash"] = "deadbeef"
    tampered[40]["event"] = {"type": "EDITED"}
    diff = _same_as_whole(a, _jsonl(tmp_path / "tampered.jsonl", tampered))
    assert (diff.kind, diff.divergence, diff.tampered) == ("tamper", 30, (30, 33, 40))


def test_a_copy_in_another_key_order_is_the_same_log(tmp_path: Path) -> None:
    main = load_json("g_triage.main.log.json")
    diff = _same_as_whole(_jsonl(tmp_path / "a.jsonl", main),
                          _jsonl(tmp_path / "b.jsonl", main, sort_keys=True))
    assert diff.kind == "identical" and diff.common_prefix == 91


def test_a_bridge_segment_pair(tmp_path: Path) -> None:
    v1 = _jsonl(tmp_path / "v1.jsonl", load_json("e_bridge.v1.log.json"))
    v2 = _jsonl(tmp_path / "v2.jsonl", load_json("e_bridge.v2.log.json"))
    diff = _same_as_whole(v1, v2)
    assert diff.migrated_from[1] is not None


def test_only_what_the_comparison_needs_is_parsed(tmp_path: Path) -> None:
    """A line after the divergence that is not JSON at all is a record the scan counts and never
    parses; the log read whole stops there (the streamed result needs nothing from it)."""
    main = load_json("g_triage.main.log.json")
    fork = load_json("g_triage.fork.log.json")
    a = _jsonl(tmp_path / "main.jsonl", main)
    b = tmp_path / "fork.jsonl"
    _jsonl(b, fork)
    with b.open("a", encoding="utf-8") as fh:
        fh.write("{not json\n")
    diff = compare(a, str(b))
    assert (diff.kind, diff.divergence, diff.right_length) == ("fork", 18, 53)

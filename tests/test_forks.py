"""compare() and fork_tree() on the real fixtures (spec §5.1, §6)."""

from __future__ import annotations

import copy
import json
import sqlite3
from pathlib import Path
from typing import Any

import jsonpatch
import jsonpointer
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentscope.errors import LogFormatError
from agentscope.forks import ENTRY_COLUMNS, ForkDiff, _entries_frame, compare, fork_tree
from agentscope.hashing import canonical_event_json
from agentscope.jsondiff import MISSING, Change, diff_json, json_equal, json_patch, pointer_escape
from agentscope.log import read_log
from tests.conftest import FIXTURES, load_json


def sqlite_threads(name: str) -> dict[str, list[dict[str, Any]]]:
    """Read a §5.2 store directly (independently of agentscope.log), read-only."""
    con = sqlite3.connect(f"file:{FIXTURES / name}?mode=ro", uri=True)
    try:
        out: dict[str, list[dict[str, Any]]] = {}
        rows = con.execute("SELECT thread_id, entry FROM agent_event_log ORDER BY thread_id, idx")
        for thread, text in rows:
            out.setdefault(thread, []).append(json.loads(text))
        return out
    finally:
        con.close()


def event_types(entries: list[dict[str, Any]]) -> list[str]:
    return [e["event"]["type"] for e in entries]


# ---------------------------------------------------------------------------------------------
# the recorded forks


@pytest.mark.parametrize("variant", ["c_fork_memory", "c_fork_sqlite"])
def test_counter_fork_json(variant: str) -> None:
    parent = load_json(f"{variant}.parent.log.json")
    fork = load_json(f"{variant}.fork.log.json")
    d = compare(parent, fork)
    assert d.kind == "fork"
    assert d.divergence == 4
    assert d.common_prefix == 4
    assert d.whole_entry_prefix == 4  # copied verbatim (§5.1), recordedAt included
    assert d.through_event_id == "evt_00000003"
    assert d.execution_ids[0] == d.execution_ids[1] == parent[0]["metadata"]["executionId"]
    assert (d.left_length, d.right_length) == (9, 8)
    assert set(d.divergence_fields) == {"event", "verification.stateHash"}
    # suffixes: the README's post-fork events
    assert list(d.left_suffix["event_type"]) == ["INC", "TOGGLE", "DEC", "TOGGLE", "FINISH"]
    assert list(d.right_suffix["event_type"]) == ["RESET", "DEC", "INC", "FINISH"]
    assert list(d.left_suffix["index"]) == [4, 5, 6, 7, 8]
    assert list(d.right_suffix["state_hash"]) == [e["verification"]["stateHash"] for e in fork[4:]]
    assert set(ENTRY_COLUMNS) <= set(d.left_suffix.columns)
    # the whole-entry diff at the divergence names the event and the differing envelope parts
    paths = {c.path for c in d.entry_changes}
    assert {"/event/type", "/recordedAt", "/verification/stateHash"} <= paths
    assert Change("/event/type", "INC", "RESET") in d.entry_changes


def test_c_fork_sqlite_threads_match_json_and_fork_at_4() -> None:
    threads = sqlite_threads("c_fork.sqlite")
    assert set(threads) == {"main", "branch"}
    assert threads["main"] == load_json("c_fork_sqlite.parent.log.json")
    d = compare(threads["main"], threads["branch"])
    assert (d.kind, d.divergence, d.common_prefix) == ("fork", 4, 4)
    # the other direction is the same fork
    r = compare(threads["branch"], threads["main"])
    assert (r.kind, r.divergence) == ("fork", 4)
    assert list(r.left_suffix["event_type"]) == ["RESET", "DEC", "INC", "FINISH"]


def test_g_triage_main_vs_fork_diverge_at_18() -> None:
    main = load_json("g_triage.main.log.json")
    fork = load_json("g_triage.fork.log.json")
    d = compare(main, fork)
    assert (d.kind, d.divergence, d.common_prefix) == ("fork", 18, 18)
    assert main[:18] == fork[:18]  # README: shares entries 0-17 byte for byte
    assert d.whole_entry_prefix == 18
    assert d.through_event_id == main[17]["id"]
    assert (main[18]["event"]["type"], fork[18]["event"]["type"]) == ("APPROVE", "REJECT")
    assert d.left_suffix.shape[0] == 91 - 18 and d.right_suffix.shape[0] == 52 - 18
    frame = d.to_frame()
    assert list(frame["index"]) == list(range(18, 91))
    assert frame["status"].iloc[0] == "differs"
    assert (frame["status"].iloc[52 - 18 :] == "left only").all()


def test_g_triage_main_vs_second_unrelated() -> None:
    main = load_json("g_triage.main.log.json")
    second = load_json("g_triage.second.log.json")
    d = compare(main, second)
    assert d.kind == "unrelated"
    assert d.execution_ids[0] != d.execution_ids[1]
    # both start with evt_00000000 but the init inputs differ (tier1 vs tier2)
    assert d.divergence == 0 and d.common_prefix == 0 and d.through_event_id is None
    assert Change("/event/input/team", "tier1", "tier2") in d.entry_changes


def test_independent_runs_with_the_same_events_are_unrelated() -> None:
    # memory vs sqlite variant: same ids, events and hashes; different executionId/recordedAt
    a = load_json("c_fork_memory.parent.log.json")
    b = load_json("c_fork_sqlite.parent.log.json")
    d = compare(a, b)
    assert d.kind == "unrelated"
    assert d.common_prefix == 9  # §6.1 ignores recordedAt and metadata
    assert d.whole_entry_prefix == 0  # legacy stableJson counts them (§6.2)


# ---------------------------------------------------------------------------------------------
# identical, prefix, tamper


def test_identical_same_object_and_deep_copy() -> None:
    main = load_json("g_triage.main.log.json")
    for other in (main, copy.deepcopy(main)):
        d = compare(main, other)
        assert d.kind == "identical"
        assert d.divergence is None
        assert d.common_prefix == d.whole_entry_prefix == 91
        assert d.through_event_id == "evt_00000090"
        assert d.left_suffix.empty and d.right_suffix.empty


@pytest.mark.parametrize("n", [1, 30, 90])
def test_prefix_both_directions(n: int) -> None:
    main = load_json("g_triage.main.log.json")
    for d in (compare(main, main[:n]), compare(copy.deepcopy(main[:n]), main)):
        assert d.kind == "prefix"
        assert d.common_prefix == n and d.divergence is None
        assert d.through_event_id == main[n - 1]["id"]
    d = compare(main, main[:n])
    assert d.right_suffix.empty and list(d.left_suffix["index"]) == list(range(n, 91))


@pytest.mark.parametrize("at", [0, 3, 40, 90])
@pytest.mark.parametrize("reorder", [False, True])
def test_tampered_event_payload(at: int, reorder: bool) -> None:
    main = load_json("g_triage.main.log.json")
    bad = copy.deepcopy(main)
    if reorder:  # the tampered copy was re-serialized by another writer (other key order)
        bad = [{k: e[k] for k in reversed(list(e))} for e in bad]
    bad[at]["event"]["tampered"] = True
    d = compare(main, bad)
    assert d.kind == "tamper"
    assert d.divergence == at and d.common_prefix == at
    assert d.divergence_fields == ("event",)
    assert d.tampered == (at,)
    assert d.entry_changes == (Change("/event/tampered", MISSING, True),)


def test_tampered_state_hash_only() -> None:
    parent = load_json("c_fork_memory.parent.log.json")
    bad = copy.deepcopy(parent)
    bad[6]["verification"]["stateHash"] = "deadbeef"
    d = compare(parent, bad)
    assert (d.kind, d.divergence, d.tampered) == ("tamper", 6, (6,))
    assert d.divergence_fields == ("verification.stateHash",)
    assert d.entry_changes == (Change("/verification/stateHash", "59c35bba", "deadbeef"),)


def test_tamper_bool_for_number_and_several_entries() -> None:
    parent = load_json("c_fork_memory.parent.log.json")
    assert parent[3]["event"] == {"type": "INC", "by": 4}
    bad = copy.deepcopy(parent)
    bad[3]["event"]["by"] = True  # Python says True == 1; JSON does not
    bad[3]["event"]["by"] = True
    bad[7]["event"]["type"] = "INC"
    d = compare(parent, bad)
    assert (d.kind, d.divergence, d.tampered) == ("tamper", 3, (3, 7))
    one = copy.deepcopy(parent)
    one[3]["event"]["by"] = 1
    two = copy.deepcopy(parent)
    two[3]["event"]["by"] = True
    assert compare(one, two).kind == "tamper"


def test_a_removed_state_hash_is_not_a_difference() -> None:
    # §6.1: hashes count only when both are present
    parent = load_json("c_fork_memory.parent.log.json")
    other = copy.deepcopy(parent)
    del other[5]["verification"]
    d = compare(parent, other)
    assert d.kind == "identical" and d.common_prefix == 9
    assert d.whole_entry_prefix == 5


def test_key_order_and_number_spelling_do_not_matter() -> None:
    main = load_json("g_triage.main.log.json")
    shuffled = []
    for e in main:
        e2 = {k: e[k] for k in reversed(list(e))}
        e2["event"] = json.loads(json.dumps(e["event"]), object_pairs_hook=lambda kv: dict(reversed(kv)))
        shuffled.append(e2)
    assert json.dumps(shuffled[5]["event"]) != json.dumps(main[5]["event"])
    d = compare(main, shuffled)
    assert d.kind == "identical" and d.common_prefix == 91
    assert d.whole_entry_prefix == 91  # stableJson sorts keys too
    parent = load_json("c_fork_memory.parent.log.json")
    floaty = copy.deepcopy(parent)
    floaty[3]["event"]["by"] = 4.0  # JSON.parse("4.0") === 4
    assert canonical_event_json(floaty[3]["event"]) == canonical_event_json(parent[3]["event"])
    assert compare(parent, floaty).kind == "identical"


def test_recorded_at_is_ignored_but_new_recording_is_a_fork() -> None:
    # same id/index, different event and a different recordedAt: a fork, not a tamper
    parent = load_json("c_fork_memory.parent.log.json")
    other = copy.deepcopy(parent[:5])
    other[4]["event"] = {"type": "DEC"}
    other[4]["recordedAt"] = "2026-11-30T11:00:00.000Z"
    assert compare(parent, other).kind == "fork"
    # only recordedAt differs: still the same entry under §6.1
    same = copy.deepcopy(parent)
    same[4]["recordedAt"] = "2026-11-30T11:00:00.000Z"
    d = compare(parent, same)
    assert d.kind == "identical" and d.whole_entry_prefix == 4


def test_logs_without_execution_id() -> None:
    parent = [dict(e) for e in load_json("c_fork_memory.parent.log.json")]
    fork = [dict(e) for e in load_json("c_fork_memory.fork.log.json")]
    for log in (parent, fork):
        del log[0]["metadata"]
    assert compare(parent, fork).kind == "fork"  # byte-identical init: a copy
    other = copy.deepcopy(fork)
    other[0]["recordedAt"] = "2026-11-30T11:00:00.000Z"
    assert compare(parent, other).kind == "unrelated"


def test_empty_and_bad_input() -> None:
    parent = load_json("c_fork_memory.parent.log.json")
    assert compare([], []).kind == "identical"
    assert compare(parent, []).kind == "prefix"  # an empty log is a prefix of any log
    assert compare([], parent).common_prefix == 0
    with pytest.raises(LogFormatError) as err:
        compare([*parent[:2], "oops"], parent)
    assert err.value.index == 2


# ---------------------------------------------------------------------------------------------
# display


def test_repr_and_html_are_escaped_and_bounded() -> None:
    parent = load_json("c_fork_memory.parent.log.json")
    evil = copy.deepcopy(parent)
    evil[4]["event"] = {"type": "<script>alert(1)</script>", "blob": ["<b>x</b>"] * 500}
    d = compare(parent, evil)
    text = d._repr_html_()
    assert "<script>" not in text and "<b>x" not in text
    assert "&lt;script&gt;" in text
    assert len(text) < 20_000
    assert repr(d).startswith("<ForkDiff tamper at index 4") or repr(d).startswith("<ForkDiff fork at index 4")
    assert isinstance(d, ForkDiff)


# ---------------------------------------------------------------------------------------------
# fork_tree


def test_fork_tree_on_the_stores_read_independently() -> None:
    g = fork_tree(sqlite_threads("g_triage.sqlite")).set_index("thread")
    assert g.loc["fork", "parent"] == "main" and g.loc["fork", "fork_index"] == 18
    assert g.loc["fork", "through_event_id"] == "evt_00000017"
    assert pd.isna(g.loc["main", "parent"]) and pd.isna(g.loc["second", "parent"])
    assert g.loc["fork", "root"] == "main" and g.loc["fork", "depth"] == 1
    assert g.loc["second", "root"] == "second"
    assert list(g.loc[["main", "fork", "second"], "length"]) == [91, 52, 40]
    assert g.loc["main", "execution_id"] == g.loc["fork", "execution_id"] != g.loc["second", "execution_id"]
    c = fork_tree(sqlite_threads("c_fork.sqlite")).set_index("thread")
    assert c.loc["branch", "parent"] == "main" and c.loc["branch", "fork_index"] == 4
    assert pd.isna(c.loc["main", "parent"])


def test_fork_tree_is_independent_of_listing_order() -> None:
    threads = sqlite_threads("g_triage.sqlite")
    rev = dict(reversed(list(threads.items())))
    g = fork_tree(rev).set_index("thread")
    assert g.loc["fork", "parent"] == "main" and g.loc["fork", "fork_index"] == 18
    assert pd.isna(g.loc["main", "parent"])


def _branch(base: list[dict[str, Any]], at: int, tag: str, minute: int, n: int) -> list[dict[str, Any]]:
    out = copy.deepcopy(base[:at])
    for i in range(at, at + n):
        out.append(
            {
                **copy.deepcopy(base[0]),
                "id": f"evt_{i:08d}",
                "index": i,
                "recordedAt": f"2026-12-01T10:{minute:02d}:{i % 60:02d}.000Z",
                "event": {"type": tag, "i": i},
            }
        )
        del out[-1]["metadata"]
    return out


def test_fork_tree_three_generations_and_a_stale_copy() -> None:
    main = load_json("g_triage.main.log.json")
    f1 = _branch(main, 10, "F1", 10, 20)  # forked from main at 10
    f2 = _branch(f1, 14, "F2", 20, 5)  # forked from f1 at 14 (f1 had entries past 14 already)
    copy_of_f2 = copy.deepcopy(f2)  # a full-length copy that never advanced
    stale = copy.deepcopy(main[:7])  # forked from main at 7, never advanced
    t = fork_tree({"f2": f2, "stale": stale, "main": main, "f1": f1, "copy": copy_of_f2}).set_index("thread")
    assert t.loc["f1", ["parent", "fork_index"]].tolist() == ["main", 10]
    assert t.loc["f2", ["parent", "fork_index"]].tolist() == ["f1", 14]
    assert t.loc["stale", ["parent", "fork_index"]].tolist() == ["main", 7]
    assert pd.isna(t.loc["main", "parent"])
    # identical threads: the earlier-listed one is the parent
    assert t.loc["copy", ["parent", "fork_index"]].tolist() == ["f2", 19]
    assert t.loc["copy", "depth"] == 3 and t.loc["copy", "root"] == "main"


def test_fork_tree_through_read_log() -> None:
    g = fork_tree(FIXTURES / "g_triage.sqlite").set_index("thread")
    assert g.loc["fork", "parent"] == "main" and g.loc["fork", "fork_index"] == 18
    c = fork_tree(str(FIXTURES / "c_fork.sqlite")).set_index("thread")
    assert c.loc["branch", "parent"] == "main" and c.loc["branch", "fork_index"] == 4
    logs = [read_log(FIXTURES / "c_fork.sqlite", thread=t) for t in ("branch", "main")]
    listed = fork_tree(logs).set_index("thread")
    assert listed.loc["branch", ["parent", "fork_index"]].tolist() == ["main", 4]


def test_compare_event_logs_and_paths_through_read_log() -> None:
    main = read_log(FIXTURES / "c_fork.sqlite", thread="main")
    branch = read_log(FIXTURES / "c_fork.sqlite", thread="branch")
    d = compare(main, branch)
    assert (d.kind, d.divergence) == ("fork", 4)
    assert d.names == ("main", "branch")
    assert list(d.right_suffix["event_type"].astype(str)) == ["RESET", "DEC", "INC", "FINISH"]
    p = compare(FIXTURES / "g_triage.main.log.json", Path(FIXTURES / "g_triage.fork.log.json"))
    assert (p.kind, p.divergence) == ("fork", 18)
    # suffix frames of plain lists have exactly the EventLog.df layout
    lists = compare(main.entries, branch.entries)
    pd.testing.assert_frame_equal(
        lists.right_suffix, d.right_suffix.reset_index(drop=True), check_categorical=False
    )
    pd.testing.assert_frame_equal(_entries_frame(main.entries), main.df.reset_index(drop=True), check_categorical=False)


# ---------------------------------------------------------------------------------------------
# the structural diff


def test_diff_json_pointer_escaping_and_arrays() -> None:
    left = {"a/b": 1, "m~n": [1, 2, 3], "same": {"x": [True]}, "gone": None, "t": True}
    right = {"a/b": 2, "m~n": [1, 5], "same": {"x": [True]}, "new": {"k": 0}, "t": 1}
    changes = diff_json(left, right)
    assert changes == [
        Change("/a~1b", 1, 2),
        Change("/gone", None, MISSING),
        Change("/m~0n/1", 2, 5),
        Change("/m~0n/2", 3, MISSING),
        Change("/new", MISSING, {"k": 0}),
        Change("/t", True, 1),
    ]
    assert [c.op for c in changes] == ["replace", "remove", "replace", "remove", "add", "replace"]
    for c in changes:  # every path resolves (RFC 6901) on the side that has it
        if c.left is not MISSING:
            assert jsonpointer.resolve_pointer(left, c.path) == c.left
        if c.right is not MISSING:
            assert jsonpointer.resolve_pointer(right, c.path) == c.right
    assert pointer_escape("~/") == "~0~1"
    assert diff_json(1, 1.0) == [] and diff_json([1], [1, 2]) == [Change("/1", MISSING, 2)]
    assert diff_json({"a": 1}, [1]) == [Change("", {"a": 1}, [1])]
    assert not json_equal(True, 1) and json_equal({"a": [1, None]}, {"a": [1.0, None]})
    # a queue that lost its head is one removal; one that gained a head is one insertion
    assert diff_json({"q": [5, 6, 7, 8]}, {"q": [6, 7, 8]}) == [Change("/q/0", 5, MISSING)]
    assert diff_json([6, 7, 8], [5, 6, 7, 8]) == [Change("/0", MISSING, 5)]
    assert diff_json([1, {"a": 1}, 9], [1, {"a": 2}, 3, 9]) == [Change("/1/a", 1, 2), Change("/2", MISSING, 3)]


# ---------------------------------------------------------------------------------------------
# the fast paths give the same answers as the rule


class RawLog:
    """A reader-shaped log that keeps each entry's raw JSON text (``raw_entries``)."""

    def __init__(self, entries: list[dict[str, Any]], raw: list[Any]) -> None:
        self.entries = entries
        self.raw_entries = raw


def test_raw_texts_are_used_and_never_trusted_beyond_equality() -> None:
    main = load_json("g_triage.main.log.json")
    fork = load_json("g_triage.fork.log.json")
    compact = [json.dumps(e, separators=(",", ":")) for e in main]
    spaced = [json.dumps(e) for e in main]  # different text, same entries
    d = compare(RawLog(main, compact), RawLog(copy.deepcopy(main), spaced))
    assert (d.kind, d.common_prefix) == ("identical", 91)
    fork_raw = [json.dumps(e, separators=(",", ":")) for e in fork]
    d = compare(RawLog(main, compact), RawLog(fork, fork_raw))
    assert (d.kind, d.divergence) == ("fork", 18)
    # equal raw text but a tampered dict: raw is only a shortcut for "certainly equal", so a
    # reader must keep them in sync; a None text disables the shortcut
    bad = copy.deepcopy(main)
    bad[30]["event"]["x"] = 1
    d = compare(RawLog(main, compact), RawLog(bad, [None, *compact[1:]]))
    assert (d.kind, d.divergence) == ("tamper", 30)


def test_integers_beyond_64_bits_fall_back_to_canonical_json() -> None:
    parent = load_json("c_fork_memory.parent.log.json")
    a = copy.deepcopy(parent)
    b = copy.deepcopy(parent)
    a[2]["event"]["big"] = 2**70
    b[2]["event"]["big"] = 2**70
    assert compare(a, b).kind == "identical"
    # JSON.parse rounds both to the same double (spec §2.2), so §6.1 sees the same event
    a[5]["event"]["n"] = 2**53
    b[5]["event"]["n"] = 2**53 + 1
    d = compare(a, b)
    assert d.kind == "identical" and d.whole_entry_prefix == 9
    b[5]["event"]["n"] = 2**53 + 2
    assert compare(a, b).divergence == 5


def test_inputs_and_stores_are_left_untouched() -> None:
    main = load_json("g_triage.main.log.json")
    fork = load_json("g_triage.fork.log.json")
    before = copy.deepcopy((main, fork))
    d = compare(main, fork)
    d.to_frame(), d.left_suffix, d._repr_html_()
    assert (main, fork) == before
    store = FIXTURES / "g_triage.sqlite"
    raw = store.read_bytes()
    fork_tree(store)
    assert store.read_bytes() == raw


def test_version_bridge_segment_is_named() -> None:
    v1 = load_json("e_bridge.v1.log.json")
    v2 = load_json("e_bridge.v2.log.json")
    d = compare(v1, v2)
    # same execution (inherited executionId), nothing shared: a "fork" at 0, named as a bridge
    assert (d.kind, d.divergence, d.common_prefix) == ("fork", 0, 0)
    assert d.migrated_from == (None, {"machineVersion": "1", "logIndex": 5})
    assert "right is a version-bridge segment (migrated from '1' at left's end)" in d.summary()
    assert "left is a version-bridge segment" in compare(v2, v1).summary()


# ---------------------------------------------------------------------------------------------
# properties


_json = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 5) | st.sampled_from([0.5, 1.0]) | st.sampled_from(["a", "b/c", "~x"]),
    lambda kids: st.lists(kids, max_size=4) | st.dictionaries(st.sampled_from(["a", "b", "x/y", "m~n", ""]), kids, max_size=4),
    max_leaves=12,
)


@settings(max_examples=200, deadline=None)
@given(_json, _json)
def test_diff_json_resolves_and_patches_left_into_right(left: Any, right: Any) -> None:
    changes = diff_json(left, right)
    assert (changes == []) == json_equal(left, right)
    ops = []
    for c in changes:
        if c.left is not MISSING:
            assert json_equal(jsonpointer.resolve_pointer(left, c.path), c.left)
        if c.right is not MISSING:
            assert json_equal(jsonpointer.resolve_pointer(right, c.path), c.right)
        ops.append({"op": c.op, "path": c.path, **({} if c.op == "remove" else {"value": c.right})})
    removes = [o for o in ops if o["op"] == "remove"][::-1]
    patched = jsonpatch.apply_patch(left, [o for o in ops if o["op"] != "remove"] + removes)
    assert json_equal(patched, right)


@settings(max_examples=300, deadline=None)
@given(_json, _json)
def test_json_patch_is_the_one_diff_as_rfc6902_operations(left: Any, right: Any) -> None:
    """The static player's context deltas: RFC 6902 operations (applied by the jsonpatch
    reference implementation here, by the page's script there) that turn left into right, one
    per change of :func:`diff_json`."""
    ops = json_patch(left, right)
    assert len(ops) == len(diff_json(left, right))
    assert json_equal(jsonpatch.apply_patch(copy.deepcopy(left), ops), right)


def test_an_element_added_at_the_head_of_an_array_is_one_change() -> None:
    """A queue that gained an item in front (the triage fork at its divergence) differs at
    ``/queue/0`` only, not at every shifted element; a removal at the head likewise."""
    queue = [{"id": f"T-{i}", "n": i} for i in range(6, 9)]
    grown = [{"id": "T-5", "n": 5}, *queue]
    assert diff_json({"queue": queue}, {"queue": grown}) == [Change("/queue/0", MISSING, grown[0])]
    assert diff_json({"queue": grown}, {"queue": queue}) == [Change("/queue/0", grown[0], MISSING)]
    assert json_patch(queue, grown) == [{"op": "add", "path": "/0", "value": grown[0]}]


def test_deeply_nested_values_diff_without_recursion_error() -> None:
    deep_a: Any = 1
    deep_b: Any = 2
    twin: Any = 1.0
    for _ in range(5_000):
        deep_a, deep_b, twin = [deep_a], [deep_b], [twin]
    assert not json_equal(deep_a, deep_b) and json_equal(deep_a, twin)
    changes = diff_json(deep_a, deep_b)  # one change at the depth the diff stops descending
    assert len(changes) == 1 and changes[0].path == "/0" * 64


@settings(max_examples=15, deadline=None)
@given(st.randoms(use_true_random=False))
def test_compare_ignores_key_order_everywhere(rnd: Any) -> None:
    main = load_json("g_triage.main.log.json")

    def shuffle(v: Any) -> Any:
        if isinstance(v, dict):
            keys = list(v)
            rnd.shuffle(keys)
            return {k: shuffle(v[k]) for k in keys}
        if isinstance(v, list):
            return [shuffle(x) for x in v]
        return v

    other = shuffle(main)
    d = compare(main, other)
    assert (d.kind, d.common_prefix, d.whole_entry_prefix) == ("identical", 91, 91)
    cut = rnd.randrange(1, 91)
    other[cut]["event"]["type"] = "X"
    assert compare(main, other).divergence == cut

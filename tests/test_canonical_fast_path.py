"""The guarded fast path of the Era-C canonical JSON agrees byte for byte with the exact writer.

``fast_canonical_snapshot_bytes`` (orjson + guards) either returns ``None`` (the exact writer
runs) or exactly ``canonical_snapshot_json(p).encode()``. Checked on generated snapshots in the
persisted shape (structural volatile keys at snapshot and child positions, nested child
snapshots, any JSON in context) and on every snapshot of the real fixtures, where the fast path
must actually be taken.
"""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from agentscope.examples.python_machines import counter_machine
from agentscope.hashing import (
    _FAST_GUARD,
    _djb2_ascii_many,
    _guard_hit,
    canonical_snapshot_json,
    djb2_hex,
    djb2_hex_reference,
    fast_canonical_snapshot_bytes,
    state_hash,
    state_hashes,
)
from tests.conftest import load_json

_KEYS = st.one_of(
    st.sampled_from(["sessionId", "_nextTimerId", "_nextActorIds", "children", "snapshot",
                     "__proto__", "agentMeta", "0", "10", "01", "a", "B", "é", "😀", "\uffff",
                     "a\"b", "a\\b", "x:1.5,", "\x00", "\ud83d"]),
    st.text(max_size=5),
)
_NUMBERS = st.one_of(
    st.integers(min_value=-(2**60), max_value=2**60),
    st.floats(allow_nan=False, allow_infinity=False),
    st.sampled_from([0.0, -0.0, 1.0, 1e20, 1e21, 1e-7, 5e-324, 2**53, 2**53 + 1]),
)
_STRINGS = st.one_of(
    st.text(st.characters(exclude_categories=()), max_size=8),
    st.sampled_from(["10:12:45.495Z", "a:1.5,b", "\u2028", "\x7f", "/", "\x1f", "\x08"]),
)
_JSON = st.recursive(
    st.one_of(st.none(), st.booleans(), _NUMBERS, _STRINGS),
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(_KEYS, inner, max_size=4)),
    max_leaves=20,
)


def _snapshot(depth: int) -> st.SearchStrategy[dict[str, Any]]:
    child = st.fixed_dictionaries(
        {"src": st.text(max_size=3), "sessionId": st.text(max_size=3)},
        optional={"snapshot": _snapshot(depth - 1) if depth else _JSON, "x": _JSON},
    )
    return st.fixed_dictionaries(
        {"status": st.sampled_from(["active", "done"]), "value": _JSON, "context": _JSON},
        optional={
            "children": st.dictionaries(_KEYS, st.one_of(child, _JSON), max_size=3),
            "sessionId": _JSON, "_nextTimerId": _JSON, "agentMeta": _JSON, "timers": _JSON,
        },
    )


@settings(max_examples=400, deadline=None)
@given(p=_snapshot(2))
def test_fast_bytes_are_the_exact_canonical_json_or_none(p: dict[str, Any]) -> None:
    exact = canonical_snapshot_json(p)
    fast = fast_canonical_snapshot_bytes(p)
    if fast is not None:
        assert fast == exact.encode("utf-8")
    assert state_hash(p) == djb2_hex(exact) == djb2_hex_reference(exact)


@settings(max_examples=200, deadline=None)
@given(ps=st.lists(st.one_of(_snapshot(1), _JSON), max_size=12))
def test_bulk_hashes_are_the_state_hashes(ps: list[Any]) -> None:
    """``state_hashes`` (one buffer, one guard, vectorised djb2) gives each ``state_hash``,
    whatever mix of fast, guarded, non-ASCII and non-object snapshots it is given."""
    assert [f"{int(h):08x}" for h in state_hashes(ps)] == [state_hash(p) for p in ps]


@given(chunks=st.lists(st.binary(min_size=1, max_size=300).map(lambda b: bytes(x & 0x7F or 1 for x in b)),
                       min_size=1, max_size=20),
       gaps=st.lists(st.integers(0, 3), min_size=20, max_size=20),
       braced=st.booleans())
def test_vectorised_djb2_is_the_plain_loop(chunks: list[bytes], gaps: list[int], braced: bool) -> None:
    """Every chunk's djb2 out of one buffer (other bytes between the chunks) equals the per-unit
    loop (spec §2.3); braced chunks start with a "," read as "{"."""
    buf, starts, lens, want = bytearray(), [], [], []
    lead = b"," if braced else b""
    for c, g in zip(chunks, gaps, strict=False):
        buf += b"x" * g
        starts.append(len(buf))
        lens.append(len(c) + len(lead))
        buf += lead + c
        want.append(djb2_hex_reference(("{" if braced else "") + c.decode("ascii")))
    got = [f"{int(h):08x}" for h in _djb2_ascii_many(buf, starts, lens, braced)]
    assert got == want


def test_bulk_hashes_across_buffer_limits() -> None:
    """Snapshots totalling several buffers, one larger than a buffer and the timer-id member
    trimmed in place all hash as ``state_hash`` does (the counter's real snapshots)."""
    m = counter_machine()
    s = m.initial({"start": 1})
    ps: list[Any] = []
    for i in range(6000):
        s = m.transition(s, {"type": ("INC", "TOGGLE", "DEC")[i % 3], "by": i})
        ps.append(s.persisted)
    ps.insert(3000, {**ps[0], "context": {"blob": "x" * 300_000}})
    ps.insert(10, {"_nextTimerId": 7})
    ps.insert(11, {"_nextTimerId": 7.5, "value": "a"})
    assert sum(len(canonical_snapshot_json(p)) for p in ps) > 3 * 2**18
    assert [f"{int(h):08x}" for h in state_hashes(ps)] == [state_hash(p) for p in ps]


def test_bulk_hashes_while_something_holds_the_buffer(monkeypatch: Any) -> None:
    """A frame that outlives its call (a traceback, a sampling profiler's stack walk such as a
    Dask worker's) keeps numpy's view of a hash buffer alive: the next buffer is a new one, since
    a bytearray with a live export cannot be resized (it raised ``BufferError`` in a worker)."""
    import agentscope.hashing as hashing

    held: list[memoryview] = []
    real = hashing._djb2_ascii_many

    def holding(data: Any, *args: Any, **kwargs: Any) -> Any:
        held.append(memoryview(data))  # what the lingering frame's array keeps
        return real(data, *args, **kwargs)

    monkeypatch.setattr(hashing, "_djb2_ascii_many", holding)
    # not all alike (a non-object snapshot), so the one-buffer-after-another way; > 2 buffers
    ps: list[Any] = [["not", "an", "object"]]
    ps += [{"value": "a", "context": {"i": i, "s": "x" * 2000}} for i in range(300)]
    assert sum(len(canonical_snapshot_json(p)) for p in ps) > 2 * 2**18
    assert [f"{int(h):08x}" for h in hashing.state_hashes(ps)] == [state_hash(p) for p in ps]
    assert len(held) >= 2


def test_the_fast_path_is_taken_on_real_persisted_snapshots() -> None:
    taken = total = 0
    for name in ("a_counter.replay.json", "g_triage.main.replay.json", "c_fork_memory.parent.replay.json"):
        data = load_json(name)
        snaps = [s for s in _walk(data) if isinstance(s, dict) and "status" in s and "value" in s]
        for p in snaps:
            total += 1
            fast = fast_canonical_snapshot_bytes(p)
            if fast is not None:
                taken += 1
                assert fast == canonical_snapshot_json(p).encode("utf-8")
    assert total >= 10 and taken == total


def test_the_fast_path_is_taken_on_python_engine_snapshots() -> None:
    m = counter_machine()
    s = m.initial({"start": 1})
    for ev in [{"type": "INC"}, {"type": "TOGGLE"}, {"type": "DEC", "by": 3}, {"type": "FINISH"}]:
        s = m.transition(s, ev)
        assert fast_canonical_snapshot_bytes(s.persisted) == canonical_snapshot_json(s.persisted).encode()


def _walk(v: Any) -> Any:
    stack = [v]
    while stack:
        x = stack.pop()
        yield x
        if isinstance(x, dict):
            stack.extend(x.values())
        elif isinstance(x, list):
            stack.extend(x)


# the guard's substring form must say exactly what the regex says: generated from the bytes the
# patterns are made of (digits, quotes, braces, commas, "e+", ".0", "__proto__"), so every
# alternative and its near misses (".5,", "1e5", 15 digits, '{"a') come up
_GUARD_PARTS = st.sampled_from(
    [b"0", b"1", b"7", b"9", b'"', b"{", b",", b"}", b"]", b"[", b".", b"e", b"e+", b"e-", b"+",
     b"-", b"a", b":", b"__proto__", b'"__proto__"', b".0", b"1234567890123456", b"123456789012345",
     b"\xc3\xa9"]
)


@settings(max_examples=3000, deadline=None)
@given(parts=st.lists(_GUARD_PARTS, max_size=24), raw=st.binary(max_size=12))
def test_the_guard_tests_agree_with_the_guard_pattern(parts: list[bytes], raw: bytes) -> None:
    for out in (b"".join(parts), b"".join(parts) + raw, raw + b"".join(parts)):
        assert _guard_hit(out) == (_FAST_GUARD.search(out) is not None), out


def test_the_guard_tests_catch_every_alternative() -> None:
    hits = [b'{"0":1}', b'{"a":1,"9":2}', b"[1234567890123456]", b"[1e+21]", b"[5e-7]", b"[1.0]",
            b'{"a":2.0}', b"[[1.0],2]", b'{"__proto__":1}']
    misses = [b'{"a":"0"}', b"[123456789012345]", b"[1.5]", b'{"a":"e+1"}', b"[10]", b'"1.0x"']
    for out in hits:
        assert _guard_hit(out) and _FAST_GUARD.search(out) is not None, out
    for out in misses:
        assert not _guard_hit(out) and _FAST_GUARD.search(out) is None, out


def test_bulk_hashes_of_alike_chunks_and_near_misses() -> None:
    """Chunks of alike snapshots take the branch-free way; every near miss of its conditions
    (a key sorting before the timer id, a timer id that is the only member, not an int, absent in
    one snapshot, a child actor, a session id, a non-string key, a guard hit) still hashes as
    state_hash does."""
    from agentscope.hashing import _alike_snapshots

    m = counter_machine()
    s = m.initial({"start": 1})
    base: list[Any] = []
    for i in range(40):
        s = m.transition(s, {"type": ("INC", "TOGGLE", "DEC")[i % 3], "by": i})
        base.append(s.persisted)
    assert _alike_snapshots(base) is not None
    misses: list[Any] = [
        {"A": 1}, {"_nextTimerId": 3}, {"_nextTimerId": True, "x": 1}, {"_nextTimerId": 2**70, "x": 1},
        {"x": 1}, {"children": {"c": {"sessionId": "s", "snapshot": {"x": 1}}}, "x": 1},
        {"sessionId": "s", "x": 1}, {1: "x"}, {"x": 1.0}, {"x": "é"}, {"_nextTimerId": -12, "x": [1e21]},
        {"_nextTimerId": 1234567890123, "x": 1}, {"agentMeta": {"logIndex": 1}, "x": 2},
    ]
    for odd in misses:
        for where in (0, 20, len(base)):
            ps = [*base[:where], odd, *base[where:]]
            assert [f"{int(h):08x}" for h in state_hashes(ps)] == [state_hash(p) for p in ps], odd
    for tid in (12, -3):  # one timer id throughout the chunk, of more than one character
        same_id = [{**p, "_nextTimerId": tid} for p in base]
        assert _alike_snapshots(same_id) is not None
        assert [f"{int(h):08x}" for h in state_hashes(same_id)] == [state_hash(p) for p in same_id]
    no_timer = [{k: v for k, v in p.items() if k != "_nextTimerId"} for p in base]
    assert _alike_snapshots(no_timer) is not None
    assert [f"{int(h):08x}" for h in state_hashes(no_timer)] == [state_hash(p) for p in no_timer]

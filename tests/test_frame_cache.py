"""The frame caches in front of a timeline are bounded by bytes, not only by a count: a log of
large states keeps fewer frames (``TimeTravel`` over 2,500 entries of a 300 KB state stays under
100 MB; the figure is in ``benchmarks/bench_timetravel_memory.py``, never a timed test here)."""

from __future__ import annotations

import random

import agentscope as asc
from agentscope.examples import example_path
from agentscope.examples.python_machines import triage_machine
from agentscope.pipeline.fold import json_size
from agentscope.pipeline.snapshots import DEFAULT_CACHE_BYTES, FrameLRU


def _frames() -> list[asc.Frame]:
    log = asc.read_log(example_path("g_triage.sqlite"), thread="main")
    return list(asc.Timeline(triage_machine(), log, cache_size=0).iter_frames())


def test_the_frame_cache_byte_accounting_stays_under_its_budget() -> None:
    frames = _frames()
    sizes = [json_size(f.persisted) for f in frames]
    budget = 6 * max(sizes)  # a few of the real triage states
    lru = FrameLRU(256, budget)
    order = [*range(len(frames)), *random.Random(3).choices(range(len(frames)), k=300)]
    for n in order:
        lru.put(n, frames[n])
        kept = [k for k in range(len(frames)) if k in lru]
        assert lru.nbytes == sum(sizes[k] for k in kept) <= budget
        assert n in lru and lru.get(n) is frames[n]  # the frame just read is always kept
        assert len(lru) < 256
    lru.clear()
    assert (len(lru), lru.nbytes) == (0, 0)


def test_a_frame_larger_than_the_budget_is_not_kept_and_a_count_bound_still_holds() -> None:
    frames = _frames()
    tiny = FrameLRU(256, 10)
    tiny.put(5, frames[5])
    assert 5 not in tiny and tiny.nbytes == 0
    few = FrameLRU(3, DEFAULT_CACHE_BYTES)
    for n in range(10):
        few.put(n, frames[n])
    assert [n for n in range(10) if n in few] == [7, 8, 9]


def test_a_timeline_keeps_recent_frames_within_its_cache_bytes() -> None:
    log = asc.read_log(example_path("g_triage.sqlite"), thread="main")
    tl = asc.Timeline(triage_machine(), log, cache_bytes=4 * max(json_size(f.persisted) for f in _frames()))
    first = tl.at(0)
    for n in range(len(tl)):
        assert tl.at(n) is tl.at(n)  # the one just read is cached
    assert tl.at(0) is not first  # evicted by the byte bound long before 256 frames
    assert tl.at(0) == first  # and read again the same

"""Every persisted snapshot of a pass, kept in bounded memory: keyframes plus deltas, budgeted by bytes.

The one pass (:mod:`agentscope.pipeline.onepass`) hands each entry's persisted snapshot to a
:class:`SnapshotStore`, which keeps it as a **delta** against the previous one (the few members
that changed) and, now and then, as a **keyframe** (the whole snapshot). A seek is "nearest
keyframe + the deltas after it", with no engine call, so every view (``Timeline``, ``TimeTravel``,
the static player, ``compare``) reads snapshots without folding again.

Sizes are counted in bytes (each keyframe and delta is stored pickled, which keeps every value
exactly, lone surrogates and ``-0.0`` included):

- a keyframe is taken when the deltas since the last one reach the keyframe's own size (so a seek
  decodes at most about two snapshots' worth of bytes) or after ``max_chain`` deltas;
- a store whose bytes exceed ``budget`` stops growing (:attr:`SnapshotStore.full`); the pass then
  falls back to sparse checkpoints and seeks there fold again (counted, never silent).

Deltas are :func:`agentscope.jsondiff.delta` (ops on dicts and lists, pruned by ``==`` on equal subtrees).
``==`` sees ``1 == 1.0 == True``; the two numbers are one JS value, and the rare ``true``/``1``
swap is caught by the hash check every seek makes (``Timeline.seek_fallbacks``).
"""

from __future__ import annotations

import pickle
from bisect import bisect_right
from collections import OrderedDict
from collections.abc import Iterator, Mapping
from typing import Any

from agentscope.frames import Frame
from agentscope.jsondiff import Op, apply_delta, delta
from agentscope.pipeline.fold import json_size

__all__ = ["DEFAULT_BUDGET", "DEFAULT_CACHE_BYTES", "FrameLRU", "SnapshotStore"]

DEFAULT_BUDGET = 256 * 1024 * 1024
"""Default byte budget of one store (keyframes plus deltas, pickled)."""

DEFAULT_CACHE_BYTES = 16 * 1024 * 1024
"""Default byte budget of one frame cache (:class:`FrameLRU`): the cached frames' persisted
snapshots as compact JSON. Decoded into Python objects they take about 1.5-3x as much; a
``TimeTravel`` over a log of 300 KB states then keeps about 50 of them, not 256."""


class FrameLRU:
    """The most recently used frames by position, bounded by a count and by bytes.

    Parameters
    ----------
    max_frames : int
        Most frames kept (``0``: nothing is cached).
    max_bytes : int
        Most bytes kept, each frame counted as its persisted snapshot's compact JSON
        (:func:`agentscope.pipeline.fold.json_size`, the measure fold batches use); a frame
        without a snapshot counts 0. The least recently used frames are dropped until both bounds
        hold; a frame larger than ``max_bytes`` on its own is not kept.

    Notes
    -----
    :attr:`nbytes` is the sum of the kept frames' sizes: always ``<= max_bytes``.
    """

    def __init__(self, max_frames: int = 256, max_bytes: int = DEFAULT_CACHE_BYTES) -> None:
        self.max_frames = max(0, max_frames)
        self.max_bytes = max(0, max_bytes)
        self.nbytes = 0
        self._d: OrderedDict[int, tuple[Frame, int]] = OrderedDict()

    def __len__(self) -> int:
        return len(self._d)

    def __contains__(self, n: object) -> bool:
        return n in self._d

    def get(self, n: int) -> Frame | None:
        """The frame at ``n`` (now the most recently used), or ``None``."""
        got = self._d.get(n)
        if got is None:
            return None
        self._d.move_to_end(n)
        return got[0]

    def put(self, n: int, frame: Frame) -> None:
        """Keep ``frame`` as position ``n``'s, then drop the least recently used past the bounds."""
        old = self._d.pop(n, None)
        if old is not None:
            self.nbytes -= old[1]
        if not self.max_frames:
            return
        size = json_size(frame.persisted) if frame.persisted is not None else 0
        if size > self.max_bytes:
            return
        self._d[n] = (frame, size)
        self.nbytes += size
        while len(self._d) > self.max_frames or self.nbytes > self.max_bytes:
            _, (_, dropped) = self._d.popitem(last=False)
            self.nbytes -= dropped

    def clear(self) -> None:
        """Forget every frame."""
        self._d.clear()
        self.nbytes = 0

_PROTO = pickle.HIGHEST_PROTOCOL

class SnapshotStore:
    """The persisted snapshot after every position ``start .. stop - 1`` of one segment, compactly.

    Parameters
    ----------
    start : int
        The segment's first position.
    budget : int
        Bytes this store may hold (keyframes plus deltas, pickled); past it, :meth:`add` refuses
        (returns ``False``) and :attr:`full` is set.
    max_chain : int
        Most deltas between two keyframes (bounds a seek's work when deltas are tiny).

    Notes
    -----
    Memory is O(sum of the changes) plus about as much again in keyframes, not O(n x snapshot).
    """

    def __init__(self, start: int, *, budget: int = DEFAULT_BUDGET, max_chain: int = 128) -> None:
        self.start = start
        self.stop = start
        self.budget = budget
        self.max_chain = max(1, max_chain)
        self.full = False
        self.nbytes = 0
        self._key_pos: list[int] = []
        self._key_blob: list[bytes] = []
        self._deltas: list[bytes | None] = []  # per position; None at a keyframe
        self._since_key = 0
        self._chain = 0
        self._last: Mapping[str, Any] | None = None

    def __len__(self) -> int:
        return self.stop - self.start

    def copy(self) -> SnapshotStore:
        """An independent store with the same contents (the stored bytes are shared: immutable)."""
        out = SnapshotStore(self.start, budget=self.budget, max_chain=self.max_chain)
        out.__dict__.update(self.__dict__)
        out._key_pos = list(self._key_pos)
        out._key_blob = list(self._key_blob)
        out._deltas = list(self._deltas)
        return out

    def truncated(self, n: int) -> SnapshotStore:
        """An independent store holding positions :attr:`start` .. ``n - 1`` only: the store a pass
        that stopped after entry ``n - 1`` would have (the stored bytes are shared: immutable).

        ``n`` is clamped to ``start .. stop``. The result is not :attr:`full` when ``n`` is below
        this store's :attr:`stop` (every position before it was accepted within the budget);
        the next :meth:`add` continues exactly as that pass's would (same keyframe decisions).
        """
        n = max(self.start, min(n, self.stop))
        if n == self.stop:
            return self.copy()
        out = SnapshotStore(self.start, budget=self.budget, max_chain=self.max_chain)
        keys = bisect_right(self._key_pos, n - 1)
        out._key_pos = self._key_pos[:keys]
        out._key_blob = self._key_blob[:keys]
        out._deltas = self._deltas[: n - self.start]
        out.stop = n
        tail = [b for b in out._deltas[out._key_pos[-1] - self.start:] if b is not None] if keys else []
        out.nbytes = sum(map(len, out._key_blob)) + sum(len(b) for b in out._deltas if b is not None)
        out._since_key = sum(map(len, tail))
        out._chain = len(tail)
        out._last = self.get(n - 1) if n > self.start else None
        return out

    @property
    def keyframes(self) -> list[int]:
        """Positions stored whole."""
        return list(self._key_pos)

    def add(self, persisted: Mapping[str, Any], ops: list[Op] | None = None) -> bool:
        """Store the snapshot at position :attr:`stop` (``ops``: its delta from the previous one,
        computed here when not given). Returns ``False`` (and stores nothing) once over budget."""
        if self.full:
            return False
        blob: bytes | None = None
        if self._last is not None:
            if ops is None:
                ops = delta(self._last, persisted)
            blob = pickle.dumps(ops, _PROTO)
            key_size = len(self._key_blob[-1])
            if self._since_key + len(blob) >= key_size or self._chain >= self.max_chain:
                blob = None
        if blob is None:
            whole = pickle.dumps(persisted, _PROTO)
            if self.nbytes + len(whole) > self.budget:
                self.full = True
                return False
            self._key_pos.append(self.stop)
            self._key_blob.append(whole)
            self._deltas.append(None)
            self.nbytes += len(whole)
            self._since_key = 0
            self._chain = 0
        else:
            if self.nbytes + len(blob) > self.budget:
                self.full = True
                return False
            self._deltas.append(blob)
            self.nbytes += len(blob)
            self._since_key += len(blob)
            self._chain += 1
        self._last = persisted
        self.stop += 1
        return True

    def covers(self, i: int) -> bool:
        return self.start <= i < self.stop

    def _ops(self, i: int) -> list[Op]:
        blob = self._deltas[i - self.start]
        assert blob is not None
        ops: list[Op] = pickle.loads(blob)
        return ops

    def _key_at_or_before(self, i: int) -> int:
        return bisect_right(self._key_pos, i) - 1

    def get(self, i: int) -> Mapping[str, Any]:
        """A fresh copy of the snapshot at position ``i`` (O(keyframe + chain) decoding)."""
        return self.pair(i)[1]

    def pair(self, i: int) -> tuple[Mapping[str, Any] | None, Mapping[str, Any]]:
        """The snapshots at ``i - 1`` (``None`` at :attr:`start`) and ``i``, as fresh objects."""
        if not self.covers(i):
            raise IndexError(f"position {i} is not stored ({self.start}..{self.stop - 1})")
        k = self._key_at_or_before(i)
        pos = self._key_pos[k]
        doc: Any = pickle.loads(self._key_blob[k])
        prev: Any = None
        if pos == i:
            if i > self.start:
                prev = self.pair(i - 1)[1]
            return prev, doc
        for j in range(pos + 1, i):
            doc = apply_delta(doc, self._ops(j), in_place=True)
        return doc, apply_delta(doc, self._ops(i))

    def iter_from(self, lo: int, hi: int | None = None) -> Iterator[tuple[int, Mapping[str, Any]]]:
        """Yield ``(position, snapshot)`` for ``lo .. hi - 1`` in order; consecutive snapshots share
        unchanged members (read-only)."""
        hi = self.stop if hi is None else min(hi, self.stop)
        if lo >= hi:
            return
        doc: Any = self.get(lo)
        yield lo, doc
        for j in range(lo + 1, hi):
            blob = self._deltas[j - self.start]
            if blob is None:
                doc = pickle.loads(self._key_blob[self._key_at_or_before(j)])
            else:
                doc = apply_delta(doc, pickle.loads(blob))
            yield j, doc

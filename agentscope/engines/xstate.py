"""The Node engine: the user's real XState machine, run by the XState next to it, from Python.

:func:`load_machine` starts one long-lived Node process per machine module (the runner shipped in
``agentscope/engines/runner/runner.mjs``) and returns an :class:`XStateMachine` implementing the
:class:`~agentscope.engines.base.Machine` protocol. The two sides speak JSON lines over the
process's stdin/stdout; every operation is pure (XState's ``initialTransition``/``transition``/
``restoreSnapshot``/``getPersistedSnapshot``): no action runs, no actor starts (spec §4.1).

Fold semantics (spec §4.1, the contract :mod:`agentscope.replay` builds on):

- ``fold(seed, events, sessions=...)`` is **one round trip** whatever ``len(events)``. It applies
  ``transition`` to each event with actor-session rebinding and returns one :class:`Snapshot` per
  event, each with ``persisted`` (plain JSON, undefined-valued keys removed).
- Only the **last** snapshot of a fold (and the snapshot of ``initial``/``restore``) stays live in
  the runner, under a handle; folding again from it continues without a restore. Any other
  snapshot used as a seed (an intermediate one, one from before a runner restart, one built from
  a persisted dict) is restored from its ``persisted`` form first, which is hash-neutral.
- ``sessions`` is the rebinding cache (``actorId + "\\0" + recordedSessionId -> mintedSessionId``),
  updated in place. ``None`` starts a fresh cache. Across restores and re-seeds the cache is
  *carried over*: entries pointing at a still-running child follow it to its new session id,
  entries that were already stale stay stale (they can never match a live child), exactly as
  one unbroken fold would behave. When seeding from a snapshot that is not the end of the
  cache's own fold (a checkpoint, an older frame), pass the cache *as it was at that snapshot*
  or a fresh one: a fresh cache differs from an unbroken fold only for a completion carrying
  the recorded session of a child that had already finished (a stale completion, dropped by
  XState live; none occurs in the fixtures).
- :meth:`XStateMachine.fold_iter` is the pipelined form: it yields the same snapshots chunk by
  chunk while the runner already folds the next chunk, so per-snapshot work in Python (hashing)
  overlaps the fold in Node.
- Every ``reseed_every`` transitions the runner replaces the live snapshot with
  ``restoreSnapshot(getPersistedSnapshot(S))``: xstate 6.0.0-alpha.48 grows the pure actor
  system's prototype chain by one per transition (quadratic folds; see the fixtures' README,
  "Notes for replaying"). The tests prove this changes no hash.
"""

from __future__ import annotations

import atexit
import contextlib
import dataclasses
import itertools
import json
import os
import re
import signal
import subprocess
import threading
import weakref
from collections import deque
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import orjson

from agentscope._deep import call_deep, call_deep_checked
from agentscope.engines.base import (
    NO_INPUT,
    UNSENT,
    Graph,
    Snapshot,
    StateNodeInfo,
    TakenTransition,
    TransitionInfo,
)
from agentscope.engines.nodepath import TS_SUFFIXES, node_argv
from agentscope.errors import EngineError, MachineExecutionError, MachineLoadError, SnapshotRestoreError
from agentscope.hashing import djb2_hex

__all__ = [
    "DEFAULT_LOAD_TIMEOUT",
    "DEFAULT_RESEED_EVERY",
    "LOAD_TIMEOUT_ENV",
    "RUNNER_PATH",
    "XStateMachine",
    "load_machine",
]

RUNNER_PATH = Path(__file__).resolve().parent / "runner" / "runner.mjs"
"""The JS runner shipped as package data."""

DEFAULT_RESEED_EVERY = 32
"""Transitions between re-seeds of the live snapshot.

Measured with ``benchmarks/bench_xstate.py`` on the loop machine (entries per runner CPU-second,
20k entries): K=2 8.4k, 4 9.4k, 8 9.2k, 16 9.4k, **32 10.6k**, 64 10.3k, 128 9.3k, 1000 4.8k;
without re-seeding the first 5k entries alone cost 13.5x more CPU per entry. Below ~16 the
restores dominate, above ~64 the growing prototype chain does."""

DEFAULT_PART_BYTES = 1 << 20
"""Bytes of persisted snapshots per streamed reply line of a fold (the runner's cap)."""

_STDERR_KEEP = 64 * 1024
_LOAD_KINDS = {
    "module-not-found",
    "xstate-missing",
    "xstate-incompatible",
    "import-failed",
    "export-not-found",
    "not-a-machine",
    "ambiguous-export",
}

_DEPTH_FLAGS = ("--stack-size=4000",)
"""V8's JS stack (KiB) for the runner: with the default (~984) ``JSON.stringify`` itself fails
below 10,000 levels; 4,000 writes and hashes values nested to past ``MAX_DEPTH`` (measured:
12,000 levels) and stays well inside the 8 MiB main-thread stack."""

# The runner's heap: V8's defaults (Node 20: young semi-spaces up to 16 MB), and the runner's
# own policy for large states (runner.mjs, "Heap policy by state size"). A 4 MB semi-space cap
# cost 10-15% of the runner's CPU on the loop log of benchmarks/bench_node_verify.py; the runner's
# peak on the 300 KB-state grow log without it is 126 MB (with it 98 MB).

DEFAULT_LOAD_TIMEOUT = 30.0
"""Seconds :func:`load_machine` waits for the module to finish importing (and the machine to be
described) before it stops the runner and raises :class:`~agentscope.errors.MachineLoadError`.
Overridden by the ``load_timeout=`` argument, else by the ``AGENTSCOPE_LOAD_TIMEOUT`` environment
variable (seconds; ``inf`` or ``0`` waits without bound)."""

LOAD_TIMEOUT_ENV = "AGENTSCOPE_LOAD_TIMEOUT"

_CLOSE_LOCK_WAIT = 1.0
"""Seconds ``close()`` waits for a call in another thread before killing the runner outright."""

_live_runners: weakref.WeakSet[_Runner] = weakref.WeakSet()
_process_tokens = itertools.count(1)


@atexit.register
def _close_all_runners() -> None:
    for runner in list(_live_runners):
        runner.close()


def _dumps_line(message: dict[str, Any]) -> bytes:
    """One protocol line, carrying every JSON value ``JSON.parse`` accepts, exactly.

    orjson is the fast path. It refuses three things a valid log may hold, and those messages
    go through :func:`_json_line` instead: integers beyond 64 bits (written as their literal, so
    Node's ``JSON.parse`` rounds them to the nearest double exactly as it rounds the log's own
    text), lone surrogates in strings or keys (written as ``\\udxxx`` escapes, which
    ``JSON.parse`` turns back into the same UTF-16 code unit) and nesting past 255 levels (up to
    :data:`~agentscope._deep.MAX_DEPTH`, on a big stack).
    """
    try:
        return orjson.dumps(message, option=orjson.OPT_SERIALIZE_NUMPY) + b"\n"
    except orjson.JSONEncodeError:
        pass
    # the protocol envelope ({"events": [{"payload": ...}]}) may add a few levels to a value
    return call_deep_checked("the Node runner request", message, _json_line, allowance=8)


def _json_line(message: Mapping[str, Any]) -> bytes:
    text = json.dumps(
        message, separators=(",", ":"), allow_nan=False, ensure_ascii=True, default=_numpy_scalar
    )
    return text.encode("ascii") + b"\n"


def _numpy_scalar(value: Any) -> Any:
    tolist = getattr(value, "tolist", None)
    if tolist is None:
        raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")
    return tolist()


def _loads_reply(line: bytes) -> Any:
    """Parse one reply line. Node writes lone surrogates as ``\\udxxx`` escapes and may nest
    past orjson's 1,024 levels: those lines go through the stdlib parser (on a big stack)."""
    try:
        return orjson.loads(line)
    except orjson.JSONDecodeError:
        pass
    return call_deep(json.loads, line)


# ---------------------------------------------------------------------------------------------
# The subprocess.


class _Runner:
    """One Node process running ``runner.mjs`` with one machine module loaded.

    Restarted on demand after it dies. ``generation`` is a token unique to each started process
    (across all runners of this interpreter), so a handle is only ever sent to the very process
    that issued it: never to a restarted one, nor to another machine's runner.
    """

    def __init__(
        self,
        argv: list[str],
        cwd: str | None,
        load: dict[str, Any],
        label: str,
        load_timeout: float = DEFAULT_LOAD_TIMEOUT,
    ) -> None:
        self.argv = argv
        self.load_timeout = load_timeout
        self.cwd = cwd
        self.load_request = load
        self.label = label
        self.generation = 0
        self.proc: subprocess.Popen[bytes] | None = None
        self._stderr: deque[bytes] = deque()
        self._stderr_size = 0
        self._stderr_lock = threading.Lock()
        self._drain_thread: threading.Thread | None = None
        self._next_id = 0
        self._inflight: list[tuple[int, str]] = []  # (request id, op) sent, reply not read yet
        self._stash: dict[int, Any] = {}  # replies read ahead of their turn
        self._parts: dict[int, deque[Any]] = {}  # streamed fold parts read, not consumed yet
        self._abandoned: set[int] = set()  # requests whose replies nobody will read (dropped)
        self._writer: threading.Thread | None = None
        self._first_load: dict[str, Any] | None = None
        self._lock = threading.RLock()
        self.pending_release: list[int] = []
        self.load_result: dict[str, Any] | None = None
        _live_runners.add(self)

    # -- process lifecycle -------------------------------------------------------------------

    def _spawn(self) -> None:
        try:
            proc = subprocess.Popen(
                self.argv,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                cwd=self.cwd,
                start_new_session=True,  # its own process group: close() kills the whole group
                bufsize=1 << 20,
            )
        except FileNotFoundError as exc:
            raise MachineLoadError(
                f"Node.js executable {self.argv[0]!r} not found ({exc.strerror}); install Node.js >= 20 "
                f"or pass node='/path/to/node' to load_machine ({self.label})."
            ) from exc
        except OSError as exc:
            raise MachineLoadError(f"Cannot start Node.js {self.argv[0]!r}: {exc} ({self.label})") from exc
        self.proc = proc
        _live_runners.add(self)  # again after a close(): closed at exit like the first one
        self.generation = next(_process_tokens)
        self.pending_release = []
        self._inflight = []
        self._stash = {}
        self._parts = {}
        self._abandoned = set()
        with self._stderr_lock:
            self._stderr.clear()
            self._stderr_size = 0
        assert proc.stderr is not None
        self._drain_thread = threading.Thread(target=self._drain, args=(proc.stderr,), daemon=True)
        self._drain_thread.start()

    def _drain(self, stream: IO[bytes]) -> None:
        read = getattr(stream, "read1", stream.read)
        for chunk in iter(lambda: read(65536), b""):
            with self._stderr_lock:
                self._stderr.append(chunk)
                self._stderr_size += len(chunk)
                while self._stderr_size > _STDERR_KEEP and len(self._stderr) > 1:
                    self._stderr_size -= len(self._stderr.popleft())
        with contextlib.suppress(OSError):
            stream.close()

    def stderr_text(self) -> str:
        with self._stderr_lock:
            data = b"".join(self._stderr)
        return data[-_STDERR_KEEP:].decode("utf-8", "replace").strip()

    @property
    def pid(self) -> int | None:
        return None if self.proc is None else self.proc.pid

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def ensure(self) -> dict[str, Any]:
        """Start the process (again) if needed and load the module; return the load result."""
        with self._lock:
            if self.alive() and self.load_result is not None:
                return self.load_result
            self._kill()
            self._spawn()
            result = self._load_within_timeout()
            if not isinstance(result, dict):
                self._kill()
                raise EngineError(f"Malformed 'load' reply from the Node runner for {self.label}: {result!r}")
            if self._first_load is None:
                self._first_load = result
            else:
                keys = ("machineId", "declaredVersion", "structural", "exportName")
                if any(result.get(k) != self._first_load.get(k) for k in keys):
                    self._kill()
                    raise EngineError(
                        f"The machine module {self.label} changed on disk since it was loaded (the "
                        "restarted runner found another machine id/version); load it again with load_machine."
                    )
            self.load_result = result
            return result

    def _load_within_timeout(self) -> Any:
        """Send the ``load`` request and wait for its reply at most ``load_timeout`` seconds.

        A module that never finishes importing (a top-level ``await`` that never settles, a
        loop at import) makes the watchdog kill the runner's process group; the read then sees
        EOF and the caller gets a :class:`MachineLoadError` naming the module and the timeout.
        """
        proc = self.proc
        assert proc is not None
        expired = threading.Event()
        timer: threading.Timer | None = None
        if 0 < self.load_timeout < float("inf"):

            def expire() -> None:
                expired.set()
                self._signal_group(proc, signal.SIGKILL)

            timer = threading.Timer(self.load_timeout, expire)
            timer.daemon = True
            timer.start()
        try:
            return self._recv(self.send(self.load_request))
        except EngineError as exc:
            if not expired.is_set():
                raise
            path = self.load_request.get("path")
            raise MachineLoadError(
                f"Loading the machine module {path} ({self.label}) did not finish within "
                f"{self.load_timeout:g} s (load_timeout; {LOAD_TIMEOUT_ENV}); the module never "
                "finished importing (a top-level await that never settles, or a loop at import?). "
                "The runner was stopped."
            ) from exc
        finally:
            if timer is not None:
                timer.cancel()

    def _kill(self) -> None:
        proc = self.proc
        if proc is None:
            return
        try:
            self._stop(proc)
        except BaseException:
            # interrupted (a second Ctrl-C) while waiting for a polite exit: never leave it running
            self._signal_group(proc, signal.SIGKILL)
            with contextlib.suppress(BaseException):  # reap it; the interrupt is re-raised below
                proc.wait(timeout=5.0)
            raise

    def _stop(self, proc: subprocess.Popen[bytes]) -> None:
        self.proc = None
        self.load_result = None
        self._inflight = []
        self._stash = {}
        self._parts = {}
        self._abandoned = set()
        if proc.poll() is None:
            with contextlib.suppress(OSError):
                if proc.stdin is not None:
                    proc.stdin.close()
            try:
                proc.wait(timeout=2.0)
            except subprocess.TimeoutExpired:
                self._signal_group(proc, signal.SIGKILL)
                with contextlib.suppress(subprocess.TimeoutExpired):
                    proc.wait(timeout=5.0)
        # The group may hold grandchildren the module spawned; they go too.
        self._signal_group(proc, signal.SIGKILL)
        for stream in (proc.stdin, proc.stdout):
            with contextlib.suppress(OSError):
                if stream is not None:
                    stream.close()

    @staticmethod
    def _signal_group(proc: subprocess.Popen[bytes], sig: int) -> None:
        try:
            if hasattr(os, "killpg"):
                os.killpg(proc.pid, sig)
            else:  # pragma: no cover - non-POSIX
                proc.send_signal(sig)
        except (ProcessLookupError, PermissionError, OSError):
            pass

    def close(self) -> None:
        if self._lock.acquire(timeout=_CLOSE_LOCK_WAIT):
            try:
                self._kill()
            finally:
                self._lock.release()
        else:
            # Another thread waits on this runner (a machine stuck in user code): kill the
            # process group without waiting; that thread then sees EOF and reports it.
            proc = self.proc
            if proc is not None:
                self._signal_group(proc, signal.SIGKILL)
        _live_runners.discard(self)

    # -- requests ----------------------------------------------------------------------------

    def request(self, payload: dict[str, Any]) -> Any:
        """Send one request (restarting the process if it died) and return its result."""
        with self._lock:
            self.ensure()
            return self._recv(self.send(payload))

    def send(self, payload: dict[str, Any], *, pipelined: bool = False) -> int:
        """Write one request and return its id; the reply is read by :meth:`recv`.

        With ``pipelined`` the write happens on a thread, so it cannot deadlock against a runner
        that is still writing the reply of an earlier request nobody has read yet.
        """
        with self._lock:
            if payload is not self.load_request:
                self.ensure()
            self._join_writer()
            if not pipelined:
                self._read_ahead()
            if self.pending_release and "release" not in payload:
                payload = {**payload, "release": self.pending_release}
                self.pending_release = []
            proc = self.proc
            assert proc is not None and proc.stdin is not None
            self._next_id += 1
            rid = self._next_id
            op = str(payload.get("op"))
            try:
                line = _dumps_line({"id": rid, **payload})
            except (TypeError, ValueError, RecursionError) as exc:
                raise EngineError(f"Cannot send {op!r} to the Node runner: {exc}") from exc
            self._inflight.append((rid, op))
            stdin = proc.stdin

            def write() -> None:
                try:
                    stdin.write(line)
                    stdin.flush()
                except (BrokenPipeError, ConnectionResetError, ValueError, OSError):
                    pass  # the process ended: the reader sees EOF and reports it

            if pipelined:
                self._writer = threading.Thread(target=write, daemon=True)
                self._writer.start()
            else:
                write()
            return rid

    def recv(self, rid: int) -> Any:
        """Return the result of request ``rid`` (reading and stashing earlier replies)."""
        with self._lock:
            try:
                return self._recv(rid)
            finally:
                self._join_writer()

    def _join_writer(self) -> None:
        if self._writer is not None:
            try:
                self._writer.join()
            except BaseException:
                # interrupted while the runner does not read its stdin (stuck in user code)
                self._writer = None
                self._kill()
                raise
            self._writer = None

    def _read_ahead(self) -> None:
        """Read every outstanding reply into the stash (before a direct write)."""
        while self._inflight:
            rid, op = self._inflight[0]
            dropped = rid in self._abandoned
            outcome = self._read_one(rid, op)
            if not dropped:
                self._stash[rid] = outcome

    def _recv(self, rid: int) -> Any:
        while rid not in self._stash:
            if not self._inflight or rid not in (r for r, _ in self._inflight):
                raise EngineError(
                    f"The reply to request {rid} for {self.label} was lost (the runner restarted)."
                )
            head, op = self._inflight[0]
            dropped = head in self._abandoned
            outcome = self._read_one(head, op)
            if not dropped:
                self._stash[head] = outcome
        outcome = self._stash.pop(rid)
        if isinstance(outcome, BaseException):
            raise outcome
        return outcome

    def _read_one(self, rid: int, op: str) -> Any:
        """Read the reply of ``rid`` (the next one due); streamed parts go to ``_parts[rid]``.

        The reply of an abandoned request is read and dropped (``None``; nothing is stashed).
        """
        dropped = rid in self._abandoned
        while True:
            final, value = self._read_line(rid, op)
            if final:
                if dropped:
                    self._abandoned.discard(rid)
                    self._parts.pop(rid, None)
                return value
            if not dropped:
                self._parts.setdefault(rid, deque()).append(value)

    def abandon(self, rids: Iterable[int]) -> None:
        """Drop the (remaining) replies of ``rids``: a consumer stopped reading a fold stream."""
        with self._lock:
            inflight = {r for r, _ in self._inflight}
            for rid in rids:
                self._parts.pop(rid, None)
                self._stash.pop(rid, None)
                if rid in inflight:
                    self._abandoned.add(rid)

    def _read_line(self, rid: int, op: str) -> tuple[bool, Any]:
        """Read one line answering ``rid``: ``(False, part)`` or ``(True, result or error)``."""
        proc = self.proc
        assert proc is not None and proc.stdout is not None
        try:
            reply_line = proc.stdout.readline()
        except (ValueError, OSError):
            reply_line = b""
        except BaseException:
            # e.g. KeyboardInterrupt while the machine is stuck in user code: the reply may
            # never come, so the runner is stopped and the next call starts a fresh one.
            self._kill()
            raise
        if not reply_line:
            self._join_writer()
            raise self._dead(f"'{op}'")
        try:
            reply = _loads_reply(reply_line)
        except (ValueError, RecursionError) as exc:
            self._kill()
            raise (MachineLoadError if op == "load" else EngineError)(
                f"Malformed output from the Node runner for {self.label} during '{op}' ({exc}): "
                f"{reply_line[:200]!r}; the runner was stopped and the next call restarts it."
                + self._stderr_suffix()
            ) from None
        if not isinstance(reply, dict) or reply.get("id") != rid or "ok" not in reply:
            self._kill()
            raise EngineError(
                f"Malformed output from the Node runner for {self.label} during '{op}': expected a "
                f"reply to request {rid}, got {reply_line[:200]!r}; the runner was stopped."
                + self._stderr_suffix()
            )
        if "part" in reply:
            return False, reply["part"]
        self._inflight.pop(0)
        if reply["ok"]:
            return True, reply.get("result")
        return True, self._error(op, reply.get("error") or {})

    def take_parts(self, rid: int) -> list[Any]:
        """The streamed parts of ``rid`` read so far (for a reply already received in full)."""
        return list(self._parts.pop(rid, ()))

    def recv_stream(self, rid: int) -> Iterator[tuple[bool, Any]]:
        """Yield ``(False, part)`` for each streamed part of ``rid``, then ``(True, result)``.

        Reads the pipe only as the consumer advances (bounded memory: the runner pauses when
        its output backs up). Raises the request's error after the parts before it.
        """
        while True:
            with self._lock:
                queue = self._parts.get(rid)
                if queue:
                    item: tuple[bool, Any] = (False, queue.popleft())
                elif rid in self._stash:
                    self._parts.pop(rid, None)
                    item = (True, self._stash.pop(rid))
                else:
                    if not self._inflight or rid not in (r for r, _ in self._inflight):
                        raise EngineError(
                            f"The reply to request {rid} for {self.label} was lost (the runner restarted)."
                        )
                    head, op = self._inflight[0]
                    if head != rid:
                        dropped = head in self._abandoned
                        outcome = self._read_one(head, op)
                        if not dropped:
                            self._stash[head] = outcome
                        continue
                    item = self._read_line(rid, op)
            final, value = item
            if final:
                with self._lock:
                    self._join_writer()
                if isinstance(value, BaseException):
                    raise value
                yield item
                return
            yield item

    def _dead(self, when: str) -> EngineError:
        proc = self.proc
        code = None
        if proc is not None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=2.0)
            code = proc.returncode
        self._kill()
        if self._drain_thread is not None:
            self._drain_thread.join(timeout=2.0)  # collect the last words on stderr
        how = (
            f"was killed by signal {-code}"
            if isinstance(code, int) and code < 0
            else f"exited with code {code}"
        )
        err = self.stderr_text()
        cls = MachineLoadError if when == "'load'" else EngineError
        return cls(
            f"The Node runner for {self.label} {how} during {when}; the next call restarts it."
            + (f"\nrunner stderr:\n{err}" if err else "")
        )

    def _stderr_suffix(self) -> str:
        if self.proc is None and self._drain_thread is not None:
            self._drain_thread.join(timeout=2.0)
        err = self.stderr_text()
        return f"\nrunner stderr:\n{err}" if err else ""

    def _error(self, op: str, error: Mapping[str, Any]) -> EngineError:
        kind = str(error.get("kind", "internal"))
        message = str(error.get("message", "unknown runner error"))
        detail = ""
        stack = error.get("stack")
        if isinstance(stack, str) and stack:
            detail += f"\n{stack}"
        detail += self._stderr_suffix()
        missing = _MISSING_STATE.search(message) if op == "restore" else None
        if missing is not None:
            # XState's own words, as the Python engine raises them; the JS stack stays an attribute
            return SnapshotRestoreError(
                missing.group(0), field="value", stack=stack if isinstance(stack, str) else None
            )
        if kind in _LOAD_KINDS:
            return MachineLoadError(message + detail)
        if kind in ("machine-error", "not-serializable"):
            idx = error.get("index")
            et = error.get("eventType")
            return MachineExecutionError(
                f"{self.label}: {message}" + detail,
                index=idx if isinstance(idx, int) else None,
                event_type=et if isinstance(et, str) else None,
                kind=kind,
            )
        if kind == "unknown-handle":
            return _UnknownHandle(message)
        return EngineError(f"Node runner error during '{op}' for {self.label} ({kind}): {message}" + detail)


_MISSING_STATE = re.compile(
    r"Persisted snapshot references state '[^\n]*?' which does not exist on machine '[^\n]*?'\."
)


class _UnknownHandle(EngineError):
    """Internal: the runner no longer holds a handle (restarted); the caller retries from persisted."""


# ---------------------------------------------------------------------------------------------
# Handles.


@dataclass(eq=False)
class _Handle:
    """Engine-private part of a :class:`Snapshot`: a live handle id in one runner generation (or
    ``None`` for a snapshot kept only in persisted form) and the session ids of its children."""

    generation: int
    id: int | None
    children: dict[str, str] = field(default_factory=dict)


def _release_later(runner_ref: weakref.ReferenceType[_Runner], generation: int, hid: int) -> None:
    runner = runner_ref()
    if runner is not None and runner.generation == generation:
        runner.pending_release.append(hid)


# ---------------------------------------------------------------------------------------------
# The machine.


class XStateMachine:
    """An XState machine module run by Node (implements :class:`~agentscope.engines.base.Machine`).

    Build with :func:`load_machine`. ``machine_id`` is the machine's ``id``; ``version`` the
    declared ``version`` or the structural hash ``djb2Hex(structural_string(machine.config))``
    (spec §3), computed from the real ``machine.config`` in Node. ``structural_string`` is that
    string, ``export_name`` the export used, ``xstate_version`` the XState version resolved next
    to the module. ``reseed_every`` is the re-seed interval of folds (0 disables re-seeding).

    ``report_transitions`` (default ``True``): :meth:`initial`, :meth:`transition`, :meth:`fold`
    and :meth:`fold_iter` (unless sparse) fill :attr:`Snapshot.transitions` with the transitions
    each step took, as the Python engine does (the runner reads them off XState's own macrostep,
    runner.mjs "The transitions a step takes"); ``False`` leaves them ``None``. A sparse
    ``fold_iter`` (a verifying pass) and :meth:`fold_last` (seeks) never ask for them. A machine
    the runner cannot hook (a frozen machine object) reports ``None`` too, and says so on stderr.
    """

    machine_id: str
    version: str

    def __init__(self, runner: _Runner, path: Path, *, reseed_every: int = DEFAULT_RESEED_EVERY) -> None:
        self._runner = runner
        self.path = path
        self.reseed_every = reseed_every
        self._mirror: tuple[int, int, dict[str, str]] | None = None
        self.part_bytes = DEFAULT_PART_BYTES
        self.report_transitions = True
        self._taken_cache: dict[str, tuple[tuple[TakenTransition, ...], tuple[Any, ...]]] = {}
        info = runner.ensure()
        self.machine_id = str(info["machineId"])
        self.structural_string: str = str(info["structural"])
        declared = info.get("declaredVersion")
        self.declared_version: str | None = None if declared is None else str(declared)
        self.structural_hash: str = djb2_hex(self.structural_string)
        self.version = self.declared_version if self.declared_version is not None else self.structural_hash
        self.export_name: str = str(info["exportName"])
        self.xstate_version: str | None = info.get("xstateVersion")
        self._graph = _graph_from_json(info["graph"])
        self._finalizer = weakref.finalize(self, runner.close)

    # -- Machine protocol --------------------------------------------------------------------

    @property
    def graph(self) -> Graph:
        """The statechart structure extracted from the machine's resolved state nodes."""
        return self._graph

    @property
    def pid(self) -> int | None:
        """The Node process id (``None`` when not running)."""
        return self._runner.pid

    def initial(self, input: Any = NO_INPUT) -> Snapshot:
        """Return ``initialTransition(machine, input)[0]``; ``NO_INPUT`` means JS ``undefined``.

        Raises :class:`~agentscope.errors.MachineExecutionError` if the machine's ``context``
        factory throws, :class:`~agentscope.errors.EngineError` if the runner fails.
        """
        req: dict[str, Any] = {"op": "initial"}
        if input is not NO_INPUT:
            req["input"] = input
        if self.report_transitions:
            req["taken"] = True
        return self._single(self._runner.request(req))

    def restore(self, persisted: Mapping[str, Any]) -> Snapshot:
        """Return ``machine.restoreSnapshot(persisted)`` (runs the machine's ``migrate``, §4.1 step 3)."""
        return self._single(self._runner.request({"op": "restore", "persisted": persisted}))

    def transition(self, snapshot: Snapshot, event: Mapping[str, Any]) -> Snapshot:
        """Return ``transition(machine, snapshot, event)[0]`` (no session rebinding)."""
        return self._fold(snapshot, [event], None, rebind=False)[0]

    def persist(self, snapshot: Snapshot) -> dict[str, Any]:
        """Return the persisted snapshot (a shallow copy of ``snapshot.persisted``)."""
        return dict(snapshot.persisted)

    def child_session(self, snapshot: Snapshot, actor_id: str) -> str | None:
        """Return the session id of the running child ``actor_id`` in ``snapshot``, if any."""
        h = snapshot.handle
        if isinstance(h, _Handle):
            return h.children.get(actor_id)
        if snapshot.children.get(actor_id) is None:
            return None
        return self.restore(snapshot.persisted).handle.children.get(actor_id)  # type: ignore[no-any-return]

    def fold(
        self,
        seed: Snapshot,
        events: Sequence[Mapping[str, Any]] | Iterable[Mapping[str, Any]],
        *,
        sessions: dict[str, str] | None = None,
    ) -> list[Snapshot]:
        """Apply ``events`` from ``seed`` with session rebinding (spec §4.1), in one round trip.

        Returns one :class:`Snapshot` per event (``len(events)`` items). Only the last one keeps
        a live handle in the runner. ``sessions`` is updated in place (see the module docstring);
        ``None`` uses a fresh cache. Raises :class:`~agentscope.errors.MachineExecutionError`
        (``index`` = position in ``events``) when the machine throws, and
        :class:`~agentscope.errors.EngineError` when the runner dies (the next call restarts it).
        """
        evs = events if isinstance(events, list) else list(events)
        return self._fold(seed, evs, sessions, rebind=True)

    def ping(self) -> dict[str, Any]:
        """One empty round trip (the per-request overhead); returns the runner's pid and handle count."""
        result = self._runner.request({"op": "ping"})
        assert isinstance(result, dict)
        return result

    def close(self) -> None:
        """Stop the Node process (and its process group). Idempotent."""
        self._runner.close()

    def __enter__(self) -> XStateMachine:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"XStateMachine({self.machine_id!r}, version={self.version!r}, path={str(self.path)!r})"

    # -- internals ---------------------------------------------------------------------------

    def _new_handle(self, hid: int | None, children: dict[str, str]) -> _Handle:
        gen = self._runner.generation
        h = _Handle(gen, hid, children)
        if hid is not None:
            weakref.finalize(h, _release_later, weakref.ref(self._runner), gen, hid)
        return h

    def _single(self, result: Mapping[str, Any]) -> Snapshot:
        h = self._new_handle(int(result["handle"]), dict(result.get("children") or {}))
        sh = result.get("hash")
        text = result.get("taken")
        taken, values = (None, None) if text is None else self._taken(text)
        return Snapshot(
            result["persisted"],
            h,
            state_hash=sh if isinstance(sh, str) else None,
            transitions=taken,
            microstep_values=values,
        )

    def _taken(self, text: str) -> tuple[tuple[TakenTransition, ...], tuple[Any, ...]]:
        """The runner's ``[rows, values]`` of one step (a JSON string, ``""`` for none): rows
        ``[microstep, event, edge, targets, reenter]`` as :class:`TakenTransition` records
        (``source``, ``guard`` and ``kind`` from the drawn edge; the initial entry, ``edge`` null,
        from the root), and the state value after each microstep. Built once per distinct step
        (cached by the text)."""
        if not text:
            return (), ()
        found = self._taken_cache.get(text)
        if found is not None:
            return found
        edges = self._graph.transitions
        out: list[TakenTransition] = []
        rows, values = orjson.loads(text)
        for step, event, edge, targets, reenter in rows:
            if edge is None:
                out.append(TakenTransition(int(step), str(event), self._graph.root, tuple(targets), None,
                                           kind="initial", reenter=bool(reenter)))
                continue
            info = edges[int(edge)]
            out.append(TakenTransition(int(step), str(event), info.source, tuple(targets), int(edge),
                                       guard=info.guard, kind=info.kind, reenter=bool(reenter)))
        found = (tuple(out), tuple(values))
        if len(self._taken_cache) < 4096:
            self._taken_cache[text] = found
        return found

    def _fold(
        self,
        seed: Snapshot,
        events: list[Mapping[str, Any]],
        sessions: dict[str, str] | None,
        *,
        rebind: bool,
    ) -> list[Snapshot]:
        if not events:
            return []
        return list(self._stream(seed, events, sessions, rebind=rebind))

    def _seed_request(
        self,
        seed: Snapshot,
        events: list[Mapping[str, Any]],
        sessions: dict[str, str] | None,
        *,
        rebind: bool,
        emit: str = "all",
        by_value: bool = False,
    ) -> dict[str, Any]:
        """A fold request from ``seed``: by handle when it is live here, else by persisted value."""
        self._runner.ensure()
        h = seed.handle if isinstance(seed.handle, _Handle) else None
        live = (
            not by_value
            and h is not None
            and h.id is not None
            and h.generation == self._runner.generation
        )
        req: dict[str, Any] = {
            "op": "fold",
            "events": events,
            "rebind": rebind,
            "reseedEvery": self.reseed_every,
            "partBytes": self.part_bytes,
            "emit": emit,
        }
        if self.report_transitions and emit == "all":
            req["taken"] = True
        cache_sent: dict[str, str] | None
        if sessions is None or not rebind:
            cache_sent = {}
        elif (
            live
            and self._mirror is not None
            and h is not None
            and self._mirror[:2] == (h.generation, h.id)
            and self._mirror[2] == sessions
        ):
            cache_sent = None  # the runner's copy for this handle is the caller's cache
        else:
            cache_sent = dict(sessions)
        if live and h is not None:
            req["seed"] = {"handle": h.id}
        else:
            req["seed"] = {"persisted": seed.persisted, "children": dict(h.children) if h else {}}
        req["sessions"] = cache_sent
        return req

    def _stream(
        self,
        seed: Snapshot,
        events: list[Mapping[str, Any]],
        sessions: dict[str, str] | None,
        *,
        rebind: bool,
        emit: str = "all",
    ) -> Iterator[Snapshot]:
        """Fold ``events`` in one request, yielding snapshots as the runner streams them."""
        req = self._seed_request(seed, events, sessions, rebind=rebind, emit=emit)
        rid = self._runner.send(req, pipelined=True)
        try:
            yield from self._decode(
                self._runner.recv_stream(rid), len(events), sessions if rebind else None, None
            )
        except _UnknownHandle:
            req = self._seed_request(seed, events, sessions, rebind=rebind, emit=emit, by_value=True)
            rid = self._runner.send(req, pipelined=True)
            yield from self._decode(
                self._runner.recv_stream(rid), len(events), sessions if rebind else None, None
            )

    def _decode(
        self,
        stream: Iterator[tuple[bool, Any]],
        n_events: int,
        sessions: dict[str, str] | None,
        prev: list[Mapping[str, Any] | None] | None,
    ) -> Iterator[Snapshot]:
        """Turn the streamed reply of one fold request into snapshots (``n_events`` of them).

        A ``null`` persisted snapshot (or children map) is the previous one again (the runner
        sends identical ones once); ``prev`` carries the last snapshot across requests. Applies the rebinding
        cache delta to ``sessions`` at the end. In a sparse reply (it has ``same``) a ``null``
        persisted snapshot was not sent (:data:`UNSENT`), ``same`` gives each snapshot's
        ``unchanged``, and only the last has a handle.
        """
        gen = self._runner.generation
        last_p: Mapping[str, Any] | None = prev[0] if prev else None
        last_kids: dict[str, str] = {}
        count = 0
        for final, part in stream:
            persisted = part["persisted"]
            hashes = part["hashes"]
            children = part["children"]
            n = len(persisted)
            same = part.get("same")
            taken = part.get("taken")
            if len(hashes) != n or len(children) != n or count + n > n_events or (
                final and count + n != n_events
            ) or (same is not None and len(same) != n) or (taken is not None and len(taken) != n):
                self._runner.close()
                raise EngineError(
                    f"Malformed output from the Node runner for {self._runner.label}: "
                    f"{count + n} snapshots for {n_events} events; the runner was stopped."
                )
            stop = n - 1 if final else n
            if same is None:
                for i in range(stop):
                    p = persisted[i]
                    if p is None:
                        p = last_p if last_p is not None else {}
                    last_p = p
                    kids = children[i]
                    if kids is None:
                        kids = last_kids
                    last_kids = kids
                    tv = (None, None) if taken is None else self._taken(taken[i])
                    yield Snapshot(p, _Handle(gen, None, kids), state_hash=hashes[i],
                                   transitions=tv[0], microstep_values=tv[1])
            else:
                for i in range(stop):
                    p = persisted[i]
                    yield Snapshot(UNSENT if p is None else p, None, state_hash=hashes[i],
                                   unchanged=_unchanged(same[i]))
            count += n
            if final:
                p = persisted[-1]
                if p is None:  # (never in a sparse reply: it always sends its last)
                    p = last_p if last_p is not None else {}
                if prev is not None:
                    prev[:] = [p]
                h = self._new_handle(int(part["handle"]), children[-1])
                if sessions is not None:
                    sessions.update(part.get("sessions") or {})
                    self._mirror = (h.generation, int(part["handle"]), dict(sessions))
                tv = (None, None) if taken is None else self._taken(taken[-1])
                yield Snapshot(p, h, state_hash=hashes[-1],
                               unchanged=None if same is None else _unchanged(same[-1]),
                               transitions=tv[0], microstep_values=tv[1])

    def fold_last(
        self,
        seed: Snapshot,
        events: Sequence[Mapping[str, Any]] | Iterable[Mapping[str, Any]],
        *,
        sessions: dict[str, str] | None = None,
    ) -> tuple[Snapshot, list[str]]:
        """Fold ``events`` like :meth:`fold` but receive only the last persisted snapshot.

        For seeks: returns ``(snapshot after the last event, [state hash after each event])``.
        The intermediate persisted snapshots never cross the pipe. Raises as :meth:`fold`;
        ``ValueError`` for no events.
        """
        evs = events if isinstance(events, list) else list(events)
        if not evs:
            raise ValueError("fold_last needs at least one event")
        snaps = list(self._stream(seed, evs, sessions, rebind=True, emit="last"))
        return snaps[-1], [s.state_hash or "" for s in snaps]

    def fold_iter(
        self,
        seed: Snapshot,
        events: Sequence[Mapping[str, Any]] | Iterable[Mapping[str, Any]],
        *,
        sessions: dict[str, str] | None = None,
        chunk: int = 4096,
        expected: Sequence[str | None] | None = None,
    ) -> Iterator[Snapshot]:
        """Like :meth:`fold`, but yields snapshots while the runner folds ahead (pipelined).

        The events go to the runner in requests of ``chunk`` events, two in flight (the next one
        continues from the previous one's last snapshot inside the runner), and every reply is
        streamed in parts of about :attr:`part_bytes` bytes: the runner folds ahead while the
        consumer works on earlier snapshots (e.g. hashing), pausing when ~1 MB of output waits.
        Memory stays bounded by bytes, not by entry count. Results, the ``sessions`` updates and
        errors are those of :meth:`fold` (a :class:`~agentscope.errors.MachineExecutionError`
        ``index`` counts from the start of ``events``); an error is raised when it is reached.

        ``expected`` (one recorded state hash or ``None`` per event) makes the fold **sparse**, for
        a verifying pass that keeps no snapshots: a snapshot whose hash is the expected one, that
        holds no timers and is not the first or last of a request crosses the pipe as its hash
        alone. Its ``persisted`` is then :data:`UNSENT` (an empty read-only mapping); every
        snapshot carries :attr:`~agentscope.engines.base.Snapshot.unchanged` (``None`` for a
        request's first), and only each request's last has a handle (the others cannot seed a
        fold or name a child's session). ``ValueError`` when ``expected`` is not one per event.
        """
        evs = events if isinstance(events, list) else list(events)
        if not evs:
            return
        if chunk < 1:
            raise ValueError("chunk must be >= 1")
        if expected is not None and len(expected) != len(evs):
            raise ValueError(f"expected: {len(expected)} hashes for {len(evs)} events")
        cache: dict[str, str] = {} if sessions is None else sessions

        def sparse(lo: int, hi: int) -> dict[str, Any]:
            """The request fields that make the fold of ``evs[lo:hi]`` sparse (none without ``expected``)."""
            if expected is None:
                return {"taken": True} if self.report_transitions else {}
            return {"emit": "sparse", "expect": list(expected[lo:hi]), "taken": False}

        first = evs[:chunk]
        req = {**self._seed_request(seed, first, cache, rebind=True), **sparse(0, len(first))}
        rid = self._runner.send(req, pipelined=True)
        stream = self._runner.recv_stream(rid)
        try:
            try:
                head = next(stream)
            except _UnknownHandle:
                req = {**self._seed_request(seed, first, cache, rebind=True, by_value=True),
                       **sparse(0, len(first))}
                rid = self._runner.send(req, pipelined=True)
                stream = self._runner.recv_stream(rid)
                head = next(stream)
        except MachineExecutionError as exc:  # the first request failed before any part
            if isinstance(exc.index, int) and exc.index > 0:
                yield from self._fold(seed, evs[: exc.index], cache, rebind=True)
            raise
        replay_head = [head]
        del head  # the first part is held once, by ``replay_head``, until it is consumed
        runner = self._runner

        def primed() -> Iterator[tuple[bool, Any]]:
            # popped, not iterated: a part stays alive only while it is decoded (a list kept here
            # held the first ~1 MB part's snapshots for the whole fold: 8.7 MB on the loop log)
            yield replay_head.pop()
            yield from stream

        queue: deque[tuple[int, int, int]] = deque([(rid, 0, len(first))])  # (rid, start, n)
        pos = len(first)

        def send_next(after: int) -> int:
            nonlocal pos
            n = min(chunk, len(evs) - pos)
            r = runner.send(
                {
                    "op": "fold",
                    "seed": {"after": after},
                    "events": evs[pos : pos + n],
                    "sessions": None,  # the runner continues with that fold's cache
                    "rebind": True,
                    "reseedEvery": self.reseed_every,
                    "partBytes": self.part_bytes,
                    **sparse(pos, pos + n),
                },
                pipelined=True,
            )
            queue.append((r, pos, n))
            pos += n
            return r

        if pos < len(evs):
            send_next(rid)
        prev: list[Mapping[str, Any] | None] = [None]
        current: Iterator[tuple[bool, Any]] | None = primed()
        chunk_seed = seed  # the snapshot the head request starts from (``cache`` is as of it)
        try:
            while queue:
                r, start, n = queue[0]
                decoded = self._decode(
                    current if current is not None else runner.recv_stream(r), n, cache, prev
                )
                current = None
                got = 0
                try:
                    for snap in decoded:
                        got += 1
                        yield snap
                except MachineExecutionError as exc:
                    bad = exc.index
                    if isinstance(bad, int) and got < bad:
                        # the snapshots before the failing event were in the failed reply:
                        # fold them again (from this request's seed) so every one is yielded
                        queue.popleft()
                        runner.abandon(q for q, _, _ in queue)
                        queue.clear()
                        redo = self._fold(chunk_seed, evs[start : start + bad], cache, rebind=True)
                        if expected is None:
                            yield from redo[got:]
                        else:  # whole snapshots after sparse ones: say whether each changed
                            prev_p = redo[got - 1].persisted if got else chunk_seed.persisted
                            for sn in redo[got:]:
                                yield dataclasses.replace(sn, unchanged=sn.persisted == prev_p)
                                prev_p = sn.persisted
                    idx = None if bad is None else bad + start
                    raise MachineExecutionError(
                        str(exc), index=idx, event_type=exc.event_type, kind=exc.kind
                    ) from exc
                if got:
                    chunk_seed = snap
                queue.popleft()
                if pos < len(evs):
                    send_next(queue[-1][0] if queue else r)
        finally:
            if queue:  # stopped early (or failed): nobody reads the rest of these replies
                runner.abandon(r for r, _, _ in queue)


# ---------------------------------------------------------------------------------------------
# Graph conversion.


def _unchanged(flag: int | None) -> bool | None:
    """A sparse reply's ``same`` flag as :attr:`Snapshot.unchanged` (``None``: not judged)."""
    return None if flag is None else flag == 1


def _graph_from_json(g: Mapping[str, Any]) -> Graph:
    nodes: dict[str, StateNodeInfo] = {}
    for n in g["nodes"]:
        nodes[n["id"]] = StateNodeInfo(
            id=n["id"],
            key=n["key"],
            path=tuple(n["path"]),
            kind=n["kind"],
            parent=n["parent"],
            children=tuple(n["children"]),
            initial=n["initial"],
            history=n["history"],
            invoke=tuple((str(i), str(s)) for i, s in n["invoke"]),
            entry=tuple(n["entry"]),
            exit=tuple(n["exit"]),
            tags=tuple(n["tags"]),
            description=n["description"],
        )
    transitions = tuple(
        TransitionInfo(
            source=t["source"],
            event=t["event"],
            targets=tuple(t["targets"]),
            guard=t["guard"],
            dynamic=bool(t["dynamic"]),
            reenter=bool(t["reenter"]),
            kind=t["kind"],
            actions=tuple(t["actions"]),
        )
        for t in g["transitions"]
    )
    return Graph(machine_id=str(g["machineId"]), root=str(g["root"]), nodes=nodes, transitions=transitions)


# ---------------------------------------------------------------------------------------------
# Loading.


def _node_version(node: str) -> tuple[int, int, int] | None:
    try:
        out = subprocess.run([node, "--version"], capture_output=True, text=True, timeout=30, check=False)
    except FileNotFoundError as exc:
        raise MachineLoadError(
            f"Node.js executable {node!r} not found; install Node.js >= 20 or pass node='/path/to/node'."
        ) from exc
    except (OSError, subprocess.TimeoutExpired):
        return None
    m = re.match(r"v(\d+)\.(\d+)\.(\d+)", out.stdout.strip())
    return (int(m.group(1)), int(m.group(2)), int(m.group(3))) if m else None


def _load_timeout(value: float | None) -> float:
    if value is None:
        raw = os.environ.get(LOAD_TIMEOUT_ENV, "").strip()
        if not raw:
            return DEFAULT_LOAD_TIMEOUT
        try:
            value = float(raw)
        except ValueError:
            raise MachineLoadError(
                f"{LOAD_TIMEOUT_ENV}={raw!r} is not a number of seconds (e.g. 30, or inf for no bound)."
            ) from None
    if value != value or value < 0:  # NaN or negative
        raise MachineLoadError(f"load_timeout must be >= 0 seconds (0 or inf: no bound), got {value!r}.")
    return float(value)


def load_machine(
    path: str | os.PathLike[str],
    export: str | None = None,
    *,
    node: str = "node",
    cwd: str | os.PathLike[str] | None = None,
    reseed_every: int = DEFAULT_RESEED_EVERY,
    load_timeout: float | None = None,
) -> XStateMachine:
    """Load an XState machine from a JS/TS module and return it as a :class:`Machine`.

    ``xstate`` is resolved as Node resolves the module's ``import "xstate"`` from the module's
    own location, then from ``AGENTSCOPE_NODE_PATH``, then from the per-user cache that
    ``agentscope setup-node`` fills (:mod:`agentscope.engines.nodepath` states the order).
    One long-lived Node process serves the machine until
    :meth:`XStateMachine.close` (also a context manager, and closed at interpreter exit).

    Parameters
    ----------
    path
        The module: ``.mjs``, ``.js``, ``.cjs``, or TypeScript ``.ts``/``.mts``/``.cts``, loaded
        through ``tsx`` (found in the same order) or, without it, Node >= 22.6's type stripping.
    export
        The export holding the machine. Default: ``default`` when it is a machine, else the
        single exported machine (several distinct machines is an error).
    node
        The Node.js executable.
    cwd
        Working directory of the Node process (default: inherited).
    reseed_every
        Re-seed interval of folds (see the module docstring); 0 disables it.
    load_timeout
        Seconds to wait for the module to finish importing, each time the runner starts
        (default: ``AGENTSCOPE_LOAD_TIMEOUT`` if set, else :data:`DEFAULT_LOAD_TIMEOUT`, 30 s;
        ``0`` or ``math.inf`` waits without bound). Past it the runner is killed.

    Returns
    -------
    XStateMachine
        A :class:`Machine` backed by the real machine in XState (``machine_id``, ``version`` read
        from the module, spec §3); close it with :meth:`XStateMachine.close` or a ``with`` block.

    Raises
    ------
    MachineLoadError
        Node not found; module not found; unsupported extension; TypeScript with no ``tsx`` on
        a Node that cannot strip types; ``xstate`` found nowhere in the order (the message says
        ``npm install xstate@6.0.0-alpha.48`` or ``agentscope setup-node``); the module threw at
        import; export missing, not a machine, or ambiguous; the module did not finish
        importing within ``load_timeout`` (the message names the module and the timeout).
        The runner's stderr is included. Interrupting the load (``KeyboardInterrupt``) stops
        the runner.

    Examples
    --------
    >>> import agentscope as asc
    >>> from agentscope.examples import example_path
    >>> with asc.load_machine(example_path("machines/triage.mjs")) as triage:
    ...     log = asc.read_log(example_path("g_triage.sqlite"), thread="main")
    ...     print(triage.machine_id, triage.version, asc.verify(triage, log).ok)
    supportTriage efe50ed5 True
    """
    p = Path(path).expanduser().resolve()
    label = f"{p.name}" + (f" (export {export!r})" if export else "")
    if not p.is_file():
        raise MachineLoadError(f"Machine module not found: {p}")
    suffix = p.suffix.lower()
    version = _node_version(node) if suffix in TS_SUFFIXES else None
    argv = [node, *_DEPTH_FLAGS, *node_argv(p, node, version)]
    argv.append(str(RUNNER_PATH))
    load_req: dict[str, Any] = {"op": "load", "path": str(p)}
    if export is not None:
        load_req["export"] = export
    timeout = _load_timeout(load_timeout)
    runner = _Runner(argv, None if cwd is None else os.fspath(cwd), load_req, label, timeout)
    try:
        return XStateMachine(runner, p, reseed_every=reseed_every)
    except BaseException:
        runner.close()
        raise

"""The store contract: what every :class:`~agentscope.stores.protocol.Store` must do (spec §5).

An abstract test case (one subclass per implementation, see ``tests/test_stores.py``), the way
``tests/engine_contract.py`` tests every engine. The subclass writes real sources the way a host
does (its hooks below); every implementation passes the same cases:

- an unknown thread is a :class:`~agentscope.errors.ThreadNotFoundError` listing the threads;
- the threads listing (ids, lengths, first/last ``recordedAt``) and ``length``;
- ``read`` from an offset (``idx`` order, nothing before it, nothing past the end);
- ``log`` reads back the entries verbatim (real entries of the bundled triage run);
- the change cursor follows appends, **while a real writer in another process appends** (waits
  on a condition, never on the machine's speed);
- a torn or partial last record (a write in progress, a writer killed mid-transaction) is never
  read as an entry and never an error while it may still complete;
- a leading UTF-8 BOM is read by ``log`` and by the change cursor alike (text sources);
- removal or replacement of the source after it was read is a ``FollowProblem`` naming it;
- a thread rewound and rewritten under a follower is reported, never merged;
- a damaged page or row: the entries before it are read, the damage is a typed error;
- permission denied reads "Permission denied", the same wording everywhere;
- the source's bytes are unchanged afterwards (SHA-256 of every file).
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from agentscope.errors import LogFormatError, ThreadNotFoundError, UnreadableSourceError
from agentscope.stores import Cursor, Store, open_store
from agentscope.stores.protocol import Change

REPO = Path(__file__).resolve().parents[1]
REAL = REPO / "tests" / "fixtures" / "real"


def _entries(name: str) -> list[dict[str, Any]]:
    data: list[dict[str, Any]] = json.loads((REAL / name).read_text(encoding="utf-8"))
    return data


MAIN = _entries("g_triage.main.log.json")  # 91 real entries (the bundled triage run)
FORK = _entries("g_triage.fork.log.json")  # 52 entries; parts from MAIN at entry 18


def wait_for(cond: Callable[[], bool], *, timeout: float = 120.0, what: str = "") -> None:
    """Poll ``cond`` until it holds (a generous bound: the machine may be loaded)."""
    end = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > end:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.02)


def sha256_of(paths: list[Path]) -> dict[str, str]:
    out = {}
    for p in sorted(paths):
        if p.is_file():
            out[str(p)] = hashlib.sha256(p.read_bytes()).hexdigest()
    return out


def follow_all(store: Store, thread: str, cursor: Cursor) -> Change:
    """One ``changes`` call's worth, folded: every entry until nothing new (or a problem)."""
    got: list[dict[str, Any]] = []
    while True:
        change = store.changes(thread, cursor)
        got.extend(change.entries)
        cursor = change.cursor
        if change.problem is not None or not change.entries:
            return Change(got, cursor, change.problem, change.pending)


class StoreContract:
    """Subclass, set the flags and implement the hooks; pytest collects the ``test_*``."""

    multi_thread = True
    """The source holds several threads (a SQLite store, a directory); else one, ``main``."""
    appendable = True
    """A host appends to it in place (JSON Lines, a database); a JSON document is rewritten."""
    text = False
    """A text source (a BOM may lead it)."""

    # -- hooks --------------------------------------------------------------------------------

    def make(self, root: Path, threads: dict[str, list[dict[str, Any]]]) -> str:
        """Write the threads as a new source under ``root``; return its address."""
        raise NotImplementedError

    def append(self, source: str, thread: str, entries: list[dict[str, Any]]) -> None:
        """Append entries to a thread in place, as the host's writer does."""
        raise NotImplementedError

    def rewrite(self, source: str, thread: str, entries: list[dict[str, Any]]) -> None:
        """Write ``entries`` over the thread in place (a fork written over a followed thread)."""
        raise NotImplementedError

    def tear(self, source: str, thread: str, entry: dict[str, Any]) -> None:
        """Leave a torn last record of ``entry`` (a write in progress or a killed writer)."""
        raise NotImplementedError

    def damage(self, source: str, thread: str) -> None:
        """Damage the source part-way through ``thread`` (a zeroed page, a garbage row)."""
        raise NotImplementedError

    def add_bom(self, source: str) -> None:
        """Put a UTF-8 BOM before the text (text sources only)."""
        raise NotImplementedError

    def files(self, source: str) -> list[Path]:
        """Every file the source consists of (for the bytes-unchanged check)."""
        p = Path(source)
        if p.is_dir():
            return sorted(p.iterdir())
        return sorted(p.parent.glob(p.name + "*"))

    def remove(self, source: str) -> None:
        """Remove the source."""
        for f in self.files(source):
            f.unlink()

    def replace_with(self, root: Path, source: str, threads: dict[str, list[dict[str, Any]]]) -> None:
        """Replace the source by a new one (another inode) holding ``threads``."""
        other = root / "other"
        other.mkdir()
        new = Path(self.make(other, threads))
        target = Path(source)
        if new.is_dir():
            for f in new.iterdir():
                os.replace(f, target / f.name)
        else:
            os.replace(new, target)

    # -- fixtures -----------------------------------------------------------------------------

    def threads_(self) -> dict[str, list[dict[str, Any]]]:
        base = {"main": MAIN[:30]}
        if self.multi_thread:
            base["fork"] = FORK[:20]
        return base

    @pytest.fixture
    def source(self, tmp_path: Path) -> Iterator[str]:
        src = self.make(tmp_path, self.threads_())
        yield src

    # -- the cases ----------------------------------------------------------------------------

    def test_threads_listing_and_length(self, source: str) -> None:
        with open_store(source) as store:
            infos = store.threads()
            expected = self.threads_()
            assert [t.thread_id for t in infos] == sorted(expected)
            for info in infos:
                entries = expected[info.thread_id]
                assert info.length == len(entries) == store.length(info.thread_id)
                assert info.first_recorded_at == entries[0]["recordedAt"]
                assert info.last_recorded_at == entries[-1]["recordedAt"]
                assert info.error is None

    def test_unknown_thread_is_typed_and_lists_the_threads(self, source: str) -> None:
        with open_store(source) as store:
            for call in (lambda: store.length("nope"), lambda: list(store.read("nope")),
                         lambda: store.log("nope")):
                with pytest.raises(ThreadNotFoundError) as err:
                    call()
                assert "'nope'" in str(err.value) and "main" in str(err.value)
                assert str(err.value).startswith(str(source))

    def test_log_reads_back_the_entries_verbatim(self, source: str) -> None:
        with open_store(source) as store:
            for thread, entries in self.threads_().items():
                assert store.log(thread).entries == entries
            if not self.multi_thread:
                assert store.log().entries == MAIN[:30]

    def test_read_from_an_offset(self, source: str) -> None:
        with open_store(source) as store:
            records = [r for batch in store.read("main", 25) for r in batch]
            assert [r.idx for r in records] == list(range(25, 30))
            assert [json.loads(r.text) for r in records] == MAIN[25:30]
            assert [r for batch in store.read("main", 30) for r in batch] == []

    def test_texts_are_the_texts_read_gives(self, source: str) -> None:
        """``texts`` (the whole-scan path of ``compare``) holds each record's text, from any
        offset, a torn last record not among them."""
        with open_store(source) as store:
            for start in (0, 3, 29, 30):
                texts = [t for batch in store.texts("main", start) for t in batch]
                assert texts == [r.text for batch in store.read("main", start) for r in batch]
                assert [json.loads(t) for t in texts] == MAIN[start:30]

    def test_change_cursor_follows_appends(self, source: str) -> None:
        if not self.appendable:
            pytest.skip("a JSON document is rewritten, not appended to")
        with open_store(source) as store:
            first = follow_all(store, "main", Cursor())
            assert first.entries == MAIN[:30] and first.problem is None
            assert store.changes("main", first.cursor).entries == []
            self.append(source, "main", MAIN[30:33])
            wait_for(lambda: bool(store.changes("main", first.cursor).entries), what="the append")
            more = follow_all(store, "main", first.cursor)
            assert more.entries == MAIN[30:33] and more.cursor.position == 33

    def test_cursor_from_an_open_log_continues_it(self, source: str) -> None:
        with open_store(source) as store:
            log = store.log("main")
            cursor = Cursor(len(log), log.entries[-1])
            assert follow_all(store, "main", cursor).entries == []
            if self.appendable:
                self.append(source, "main", MAIN[30:31])
                wait_for(lambda: bool(store.changes("main", cursor).entries), what="the append")
                assert follow_all(store, "main", cursor).entries == MAIN[30:31]

    def test_reading_while_a_real_writer_appends(self, source: str, tmp_path: Path) -> None:
        """A writer process started after the reader's first read: every entry is seen once, in
        order, whatever the machine's speed (the reader waits on the count, not on time)."""
        if not self.appendable:
            pytest.skip("a JSON document is rewritten, not appended to")
        with open_store(source) as store:
            seen = follow_all(store, "main", Cursor())
            got = list(seen.entries)
            todo = tmp_path / "todo.json"
            todo.write_text(json.dumps(MAIN[30:70]))
            code = (
                "import json, sys, time\n"
                f"sys.path.insert(0, {str(REPO)!r})\n"
                f"from {type(self).__module__} import {type(self).__name__} as C\n"
                "c = C()\n"
                "for e in json.loads(open(sys.argv[2]).read()):\n"
                "    c.append(sys.argv[1], 'main', [e])\n"
                "    time.sleep(0.002)\n"
            )
            writer = subprocess.Popen([sys.executable, "-c", code, source, str(todo)], cwd=REPO)
            cursor = seen.cursor
            end = time.monotonic() + 180
            try:
                while len(got) < 70 and time.monotonic() < end:
                    change = store.changes("main", cursor)
                    assert change.problem is None, change.problem
                    got.extend(change.entries)
                    cursor = change.cursor
                    if not change.entries:
                        time.sleep(0.005)
            finally:
                assert writer.wait(timeout=180) == 0
            got.extend(follow_all(store, "main", cursor).entries)
            assert got == MAIN[:70]
            assert store.log("main").entries == MAIN[:70]

    def test_a_torn_last_record_is_not_an_entry(self, source: str) -> None:
        with open_store(source) as store:
            before = follow_all(store, "main", Cursor())
            self.tear(source, "main", MAIN[30])
            change = follow_all(store, "main", before.cursor)
            assert change.entries == [] and change.problem is None
            log = store.log("main", errors="collect")
            assert log.entries == MAIN[:30]
            assert [json.loads(t) for batch in store.texts("main") for t in batch] == MAIN[:30]

    def test_a_bom_is_read_alike_by_every_reader(self, source: str) -> None:
        if not self.text:
            pytest.skip("not a text source")
        self.add_bom(source)
        with open_store(source) as store:
            assert store.log("main").entries == MAIN[:30]
            assert follow_all(store, "main", Cursor()).entries == MAIN[:30]
            assert store.threads()[0].length == 30 if not self.multi_thread else True
            assert [json.loads(t) for batch in store.texts("main") for t in batch] == MAIN[:30]

    def test_removal_after_reading_is_a_problem_naming_the_source(self, source: str) -> None:
        with open_store(source) as store:
            seen = follow_all(store, "main", Cursor())
            self.remove(source)
            change = store.changes("main", seen.cursor)
            assert change.problem is not None and change.problem.kind in ("removed", "truncated")
            assert str(source) in str(change.problem)
            assert store.changes("main", seen.cursor).problem is not None  # never forgotten

    def test_replacement_after_reading_is_a_problem_naming_the_source(
        self, source: str, tmp_path: Path
    ) -> None:
        with open_store(source) as store:
            seen = follow_all(store, "main", Cursor())
            self.replace_with(tmp_path, source, {**self.threads_(), "main": MAIN[:31]})
            change = store.changes("main", seen.cursor)
            assert change.problem is not None and change.problem.kind == "replaced", change
            assert change.entries == []
            assert str(source) in str(change.problem)

    def test_a_thread_rewound_and_rewritten_is_reported_not_merged(self, source: str) -> None:
        with open_store(source) as store:
            seen = follow_all(store, "main", Cursor())
            self.rewrite(source, "main", FORK[:35])  # entry 29 differs (FORK parts at 18)
            change = store.changes("main", seen.cursor)
            assert change.problem is not None, change
            assert change.problem.kind in ("rewritten", "truncated", "replaced")
            assert change.entries == []
            assert str(source) in str(change.problem)

    def test_damage_reads_what_is_before_it_and_is_typed(self, source: str) -> None:
        self.damage(source, "main")
        with open_store(source) as store:
            with pytest.raises(LogFormatError) as err:
                store.log("main")
            assert str(source) in str(err.value)
            log = store.log("main", errors="collect")
            assert 0 < len(log) < 30
            assert log.entries == MAIN[: len(log)]
            assert len(log.problems) >= 1

    def read_every_way(self, source: str) -> None:
        """Every read the protocol offers, on every thread: listing, whole log, from an offset,
        following (what the bytes-unchanged case checks leaves the source as it was)."""
        with open_store(source) as store:
            store.threads()
            for t in self.threads_():
                store.log(t)
                list(store.read(t, 3))
                follow_all(store, t, Cursor())

    def test_bytes_unchanged_afterwards(self, source: str) -> None:
        before = sha256_of(self.files(source))
        self.read_every_way(source)
        assert sha256_of(self.files(source)) == before
        assert [p.name for p in self.files(source)] == [Path(p).name for p in before]

    def test_permission_denied_reads_the_same_everywhere(self, source: str) -> None:
        if os.geteuid() == 0:
            import shutil

            if shutil.which("setpriv") is None:
                pytest.skip("needs a non-root user to be denied")
        import tempfile

        shared = Path(tempfile.mkdtemp(prefix="agentscope-perm-"))
        shared.chmod(0o755)
        try:
            src = Path(self.make(shared, self.threads_()))
            for f in [src, *self.files(str(src))]:
                f.chmod(0o700 if f.is_dir() else 0o000)
            if src.is_dir():
                src.chmod(0o000)
            code = (
                "import sys\nfrom agentscope.stores import open_store\n"
                "from agentscope.errors import UnreadableSourceError\n"
                "try:\n    s = open_store(sys.argv[1]); s.log('main')\n"
                "except UnreadableSourceError as e:\n    print(type(e).__name__, e)\n"
            )
            prefix = (["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
                      if os.geteuid() == 0 else [])
            env = {**os.environ, "PYTHONPATH": str(REPO), "HOME": "/tmp"}
            probe = subprocess.run([*prefix, sys.executable, "-c", code, str(src)],
                                   capture_output=True, text=True, env=env, cwd="/tmp", timeout=120)
            assert probe.returncode == 0, probe.stderr
            assert probe.stdout.startswith(f"{UnreadableSourceError.__name__} {src}")
            assert probe.stdout.strip().endswith("Permission denied"), probe.stdout
        finally:
            for p in [shared, *shared.rglob("*")]:
                p.chmod(0o755)

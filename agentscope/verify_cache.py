"""The verdict cache of :func:`agentscope.bulk.verify_store`: a SQLite file the user names.

A thread's row of the verification table depends only on the machine and the thread's stored
entries (the fold is pure, spec §4.1), so it can be kept and reused while both are unchanged.
The cache keys every row by content:

- **machine**: a BLAKE2b digest of the machine module's bytes and of the local modules it may
  import (for Node the files its relative ``import``/``export … from``/``import("…")``
  specifiers reach, transitively; for Python every ``.py`` file of the module's top-level
  package), the export, every extra version-bridge
  machine the same way (so a changed ``machineVersion`` or transition is a new key), and the
  verification mode (``strict``);
- **thread**: the store's display address and the thread id (rows name their source);
- **entries**: one BLAKE2b-128 digest per stored entry text in ``idx`` order (the same content
  keys the fold tree uses), so a lookup tells an unchanged thread (every digest equal), a grown
  one (the cached digests are a prefix of the stored ones) and a rewritten one (the first
  differing position).

The file holds a ``meta`` table (``format`` = :data:`FORMAT`, ``version`` = :data:`VERSION`), a
``verdicts`` table and a ``resume`` table: per row, the state of the thread's pass at its end
(:class:`agentscope.pipeline.onepass.Resume`, JSON and raw arrays, never code), from which a
grown thread's fold continues with its new entries only. A file that is not a SQLite database,
or one without that ``meta`` (a foreign database), or with damaged rows, is never trusted:
:class:`~agentscope.errors.CacheWarning` is issued, its rows are not used and the file is not
written. The cache is never inside the store it describes (:func:`check_cache_path`).
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import json
import os
import re
import sqlite3
import warnings
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from agentscope.errors import CacheWarning


class MachineSpec(Protocol):
    """What the cache reads of a machine recipe (:class:`agentscope.bulk.MachineSpec` is one):
    its engine kind, module (file path or dotted name) and export."""

    @property
    def kind(self) -> str: ...
    @property
    def module(self) -> str: ...
    @property
    def export(self) -> str | None: ...

__all__ = ["FORMAT", "VERSION", "CachedRow", "VerdictCache", "check_cache_path", "file_digest",
           "file_signature", "machine_key"]

FORMAT = "agentscope-verdict-cache"
"""The ``meta.format`` value of a verdict cache file."""
VERSION = "1"
"""The ``meta.version`` of the layout written here; another version is ignored (and kept)."""

DIGEST = 16
"""Bytes per entry digest (BLAKE2b-128)."""


@dataclass(frozen=True, slots=True)
class CachedRow:
    """One cached verification row: ``digests`` (``DIGEST`` bytes per entry, ``idx`` order) and
    ``row`` (the table's columns but ``seconds`` and ``folded``)."""

    digests: bytes
    row: dict[str, Any]


_JS_SUFFIXES = (".mjs", ".js", ".cjs", ".ts", ".mts", ".cts", ".json")
# a relative specifier of a static import/export or a dynamic import() with a literal
_RELATIVE_IMPORT = re.compile(
    r"""(?:\bfrom|\bimport)\s*\(?\s*(["'])(\.{1,2}/[^"'\n]*)\1"""
)


def _js_closure(entry: Path) -> list[Path]:
    """``entry`` and every file its relative imports reach, transitively (sorted after the
    entry); a specifier that names no file is left out (the engine reports it when loading)."""
    seen: dict[Path, None] = {}
    todo = [entry.resolve()]
    while todo:
        path = todo.pop()
        if path in seen or not path.is_file():
            continue
        seen[path] = None
        text = path.read_text(encoding="utf-8", errors="replace")
        for _q, spec in _RELATIVE_IMPORT.findall(text):
            target = (path.parent / spec.split("?")[0]).resolve()
            todo.extend([target, *(Path(f"{target}{x}") for x in _JS_SUFFIXES)])
    first, *rest = seen
    return [first, *sorted(rest)]


def _py_closure(origin: Path, module: str) -> list[Path]:
    """``origin`` and, for a module inside a package, every ``.py`` file of its top-level
    package (the machine may import any of them)."""
    if "." not in module and origin.name != "__init__.py":
        return [origin]
    top = origin.parent
    for _ in range(module.count(".") + (origin.name == "__init__.py") - 1):
        top = top.parent
    return [origin, *sorted(q for q in top.rglob("*.py") if q != origin)]


def _module_bytes(spec: MachineSpec) -> bytes:
    """The bytes of the machine's module and of the local modules it may import (their paths
    included), so a change in any of them is a new key."""
    if spec.kind == "node":
        files = _js_closure(Path(spec.module))
        if not files[0].is_file():
            return Path(spec.module).read_bytes()  # the OSError machine_key documents
    else:
        found = importlib.util.find_spec(spec.module)
        origin = found.origin if found is not None else None
        if origin is None or not Path(origin).is_file():
            return f"<no source for {spec.module}>".encode()
        files = _py_closure(Path(origin), spec.module)
    h = hashlib.blake2b(digest_size=32)
    for f in files:
        for data in (str(f).encode("utf-8", "surrogatepass"), f.read_bytes()):
            h.update(len(data).to_bytes(8, "big"))
            h.update(data)
    return h.digest()


def machine_key(spec: MachineSpec, extra: Sequence[tuple[str, MachineSpec]], strict: bool) -> str:
    """The machine part of the cache key: a hex BLAKE2b digest of the module bytes and export of
    ``spec`` and of each ``(machineVersion, spec)`` of ``extra``, and ``strict``.

    Raises
    ------
    OSError
        A Node module file cannot be read.
    """
    h = hashlib.blake2b(digest_size=20)
    for version, s in (("", spec), *extra):
        for part in (version, s.kind, s.export or "", _module_bytes(s)):
            data = part if isinstance(part, bytes) else part.encode()
            h.update(len(data).to_bytes(8, "big"))
            h.update(data)
    h.update(b"strict" if strict else b"lenient")
    return h.hexdigest()


def check_cache_path(cache: str | os.PathLike[str], store: str) -> Path:
    """``cache`` as a path, refused when it is (or sits inside) the store ``store``: a SQLite
    store or its ``-wal``/``-journal``, a log file, a directory store, through a symbolic or a
    hard link; the cache never writes to a user's store.

    Raises
    ------
    StoreError
        The cache path is the store, one of its side files (or a link to one), or inside a
        directory store.
    """
    from agentscope.log.writers import outside_inputs

    return outside_inputs(cache, [store], what="the verdict cache")


_FILES_TABLE = (
    "CREATE TABLE IF NOT EXISTS files (machine TEXT NOT NULL, store TEXT NOT NULL, "
    "digest BLOB NOT NULL, PRIMARY KEY (machine, store))")


def file_digest(store: str) -> bytes | None:
    """The content key of a whole single-file store: SHA-256 of the bytes of the file and of its
    ``-wal`` (where a live writer's commits sit until a checkpoint), read in 4 MiB blocks; every
    byte is read, so any change to any entry changes it (a rewrite that leaves the entries equal,
    e.g. ``VACUUM``, changes it too: then the per-entry keys decide). SHA-256 because it runs in
    hardware here (about 0.6 GB/s, BLAKE2b about 0.35). ``None`` for a URL, a directory, a file
    beside a hot ``-journal`` (an unfinished write) or one that cannot be read."""
    if "://" in store:
        return None
    base = Path(store).expanduser()
    if not base.is_file() or Path(f"{base}-journal").exists():
        return None
    h = hashlib.sha256()
    try:
        for path in (base, Path(f"{base}-wal")):
            if path is not base and not path.exists():
                continue
            with path.open("rb") as f:
                h.update(path.name.encode() if path is not base else b"")
                while block := f.read(4 << 20):
                    h.update(block)
    except OSError:
        return None
    return h.digest()


def file_signature(store: str) -> tuple[tuple[int, int, int] | None, ...] | None:
    """``(size, mtime_ns, inode)`` of the store file and of its ``-wal`` (``None`` where absent):
    taken before :func:`file_digest` and again after the run, equal ones tell that no writer
    changed the file meanwhile (so the digest is that of the bytes the rows were read from)."""
    if "://" in store:
        return None
    out: list[tuple[int, int, int] | None] = []
    for path in (Path(store).expanduser(), Path(f"{Path(store).expanduser()}-wal")):
        try:
            st = path.stat()
        except OSError:
            out.append(None)
            continue
        out.append((st.st_size, st.st_mtime_ns, st.st_ino))
    return tuple(out)


_RESUME_TABLE = (
    "CREATE TABLE IF NOT EXISTS resume (machine TEXT NOT NULL, store TEXT NOT NULL, "
    "thread TEXT NOT NULL, n INTEGER NOT NULL, state BLOB NOT NULL, "
    "PRIMARY KEY (machine, store, thread))")


_ROW_FIELDS = ("length", "verified", "mismatches", "first_mismatch", "explained", "unexplained",
               "missing", "error")


def _row_ok(row: Any, thread: str, n_digests: int) -> bool:
    """Whether a decoded row has the table's fields with their types (a damaged one is not)."""
    if not isinstance(row, dict) or set(row) != set(_ROW_FIELDS):
        return False
    ints = ("length", "mismatches", "explained", "unexplained", "missing")
    if not all(type(row[k]) is int and row[k] >= 0 for k in ints) or type(row["verified"]) is not bool:
        return False
    if row["first_mismatch"] is not None and type(row["first_mismatch"]) is not int:
        return False
    return (row["error"] is None or isinstance(row["error"], str)) and row["length"] == n_digests


class VerdictCache:
    """An open verdict cache file (see the module docstring). Use :meth:`open`."""

    def __init__(self, path: Path, conn: sqlite3.Connection | None) -> None:
        self.path = path
        self._conn = conn
        self._warned = False

    @property
    def usable(self) -> bool:
        """Whether the file is a verdict cache this version reads and writes."""
        return self._conn is not None

    @classmethod
    def open(cls, path: str | os.PathLike[str]) -> VerdictCache:
        """Open (or create) the cache at ``path``. A file that is not a verdict cache of this
        version gives an unusable cache (nothing read, nothing written) and a
        :class:`~agentscope.errors.CacheWarning` saying why."""
        p = Path(path)
        fresh = not p.exists() or p.stat().st_size == 0
        try:
            conn = sqlite3.connect(str(p), isolation_level=None)
        except sqlite3.Error as exc:
            return cls._ignored(p, f"cannot open it ({exc})")
        try:
            if fresh:  # one transaction, idempotent: verifies creating it at once all succeed
                with _transaction(conn):
                    names = {r[0] for r in conn.execute("SELECT name FROM sqlite_master")}
                    ours = ("meta", "verdicts", "resume", "files")
                    if names - {*ours, *(f"sqlite_autoindex_{t}_1" for t in ours)}:
                        raise sqlite3.DatabaseError("another database was created there")
                    conn.execute("CREATE TABLE IF NOT EXISTS meta "
                                 "(key TEXT PRIMARY KEY, value TEXT NOT NULL)")
                    conn.execute("CREATE TABLE IF NOT EXISTS verdicts (machine TEXT NOT NULL, "
                                 "store TEXT NOT NULL, thread TEXT NOT NULL, digests BLOB NOT NULL, "
                                 "row TEXT NOT NULL, PRIMARY KEY (machine, store, thread))")
                    conn.executemany("INSERT OR IGNORE INTO meta VALUES (?, ?)",
                                     [("format", FORMAT), ("version", VERSION)])
                    conn.execute(_RESUME_TABLE)
                    conn.execute(_FILES_TABLE)
            meta = dict(conn.execute("SELECT key, value FROM meta").fetchall())
            conn.execute("SELECT machine, store, thread, digests, row FROM verdicts LIMIT 0")
            if meta.get("format") == FORMAT and meta.get("version") == VERSION:
                conn.execute(_RESUME_TABLE)  # a file written before these two tables: added
                conn.execute(_FILES_TABLE)
        except sqlite3.Error as exc:
            conn.close()
            return cls._ignored(p, f"it is not a verdict cache ({exc})")
        if meta.get("format") != FORMAT or meta.get("version") != VERSION:
            conn.close()
            return cls._ignored(
                p, f"it is not a version-{VERSION} verdict cache (format {meta.get('format')!r}, "
                f"version {meta.get('version')!r})")
        return cls(p, conn)

    @classmethod
    def _ignored(cls, path: Path, why: str) -> VerdictCache:
        warnings.warn(f"verdict cache {path} ignored: {why}; verifying without it and leaving "
                      "the file as it is", CacheWarning, stacklevel=4)
        return cls(path, None)

    def get(self, machine: str, store: str, threads: Sequence[str]) -> dict[str, CachedRow]:
        """The cached rows of ``threads`` under ``machine`` and ``store`` (rows that cannot be
        decoded are left out, with one :class:`~agentscope.errors.CacheWarning`)."""
        out: dict[str, CachedRow] = {}
        if self._conn is None:
            return out
        wanted = set(threads)
        try:
            rows = self._conn.execute(
                "SELECT thread, digests, row FROM verdicts WHERE machine = ? AND store = ?",
                (machine, store),
            ).fetchall()
        except sqlite3.Error as exc:
            self._damaged(str(exc))
            return out
        for thread, digests, text in rows:
            if thread not in wanted:
                continue
            try:
                row = json.loads(text)
            except (TypeError, ValueError):
                row = None
            if not isinstance(digests, bytes) or len(digests) % DIGEST or not _row_ok(
                row, thread, len(digests) // DIGEST
            ):
                self._damaged(f"thread {thread!r} has a damaged row")
                continue
            out[thread] = CachedRow(digests, row)
        return out

    def saved_passes(self, machine: str, store: str, lengths: Mapping[str, int]) -> dict[str, bytes]:
        """The saved pass states (:class:`agentscope.pipeline.onepass.Resume`'s stored form) of
        the threads of ``lengths`` whose state covers exactly that many entries (those of their
        cached row). Opaque bytes: the reader decodes and checks them."""
        out: dict[str, bytes] = {}
        if self._conn is None or not lengths:
            return out
        try:
            rows = self._conn.execute(
                "SELECT thread, n, state FROM resume WHERE machine = ? AND store = ?",
                (machine, store)).fetchall()
        except sqlite3.Error as exc:
            self._damaged(str(exc))
            return out
        for thread, n, state in rows:
            if lengths.get(thread) == n and isinstance(state, bytes):
                out[thread] = state
        return out

    def file_rows(self, machine: str, store: str, digest: bytes, threads: Sequence[str]
                  ) -> dict[str, CachedRow] | None:
        """Every row of ``threads`` when the store file's content key (:func:`file_digest`) is
        ``digest``, the one recorded with rows of every thread of the store; else ``None``."""
        if self._conn is None:
            return None
        try:
            hit = self._conn.execute("SELECT 1 FROM files WHERE machine = ? AND store = ? AND digest = ?",
                                     (machine, store, digest)).fetchone()
        except sqlite3.Error as exc:
            self._damaged(str(exc))
            return None
        if hit is None:
            return None
        rows = self.get(machine, store, threads)
        return rows if len(rows) == len(set(threads)) else None

    def put(self, machine: str, store: str, rows: Mapping[str, CachedRow],
            passes: Mapping[str, bytes] | None = None, *, file: bytes | None = None) -> None:
        """Store ``rows`` (replacing those of the same key) and the saved pass state of each
        thread of ``passes`` (a row's thread without one loses its old state), in one
        transaction; ``file`` is the store file's content key when the rows now held are those
        of every thread of it (else any recorded one is dropped)."""
        if self._conn is None or (not rows and file is None):
            return
        passes = passes or {}
        try:
            with _transaction(self._conn):
                self._conn.execute("DELETE FROM files WHERE machine = ? AND store = ?", (machine, store))
                if file is not None:
                    self._conn.execute("INSERT INTO files VALUES (?, ?, ?)", (machine, store, file))
                self._conn.executemany(
                    "INSERT OR REPLACE INTO verdicts VALUES (?, ?, ?, ?, ?)",
                    [(machine, store, t, r.digests, json.dumps({k: r.row[k] for k in _ROW_FIELDS}))
                     for t, r in rows.items()],
                )
                self._conn.executemany(
                    "DELETE FROM resume WHERE machine = ? AND store = ? AND thread = ?",
                    [(machine, store, t) for t in rows if t not in passes])
                self._conn.executemany(
                    "INSERT OR REPLACE INTO resume VALUES (?, ?, ?, ?, ?)",
                    [(machine, store, t, len(rows[t].digests) // DIGEST, passes[t])
                     for t in rows if t in passes])
        except sqlite3.Error as exc:
            self._damaged(f"cannot write to it ({exc})")

    def _damaged(self, why: str) -> None:
        if not self._warned:
            warnings.warn(f"verdict cache {self.path}: {why}; those rows are verified again",
                          CacheWarning, stacklevel=4)
            self._warned = True

    def close(self) -> None:
        """Close the file (idempotent)."""
        conn, self._conn = self._conn, None
        if conn is not None:
            conn.close()


@contextlib.contextmanager
def _transaction(conn: sqlite3.Connection) -> Iterator[None]:
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")

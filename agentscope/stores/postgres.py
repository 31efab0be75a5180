"""A PostgreSQL event-log table (spec §5.2) as a read-only :class:`~agentscope.stores.Store`.

A source is a URL::

    postgresql://USER[:PASSWORD]@HOST[:PORT]/DB[?table=agent_event_log&schema=S
        &thread_col=thread_id&idx_col=idx&entry_col=entry&entry_id_col=entry_id
        &listen=CHANNEL][#THREAD]

By default the table has §5.2's layout: ``thread_id``, ``idx``, ``entry_id``, ``entry`` (one
JSON entry per row, keyed by ``(thread_id, idx)``). A host whose table differs names its columns
(:class:`Columns`, from the URL's ``*_col`` parameters or ``open_store(url, columns={...})``);
``entry`` may be ``text``/``varchar``, ``json`` or ``jsonb``, and a table without an
``entry_id`` column is read without that check. Any other query parameter goes to libpq
(``sslmode``, ``connect_timeout``, ``host=/run/postgresql`` for a Unix socket, …). A ``#THREAD``
fragment names a thread for the caller (:func:`agentscope.stores.split_thread`); the store
itself ignores it. The password (in the URL or a ``password=`` parameter) is used to connect
and is never printed: :attr:`PostgresStore.address`, ``repr``, errors and pages show the URL
without it.

What a column keeps. ``text`` and ``json`` keep every byte the host wrote
(``JSON.stringify(entry)``), so what is read is exactly what was recorded. ``jsonb`` stores a
parsed value and prints it back in its own form: key order (shortest key first) and spacing
change, which the state hash does not see (it is computed over the replayed snapshot); duplicate
keys collapse to the last one, as ``JSON.parse`` does; and it cannot hold what V8 can write in a
string: a lone surrogate (``"\\ud800"``) or ``"\\u0000"`` is rejected when the host inserts the
row (``unsupported Unicode escape sequence``), so such a log cannot be in a ``jsonb`` table at all.

How it reads. One connection per store (``psycopg`` 3, the ``postgres`` extra), every call in a
read-only transaction (``BEGIN READ ONLY``, and ``default_transaction_read_only`` on the session);
:meth:`PostgresStore.read` is a server-side cursor fetching :data:`~agentscope.stores.protocol.BATCH`
rows per round trip (one query per batch, memory bounded by a batch for a 10^6-entry thread);
:meth:`PostgresStore.threads` reads only the key columns plus each thread's first and last entry.
Follow polls ``idx`` (:meth:`~agentscope.stores.protocol.RowStore.changes`: one query from the
last index read); with ``listen=CHANNEL`` a follower's pause between polls ends at the host's
first ``NOTIFY CHANNEL`` (:meth:`PostgresStore.wait`).

Errors are one type, :class:`~agentscope.errors.StoreError` (``source`` is the address without
the password): a malformed URL or parameter, the driver missing (naming the extra), a refused
connection or failed login, a missing table (listing the tables found), a missing column (naming
the mapping parameter), an entry column of another type. A row whose entry is not JSON is a
:class:`~agentscope.errors.LogFormatError` naming the thread and ``idx``.
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, fields
from hashlib import blake2b
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qsl, unquote, urlencode, urlsplit, urlunsplit

from agentscope.errors import FollowProblem, StoreError, ThreadNotFoundError, UnreadableSourceError
from agentscope.log.rows import Record
from agentscope.stores.protocol import (
    BATCH,
    Change,
    Cursor,
    RowStore,
    ThreadInfo,
    display_address,
    sleep_for,
)

if TYPE_CHECKING:
    import psycopg

__all__ = ["DEFAULT_TABLE", "EXTRA", "Columns", "PgSource", "PostgresStore", "open_url", "parse_url"]

DEFAULT_TABLE = "agent_event_log"
"""§5.2's default table name."""

EXTRA = "pip install 'agentscope-timetravel[postgres]'"
"""How to install the driver (psycopg 3) when it is missing."""

ENTRY_TYPES = {"text": "text", "character varying": "text", "json": "json", "jsonb": "jsonb"}
"""The entry column types this store reads (``format_type`` without a length → kind)."""

_CURSORS = itertools.count()
"""Server-side cursor names are unique per store process (``agentscope_read_<n>``)."""

_OURS = {"table", "schema", "thread_col", "idx_col", "entry_col", "entry_id_col", "listen"}
_SCHEMES = ("postgresql", "postgres")


@dataclass(frozen=True, slots=True)
class Columns:
    """Which column holds what (§5.2 names by default). ``entry_id=None`` reads without the
    ``entry_id`` check (a table without one); the default ``"entry_id"`` is used only when the
    table has that column. Given as ``columns={"thread_id": …, "idx": …, "entry": …}`` or the URL's
    ``thread_col``/``idx_col``/``entry_col``/``entry_id_col``."""

    thread_id: str = "thread_id"
    idx: str = "idx"
    entry: str = "entry"
    entry_id: str | None = "entry_id"

    def parameter(self, name: str) -> str:
        """The URL parameter that sets field ``name`` (``thread_id`` → ``thread_col``)."""
        return "thread_col" if name == "thread_id" else f"{name}_col"


@dataclass(frozen=True, slots=True)
class PgSource:
    """A parsed ``postgresql://`` source: ``conninfo`` for libpq (secret: holds the password;
    never shown), ``address`` (display form, no password), the table, schema, column mapping and
    the ``#THREAD`` fragment."""

    conninfo: str
    address: str
    table: str
    schema: str | None
    columns: Columns
    thread: str | None
    secrets: tuple[str, ...]
    listen: str | None = None

    def __repr__(self) -> str:
        return f"PgSource({self.address!r})"

    def scrub(self, text: str) -> str:
        """``text`` with every secret of this source replaced by ``***``."""
        for secret in self.secrets:
            text = text.replace(secret, "***")
        return text


def parse_url(url: str, *, table: str | None = None, schema: str | None = None,
              columns: Mapping[str, Any] | None = None) -> PgSource:
    """Split a ``postgresql://`` URL into what libpq takes and what this store takes.

    ``table``/``schema``/``columns`` given as arguments win over the URL's parameters. Raises
    :class:`~agentscope.errors.StoreError` (the message never holds the password) for another
    scheme, a malformed port, an unknown mapping key, or an empty name.
    """
    try:
        parts = urlsplit(url)
        _ = parts.port  # validates the port
    except ValueError as exc:
        raise StoreError(f"not a usable postgresql:// URL ({_scrub_raw(str(exc), url)})",
                         source=display_address(url)) from None
    secrets = _secrets(url, parts)
    address = display_address(urlunsplit((parts.scheme, parts.netloc, parts.path, parts.query, "")))
    if parts.scheme.lower() not in _SCHEMES:
        raise StoreError(f"not a postgresql:// URL (scheme {parts.scheme!r})", source=address)
    ours: dict[str, str] = {}
    theirs: list[tuple[str, str]] = []
    for key, value in parse_qsl(parts.query, keep_blank_values=True):
        (ours.__setitem__(key, value) if key in _OURS else theirs.append((key, value)))
    mapping: dict[str, str | None] = {}
    for f in fields(Columns):
        param = Columns().parameter(f.name)
        if param in ours:
            mapping[f.name] = ours[param] or None
    for key, value in (columns or {}).items():
        if key not in {f.name for f in fields(Columns)}:
            raise StoreError(
                f"unknown column mapping key {key!r}; known: thread_id, idx, entry, entry_id",
                source=address)
        mapping[key] = value
    for key in ("thread_id", "idx", "entry"):
        if key in mapping and not mapping[key]:
            raise StoreError(f"the column mapping {Columns().parameter(key)} is empty", source=address)
    cols = Columns(**mapping)  # type: ignore[arg-type]
    name = table or ours.get("table") or DEFAULT_TABLE
    conninfo = urlunsplit((parts.scheme, parts.netloc, parts.path, urlencode(theirs), ""))
    return PgSource(conninfo=conninfo, address=address, table=name,
                    schema=schema or ours.get("schema") or None, columns=cols,
                    thread=unquote(parts.fragment) or None, secrets=secrets,
                    listen=ours.get("listen") or None)


def _secrets(url: str, parts: Any) -> tuple[str, ...]:
    found: list[str] = []
    netloc = parts.netloc
    if "@" in netloc:
        cred = netloc.rpartition("@")[0]
        if ":" in cred:
            raw = cred.partition(":")[2]
            found += [raw, unquote(raw)]
    for key, value in parse_qsl(parts.query, keep_blank_values=True):
        if key.lower() == "password":
            found += [value, unquote(value)]
    return tuple(sorted({s for s in found if s}, key=len, reverse=True))


def _scrub_raw(text: str, url: str) -> str:
    try:
        secrets = _secrets(url, urlsplit(url))
    except ValueError:
        secrets = ()
    for secret in secrets:
        text = text.replace(secret, "***")
    return text


def _driver() -> Any:
    try:
        import psycopg
    except ImportError:
        raise StoreError(
            f"reading a PostgreSQL store needs the driver psycopg 3, from the 'postgres' extra: {EXTRA}"
        ) from None
    return psycopg


class PostgresStore(RowStore):
    """The threads of one PostgreSQL event-log table (see the module docstring).

    Parameters
    ----------
    url : str
        ``postgresql://USER[:PASSWORD]@HOST[:PORT]/DB[?table=…&schema=…&thread_col=…]``.
    table, schema : str, optional
        Override the URL's ``table`` (default ``agent_event_log``) and ``schema`` (default: the
        server's ``search_path``).
    columns : Mapping, optional
        Column mapping (``thread_id``, ``idx``, ``entry``, ``entry_id``), over the URL's.

    Attributes
    ----------
    address : str
        The URL without its password (and without a ``#THREAD`` fragment).
    entry_type : str
        ``"text"``, ``"json"`` or ``"jsonb"``: what the entry column is (see the module docstring
        for what ``jsonb`` cannot hold).

    Raises
    ------
    StoreError
        See the module docstring; nothing is written to the database in any case.
    """

    kind = "postgresql"

    def __init__(self, url: str, *, table: str | None = None, schema: str | None = None,
                 columns: Mapping[str, Any] | None = None) -> None:
        self._src = parse_url(url, table=table, schema=schema, columns=columns)
        self.address = self._src.address
        self.table = self._src.table
        self.schema = self._src.schema
        self._conn: psycopg.Connection[Any] | None = None
        self._listener: psycopg.Connection[Any] | None = None
        self._connect()
        try:
            self._describe()
        except BaseException:
            self.close()
            raise

    def __repr__(self) -> str:
        return f"PostgresStore({self.address!r})"

    # -- connection and errors -------------------------------------------------------------

    def _error(self, exc: BaseException, doing: str) -> StoreError:
        detail = self._src.scrub(" ".join(str(exc).split()))
        return StoreError(f"{doing}: {detail}", source=self.address)

    def _new_connection(self) -> Any:
        """A connection whose every transaction is read-only (session default and ``BEGIN READ
        ONLY``)."""
        psycopg = _driver()
        try:
            conn = psycopg.connect(
                self._src.conninfo, autocommit=False, application_name="agentscope",
                options="-c default_transaction_read_only=on")
        except (psycopg.Error, ValueError) as exc:
            raise self._error(exc, "cannot connect to the PostgreSQL server") from None
        conn.read_only = True
        return conn

    def _connect(self) -> None:
        self._conn = self._new_connection()

    def _cursor_conn(self) -> Any:
        if self._conn is None or self._conn.closed:
            raise StoreError("the store is closed", source=self.address)
        return self._conn

    def _query(self, doing: str, query: Any, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        """One statement in its own read-only transaction; every row."""
        psycopg = _driver()
        conn = self._cursor_conn()
        try:
            with conn.transaction(), conn.cursor() as cur:
                cur.execute(query, params)
                return list(cur.fetchall())
        except psycopg.Error as exc:
            raise self._error(exc, doing) from None

    def close(self) -> None:
        """Close the connections (idempotent)."""
        for conn in (self._conn, self._listener):
            if conn is not None:
                conn.close()
        self._conn = self._listener = None

    def wait(self, timeout: float) -> bool:
        r"""See :meth:`agentscope.stores.protocol.Store.wait`. With ``listen=CHANNEL`` in the URL
        the store ``LISTEN``\ s on that channel (its own autocommit, read-only connection, opened
        on the first wait) and returns ``True`` at the first ``NOTIFY`` (any payload: the next
        poll reads whatever is new), ``False`` after ``timeout``; without it, it sleeps. A host
        that notifies after each append lets a follower poll rarely and still see entries at
        once; polling stays the truth (a missed notification only delays an entry)."""
        if self._src.listen is None:
            return sleep_for(timeout)
        psycopg = _driver()
        try:
            if self._listener is None:
                from psycopg import sql

                listener = self._new_connection()
                listener.autocommit = True
                listener.execute(sql.SQL("LISTEN {}").format(sql.Identifier(self._src.listen)))
                self._listener = listener
            got = False
            for _ in self._listener.notifies(timeout=max(timeout, 0.0), stop_after=1):
                got = True
            for _ in self._listener.notifies(timeout=0):  # drain: one poll reads them all
                pass
            return got
        except psycopg.Error as exc:
            raise self._error(exc, f"cannot listen on channel {self._src.listen!r}") from None

    # -- the table -------------------------------------------------------------------------

    def _describe(self) -> None:
        """Find the table and its columns; fix :attr:`entry_type` and the entry-id column."""
        from psycopg import sql

        where = sql.Identifier(self.schema, self.table) if self.schema else sql.Identifier(self.table)
        self._regclass = where.as_string(self._cursor_conn())
        oid = self._oid()
        qualified = f"{self.schema}.{self.table}" if self.schema else self.table
        if oid is None:
            found = sorted(f"{s}.{t}" if s != "public" else t for s, t in self._query(
                "cannot list the tables",
                "SELECT n.nspname, c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace"
                " WHERE c.relkind IN ('r', 'p', 'v', 'm', 'f') AND n.nspname <> 'information_schema'"
                " AND n.nspname NOT LIKE 'pg\\_%%'"))
            raise StoreError(
                f"no table {qualified} in the database; tables found: {found or 'none'} "
                "(name one with ?table=… and ?schema=…)", source=self.address)
        (readable,) = self._query("cannot check the table's privileges",
                                  "SELECT has_table_privilege(%s, 'SELECT')", (oid,))[0]
        if not readable:
            raise UnreadableSourceError(f"cannot read table {qualified}: Permission denied",
                                        source=self.address)
        have = dict(self._query(
            "cannot read the table's columns",
            "SELECT attname, format_type(atttypid, NULL) FROM pg_attribute"
            " WHERE attrelid = %s AND attnum > 0 AND NOT attisdropped ORDER BY attnum", (oid,)))
        cols = self._src.columns
        for name in ("thread_id", "idx", "entry"):
            col = getattr(cols, name)
            if col not in have:
                raise StoreError(
                    f"table {qualified} has no column {col!r} (the column mapping "
                    f"{cols.parameter(name)}={col}); its columns: {list(have)}", source=self.address)
        kind = ENTRY_TYPES.get(have[cols.entry])
        if kind is None:
            raise StoreError(
                f"column {cols.entry!r} of {qualified} is {have[cols.entry]}; the entry column must be "
                "text, varchar, json or jsonb", source=self.address)
        entry_id = cols.entry_id
        if entry_id is not None and entry_id not in have:
            if entry_id != Columns().entry_id:
                raise StoreError(
                    f"table {qualified} has no column {entry_id!r} (the column mapping "
                    f"entry_id_col={entry_id}); its columns: {list(have)}", source=self.address)
            entry_id = None
        self.entry_type = kind
        self._table_oid = oid
        self._qualified = qualified
        self._t = where
        self._thread = sql.Identifier(cols.thread_id)
        self._idx = sql.Identifier(cols.idx)
        self._entry = sql.Identifier(cols.entry)
        self._entry_id = sql.Identifier(entry_id) if entry_id else sql.SQL("NULL::text")

    def _oid(self) -> int | None:
        """The table's OID now (``None``: no such table): a dropped and re-created table has
        another one."""
        (oid,) = self._query("cannot look up the table", "SELECT to_regclass(%s)::oid", (self._regclass,))[0]
        return None if oid is None else int(oid)

    def _thread_ids(self) -> list[str]:
        return self.thread_ids()

    def _unknown(self, thread: str) -> ThreadNotFoundError:
        return ThreadNotFoundError(
            f"no thread {thread!r} in table {self._qualified}; available threads: {self._thread_ids()}",
            source=self.address)

    # -- the protocol ----------------------------------------------------------------------

    def threads(self) -> list[ThreadInfo]:
        """Every thread (``thread_id`` in code point order): count and ``recordedAt`` of its first
        and last entry, from one query over the key columns (the two end rows by key)."""
        from psycopg import sql

        from agentscope.log.entry import recorded_at_text
        from agentscope.log.validate import loads

        rows = self._query("cannot list the threads", sql.SQL(
            "WITH k AS (SELECT {th} AS th, count(*) AS n, min({ix}) AS lo, max({ix}) AS hi"
            " FROM {t} GROUP BY 1)"
            " SELECT k.th, k.n, f.{e}::text, l.{e}::text FROM k"
            " LEFT JOIN {t} f ON f.{th} = k.th AND f.{ix} = k.lo"
            ' LEFT JOIN {t} l ON l.{th} = k.th AND l.{ix} = k.hi ORDER BY k.th COLLATE "C"').format(
            th=self._thread, ix=self._idx, e=self._entry, t=self._t))

        def at(text: str | None) -> str | None:
            try:
                value = loads(text) if text is not None else None
            except ValueError:
                return None
            return recorded_at_text(value) if isinstance(value, dict) else None

        return [ThreadInfo(th, int(n), at(first), at(last)) for th, n, first, last in rows]

    def length(self, thread: str) -> int:
        """``count(*)`` of the thread's rows (§5.2 ``length``)."""
        from psycopg import sql

        (n,) = self._query("cannot count the thread's rows", sql.SQL(
            "SELECT count(*) FROM {t} WHERE {th} = %s").format(t=self._t, th=self._thread), (thread,))[0]
        if n == 0:
            raise self._unknown(thread)
        return int(n)

    def read(self, thread: str, from_: int = 0) -> Iterator[list[Record]]:
        """Records ``idx >= from_`` in ``idx`` order, :data:`~agentscope.stores.protocol.BATCH` per
        batch from a server-side cursor in one read-only transaction (one consistent snapshot;
        one round trip per batch)."""
        from psycopg import sql

        psycopg = _driver()
        own = self._cursor_conn()
        # a read still open on the store's connection (a generator not yet exhausted) keeps its
        # transaction; another read meanwhile gets a connection of its own
        idle = own.info.transaction_status == psycopg.pq.TransactionStatus.IDLE
        conn = own if idle else self._new_connection()
        query = sql.SQL(
            "SELECT {ix}, {e}::text, {eid} FROM {t} WHERE {th} = %s AND {ix} >= %s ORDER BY {ix}").format(
            ix=self._idx, e=self._entry, eid=self._entry_id, t=self._t, th=self._thread)
        first = True
        try:
            with conn.transaction(), conn.cursor(name=f"agentscope_read_{next(_CURSORS)}",
                                                 scrollable=False, withhold=False) as cur:
                cur.itersize = BATCH
                cur.execute(query, (thread, from_))
                while True:
                    rows = cur.fetchmany(BATCH)
                    if not rows:
                        break
                    first = False
                    yield [Record(int(i), text, eid) for i, text, eid in rows]
        except psycopg.Error as exc:
            raise self._error(exc, f"cannot read thread {thread!r}") from None
        finally:
            if conn is not own:
                conn.close()
        if first and not self._query("cannot look up the thread", sql.SQL(
                "SELECT 1 FROM {t} WHERE {th} = %s LIMIT 1").format(t=self._t, th=self._thread), (thread,)):
            raise self._unknown(thread)


    def thread_ids(self) -> list[str]:
        """``SELECT DISTINCT`` of the thread column in code point order (one query over the key
        column; never an entry)."""
        from psycopg import sql

        rows = self._query("cannot list the threads", sql.SQL(
            'SELECT DISTINCT {th} COLLATE "C" FROM {t} ORDER BY 1').format(th=self._thread, t=self._t))
        return [r[0] for r in rows]

    def digests(self, threads: Iterable[str]) -> Iterator[tuple[str, list[bytes]]]:
        """See :meth:`~agentscope.stores.protocol.RowStore.digests`: one query for every thread
        (``thread = ANY(…)``, in ``(thread, idx)`` order, one read-only transaction: one
        consistent snapshot), the entry column's text (``entry::text``, what :meth:`read` gives)
        received as its UTF-8 bytes and hashed as they come, no record built.

        Raises
        ------
        ThreadNotFoundError
            A thread has no row.
        StoreError
            The query fails.
        """
        from psycopg import sql
        order = list(threads)
        keys: dict[str, list[bytes]] = {t: [] for t in order}
        psycopg = _driver()
        conn = self._cursor_conn()
        query = sql.SQL("SELECT {th}, {e}::text FROM {t} WHERE {th} = ANY(%s) ORDER BY {th}, {ix}").format(
            th=self._thread, e=self._entry, t=self._t, ix=self._idx)
        b2 = blake2b
        try:
            with conn.transaction(), conn.cursor(name=f"agentscope_digests_{next(_CURSORS)}",
                                                 scrollable=False, withhold=False) as cur:
                cur.adapters.register_loader("text", _raw_text_loader())  # the bytes, never decoded
                cur.itersize = BATCH
                cur.execute(query, (list(keys),))
                raw: Any = None
                current: list[bytes] = []
                while rows := cur.fetchmany(BATCH):
                    for th, data in rows:
                        if th != raw:
                            raw = th
                            current = keys[th.decode() if isinstance(th, bytes) else th]
                        current.append(b2(data, digest_size=16).digest())
        except psycopg.Error as exc:
            raise self._error(exc, "cannot read the threads' entries") from None
        for thread in order:
            if not keys[thread]:
                raise self._unknown(thread)
            yield thread, keys[thread]

    def changes(self, thread: str, cursor: Cursor) -> Change:
        """See :meth:`agentscope.stores.protocol.Store.changes`: polls ``idx`` (one query from the
        last index read, :meth:`~agentscope.stores.protocol.RowStore.changes`) after a catalog
        look-up of the table: dropped since the store was opened is a ``removed`` problem,
        dropped and created again (another OID) a ``replaced`` one."""
        source = self.thread_source(thread)
        oid = self._oid()
        if oid is None:
            return Change([], cursor, FollowProblem(
                "removed", None, f"table {self._qualified} was dropped after it was read", source))
        if oid != self._table_oid:
            return Change([], cursor, FollowProblem(
                "replaced", None, f"table {self._qualified} was replaced (dropped and created again) "
                "after it was read", source))
        return super().changes(thread, cursor)


@functools.cache
def _raw_text_loader() -> Any:
    """A psycopg loader giving a ``text`` value as the bytes the server sent (UTF-8), undecoded."""
    from psycopg.adapt import Loader

    class RawText(Loader):
        def load(self, data: Any) -> bytes:
            return bytes(data)

    return RawText


def open_url(address: str, *, table: str | None = None, columns: Mapping[str, Any] | None = None,
             schema: str | None = None, **options: Any) -> PostgresStore:
    """Open a ``postgresql://`` URL as a :class:`PostgresStore` (the :data:`agentscope.stores.SCHEMES`
    entry). Raises :class:`~agentscope.errors.StoreError` for an option it does not take."""
    if options:
        raise StoreError(f"unknown option(s) for a PostgreSQL store: {sorted(options)}",
                         source=display_address(address))
    return PostgresStore(address, table=table, schema=schema, columns=columns)


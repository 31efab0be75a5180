"""Fast path for large JSONL logs (tech-eval §5): envelope columns with pyarrow, payloads raw.

The bytes of a JSONL log of an Era-C shape are read twice, both times in C without the GIL:

- one RE2 search (run by pyarrow, on a worker thread) looks for what Arrow cannot judge
  (``_DISQUALIFY``): ``NaN`` and ``Infinity`` tokens and ``-0`` literals (Arrow accepts them in
  ignored fields); literals a double cannot hold (``JSON.parse`` reads ±Infinity, or ``-0`` for
  a negative one that underflows); an explicit ``null`` in an optional envelope field (Arrow
  reads ``null`` and absence alike): any ``"causationId"``, ``"metadata"`` or ``"verification"``
  key followed by ``null`` anywhere in the text (a payload's own such key only costs the exact
  reader); a blank line or two objects on one line (so that rows and lines are one to one);
- meanwhile pyarrow's JSON reader parses it on the calling thread, one block of
  :data:`BLOCK_BYTES` after the other, with an explicit schema for the envelope fields only (the
  payloads are parsed for syntax but never converted, so their type drift between entries does
  not matter). Arrow itself refuses invalid JSON, invalid UTF-8, lone surrogate escapes and a
  value of the wrong JSON type.

Every §1.2/§1.3 rule is then checked on the Arrow columns of the whole log. So the whole file is
never parsed at once: the peak is the bytes, the envelope columns and one block in flight.

The fast path only ever *accepts*: whenever a check fails, pyarrow raises, or a test is
inconclusive (e.g. a payload has its own ``"metadata": null``), it returns ``None`` and the exact
line-by-line reader runs instead, which finds and reports the problem with its place. So the
result is the same as the exact reader's, only faster, and the log is marked validated (it is
never checked again). Payloads stay in the one buffer of bytes read: entries are parsed with
orjson (cyclic GC paused) the first time :attr:`EventLog.entries` is used; :attr:`EventLog.df`
is built from the Arrow columns, and its ``event``/``metadata`` cells are :class:`LazyPayload`
mappings (an entry number, no bytes of their own) that parse their line on first use. One
exception to "only accepts": a line nested deeper than ``agentscope._deep.MAX_DEPTH`` cannot be
seen up front cheaply, so it raises :class:`LogFormatError` (with its entry, line, field and
the limit) when it is first parsed, not from ``read_log``.
"""

from __future__ import annotations

import gc
import json
from collections.abc import Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from itertools import repeat
from typing import TYPE_CHECKING, Any

import numpy as np

from agentscope._deep import json_depth_path, short_pointer
from agentscope.errors import LogFormatError
from agentscope.log.model import EventLog, Segment, build_entries_frame, recorded_at_series
from agentscope.log.validate import (
    AGENT_INIT_EVENT_TYPE,
    RECORDED_AT_PATTERN,
    TOO_DEEP,
    entry_problem,
    loads,
)

if TYPE_CHECKING:
    import pandas as pd
    import pyarrow as pa

__all__ = ["BLOCK_BYTES", "FAST_MIN_BYTES", "LazyPayload", "try_fast_jsonl"]

FAST_MIN_BYTES = 1 << 20
"""Below this size the exact reader is fast enough and is used directly."""

BLOCK_BYTES = 1 << 20
"""Bytes per block of the scan (a block ends at a newline; a longer line is one block)."""

# Any match sends the log to the exact reader. RE2 syntax, run by pyarrow (no GIL), one pass:
# - NaN/Infinity tokens and a -0 literal (-0, -0.0, -0e5);
# - a negative literal that may underflow to -0 (a 3-digit negative exponent, or 200+ zeros
#   after "-0.": with at most 99 in the exponent, anything else is >= 1e-300);
# - a literal that may overflow a double (a 3-digit positive exponent or an integer part of 200+
#   digits: with at most 99 in the exponent anything else is < 1e300);
# - an explicit ``null`` in an optional envelope field (Arrow reads it as absent), also under a key
#   written with ``\uXXXX`` escapes (``"causation\u0049d"`` is ``causationId`` to both parsers):
#   any key of letters and escapes followed by ``null``;
# - two objects on one line, or a blank line: then rows and lines are one to one (Arrow refuses
#   a line holding anything else but ``null``, whose all-null row fails the checks).
# Number patterns end at a delimiter, so strings like hex hashes ('a3e7890f') do not match.
_DISQUALIFY = (
    r"NaN|Infinity"
    r"|-0(?:\.0*)?(?:[eE][+-]?[0-9]+)?[ \t\r\n]*[,\]}]"
    r"|-(?:0\.0{200}|[0-9][0-9.]*[eE]-[0-9]{3})"
    r"|[0-9](?:[eE]\+?[0-9]{3}|[0-9]{199})[0-9.eE+-]*[ \t\r\n]*[,\]}]"
    r"|\x22(?:causationId|metadata|verification)\x22[ \t\r\n]*:[ \t\r\n]*null"
    r"|\x22[A-Za-z]*\\u[0-9A-Fa-f]{4}[A-Za-z0-9\\]*\x22[ \t\r\n]*:[ \t\r\n]*null"
    r"|\}[ \t\r]*\{|\A[ \t\r]*\n|\n[ \t\r]*\n"
)


def _schema() -> pa.Schema:
    import pyarrow as pa

    return pa.schema(
        [
            ("schemaVersion", pa.float64()),
            ("id", pa.string()),
            ("index", pa.float64()),
            ("recordedAt", pa.string()),
            ("machineId", pa.string()),
            ("machineVersion", pa.string()),
            ("event", pa.struct([("type", pa.string())])),
            ("causationId", pa.string()),
            ("metadata", pa.struct([])),
            ("verification", pa.struct([("stateHash", pa.string())])),
        ]
    )


class _Lines:
    """Byte offsets of the non-blank lines of ``data``, computed on first use."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self._starts: np.ndarray[Any, np.dtype[np.int64]] | None = None
        self._ends: np.ndarray[Any, np.dtype[np.int64]] | None = None

    def _compute(self) -> None:
        buf = np.frombuffer(self.data, dtype=np.uint8)
        chunk = 1 << 24
        parts = [
            np.flatnonzero(buf[i : i + chunk] == 10).astype(np.int64) + i
            for i in range(0, len(buf), chunk)
        ]
        nl = np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)
        starts = np.concatenate([np.zeros(1, dtype=np.int64), nl + 1])
        ends = np.concatenate([nl, np.array([len(buf)], dtype=np.int64)])
        keep = ends - starts > 0
        starts, ends = starts[keep], ends[keep]
        # drop whitespace-only lines (rare; checked one by one)
        short = np.flatnonzero(ends - starts < 4)
        blank = [i for i in short if not self.data[starts[i] : ends[i]].strip()]
        if blank:
            mask = np.ones(len(starts), dtype=bool)
            mask[blank] = False
            starts, ends = starts[mask], ends[mask]
        self._starts, self._ends = starts, ends

    def line(self, i: int) -> bytes:
        if self._starts is None:
            self._compute()
        assert self._starts is not None and self._ends is not None
        return self.data[int(self._starts[i]) : int(self._ends[i])]


def _parse_line(raw: bytes, i: int = 0, source: str | None = None) -> Any:
    """Parse line ``i`` (entry ``i``; the fast path has no blank lines).

    Raises
    ------
    LogFormatError
        Only for a line nested deeper than ``MAX_DEPTH`` (the one thing the fast path's checks
        cannot see up front), naming the entry, line, field and the limit.
    """
    import orjson

    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError:  # a lone surrogate escape (JSON.parse accepts it), > 1,024 levels
        try:
            value = loads(raw)
        except json.JSONDecodeError as exc:
            raise LogFormatError(
                f"invalid JSON on this line: {exc.msg}", source=source, index=i, line=i + 1
            ) from None
    where = json_depth_path(value)  # the exact reader's rule (validate.entry_problem)
    if where is not None:
        raise LogFormatError(
            f"Agent event entry: {TOO_DEEP}.", source=source, index=i, line=i + 1,
            field=short_pointer(where).strip("/").replace("/", ".") or None,
        )
    return value


class _Source:
    __slots__ = ("lines", "log")

    def __init__(self, log: EventLog, lines: _Lines) -> None:
        self.log = log
        self.lines = lines


class LazyPayload(Mapping[str, Any]):
    """A read-only mapping standing for ``entry["event"]`` of one line, parsed on first use.

    It holds the entry number and the log's shared source, no bytes of its own. Compares equal
    to the dict it stands for. If the log's entries have been materialised it reads from them,
    so both views show the same objects.
    """

    __slots__ = ("_i", "_src", "_value")
    _key = "event"

    def __init__(self, src: _Source, i: int) -> None:
        self._src = src
        self._i = i  # ``_value`` is set on first use: one object per row is built with two stores

    def _get(self) -> dict[str, Any]:
        try:
            return self._value
        except AttributeError:
            pass
        src, i = self._src, self._i
        entries = src.log._entries
        entry = entries[i] if entries is not None else _parse_line(src.lines.line(i), i, src.log.source)
        value = entry.get(self._key)
        self._value: dict[str, Any] = value if isinstance(value, dict) else {}
        return self._value

    def __getitem__(self, key: str) -> Any:
        return self._get()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._get())

    def __len__(self) -> int:
        return len(self._get())

    def __repr__(self) -> str:
        return repr(self._get())


class _LazyMetadata(LazyPayload):
    """:class:`LazyPayload` for ``entry["metadata"]``."""

    __slots__ = ()
    _key = "metadata"


def _spans(data: bytes, size: int) -> list[tuple[int, int]]:
    """``[start, stop)`` ranges of about ``size`` bytes covering ``data``, each ending at a newline
    (the last one at the end of ``data``)."""
    spans = []
    start, end = 0, len(data)
    while start < end:
        cut = data.rfind(b"\n", start, start + size) if start + size < end else end - 1
        if cut < start:  # a line longer than ``size``
            cut = data.find(b"\n", start + size)
            if cut < 0:
                cut = end - 1
        spans.append((start, cut + 1))
        start = cut + 1
    return spans


def _parse(buffer: pa.Buffer, block_size: int) -> pa.Table | None:
    """The envelope columns of the lines in ``buffer``, parsed by Arrow one block of
    ``block_size`` bytes after the other on this thread; ``None`` when Arrow refuses them.

    Raises
    ------
    pyarrow.ArrowInvalid
        Only when a line is longer than ``block_size`` ("straddling object").
    """
    import pyarrow as pa
    import pyarrow.json as pj

    try:
        return pj.read_json(
            pa.BufferReader(buffer),
            read_options=pj.ReadOptions(use_threads=False, block_size=block_size),
            parse_options=pj.ParseOptions(
                explicit_schema=_schema(), unexpected_field_behavior="ignore", newlines_in_values=False
            ),
        )
    except pa.ArrowInvalid as exc:
        if "straddl" in str(exc):
            raise
        return None
    except (pa.ArrowNotImplementedError, pa.ArrowTypeError):
        return None


def _parse_spans(data: bytes, whole: pa.Buffer) -> pa.Table | None:
    """:func:`_parse` for a log with a line longer than a block: each newline-aligned span of
    about :data:`BLOCK_BYTES` (a long line is one span) is parsed as one block."""
    import pyarrow as pa

    tables = []
    for start, stop in _spans(data, BLOCK_BYTES):
        table = _parse(whole.slice(start, stop - start), stop - start + 1)
        if table is None:
            return None
        tables.append(table)
    return pa.concat_tables(tables)


def _disqualified(whole: pa.Buffer) -> bool:
    """Whether the text holds something only the exact reader can judge (``_DISQUALIFY``): one
    RE2 search over the whole buffer (one DFA, built once), without the GIL."""
    import pyarrow as pa
    import pyarrow.compute as pc

    offsets = pa.py_buffer(np.array([0, whole.size], dtype=np.int64).tobytes())
    text = pa.LargeBinaryArray.from_buffers(pa.large_binary(), 1, [None, offsets, whole])
    # find_ (first match or -1) measured ~15% faster than match_substring_regex on this pattern
    return bool(pc.find_substring_regex(text, _DISQUALIFY)[0].as_py() >= 0)


def _scan(data: bytes) -> pa.Table | None:
    """The envelope columns of ``data``, or ``None`` when the exact reader is needed.

    The RE2 search runs on a worker thread while this one parses (Arrow reads block after
    block, so one block's parse is in flight; measured: parsing on two threads costs more CPU
    time than it saves wall time on a busy machine, and holds more memory).
    """
    import pyarrow as pa

    whole = pa.py_buffer(data)
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="agentscope-scan") as pool:
        search = pool.submit(_disqualified, whole)
        try:
            table = _parse(whole, BLOCK_BYTES)
        except pa.ArrowInvalid:  # a line longer than a block
            table = _parse_spans(data, whole)
        # leaving the block waits for the search (one pass, no GIL)
        return None if table is None or search.result() else table


def _all_nonempty(col: pa.ChunkedArray) -> bool:
    """No nulls and no empty strings."""
    import pyarrow.compute as pc

    return col.null_count == 0 and (len(col) == 0 or pc.min(pc.binary_length(col)).as_py() > 0)


def _unique_ids(ids: pa.ChunkedArray) -> bool:
    """Whether ``ids`` has no duplicates: at once when they are strictly increasing (counters,
    ULIDs, UUIDv7, timestamps), else by hashing."""
    import pyarrow.compute as pc

    n = len(ids)
    if n < 2 or pc.all(pc.less(ids.slice(0, n - 1), ids.slice(1))).as_py():
        return True
    return bool(pc.count_distinct(ids).as_py() == n)


def _sorted_codes(column: pa.ChunkedArray) -> tuple[np.ndarray[Any, Any], pa.Array]:
    """``(codes, categories)`` of a string column without nulls: its distinct values sorted as
    ``Series.astype("category")`` sorts them (by code point), and each row's position in them."""
    import pyarrow.compute as pc

    first = column[0]
    if pc.all(pc.equal(column, first)).as_py():  # one value (machineId, machineVersion)
        return np.zeros(len(column), dtype=np.int8), pc.unique(column.slice(0, 1))
    encoded = pc.dictionary_encode(column.combine_chunks())  # one hash pass
    order = pc.sort_indices(encoded.dictionary).to_numpy()
    rank = np.empty(len(order), dtype=np.int32)
    rank[order] = np.arange(len(order), dtype=np.int32)
    return rank[encoded.indices.to_numpy()], encoded.dictionary.take(order)


def try_fast_jsonl(data: bytes, *, source: str | None) -> EventLog | None:
    """Read a large, valid Era-C JSONL log quickly; ``None`` when the exact reader must decide.

    See the module docstring for what is checked and how. Never raises for bad input.
    """
    if len(data) < FAST_MIN_BYTES or data.startswith(b"\xef\xbb\xbf"):
        return None
    try:
        import pyarrow.compute as pc
    except ImportError:  # pragma: no cover - pyarrow is a dependency
        return None
    table = _scan(data)
    if table is None:
        return None
    n = table.num_rows
    if n == 0:
        return None
    col = table.column
    version, index = col("schemaVersion"), col("index")
    if version.null_count or not (version.to_numpy() == 1.0).all():
        return None
    if index.null_count or not np.array_equal(index.to_numpy(), np.arange(n, dtype=np.float64)):
        return None
    ids = col("id")
    if not _all_nonempty(ids):
        return None
    recorded = col("recordedAt")
    if recorded.null_count or not pc.all(
        pc.match_substring_regex(recorded, "^" + RECORDED_AT_PATTERN + "$")
    ).as_py():
        return None
    event = col("event")
    if event.null_count:
        return None
    event_type = pc.struct_field(event, "type")
    if not _all_nonempty(event_type):
        return None
    causation = col("causationId")
    if causation.null_count < n and not _all_nonempty(causation.drop_null()):
        return None
    verification = col("verification")
    state_hash = pc.struct_field(verification, "stateHash")  # null where verification is
    if state_hash.null_count != verification.null_count or (
        state_hash.null_count < n and not _all_nonempty(state_hash.drop_null())
    ):
        return None
    type_codes, types = _sorted_codes(event_type)
    init = types.index(AGENT_INIT_EVENT_TYPE).as_py()
    if init < 0 or type_codes[0] != init or np.count_nonzero(type_codes == init) != 1:
        return None
    machine_id, machine_version = col("machineId"), col("machineVersion")
    if not (_all_nonempty(machine_id) and _all_nonempty(machine_version) and _unique_ids(ids)):
        return None
    # entry 0 exactly (it decides the bridge exemption and carries executionId)
    end = data.find(b"\n")
    line0 = data[: end if end >= 0 else len(data)]
    try:
        if entry_problem(loads(line0), index=0, source=source) is not None:
            return None
        first = _parse_line(line0)
    except (json.JSONDecodeError, LogFormatError):
        return None
    bridge = "snapshot" in first["event"]
    ref = 1 if bridge and n > 1 else 0  # §1.3: a bridge init's machineVersion is exempt
    id_codes, machine_ids = _sorted_codes(machine_id)
    version_codes, machine_versions = _sorted_codes(machine_version)
    checked_versions = version_codes[1:] if bridge else version_codes
    if len(machine_ids) != 1 or np.count_nonzero(checked_versions != version_codes[ref]):
        return None
    ref_id, ref_version = machine_ids[0].as_py(), machine_versions[int(version_codes[ref])].as_py()

    meta = first.get("metadata")
    execution_id = meta.get("executionId") if isinstance(meta, dict) else None
    migrated = meta.get("migratedFrom") if isinstance(meta, dict) else None
    summary = {
        "execution_id": execution_id if isinstance(execution_id, str) else None,
        "machine_id": ref_id,
        "machine_versions": (ref_version,),
        "segments": (
            Segment(0, n, ref_id, ref_version, bridge, migrated if isinstance(migrated, dict) else None),
        ),
    }

    def load_entries() -> list[dict[str, Any]]:
        import orjson

        frozen = gc.isenabled()
        gc.disable()
        try:
            out: list[dict[str, Any]] = []
            append = out.append
            for i, raw in enumerate(data.split(b"\n")):
                if not raw.strip():
                    continue
                try:
                    append(orjson.loads(raw))
                except orjson.JSONDecodeError:
                    append(_parse_line(raw, i, source))
            return out
        finally:
            if frozen:
                gc.enable()

    # every entry passed §1.2 and the log §1.3 (without a machine), as the exact reader's would
    log = EventLog(load_entries, source=source, era="C", length=n, summary=summary, validated=True)
    codes = {
        "machine_id": (id_codes, machine_ids),
        "machine_version": (version_codes, machine_versions),
        "event_type": (type_codes, types),
    }
    log._frame_builder = lambda: _frame_from_table(table, log, _Lines(data), codes)
    return log


def _recorded_at(column: Any) -> pd.Series:
    """``recordedAt`` strings to datetime64[ns, UTC]: Arrow's ISO-8601 cast, with the exact
    V8 reading (§1.4: day overflow, ``24:00``, years outside the ns range) for any value Arrow
    rejects."""
    import pandas as pd
    import pyarrow as pa
    import pyarrow.compute as pc

    try:
        ns = pc.cast(column, pa.timestamp("ns", tz="UTC"))
        return pd.Series(ns.to_pandas(), dtype="datetime64[ns, UTC]").reset_index(drop=True)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return recorded_at_series(column.to_pylist())[0]


def _frame_from_table(
    table: pa.Table, log: EventLog, lines: _Lines, codes: Mapping[str, tuple[np.ndarray[Any, Any], pa.Array]]
) -> pd.DataFrame:
    """:attr:`EventLog.df` from the envelope columns through the one builder
    (:func:`~agentscope.log.model.build_entries_frame`); payload cells are :class:`LazyPayload`."""
    import pandas as pd
    import pyarrow.compute as pc

    n = table.num_rows
    col = table.column

    string: Any = pd.StringDtype()  # what dtype="string" means here (pyarrow storage on pandas 3)

    def text(array: Any) -> Any:
        values = pd.arrays.ArrowStringArray(array)  # zero-copy
        return values if values.dtype == string else values.astype(string)

    def category(name: str) -> pd.Series:
        row_codes, categories = codes[name]
        dtype = pd.CategoricalDtype(pd.Index(text(categories)))
        return pd.Series(pd.Categorical.from_codes(row_codes, dtype=dtype))

    src = _Source(log, lines)
    has_metadata = np.flatnonzero(pc.is_valid(col("metadata")).to_numpy(zero_copy_only=False))
    # numpy/pandas would treat a Mapping as a sequence (and parse it) in a bulk assignment of a
    # list: the cells go in through object arrays
    frozen = gc.isenabled()
    gc.disable()
    try:
        events = np.fromiter(map(LazyPayload, repeat(src, n), range(n)), dtype=object, count=n)
        metas = np.full(n, None, dtype=object)
        metas[has_metadata] = np.fromiter(
            map(_LazyMetadata, repeat(src), has_metadata.tolist()), dtype=object, count=len(has_metadata)
        )
    finally:
        if frozen:
            gc.enable()
    return build_entries_frame(columns={  # the one builder; every column here is in its dtype
        "index": pd.Series(np.arange(n, dtype=np.int64)),
        "id": pd.Series(text(col("id"))),
        "recorded_at": _recorded_at(col("recordedAt")),
        "machine_id": category("machine_id"),
        "machine_version": category("machine_version"),
        "event_type": category("event_type"),
        "causation_id": pd.Series(text(col("causationId"))),
        "state_hash": pd.Series(text(pc.struct_field(col("verification"), "stateHash"))),
        "event": pd.Series(events, dtype="object"),
        "metadata": pd.Series(metas, dtype="object"),
    })

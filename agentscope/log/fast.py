"""Fast path for large JSONL logs (tech-eval §5): envelope columns with pyarrow, payloads raw.

A JSONL log of an Era-C shape is first read with pyarrow's JSON reader and an explicit schema
for the envelope fields only (the payloads are parsed for syntax but never converted, so their
type drift between entries does not matter). Every §1.2/§1.3 rule is then checked on the Arrow
columns. Rules pyarrow cannot see are covered by byte-level tests on the raw text:

- ``NaN``/``Infinity`` tokens and ``-0`` literals (pyarrow accepts them in ignored fields);
- ``null`` in an optional envelope field (Arrow reads ``null`` and absence alike): any
  ``"causationId"``, ``"metadata"`` or ``"verification"`` key followed by ``null`` anywhere in the
  text (a payload's own such key only costs the exact reader); Arrow itself refuses a key given
  twice in a row and a value of the wrong JSON type;
- Era-B markers (``"correlationId"``, ``"effectsHash"``).

The fast path only ever *accepts*: whenever a check fails, pyarrow raises, or a test is
inconclusive (e.g. a payload has its own ``"metadata": null``), it returns ``None`` and the exact
line-by-line reader runs instead, which finds and reports the problem with its place. So the
result is the same as the exact reader's, only faster. Entries are parsed with orjson (cyclic GC
frozen) the first time :attr:`EventLog.entries` is used; :attr:`EventLog.df` is built from the
Arrow columns, and its ``event``/``metadata`` cells are :class:`LazyPayload` mappings that parse
their own line on first use. One exception to "only accepts": a line nested deeper than
``agentscope._deep.MAX_DEPTH`` cannot be seen up front cheaply, so it raises
:class:`LogFormatError` (with its entry, line, field and the limit) when it is first parsed, not
from ``read_log``.
"""

from __future__ import annotations

import gc
import json
from collections.abc import Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

import numpy as np

from agentscope._deep import json_depth_path, short_pointer
from agentscope.errors import LogFormatError
from agentscope.log.model import DF_COLUMNS, EventLog, Segment, recorded_at_series
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

__all__ = ["FAST_MIN_BYTES", "LazyPayload", "try_fast_jsonl"]

FAST_MIN_BYTES = 1 << 20
"""Below this size the exact reader is fast enough and is used directly."""

# Any match sends the log to the exact reader: NaN/Infinity tokens, a -0 literal, a literal
# that may overflow a double (a 3-digit positive exponent or 309+ digits: JSON.parse reads
# ±Infinity), Era-B keys, a blank line (which would upset the row-count check), an explicit
# ``null`` in an optional envelope field (Arrow reads it as absent). RE2 syntax, run
# by pyarrow (no GIL).
_DISQUALIFY = (
    r"NaN|Infinity|\x22correlationId\x22|\x22effectsHash\x22"
    r"|-0(?:\.0*)?(?:[eE][+-]?[0-9]+)?[ \t\r\n]*[,\]}]|\n[ \t\r]*\n"
    r"|[0-9](?:[eE]\+?[0-9]{3,}|[0-9]{308}[0-9.eE+-]*)[ \t\r\n]*[,\]}]"
    r"|\x22(?:causationId|metadata|verification)\x22[ \t\r\n]*:[ \t\r\n]*null"
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
    """A read-only mapping standing for ``entry[key]`` of one line, parsed on first use.

    Compares equal to the dict it stands for. If the log's entries have been materialised it
    reads from them, so both views show the same objects.
    """

    __slots__ = ("_i", "_key", "_src", "_value")

    def __init__(self, src: _Source, i: int, key: str) -> None:
        self._src = src
        self._i = i
        self._key = key
        self._value: dict[str, Any] | None = None

    def _get(self) -> dict[str, Any]:
        if self._value is None:
            entries = self._src.log._entries
            src = self._src
            entry = (
                entries[self._i]
                if entries is not None
                else _parse_line(src.lines.line(self._i), self._i, src.log.source)
            )
            value = entry.get(self._key)
            self._value = value if isinstance(value, dict) else {}
        return self._value

    def __getitem__(self, key: str) -> Any:
        return self._get()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._get())

    def __len__(self) -> int:
        return len(self._get())

    def __repr__(self) -> str:
        return repr(self._get())




def _disqualified(data: bytes) -> bool:
    """Whether ``data`` holds a token the fast path cannot judge (see ``_DISQUALIFY``)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    offsets = pa.py_buffer(np.array([0, len(data)], dtype=np.int64).tobytes())
    whole = pa.LargeBinaryArray.from_buffers(pa.large_binary(), 1, [None, offsets, pa.py_buffer(data)])
    return bool(pc.match_substring_regex(whole, _DISQUALIFY)[0].as_py())




def _all_nonempty(col: pa.ChunkedArray | pa.Array) -> bool:
    import pyarrow.compute as pc

    if col.null_count:
        return False
    return bool(pc.all(pc.greater(pc.utf8_length(col), 0)).as_py() is not False)


def try_fast_jsonl(data: bytes, *, source: str | None) -> EventLog | None:
    """Read a large, valid Era-C JSONL log quickly; ``None`` when the exact reader must decide.

    See the module docstring for what is checked and how. Never raises for bad input.
    """
    if len(data) < FAST_MIN_BYTES:
        return None
    try:
        import pyarrow as pa
        import pyarrow.compute as pc
        import pyarrow.json as pj
    except ImportError:  # pragma: no cover - pyarrow is a dependency
        return None
    if data.startswith(b"\xef\xbb\xbf"):
        return None
    # the byte-level scans hold the GIL but pyarrow's parser does not: run them side by side
    with ThreadPoolExecutor(max_workers=2) as pool:
        scan = pool.submit(_disqualified, data)
        counting = pool.submit(data.count, b"\n")
        try:
            table = pj.read_json(
                pa.py_buffer(data),
                parse_options=pj.ParseOptions(
                    explicit_schema=_schema(),
                    unexpected_field_behavior="ignore",
                    newlines_in_values=False,
                ),
            )
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
            return None
        if scan.result():
            return None
        newlines = counting.result()
    n = table.num_rows
    expected_rows = newlines + (0 if data.endswith(b"\n") else 1)
    if n == 0 or n != expected_rows:
        return None
    col = table.column
    if col("schemaVersion").null_count or not pc.all(pc.equal(col("schemaVersion"), 1.0)).as_py():
        return None
    index = col("index")
    if index.null_count or not np.array_equal(index.to_numpy(), np.arange(n, dtype=np.float64)):
        return None
    if not all(_all_nonempty(col(name)) for name in ("id", "machineId", "machineVersion")):
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
    if causation.null_count < n and not pc.all(
        pc.greater(pc.utf8_length(causation.drop_null()), 0)
    ).as_py():
        return None
    verification = col("verification")
    if verification.null_count < n:
        hashes = pc.struct_field(verification.filter(pc.is_valid(verification)), "stateHash")
        if not _all_nonempty(hashes):
            return None
    if pc.count_distinct(col("id")).as_py() != n:
        return None
    if event_type[0].as_py() != AGENT_INIT_EVENT_TYPE:
        return None
    if pc.sum(pc.equal(event_type, AGENT_INIT_EVENT_TYPE)).as_py() != 1:
        return None
    # entry 0 exactly (it decides the bridge exemption and carries executionId)
    lines = _Lines(data)
    end = data.find(b"\n")
    line0 = data[: end if end >= 0 else len(data)]
    if not line0.strip() or entry_problem(loads(line0), index=0, source=source) is not None:
        return None
    first = _parse_line(line0)
    bridge = "snapshot" in first["event"]
    ref = 1 if bridge and n > 1 else 0
    ids, versions = col("machineId"), col("machineVersion")
    ref_id, ref_version = ids[ref].as_py(), versions[ref].as_py()
    if not pc.all(pc.equal(ids, ref_id)).as_py():
        return None
    tail_versions = versions.slice(1) if bridge else versions
    if len(tail_versions) and not pc.all(pc.equal(tail_versions, ref_version)).as_py():
        return None

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

    log = EventLog(load_entries, source=source, era="C", length=n, summary=summary)
    log._frame_builder = lambda: _frame_from_table(table, log, lines)
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


def _frame_from_table(table: pa.Table, log: EventLog, lines: _Lines) -> pd.DataFrame:
    import pandas as pd
    import pyarrow.compute as pc

    n = table.num_rows
    col = table.column
    recorded = _recorded_at(col("recordedAt"))

    def category(array: Any) -> pd.Series:
        return pd.Series(array.to_pandas(), dtype="string").astype("category")

    verification = col("verification")
    state_hash = pc.if_else(
        pc.is_valid(verification), pc.struct_field(verification, "stateHash"), None
    )
    metadata_valid = pc.is_valid(col("metadata")).to_numpy(zero_copy_only=False)
    src = _Source(log, lines)
    frozen = gc.isenabled()
    gc.disable()
    try:
        events = [LazyPayload(src, i, "event") for i in range(n)]
        metas = [LazyPayload(src, int(i), "metadata") for i in np.flatnonzero(metadata_valid)]
    finally:
        if frozen:
            gc.enable()
    # numpy/pandas would treat a Mapping as a sequence (and parse it) in a bulk assignment
    meta_values = np.full(n, None, dtype=object)
    for j, i in enumerate(np.flatnonzero(metadata_valid)):
        meta_values[i] = metas[j]
    event_values = np.fromiter(events, dtype=object, count=n)
    frame = pd.DataFrame(
        {
            "index": pd.Series(np.arange(n, dtype=np.int64)),
            "id": pd.Series(col("id").to_pandas(), dtype="string"),
            "recorded_at": recorded,
            "machine_id": category(col("machineId")),
            "machine_version": category(col("machineVersion")),
            "event_type": category(pc.struct_field(col("event"), "type")),
            "causation_id": pd.Series(col("causationId").to_pandas(), dtype="string"),
            "state_hash": pd.Series(state_hash.to_pandas(), dtype="string"),
            "event": pd.Series(event_values, dtype="object"),
            "metadata": pd.Series(meta_values, dtype="object"),
        },
        columns=list(DF_COLUMNS),
    )
    return frame

"""Where logs live: one read-only :class:`Store` protocol and :func:`open_store` (spec §5).

:func:`open_store` turns a source into a store: a URL by its scheme (``postgresql://…``), a
path by what it holds — a SQLite store file (§5.2), a single log file (JSON, JSONL, CSV,
Parquet, an inspection stream: one thread), a directory of log files (one thread per file).
Every capability that needs a source opens it here; see :mod:`agentscope.stores.protocol` for
the protocol, :mod:`agentscope.stores.sqlite` and :mod:`agentscope.stores.files` for the
implementations.

A new kind of source is one module with a ``open_url(address, **options) -> Store`` (or a class
taking a path) and one line in :data:`SCHEMES`, plus one subclass of the contract suite
(``tests/store_contract.py``).
"""

from __future__ import annotations

from agentscope.stores import protocol
from agentscope.stores.protocol import *  # noqa: F403 (the protocol's names, its __all__)
from agentscope.stores.reading import read_log, read_threads
from agentscope.stores.sources import SCHEMES, holds_threads, open_store, split_thread

__all__ = [
    "SCHEMES", "holds_threads", "open_store", "read_log", "read_threads", "split_thread",
    *protocol.__all__,
]

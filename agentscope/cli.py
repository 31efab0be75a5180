"""The ``agentscope`` command line.

``agentscope demo`` reads the bundled real agent log (``agentscope/examples/g_triage.sqlite``,
thread ``main``, spec §5.2 layout), prints its summary and the status of its recorded hashes.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Sequence
from importlib import resources

__all__ = ["main"]

_HASH_RE = re.compile(r"[0-9a-f]{8}")


def demo(thread: str = "main") -> int:
    """Print the summary and hash status of the bundled ``g_triage.sqlite`` thread."""
    from agentscope.log import read_log, read_threads

    resource = resources.files("agentscope") / "examples" / "g_triage.sqlite"
    with resources.as_file(resource) as path:
        threads = read_threads(path)
        log = read_log(path, thread=thread)
    df = log.df
    print(f"agentscope demo: {path.name} (bundled real log, @statelyai/agent 2.0 alpha, SQLite store)")
    listing = ", ".join(f"{t} ({n})" for t, n in zip(threads.thread_id, threads.length, strict=True))
    print(f"threads in the store: {listing}")
    print()
    print(f"thread        {log.thread}")
    print(f"entries       {len(log)}")
    print(f"machine       {log.machine_id} @ {', '.join(log.machine_versions)}")
    print(f"execution id  {log.execution_id}")
    first, last = df["recorded_at"].iloc[0], df["recorded_at"].iloc[-1]
    print(f"time span     {first.isoformat()} .. {last.isoformat()} ({(last - first).total_seconds():.3f} s)")
    print("event types:")
    counts = df["event_type"].value_counts(sort=True)
    width = max(len(str(t)) for t in counts.index)
    for event_type, count in counts.items():
        if count:
            print(f"  {event_type!s:<{width}}  {count}")
    hashes = df["state_hash"].dropna()
    well_formed = hashes.map(lambda h: _HASH_RE.fullmatch(h) is not None)
    print()
    print(f"hash status: {len(hashes)} of {len(log)} entries carry verification.stateHash; "
          f"{int(well_formed.sum())} are 8-hex-digit strings"
          + ("" if well_formed.all() else f" ({int((~well_formed).sum())} malformed)"))
    print(f"last recorded state hash: {hashes.iloc[-1] if len(hashes) else '-'}")
    print("not yet verified: recomputing each hash by replaying the machine (spec §4.1) is not "
          "part of this command yet.")
    print()
    print(df[["index", "recorded_at", "event_type", "state_hash"]].head(8).to_string(index=False))
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``agentscope`` console script. Returns the exit code."""
    parser = argparse.ArgumentParser(
        prog="agentscope", description="Time-travel debugging for agent event logs."
    )
    sub = parser.add_subparsers(dest="command", required=True)
    p_demo = sub.add_parser("demo", help="summarise the bundled real agent log (g_triage.sqlite)")
    p_demo.add_argument("--thread", default="main", help="thread of the bundled store (main, fork, second)")
    args = parser.parse_args(argv)
    if args.command == "demo":
        return demo(args.thread)
    parser.error(f"unknown command {args.command!r}")  # pragma: no cover - argparse rejects it
    return 2  # pragma: no cover


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())

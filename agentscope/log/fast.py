"""Fast path for large JSONL logs (tech-eval §5): placeholder until implemented."""

from __future__ import annotations

from agentscope.log.model import EventLog


def try_fast_jsonl(data: bytes, *, source: str | None) -> EventLog | None:
    return None

"""Statechart engines: the :class:`~agentscope.engines.base.Machine` contract and its implementations."""

from agentscope.engines.base import (
    NO_INPUT,
    Graph,
    Machine,
    Snapshot,
    StateNodeInfo,
    TransitionInfo,
)

__all__ = ["NO_INPUT", "Graph", "Machine", "Snapshot", "StateNodeInfo", "TransitionInfo"]

"""Reading event logs (spec §1, §5.2): validation now; readers and :class:`EventLog` follow."""

from __future__ import annotations

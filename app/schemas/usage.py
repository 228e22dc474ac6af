"""Spend as ``GET /api/usage`` shows it."""

from __future__ import annotations

import datetime as dt
from typing import Literal

from iris.providers.wire import WireStruct

GroupByName = Literal["user", "key", "agent", "model", "day"]


class UsageRow(WireStruct, kw_only=True):
    """One group's runs and stateless calls (``/v1``, ``/api/llm/chat``): how many of each, what they
    cost together (those without prices add nothing) and their tokens. ``group`` is ``None`` for those
    without one (a model since deleted, a run from before agents, a call: it has no agent)."""

    group: str | None
    runs: int
    calls: int = 0
    cost: float
    input_tokens: int
    output_tokens: int


class UsageReport(WireStruct, kw_only=True):
    """Runs and calls started from ``since`` (inclusive) to ``until`` (exclusive), grouped by ``group_by``."""

    group_by: GroupByName
    since: dt.date
    until: dt.date
    user: str | None
    """Whose runs; ``None``: everyone's (admins only)."""
    rows: list[UsageRow]
    total_cost: float

"""Spend as ``GET /api/usage`` shows it."""

from __future__ import annotations

import datetime as dt
from typing import Literal

from iris.providers.wire import WireStruct

GroupByName = Literal["user", "key", "agent", "model", "day"]


class UsageRow(WireStruct, kw_only=True):
    """One group's runs: how many, what they cost (runs without prices add nothing) and their tokens.
    ``group`` is ``None`` for runs without one (a model since deleted, a run from before agents)."""

    group: str | None
    runs: int
    cost: float
    input_tokens: int
    output_tokens: int


class UsageReport(WireStruct, kw_only=True):
    """Runs started from ``since`` (inclusive) to ``until`` (exclusive), grouped by ``group_by``."""

    group_by: GroupByName
    since: dt.date
    until: dt.date
    user: str | None
    """Whose runs; ``None``: everyone's (admins only)."""
    rows: list[UsageRow]
    total_cost: float

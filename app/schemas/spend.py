"""The caller's own spend against their budgets, as ``GET /api/usage/me`` shows it."""

from __future__ import annotations

import datetime as dt
from typing import Literal

from iris.providers.wire import WireStruct


class PeriodSpend(WireStruct, kw_only=True):
    """What the caller's runs started in one budget period (a UTC day or calendar month) cost."""

    spent: float
    """USD; runs without a price add nothing."""
    budget: float | None
    """The caller's USD budget for the period; ``None``: no budget binds them (none set, or an admin)."""
    ends_at: dt.datetime
    """When the period ends (and a refused run may be tried again)."""


class MySpend(WireStruct, kw_only=True):
    """Who the caller is to Iris (so a page knows what to offer) and their spend this day and month."""

    user: str
    role: Literal["user", "admin", "guest"]
    day: PeriodSpend
    month: PeriodSpend

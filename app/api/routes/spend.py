"""``GET /api/usage/me``: the caller's spend this UTC day and month against their budgets, and their
role, for a page that shows a user where they stand (the chat page's "Keys & spend" panel)."""

from __future__ import annotations

import datetime as dt

from litestar import Controller, get
from litestar.di import NamedDependency

from iris.app.api.openapi import documented
from iris.app.persistence.repositories import UsageRepository, spent_since
from iris.app.schemas.spend import MySpend, PeriodSpend
from iris.app.security.auth import Principal
from iris.app.security.budgets import budget_periods
from iris.app.settings import Settings


class MySpendController(Controller):
    """The same sums the budget check makes (``IRIS_BUDGET_USER_DAY_USD``, ``_MONTH_USD``)."""

    path = "/api/usage/me"
    tags = ["Usage"]
    security = [{"BearerToken": []}]
    signature_types = [Principal, UsageRepository, Settings]

    @get("/", operation_id="GetMySpend", operation_class=documented())
    async def my_spend(
        self,
        principal: NamedDependency[Principal],
        usage_repo: NamedDependency[UsageRepository],
        settings: NamedDependency[Settings],
    ) -> MySpend:
        """What the caller's runs cost this UTC day and calendar month, and the budget for each
        (admins have none: budgets bind users and guests)."""
        (day, next_day), (month, next_month) = budget_periods(dt.datetime.now(dt.UTC))
        periods = (
            (day, next_day, settings.budget_user_day_usd),
            (month, next_month, settings.budget_user_month_usd),
        )
        spends = [
            PeriodSpend(
                spent=round(await spent_since(usage_repo, principal.user_id, start), 6),
                budget=budget if budget > 0 and not principal.is_admin else None,
                ends_at=end,
            )
            for start, end, budget in periods
        ]
        return MySpend(user=principal.user_id, role=principal.role, day=spends[0], month=spends[1])

"""USD budgets per UTC day and month, for users (``IRIS_BUDGET_USER_{DAY,MONTH}_USD``), API keys and
agents, held across processes without overspend (ADR 0085).

Admission takes a hold of the request's estimated cost in the caller's transaction, after a check that
what the subject spent (its runs' and calls' costs) plus what it holds (the estimates of requests still
going) is below each budget. The check and the hold are serialised per subject by a row lock: an upsert
of the subject's ``quota_usage`` row, held (PostgreSQL) — or SQLite's write lock — until the caller
commits, so no two requests see the same room. A hold ends with its request (a run's closing
transaction, a call's settlement) and lapses with its lease when a process dies. A refusal is 429
``budget_exceeded`` with ``Retry-After`` the seconds until the period ends.
"""

from __future__ import annotations

import datetime as dt
import math
from dataclasses import dataclass
from uuid import UUID

from sqlalchemy.ext.asyncio import AsyncSession, async_scoped_session

from iris.app.errors import QuotaExceeded
from iris.app.persistence.repositories import QuotaRepository, SpendHold, SpendRepository, Subject
from iris.app.security.auth import Principal
from iris.app.settings import Settings

Db = AsyncSession | async_scoped_session[AsyncSession]

BUDGET_LOCK = "budget_lock"
"""The ``quota_usage`` row whose upsert serialises a subject's budget checks (never pruned)."""
FOREVER = 2**62


@dataclass(frozen=True, slots=True)
class _Budget:
    subject: Subject
    subject_id: str | UUID
    amounts: tuple[float, float]
    """USD per day and per month (0: none)."""
    whose: str


def _budgets(principal: Principal, settings: Settings, hold: SpendHold | None) -> list[_Budget]:
    """The budgets this request counts against, in the one order every request locks them in."""
    out: list[_Budget] = []
    if not principal.is_admin:
        amounts = (settings.budget_user_day_usd, settings.budget_user_month_usd)
        out.append(_Budget("user", principal.user_id, amounts, "Your runs have cost"))
    if principal.key_id is not None:
        out.append(_Budget("key", principal.key_id, principal.key_budgets, "This key's runs have cost"))
    if hold is not None and hold.agent_id is not None:
        out.append(_Budget("agent", hold.agent_id, hold.agent_budgets, "This agent's runs have cost"))
    return [b for b in out if any(amount > 0 for amount in b.amounts)]


async def within_budgets(db: Db, principal: Principal, settings: Settings, hold: SpendHold | None) -> None:
    """Refuse a request over any of its budgets; else take its ``hold`` (a stateless call's always, its
    record to be; a run's when a budget applies). Runs in the caller's transaction, last."""
    budgets = _budgets(principal, settings, hold)
    counters = QuotaRepository(session=db)
    for budget in budgets:  # locked first, all of them, in a fixed order: no deadlock, no stale read
        await counters.add_usage(f"{budget.subject}:{budget.subject_id}", BUDGET_LOCK, (0, FOREVER), 0)
    ledger = SpendRepository(session=db)
    for budget in budgets:
        await _within(ledger, budget)
    if hold is not None and (budgets or hold.kind == "call"):
        await ledger.hold(hold, principal.user_id, principal.key_id)


Period = tuple[dt.datetime, dt.datetime]


def budget_periods(now: dt.datetime) -> tuple[Period, Period]:
    """The UTC day and the calendar month ``now`` falls in, each as (start, end): what budgets count."""
    day = now.replace(hour=0, minute=0, second=0, microsecond=0)
    month = day.replace(day=1)
    return (day, day + dt.timedelta(days=1)), (month, (month + dt.timedelta(days=32)).replace(day=1))


async def _within(ledger: SpendRepository, budget: _Budget) -> None:
    now = dt.datetime.now(dt.UTC)
    (day, next_day), (month, next_month) = budget_periods(now)
    periods = (
        (f"budget_{budget.subject}_day_usd", budget.amounts[0], day, next_day),
        (f"budget_{budget.subject}_month_usd", budget.amounts[1], month, next_month),
    )
    for limit, amount, start, end in periods:
        if amount <= 0:
            continue
        spent = await ledger.spent_since(budget.subject, budget.subject_id, start)
        if spent >= amount:
            raise QuotaExceeded(
                f"{budget.whose} {spent:.4f} USD of the {amount:.2f} USD budget for this period.",
                limit=limit,
                allowed=amount,
                retry_after=max(1, math.ceil((end - now).total_seconds())),
                code="budget_exceeded",
            )

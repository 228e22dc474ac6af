"""Spend: the runs' stored costs and the stateless calls' settled ones (the spend ledger) summed by user,
key, agent, model or day, in one query each on either engine."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any, Literal

from advanced_alchemy.repository import SQLAlchemyAsyncRepository
from sqlalchemy import Select, String, cast, func, select
from sqlalchemy.sql.elements import ColumnElement

from iris.app.persistence.models import Agent, AgentVersion, Run, SpendEntry
from iris.app.persistence.repositories.spend import SpendRepository

GroupBy = Literal["user", "key", "agent", "model", "day"]


class UsageRepository(SQLAlchemyAsyncRepository[Run]):
    """Reads ``runs.usage.billable`` (the billable usage each run stores, cost included)."""

    model_type = Run

    async def summed(
        self, group_by: GroupBy, since: dt.datetime, until: dt.datetime, owner_id: str | None
    ) -> list[UsageSum]:
        """One :class:`UsageSum` per group, for runs and calls started in ``[since, until)``; one
        owner's (``None``: everyone's). Those without a cost add nothing to it."""
        key = _group_key(group_by)
        usage = Run.usage
        stmt = (
            select(
                key,
                func.count(Run.id),
                func.sum(usage[("billable", "cost", "total")].as_float()),
                func.sum(usage[("billable", "inputTokens")].as_integer()),
                func.sum(usage[("billable", "outputTokens")].as_integer()),
            )
            .where(Run.started_at >= since, Run.started_at < until)
            .group_by(key)
        )
        if group_by == "agent":
            stmt = stmt.outerjoin(AgentVersion, AgentVersion.id == Run.agent_version_id).outerjoin(
                Agent, Agent.id == AgentVersion.agent_id
            )
        if owner_id is not None:
            stmt = stmt.where(Run.owner_id == owner_id)
        sums: dict[str | None, UsageSum] = {}
        for g, n, c, i, o in (await self.session.execute(stmt)).all():
            group = None if g is None else str(g)
            sums[group] = UsageSum(group, int(n), 0, float(c or 0.0), int(i or 0), int(o or 0))
        for g, n, c, i, o in (await self.session.execute(_calls(group_by, since, until, owner_id))).all():
            group = None if g is None else str(g)
            row = sums.setdefault(group, UsageSum(group, 0, 0, 0.0, 0, 0))
            row.calls += int(n)
            row.cost += float(c or 0.0)
            row.input_tokens += int(i or 0)
            row.output_tokens += int(o or 0)
        return sorted(sums.values(), key=lambda row: (row.group is None, row.group or ""))


@dataclass(slots=True)
class UsageSum:
    """One group's runs and calls, their cost and tokens."""

    group: str | None
    runs: int
    calls: int
    cost: float
    input_tokens: int
    output_tokens: int


def _calls(
    group_by: GroupBy, since: dt.datetime, until: dt.datetime, owner_id: str | None
) -> Select[tuple[Any, int, Any, Any, Any]]:
    """The settled calls' sums per group (a call's hold, still going, is not spend yet)."""
    key = _call_key(group_by)
    stmt = (
        select(
            key,
            func.count(SpendEntry.id),
            func.sum(SpendEntry.cost_usd),
            func.sum(SpendEntry.input_tokens),
            func.sum(SpendEntry.output_tokens),
        )
        .where(
            SpendEntry.kind == "call",
            SpendEntry.held_until.is_(None),
            SpendEntry.created_at >= since,
            SpendEntry.created_at < until,
        )
        .group_by(key)
    )
    if group_by == "agent":
        stmt = stmt.outerjoin(Agent, Agent.id == SpendEntry.agent_id)
    if owner_id is not None:
        stmt = stmt.where(SpendEntry.owner_id == owner_id)
    return stmt


def _call_key(group_by: GroupBy) -> ColumnElement[Any]:
    if group_by == "user":
        return SpendEntry.owner_id.label("group_key")
    if group_by == "key":
        return SpendEntry.key_id.label("group_key")
    if group_by == "model":
        return SpendEntry.model_ref.label("group_key")
    if group_by == "agent":
        return Agent.slug.label("group_key")
    return cast(func.date(SpendEntry.created_at), String).label("group_key")


async def spent_since(
    repo: UsageRepository, owner_id: str, since: dt.datetime, *, key_id: str | None = None
) -> float:
    """What the owner (the key, when ``key_id`` is given) spent since ``since`` as its budgets count it:
    its runs' and calls' costs and its live holds (:meth:`SpendRepository.spent_since`)."""
    ledger = SpendRepository(session=repo.session)
    if key_id is not None:
        return await ledger.spent_since("key", key_id, since)
    return await ledger.spent_since("user", owner_id, since)


async def tokens_since(
    repo: UsageRepository, owner_id: str, since: dt.datetime, *, key_id: str | None = None
) -> int:
    """The model tokens (input and output) the owner's runs (the key's, when ``key_id`` is given)
    started since ``since`` used; runs still going have none counted yet."""
    who = Run.key_id == key_id if key_id is not None else Run.owner_id == owner_id
    usage = Run.usage
    used = func.coalesce(usage[("billable", "inputTokens")].as_integer(), 0) + func.coalesce(
        usage[("billable", "outputTokens")].as_integer(), 0
    )
    stmt = select(func.sum(used)).where(who, Run.started_at >= since)
    return int((await repo.session.execute(stmt)).scalar_one() or 0)


def _group_key(group_by: GroupBy) -> ColumnElement[str]:
    if group_by == "user":
        return Run.owner_id.label("group_key")
    if group_by == "key":
        return Run.key_id.label("group_key")  # type: ignore[return-value]  # null for runs from a token
    if group_by == "model":
        return Run.model_ref.label("group_key")  # type: ignore[return-value]  # null for runs without one
    if group_by == "agent":
        return Agent.slug.label("group_key")
    return cast(func.date(Run.started_at), String).label("group_key")

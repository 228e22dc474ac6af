"""Spend: the runs' stored costs summed by user, agent, model or day, in one query on either engine."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from typing import Literal

from advanced_alchemy.repository import SQLAlchemyAsyncRepository
from sqlalchemy import String, cast, func, select
from sqlalchemy.sql.elements import ColumnElement

from iris.app.persistence.models import Agent, AgentVersion, Run

GroupBy = Literal["user", "key", "agent", "model", "day"]


class UsageRepository(SQLAlchemyAsyncRepository[Run]):
    """Reads ``runs.usage.billable`` (the billable usage each run stores, cost included)."""

    model_type = Run

    async def summed(
        self, group_by: GroupBy, since: dt.datetime, until: dt.datetime, owner_id: str | None
    ) -> Sequence[tuple[str | None, int, float | None, int | None, int | None]]:
        """``(group, runs, cost, input tokens, output tokens)`` per group, for runs started in
        ``[since, until)``; one owner's (``None``: everyone's). Runs without a cost add nothing to it."""
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
            .order_by(key)
        )
        if group_by == "agent":
            stmt = stmt.outerjoin(AgentVersion, AgentVersion.id == Run.agent_version_id).outerjoin(
                Agent, Agent.id == AgentVersion.agent_id
            )
        if owner_id is not None:
            stmt = stmt.where(Run.owner_id == owner_id)
        rows = (await self.session.execute(stmt)).all()
        return [(None if g is None else str(g), int(n), c, i, o) for g, n, c, i, o in rows]


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

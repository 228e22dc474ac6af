"""The spend ledger (ADR 0085): holds of estimated cost taken at admission, settled or released when a
request ends, and what a subject (a user, a key, an agent) spent or holds in a period, runs included."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Literal
from uuid import UUID

from advanced_alchemy.repository import SQLAlchemyAsyncRepository
from sqlalchemy import case, delete, func, or_, select, update
from sqlalchemy.sql.elements import ColumnElement

from iris.app.persistence.models import AgentVersion, Run, SpendEntry
from iris.app.persistence.repositories._common import utcnow

Subject = Literal["user", "key", "agent"]


@dataclass(frozen=True, slots=True)
class SpendHold:
    """A request's hold, as admission takes it: ``hold_id`` is the run's id for a stored run."""

    hold_id: UUID
    kind: Literal["run", "call"]
    surface: str
    estimate_usd: float
    lease_seconds: float
    model_ref: str | None = None
    agent_id: UUID | None = None
    agent_budgets: tuple[float, float] = (0.0, 0.0)
    """The agent's USD budgets per day and month (0: none), checked with the user's and the key's."""


@dataclass(frozen=True, slots=True)
class CallSpend:
    """What a stateless call ended up costing (``None``: unknown, no prices or no usage)."""

    cost_usd: float | None
    input_tokens: int | None
    output_tokens: int | None
    model_ref: str | None


class SpendRepository(SQLAlchemyAsyncRepository[SpendEntry]):
    """Holds and settled calls; the sums budgets compare."""

    model_type = SpendEntry

    async def hold(self, hold: SpendHold, owner_id: str, key_id: str | None) -> None:
        """Take ``hold`` in the caller's transaction (it commits with the admission)."""
        now = utcnow()
        self.session.add(
            SpendEntry(
                id=hold.hold_id,
                kind=hold.kind,
                owner_id=owner_id,
                key_id=key_id,
                agent_id=hold.agent_id,
                surface=hold.surface[:32],
                model_ref=hold.model_ref,
                reserved_usd=hold.estimate_usd,
                held_until=now + dt.timedelta(seconds=hold.lease_seconds),
                created_at=now,
                updated_at=now,
            )
        )
        await self.session.flush()

    async def settle_call(self, hold_id: UUID, spent: CallSpend) -> None:
        """A stateless call's hold becomes its record: the cost and tokens, no lease."""
        stmt = (
            update(SpendEntry)
            .where(SpendEntry.id == hold_id)
            .values(
                held_until=None,
                cost_usd=spent.cost_usd,
                input_tokens=spent.input_tokens,
                output_tokens=spent.output_tokens,
                model_ref=spent.model_ref,
                updated_at=utcnow(),
            )
        )
        await self.session.execute(stmt.execution_options(synchronize_session=False))

    async def holding(self) -> int:
        """How many holds are live (the tests' "nothing stuck reserved")."""
        stmt = select(func.count(SpendEntry.id)).where(SpendEntry.held_until > utcnow())
        return int((await self.session.execute(stmt)).scalar_one())

    async def prune_lapsed(self) -> None:
        """Forget the holds whose lease ran out (their process died): they count nothing any more."""
        stmt = delete(SpendEntry).where(SpendEntry.held_until <= utcnow())
        await self.session.execute(stmt.execution_options(synchronize_session=False))

    async def spent_since(self, subject: Subject, subject_id: str | UUID, since: dt.datetime) -> float:
        """What the subject's runs started since ``since`` cost, plus its settled calls' cost and its
        live holds' estimates since then: what a budget compares. One statement, so one snapshot: a
        run closing meanwhile (its hold gone, its cost written) is counted once, never missed."""
        runs = select(
            func.coalesce(func.sum(Run.usage[("billable", "cost", "total")].as_float()), 0.0)
        ).where(Run.started_at >= since)
        if subject == "agent":
            runs = runs.join(AgentVersion, AgentVersion.id == Run.agent_version_id).where(
                AgentVersion.agent_id == subject_id
            )
        else:
            runs = runs.where((Run.key_id if subject == "key" else Run.owner_id) == subject_id)
        settled = SpendEntry.held_until.is_(None)
        amount = case((settled, func.coalesce(SpendEntry.cost_usd, 0.0)), else_=SpendEntry.reserved_usd)
        ledger = select(func.coalesce(func.sum(amount), 0.0)).where(
            _of(subject, subject_id),
            SpendEntry.created_at >= since,
            or_(settled, SpendEntry.held_until > utcnow()),
        )
        both = select(runs.scalar_subquery() + ledger.scalar_subquery())
        return float((await self.session.execute(both)).scalar_one() or 0.0)


def _of(subject: Subject, subject_id: str | UUID) -> ColumnElement[bool]:
    if subject == "agent":
        return SpendEntry.agent_id == subject_id
    return (SpendEntry.key_id if subject == "key" else SpendEntry.owner_id) == subject_id

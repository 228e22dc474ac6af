"""The audit log: appended to, read in pages, and pruned past its retention; never updated."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence

from advanced_alchemy.repository import SQLAlchemyAsyncRepository
from sqlalchemy import delete, select

from iris.app.persistence.access_models import AuditEntry


class AuditRepository(SQLAlchemyAsyncRepository[AuditEntry]):
    """The ``audit_log`` table."""

    model_type = AuditEntry

    async def append(self, entry: AuditEntry) -> None:
        """Add one row."""
        self.session.add(entry)
        await self.session.flush()

    async def page(
        self,
        *,
        actor: str | None,
        action: str | None,
        since: dt.datetime | None,
        before_id: int | None,
        limit: int,
    ) -> Sequence[AuditEntry]:
        """Newest first: rows older than ``before_id`` (the last id of the previous page), filtered by
        actor, action prefix (``POST /api/keys``) and time."""
        stmt = select(AuditEntry).order_by(AuditEntry.id.desc()).limit(limit)
        if actor is not None:
            stmt = stmt.where(AuditEntry.actor == actor)
        if action is not None:
            stmt = stmt.where(AuditEntry.action.startswith(action, autoescape=True))
        if since is not None:
            stmt = stmt.where(AuditEntry.at >= since)
        if before_id is not None:
            stmt = stmt.where(AuditEntry.id < before_id)
        return (await self.session.execute(stmt)).scalars().all()

    async def prune(self, before: dt.datetime) -> None:
        """Forget rows older than the retention."""
        stmt = delete(AuditEntry).where(AuditEntry.at < before)
        await self.session.execute(stmt.execution_options(synchronize_session=False))

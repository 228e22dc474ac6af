"""Quota counters."""

from __future__ import annotations

from advanced_alchemy.repository import SQLAlchemyAsyncRepository
from sqlalchemy import delete
from sqlalchemy.dialects import postgresql, sqlite

from iris.app.persistence.models import QuotaUsage


class QuotaRepository(SQLAlchemyAsyncRepository[QuotaUsage]):
    """Quota counters: one atomic add per use, shared by every process through the database."""

    model_type = QuotaUsage

    async def add_usage(self, subject: str, quota: str, window: tuple[int, int], amount: int) -> int:
        """Add ``amount`` to the subject's use of ``quota`` in ``window`` (start, end); the new total.

        One ``INSERT … ON CONFLICT DO UPDATE … RETURNING``: atomic on both engines, and it holds the row
        (PostgreSQL) or the write lock (SQLite) until the caller's transaction ends.
        """
        dialect = postgresql if self.session.get_bind().dialect.name == "postgresql" else sqlite
        stmt = dialect.insert(QuotaUsage).values(
            subject=subject, quota=quota, window_start=window[0], window_end=window[1], amount=amount
        )
        stmt = stmt.on_conflict_do_update(
            index_elements=["subject", "quota", "window_start"],
            set_={"amount": QuotaUsage.amount + stmt.excluded.amount},
        ).returning(QuotaUsage.amount)
        return int((await self.session.execute(stmt)).scalar_one())

    async def prune(self, now: int, *, subject: str | None = None, quota: str | None = None) -> None:
        """Forget windows that have ended: all of them, or one subject's of one quota."""
        stmt = delete(QuotaUsage).where(QuotaUsage.window_end <= now)
        if subject is not None and quota is not None:
            stmt = stmt.where(QuotaUsage.subject == subject, QuotaUsage.quota == quota)
        await self.session.execute(stmt.execution_options(synchronize_session=False))

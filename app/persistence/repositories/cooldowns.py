"""Model cool-downs: the recent retryable failures of each model, shared by every process."""

from __future__ import annotations

from collections.abc import Collection, Sequence

from advanced_alchemy.repository import SQLAlchemyAsyncRepository
from sqlalchemy import case, delete, select, update
from sqlalchemy.dialects import postgresql, sqlite

from iris.app.persistence.models import ModelCooldown


class CooldownRepository(SQLAlchemyAsyncRepository[ModelCooldown]):
    """One row per model that failed lately; times are Unix seconds."""

    model_type = ModelCooldown

    async def cooled(self, refs: Collection[str], now: float) -> set[str]:
        """Which of ``refs`` are cooled down at ``now``."""
        if not refs:
            return set()
        stmt = select(ModelCooldown.model_ref).where(
            ModelCooldown.model_ref.in_(list(refs)), ModelCooldown.cooled_until > now
        )
        return set((await self.session.scalars(stmt)).all())

    async def list_cooling(self, now: float) -> Sequence[ModelCooldown]:
        """Every model cooled down at ``now``, the one that cools longest first."""
        stmt = (
            select(ModelCooldown)
            .where(ModelCooldown.cooled_until > now)
            .order_by(ModelCooldown.cooled_until.desc(), ModelCooldown.model_ref)
        )
        return (await self.session.scalars(stmt)).all()

    async def clear(self, ref: str) -> None:
        """Forget ``ref``'s failures and end its cool-down: every process's next run tries it again,
        and a new failure counts from one."""
        await self.session.execute(
            delete(ModelCooldown)
            .where(ModelCooldown.model_ref == ref)
            .execution_options(synchronize_session=False)
        )

    async def record_failure(self, ref: str, now: float, *, code: str, window: float, threshold: int) -> bool:
        """Count one failure of ``ref`` with the run-error ``code`` it had (a window older than
        ``window`` seconds starts again); at ``threshold`` failures the model is cooled down for
        ``window`` seconds and its count restarts. ``True`` when this failure cooled it down.

        One ``INSERT … ON CONFLICT DO UPDATE … RETURNING`` counts it atomically on both engines and holds
        the row (PostgreSQL) or the write lock (SQLite) until the caller's transaction ends, so two
        processes never both start the same cool-down."""
        dialect = postgresql if self.session.get_bind().dialect.name == "postgresql" else sqlite
        stmt = dialect.insert(ModelCooldown).values(
            model_ref=ref, failures=1, window_start=now, last_code=code
        )
        expired = ModelCooldown.window_start + window <= now
        stmt = stmt.on_conflict_do_update(
            index_elements=["model_ref"],
            set_={
                "failures": case((expired, 1), else_=ModelCooldown.failures + 1),
                "window_start": case((expired, now), else_=ModelCooldown.window_start),
                "last_code": code,
            },
        ).returning(ModelCooldown.failures, ModelCooldown.cooled_until)
        failures, cooled_until = (await self.session.execute(stmt)).one()
        if failures < threshold or (cooled_until is not None and cooled_until > now):
            return False
        await self.session.execute(
            update(ModelCooldown)
            .where(ModelCooldown.model_ref == ref)
            .values(cooled_until=now + window, failures=0, window_start=now)
            .execution_options(synchronize_session=False)
        )
        return True

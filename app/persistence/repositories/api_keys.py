"""API keys: made, listed, revoked, and looked up by the hash of the key a request carries."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from uuid import UUID

from advanced_alchemy.repository import SQLAlchemyAsyncRepository
from sqlalchemy import select, update

from iris.app.persistence.access_models import ApiKey


class ApiKeyRepository(SQLAlchemyAsyncRepository[ApiKey]):
    """The ``api_keys`` table."""

    model_type = ApiKey

    async def by_hash(self, secret_hash: str) -> ApiKey | None:
        """The key whose SHA-256 is ``secret_hash``, revoked or not."""
        found = await self.session.execute(select(ApiKey).where(ApiKey.secret_hash == secret_hash))
        return found.scalar_one_or_none()

    async def listed(self, owner_id: str | None) -> Sequence[ApiKey]:
        """One owner's keys (``None``: everyone's), newest first."""
        stmt = select(ApiKey).order_by(ApiKey.created_at.desc(), ApiKey.id.desc())
        if owner_id is not None:
            stmt = stmt.where(ApiKey.owner_id == owner_id)
        return (await self.session.execute(stmt)).scalars().all()

    async def revoke(self, key_id: UUID, owner_id: str | None, at: dt.datetime) -> ApiKey | None:
        """Mark the key revoked (once: a second revoke keeps the first time); ``None`` when there is no
        such key, or it is not ``owner_id``'s (``None``: any owner's)."""
        stmt = select(ApiKey).where(ApiKey.id == key_id)
        if owner_id is not None:
            stmt = stmt.where(ApiKey.owner_id == owner_id)
        row = (await self.session.execute(stmt)).scalar_one_or_none()
        if row is not None and row.revoked_at is None:
            row.revoked_at = at
            await self.session.flush()
        return row

    async def by_id(self, key_id: UUID) -> ApiKey | None:
        """The key with this id, revoked or not."""
        return (await self.session.execute(select(ApiKey).where(ApiKey.id == key_id))).scalar_one_or_none()

    async def mark_used(self, key_id: UUID, at: dt.datetime, address: str | None) -> None:
        """Record the key's last use and the address it came from."""
        stmt = update(ApiKey).where(ApiKey.id == key_id).values(last_used_at=at, last_used_address=address)
        await self.session.execute(stmt.execution_options(synchronize_session=False))

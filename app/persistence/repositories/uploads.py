"""Upload records."""

from __future__ import annotations

from collections.abc import Iterable
from uuid import UUID

from advanced_alchemy.repository import SQLAlchemyAsyncRepository
from sqlalchemy import bindparam, select

from iris.app.persistence.models import Upload
from iris.app.persistence.repositories._common import first_or_none

# Statements built once (why: see _common).
_UPLOAD_AT = select(Upload).where(
    Upload.owner_id == bindparam("owner_id"),
    Upload.thread_id == bindparam("thread_id"),
    Upload.bucket == bindparam("bucket"),
    Upload.path == bindparam("path"),
)


class UploadRepository(SQLAlchemyAsyncRepository[Upload]):
    """Upload records; every lookup is scoped to an owner."""

    model_type = Upload

    async def get_owned(self, upload_id: UUID, owner_id: str) -> Upload | None:
        """The upload if ``owner_id`` made it."""
        return await self.get_one_or_none(id=upload_id, owner_id=owner_id)

    def add_unflushed(self, upload: Upload) -> None:
        """Add an upload whose primary key is set, written by the transaction's commit (a run's
        intake: its rows are written together, or none is)."""
        self.session.add(upload)

    async def get_by_path(self, owner_id: str, thread_id: str, bucket: str, path: str) -> Upload | None:
        """The upload stored at ``bucket/path`` by this owner for this thread."""
        values = {"owner_id": owner_id, "thread_id": thread_id, "bucket": bucket, "path": path}
        return await first_or_none(self.session, _UPLOAD_AT, values)

    async def delete_owned(self, upload_id: UUID, owner_id: str, thread_id: str) -> Upload | None:
        """Remove the record of one of this owner's uploads in this thread; the removed row, or ``None``."""
        upload = await self.get_one_or_none(id=upload_id, owner_id=owner_id, thread_id=thread_id)
        if upload is not None:
            await self.delete(upload.id)
        return upload

    async def existing_ids(self, upload_ids: Iterable[UUID]) -> set[UUID]:
        """Which of these uploads still exist."""
        wanted = list(upload_ids)
        if not wanted:
            return set()
        return set((await self.session.scalars(select(Upload.id).where(Upload.id.in_(wanted)))).all())

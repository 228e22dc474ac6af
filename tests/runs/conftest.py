"""Fixtures of the run tests: a signed-in caller and direct reads of what the run stored."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from typing import Any
from uuid import UUID

import pytest
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from app.persistence.db import create_engine
from app.persistence.models import Message, Run, RunEvent


@pytest.fixture
def alice(auth: Callable[..., dict[str, str]]) -> dict[str, str]:
    return auth("alice")


class Stored:
    """Reads the app's real database (no mocks): messages, runs and event log of a thread.

    It opens its own engine per read: the app's pool belongs to the app's event loop.
    """

    def __init__(self, database_url: str) -> None:
        self._url = database_url

    @asynccontextmanager
    async def _session(self) -> AsyncIterator[AsyncSession]:
        engine = create_engine(self._url)
        try:
            async with AsyncSession(engine, expire_on_commit=False) as session:
                yield session
        finally:
            await engine.dispose()

    async def messages(self, thread_id: str) -> Sequence[Message]:
        async with self._session() as db:
            stmt = select(Message).where(Message.session_id == UUID(thread_id)).order_by(Message.position)
            return (await db.scalars(stmt)).all()

    async def run(self, run_id: str) -> Run | None:
        async with self._session() as db:
            run: Run | None = await db.scalar(select(Run).where(Run.external_id == run_id))
            return run

    async def events(self, run_id: str) -> list[dict[str, Any]]:
        async with self._session() as db:
            stmt = (
                select(RunEvent.sequence, RunEvent.event)
                .join(Run, Run.id == RunEvent.run_id)
                .where(Run.external_id == run_id)
                .order_by(RunEvent.sequence)
            )
            return [{"sequence": seq, **event} for seq, event in (await db.execute(stmt)).all()]


@pytest.fixture
def stored(database_url: str) -> Stored:
    return Stored(database_url)

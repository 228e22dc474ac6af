"""Followers in another process than the run's are woken by PostgreSQL notices, not by polling.

Two app-sized pieces share one real database: a writer (its own engine, as the process running the run)
appends batches to the event log; a follower (another engine, with its own ``LISTEN`` connection) reads
them through :class:`LoggedFrames`. Its safety re-read is an hour away, so only a notice can wake it.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator

import pytest
from advanced_alchemy.extensions.litestar import SQLAlchemyAsyncConfig

from iris.app.persistence.db import create_alchemy_config, session_scope
from iris.app.persistence.models import Run
from iris.app.persistence.repositories import (
    AgentRepository,
    RunEventRepository,
    RunRepository,
    SessionRepository,
    utcnow,
)
from iris.app.runs.store.live import LoggedFrames
from iris.app.runs.store.notices import PgNotices, log_wakeups
from iris.app.settings import Settings
from tests.factories import AgentFactory
from tests.support.waits import REQUEST_SECONDS

HOUR = 3600.0


@pytest.fixture
def postgres_only(engine_name: str) -> None:
    if engine_name != "postgresql":
        pytest.skip("LISTEN/NOTIFY is PostgreSQL's; SQLite followers poll")


@pytest.fixture
async def writer(settings: Settings) -> AsyncIterator[SQLAlchemyAsyncConfig]:
    alchemy = create_alchemy_config(settings)
    yield alchemy
    await alchemy.get_engine().dispose()


@pytest.fixture
async def follower(settings: Settings) -> AsyncIterator[SQLAlchemyAsyncConfig]:
    alchemy = create_alchemy_config(settings)
    yield alchemy
    await alchemy.get_engine().dispose()


async def _run(alchemy: SQLAlchemyAsyncConfig) -> uuid.UUID:
    async with session_scope(alchemy) as db:
        agent = await AgentRepository(session=db).add(AgentFactory.build(slug=f"a-{uuid.uuid4().hex[:8]}"))
        chat = SessionRepository(session=db).create_for_owner(str(uuid.uuid4()), "u", agent.id, None)
        run = await RunRepository(session=db).add(
            Run(
                external_id=str(uuid.uuid4()),
                session_id=chat.id,
                owner_id="u",
                status="running",
                started_at=utcnow(),
            )
        )
        return run.id


async def _append(
    alchemy: SQLAlchemyAsyncConfig, run_pk: uuid.UUID, first: int, count: int, *, end: bool
) -> None:
    events = [(i, {"type": "TEXT_MESSAGE_CONTENT", "delta": str(i)}) for i in range(first, first + count)]
    if end:
        events.append((first + count, {"type": "RUN_FINISHED"}))
    async with session_scope(alchemy) as db:
        await RunEventRepository(session=db).append_batch(run_pk, events)


@pytest.mark.usefixtures("postgres_only")
async def test_a_notice_wakes_the_follower_and_every_event_comes_once(
    settings: Settings, writer: SQLAlchemyAsyncConfig, follower: SQLAlchemyAsyncConfig
) -> None:
    notices = PgNotices(settings.effective_database_url, poll_seconds=HOUR, safety_seconds=HOUR)
    await notices.start()
    assert notices.listening
    run_pk = await _run(writer)
    logged = LoggedFrames(follower, run_pk, after=0, wakeups=notices)
    try:
        sequences: list[int] = []

        async def follow() -> None:
            while (batch := await logged.next_batch(HOUR)) is not None:
                assert batch, "woken without events"
                sequences.extend(sequence for sequence, _ in batch)

        following = asyncio.create_task(follow())
        await asyncio.sleep(0.2)  # the follower has read the empty log and waits
        for batch in range(5):
            await _append(writer, run_pk, batch * 10 + 1, 10, end=batch == 4)
            await asyncio.sleep(0.05)
        await asyncio.wait_for(following, REQUEST_SECONDS)  # only notices can wake it within the hour
    finally:
        logged.close()
        await notices.aclose()

    assert sequences == list(range(1, 52))  # every event once, in order


def test_postgresql_listens_and_sqlite_polls(settings: Settings, engine_name: str) -> None:
    wakeups = log_wakeups(settings.effective_database_url, 0.1)
    assert isinstance(wakeups, PgNotices) == (engine_name == "postgresql")

"""Model cool-downs on both engines: failures counted within a window, a cool-down at the threshold that
restarts the count, a window that ends, two sessions (two processes) counting the same model, and the
operator's listing and clearing."""

from __future__ import annotations

from sqlalchemy.ext.asyncio import AsyncSession

from iris.app.persistence.db import create_engine
from iris.app.persistence.repositories import CooldownRepository

REF = "openai/gpt-4o"


async def test_failures_within_the_window_cool_a_model_down(db_session: AsyncSession) -> None:
    repo = CooldownRepository(session=db_session)
    assert not await repo.record_failure(REF, 100.0, code="provider_unavailable", window=60, threshold=3)
    assert not await repo.record_failure(REF, 110.0, code="provider_unavailable", window=60, threshold=3)
    assert await repo.cooled([REF], 110.0) == set()
    assert await repo.record_failure(
        REF, 120.0, code="provider_unavailable", window=60, threshold=3
    )  # the third: cooled down
    assert await repo.cooled([REF, "local/vision"], 121.0) == {REF}
    assert not await repo.record_failure(
        REF, 125.0, code="provider_unavailable", window=60, threshold=1
    )  # already cooling down
    assert await repo.cooled([REF], 180.0) == set()  # until 120 + 60


async def test_a_window_that_ended_starts_counting_again(db_session: AsyncSession) -> None:
    repo = CooldownRepository(session=db_session)
    assert not await repo.record_failure(REF, 100.0, code="provider_unavailable", window=60, threshold=2)
    assert not await repo.record_failure(
        REF, 200.0, code="provider_unavailable", window=60, threshold=2
    )  # the first one is forgotten
    assert await repo.record_failure(REF, 201.0, code="provider_unavailable", window=60, threshold=2)


async def test_two_processes_count_the_same_model(database_url: str) -> None:
    engines = [create_engine(database_url), create_engine(database_url)]
    try:
        started = []
        for now, engine in zip((100.0, 101.0, 102.0, 103.0), engines * 2, strict=True):
            async with AsyncSession(engine) as session:
                started.append(
                    await CooldownRepository(session=session).record_failure(
                        REF, now, code="provider_unavailable", window=60, threshold=2
                    )
                )
                await session.commit()
        assert started == [False, True, False, False]  # counted together; once cooled, not again
        async with AsyncSession(engines[0]) as session:
            assert await CooldownRepository(session=session).cooled([REF], 104.0) == {REF}
    finally:
        for engine in engines:
            await engine.dispose()


async def test_the_models_cooling_down_are_listed_with_their_last_code(db_session: AsyncSession) -> None:
    repo = CooldownRepository(session=db_session)
    assert await repo.list_cooling(100.0) == []
    await repo.record_failure(REF, 100.0, code="provider_unavailable", window=60, threshold=2)
    await repo.record_failure(REF, 101.0, code="provider_rate_limit", window=60, threshold=2)
    await repo.record_failure("local/vision", 102.0, code="provider_timeout", window=30, threshold=1)
    await repo.record_failure("local/text", 102.0, code="provider_timeout", window=60, threshold=5)
    listed = await repo.list_cooling(102.5)
    assert [(row.model_ref, row.cooled_until, row.last_code) for row in listed] == [
        (REF, 161.0, "provider_rate_limit"),  # cooling longest first; local/text is only counting
        ("local/vision", 132.0, "provider_timeout"),
    ]
    assert [row.model_ref for row in await repo.list_cooling(140.0)] == [REF]
    assert await repo.list_cooling(161.0) == []


async def test_clearing_ends_a_cool_down_and_forgets_the_failures(db_session: AsyncSession) -> None:
    repo = CooldownRepository(session=db_session)
    for now in (100.0, 101.0):
        await repo.record_failure(REF, now, code="provider_unavailable", window=60, threshold=2)
    assert await repo.cooled([REF], 102.0) == {REF}
    await repo.clear(REF)
    await repo.clear("local/vision")  # nothing to clear: nothing happens
    assert await repo.cooled([REF], 102.0) == set()
    assert await repo.list_cooling(102.0) == []
    assert not await repo.record_failure(REF, 103.0, code="provider_unavailable", window=60, threshold=2)
    assert await repo.record_failure(REF, 104.0, code="provider_unavailable", window=60, threshold=2)

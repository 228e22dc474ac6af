"""A run is followed, and cancelled, from the process running it before its intake commit has landed.

The intake commits while the model is asked (ADR 0028), so for a few milliseconds a run is
streaming and not yet in the database. A second tab, or a client that re-attaches at once, asks
``GET /agent/runs/{runId}/events`` in that window: the process running the run serves it from memory
instead of answering 404. Here another connection holds back the intake's insert of the run (a
PostgreSQL lock on ``runs`` that lets reads and other writes through), so the window lasts until the
test lets go.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from functools import partial

import httpx
import pytest
from sqlalchemy import text

from iris.app.persistence.db import create_engine
from tests.support.agui import check_stream, parse_sse
from tests.support.run_fixtures import Stored
from tests.support.runs import run_input, user_message
from tests.support.waits import REQUEST_SECONDS


@asynccontextmanager
async def run_inserts_held(database_url: str) -> AsyncIterator[Callable[[], Awaitable[None]]]:
    """Another connection keeps every insert into ``runs`` waiting (reads, and writes elsewhere, go on)
    until the ``release`` it yields is awaited, or the block is left."""
    engine = create_engine(database_url)
    try:
        async with engine.connect() as conn:
            transaction = await conn.begin()
            await conn.execute(text("LOCK TABLE runs IN EXCLUSIVE MODE"))

            async def release() -> None:
                if transaction.is_active:
                    await transaction.rollback()

            try:
                yield release
            finally:
                await release()
    finally:
        await engine.dispose()


Holder = Callable[[], AbstractAsyncContextManager[Callable[[], Awaitable[None]]]]


@pytest.fixture
def held_run_inserts(engine_name: str, database_url: str) -> Holder:
    """:func:`run_inserts_held` on this test's database (PostgreSQL only)."""
    if engine_name == "sqlite":
        pytest.skip("SQLite locks the whole file: only PostgreSQL can hold back the run's insert alone")
    return partial(run_inserts_held, database_url)


async def until_first_frame(chunks: AsyncIterator[bytes]) -> bytearray:
    """Read ``chunks`` until a whole SSE frame has come; what was read."""
    read = bytearray()
    while b"\n\n" not in read:
        read += await anext(chunks)
    return read


async def test_a_follower_on_the_same_process_is_served_before_the_intake_commit(
    base_url: str,
    alice: dict[str, str],
    stored: Stored,
    held_run_inserts: Holder,
    auth: Callable[..., dict[str, str]],
) -> None:
    body = run_input(str(uuid.uuid4()), user_message("hello there"), model="local/slow")
    events_path = f"/agent/runs/{body['runId']}/events"
    async with (
        httpx.AsyncClient(base_url=base_url, timeout=REQUEST_SECONDS) as http,
        held_run_inserts() as release,
        http.stream("POST", "/agent/runs", json=body, headers=alice) as started,
    ):
        assert started.status_code == 200
        posted_chunks = started.aiter_bytes()
        posted = await until_first_frame(posted_chunks)
        assert parse_sse(bytes(posted).partition(b"\n\n")[0] + b"\n\n")[0].data["type"] == "RUN_STARTED"
        assert await stored.run(body["runId"]) is None  # streaming, and not yet in the database

        # someone else's live run is still nobody's to follow
        assert (await http.get(events_path, headers=auth("mallory"))).status_code == 404
        async with http.stream("GET", events_path, headers=alice) as followed:
            assert followed.status_code == 200, (await followed.aread()).decode()
            followed_chunks = followed.aiter_bytes()
            got = await until_first_frame(followed_chunks)
            await release()  # the intake commit goes through now, and the run ends
            got += b"".join([chunk async for chunk in followed_chunks])
        posted += b"".join([chunk async for chunk in posted_chunks])

    # the follower got the whole run, every event once: what the caller got
    followed_events = check_stream(bytes(got))
    assert followed_events[-1]["type"] == "RUN_FINISHED"
    assert followed_events == check_stream(bytes(posted))
    assert await stored.run(body["runId"]) is not None


async def test_a_run_is_cancelled_from_its_process_before_the_intake_commit(
    base_url: str,
    alice: dict[str, str],
    stored: Stored,
    held_run_inserts: Holder,
    auth: Callable[..., dict[str, str]],
) -> None:
    words = " ".join(f"w{i}" for i in range(200))  # 8 s at 40 ms a token: only a cancel ends it sooner
    body = run_input(str(uuid.uuid4()), user_message(words), model="local/slow")
    cancel_path = f"/agent/runs/{body['runId']}/cancel"
    async with (
        httpx.AsyncClient(base_url=base_url, timeout=REQUEST_SECONDS) as http,
        held_run_inserts() as release,
        http.stream("POST", "/agent/runs", json=body, headers=alice) as started,
    ):
        chunks = started.aiter_bytes()
        posted = await until_first_frame(chunks)
        assert await stored.run(body["runId"]) is None  # not yet in the database
        assert (await http.post(cancel_path, headers=auth("mallory"))).status_code == 404
        cancelled = await http.post(cancel_path, headers=alice)
        assert cancelled.status_code == 202, cancelled.text
        await release()
        posted += b"".join([chunk async for chunk in chunks])
    events = check_stream(bytes(posted))
    assert events[-1]["type"] == "RUN_FINISHED"
    assert events[-1]["outcome"] == {"type": "cancelled"}
    run = await stored.run(body["runId"])
    assert run is not None
    assert run.status == "cancelled"

"""Quotas on both engines: each limit refuses with 429 ``quota_exceeded`` naming it, with the right
``Retry-After``, before any stream or storage write; limits hold across two app instances sharing one
database; admins are exempt.

Iris runs on real loopback sockets; the counters are the real database's. Windows are fixed (aligned to
the minute, hour, UTC day), so a test that fills one first waits out the last seconds of a window that
is about to end.
"""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import httpx
import msgspec
import pytest
from sqlalchemy.ext.asyncio import AsyncSession

from iris.app.asgi import create_app
from iris.app.errors import QuotaExceeded
from iris.app.persistence.db import create_engine
from iris.app.security.auth import Principal
from iris.app.security.quotas import admit_run
from iris.app.settings import Settings
from tests.support.agents import offer_sync
from tests.support.http_server import serve_asgi
from tests.support.images import image_bytes
from tests.support.openapi import ProblemLog
from tests.support.quotas import clear_of_window_end
from tests.support.run_fixtures import Stored

Headers = dict[str, str]
PNG = image_bytes("PNG", (64, 48))
SLOW = {"name": "Slow", "provider": "local", "modelId": "slow", "type": "vision", "options": {"delayMs": 500}}


@pytest.fixture
def stored(database_url: str) -> Stored:
    return Stored(database_url)


@pytest.fixture
def quota_settings(settings: Settings) -> Settings:
    """Tight limits for users and guests alike, so each test reaches them in a few requests."""
    return msgspec.structs.replace(
        settings,
        quota_user_runs_per_minute=3,
        quota_user_concurrent_runs=1,
        quota_user_uploads_per_minute=2,
        quota_guest_runs_per_minute=1,
        quota_guest_tokens_per_hour=2,
    )


@pytest.fixture
def launch() -> Iterator[Callable[[Settings], str]]:
    """Starts Iris instances on real sockets (``launch(settings)`` → base URL), stopped after the test."""
    with ExitStack() as stack:
        yield lambda settings: stack.enter_context(
            serve_asgi(create_app(settings, environ={}), lifespan="on")
        )


@pytest.fixture
def instances(
    quota_settings: Settings, launch: Callable[[Settings], str], auth: Callable[..., Headers]
) -> tuple[str, str]:
    """Two Iris instances on one database (the slow local model added through the first)."""
    first, second = launch(quota_settings), launch(quota_settings)
    created = httpx.post(f"{first}/api/models", json=SLOW, headers=auth("root", role="admin"))
    assert created.status_code == 201, created.text
    offer_sync(first, auth("root", role="admin"), "local/slow")
    return first, second


@pytest.fixture
async def http() -> AsyncIterator[httpx.AsyncClient]:
    """A client of the instances; afterwards, every problem it was answered must be documented."""
    problems = ProblemLog()
    async with httpx.AsyncClient(timeout=30, event_hooks={"response": [problems]}) as client:
        yield client
    assert problems.seen, "no refusal was seen"
    assert problems.undocumented() == [], "answered but not in the OpenAPI document"


def run_body(thread: str | None = None, model: str | None = None) -> dict[str, Any]:
    return {
        "threadId": thread or str(uuid.uuid4()),
        "runId": str(uuid.uuid4()),
        "messages": [{"id": str(uuid.uuid4()), "role": "user", "content": "hello"}],
        "forwardedProps": {"modelId": model} if model else {},
    }


async def start_run(http: httpx.AsyncClient, base: str, headers: Headers, **body: Any) -> httpx.Response:
    """POST a run and read it to its end."""
    return await http.post(f"{base}/agent/runs", json=run_body(**body), headers=headers)


def assert_refused(response: httpx.Response, limit: str, window: int, before: float, after: float) -> None:
    """429 ``quota_exceeded`` naming ``limit``, ``Retry-After`` = seconds until the window ends (±1 s)."""
    assert response.status_code == 429, response.text
    assert response.headers["content-type"].startswith("application/problem+json")
    problem = response.json()
    assert problem["code"] == "quota_exceeded"
    assert problem["extra"]["limit"] == limit
    retry_after = int(response.headers["retry-after"])
    assert problem["extra"]["retryAfterSeconds"] == retry_after
    if window:
        longest, shortest = window - before % window, window - after % window
        assert shortest - 1 <= retry_after <= longest + 1


async def test_runs_per_minute_hold_across_instances_and_all_run_surfaces(
    instances: tuple[str, str], http: httpx.AsyncClient, auth: Callable[..., Headers], stored: Stored
) -> None:
    first, second = instances
    alice = auth("alice")
    await clear_of_window_end(60)
    ok = await start_run(http, first, alice)
    chat = await http.post(f"{second}/api/agents/default/chat", json={"content": "hi"}, headers=alice)
    stateless = await http.post(
        f"{first}/api/llm/chat",
        json={"modelId": "local/text", "content": "hi", "stream": False},
        headers=alice,
    )
    assert [ok.status_code, chat.status_code, stateless.status_code] == [200, 200, 200], stateless.text
    counts = await stored.counts()

    for base in (second, first):
        thread = str(uuid.uuid4())
        before = time.time()
        refused = await start_run(http, base, alice, thread=thread)
        assert_refused(refused, "runs_per_minute", 60, before, time.time())
    before = time.time()
    refused = await http.post(f"{second}/api/agents/default/chat", json={"content": "hi"}, headers=alice)
    assert_refused(refused, "runs_per_minute", 60, before, time.time())
    refused = await http.post(
        f"{second}/api/llm/chat", json={"modelId": "local/text", "content": "hi"}, headers=alice
    )
    assert_refused(refused, "runs_per_minute", 60, before, time.time())

    assert await stored.counts() == counts  # refused before anything was stored
    other = await start_run(http, second, auth("bob"))  # limits are per principal
    assert other.status_code == 200


async def test_concurrent_runs_hold_across_instances(
    instances: tuple[str, str], http: httpx.AsyncClient, auth: Callable[..., Headers]
) -> None:
    first, second = instances
    alice = auth("alice")
    await clear_of_window_end(60, margin=20)
    body = run_body(model="local/slow")
    async with http.stream("POST", f"{first}/agent/runs", json=body, headers=alice) as streaming:
        assert streaming.status_code == 200
        lines = streaming.aiter_lines()
        async for line in lines:
            if line.startswith("data:") and json.loads(line[5:])["type"] == "RUN_STARTED":
                break

        refused = await start_run(http, second, alice)
        assert_refused(refused, "concurrent_runs", 0, 0, 0)
        assert refused.headers["retry-after"] == "5"

        cancelled = await http.post(f"{second}/agent/runs/{body['runId']}/cancel", headers=alice)
        assert cancelled.status_code == 202
        async for _ in lines:  # to the end of the cancelled run
            pass

    again = await start_run(http, second, alice)
    assert again.status_code == 200, again.text


async def test_guests_have_tight_limits_and_admins_none(
    instances: tuple[str, str], http: httpx.AsyncClient, auth: Callable[..., Headers]
) -> None:
    first, second = instances
    guest = auth("guest-1", role="guest")
    await clear_of_window_end(60)
    assert (await start_run(http, first, guest)).status_code == 200
    before = time.time()
    assert_refused(await start_run(http, second, guest), "runs_per_minute", 60, before, time.time())

    admin = auth("root", role="admin")
    answers = [await start_run(http, base, admin) for base in (first, second, first, second, first)]
    assert [a.status_code for a in answers] == [200] * 5


async def upload(http: httpx.AsyncClient, base: str, headers: Headers, thread: str) -> httpx.Response:
    return await http.post(
        f"{base}/api/files",
        files={"file": ("red.png", PNG, "image/png")},
        data={"threadId": thread},
        headers=headers,
    )


def stored_files(settings: Settings) -> list[Path]:
    return [p for p in (Path(settings.data_dir) / "storage").rglob("*") if p.is_file()]


async def test_uploads_per_minute_refuse_before_storage(
    instances: tuple[str, str],
    http: httpx.AsyncClient,
    auth: Callable[..., Headers],
    quota_settings: Settings,
) -> None:
    first, second = instances
    alice = auth("alice")
    await clear_of_window_end(60)
    thread = str(uuid.uuid4())
    assert (await upload(http, first, alice, thread)).status_code == 201
    assert (await upload(http, second, alice, thread)).status_code == 201
    files = stored_files(quota_settings)
    before = time.time()
    refused = await upload(http, first, alice, thread)
    assert_refused(refused, "uploads_per_minute", 60, before, time.time())
    assert stored_files(quota_settings) == files
    assert (await upload(http, second, auth("bob"), str(uuid.uuid4()))).status_code == 201


async def test_upload_bytes_per_day(
    quota_settings: Settings,
    launch: Callable[[Settings], str],
    http: httpx.AsyncClient,
    auth: Callable[..., Headers],
) -> None:
    daily = msgspec.structs.replace(
        quota_settings, quota_user_uploads_per_minute=0, quota_user_upload_bytes_per_day=len(PNG) * 3 // 2
    )
    first, second = launch(daily), launch(daily)
    alice = auth("alice")
    await clear_of_window_end(86_400)
    thread = str(uuid.uuid4())
    assert (await upload(http, first, alice, thread)).status_code == 201
    files = stored_files(daily)
    before = time.time()
    refused = await upload(http, second, alice, thread)  # a second image would pass 1.5 images' worth
    assert_refused(refused, "upload_bytes_per_day", 86_400, before, time.time())
    assert refused.json()["extra"]["allowed"] == len(PNG) * 3 // 2
    assert stored_files(daily) == files


async def test_guest_tokens_per_client_address_per_hour(
    instances: tuple[str, str], http: httpx.AsyncClient
) -> None:
    first, second = instances
    await clear_of_window_end(3600)
    tokens = [await http.post(f"{base}/api/auth/guest") for base in (first, second)]
    assert [t.status_code for t in tokens] == [201, 201]
    before = time.time()
    refused = await http.post(f"{first}/api/auth/guest")
    assert_refused(refused, "guest_tokens_per_hour", 3600, before, time.time())


async def test_racing_starts_on_two_engines_admit_exactly_the_limit(
    quota_settings: Settings, database_url: str
) -> None:
    """The counter is one atomic upsert: 12 starts racing through two engines (two processes' pools)
    admit exactly the limit, whatever the interleaving."""
    limited = msgspec.structs.replace(quota_settings, quota_user_runs_per_minute=5)
    alice = Principal(user_id="alice", role="user")
    engines = [create_engine(database_url) for _ in range(2)]

    async def start(index: int) -> bool:
        async with AsyncSession(engines[index % 2]) as db:
            try:
                await admit_run(db, alice, limited, stored=False)
            except QuotaExceeded:
                await db.rollback()
                return False
            await db.commit()
            return True

    try:
        await clear_of_window_end(60)
        admitted = await asyncio.gather(*(start(i) for i in range(12)))
    finally:
        for engine in engines:
            await engine.dispose()
    assert sum(admitted) == 5

"""An unavailable database (issue 13, defect 2): 503 ``database_unavailable`` with ``Retry-After`` before
any stream, ``RUN_ERROR`` ``database_unavailable`` after one started, and a log that ends the way the
client saw it once the database is back.

SQLite is locked by another connection holding ``BEGIN EXCLUSIVE`` (as another process would); a lock
wait ends after ``IRIS_SQLITE_LOCK_TIMEOUT_SECONDS``. PostgreSQL is a throwaway cluster of this test,
actually stopped mid-run and started again.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any

import httpx
import msgspec
import pytest
from sqlalchemy.engine import make_url

from iris.app.settings import Settings
from tests.conftest import JWT_SECRET
from tests.support.agui import parse_sse
from tests.support.databases import PostgresDatabases, migrate
from tests.support.images import image_bytes
from tests.support.postgres import TemporaryCluster
from tests.support.run_fixtures import Stored, iris
from tests.support.runs import run_input, user_message
from tests.support.sqlite_locks import sqlite_locked
from tests.support.waits import REQUEST_SECONDS, eventually

LOCK_TIMEOUT = 1.0
Outage = Callable[[], AbstractContextManager[None]]


def assert_unavailable(response: httpx.Response, started: float, *, deadline: float) -> None:
    assert response.status_code == 503, response.text
    assert response.headers["content-type"].startswith("application/problem+json")
    assert response.json()["code"] == "database_unavailable"
    assert int(response.headers["retry-after"]) > 0
    assert time.monotonic() - started < deadline


async def outage_scenario(settings: Settings, outage: Outage, *, reads_fail: bool, deadline: float) -> None:
    stored = Stored(settings.effective_database_url)
    async with iris(settings) as (http, alice):
        # a finished run and an upload to read and cancel later
        done = run_input(str(uuid.uuid4()), user_message("hello"))
        assert (await http.post("/agent/runs", json=done, headers=alice)).status_code == 200
        png = image_bytes("PNG", (32, 32), (10, 200, 10))

        # Long enough that a loaded machine cannot finish it before the outage (which ends it early).
        words = " ".join(f"w{i}" for i in range(600))
        body = run_input(str(uuid.uuid4()), user_message(words), model="local/slow")
        seen = b""
        async with http.stream("POST", "/agent/runs", json=body, headers=alice) as response:
            assert response.status_code == 200
            chunks = response.aiter_bytes()
            async for chunk in chunks:
                seen += chunk
                if seen.count(b"TEXT_MESSAGE_CONTENT") >= 3:
                    break
            with outage():
                seen += b"".join([chunk async for chunk in chunks])
                streamed = parse_sse(seen)
                last = streamed[-1]
                assert last.data["type"] == "RUN_ERROR", last.data
                assert last.data["code"] == "database_unavailable"

                started = time.monotonic()
                again = run_input(str(uuid.uuid4()), user_message("while down"))
                refused = await http.post("/agent/runs", json=again, headers=alice)
                assert_unavailable(refused, started, deadline=deadline)
                started = time.monotonic()
                chat = await http.post("/api/agents/default/chat", json={"content": "hi"}, headers=alice)
                assert_unavailable(chat, started, deadline=deadline)
                started = time.monotonic()
                uploaded = await http.post(
                    "/api/files",
                    files={"file": ("g.png", png, "image/png")},
                    data={"threadId": str(uuid.uuid4())},
                    headers=alice,
                )
                assert_unavailable(uploaded, started, deadline=deadline)
                started = time.monotonic()
                cancel = await http.post(f"/agent/runs/{done['runId']}/cancel", headers=alice)
                assert_unavailable(cancel, started, deadline=deadline)
                for path in (
                    f"/agent/threads/{done['threadId']}/messages",
                    "/api/agents/default/sessions",
                    f"/agent/runs/{done['runId']}/events",
                ):
                    started = time.monotonic()
                    read = await http.get(path, headers=alice)
                    if reads_fail:
                        assert_unavailable(read, started, deadline=deadline)
                    else:  # WAL: readers never wait for the writer
                        assert read.status_code == 200, read.text
                assert (await http.get("/healthz")).status_code == 200

        # back up: the run's log ends as the client saw it (the heartbeat records the ending)
        async def ended() -> list[dict[str, Any]] | None:
            logged = await stored.events(body["runId"])
            return logged if logged and logged[-1]["type"] == "RUN_ERROR" else None

        logged = await eventually(ended, within=REQUEST_SECONDS, what="the run's ending in the log")
        assert [(e["sequence"], e["type"]) for e in logged] == [
            (int(f.id or 0), f.data["type"]) for f in streamed
        ]
        assert logged[-1]["code"] == "database_unavailable"
        run_row = await stored.run(body["runId"])
        assert run_row is not None
        assert (run_row.status, run_row.error_code) == ("failed", "database_unavailable")
        # and everything works again
        later = run_input(str(uuid.uuid4()), user_message("back"))
        assert (await http.post("/agent/runs", json=later, headers=alice)).status_code == 200


@pytest.fixture
def engine_name() -> str:
    return "sqlite"


async def test_sqlite_locked_by_another_process_answers_503_and_the_run_ends_database_unavailable(
    settings: Settings,
) -> None:
    settings = msgspec.structs.replace(
        settings, sqlite_lock_timeout_seconds=LOCK_TIMEOUT, run_heartbeat_seconds=0.2
    )
    path = make_url(settings.effective_database_url).database
    assert path is not None
    await outage_scenario(settings, lambda: sqlite_locked(path), reads_fail=False, deadline=LOCK_TIMEOUT + 2)


@pytest.fixture
def cluster() -> Iterator[TemporaryCluster]:
    """A PostgreSQL cluster of this test alone: it gets stopped."""
    reason = TemporaryCluster.unavailable_reason()
    if reason:
        pytest.skip(f"PostgreSQL unavailable: {reason}")
    cluster = TemporaryCluster()
    try:
        cluster.start()
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture
def postgres_settings(cluster: TemporaryCluster, tmp_path: Path) -> Settings:
    databases = PostgresDatabases(f"postgresql+asyncpg://postgres@127.0.0.1:{cluster.port}/postgres")
    url = databases.url_for(databases.create())
    migrate(url)
    return Settings(
        data_dir=str(tmp_path / "data"), database_url=url, jwt_secret=JWT_SECRET, run_heartbeat_seconds=0.2
    )


async def test_postgresql_stopped_mid_run_answers_503_and_the_run_ends_database_unavailable(
    cluster: TemporaryCluster, postgres_settings: Settings
) -> None:
    @contextmanager
    def stopped() -> Iterator[None]:
        cluster.halt()
        try:
            yield
        finally:
            cluster.resume()

    await outage_scenario(postgres_settings, stopped, reads_fail=True, deadline=5.0)

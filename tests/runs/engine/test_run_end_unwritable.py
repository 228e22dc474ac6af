"""Issue 41, defect 2: a run that cannot write its end still ends, on every stream that follows it.

Another connection (standing in for another process) holds the SQLite file while a streaming run on a
slow model is cancelled: the run's event batch and its closing transaction get no turn within the lock
timeout. The cancelled run's ending failed inside its cancel handling, its task died with the exception
unretrieved, and its stream and its follower stayed open with no terminal event. Now both get exactly
one ``RUN_ERROR`` ``database_unavailable``, and once the file is free the run keeper records that
ending, so the log ends as the streams did.
"""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import msgspec
import pytest
from sqlalchemy.engine import make_url

from iris.app.settings import Settings
from tests.support.agui import check_stream
from tests.support.run_fixtures import Stored, iris
from tests.support.runs import run_input, user_message
from tests.support.sqlite_locks import sqlite_locked
from tests.support.waits import REQUEST_SECONDS, eventually

pytestmark = pytest.mark.slow
LOCK_TIMEOUT = 0.5


@pytest.fixture
def engine_name() -> str:
    return "sqlite"


async def read_rest(chunks: Any, seen: bytes) -> list[dict[str, Any]]:
    """The stream to its end (bounded: a stream that never ends fails here), checked as AG-UI."""
    async with asyncio.timeout(REQUEST_SECONDS):
        seen += b"".join([chunk async for chunk in chunks])
    return check_stream(seen)


async def until_content(chunks: Any, count: int) -> bytes:
    seen = b""
    async for chunk in chunks:
        seen += bytes(chunk)
        if seen.count(b"TEXT_MESSAGE_CONTENT") >= count:
            return seen
    raise AssertionError("the stream ended early")


async def test_a_cancelled_run_that_cannot_write_its_end_still_ends_every_stream(settings: Settings) -> None:
    settings = msgspec.structs.replace(
        settings, sqlite_lock_timeout_seconds=LOCK_TIMEOUT, run_heartbeat_seconds=0.2
    )
    path = make_url(settings.effective_database_url).database
    assert path is not None
    stored = Stored(settings.effective_database_url)
    words = " ".join(f"w{i}" for i in range(600))
    body = run_input(str(uuid.uuid4()), user_message(words), model="local/slow")
    run_id = body["runId"]
    async with iris(settings) as (http, alice):
        async with http.stream("POST", "/agent/runs", json=body, headers=alice) as own:
            assert own.status_code == 200
            own_chunks = own.aiter_bytes()
            own_seen = await until_content(own_chunks, 3)
            async with http.stream("GET", f"/agent/runs/{run_id}/events", headers=alice) as follower:
                assert follower.status_code == 200
                follower_chunks = follower.aiter_bytes()
                follower_seen = await until_content(follower_chunks, 3)
                with sqlite_locked(path):
                    cancelled = await http.post(f"/agent/runs/{run_id}/cancel", headers=alice)
                    assert cancelled.status_code == 202, cancelled.text
                    streams = [await read_rest(own_chunks, own_seen)]
                    streams.append(await read_rest(follower_chunks, follower_seen))
        for events in streams:
            terminal = [e for e in events if e["type"] in ("RUN_FINISHED", "RUN_ERROR")]
            assert len(terminal) == 1, terminal
            assert terminal[0] is events[-1]
            assert (terminal[0]["type"], terminal[0]["code"]) == ("RUN_ERROR", "database_unavailable")

        # The file is free again: the run keeper records the ending the streams got.
        async def ended() -> list[dict[str, Any]] | None:
            logged = await stored.events(run_id)
            return logged if logged and logged[-1]["type"] == "RUN_ERROR" else None

        logged = await eventually(ended, within=REQUEST_SECONDS, what="the run's ending in the log")
        assert logged[-1]["code"] == "database_unavailable"
        assert [e["type"] for e in logged] == [e["type"] for e in streams[0]]
        later = run_input(str(uuid.uuid4()), user_message("back"))
        again = await http.post("/agent/runs", json=later, headers=alice)
        assert check_stream(again.content)[-1]["type"] == "RUN_FINISHED"

"""One deadline for a SQLite write turn, and a run's ending sent at once (issue 27, defect 3).

Another *process* holds the database file (``BEGIN EXCLUSIVE``) while a run streams. The run's next
event batch waits for the file and gives up at ``IRIS_SQLITE_LOCK_TIMEOUT_SECONDS``; its
``RUN_ERROR`` ``database_unavailable`` reaches the client then, not after more tries to record it (the
heartbeat records it once the file is free). A new run started meanwhile waits behind that batch for
this process's write turn and then for the file: both waits together stay within the same deadline,
and it is answered 503 ``database_unavailable``.
"""

from __future__ import annotations

import asyncio
import time
import uuid

import msgspec
import pytest
from sqlalchemy.engine import make_url

from iris.app.runs.store.event_store import BATCH_SECONDS
from iris.app.settings import Settings
from tests.support.agui import parse_sse
from tests.support.run_fixtures import Stored, iris
from tests.support.runs import run_input, user_message
from tests.support.sqlite_locks import held_by_another_process

LOCK_TIMEOUT = 3.0
SLACK = 1.0
"""Start-up of the requests and event batches on a loaded machine; two deadlines would be 3 s more."""
QUIET = 0.6
"""No event for this long (the slow model sends one every 40 ms): the run is waiting for the file."""


@pytest.fixture
def engine_name() -> str:
    return "sqlite"


async def test_a_locked_file_ends_the_running_run_and_refuses_a_new_one_within_one_deadline(
    settings: Settings,
) -> None:
    # The default heartbeat (5 s): a faster one would take this process's write turn between the
    # run's batch and the new run and so hide the wait this test is about.
    settings = msgspec.structs.replace(settings, sqlite_lock_timeout_seconds=LOCK_TIMEOUT)
    path = make_url(settings.effective_database_url).database
    assert path is not None
    stored = Stored(settings.effective_database_url)
    async with iris(settings) as (http, alice):
        words = " ".join(f"w{i}" for i in range(500))  # 40 ms a word: far longer than the test
        body = run_input(str(uuid.uuid4()), user_message(words), model="local/slow")
        async with http.stream("POST", "/agent/runs", json=body, headers=alice) as response:
            assert response.status_code == 200
            chunks = response.aiter_bytes()
            seen = b""
            async for chunk in chunks:
                seen += chunk
                if seen.count(b"TEXT_MESSAGE_CONTENT") >= 3:
                    break

            arrivals: list[float] = []
            quiet = asyncio.Event()

            async def rest_of_stream() -> bytes:
                """The rest of the stream; ``quiet`` is set once no event came for :data:`QUIET`."""
                tail = b""
                while True:
                    read = asyncio.ensure_future(anext(chunks, None))
                    while not (await asyncio.wait([read], timeout=QUIET))[0]:
                        quiet.set()
                    chunk = read.result()
                    if chunk is None:
                        quiet.set()
                        return tail
                    tail += chunk
                    arrivals.append(time.monotonic())

            with held_by_another_process(path) as locked_at:
                ending = asyncio.create_task(rest_of_stream())
                # The run stops streaming once its next event batch waits for the file (it holds this
                # process's write turn meanwhile): then start a run that has to wait behind it.
                await quiet.wait()
                asked = time.monotonic()
                again = run_input(str(uuid.uuid4()), user_message("while locked"))
                refused = await http.post("/agent/runs", json=again, headers=alice)
                refused_after = time.monotonic() - asked
                tail = await ending
                ended_at = arrivals[-1]
    streamed = parse_sse(seen + tail)

    assert refused.status_code == 503, refused.text
    assert refused.json()["code"] == "database_unavailable"
    last = streamed[-1].data
    assert (last["type"], last.get("code")) == ("RUN_ERROR", "database_unavailable"), last
    ended_after = ended_at - locked_at
    timings = f"503 after {refused_after:.2f} s, RUN_ERROR {ended_after:.2f} s after the lock"
    assert refused_after < LOCK_TIMEOUT + SLACK, timings
    assert ended_after < BATCH_SECONDS + LOCK_TIMEOUT + SLACK, timings

    # once the file is free, the heartbeat records the ending the client saw
    logged: list[dict[str, object]] = []
    for _ in range(200):
        logged = await stored.events(body["runId"])
        if logged and logged[-1]["type"] == "RUN_ERROR":
            break
        await asyncio.sleep(0.1)
    seen_by_client = [(int(f.id or 0), f.data["type"]) for f in streamed]
    assert [(e["sequence"], e["type"]) for e in logged] == seen_by_client

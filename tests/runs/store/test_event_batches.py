"""A run's event log is appended in batches while it streams (app/runs/store/event_store.py): a batch due by
time is written without the run waiting for it, so a slow database never holds the live stream back,
and what streams meanwhile goes in the next batch instead of one transaction per event."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from itertools import pairwise

import httpx
from sqlalchemy import text
from sqlalchemy.engine import make_url

from iris.app.persistence.db import create_engine
from tests.support.agui import check_stream
from tests.support.run_fixtures import Stored
from tests.support.runs import of_type, run_input, user_message
from tests.support.waits import REQUEST_SECONDS

LOCK_SECONDS = 1.2


@contextmanager
def sqlite_write_lock(database_url: str) -> Iterator[Callable[[], None]]:
    """``hold()`` makes another connection (as another process would) take the file's write lock for
    LOCK_SECONDS, on a thread of its own."""
    path = make_url(database_url).database or ""  # unused on PostgreSQL
    threads: list[threading.Thread] = []

    def held() -> None:
        conn = sqlite3.connect(path, timeout=REQUEST_SECONDS, check_same_thread=False)
        conn.execute("BEGIN IMMEDIATE")
        time.sleep(LOCK_SECONDS)
        conn.rollback()
        conn.close()

    def hold() -> None:
        threads.append(threading.Thread(target=held))
        threads[-1].start()

    yield hold
    for thread in threads:
        thread.join(REQUEST_SECONDS)


async def postgresql_log_lock(database_url: str, started: asyncio.Event) -> None:
    """Another connection holds ``run_events`` against inserts (reads go on) for LOCK_SECONDS; ``started``
    is set once it does."""
    engine = create_engine(database_url)
    try:
        async with engine.begin() as conn:
            await conn.execute(text("LOCK TABLE run_events IN SHARE MODE"))
            started.set()
            await asyncio.sleep(LOCK_SECONDS)
    finally:
        await engine.dispose()


async def test_a_slow_log_write_never_holds_the_live_stream_back(
    base_url: str, alice: dict[str, str], database_url: str, stored: Stored
) -> None:
    """``local/slow`` streams a token every 40 ms; a quarter of a second in, the log's next batch is due
    while another connection keeps the log from being written for LOCK_SECONDS. The stream goes on at
    its pace meanwhile (a run that waited for the batch stalled for the rest of the lock, and under
    many runs at once wrote one transaction per event), and the log ends up holding every event the
    client saw, numbered as it saw them."""
    body = run_input(
        str(uuid.uuid4()), user_message(" ".join(f"w{i}" for i in range(60))), model="local/slow"
    )
    arrivals: list[float] = []
    lines: list[str] = []
    tasks: list[asyncio.Task[None]] = []
    with sqlite_write_lock(database_url) as hold_sqlite:
        async with (
            httpx.AsyncClient(timeout=REQUEST_SECONDS) as client,
            client.stream("POST", f"{base_url}/agent/runs", json=body, headers=alice) as response,
        ):
            assert response.status_code == 200
            async for line in response.aiter_lines():
                lines.append(line)
                if not line.startswith("data:") or "TEXT_MESSAGE_CONTENT" not in line:
                    continue
                arrivals.append(time.monotonic())
                if len(arrivals) == 3:  # the intake is stored; the first time-based batch is due soon
                    if database_url.startswith("sqlite"):
                        hold_sqlite()
                    else:
                        locked = asyncio.Event()
                        tasks.append(asyncio.create_task(postgresql_log_lock(database_url, locked)))
                        await locked.wait()
                    locked_at = time.monotonic()
        await asyncio.gather(*tasks)
    events = check_stream(("\n".join(lines) + "\n").encode())
    during = [b - a for a, b in pairwise(arrivals) if b >= locked_at and a <= locked_at + LOCK_SECONDS]
    assert during, "the run ended before the lock did: make it longer"
    assert max(during) < LOCK_SECONDS / 3, f"the stream stalled {max(during):.2f} s while the log was locked"
    assert events[-1]["type"] == "RUN_FINISHED"
    logged = await stored.events(body["runId"])
    assert [e["sequence"] for e in logged] == list(range(1, len(events) + 1))
    assert [{k: v for k, v in e.items() if k != "sequence"} for e in logged] == events
    assert len(of_type(events, "TEXT_MESSAGE_CONTENT")) > 40

"""Runs across real processes sharing one database: re-attach and cancel through another instance,
and recovery after a process is killed mid-run (SQLite file, and PostgreSQL where it can start)."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import text

from iris.app.persistence.db import create_engine
from iris.app.persistence.repositories import RUN_EVENTS_CHANNEL
from iris.app.settings import Settings
from tests.conftest import JWT_SECRET
from tests.support.agents import offer_sync
from tests.support.agui import check_lifecycle, check_stream, parse_sse_with_comments
from tests.support.iris_process import IrisProcess, iris_process
from tests.support.postgres import free_port
from tests.support.run_fixtures import SLOW_MODEL, Stored
from tests.support.runs import run_input, user_message
from tests.support.waits import REQUEST_SECONDS, until

Env = dict[str, str]


@pytest.fixture
def shared_env(settings: Settings) -> tuple[Env, int]:
    """Settings every instance shares (database, data dir, secret, public URL), and instance A's port."""
    port = free_port()
    env = {
        "IRIS_DATA_DIR": settings.data_dir,
        "IRIS_DATABASE_URL": settings.effective_database_url,
        "IRIS_JWT_SECRET": JWT_SECRET,
        "IRIS_PUBLIC_URL": f"http://127.0.0.1:{port}",
        "IRIS_RUN_HEARTBEAT_SECONDS": "0.2",
        "IRIS_RUN_STALE_SECONDS": "1.5",
    }
    return env, port


@pytest.fixture
def instance_a(
    shared_env: tuple[Env, int], tmp_path: Path, auth: Callable[..., dict[str, str]]
) -> Iterator[IrisProcess]:
    env, port = shared_env
    with iris_process(env, port, tmp_path / "a.log") as process:
        admin = auth("root", role="admin")
        created = httpx.post(
            f"{process.base_url}/api/models", json=SLOW_MODEL, headers=admin, timeout=REQUEST_SECONDS
        )
        assert created.status_code == 201, created.text
        offer_sync(process.base_url, admin, "local/slow")
        yield process


@contextmanager
def started_run(
    base: str, headers: dict[str, str], words: int
) -> Iterator[tuple[dict[str, Any], Iterator[bytes]]]:
    """A slow run on ``base``: its input and its event stream, as it arrives."""
    text = " ".join(f"w{i}" for i in range(words))
    body = run_input(str(uuid.uuid4()), user_message(text), model="local/slow")
    with (
        httpx.Client(base_url=base, timeout=REQUEST_SECONDS) as client,
        client.stream("POST", "/agent/runs", json=body, headers=headers) as response,
    ):
        assert response.status_code == 200
        yield body, response.iter_bytes()


def read_until(chunks: Iterator[bytes], marker: bytes) -> bytes:
    seen = b""
    for chunk in chunks:
        seen += chunk
        if marker in seen and seen.endswith(b"\n\n"):
            break
    return seen


def test_a_run_streaming_on_one_instance_is_followed_from_another(
    instance_a: IrisProcess, shared_env: tuple[Env, int], tmp_path: Path, alice: dict[str, str]
) -> None:
    env, _ = shared_env
    with (
        iris_process(env, free_port(), tmp_path / "b.log") as b,
        started_run(instance_a.base_url, alice, words=40) as (body, chunks),
    ):
        on_a = read_until(chunks, b"TEXT_MESSAGE_CONTENT")
        assert b"RUN_FINISHED" not in on_a  # still streaming on A
        url = f"{b.base_url}/agent/runs/{body['runId']}/events?after=0"
        followed = httpx.get(url, headers=alice, timeout=REQUEST_SECONDS)
        on_a += b"".join(chunks)

        listeners = asyncio.run(_listening_backends(env["IRIS_DATABASE_URL"]))

    assert followed.status_code == 200
    assert check_stream(followed.content) == check_stream(on_a)  # every event, once, in order
    ids_a = [f.id for f in parse_sse_with_comments(on_a)[0]]
    ids_b = [f.id for f in parse_sse_with_comments(followed.content)[0]]
    assert ids_a == ids_b
    if env["IRIS_DATABASE_URL"].startswith("postgresql"):
        assert listeners >= 2  # both instances LISTEN: B was woken by A's notices, not by polling


async def _listening_backends(database_url: str) -> int:
    """How many PostgreSQL backends listen for run-event notices (0 on SQLite)."""
    if not database_url.startswith("postgresql"):
        return 0
    engine = create_engine(database_url)
    try:
        async with engine.connect() as connection:
            count = await connection.scalar(
                text("SELECT count(*) FROM pg_stat_activity WHERE query = :listen"),
                {"listen": f'LISTEN "{RUN_EVENTS_CHANNEL}"'},
            )
    finally:
        await engine.dispose()
    return int(count or 0)


def test_a_cancel_through_another_instance_stops_the_run(
    instance_a: IrisProcess, shared_env: tuple[Env, int], tmp_path: Path, alice: dict[str, str]
) -> None:
    env, _ = shared_env
    with (
        iris_process(env, free_port(), tmp_path / "b.log") as b,
        started_run(instance_a.base_url, alice, words=200) as (body, chunks),
    ):
        seen = read_until(chunks, b"TEXT_MESSAGE_CONTENT")
        cancelled = httpx.post(
            f"{b.base_url}/agent/runs/{body['runId']}/cancel", headers=alice, timeout=REQUEST_SECONDS
        )
        assert cancelled.status_code == 202
        seen += b"".join(chunks)

    events = check_stream(seen)
    assert events[-1]["outcome"] == {"type": "cancelled"}
    assert sum(e["type"] == "TEXT_MESSAGE_CONTENT" for e in events) < 150


def test_a_run_of_a_killed_process_is_failed_and_re_attach_ends_with_run_error(
    instance_a: IrisProcess,
    shared_env: tuple[Env, int],
    tmp_path: Path,
    alice: dict[str, str],
    stored: Stored,
) -> None:
    env, _ = shared_env
    with started_run(instance_a.base_url, alice, words=400) as (body, chunks):
        seen = read_until(chunks, b"TEXT_MESSAGE_CONTENT")
        until(
            lambda: asyncio.run(stored.events(body["runId"])),
            within=REQUEST_SECONDS,
            what="a batch of the run's events in the log",
        )
        instance_a.kill()
    assert b"RUN_FINISHED" not in seen

    with iris_process(env, free_port(), tmp_path / "b.log") as b:
        url = f"{b.base_url}/agent/runs/{body['runId']}/events"
        followed = httpx.get(url, headers=alice, timeout=REQUEST_SECONDS)
        history = httpx.get(
            f"{b.base_url}/agent/threads/{body['threadId']}/messages", headers=alice, timeout=REQUEST_SECONDS
        ).json()

    events = [f.data for f in parse_sse_with_comments(followed.content)[0]]
    check_lifecycle(events)
    assert events[0]["type"] == "RUN_STARTED"
    assert events[-1]["type"] == "RUN_ERROR"
    assert events[-1]["code"] == "run_lost"
    assert [m["role"] for m in history["messages"]] == ["user"]  # no assistant or tool rows from it


def test_after_a_crash_re_attach_never_gets_an_event_id_that_goes_backwards(
    instance_a: IrisProcess,
    shared_env: tuple[Env, int],
    tmp_path: Path,
    alice: dict[str, str],
    stored: Stored,
) -> None:
    """Events streamed but not yet logged when the process died: the lost-run RUN_ERROR is numbered
    above them, so a client re-attaching with the last id it saw still gets the end (issue 13, defect 6)."""
    env, _ = shared_env
    with started_run(instance_a.base_url, alice, words=400) as (body, chunks):
        seen = read_until(chunks, b"TEXT_MESSAGE_CONTENT")

        def frozen_past_the_log() -> int | None:
            """Freeze A; the last id seen when the client is ahead of A's log, else let A go on a chunk."""
            nonlocal seen
            instance_a.pause()
            whole = seen[: seen.rfind(b"\n\n") + 2]  # a chunk may end inside a frame
            last = max(int(frame.id or 0) for frame in parse_sse_with_comments(whole)[0])
            logged = [e["sequence"] for e in asyncio.run(stored.events(body["runId"]))]
            if not logged or max(logged) < last:
                return last
            instance_a.resume()
            seen += next(chunks)
            return None

        # The scenario: A dies with events streamed but not in the log yet. A loaded machine may let A
        # log all the client has read before a kill lands, so A is frozen at a moment the client is ahead.
        last_seen = until(
            frozen_past_the_log, within=REQUEST_SECONDS, what="the stream ahead of the log", every=0
        )
        instance_a.kill()

    with iris_process(env, free_port(), tmp_path / "b.log") as b:
        url = f"{b.base_url}/agent/runs/{body['runId']}/events"
        followed = httpx.get(url, headers={**alice, "Last-Event-ID": str(last_seen)}, timeout=REQUEST_SECONDS)

    frames = parse_sse_with_comments(followed.content)[0]
    assert [(f.data["type"], f.data["code"]) for f in frames] == [("RUN_ERROR", "run_lost")]
    assert int(frames[0].id or 0) > last_seen

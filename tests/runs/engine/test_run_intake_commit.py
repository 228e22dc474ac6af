"""A run starts while its intake commits; a commit that fails ends it with one RUN_ERROR, nothing stored.

The database itself refuses the commit (the ``doomed_commits`` fixture of tests/support/run_fixtures.py) for
runs whose id starts with ``doomed-``. Every statement of the intake succeeds; only its commit fails,
after the stream started.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable

import httpx
import msgspec
import pytest
from litestar import Litestar
from litestar.testing import AsyncTestClient

from iris.app.asgi import create_app
from iris.app.settings import Settings
from tests.support.quotas import clear_of_window_end
from tests.support.run_fixtures import Stored
from tests.support.runs import of_type, run, run_input, upload, user_message
from tests.support.waits import REQUEST_SECONDS, eventually

Client = AsyncTestClient[Litestar]


@pytest.mark.usefixtures("doomed_commits")
async def test_a_failed_intake_commit_is_one_run_error_and_stores_nothing(
    client: Client, auth: Callable[..., dict[str, str]], stored: Stored
) -> None:
    alice = auth("alice")
    before = await stored.counts()
    thread = str(uuid.uuid4())
    body = run_input(thread, user_message("hello there"), run_id=f"doomed-{uuid.uuid4()}")

    events = await run(client, alice, body)  # the AG-UI oracle checks the whole stream

    assert events[0]["type"] == "RUN_STARTED"  # the stream started before the commit failed
    errors = of_type(events, "RUN_ERROR")
    assert len(errors) == 1
    assert events[-1] is errors[0]
    assert errors[0]["code"] == "run_not_stored"
    assert not of_type(events, "RUN_FINISHED")
    assert await stored.counts() == before  # no session, message, run or event row
    assert await stored.run(body["runId"]) is None
    assert await stored.messages(thread) == []


async def test_the_intake_writes_the_thread_its_run_and_its_messages(
    client: Client, auth: Callable[..., dict[str, str]], stored: Stored
) -> None:
    """What the intake's own statements write (no ORM flush, :mod:`iris.app.persistence.repositories.
    intake_rows`): a new thread, then the same thread continued, every column a reader relies on."""
    alice = auth("alice")
    thread = str(uuid.uuid4())
    image = await upload(client, alice, thread)
    first = run_input(thread, user_message("  Look   at this  ", image["parts"]["agui"], message_id="u1"))
    await run(client, alice, first)
    pk = await stored.session_pk(thread)
    session = await stored.session(thread)
    assert session.title == "Look at this"
    assert session.pinned is False
    assert session.deleted_at is None
    assert session.archived_at is None
    started = session.last_activity_at
    second = run_input(thread, user_message("and again", message_id="u2"), model="local/text")
    await run(client, alice, second)

    rows = await stored.messages(thread)
    assert [(r.role, r.external_id, r.position) for r in rows] == [
        ("user", "u1", 0),
        ("assistant", rows[1].external_id, 1),
        ("user", "u2", 2),
        ("assistant", rows[3].external_id, 3),
    ]
    assert [r.parent_id for r in rows] == [None, rows[0].id, rows[1].id, rows[2].id]
    assert all(r.session_id == pk and r.superseded_at is None and r.created_at for r in rows)
    user = rows[0]
    assert "Look" in user.content
    assert [p["type"] for p in user.parts or ()] == ["text", "image"]
    assert user.parts is not None
    assert user.parts[1]["uploadId"] == image["id"]
    assert isinstance(user.meta, dict)
    runs = [await stored.run(body["runId"]) for body in (first, second)]
    for body, row, (asked, answer) in zip(
        (first, second), runs, ((rows[0], rows[1]), (rows[2], rows[3])), strict=True
    ):
        assert row is not None
        assert row.external_id == body["runId"]
        assert row.session_id == pk
        assert row.owner_id == "alice"
        assert row.status == "succeeded"
        assert row.agent_version_id is not None
        assert row.started_at <= row.heartbeat_at  # type: ignore[operator]
        assert asked.run_id == row.id
        assert answer.run_id == row.id
    assert runs[1] is not None
    assert runs[1].model_ref == "local/text"
    moved = await stored.session(thread)
    assert moved.title == "Look at this"  # the continued thread keeps its title
    assert moved.active_leaf_id == rows[3].id
    assert moved.model_id == runs[1].model_id
    assert moved.last_activity_at > started


@pytest.mark.usefixtures("doomed_commits")
async def test_a_run_whose_intake_is_not_stored_uses_no_quota(
    database_url: str, settings: Settings, auth: Callable[..., dict[str, str]], stored: Stored
) -> None:
    """The quota's count is in the intake's transaction: a failed commit takes it back, so the run
    that follows is admitted, and the one after that is the one over the limit (counted once each)."""
    await clear_of_window_end(60)
    limited = msgspec.structs.replace(settings, quota_user_runs_per_minute=1)
    alice = auth("alice")
    async with AsyncTestClient(app=create_app(limited, environ={})) as client:
        doomed = run_input(str(uuid.uuid4()), user_message("hi"), run_id=f"doomed-{uuid.uuid4()}")
        events = await run(client, alice, doomed)
        assert events[-1]["code"] == "run_not_stored"
        admitted = await run(client, alice, run_input(str(uuid.uuid4()), user_message("hi")))
        assert admitted[-1]["type"] == "RUN_FINISHED"
        over = await client.post(
            "/agent/runs", json=run_input(str(uuid.uuid4()), user_message("hi")), headers=alice
        )
        assert over.status_code == 429, over.text
        assert over.json()["extra"]["limit"] == "runs_per_minute"


async def test_while_a_continued_thread_runs_it_ends_at_the_new_user_message(
    base_url: str, alice: dict[str, str], stored: Stored
) -> None:
    """The thread's update is the intake's, not the closing transaction's: once the run row is there
    (what a re-attach from another instance finds), the thread already names the run's model and ends
    at its user message; the answer moves it on at the end."""
    thread = str(uuid.uuid4())
    async with httpx.AsyncClient(base_url=base_url, timeout=REQUEST_SECONDS) as client:
        first = await client.post("/agent/runs", json=run_input(thread, user_message("hi")), headers=alice)
        assert first.status_code == 200, first.text
        words = " ".join(f"w{i}" for i in range(200))  # ~8 s of tokens at 40 ms each
        body = run_input(thread, user_message(words, message_id="u2"), model="local/slow")
        async with client.stream("POST", "/agent/runs", json=body, headers=alice) as response:
            assert response.status_code == 200
            chunks = response.aiter_bytes()
            assert b"RUN_STARTED" in await anext(chunks)
            running = await eventually(
                lambda: stored.run(body["runId"]), within=REQUEST_SECONDS, what="the run row"
            )
            assert running.status == "running"
            session = await stored.session(thread)
            asked = [row for row in await stored.messages(thread) if row.external_id == "u2"]
            assert len(asked) == 1
            assert asked[0].run_id == running.id
            assert session.active_leaf_id == asked[0].id
            assert session.model_id == running.model_id
            assert running.model_ref == "local/slow"
            rest = b"".join([chunk async for chunk in chunks])
        assert b"RUN_FINISHED" in rest
    rows = await stored.messages(thread)
    assert (await stored.session(thread)).active_leaf_id == rows[-1].id
    assert rows[-1].role == "assistant"

"""Repositories against real databases (SQLite file, PostgreSQL where available)."""

from __future__ import annotations

import asyncio
import datetime as dt
import uuid
from typing import Any

import msgspec
import pytest
from advanced_alchemy.exceptions import DuplicateKeyError, IntegrityError
from sqlalchemy import exc as sa_exc
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession

from iris.app.catalogue.defaults import seed_catalogue
from iris.app.errors import NotFound
from iris.app.persistence.db import create_alchemy_config
from iris.app.persistence.models import ChatSession, Run, Upload
from iris.app.persistence.repositories import (
    AgentRepository,
    MessageRepository,
    ModelRepository,
    RunEventRepository,
    RunRepository,
    SessionRepository,
    UploadRepository,
    utcnow,
)
from iris.app.security.access import owned_session, owned_upload
from iris.app.security.auth import Principal
from iris.app.settings import Settings
from iris.app.threads import thread_segment
from tests.factories import AgentFactory, ModelRowFactory


async def _agent(db: AsyncSession) -> uuid.UUID:
    agent = await AgentRepository(session=db).add(AgentFactory.build(slug=f"a-{uuid.uuid4().hex[:8]}"))
    return agent.id


async def test_model_lookup_by_uuid_and_ref(db_session: AsyncSession) -> None:
    repo = ModelRepository(session=db_session)
    row = await repo.add(ModelRowFactory.build(provider="openai", model_id="org/gpt-x", name="X"))
    assert (await repo.get_by_ref(str(row.id))) is row
    assert (await repo.get_by_ref("openai/org/gpt-x")) is row  # vendor ids may contain slashes
    assert await repo.get_by_ref("openai/nope") is None
    assert await repo.get_by_ref("no-slash") is None
    assert await repo.get_by_ref(str(uuid.uuid4())) is None


async def test_model_catalogue_filters(db_session: AsyncSession) -> None:
    repo = ModelRepository(session=db_session)
    await repo.add(ModelRowFactory.build(model_id="on", name="a", enabled=True, guest_visible=True))
    await repo.add(ModelRowFactory.build(model_id="hidden", name="b", enabled=True, guest_visible=False))
    await repo.add(ModelRowFactory.build(model_id="off", name="c", enabled=False, guest_visible=True))
    assert [m.model_id for m in await repo.list_catalogue(include_disabled=False)] == ["on", "hidden"]
    assert len(await repo.list_catalogue(include_disabled=True)) == 3
    assert [m.model_id for m in await repo.list_guest_visible()] == ["on"]


async def test_provider_model_pair_is_unique(db_session: AsyncSession) -> None:
    repo = ModelRepository(session=db_session)
    await repo.add(ModelRowFactory.build(provider="p", model_id="m"))
    with pytest.raises((DuplicateKeyError, IntegrityError)):
        await repo.add(ModelRowFactory.build(provider="p", model_id="m"))


async def test_sessions_are_owner_scoped_and_sorted_by_activity(db_session: AsyncSession) -> None:
    agent_id = await _agent(db_session)
    repo = SessionRepository(session=db_session)
    older = repo.create_for_owner("thread_a", "alice", agent_id, None)
    newer = repo.create_for_owner("Thread_A", "alice", agent_id, None)  # ids are case-sensitive
    bobs = repo.create_for_owner("thread_a", "bob", agent_id, None)  # scoped to their owner
    older.last_activity_at = utcnow() - dt.timedelta(hours=1)
    newer.last_activity_at = utcnow()

    assert [s.id for s in await repo.list_for_owner("alice", agent_id)] == [newer.id, older.id]
    assert (await repo.get_owned("thread_a", "alice")) is older
    assert (await repo.get_owned("thread_a", "bob")) is bobs
    assert await repo.get_owned("thread_b", "alice") is None
    repo.create_for_owner("thread_a", "alice", agent_id, None)  # written with the transaction
    with pytest.raises((DuplicateKeyError, IntegrityError, sa_exc.IntegrityError)):
        await db_session.flush()
    await db_session.rollback()


async def test_deleted_sessions_keep_their_thread_id(db_session: AsyncSession) -> None:
    agent_id = await _agent(db_session)
    repo = SessionRepository(session=db_session)
    older = repo.create_for_owner("t1", "alice", agent_id, None)
    await repo.soft_delete(older)
    assert await repo.list_for_owner("alice", agent_id) == []
    assert await repo.get_owned("t1", "alice") is None
    assert (await repo.get_for_owner("t1", "alice")) is older  # soft: the row and its id are still there


async def test_access_check_hides_other_users_sessions(db_session: AsyncSession) -> None:
    agent_id = await _agent(db_session)
    sessions = SessionRepository(session=db_session)
    mine = sessions.create_for_owner("mine", "alice", agent_id, None)
    alice, bob = Principal(user_id="alice", role="user"), Principal(user_id="bob", role="user")
    assert (await owned_session(sessions, alice, "mine")).id == mine.id
    with pytest.raises(NotFound) as caught:
        await owned_session(sessions, bob, "mine")
    assert caught.value.code == "thread_not_found"
    with pytest.raises(NotFound):
        await owned_session(sessions, alice, "MINE")


async def test_messages_append_in_order_and_supersede(db_session: AsyncSession) -> None:
    agent_id = await _agent(db_session)
    session = SessionRepository(session=db_session).create_for_owner(str(uuid.uuid4()), "u", agent_id, None)
    repo = MessageRepository(session=db_session)
    parts: list[dict[str, Any]] = [
        {"type": "text", "text": "què és això? 🖼"},
        {"type": "image", "bucket": "iris", "path": "agent-inputs/u/t/uploads/x.png", "width": 3},
    ]
    first = await repo.append(
        session.id, role="user", content="què és això? 🖼", parts=parts, external_id="m1"
    )
    second = await repo.append(
        session.id, role="assistant", content="a", meta={"worker_agent_output": {"x": 1}}
    )
    third = await repo.append(session.id, role="user", content="again", external_id="m3")
    assert [m.position for m in (first, second, third)] == [0, 1, 2]

    db_session.expunge_all()
    history = await repo.active_history(session.id)
    assert [m.content for m in history] == ["què és això? 🖼", "a", "again"]
    assert history[0].parts == parts  # JSON round-trip, unicode intact
    assert history[1].meta == {"worker_agent_output": {"x": 1}}
    assert history[0].created_at.tzinfo is not None
    assert history[0].created_at.utcoffset() == dt.timedelta(0)

    assert await repo.known_ids(session.id, ["m1", "m3", "m9"]) == {"m1": first.id, "m3": third.id}
    assert await repo.known_ids(session.id, [str(second.id)]) == {str(second.id): second.id}  # ours
    assert await repo.known_ids(session.id, []) == {}
    # Appended messages form one line, each following the one before; the session's leaf is the last.
    assert [m.parent_id for m in history] == [None, first.id, second.id]
    assert (await db_session.get(ChatSession, session.id)).active_leaf_id == third.id  # type: ignore[union-attr]

    await repo.move_line(session.id, [first.id])
    await SessionRepository(session=db_session).touch_id(session.id, leaf_id=first.id)
    assert [m.content for m in await repo.active_history(session.id)] == ["què és això? 🖼"]
    page = await repo.list_page(session.id, include_superseded=True)
    assert [m.position for m in page] == [0, 1, 2]
    assert [m.position for m in await repo.list_page(session.id, after_position=0, limit=1)] == []

    # Superseded rows keep their positions; a new message goes after all of them, on the active line.
    fourth = await repo.append(session.id, role="user", content="edited")
    assert (fourth.position, fourth.parent_id) == (3, first.id)
    await repo.move_line(session.id, [first.id, second.id, third.id])  # the old line comes back
    assert [m.content for m in await repo.active_history(session.id)] == ["què és això? 🖼", "a", "again"]


async def test_runs_and_event_log(db_session: AsyncSession) -> None:
    agent_id = await _agent(db_session)
    session = SessionRepository(session=db_session).create_for_owner(str(uuid.uuid4()), "u", agent_id, None)
    runs = RunRepository(session=db_session)
    run = await runs.add(
        Run(external_id="run-1", session_id=session.id, owner_id="u", status="running", started_at=utcnow())
    )
    assert await runs.get_by_external_id("run-1") is run
    assert (await runs.active_for_session(session.id)) is run
    run.status = "succeeded"
    await db_session.flush()
    assert await runs.active_for_session(session.id) is None

    events = RunEventRepository(session=db_session)
    await events.append_batch(
        run.id, [(i, {"type": "TEXT_MESSAGE_CONTENT", "delta": str(i)}) for i in range(1, 6)]
    )
    await events.append_batch(run.id, [])
    after = await events.list_after(run.id, 2)
    assert [e.sequence for e in after] == [3, 4, 5]
    assert after[0].event == {"type": "TEXT_MESSAGE_CONTENT", "delta": "3"}
    assert [e.sequence for e in await events.list_after(run.id, 0, limit=2)] == [1, 2]
    with pytest.raises(Exception, match=r"(?i)unique|duplicate"):
        await events.append_batch(run.id, [(3, {"type": "again"})])


async def test_the_event_log_keeps_what_was_streamed_in_order(db_session: AsyncSession) -> None:
    """The log is written by the driver, not SQLAlchemy's per-row processing: every event is stored once,
    in sequence order, as the JSON the client was sent (on SQLite byte for byte)."""
    agent_id = await _agent(db_session)
    session = SessionRepository(session=db_session).create_for_owner(str(uuid.uuid4()), "u", agent_id, None)
    second = SessionRepository(session=db_session).create_for_owner(str(uuid.uuid4()), "u", agent_id, None)
    runs = RunRepository(session=db_session)
    run = await runs.add(
        Run(external_id="run-log", session_id=session.id, owner_id="u", status="running", started_at=utcnow())
    )
    other = await runs.add(
        Run(external_id="run-b", session_id=second.id, owner_id="u", status="running", started_at=utcnow())
    )
    sent = [
        (i, msgspec.Raw(msgspec.json.encode({"type": "TEXT_MESSAGE_CONTENT", "delta": f'é🖼\n"{i}', "n": i})))
        for i in range(1, 301)
    ]
    events = RunEventRepository(session=db_session)
    await events.append_batch(run.id, sent[:256])
    await events.append_batch(other.id, [(1, {"type": "RUN_STARTED"})])
    await events.append_batch(run.id, sent[256:])
    logged = [*await events.list_after(run.id, 0), *await events.list_after(run.id, 500)]
    assert [e.sequence for e in logged] == list(range(1, 301))
    assert [e.event for e in logged] == [msgspec.json.decode(raw) for _, raw in sent]
    assert [e.id for e in logged] == sorted(e.id for e in logged)  # written in the order they were sent
    assert [e.event for e in await events.list_after(other.id, 0)] == [{"type": "RUN_STARTED"}]
    assert await events.last_sequence(run.id) == 300
    if db_session.get_bind().dialect.name == "sqlite":
        stored = await db_session.execute(
            text("SELECT event FROM run_events WHERE run_id = :run ORDER BY sequence"),
            {"run": run.id.bytes},
        )
        assert [row[0] for row in stored] == [bytes(raw).decode() for _, raw in sent]


async def test_a_thread_has_at_most_one_running_run(db_session: AsyncSession) -> None:
    agents = AgentRepository(session=db_session)
    version = await agents.save_version(AgentFactory.build(slug="one-run"), {}, new=True)
    session = SessionRepository(session=db_session).create_for_owner(
        str(uuid.uuid4()), "u", version.agent_id, None
    )
    runs = RunRepository(session=db_session)
    model = await ModelRepository(session=db_session).add(ModelRowFactory.build())

    def start(run_id: str) -> Run:
        run = runs.running_row(
            external_id=run_id, session_id=session.id, owner_id="u", model=model, agent_version_id=version.id
        )
        db_session.add(run)
        return run

    first = start("a")
    await db_session.flush()
    first.status = "succeeded"  # ended runs do not count…
    start("b")
    await db_session.flush()
    start("c")
    with pytest.raises((IntegrityError, sa_exc.IntegrityError)):  # …a second one going does
        await db_session.flush()
    await db_session.rollback()


async def test_uploads_are_owner_and_thread_scoped(db_session: AsyncSession) -> None:
    repo = UploadRepository(session=db_session)
    thread = "Thread:1"
    path = f"agent-inputs/alice/{thread_segment(thread)}/uploads/{uuid.uuid4()}.png"
    upload = await repo.add(
        Upload(
            owner_id="alice",
            thread_id=thread,
            bucket="iris",
            path=path,
            mime_type="image/png",
            name="cat.png",
            size=10,
            width=2,
            height=2,
            sha256="0" * 64,
        )
    )
    assert await repo.get_by_path("alice", thread, "iris", path) is upload
    assert await repo.get_by_path("bob", thread, "iris", path) is None
    assert await repo.get_by_path("alice", "thread:1", "iris", path) is None
    assert await repo.get_by_path("alice", thread, "other", path) is None
    alice, bob = Principal(user_id="alice", role="user"), Principal(user_id="bob", role="user")
    assert (await owned_upload(repo, alice, upload.id)) is upload
    with pytest.raises(NotFound):
        await owned_upload(repo, bob, upload.id)


async def test_seeding_is_idempotent_and_race_safe(database_url: str, tmp_path: object) -> None:
    config = create_alchemy_config(Settings(database_url=database_url))
    try:
        results = await asyncio.gather(*(seed_catalogue(config) for _ in range(3)))
        assert results.count(True) == 1
        assert await seed_catalogue(config) is False
        async with config.get_session() as db:
            models = await ModelRepository(session=db).list_catalogue(include_disabled=True)
            assert sorted(m.ref for m in models) == ["local/multimodal", "local/text", "local/vision"]
            agent = await AgentRepository(session=db).get_by_slug("default")
            assert agent is not None
            vision = next(m for m in models if m.ref == "local/vision")
            assert agent.default_model_id == vision.id
            assert agent.guest_access
    finally:
        engine = config.get_engine()
        await engine.dispose()


async def test_two_writers_of_one_agent_collide_on_its_next_version(database_url: str) -> None:
    """Each change is the agent's next version; a writer who read the agent before another one saved
    it tries to write the same version number and is refused, so no version is lost or doubled."""
    config = create_alchemy_config(Settings(database_url=database_url))
    try:
        async with config.get_session() as first, config.get_session() as second:
            await AgentRepository(session=first).save_version(
                AgentFactory.build(slug="shared"), {"n": 1}, new=True
            )
            await first.commit()
            stale = await AgentRepository(session=second).get_by_slug("shared")
            assert stale is not None
            await second.commit()  # what it read stays in hand; its read transaction ends

            fresh = await AgentRepository(session=first).get_by_slug("shared")
            assert fresh is not None
            await AgentRepository(session=first).save_version(fresh, {"n": 2}, new=False)
            await first.commit()
            with pytest.raises((DuplicateKeyError, IntegrityError)):  # 409 conflict for an API caller
                await AgentRepository(session=second).save_version(stale, {"n": "lost"}, new=False)
            await second.rollback()

            versions = await AgentRepository(session=first).versions(fresh.id)
            assert [(v.version, v.snapshot) for v in versions] == [(2, {"n": 2}), (1, {"n": 1})]
    finally:
        await config.get_engine().dispose()

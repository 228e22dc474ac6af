"""Each app instance caches the catalogue for its runs' intake and its stateless chat (``/api/llm/chat``,
``/v1/chat/completions``); a change made anywhere else — another
instance's admin API, the models file, plain SQL — must reach this instance's very next run (SQLite
and PostgreSQL). Two apps on one database stand for two processes: each has its own cache."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest
from litestar import Litestar
from litestar.testing import AsyncTestClient
from sqlalchemy import delete, text
from sqlalchemy.ext.asyncio import AsyncSession

from iris.app.asgi import create_app
from iris.app.persistence.db import create_engine
from iris.app.persistence.models import Agent, AgentVersion, ModelRow
from iris.app.settings import Settings
from tests.support.agents import offer
from tests.support.run_fixtures import Stored
from tests.support.runs import of_type, run, run_input, user_message

Client = AsyncTestClient[Litestar]
Auth = Callable[..., dict[str, str]]
ECHO = {"name": "Echo", "provider": "local", "modelId": "echo", "type": "vision"}


@pytest.fixture
async def two(settings: Settings, auth: Auth) -> AsyncIterator[tuple[Client, Client, str]]:
    """Two Iris instances on one database, ``local/echo`` offered by the default agent (and its id);
    both have run once, so both have the catalogue cached."""
    async with (
        AsyncTestClient(app=create_app(settings, environ={})) as a,
        AsyncTestClient(app=create_app(settings, environ={})) as b,
    ):
        admin = auth("root", "admin")
        created = await a.post("/api/models", json=ECHO, headers=admin)
        assert created.status_code == 201, created.text
        await offer(a, admin, "local/echo")
        for instance in (a, b):
            await run(instance, auth("alice"), _body("local/echo"))
        yield a, b, created.json()["id"]


def _body(model: str | None = None, thread: str | None = None, **forwarded: Any) -> dict[str, Any]:
    props = {**({"modelId": model} if model else {}), **forwarded}
    return run_input(thread or str(uuid.uuid4()), user_message("hello"), forwardedProps=props)


async def _refused(client: Client, auth: Auth, body: dict[str, Any]) -> dict[str, Any]:
    response = await client.post("/agent/runs", json=body, headers=auth("alice"))
    assert response.status_code >= 400, response.text
    problem: dict[str, Any] = response.json()
    return problem


async def test_a_model_disabled_on_one_instance_is_refused_by_the_other(
    two: tuple[Client, Client, str], auth: Auth
) -> None:
    a, b, echo = two
    admin = auth("root", "admin")
    changed = await a.patch(f"/api/models/{echo}", json={"enabled": False}, headers=admin)
    assert changed.status_code == 200, changed.text
    assert (await _refused(b, auth, _body("local/echo")))["code"] == "model_not_found"
    changed = await a.patch(f"/api/models/{echo}", json={"enabled": True}, headers=admin)
    assert changed.status_code == 200, changed.text
    events = await run(b, auth("alice"), _body("local/echo"))
    assert of_type(events, "RUN_FINISHED")


async def test_an_agent_changed_on_one_instance_is_used_at_its_new_version_by_the_other(
    two: tuple[Client, Client, str], auth: Auth, database_url: str
) -> None:
    a, b, _ = two
    admin = auth("root", "admin")
    before = (await run(b, auth("alice"), _body("local/echo")))[0]["metadata"]["iris/agent"]["version"]
    changed = await a.patch("/api/agents/default", json={"instructions": "Be brief."}, headers=admin)
    assert changed.status_code == 200, changed.text
    thread = str(uuid.uuid4())
    started = of_type(await run(b, auth("alice"), _body("local/echo", thread)), "RUN_STARTED")[0]
    assert started["metadata"]["iris/agent"]["version"] == before + 1
    # What the agent no longer offers, the other instance no longer runs (on a thread it already has).
    current = (await a.get("/api/agents/default", headers=admin)).json()
    models = [ref for ref in current["models"] if ref != "local/echo"]
    changed = await a.patch("/api/agents/default", json={"models": models}, headers=admin)
    assert changed.status_code == 200, changed.text
    assert (await _refused(b, auth, _body("local/echo", thread)))["code"] == "model_not_in_agent"
    assert len(await Stored(database_url).messages(thread)) == 2  # the refusal stored nothing


async def test_a_catalogue_change_in_plain_sql_reaches_a_cached_instance(
    two: tuple[Client, Client, str], auth: Auth, database_url: str
) -> None:
    """Not through any app (an operator's SQL, a migration): the database's triggers invalidate."""
    _, b, _ = two
    engine = create_engine(database_url)
    try:
        async with engine.begin() as conn:
            await conn.execute(text("UPDATE models SET enabled = false WHERE model_id = 'echo'"))
        assert (await _refused(b, auth, _body("local/echo")))["code"] == "model_not_found"
        async with engine.begin() as conn:
            await conn.execute(text("UPDATE agents SET enabled = false WHERE slug = 'default'"))
        assert (await _refused(b, auth, _body()))["code"] == "agent_not_found"
    finally:
        await engine.dispose()


async def _chat(client: Client, auth: Auth, model: str = "local/echo") -> int:
    """A stateless ``/api/llm/chat`` call's status (200 answered; the problem's code is checked apart)."""
    body = {"modelId": model, "content": "hello", "stream": False}
    return (await client.post("/api/llm/chat", json=body, headers=auth("alice"))).status_code


async def test_stateless_chat_sees_a_model_disabled_on_another_instance(
    two: tuple[Client, Client, str], auth: Auth
) -> None:
    a, b, echo = two
    admin = auth("root", "admin")
    assert await _chat(b, auth) == 200  # b has the catalogue cached at this generation
    changed = await a.patch(f"/api/models/{echo}", json={"enabled": False}, headers=admin)
    assert changed.status_code == 200, changed.text
    refused = await b.post(
        "/api/llm/chat", json={"modelId": "local/echo", "content": "hello"}, headers=auth("alice")
    )
    assert refused.status_code == 422, refused.text
    assert refused.json()["code"] == "model_not_found"
    gateway = await b.post(
        "/v1/chat/completions",
        json={"model": "local/echo", "messages": [{"role": "user", "content": "hello"}]},
        headers=auth("alice"),
    )
    assert gateway.status_code >= 400, gateway.text
    changed = await a.patch(f"/api/models/{echo}", json={"enabled": True}, headers=admin)
    assert changed.status_code == 200, changed.text
    assert await _chat(b, auth) == 200


async def test_stateless_chat_sees_a_catalogue_change_in_plain_sql(
    two: tuple[Client, Client, str], auth: Auth, database_url: str
) -> None:
    _, b, _ = two
    assert await _chat(b, auth) == 200
    engine = create_engine(database_url)
    try:
        async with engine.begin() as conn:
            await conn.execute(text("UPDATE models SET enabled = false WHERE model_id = 'echo'"))
        assert await _chat(b, auth) == 422
        async with engine.begin() as conn:
            await conn.execute(text("UPDATE models SET enabled = true WHERE model_id = 'echo'"))
        assert await _chat(b, auth) == 200
    finally:
        await engine.dispose()


async def test_every_catalogue_write_bumps_the_generation(database_url: str) -> None:
    """Insert, update and delete on each cached table, each in its own transaction; a rolled-back
    write leaves it as it was."""
    engine = create_engine(database_url)
    generation = text("SELECT generation FROM catalogue_generation WHERE id = 1")

    async def bumped(write: Callable[[AsyncSession], Awaitable[object]]) -> None:
        async with AsyncSession(engine) as db:
            before = await db.scalar(generation)
        async with AsyncSession(engine) as db, db.begin():
            await write(db)
        async with AsyncSession(engine) as db:
            assert await db.scalar(generation) > before

    try:
        model = ModelRow(name="Copy", provider="local", model_id="copy", type="text", options={})
        agent = Agent(id=uuid.uuid4(), slug="gen", name="Gen")
        agent_id = agent.id
        await bumped(lambda db: _added(db, model))
        await bumped(
            lambda db: db.execute(text("UPDATE models SET name = 'Renamed' WHERE model_id = 'copy'"))
        )
        await bumped(lambda db: db.execute(delete(ModelRow).where(ModelRow.model_id == "copy")))
        await bumped(lambda db: _added(db, agent))
        version = AgentVersion(agent_id=agent_id, version=999, snapshot={})
        await bumped(lambda db: _added(db, version))
        await bumped(
            lambda db: db.execute(text("UPDATE agent_versions SET snapshot = snapshot WHERE version = 999"))
        )
        await bumped(lambda db: db.execute(delete(AgentVersion).where(AgentVersion.version == 999)))
        await bumped(lambda db: db.execute(text("UPDATE agents SET description = 'changed'")))
        await bumped(lambda db: db.execute(delete(Agent).where(Agent.slug == "gen")))
        async with AsyncSession(engine) as db:
            before = await db.scalar(generation)
            await db.execute(text("UPDATE models SET name = 'Undone'"))
            await db.rollback()
            assert await db.scalar(generation) == before
    finally:
        await engine.dispose()


async def _added(db: AsyncSession, row: object) -> None:
    db.add(row)
    await db.flush()

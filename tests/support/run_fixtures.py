"""Fixtures of the run tests (``tests/runs/conftest.py`` and the other packages' conftests take them from
here): a signed-in caller, direct reads of what a run stored, and Iris on a real socket with a slow
local model."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import replace
from typing import Any
from uuid import UUID

import httpx
import pytest
from sqlalchemy import delete, func, select, text
from sqlalchemy.ext.asyncio import AsyncSession

from iris.app.asgi import create_app
from iris.app.catalogue.agents import create_agent, current_definition, save_changes
from iris.app.persistence.db import create_engine
from iris.app.persistence.models import ChatSession, Message, Run, RunEvent, Upload
from iris.app.persistence.repositories import AgentRepository, MessageRepository, ModelRepository
from iris.app.security.auth import issue_token
from iris.app.settings import Settings
from tests.conftest import JWT_SECRET
from tests.support.agents import offer, offer_sync
from tests.support.http_server import serve_asgi


@pytest.fixture
def alice(auth: Callable[..., dict[str, str]]) -> dict[str, str]:
    return auth("alice")


class Stored:
    """Reads the app's real database (no mocks): messages, runs and event log of a thread.

    It opens its own engine per read: the app's pool belongs to the app's event loop.
    """

    def __init__(self, database_url: str) -> None:
        self._url = database_url

    @asynccontextmanager
    async def _session(self) -> AsyncIterator[AsyncSession]:
        engine = create_engine(self._url)
        try:
            async with AsyncSession(engine, expire_on_commit=False) as session:
                yield session
        finally:
            await engine.dispose()

    async def messages(self, thread_id: str, owner_id: str = "alice") -> Sequence[Message]:
        async with self._session() as db:
            stmt = (
                select(Message)
                .join(ChatSession, ChatSession.id == Message.session_id)
                .where(ChatSession.thread_id == thread_id, ChatSession.owner_id == owner_id)
                .order_by(Message.position)
            )
            return (await db.scalars(stmt)).all()

    async def active_line(self, thread_id: str, owner_id: str = "alice") -> list[Message]:
        """The thread's active line read from the tree (its leaf, up the parents), first message first;
        asserts it is exactly the rows not marked superseded, the line history and the model read."""
        rows = {row.id: row for row in await self.messages(thread_id, owner_id)}
        async with self._session() as db:
            leaf = await db.scalar(
                select(ChatSession.active_leaf_id).where(
                    ChatSession.thread_id == thread_id, ChatSession.owner_id == owner_id
                )
            )
        line: list[Message] = []
        while leaf is not None:
            line.append(rows[leaf])
            leaf = rows[leaf].parent_id
        line.reverse()
        live = sorted((r for r in rows.values() if r.superseded_at is None), key=lambda r: r.position)
        assert [r.id for r in line] == [r.id for r in live], "the live rows are not the active line"
        return line

    async def session_pk(self, thread_id: str, owner_id: str = "alice") -> UUID:
        async with self._session() as db:
            stmt = select(ChatSession.id).where(
                ChatSession.thread_id == thread_id, ChatSession.owner_id == owner_id
            )
            pk = await db.scalar(stmt)
            assert pk is not None
            return pk

    async def session(self, thread_id: str, owner_id: str = "alice") -> ChatSession:
        async with self._session() as db:
            stmt = select(ChatSession).where(
                ChatSession.thread_id == thread_id, ChatSession.owner_id == owner_id
            )
            row = await db.scalar(stmt)
            assert row is not None
            return row

    async def run(self, run_id: str) -> Run | None:
        async with self._session() as db:
            run: Run | None = await db.scalar(select(Run).where(Run.external_id == run_id))
            return run

    async def edit_reasoning(self, thread_id: str, text: str) -> None:
        """Change the stored text of the thread's reasoning (keeping its signature)."""
        async with self._session() as db:
            session_pk = await db.scalar(select(ChatSession.id).where(ChatSession.thread_id == thread_id))
            stmt = select(Message).where(Message.session_id == session_pk, Message.role == "assistant")
            rows = (await db.scalars(stmt)).all()
            assert rows, f"no assistant message in thread {thread_id}"
            for row in rows:
                row.parts = [
                    {**p, "text": text} if p.get("type") == "reasoning" else p for p in row.parts or ()
                ]
            await db.commit()

    async def add_legacy_message(self, thread_id: str, content: str) -> None:
        """A row as older versions stored it: text content, no parts."""
        async with self._session() as db:
            session_pk = await db.scalar(select(ChatSession.id).where(ChatSession.thread_id == thread_id))
            assert session_pk is not None
            await MessageRepository(session=db).append(session_pk, role="user", content=content)
            await db.commit()

    async def delete_message(self, external_id: str) -> None:
        """Delete a message row outright (and, by cascade, its replies): what no endpoint does."""
        async with self._session() as db:
            await db.execute(delete(Message).where(Message.external_id == external_id))
            await db.commit()

    async def add_agent(self, slug: str, *, guest_access: bool) -> None:
        """An agent like the default one (its models and tools), saved as the API saves one."""
        async with self._session() as db:
            agents, models = AgentRepository(session=db), ModelRepository(session=db)
            default = await agents.get_by_slug("default")
            assert default is not None
            like = await current_definition(default, models)
            await create_agent(agents, slug, replace(like, name=slug, guest_access=guest_access))
            await db.commit()

    async def set_agent_tools(self, tools: list[str], slug: str = "default") -> None:
        """Give an agent these tools (names, ``{server}__{tool}``, ``mcp:{server}/*``) as a new version,
        unchecked: tests also name tools that no longer resolve (a broken plugin, a removed server)."""
        async with self._session() as db:
            agents, models = AgentRepository(session=db), ModelRepository(session=db)
            agent = await agents.get_by_slug(slug)
            assert agent is not None
            like = await current_definition(agent, models)
            await save_changes(agents, agent, replace(like, tools=tuple(tools)))
            await db.commit()

    async def counts(self) -> tuple[int, int, int, int]:
        """How many sessions, messages, runs and run events there are."""
        async with self._session() as db:
            totals = [
                await db.scalar(select(func.count()).select_from(table))
                for table in (ChatSession, Message, Run, RunEvent)
            ]
        return (totals[0] or 0, totals[1] or 0, totals[2] or 0, totals[3] or 0)

    async def uploads(self, thread_id: str) -> Sequence[Upload]:
        """The upload rows of a thread, oldest first."""
        async with self._session() as db:
            stmt = select(Upload).where(Upload.thread_id == thread_id).order_by(Upload.created_at)
            return (await db.scalars(stmt)).all()

    async def run_external_id(self, run_pk: UUID) -> str:
        async with self._session() as db:
            value = await db.scalar(select(Run.external_id).where(Run.id == run_pk))
            assert value is not None
            return value

    async def events(self, run_id: str) -> list[dict[str, Any]]:
        async with self._session() as db:
            stmt = (
                select(RunEvent.sequence, RunEvent.event)
                .join(Run, Run.id == RunEvent.run_id)
                .where(Run.external_id == run_id)
                .order_by(RunEvent.sequence)
            )
            return [{"sequence": seq, **event} for seq, event in (await db.execute(stmt)).all()]


@pytest.fixture
def stored(database_url: str) -> Stored:
    return Stored(database_url)


SLOW_MODEL = {
    "name": "Slow",
    "provider": "local",
    "modelId": "slow",
    "type": "vision",
    "options": {"delayMs": 40},
}


@pytest.fixture
def base_url(settings: Settings, auth: Callable[..., dict[str, str]]) -> Iterator[str]:
    """Iris on a real socket, with a slow local model ``local/slow`` (40 ms per token)."""
    with serve_asgi(create_app(settings, environ={}), lifespan="on") as base:
        created = httpx.post(f"{base}/api/models", json=SLOW_MODEL, headers=auth("root", role="admin"))
        assert created.status_code == 201, created.text
        offer_sync(base, auth("root", role="admin"), "local/slow")
        yield base


SQLITE_DOOM = (
    "CREATE TABLE doomed (run TEXT REFERENCES runs(external_id) DEFERRABLE INITIALLY DEFERRED)",
    "CREATE TRIGGER doom AFTER INSERT ON runs WHEN NEW.external_id LIKE 'doomed-%' "
    "BEGIN INSERT INTO doomed(run) VALUES ('no such run'); END",
)
POSTGRES_DOOM = (
    "CREATE FUNCTION doom() RETURNS trigger LANGUAGE plpgsql AS "
    "$$ BEGIN RAISE EXCEPTION 'doomed run %', NEW.external_id; END $$",
    "CREATE CONSTRAINT TRIGGER doom AFTER INSERT ON runs DEFERRABLE INITIALLY DEFERRED FOR EACH ROW "
    "WHEN (NEW.external_id LIKE 'doomed-%') EXECUTE FUNCTION doom()",
)


@pytest.fixture
async def doomed_commits(database_url: str, engine_name: str) -> None:
    """The database refuses the commit of a run whose id starts with ``doomed-``: a check deferred to
    COMMIT (SQLite: a deferred foreign key that a trigger breaks; PostgreSQL: a deferred constraint
    trigger that raises). Every statement of the intake succeeds; only its commit fails."""
    engine = create_engine(database_url)
    try:
        async with engine.begin() as connection:
            for statement in SQLITE_DOOM if engine_name == "sqlite" else POSTGRES_DOOM:
                await connection.execute(text(statement))
    finally:
        await engine.dispose()


@asynccontextmanager
async def iris(settings: Settings) -> AsyncIterator[tuple[httpx.AsyncClient, dict[str, str]]]:
    """Iris on a real socket with the slow local model; a client and alice's headers."""
    admin = {"Authorization": f"Bearer {issue_token(JWT_SECRET, 'root', role='admin')}"}
    alice = {"Authorization": f"Bearer {issue_token(JWT_SECRET, 'alice')}"}
    with serve_asgi(create_app(settings, environ={}), lifespan="on") as base:
        async with httpx.AsyncClient(base_url=base, timeout=30) as http:
            created = await http.post("/api/models", json=SLOW_MODEL, headers=admin)
            assert created.status_code == 201, created.text
            await offer(http, admin, "local/slow")
            yield http, alice

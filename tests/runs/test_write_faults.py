"""A fault at every write a run makes (issue 41, "make the suite find the next ones"): the intake, a
tool's media, the event-log batches, the closing transaction and SQLite's search index each fail in
turn, refused by the database itself (a trigger that raises on that table's insert or update). Whatever
the run or request answers then, once the fault is gone the next requests of every kind (an upload, a
catalogue change, a new run) must write normally, and nothing may be left holding the database: no
SQLite write turn, no connection checked out or inside a transaction (PostgreSQL: no session idle in a
transaction). Both engines."""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

import msgspec
import pytest
from litestar import Litestar
from litestar.testing import AsyncTestClient
from sqlalchemy import text

from app.asgi import create_app
from app.persistence.db import create_engine, write_lock
from app.settings import Settings
from tests.runs.conftest import SLOW_MODEL, Stored
from tests.runs.helpers import run_input, upload, user_message
from tests.support.agents import offer
from tests.support.agui import parse_sse
from tests.support.mcp_servers import http_server
from tests.support.waits import REQUEST_SECONDS, eventually

pytestmark = pytest.mark.slow
Client = AsyncTestClient[Litestar]

FAULTS: dict[str, tuple[str, str, str]] = {
    # step: (table, trigger timing and event, condition on the row)
    "intake": ("runs", "BEFORE INSERT", "1 = 1"),
    "tool_media": ("uploads", "BEFORE INSERT", "NEW.name LIKE 'tool-result.%'"),
    "event_batch": ("run_events", "BEFORE INSERT", "1 = 1"),
    "closing": ("runs", "BEFORE UPDATE", "NEW.status <> 'running'"),
    "search_index": ("search_pending", "BEFORE DELETE", "1 = 1"),  # the indexer takes its batch
}


class Fault:
    """A trigger that makes the database refuse one write step (added and dropped from the test's own
    connection, as an operator's or another process's would be)."""

    def __init__(self, database_url: str, engine_name: str, step: str) -> None:
        self._url = database_url
        self._sqlite = engine_name == "sqlite"
        self.table, self._when, self._condition = FAULTS[step]

    async def _run(self, *statements: str) -> None:
        engine = create_engine(self._url)
        try:
            async with engine.begin() as connection:
                for statement in statements:
                    await connection.execute(text(statement))
        finally:
            await engine.dispose()

    async def add(self) -> None:
        if self._sqlite:
            await self._run(
                f"CREATE TRIGGER fault {self._when} ON {self.table} WHEN {self._condition} "
                "BEGIN SELECT RAISE(ABORT, 'injected fault'); END"
            )
            return
        await self._run(
            "CREATE FUNCTION fault() RETURNS trigger LANGUAGE plpgsql AS "
            "$$ BEGIN RAISE EXCEPTION 'injected fault'; END $$",
            f"CREATE TRIGGER fault {self._when} ON {self.table} FOR EACH ROW "
            f"WHEN ({self._condition}) EXECUTE FUNCTION fault()",
        )

    async def drop(self) -> None:
        if self._sqlite:
            await self._run("DROP TRIGGER fault")
        else:
            await self._run(f"DROP TRIGGER fault ON {self.table}", "DROP FUNCTION fault()")

    async def idle_in_transaction(self) -> int:
        """PostgreSQL sessions of this database left inside a transaction (never the asking one)."""
        engine = create_engine(self._url)
        try:
            async with engine.connect() as connection:
                count = await connection.scalar(
                    text(
                        "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                        "AND pid <> pg_backend_pid() AND state LIKE 'idle in transaction%'"
                    )
                )
        finally:
            await engine.dispose()
        return int(count or 0)


@pytest.fixture
def settings_(settings: Settings) -> Settings:
    return msgspec.structs.replace(
        settings, sqlite_lock_timeout_seconds=1.0, run_heartbeat_seconds=0.2, search_index_seconds=0.2
    )


@asynccontextmanager
async def iris(settings: Settings, admin: dict[str, str]) -> AsyncIterator[Client]:
    async with AsyncTestClient(app=create_app(settings, environ={})) as client:
        created = await client.post("/api/models", json=SLOW_MODEL, headers=admin)
        assert created.status_code == 201, created.text
        await offer(client, admin, "local/slow")
        yield client


@contextmanager
def charts_for(step: str, marks: Path) -> Iterator[str | None]:
    """The MCP image tool's server, for the step that stores a tool's media."""
    if step != "tool_media":
        yield None
        return
    with http_server(marks) as url:
        yield url


def ended_once(body: bytes) -> dict[str, Any]:
    """The stream's events end with exactly one terminal event: it."""
    events = [frame.data for frame in parse_sse(body)]
    terminal = [e for e in events if e["type"] in ("RUN_FINISHED", "RUN_ERROR")]
    assert len(terminal) == 1 and terminal[0] is events[-1], [e["type"] for e in events]
    return terminal[0]


async def faulty_step(client: Client, step: str, alice: dict[str, str], url: str | None) -> None:
    """Make the request whose write the fault refuses; it must end cleanly, however it ends."""
    thread = str(uuid.uuid4())
    if step == "tool_media":
        ask = user_message("use tool charts__chart " + json.dumps({"values": [2, 1]}))
        body = run_input(thread, ask, model="local/vision")
    elif step == "event_batch":  # the slow model: its events span several batches
        body = run_input(thread, user_message(" ".join(f"w{i}" for i in range(12))), model="local/slow")
    else:
        body = run_input(thread, user_message("numbat wombat"))
    response = await client.post("/agent/runs", json=body, headers=alice)
    assert response.status_code == 200, response.text
    ended_once(response.content)
    if step == "search_index":
        searched = await client.get("/api/sessions/search", params={"q": "numbat"}, headers=alice)
        assert searched.status_code >= 400  # the index refused what the search first brings in


async def nothing_held(client: Client, fault: Fault) -> bool | None:
    """Whether the app's database is left alone: no write turn held, no connection checked out or inside
    a transaction."""
    engine = client.app.state.alchemy.get_engine()
    lock = write_lock(engine)
    if lock is not None and (lock.locked or lock.in_transaction()):
        return None
    if engine.sync_engine.pool.checkedout():
        return None
    if lock is None and await fault.idle_in_transaction():
        return None
    return True


@pytest.mark.parametrize("step", list(FAULTS))
async def test_a_fault_at_each_write_leaves_the_next_requests_writing(
    settings_: Settings,
    database_url: str,
    engine_name: str,
    step: str,
    alice: dict[str, str],
    auth: Callable[..., dict[str, str]],
    stored: Stored,
    tmp_path: Path,
) -> None:
    if step == "search_index" and engine_name != "sqlite":
        pytest.skip("PostgreSQL indexes each document as it is written: no separate index step")
    admin = auth("root", role="admin")
    fault = Fault(database_url, engine_name, step)
    with charts_for(step, tmp_path) as url:
        async with iris(settings_, admin) as client:
            if url is not None:
                added = await client.post(
                    "/api/mcp-servers", json={"name": "charts", "transport": "http", "url": url}, headers=admin
                )
                assert added.status_code == 201, added.text
                await stored.set_agent_tools(["mcp:charts/*"])
            await fault.add()
            try:
                await faulty_step(client, step, alice, url)
            finally:
                await fault.drop()

            await eventually(
                lambda: nothing_held(client, fault), within=REQUEST_SECONDS, what="the database let go"
            )
            await upload(client, alice, str(uuid.uuid4()))
            model = await client.post("/api/models", json={**SLOW_MODEL, "modelId": "next"}, headers=admin)
            assert model.status_code == 201, model.text
            after = await client.post("/agent/runs", json=run_input(str(uuid.uuid4()), user_message("hi")), headers=alice)
            assert ended_once(after.content)["type"] == "RUN_FINISHED"
            ready = await client.get("/readyz")
            assert ready.status_code == 200, ready.text
            assert await nothing_held(client, fault)

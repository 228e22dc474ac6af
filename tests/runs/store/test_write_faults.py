"""A fault at every write a run makes (issue 41, "make the suite find the next ones"): the intake, a
tool's media, the event-log batches, the closing transaction and SQLite's search index each fail in
turn, refused by the database itself (a trigger that raises on that table's insert, update or delete),
each at the moment that once went wrong: the media of an approved call (a resumed run writes it before
its first model turn) and the closing write of a run being cancelled. The run or request must end
cleanly (a stream with exactly one terminal event), and once the fault is gone the next requests of
every kind (an upload, a catalogue change, a new run) must write normally, with nothing left holding the
database: no SQLite write turn, no connection checked out or inside a transaction (PostgreSQL: no
session idle in a transaction). Iris on a real socket, both engines."""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

import httpx
import msgspec
import pytest
from litestar import Litestar
from sqlalchemy import text

from iris.app.asgi import create_app
from iris.app.persistence.db import create_engine, write_lock
from iris.app.settings import Settings
from tests.support.agents import offer
from tests.support.agui import parse_sse
from tests.support.http_server import serve_asgi
from tests.support.images import image_bytes
from tests.support.mcp_servers import http_server
from tests.support.run_fixtures import SLOW_MODEL, Stored
from tests.support.runs import run_input, user_message
from tests.support.waits import REQUEST_SECONDS, eventually

pytestmark = pytest.mark.slow

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
        self.added = False

    async def _run(self, *statements: str) -> None:
        engine = create_engine(self._url)
        try:
            async with engine.begin() as connection:
                for statement in statements:
                    await connection.execute(text(statement))
        finally:
            await engine.dispose()

    async def add(self) -> None:
        self.added = True
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
        if not self.added:
            return
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
def quick(settings: Settings) -> Settings:
    """Short waits: the lock timeout, the run keeper's beat, the search indexer's."""
    return msgspec.structs.replace(
        settings, sqlite_lock_timeout_seconds=1.0, run_heartbeat_seconds=0.2, search_index_seconds=0.2
    )


@asynccontextmanager
async def iris(
    settings: Settings, admin: dict[str, str]
) -> AsyncIterator[tuple[httpx.AsyncClient, Litestar]]:
    """Iris on a real socket (a run can be cancelled while it streams), with the slow local model."""
    app = create_app(settings, environ={})
    with serve_asgi(app, lifespan="on") as base:
        async with httpx.AsyncClient(base_url=base, timeout=REQUEST_SECONDS) as http:
            created = await http.post("/api/models", json=SLOW_MODEL, headers=admin)
            assert created.status_code == 201, created.text
            await offer(http, admin, "local/slow")
            yield http, app


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
    assert len(terminal) == 1, [e["type"] for e in events]
    assert terminal[0] is events[-1], [e["type"] for e in events]
    return terminal[0]


async def streamed(http: httpx.AsyncClient, path: str, body: dict[str, Any], alice: dict[str, str]) -> bytes:
    """A run's whole stream; one that never ends fails here instead of hanging the suite."""
    async with asyncio.timeout(REQUEST_SECONDS):
        response = await http.post(path, json=body, headers=alice)
    assert response.status_code == 200, response.text
    return response.content


async def approved_image(http: httpx.AsyncClient, fault: Fault, alice: dict[str, str]) -> bytes:
    """An image tool that asks for approval, approved with the fault in place (the media's write comes
    before the resumed run's first model turn, its intake not yet committed)."""
    thread = str(uuid.uuid4())
    ask = user_message("use tool charts__chart " + json.dumps({"values": [2, 1]}))
    asked = await streamed(http, "/agent/runs", run_input(thread, ask, model="local/vision"), alice)
    (interrupt,) = ended_once(asked)["outcome"]["interrupts"]
    await fault.add()
    answer = [{"interruptId": interrupt["id"], "status": "resolved"}]
    return await streamed(http, "/agent/runs/resume", run_input(thread, resume=answer), alice)


async def cancelled_mid_stream(http: httpx.AsyncClient, fault: Fault, alice: dict[str, str]) -> bytes:
    """A slow run cancelled while it streams, the fault in place: its ending is the write refused."""
    body = run_input(
        str(uuid.uuid4()), user_message(" ".join(f"w{i}" for i in range(300))), model="local/slow"
    )
    seen = b""
    async with asyncio.timeout(REQUEST_SECONDS):
        async with http.stream("POST", "/agent/runs", json=body, headers=alice) as response:
            assert response.status_code == 200
            async for chunk in response.aiter_bytes():
                seen += chunk
                if b"TEXT_MESSAGE_CONTENT" in seen and not fault.added:
                    await fault.add()
                    cancelled = await http.post(f"/agent/runs/{body['runId']}/cancel", headers=alice)
                    assert cancelled.status_code == 202, cancelled.text
    return seen


async def faulty_step(http: httpx.AsyncClient, step: str, fault: Fault, alice: dict[str, str]) -> None:
    """Make the request whose write the fault refuses; it must end cleanly, however it ends."""
    if step == "tool_media":
        ended_once(await approved_image(http, fault, alice))
        return
    if step == "closing":
        ended_once(await cancelled_mid_stream(http, fault, alice))
        return
    await fault.add()
    words = " ".join(f"w{i}" for i in range(12))  # the slow model's events span several batches
    body = run_input(str(uuid.uuid4()), user_message(f"numbat {words}"), model="local/slow")
    ended_once(await streamed(http, "/agent/runs", body, alice))
    if step == "search_index":
        searched = await http.get("/api/sessions/search", params={"q": "numbat"}, headers=alice)
        assert searched.status_code != 200  # the index refused what the search first brings in


async def nothing_held(app: Litestar, fault: Fault) -> bool | None:
    """Whether the app's database is left alone: no write turn held, no connection checked out or inside
    a transaction."""
    engine = app.state.alchemy.get_engine()
    lock = write_lock(engine)
    if lock is not None and (lock.locked or lock.in_transaction()):
        return None
    if engine.sync_engine.pool.checkedout():
        return None
    if lock is None and await fault.idle_in_transaction():
        return None
    return True


async def writes_normally(http: httpx.AsyncClient, admin: dict[str, str], alice: dict[str, str]) -> None:
    """An upload, a catalogue change and a new run, each written."""
    png = image_bytes("PNG", (16, 16), (200, 30, 30))
    uploaded = await http.post(
        "/api/files",
        files={"file": ("red.png", png, "image/png")},
        data={"threadId": str(uuid.uuid4())},
        headers=alice,
    )
    assert uploaded.status_code == 201, uploaded.text
    model = await http.post("/api/models", json={**SLOW_MODEL, "modelId": "next"}, headers=admin)
    assert model.status_code == 201, model.text
    body = run_input(str(uuid.uuid4()), user_message("hi"))
    assert ended_once(await streamed(http, "/agent/runs", body, alice))["type"] == "RUN_FINISHED"


@pytest.mark.parametrize("step", list(FAULTS))
async def test_a_fault_at_each_write_leaves_the_next_requests_writing(
    quick: Settings,
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
        async with iris(quick, admin) as (http, app):
            if url is not None:
                added = await http.post(
                    "/api/mcp-servers",
                    json={
                        "name": "charts",
                        "transport": "http",
                        "url": url,
                        "toolApproval": {"chart": "always"},
                    },
                    headers=admin,
                )
                assert added.status_code == 201, added.text
                await stored.set_agent_tools(["mcp:charts/*"])
            try:
                await faulty_step(http, step, fault, alice)
            finally:
                await fault.drop()

            await eventually(
                lambda: nothing_held(app, fault), within=REQUEST_SECONDS, what="the database let go"
            )
            await writes_normally(http, admin, alice)
            ready = await http.get("/readyz")
            assert ready.status_code == 200, ready.text
            await eventually(
                lambda: nothing_held(app, fault), within=REQUEST_SECONDS, what="nothing held after"
            )

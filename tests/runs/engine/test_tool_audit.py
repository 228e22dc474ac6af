"""Issue 47: the audit log has a row for each approval answered and each tool call made (tool, server,
outcome, duration), written with the run's close; a call's argument values are redacted unless
``IRIS_AUDIT_TOOL_ARGUMENTS`` keeps them, and a secret argument is in no stored audit row.
A real MCP server over Streamable HTTP whose ``wipe`` tool needs approval, the offline local model,
both engines."""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import msgspec
import pytest
from litestar import Litestar
from litestar.testing import AsyncTestClient
from sqlalchemy import text
from sqlalchemy.ext.asyncio import create_async_engine

from iris.app.asgi import create_app
from iris.app.settings import Settings
from tests.support.agui import check_stream
from tests.support.mcp_servers import http_server
from tests.support.run_fixtures import Stored
from tests.support.runs import run, run_input, user_message

pytestmark = pytest.mark.slow
Client = AsyncTestClient[Litestar]
SECRET = "hunter2-" + uuid.uuid4().hex


async def _stored_audit_rows(database_url: str) -> str:
    """Every column of every ``audit_log`` row as the database holds it, as text. (The secret is in the
    conversation's own rows — the user's message, the call's events — so the file as a whole has it.)"""
    engine = create_async_engine(database_url)
    try:
        async with engine.connect() as connection:
            rows = (await connection.execute(text("SELECT * FROM audit_log"))).all()
    finally:
        await engine.dispose()
    assert rows
    return repr(rows)


async def _wipe_and_answer(client: Client, alice: dict[str, str], status: str) -> list[dict[str, Any]]:
    """Ask for ``wipe`` with the secret as its argument, then answer its approval with ``status``."""
    thread = str(uuid.uuid4())
    ask = user_message("use tool files__wipe " + json.dumps({"target": SECRET}))
    asked = await run(client, alice, run_input(thread, ask, model="local/vision"))
    (interrupt,) = asked[-1]["outcome"]["interrupts"]
    response = await client.post(
        "/agent/runs/resume",
        json=run_input(thread, resume=[{"interruptId": interrupt["id"], "status": status}]),
        headers={**alice, "x-request-id": f"req-{status}"},
    )
    assert response.status_code == 200, response.text
    events = check_stream(response.content)
    assert events[-1]["type"] == "RUN_FINISHED", events[-1]
    return events


async def _run_rows(client: Client, admin: dict[str, str]) -> list[dict[str, Any]]:
    page = (await client.get("/api/audit", headers=admin)).json()
    return [e for e in reversed(page["entries"]) if e["action"].startswith(("tool", "approval"))]


async def _approve_one_decline_one(
    client: Client, auth: Callable[..., dict[str, str]], stored: Stored, tmp_path: Path, alice: dict[str, str]
) -> list[dict[str, Any]]:
    admin = auth("root", role="admin")
    with http_server(tmp_path) as url:
        added = await client.post(
            "/api/mcp-servers", json={"name": "files", "transport": "http", "url": url}, headers=admin
        )
        assert added.status_code == 201, added.text
        await stored.set_agent_tools(["mcp:files/*"])
        await _wipe_and_answer(client, alice, "resolved")
        await _wipe_and_answer(client, alice, "cancelled")
    return await _run_rows(client, admin)


@pytest.fixture
async def client(settings: Settings) -> AsyncIterator[Client]:
    async with AsyncTestClient(app=create_app(settings, environ={})) as test_client:
        yield test_client


async def test_approvals_and_tool_calls_are_audited_with_arguments_redacted(
    client: Client, auth: Callable[..., dict[str, str]], stored: Stored, tmp_path: Path, database_url: str
) -> None:
    made = await client.post("/api/keys", json={"name": "agent"}, headers=auth("alice"))
    assert made.status_code == 201, made.text
    by_key = {"Authorization": f"Bearer {made.json()['key']}"}
    rows = await _approve_one_decline_one(client, auth, stored, tmp_path, by_key)

    assert [(r["actor"], r["action"], r["target"], r["status"]) for r in rows] == [
        ("alice", "approval granted", "mcp:files/files__wipe", 200),
        ("alice", "tool call", "mcp:files/files__wipe", 200),
        ("alice", "approval declined", "mcp:files/files__wipe", 403),
    ]
    call = rows[1]["detail"]
    assert call["tool"] == "files__wipe"
    assert call["server"] == "files"
    assert call["outcome"] == "succeeded"
    assert call["durationMs"] >= 0
    assert call["arguments"] == {"target": "[redacted]"}
    assert rows[2]["detail"]["outcome"] == "declined"
    # the key and the request that started each run (the resume) are on its rows
    assert {r["actorKeyId"] for r in rows} == {made.json()["id"]}
    assert [r["requestId"] for r in rows] == ["req-resolved", "req-resolved", "req-cancelled"]
    page = (await client.get("/api/audit", headers=auth("root", role="admin"))).text
    assert SECRET not in page
    assert SECRET not in await _stored_audit_rows(database_url)


@pytest.mark.parametrize("engine_name", ["sqlite"])
async def test_kept_arguments_are_in_the_row(
    settings: Settings, auth: Callable[..., dict[str, str]], stored: Stored, tmp_path: Path
) -> None:
    keeping = msgspec.structs.replace(settings, audit_tool_arguments=True)
    async with AsyncTestClient(app=create_app(keeping, environ={})) as client:
        rows = await _approve_one_decline_one(client, auth, stored, tmp_path, auth("alice"))
    assert rows[1]["detail"]["arguments"] == {"target": SECRET}

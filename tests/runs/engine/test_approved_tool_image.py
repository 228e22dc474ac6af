"""Issue 41, defect 1: approving a tool that returns an image wedged the embedded database for good.

The resumed run's intake had written (the caller's quota count) and so held SQLite's write turn, its
commit deferred until the model was asked; the approved call runs before any model turn, and its image
was stored through a session of its own, which waited for that turn until the lock timeout. The run
then ended with ``RUN_ERROR database_unavailable`` without ever settling its intake, which kept the turn
(and the shared write connection inside its transaction) until a restart: every later write got 503.
Here a real MCP server over Streamable HTTP, its image tool asking for approval, the offline local
model, both engines; afterwards unrelated writes and a new run must go through and nothing may be held.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import msgspec
import pytest
from litestar import Litestar
from litestar.testing import AsyncTestClient

from iris.app.asgi import create_app
from iris.app.persistence.db import write_lock
from iris.app.settings import Settings
from tests.support.agui import check_stream
from tests.support.mcp_servers import http_server
from tests.support.run_fixtures import SLOW_MODEL, Stored
from tests.support.runs import answer_text, of_type, run, run_input, upload, user_message

pytestmark = pytest.mark.slow
Client = AsyncTestClient[Litestar]
LOCK_TIMEOUT = 2.0


@pytest.fixture
async def client(settings: Settings) -> AsyncIterator[Client]:
    app = create_app(msgspec.structs.replace(settings, sqlite_lock_timeout_seconds=LOCK_TIMEOUT), environ={})
    async with AsyncTestClient(app=app) as test_client:
        yield test_client


def assert_nothing_held(client: Client) -> None:
    """No write turn held, and the shared write connection outside any transaction (SQLite)."""
    lock = write_lock(client.app.state.alchemy.get_engine())
    if lock is not None:
        assert not lock.locked, "a write turn is still held"
        assert not lock.in_transaction(), "the shared write connection is inside a transaction"


async def test_approving_a_tool_that_returns_an_image_leaves_the_database_writable(
    client: Client, alice: dict[str, str], auth: Callable[..., dict[str, str]], stored: Stored, tmp_path: Path
) -> None:
    admin = auth("root", role="admin")
    with http_server(tmp_path) as url:
        added = await client.post(
            "/api/mcp-servers",
            json={"name": "charts", "transport": "http", "url": url, "toolApproval": {"chart": "always"}},
            headers=admin,
        )
        assert added.status_code == 201, added.text
        await stored.set_agent_tools(["mcp:charts/*"])
        thread = str(uuid.uuid4())
        ask = user_message("use tool charts__chart " + json.dumps({"values": [1, 2, 3]}))
        asked = await run(client, alice, run_input(thread, ask, model="local/vision"))
        (interrupt,) = asked[-1]["outcome"]["interrupts"]
        assert interrupt["reason"] == "tool_approval"

        response = await client.post(
            "/agent/runs/resume",
            json=run_input(thread, resume=[{"interruptId": interrupt["id"], "status": "resolved"}]),
            headers=alice,
        )
        assert response.status_code == 200, response.text
        resumed = check_stream(response.content)
        assert resumed[-1]["type"] == "RUN_FINISHED", resumed[-1]
        (result,) = of_type(resumed, "TOOL_CALL_RESULT")
        output = result["metadata"]["iris/toolAgentOutput"]
        assert output["status"] == "succeeded"
        assert [part["type"] for part in output["content"]] == ["text", "image"]
        assert "image" in answer_text(resumed)  # the local model saw the chart

    assert_nothing_held(client)
    # Every kind of write of the process goes on: an upload, the catalogue, a new run.
    await upload(client, alice, str(uuid.uuid4()))
    model = await client.post("/api/models", json={**SLOW_MODEL, "modelId": "after"}, headers=admin)
    assert model.status_code == 201, model.text
    after = await run(client, alice, run_input(str(uuid.uuid4()), user_message("hello")))
    assert after[-1]["type"] == "RUN_FINISHED", after[-1]
    ready = await client.get("/readyz")
    assert ready.status_code == 200, ready.text
    assert_nothing_held(client)
    uploads = await stored.uploads(thread)
    assert [row.name for row in uploads] == ["tool-result.png"]

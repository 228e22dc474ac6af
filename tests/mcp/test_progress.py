"""Progress of a running MCP tool reaches the AG-UI stream while it runs: every call carries a progress
token, and the server's ``notifications/progress`` and log lines become ``ACTIVITY_SNAPSHOT`` /
``ACTIVITY_DELTA`` (``iris/toolProgress``) before the call's result. Against a server built with the ``mcp``
SDK over Streamable HTTP (progress with messages, and log lines) and the reference server-everything over
stdio and Streamable HTTP (its long-running operation, which reports progress only when given a token)."""

from __future__ import annotations

import json
import shutil
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from litestar import Litestar
from litestar.testing import AsyncTestClient

from iris.app.asgi import create_app
from iris.app.settings import Settings
from tests.support.activity import activity_of, apply_activity
from tests.support.mcp_servers import free_port, http_server, serving
from tests.support.npm import npm_install
from tests.support.run_fixtures import Stored
from tests.support.runs import of_type, run, run_input, user_message

pytestmark = [pytest.mark.slow, pytest.mark.parametrize("engine_name", ["sqlite"], indirect=True)]
Client = AsyncTestClient[Litestar]
CONNECT = 60.0
EVERYTHING = "@modelcontextprotocol/server-everything"


@pytest.fixture
async def client(settings: Settings) -> AsyncIterator[Client]:
    async with AsyncTestClient(app=create_app(settings, environ={})) as test_client:
        yield test_client


@pytest.fixture
def admin(auth: Callable[..., dict[str, str]]) -> dict[str, str]:
    return auth("root", role="admin")


async def add_server(client: Client, admin: dict[str, str], stored: Stored, body: dict[str, Any]) -> None:
    response = await client.post(
        "/api/mcp-servers", json={**body, "connectTimeoutSeconds": CONNECT}, headers=admin
    )
    assert response.status_code == 201, response.text
    await stored.set_agent_tools([f"mcp:{body['name']}/*"])


def ask(tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return run_input(str(uuid.uuid4()), user_message(f"use tool {tool} {json.dumps(arguments)}"))


async def test_progress_and_log_lines_of_an_sdk_server_over_http(
    client: Client, admin: dict[str, str], alice: dict[str, str], stored: Stored, tmp_path: Path
) -> None:
    with http_server(tmp_path) as url:
        await add_server(client, admin, stored, {"name": "counter", "transport": "http", "url": url})
        events = await run(client, alice, ask("counter__count", {"steps": 3, "pause": 0.4}))

    kinds = [e["type"] for e in events]
    activity = activity_of(events)
    assert activity, kinds
    (start,) = of_type(events, "TOOL_CALL_END")
    (result,) = of_type(events, "TOOL_CALL_RESULT")
    positions = [events.index(e) for e in activity]
    assert events.index(start) < min(positions)
    assert max(positions) < events.index(result)
    assert activity[0]["type"] == "ACTIVITY_SNAPSHOT"
    assert {e["type"] for e in activity[1:]} == {"ACTIVITY_DELTA"}
    assert len({e["messageId"] for e in activity}) == 1
    first = activity[0]["content"]
    assert (first["toolCallId"], first["toolName"], first["status"]) == (
        start["toolCallId"],
        "counter__count",
        "running",
    )
    final = apply_activity(activity)
    assert final["status"] == "succeeded"
    assert (final["progress"], final["total"], final["message"]) == (3, 3, "step 3 of 3")
    assert [line["message"] for line in final["logs"]] == ["step 1 done", "step 2 done", "step 3 done"]
    assert {(line["level"], line["logger"]) for line in final["logs"]} == {("info", "counter")}
    # Each report was its own update: the pauses are longer than the least time between two events.
    progress = [e for e in activity[1:] if any(op["path"] == "/progress" for op in e["patch"])]
    assert len(progress) >= 2


@pytest.fixture(scope="module")
def everything_entry(tmp_path_factory: pytest.TempPathFactory) -> Path:
    where = npm_install(tmp_path_factory, "mcp-server-everything", EVERYTHING)
    return (where / "node_modules" / EVERYTHING / "dist" / "index.js").resolve()


@pytest.fixture(params=["stdio", "http"])
def everything(request: pytest.FixtureRequest, everything_entry: Path) -> Iterator[dict[str, Any]]:
    """server-everything's ``POST /api/mcp-servers`` body, over each transport."""
    node = shutil.which("node")
    assert node is not None
    if request.param == "stdio":
        yield {
            "name": "everything",
            "transport": "stdio",
            "command": node,
            "args": [str(everything_entry), "stdio"],
        }
        return
    port = free_port()
    with serving([node, str(everything_entry), "streamableHttp"], port, env={"PORT": str(port)}):
        yield {"name": "everything", "transport": "http", "url": f"http://127.0.0.1:{port}/mcp"}


async def test_the_reference_servers_long_running_operation(
    client: Client, admin: dict[str, str], alice: dict[str, str], stored: Stored, everything: dict[str, Any]
) -> None:
    """server-everything sends progress only when the call carries a progress token: Iris's always does."""
    await add_server(client, admin, stored, everything)
    events = await run(
        client, alice, ask("everything__trigger-long-running-operation", {"duration": 1.5, "steps": 3})
    )
    activity = activity_of(events)
    assert activity, [e["type"] for e in events]
    final = apply_activity(activity)
    assert (final["progress"], final["total"], final["status"]) == (3, 3, "succeeded")
    assert final["toolName"] == "everything__trigger-long-running-operation"
    (result,) = of_type(events, "TOOL_CALL_RESULT")
    assert "Long running operation completed" in result["content"]

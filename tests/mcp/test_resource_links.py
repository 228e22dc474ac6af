"""Resource links a tool returned, read on request (``POST /api/agents/{slug}/sessions/{sessionId}/messages/
{messageId}/resource-links/{index}/read``, ADR 0084): read from the server that returned them, kept like a
tool's media (text in the link, bytes as an upload history signs afresh), and refused with a stable code
when they cannot be. Against the SDK-built test server over stdio (on both engines: the link is updated
in the stored output) and the reference ``server-everything`` over stdio."""

from __future__ import annotations

import shutil
import uuid
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import msgspec
import pytest
from litestar import Litestar
from litestar.testing import AsyncTestClient

from iris.app.asgi import create_app
from iris.app.settings import Settings
from tests.support.mcp_servers import stdio_entry
from tests.support.npm import npm_install
from tests.support.runs import chat_history, of_type, run, run_input, user_message

pytestmark = [pytest.mark.slow]
Client = AsyncTestClient[Litestar]
CONNECT = 60.0
EVERYTHING = "@modelcontextprotocol/server-everything"
MEDIA_LIMIT = 100_000
"""The tool-result media limit of these tests: the test server's ``big`` note is over it."""


@pytest.fixture
async def client(settings: Settings) -> AsyncIterator[Client]:
    limited = msgspec.structs.replace(settings, tool_result_max_media_bytes=MEDIA_LIMIT)
    async with AsyncTestClient(app=create_app(limited, environ={})) as test_client:
        yield test_client


@pytest.fixture
def admin(auth: Callable[..., dict[str, str]]) -> dict[str, str]:
    return auth("root", role="admin")


async def register(client: Client, admin: dict[str, str], body: dict[str, Any]) -> None:
    body = {**body, "approval": "never", "connectTimeoutSeconds": CONNECT}
    created = await client.post("/api/mcp-servers", json=body, headers=admin)
    assert created.status_code == 201, created.text
    agent = await client.patch(
        "/api/agents/default", json={"tools": [f"mcp:{body['name']}/*"]}, headers=admin
    )
    assert agent.status_code == 200, agent.text


async def linked(client: Client, user: dict[str, str], tool: str, arguments: str) -> tuple[str, str, Any]:
    """Run ``tool`` in a new thread: ``(thread, the tool message's id, its toolAgentOutput)``."""
    thread = str(uuid.uuid4())
    events = await run(client, user, run_input(thread, user_message(f"use tool {tool} {arguments}")))
    (result,) = of_type(events, "TOOL_CALL_RESULT")
    output = result["metadata"]["iris/toolAgentOutput"]
    assert output["status"] == "succeeded", output
    return thread, result["messageId"], output


async def read(
    client: Client, user: dict[str, str], thread: str, message: str, index: int, status: int = 200
) -> dict[str, Any]:
    path = f"/api/agents/default/sessions/{thread}/messages/{message}/resource-links/{index}/read"
    response = await client.post(path, headers=user)
    assert response.status_code == status, response.text
    body: dict[str, Any] = response.json()
    return body


def refused(body: dict[str, Any], code: str) -> bool:
    return bool(body["code"] == code and body["status"] >= 400 and body["detail"])


@pytest.mark.parametrize("engine_name", ["sqlite", "postgresql"], indirect=True)
async def test_links_are_read_on_request_and_kept_like_tool_media(
    client: Client,
    admin: dict[str, str],
    alice: dict[str, str],
    auth: Callable[..., dict[str, str]],
    tmp_path: Path,
) -> None:
    marks = tmp_path / "marks"
    marks.mkdir()
    await register(client, admin, stdio_entry("notes", marks))
    thread, message, output = await linked(client, alice, "notes__linked", "{}")
    links = output["content"][1:]
    assert [link["type"] for link in links] == ["resource_link"] * 6
    assert links[0] == {
        "type": "resource_link",
        "uri": "memo://notes/greeting",
        "name": "greeting",
        "mimeType": "text/plain",
        "server": "notes",
    }
    assert links[3]["size"] == 10**9

    text = await read(client, alice, thread, message, 1)
    assert (text["text"], text["name"], text["server"]) == ("hello from a note", "greeting", "notes")
    assert text["readAt"]
    chart = await read(client, alice, thread, message, 2)
    assert (chart["mimeType"], chart["name"]) == ("image/png", "chart")
    assert (await client.get(chart["url"])).content.startswith(b"\x89PNG\r\n\x1a\n")
    again = await read(client, alice, thread, message, 2)  # kept: answered from what is stored
    assert (again["uploadId"], again["readAt"]) == (chart["uploadId"], chart["readAt"])

    history = await chat_history(client, alice, thread)
    kept = next(m for m in history if m["role"] == "tool")["toolOutput"]["content"]
    assert kept[1]["text"] == "hello from a note"
    assert kept[2]["uploadId"] == chart["uploadId"]
    assert (await client.get(kept[2]["url"])).content == (await client.get(chart["url"])).content

    assert refused(await read(client, alice, thread, message, 0, 404), "resource_link_not_found")
    assert refused(await read(client, alice, thread, message, 99, 404), "resource_link_not_found")
    assert refused(await read(client, alice, thread, message, 3, 422), "resource_too_large")
    assert refused(await read(client, alice, thread, message, 4, 422), "resource_too_large")
    assert not (marks / "read.declared").exists()  # refused by its declared size: never asked for
    assert refused(await read(client, alice, thread, message, 5, 422), "resource_link_external")
    assert refused(await read(client, alice, thread, message, 6, 502), "mcp_read_failed")
    assert refused(await read(client, auth("mallory"), thread, message, 1, 404), "thread_not_found")

    disabled = await client.patch("/api/mcp-servers/notes", json={"enabled": False}, headers=admin)
    assert disabled.status_code == 200, disabled.text
    assert refused(await read(client, alice, thread, message, 3, 409), "mcp_server_gone")
    assert (await read(client, alice, thread, message, 1))["text"] == "hello from a note"  # kept
    after = await run(client, alice, run_input(str(uuid.uuid4()), user_message("still here?")))
    assert after[-1]["outcome"]["type"] == "success"  # nothing held by the refusals


@pytest.fixture(scope="module")
def everything_entry(tmp_path_factory: pytest.TempPathFactory) -> Path:
    where = npm_install(tmp_path_factory, "mcp-server-everything", EVERYTHING)
    return (where / "node_modules" / EVERYTHING / "dist" / "index.js").resolve()


@pytest.mark.parametrize("engine_name", ["sqlite"], indirect=True)
async def test_the_reference_servers_links_are_read(
    client: Client, admin: dict[str, str], alice: dict[str, str], everything_entry: Path
) -> None:
    """``get-resource-links``: a blob resource (odd ids) and a text one (even ids), both read."""
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed: the reference MCP server needs it")
    entry = {"name": "everything", "transport": "stdio", "command": node}
    await register(client, admin, {**entry, "args": [str(everything_entry), "stdio"]})
    thread, message, output = await linked(client, alice, "everything__get-resource-links", '{"count": 2}')
    blob_link, text_link = output["content"][1:]
    assert blob_link["uri"] == "demo://resource/dynamic/blob/1", blob_link
    assert (text_link["uri"], text_link["server"]) == ("demo://resource/dynamic/text/2", "everything")

    text = await read(client, alice, thread, message, 2)
    assert text["text"].startswith("Resource 2: This is a plaintext resource"), text
    blob = await read(client, alice, thread, message, 1)
    assert blob["uploadId"], blob
    stored = (await client.get(blob["url"])).content
    assert len(stored) == blob["size"]
    assert b"Resource 1" in stored, stored[:80]  # its bytes, decoded from the server's base64

"""Iris against MCP servers nobody here wrote: the reference ``@modelcontextprotocol/server-everything`` (from
package.json, over stdio and over Streamable HTTP) and ``mcp-server-time`` (a Python package, over stdio).
Registration, discovery, a plain call and a task-only tool's call (run as a task) through a run, and the
reference server's image (a PNG with a bad CRC on its optional ``iCCP`` chunk) reaching the model, the
AG-UI stream and history, and accepted by ``/v1`` from the ``openai`` SDK as a data URL."""

from __future__ import annotations

import asyncio
import base64
import json
import shutil
import sys
import time
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import httpx2
import openai
import pytest
from litestar import Litestar
from litestar.testing import AsyncTestClient
from mcp import Client as McpClient
from mcp.client.streamable_http import streamable_http_client

from iris.app.asgi import create_app
from iris.app.mcp.config import ServerConfig
from iris.app.mcp.connection import ServerConnection
from iris.app.media.png_chunks import checked_png
from iris.app.settings import Settings
from iris.tools import ToolFailed
from tests.support.mcp_servers import free_port, serving
from tests.support.npm import npm_install
from tests.support.runs import answer_text, of_type, run, run_input, user_message
from tests.support.waits import REQUEST_SECONDS

pytestmark = [pytest.mark.slow, pytest.mark.parametrize("engine_name", ["sqlite"], indirect=True)]
Client = AsyncTestClient[Litestar]
EVERYTHING = "@modelcontextprotocol/server-everything"
CONNECT = 60.0  # a loaded 2-core machine starts Node and the SDK slowly
TASK_ONLY = "simulate-research-query"


@pytest.fixture(scope="module")
def everything_entry(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The reference server's entry script, run with Node (a stdio child gets a minimal ``PATH``)."""
    where = npm_install(tmp_path_factory, "mcp-server-everything", EVERYTHING)
    return (where / "node_modules" / EVERYTHING / "dist" / "index.js").resolve()


@pytest.fixture(scope="module")
def everything_url(everything_entry: Path) -> Iterator[str]:
    """One Streamable HTTP server-everything for the module, on a free loopback port."""
    port = free_port()
    with serving([_node(), str(everything_entry), "streamableHttp"], port, env={"PORT": str(port)}):
        yield f"http://127.0.0.1:{port}/mcp"


@pytest.fixture(params=["stdio", "http"])
def everything(request: pytest.FixtureRequest, everything_entry: Path) -> dict[str, Any]:
    """server-everything's ``POST /api/mcp-servers`` body, over each transport (default approval)."""
    if request.param == "http":
        url: str = request.getfixturevalue("everything_url")
        return {"name": "everything", "transport": "http", "url": url, "connectTimeoutSeconds": CONNECT}
    command = {"command": _node(), "args": [str(everything_entry), "stdio"]}
    return {"name": "everything", "transport": "stdio", **command, "connectTimeoutSeconds": CONNECT}


@pytest.fixture
async def client(settings: Settings) -> AsyncIterator[Client]:
    async with AsyncTestClient(app=create_app(settings, environ={})) as test_client:
        yield test_client


@pytest.fixture
def admin(auth: Callable[..., dict[str, str]]) -> dict[str, str]:
    return auth("root", role="admin")


@pytest.fixture
def alice(auth: Callable[..., dict[str, str]]) -> dict[str, str]:
    return auth("alice")


async def test_the_reference_server_over_each_transport(
    client: Client, admin: dict[str, str], alice: dict[str, str], everything: dict[str, Any]
) -> None:
    tools = await register(client, admin, everything)

    assert {"everything__echo", "everything__get-tiny-image"} <= tools.keys()
    assert all(tool["source"] == "mcp:everything" for tool in tools.values())
    assert tools["everything__echo"]["available"] is True
    assert tools[f"everything__{TASK_ONLY}"]["available"] is True  # run as a task on 2025-11-25
    health = (await client.get("/api/mcp-servers/everything", headers=admin)).json()["health"]
    assert health["state"] == "connected", health

    echoed = await run(client, alice, ask(str(uuid.uuid4()), "everything__echo", {"message": "hi from Iris"}))
    output = tool_output(echoed)
    assert (output["status"], output["content"]) == (
        "succeeded",
        [{"type": "text", "text": "Echo: hi from Iris"}],
    )
    assert echoed[-1]["outcome"]["type"] == "success"

    # A task-only tool (not read-only: approved first): created, polled to its end (~4 s), result fetched.
    thread = str(uuid.uuid4())
    asked = await run(client, alice, ask(thread, f"everything__{TASK_ONLY}", {"topic": "MCP"}))
    (approval,) = asked[-1]["outcome"]["interrupts"]
    resume = [{"interruptId": approval["id"], "status": "resolved"}]
    output = tool_output(await run(client, alice, run_input(thread, resume=resume)))
    assert output["status"] == "succeeded", output
    assert output["content"][0]["text"].startswith("# Research Report: MCP")


async def test_the_reference_servers_image_reaches_the_stream_the_model_and_history(
    client: Client, admin: dict[str, str], alice: dict[str, str], everything: dict[str, Any]
) -> None:
    await register(client, admin, everything)
    thread = str(uuid.uuid4())
    events = await run(client, alice, ask(thread, "everything__get-tiny-image", {}))

    output = tool_output(events)
    assert output["status"] == "succeeded", output
    kinds = [part["type"] for part in output["content"]]
    assert kinds == ["text", "image", "text"], output  # not "[an image (image/png) was not kept: …]"
    image = output["content"][1]
    assert (image["mimeType"], image["width"], image["height"]) == ("image/png", 20, 20)
    stored = (await client.get(image["url"])).content
    assert checked_png(stored) is stored  # kept without the damaged chunk, whole
    assert b"iCCP" not in stored
    assert "Image 1: PNG, 20x20 pixels" in answer_text(events)  # the local model decoded what it got

    history = (await client.get(f"/agent/threads/{thread}/messages", headers=alice)).json()["messages"]
    replayed = next(m for m in history if m["role"] == "tool")["metadata"]["toolAgentOutput"]["content"][1]
    assert (replayed["type"], replayed["uploadId"]) == ("image", image["uploadId"])
    assert (await client.get(replayed["url"])).content == stored


async def test_the_reference_servers_image_is_taken_by_v1_as_a_data_url(
    client: Client, alice: dict[str, str], everything_url: str
) -> None:
    logo = await tiny_image(everything_url)
    assert b"iCCP" in logo  # what the server sends: its colour profile's CRC is wrong, and only that
    assert b"iCCP" not in checked_png(logo)
    async with httpx2.AsyncClient(transport=httpx2.ASGITransport(app=client.app)) as served:
        sdk = openai.AsyncOpenAI(
            base_url="http://iris.test/v1",
            api_key=alice["Authorization"].removeprefix("Bearer "),
            http_client=served,  # the app the test client started, in process
            timeout=REQUEST_SECONDS,
            max_retries=0,
        )
        answer = await sdk.chat.completions.create(
            model="local/vision",
            messages=[
                {
                    "role": "user",
                    "content": [
                        {"type": "text", "text": "What is this?"},
                        {
                            "type": "image_url",
                            "image_url": {"url": "data:image/png;base64," + base64.b64encode(logo).decode()},
                        },
                    ],
                }
            ],
        )
    assert "Image 1: PNG, 20x20 pixels" in (answer.choices[0].message.content or "")


async def test_mcp_server_time_over_stdio(
    client: Client, admin: dict[str, str], alice: dict[str, str]
) -> None:
    time_server = {
        "name": "time",
        "transport": "stdio",
        "command": sys.executable,
        "args": ["-m", "mcp_server_time"],
        "connectTimeoutSeconds": CONNECT,
    }
    tools = await register(client, admin, time_server)
    assert {"time__get_current_time", "time__convert_time"} <= tools.keys()
    assert tools["time__get_current_time"]["needsApproval"] is False  # read-only, by its annotations

    events = await run(client, alice, ask(str(uuid.uuid4()), "time__get_current_time", {"timezone": "UTC"}))
    output = tool_output(events)
    assert output["status"] == "succeeded", output
    assert output["result"]["timezone"] == "UTC"  # its structuredContent
    assert output["result"]["datetime"][:4].isdigit()
    assert events[-1]["outcome"]["type"] == "success"


async def register(client: Client, admin: dict[str, str], body: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Add the server, give the default agent all its tools; ``GET /api/tools`` by name."""
    created = await client.post("/api/mcp-servers", json=body, headers=admin)
    assert created.status_code == 201, created.text
    name = body["name"]
    agent = await client.patch("/api/agents/default", json={"tools": [f"mcp:{name}/*"]}, headers=admin)
    assert agent.status_code == 200, agent.text
    listed = await client.get("/api/tools", headers=admin)
    assert listed.status_code == 200, listed.text
    return {tool["name"]: tool for tool in listed.json()["tools"] if tool["source"] == f"mcp:{name}"}


def ask(thread: str, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return run_input(thread, user_message(f"use tool {tool} {json.dumps(arguments)}"))


def tool_output(events: list[dict[str, Any]]) -> dict[str, Any]:
    (result,) = of_type(events, "TOOL_CALL_RESULT")
    output: dict[str, Any] = result["metadata"]["iris/toolAgentOutput"]
    return output


async def tiny_image(url: str) -> bytes:
    """The image server-everything's ``get-tiny-image`` returns, asked with the MCP SDK directly."""
    async with McpClient(streamable_http_client(url)) as mcp:
        result = await mcp.call_tool("get-tiny-image", {})
    (image,) = [block for block in result.content if block.type == "image"]
    return base64.b64decode(image.data)


def _node() -> str:
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed: the reference MCP server needs it")
    return node


async def test_a_task_is_bounded_by_the_servers_call_timeout(
    engine_name: str, everything_entry: Path
) -> None:
    """The research task takes about 4 s; with a 1 s call timeout the call fails in time, and the task is
    cancelled (``tasks/cancel``) rather than left running."""
    config = ServerConfig(
        name="everything",
        transport="stdio",
        command=_node(),
        args=(str(everything_entry), "stdio"),
        connect_timeout_seconds=CONNECT,
        call_timeout_seconds=1,
        version="1",
    )
    connection = ServerConnection(config, {}, tools_ttl_seconds=300)
    try:
        assert any(tool.task for tool in await connection.tools())
        started = time.monotonic()
        with pytest.raises(ToolFailed, match="did not answer within 1 s"):
            await connection.call(TASK_ONLY, {"topic": "MCP"})
        assert time.monotonic() - started < 3
        echoed = await connection.call("echo", {"message": "still here"})  # the connection is unharmed
        assert echoed.summary
    finally:
        await connection.close()


async def test_a_server_that_dies_mid_task_fails_the_call_at_once(
    engine_name: str, everything_entry: Path
) -> None:
    """The research task runs (about 4 s) when its server is killed: the call fails saying so, long
    before the call timeout (no hang), and the connection is down, not wedged."""
    port = free_port()
    command = [_node(), str(everything_entry), "streamableHttp"]
    with serving(command, port, env={"PORT": str(port)}) as server:
        config = ServerConfig(
            name="dying",
            transport="http",
            url=f"http://127.0.0.1:{port}/mcp",
            connect_timeout_seconds=CONNECT,
            call_timeout_seconds=120,
            version="1",
        )
        connection = ServerConnection(config, {}, tools_ttl_seconds=300)
        try:
            assert any(tool.task for tool in await connection.tools())
            call = asyncio.ensure_future(connection.call(TASK_ONLY, {"topic": "MCP"}))
            await asyncio.sleep(1.0)  # the task is created and being polled
            assert not call.done()
            started = time.monotonic()
            server.kill()
            with pytest.raises(ToolFailed, match="dying"):
                await asyncio.wait_for(call, timeout=30)
            assert time.monotonic() - started < 15, "the call waited for the server well past its death"
            with pytest.raises(ToolFailed):
                await connection.call("echo", {"message": "anyone?"})
        finally:
            await connection.close()

"""One MCP server's connection against real servers built with the SDK, over stdio (a subprocess) and
Streamable HTTP (a process on a loopback port): discovery, calls and every way they go wrong."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from iris.app.mcp.config import ServerConfig, expand
from iris.app.mcp.connection import ServerConnection
from iris.tools import ImageContent, TextContent, ToolFailed
from tests.support.mcp_servers import SERVER, http_server, wait_for

pytestmark = pytest.mark.slow
CONNECT = 60.0  # generous: a loaded machine starts Python slowly


def stdio_config(marks: Path, **extra: object) -> ServerConfig:
    return ServerConfig(
        name="test",
        transport="stdio",
        command=sys.executable,
        args=(str(SERVER),),
        env={"MARK_DIR": "${MARKS}"},
        connect_timeout_seconds=CONNECT,
        version="1",
        **extra,  # type: ignore[arg-type]
    )


@pytest.fixture(params=["stdio", "http"])
def transport(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def http_url(marks: Path, transport: str) -> Iterator[str | None]:
    if transport != "http":
        yield None
        return
    with http_server(marks) as url:
        yield url


@pytest.fixture
async def connection(marks: Path, transport: str, http_url: str | None) -> AsyncIterator[ServerConnection]:
    if transport == "http":
        config = ServerConfig(
            name="test", transport="http", url=http_url, connect_timeout_seconds=CONNECT, version="1"
        )
    else:
        config = stdio_config(marks)
    connection = ServerConnection(config, {"MARKS": str(marks)}, tools_ttl_seconds=300)
    yield connection
    await connection.close()


async def test_discovers_tools_with_their_hints(connection: ServerConnection) -> None:
    tools = {tool.qualified_name: tool for tool in await connection.tools()}
    assert {"test__chart", "test__stats", "test__slow", "test__wipe"} <= set(tools)
    assert tools["test__chart"].hints.read_only is True
    assert tools["test__wipe"].hints.read_only is None  # no annotations: nothing is assumed
    assert tools["test__stats"].parameters["type"] == "object"
    assert connection.health()["state"] == "connected"


async def test_a_call_returns_text_and_a_real_image(connection: ServerConnection) -> None:
    result = await connection.call("chart", {"values": [1, 2, 3]})
    assert not result.is_error
    assert isinstance(result.content[0], TextContent)
    image = result.content[1]
    assert isinstance(image, ImageContent)
    assert image.mime_type == "image/png"
    assert image.data.startswith(b"\x89PNG")


async def test_a_tool_error_is_an_error_result(connection: ServerConnection) -> None:
    result = await connection.call("broken", {})
    assert result.is_error
    assert "broken on purpose" in result.summary


async def test_a_call_past_its_timeout_is_cancelled_on_the_server(marks: Path) -> None:
    config = stdio_config(marks, call_timeout_seconds=1.0)
    connection = ServerConnection(config, {"MARKS": str(marks)}, tools_ttl_seconds=300)
    try:
        await connection.tools()
        with pytest.raises(ToolFailed, match="did not answer within 1 s"):
            await connection.call("slow", {"seconds": 120, "marker": "late"})
        await wait_for(marks / "late.cancelled")  # the SDK sent notifications/cancelled
        answer = await connection.call("stats", {"values": [2, 4]})  # the connection is still good
        assert answer.structured["mean"] == 3
    finally:
        await connection.close()


async def test_a_caller_cancelled_mid_call_cancels_the_request(
    connection: ServerConnection, marks: Path
) -> None:
    await connection.tools()
    call = asyncio.create_task(connection.call("slow", {"seconds": 120, "marker": "abandoned"}))
    await wait_for(marks / "abandoned.started")
    call.cancel()
    with pytest.raises(asyncio.CancelledError):
        await call
    await wait_for(marks / "abandoned.cancelled")


async def test_a_server_killed_mid_call_is_an_error_and_comes_back(marks: Path) -> None:
    connection = ServerConnection(stdio_config(marks), {"MARKS": str(marks)}, tools_ttl_seconds=300)
    try:
        await connection.tools()
        first_pid = int(await wait_for(marks / "pid"))
        (marks / "pid").unlink()
        call = asyncio.create_task(connection.call("slow", {"seconds": 120, "marker": "killed"}))
        await wait_for(marks / "killed.started")
        os.kill(first_pid, signal.SIGKILL)
        with pytest.raises(ToolFailed, match="closed the connection"):
            await asyncio.wait_for(call, timeout=CONNECT)
        second_pid = int(await wait_for(marks / "pid"))  # restarted in the background, after the backoff
        assert second_pid != first_pid
        async with asyncio.timeout(CONNECT):
            while connection.health()["state"] != "connected":  # noqa: ASYNC110 -- no event to await
                await asyncio.sleep(0.05)
        answer = await connection.call("stats", {"values": [1]})
        assert answer.structured["count"] == 1
    finally:
        await connection.close()


async def test_a_crash_during_the_call_is_an_error_not_a_hang(connection: ServerConnection) -> None:
    await connection.tools()
    with pytest.raises(ToolFailed):
        await asyncio.wait_for(connection.call("crash", {}), timeout=CONNECT + 10)


async def test_a_server_that_cannot_start_is_down_with_its_reason(marks: Path) -> None:
    config = ServerConfig(name="nope", transport="stdio", command="/no/such/program", version="1")
    connection = ServerConnection(config, {}, tools_ttl_seconds=300)
    try:
        assert await connection.tools() == []  # a run still starts: no tools from it
        with pytest.raises(ToolFailed, match="down"):
            await connection.call("anything", {})
        assert connection.health()["state"] == "down"
        assert connection.health()["error"]
    finally:
        await connection.close()


async def test_header_variables_are_expanded_at_connect_time(marks: Path) -> None:
    with http_server(marks, env={"REQUIRE_TOKEN": "s3cret"}) as url:
        config = ServerConfig(
            name="auth",
            transport="http",
            url=url,
            headers={"Authorization": "Bearer ${MCP_TOKEN}"},
            connect_timeout_seconds=CONNECT,
            version="1",
        )
        refused = ServerConnection(config, {"MCP_TOKEN": "wrong"}, tools_ttl_seconds=300)
        allowed = ServerConnection(config, {"MCP_TOKEN": "s3cret"}, tools_ttl_seconds=300)
        unset = ServerConnection(config, {}, tools_ttl_seconds=300)
        try:
            assert await refused.tools() == []
            assert refused.health()["state"] == "down"
            assert {t.name for t in await allowed.tools()} >= {"chart"}
            assert await unset.tools() == []
            assert "MCP_TOKEN" in unset.health()["error"]
        finally:
            for connection in (refused, allowed, unset):
                await connection.close()
        assert config.headers["Authorization"] == "Bearer ${MCP_TOKEN}"  # never kept expanded


def test_expand_takes_defaults_and_refuses_unset_variables() -> None:
    assert expand("Bearer ${T}", {"T": "x"}, kind="headers", key="h") == "Bearer x"
    assert expand("${A:-fallback}/${B}", {"B": "b"}, kind="env", key="h") == "fallback/b"
    with pytest.raises(ValueError, match=r"header X names \$\{NOPE\}"):
        expand("${NOPE}", {}, kind="headers", key="X")


async def test_the_tool_list_is_trusted_for_the_servers_ttl_and_refreshed_when_it_changes(
    marks: Path,
) -> None:
    """2026-07-28 over Streamable HTTP: ``ttlMs`` (10 min here) keeps a list although Iris's own TTL is
    0, and ``tools/list_changed`` (through ``subscriptions/listen``) refreshes it at once."""
    with http_server(marks, env={"TOOLS_TTL_MS": "600000"}) as url:
        config = ServerConfig(
            name="test", transport="http", url=url, connect_timeout_seconds=CONNECT, version="1"
        )
        connection = ServerConnection(config, {}, tools_ttl_seconds=0)
        try:
            first = {tool.name: tool for tool in await connection.tools()}
            assert (first["labelled"].title, first["labelled"].icons[0]["mimeType"]) == (
                "A labelled tool",
                "image/svg+xml",
            )
            await connection.call("grow", {"name": "quiet", "announce": False})
            assert "quiet" not in {tool.name for tool in await connection.tools()}  # still trusted
            await connection.call("grow", {"name": "loud"})
            async with asyncio.timeout(CONNECT):
                while "loud" not in {tool.name for tool in connection.cached_tools()}:  # noqa: ASYNC110
                    await asyncio.sleep(0.05)
            assert "quiet" in {tool.name for tool in connection.cached_tools()}
        finally:
            await connection.close()

"""Runs with MCP tools end to end, against a real MCP server built with the SDK (stdio subprocess and
Streamable HTTP on a loopback port) and the offline local model: discovery, a call whose image the
model really sees, what is stored and replayed, errors, a server that is down, cancel mid-call, result
limits and approval. Both engines."""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import httpx
import msgspec
import pytest
from litestar import Litestar
from litestar.testing import AsyncTestClient

from iris.app.asgi import create_app
from iris.app.settings import Settings
from tests.support.agui import check_stream
from tests.support.http_server import serve_asgi
from tests.support.mcp_servers import http_server, stdio_entry, wait_for
from tests.support.run_fixtures import Stored
from tests.support.runs import answer_text, of_type, run, run_input, user_message

pytestmark = pytest.mark.slow
Client = AsyncTestClient[Litestar]
CONNECT = 60.0


@pytest.fixture
async def client(settings: Settings, marks: Path) -> AsyncIterator[Client]:
    app = create_app(
        msgspec.structs.replace(settings, tool_result_max_media=4), environ={"MARKS": str(marks)}
    )
    async with AsyncTestClient(app=app) as test_client:
        yield test_client


@pytest.fixture
def admin(auth: Callable[..., dict[str, str]]) -> dict[str, str]:
    return auth("root", role="admin")


async def add_server(client: Client, admin: dict[str, str], body: dict[str, Any]) -> dict[str, Any]:
    response = await client.post("/api/mcp-servers", json=body, headers=admin)
    assert response.status_code == 201, response.text
    answer: dict[str, Any] = response.json()
    return answer


@pytest.fixture
async def charts(client: Client, admin: dict[str, str], marks: Path, stored: Stored) -> dict[str, Any]:
    """The test server over stdio as ``charts``, every tool of it given to the default agent."""
    server = await add_server(
        client,
        admin,
        {**stdio_entry("charts", marks), "env": {"MARK_DIR": "${MARKS}"}, "connectTimeoutSeconds": CONNECT},
    )
    await stored.set_agent_tools(["mcp:charts/*", "current_time"])
    return server


def ask(thread: str, tool: str, arguments: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return run_input(thread, user_message(f"use tool {tool} {json.dumps(arguments)}"), **extra)


def tool_output(events: list[dict[str, Any]]) -> dict[str, Any]:
    (result,) = of_type(events, "TOOL_CALL_RESULT")
    output: dict[str, Any] = result["metadata"]["iris/toolAgentOutput"]
    return output


async def test_an_mcp_image_reaches_the_model_and_is_stored_as_an_upload(
    client: Client, alice: dict[str, str], charts: dict[str, Any], stored: Stored
) -> None:
    thread = str(uuid.uuid4())
    events = await run(client, alice, ask(thread, "charts__chart", {"values": [1, 2, 3]}))

    assert of_type(events, "TOOL_CALL_START")[0]["toolCallName"] == "charts__chart"
    output = tool_output(events)
    assert output["status"] == "succeeded", output
    text, image = output["content"]
    assert text == {"type": "text", "text": "A bar chart of 3 values."}
    assert image["type"] == "image"
    assert (image["mimeType"], image["width"], image["height"]) == ("image/png", 480, 320)
    fetched = await client.get(image["url"])  # a fresh signed URL, served by local storage
    assert fetched.status_code == 200
    assert fetched.content.startswith(b"\x89PNG")
    # The local model decodes what it receives: the tool's image reached it as an image.
    assert "Image 1: PNG, 480x320 pixels" in answer_text(events)
    assert events[-1]["outcome"]["type"] == "success"

    rows = await stored.messages(thread)
    tool_row = next(row for row in rows if row.role == "tool")
    kept = tool_row.meta["tool_agent_output"]["content"][1]
    assert "url" not in kept
    assert "expiresAt" not in kept
    assert kept["uploadId"] == image["uploadId"]
    assert len(json.dumps(tool_row.meta)) < 2000  # the bytes are in the object store, not the database


async def test_history_replays_tool_images_with_fresh_urls(
    client: Client, alice: dict[str, str], charts: dict[str, Any]
) -> None:
    thread = str(uuid.uuid4())
    events = await run(client, alice, ask(thread, "charts__chart", {"values": [4, 2]}))
    live_url = tool_output(events)["content"][1]["url"]

    for query in ("", "?format=ag-ui"):
        history = (await client.get(f"/agent/threads/{thread}/messages{query}", headers=alice)).json()
        tool = next(m for m in history["messages"] if m["role"] == "tool")
        image = tool["metadata"]["toolAgentOutput"]["content"][1]
        assert image["url"].startswith("http://")
        assert (await client.get(image["url"])).status_code == 200
        assert image["url"] != live_url or image["expiresAt"]
        calls = next(m for m in history["messages"] if m.get("toolCalls"))
        assert calls["toolCalls"][0]["function"]["name"] == "charts__chart"

    chat = (await client.get(f"/api/agents/default/sessions/{thread}/messages", headers=alice)).json()
    tool = next(m for m in chat["messages"] if m["role"] == "tool")
    assert [p["type"] for p in tool["parts"]] == ["text", "image"]
    assert (await client.get(tool["parts"][1]["image"])).status_code == 200
    assert tool["toolOutput"]["toolName"] == "charts__chart"
    caller = next(m for m in chat["messages"] if m.get("toolCalls"))
    assert caller["toolCalls"][0]["name"] == "charts__chart"
    assert any(m.get("usage") for m in chat["messages"] if m["role"] == "assistant")


async def test_every_kind_of_mcp_content_is_kept(
    client: Client, alice: dict[str, str], charts: dict[str, Any]
) -> None:
    thread = str(uuid.uuid4())
    events = await run(client, alice, ask(thread, "charts__everything", {}))
    output = tool_output(events)
    kinds = [part["type"] for part in output["content"]]
    assert kinds == ["text", "image", "audio", "resource_link", "resource"]
    audio = output["content"][2]
    assert audio["mimeType"] == "audio/wav"
    served = await client.get(audio["url"])
    assert served.headers["content-type"].startswith("audio/wav")
    assert served.content.startswith(b"RIFF")
    assert output["content"][3]["uri"] == "https://example.com/report.pdf"
    assert output["content"][4]["text"] == "a note"
    assert output["result"] == {"answer": 42}  # structuredContent
    told = answer_text(events)
    assert "[link: report <https://example.com/report.pdf>]" in told
    assert "[audio clip: audio/wav" in told


async def test_an_is_error_result_is_a_failed_call_the_model_reads(
    client: Client, alice: dict[str, str], charts: dict[str, Any]
) -> None:
    events = await run(client, alice, ask(str(uuid.uuid4()), "charts__broken", {}))
    output = tool_output(events)
    assert output["status"] == "failed"
    assert "broken on purpose" in output["error"]
    assert "failed: Error executing tool broken: broken on purpose" in answer_text(events)
    assert events[-1]["outcome"]["type"] == "success"


async def test_a_result_over_the_limits_is_a_clear_error_to_the_model(
    client: Client, alice: dict[str, str], charts: dict[str, Any]
) -> None:
    events = await run(client, alice, ask(str(uuid.uuid4()), "charts__many_images", {"count": 6}))
    output = tool_output(events)
    assert output["status"] == "failed"
    assert output["error"] == "the result has 6 images or clips; at most 4 are taken"
    assert "at most 4 are taken" in answer_text(events)


async def test_a_server_that_is_down_gives_the_model_a_tool_error(
    client: Client, alice: dict[str, str], admin: dict[str, str], marks: Path, stored: Stored
) -> None:
    with http_server(marks) as url:
        await add_server(client, admin, {"name": "remote", "transport": "http", "url": url})
        await stored.set_agent_tools(["remote__stats"])
        listed = (await client.get("/api/tools", headers=admin)).json()
        assert "remote__stats" in {tool["name"] for tool in listed["tools"]}
    # The server is gone now: its tool is still offered (from the last listing), and calling it is an
    # error the model reads, while the run itself succeeds.
    events = await run(client, alice, ask(str(uuid.uuid4()), "remote__stats", {"values": [1]}))
    output = tool_output(events)
    assert output["status"] == "failed"
    assert "remote" in output["error"]
    assert events[-1]["outcome"]["type"] == "success"
    health = (await client.get("/api/mcp-servers/remote", headers=admin)).json()["health"]
    assert health["state"] == "down"
    assert (await client.get("/readyz")).status_code == 200  # readiness is about the database only


async def test_cancelling_a_run_mid_call_cancels_the_mcp_request(
    settings: Settings, admin: dict[str, str], alice: dict[str, str], marks: Path, stored: Stored
) -> None:
    """On a real socket: the run is cancelled from a second request while its tool call is running."""
    app = create_app(settings, environ={"MARKS": str(marks)})
    with serve_asgi(app, lifespan="on") as base:
        async with httpx.AsyncClient(base_url=base, timeout=CONNECT) as http:
            entry = {**stdio_entry("charts", marks), "env": {"MARK_DIR": "${MARKS}"}}
            assert (await http.post("/api/mcp-servers", json=entry, headers=admin)).status_code == 201
            await stored.set_agent_tools(["mcp:charts/*"])
            body = ask(str(uuid.uuid4()), "charts__slow", {"seconds": 300, "marker": "run"})
            running = asyncio.create_task(http.post("/agent/runs", json=body, headers=alice))
            await wait_for(marks / "run.started")
            cancelled = await http.post(f"/agent/runs/{body['runId']}/cancel", headers=alice)
            assert cancelled.status_code == 202, cancelled.text
            events = check_stream((await running).content)
    assert events[-1]["outcome"] == {"type": "cancelled"}
    assert tool_output(events)["status"] == "cancelled"
    await wait_for(marks / "run.cancelled")  # the server was sent notifications/cancelled
    run_row = await stored.run(body["runId"])
    assert run_row is not None
    assert run_row.status == "cancelled"


# -- approval ---------------------------------------------------------------------------------------


async def test_a_tool_without_annotations_asks_and_a_denial_skips_it(
    client: Client, alice: dict[str, str], charts: dict[str, Any], marks: Path
) -> None:
    thread = str(uuid.uuid4())
    events = await run(client, alice, ask(thread, "charts__wipe", {"target": "a"}))
    outcome = events[-1]["outcome"]
    assert outcome["type"] == "interrupt"
    (interrupt,) = outcome["interrupts"]
    assert interrupt["reason"] == "tool_approval"
    assert "charts__wipe" in interrupt["message"]
    assert not (marks / "wiped-a").exists()

    resumed = await run(
        client, alice, run_input(thread, resume=[{"interruptId": interrupt["id"], "status": "cancelled"}])
    )
    assert tool_output(resumed)["status"] == "cancelled"
    assert not (marks / "wiped-a").exists()


async def test_an_mcp_call_its_schema_refuses_is_a_tool_error_not_an_approval(
    client: Client, alice: dict[str, str], charts: dict[str, Any], marks: Path
) -> None:
    events = await run(client, alice, ask(str(uuid.uuid4()), "charts__wipe", {"aim": "a"}))
    assert events[-1]["outcome"] == {"type": "success"}
    output = tool_output(events)
    assert output["status"] == "failed"
    assert output["error"] == "invalid arguments: 'target' is a required property"
    assert "Tool charts__wipe failed: invalid arguments" in answer_text(events)
    assert not (marks / "wiped-a").exists()


async def test_an_approved_call_runs(
    client: Client, alice: dict[str, str], charts: dict[str, Any], marks: Path
) -> None:
    thread = str(uuid.uuid4())
    events = await run(client, alice, ask(thread, "charts__wipe", {"target": "b"}))
    (interrupt,) = events[-1]["outcome"]["interrupts"]
    resumed = await run(
        client, alice, run_input(thread, resume=[{"interruptId": interrupt["id"], "status": "resolved"}])
    )
    assert tool_output(resumed)["result"] == {"result": "wiped b"}  # MCPServer's structured output
    assert tool_output(resumed)["status"] == "succeeded"
    assert (marks / "wiped-b").exists()


async def test_a_read_only_tool_does_not_ask_and_the_admins_rule_wins(
    client: Client, alice: dict[str, str], admin: dict[str, str], charts: dict[str, Any], marks: Path
) -> None:
    quiet = await run(client, alice, ask(str(uuid.uuid4()), "charts__stats", {"values": [1, 2]}))
    assert quiet[-1]["outcome"]["type"] == "success"
    changed = await client.patch(
        "/api/mcp-servers/charts",
        json={"approval": "never", "toolApproval": {"stats": "always"}},
        headers=admin,
    )
    assert changed.status_code == 200, changed.text
    asks = await run(client, alice, ask(str(uuid.uuid4()), "charts__stats", {"values": [1, 2]}))
    assert asks[-1]["outcome"]["type"] == "interrupt"  # read-only, but the admin said always
    trusted = await run(client, alice, ask(str(uuid.uuid4()), "charts__wipe", {"target": "c"}))
    assert trusted[-1]["outcome"]["type"] == "success"  # no annotations, but the admin said never
    assert (marks / "wiped-c").exists()

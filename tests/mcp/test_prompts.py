"""The prompts of an agent's MCP servers: ``GET /api/agents/{slug}/prompts`` lists them (the reference
``server-everything`` over stdio), and a run starts from one (``forwardedProps.prompt`` on
``/agent/runs``, ``prompt`` on the chat surface): the prompt's messages are recorded as the user's.
``GET /api/tools`` shows the server's tool titles."""

from __future__ import annotations

import shutil
import uuid
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
from litestar import Litestar
from litestar.testing import AsyncTestClient

from iris.app.asgi import create_app
from iris.app.settings import Settings
from tests.support.npm import npm_install
from tests.support.runs import answer_text, chat, of_type, run, run_input

pytestmark = [pytest.mark.slow, pytest.mark.parametrize("engine_name", ["sqlite"], indirect=True)]
Client = AsyncTestClient[Litestar]
EVERYTHING = "@modelcontextprotocol/server-everything"


@pytest.fixture(scope="module")
def everything_entry(tmp_path_factory: pytest.TempPathFactory) -> Path:
    where = npm_install(tmp_path_factory, "mcp-server-everything", EVERYTHING)
    return (where / "node_modules" / EVERYTHING / "dist" / "index.js").resolve()


@pytest.fixture
async def client(settings: Settings) -> AsyncIterator[Client]:
    async with AsyncTestClient(app=create_app(settings, environ={})) as test_client:
        yield test_client


@pytest.fixture
def admin(auth: Callable[..., dict[str, str]]) -> dict[str, str]:
    return auth("root", role="admin")


@pytest.fixture
async def everything(client: Client, admin: dict[str, str], everything_entry: Path) -> None:
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed: the reference MCP server needs it")
    body = {
        "name": "everything",
        "transport": "stdio",
        "command": node,
        "args": [str(everything_entry), "stdio"],
        "connectTimeoutSeconds": 60,
    }
    assert (await client.post("/api/mcp-servers", json=body, headers=admin)).status_code == 201
    agent = await client.patch("/api/agents/default", json={"tools": ["mcp:everything/*"]}, headers=admin)
    assert agent.status_code == 200, agent.text


@pytest.mark.usefixtures("everything")
async def test_the_agents_prompts_are_listed(client: Client, alice: dict[str, str]) -> None:
    response = await client.get("/api/agents/default/prompts", headers=alice)
    assert response.status_code == 200, response.text
    prompts = {p["name"]: p for p in response.json()["prompts"]}
    assert {"everything__simple-prompt", "everything__args-prompt"} <= prompts.keys()
    args = prompts["everything__args-prompt"]
    assert (args["server"], args["title"]) == ("everything", "Arguments Prompt")
    assert args["arguments"][0] == {"name": "city", "required": True, "description": "Name of the city"}
    assert args["arguments"][1]["required"] is False
    missing = await client.get("/api/agents/nobody/prompts", headers=alice)
    assert (missing.status_code, missing.json()["code"]) == (404, "agent_not_found")


@pytest.mark.usefixtures("everything")
async def test_a_run_starts_from_a_prompt(client: Client, alice: dict[str, str]) -> None:
    thread = str(uuid.uuid4())
    prompt = {"name": "everything__args-prompt", "arguments": {"city": "Lisbon"}}
    events = await run(client, alice, run_input(thread, forwardedProps={"prompt": prompt}))
    assert events[-1]["outcome"]["type"] == "success"
    assert "What's weather in Lisbon?" in answer_text(events)  # the local model echoes what it was told
    history = (await client.get(f"/agent/threads/{thread}/messages", headers=alice)).json()["messages"]
    user = [m for m in history if m["role"] == "user"]
    assert [m["content"] for m in user] == [[{"type": "text", "text": "What's weather in Lisbon?"}]]

    unknown = {"name": "everything__no-such-prompt"}
    refused = await client.post(
        "/agent/runs", json=run_input(str(uuid.uuid4()), forwardedProps={"prompt": unknown}), headers=alice
    )
    assert (refused.status_code, refused.json()["code"]) == (422, "prompt_failed")
    elsewhere = {"name": "other__simple-prompt"}
    refused = await client.post(
        "/agent/runs", json=run_input(str(uuid.uuid4()), forwardedProps={"prompt": elsewhere}), headers=alice
    )
    assert (refused.status_code, refused.json()["code"]) == (422, "prompt_not_found")


@pytest.mark.usefixtures("everything")
async def test_the_chat_surface_starts_from_a_prompt(client: Client, alice: dict[str, str]) -> None:
    events = await chat(client, alice, {"prompt": {"name": "everything__simple-prompt"}})
    assert events[-1]["outcome"]["type"] == "success"
    started: dict[str, Any] = of_type(events, "RUN_STARTED")[0]
    assert "This is a simple prompt without arguments." in answer_text(events)
    both = await chat(
        client,
        alice,
        {
            "sessionId": started["threadId"],
            "content": "and briefly",
            "prompt": {"name": "everything__simple-prompt"},
        },
    )
    assert both[-1]["outcome"]["type"] == "success"


@pytest.mark.usefixtures("everything")
async def test_api_tools_shows_the_servers_titles(client: Client, admin: dict[str, str]) -> None:
    listed = (await client.get("/api/tools", headers=admin)).json()["tools"]
    tools = {tool["name"]: tool for tool in listed}
    assert tools["everything__trigger-elicitation-request"]["title"] == "Trigger Elicitation Request Tool"

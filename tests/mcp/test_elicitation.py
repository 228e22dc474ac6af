"""A tool that asks the user a question mid-call (MCP elicitation), end to end: the run ends with an
``input_required`` interrupt carrying the server's message and form (or URL), the resuming run gives the
answer to the call still waiting, and the server hears accept, decline or cancel; a question nobody
answers expires with the interrupt TTL and the server hears ``cancel``. Against the SDK-built test server
over Streamable HTTP (it negotiates 2026-07-28: an ``input_required`` result the client retries) and the
reference ``server-everything`` over stdio (2025-11-25: ``elicitation/create``)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import msgspec
import pytest
from litestar import Litestar
from litestar.testing import AsyncTestClient

from iris.app.asgi import create_app
from iris.app.security.auth import issue_token
from iris.app.settings import Settings
from tests.conftest import JWT_SECRET
from tests.support.http_server import serve_asgi
from tests.support.mcp_servers import http_server, stdio_entry, wait_for
from tests.support.npm import npm_install
from tests.support.runs import chat, of_type, run, run_input, user_message
from tests.support.waits import SUBPROCESS_SECONDS

pytestmark = [pytest.mark.slow, pytest.mark.parametrize("engine_name", ["sqlite"], indirect=True)]
Client = AsyncTestClient[Litestar]
CONNECT = 60.0
EVERYTHING = "@modelcontextprotocol/server-everything"


@pytest.fixture
def contact_url(marks: Path) -> Iterator[str]:
    with http_server(marks) as url:
        yield url


@pytest.fixture
def ttl() -> int:
    return 3600


@pytest.fixture
async def client(settings: Settings, ttl: int) -> AsyncIterator[Client]:
    app = create_app(msgspec.structs.replace(settings, interrupt_ttl_seconds=ttl), environ={})
    async with AsyncTestClient(app=app) as test_client:
        yield test_client


@pytest.fixture
def admin(auth: Callable[..., dict[str, str]]) -> dict[str, str]:
    return auth("root", role="admin")


async def register(client: Client, admin: dict[str, str], body: dict[str, Any]) -> None:
    created = await client.post("/api/mcp-servers", json={**body, "approval": "never"}, headers=admin)
    assert created.status_code == 201, created.text
    agent = await client.patch(
        "/api/agents/default", json={"tools": [f"mcp:{body['name']}/*"]}, headers=admin
    )
    assert agent.status_code == 200, agent.text


async def asked(
    client: Client, alice: dict[str, str], thread: str, tool: str, arguments: Any
) -> dict[str, Any]:
    """Run a call of ``tool``: the run must end with one ``input_required`` interrupt, returned."""
    events = await run(
        client, alice, run_input(thread, user_message(f"use tool {tool} {json.dumps(arguments)}"))
    )
    assert of_type(events, "TOOL_CALL_RESULT") == []  # the call is still waiting for the answer
    outcome = events[-1]["outcome"]
    assert outcome["type"] == "interrupt", outcome
    (interrupt,) = outcome["interrupts"]
    assert interrupt["reason"] == "input_required"
    assert interrupt["metadata"]["iris/toolCall"]["name"] == tool
    return dict(interrupt)


async def resumed(
    client: Client,
    alice: dict[str, str],
    thread: str,
    interrupt: dict[str, Any],
    status: str,
    payload: Any = None,
) -> dict[str, Any]:
    """Answer the interrupt; the call's ``iris/toolAgentOutput``."""
    entry = {"interruptId": interrupt["id"], "status": status, "payload": payload}
    events = await run(client, alice, run_input(thread, resume=[entry]))
    (result,) = of_type(events, "TOOL_CALL_RESULT")
    assert events[-1]["outcome"]["type"] == "success"
    output: dict[str, Any] = result["metadata"]["iris/toolAgentOutput"]
    return output


async def test_a_form_question_over_streamable_http_accepted(
    client: Client, admin: dict[str, str], alice: dict[str, str], contact_url: str, marks: Path
) -> None:
    await register(client, admin, {"name": "forms", "transport": "http", "url": contact_url})
    thread = str(uuid.uuid4())
    interrupt = await asked(client, alice, thread, "forms__ask_contact", {})
    assert interrupt["message"] == "Who should the report go to?"
    schema = interrupt["responseSchema"]
    assert schema["required"] == ["name"]
    assert schema["properties"]["subscribe"]["type"] == "boolean"
    assert interrupt["metadata"]["iris/elicitation"] == {"server": "forms", "mode": "form"}

    wrong = {
        "interruptId": interrupt["id"],
        "status": "resolved",
        "payload": {"content": {"subscribe": True}},
    }
    refused = await client.post("/agent/runs", json=run_input(thread, resume=[wrong]), headers=alice)
    assert (refused.status_code, refused.json()["code"]) == (422, "validation_failed")  # 'name' is required

    answer = {"action": "accept", "content": {"name": "Ada", "subscribe": True}}
    output = await resumed(client, alice, thread, interrupt, "resolved", answer)
    assert output["status"] == "succeeded", output
    assert output["content"] == [{"type": "text", "text": "sending to Ada (subscribe: True)"}]
    assert await wait_for(marks / "asked.accept")
    assert await revision(client, admin, "forms") == "2026-07-28"  # stateless: an input_required result


async def revision(client: Client, admin: dict[str, str], name: str) -> str:
    """The protocol revision ``GET /api/mcp-servers`` says the server negotiated."""
    servers = (await client.get("/api/mcp-servers", headers=admin)).json()["servers"]
    (server,) = [s for s in servers if s["name"] == name]
    return str(server["health"]["protocolVersion"])


async def test_a_question_answered_on_the_chat_surface(
    client: Client, admin: dict[str, str], alice: dict[str, str], contact_url: str, marks: Path
) -> None:
    await register(client, admin, {"name": "forms", "transport": "http", "url": contact_url})
    events = await chat(client, alice, {"content": "use tool forms__ask_contact {}"})
    (interrupt,) = events[-1]["outcome"]["interrupts"]
    assert interrupt["reason"] == "input_required"
    entry = {"interruptId": interrupt["id"], "status": "resolved", "payload": {"content": {"name": "Grace"}}}
    answered = await chat(client, alice, {"sessionId": events[0]["threadId"], "resume": [entry]})
    (result,) = of_type(answered, "TOOL_CALL_RESULT")
    assert result["content"] == "sending to Grace (subscribe: False)"
    assert await wait_for(marks / "asked.accept")


@pytest.mark.parametrize(
    ("status", "payload", "action"),
    [("resolved", {"action": "decline"}, "decline"), ("cancelled", None, "cancel")],
)
async def test_a_form_question_declined_or_cancelled(
    client: Client,
    admin: dict[str, str],
    alice: dict[str, str],
    contact_url: str,
    marks: Path,
    status: str,
    payload: Any,
    action: str,
) -> None:
    await register(client, admin, {"name": "forms", "transport": "http", "url": contact_url})
    thread = str(uuid.uuid4())
    interrupt = await asked(client, alice, thread, "forms__ask_contact", {})
    output = await resumed(client, alice, thread, interrupt, status, payload)
    assert output["content"] == [{"type": "text", "text": f"the user chose {action}"}]
    assert await wait_for(marks / f"asked.{action}")


@pytest.mark.parametrize("ttl", [2])
async def test_an_unanswered_question_expires_and_the_server_hears_cancel(
    client: Client, admin: dict[str, str], alice: dict[str, str], contact_url: str, marks: Path
) -> None:
    await register(client, admin, {"name": "forms", "transport": "http", "url": contact_url})
    thread = str(uuid.uuid4())
    interrupt = await asked(client, alice, thread, "forms__ask_contact", {})
    assert await wait_for(marks / "asked.cancel", within=30)  # the TTL ran out: the server was told
    late = {"interruptId": interrupt["id"], "status": "resolved", "payload": {"content": {"name": "Ada"}}}
    refused = await client.post("/agent/runs", json=run_input(thread, resume=[late]), headers=alice)
    assert (refused.status_code, refused.json()["code"]) == (422, "interrupt_expired")
    # Nothing held: the thread takes a new message, and the server's connection a new call.
    events = await run(client, alice, run_input(thread, user_message("use tool forms__labelled {}")))
    (result,) = of_type(events, "TOOL_CALL_RESULT")
    assert result["metadata"]["iris/toolAgentOutput"]["content"] == [{"type": "text", "text": "labelled"}]
    assert events[-1]["outcome"]["type"] == "success"


@pytest.fixture(scope="module")
def everything_entry(tmp_path_factory: pytest.TempPathFactory) -> Path:
    where = npm_install(tmp_path_factory, "mcp-server-everything", EVERYTHING)
    return (where / "node_modules" / EVERYTHING / "dist" / "index.js").resolve()


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
    }
    await register(client, admin, {**body, "connectTimeoutSeconds": CONNECT})


@pytest.mark.usefixtures("everything")
async def test_the_reference_servers_form_question_over_stdio(
    client: Client, admin: dict[str, str], alice: dict[str, str]
) -> None:
    thread = str(uuid.uuid4())
    interrupt = await asked(client, alice, thread, "everything__trigger-elicitation-request", {})
    assert interrupt["message"] == "Please provide inputs for the following fields:"
    assert interrupt["responseSchema"]["properties"]["untitledMultipleSelectEnum"]["type"] == "array"
    answer = {"content": {"name": "Ada Lovelace", "check": True, "integer": 7}}
    output = await resumed(client, alice, thread, interrupt, "resolved", answer)
    text = "\n".join(part["text"] for part in output["content"])
    assert "User provided the requested information" in text, text
    assert "Ada Lovelace" in text
    assert await revision(client, admin, "everything") == "2025-11-25"  # session-based: elicitation/create

    other = str(uuid.uuid4())
    again = await asked(client, alice, other, "everything__trigger-elicitation-request", {})
    declined = await resumed(client, alice, other, again, "resolved", {"action": "decline"})
    assert "decline" in json.dumps(declined["content"]).lower()


@pytest.mark.usefixtures("everything")
async def test_the_reference_servers_url_question_over_stdio(client: Client, alice: dict[str, str]) -> None:
    thread = str(uuid.uuid4())
    page = "https://example.com/connect"
    interrupt = await asked(client, alice, thread, "everything__trigger-url-elicitation", {"url": page})
    assert interrupt["metadata"]["iris/elicitation"] == {"server": "everything", "mode": "url", "url": page}
    assert "responseSchema" not in interrupt
    output = await resumed(client, alice, thread, interrupt, "resolved")
    assert "User completed the URL elicitation flow" in output["content"][0]["text"], output


AGUI_FLOW = Path(__file__).with_name("agui_elicitation.cjs")


def test_the_ag_ui_reference_client_answers_a_question(
    settings: Settings, tmp_path_factory: pytest.TempPathFactory, contact_url: str
) -> None:
    where = npm_install(tmp_path_factory, "@ag-ui/client", "@ag-ui/client")
    shutil.copy(AGUI_FLOW, where / AGUI_FLOW.name)
    token = issue_token(JWT_SECRET, "alice")
    admin = {"Authorization": f"Bearer {issue_token(JWT_SECRET, 'root', role='admin')}"}
    with serve_asgi(create_app(settings, environ={}), lifespan="on") as base:
        body = {"name": "forms", "transport": "http", "url": contact_url, "approval": "never"}
        assert httpx.post(f"{base}/api/mcp-servers", json=body, headers=admin).status_code == 201
        tools = {"tools": ["mcp:forms/*"]}
        assert httpx.patch(f"{base}/api/agents/default", json=tools, headers=admin).status_code == 200
        answer = {"content": {"name": "Ada", "subscribe": True}}
        result = subprocess.run(
            [
                "node",
                AGUI_FLOW.name,
                f"{base}/agent/runs",
                token,
                str(uuid.uuid4()),
                "use tool forms__ask_contact {}",
                json.dumps(answer),
            ],
            cwd=where,
            capture_output=True,
            text=True,
            timeout=SUBPROCESS_SECONDS,
            check=False,
        )
    report = json.loads(result.stdout.strip().splitlines()[-1])
    assert "error" not in report, report
    assert report["warnings"] == []
    assert report["firstOutcome"]["type"] == "interrupt"
    (interrupt,) = report["interrupts"]
    assert (interrupt["reason"], interrupt["message"]) == ("input_required", "Who should the report go to?")
    assert interrupt["responseSchema"]["required"] == ["name"]
    assert report["result"] == "sending to Ada (subscribe: True)"
    assert report["second"][-1] == "RUN_FINISHED"
    assert report["pendingAfter"] == []


async def test_a_server_that_dies_while_asking_gives_a_clear_failed_result(
    client: Client, admin: dict[str, str], alice: dict[str, str], marks: Path
) -> None:
    """The server dies while its question waits for the user: the answer finds no server, and the
    resumed call fails saying so (no hang); the run ends normally."""
    await register(client, admin, {**stdio_entry("dying", marks), "connectTimeoutSeconds": CONNECT})
    thread = str(uuid.uuid4())
    interrupt = await asked(client, alice, thread, "dying__ask_contact", {})
    os.kill(int(await wait_for(marks / "pid")), signal.SIGKILL)
    output = await resumed(client, alice, thread, interrupt, "resolved", {"content": {"name": "Ada"}})
    assert output["status"] == "failed"
    assert "closed the connection" in output["error"], output


@pytest.mark.usefixtures("everything")
async def test_the_reference_servers_url_required_error_over_stdio(
    client: Client, alice: dict[str, str]
) -> None:
    """-32042 (URL elicitation required): the page is put to the user, and once they are done the call is
    made again; the reference server then asks through ``elicitation/create`` as well."""
    thread = str(uuid.uuid4())
    page = "https://example.com/sign-in"
    arguments = {"url": page, "errorPath": True, "elicitationId": "e-42"}
    first = await asked(client, alice, thread, "everything__trigger-url-elicitation", arguments)
    assert (
        first["metadata"]["iris/elicitation"]["url"] == "https://modelcontextprotocol.io"
    )  # its prerequisite
    entry = {"interruptId": first["id"], "status": "resolved"}
    again = await run(client, alice, run_input(thread, resume=[entry]))
    (second,) = again[-1]["outcome"]["interrupts"]  # the retried call asks in turn
    assert (second["reason"], second["metadata"]["iris/elicitation"]["url"]) == ("input_required", page)
    output = await resumed(client, alice, thread, second, "resolved")
    assert "User completed the URL elicitation flow" in output["content"][0]["text"], output

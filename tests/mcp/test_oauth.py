"""Per-user authorization at an OAuth-protected remote MCP server, end to end against the test server and
its authorization server (the MCP SDK's auth pieces, on loopback): a call the user is not signed in for
ends the run with an ``authorization_required`` interrupt carrying the authorization URL (PKCE, ``state``,
RFC 8707 ``resource``); the browser-free sign-in reaches Iris's callback, the code is exchanged, and the
resumed run gets the call's result with the user's own identity. A second user signs in separately;
connections are listed and revoked; tokens never appear in the clear in the database file or the logs."""

from __future__ import annotations

import logging
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
from litestar import Litestar
from litestar.testing import AsyncTestClient

from iris.app.asgi import create_app
from iris.app.settings import Settings
from tests.support.oauth_flow import authorization_url, oauth_server, sign_in
from tests.support.runs import of_type, run, run_input, user_message

pytestmark = [pytest.mark.slow, pytest.mark.parametrize("engine_name", ["sqlite"], indirect=True)]
Client = AsyncTestClient[Litestar]


@pytest.fixture
def marks(tmp_path: Path) -> Path:
    path = tmp_path / "marks"
    path.mkdir()
    return path


@pytest.fixture
def secure_url(marks: Path) -> Iterator[str]:
    with oauth_server(marks) as url:
        yield url


@pytest.fixture
async def client(settings: Settings) -> AsyncIterator[Client]:
    async with AsyncTestClient(app=create_app(settings, environ={})) as test_client:
        yield test_client


@pytest.fixture
def admin(auth: Callable[..., dict[str, str]]) -> dict[str, str]:
    return auth("root", role="admin")


async def register(
    client: Client, admin: dict[str, str], url: str, oauth: dict[str, Any] | None = None
) -> None:
    body = {"name": "secure", "transport": "http", "url": url, "approval": "never", "oauth": oauth or {}}
    created = await client.post("/api/mcp-servers", json=body, headers=admin)
    assert created.status_code == 201, created.text
    assert created.json()["oauth"]["grant"] == (oauth or {}).get("grant", "authorization_code")
    agent = await client.patch("/api/agents/default", json={"tools": ["mcp:secure/*"]}, headers=admin)
    assert agent.status_code == 200, agent.text


async def interrupted(client: Client, user: dict[str, str], thread: str, tool: str) -> dict[str, Any]:
    """A call of ``tool`` that must end the run with one ``authorization_required`` interrupt."""
    events = await run(client, user, run_input(thread, user_message(f"use tool {tool} {{}}")))
    assert of_type(events, "TOOL_CALL_RESULT") == []
    outcome = events[-1]["outcome"]
    assert outcome["type"] == "interrupt", outcome
    (interrupt,) = outcome["interrupts"]
    assert interrupt["reason"] == "authorization_required"
    assert interrupt["metadata"]["iris/toolCall"]["name"] == tool
    assert interrupt["metadata"]["iris/authorization"]["server"] == "secure"
    return dict(interrupt)


async def resumed(
    client: Client, user: dict[str, str], thread: str, interrupt: dict[str, Any]
) -> dict[str, Any]:
    entry = {"interruptId": interrupt["id"], "status": "resolved"}
    events = await run(client, user, run_input(thread, resume=[entry]))
    (result,) = of_type(events, "TOOL_CALL_RESULT")
    output: dict[str, Any] = result["metadata"]["iris/toolAgentOutput"]
    return output


async def called(client: Client, user: dict[str, str], tool: str) -> dict[str, Any]:
    """A call that needs no sign-in: its output."""
    events = await run(client, user, run_input(str(uuid.uuid4()), user_message(f"use tool {tool} {{}}")))
    (result,) = of_type(events, "TOOL_CALL_RESULT")
    output: dict[str, Any] = result["metadata"]["iris/toolAgentOutput"]
    return output


def text_of(output: dict[str, Any]) -> str:
    return " ".join(part.get("text", "") for part in output.get("content") or [])


async def test_sign_in_resume_second_user_list_and_revoke(
    client: Client,
    admin: dict[str, str],
    auth: Callable[..., dict[str, str]],
    secure_url: str,
    marks: Path,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    alice, bob = auth("alice"), auth("bob")
    await register(client, admin, secure_url)

    # Nobody has listed the server's tools yet: the run offers secure__sign_in.
    thread = str(uuid.uuid4())
    interrupt = await interrupted(client, alice, thread, "secure__sign_in")
    query = parse_qs(urlsplit(authorization_url(interrupt)).query)
    assert query["code_challenge_method"] == ["S256"]
    assert query["response_type"] == ["code"]
    assert query["resource"] == [secure_url]
    assert query["state"][0]
    assert query["code_challenge"][0]
    assert "mcp:read" in query["scope"][0]
    page = await sign_in(client, interrupt, "alice")
    assert page.status_code == 200, page.text
    assert "Signed in to secure" in page.text
    output = await resumed(client, alice, thread, interrupt)
    assert output["status"] == "succeeded", output
    assert "secure__whoami" in text_of(output)
    assert "user=alice" in text_of(await called(client, alice, "secure__whoami"))

    # Bob: the tools are known now; his call itself asks him to sign in, then proceeds as him.
    thread = str(uuid.uuid4())
    interrupt = await interrupted(client, bob, thread, "secure__whoami")
    assert (await sign_in(client, interrupt, "bob")).status_code == 200
    output = await resumed(client, bob, thread, interrupt)
    assert output["status"] == "succeeded", output
    assert "user=bob" in text_of(output)
    assert "user=alice" in text_of(await called(client, alice, "secure__whoami"))

    listed = await client.get("/api/mcp/connections", headers=alice)
    assert listed.status_code == 200, listed.text
    (connection,) = listed.json()["connections"]
    assert connection["server"] == "secure"
    assert "mcp:read" in connection["scopes"]
    assert connection["expiresAt"]
    assert not any("token" in key.lower() for key in connection)

    revoked = await client.delete("/api/mcp/connections/secure", headers=alice)
    assert revoked.status_code == 204, revoked.text
    assert (marks / "revoked.refresh").read_text() == "alice"
    assert (await client.get("/api/mcp/connections", headers=alice)).json()["connections"] == []
    again = await client.delete("/api/mcp/connections/secure", headers=alice)
    assert (again.status_code, again.json()["code"]) == (404, "mcp_connection_not_found")
    await interrupted(client, alice, str(uuid.uuid4()), "secure__whoami")  # signed out: asked again
    assert "user=bob" in text_of(await called(client, bob, "secure__whoami"))  # bob is still signed in

    database = b"".join(path.read_bytes() for path in sorted(tmp_path.glob("iris.db*")))  # noqa: ASYNC240
    assert b"mcp_grants" in database  # the file (and its write-ahead log) holds the table
    issued = (marks / "issued").read_text().split()
    assert len(issued) >= 4
    logged = "\n".join(record.getMessage() for record in caplog.records)
    for token in issued:
        assert token.encode() not in database
        assert token not in logged

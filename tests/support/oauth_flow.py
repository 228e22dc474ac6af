"""The OAuth-protected test MCP server (tests/support/oauth_mcp_server.py) started on a free loopback port,
a browser-free sign-in (follow an ``authorization_required`` interrupt's URL to the authorization server,
say who signs in, and call Iris's callback with what it redirects to), and the runs the OAuth tests make."""

from __future__ import annotations

import sys
import uuid
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
from litestar import Litestar
from litestar.testing import AsyncTestClient

from tests.support.mcp_servers import free_port, serving
from tests.support.runs import of_type, run, run_input, user_message

Client = AsyncTestClient[Litestar]

SERVER = Path(__file__).with_name("oauth_mcp_server.py")
CALLBACK = "/api/mcp/oauth/callback"


@contextmanager
def oauth_server(mark_dir: Path, **env: str) -> Iterator[str]:
    """The protected server; yields its MCP URL (``http://127.0.0.1:{port}/mcp``)."""
    port = free_port()
    with serving(
        [sys.executable, str(SERVER), "--port", str(port)], port, env={"MARK_DIR": str(mark_dir), **env}
    ):
        yield f"http://127.0.0.1:{port}/mcp"


def authorization_url(interrupt: Mapping[str, Any]) -> str:
    assert interrupt["reason"] == "authorization_required", interrupt
    url: str = interrupt["metadata"]["iris/authorization"]["url"]
    return url


async def approve(url: str, user: str) -> str:
    """Follow an authorization URL as ``user`` (the server approves everyone): the redirect back to Iris
    (its path and query)."""
    async with httpx.AsyncClient(follow_redirects=False, timeout=30) as browser:
        first = await browser.get(url)
        assert first.status_code == 302, first.text
        assert "/login?" in first.headers["location"], first.headers["location"]
        login = await browser.get(first.headers["location"] + f"&user={user}")
        assert login.status_code == 302, login.text
        back = urlsplit(login.headers["location"])
    assert back.path == CALLBACK, back
    return f"{back.path}?{back.query}"


def approve_now(url: str, user: str) -> str:
    """:func:`approve` for synchronous tests."""
    with httpx.Client(follow_redirects=False, timeout=30) as browser:
        first = browser.get(url)
        assert first.status_code == 302, first.text
        login = browser.get(first.headers["location"] + f"&user={user}")
        assert login.status_code == 302, login.text
        back = urlsplit(login.headers["location"])
    assert back.path == CALLBACK, back
    return f"{back.path}?{back.query}"


async def sign_in(
    client: AsyncTestClient[Litestar], interrupt: Mapping[str, Any], user: str
) -> httpx.Response:
    """The whole sign-in for ``interrupt``'s URL; Iris's callback answer."""
    return await client.get(await approve(authorization_url(interrupt), user))


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


async def signs_in(client: Client, headers: dict[str, str], user: str, tool: str) -> dict[str, Any]:
    """A call of ``tool`` in a new thread that asks ``user`` to sign in; signed in and resumed, the
    call succeeds: its output."""
    thread = str(uuid.uuid4())
    interrupt = await interrupted(client, headers, thread, tool)
    assert (await sign_in(client, interrupt, user)).status_code == 200
    output = await resumed(client, headers, thread, interrupt)
    assert output["status"] == "succeeded", output
    return output

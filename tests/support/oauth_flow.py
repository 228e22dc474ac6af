"""The OAuth-protected test MCP server (tests/support/oauth_mcp_server.py) started on a free loopback port,
and a browser-free sign-in: follow an ``authorization_required`` interrupt's URL to the authorization
server, say who signs in, and call Iris's callback with what it redirects to."""

from __future__ import annotations

import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
from litestar import Litestar
from litestar.testing import AsyncTestClient

from tests.support.mcp_servers import free_port, serving

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
        login = await browser.get(first.headers["location"] + f"&user={user}")
        assert login.status_code == 302, login.text
        back = urlsplit(login.headers["location"])
    assert back.path == CALLBACK, back
    return f"{back.path}?{back.query}"


async def sign_in(
    client: AsyncTestClient[Litestar], interrupt: Mapping[str, Any], user: str
) -> httpx.Response:
    """The whole sign-in for ``interrupt``'s URL; Iris's callback answer."""
    return await client.get(await approve(authorization_url(interrupt), user))

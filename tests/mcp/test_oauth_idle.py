"""A process keeps a connection of its own for each user of a per-user OAuth-protected MCP server; one
left unused for longer than a question may wait (the interrupt TTL), with no call or sign-in under way,
is closed on the pool's next use. The user's tokens stay stored: their next call connects again, with
no new sign-in."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path

import msgspec
import pytest
from litestar import Litestar
from litestar.testing import AsyncTestClient

from iris.app.asgi import create_app
from iris.app.mcp.pool import McpPool
from iris.app.settings import Settings
from tests.support.oauth_flow import called, oauth_server, register, signs_in, text_of

pytestmark = [pytest.mark.slow, pytest.mark.parametrize("engine_name", ["sqlite"], indirect=True)]
Client = AsyncTestClient[Litestar]
TTL = 3


@pytest.fixture
def secure_url(tmp_path: Path) -> Iterator[str]:
    with oauth_server(tmp_path) as url:
        yield url


@pytest.fixture
async def client(settings: Settings) -> AsyncIterator[Client]:
    app = create_app(msgspec.structs.replace(settings, interrupt_ttl_seconds=TTL), environ={})
    async with AsyncTestClient(app=app) as test_client:
        yield test_client


async def test_an_idle_users_connection_is_closed_and_comes_back_signed_in(
    client: Client, auth: Callable[..., dict[str, str]], secure_url: str
) -> None:
    pool: McpPool = client.app.state.toolbox.pool
    alice, bob = auth("alice"), auth("bob")
    await register(client, auth("root", role="admin"), secure_url)
    await signs_in(client, alice, "alice", "secure__sign_in")
    await signs_in(client, bob, "bob", "secure__whoami")
    assert pool.owners("secure") == {"alice", "bob"}

    await asyncio.sleep(TTL + 0.5)
    assert "user=bob" in text_of(await called(client, bob, "secure__whoami"))
    assert pool.owners("secure") == {"bob"}  # alice's closed, bob's in use
    assert "user=alice" in text_of(await called(client, alice, "secure__whoami"))  # no sign-in asked
    assert pool.owners("secure") == {"alice", "bob"}

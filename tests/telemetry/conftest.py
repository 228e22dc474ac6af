"""Fixtures of the telemetry tests: the run tests' signed-in caller, a fake OpenAI on loopback, an
Iris client whose catalogue has a model served by it (``openai/gpt-4o``, offered by the default agent),
and the folder the test MCP server writes its marks into."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager

import pytest
from litestar import Litestar
from litestar.testing import AsyncTestClient

from iris.app.asgi import create_app
from iris.app.settings import Settings
from tests.support.agents import offer
from tests.support.fake_openai import FakeOpenAI
from tests.support.http_server import serve_asgi
from tests.support.mcp_servers import marks
from tests.support.run_fixtures import alice, stored

__all__ = ["alice", "marks", "openai", "stored", "with_openai_model"]

OPENAI_KEY = "sk-test-123"
Client = AsyncTestClient[Litestar]


@pytest.fixture
def openai() -> Iterator[tuple[FakeOpenAI, str]]:
    fake = FakeOpenAI(api_key=OPENAI_KEY)
    with serve_asgi(fake.app) as base:
        yield fake, base


@asynccontextmanager
async def with_openai_model(
    settings: Settings,
    openai: tuple[FakeOpenAI, str],
    auth: Callable[..., dict[str, str]],
    **app_args: object,
) -> AsyncIterator[Client]:
    """A client of ``create_app(settings, **app_args)`` (with the fake's key) and ``openai/gpt-4o``."""
    app = create_app(settings, environ={"OPENAI_API_KEY": OPENAI_KEY}, **app_args)  # type: ignore[arg-type]
    async with AsyncTestClient(app=app) as client:
        body = {"name": "GPT", "provider": "openai", "modelId": "gpt-4o", "type": "vision"}
        created = await client.post(
            "/api/models",
            json={**body, "options": {"baseUrl": openai[1] + "/v1"}},
            headers=auth("root", role="admin"),
        )
        assert created.status_code == 201, created.text
        await offer(client, auth("root", role="admin"), "openai/gpt-4o")  # an agent runs only what it offers
        yield client

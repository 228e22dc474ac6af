"""Iris reuses its vendor connection: N sequential runs (or stateless chats) reach the vendor on 1 connection.

The fake OpenAI stands behind a counter of the TCP connections it accepts; Iris talks to it through the
app's own shared HTTP client, exactly as it talks to a real vendor.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Callable, Iterator

import pytest
from litestar import Litestar
from litestar.testing import AsyncTestClient

from iris.app.asgi import create_app
from iris.app.settings import Settings
from tests.support.agents import offer
from tests.support.agui import check_stream
from tests.support.asgi import ConnectionCounter
from tests.support.fake_openai import FakeOpenAI
from tests.support.http_server import serve_asgi
from tests.support.runs import answer_text, run, run_input, upload, user_message

KEY = "sk-test-123"
RUNS = 5
Client = AsyncTestClient[Litestar]


@pytest.fixture
def openai() -> Iterator[tuple[FakeOpenAI, ConnectionCounter, str]]:
    fake = FakeOpenAI(api_key=KEY)
    counter = ConnectionCounter(fake.app)
    with serve_asgi(counter) as base:
        yield fake, counter, base


@pytest.fixture
async def vendor_client(
    settings: Settings,
    openai: tuple[FakeOpenAI, ConnectionCounter, str],
    auth: Callable[..., dict[str, str]],
) -> AsyncIterator[Client]:
    async with AsyncTestClient(app=create_app(settings, environ={"OPENAI_API_KEY": KEY})) as client:
        model = {"name": "GPT", "provider": "openai", "modelId": "gpt-4o", "type": "vision"}
        created = await client.post(
            "/api/models",
            json={**model, "options": {"baseUrl": f"{openai[2]}/v1"}},
            headers=auth("root", role="admin"),
        )
        assert created.status_code == 201, created.text
        await offer(client, auth("root", role="admin"), "openai/gpt-4o")
        yield client


async def test_sequential_runs_share_one_vendor_connection(
    vendor_client: Client, openai: tuple[FakeOpenAI, ConnectionCounter, str], alice: dict[str, str]
) -> None:
    fake, counter, _ = openai
    thread = str(uuid.uuid4())
    image = await upload(vendor_client, alice, thread)
    for i in range(RUNS):
        fake.text("A red ", f"rectangle {i}.")
        parts = (image["parts"]["agui"],) if i == 0 else ()
        events = await run(
            vendor_client,
            alice,
            run_input(thread, user_message(f"look {i}", *parts), model="openai/gpt-4o"),
        )
        assert answer_text(events) == f"A red rectangle {i}."
    assert len(counter.peers) == RUNS
    assert counter.connections == 1


async def test_sequential_stateless_chats_share_one_vendor_connection(
    vendor_client: Client, openai: tuple[FakeOpenAI, ConnectionCounter, str], alice: dict[str, str]
) -> None:
    fake, counter, _ = openai
    for i in range(RUNS):
        fake.text("Hello ", f"{i}.")
        body = {"modelId": "openai/gpt-4o", "content": f"hi {i}"}
        response = await vendor_client.post("/api/llm/chat", json=body, headers=alice)
        assert response.status_code == 200, response.text
        assert answer_text(check_stream(response.content)) == f"Hello {i}."
    assert len(counter.peers) == RUNS
    assert counter.connections == 1

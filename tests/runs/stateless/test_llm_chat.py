"""Stateless chat (``POST /api/llm/chat``): the engine's checks and stream, nothing stored."""

from __future__ import annotations

import base64
import io
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import pytest
from litestar import Litestar
from litestar.testing import AsyncTestClient
from PIL import Image

from iris.app.asgi import create_app
from iris.app.settings import Settings
from tests.support.agui import check_stream
from tests.support.fake_openai import FakeOpenAI
from tests.support.http_server import serve_asgi
from tests.support.images import image_bytes
from tests.support.run_fixtures import Stored
from tests.support.runs import answer_text, upload

Client = AsyncTestClient[Litestar]
LLM = "/api/llm/chat"


async def test_text_streams_and_nothing_is_stored(
    client: Client, alice: dict[str, str], stored: Stored
) -> None:
    before = await stored.counts()
    response = await client.post(LLM, json={"modelId": "local/text", "content": "hello"}, headers=alice)
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/event-stream")
    events = check_stream(response.content)
    assert "You said: hello" in answer_text(events)
    assert await stored.counts() == before


async def test_an_image_with_the_local_model_without_streaming(
    client: Client, alice: dict[str, str], stored: Stored
) -> None:
    image = await upload(client, alice, str(uuid.uuid4()), data=image_bytes("PNG", (21, 13)))
    before = await stored.counts()
    body = {
        "modelId": "local/vision",
        "parts": [{"type": "text", "text": "describe"}, image["parts"]["chat"]],
        "messages": [{"role": "user", "content": "earlier"}, {"role": "assistant", "content": "noted"}],
        "stream": False,
    }
    response = await client.post(LLM, json=body, headers=alice)
    assert response.status_code == 200, response.text
    assert response.headers["content-type"] == "application/json"
    answer = response.json()
    assert "21x13" in answer["content"]
    assert answer["usage"]["provider"] == "local"
    assert await stored.counts() == before


@pytest.mark.parametrize(
    ("body", "code"),
    [
        ({"modelId": "nobody/none", "content": "hi"}, "model_not_found"),
        ({"modelId": "local/vision"}, "empty_message"),
        (
            {
                "modelId": "local/vision",
                "parts": [{"type": "image", "image": "https://x.example/a.png", "mimeType": "image/png"}],
            },
            "attachment_url_rejected",
        ),
    ],
)
async def test_the_same_checks_as_every_run(
    client: Client, alice: dict[str, str], body: dict[str, Any], code: str
) -> None:
    response = await client.post(LLM, json=body, headers=alice)
    assert response.status_code == 422
    assert response.json()["code"] == code
    if code == "attachment_url_rejected":
        assert response.json()["field"] == "parts[0].source.value"


async def test_a_bad_image_in_earlier_messages_names_that_message(
    client: Client, alice: dict[str, str]
) -> None:
    bad = {"type": "image", "image": "https://x.example/a.png", "mimeType": "image/png"}
    body = {
        "modelId": "local/vision",
        "content": "hi",
        "messages": [{"role": "assistant", "content": "x"}, {"role": "user", "content": [bad]}],
    }
    response = await client.post(LLM, json=body, headers=alice)
    assert response.status_code == 422
    assert response.json()["field"] == "messages[1].content[0].source.value"


async def test_images_to_a_text_model_and_too_many_images(client: Client, alice: dict[str, str]) -> None:
    image = await upload(client, alice, str(uuid.uuid4()))
    for model, parts, code in (
        ("local/text", [image["parts"]["chat"]], "model_lacks_vision"),
        ("local/vision", [image["parts"]["chat"]] * 5, "too_many_images"),
    ):
        response = await client.post(LLM, json={"modelId": model, "parts": parts}, headers=alice)
        assert response.status_code == 422
        assert response.json()["code"] == code


@pytest.fixture
def openai() -> Iterator[tuple[FakeOpenAI, str]]:
    fake = FakeOpenAI(api_key="sk-test-123")
    with serve_asgi(fake.app) as base:
        yield fake, base


@pytest.fixture
async def vendor_client(
    settings: Settings, openai: tuple[FakeOpenAI, str], auth: Callable[..., dict[str, str]]
) -> AsyncIterator[Client]:
    async with AsyncTestClient(app=create_app(settings, environ={"OPENAI_API_KEY": "sk-test-123"})) as client:
        model = {"name": "GPT", "provider": "openai", "modelId": "gpt-4o", "type": "vision"}
        created = await client.post(
            "/api/models",
            json={**model, "options": {"baseUrl": f"{openai[1]}/v1"}},
            headers=auth("root", "admin"),
        )
        assert created.status_code == 201, created.text
        yield client


async def test_the_openai_fake_gets_the_history_and_a_native_image(
    vendor_client: Client, openai: tuple[FakeOpenAI, str], alice: dict[str, str]
) -> None:
    fake, _ = openai
    fake.text("A small ", "red image.")
    image = await upload(vendor_client, alice, str(uuid.uuid4()), data=image_bytes("PNG", (16, 16)))
    body = {
        "modelId": "openai/gpt-4o",
        "messages": [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": "hello"},
        ],
        "parts": [{"type": "text", "text": "and this?"}, image["parts"]["chat"]],
        "stream": False,
    }
    response = await vendor_client.post(LLM, json=body, headers=alice)
    assert response.status_code == 200, response.text
    assert response.json()["content"] == "A small red image."
    sent = fake.requests[0].json["messages"]
    assert [m["role"] for m in sent] == ["system", "user", "assistant", "user"]
    assert "Be brief." in sent[0]["content"]
    block = sent[-1]["content"][1]
    assert block["type"] == "image_url"
    prefix = "data:image/png;base64,"
    assert block["image_url"]["url"].startswith(prefix)  # inline: this deployment's storage is private
    with Image.open(io.BytesIO(base64.b64decode(block["image_url"]["url"][len(prefix) :]))) as sent_image:
        assert sent_image.size == (16, 16)


async def test_a_failing_vendor_without_streaming_is_a_502_problem(
    vendor_client: Client, openai: tuple[FakeOpenAI, str], alice: dict[str, str]
) -> None:
    fake, _ = openai
    fake.error(429, "Rate limit reached", type_="requests", code="rate_limit_exceeded")
    response = await vendor_client.post(
        LLM, json={"modelId": "openai/gpt-4o", "content": "hi", "stream": False}, headers=alice
    )
    assert response.status_code == 502
    assert response.json()["code"] == "provider_rate_limit"

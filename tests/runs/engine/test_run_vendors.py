"""``/agent/runs`` against loopback fakes of real vendors: the image reaches them as their own native
block, and a vendor failing mid-stream ends the run with one ``RUN_ERROR`` and a clean database."""

from __future__ import annotations

import base64
import hashlib
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import pytest
from litestar import Litestar
from litestar.testing import AsyncTestClient

from iris.app.asgi import create_app
from iris.app.settings import Settings
from tests.support.agents import offer
from tests.support.fake_anthropic import FakeAnthropic, error_event, message_start, text_answer, text_block
from tests.support.fake_openai import FakeOpenAI
from tests.support.http_server import serve_asgi
from tests.support.images import image_bytes
from tests.support.run_fixtures import Stored
from tests.support.runs import answer_text, of_type, run, run_input, upload, user_message

OPENAI_KEY = "sk-test-123"
ANTHROPIC_KEY = "sk-ant-test-456"
Client = AsyncTestClient[Litestar]


@pytest.fixture
def openai() -> Iterator[tuple[FakeOpenAI, str]]:
    fake = FakeOpenAI(api_key=OPENAI_KEY)
    with serve_asgi(fake.app) as base:
        yield fake, base


@pytest.fixture
def anthropic() -> Iterator[tuple[FakeAnthropic, str]]:
    fake = FakeAnthropic(api_key=ANTHROPIC_KEY)
    with serve_asgi(fake.app) as base:
        yield fake, base


@pytest.fixture
async def vendor_client(
    settings: Settings,
    openai: tuple[FakeOpenAI, str],
    anthropic: tuple[FakeAnthropic, str],
    auth: Callable[..., dict[str, str]],
) -> AsyncIterator[Client]:
    """Iris with vendor keys in its environment and one catalogue model per fake."""
    environ = {"OPENAI_API_KEY": OPENAI_KEY, "ANTHROPIC_API_KEY": ANTHROPIC_KEY}
    async with AsyncTestClient(app=create_app(settings, environ=environ)) as client:
        admin = auth("root", role="admin")
        for body in (
            {"name": "GPT", "provider": "openai", "modelId": "gpt-4o", "type": "vision"},
            {"name": "Claude", "provider": "anthropic", "modelId": "claude-sonnet-4-5", "type": "vision"},
        ):
            base = openai[1] + "/v1" if body["provider"] == "openai" else anthropic[1]
            created = await client.post(
                "/api/models", json={**body, "options": {"baseUrl": base}}, headers=admin
            )
            assert created.status_code == 201, created.text
        await offer(client, admin, "openai/gpt-4o", "anthropic/claude-sonnet-4-5")
        yield client


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


async def test_openai_receives_a_native_image_url_block(
    vendor_client: Client, openai: tuple[FakeOpenAI, str], alice: dict[str, str]
) -> None:
    fake, _ = openai
    fake.text("A red ", "rectangle.")
    thread = str(uuid.uuid4())
    data = image_bytes("PNG", (64, 48))
    image = await upload(vendor_client, alice, thread, data=data)

    events = await run(
        vendor_client,
        alice,
        run_input(thread, user_message("What is it?", image["parts"]["agui"]), model="openai/gpt-4o"),
    )

    assert answer_text(events) == "A red rectangle."
    assert events[-1]["usage"] == [
        {
            "provider": "openai",
            "model": "gpt-4o",
            "inputTokens": 21,
            "outputTokens": 7,
            "totalTokens": 28,
            "reasoningTokens": 0,
            "cachedInputTokens": 0,
        }
    ]
    sent = fake.requests[0].json
    user = sent["messages"][-1]
    assert user["role"] == "user"
    text, block = user["content"]
    assert text == {"type": "text", "text": "What is it?"}
    assert block["type"] == "image_url"
    prefix = "data:image/png;base64,"
    assert block["image_url"]["url"].startswith(prefix)  # storage is private here: inline bytes
    assert _sha(base64.b64decode(block["image_url"]["url"][len(prefix) :])) == _sha(data)
    assert "What is it?" not in str(sent["messages"][0].get("content", ""))  # not pasted into the prompt


async def test_anthropic_receives_a_native_base64_image_block(
    vendor_client: Client, anthropic: tuple[FakeAnthropic, str], alice: dict[str, str], stored: Stored
) -> None:
    fake, _ = anthropic
    fake.reply(text_answer(["It is ", "red."]))
    thread = str(uuid.uuid4())
    data = image_bytes("JPEG", (32, 32))
    image = await upload(vendor_client, alice, thread, data=data, name="photo.jpg")

    events = await run(
        vendor_client,
        alice,
        run_input(thread, user_message(None, image["parts"]["agui"]), model="anthropic/claude-sonnet-4-5"),
    )

    assert answer_text(events) == "It is red."
    content = fake.requests[0].json["messages"][-1]["content"]
    assert [b["type"] for b in content] == ["image"]
    source = content[0]["source"]
    assert source["type"] == "base64"
    assert source["media_type"] == "image/jpeg"
    assert base64.b64decode(source["data"])[:3] == b"\xff\xd8\xff"  # a JPEG, re-encoded without metadata
    rows = await stored.messages(thread)
    assert [r.role for r in rows] == ["user", "assistant"]
    assert rows[1].meta["worker_agent_output"]["provider"] == "anthropic"


async def test_a_vendor_failing_mid_stream_is_one_run_error_and_leaves_no_rows(
    vendor_client: Client, openai: tuple[FakeOpenAI, str], alice: dict[str, str], stored: Stored
) -> None:
    fake, _ = openai
    fake.broken("Half an ", "answer")  # the connection is cut mid-answer
    thread = str(uuid.uuid4())
    body = run_input(thread, user_message("hello"), model="openai/gpt-4o")

    events = await run(vendor_client, alice, body)

    assert answer_text(events) == "Half an answer"
    error = events[-1]
    assert error["type"] == "RUN_ERROR"
    assert error["code"].startswith("provider_")
    assert "sk-" not in error["message"]
    assert len(of_type(events, "RUN_ERROR")) == 1
    assert [r.role for r in await stored.messages(thread)] == ["user"]
    run_row = await stored.run(body["runId"])
    assert run_row is not None
    assert run_row.status == "failed"
    assert run_row.error_code == error["code"]
    logged = await stored.events(body["runId"])
    assert logged[-1]["type"] == "RUN_ERROR"


async def test_an_in_stream_vendor_error_event_is_a_run_error(
    vendor_client: Client, anthropic: tuple[FakeAnthropic, str], alice: dict[str, str], stored: Stored
) -> None:
    fake, _ = anthropic
    block = text_block(0, ["Partial"])
    fake.reply([message_start(10), *block[:2], error_event("overloaded_error", "Overloaded")])
    thread = str(uuid.uuid4())

    events = await run(
        vendor_client, alice, run_input(thread, user_message("hi"), model="anthropic/claude-sonnet-4-5")
    )

    assert events[-1]["type"] == "RUN_ERROR"
    assert events[-1]["code"] == "provider_unavailable"
    assert [r.role for r in await stored.messages(thread)] == ["user"]


async def test_a_vendor_refusing_the_key_is_a_run_error_with_a_safe_message(
    vendor_client: Client, openai: tuple[FakeOpenAI, str], alice: dict[str, str]
) -> None:
    fake, _ = openai
    fake.error(
        401, "Incorrect API key provided: sk-test-***", type_="invalid_request_error", code="invalid_api_key"
    )
    events = await run(
        vendor_client, alice, run_input(str(uuid.uuid4()), user_message("hi"), model="openai/gpt-4o")
    )
    error: dict[str, Any] = events[-1]
    assert error["type"] == "RUN_ERROR"
    assert error["code"] == "provider_auth"
    assert "sk-" not in error["message"]
    assert "check OPENAI_API_KEY" in error["message"]  # which variable (or option) to look at


async def test_earlier_tool_calls_are_told_as_text_when_a_run_offers_no_tools(
    vendor_client: Client, anthropic: tuple[FakeAnthropic, str], alice: dict[str, str]
) -> None:
    fake, _ = anthropic
    thread = str(uuid.uuid4())
    await run(vendor_client, alice, run_input(thread, user_message("use tool current_time {}")))
    fake.reply(text_answer(["Noted."]))
    body = run_input(thread, user_message("thanks"), model="anthropic/claude-sonnet-4-5")
    body["forwardedProps"]["enableTools"] = False

    events = await run(vendor_client, alice, body)

    assert answer_text(events) == "Noted."
    sent = fake.requests[0].json
    assert "tools" not in sent
    blocks = [block for message in sent["messages"] for block in message["content"]]
    assert {block["type"] for block in blocks} == {"text"}  # no tool_use / tool_result blocks
    assert [m["role"] for m in sent["messages"]] == ["user", "assistant", "user"]
    told = sent["messages"][1]["content"][0]["text"]
    assert "[called current_time with {}]" in told
    assert "[current_time returned:" in told

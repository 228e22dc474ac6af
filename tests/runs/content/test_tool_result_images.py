"""Images a tool returned, per vendor: who takes them inside the tool result (declared as
``Capabilities.tool_result_images``), and what the others get instead (the core's user message after
the results) — LiteLLM through its own translation to the OpenAI wire, checked with the OpenAI SDK's
types. A vendor that takes no image in a tool message refuses one there instead of dropping it."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest
from openai.types.chat.completion_create_params import CompletionCreateParamsStreaming
from pydantic import TypeAdapter

from iris.app.runs.content.tool_results import place_images
from iris.providers import (
    ImagePart,
    Message,
    ModelSpec,
    ProviderContext,
    RequestOptions,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    ToolSpec,
)
from iris.providers.anthropic import create as anthropic
from iris.providers.errors import UnsupportedPartError
from iris.providers.gemini import create as gemini
from iris.providers.litellm import create as litellm
from iris.providers.local import create as local
from iris.providers.ollama import create as ollama
from iris.providers.openai import create as openai
from tests.providers.helpers import collect, png
from tests.support.fake_openai import FakeOpenAI
from tests.support.http_server import serve_asgi

CHART = ToolSpec(name="charts__chart", description="a chart", parameters={"type": "object", "properties": {}})
OPTIONS = RequestOptions(tools=(CHART,))


@pytest.fixture
async def http() -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(timeout=30) as client:
        yield client


def vision(provider: str, model_id: str) -> ModelSpec:
    return ModelSpec(provider=provider, model_id=model_id, type="vision", supports_tools=True)


def exchange(image: ImagePart) -> list[Message]:
    return [
        Message(role="user", parts=(TextPart(text="chart 1, 2"),)),
        Message(role="assistant", parts=(ToolCallPart(id="c1", name="charts__chart", arguments="{}"),)),
        Message(
            role="tool",
            parts=(
                ToolResultPart(tool_call_id="c1", name="charts__chart", content="a chart", images=(image,)),
            ),
        ),
    ]


@pytest.mark.parametrize(
    ("factory", "model", "expected"),
    [
        (anthropic, vision("anthropic", "claude-sonnet-4-5"), "native"),
        (gemini, vision("gemini", "gemini-3-pro-preview"), "native"),
        (gemini, vision("gemini", "gemini-2.5-flash"), "user_message"),
        (openai, vision("openai", "gpt-4o"), "user_message"),
        (ollama, vision("ollama", "llava"), "user_message"),
        (litellm, vision("litellm", "openai/gpt-4o"), "user_message"),
        (local, vision("local", "vision"), "native"),
    ],
)
def test_each_vendor_declares_where_tool_images_go(
    http: httpx.AsyncClient, factory: object, model: ModelSpec, expected: str
) -> None:
    provider = factory(ProviderContext(environ={}, http=http))  # type: ignore[operator]
    assert provider.capabilities(model).tool_result_images == expected


@pytest.mark.parametrize(
    ("factory", "model"),
    [(openai, vision("openai", "gpt-4o")), (ollama, vision("ollama", "llava"))],
)
def test_text_only_tool_messages_refuse_an_image_rather_than_drop_it(
    http: httpx.AsyncClient, factory: object, model: ModelSpec
) -> None:
    provider = factory(ProviderContext(environ={}, http=http))  # type: ignore[operator]
    with pytest.raises(UnsupportedPartError, match="tool message"):
        provider.build_request(exchange(png()), model, OPTIONS)


def test_without_vision_the_model_is_told_the_images_were_left_out(http: httpx.AsyncClient) -> None:
    caps = openai(ProviderContext(environ={}, http=http)).capabilities(
        ModelSpec(provider="openai", model_id="gpt-4o", type="text", supports_tools=True)
    )
    placed = place_images(exchange(png()), caps)
    assert len(placed) == 3
    result = placed[-1].parts[0]
    assert isinstance(result, ToolResultPart)
    assert result.images == ()
    assert "left out: this model cannot see images" in result.content


async def test_litellm_sends_the_image_in_a_user_message_after_the_tool_message(
    http: httpx.AsyncClient,
) -> None:
    fake = FakeOpenAI(api_key="sk-lite")
    fake.text("Two bars.")
    with serve_asgi(fake.app) as url:
        provider = litellm(ProviderContext(environ={"LITE_KEY": "sk-lite"}, http=http))
        model = ModelSpec(
            provider="litellm",
            model_id="openai/gpt-4o",
            type="vision",
            supports_tools=True,
            options={"baseUrl": f"{url}/v1", "apiKeyEnv": "LITE_KEY"},
        )
        placed = place_images(exchange(png()), provider.capabilities(model))
        await collect(provider.stream(placed, model, OPTIONS))
    body = fake.requests[0].json
    TypeAdapter(CompletionCreateParamsStreaming).validate_python(body)
    tool, follow = body["messages"][-2:]
    assert tool["role"] == "tool"
    assert "next message" in str(tool["content"])
    assert follow["role"] == "user"
    assert [part["type"] for part in follow["content"]] == ["text", "image_url"]
    assert follow["content"][1]["image_url"]["url"].startswith("data:image/png;base64,")

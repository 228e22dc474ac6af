"""The LiteLLM provider, driven through LiteLLM's own OpenAI backend against the fake OpenAI server.

LiteLLM is slow to import; the provider imports it lazily, so the first test here pays once for the module.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest

from iris.providers.errors import UnsupportedPartError
from iris.providers.events import (
    Finish,
    ReasoningDelta,
    ReasoningEnd,
    ReasoningOpaque,
    ReasoningStart,
    TextDelta,
    TextEnd,
    TextStart,
    ToolCallArgs,
    ToolCallEnd,
    ToolCallStart,
    Usage,
)
from iris.providers.litellm import LiteLLMProvider, create
from iris.providers.messages import ImagePart, Message, ReasoningRequest, RequestOptions, TextPart
from iris.providers.spec import SPEC_VERSION, ModelSpec, Provider, ProviderContext
from tests.providers.helpers import (
    HI,
    KEY,
    NO_OPTIONS,
    PNG_B64,
    WEATHER,
    collect,
    collect_until_error,
    png,
)
from tests.support import fake_anthropic as fa
from tests.support.fake_anthropic import FakeAnthropic
from tests.support.fake_openai import FakeOpenAI, ToolCallScript
from tests.support.http_server import serve_asgi
from tests.support.images import image_bytes


def model(model_id: str = "openai/gpt-4o", type_: Any = "vision", **options: Any) -> ModelSpec:
    return ModelSpec(provider="litellm", model_id=model_id, type=type_, supports_tools=True, options=options)


@pytest.fixture(scope="module")
def served_fake() -> Iterator[tuple[FakeOpenAI, str]]:
    server = FakeOpenAI(api_key=KEY)
    with serve_asgi(server.app) as url:
        yield server, url


@pytest.fixture
def fake(served_fake: tuple[FakeOpenAI, str]) -> tuple[FakeOpenAI, str]:
    served_fake[0].reset()
    return served_fake


def make(http: httpx.AsyncClient, **environ: str) -> LiteLLMProvider:
    return create(ProviderContext(environ={"FAKE_OPENAI_KEY": KEY} | environ, http=http))


def served(url: str, model_id: str = "openai/gpt-4o") -> ModelSpec:
    return model(model_id, baseUrl=f"{url}/v1", apiKeyEnv="FAKE_OPENAI_KEY")


# -- capabilities and build_request (no network) -----------------------------------------------------


async def test_capabilities_come_from_litellms_bundled_model_map(http: httpx.AsyncClient) -> None:
    provider = make(http)
    assert isinstance(provider, Provider)
    assert (provider.id, provider.spec_version) == ("litellm", SPEC_VERSION)
    caps = provider.capabilities(model("openai/gpt-4o"))
    assert (caps.vision, caps.tools, caps.url_fetch) == (True, True, "none")
    assert caps.image_mime_types == ("image/png", "image/jpeg", "image/webp", "image/gif")
    assert (caps.max_images, caps.max_image_bytes, caps.image_bytes_measured_on) == (8, 20_000_000, "raw")
    assert (caps.max_image_edge_px, caps.recommended_long_edge_px) == (8000, 1568)
    # A text catalogue row, a model LiteLLM does not know, and a model it knows as text-only: no vision.
    assert provider.capabilities(model("openai/gpt-4o", type_="text")).vision is False
    unknown = provider.capabilities(model("openai/no-such-model-xyz"))
    assert (unknown.vision, unknown.tools, unknown.max_images) == (False, False, 0)
    assert provider.capabilities(model("gpt-3.5-turbo")).vision is False


async def test_build_request_reuses_the_openai_mapping(http: httpx.AsyncClient) -> None:
    options = RequestOptions(
        system="Be brief.",
        tools=(WEATHER,),
        max_output_tokens=64,
        extra={"litellm": {"detail": "low", "seed": 3}},
    )
    request = make(http).build_request(
        [Message(role="user", parts=(TextPart(text="What?"), png()))], model(), options
    )
    assert request == {
        "model": "openai/gpt-4o",
        "messages": [
            {"role": "system", "content": "Be brief."},
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "What?"},
                    {
                        "type": "image_url",
                        "image_url": {"url": f"data:image/png;base64,{PNG_B64}", "detail": "low"},
                    },
                ],
            },
        ],
        "stream": True,
        "stream_options": {"include_usage": True},
        "tools": [
            {
                "type": "function",
                "function": {
                    "name": "get_weather",
                    "description": "Current weather for a city",
                    "parameters": WEATHER.parameters,
                },
            }
        ],
        "max_tokens": 64,
        "seed": 3,
    }


async def test_parts_it_must_refuse(http: httpx.AsyncClient) -> None:
    provider = make(http)
    url_image = ImagePart(
        mime_type="image/png", width=8, height=6, url="https://storage.example.com/a.png?t=1"
    )
    with pytest.raises(UnsupportedPartError, match="cannot fetch image URLs"):
        provider.build_request([Message(role="user", parts=(url_image,))], model(), NO_OPTIONS)
    with pytest.raises(UnsupportedPartError) as caught:
        provider.build_request([Message(role="user", parts=(png(),))], model("gpt-3.5-turbo"), NO_OPTIONS)
    assert (caught.value.provider, caught.value.part_type, caught.value.media_type) == (
        "litellm",
        "image",
        "image/png",
    )
    bmp = ImagePart(mime_type="image/bmp", width=8, height=6, data=image_bytes("BMP", (8, 6)))
    with pytest.raises(UnsupportedPartError) as caught:
        provider.build_request([Message(role="user", parts=(bmp,))], model(), NO_OPTIONS)
    assert caught.value.media_type == "image/bmp"


# -- through LiteLLM to the fake OpenAI server -------------------------------------------------------


async def test_text_stream_with_a_native_image_block(
    fake: tuple[FakeOpenAI, str], http: httpx.AsyncClient
) -> None:
    server, url = fake
    server.text("A red ", "square.", usage=(90, 4))
    provider = make(http)
    messages = [Message(role="user", parts=(TextPart(text="What is this?"), png()))]

    events = await collect(provider.stream(messages, served(url), RequestOptions(system="Be brief.")))

    assert events == [
        TextStart(id="chatcmpl-fake1"),
        TextDelta(id="chatcmpl-fake1", delta="A red "),
        TextDelta(id="chatcmpl-fake1", delta="square."),
        TextEnd(id="chatcmpl-fake1"),
        Usage(input_tokens=90, output_tokens=4, reasoning_tokens=0, cached_input_tokens=0),
        Finish(reason="stop"),
    ]
    [request] = server.requests
    assert request.path == "/v1/chat/completions"
    assert request.headers["authorization"] == f"Bearer {KEY}"
    assert request.json["model"] == "gpt-4o"
    assert (
        request.json["messages"]
        == provider.build_request(messages, served(url), RequestOptions(system="Be brief."))["messages"]
    )
    assert request.json["messages"][1]["content"][1] == {
        "type": "image_url",
        "image_url": {"url": f"data:image/png;base64,{PNG_B64}", "detail": "auto"},
    }


@pytest.mark.parametrize("option", ["baseUrl", "apiBase"])
async def test_base_url_reaches_the_server_it_names(
    option: str, fake: tuple[FakeOpenAI, str], http: httpx.AsyncClient
) -> None:
    """``baseUrl`` like every provider (it used to be ignored); ``apiBase`` still works as its old name."""
    server, url = fake
    server.text("ok")
    spec = model("openai/gpt-4o", apiKeyEnv="FAKE_OPENAI_KEY", **{option: f"{url}/v1"})

    events = await collect(make(http).stream(HI, spec, NO_OPTIONS))

    assert TextDelta(id="chatcmpl-fake1", delta="ok") in events
    assert [r.path for r in server.requests] == ["/v1/chat/completions"]


async def test_tool_call_stream(fake: tuple[FakeOpenAI, str], http: httpx.AsyncClient) -> None:
    server, url = fake
    server.tool_calls(
        [ToolCallScript(id="call_W1", name="get_weather", argument_pieces=['{"city":', ' "Oslo"}'])]
    )
    events = await collect(make(http).stream(HI, served(url), RequestOptions(tools=(WEATHER,))))
    assert events == [
        ToolCallStart(id="call_W1", name="get_weather"),
        ToolCallArgs(id="call_W1", delta='{"city":'),
        ToolCallArgs(id="call_W1", delta=' "Oslo"}'),
        ToolCallEnd(id="call_W1"),
        Usage(input_tokens=40, output_tokens=18, reasoning_tokens=0, cached_input_tokens=0),
        Finish(reason="tool_calls"),
    ]
    assert json.loads("".join(e.delta for e in events if isinstance(e, ToolCallArgs))) == {"city": "Oslo"}
    assert server.requests[0].json["tools"][0]["function"]["name"] == "get_weather"


async def test_401_is_auth_and_never_shows_the_key(http: httpx.AsyncClient) -> None:
    server = FakeOpenAI(api_key="sk-the-right-one")
    with serve_asgi(server.app) as url:
        _, error = await collect_until_error(make(http).stream(HI, served(url), NO_OPTIONS))
    assert (error.kind, error.status, error.provider) == ("auth", 401, "litellm")
    assert "Incorrect API key provided" in error.message
    assert KEY not in str(error)
    assert len(server.requests) == 1


async def test_missing_key_is_auth_before_any_request(
    fake: tuple[FakeOpenAI, str], http: httpx.AsyncClient
) -> None:
    server, url = fake
    provider = create(ProviderContext(environ={}, http=http))
    _, error = await collect_until_error(provider.stream(HI, served(url), NO_OPTIONS))
    assert (error.kind, error.message) == ("auth", "set FAKE_OPENAI_KEY to use this provider")
    assert server.requests == []


@pytest.mark.parametrize(
    ("script", "kind", "status", "retry_after"),
    [
        ("rate_limited", "rate_limit", 429, 7.0),
        ("download_failed", "could_not_fetch_image", 400, None),
        ("server_error", "unavailable", 500, None),
        ("broken", "unavailable", None, None),
    ],
)
async def test_other_failures_map_to_kinds(
    fake: tuple[FakeOpenAI, str],
    http: httpx.AsyncClient,
    script: str,
    kind: str,
    status: int | None,
    retry_after: float | None,
) -> None:
    server, url = fake
    scripts: dict[str, Callable[[], None]] = {
        "rate_limited": lambda: server.rate_limited("7"),
        "download_failed": lambda: server.download_failed("https://storage.example.com/a.png"),
        "server_error": server.server_error,
        "broken": lambda: server.broken("Once", cut=True),
    }
    scripts[script]()
    events, error = await collect_until_error(make(http).stream(HI, served(url), NO_OPTIONS))
    assert (error.kind, error.status, error.retry_after) == (kind, status, retry_after)
    assert len(server.requests) == 1  # LiteLLM's own retries are off: the core decides
    assert events == (
        [TextStart(id="chatcmpl-fake3"), TextDelta(id="chatcmpl-fake3", delta="Once")]
        if script == "broken"
        else []
    )
    assert KEY not in str(error)


# -- reasoning ---------------------------------------------------------------------------------------


async def test_reasoning_effort_goes_through_and_reasoning_content_streams(
    fake: tuple[FakeOpenAI, str], http: httpx.AsyncClient
) -> None:
    server, url = fake
    server.reasoning(["Short ", "thought."], ["Answer."], reasoning_tokens=12)
    spec = model("openai/deepseek-reasoner", apiBase=f"{url}/v1", apiKeyEnv="FAKE_OPENAI_KEY", reasoning=True)
    events = await collect(
        make(http).stream(HI, spec, RequestOptions(reasoning=ReasoningRequest(effort="low")))
    )
    assert server.requests[0].json["reasoning_effort"] == "low"
    assert events[:4] == [
        ReasoningStart(id="reasoning-0"),
        ReasoningDelta(id="reasoning-0", delta="Short "),
        ReasoningDelta(id="reasoning-0", delta="thought."),
        ReasoningEnd(id="reasoning-0"),
    ]
    usage = next(e for e in events if isinstance(e, Usage))
    assert usage.reasoning_tokens == 12


async def test_claude_through_litellm_gets_thinking_and_its_signed_blocks_come_back(
    http: httpx.AsyncClient,
) -> None:
    anthropic = FakeAnthropic(api_key=KEY)
    anthropic.reply(
        [
            fa.message_start(20),
            *fa.thinking_block(0, ["Hmm, ", "a greeting."], "SIGNED-THOUGHT=="),
            *fa.text_block(1, ["Hello."]),
            *fa.message_end("end_turn", 30),
        ]
    )
    with serve_asgi(anthropic.app) as url:
        spec = model("anthropic/claude-sonnet-4-5", apiBase=url, apiKeyEnv="FAKE_OPENAI_KEY", reasoning=True)
        options = RequestOptions(reasoning=ReasoningRequest(effort="medium", budget_tokens=2048))
        events = await collect(make(http).stream(HI, spec, options))
    sent = anthropic.requests[0].json
    assert sent["thinking"] == {"type": "enabled", "budget_tokens": 2048}
    thought = "".join(e.delta for e in events if isinstance(e, ReasoningDelta))
    assert thought == "Hmm, a greeting."
    signatures = [e.value for e in events if isinstance(e, ReasoningOpaque) and e.kind == "signature"]
    assert signatures == ["SIGNED-THOUGHT=="]

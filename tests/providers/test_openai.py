"""The OpenAI Chat Completions provider: exact request JSON, and streaming against a fake over real HTTP."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from iris.providers.errors import UnsupportedPartError
from iris.providers.events import (
    Finish,
    FinishReason,
    TextDelta,
    TextEnd,
    TextStart,
    ToolCallArgs,
    ToolCallEnd,
    ToolCallStart,
    Usage,
)
from iris.providers.messages import (
    ImagePart,
    Message,
    RequestOptions,
    TextPart,
    ToolCallPart,
    ToolResultPart,
)
from iris.providers.openai import OpenAIProvider, create
from iris.providers.spec import SPEC_VERSION, ModelSpec, Provider, ProviderContext
from tests.providers.helpers import (
    KEY,
    NO_OPTIONS,
    PNG,
    PNG_B64,
    WEATHER,
    collect,
    collect_until_error,
    png,
    user,
)
from tests.support.fake_openai import FakeOpenAI, ToolCallScript
from tests.support.http_server import serve_asgi
from tests.support.images import image_bytes

SIGNED = "https://storage.example.com/object/sign/att/u1/cat.png?token=abc.def"


def vision(**options: Any) -> ModelSpec:
    return ModelSpec(
        provider="openai", model_id="gpt-4o", type="vision", supports_tools=True, options=options
    )


def text_model(**options: Any) -> ModelSpec:
    return ModelSpec(
        provider="openai", model_id="gpt-3.5-turbo", type="text", supports_tools=False, options=options
    )


@pytest.fixture(scope="module")
def served_fake() -> Iterator[tuple[FakeOpenAI, str]]:
    server = FakeOpenAI(api_key=KEY)
    with serve_asgi(server.app) as url:
        yield server, url


@pytest.fixture
def fake(served_fake: tuple[FakeOpenAI, str]) -> tuple[FakeOpenAI, str]:
    served_fake[0].reset()
    return served_fake


def make(http: httpx.AsyncClient, **environ: str) -> OpenAIProvider:
    return create(ProviderContext(environ={"OPENAI_API_KEY": KEY} | environ, http=http))


def text_of(body: dict[str, Any]) -> list[str]:
    """Every piece of prompt text in a request (system strings, user strings, text blocks)."""
    texts: list[str] = []
    for message in body["messages"]:
        content = message.get("content")
        if isinstance(content, str):
            texts.append(content)
        elif isinstance(content, list):
            texts += [block["text"] for block in content if block["type"] == "text"]
    return texts


# -- the provider as a plugin ------------------------------------------------------------------------


async def test_create_gives_a_provider_that_reads_no_key_until_a_request() -> None:
    async with httpx.AsyncClient() as client:
        provider = create(ProviderContext(environ={}, http=client))
    assert isinstance(provider, Provider)
    assert (provider.id, provider.spec_version) == ("openai", SPEC_VERSION)


async def test_capabilities(http: httpx.AsyncClient) -> None:
    provider = OpenAIProvider(ProviderContext(environ={}, http=http))
    caps = provider.capabilities(vision())
    assert caps.vision is True
    assert caps.image_mime_types == ("image/png", "image/jpeg", "image/webp", "image/gif")
    assert (caps.max_images, caps.max_image_bytes, caps.image_bytes_measured_on) == (500, 20_000_000, "raw")
    assert (caps.max_image_edge_px, caps.recommended_long_edge_px) == (None, 2048)
    assert (caps.url_fetch, caps.tools) == ("public_https", True)
    text = provider.capabilities(text_model())
    assert (text.vision, text.image_mime_types, text.max_images, text.tools) == (False, (), 0, False)


# -- build_request -----------------------------------------------------------------------------------


async def test_system_text_and_inline_png_become_a_native_image_url_block(http: httpx.AsyncClient) -> None:
    body = make(http).build_request(
        [user(TextPart(text="What is in this picture?"), png())], vision(), RequestOptions(system="Be brief.")
    )
    assert body == {
        "model": "gpt-4o",
        "messages": [
            {"role": "system", "content": "Be brief."},
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "What is in this picture?"},
                    {
                        "type": "image_url",
                        "image_url": {"url": f"data:image/png;base64,{PNG_B64}", "detail": "auto"},
                    },
                ],
            },
        ],
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    assert base64.b64decode(body["messages"][1]["content"][1]["image_url"]["url"].split(",", 1)[1]) == PNG
    for text in text_of(body):
        assert PNG_B64 not in text
        assert "image/png" not in text
        assert "mime_type" not in text


async def test_url_image_is_passed_as_the_url_with_the_requested_detail(http: httpx.AsyncClient) -> None:
    image = ImagePart(mime_type="image/jpeg", width=640, height=480, url=SIGNED)
    options = RequestOptions(extra={"openai": {"detail": "high"}})
    body = make(http).build_request([user(image)], vision(), options)
    assert body["messages"] == [
        {"role": "user", "content": [{"type": "image_url", "image_url": {"url": SIGNED, "detail": "high"}}]}
    ]
    # The catalogue row may set a default detail; a per-request one wins over it.
    by_row = make(http).build_request([user(image)], vision(detail="low"), NO_OPTIONS)
    assert by_row["messages"][0]["content"][0]["image_url"]["detail"] == "low"
    by_request = make(http).build_request([user(image)], vision(detail="low"), options)
    assert by_request["messages"][0]["content"][0]["image_url"]["detail"] == "high"
    assert "detail" not in by_request


async def test_tools_are_function_tools(http: httpx.AsyncClient) -> None:
    body = make(http).build_request(
        [user(TextPart(text="Weather in Oslo?"))], vision(), RequestOptions(tools=(WEATHER,))
    )
    assert body["messages"] == [{"role": "user", "content": "Weather in Oslo?"}]
    assert body["tools"] == [
        {
            "type": "function",
            "function": {
                "name": "get_weather",
                "description": "Current weather for a city",
                "parameters": {
                    "type": "object",
                    "properties": {"city": {"type": "string"}},
                    "required": ["city"],
                },
            },
        }
    ]


async def test_assistant_tool_calls_then_tool_results(http: httpx.AsyncClient) -> None:
    history = [
        user(TextPart(text="Weather in Oslo and Rome?")),
        Message(
            role="assistant",
            parts=(
                TextPart(text="Checking both."),
                ToolCallPart(id="call_A", name="get_weather", arguments='{"city":"Oslo"}'),
                ToolCallPart(id="call_B", name="get_weather", arguments='{"city":"Rome"}'),
            ),
        ),
        Message(
            role="tool",
            parts=(
                ToolResultPart(tool_call_id="call_A", name="get_weather", content="-3C, snow"),
                ToolResultPart(
                    tool_call_id="call_B", name="get_weather", content="no station", is_error=True
                ),
            ),
        ),
        Message(role="assistant", parts=(ToolCallPart(id="call_C", name="get_weather", arguments="{}"),)),
    ]
    body = make(http).build_request(history, vision(), RequestOptions(tools=(WEATHER,)))
    assert body["messages"] == [
        {"role": "user", "content": "Weather in Oslo and Rome?"},
        {
            "role": "assistant",
            "content": "Checking both.",
            "tool_calls": [
                {
                    "id": "call_A",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"city":"Oslo"}'},
                },
                {
                    "id": "call_B",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"city":"Rome"}'},
                },
            ],
        },
        {"role": "tool", "tool_call_id": "call_A", "content": "-3C, snow"},
        {"role": "tool", "tool_call_id": "call_B", "content": "Error: no station"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "call_C", "type": "function", "function": {"name": "get_weather", "arguments": "{}"}}
            ],
        },
    ]


async def test_max_tokens_temperature_and_vendor_extras(http: httpx.AsyncClient) -> None:
    options = RequestOptions(
        max_output_tokens=256,
        temperature=0.2,
        extra={"openai": {"seed": 7, "reasoning_effort": "low", "model": "not-this-one"}, "gemini": {"x": 1}},
    )
    body = make(http).build_request([user(TextPart(text="hi"))], vision(), options)
    assert body == {
        "model": "gpt-4o",
        "messages": [{"role": "user", "content": "hi"}],
        "stream": True,
        "stream_options": {"include_usage": True},
        "max_completion_tokens": 256,
        "temperature": 0.2,
        "reasoning_effort": "low",
        "seed": 7,
    }
    legacy = make(http).build_request(
        [user(TextPart(text="hi"))], vision(maxTokensField="max_tokens"), options
    )
    assert legacy["max_tokens"] == 256
    assert "max_completion_tokens" not in legacy


async def test_build_request_is_deterministic(http: httpx.AsyncClient) -> None:
    provider = make(http)
    messages = [user(TextPart(text="a"), png())]
    first = provider.build_request(messages, vision(), RequestOptions(tools=(WEATHER,)))
    assert json.dumps(first) == json.dumps(
        provider.build_request(messages, vision(), RequestOptions(tools=(WEATHER,)))
    )


# -- parts it must refuse ----------------------------------------------------------------------------


async def test_image_to_a_text_model_is_refused(http: httpx.AsyncClient) -> None:
    with pytest.raises(UnsupportedPartError) as caught:
        make(http).build_request([user(TextPart(text="see"), png())], text_model(), NO_OPTIONS)
    assert (caught.value.provider, caught.value.part_type, caught.value.media_type) == (
        "openai",
        "image",
        "image/png",
    )
    assert "text-only" in str(caught.value)


async def test_undeclared_mime_type_is_refused(http: httpx.AsyncClient) -> None:
    bmp = ImagePart(mime_type="image/bmp", width=8, height=6, data=image_bytes("BMP", (8, 6)))
    with pytest.raises(UnsupportedPartError) as caught:
        make(http).build_request([user(bmp)], vision(), NO_OPTIONS)
    assert (caught.value.part_type, caught.value.media_type) == ("image", "image/bmp")


async def test_non_https_url_is_refused(http: httpx.AsyncClient) -> None:
    image = ImagePart(mime_type="image/png", width=8, height=6, url="http://10.0.0.5/cat.png")
    with pytest.raises(UnsupportedPartError, match="https"):
        make(http).build_request([user(image)], vision(), NO_OPTIONS)


async def test_tools_for_a_model_without_tools_are_refused(http: httpx.AsyncClient) -> None:
    with pytest.raises(UnsupportedPartError) as caught:
        make(http).build_request([user(TextPart(text="hi"))], text_model(), RequestOptions(tools=(WEATHER,)))
    assert caught.value.part_type == "tools"
    call = Message(role="assistant", parts=(ToolCallPart(id="c", name="get_weather", arguments="{}"),))
    with pytest.raises(UnsupportedPartError) as caught:
        make(http).build_request([call], text_model(), NO_OPTIONS)
    assert caught.value.part_type == "tool_call"


async def test_an_image_in_an_assistant_turn_is_refused(http: httpx.AsyncClient) -> None:
    with pytest.raises(UnsupportedPartError) as caught:
        make(http).build_request([Message(role="assistant", parts=(png(),))], vision(), NO_OPTIONS)
    assert (caught.value.part_type, caught.value.media_type) == ("image", "image/png")


# -- streaming against the fake ----------------------------------------------------------------------


async def test_text_stream_events_request_and_auth(
    fake: tuple[FakeOpenAI, str], http: httpx.AsyncClient
) -> None:
    server, url = fake
    server.text("It is ", "a red ", "square.", usage=(85, 6))
    provider = make(http)
    model = vision(baseUrl=f"{url}/v1")
    messages = [user(TextPart(text="What is this?"), png())]
    options = RequestOptions(system="Be brief.", max_output_tokens=50)

    events = await collect(provider.stream(messages, model, options))

    assert events == [
        TextStart(id="chatcmpl-fake1"),
        TextDelta(id="chatcmpl-fake1", delta="It is "),
        TextDelta(id="chatcmpl-fake1", delta="a red "),
        TextDelta(id="chatcmpl-fake1", delta="square."),
        TextEnd(id="chatcmpl-fake1"),
        Usage(input_tokens=85, output_tokens=6, reasoning_tokens=0, cached_input_tokens=0),
        Finish(reason="stop"),
    ]
    [request] = server.requests
    assert (request.method, request.path) == ("POST", "/v1/chat/completions")
    assert request.headers["authorization"] == f"Bearer {KEY}"
    assert request.headers["content-type"] == "application/json"
    assert request.json == provider.build_request(messages, model, options)
    assert request.json["messages"][1]["content"][1] == {
        "type": "image_url",
        "image_url": {"url": f"data:image/png;base64,{PNG_B64}", "detail": "auto"},
    }


async def test_tool_call_stream(fake: tuple[FakeOpenAI, str], http: httpx.AsyncClient) -> None:
    server, url = fake
    server.tool_calls(
        [
            ToolCallScript(id="call_Oslo1", name="get_weather", argument_pieces=['{"ci', 'ty": "Os', 'lo"}']),
            ToolCallScript(id="call_Rome2", name="get_time", argument_pieces=['{"tz":', ' "Europe/Rome"}']),
        ],
        preamble="Let me check.",
        usage=(120, 44),
    )
    events = await collect(
        make(http).stream(
            [user(TextPart(text="Oslo weather, Rome time"))],
            vision(baseUrl=f"{url}/v1"),
            RequestOptions(tools=(WEATHER,)),
        )
    )
    assert events == [
        TextStart(id="chatcmpl-fake2"),
        TextDelta(id="chatcmpl-fake2", delta="Let me check."),
        TextEnd(id="chatcmpl-fake2"),
        ToolCallStart(id="call_Oslo1", name="get_weather"),
        ToolCallArgs(id="call_Oslo1", delta='{"ci'),
        ToolCallArgs(id="call_Oslo1", delta='ty": "Os'),
        ToolCallArgs(id="call_Oslo1", delta='lo"}'),
        ToolCallStart(id="call_Rome2", name="get_time"),
        ToolCallArgs(id="call_Rome2", delta='{"tz":'),
        ToolCallArgs(id="call_Rome2", delta=' "Europe/Rome"}'),
        ToolCallEnd(id="call_Oslo1"),
        ToolCallEnd(id="call_Rome2"),
        Usage(input_tokens=120, output_tokens=44, reasoning_tokens=0, cached_input_tokens=0),
        Finish(reason="tool_calls"),
    ]
    args = "".join(e.delta for e in events if isinstance(e, ToolCallArgs) and e.id == "call_Oslo1")
    assert json.loads(args) == {"city": "Oslo"}
    assert server.requests[0].json["tools"][0]["function"]["name"] == "get_weather"


@pytest.mark.parametrize(
    ("vendor_reason", "reason"),
    [
        ("stop", "stop"),
        ("length", "length"),
        ("content_filter", "content_filter"),
        ("something_new", "other"),
    ],
)
async def test_finish_reason_mapping(
    fake: tuple[FakeOpenAI, str], http: httpx.AsyncClient, vendor_reason: str, reason: FinishReason
) -> None:
    server, url = fake
    server.text("partial", finish_reason=vendor_reason, usage=None)
    events = await collect(
        make(http).stream([user(TextPart(text="hi"))], vision(baseUrl=f"{url}/v1"), NO_OPTIONS)
    )
    assert events[-1] == Finish(reason=reason)
    assert not any(isinstance(e, Usage) for e in events)
    assert [type(e) for e in events] == [TextStart, TextDelta, TextEnd, Finish]


async def test_base_url_from_env_and_another_key_variable(
    fake: tuple[FakeOpenAI, str], http: httpx.AsyncClient
) -> None:
    server, url = fake
    server.text("ok")
    provider = create(
        ProviderContext(environ={"OPENAI_BASE_URL": f"{url}/v1/", "OPENROUTER_API_KEY": KEY}, http=http)
    )
    events = await collect(
        provider.stream([user(TextPart(text="hi"))], vision(apiKeyEnv="OPENROUTER_API_KEY"), NO_OPTIONS)
    )
    assert events[-1] == Finish(reason="stop")
    assert server.requests[0].headers["authorization"] == f"Bearer {KEY}"


async def test_no_key_servers_get_no_authorization_header(http: httpx.AsyncClient) -> None:
    server = FakeOpenAI(api_key=None)
    server.text("local answer")
    with serve_asgi(server.app) as url:
        provider = create(ProviderContext(environ={}, http=http))
        events = await collect(
            provider.stream([user(TextPart(text="hi"))], vision(baseUrl=f"{url}/v1", noKey=True), NO_OPTIONS)
        )
    assert events[1] == TextDelta(id="chatcmpl-fake1", delta="local answer")
    assert "authorization" not in server.requests[0].headers


# -- errors ------------------------------------------------------------------------------------------


async def test_missing_key_is_auth_before_any_request(
    fake: tuple[FakeOpenAI, str], http: httpx.AsyncClient
) -> None:
    server, url = fake
    provider = create(ProviderContext(environ={}, http=http))
    _, error = await collect_until_error(
        provider.stream([user(TextPart(text="hi"))], vision(baseUrl=f"{url}/v1"), NO_OPTIONS)
    )
    assert error.kind == "auth"
    assert "OPENAI_API_KEY" in error.message
    assert server.requests == []


async def test_401_is_auth_and_never_shows_the_key(http: httpx.AsyncClient) -> None:
    server = FakeOpenAI(api_key="sk-the-right-one")
    with serve_asgi(server.app) as url:
        _, error = await collect_until_error(
            make(http).stream([user(TextPart(text="hi"))], vision(baseUrl=f"{url}/v1"), NO_OPTIONS)
        )
    assert (error.kind, error.status, error.provider) == ("auth", 401, "openai")
    assert "Incorrect API key provided" in error.message
    assert KEY not in error.message
    assert KEY not in str(error)


async def test_429_is_rate_limit_with_retry_after(
    fake: tuple[FakeOpenAI, str], http: httpx.AsyncClient
) -> None:
    server, url = fake
    server.rate_limited(retry_after="7")
    _, error = await collect_until_error(
        make(http).stream([user(TextPart(text="hi"))], vision(baseUrl=f"{url}/v1"), NO_OPTIONS)
    )
    assert (error.kind, error.status, error.retry_after) == ("rate_limit", 429, 7.0)
    assert KEY not in str(error)


@pytest.mark.parametrize("timed_out", [True, False])
async def test_image_download_failure_is_could_not_fetch_image(
    fake: tuple[FakeOpenAI, str], http: httpx.AsyncClient, timed_out: bool
) -> None:
    server, url = fake
    server.download_failed(SIGNED, timeout=timed_out)
    image = ImagePart(mime_type="image/png", width=8, height=6, url=SIGNED)
    _, error = await collect_until_error(
        make(http).stream([user(image)], vision(baseUrl=f"{url}/v1"), NO_OPTIONS)
    )
    assert (error.kind, error.status) == ("could_not_fetch_image", 400)
    assert server.requests[0].json["messages"][0]["content"][0]["image_url"]["url"] == SIGNED


async def test_other_400_is_bad_request(fake: tuple[FakeOpenAI, str], http: httpx.AsyncClient) -> None:
    server, url = fake
    server.error(
        400, "Invalid value for 'temperature': must be <= 2.", param="temperature", code="invalid_value"
    )
    _, error = await collect_until_error(
        make(http).stream([user(TextPart(text="hi"))], vision(baseUrl=f"{url}/v1"), NO_OPTIONS)
    )
    assert (error.kind, error.status) == ("bad_request", 400)


async def test_500_is_unavailable(fake: tuple[FakeOpenAI, str], http: httpx.AsyncClient) -> None:
    server, url = fake
    server.server_error()
    _, error = await collect_until_error(
        make(http).stream([user(TextPart(text="hi"))], vision(baseUrl=f"{url}/v1"), NO_OPTIONS)
    )
    assert (error.kind, error.status) == ("unavailable", 500)


@pytest.mark.parametrize("cut", [True, False], ids=["connection-cut", "no-done-marker"])
async def test_a_stream_that_breaks_is_unavailable_after_what_was_streamed(
    fake: tuple[FakeOpenAI, str], http: httpx.AsyncClient, cut: bool
) -> None:
    server, url = fake
    server.broken("Once upon", " a time", cut=cut)
    events, error = await collect_until_error(
        make(http).stream([user(TextPart(text="story"))], vision(baseUrl=f"{url}/v1"), NO_OPTIONS)
    )
    assert events == [
        TextStart(id="chatcmpl-fake3"),
        TextDelta(id="chatcmpl-fake3", delta="Once upon"),
        TextDelta(id="chatcmpl-fake3", delta=" a time"),
    ]
    assert error.kind == "unavailable"
    expected = "RemoteProtocolError talking to the vendor" if cut else "the stream ended before data: [DONE]"
    assert error.message == expected
    assert KEY not in str(error)


async def test_a_malformed_chunk_is_unavailable(
    fake: tuple[FakeOpenAI, str], http: httpx.AsyncClient
) -> None:
    server, url = fake
    server.malformed("Hello")
    events, error = await collect_until_error(
        make(http).stream([user(TextPart(text="hi"))], vision(baseUrl=f"{url}/v1"), NO_OPTIONS)
    )
    assert events == [TextStart(id="chatcmpl-fake4"), TextDelta(id="chatcmpl-fake4", delta="Hello")]
    assert (error.kind, error.message) == ("unavailable", "malformed chunk in the stream")


async def test_connection_refused_is_unavailable(http: httpx.AsyncClient) -> None:
    _, error = await collect_until_error(
        make(http).stream([user(TextPart(text="hi"))], vision(baseUrl="http://127.0.0.1:9/v1"), NO_OPTIONS)
    )
    assert (error.kind, error.status) == ("unavailable", None)

"""The Ollama provider: exact ``/api/chat`` JSON, and NDJSON streaming against a fake over real HTTP."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from typing import Any, Literal

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
    ToolSpec,
)
from iris.providers.ollama import OllamaProvider, create
from iris.providers.spec import SPEC_VERSION, ModelSpec, Provider, ProviderContext
from tests.providers.helpers import (
    HI,
    KEY,
    NO_OPTIONS,
    PNG,
    PNG_B64,
    collect,
    collect_until_error,
    png,
    user,
)
from tests.support.fake_ollama import FakeOllama
from tests.support.http_server import serve_asgi
from tests.support.images import image_bytes

JPEG = image_bytes("JPEG", (10, 4), color=(20, 40, 200))
JPEG_B64 = base64.b64encode(JPEG).decode()
WEATHER = ToolSpec(
    name="get_weather",
    description="Get the weather in a given city",
    parameters={"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
)


def vision(**options: Any) -> ModelSpec:
    return ModelSpec(
        provider="ollama", model_id="llava:13b", type="vision", supports_tools=True, options=options
    )


def text_model(**options: Any) -> ModelSpec:
    return ModelSpec(provider="ollama", model_id="llama3.2", type="text", options=options)


@pytest.fixture(scope="module")
def served_fake() -> Iterator[tuple[FakeOllama, str]]:
    server = FakeOllama()
    with serve_asgi(server.app) as url:
        yield server, url


@pytest.fixture
def fake(served_fake: tuple[FakeOllama, str]) -> tuple[FakeOllama, str]:
    served_fake[0].reset()
    return served_fake


def make(http: httpx.AsyncClient, **environ: str) -> OllamaProvider:
    return create(ProviderContext(environ=environ, http=http))


# -- the provider as a plugin ------------------------------------------------------------------------


async def test_create_and_capabilities(http: httpx.AsyncClient) -> None:
    provider = make(http)
    assert isinstance(provider, Provider)
    assert (provider.id, provider.spec_version) == ("ollama", SPEC_VERSION)
    caps = provider.capabilities(vision())
    assert (caps.vision, caps.image_mime_types) == (True, ("image/png", "image/jpeg"))
    assert (caps.max_images, caps.max_image_bytes, caps.image_bytes_measured_on) == (8, 20_000_000, "raw")
    assert (caps.max_image_edge_px, caps.recommended_long_edge_px) == (None, None)
    assert (caps.url_fetch, caps.tools) == ("none", True)
    text = provider.capabilities(text_model())
    assert (text.vision, text.image_mime_types, text.max_images, text.tools) == (False, (), 0, False)


# -- build_request -----------------------------------------------------------------------------------


async def test_system_text_and_images_become_raw_base64_in_images(http: httpx.AsyncClient) -> None:
    jpeg = ImagePart(mime_type="image/jpeg", width=10, height=4, data=JPEG)
    body = make(http).build_request(
        [user(TextPart(text="Compare these."), png(), jpeg)], vision(), RequestOptions(system="Be brief.")
    )
    assert body == {
        "model": "llava:13b",
        "messages": [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "Compare these.", "images": [PNG_B64, JPEG_B64]},
        ],
        "stream": True,
    }
    assert base64.b64decode(body["messages"][1]["images"][0]) == PNG
    for message in body["messages"]:
        assert PNG_B64 not in message["content"]
        assert "image/png" not in message["content"]


async def test_tools_and_a_tool_round_trip(http: httpx.AsyncClient) -> None:
    history = [
        user(TextPart(text="what is the weather in Toronto?")),
        Message(
            role="assistant",
            parts=(
                TextPart(text="Looking it up."),
                ToolCallPart(id="call_x1", name="get_weather", arguments='{"city": "Toronto"}'),
            ),
        ),
        Message(
            role="tool",
            parts=(
                ToolResultPart(tool_call_id="call_x1", name="get_weather", content="11 degrees celsius"),
                ToolResultPart(tool_call_id="call_x2", name="get_weather", content="timeout", is_error=True),
            ),
        ),
    ]
    body = make(http).build_request(history, vision(), RequestOptions(tools=(WEATHER,)))
    assert body == {
        "model": "llava:13b",
        "messages": [
            {"role": "user", "content": "what is the weather in Toronto?"},
            {
                "role": "assistant",
                "content": "Looking it up.",
                "tool_calls": [
                    {"id": "call_x1", "function": {"name": "get_weather", "arguments": {"city": "Toronto"}}}
                ],
            },
            {
                "role": "tool",
                "content": "11 degrees celsius",
                "tool_name": "get_weather",
                "tool_call_id": "call_x1",
            },
            {
                "role": "tool",
                "content": "Error: timeout",
                "tool_name": "get_weather",
                "tool_call_id": "call_x2",
            },
        ],
        "stream": True,
        "tools": [
            {
                "type": "function",
                "function": {
                    "name": "get_weather",
                    "description": "Get the weather in a given city",
                    "parameters": {
                        "type": "object",
                        "properties": {"city": {"type": "string"}},
                        "required": ["city"],
                    },
                },
            }
        ],
    }


async def test_max_tokens_temperature_and_vendor_extras(http: httpx.AsyncClient) -> None:
    options = RequestOptions(
        max_output_tokens=100,
        temperature=0.5,
        extra={"ollama": {"keep_alive": "10m", "options": {"num_ctx": 8192, "num_predict": 1}, "model": "x"}},
    )
    body = make(http).build_request(HI, vision(), options)
    assert body == {
        "model": "llava:13b",
        "messages": [{"role": "user", "content": "hi"}],
        "stream": True,
        "options": {"num_predict": 100, "temperature": 0.5, "num_ctx": 8192},
        "keep_alive": "10m",
    }


# -- parts it must refuse ----------------------------------------------------------------------------


async def test_image_to_a_text_model_is_refused(http: httpx.AsyncClient) -> None:
    with pytest.raises(UnsupportedPartError) as caught:
        make(http).build_request([user(png())], text_model(), NO_OPTIONS)
    assert (caught.value.provider, caught.value.part_type, caught.value.media_type) == (
        "ollama",
        "image",
        "image/png",
    )


async def test_webp_is_refused_the_core_transcodes_it_first(http: httpx.AsyncClient) -> None:
    webp = ImagePart(mime_type="image/webp", width=8, height=6, data=image_bytes("WEBP", (8, 6)))
    with pytest.raises(UnsupportedPartError) as caught:
        make(http).build_request([user(webp)], vision(), NO_OPTIONS)
    assert (caught.value.part_type, caught.value.media_type) == ("image", "image/webp")


async def test_url_image_is_refused(http: httpx.AsyncClient) -> None:
    image = ImagePart(
        mime_type="image/png", width=8, height=6, url="https://storage.example.com/cat.png?token=t"
    )
    with pytest.raises(UnsupportedPartError, match="cannot fetch image URLs"):
        make(http).build_request([user(image)], vision(), NO_OPTIONS)


async def test_tool_call_arguments_that_are_not_an_object_are_refused(http: httpx.AsyncClient) -> None:
    call = Message(role="assistant", parts=(ToolCallPart(id="c1", name="get_weather", arguments="[1, 2]"),))
    with pytest.raises(UnsupportedPartError) as caught:
        make(http).build_request([call], vision(), NO_OPTIONS)
    assert caught.value.part_type == "tool_call"


async def test_tools_for_a_model_without_tools_are_refused(http: httpx.AsyncClient) -> None:
    with pytest.raises(UnsupportedPartError) as caught:
        make(http).build_request(HI, text_model(), RequestOptions(tools=(WEATHER,)))
    assert caught.value.part_type == "tools"


# -- streaming against the fake ----------------------------------------------------------------------


async def test_text_stream_events_and_request(fake: tuple[FakeOllama, str], http: httpx.AsyncClient) -> None:
    server, url = fake
    server.text("The", " sky", " is blue.", prompt_eval_count=26, eval_count=282)
    provider = make(http)
    messages = [user(TextPart(text="What is this?"), png())]
    options = RequestOptions(system="Be brief.", temperature=0)

    events = await collect(provider.stream(messages, vision(baseUrl=url), options))

    assert events == [
        TextStart(id="text-0"),
        TextDelta(id="text-0", delta="The"),
        TextDelta(id="text-0", delta=" sky"),
        TextDelta(id="text-0", delta=" is blue."),
        TextEnd(id="text-0"),
        Usage(input_tokens=26, output_tokens=282),
        Finish(reason="stop"),
    ]
    [request] = server.requests
    assert (request.method, request.path) == ("POST", "/api/chat")
    assert request.json == provider.build_request(messages, vision(baseUrl=url), options)
    assert request.json["messages"][1]["images"] == [PNG_B64]
    assert "authorization" not in request.headers


async def test_tool_calls_with_vendor_ids(fake: tuple[FakeOllama, str], http: httpx.AsyncClient) -> None:
    server, url = fake
    server.tool_calls(
        [("get_weather", {"city": "Tokyo"}), ("get_weather", {"city": "Paris, FR", "units": "celsius"})],
        ids=["call_k2x9a1", "call_p7q3z0"],
        preamble="Checking.",
    )
    events = await collect(make(http).stream(HI, vision(baseUrl=url), RequestOptions(tools=(WEATHER,))))
    assert events == [
        TextStart(id="text-0"),
        TextDelta(id="text-0", delta="Checking."),
        TextEnd(id="text-0"),
        ToolCallStart(id="call_k2x9a1", name="get_weather"),
        ToolCallArgs(id="call_k2x9a1", delta='{"city": "Tokyo"}'),
        ToolCallEnd(id="call_k2x9a1"),
        ToolCallStart(id="call_p7q3z0", name="get_weather"),
        ToolCallArgs(id="call_p7q3z0", delta='{"city": "Paris, FR", "units": "celsius"}'),
        ToolCallEnd(id="call_p7q3z0"),
        Usage(input_tokens=169, output_tokens=15),
        Finish(reason="tool_calls"),
    ]
    assert server.requests[0].json["tools"][0]["function"]["name"] == "get_weather"


async def test_tool_calls_without_ids_get_deterministic_ones(
    fake: tuple[FakeOllama, str], http: httpx.AsyncClient
) -> None:
    server, url = fake
    server.tool_calls([("get_weather", {"city": "Oslo"}), ("get_time", {})], ids=None)
    events = await collect(make(http).stream(HI, vision(baseUrl=url), RequestOptions(tools=(WEATHER,))))
    starts = [e for e in events if isinstance(e, ToolCallStart)]
    assert starts == [
        ToolCallStart(id="call_0", name="get_weather"),
        ToolCallStart(id="call_1", name="get_time"),
    ]
    args = {e.id: json.loads(e.delta) for e in events if isinstance(e, ToolCallArgs)}
    assert args == {"call_0": {"city": "Oslo"}, "call_1": {}}
    assert events[-1] == Finish(reason="tool_calls")


@pytest.mark.parametrize(
    ("done_reason", "reason"), [("stop", "stop"), ("length", "length"), (None, "stop"), ("unload", "other")]
)
async def test_done_reason_mapping(
    fake: tuple[FakeOllama, str], http: httpx.AsyncClient, done_reason: str | None, reason: FinishReason
) -> None:
    server, url = fake
    server.text("word", done_reason=done_reason, prompt_eval_count=None, eval_count=None)
    events = await collect(make(http).stream(HI, vision(baseUrl=url), NO_OPTIONS))
    assert events == [
        TextStart(id="text-0"),
        TextDelta(id="text-0", delta="word"),
        TextEnd(id="text-0"),
        Finish(reason=reason),
    ]


async def test_host_from_ollama_host_without_a_scheme(
    fake: tuple[FakeOllama, str], http: httpx.AsyncClient
) -> None:
    server, url = fake
    server.text("ok")
    provider = make(http, OLLAMA_HOST=url.removeprefix("http://"))
    events = await collect(provider.stream(HI, vision(), NO_OPTIONS))
    assert events[1] == TextDelta(id="text-0", delta="ok")
    assert len(server.requests) == 1


async def test_optional_key_for_ollama_com(http: httpx.AsyncClient) -> None:
    server = FakeOllama(model="gpt-oss:120b", api_key=KEY)
    server.text("hello")
    with serve_asgi(server.app) as url:
        events = await collect(
            make(http, OLLAMA_API_KEY=KEY).stream(
                HI, vision(baseUrl=url, apiKeyEnv="OLLAMA_API_KEY"), NO_OPTIONS
            )
        )
    assert events[-1] == Finish(reason="stop")
    assert server.requests[0].headers["authorization"] == f"Bearer {KEY}"


# -- errors ------------------------------------------------------------------------------------------


async def test_missing_key_is_auth_before_any_request(
    fake: tuple[FakeOllama, str], http: httpx.AsyncClient
) -> None:
    server, url = fake
    _, error = await collect_until_error(
        make(http).stream(HI, vision(baseUrl=url, apiKeyEnv="OLLAMA_API_KEY"), NO_OPTIONS)
    )
    assert (error.kind, error.message) == ("auth", "set OLLAMA_API_KEY to use this provider")
    assert server.requests == []


async def test_401_is_auth_and_never_shows_the_key(http: httpx.AsyncClient) -> None:
    server = FakeOllama(api_key="the-right-key")
    with serve_asgi(server.app) as url:
        _, error = await collect_until_error(
            make(http, OLLAMA_API_KEY=KEY).stream(
                HI, vision(baseUrl=url, apiKeyEnv="OLLAMA_API_KEY"), NO_OPTIONS
            )
        )
    assert (error.kind, error.status, error.message) == ("auth", 401, "HTTP 401: unauthorized")
    assert KEY not in str(error)


async def test_429_is_rate_limit_with_retry_after(
    fake: tuple[FakeOllama, str], http: httpx.AsyncClient
) -> None:
    server, url = fake
    server.error(429, "too many concurrent requests", headers=[("retry-after", "3")])
    _, error = await collect_until_error(make(http).stream(HI, vision(baseUrl=url), NO_OPTIONS))
    assert (error.kind, error.status, error.retry_after) == ("rate_limit", 429, 3.0)


async def test_model_not_found_is_bad_request(fake: tuple[FakeOllama, str], http: httpx.AsyncClient) -> None:
    server, url = fake
    server.error(404, 'model "llava:13b" not found, try pulling it first')
    _, error = await collect_until_error(make(http).stream(HI, vision(baseUrl=url), NO_OPTIONS))
    assert (error.kind, error.status) == ("bad_request", 404)
    assert error.message == 'HTTP 404: model "llava:13b" not found, try pulling it first'


async def test_an_image_ollama_cannot_decode_is_bad_request_not_a_fetch_failure(
    fake: tuple[FakeOllama, str], http: httpx.AsyncClient
) -> None:
    """Ollama never fetches URLs, so it has no "could not download" error; a bad image is a plain 400."""
    server, url = fake
    server.error(400, "illegal base64 data at input byte 4")
    _, error = await collect_until_error(make(http).stream([user(png())], vision(baseUrl=url), NO_OPTIONS))
    assert (error.kind, error.status) == ("bad_request", 400)


@pytest.mark.parametrize("status", [500, 502])
async def test_server_errors_are_unavailable(
    fake: tuple[FakeOllama, str], http: httpx.AsyncClient, status: int
) -> None:
    server, url = fake
    server.error(status, "llama runner process has terminated: signal: killed")
    _, error = await collect_until_error(make(http).stream(HI, vision(baseUrl=url), NO_OPTIONS))
    assert (error.kind, error.status) == ("unavailable", status)


@pytest.mark.parametrize(
    ("how", "message"),
    [
        ("cut", "RemoteProtocolError talking to the vendor"),
        ("no_done", 'the stream ended before "done": true'),
        ("malformed", "malformed line in the stream"),
    ],
)
async def test_a_stream_that_breaks_is_unavailable_after_what_was_streamed(
    fake: tuple[FakeOllama, str],
    http: httpx.AsyncClient,
    how: Literal["cut", "no_done", "malformed"],
    message: str,
) -> None:
    server, url = fake
    server.broken("Once upon", " a time", how=how)
    events, error = await collect_until_error(make(http).stream(HI, vision(baseUrl=url), NO_OPTIONS))
    assert events == [
        TextStart(id="text-0"),
        TextDelta(id="text-0", delta="Once upon"),
        TextDelta(id="text-0", delta=" a time"),
    ]
    assert (error.kind, error.message) == ("unavailable", message)


async def test_an_error_line_mid_stream_is_unavailable(
    fake: tuple[FakeOllama, str], http: httpx.AsyncClient
) -> None:
    server, url = fake
    server.error_mid_stream(" Yes", ".")
    events, error = await collect_until_error(make(http).stream(HI, vision(baseUrl=url), NO_OPTIONS))
    assert events == [
        TextStart(id="text-0"),
        TextDelta(id="text-0", delta=" Yes"),
        TextDelta(id="text-0", delta="."),
    ]
    assert error.kind == "unavailable"
    assert error.message == "error mid-stream: an error was encountered while running the model"


async def test_nothing_listening_is_unavailable(http: httpx.AsyncClient) -> None:
    _, error = await collect_until_error(
        make(http).stream(HI, vision(baseUrl="http://127.0.0.1:9"), NO_OPTIONS)
    )
    assert (error.kind, error.message) == ("unavailable", "ConnectError talking to the vendor")

"""The Anthropic provider: exact request JSON, and streaming against a fake Messages API over real HTTP."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator, Sequence
from typing import Any

import httpx
import msgspec
import pytest

from iris.providers.anthropic import AnthropicProvider, create
from iris.providers.anthropic.provider import PARAMETERS
from iris.providers.errors import ProviderError, UnsupportedPartError
from iris.providers.events import (
    Finish,
    ProviderEvent,
    TextDelta,
    TextEnd,
    TextStart,
    ToolCallArgs,
    ToolCallEnd,
    ToolCallStart,
    Usage,
    Warning,
)
from iris.providers.messages import (
    ImagePart,
    Message,
    RequestOptions,
    ResponseFormat,
    TextPart,
    ToolCallPart,
    ToolResultPart,
)
from iris.providers.spec import Capabilities, ModelSpec, Provider, ProviderContext, ReasoningSupport
from tests.providers.helpers import KEY, WEATHER, events_and_error, user
from tests.support import fake_anthropic as fa
from tests.support.fake_anthropic import FakeAnthropic
from tests.support.http_server import serve_asgi
from tests.support.images import image_bytes

PNG = image_bytes("PNG", (4, 3))
PNG_B64 = base64.b64encode(PNG).decode()
SIGNED_URL = "https://storage.example.com/object/sign/inputs/cat.png?token=eyJhbGciOi.abc"
VISION = ModelSpec(provider="anthropic", model_id="claude-sonnet-4-5", type="vision", supports_tools=True)
TEXT_ONLY = ModelSpec(provider="anthropic", model_id="claude-text", type="text")


def png(**kwargs: Any) -> ImagePart:
    fields: dict[str, Any] = {"mime_type": "image/png", "width": 4, "height": 3, "data": PNG}
    return ImagePart(**(fields | kwargs))


ASK = [user(TextPart(text="What is in this picture?"), png())]


@pytest.fixture
def fake() -> FakeAnthropic:
    return FakeAnthropic(api_key=KEY)


@pytest.fixture
def base_url(fake: FakeAnthropic) -> Iterator[str]:
    with serve_asgi(fake.app) as url:
        yield url


@pytest.fixture
def pure(http: httpx.AsyncClient) -> AnthropicProvider:
    """For ``build_request`` and ``capabilities``: no key, no server needed."""
    return create(ProviderContext(environ={}, http=http))


def live(http: httpx.AsyncClient, base_url: str, **environ: str) -> AnthropicProvider:
    env = {"ANTHROPIC_API_KEY": KEY, "ANTHROPIC_BASE_URL": base_url} | environ
    return create(ProviderContext(environ={k: v for k, v in env.items() if v}, http=http))


async def run(
    provider: AnthropicProvider,
    messages: Sequence[Message] = ASK,
    model: ModelSpec = VISION,
    options: RequestOptions | None = None,
) -> tuple[list[ProviderEvent], ProviderError | None]:
    """Every event the stream yielded, and the error that ended it (if one did)."""
    return await events_and_error(provider.stream(messages, model, options or RequestOptions()))


def texts(body: dict[str, Any]) -> list[str]:
    """Every text the request sends the model (system, text blocks, tool results)."""
    found = [body.get("system", "")]
    for message in body["messages"]:
        for block in message["content"]:
            found += [block[k] for k in ("text", "content") if isinstance(block.get(k), str)]
    return found


# -- module shape ------------------------------------------------------------------------------------


def test_it_is_a_provider(pure: AnthropicProvider) -> None:
    assert isinstance(pure, Provider)
    assert (pure.id, pure.spec_version) == ("anthropic", "4")


def test_capabilities_follow_the_vision_guide(pure: AnthropicProvider) -> None:
    assert pure.capabilities(VISION) == Capabilities(
        vision=True,
        image_mime_types=("image/jpeg", "image/png", "image/gif", "image/webp"),
        max_images=100,
        max_image_bytes=5_242_880,
        image_bytes_measured_on="base64",
        max_image_edge_px=8000,
        recommended_long_edge_px=1568,
        url_fetch="public_https",
        tools=True,
        max_request_bytes=32_000_000,
        reasoning=ReasoningSupport(supported=True, streamed=True, encrypted=True, budget=True),
        parameters=msgspec.structs.replace(PARAMETERS, json_schema=True),  # Sonnet 4.5 takes a schema
        tool_result_images="native",
    )
    assert pure.capabilities(TEXT_ONLY) == Capabilities(vision=False, tools=False, parameters=PARAMETERS)
    no_thinking = ModelSpec(provider="anthropic", model_id="claude-3-5-haiku", type="vision")
    assert pure.capabilities(no_thinking).reasoning.supported is False
    gateway = ModelSpec(provider="anthropic", model_id="c", type="vision", options={"urlFetch": "none"})
    assert pure.capabilities(gateway).url_fetch == "none"


def test_structured_outputs_go_by_model_family_unless_the_row_says(pure: AnthropicProvider) -> None:
    taking = {
        "claude-sonnet-4-5-20250929",
        "claude-haiku-4-5",
        "claude-opus-4-6",
        "claude-sonnet-5",
        "claude-fable-5-1",
        "claude-mythos-preview",
    }
    older = {"claude-sonnet-4-20250514", "claude-opus-4-1", "claude-3-7-sonnet-latest", "claude-3-5-haiku"}
    for model_id in taking | older:
        parameters = pure.capabilities(
            ModelSpec(provider="anthropic", model_id=model_id, type="text")
        ).parameters
        assert (parameters.json_schema, parameters.json_object) == (model_id in taking, False), model_id
    for said in (True, False):
        row = ModelSpec(
            provider="anthropic",
            model_id="claude-opus-4-1",
            type="vision",
            options={"structuredOutputs": said},
        )
        assert pure.capabilities(row).parameters.json_schema is said


# -- build_request -----------------------------------------------------------------------------------


def test_a_json_schema_is_output_config_format(pure: AnthropicProvider) -> None:
    schema = {"type": "object", "properties": {"city": {"type": "string"}}, "additionalProperties": False}
    fmt = ResponseFormat(type="json_schema", schema=schema, name="place", strict=True)
    body = pure.build_request(ASK[:1], VISION, RequestOptions(response_format=fmt))
    assert body["output_config"] == {"format": {"type": "json_schema", "schema": schema}}
    assert "output_config" not in pure.build_request(ASK[:1], VISION, RequestOptions())


def test_system_text_and_inline_png_become_native_blocks(pure: AnthropicProvider) -> None:
    body = pure.build_request(ASK, VISION, RequestOptions(system="Answer in one sentence."))

    assert body == {
        "model": "claude-sonnet-4-5",
        "max_tokens": 1024,
        "stream": True,
        "system": "Answer in one sentence.",
        "messages": [
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "What is in this picture?"},
                    {
                        "type": "image",
                        "source": {"type": "base64", "media_type": "image/png", "data": PNG_B64},
                    },
                ],
            }
        ],
    }
    assert base64.b64decode(body["messages"][0]["content"][1]["source"]["data"]) == PNG
    for text in texts(body):
        assert PNG_B64 not in text
        assert "mime_type" not in text
        assert "image/png" not in text
    assert json.dumps(body).count(PNG_B64) == 1
    assert pure.build_request(ASK, VISION, RequestOptions(system="Answer in one sentence.")) == body


def test_system_messages_join_the_top_level_system(pure: AnthropicProvider) -> None:
    messages = [Message(role="system", parts=(TextPart(text="Be kind."),)), user(TextPart(text="Hi"))]
    body = pure.build_request(messages, VISION, RequestOptions(system="You are Iris."))
    assert body["system"] == "You are Iris.\n\nBe kind."
    assert body["messages"] == [{"role": "user", "content": [{"type": "text", "text": "Hi"}]}]


def test_a_signed_url_becomes_a_url_source(pure: AnthropicProvider) -> None:
    body = pure.build_request([user(png(data=None, url=SIGNED_URL))], VISION, RequestOptions())
    assert body["messages"][0]["content"] == [{"type": "image", "source": {"type": "url", "url": SIGNED_URL}}]


def test_tools_calls_and_results_map_and_alternate(pure: AnthropicProvider) -> None:
    messages = [
        user(TextPart(text="Weather in Paris and Rome?")),
        Message(
            role="assistant",
            parts=(
                TextPart(text="Checking both."),
                ToolCallPart(id="toolu_01", name="get_weather", arguments='{"city": "Paris"}'),
                ToolCallPart(id="toolu_02", name="get_weather", arguments='{"city":"Rome"}'),
            ),
        ),
        Message(
            role="tool", parts=(ToolResultPart(tool_call_id="toolu_01", name="get_weather", content="18C"),)
        ),
        Message(
            role="tool",
            parts=(
                ToolResultPart(tool_call_id="toolu_02", name="get_weather", content="down", is_error=True),
            ),
        ),
        user(TextPart(text="Thanks!")),
    ]
    body = pure.build_request(messages, VISION, RequestOptions(tools=(WEATHER,)))

    assert body["tools"] == [
        {
            "name": "get_weather",
            "description": "Current weather for a city",
            "input_schema": {
                "type": "object",
                "properties": {"city": {"type": "string"}},
                "required": ["city"],
            },
        }
    ]
    assert body["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "Weather in Paris and Rome?"}]},
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Checking both."},
                {"type": "tool_use", "id": "toolu_01", "name": "get_weather", "input": {"city": "Paris"}},
                {"type": "tool_use", "id": "toolu_02", "name": "get_weather", "input": {"city": "Rome"}},
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "toolu_01", "content": "18C"},
                {"type": "tool_result", "tool_use_id": "toolu_02", "content": "down", "is_error": True},
                {"type": "text", "text": "Thanks!"},
            ],
        },
    ]


def test_consecutive_user_turns_merge_and_empty_text_is_not_sent(pure: AnthropicProvider) -> None:
    messages = [
        user(TextPart(text="One")),
        user(TextPart(text=""), png()),
        Message(role="assistant", parts=()),
    ]
    body = pure.build_request(messages, VISION, RequestOptions())
    assert body["messages"] == [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "One"},
                {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG_B64}},
            ],
        }
    ]


def test_options_max_tokens_temperature_and_extras(pure: AnthropicProvider) -> None:
    extra = {"anthropic": {"top_k": 5, "stop_sequences": ["END"], "made_up": 1}, "openai": {"top_k": 9}}
    options = RequestOptions(max_output_tokens=300, temperature=0.2, extra=extra)
    body = pure.build_request(ASK[:1], VISION, options)
    assert {k: v for k, v in body.items() if k != "messages"} == {
        "model": "claude-sonnet-4-5",
        "max_tokens": 300,
        "stream": True,
        "temperature": 0.2,
        "top_k": 5,
        "stop_sequences": ["END"],
    }
    row = ModelSpec(provider="anthropic", model_id="claude-x", type="vision", options={"maxTokens": 4096})
    assert pure.build_request(ASK, row, RequestOptions())["max_tokens"] == 4096
    assert pure.build_request(ASK, row, RequestOptions(max_output_tokens=50))["max_tokens"] == 50


def test_a_tool_call_without_arguments_sends_an_empty_object(pure: AnthropicProvider) -> None:
    call = Message(role="assistant", parts=(ToolCallPart(id="toolu_9", name="now", arguments=""),))
    body = pure.build_request([user(TextPart(text="time?")), call], VISION, RequestOptions())
    assert body["messages"][1]["content"] == [
        {"type": "tool_use", "id": "toolu_9", "name": "now", "input": {}}
    ]


# -- parts it cannot take ----------------------------------------------------------------------------


def test_an_image_to_a_text_model_is_refused(pure: AnthropicProvider) -> None:
    with pytest.raises(UnsupportedPartError) as caught:
        pure.build_request(ASK, TEXT_ONLY, RequestOptions())
    assert (caught.value.provider, caught.value.part_type, caught.value.media_type) == (
        "anthropic",
        "image",
        "image/png",
    )


def test_an_undeclared_mime_type_is_refused(pure: AnthropicProvider) -> None:
    with pytest.raises(UnsupportedPartError) as caught:
        pure.build_request([user(png(mime_type="image/heic"))], VISION, RequestOptions())
    assert caught.value.media_type == "image/heic"


def test_a_url_is_refused_where_url_fetch_is_none(pure: AnthropicProvider) -> None:
    gateway = ModelSpec(provider="anthropic", model_id="c", type="vision", options={"urlFetch": "none"})
    with pytest.raises(UnsupportedPartError, match="no image URLs"):
        pure.build_request([user(png(data=None, url=SIGNED_URL))], gateway, RequestOptions())
    with pytest.raises(UnsupportedPartError, match="https"):
        pure.build_request(
            [user(png(data=None, url="http://plain.example.com/a.png"))], VISION, RequestOptions()
        )


def test_an_image_over_5mb_of_base64_is_refused(pure: AnthropicProvider) -> None:
    pure.build_request([user(png(data=bytes(3_932_160)))], VISION, RequestOptions())  # base64: 5242880
    with pytest.raises(UnsupportedPartError, match="5242880"):
        pure.build_request([user(png(data=bytes(3_932_161)))], VISION, RequestOptions())


def test_tools_for_a_model_without_tools_and_misplaced_parts_are_refused(pure: AnthropicProvider) -> None:
    with pytest.raises(UnsupportedPartError, match="tools"):
        pure.build_request(ASK[:0], TEXT_ONLY, RequestOptions(tools=(WEATHER,)))
    stray = Message(role="user", parts=(ToolCallPart(id="t", name="n", arguments="{}"),))
    with pytest.raises(UnsupportedPartError, match="user message"):
        pure.build_request([stray], VISION, RequestOptions())
    bad_args = Message(role="assistant", parts=(ToolCallPart(id="t", name="n", arguments="[1]"),))
    with pytest.raises(UnsupportedPartError, match="JSON object"):
        pure.build_request([bad_args], VISION, RequestOptions())


# -- stream ------------------------------------------------------------------------------------------


async def test_a_text_answer_streams_in_order(
    fake: FakeAnthropic, base_url: str, http: httpx.AsyncClient
) -> None:
    fake.reply(
        fa.text_answer(["The picture", " shows a", " red square."], input_tokens=1534, output_tokens=9)
    )
    provider = live(http, base_url)
    options = RequestOptions(system="Answer in one sentence.", max_output_tokens=200)

    events, error = await run(provider, options=options)

    assert error is None
    assert events == [
        TextStart(id="text-0"),
        TextDelta(id="text-0", delta="The picture"),
        TextDelta(id="text-0", delta=" shows a"),
        TextDelta(id="text-0", delta=" red square."),
        TextEnd(id="text-0"),
        Usage(input_tokens=1534, output_tokens=9, cached_input_tokens=0),
        Finish(reason="stop"),
    ]
    [request] = fake.requests
    assert (request.method, request.path) == ("POST", "/v1/messages")
    assert request.json == provider.build_request(ASK, VISION, options)
    assert request.json["messages"][0]["content"][1] == {
        "type": "image",
        "source": {"type": "base64", "media_type": "image/png", "data": PNG_B64},
    }
    assert request.headers["x-api-key"] == KEY
    assert request.headers["anthropic-version"] == "2023-06-01"
    assert "authorization" not in request.headers


async def test_tool_calls_stream_with_ids_names_and_arguments(
    fake: FakeAnthropic, base_url: str, http: httpx.AsyncClient
) -> None:
    fake.reply(
        [
            fa.message_start(412),
            *fa.text_block(0, ["Let me check."]),
            fa.PING,
            *fa.tool_block(1, "toolu_01A09q90qw90lq917835lq9", "get_weather", ['{"city"', ': "Par', 'is"}']),
            *fa.tool_block(2, "toolu_01B", "now", []),
            *fa.message_end("tool_use", 88),
        ]
    )
    events, error = await run(live(http, base_url), options=RequestOptions(tools=(WEATHER,)))

    assert error is None
    call = "toolu_01A09q90qw90lq917835lq9"
    assert events == [
        TextStart(id="text-0"),
        TextDelta(id="text-0", delta="Let me check."),
        TextEnd(id="text-0"),
        ToolCallStart(id=call, name="get_weather"),
        ToolCallArgs(id=call, delta='{"city"'),
        ToolCallArgs(id=call, delta=': "Par'),
        ToolCallArgs(id=call, delta='is"}'),
        ToolCallEnd(id=call),
        ToolCallStart(id="toolu_01B", name="now"),
        ToolCallArgs(id="toolu_01B", delta="{}"),
        ToolCallEnd(id="toolu_01B"),
        Usage(input_tokens=412, output_tokens=88, cached_input_tokens=0),
        Finish(reason="tool_calls"),
    ]
    args = "".join(e.delta for e in events if isinstance(e, ToolCallArgs) and e.id == call)
    assert json.loads(args) == {"city": "Paris"}
    assert fake.requests[0].json["tools"][0]["name"] == "get_weather"


@pytest.mark.parametrize(
    ("stop_reason", "reason"),
    [
        ("end_turn", "stop"),
        ("stop_sequence", "stop"),
        ("max_tokens", "length"),
        ("tool_use", "tool_calls"),
        ("refusal", "content_filter"),
        ("pause_turn", "other"),
    ],
)
async def test_stop_reasons_map(
    fake: FakeAnthropic, base_url: str, http: httpx.AsyncClient, stop_reason: str, reason: str
) -> None:
    sequence = "END" if stop_reason == "stop_sequence" else None
    fake.reply(fa.text_answer(["x"], stop_reason=stop_reason, stop_sequence=sequence))
    events, error = await run(live(http, base_url))
    assert error is None
    assert events[-1] == Finish(reason=reason, stop_sequence=sequence)  # type: ignore[arg-type]
    assert sum(isinstance(e, Finish) for e in events) == 1


async def test_usage_counts_cached_prompt_tokens(
    fake: FakeAnthropic, base_url: str, http: httpx.AsyncClient
) -> None:
    name, start = fa.message_start(3)
    start["message"]["usage"] |= {"cache_creation_input_tokens": 200, "cache_read_input_tokens": 1000}
    fake.reply([(name, start), *fa.text_block(0, ["ok"]), *fa.message_end("end_turn", 2)])
    events, _ = await run(live(http, base_url))
    assert events[-2:] == [
        Usage(input_tokens=1203, output_tokens=2, cached_input_tokens=1000),
        Finish(reason="stop"),
    ]


async def test_base_url_from_the_model_row_wins_over_the_environment(
    fake: FakeAnthropic, base_url: str, http: httpx.AsyncClient
) -> None:
    model = ModelSpec(
        provider="anthropic", model_id="claude-x", type="vision", options={"baseUrl": base_url + "/"}
    )
    provider = live(http, "http://127.0.0.1:9")  # nothing listens there
    events, error = await run(provider, model=model)
    assert error is None
    assert events[-1] == Finish(reason="stop")
    assert fake.requests[0].json["model"] == "claude-x"


async def test_unknown_extras_are_reported_as_a_warning(
    fake: FakeAnthropic, base_url: str, http: httpx.AsyncClient
) -> None:
    options = RequestOptions(extra={"anthropic": {"top_k": 3, "zeta": 1, "alpha": 2}})
    events, error = await run(live(http, base_url), options=options)
    assert error is None
    assert events[0] == Warning(kind="unsupported", message="ignored anthropic options: alpha, zeta")
    assert fake.requests[0].json["top_k"] == 3
    assert "zeta" not in fake.requests[0].json


async def test_an_unsupported_part_fails_before_any_request(
    fake: FakeAnthropic, base_url: str, http: httpx.AsyncClient
) -> None:
    with pytest.raises(UnsupportedPartError):
        await run(live(http, base_url), model=TEXT_ONLY)
    assert fake.requests == []


# -- errors ------------------------------------------------------------------------------------------


async def test_a_wrong_key_is_auth_and_never_echoed(
    fake: FakeAnthropic, base_url: str, http: httpx.AsyncClient
) -> None:
    events, error = await run(live(http, base_url, ANTHROPIC_API_KEY="sk-wrong-456"))
    assert events == []
    assert error is not None
    assert (error.kind, error.status, error.provider) == ("auth", 401, "anthropic")
    assert "authentication_error" in error.message
    assert "sk-wrong-456" not in str(error)
    assert fake.requests[0].headers["x-api-key"] == "sk-wrong-456"


async def test_a_missing_key_is_auth_before_any_request(
    fake: FakeAnthropic, base_url: str, http: httpx.AsyncClient
) -> None:
    events, error = await run(live(http, base_url, ANTHROPIC_API_KEY=""))
    assert error is not None
    assert (error.kind, error.status) == ("auth", None)
    assert "ANTHROPIC_API_KEY" in error.message
    assert events == []
    assert fake.requests == []


async def test_429_is_rate_limit_with_retry_after(
    fake: FakeAnthropic, base_url: str, http: httpx.AsyncClient
) -> None:
    fake.reply_error(
        429,
        "rate_limit_error",
        "This request would exceed the rate limit for your organization of 50 requests per minute.",
        headers=[("retry-after", "17")],
    )
    _, error = await run(live(http, base_url))
    assert error is not None
    assert (error.kind, error.status, error.retry_after) == ("rate_limit", 429, 17.0)


async def test_could_not_download_the_image_url(
    fake: FakeAnthropic, base_url: str, http: httpx.AsyncClient
) -> None:
    fake.reply_error(
        400, "invalid_request_error", "Unable to download the file. Please verify the URL and try again."
    )
    _, error = await run(live(http, base_url), [user(png(data=None, url=SIGNED_URL))])
    assert error is not None
    assert (error.kind, error.status) == ("could_not_fetch_image", 400)


async def test_other_400s_stay_bad_request(
    fake: FakeAnthropic, base_url: str, http: httpx.AsyncClient
) -> None:
    field = "messages.0.content.1.image.source.base64.data"
    message = f"{field}: Image does not match the provided media type image/png"
    fake.reply_error(400, "invalid_request_error", message)
    _, error = await run(live(http, base_url))
    assert error is not None
    assert (error.kind, error.status) == ("bad_request", 400)


@pytest.mark.parametrize(("status", "error_type"), [(500, "api_error"), (529, "overloaded_error")])
async def test_server_errors_are_unavailable(
    fake: FakeAnthropic, base_url: str, http: httpx.AsyncClient, status: int, error_type: str
) -> None:
    fake.reply_error(status, error_type, "Internal server error" if status == 500 else "Overloaded")
    _, error = await run(live(http, base_url))
    assert error is not None
    assert (error.kind, error.status) == ("unavailable", status)


PARTIAL = [fa.message_start(10), *fa.text_block(0, ["Half", " an answer"])[:3]]
PARTIAL_EVENTS = [
    TextStart(id="text-0"),
    TextDelta(id="text-0", delta="Half"),
    TextDelta(id="text-0", delta=" an answer"),
]


async def test_a_cut_connection_is_unavailable_after_the_streamed_events(
    fake: FakeAnthropic, base_url: str, http: httpx.AsyncClient
) -> None:
    fake.reply(PARTIAL, end="cut")
    events, error = await run(live(http, base_url))
    assert events == PARTIAL_EVENTS
    assert error is not None
    assert (error.kind, error.message) == ("unavailable", "RemoteProtocolError talking to the vendor")


async def test_a_stream_without_message_stop_is_unavailable(
    fake: FakeAnthropic, base_url: str, http: httpx.AsyncClient
) -> None:
    fake.reply([*PARTIAL, fa.text_block(0, [])[-1]], end="eof")
    events, error = await run(live(http, base_url))
    assert events == [*PARTIAL_EVENTS, TextEnd(id="text-0")]
    assert error is not None
    assert (error.kind, error.message) == ("unavailable", "the stream ended before message_stop")


async def test_malformed_json_is_unavailable(
    fake: FakeAnthropic, base_url: str, http: httpx.AsyncClient
) -> None:
    fake.reply(PARTIAL, raw=[b'event: content_block_delta\ndata: {"type": "content_block_delta", "ind\n\n'])
    events, error = await run(live(http, base_url))
    assert events == PARTIAL_EVENTS
    assert error is not None
    assert error.kind == "unavailable"
    assert "malformed" in error.message


@pytest.mark.parametrize(
    ("error_type", "kind"),
    [("overloaded_error", "unavailable"), ("rate_limit_error", "rate_limit"), ("api_error", "unavailable")],
)
async def test_an_error_event_mid_stream(
    fake: FakeAnthropic, base_url: str, http: httpx.AsyncClient, error_type: str, kind: str
) -> None:
    fake.reply([*PARTIAL, fa.error_event(error_type, "Overloaded")])
    events, error = await run(live(http, base_url))
    assert events == PARTIAL_EVENTS
    assert error is not None
    assert (error.kind, error.message, error.status) == (kind, f"{error_type}: Overloaded", None)


async def test_an_event_of_the_wrong_shape_is_unavailable(
    fake: FakeAnthropic, base_url: str, http: httpx.AsyncClient
) -> None:
    broken = (
        "content_block_start",
        {"type": "content_block_start", "index": 1, "content_block": {"type": "tool_use"}},
    )
    fake.reply([*PARTIAL, broken])
    events, error = await run(live(http, base_url))
    assert events == PARTIAL_EVENTS
    assert error is not None
    assert (error.kind, error.message) == ("unavailable", "unexpected 'content_block_start' event")

"""The Gemini provider: exact request JSON, and streaming against a fake Gemini API over real HTTP."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator, Sequence
from typing import Any

import httpx
import pytest

from iris.providers.errors import ProviderError, UnsupportedPartError
from iris.providers.events import (
    Finish,
    ProviderEvent,
    ReasoningDelta,
    ReasoningEnd,
    ReasoningStart,
    TextDelta,
    TextEnd,
    TextStart,
    ToolCallArgs,
    ToolCallEnd,
    ToolCallStart,
    Usage,
    Warning,
)
from iris.providers.gemini import GeminiProvider, create, takes_external_urls
from iris.providers.gemini.provider import AUDIO, PARAMETERS, PDF
from iris.providers.messages import (
    ImagePart,
    Message,
    RequestOptions,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    ToolSpec,
)
from iris.providers.spec import Capabilities, ModelSpec, Provider, ProviderContext, ReasoningSupport
from tests.providers.helpers import KEY, events_and_error, user
from tests.support import fake_gemini as fg
from tests.support.fake_gemini import FakeGemini
from tests.support.http_server import serve_asgi
from tests.support.images import image_bytes

PNG = image_bytes("PNG", (4, 3))
PNG_B64 = base64.b64encode(PNG).decode()
SIGNED_URL = "https://storage.example.com/object/sign/inputs/cat.png?token=eyJhbGciOi.abc"
FLASH = ModelSpec(provider="gemini", model_id="gemini-2.5-flash", type="multimodal", supports_tools=True)
OLD_FLASH = ModelSpec(provider="gemini", model_id="gemini-2.0-flash", type="vision")
GEMINI_3 = ModelSpec(
    provider="gemini", model_id="gemini-3-pro-preview", type="multimodal", supports_tools=True
)
TEXT_ONLY = ModelSpec(provider="gemini", model_id="gemma-3-27b-it", type="text")
WEATHER = ToolSpec(
    name="get_weather",
    description="Current weather for a city",
    parameters={
        "type": "object",
        "properties": {"city": {"type": "string"}},
        "required": ["city"],
        "additionalProperties": False,
    },
)
RESPONSE_ID = fg.RESPONSE_ID


def png(**kwargs: Any) -> ImagePart:
    fields: dict[str, Any] = {"mime_type": "image/png", "width": 4, "height": 3, "data": PNG}
    return ImagePart(**(fields | kwargs))


ASK = [user(TextPart(text="What is in this picture?"), png())]
TOOL_TURNS = [
    user(TextPart(text="Weather in Paris and Rome?")),
    Message(
        role="assistant",
        parts=(
            TextPart(text="Checking both."),
            ToolCallPart(id=f"{RESPONSE_ID}-call-0", name="get_weather", arguments='{"city": "Paris"}'),
            ToolCallPart(id=f"{RESPONSE_ID}-call-1", name="get_weather", arguments='{"city":"Rome"}'),
        ),
    ),
    Message(
        role="tool",
        parts=(ToolResultPart(tool_call_id=f"{RESPONSE_ID}-call-0", name="get_weather", content="18C"),),
    ),
    Message(
        role="tool",
        parts=(
            ToolResultPart(
                tool_call_id=f"{RESPONSE_ID}-call-1", name="get_weather", content="down", is_error=True
            ),
        ),
    ),
    user(TextPart(text="Thanks!")),
]


@pytest.fixture
def fake() -> FakeGemini:
    return FakeGemini(api_key=KEY)


@pytest.fixture
def base_url(fake: FakeGemini) -> Iterator[str]:
    with serve_asgi(fake.app) as url:
        yield url


@pytest.fixture
def pure(http: httpx.AsyncClient) -> GeminiProvider:
    """For ``build_request`` and ``capabilities``: no key, no server needed."""
    return create(ProviderContext(environ={}, http=http))


def live(http: httpx.AsyncClient, base_url: str, **environ: str) -> GeminiProvider:
    env = {"GEMINI_API_KEY": KEY, "GEMINI_BASE_URL": base_url} | environ
    return create(ProviderContext(environ={k: v for k, v in env.items() if v}, http=http))


async def run(
    provider: GeminiProvider,
    messages: Sequence[Message] = ASK,
    model: ModelSpec = FLASH,
    options: RequestOptions | None = None,
) -> tuple[list[ProviderEvent], ProviderError | None]:
    """Every event the stream yielded, and the error that ended it (if one did)."""
    return await events_and_error(provider.stream(messages, model, options or RequestOptions()))


def texts(body: dict[str, Any]) -> list[str]:
    """Every text the request sends the model (system instruction and text parts)."""
    system = body.get("systemInstruction", {"parts": []})["parts"]
    return [p["text"] for c in [*body["contents"], {"parts": system}] for p in c["parts"] if "text" in p]


# -- module shape ------------------------------------------------------------------------------------


def test_it_is_a_provider(pure: GeminiProvider) -> None:
    assert isinstance(pure, Provider)
    assert (pure.id, pure.spec_version) == ("gemini", "4")


def test_capabilities(pure: GeminiProvider) -> None:
    assert pure.capabilities(FLASH) == Capabilities(
        vision=True,
        image_mime_types=("image/png", "image/jpeg", "image/webp", "image/heic", "image/heif"),
        max_images=900,
        max_image_bytes=20 * 1024 * 1024,
        image_bytes_measured_on="raw",
        max_image_edge_px=None,
        recommended_long_edge_px=None,
        url_fetch="public_https",
        tools=True,
        max_request_bytes=20_000_000,
        reasoning=ReasoningSupport(supported=True, streamed=True, encrypted=True, budget=True),
        parameters=PARAMETERS,
        documents=PDF,  # a multimodal row reads PDFs and hears audio
        audio=AUDIO,
    )
    assert pure.capabilities(OLD_FLASH).reasoning.supported is False
    assert pure.capabilities(OLD_FLASH).url_fetch == "none"
    assert pure.capabilities(OLD_FLASH).tools is False
    assert pure.capabilities(TEXT_ONLY) == Capabilities(vision=False, tools=False, parameters=PARAMETERS)
    forced = ModelSpec(
        provider="gemini", model_id="gemini-2.0-flash", type="vision", options={"urlFetch": "public_https"}
    )
    assert pure.capabilities(forced).url_fetch == "public_https"
    prefixed = ModelSpec(provider="gemini", model_id="models/gemini-2.5-pro", type="vision")
    assert pure.capabilities(prefixed).url_fetch == "public_https"


@pytest.mark.parametrize(
    ("name", "takes"),
    [
        ("gemini-1.5-pro", False),
        ("gemini-2.0-flash", False),
        ("gemini-2.0-flash-lite-001", False),
        ("gemini-pro-vision", False),
        ("gemma-3-27b-it", False),
        ("gemini-2.5-flash", True),
        ("gemini-2.5-flash-lite", True),
        ("gemini-3-pro-preview", True),
        ("gemini-3.1-flash", True),
        ("gemini-flash-latest", True),
    ],
)
def test_which_models_fetch_external_urls(name: str, takes: bool) -> None:
    assert takes_external_urls(name) is takes


# -- build_request -----------------------------------------------------------------------------------


def test_system_text_and_inline_png_become_native_parts(pure: GeminiProvider) -> None:
    body = pure.build_request(ASK, FLASH, RequestOptions(system="Answer in one sentence."))

    assert body == {
        "contents": [
            {
                "role": "user",
                "parts": [
                    {"text": "What is in this picture?"},
                    {"inlineData": {"mimeType": "image/png", "data": PNG_B64}},
                ],
            }
        ],
        "systemInstruction": {"parts": [{"text": "Answer in one sentence."}]},
    }
    assert base64.b64decode(body["contents"][0]["parts"][1]["inlineData"]["data"]) == PNG
    for text in texts(body):
        assert PNG_B64 not in text
        assert "mimeType" not in text
        assert "image/png" not in text
    assert json.dumps(body).count(PNG_B64) == 1
    assert pure.build_request(ASK, FLASH, RequestOptions(system="Answer in one sentence.")) == body


def test_system_messages_join_the_system_instruction(pure: GeminiProvider) -> None:
    messages = [Message(role="system", parts=(TextPart(text="Be kind."),)), user(TextPart(text="Hi"))]
    body = pure.build_request(messages, FLASH, RequestOptions(system="You are Iris."))
    assert body["systemInstruction"] == {"parts": [{"text": "You are Iris.\n\nBe kind."}]}
    assert body["contents"] == [{"role": "user", "parts": [{"text": "Hi"}]}]


def test_a_signed_url_becomes_file_data(pure: GeminiProvider) -> None:
    body = pure.build_request([user(png(data=None, url=SIGNED_URL))], FLASH, RequestOptions())
    assert body["contents"][0]["parts"] == [{"fileData": {"mimeType": "image/png", "fileUri": SIGNED_URL}}]


def test_tools_calls_and_results_map_by_name(pure: GeminiProvider) -> None:
    body = pure.build_request(TOOL_TURNS, FLASH, RequestOptions(tools=(WEATHER,)))

    assert body["tools"] == [
        {
            "functionDeclarations": [
                {
                    "name": "get_weather",
                    "description": "Current weather for a city",
                    "parametersJsonSchema": {
                        "type": "object",
                        "properties": {"city": {"type": "string"}},
                        "required": ["city"],
                        "additionalProperties": False,
                    },
                }
            ]
        }
    ]
    assert body["contents"] == [
        {"role": "user", "parts": [{"text": "Weather in Paris and Rome?"}]},
        {
            "role": "model",
            "parts": [
                {"text": "Checking both."},
                {"functionCall": {"name": "get_weather", "args": {"city": "Paris"}}},
                {"functionCall": {"name": "get_weather", "args": {"city": "Rome"}}},
            ],
        },
        {
            "role": "user",
            "parts": [
                {"functionResponse": {"name": "get_weather", "response": {"output": "18C"}}},
                {"functionResponse": {"name": "get_weather", "response": {"error": "down"}}},
            ],
        },
        {"role": "user", "parts": [{"text": "Thanks!"}]},
    ]


def test_gemini_3_replays_calls_with_the_documented_signature_stand_in(pure: GeminiProvider) -> None:
    body = pure.build_request(TOOL_TURNS, GEMINI_3, RequestOptions(tools=(WEATHER,)))
    assert body["contents"][1]["parts"][1:] == [
        {
            "functionCall": {"name": "get_weather", "args": {"city": "Paris"}},
            "thoughtSignature": "skip_thought_signature_validator",
        },
        {
            "functionCall": {"name": "get_weather", "args": {"city": "Rome"}},
            "thoughtSignature": "skip_thought_signature_validator",
        },
    ]


def test_options_max_tokens_temperature_and_extras(pure: GeminiProvider) -> None:
    safety = [{"category": "HARM_CATEGORY_HARASSMENT", "threshold": "BLOCK_ONLY_HIGH"}]
    extra = {
        "gemini": {"mediaResolution": "MEDIA_RESOLUTION_LOW", "topK": 4, "safetySettings": safety, "nope": 1}
    }
    options = RequestOptions(max_output_tokens=300, temperature=0.2, extra=extra)
    body = pure.build_request(ASK, FLASH, options)
    assert {k: v for k, v in body.items() if k != "contents"} == {
        "generationConfig": {
            "maxOutputTokens": 300,
            "temperature": 0.2,
            "mediaResolution": "MEDIA_RESOLUTION_LOW",
            "topK": 4,
        },
        "safetySettings": safety,
    }
    row = ModelSpec(provider="gemini", model_id="gemini-2.5-pro", type="vision", options={"maxTokens": 4096})
    assert pure.build_request(ASK, row, RequestOptions())["generationConfig"] == {"maxOutputTokens": 4096}
    assert "generationConfig" not in pure.build_request(ASK, FLASH, RequestOptions())


# -- parts it cannot take ----------------------------------------------------------------------------


def test_an_image_to_a_text_model_is_refused(pure: GeminiProvider) -> None:
    with pytest.raises(UnsupportedPartError) as caught:
        pure.build_request(ASK, TEXT_ONLY, RequestOptions())
    assert (caught.value.provider, caught.value.part_type, caught.value.media_type) == (
        "gemini",
        "image",
        "image/png",
    )


def test_an_undeclared_mime_type_is_refused(pure: GeminiProvider) -> None:
    with pytest.raises(UnsupportedPartError) as caught:
        pure.build_request([user(png(mime_type="image/gif"))], FLASH, RequestOptions())
    assert caught.value.media_type == "image/gif"


def test_a_url_is_refused_where_url_fetch_is_none(pure: GeminiProvider) -> None:
    with pytest.raises(UnsupportedPartError, match=r"gemini-2\.0-flash takes no external image URLs"):
        pure.build_request([user(png(data=None, url=SIGNED_URL))], OLD_FLASH, RequestOptions())
    with pytest.raises(UnsupportedPartError, match="https"):
        pure.build_request(
            [user(png(data=None, url="http://plain.example.com/a.png"))], FLASH, RequestOptions()
        )


def test_an_inline_image_over_20mb_is_refused(pure: GeminiProvider) -> None:
    pure.build_request([user(png(data=bytes(20 * 1024 * 1024)))], FLASH, RequestOptions())
    with pytest.raises(UnsupportedPartError, match="20971521 bytes"):
        pure.build_request([user(png(data=bytes(20 * 1024 * 1024 + 1)))], FLASH, RequestOptions())


def test_tools_for_a_model_without_tools_and_misplaced_parts_are_refused(pure: GeminiProvider) -> None:
    with pytest.raises(UnsupportedPartError, match="tools"):
        pure.build_request([user(TextPart(text="hi"))], OLD_FLASH, RequestOptions(tools=(WEATHER,)))
    stray = Message(role="assistant", parts=(ToolResultPart(tool_call_id="t", name="n", content="x"),))
    with pytest.raises(UnsupportedPartError, match="assistant message"):
        pure.build_request([stray], FLASH, RequestOptions())


# -- stream ------------------------------------------------------------------------------------------


async def test_a_text_answer_streams_in_order(
    fake: FakeGemini, base_url: str, http: httpx.AsyncClient
) -> None:
    fake.reply(
        fg.text_answer(["The picture", " shows a", " red square."], prompt_tokens=266, candidate_tokens=9)
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
        Usage(input_tokens=266, output_tokens=9),
        Finish(reason="stop"),
    ]
    [request] = fake.requests
    assert (request.method, request.path, request.query) == (
        "POST",
        "/v1beta/models/gemini-2.5-flash:streamGenerateContent",
        "alt=sse",
    )
    assert request.json == provider.build_request(ASK, FLASH, options)
    assert request.json["contents"][0]["parts"][1] == {
        "inlineData": {"mimeType": "image/png", "data": PNG_B64}
    }
    assert request.headers["x-goog-api-key"] == KEY
    assert KEY not in request.query
    assert "authorization" not in request.headers


async def test_tool_calls_stream_with_synthesised_ids(
    fake: FakeGemini, base_url: str, http: httpx.AsyncClient
) -> None:
    fake.reply(
        [
            fg.chunk([{"text": "Checking "}], candidate_tokens=2),
            fg.chunk([{"text": "both."}], candidate_tokens=3),
            fg.chunk(
                [
                    fg.function_call("get_weather", {"city": "Paris"}),
                    fg.function_call("get_weather", {"city": "Rome"}),
                    fg.function_call("now", {}),
                ],
                finish="STOP",
                prompt_tokens=95,
                candidate_tokens=31,
            ),
        ]
    )
    events, error = await run(live(http, base_url), options=RequestOptions(tools=(WEATHER,)))

    assert error is None
    first, second, third = (f"{RESPONSE_ID}-call-{i}" for i in range(3))
    assert events == [
        TextStart(id="text-0"),
        TextDelta(id="text-0", delta="Checking "),
        TextDelta(id="text-0", delta="both."),
        TextEnd(id="text-0"),
        ToolCallStart(id=first, name="get_weather"),
        ToolCallArgs(id=first, delta='{"city":"Paris"}'),
        ToolCallEnd(id=first),
        ToolCallStart(id=second, name="get_weather"),
        ToolCallArgs(id=second, delta='{"city":"Rome"}'),
        ToolCallEnd(id=second),
        ToolCallStart(id=third, name="now"),
        ToolCallArgs(id=third, delta="{}"),
        ToolCallEnd(id=third),
        Usage(input_tokens=95, output_tokens=31),
        Finish(reason="tool_calls"),
    ]
    assert fake.requests[0].json["tools"][0]["functionDeclarations"][0]["name"] == "get_weather"


async def test_a_vendor_call_id_is_kept(fake: FakeGemini, base_url: str, http: httpx.AsyncClient) -> None:
    call = {"functionCall": {"id": "fc-7", "name": "now", "args": {"tz": "UTC"}}}
    fake.reply([fg.chunk([call], finish="STOP", candidate_tokens=4)])
    events, _ = await run(live(http, base_url))
    assert events[:3] == [
        ToolCallStart(id="fc-7", name="now"),
        ToolCallArgs(id="fc-7", delta='{"tz":"UTC"}'),
        ToolCallEnd(id="fc-7"),
    ]


@pytest.mark.parametrize(
    ("finish", "reason"),
    [
        ("STOP", "stop"),
        ("MAX_TOKENS", "length"),
        ("SAFETY", "content_filter"),
        ("RECITATION", "content_filter"),
        ("PROHIBITED_CONTENT", "content_filter"),
        ("MALFORMED_FUNCTION_CALL", "error"),
        ("OTHER", "other"),
        ("FINISH_REASON_UNSPECIFIED", "other"),
    ],
)
async def test_finish_reasons_map(
    fake: FakeGemini, base_url: str, http: httpx.AsyncClient, finish: str, reason: str
) -> None:
    fake.reply(fg.text_answer(["x"], finish=finish))
    events, error = await run(live(http, base_url))
    assert error is None
    assert events[-1] == Finish(reason=reason)  # type: ignore[arg-type]
    assert sum(isinstance(e, Finish) for e in events) == 1


async def test_a_blocked_prompt_finishes_as_content_filter(
    fake: FakeGemini, base_url: str, http: httpx.AsyncClient
) -> None:
    fake.reply([{"promptFeedback": {"blockReason": "SAFETY"}, "usageMetadata": fg.usage(7, None)}])
    events, error = await run(live(http, base_url))
    assert error is None
    assert events == [Usage(input_tokens=7, output_tokens=None), Finish(reason="content_filter")]


async def test_thoughts_are_reasoning_not_text_and_count_as_output(
    fake: FakeGemini, base_url: str, http: httpx.AsyncClient
) -> None:
    fake.reply(
        [
            fg.chunk([{"text": "Let me think about squares.", "thought": True}], thoughts=40),
            fg.chunk(
                [{"text": "A square."}], finish="STOP", prompt_tokens=10, candidate_tokens=3, thoughts=40
            ),
        ]
    )
    events, _ = await run(live(http, base_url))
    assert events == [
        ReasoningStart(id="thought-0"),
        ReasoningDelta(id="thought-0", delta="Let me think about squares."),
        ReasoningEnd(id="thought-0"),
        TextStart(id="text-0"),
        TextDelta(id="text-0", delta="A square."),
        TextEnd(id="text-0"),
        Usage(input_tokens=10, output_tokens=43, reasoning_tokens=40),
        Finish(reason="stop"),
    ]


async def test_base_url_from_the_model_row_wins_and_the_models_prefix_is_dropped(
    fake: FakeGemini, base_url: str, http: httpx.AsyncClient
) -> None:
    model = ModelSpec(
        provider="gemini", model_id="models/gemini-2.5-pro", type="vision", options={"baseUrl": base_url}
    )
    events, error = await run(live(http, "http://127.0.0.1:9"), model=model)
    assert error is None
    assert events[-1] == Finish(reason="stop")
    assert fake.requests[0].path == "/v1beta/models/gemini-2.5-pro:streamGenerateContent"


async def test_unknown_extras_are_reported_as_a_warning(
    fake: FakeGemini, base_url: str, http: httpx.AsyncClient
) -> None:
    options = RequestOptions(extra={"gemini": {"topP": 0.5, "zeta": 1, "alpha": 2}})
    events, error = await run(live(http, base_url), options=options)
    assert error is None
    assert events[0] == Warning(kind="unsupported", message="ignored gemini options: alpha, zeta")
    assert fake.requests[0].json["generationConfig"] == {"topP": 0.5}


async def test_an_unsupported_part_fails_before_any_request(
    fake: FakeGemini, base_url: str, http: httpx.AsyncClient
) -> None:
    with pytest.raises(UnsupportedPartError):
        await run(live(http, base_url), [user(png(data=None, url=SIGNED_URL))], model=OLD_FLASH)
    assert fake.requests == []


# -- errors ------------------------------------------------------------------------------------------


async def test_401_is_auth(fake: FakeGemini, base_url: str, http: httpx.AsyncClient) -> None:
    message = "Request had invalid authentication credentials. Expected OAuth 2 access token."
    fake.reply_error(401, fg.error_body(401, "UNAUTHENTICATED", message))
    _, error = await run(live(http, base_url))
    assert error is not None
    assert (error.kind, error.status, error.provider) == ("auth", 401, "gemini")


async def test_a_wrong_key_is_googles_400_api_key_invalid_and_still_auth(
    fake: FakeGemini, base_url: str, http: httpx.AsyncClient
) -> None:
    events, error = await run(live(http, base_url, GEMINI_API_KEY="sk-wrong-456"))
    assert events == []
    assert error is not None
    assert (error.kind, error.status) == ("auth", 400)
    assert "API key not valid" in error.message
    assert "sk-wrong-456" not in str(error)
    assert fake.requests[0].headers["x-goog-api-key"] == "sk-wrong-456"
    assert "sk-wrong-456" not in fake.requests[0].query


async def test_a_missing_key_is_auth_before_any_request(
    fake: FakeGemini, base_url: str, http: httpx.AsyncClient
) -> None:
    events, error = await run(live(http, base_url, GEMINI_API_KEY=""))
    assert error is not None
    assert (error.kind, error.status) == ("auth", None)
    assert "GEMINI_API_KEY" in error.message
    assert events == []
    assert fake.requests == []


QUOTA = "You exceeded your current quota, please check your plan and billing details."


async def test_429_is_rate_limit_with_retry_after(
    fake: FakeGemini, base_url: str, http: httpx.AsyncClient
) -> None:
    fake.reply_error(429, fg.error_body(429, "RESOURCE_EXHAUSTED", QUOTA), headers=[("retry-after", "12")])
    _, error = await run(live(http, base_url))
    assert error is not None
    assert (error.kind, error.status, error.retry_after) == ("rate_limit", 429, 12.0)


async def test_429_retry_info_stands_in_for_a_missing_header(
    fake: FakeGemini, base_url: str, http: httpx.AsyncClient
) -> None:
    details: list[dict[str, Any]] = [
        {
            "@type": "type.googleapis.com/google.rpc.Help",
            "links": [{"description": "Learn more", "url": "x"}],
        },
        {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "37s"},
    ]
    fake.reply_error(429, fg.error_body(429, "RESOURCE_EXHAUSTED", QUOTA, details))
    _, error = await run(live(http, base_url))
    assert error is not None
    assert (error.kind, error.retry_after) == ("rate_limit", 37.0)


@pytest.mark.parametrize(
    "message",
    [
        f"Invalid or unsupported file uri: {SIGNED_URL}",
        "Cannot fetch content from the provided URL.",
    ],
)
async def test_could_not_fetch_the_image_url(
    fake: FakeGemini, base_url: str, http: httpx.AsyncClient, message: str
) -> None:
    fake.reply_error(400, fg.error_body(400, "INVALID_ARGUMENT", message))
    _, error = await run(live(http, base_url), [user(png(data=None, url=SIGNED_URL))])
    assert error is not None
    assert (error.kind, error.status) == ("could_not_fetch_image", 400)
    assert "token=" not in str(error)  # the signed URL's signature stays out of logs


async def test_other_400s_stay_bad_request(fake: FakeGemini, base_url: str, http: httpx.AsyncClient) -> None:
    fake.reply_error(400, fg.error_body(400, "INVALID_ARGUMENT", "Request contains an invalid argument."))
    _, error = await run(live(http, base_url))
    assert error is not None
    assert (error.kind, error.status) == ("bad_request", 400)


@pytest.mark.parametrize(
    ("status", "grpc", "message"),
    [
        (500, "INTERNAL", "An internal error has occurred. Please retry or report in https://developers.generativeai.google/guide/troubleshooting"),
        (503, "UNAVAILABLE", "The model is overloaded. Please try again later."),
    ],
)  # fmt: skip
async def test_server_errors_are_unavailable(
    fake: FakeGemini, base_url: str, http: httpx.AsyncClient, status: int, grpc: str, message: str
) -> None:
    fake.reply_error(status, fg.error_body(status, grpc, message))
    _, error = await run(live(http, base_url))
    assert error is not None
    assert (error.kind, error.status) == ("unavailable", status)


PARTIAL = [
    fg.chunk([{"text": "Half"}], candidate_tokens=1),
    fg.chunk([{"text": " an answer"}], candidate_tokens=3),
]
PARTIAL_EVENTS = [
    TextStart(id="text-0"),
    TextDelta(id="text-0", delta="Half"),
    TextDelta(id="text-0", delta=" an answer"),
]


async def test_a_cut_connection_is_unavailable_after_the_streamed_events(
    fake: FakeGemini, base_url: str, http: httpx.AsyncClient
) -> None:
    fake.reply(PARTIAL, end="cut")
    events, error = await run(live(http, base_url))
    assert events == PARTIAL_EVENTS
    assert error is not None
    assert (error.kind, error.message) == ("unavailable", "RemoteProtocolError talking to the vendor")


async def test_a_stream_without_finish_reason_is_unavailable(
    fake: FakeGemini, base_url: str, http: httpx.AsyncClient
) -> None:
    fake.reply(PARTIAL)
    events, error = await run(live(http, base_url))
    assert events == PARTIAL_EVENTS
    assert error is not None
    assert (error.kind, error.message) == ("unavailable", "the stream ended without a finishReason")


async def test_malformed_json_is_unavailable(
    fake: FakeGemini, base_url: str, http: httpx.AsyncClient
) -> None:
    fake.reply(PARTIAL, raw=[b'data: {"candidates": [{"content": {"parts": [{"te\r\n\r\n'])
    events, error = await run(live(http, base_url))
    assert events == PARTIAL_EVENTS
    assert error is not None
    assert (error.kind, error.message) == ("unavailable", "malformed JSON in the stream")


@pytest.mark.parametrize(
    ("grpc", "kind"),
    [("UNAVAILABLE", "unavailable"), ("RESOURCE_EXHAUSTED", "rate_limit"), ("INTERNAL", "unavailable")],
)
async def test_an_error_chunk_mid_stream(
    fake: FakeGemini, base_url: str, http: httpx.AsyncClient, grpc: str, kind: str
) -> None:
    fake.reply([*PARTIAL, {"error": {"code": 503, "message": "The model is overloaded.", "status": grpc}}])
    events, error = await run(live(http, base_url))
    assert events == PARTIAL_EVENTS
    assert error is not None
    assert (error.kind, error.message, error.status) == (kind, f"{grpc}: The model is overloaded.", None)


async def test_a_chunk_of_the_wrong_shape_is_unavailable(
    fake: FakeGemini, base_url: str, http: httpx.AsyncClient
) -> None:
    fake.reply([*PARTIAL, fg.chunk([{"functionCall": {"args": {}}}], finish="STOP")])
    events, error = await run(live(http, base_url))
    assert events == PARTIAL_EVENTS
    assert error is not None
    assert (error.kind, error.message) == ("unavailable", "unexpected chunk shape")

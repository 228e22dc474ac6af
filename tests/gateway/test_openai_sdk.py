"""The official ``openai`` Python SDK against Iris's ``/v1`` on a real socket: text streamed and not,
images as data URLs reaching each vendor in its own format, a tool round trip, usage, reasoning, every
error class as the SDK's own exception, and a stream closed by the client cancelling the vendor call."""

from __future__ import annotations

import time
from typing import Any

import httpx
import openai
import pytest
from openai.types.chat import (
    ChatCompletionFunctionToolParam,
    ChatCompletionMessageFunctionToolCall,
    ChatCompletionUserMessageParam,
)

from tests.gateway.conftest import RUNS_PER_MINUTE, Gateway, data_url, token
from tests.support import fake_anthropic as fa
from tests.support import fake_gemini as fg
from tests.support.fake_openai import ToolCallScript
from tests.support.openai_sdk import client
from tests.support.waits import REQUEST_SECONDS

pytestmark = pytest.mark.parametrize("engine_name", ["sqlite"], indirect=True)

WEATHER: ChatCompletionFunctionToolParam = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "The weather in a city.",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    },
}


def test_a_streamed_answer_with_usage(gateway: Gateway) -> None:
    gateway.openai.text("Hello ", "world.", usage=(21, 7))
    stream = client(gateway).chat.completions.create(
        model="openai/gpt-4o",
        messages=[{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"}],
        stream=True,
        stream_options={"include_usage": True},
        temperature=0.2,
        seed=7,
    )
    chunks = list(stream)
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == "Hello world."
    assert {c.object for c in chunks} == {"chat.completion.chunk"}
    assert {c.model for c in chunks} == {"openai/gpt-4o"}
    assert len({c.id for c in chunks}) == 1
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "stop"
    assert chunks[-1].choices == []
    usage = chunks[-1].usage
    assert usage is not None
    assert (usage.prompt_tokens, usage.completion_tokens, usage.total_tokens) == (21, 7, 28)
    sent = gateway.openai.requests[-1].json
    assert sent["messages"][0] == {"role": "system", "content": "Be brief."}
    assert (sent["temperature"], sent["seed"]) == (0.2, 7)


def test_a_plain_answer(gateway: Gateway) -> None:
    gateway.openai.text("Hi ", "there.", usage=(11, 3))
    answer = client(gateway).chat.completions.create(
        model="openai/gpt-4o", messages=[{"role": "user", "content": [{"type": "text", "text": "Hello"}]}]
    )
    assert answer.object == "chat.completion"
    assert answer.model == "openai/gpt-4o"
    assert answer.choices[0].message.content == "Hi there."
    assert answer.choices[0].message.role == "assistant"
    assert answer.choices[0].finish_reason == "stop"
    assert answer.usage is not None
    assert answer.usage.total_tokens == 14
    assert answer.usage.prompt_tokens_details is not None
    assert answer.usage.prompt_tokens_details.cached_tokens == 0


def test_a_json_schema_reaches_a_claude_model_as_output_config_format(gateway: Gateway) -> None:
    """``response_format`` ``json_schema`` on Chat Completions is Anthropic's structured outputs for a
    Claude model that takes a schema; ``json_object``, which Claude has no mode for, is refused."""
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}, "additionalProperties": False}
    gateway.anthropic.reply(fa.text_answer(['{"n": 3}']))
    hello: Any = [{"role": "user", "content": "Three?"}]
    answer = client(gateway).chat.completions.create(
        model="anthropic/claude-sonnet-4-5",
        messages=hello,
        response_format={
            "type": "json_schema",
            "json_schema": {"name": "count", "schema": schema, "strict": True},
        },
    )
    assert answer.choices[0].message.content == '{"n": 3}'
    sent = gateway.anthropic.requests[-1].json["output_config"]
    assert sent == {"format": {"type": "json_schema", "schema": schema}}
    with pytest.raises(openai.BadRequestError) as refused:
        client(gateway).chat.completions.create(
            model="anthropic/claude-sonnet-4-5", messages=hello, response_format={"type": "json_object"}
        )
    assert (refused.value.code, refused.value.param) == ("parameter_unsupported", "response_format")
    assert len(gateway.anthropic.requests) == 1


def _image_sent(gateway: Gateway, provider: str) -> Any:
    """The image block as the vendor received it."""
    if provider == "openai":
        (part,) = [
            p for p in gateway.openai.requests[-1].json["messages"][-1]["content"] if p["type"] == "image_url"
        ]
        return part["image_url"]["url"]
    if provider == "anthropic":
        (block,) = [
            b for b in gateway.anthropic.requests[-1].json["messages"][-1]["content"] if b["type"] == "image"
        ]
        return block["source"]
    (part,) = [p for p in gateway.gemini.requests[-1].json["contents"][-1]["parts"] if "inlineData" in p]
    return part["inlineData"]


@pytest.mark.parametrize(
    ("provider", "model"),
    [
        ("openai", "openai/gpt-4o"),
        ("anthropic", "anthropic/claude-sonnet-4-5"),
        ("gemini", "gemini/gemini-2.5-flash"),
    ],
)
def test_a_data_url_image_reaches_each_vendor_natively(gateway: Gateway, provider: str, model: str) -> None:
    if provider == "openai":
        gateway.openai.text("A ", "rectangle.")
    elif provider == "anthropic":
        gateway.anthropic.reply(fa.text_answer(["A ", "rectangle."]))
    else:
        gateway.gemini.reply(fg.text_answer(["A ", "rectangle."]))
    stream = client(gateway).chat.completions.create(
        model=model,
        messages=[
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "What is this?"},
                    {"type": "image_url", "image_url": {"url": data_url("PNG"), "detail": "low"}},
                ],
            }
        ],
        stream=True,
    )
    assert "".join(c.choices[0].delta.content or "" for c in stream if c.choices) == "A rectangle."
    sent = _image_sent(gateway, provider)
    if provider == "openai":
        assert sent.startswith("data:image/")
    elif provider == "anthropic":
        assert sent["type"] == "base64"
        assert sent["media_type"].startswith("image/")
        assert sent["data"]
    else:
        assert sent["mimeType"].startswith("image/")
        assert sent["data"]


def test_a_tool_call_round_trip(gateway: Gateway) -> None:
    sdk = client(gateway)
    gateway.openai.tool_calls(
        [ToolCallScript(id="call_1", name="get_weather", argument_pieces=['{"city":', ' "Paris"}'])]
    )
    question: ChatCompletionUserMessageParam = {"role": "user", "content": "Weather in Paris?"}
    chunks = list(
        sdk.chat.completions.create(
            model="openai/gpt-4o", messages=[question], tools=[WEATHER], tool_choice="required", stream=True
        )
    )
    deltas = [call for c in chunks if c.choices for call in c.choices[0].delta.tool_calls or ()]
    assert deltas[0].id == "call_1"
    assert deltas[0].function
    assert deltas[0].function.name == "get_weather"
    assert {d.index for d in deltas} == {0}
    assert "".join(d.function.arguments or "" for d in deltas if d.function) == '{"city": "Paris"}'
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "tool_calls"
    first = gateway.openai.requests[-1].json
    assert first["tool_choice"] == "required"
    assert first["tools"][0]["function"]["name"] == "get_weather"

    gateway.openai.text("Sunny, 21 °C.")
    answer = sdk.chat.completions.create(
        model="openai/gpt-4o",
        messages=[
            question,
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "call_1",
                        "type": "function",
                        "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "call_1", "content": '{"sky": "sunny", "celsius": 21}'},
        ],
        tools=[WEATHER],
    )
    assert answer.choices[0].message.content == "Sunny, 21 °C."
    second = gateway.openai.requests[-1].json["messages"]
    assert second[1]["tool_calls"][0]["id"] == "call_1"
    assert second[2] == {
        "role": "tool",
        "tool_call_id": "call_1",
        "content": '{"sky": "sunny", "celsius": 21}',
    }


def test_a_plain_tool_call_answer(gateway: Gateway) -> None:
    gateway.openai.tool_calls(
        [ToolCallScript(id="call_9", name="get_weather", argument_pieces=['{"city": "Oslo"}'])]
    )
    answer = client(gateway).chat.completions.create(
        model="openai/gpt-4o", messages=[{"role": "user", "content": "Oslo?"}], tools=[WEATHER]
    )
    (call,) = answer.choices[0].message.tool_calls or []
    assert isinstance(call, ChatCompletionMessageFunctionToolCall)
    assert call.id == "call_9"
    assert call.function.name == "get_weather"
    assert answer.choices[0].finish_reason == "tool_calls"


def test_reasoning_content(gateway: Gateway) -> None:
    gateway.openai.reasoning(["Six ", "times seven."], ["42"], reasoning_tokens=64)
    chunks = list(
        client(gateway).chat.completions.create(
            model="openai/deepseek-reasoner",
            messages=[{"role": "user", "content": "6*7?"}],
            reasoning_effort="low",
            stream=True,
            stream_options={"include_usage": True},
        )
    )
    thought = "".join(
        (c.choices[0].delta.model_extra or {}).get("reasoning_content") or "" for c in chunks if c.choices
    )
    assert thought == "Six times seven."
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == "42"
    usage = chunks[-1].usage
    assert usage is not None
    assert usage.completion_tokens_details is not None
    assert usage.completion_tokens_details.reasoning_tokens == 64

    gateway.openai.reasoning(["Hmm."], ["Yes."])
    answer = client(gateway).chat.completions.create(
        model="openai/deepseek-reasoner",
        messages=[{"role": "user", "content": "ok?"}],
        reasoning_effort="high",
    )
    assert (answer.choices[0].message.model_extra or {})["reasoning_content"] == "Hmm."


def test_the_models_are_listed(gateway: Gateway) -> None:
    sdk = client(gateway)
    ids = {m.id for m in sdk.models.list()}
    assert {"openai/gpt-4o", "anthropic/claude-sonnet-4-5", "gemini/gemini-2.5-flash"} <= ids
    model = sdk.models.retrieve("anthropic/claude-sonnet-4-5")
    assert (model.id, model.owned_by, model.object) == ("anthropic/claude-sonnet-4-5", "anthropic", "model")
    with pytest.raises(openai.NotFoundError) as raised:
        sdk.models.retrieve("nobody/nothing")
    assert raised.value.code == "model_not_found"


def test_an_unknown_model_is_not_found(gateway: Gateway) -> None:
    with pytest.raises(openai.NotFoundError) as raised:
        client(gateway).chat.completions.create(
            model="nobody/nothing", messages=[{"role": "user", "content": "x"}]
        )
    assert raised.value.code == "model_not_found"
    assert raised.value.type == "invalid_request_error"
    assert raised.value.param == "model"


def test_a_bad_token_is_an_authentication_error(gateway: Gateway) -> None:
    sdk = openai.OpenAI(base_url=gateway.v1, api_key="not-a-token", timeout=REQUEST_SECONDS, max_retries=0)
    with pytest.raises(openai.AuthenticationError) as raised:
        sdk.chat.completions.create(model="openai/gpt-4o", messages=[{"role": "user", "content": "x"}])
    assert raised.value.code == "invalid_token"
    with pytest.raises(openai.AuthenticationError):
        sdk.models.list()


@pytest.mark.parametrize(
    ("content", "code", "param"),
    [
        (
            [{"type": "image_url", "image_url": {"url": "data:image/png;base64,aGVsbG8="}}],
            "unsupported_media_type",
            "messages[0].content[0].image_url",
        ),
        (
            [{"type": "image_url", "image_url": {"url": "data:image/png,abc"}}],
            "invalid_data_url",
            "messages[0].content[0].image_url",
        ),
        (
            [{"type": "image_url", "image_url": {"url": "https://example.com/cat.png"}}],
            "attachment_url_rejected",
            "messages[0].content[0].image_url",
        ),
        (
            [{"type": "image_url", "image_url": {"url": data_url()}}] * 5,
            "too_many_images",
            "messages[0].content",
        ),
        ("", "empty_message", "messages[0]"),
    ],
)
def test_bad_images_and_messages_are_bad_requests(
    gateway: Gateway, content: Any, code: str, param: str
) -> None:
    with pytest.raises(openai.BadRequestError) as raised:
        client(gateway).chat.completions.create(
            model="openai/gpt-4o", messages=[{"role": "user", "content": content}]
        )
    assert raised.value.code == code
    assert raised.value.param == param
    assert gateway.openai.requests == []  # refused before the vendor


def test_a_wrong_type_is_a_bad_request_and_unknown_fields_are_ignored(gateway: Gateway) -> None:
    sdk = client(gateway)
    with pytest.raises(openai.BadRequestError) as raised:
        sdk.chat.completions.create(
            model="openai/gpt-4o",
            messages=[{"role": "user", "content": "x"}],
            temperature="hot",  # type: ignore[call-overload]
        )
    assert raised.value.code == "validation_failed"
    assert raised.value.param == "temperature"
    gateway.openai.text("ok")
    answer = sdk.chat.completions.create(
        model="openai/gpt-4o", messages=[{"role": "user", "content": "x"}], extra_body={"frobnicate": True}
    )
    assert answer.choices[0].message.content == "ok"


def test_the_run_quota_is_a_rate_limit_error(gateway: Gateway) -> None:
    # The quota counts per wall-clock minute: runs either side of a minute's end fall in two windows.
    if (left := 60 - time.time() % 60) < 5:
        time.sleep(left + 0.1)
    sdk = client(gateway, user="quota-user")
    for _ in range(RUNS_PER_MINUTE):
        gateway.openai.text("ok")
        sdk.chat.completions.create(model="openai/gpt-4o", messages=[{"role": "user", "content": "x"}])
    with pytest.raises(openai.RateLimitError) as raised:
        sdk.chat.completions.create(model="openai/gpt-4o", messages=[{"role": "user", "content": "x"}])
    assert raised.value.code == "quota_exceeded"
    assert int(raised.value.response.headers["retry-after"]) > 0


def test_a_vendor_rate_limit_before_the_answer_is_a_rate_limit_error(gateway: Gateway) -> None:
    gateway.openai.rate_limited()
    with pytest.raises(openai.RateLimitError) as raised:
        list(
            client(gateway).chat.completions.create(
                model="openai/gpt-4o", messages=[{"role": "user", "content": "x"}], stream=True
            )
        )
    assert raised.value.code == "provider_rate_limit"


def test_a_failure_mid_stream_is_raised_by_the_sdk(gateway: Gateway) -> None:
    gateway.openai.broken("Hel", "lo")
    stream = client(gateway).chat.completions.create(
        model="openai/gpt-4o", messages=[{"role": "user", "content": "x"}], stream=True
    )
    text: list[str] = []

    def read() -> None:
        text.extend(chunk.choices[0].delta.content or "" for chunk in stream)

    with pytest.raises(openai.APIError) as raised:
        read()
    assert "".join(text) == "Hello"
    assert raised.value.code == "provider_unavailable"  # the vendor cut the connection


def test_closing_the_stream_cancels_the_vendor_call(gateway: Gateway) -> None:
    gateway.openai.stalled("trickle", "Once ", "upon")
    stream = client(gateway).chat.completions.create(
        model="openai/gpt-4o", messages=[{"role": "user", "content": "A long story"}], stream=True
    )
    seen = ""
    for chunk in stream:
        seen += chunk.choices[0].delta.content or ""
        if seen.startswith("Once upon"):
            break
    stream.close()
    assert gateway.openai.hung_up.wait(REQUEST_SECONDS)


def test_errors_are_documented_in_openais_shape(gateway: Gateway) -> None:
    """The raw answer: OpenAI's error object, JSON (not problem+json), a stable code."""
    response = httpx.post(
        f"{gateway.v1}/chat/completions",
        content=b"{not json",
        timeout=REQUEST_SECONDS,
        headers={"Authorization": f"Bearer {token('raw')}", "content-type": "application/json"},
    )
    assert response.status_code == 400
    assert response.headers["content-type"].startswith("application/json")
    assert set(response.json()["error"]) == {"message", "type", "param", "code"}

"""The official ``anthropic`` Python SDK against Iris's ``/v1/messages`` on a real socket: a plain and a
streamed answer (every answer and event validated with the SDK's own types), ``count_tokens``, tools,
every error as the SDK's own exception class, and the key as ``x-api-key`` or a bearer token."""

from __future__ import annotations

import base64
import json
import time
from typing import Any

import anthropic
import httpx
import pytest
from anthropic.types import Message, MessageParam, ToolParam

from iris.providers import image_formulas
from tests.gateway.conftest import RUNS_PER_MINUTE, Gateway, token
from tests.support import fake_anthropic as fa
from tests.support.anthropic_sdk import anthropic_client
from tests.support.anthropic_types import conforming, conforming_event, sse_events
from tests.support.fake_openai import ToolCallScript
from tests.support.images import image_bytes
from tests.support.waits import REQUEST_SECONDS

pytestmark = pytest.mark.parametrize("engine_name", ["sqlite"], indirect=True)

WEATHER: ToolParam = {
    "name": "get_weather",
    "description": "The weather in a city.",
    "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
}
HELLO: list[MessageParam] = [{"role": "user", "content": "Hello"}]


def _post(gateway: Gateway, path: str, body: dict[str, Any], **headers: str) -> httpx.Response:
    sent = {"x-api-key": token("raw"), "anthropic-version": "2023-06-01", **headers}
    return httpx.post(gateway.base + path, json=body, headers=sent, timeout=REQUEST_SECONDS)


def test_a_plain_answer_is_anthropics_message(gateway: Gateway) -> None:
    gateway.anthropic.reply(fa.text_answer(["Hi ", "there."], input_tokens=30, output_tokens=4))
    raw = _post(
        gateway,
        "/v1/messages",
        {"model": "anthropic/claude-sonnet-4-5", "max_tokens": 64, "system": "Be brief.", "messages": HELLO},
    )
    assert raw.status_code == 200, raw.text
    answer = conforming(Message, raw.json())
    assert answer.id.startswith("msg_")
    assert (answer.role, answer.model, answer.stop_reason) == (
        "assistant",
        "anthropic/claude-sonnet-4-5",
        "end_turn",
    )
    assert [b.type for b in answer.content] == ["text"]
    assert answer.content[0].text == "Hi there."  # type: ignore[union-attr]
    assert (answer.usage.input_tokens, answer.usage.output_tokens) == (30, 4)
    sent = gateway.anthropic.requests[-1].json
    assert sent["system"] == "Be brief."
    gateway.openai.text("ok")
    turns: Any = [{"role": "system", "content": [{"type": "text", "text": "Answer in French."}]}, *HELLO]
    anthropic_client(gateway).messages.create(model="openai/gpt-4o", max_tokens=8, messages=turns)
    assert gateway.openai.requests[-1].json["messages"][0] == {
        "role": "system",
        "content": "Answer in French.",
    }
    assert sent["max_tokens"] == 64
    assert sent["messages"] == [{"role": "user", "content": [{"type": "text", "text": "Hello"}]}]


def test_a_streamed_answer_has_anthropics_events_in_order(gateway: Gateway) -> None:
    gateway.openai.text("Hello ", "world.", usage=(21, 7))
    raw = _post(
        gateway,
        "/v1/messages",
        {"model": "openai/gpt-4o", "max_tokens": 64, "messages": HELLO, "stream": True},
    )
    assert raw.headers["content-type"].startswith("text/event-stream")
    frames = sse_events(raw.text)
    names = [name for name, _ in frames]
    assert names == [
        "message_start",
        "ping",
        "content_block_start",
        "content_block_delta",
        "content_block_delta",
        "content_block_stop",
        "message_delta",
        "message_stop",
    ]
    for name, data in frames:
        if name != "ping":
            conforming_event(name, data)
    assert frames[-2][1]["usage"]["output_tokens"] == 7
    assert frames[-2][1]["delta"]["stop_reason"] == "end_turn"


def test_the_sdks_stream_helper_accumulates_the_answer(gateway: Gateway) -> None:
    gateway.openai.text("Hello ", "world.", usage=(21, 7))
    with anthropic_client(gateway).messages.stream(
        model="openai/gpt-4o", max_tokens=64, messages=HELLO, stop_sequences=["END"]
    ) as stream:
        text = "".join(stream.text_stream)
        final = stream.get_final_message()
    assert text == "Hello world."
    assert final.content[0].text == "Hello world."  # type: ignore[union-attr]
    assert (final.usage.input_tokens, final.usage.output_tokens, final.stop_reason) == (21, 7, "end_turn")
    assert gateway.openai.requests[-1].json["stop"] == ["END"]


def test_a_stop_sequence_that_ended_the_answer_is_named_when_the_vendor_says_which(gateway: Gateway) -> None:
    """Anthropic's API and the local model say which stop sequence ended an answer: the answer stops
    with ``stop_sequence`` and names it, plain and streamed. OpenAI's does not: ``end_turn`` (above)."""
    client = anthropic_client(gateway)
    model, stops = "anthropic/claude-sonnet-4-5", ["3"]
    gateway.anthropic.reply(fa.text_answer(["1, 2, "], stop_reason="stop_sequence", stop_sequence="3"))
    plain = client.messages.create(model=model, max_tokens=64, messages=HELLO, stop_sequences=stops)
    gateway.anthropic.reply(fa.text_answer(["1, 2, "], stop_reason="stop_sequence", stop_sequence="3"))
    with client.messages.stream(model=model, max_tokens=64, messages=HELLO, stop_sequences=stops) as stream:
        streamed = stream.get_final_message()
    for final in (conforming(Message, plain.model_dump()), streamed):
        assert (final.stop_reason, final.stop_sequence) == ("stop_sequence", "3")
    assert [r.json["stop_sequences"] for r in gateway.anthropic.requests] == [stops, stops]
    said = client.messages.create(
        model="local/text",
        max_tokens=64,
        messages=[{"role": "user", "content": "one, two, three"}],
        stop_sequences=[", three", ", two"],  # the one that comes first in the answer ends it
    )
    assert (said.stop_reason, said.stop_sequence) == ("stop_sequence", ", two")
    assert said.content[0].text.endswith("one")  # type: ignore[union-attr]
    unmet = client.messages.create(model="local/text", max_tokens=64, messages=HELLO, stop_sequences=["zzz"])
    assert (unmet.stop_reason, unmet.stop_sequence) == ("end_turn", None)


PLACE = {
    "type": "object",
    "properties": {"city": {"type": "string"}},
    "required": ["city"],
    "additionalProperties": False,
}


def test_output_config_format_asks_every_model_that_takes_a_schema_for_it(gateway: Gateway) -> None:
    """Structured outputs: a Claude model that takes a schema gets ``output_config.format`` as it came,
    an OpenAI model a strict ``json_schema`` response format; a model that takes none is refused with a
    400 naming the field, and no vendor is called."""
    client = anthropic_client(gateway)
    asked: Any = {"format": {"type": "json_schema", "schema": PLACE}}
    gateway.anthropic.reply(fa.text_answer(['{"city": ', '"Paris"}']))
    answer = client.messages.create(
        model="anthropic/claude-sonnet-4-5", max_tokens=64, messages=HELLO, output_config=asked
    )
    assert json.loads(answer.content[0].text) == {"city": "Paris"}  # type: ignore[union-attr]
    assert gateway.anthropic.requests[-1].json["output_config"] == asked
    gateway.openai.text('{"city": "Paris"}')
    client.messages.create(model="openai/gpt-4o", max_tokens=64, messages=HELLO, output_config=asked)
    assert gateway.openai.requests[-1].json["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "output", "schema": PLACE, "strict": True},
    }
    with pytest.raises(anthropic.BadRequestError) as refused:
        client.messages.create(model="local/text", max_tokens=64, messages=HELLO, output_config=asked)
    assert refused.value.error_code == "parameter_unsupported"
    said = refused.value.body["error"]["message"]  # type: ignore[index]
    assert said == "output_config.format: local/text does not support 'output_config.format'."
    assert (len(gateway.anthropic.requests), len(gateway.openai.requests)) == (1, 1)


def test_a_tool_call_streams_as_input_json_deltas(gateway: Gateway) -> None:
    call = ToolCallScript(id="call_1", name="get_weather", argument_pieces=['{"city"', ': "Paris"}'])
    gateway.openai.tool_calls([call])
    with anthropic_client(gateway).messages.stream(
        model="openai/gpt-4o",
        max_tokens=64,
        messages=[{"role": "user", "content": "Weather in Paris?"}],
        tools=[WEATHER],
        tool_choice={"type": "any"},
    ) as stream:
        kinds = [e.delta.type for e in stream if e.type == "content_block_delta"]
        final = stream.get_final_message()
    assert kinds == ["input_json_delta", "input_json_delta"]
    assert final.stop_reason == "tool_use"
    (use,) = final.content
    assert (use.type, use.id, use.name, use.input) == ("tool_use", "call_1", "get_weather", {"city": "Paris"})  # type: ignore[union-attr]
    sent = gateway.openai.requests[-1].json
    assert sent["tool_choice"] == "required"
    assert sent["tools"][0]["function"]["parameters"] == WEATHER["input_schema"]


def test_count_tokens_estimates_text_and_images(gateway: Gateway) -> None:
    sdk = anthropic_client(gateway)
    text = sdk.messages.count_tokens(
        model="anthropic/claude-sonnet-4-5", messages=[{"role": "user", "content": "a" * 40}]
    )
    assert text.input_tokens == 10
    png = base64.b64encode(image_bytes("PNG", (800, 600))).decode()
    image = sdk.messages.count_tokens(
        model="anthropic/claude-sonnet-4-5",
        messages=[
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "a" * 40},
                    {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": png}},
                ],
            }
        ],
    )
    assert image.input_tokens == 10 + image_formulas.anthropic_tokens(800, 600)
    assert gateway.anthropic.requests == []  # an estimate: no vendor is asked


def test_errors_are_the_sdks_exception_classes(gateway: Gateway) -> None:
    sdk = anthropic_client(gateway)
    with pytest.raises(anthropic.NotFoundError) as not_found:
        sdk.messages.create(model="nope/none", max_tokens=8, messages=HELLO)
    assert not_found.value.error_code == "model_not_found"
    assert not_found.value.type == "not_found_error"
    with pytest.raises(anthropic.BadRequestError) as server_tool:
        sdk.messages.create(
            model="openai/gpt-4o",
            max_tokens=8,
            messages=HELLO,
            tools=[{"type": "web_search_20250305", "name": "web_search"}],
        )
    assert server_tool.value.error_code == "validation_failed"  # a server tool: Iris runs none
    assert "tools[0]" in server_tool.value.message
    with pytest.raises(anthropic.BadRequestError) as unknown_call:
        sdk.messages.create(
            model="openai/gpt-4o",
            max_tokens=8,
            messages=[
                {
                    "role": "user",
                    "content": [{"type": "tool_result", "tool_use_id": "toolu_x", "content": "1"}],
                }
            ],
        )
    assert unknown_call.value.error_code == "tool_call_unknown"
    with pytest.raises(anthropic.AuthenticationError) as unauthenticated:
        anthropic.Anthropic(base_url=gateway.base, api_key="not-a-token", max_retries=0).messages.create(
            model="openai/gpt-4o", max_tokens=8, messages=HELLO
        )
    assert unauthenticated.value.body["error"]["type"] == "authentication_error"  # type: ignore[index]
    assert gateway.openai.requests == []


def test_a_vendor_failure_before_the_answer_is_an_http_error(gateway: Gateway) -> None:
    gateway.openai.rate_limited()
    with pytest.raises(anthropic.RateLimitError) as limited:
        _stream_to_the_end(gateway)
    assert limited.value.error_code == "provider_rate_limit"
    assert limited.value.response.headers["retry-after"]
    gateway.anthropic.reply_error(529, "overloaded_error", "Overloaded")
    with pytest.raises(anthropic.OverloadedError) as overloaded:
        anthropic_client(gateway).messages.create(
            model="anthropic/claude-sonnet-4-5", max_tokens=8, messages=HELLO
        )
    assert overloaded.value.error_code == "provider_unavailable"


def test_a_failure_mid_stream_is_one_error_event(gateway: Gateway) -> None:
    gateway.openai.broken("Hel", "lo")
    raw = _post(
        gateway,
        "/v1/messages",
        {"model": "openai/gpt-4o", "max_tokens": 8, "messages": HELLO, "stream": True},
    )
    frames = sse_events(raw.text)
    assert frames[-1][0] == "error"
    assert frames[-1][1]["error"]["type"] in ("overloaded_error", "api_error")
    names = [name for name, _ in frames]
    assert names[-2:] == ["content_block_delta", "error"]  # the answer so far, then the error alone
    assert "message_stop" not in names
    gateway.openai.broken("Hel", "lo")
    with pytest.raises(anthropic.APIStatusError) as raised:
        _stream_to_the_end(gateway)
    assert raised.value.body["error"]["type"] == "overloaded_error"  # type: ignore[index]


def _stream_to_the_end(gateway: Gateway) -> None:
    with anthropic_client(gateway).messages.stream(
        model="openai/gpt-4o", max_tokens=8, messages=HELLO
    ) as stream:
        stream.until_done()


def test_the_run_quota_is_a_rate_limit_error(gateway: Gateway) -> None:
    if (left := 60 - time.time() % 60) < 5:  # runs either side of a minute's end fall in two windows
        time.sleep(left + 0.1)
    sdk = anthropic_client(gateway, user="quota-messages")
    for _ in range(RUNS_PER_MINUTE):
        gateway.openai.text("ok")
        sdk.messages.create(model="openai/gpt-4o", max_tokens=8, messages=HELLO)
    with pytest.raises(anthropic.RateLimitError) as raised:
        sdk.messages.create(model="openai/gpt-4o", max_tokens=8, messages=HELLO)
    assert raised.value.error_code == "quota_exceeded"
    assert int(raised.value.response.headers["retry-after"]) > 0


def test_the_key_as_a_bearer_token_and_any_anthropic_version(gateway: Gateway) -> None:
    for version in ("2023-06-01", "2025-10-01", None):
        gateway.openai.text("ok")
        headers = {
            "Authorization": f"Bearer {token('bearer')}",
            "anthropic-beta": "prompt-caching-2024-07-31",
        }
        if version:
            headers["anthropic-version"] = version
        raw = httpx.post(
            gateway.base + "/v1/messages",
            json={"model": "openai/gpt-4o", "max_tokens": 8, "messages": HELLO},
            headers=headers,
            timeout=REQUEST_SECONDS,
        )
        assert raw.status_code == 200, raw.text
    sdk = anthropic.Anthropic(base_url=gateway.base, auth_token=token("bearer"), max_retries=0)
    gateway.openai.text("ok")
    assert sdk.messages.create(model="openai/gpt-4o", max_tokens=8, messages=HELLO).content


def test_cache_control_reaches_anthropic_and_is_ignored_elsewhere(gateway: Gateway) -> None:
    cached: dict[str, Any] = {
        "max_tokens": 16,
        "system": [{"type": "text", "text": "A long prompt.", "cache_control": {"type": "ephemeral"}}],
        "messages": [
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "Hi", "cache_control": {"type": "ephemeral", "ttl": "1h"}}
                ],
            }
        ],
        "tools": [{**WEATHER, "cache_control": {"type": "ephemeral"}}],
    }
    gateway.anthropic.reply(fa.text_answer(["ok"]))
    assert (
        _post(gateway, "/v1/messages", {"model": "anthropic/claude-sonnet-4-5", **cached}).status_code == 200
    )
    assert gateway.anthropic.requests[-1].json["cache_control"] == {"type": "ephemeral"}
    gateway.openai.text("ok")
    assert _post(gateway, "/v1/messages", {"model": "openai/gpt-4o", **cached}).status_code == 200
    assert "cache_control" not in json.dumps(gateway.openai.requests[-1].json)


def test_another_vendors_reasoning_streams_as_thinking(gateway: Gateway) -> None:
    """DeepSeek's ``reasoning_content`` is a ``thinking`` block (unsigned: it is not Anthropic's)."""
    gateway.openai.reasoning(["Six ", "times seven."], ["42"], reasoning_tokens=64)
    with anthropic_client(gateway).messages.stream(
        model="openai/deepseek-reasoner",
        max_tokens=2048,
        thinking={"type": "enabled", "budget_tokens": 1024},
        messages=[{"role": "user", "content": "6*7?"}],
    ) as stream:
        kinds = [e.delta.type for e in stream if e.type == "content_block_delta"]
        final = stream.get_final_message()
    assert kinds == ["thinking_delta", "thinking_delta", "text_delta"]
    thinking, text = final.content
    assert (thinking.type, thinking.thinking, thinking.signature) == ("thinking", "Six times seven.", "")  # type: ignore[union-attr]
    assert (text.type, text.text) == ("text", "42")  # type: ignore[union-attr]
    assert gateway.openai.requests[-1].json["reasoning_effort"] == "low"
    gateway.openai.reasoning(["Hmm."], ["Yes."])
    anthropic_client(gateway).messages.create(
        model="openai/deepseek-reasoner",
        max_tokens=2048,
        thinking={"type": "adaptive"},
        output_config={"effort": "max"},
        messages=[{"role": "user", "content": "ok?"}],
    )
    assert gateway.openai.requests[-1].json["reasoning_effort"] == "high"

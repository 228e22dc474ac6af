"""The official ``openai`` Python SDK's ``client.responses`` against Iris's ``/v1/responses`` on a real
socket, loopback vendor fakes behind it: plain and streamed answers (every event and the final
``Response`` validated by the SDK's own types), an image and a PDF, a function-call round trip,
reasoning, ``max_output_tokens`` cutting an answer, and errors as the SDK's own exception classes."""

from __future__ import annotations

import base64
import json

import openai
import pytest
from openai.types.responses import (
    FunctionToolParam,
    ResponseCompletedEvent,
    ResponseFunctionToolCall,
    ResponseOutputMessage,
    ResponseReasoningItem,
    ResponseTextConfigParam,
)

from tests.gateway.conftest import Gateway, data_url, token
from tests.support.documents import text_pdf, wav_bytes
from tests.support.fake_openai import ToolCallScript
from tests.support.openai_sdk import client
from tests.support.responses_types import conforming_events, conforming_response, raw_stream

pytestmark = pytest.mark.parametrize("engine_name", ["sqlite"], indirect=True)

WEATHER: FunctionToolParam = {
    "type": "function",
    "name": "get_weather",
    "description": "The weather in a city.",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    "strict": False,
}


def test_a_plain_response(gateway: Gateway) -> None:
    gateway.openai.text("Hi ", "there.", usage=(11, 3))
    raw = client(gateway).responses.with_raw_response.create(
        model="openai/gpt-4o", input="Hello", instructions="Be brief.", temperature=0.3, metadata={"k": "v"}
    )
    answer = conforming_response(raw.http_response.json())
    assert answer.id.startswith("resp_")
    assert (answer.object, answer.status, answer.model) == ("response", "completed", "openai/gpt-4o")
    assert answer.output_text == "Hi there."
    (message,) = answer.output
    assert isinstance(message, ResponseOutputMessage)
    assert message.content[0].type == "output_text"
    assert answer.usage is not None
    assert (answer.usage.input_tokens, answer.usage.output_tokens, answer.usage.total_tokens) == (11, 3, 14)
    assert answer.usage.input_tokens_details.cached_tokens == 0
    assert answer.metadata == {"k": "v"}
    sent = gateway.openai.requests[-1].json
    assert sent["messages"] == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Hello"},
    ]
    assert sent["temperature"] == 0.3


def test_a_streamed_response_event_by_event(gateway: Gateway) -> None:
    gateway.openai.text("Hello ", "world.", usage=(21, 7))
    events = list(client(gateway).responses.create(model="openai/gpt-4o", input="Hi", stream=True))
    kinds = [e.type for e in events]
    assert kinds == [
        "response.created",
        "response.in_progress",
        "response.output_item.added",
        "response.content_part.added",
        "response.output_text.delta",
        "response.output_text.delta",
        "response.output_text.done",
        "response.content_part.done",
        "response.output_item.done",
        "response.completed",
    ]
    assert [e.sequence_number for e in events] == list(range(len(events)))
    last = events[-1]
    assert isinstance(last, ResponseCompletedEvent)
    assert last.response.output_text == "Hello world."
    assert last.response.usage is not None
    assert last.response.usage.total_tokens == 28

    gateway.openai.text("Hello ", "again.")
    response = raw_stream(gateway.v1, token("u-raw"), {"model": "openai/gpt-4o", "input": "Hi"})
    assert response.headers["content-type"].startswith("text/event-stream")
    checked = conforming_events(response.text)
    assert [e.type for e in checked] == kinds
    conforming_response(json.loads(response.text.strip().rsplit("data: ", 1)[1])["response"])


def test_an_image_and_a_pdf(gateway: Gateway) -> None:
    pdf = base64.b64encode(text_pdf(["Quarterly report", "Page two"])).decode()
    gateway.openai.text("A red square and a report.")
    answer = client(gateway).responses.create(
        model="openai/gpt-4o",
        input=[
            {
                "role": "user",
                "content": [
                    {"type": "input_text", "text": "What are these?"},
                    {"type": "input_image", "image_url": data_url("PNG"), "detail": "auto"},
                    {
                        "type": "input_file",
                        "file_data": f"data:application/pdf;base64,{pdf}",
                        "filename": "q.pdf",
                    },
                ],
            }
        ],
    )
    assert answer.output_text == "A red square and a report."
    parts = gateway.openai.requests[-1].json["messages"][-1]["content"]
    assert [p["type"] for p in parts][:2] == ["text", "image_url"]
    assert parts[1]["image_url"]["url"].startswith("data:image/png;base64,")
    assert "Quarterly report" in str(parts[2:])  # a model that does not read PDFs gets their text


def test_a_function_call_round_trip(gateway: Gateway) -> None:
    sdk = client(gateway)
    gateway.openai.tool_calls(
        [ToolCallScript(id="call_1", name="get_weather", argument_pieces=['{"city":', ' "Paris"}'])]
    )
    events = list(
        sdk.responses.create(
            model="openai/gpt-4o",
            input="Weather in Paris?",
            tools=[WEATHER],
            tool_choice="required",
            stream=True,
        )
    )
    kinds = [e.type for e in events]
    assert kinds.count("response.function_call_arguments.delta") == 2
    assert "response.function_call_arguments.done" in kinds
    first = gateway.openai.requests[-1].json
    assert first["tool_choice"] == "required"
    assert first["tools"][0]["function"]["name"] == "get_weather"
    done = events[-1]
    assert isinstance(done, ResponseCompletedEvent)
    (call,) = done.response.output
    assert isinstance(call, ResponseFunctionToolCall)
    assert (call.call_id, call.name, call.arguments) == ("call_1", "get_weather", '{"city": "Paris"}')

    gateway.openai.text("Sunny, 21 °C.")
    answer = sdk.responses.create(
        model="openai/gpt-4o",
        input=[
            {"role": "user", "content": "Weather in Paris?"},
            {
                "type": "function_call",
                "call_id": "call_1",
                "name": "get_weather",
                "arguments": call.arguments,
            },
            {"type": "function_call_output", "call_id": "call_1", "output": '{"sky": "sunny"}'},
        ],
        tools=[WEATHER],
        store=False,
    )
    assert answer.output_text == "Sunny, 21 °C."
    sent = gateway.openai.requests[-1].json["messages"]
    assert sent[1]["tool_calls"][0]["id"] == "call_1"
    assert sent[2] == {"role": "tool", "tool_call_id": "call_1", "content": '{"sky": "sunny"}'}


def test_reasoning_as_a_reasoning_item(gateway: Gateway) -> None:
    gateway.openai.reasoning(["Think ", "hard."], ["Forty-two."])
    raw = client(gateway).responses.with_raw_response.create(
        model="openai/deepseek-reasoner", input="Answer?", reasoning={"effort": "high", "summary": "auto"}
    )
    answer = conforming_response(raw.http_response.json())
    reasoning, message = answer.output
    assert isinstance(reasoning, ResponseReasoningItem)
    assert reasoning.summary[0].text == "Think hard."
    assert isinstance(message, ResponseOutputMessage)
    assert answer.output_text == "Forty-two."
    assert answer.usage is not None
    assert answer.usage.output_tokens_details.reasoning_tokens == 64


def test_max_output_tokens_makes_it_incomplete(gateway: Gateway) -> None:
    gateway.openai.text("Once upon", finish_reason="length")
    answer = client(gateway).responses.create(model="openai/gpt-4o", input="A story", max_output_tokens=16)
    assert answer.status == "incomplete"
    assert answer.incomplete_details is not None
    assert answer.incomplete_details.reason == "max_output_tokens"
    assert gateway.openai.requests[-1].json["max_completion_tokens"] == 16


def test_errors_are_the_sdks_exception_classes(gateway: Gateway) -> None:
    sdk = client(gateway)
    with pytest.raises(openai.NotFoundError) as unknown:
        sdk.responses.create(model="openai/nope", input="Hi")
    assert unknown.value.code == "model_not_found"
    with pytest.raises(openai.BadRequestError) as builtin:
        sdk.responses.create(model="openai/gpt-4o", input="Hi", tools=[{"type": "web_search"}])
    assert builtin.value.code == "tool_type_unsupported"
    assert builtin.value.param == "tools[0].type"
    with pytest.raises(openai.BadRequestError) as image:
        sdk.responses.create(
            model="openai/gpt-4o",
            input=[
                {
                    "role": "user",
                    "content": [
                        {"type": "input_image", "image_url": "https://x.test/a.png", "detail": "auto"}
                    ],
                }
            ],
        )
    assert image.value.param == "input[0].content[0].image_url"
    with pytest.raises(openai.NotFoundError) as missing:
        sdk.responses.create(model="openai/gpt-4o", input="Hi", previous_response_id="resp_" + "0" * 32)
    assert missing.value.code == "response_not_found"
    with pytest.raises(openai.AuthenticationError):
        openai.OpenAI(base_url=gateway.v1, api_key="bad", max_retries=0).responses.create(
            model="openai/gpt-4o", input="Hi"
        )
    gateway.openai.rate_limited()
    with pytest.raises(openai.RateLimitError):
        sdk.responses.create(model="openai/gpt-4o", input="Hi")


def test_text_format_json_schema_where_the_model_has_it(gateway: Gateway) -> None:
    gateway.openai.text('{"city": "Paris"}')
    schema: dict[str, object] = {
        "type": "object",
        "properties": {"city": {"type": "string"}},
        "required": ["city"],
    }
    place: ResponseTextConfigParam = {
        "format": {"type": "json_schema", "name": "place", "schema": schema, "strict": True}
    }
    answer = client(gateway).responses.create(
        model="openai/gpt-4o",
        input="Where?",
        text=place,
    )
    assert json.loads(answer.output_text) == {"city": "Paris"}
    sent = gateway.openai.requests[-1].json["response_format"]
    assert sent["type"] == "json_schema"
    assert sent["json_schema"]["name"] == "place"
    with pytest.raises(openai.BadRequestError) as refused:
        client(gateway).responses.create(
            model="local/text",
            input="Where?",
            text=place,
        )
    assert (refused.value.code, refused.value.param) == ("parameter_unsupported", "text.format")


def test_a_failure_after_the_first_delta_is_one_response_failed(gateway: Gateway) -> None:
    gateway.openai.broken("Half an ")
    response = raw_stream(gateway.v1, token("u-broken"), {"model": "openai/gpt-4o", "input": "Hi"})
    assert response.status_code == 200
    events = conforming_events(response.text)
    assert [e.type for e in events].count("response.failed") == 1
    failed = events[-1]
    assert failed.type == "response.failed"
    assert failed.response.status == "failed"
    assert failed.response.error is not None
    assert failed.response.error.code == "server_error"
    assert "Half an " in [e.delta for e in events if e.type == "response.output_text.delta"]
    (done,) = [e for e in events if e.type == "response.output_item.done"]
    assert done.item.status == "incomplete"  # the message the failure cut short


def test_input_audio_reaches_a_model_that_hears(gateway: Gateway) -> None:
    clip = base64.b64encode(wav_bytes(1.0)).decode()
    answer = client(gateway).responses.create(
        model="local/multimodal",
        input=[
            {
                "role": "user",
                "content": [
                    {"type": "input_text", "text": "What is this?"},
                    {"type": "input_audio", "input_audio": {"data": clip, "format": "wav"}},  # type: ignore[list-item,misc]
                ],
            }
        ],
        store=False,
    )
    assert "Audio 1" in answer.output_text

"""Every documented ``/v1`` answer, read raw and held to the ``openai`` Python SDK's own types strictly
(:func:`tests.support.openai_types.conforming`: validated, and no key OpenAI requires missing at any
depth, which the SDK's lenient parsing would let through as ``None``), and an assistant message the SDK
returned, ``model_dump()``-ed, accepted back as the next request's message."""

from __future__ import annotations

import json
import uuid
from typing import Any

import httpx
import openai
import pytest
from openai.pagination import SyncPage
from openai.types import Model
from openai.types.chat import ChatCompletion, ChatCompletionChunk, ChatCompletionFunctionToolParam

from tests.gateway.conftest import Gateway, data_url, token
from tests.support.fake_openai import ToolCallScript
from tests.support.openai_types import ErrorAnswer, conforming
from tests.support.waits import REQUEST_SECONDS

pytestmark = pytest.mark.parametrize("engine_name", ["sqlite"], indirect=True)

MODEL = "openai/gpt-4o"
WEATHER: ChatCompletionFunctionToolParam = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    },
}
QUESTION = {"role": "user", "content": "Weather in Paris?"}


def _headers(user: str = "typed") -> dict[str, str]:
    return {"Authorization": f"Bearer {token(user)}"}


def _post(gateway: Gateway, body: dict[str, Any], user: str = "typed") -> httpx.Response:
    return httpx.post(
        f"{gateway.v1}/chat/completions", json=body, headers=_headers(user), timeout=REQUEST_SECONDS
    )


def _chunks(response: httpx.Response) -> list[dict[str, Any]]:
    """The ``data:`` objects of a stream, which must end with ``[DONE]``."""
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/event-stream")
    payloads = [line[len("data: ") :] for line in response.text.split("\n") if line.startswith("data: ")]
    assert payloads[-1] == "[DONE]"
    return [json.loads(p) for p in payloads[:-1]]


def _streamed(chunks: list[dict[str, Any]]) -> list[ChatCompletionChunk]:
    parsed = [conforming(ChatCompletionChunk, c) for c in chunks]
    assert chunks[0]["id"], "the first chunk names the completion"
    assert len({c.id for c in parsed}) == 1
    assert chunks[0]["choices"][0]["delta"]["role"] == "assistant"
    return parsed


def test_the_models_list_and_one_model(gateway: Gateway) -> None:
    listed = httpx.get(f"{gateway.v1}/models", headers=_headers(), timeout=REQUEST_SECONDS)
    assert listed.status_code == 200
    page = conforming(SyncPage[Model], listed.json())
    assert MODEL in {m.id for m in page.data}
    one = httpx.get(f"{gateway.v1}/models/{MODEL}", headers=_headers(), timeout=REQUEST_SECONDS)
    assert conforming(Model, one.json()).owned_by == "openai"


def test_a_plain_and_a_streamed_answer(gateway: Gateway) -> None:
    gateway.openai.text("Hi ", "there.", usage=(11, 3))
    plain = _post(gateway, {"model": MODEL, "messages": [QUESTION]})
    assert plain.status_code == 200, plain.text
    answer = conforming(ChatCompletion, plain.json())
    assert answer.choices[0].message.content == "Hi there."

    gateway.openai.text("Hello ", "world.", usage=(21, 7))
    body = {"model": MODEL, "messages": [QUESTION], "stream": True, "stream_options": {"include_usage": True}}
    chunks = _streamed(_chunks(_post(gateway, body)))
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == "Hello world."
    usage = chunks[-1].usage
    assert usage is not None
    assert usage.total_tokens == 28


def test_an_image_answer(gateway: Gateway) -> None:
    gateway.openai.text("A rectangle.")
    image = {"type": "image_url", "image_url": {"url": data_url("PNG")}}
    answer = _post(gateway, {"model": MODEL, "messages": [{"role": "user", "content": [image]}]})
    assert conforming(ChatCompletion, answer.json()).choices[0].message.content == "A rectangle."


def test_tool_calls_plain_and_streamed(gateway: Gateway) -> None:
    script = ToolCallScript(id="call_1", name="get_weather", argument_pieces=['{"city":', ' "Paris"}'])
    gateway.openai.tool_calls([script])
    plain = _post(gateway, {"model": MODEL, "messages": [QUESTION], "tools": [WEATHER]})
    answer = conforming(ChatCompletion, plain.json())
    (call,) = answer.choices[0].message.tool_calls or []
    assert (call.type, call.id, answer.choices[0].finish_reason) == ("function", "call_1", "tool_calls")

    gateway.openai.tool_calls([script])
    body = {"model": MODEL, "messages": [QUESTION], "tools": [WEATHER], "stream": True}
    chunks = _streamed(_chunks(_post(gateway, body)))
    deltas = [d for c in chunks if c.choices for d in c.choices[0].delta.tool_calls or ()]
    assert (deltas[0].type, deltas[0].id) == ("function", "call_1")


def test_a_returned_assistant_message_goes_back_as_it_came(gateway: Gateway) -> None:
    """The SDK's own ``model_dump()`` of the message is the next request's message (nulls and all)."""
    sdk = openai.OpenAI(base_url=gateway.v1, api_key=token("dump"), timeout=REQUEST_SECONDS, max_retries=0)
    gateway.openai.tool_calls(
        [ToolCallScript(id="call_2", name="get_weather", argument_pieces=['{"city": "Oslo"}'])]
    )
    first = sdk.chat.completions.create(model=MODEL, messages=[QUESTION], tools=[WEATHER])  # type: ignore[list-item]
    message = first.choices[0].message
    assert message.tool_calls
    assert message.tool_calls[0].type == "function"
    gateway.openai.text("Cold.")
    second = sdk.chat.completions.create(
        model=MODEL,
        tools=[WEATHER],
        messages=[
            QUESTION,  # type: ignore[list-item]
            message.model_dump(),  # type: ignore[list-item]
            {"role": "tool", "tool_call_id": "call_2", "content": '{"celsius": -3}'},
        ],
    )
    assert second.choices[0].message.content == "Cold."
    sent = gateway.openai.requests[-1].json["messages"]
    assert sent[1]["tool_calls"][0]["id"] == "call_2"


ERRORS = (
    (
        "POST",
        "/chat/completions",
        {"model": "nobody/nothing", "messages": [QUESTION]},
        404,
        "model_not_found",
    ),
    ("POST", "/chat/completions", {"model": MODEL, "messages": "x"}, 400, "validation_failed"),
    ("GET", "/models/nobody/nothing", None, 404, "model_not_found"),
    ("POST", "/embeddings", {"model": MODEL, "input": "Hi"}, 404, "unknown_url"),
    ("GET", "/chat/completions", None, 405, "method_not_allowed"),
)


def test_each_error_is_openais_error_object(gateway: Gateway) -> None:
    for method, path, body, status, code in ERRORS:  # one server for all: each case is one request
        response = httpx.request(
            method, gateway.v1 + path, json=body, headers=_headers(), timeout=REQUEST_SECONDS
        )
        assert response.status_code == status, response.text
        assert conforming(ErrorAnswer, response.json()).error.code == code
    bad_token = {"Authorization": f"Bearer not-{uuid.uuid4().hex}"}
    response = httpx.get(f"{gateway.v1}/models", headers=bad_token, timeout=REQUEST_SECONDS)
    assert response.status_code == 401
    assert conforming(ErrorAnswer, response.json()).error.code == "invalid_token"


def test_a_failure_mid_stream_is_an_error_chunk(gateway: Gateway) -> None:
    gateway.openai.broken("Hel", "lo")
    response = _post(gateway, {"model": MODEL, "messages": [QUESTION], "stream": True})
    payloads = [line[6:] for line in response.text.split("\n") if line.startswith("data: ")]
    *chunks, last = [json.loads(p) for p in payloads]
    _streamed(chunks)
    assert conforming(ErrorAnswer, last).error.code == "provider_unavailable"

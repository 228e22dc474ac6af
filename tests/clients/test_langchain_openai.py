"""LangChain's ``ChatOpenAI`` pointed at ``/v1``: ``invoke`` and ``stream`` with usage, an image message (a
data URL), and ``bind_tools`` with a whole tool round (the model's call, the tool's answer as a
``ToolMessage``, the final answer)."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from langchain_core.messages import AIMessage, AIMessageChunk, HumanMessage, ToolMessage
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI

from tests.gateway.conftest import Gateway, data_url, token
from tests.support.fake_openai import ToolCallScript
from tests.support.waits import REQUEST_SECONDS

pytestmark = pytest.mark.parametrize("engine_name", ["sqlite"], indirect=True)


@tool
def get_weather(city: str) -> dict[str, Any]:
    """The weather in a city."""
    return {"city": city, "sky": "sunny"}


def chat(gateway: Gateway, **options: Any) -> ChatOpenAI:
    return ChatOpenAI(
        model="openai/gpt-4o",
        base_url=gateway.v1,
        api_key=token(f"lc-{uuid.uuid4().hex[:8]}"),  # type: ignore[arg-type]
        timeout=REQUEST_SECONDS,
        max_retries=0,
        **options,
    )


def test_invoke_and_stream_with_usage(gateway: Gateway) -> None:
    llm = chat(gateway, stream_usage=True)
    gateway.openai.text("Hello ", "there.", usage=(21, 7))
    answer = llm.invoke("Hi")
    assert answer.content == "Hello there."
    assert answer.response_metadata["finish_reason"] == "stop"
    assert answer.usage_metadata is not None
    assert (answer.usage_metadata["input_tokens"], answer.usage_metadata["output_tokens"]) == (21, 7)

    gateway.openai.text("Streamed ", "words.", usage=(30, 4))
    pieces = list(llm.stream("Hi again"))
    assert all(isinstance(p, AIMessageChunk) for p in pieces)
    whole = pieces[0]
    for piece in pieces[1:]:
        whole = whole + piece
    assert whole.content == "Streamed words."
    assert whole.usage_metadata is not None
    assert whole.usage_metadata["total_tokens"] == 34
    assert gateway.openai.requests[-1].json["stream"] is True


def test_an_image_message(gateway: Gateway) -> None:
    gateway.openai.text("A rectangle.")
    message = HumanMessage(
        content=[
            {"type": "text", "text": "What is it?"},
            {"type": "image_url", "image_url": {"url": data_url("PNG")}},
        ]
    )
    assert chat(gateway).invoke([message]).content == "A rectangle."
    sent = gateway.openai.requests[-1].json["messages"][-1]["content"]
    assert any(p["type"] == "image_url" and p["image_url"]["url"].startswith("data:image/") for p in sent)


def test_bind_tools_and_a_tool_round(gateway: Gateway) -> None:
    llm = chat(gateway).bind_tools([get_weather])
    question = HumanMessage(content="Weather in Lisbon?")
    gateway.openai.tool_calls(
        [ToolCallScript(id="call_lc", name="get_weather", argument_pieces=['{"city": ', '"Lisbon"}'])]
    )
    called = llm.invoke([question])
    assert isinstance(called, AIMessage)
    assert called.tool_calls == [
        {"name": "get_weather", "args": {"city": "Lisbon"}, "id": "call_lc", "type": "tool_call"}
    ]
    assert not called.invalid_tool_calls
    assert gateway.openai.requests[-1].json["tools"][0]["function"]["name"] == "get_weather"

    result = get_weather.invoke(called.tool_calls[0])
    assert isinstance(result, ToolMessage)
    gateway.openai.text("Sunny in Lisbon.")
    answer = llm.invoke([question, called, result])
    assert answer.content == "Sunny in Lisbon."
    sent = gateway.openai.requests[-1].json["messages"]
    assert sent[1]["tool_calls"][0]["id"] == "call_lc"
    assert sent[2]["role"] == "tool"
    assert sent[2]["tool_call_id"] == "call_lc"

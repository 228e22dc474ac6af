"""``/v1/responses`` behind the ingress: a Codex-CLI-shaped request recorded from Codex's documented
request (developer and user ``message`` items with ``id: null``, an encrypted ``reasoning`` item, a
``function_call`` and its output, flat function tools, ``store: false``, ``include``,
``prompt_cache_key``, ``stream: true`` and fields Iris does not know) replayed as a fixture; and each of
Iris's vendors, through its loopback fake, reached with a function-call round trip and an image, the
body it got still valid for the vendor's SDK types."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import openai
import pytest
from anthropic.types.message_create_params import MessageCreateParamsStreaming
from google.genai import types as genai
from openai.types.chat.completion_create_params import CompletionCreateParamsStreaming
from openai.types.responses import ResponseCompletedEvent
from pydantic import TypeAdapter

from tests.gateway.conftest import Gateway, data_url, token
from tests.support import fake_anthropic as fa
from tests.support import fake_gemini as fg
from tests.support.fake_openai import ToolCallScript
from tests.support.openai_sdk import client
from tests.support.responses_types import conforming_events, raw_stream

pytestmark = pytest.mark.parametrize("engine_name", ["sqlite"], indirect=True)

CODEX = json.loads(Path(__file__).with_name("fixtures").joinpath("codex_responses_request.json").read_text())
MODELS = {
    "openai": "openai/gpt-4o",
    "anthropic": "anthropic/claude-sonnet-4-5",
    "gemini": "gemini/gemini-2.5-flash",
}
TOOL = {
    "type": "function",
    "name": "get_weather",
    "parameters": {"type": "object", "properties": {}},
    "strict": False,
}


def test_a_codex_cli_request_replayed(gateway: Gateway) -> None:
    gateway.openai.text("There are ", "README.md and src.")
    response = raw_stream(gateway.v1, token("codex"), CODEX)
    assert response.status_code == 200, response.text
    events = conforming_events(response.text)
    last = events[-1]
    assert isinstance(last, ResponseCompletedEvent)
    assert last.response.output_text == "There are README.md and src."
    sent = gateway.openai.requests[-1].json
    TypeAdapter(CompletionCreateParamsStreaming).validate_python(sent)
    roles = [m["role"] for m in sent["messages"]]
    assert roles == ["system", "user", "user", "assistant", "tool"]  # the reasoning item is passed over
    assert sent["messages"][0]["content"].startswith("You are Codex")  # then the developer message
    assert "<permissions instructions>" in sent["messages"][0]["content"]
    assert sent["messages"][3]["tool_calls"][0]["function"]["name"] == "shell"
    assert sent["messages"][4]["tool_call_id"] == "call_codex_1"
    assert [t["function"]["name"] for t in sent["tools"]] == ["shell", "update_plan"]
    assert sent["parallel_tool_calls"] is False
    with pytest.raises(openai.NotFoundError):
        client(gateway, "codex").responses.retrieve(last.response.id)  # store: false kept nothing


def _script(gateway: Gateway, provider: str) -> None:
    """A call to ``get_weather``, then a text answer, from ``provider``."""
    if provider == "openai":
        gateway.openai.tool_calls([ToolCallScript(id="call_v", name="get_weather", argument_pieces=["{}"])])
        gateway.openai.text("Sunny.")
    elif provider == "anthropic":
        called = [
            fa.message_start(20),
            *fa.tool_block(0, "toolu_v", "get_weather", ["{}"]),
            *fa.message_end("tool_use", 5),
        ]
        gateway.anthropic.reply(called)
        gateway.anthropic.reply(fa.text_answer(["Sunny."]))
    else:
        gateway.gemini.reply(
            [fg.chunk([fg.function_call("get_weather", {})], finish="STOP", candidate_tokens=3)]
        )
        gateway.gemini.reply(fg.text_answer(["Sunny."]))


def _checked_body(gateway: Gateway, provider: str) -> Any:
    """The vendor's last request body, validated against its SDK's types."""
    if provider == "openai":
        body = gateway.openai.requests[-1].json
        TypeAdapter(CompletionCreateParamsStreaming).validate_python(body)
        return body["messages"]
    if provider == "anthropic":
        body = gateway.anthropic.requests[-1].json
        TypeAdapter(MessageCreateParamsStreaming).validate_python(body)
        return body["messages"]
    body = gateway.gemini.requests[-1].json
    return [genai.Content.model_validate(c) for c in body["contents"]]


@pytest.mark.parametrize("provider", ["openai", "anthropic", "gemini"])
def test_each_vendor_from_the_responses_api(gateway: Gateway, provider: str) -> None:
    _script(gateway, provider)
    sdk = client(gateway)
    question = [
        {
            "role": "user",
            "content": [
                {"type": "input_text", "text": "Weather here?"},
                {"type": "input_image", "image_url": data_url("PNG"), "detail": "auto"},
            ],
        }
    ]
    called = sdk.responses.create(model=MODELS[provider], input=question, tools=[TOOL])  # type: ignore[arg-type,list-item]
    (call,) = [item for item in called.output if item.type == "function_call"]
    first = _checked_body(gateway, provider)
    assert len(first) == 1
    events = list(
        sdk.responses.create(
            model=MODELS[provider],
            previous_response_id=called.id,
            input=[{"type": "function_call_output", "call_id": call.call_id, "output": '{"sky": "sunny"}'}],
            tools=[TOOL],  # type: ignore[list-item]
            stream=True,
        )
    )
    done = events[-1]
    assert isinstance(done, ResponseCompletedEvent)
    assert done.response.output_text == "Sunny."
    second = _checked_body(gateway, provider)
    assert len(second) == 3  # the question (with its image), the call, the tool's answer
    assert "sunny" in str(second[-1])

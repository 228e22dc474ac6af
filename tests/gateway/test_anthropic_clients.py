"""Clients of ``/v1/messages`` beyond a plain SDK call: a Claude-Code-shaped session replayed (its
headers, its streamed tool loop with thinking signed by Anthropic, ``count_tokens``), the SDK's
``models.list`` reading the catalogue in Anthropic's shape, and routing errors under ``/v1/messages``
in Anthropic's error shape."""

from __future__ import annotations

import json
from typing import Any

import anthropic
import httpx
import pytest
from anthropic.types.message_create_params import MessageCreateParamsStreaming
from openai.types.chat.completion_create_params import CompletionCreateParamsStreaming
from pydantic import TypeAdapter

from tests.gateway.conftest import Gateway, token
from tests.support import claude_code
from tests.support import fake_anthropic as fa
from tests.support.anthropic_sdk import anthropic_client
from tests.support.anthropic_types import conforming_event, sse_events
from tests.support.fake_openai import ToolCallScript
from tests.support.waits import REQUEST_SECONDS

pytestmark = pytest.mark.parametrize("engine_name", ["sqlite"], indirect=True)

SIGNATURE = "ErUBCkYIBBgCIkB0c2lnbmVk"


def _replay(
    gateway: Gateway, body: dict[str, Any], user: str = "claude-code"
) -> list[tuple[str, dict[str, Any]]]:
    response = httpx.post(
        gateway.base + claude_code.PATH,
        json=body,
        headers=claude_code.headers(token(user)),
        timeout=REQUEST_SECONDS,
    )
    assert response.status_code == 200, response.text
    frames = sse_events(response.text)
    for name, data in frames:
        if name != "ping":
            conforming_event(name, data)
    return frames


def _content(frames: list[tuple[str, dict[str, Any]]]) -> list[dict[str, Any]]:
    """The assistant's blocks as Claude Code rebuilds them from the stream, to send back."""
    blocks: list[dict[str, Any]] = []
    for name, data in frames:
        if name == "content_block_start":
            blocks.append(dict(data["content_block"]))
        elif name == "content_block_delta":
            delta, block = data["delta"], blocks[data["index"]]
            if delta["type"] == "thinking_delta":
                block["thinking"] += delta["thinking"]
            elif delta["type"] == "signature_delta":
                block["signature"] = delta["signature"]
            elif delta["type"] == "input_json_delta":
                block["partial"] = block.get("partial", "") + delta["partial_json"]
    for block in blocks:
        if "partial" in block:
            block["input"] = json.loads(block.pop("partial"))
    return blocks


def test_a_claude_code_session_on_an_anthropic_model(gateway: Gateway) -> None:
    gateway.anthropic.reply(
        [
            fa.message_start(1200),
            *fa.thinking_block(0, ["I should ", "read it."], SIGNATURE),
            *fa.tool_block(1, "toolu_01Read", "Read", ['{"file_path": ', '"/repo/package.json"}']),
            *fa.message_end("tool_use", 80),
        ]
    )
    first = claude_code.body("anthropic/claude-sonnet-4-5")
    frames = _replay(gateway, first)
    assert frames[-2][1]["delta"]["stop_reason"] == "tool_use"
    sent = gateway.anthropic.requests[-1].json
    TypeAdapter(MessageCreateParamsStreaming).validate_python(sent)
    assert sent["thinking"] == {"type": "enabled", "budget_tokens": 31999}
    assert sent["metadata"] == first["metadata"]
    assert sent["cache_control"] == {"type": "ephemeral"}
    assert [t["name"] for t in sent["tools"]] == ["Bash", "Read"]
    assistant = _content(frames)
    assert assistant[0] == {"type": "thinking", "thinking": "I should read it.", "signature": SIGNATURE}
    gateway.anthropic.reply(fa.text_answer(["Version ", "1.0.8."]))
    result = {"type": "tool_result", "tool_use_id": "toolu_01Read", "content": '{"version": "1.0.8"}'}
    second = {
        **first,
        "messages": [
            *first["messages"],
            {"role": "assistant", "content": assistant},
            {"role": "user", "content": [result]},
        ],
    }
    frames = _replay(gateway, second)
    text = "".join(d["delta"]["text"] for n, d in frames if n == "content_block_delta")
    assert text == "Version 1.0.8."
    sent = gateway.anthropic.requests[-1].json
    TypeAdapter(MessageCreateParamsStreaming).validate_python(sent)
    assert sent["messages"][-2]["content"][0] == assistant[0]  # the signature, unchanged


def test_a_claude_code_session_on_another_vendor(gateway: Gateway) -> None:
    """``ANTHROPIC_MODEL=openai/gpt-4o``: the same request, tools and all, reaches OpenAI."""
    call = ToolCallScript(id="call_r", name="Read", argument_pieces=['{"file_path": "/repo/package.json"}'])
    gateway.openai.tool_calls([call])
    frames = _replay(gateway, claude_code.body("openai/gpt-4o"))
    (use,) = [b for b in _content(frames) if b["type"] == "tool_use"]
    assert (use["id"], use["input"]) == ("call_r", {"file_path": "/repo/package.json"})
    sent = gateway.openai.requests[-1].json
    TypeAdapter(CompletionCreateParamsStreaming).validate_python(sent)
    assert sent["messages"][0]["role"] == "system"
    assert "Claude Code" in sent["messages"][0]["content"]
    assert "cache_control" not in str(sent)


def test_claude_codes_count_tokens(gateway: Gateway) -> None:
    body = {
        k: v
        for k, v in claude_code.body("anthropic/claude-sonnet-4-5").items()
        if k in ("model", "messages", "system", "tools", "thinking")
    }
    response = httpx.post(
        gateway.base + "/v1/messages/count_tokens?beta=true",
        json=body,
        headers=claude_code.headers(token("claude-code")),
        timeout=REQUEST_SECONDS,
    )
    assert response.status_code == 200, response.text
    assert set(response.json()) == {"input_tokens"}
    assert response.json()["input_tokens"] > 50
    assert gateway.anthropic.requests == []


def test_the_sdk_lists_the_catalogue_in_anthropics_shape(gateway: Gateway) -> None:
    sdk = anthropic_client(gateway)
    models = list(sdk.models.list())
    ids = [m.id for m in models]
    assert {"openai/gpt-4o", "anthropic/claude-sonnet-4-5", "gemini/gemini-2.5-flash"} <= set(ids)
    assert {m.type for m in models} == {"model"}
    assert all(m.display_name and m.created_at.tzinfo for m in models)
    one = sdk.models.retrieve("anthropic/claude-sonnet-4-5")
    assert (one.id, one.type) == ("anthropic/claude-sonnet-4-5", "model")
    plain = httpx.get(
        gateway.v1 + "/models", headers={"Authorization": f"Bearer {token('x')}"}, timeout=REQUEST_SECONDS
    )
    assert plain.json()["object"] == "list"  # OpenAI's clients keep OpenAI's shape


ROUTING_ERRORS = (
    ("POST", "/v1/messages/batches", 404, "not_found_error"),
    ("GET", "/v1/messages/nothing/here", 404, "not_found_error"),
    ("GET", "/v1/messages", 405, "invalid_request_error"),
    ("GET", "/v1/messages/count_tokens", 405, "invalid_request_error"),
)


def test_routing_errors_under_v1_messages_are_anthropics_shape(gateway: Gateway) -> None:
    headers = {"x-api-key": token("router"), "anthropic-version": "2023-06-01"}
    for method, path, status, kind in ROUTING_ERRORS:
        response = httpx.request(method, gateway.base + path, headers=headers, timeout=REQUEST_SECONDS)
        assert response.status_code == status, (path, response.text)
        assert response.headers["content-type"].startswith("application/json")
        body = response.json()
        assert body["type"] == "error"
        assert body["error"]["type"] == kind
        assert path in body["error"]["message"]
    unauthenticated = httpx.post(gateway.base + "/v1/messages", json={}, timeout=REQUEST_SECONDS)
    assert unauthenticated.json()["error"] == {
        "type": "authentication_error",
        "message": unauthenticated.json()["error"]["message"],
        "details": {"error_code": "missing_token"},
    }
    with pytest.raises(anthropic.NotFoundError):
        anthropic_client(gateway).messages.batches.create(requests=[])

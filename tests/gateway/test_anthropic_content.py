"""``/v1/messages`` with content beyond text, through the ``anthropic`` SDK: images and PDFs reaching
each vendor in its own format (the vendor's body valid against that vendor's SDK types), a tool round
trip whose result carries an image, and a thinking round trip whose signature reaches Anthropic
unchanged."""

from __future__ import annotations

import base64
from typing import Any

import httpx
import pytest
from anthropic.types import Message, MessageParam, ToolParam
from anthropic.types.message_create_params import MessageCreateParamsStreaming
from google.genai import types as genai
from openai.types.chat.completion_create_params import CompletionCreateParamsStreaming
from pydantic import TypeAdapter

from iris.app.security.auth import issue_token
from tests.conftest import JWT_SECRET
from tests.gateway.conftest import Gateway
from tests.support import fake_anthropic as fa
from tests.support import fake_gemini as fg
from tests.support.anthropic_sdk import anthropic_client
from tests.support.anthropic_types import conforming
from tests.support.documents import text_pdf
from tests.support.images import image_bytes
from tests.support.waits import REQUEST_SECONDS

pytestmark = pytest.mark.parametrize("engine_name", ["sqlite"], indirect=True)

PDF = text_pdf(["Quarterly report\nRevenue rose.", "Page two"])
PNG = image_bytes("PNG", (64, 48))
SIGNATURE = "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds"
MULTIMODAL = {
    "openai": ("gpt-4o-audio-preview", "openai/gpt-4o-audio-preview"),
    "anthropic": ("claude-opus-4-1", "anthropic/claude-opus-4-1"),
    "gemini": ("gemini-2.5-pro", "gemini/gemini-2.5-pro"),
}
WEATHER: ToolParam = {
    "name": "get_weather",
    "description": "The weather in a city, with its radar picture.",
    "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
}


@pytest.fixture
def multimodal(gateway: Gateway) -> Gateway:
    """One ``multimodal`` catalogue row per fake (the gateway's own rows take images only)."""
    admin = {"Authorization": f"Bearer {issue_token(JWT_SECRET, 'root', role='admin')}"}
    listed = httpx.get(f"{gateway.base}/api/models", headers=admin, timeout=REQUEST_SECONDS).json()["models"]
    bases = {m["provider"]: m["options"]["baseUrl"] for m in listed if m["provider"] in MULTIMODAL}
    for provider, (model_id, _) in MULTIMODAL.items():
        body = {
            "name": model_id,
            "provider": provider,
            "modelId": model_id,
            "type": "multimodal",
            "options": {"baseUrl": bases[provider]},
        }
        created = httpx.post(f"{gateway.base}/api/models", json=body, headers=admin, timeout=REQUEST_SECONDS)
        assert created.status_code == 201, created.text
    return gateway


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def _image_and_pdf() -> list[MessageParam]:
    return [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "What are these?"},
                {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": _b64(PNG)}},
                {
                    "type": "document",
                    "source": {"type": "base64", "media_type": "application/pdf", "data": _b64(PDF)},
                    "title": "report.pdf",
                    "cache_control": {"type": "ephemeral"},
                },
            ],
        }
    ]


def _vendor_blocks(gateway: Gateway, provider: str) -> list[str]:
    """The kinds of the last user turn's blocks as the vendor got them, its body validated against the
    vendor SDK's own request type."""
    if provider == "openai":
        body = gateway.openai.requests[-1].json
        TypeAdapter(CompletionCreateParamsStreaming).validate_python(body)
        return [p["type"] for p in body["messages"][-1]["content"]]
    if provider == "anthropic":
        body = gateway.anthropic.requests[-1].json
        TypeAdapter(MessageCreateParamsStreaming).validate_python(body)
        return [b["type"] for b in body["messages"][-1]["content"]]
    content = genai.Content.model_validate(gateway.gemini.requests[-1].json["contents"][-1])
    return [
        "text" if p.text else str(p.inline_data.mime_type) if p.inline_data else "other"
        for p in content.parts or []
    ]


@pytest.mark.parametrize("provider", ["openai", "anthropic", "gemini"])
def test_an_image_and_a_pdf_reach_each_vendor_natively(multimodal: Gateway, provider: str) -> None:
    _, model = MULTIMODAL[provider]
    if provider == "openai":
        multimodal.openai.text("Read ", "it.")
    elif provider == "anthropic":
        multimodal.anthropic.reply(fa.text_answer(["Read ", "it."]))
    else:
        multimodal.gemini.reply(fg.text_answer(["Read ", "it."]))
    answer = anthropic_client(multimodal).messages.create(
        model=model, max_tokens=64, messages=_image_and_pdf()
    )
    assert answer.content[0].text == "Read it."  # type: ignore[union-attr]
    expected = {
        "openai": ["text", "image_url", "file"],
        "anthropic": ["text", "image", "document"],
        "gemini": ["text", "image/png", "application/pdf"],
    }
    assert _vendor_blocks(multimodal, provider) == expected[provider]
    if provider == "anthropic":
        document = multimodal.anthropic.requests[-1].json["messages"][-1]["content"][-1]
        assert document["source"] == {"type": "base64", "media_type": "application/pdf", "data": _b64(PDF)}
        assert multimodal.anthropic.requests[-1].json["cache_control"] == {"type": "ephemeral"}


def test_what_cannot_be_taken_is_a_bad_request_before_the_vendor(multimodal: Gateway) -> None:
    sdk = anthropic_client(multimodal)
    cases: list[tuple[dict[str, Any], str]] = [
        (
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "@@"}},
            "invalid_base64",
        ),
        (
            {"type": "image", "source": {"type": "url", "url": "https://example.com/a.png"}},
            "attachment_url_rejected",
        ),
        (
            {
                "type": "document",
                "source": {"type": "base64", "media_type": "application/pdf", "data": _b64(PNG)},
            },
            "unsupported_media_type",
        ),
    ]
    for block, code in cases:
        messages: Any = [{"role": "user", "content": [{"type": "text", "text": "x"}, block]}]
        raw = sdk.messages.with_raw_response
        with pytest.raises(Exception) as raised:  # noqa: PT011 - the class is checked below
            raw.create(model="anthropic/claude-opus-4-1", max_tokens=8, messages=messages)
        assert type(raised.value).__name__ == "BadRequestError", raised.value
        assert raised.value.error_code == code  # type: ignore[attr-defined]
    assert multimodal.anthropic.requests == []


def _first_turn(gateway: Gateway) -> Message:
    """A thinking, signed answer that calls a tool, streamed through the SDK's helper."""
    gateway.anthropic.reply(
        [
            fa.message_start(40),
            *fa.thinking_block(0, ["Radar ", "first."], SIGNATURE),
            *fa.redacted_thinking_block(1, "cmVkYWN0ZWQ="),
            *fa.tool_block(2, "toolu_01", "get_weather", ['{"city": ', '"Oslo"}']),
            *fa.message_end("tool_use", 30),
        ]
    )
    with anthropic_client(gateway, user="thinker").messages.stream(
        model="anthropic/claude-sonnet-4-5",
        max_tokens=8192,
        thinking={"type": "enabled", "budget_tokens": 4096},
        tools=[WEATHER],
        messages=[{"role": "user", "content": "Weather in Oslo?"}],
    ) as stream:
        deltas = [e.delta.type for e in stream if e.type == "content_block_delta"]
        final = stream.get_final_message()
    assert deltas == [
        "thinking_delta",
        "thinking_delta",
        "signature_delta",
        "input_json_delta",
        "input_json_delta",
    ]
    first = gateway.anthropic.requests[-1].json
    assert first["thinking"] == {"type": "enabled", "budget_tokens": 4096}
    return final


def test_a_thinking_round_trip_keeps_the_signature_and_the_tool_result_image(gateway: Gateway) -> None:
    final = _first_turn(gateway)
    conforming(Message, final.model_dump(mode="json"))
    assert [b.type for b in final.content] == ["thinking", "redacted_thinking", "tool_use"]
    thinking = final.content[0]
    assert (thinking.thinking, thinking.signature) == ("Radar first.", SIGNATURE)  # type: ignore[union-attr]
    gateway.anthropic.reply(fa.text_answer(["Snow."]))
    radar = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": _b64(PNG)}}
    result: Any = {
        "type": "tool_result",
        "tool_use_id": "toolu_01",
        "content": [{"type": "text", "text": "-3 C"}, radar],
    }
    answer = anthropic_client(gateway, user="thinker").messages.create(
        model="anthropic/claude-sonnet-4-5",
        max_tokens=8192,
        thinking={"type": "enabled", "budget_tokens": 4096},
        tools=[WEATHER],
        messages=[
            {"role": "user", "content": "Weather in Oslo?"},
            {"role": "assistant", "content": final.content},
            {"role": "user", "content": [result]},
        ],
    )
    assert answer.content[0].text == "Snow."  # type: ignore[union-attr]
    body = gateway.anthropic.requests[-1].json
    TypeAdapter(MessageCreateParamsStreaming).validate_python(body)
    assistant, tool_turn = body["messages"][-2:]
    assert assistant["content"] == [
        {"type": "thinking", "thinking": "Radar first.", "signature": SIGNATURE},
        {"type": "redacted_thinking", "data": "cmVkYWN0ZWQ="},
        {"type": "tool_use", "id": "toolu_01", "name": "get_weather", "input": {"city": "Oslo"}},
    ]
    (returned,) = tool_turn["content"]
    assert returned["tool_use_id"] == "toolu_01"
    assert [b["type"] for b in returned["content"]] == ["text", "image"]
    assert returned["content"][0]["text"].startswith("-3 C")  # and a line naming the image


def test_thinking_passed_back_to_another_vendor_is_dropped(gateway: Gateway) -> None:
    """A signature is Anthropic's: the OpenAI model gets the tool history without it."""
    gateway.openai.text("Fine.")
    anthropic_client(gateway).messages.create(
        model="openai/gpt-4o",
        max_tokens=64,
        tools=[WEATHER],
        messages=[
            {"role": "user", "content": "Weather in Oslo?"},
            {
                "role": "assistant",
                "content": [
                    {"type": "thinking", "thinking": "Radar first.", "signature": SIGNATURE},
                    {"type": "tool_use", "id": "toolu_01", "name": "get_weather", "input": {"city": "Oslo"}},
                ],
            },
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "toolu_01", "content": "-3 C"}],
            },
        ],
    )
    body = gateway.openai.requests[-1].json
    TypeAdapter(CompletionCreateParamsStreaming).validate_python(body)
    assert SIGNATURE not in str(body)
    assert body["messages"][-1] == {"role": "tool", "tool_call_id": "toolu_01", "content": "-3 C"}


def test_count_tokens_counts_pdf_pages_at_the_vendors_rate(multimodal: Gateway) -> None:
    """Anthropic publishes about 2,534 tokens a PDF page read natively (``VendorFacts``)."""
    pdf: Any = {
        "type": "document",
        "source": {"type": "base64", "media_type": "application/pdf", "data": _b64(PDF)},
    }
    messages: Any = [{"role": "user", "content": [{"type": "text", "text": "a" * 40}, pdf]}]
    counted = anthropic_client(multimodal).messages.count_tokens(
        model="anthropic/claude-opus-4-1", messages=messages
    )
    assert counted.input_tokens == 10 + 2 * 2534
    assert multimodal.anthropic.requests == []

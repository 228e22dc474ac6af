"""PDFs (OpenAI ``file`` parts) and audio (``input_audio``) through ``/v1/chat/completions`` with the
official ``openai`` SDK as the caller: checked like uploads and kept in memory, sent natively to each
vendor's loopback fake (bodies validated against the vendors' SDK types), streamed and not; a vision
model without native PDF reading gets the text and the scanned pages as images; what cannot be taken is
a ``BadRequestError`` with Iris's code, before any vendor call."""

from __future__ import annotations

import base64
import io
import uuid
from typing import Any

import httpx
import openai
import pytest
from anthropic.types.message_create_params import MessageCreateParamsStreaming
from google.genai import types as genai
from openai.types.chat import ChatCompletionContentPartParam
from openai.types.chat.completion_create_params import CompletionCreateParamsStreaming
from PIL import Image
from pydantic import TypeAdapter

from iris.app.security.auth import issue_token
from tests.conftest import JWT_SECRET
from tests.gateway.conftest import Gateway, data_url, token
from tests.support import fake_anthropic as fa
from tests.support import fake_gemini as fg
from tests.support.documents import (
    IMAGE_CONTENT,
    build_pdf,
    many_pages_pdf,
    mp3_bytes,
    text_content,
    text_pdf,
    wav_bytes,
)
from tests.support.images import image_bytes
from tests.support.openapi import document as served_document
from tests.support.waits import REQUEST_SECONDS

pytestmark = pytest.mark.parametrize("engine_name", ["sqlite"], indirect=True)

PDF = text_pdf(["Quarterly report\nRevenue rose.", "Page two"])
WAV = wav_bytes(1.5)
MP3 = mp3_bytes(40)
MULTIMODAL = {
    "openai": ("gpt-4o-audio-preview", "openai/gpt-4o-audio-preview"),
    "anthropic": ("claude-opus-4-1", "anthropic/claude-opus-4-1"),
    "gemini": ("gemini-2.5-pro", "gemini/gemini-2.5-pro"),
}
"""One ``multimodal`` catalogue row per fake (the gateway's own rows are ``vision``: images only)."""


@pytest.fixture
def multimodal(gateway: Gateway) -> Gateway:
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


def client(gateway: Gateway) -> openai.OpenAI:
    return openai.OpenAI(
        base_url=gateway.v1,
        api_key=token(f"u-{uuid.uuid4().hex[:8]}"),
        timeout=REQUEST_SECONDS,
        max_retries=0,
    )


def file_part(data: bytes = PDF, filename: str = "report.pdf") -> ChatCompletionContentPartParam:
    encoded = base64.b64encode(data).decode()
    return {
        "type": "file",
        "file": {"file_data": f"data:application/pdf;base64,{encoded}", "filename": filename},
    }


def audio_part(data: bytes = WAV, fmt: str = "wav") -> ChatCompletionContentPartParam:
    return {
        "type": "input_audio",
        "input_audio": {"data": base64.b64encode(data).decode(), "format": fmt},  # type: ignore[typeddict-item]
    }


def ask(sdk: openai.OpenAI, model: str, *parts: ChatCompletionContentPartParam, stream: bool) -> str:
    """The answer's text, streamed or not."""
    content: list[ChatCompletionContentPartParam] = [{"type": "text", "text": "What is this?"}, *parts]
    messages: Any = [{"role": "user", "content": content}]
    if stream:
        chunks = sdk.chat.completions.create(model=model, messages=messages, stream=True)
        return "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    return sdk.chat.completions.create(model=model, messages=messages).choices[0].message.content or ""


def reply(gateway: Gateway, provider: str) -> None:
    if provider == "openai":
        gateway.openai.text("Read ", "it.")
    elif provider == "anthropic":
        gateway.anthropic.reply(fa.text_answer(["Read ", "it."]))
    else:
        gateway.gemini.reply(fg.text_answer(["Read ", "it."]))


def openai_user_content(gateway: Gateway) -> list[dict[str, Any]]:
    """The last request's user content, the body validated against the SDK's types (Iris always
    streams from the vendor, whether or not its own caller asked for a stream)."""
    body = gateway.openai.requests[-1].json
    assert body["stream"] is True
    TypeAdapter(CompletionCreateParamsStreaming).validate_python(body)
    content: list[dict[str, Any]] = body["messages"][-1]["content"]
    return content


def gemini_parts(gateway: Gateway) -> list[genai.Part]:
    return genai.Content.model_validate(gateway.gemini.requests[-1].json["contents"][-1]).parts or []


@pytest.mark.parametrize("provider", ["openai", "anthropic", "gemini"])
def test_a_pdf_file_part_reaches_each_vendor_natively(multimodal: Gateway, provider: str) -> None:
    _, model = MULTIMODAL[provider]
    encoded = base64.b64encode(PDF).decode()
    for stream in (True, False):
        reply(multimodal, provider)

        assert ask(client(multimodal), model, file_part(), stream=stream) == "Read it."

        if provider == "openai":
            files = [p for p in openai_user_content(multimodal) if p["type"] == "file"]
            assert files == [
                {
                    "type": "file",
                    "file": {"filename": "report.pdf", "file_data": f"data:application/pdf;base64,{encoded}"},
                }
            ]
        elif provider == "anthropic":
            body = multimodal.anthropic.requests[-1].json
            TypeAdapter(MessageCreateParamsStreaming).validate_python(body)
            (block,) = [b for b in body["messages"][-1]["content"] if b["type"] == "document"]
            assert block == {
                "type": "document",
                "source": {"type": "base64", "media_type": "application/pdf", "data": encoded},
                "title": "report.pdf",
            }
        else:
            (pdf,) = [p for p in gemini_parts(multimodal) if p.inline_data is not None]
            assert pdf.inline_data is not None
            assert (pdf.inline_data.mime_type, pdf.inline_data.data) == ("application/pdf", PDF)


@pytest.mark.parametrize(("provider", "clip", "fmt"), [("openai", WAV, "wav"), ("gemini", MP3, "mp3")])
def test_input_audio_reaches_the_vendors_that_hear_natively(
    multimodal: Gateway, provider: str, clip: bytes, fmt: str
) -> None:
    _, model = MULTIMODAL[provider]
    for stream in (True, False):
        reply(multimodal, provider)

        assert ask(client(multimodal), model, audio_part(clip, fmt), stream=stream) == "Read it."

        if provider == "openai":
            audio = [p for p in openai_user_content(multimodal) if p["type"] == "input_audio"]
            assert audio == [
                {
                    "type": "input_audio",
                    "input_audio": {"data": base64.b64encode(clip).decode(), "format": fmt},
                }
            ]
        else:
            (heard,) = [p for p in gemini_parts(multimodal) if p.inline_data is not None]
            assert heard.inline_data is not None
            assert (heard.inline_data.mime_type, heard.inline_data.data) == ("audio/mp3", clip)


def test_a_vision_model_without_native_pdf_gets_the_text_and_the_scanned_pages(gateway: Gateway) -> None:
    """``openai/gpt-4o`` here is a ``vision`` row: it reads images, not PDFs."""
    gateway.openai.text("A cover and a scan.")
    scanned = build_pdf([text_content(["Typed cover page"]), IMAGE_CONTENT])

    answer = ask(client(gateway), "openai/gpt-4o", file_part(scanned, "scan.pdf"), stream=False)

    assert answer == "A cover and a scan."
    content = openai_user_content(gateway)
    assert not [p for p in content if p["type"] == "file"]
    text = "\n".join(p["text"] for p in content if p["type"] == "text")
    assert "[page 1]\nTyped cover page" in text
    assert "[page 2: no text; sent as an image after this text]" in text
    (image,) = [p for p in content if p["type"] == "image_url"]
    url = image["image_url"]["url"]
    assert url.startswith("data:image/png;base64,")
    with Image.open(io.BytesIO(base64.b64decode(url.split(",", 1)[1]))) as page:
        assert page.format == "PNG"


REFUSED: dict[str, tuple[str, Any, str, str | None]] = {
    "file_id": (
        "openai/gpt-4o-audio-preview",
        {"type": "file", "file": {"file_id": "file-abc123"}},
        "file_source_unsupported",
        "messages[0].content[1].file.file_id",
    ),
    "an-image-as-a-pdf": (
        "openai/gpt-4o-audio-preview",
        {"type": "file", "file": {"file_data": data_url(), "filename": "cat.pdf"}},
        "unsupported_media_type",
        "messages[0].content[1].file.file_data",
    ),
    "encrypted": (
        "openai/gpt-4o-audio-preview",
        file_part(text_pdf(["secret"], user_password="pw")),
        "document_encrypted",
        "messages[0].content[1].file.file_data",
    ),
    "too-many-pages": (
        "openai/gpt-4o-audio-preview",
        file_part(many_pages_pdf(101)),
        "document_too_many_pages",
        "messages[0].content[1].file.file_data",
    ),
    "broken": (
        "openai/gpt-4o-audio-preview",
        file_part(b"%PDF-1.7\nnot really a PDF"),
        "document_undecodable",
        "messages[0].content[1].file.file_data",
    ),
    "not-base64-data-url": (
        "openai/gpt-4o-audio-preview",
        {"type": "file", "file": {"file_data": "data:application/pdf,plain", "filename": "a.pdf"}},
        "invalid_data_url",
        "messages[0].content[1].file.file_data",
    ),
    "bad-base64-audio": (
        "openai/gpt-4o-audio-preview",
        {"type": "input_audio", "input_audio": {"data": "not base64!", "format": "wav"}},
        "invalid_base64",
        "messages[0].content[1].input_audio.data",
    ),
    "declared-mp3-is-wav": (
        "openai/gpt-4o-audio-preview",
        audio_part(WAV, "mp3"),
        "unsupported_media_type",
        "messages[0].content[1].input_audio.data",
    ),
    "an-image-as-audio": (
        "openai/gpt-4o-audio-preview",
        audio_part(image_bytes("PNG", (8, 8))),
        "unsupported_media_type",
        "messages[0].content[1].input_audio.data",
    ),
    "anthropic-hears-nothing": ("anthropic/claude-opus-4-1", audio_part(), "unsupported_part", None),
    "a-vision-row-hears-nothing": ("openai/gpt-4o", audio_part(), "unsupported_part", None),
}
"""Each refusal: the model, the part, the code and the ``param`` the SDK's error carries."""


def test_what_cannot_be_taken_is_a_bad_request_before_the_vendor(multimodal: Gateway) -> None:
    sdk = client(multimodal)
    for name, (model, part, code, param) in REFUSED.items():
        with pytest.raises(openai.BadRequestError) as raised:
            ask(sdk, model, part, stream=False)
        assert (raised.value.code, raised.value.param) == (code, param), name
    assert multimodal.openai.requests == []
    assert multimodal.anthropic.requests == []


def test_more_documents_than_a_message_may_carry_are_refused_before_any_is_read(multimodal: Gateway) -> None:
    broken = file_part(b"%PDF-1.7\nnot really a PDF")  # never opened: the count is checked first
    with pytest.raises(openai.BadRequestError) as raised:
        ask(client(multimodal), "openai/gpt-4o-audio-preview", *[broken] * 6, stream=False)
    assert raised.value.code == "too_many_document"
    assert raised.value.param == "messages[0].content"
    with pytest.raises(openai.BadRequestError) as raised:
        ask(client(multimodal), "openai/gpt-4o-audio-preview", audio_part(), audio_part(), stream=True)
    assert raised.value.code == "too_many_audio"


def test_the_openapi_document_describes_the_parts_and_their_refusals(engine_name: str) -> None:
    document = served_document()
    user = document["components"]["schemas"]["OpenAIUserMessage"]["properties"]["content"]["anyOf"][1]
    assert {"file", "input_audio"} <= set(user["items"]["discriminator"]["mapping"])
    answer = document["paths"]["/v1/chat/completions"]["post"]["responses"]["400"]
    (_, shape) = answer["content"]["application/json"]["schema"]["allOf"]
    documented = set(shape["properties"]["error"]["properties"]["code"]["enum"])
    provoked = {code for _, _, code, _ in REFUSED.values()} | {"too_many_document", "too_many_audio"}
    assert provoked <= documented

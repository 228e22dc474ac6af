"""PDFs and audio reach every vendor as its own native block, the bodies checked against the vendors'
own SDK types, and each loopback fake receives them over real HTTP; a model that does not declare them
refuses them before any request (never a silent drop)."""

from __future__ import annotations

import base64
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from anthropic.types.message_create_params import MessageCreateParamsStreaming
from google.genai import types as genai
from ollama import Image as OllamaImage
from ollama import Message as OllamaMessage
from openai.types.chat.completion_create_params import CompletionCreateParamsStreaming
from pydantic import TypeAdapter

from iris.providers import (
    AudioPart,
    DocumentPart,
    Message,
    ModelSpec,
    ProviderContext,
    RequestOptions,
    TextPart,
)
from iris.providers.anthropic import create as anthropic
from iris.providers.errors import UnsupportedPartError
from iris.providers.gemini import create as gemini
from iris.providers.litellm import create as litellm
from iris.providers.local import create as local
from iris.providers.ollama import create as ollama
from iris.providers.openai import create as openai
from tests.providers.helpers import KEY, collect
from tests.support import fake_anthropic as fa
from tests.support import fake_gemini as fg
from tests.support.documents import mp3_bytes, mp3_seconds, text_pdf, wav_bytes
from tests.support.fake_anthropic import FakeAnthropic
from tests.support.fake_gemini import FakeGemini
from tests.support.fake_ollama import FakeOllama
from tests.support.fake_openai import FakeOpenAI
from tests.support.fresh_interpreter import run_fresh
from tests.support.http_server import serve_asgi

PDF = text_pdf(["Quarterly report\nRevenue rose.", "Page two"])
PDF_B64 = base64.b64encode(PDF).decode()
WAV = wav_bytes(1.5)
WAV_B64 = base64.b64encode(WAV).decode()
MP3 = mp3_bytes(40)


def document(data: bytes = PDF, name: str = "report.pdf", pages: int = 2) -> DocumentPart:
    return DocumentPart(mime_type="application/pdf", data=data, name=name, pages=pages)


def wav(seconds: float = 1.5) -> AudioPart:
    return AudioPart(mime_type="audio/wav", data=WAV, name="note.wav", seconds=seconds)


def ask(*parts: DocumentPart | AudioPart) -> list[Message]:
    return [Message(role="user", parts=(TextPart(text="What is this?"), *parts))]


def spec(provider: str, model_id: str, type_: Any = "multimodal", **options: Any) -> ModelSpec:
    return ModelSpec(provider=provider, model_id=model_id, type=type_, options=options)


def context(http: httpx.AsyncClient, **environ: str) -> ProviderContext:
    return ProviderContext(environ=environ, http=http)


# -- OpenAI Chat Completions -------------------------------------------------------------------------


@pytest.fixture
def openai_fake() -> Iterator[tuple[FakeOpenAI, str]]:
    server = FakeOpenAI(api_key=KEY)
    with serve_asgi(server.app) as url:
        yield server, url


async def test_openai_gets_a_file_part_and_input_audio(
    openai_fake: tuple[FakeOpenAI, str], http: httpx.AsyncClient
) -> None:
    server, url = openai_fake
    server.text("Read.")
    provider = openai(context(http, OPENAI_API_KEY=KEY))
    model = spec("openai", "gpt-4o-audio-preview", baseUrl=f"{url}/v1")
    messages = ask(document(), wav())

    await collect(provider.stream(messages, model, RequestOptions()))

    [request] = server.requests
    TypeAdapter(CompletionCreateParamsStreaming).validate_python(request.json)
    _, file, audio = request.json["messages"][0]["content"]
    assert file == {
        "type": "file",
        "file": {"filename": "report.pdf", "file_data": f"data:application/pdf;base64,{PDF_B64}"},
    }
    assert audio == {"type": "input_audio", "input_audio": {"data": WAV_B64, "format": "wav"}}


def test_openai_sends_mp3_as_mp3_and_declares_audio_by_model(http: httpx.AsyncClient) -> None:
    provider = openai(context(http))
    clip = AudioPart(mime_type="audio/mpeg", data=MP3, seconds=mp3_seconds(40))
    body = provider.build_request(ask(clip), spec("openai", "gpt-audio"), RequestOptions())
    assert body["messages"][0]["content"][1]["input_audio"]["format"] == "mp3"
    caps = provider.capabilities(spec("openai", "gpt-4o"))
    assert caps.documents.pdf
    assert caps.documents.max_pages == 100
    assert not caps.audio.supported  # gpt-4o reads PDFs but hears no audio
    with pytest.raises(UnsupportedPartError, match="hears no audio"):
        provider.build_request(ask(wav()), spec("openai", "gpt-4o"), RequestOptions())
    assert provider.capabilities(spec("openai", "gpt-4o", audio=True)).audio.supported


# -- Anthropic ---------------------------------------------------------------------------------------


async def test_anthropic_gets_a_base64_document_block_titled_by_its_name(http: httpx.AsyncClient) -> None:
    fake = FakeAnthropic(api_key=KEY)
    fake.reply(fa.text_answer(["Read."]))
    with serve_asgi(fake.app) as url:
        provider = anthropic(context(http, ANTHROPIC_API_KEY=KEY, ANTHROPIC_BASE_URL=url))
        await collect(
            provider.stream(ask(document()), spec("anthropic", "claude-sonnet-4-5"), RequestOptions())
        )

    [request] = fake.requests
    TypeAdapter(MessageCreateParamsStreaming).validate_python(request.json)
    assert request.json["messages"][0]["content"][1] == {
        "type": "document",
        "source": {"type": "base64", "media_type": "application/pdf", "data": PDF_B64},
        "title": "report.pdf",
    }


def test_anthropic_refuses_audio_and_pdfs_over_100_pages(http: httpx.AsyncClient) -> None:
    provider = anthropic(context(http))
    model = spec("anthropic", "claude-sonnet-4-5")
    assert not provider.capabilities(model).audio.supported
    with pytest.raises(UnsupportedPartError, match="hears no audio"):
        provider.build_request(ask(wav()), model, RequestOptions())
    with pytest.raises(UnsupportedPartError, match="101 pages"):
        provider.build_request(ask(document(pages=101)), model, RequestOptions())


# -- Gemini ------------------------------------------------------------------------------------------


async def test_gemini_gets_inline_data_for_both(http: httpx.AsyncClient) -> None:
    fake = FakeGemini(api_key=KEY)
    fake.reply(fg.text_answer(["Read."]))
    clip = AudioPart(mime_type="audio/mpeg", data=MP3, seconds=mp3_seconds(40))
    with serve_asgi(fake.app) as url:
        provider = gemini(context(http, GEMINI_API_KEY=KEY, GEMINI_BASE_URL=url))
        await collect(
            provider.stream(ask(document(), clip), spec("gemini", "gemini-2.5-flash"), RequestOptions())
        )

    [request] = fake.requests
    (content,) = request.json["contents"]
    parsed = genai.Content.model_validate(content)
    _, pdf, audio = parsed.parts or []
    assert pdf.inline_data is not None
    assert pdf.inline_data.mime_type == "application/pdf"
    assert pdf.inline_data.data == PDF
    assert audio.inline_data is not None
    assert audio.inline_data.mime_type == "audio/mp3"
    assert audio.inline_data.data == MP3


def test_gemini_vision_rows_read_images_only(http: httpx.AsyncClient) -> None:
    provider = gemini(context(http))
    caps = provider.capabilities(spec("gemini", "gemini-2.5-flash", "vision"))
    assert caps.vision
    assert not caps.documents.pdf
    assert not caps.audio.supported
    with pytest.raises(UnsupportedPartError, match="reads no documents"):
        provider.build_request(
            ask(document()), spec("gemini", "gemini-2.5-flash", "vision"), RequestOptions()
        )


# -- Ollama ------------------------------------------------------------------------------------------


async def test_ollama_audio_models_get_the_bytes_in_images(http: httpx.AsyncClient) -> None:
    fake = FakeOllama(model="gemma4")
    fake.text("Heard.")
    with serve_asgi(fake.app) as url:
        model = spec("ollama", "gemma4", audio=True, baseUrl=url)
        await collect(ollama(context(http)).stream(ask(wav()), model, RequestOptions()))

    [request] = fake.requests
    (message,) = request.json["messages"]
    OllamaMessage.model_validate({**message, "images": [OllamaImage(value=i) for i in message["images"]]})
    assert message["images"] == [WAV_B64]


def test_ollama_reads_no_pdfs_and_hears_only_where_declared(http: httpx.AsyncClient) -> None:
    provider = ollama(context(http))
    assert not provider.capabilities(spec("ollama", "gemma4", audio=True)).documents.pdf
    with pytest.raises(UnsupportedPartError):
        provider.build_request(ask(document()), spec("ollama", "llava"), RequestOptions())
    with pytest.raises(UnsupportedPartError, match="hears no audio"):
        provider.build_request(ask(wav()), spec("ollama", "llava"), RequestOptions())


# -- the local model ---------------------------------------------------------------------------------


async def test_local_multimodal_reads_the_pdf_and_the_audio(http: httpx.AsyncClient) -> None:
    clip = AudioPart(mime_type="audio/mpeg", data=MP3, name="memo.mp3", seconds=mp3_seconds(40))
    events = await collect(
        local(context(http)).stream(
            ask(document(), wav(), clip), spec("local", "multimodal"), RequestOptions()
        )
    )
    answer = "".join(getattr(e, "delta", "") for e in events)
    assert 'Document 1 (report.pdf): PDF, 2 pages, first line: "Quarterly report".' in answer
    assert "Audio 1 (note.wav): WAV, 1.50 seconds, 8000 Hz, 1 channel." in answer
    assert f"Audio 2 (memo.mp3): MP3, {mp3_seconds(40):.2f} seconds, 44100 Hz, 128 kbit/s." in answer


async def test_local_multimodal_says_when_a_pdf_has_no_text(http: httpx.AsyncClient) -> None:
    blank = text_pdf([""])
    events = await collect(
        local(context(http)).stream(
            ask(document(blank, pages=1)), spec("local", "multimodal"), RequestOptions()
        )
    )
    assert "PDF, 1 page, no text on its first pages." in "".join(getattr(e, "delta", "") for e in events)


LAZY_PDFIUM = """
import asyncio, sys
import httpx
from iris.providers import DocumentPart, Message, ModelSpec, ProviderContext, RequestOptions, TextPart
from iris.providers.registry import ProviderRegistry
from tests.support.documents import text_pdf

async def main():
    async with httpx.AsyncClient() as http:
        provider = ProviderRegistry(ProviderContext(environ={}, http=http)).get("local")
        print("before", "pypdfium2" in sys.modules)
        part = DocumentPart(mime_type="application/pdf", data=text_pdf(["Lazy"]), name="a.pdf", pages=1)
        asked = [Message(role="user", parts=(TextPart(text="What is this?"), part))]
        spec = ModelSpec(provider="local", model_id="multimodal", type="multimodal", options={})
        events = [e async for e in provider.stream(asked, spec, RequestOptions())]
        print("answer", "".join(getattr(e, "delta", "") for e in events).replace(chr(10), " "))
        print("after", "pypdfium2" in sys.modules)

asyncio.run(main())
"""


def test_the_local_provider_loads_pdfium_with_its_first_pdf_only() -> None:
    """Every provider is imported at start-up: PDFium must not come with the local one (its library and
    bindings in every server's memory), only with the first PDF it reads. In a fresh interpreter, since
    this process has imported pypdfium2 long ago."""
    seen = dict(line.split(" ", 1) for line in run_fresh(LAZY_PDFIUM).strip().splitlines())
    assert seen["before"] == "False"
    assert 'PDF, 1 page, first line: "Lazy"' in seen["answer"], seen
    assert seen["after"] == "True"


def test_local_vision_stays_images_only(http: httpx.AsyncClient) -> None:
    provider = local(context(http))
    caps = provider.capabilities(spec("local", "vision", "vision"))
    assert caps.vision
    assert not caps.documents.pdf
    assert not caps.audio.supported
    for part in (document(), wav()):
        with pytest.raises(UnsupportedPartError):
            provider.build_request(ask(part), spec("local", "vision", "vision"), RequestOptions())


# -- LiteLLM -----------------------------------------------------------------------------------------


async def test_litellm_passes_the_openai_shapes_through(
    openai_fake: tuple[FakeOpenAI, str], http: httpx.AsyncClient
) -> None:
    server, url = openai_fake
    server.text("Read.")
    provider = litellm(context(http, FAKE_OPENAI_KEY=KEY))
    model = spec("litellm", "openai/gpt-4o", baseUrl=f"{url}/v1", apiKeyEnv="FAKE_OPENAI_KEY")

    await collect(provider.stream(ask(document()), model, RequestOptions()))

    [request] = server.requests
    TypeAdapter(CompletionCreateParamsStreaming).validate_python(request.json)
    file = request.json["messages"][0]["content"][1]
    assert file["type"] == "file"
    assert file["file"]["file_data"] == f"data:application/pdf;base64,{PDF_B64}"


def test_litellm_refuses_what_its_map_says_the_backend_cannot_take(http: httpx.AsyncClient) -> None:
    provider = litellm(context(http))
    claude = spec("litellm", "anthropic/claude-sonnet-4-5")
    assert provider.capabilities(claude).documents.pdf
    with pytest.raises(UnsupportedPartError, match="hears no audio"):  # LiteLLM would drop it silently
        provider.build_request(ask(wav()), claude, RequestOptions())
    with pytest.raises(UnsupportedPartError, match="reads no documents"):  # dropped for Ollama too
        provider.build_request(ask(document()), spec("litellm", "ollama/llava"), RequestOptions())
    assert provider.capabilities(spec("litellm", "ollama/llava", pdf=True)).documents.pdf
